"""``episteme write-section`` / ``write_section.py``: create or update one wiki section.

The agent's single write primitive (skill ``wiki-ingest``)::

    write_section.py --wiki W --page multi-head-attention --title "Multi-Head Attention" \\
        --description "Parallel attention heads and why they help" \\
        --source attention.pdf [--source bert.pdf] [--page-title T] [--type concept] [--tag nlp] \\
        [--section-id sec_004] < body.md

``--batch``: every write of a paper at once, JSON lines on stdin (create / update / append
per line, see :mod:`episteme.wiki.batch`), validated as a whole before anything is written,
then written under one lock with one ``log.md`` entry::

    write_section.py --wiki W --batch --source attention.pdf --subject attention.pdf < writes.jsonl

Without ``--section-id`` a section is created (fresh id; the page too when it is new); with it,
that section is replaced in place.  Prints ``{"status": "created"|"updated", "page",
"section_id", ...}``.

Known sources: a ``--source`` must name a file in ``W/raw/``.  Ingest copies every paper there
before anything else and ``rebuild`` recreates the stores from raw/ alone, so raw/ is the
authoritative list, and checking it keeps this script free of SQLite and the heavy stores.
``--no-source-check`` skips the check (with a warning) for hand-made wikis.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..cliutil import ArgumentParser, print_json, run_main
from ..errors import UsageError


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme write-section", description=__doc__.splitlines()[0])
    p.add_argument("--wiki", default=None, help="wiki folder (default: $WIKI_PATH or ./wiki)")
    p.add_argument("--batch", action="store_true",
                   help="read JSON lines from stdin (create/update/append), write them as one transaction")
    p.add_argument("--page", default=None, help="page slug or path: bert, bert.md, concepts/bert")
    p.add_argument("--section-id", default=None, help="update this section (sec_NNN); omit to create")
    p.add_argument("--title", default=None, help="section heading (required to create)")
    p.add_argument("--description", default=None, help="one line for index.md (required to create)")
    p.add_argument("--source", action="append", default=[], help="raw/ file name; repeatable")
    p.add_argument("--replace-sources", action="store_true",
                   help="on update, set the sources to exactly --source (default: add to them)")
    p.add_argument("--page-title", default=None, help="title of a new page (default: from the slug)")
    p.add_argument("--type", dest="page_type", default=None,
                   help="page type: paper, concept, method, entity, comparison, synthesis, note")
    p.add_argument("--tag", action="append", default=[], help="page tag; repeatable")
    p.add_argument("--after", default=None, help="when creating, place it after this section id")
    p.add_argument("--level", type=int, default=2, help="heading level of a new section (default 2)")
    p.add_argument("--body-file", default=None, help="read the body from this file instead of stdin")
    p.add_argument("--keep-body", action="store_true", help="on update, keep the body (no stdin)")
    p.add_argument("--op", default="write-section", help="operation name for the log.md entry")
    p.add_argument("--subject", default=None, help="subject of the log.md entry (e.g. the paper)")
    p.add_argument("--strict", action="store_true",
                   help="refuse the write (exit 1, nothing written) when a sentence is contradicted by its sources")
    p.add_argument("--no-claim-check", action="store_true",
                   help="skip checking the body's sentences against the sources (lint --claims)")
    p.add_argument("--no-source-check", action="store_true",
                   help="accept sources that are not in raw/ (prints a warning)")
    return p


def _read_body(args) -> str | None:
    if args.keep_body:
        if not args.section_id:
            raise UsageError("--keep-body only applies to updates (--section-id)")
        return None
    if args.body_file:
        try:
            return Path(args.body_file).read_text(encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot read --body-file: {e}") from None
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("pipe the section body (markdown) on stdin, or use --body-file")
    return sys.stdin.read()


def run(args) -> dict:
    from ..compile.decisions import refresh_contents_locked
    from ..config import load_settings
    from ..wiki.edit import WikiWriter, raw_sources

    wiki = load_settings(args.wiki, dotenv=".env").wiki
    warnings: list[str] = []
    if args.no_source_check:
        known = None
        warnings.append("sources not checked against raw/ (--no-source-check)")
    else:
        known = raw_sources(wiki)
        if not known and args.source:
            raise UsageError(f"{wiki}/raw/ holds no papers: ingest one first (or --no-source-check)")
    if args.batch:
        out = _run_batch(args, wiki, known, warnings)
        refresh_contents_locked(wiki)
        return out
    if not args.page:
        raise UsageError("--page is required (or --batch with JSON lines on stdin)")
    if not args.section_id and (args.title is None or args.description is None):
        raise UsageError("creating a section needs --title and --description")
    body = _read_body(args)
    claim_findings = _claim_check(args, wiki, body)
    if args.strict and any(f["rule"] == "claim-contradicted" for f in claim_findings):
        return {"status": "refused", "page": args.page, "section_id": args.section_id, "wiki": str(wiki),
                "reason": "a sentence is contradicted by its sources (--strict)",
                "claim_findings": claim_findings}
    with WikiWriter(wiki, op=args.op, subject=args.subject, known_sources=known) as w:
        if args.section_id:
            res = w.update_section(
                args.page, args.section_id, title=args.title, description=args.description,
                body=body, sources=args.source, replace_sources=args.replace_sources,
                tags=args.tag, page_title=args.page_title, page_type=args.page_type,
            )
        else:
            res = w.create_section(
                args.page, title=args.title, description=args.description, body=body or "",
                sources=args.source, page_title=args.page_title, page_type=args.page_type,
                tags=args.tag, level=args.level, after=args.after,
            )
    refresh_contents_locked(wiki)
    out = res.to_dict()
    out["wiki"] = str(wiki)
    if claim_findings is not None:
        out["claim_findings"] = claim_findings
    if w.recovered is not None:
        warnings.append("an interrupted earlier write was found; index.md and index.json were rebuilt")
    if warnings:
        out["warnings"] = warnings
        for msg in warnings:
            print(f"warning: {msg}", file=sys.stderr)
    return out


def _claim_check(args, wiki, body: str | None) -> list[dict] | None:
    """What ``lint --claims`` will say about the body, before it is written (needs the stores:
    skipped, ``None``, for a wiki with no SQLite store or with ``--no-claim-check``)."""
    if args.no_claim_check or not body or not body.strip():
        return None
    from ..config import load_settings

    settings = load_settings(wiki, dotenv=".env")
    if not settings.sqlite_path.exists():
        return None
    from ..query.claims import check_body

    sources = list(args.source)
    if args.section_id and not args.replace_sources:
        import contextlib

        from ..wiki.edit import find_section

        with contextlib.suppress(Exception):  # an unknown id is the writer's clear error, below
            sources = list(dict.fromkeys([*find_section(wiki, args.section_id)[1].sources, *sources]))
    return check_body(settings, body, sources, page=args.page)


def _refresh_index(args, out: dict) -> None:
    """After a write, the wiki-section index is brought up to date (the new sections embedded
    now), so the agent's next ``retrieve`` does not pay for it; only in a wiki with ingested
    papers (the stores and the embedding model are there), never failing the write."""
    if out.get("status") == "refused" or not out.get("wiki"):
        return
    from ..config import load_settings

    settings = load_settings(out["wiki"], dotenv=".env")
    if settings.sqlite_path.exists():
        from ..query.wikisearch import refresh_after_write

        refresh_after_write(settings)


def _run_batch(args, wiki, known, warnings: list[str]) -> dict:
    from ..wiki.batch import parse_batch, run_batch

    if args.page or args.section_id or args.title or args.description:
        raise UsageError("--batch takes the writes on stdin; --page/--section-id/--title/"
                         "--description belong inside each JSON line")
    if args.body_file:
        try:
            text = Path(args.body_file).read_text(encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot read --body-file: {e}") from None
    elif sys.stdin is None or sys.stdin.isatty():
        raise UsageError("--batch reads JSON lines on stdin (or --body-file)")
    else:
        text = sys.stdin.read()
    items = parse_batch(text)
    _paper_page_fields(wiki, items, args.source)
    op = args.op if args.op != "write-section" else ("ingest" if args.subject else "write-section")
    out = run_batch(wiki, items, known_sources=known, op=op, subject=args.subject,
                    default_sources=args.source)
    out["wiki"] = str(wiki)
    if warnings:
        out["warnings"] = [*warnings, *out.get("warnings", [])]
    return out


def _paper_page_fields(wiki, items: list[dict], default_sources: list[str]) -> None:
    """A paper page's frontmatter from the stored metadata, not from the agent: each
    ``create`` line of ``type: paper`` gets the title, authors, year, venue and ids of the
    ingested paper it cites (issue 34).  Lines citing no ingested paper are left as they are."""
    from ..compile.inputs import load_paper
    from ..config import load_settings
    from ..errors import EpistemeError

    settings = None
    for it in items:
        if it["op"] != "create" or it.get("type") != "paper":
            continue
        settings = settings or load_settings(str(wiki), dotenv=".env")
        for source in list(it.get("sources") or []) or list(default_sources):
            try:
                info = load_paper(settings, source)
            except EpistemeError:  # not an ingested paper (or no store): the line as sent
                continue
            it["page_title"] = info.title
            it["page_fields"] = {"authors": list(info.authors), "paper_file": f"raw/{info.id}",
                                 **info.meta_fields()}
            break


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        out = run(args)
        _refresh_index(args, out)
        print_json(out)
        return 1 if out.get("status") == "refused" else 0

    return run_main(body)
