#!/usr/bin/env python3
"""Snapshot what one checkout prints on the dev papers, so a restructure can prove it changed nothing.

    python benchmarks/snapshot_outputs.py --tree /path/to/checkout --out /tmp/snap-NAME [--quick]
    diff -r /tmp/snap-base /tmp/snap-NAME     # empty = byte-identical

Issue 32's rule for moves: every output stays byte-identical.  ``compare_outputs.py`` covers the
graph and lint on the vaults; this covers the heavy path, through the checkout's own CLI (each
process with the tree's ``plugin/`` on ``PYTHONPATH``), on a fresh wiki:

1. ``split --text`` of each paper (the 10 dev papers and ``papers-more``);
2. ``ingest --write`` of the 10 dev papers (offline writer, fixed ``--date``): every wiki file
   afterwards (pages, ``index.md``, ``index.json``, ``log.md``) and the ingest JSON;
3. ``plan`` of two papers; ``retrieve`` and ``chat --mode offline`` for questions of
   ``dev_trace``; ``trace`` of every ``dev_trace`` answer; ``dev_verify``'s claims in groups;
4. ``lint --claims --format json`` and ``lint --format json`` on the written wiki.

Timing fields and the temporary wiki path are masked.  ``--quick`` takes fewer papers and
questions (about a third of the time).  The output folder holds one file per command.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared"))
DATE = "2026-01-01"
MASKS = [
    (re.compile(rb'"(seconds|elapsed|elapsed_s|ms|took|duration|latency_ms|time)": [0-9.e-]+'),
     rb'"\1": T'),
    (re.compile(rb"(checked|done|took|in) [0-9.]+ ?(s|ms)\b"), rb"\1 T"),
    (re.compile(rb'"ingested_at": "[0-9T:+.-]+"'), rb'"ingested_at": "T"'),
]


def run(tree: Path, args: list[str], wiki: Path | None, stdin: str | None = None) -> bytes:
    """One CLI call from ``tree``; returns exit status + stdout (masked)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_", "ANTHROPIC_", "LLM_"))}
    env["PYTHONPATH"] = str(tree / "plugin")
    env["EPISTEME_NO_PROGRESS"] = "1"
    # one hash seed: the verifier's "ties X to Y" reason picks among names in set order, so
    # without it two runs of one checkout can differ (verify-036, verify-084, claim-gan-3b)
    env["PYTHONHASHSEED"] = "0"
    cmd = [sys.executable, "-m", "episteme.cli", *args]
    if wiki is not None:
        cmd += ["--wiki", str(wiki)]
    p = subprocess.run(cmd, capture_output=True, env=env,
                       input=None if stdin is None else stdin.encode())
    out = p.stdout
    for rx, rep in MASKS:
        out = rx.sub(rep, out)
    if wiki is not None:
        out = out.replace(str(wiki).encode(), b"<WIKI>")
    return b"exit %d\n" % p.returncode + out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=REPO)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    tree = args.tree.resolve()
    out = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    papers = sorted((SHARED / "data" / "papers").glob("*.pdf"))
    more = sorted((SHARED / "data" / "papers-more").glob("*.pdf"))
    trace_items = [json.loads(x) for x in (SHARED / "data/gold/dev_trace.jsonl").read_text().splitlines() if x.strip()]
    verify_items = [json.loads(x) for x in (SHARED / "data/gold/dev_verify.jsonl").read_text().splitlines() if x.strip()]
    if args.quick:
        papers, more = papers[:4], more[:1]
        names = {p.name for p in papers}
        trace_items = [t for t in trace_items if t["paper"] in names]
        verify_items = [v for v in verify_items if v["paper"] in names]

    def save(name: str, data: bytes) -> None:
        (out / name).write_bytes(data)
        print(f"  {name}", file=sys.stderr, flush=True)

    for pdf in papers + more:
        save(f"split-{pdf.stem}.txt", run(tree, ["split", str(pdf), "--text"], None))

    with tempfile.TemporaryDirectory(prefix="episteme-snap-") as tmp:
        wiki = Path(tmp) / "wiki"
        shutil.copytree(tree / "wiki", wiki, ignore=shutil.ignore_patterns(".episteme"))
        save("ingest.txt", run(tree, ["ingest", *map(str, papers), "--write", "--date", DATE,
                                      "--jobs", "1"], wiki))
        files = sorted(p for p in wiki.rglob("*") if p.is_file() and ".episteme" not in p.parts
                       and p.parent.name != "raw" and "raw" not in p.relative_to(wiki).parts)
        blob = b"".join(b"=== %s\n" % str(f.relative_to(wiki)).encode() + f.read_bytes()
                        for f in files)
        save("wiki-files.txt", blob)
        for pdf in papers[:2]:
            save(f"plan-{pdf.stem}.txt", run(tree, ["plan", pdf.name], wiki))
        # trace and chat print a compact form by default since issue 34; the full result (what
        # the base snapshot holds) is asked for with --full where the tree knows the flag
        full = ["--full"] if (tree / "plugin/episteme/query/compact.py").is_file() else []
        qs = trace_items if not args.quick else trace_items[:8]
        for t in qs[: 12 if args.quick else 20]:
            save(f"retrieve-{t['id']}.txt", run(tree, ["retrieve", t["question"]], wiki))
            save(f"chat-{t['id']}.txt", run(tree, ["chat", t["question"], "--mode", "offline", *full], wiki))
        for t in qs:
            if t.get("answer"):
                save(f"trace-{t['id']}.txt", run(tree, ["trace", "--answer", t["answer"],
                                                        "--verifier", "offline", *full], wiki))
        for i in range(0, len(verify_items), 6):
            claims = " ".join(v["claim"] for v in verify_items[i:i + 6])
            save(f"verify-{i:03d}.txt", run(tree, ["trace", "--answer", claims, "--verifier",
                                                  "offline", *full, "--papers",
                                                  ",".join(sorted({p.name for p in papers}))], wiki))
        for v in verify_items[: 20 if args.quick else 90]:
            save(f"claim-{v['id']}.txt", run(tree, ["trace", "--answer", v["claim"], "--verifier",
                                                   "offline", "--format", "text"], wiki))
        save("lint-claims.txt", run(tree, ["lint", "--claims", "--format", "json",
                                           "--today", DATE], wiki))
        save("lint.txt", run(tree, ["lint", "--format", "json", "--today", DATE], wiki))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
