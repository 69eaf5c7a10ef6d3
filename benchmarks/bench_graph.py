#!/usr/bin/env python3
"""Benchmark graph_query.py against the I/O floor, whole process, in the same run.

    python benchmarks/bench_graph.py [--sizes 1000,10000,50000] [--runs 5] [--work /tmp/episteme-bench]
                                     [--shared ../shared] [--out benchmarks/RESULTS-graph.md]
                                     [--compare /path/to/other/checkout]

For each wiki (synthetic ones made by ``../shared/tools/gen_vault.py`` under ``--work``, never
in the repo, plus the real vaults) it times, as separate processes and round-robin so machine
noise hits every command alike:

- ``bare_scan.py DIR``         read every file + one link regex (the floor)
- ``bare_scan.py DIR --yaml``  the same + PyYAML on every frontmatter block
- ``graph_query.py --mode stats`` (one process: the scan never forks)
- ``graph_query.py --mode hubs``

(``--compare DIR``: also ``graph_query.py --mode stats`` of the checkout at DIR, with its own
``plugin/`` on ``PYTHONPATH``, in the same round-robin: an A/B against the same floor), and
reports the median of ``--runs`` wall-clock times and CPU times (user + system of the
process, from ``wait4``), their ratios to the floor's, and the peak RSS of the stats process.  Prints
a markdown report and writes it to ``--out``.

Every command runs with Python's bytecode caches in place (``PYTHONDONTWRITEBYTECODE`` is
removed from the environment, so the warm-up run writes them), as they are after a plugin's
first run: otherwise each run would recompile episteme's modules from source.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "plugin" / "scripts" / "graph_query.py"


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MB, CPU seconds = user + system) of one process and the
    children it waited for.  CPU time moves less with machine load than wall time does."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env or ENV)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.read().decode()[-2000:]}")
    p.stderr.close()
    return wall, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def ensure_vault(gen: Path, work: Path, pages: int) -> Path:
    out = work / f"gen-{pages}"
    if not (out / ".gen_truth.json").exists():
        subprocess.run(
            [sys.executable, str(gen), "--pages", str(pages), "--seed", "1", "--out", str(out)],
            check=True, stdout=subprocess.DEVNULL,
        )
    return out


def page_count(root: Path) -> int:
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--wiki", str(root), "--mode", "stats"],
        check=True, capture_output=True, text=True, env=ENV,
    )
    return json.loads(r.stdout)["pages"]


def bench(root: Path, bare: Path, runs: int, compare: Path | None = None) -> dict[str, tuple[float, float, float]]:
    py = sys.executable
    cmds = {
        "bare": [py, str(bare), str(root)],
        "bare_yaml": [py, str(bare), str(root), "--yaml"],
        "stats": [py, str(SCRIPT), "--wiki", str(root), "--mode", "stats"],
        "hubs": [py, str(SCRIPT), "--wiki", str(root), "--mode", "hubs"],
    }
    envs = {}
    if compare is not None:
        other = compare / "plugin" / "scripts" / "graph_query.py"
        cmds["stats_compare"] = [py, str(other), "--wiki", str(root), "--mode", "stats"]
        envs["stats_compare"] = {**ENV, "PYTHONPATH": str(compare / "plugin")}
    for name, cmd in cmds.items():  # warm the page cache and the interpreter's .pyc files
        run_once(cmd, envs.get(name))
    times: dict[str, list[float]] = {k: [] for k in cmds}
    cpu: dict[str, list[float]] = {k: [] for k in cmds}
    rss: dict[str, float] = dict.fromkeys(cmds, 0.0)
    for _ in range(runs):
        for name, cmd in cmds.items():
            wall, mb, used = run_once(cmd, envs.get(name))
            times[name].append(wall)
            cpu[name].append(used)
            rss[name] = max(rss[name], mb)
    return {k: (statistics.median(v), rss[k], statistics.median(cpu[k])) for k, v in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default="/tmp/episteme-bench")
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "RESULTS-graph.md"))
    ap.add_argument("--compare", help="another checkout whose stats to time in the same run")
    a = ap.parse_args()
    compare = Path(a.compare).resolve() if a.compare else None
    shared = Path(a.shared).resolve()
    gen, bare = shared / "tools" / "gen_vault.py", shared / "tools" / "bare_scan.py"
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)

    wikis: list[tuple[str, Path]] = []
    for n in (int(x) for x in a.sizes.split(",") if x):
        wikis.append((f"synthetic {n // 1000}k", ensure_vault(gen, work, n)))
    for name in ("13th-age-srd", "dendron-site"):
        if (shared / "data" / "vaults" / name).is_dir():
            wikis.append((name, shared / "data" / "vaults" / name))

    load0 = os.getloadavg()
    started = time.time()
    rows = []
    loads = [load0[0]]
    for label, root in wikis:
        n = page_count(root)
        r = bench(root, bare, a.runs, compare)
        rows.append((label, n, r))
        loads.append(os.getloadavg()[0])
        print(f"{label}: {n} pages, stats {r['stats'][0]:.3f}s / {r['stats'][2]:.3f}s CPU, "
              f"floor {r['bare'][0]:.3f}s / {r['bare'][2]:.3f}s CPU", file=sys.stderr)
    load1 = os.getloadavg()
    lines = [
        "# graph_query.py benchmark",
        "",
        f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC · machine: {os.cpu_count()} cores "
        f"(`nproc`), {platform.machine()}, Linux {platform.release()} · Python {platform.python_version()} · "
        f"load average {load0[0]:.1f} at start, {load1[0]:.1f} at end (after each wiki: "
        f"{', '.join(f'{x:.1f}' for x in loads[1:])}) · {time.time() - started:.0f} s total.",
        "",
        f"Whole process, median of {a.runs} wall-clock runs, all commands round-robin in the same run "
        "(after one warm-up each). `floor` = `bare_scan.py DIR` (read every file + one link regex); "
        "`floor+yaml` = `bare_scan.py DIR --yaml` (+ PyYAML CSafeLoader on every frontmatter). "
        "`stats`/`hubs` = `graph_query.py --mode stats|hubs` (one process). "
        "RSS = peak resident memory of the `stats` process. "
        "Bytecode caches in place (as after a first run).",
        "",
        "### Wall clock (what the user waits for)",
        "",
        "| wiki | pages | floor s | floor+yaml s | stats s | hubs s | stats / floor | hubs / floor | stats ms per 1k pages | RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, n, r in rows:
        f = r["bare"][0]
        lines.append(
            f"| {label} | {n} | {f:.3f} | {r['bare_yaml'][0]:.3f} | {r['stats'][0]:.3f} | "
            f"{r['hubs'][0]:.3f} | {r['stats'][0] / f:.2f}× | "
            f"{r['hubs'][0] / f:.2f}× | {1e6 * r['stats'][0] / max(n, 1):.0f} | "
            f"{r['stats'][1]:.0f} |"
        )
    lines += [
        "",
        "### CPU time (user + system; less sensitive to other load on the machine)",
        "",
        "| wiki | pages | floor s | floor+yaml s | stats s | hubs s | stats / floor | hubs / floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, n, r in rows:
        f = r["bare"][2]
        lines.append(
            f"| {label} | {n} | {f:.3f} | {r['bare_yaml'][2]:.3f} | {r['stats'][2]:.3f} | "
            f"{r['hubs'][2]:.3f} | {r['stats'][2] / f:.2f}× | {r['hubs'][2] / f:.2f}× |"
        )
    if compare is not None:
        lines += [
            "",
            f"### Same run: stats of this checkout and of `{compare}` (A/B against one floor)",
            "",
            "| wiki | floor CPU s | stats CPU s | compared CPU s | this / compared | stats / floor | compared / floor |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for label, _n, r in rows:
            f, s, c = r["bare"][2], r["stats"][2], r["stats_compare"][2]
            lines.append(f"| {label} | {f:.3f} | {s:.3f} | {c:.3f} | {s / c:.3f} | {s / f:.2f}× | {c / f:.2f}× |")
    lines += [
        "",
        "Targets (issue 13): one process, `stats` on 10k pages ≤ 3.0× the floor (median of 5, same "
        "run); peak memory ≤ 150 MB at 50k pages.  Other helpers' work ran on this 2-core machine "
        "meanwhile: wall-clock ratios are noisy, CPU-time ratios less so.",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    Path(a.out).write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
