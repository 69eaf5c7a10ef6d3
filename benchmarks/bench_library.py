#!/usr/bin/env python3
"""A real library of one field, written by the offline writer: does the wiki hold together?

    .venv/bin/python benchmarks/papers/restore.py --manifest benchmarks/papers/LIBRARY.tsv
    PYTHONPATH=plugin .venv/bin/python benchmarks/bench_library.py [--jobs 2] [--limit N] [--write]

The library is ``benchmarks/papers/LIBRARY.tsv``: the 73 PDFs of one public collection of
classic systems papers (distributed systems and datastores), none of them used to tune the
writer.  Everything runs through the real command line on a fresh wiki, as a user would:
``episteme ingest DIR --jobs N --write`` (offline writer), then ``episteme lint --format json``
and ``episteme citations``.  Issue 35's targets, measured:

* the written wiki passes its own lint with 0 errors;
* no top-level page named from a generic heading (:data:`GENERIC`, this benchmark's own list,
  not the writer's);
* topic pages per written paper <= 4 on average (top-level pages, i.e. not under ``papers/``);
* the share of topic sections that draw on two or more papers (knowledge that accumulates);
* citation links found between the library's papers (``episteme citations``).

Nothing here was fitted on this library: every figure is held-out for the writer.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIBRARY = Path(os.environ.get("EPISTEME_LIBRARY",
                              Path.home() / ".cache" / "episteme" / "library"))
#: headings that name a part of any paper, not a topic: a top-level page named so is a defect
GENERIC = re.compile(
    r"^(?:a-)?(?:abstract|acknowledge?ments?|summary|conclusions?|introduction|references|"
    r"bibliography|appendix(?:-[a-z0-9]+)?|discussion|related-work|background|overview|"
    r"preliminaries|results|evaluation|experiments?|motivation|future-work|methods?|"
    r"(?:a|the)-(?:first|second|third|final|simple|new|basic)-[a-z]+|"
    r"(?:main|our)-(?:result|results|contribution|contributions)|concluding-remarks|notation|"
    r"(?:a|an)-[a-z]+|definitions?|examples?|implementation|analysis)(?:-\d+)?$")


def run(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "episteme.cli", *args], capture_output=True,
                          text=True, env=env, timeout=6 * 3600)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="only the first N papers (a quick run)")
    ap.add_argument("--keep", type=Path, default=None, help="write the wiki here and keep it")
    ap.add_argument("--write", action="store_true", help="write benchmarks/RESULTS-library.md")
    args = ap.parse_args()
    pdfs = sorted(LIBRARY.glob("*.pdf"))
    if args.limit:
        pdfs = pdfs[: args.limit]
    if not pdfs:
        print(f"no papers in {LIBRARY}: run benchmarks/papers/restore.py --manifest "
              "benchmarks/papers/LIBRARY.tsv", file=sys.stderr)
        return 1
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_", "ANTHROPIC_", "LLM_"))}
    env["PYTHONPATH"] = str(REPO / "plugin")
    tmp = Path(tempfile.mkdtemp(prefix="episteme-library-"))
    wiki = args.keep or (tmp / "wiki")
    if wiki.exists():
        shutil.rmtree(wiki)
    shutil.copytree(REPO / "wiki", wiki, ignore=shutil.ignore_patterns(".episteme", "raw"))
    src = tmp / "pdfs"
    src.mkdir()
    for p in pdfs:
        (src / p.name).symlink_to(p)
    t0 = time.perf_counter()
    ing = run(["ingest", str(src), "--wiki", str(wiki), "--jobs", str(args.jobs), "--write",
               "--no-progress"], env)
    t_ingest = time.perf_counter() - t0
    try:
        out = json.loads(ing.stdout)
    except json.JSONDecodeError:
        out = {}
        for line in ing.stdout.splitlines():  # one record per line for long runs
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and "counts" in rec:
                out = rec
    counts = out.get("counts", {})
    lint = json.loads(run(["lint", "--wiki", str(wiki), "--format", "json"], env).stdout)
    cites = json.loads(run(["citations", "--wiki", str(wiki)], env).stdout or "{}")

    pages = [p.relative_to(wiki).as_posix() for p in wiki.rglob("*.md")
             if ".episteme" not in p.parts and p.parent.name != "raw"]
    structural = {"index.md", "log.md", "SCHEMA.md", "home.md"}
    top = [p for p in pages if "/" not in p and p not in structural]
    paper_pages = [p for p in pages if p.startswith("papers/")]
    index = json.loads((wiki / "index.json").read_text(encoding="utf-8"))
    entries = index.get("sections", index) if isinstance(index, dict) else {}
    srcs = {sid: (v.get("sources") if isinstance(v, dict) else v) for sid, v in entries.items()}
    written = len({s for v in srcs.values() for s in (v or [])})
    topic_secs = []
    for p in top:
        text = (wiki / p).read_text(encoding="utf-8")
        topic_secs += re.findall(r'<!-- section \{"id": "(sec_\d+)"', text)
    multi = [s for s in topic_secs if len(srcs.get(s) or []) >= 2]
    generic = sorted(p for p in top if GENERIC.match(p[:-3]))
    rules = Counter(f["rule"] for f in lint.get("findings", []) if f.get("severity") == "error")
    warn = Counter(f["rule"] for f in lint.get("findings", []) if f.get("severity") == "warning")
    lines = [
        "# A library of one field, written offline (issue 35)",
        "",
        f"{dt.date.today()} · {platform.machine()}, {os.cpu_count()} cores, load "
        f"{os.getloadavg()[0]:.1f} at the end · `benchmarks/bench_library.py --jobs {args.jobs}`"
        f" on {len(pdfs)} papers of `benchmarks/papers/LIBRARY.tsv` (held-out: nothing was tuned "
        "on them).",
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| papers ingested / refused | {counts.get('ingested', 0) + counts.get('replaced', 0)} / "
        f"{counts.get('failed', 0)} | |",
        f"| ingest + write time | {t_ingest / 60:.1f} min | |",
        f"| pages (paper pages, top-level topic pages) | {len(pages)} ({len(paper_pages)}, {len(top)}) | |",
        f"| topic pages per written paper | {len(top) / max(written, 1):.2f} | ≤ 4 |",
        f"| top-level pages named from a generic heading | {len(generic)} | 0 |",
        f"| topic sections drawing on ≥ 2 papers | {len(multi)} / {len(topic_secs)} "
        f"({len(multi) / max(len(topic_secs), 1):.1%}) | |",
        f"| lint errors / warnings | {sum(rules.values())} / {sum(warn.values())} | 0 errors |",
        f"| citation links between the library's papers | {len(cites.get('links', []))} | |",
        "",
    ]
    if rules:
        lines.append("Lint errors by rule: " + ", ".join(f"{r} {n}" for r, n in rules.most_common()) + ".")
    if warn:
        lines.append("Lint warnings by rule: " + ", ".join(f"{r} {n}" for r, n in warn.most_common()) + ".")
    if generic:
        lines.append("Generic top-level pages: " + ", ".join(f"`{g}`" for g in generic[:40]) + ".")
    if counts.get("failed"):
        fails = [p for p in out.get("papers", []) if p.get("status") == "failed"]
        lines.append("Refused: " + "; ".join(f"{p.get('file_given', p.get('paper'))}: "
                                              f"{p.get('error', '')[:120]}" for p in fails) + ".")
    most = cites.get("most_cited") or []
    if most:
        lines.append("Most cited in the library: " + ", ".join(
            f"{m['title'] or m['paper']} ({m['cited_by']})" for m in most[:5]) + ".")
    text = "\n".join(lines) + "\n"
    print(text)
    if ing.returncode not in (0, 1):
        print(ing.stderr[-2000:], file=sys.stderr)
    if args.write:
        (REPO / "benchmarks" / "RESULTS-library.md").write_text(text, encoding="utf-8")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
