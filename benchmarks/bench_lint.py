#!/usr/bin/env python3
"""wiki-lint speed against the issue's target: without ``--stores``, the whole ``wiki_lint.py``
process within 1.6x of ``graph_query.py --mode stats`` on the same wiki (issue 13; both run
in one process: the scan never forks).

    .venv/bin/python benchmarks/bench_lint.py [--pages 10000] [--runs 5] [--wiki DIR]

Generates the synthetic wiki with ``../shared/tools/gen_vault.py`` (unless ``--wiki`` is given),
then times both commands as separate processes, interleaved run by run so that machine noise
hits both alike, and prints a markdown table of medians (and the real vaults when present).

As in ``bench_graph.py``, every command runs with Python's bytecode caches in place
(``PYTHONDONTWRITEBYTECODE`` is removed from the environment, so the warm-up run writes them),
as they are after a plugin's first run: otherwise each run would recompile episteme's modules.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "plugin" / "scripts"
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared"))
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its workers)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dt, cpu


def bench(wiki: Path, runs: int) -> dict[str, tuple[float, float]]:
    py = sys.executable
    cmds = {
        "graph_query.py --mode stats": [py, str(SCRIPTS / "graph_query.py"), "--wiki", str(wiki), "--mode", "stats"],
        "wiki_lint.py (text)": [py, str(SCRIPTS / "wiki_lint.py"), "--wiki", str(wiki)],
        "wiki_lint.py --format json": [py, str(SCRIPTS / "wiki_lint.py"), "--wiki", str(wiki), "--format", "json"],
    }
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    for c in cmds.values():  # warm the page cache and the .pyc files once
        timed(c)
    for _ in range(runs):
        for k, c in cmds.items():
            times[k].append(timed(c))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--wiki", help="an existing wiki instead of a generated one")
    args = ap.parse_args()
    wikis: list[tuple[str, Path]] = []
    if args.wiki:
        wikis.append((args.wiki, Path(args.wiki)))
    else:
        out = Path(f"/tmp/episteme-bench-v{args.pages}")
        if not (out / ".gen_truth.json").exists():
            subprocess.run([sys.executable, str(SHARED / "tools" / "gen_vault.py"), "--pages", str(args.pages),
                            "--seed", "1", "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
        wikis.append((f"synthetic {args.pages} pages (gen_vault seed 1)", out))
    for name in ("13th-age-srd", "dendron-site"):
        v = SHARED / "data" / "vaults" / name
        if v.is_dir():
            wikis.append((f"real vault {name}", v))
    print(f"# wiki-lint speed ({time.strftime('%Y-%m-%d')})\n")
    print(f"Machine: {os.cpu_count()} cores (nproc), Python {platform.python_version()}, {platform.platform()}; "
          f"load average at start {os.getloadavg()[0]:.1f}.")
    print(f"Whole processes, median of {args.runs} interleaved runs after one warm-up run each. Wall = elapsed "
          "time; CPU = user+sys of the process (steadier when other work shares the machine: other "
          "helpers' tests and benchmarks were running on this 2-core machine). Target (issue 13): lint "
          "within 1.6x of graph stats, without --stores, one process.\n")
    print("| wiki | stats wall | lint text wall | lint json wall | wall ratio | stats CPU | lint text CPU "
          "| lint json CPU | CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, w in wikis:
        r = bench(w, args.runs)
        (sw, sc) = r["graph_query.py --mode stats"]
        (tw, tc), (jw, jc) = r["wiki_lint.py (text)"], r["wiki_lint.py --format json"]
        print(f"| {label} | {sw:.2f} s | {tw:.2f} s | {jw:.2f} s | {max(tw, jw) / sw:.2f}x "
              f"| {sc:.2f} s | {tc:.2f} s | {jc:.2f} s | {max(tc, jc) / sc:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
