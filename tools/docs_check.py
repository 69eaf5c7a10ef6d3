#!/usr/bin/env python3
"""Docs that cannot drift: run the commands the docs show and write their real output back.

A code block in README.md, ``skills/*/SKILL.md`` or ``skills/*/references/*.md`` takes part
when the line just before its opening fence is a marker comment::

    <!-- docs-check -->                 fast: run against the fixed wiki, examples/demo-wiki
    <!-- docs-check slow -->            needs the stores: run only with --slow (ingest first)
    <!-- docs-check slow fresh -->      ``demo-wiki`` is the starter wiki (wiki/), not the fixed one
    <!-- docs-check run -->             a script block: run it whole, it must exit 0 (no output)
    <!-- docs-check cut=100 head=12 --> shown output: lines cut at 100 characters, first 12 lines

Output blocks hold ``$ command`` lines, each followed by what it printed on stdout; the
command runs with ``bash -c`` in a scratch folder where ``demo-wiki`` (also reachable as
``WIKI``) is a fresh copy of the fixed wiki, ``examples/`` is this checkout's, and ``episteme``
is this checkout's command line.
``run`` blocks (the SKILL.md style: ``python3 ${CLAUDE_PLUGIN_ROOT}/plugin/scripts/...
--wiki WIKI``) run as one ``set -e`` script in the same folder, so a renamed flag or a
script that no longer exists fails the check.

    python tools/docs_check.py            rewrite the docs with the real output
    python tools/docs_check.py --check    exit 1 (and print a diff) when a doc differs
    python tools/docs_check.py --slow     also the slow blocks: ingest examples/sample-paper.pdf
                                          into a starter wiki first (about 30 s); the pages it
                                          writes must equal examples/demo-wiki (rewritten
                                          without --check)

Measured figures: a line that carries ``<!-- figures: benchmarks/RESULTS-x.md -->`` (an
inline comment, so it fits in a table row) must quote that file: every decimal figure of the
line (``0.90``, ``3.59×``, ``1.70×``) has to occur in it, so a README figure cannot drift from
the committed benchmark result.

Volatile bits are normalised before comparing: timings (``0.24 s``), ISO timestamps, the
scratch folder's path, and today's date (the fixed wiki's dates are moved to today in the
copy, so memory tiers stay "active", and back to ``FIXED_DATE`` in the output).  When only
volatile bits differ, the doc's text is kept as it is.  Offline only: ``ANTHROPIC_API_KEY`` and
``LLM_API_KEY`` are removed from the commands' environment.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO_WIKI = REPO / "examples" / "demo-wiki"
SAMPLE_PDF = REPO / "examples" / "sample-paper.pdf"
FIXED_DATE = "2026-12-01"  # the date examples/demo-wiki was written on
MARKER = re.compile(r"^<!--\s*docs-check\b(?P<opts>[^>]*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)")
TIMEOUT_S = 300
_STARTER_SKIP = shutil.ignore_patterns(".episteme", "*.pdf")

_TIMING = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms)\b")
_ISO_TS = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:\d{2}|Z)?")


@dataclass
class Block:
    """One marked code block: where its body lines sit in the file and what the marker asks."""

    path: Path
    start: int  # index of the first body line (after the opening fence)
    end: int  # index of the closing fence
    slow: bool = False
    run: bool = False
    fresh: bool = False
    cut: int | None = None
    head: int | None = None
    body: list[str] = field(default_factory=list)


def doc_files(repo: Path = REPO) -> list[Path]:
    """README.md, every skill's SKILL.md and its references, in a fixed order."""
    files = [repo / "README.md"]
    files += sorted((repo / "skills").glob("*/SKILL.md"))
    files += sorted((repo / "skills").glob("*/references/*.md"))
    return [f for f in files if f.is_file()]


def find_blocks(path: Path, lines: list[str]) -> list[Block]:
    """The marked blocks of one file; a marker not followed by a fence is an error."""
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        if i + 1 >= len(lines) or not FENCE.match(lines[i + 1]):
            raise SystemExit(f"{path}:{i + 1}: docs-check marker not followed by a code fence")
        fence = FENCE.match(lines[i + 1]).group("fence")
        j = i + 2
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        if j >= len(lines):
            raise SystemExit(f"{path}:{i + 2}: code fence never closed")
        b = Block(path, i + 2, j, body=lines[i + 2 : j])
        for opt in m.group("opts").split():
            key, _, val = opt.partition("=")
            if key == "slow":
                b.slow = True
            elif key == "run":
                b.run = True
            elif key == "fresh":
                b.fresh = True
            elif key in ("cut", "head") and val.isdigit():
                setattr(b, key, int(val))
            else:
                raise SystemExit(f"{path}:{i + 1}: unknown docs-check option {opt!r}")
        blocks.append(b)
        i = j + 1
    return blocks


def split_commands(body: list[str]) -> list[tuple[str, list[str]]]:
    """``$ cmd`` lines (``\\`` continues one) and the output lines shown after each."""
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            if out:
                out[-1][1].append(line)
            i += 1
            continue
        cmd = [line[2:]]
        while cmd[-1].endswith("\\") and i + 1 < len(body):
            i += 1
            cmd.append(body[i])
        out.append(("\n".join(cmd), []))
        i += 1
    for _, shown in out:  # the blank line that separates two commands is not output
        while shown and not shown[-1].strip():
            shown.pop()
    return out


class Runner:
    """A scratch folder with the fixed wiki, a PATH whose ``episteme`` and ``python3`` are this
    checkout's, and no API keys."""

    def __init__(self, wiki: Path, tmp: Path) -> None:
        self.wiki = wiki
        self.tmp = tmp
        self.today = _dt.date.today().isoformat()
        bindir = tmp / "bin"
        bindir.mkdir()
        plugin = REPO / "plugin"
        (bindir / "episteme").write_text(
            f'#!/bin/sh\nexec "{sys.executable}" -m episteme.cli "$@"\n', encoding="utf-8"
        )
        (bindir / "python3").write_text(
            f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8"
        )
        for f in bindir.iterdir():
            f.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "LLM_API_KEY")}
        for k in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT"):
            env.pop(k, None)
        env.update(
            PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
            PYTHONPATH=f"{plugin}{os.pathsep}{env['PYTHONPATH']}"
            if env.get("PYTHONPATH")
            else str(plugin),
            CLAUDE_PLUGIN_ROOT=str(REPO),
            EPISTEME_BOOTSTRAPPED="1",
            NO_COLOR="1",
            COLUMNS="100",
            TZ="UTC",
        )
        self.env = env

    def fresh_copy(self, starter: bool = False) -> Path:
        """A new scratch folder holding ``demo-wiki`` (dates moved to today) and ``examples``;
        ``starter``: the empty starter wiki instead of the fixed one."""
        work = Path(tempfile.mkdtemp(prefix="run-", dir=self.tmp))
        dst = work / "demo-wiki"
        if starter:
            shutil.copytree(REPO / "wiki", dst, ignore=_STARTER_SKIP)
        else:
            shutil.copytree(self.wiki, dst, symlinks=True)
        if self.today != FIXED_DATE:
            for p in dst.rglob("*.md"):
                text = p.read_text(encoding="utf-8")
                if FIXED_DATE in text:
                    p.write_text(text.replace(FIXED_DATE, self.today), encoding="utf-8")
        (work / "examples").symlink_to(REPO / "examples", target_is_directory=True)
        (work / "WIKI").symlink_to("demo-wiki", target_is_directory=True)  # SKILL.md's name
        return work

    def run(self, cmd: str, cwd: Path, *, script: bool = False) -> str:
        """stdout of ``cmd`` (exit status 0 or 1: lint's "found errors" is output too)."""
        argv = ["bash", "-c", ("set -euo pipefail\n" + cmd) if script else cmd]
        proc = subprocess.run(
            argv, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=TIMEOUT_S
        )
        if proc.returncode not in ((0,) if script else (0, 1)):
            raise RuntimeError(
                f"exit {proc.returncode}: {cmd}\n--- stderr ---\n{proc.stderr[-3000:]}"
            )
        return self.stable(proc.stdout, cwd)

    def stable(self, text: str, cwd: Path) -> str:
        """Scratch paths removed and today's date written as the fixed one."""
        text = text.replace(str(cwd) + os.sep, "").replace(str(cwd), ".")
        return text.replace(self.today, FIXED_DATE)


def volatile(text: str) -> str:
    """What is compared: timings and timestamps blanked."""
    return _ISO_TS.sub("<timestamp>", _TIMING.sub("<t> s", text))


def shape(lines: list[str], cut: int | None, head: int | None) -> list[str]:
    """Output as the doc shows it: trailing spaces dropped, lines cut, the first ``head``."""
    out = [ln.rstrip() for ln in lines]
    while out and not out[-1]:
        out.pop()
    if cut:
        out = [ln if len(ln) <= cut else ln[: cut - 2].rstrip() + " …" for ln in out]
    if head and len(out) > head:
        out = out[:head] + ["…"]
    return out


def render_block(block: Block, runner: Runner) -> list[str]:
    """The block's body with every command's shown output replaced by the real one."""
    work = runner.fresh_copy(starter=block.fresh)
    if block.run:
        runner.run("\n".join(block.body), work, script=True)
        return block.body
    cmds = split_commands(block.body)
    if not cmds:
        raise SystemExit(f"{block.path}:{block.start}: docs-check block has no '$ ' command")
    body: list[str] = []
    for n, (cmd, shown) in enumerate(cmds):
        real = shape(runner.run(cmd, work).splitlines(), block.cut, block.head)
        if volatile("\n".join(real)) == volatile("\n".join(shown)):
            real = shown  # only timings differ: keep the doc's text
        if n:
            body.append("")
        first, *rest = cmd.split("\n")
        body += ["$ " + first, *rest]
        body += real
    return body


def build_slow_wiki(tmp: Path, runner_env: dict[str, str]) -> Path:
    """Ingest the sample paper (offline writer) into a copy of the starter wiki."""
    wiki = tmp / "ingested" / "demo-wiki"
    shutil.copytree(REPO / "wiki", wiki, ignore=_STARTER_SKIP)
    subprocess.run(
        [sys.executable, "-m", "episteme.cli", "ingest", str(SAMPLE_PDF), "--wiki", str(wiki),
         "--write", "--no-progress"],
        env=runner_env, check=True, capture_output=True, timeout=TIMEOUT_S,
    )
    return wiki


def wiki_files(root: Path) -> dict[str, str]:
    """The pages and indexes of a wiki (what examples/demo-wiki keeps), today -> FIXED_DATE."""
    today = _dt.date.today().isoformat()
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not rel.startswith(".episteme/") and not rel.startswith("raw/"):
            out[rel] = _ISO_TS.sub(
                lambda m: FIXED_DATE + "T00:00:00+00:00", p.read_text(encoding="utf-8")
            ).replace(today, FIXED_DATE)
    return out


FIGURES = re.compile(r"<!--\s*figures:\s*(?P<file>[^\s>]+)\s*-->")
_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")


def check_figures(path: Path, lines: list[str]) -> list[str]:
    """Problems with the lines that say where their figures come from."""
    problems = []
    for n, line in enumerate(lines, 1):
        m = FIGURES.search(line)
        if not m:
            continue
        src = (REPO / m["file"]).resolve()
        if not src.is_file() or REPO not in src.parents:
            problems.append(f"{_rel(path)}:{n}: figures file {m['file']} not found")
            continue
        known = set(re.findall(r"\d+\.\d+", src.read_text(encoding="utf-8")))  # 1.6x too
        missing = [x for x in _DECIMAL.findall(FIGURES.sub("", line)) if x not in known]
        if missing:
            problems.append(f"{_rel(path)}:{n}: {', '.join(missing)} not in {m['file']}")
    return problems


def _rel(path: Path) -> str:
    """A doc's name as printed: relative to the checkout when it is inside it."""
    try:
        return path.relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a doc differs")
    ap.add_argument("--slow", action="store_true", help="also run the slow blocks (ingest)")
    ap.add_argument("files", nargs="*", type=Path, help="docs to process (default: all)")
    args = ap.parse_args(argv)

    files = [f.resolve() for f in args.files] or doc_files()
    differ = 0
    with tempfile.TemporaryDirectory(prefix="docs-check-") as t:
        tmp = Path(t)
        wiki = DEMO_WIKI
        if args.slow:
            (tmp / "probe").mkdir()
            wiki = build_slow_wiki(tmp, Runner(DEMO_WIKI, tmp / "probe").env)
            want, got = wiki_files(DEMO_WIKI), wiki_files(wiki)
            if want != got:
                if args.check:
                    differ += 1
                    print(f"examples/demo-wiki differs from a fresh ingest of {SAMPLE_PDF.name}",
                          file=sys.stderr)
                else:
                    for rel in set(want) - set(got):
                        (DEMO_WIKI / rel).unlink()
                    for rel, text in got.items():
                        (DEMO_WIKI / rel).parent.mkdir(parents=True, exist_ok=True)
                        (DEMO_WIKI / rel).write_text(text, encoding="utf-8")
                    print("rewrote examples/demo-wiki", file=sys.stderr)
        runner = Runner(wiki, tmp)
        for path in files:
            text = path.read_text(encoding="utf-8")
            lines = text.split("\n")
            for problem in check_figures(path, lines):
                print(problem, file=sys.stderr)
                differ += 1
            new = list(lines)
            for block in reversed(find_blocks(path, lines)):
                if block.slow and not args.slow:
                    continue
                try:
                    body = render_block(block, runner)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print(f"{_rel(path)}:{block.start + 1}: {e}", file=sys.stderr)
                    differ += 1
                    continue
                new[block.start : block.end] = body
            if new == lines:
                continue
            rel = _rel(path)
            if args.check:
                differ += 1
                sys.stdout.writelines(
                    difflib.unified_diff(
                        [ln + "\n" for ln in lines], [ln + "\n" for ln in new],
                        f"{rel} (shown)", f"{rel} (real output)",
                    )
                )
            else:
                path.write_text("\n".join(new), encoding="utf-8")
                print(f"rewrote {rel}", file=sys.stderr)
    if differ and not args.check:
        print(f"docs-check: {differ} block(s) failed to run or figure(s) not found",
              file=sys.stderr)
        return 1
    if differ:
        print(f"docs-check: {differ} doc(s) differ from the real output; "
              "run `python tools/docs_check.py` to rewrite them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
