#!/usr/bin/env python3
"""A real full disk during ``ingest --write`` (issue 36 item 3), on a small tmpfs (needs root).

    sudo python benchmarks/full_disk.py --tree . --free 300 1200 2500 [--paper PDF]

For each free-space level (KB): a fresh copy of a one-paper wiki on a 64 MB tmpfs, a filler file
leaving that much free, ``ingest PAPER --write``; then the filler removed, ``lint --stores``, the
same ingest again, ``lint --stores``.  Prints one JSON record per level: exit codes, whether a
traceback was printed, the error line, temp files and journals left, and the ``lint --stores``
rules found before and after the re-run.  The portable tests simulate the full disk by fault
injection (``EPISTEME_FAIL_WRITES``); this is the check that the simulation matches a real one
(Chroma's own failures, "Error in compaction", only show up here).  Results:
benchmarks/RESULTS-reliability.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EPISTEME_SHARED", REPO.parent / "shared"))


def cli(tree: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree / "plugin"), "EPISTEME_NO_PROGRESS": "1"}
    return subprocess.run([sys.executable, "-m", "episteme.cli", *args], capture_output=True,
                          text=True, env=env)


def store_rules(tree: Path, wiki: Path) -> list[str]:
    p = cli(tree, "lint", "--stores", "--format", "json", "--wiki", str(wiki))
    try:
        found = json.loads(p.stdout).get("findings", [])
    except ValueError:
        return ["<unreadable lint output>"]
    return sorted({f["rule"] for f in found if f["rule"].startswith(("store", "index", "stale"))})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=REPO)
    ap.add_argument("--free", type=int, nargs="+", default=[300, 1200, 2500])
    ap.add_argument("--paper", type=Path, default=SHARED / "data/papers/gan_1406.2661v1.pdf")
    ap.add_argument("--first", type=Path, default=SHARED / "data/papers/bahdanau_1409.0473v7.pdf")
    args = ap.parse_args()
    mnt = Path(tempfile.mkdtemp(prefix="episteme-fulldisk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], check=True)
    try:
        base = mnt / "base"
        p = cli(args.tree, "ingest", str(args.first), "--wiki", str(base))
        assert p.returncode == 0, p.stderr[-2000:]
        template = Path(tempfile.mkdtemp(prefix="episteme-fulldisk-template-"))
        shutil.copytree(base, template / "w", symlinks=True)
        shutil.rmtree(base)
        for free in args.free:
            wiki = mnt / "w"
            shutil.rmtree(wiki, ignore_errors=True)
            shutil.copytree(template / "w", wiki, symlinks=True)
            filler = mnt / "filler"
            avail = shutil.disk_usage(mnt).free // 1024
            with open(filler, "wb") as f:
                f.truncate(0)
                for _ in range(max(0, avail - free)):
                    f.write(b"\0" * 1024)
            ing = ("ingest", str(args.paper), "--write", "--wiki", str(wiki))
            first = cli(args.tree, *ing)
            left = sorted(p.relative_to(wiki).as_posix() for p in wiki.rglob("*")
                          if p.name.endswith((".tmp", ".npz", ".bak")))
            journals = sorted(p.name for p in (wiki / ".episteme").glob("*journal*.json"))
            filler.unlink()
            before = store_rules(args.tree, wiki)
            again = cli(args.tree, *ing)
            error = [ln for ln in first.stderr.splitlines() if ln.startswith("error:")]
            print(json.dumps({"free_kb": free, "rc": first.returncode,
                              "traceback": "Traceback" in first.stderr, "error": error,
                              "temps_left": left, "journals_left": journals,
                              "lint_stores": before, "rerun_rc": again.returncode,
                              "lint_stores_after_rerun": store_rules(args.tree, wiki)}))
        shutil.rmtree(template)
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        mnt.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
