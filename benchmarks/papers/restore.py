#!/usr/bin/env python3
"""Restore the collected corpus papers (MANIFEST.tsv) into a local cache folder, checked by sha256.

The PDFs are third-party documents and stay out of the repository: MANIFEST.tsv names, for each
paper, the public GitHub repository, the commit and the path it was taken from, and its sha256.
This script copies each paper out of a local git mirror of that repository (the session mirror
``/work/.mirror/<owner>+<name>/repo``, or ``--mirror DIR``) into the cache folder, and verifies
every file, new or already cached, against the manifest. Without a mirror it says where each
missing paper comes from, so it can be fetched by hand (``git clone`` the repository, then
``git show <commit>:<path>``), and exits non-zero.

    .venv/bin/python benchmarks/papers/restore.py [--dest DIR] [--mirror DIR] [--check]
                                                  [--manifest benchmarks/papers/LIBRARY.tsv]

The cache folder is ``$EPISTEME_PAPERS`` when set, else ``~/.cache/episteme/papers/``;
``LIBRARY.tsv`` (73 systems papers of one collection, issue 35's library benchmark,
``benchmarks/bench_library.py``) goes to the folder ``library`` beside it.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "MANIFEST.tsv"
DEFAULT_MIRROR = Path("/work/.mirror")


@dataclass(frozen=True)
class Paper:
    """One manifest row: where a paper comes from and what its bytes must hash to."""

    file: str
    repository: str
    commit: str
    path: str
    sha256: str
    split: str


def cache_dir() -> Path:
    """The folder the papers are restored into (``EPISTEME_PAPERS`` overrides the default)."""
    env = os.environ.get("EPISTEME_PAPERS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "episteme" / "papers"


def read_manifest(path: Path = MANIFEST) -> list[Paper]:
    """Parse MANIFEST.tsv; a file name may not leave the cache folder."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    papers = []
    for row in rows:
        name = row["file"]
        if Path(name).name != name or name.startswith("."):
            raise ValueError(f"manifest file name must be a plain name: {name!r}")
        papers.append(Paper(name, row["repository"], row["commit"], row["path"],
                            row["sha256"], row["split"]))
    return papers


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def from_mirror(mirror: Path, paper: Paper) -> bytes | None:
    """The paper's bytes from a local git mirror of its repository, or None when absent."""
    owner_name = paper.repository.replace("/", "+")
    for gitdir in (mirror / owner_name / "repo", mirror / owner_name / "repo" / ".git",
                   mirror / owner_name):
        if not (gitdir / "objects").is_dir():
            continue
        res = subprocess.run(
            ["git", f"--git-dir={gitdir}", "cat-file", "blob", f"{paper.commit}:{paper.path}"],
            capture_output=True, check=False,
        )
        if res.returncode == 0 and res.stdout:
            return res.stdout
    return None


def restore(dest: Path, mirror: Path, check_only: bool = False, manifest: Path = MANIFEST) -> int:
    """Copy missing papers from the mirror into ``dest`` and verify all; return a process code."""
    papers = read_manifest(manifest)
    dest.mkdir(parents=True, exist_ok=True)
    ok, copied, missing, bad = 0, 0, [], []
    for paper in papers:
        target = dest / paper.file
        if target.exists():
            if sha256_of(target.read_bytes()) == paper.sha256:
                ok += 1
                continue
            bad.append(f"{paper.file}: cached copy has a different sha256")
            if check_only:
                continue
        elif check_only:
            missing.append(paper)
            continue
        data = from_mirror(mirror, paper)
        if data is None:
            missing.append(paper)
            continue
        if sha256_of(data) != paper.sha256:
            bad.append(f"{paper.file}: mirror blob does not match the manifest sha256")
            continue
        tmp = target.with_suffix(target.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(target)
        copied += 1
        ok += 1
        bad = [b for b in bad if not b.startswith(f"{paper.file}:")]
    print(f"{ok}/{len(papers)} papers verified in {dest} ({copied} copied now)")
    for line in bad:
        print(f"  MISMATCH {line}", file=sys.stderr)
    if missing:
        print(f"{len(missing)} papers not found (no mirror at {mirror} holds them). "
              "Fetch each by hand, e.g.:", file=sys.stderr)
        for paper in missing:
            print(f"  git clone https://github.com/{paper.repository} && "
                  f"git -C {paper.repository.split('/')[1]} show "
                  f"{paper.commit}:'{paper.path}' > '{dest / paper.file}'", file=sys.stderr)
    return 0 if ok == len(papers) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, default=None, help="cache folder (default: see above)")
    ap.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR,
                    help="folder of git mirrors named <owner>+<name>")
    ap.add_argument("--check", action="store_true", help="verify the cache only, copy nothing")
    ap.add_argument("--manifest", type=Path, default=MANIFEST,
                    help="MANIFEST.tsv (the corpus, default) or LIBRARY.tsv (the one-field library)")
    args = ap.parse_args()
    dest = args.dest or (cache_dir() if args.manifest == MANIFEST else cache_dir().parent / "library")
    return restore(dest.expanduser(), args.mirror, args.check, args.manifest)


if __name__ == "__main__":
    sys.exit(main())
