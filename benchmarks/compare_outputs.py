#!/usr/bin/env python3
"""Byte-compare what two checkouts print for graph queries and lint on the same wikis.

    python benchmarks/compare_outputs.py --base /path/to/main/checkout [--new .] [WIKI ...]

Issue 13's rule for speed work: graph answers and lint findings stay byte-identical.  For each
wiki (default: the 10k generated wiki ``/tmp/episteme-bench/gen-10000`` when present and the two
real vaults in ``../shared/data/vaults``) this runs ``graph_query.py`` in every mode (``stats``,
``hubs``, ``orphans``, ``neighbors``, ``shortest-path``, ``cluster``, ``query``, an unknown page)
and ``wiki_lint.py`` in its three formats from both checkouts (each with its own ``plugin/`` on
``PYTHONPATH``), with a fixed ``--today``, and compares exit status and stdout; lint's elapsed
seconds are the only part masked.  Exit 1 and a line per difference when any differs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared"))
TIMING = [re.compile(rb'"seconds": [0-9.]+'), re.compile(rb"checked in [0-9.]+ s")]
TODAY = ["--today", "2026-06-01"]


def run(tree: Path, script: str, args: list[str]) -> tuple[int, bytes]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree / "plugin")
    p = subprocess.run([sys.executable, str(tree / "plugin" / "scripts" / script), *args],
                       capture_output=True, env=env)
    out = p.stdout
    for t in TIMING:
        out = t.sub(b"T", out)
    return p.returncode, out


def cases(base: Path, wiki: str) -> list[tuple[str, list[str]]]:
    """The commands to compare; page and tag arguments come from the base's hubs."""
    _, out = run(base, "graph_query.py", ["--wiki", wiki, "--mode", "hubs", "--limit", "5", *TODAY])
    hubs = json.loads(out)
    rows = next(v for v in hubs.values() if isinstance(v, list))
    ids = [h["id"] for h in rows] + ["x", "x", "x"]
    tag = next((t for h in rows for t in h.get("tags", [])), "x")
    g = "graph_query.py"
    return [(g, ["--mode", m, *TODAY]) for m in ("stats", "hubs", "orphans")] + [
        (g, ["--mode", "hubs", "--limit", "200", "--tier", "all", *TODAY]),
        (g, ["--mode", "orphans", "--tier", "all", *TODAY]),
        (g, ["--mode", "neighbors", "--seed", ids[0], "--depth", "2", *TODAY]),
        (g, ["--mode", "shortest-path", "--src", ids[1], "--dst", ids[2], *TODAY]),
        (g, ["--mode", "cluster", "--tag", tag, *TODAY]),
        (g, ["--mode", "query", "--query", "type: concept", "--limit", "100", *TODAY]),
        (g, ["--mode", "neighbors", "--seed", "no such page xyz", *TODAY]),
        ("wiki_lint.py", ["--format", "json", *TODAY]),
        ("wiki_lint.py", [*TODAY]),
        ("wiki_lint.py", ["--format", "github", *TODAY]),
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the checkout to compare against (e.g. main)")
    ap.add_argument("--new", default=str(REPO), help="the checkout under test (default: this one)")
    ap.add_argument("wikis", nargs="*")
    a = ap.parse_args()
    base, new = Path(a.base).resolve(), Path(a.new).resolve()
    wikis = a.wikis or [str(p) for p in [Path("/tmp/episteme-bench/gen-10000"),
                                          SHARED / "data" / "vaults" / "13th-age-srd",
                                          SHARED / "data" / "vaults" / "dendron-site"] if p.is_dir()]
    n = bad = 0
    for wiki in wikis:
        for script, args in cases(base, wiki):
            argv = ["--wiki", wiki, *args]
            n += 1
            if run(base, script, argv) != run(new, script, argv):
                bad += 1
                print(f"DIFF {script} {' '.join(argv)}")
    print(f"{n - bad}/{n} identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
