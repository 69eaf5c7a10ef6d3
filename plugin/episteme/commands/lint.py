"""``wiki_lint.py`` / ``episteme lint``: check the wiki (and with ``--stores`` its databases).

Exit status: 0 = no error-level findings (warnings and info do not fail), 1 = at least one
error, 2 = usage error (unknown rule, bad option), 3 = a dependency ``--stores`` needs is
missing.  With ``--fix`` the safe repairs are applied and printed, the wiki is checked again,
and the status reflects what is left.  Formats: ``text`` (grouped by file, then a summary
line), ``json`` (``{"findings": [...], "summary": {...}, "fixes": [...]}``) and ``github``
(workflow annotation commands, one per finding).
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import Any

from ..cliutil import (
    ArgumentParser,
    date_arg,
    format_is_json,
    print_json,
    prog_name,
    run_main,
    write_text,
)
from ..errors import UsageError

FORMATS = ("text", "json", "github")
_GH_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog=prog_name("lint", "wiki_lint.py"),
        description="Check the wiki's links, frontmatter, sections, indexes and log (and with --stores "
        "its SQLite/Chroma stores). Exit 0 = no errors, 1 = errors, 2 = usage error.",
    )
    p.add_argument("--wiki", help="wiki folder (default: $WIKI_PATH, else ./wiki)")
    p.add_argument("--format", choices=FORMATS, default="text")
    p.add_argument("--fix", action="store_true",
                   help="apply the safe repairs (indexes from pages, date formats, missing vectors), print each")
    p.add_argument("--stores", action="store_true", help="also check raw/, SQLite and Chroma")
    p.add_argument("--claims", action="store_true",
                   help="also verify every sentence of every section against its source papers (cached)")
    p.add_argument("--since", metavar="REV|DATE",
                   help="--claims: only the pages changed since a git revision or a YYYY-MM-DD date")
    p.add_argument("--rule", action="append", metavar="R",
                   help="run only these rules (repeat or comma-separate); overrides SCHEMA.md's lint.disable")
    p.add_argument("--disable", action="append", metavar="R", help="skip these rules (in addition to SCHEMA.md)")
    p.add_argument("--list-rules", action="store_true", help="print every rule id with its severity and exit")
    p.add_argument("--today", help="reference date for memory tiers, YYYY-MM-DD (default: today)")
    p.add_argument("--sqlite-path", help="--stores: SQLite file (default: <wiki>/.episteme/sections.db)")
    p.add_argument("--chroma-path", help="--stores: Chroma folder (default: <wiki>/.episteme/chroma)")
    p.add_argument("--chroma-host", help="--stores: a Chroma server host")
    p.add_argument("--chroma-port", type=int, help="--stores: the Chroma server's port")
    p.add_argument("--embedding-model", help="--stores: the configured embedding model")
    return p


def _settings(args, wiki: str):
    from ..config import load_settings

    return load_settings(
        wiki, sqlite_path=args.sqlite_path, chroma_path=args.chroma_path, chroma_host=args.chroma_host,
        chroma_port=args.chroma_port, embedding_model=args.embedding_model,
    )


def _run(argv: list[str]) -> int:
    from .. import lint as L
    from ..lint.rules import RULES

    args = build_parser().parse_args(argv)
    if args.list_rules:
        rows = [{"rule": r, "severity": x.severity, "summary": x.summary, "fix": x.fix} for r, x in RULES.items()]
        if args.format == "json":
            print_json({"rules": rows})
        else:
            for row in rows:
                fix = "  [--fix]" if row["fix"] else ""
                sys.stdout.write(f"{row['rule']:<28} {row['severity']:<8} {row['summary']}{fix}\n")
        return 0
    select = L.parse_rule_args(args.rule)
    disable = L.parse_rule_args(args.disable)
    today = date_arg(args.today, "--today")
    if args.since and not args.claims:
        raise UsageError("--since only applies with --claims")
    store_opts = [args.sqlite_path, args.chroma_path, args.chroma_host, args.chroma_port, args.embedding_model]
    if not (args.stores or args.claims) and any(v is not None for v in store_opts):
        raise UsageError("--sqlite-path/--chroma-*/--embedding-model only apply with --stores or --claims")
    if select and not args.stores and any(r.startswith("store-") for r in select):
        raise UsageError("store-* rules need --stores")
    wiki = args.wiki or os.environ.get("WIKI_PATH") or "wiki"
    settings = _settings(args, wiki) if args.stores or args.claims else None

    started = time.monotonic()
    opts: dict[str, Any] = dict(select=select or None, disable=disable, stores=args.stores, settings=settings,
                                today=today)
    if args.claims:
        opts.update(claims=True, since=args.since)
    report = L.lint_wiki(wiki, **opts)
    fixes: list[dict[str, Any]] = []
    if args.fix:
        fixes = L.apply_fixes(wiki, report, settings=settings)
        if any(fx.get("fix") != "skip" for fx in fixes):
            report = L.lint_wiki(wiki, **opts)
    elapsed = time.monotonic() - started

    if args.format == "json":
        summary = report.summary()
        summary["seconds"] = round(elapsed, 3)
        if report.extra.get("claims") is not None:
            summary["claims"] = report.extra["claims"].summary()
            summary["claims_per_page"] = report.extra["claims"].pages
        print_json({"wiki": os.path.abspath(wiki), "findings": report.findings, "summary": summary, "fixes": fixes},
                   records=True)
    elif args.format == "github":
        sys.stdout.write(render_github(report, wiki, fixes))
    else:
        write_text(render_text(report, fixes, elapsed))
    return 1 if report.counts()["error"] else 0


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _visible(text: str) -> str:
    """``text`` on one line with control characters shown as escapes (``\\n``, ``\\x1b``): a
    file name or message must not start a new output line (a CI log reads a line starting
    ``::`` as a GitHub Actions command) nor drive the terminal."""
    return _CONTROL.sub(lambda m: repr(m[0])[1:-1], text) if _CONTROL.search(text) else text


def render_text(report, fixes: list[dict[str, Any]], elapsed: float | None = None) -> str:
    """Findings grouped by file, then a summary line.  Every file name and message is made
    :func:`_visible` (one output line each, whatever the wiki's names hold)."""
    out: list[str] = []
    for fx in fixes:
        where = _visible(fx.get("file", ""))
        if fx.get("line"):
            where += f":{fx['line']}"
        done = "skipped" if fx.get("fix") == "skip" else "fixed"
        out.append(f"{done}  {where}  {_visible(fx['message'])}\n")
    if fixes:
        out.append("\n")
    current = None
    for f in report.findings:
        if f.file != current:
            if current is not None:
                out.append("\n")
            out.append(f"{_visible(f.file)}\n")
            current = f.file
        line = str(f.line) if f.line else "-"
        out.append(f"  {line:>5}  {f.severity:<7}  {f.rule:<26}  {_visible(f.message)}\n")
    if report.findings:
        out.append("\n")
    c = report.counts()
    took = f" in {elapsed:.2f} s" if elapsed is not None else ""
    made = sum(1 for fx in fixes if fx.get("fix") != "skip")
    fixed = f", {made} fixed" if made else ""
    stores = " + stores" if report.stores_checked else ""
    if report.extra.get("claims") is not None:
        stores += " + claims"
    out.append(
        f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} info{fixed} — "
        f"{report.pages} pages, {report.sections} sections{stores} checked{took}\n"
    )
    if report.extra.get("claims") is not None:
        from ..lint.claims import format_table

        out.append(format_table(report.extra["claims"]))
    return "".join(out)


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render_github(report, wiki: str, fixes: list[dict[str, Any]]) -> str:
    """GitHub Actions workflow commands: ``::error file=…,line=…,title=rule::message``.  Paths are
    the wiki folder as given plus the file, so with ``--wiki wiki`` run from the repository root
    they match the repository's paths."""
    base = os.path.normpath(wiki)
    out: list[str] = []
    for fx in fixes:
        out.append(f"::notice title=lint-fix::{_gh_escape(fx.get('file', '') + ': ' + fx['message'])}\n")
    for f in report.findings:
        path = os.path.normpath(os.path.join(base, f.file)).replace(os.sep, "/")
        props = f"file={_gh_escape(path, True)}"
        if f.line:
            props += f",line={f.line}"
        props += f",title={_gh_escape(f.rule, True)}"
        out.append(f"::{_GH_LEVEL[f.severity]} {props}::{_gh_escape(f.message)}\n")
    c = report.counts()
    out.append(f"wiki-lint: {c['error']} error(s), {c['warning']} warning(s), {c['info']} info in {report.pages} pages\n")
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    """The command (exit status: see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_main(lambda: _run(argv), json_errors=lambda: format_is_json(argv, default=False))
