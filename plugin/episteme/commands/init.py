"""``episteme init [WIKI]``: start a wiki -- the starter ``SCHEMA.md``, ``index.md``,
``index.json`` and ``log.md`` (and ``raw/``).

Why a schema from the first moment: lint checks frontmatter against ``SCHEMA.md``; a wiki
without one accepts any field and any ``type`` (``type: idea`` passed).  ``episteme ingest``
calls :func:`init_wiki` itself when the wiki folder is missing or empty, so the first ingest
of a new wiki starts it the same way.  Existing files are never overwritten: running it again
on a wiki changes nothing.  Prints ``{"wiki", "created": [...], "existing": [...]}``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..cliutil import ArgumentParser, print_json, run_main
from ..wiki.files import DATA_DIR, RAW_DIR

STARTER_SCHEMA = Path(__file__).resolve().parent.parent / "data" / "SCHEMA.md"
FILES = ("SCHEMA.md", "index.md", "index.json", "log.md")


def _starter(name: str) -> str:
    from ..wiki.index import DEFAULT_INDEX_HEADER, DEFAULT_LOG_HEADER

    if name == "SCHEMA.md":
        return STARTER_SCHEMA.read_text(encoding="utf-8")
    if name == "index.md":
        return DEFAULT_INDEX_HEADER.rstrip("\n") + "\n"
    if name == "index.json":
        return "{}\n"
    return DEFAULT_LOG_HEADER


def is_unstarted(wiki: Path) -> bool:
    """Missing, empty, or holding only what ingest itself makes (``raw/``, ``.episteme/``)."""
    if not wiki.exists():
        return True
    return wiki.is_dir() and all(p.name in (RAW_DIR, DATA_DIR) for p in wiki.iterdir())


def init_wiki(wiki: str | os.PathLike) -> dict[str, Any]:
    """Create the wiki folder's starter files that are missing (under the wiki's write lock,
    each written atomically); return what was created and what already existed."""
    from ..errors import UsageError
    from ..fsutil import atomic_write_text, wiki_lock

    root = Path(wiki)
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a folder")
    root.mkdir(parents=True, exist_ok=True)
    (root / "raw").mkdir(exist_ok=True)
    created, existing = [], []
    with wiki_lock(root):
        for name in FILES:
            path = root / name
            if path.exists():
                existing.append(name)
                continue
            atomic_write_text(path, _starter(name))
            created.append(name)
    return {"wiki": str(root), "created": created, "existing": existing}


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme init", description=__doc__.splitlines()[0])
    p.add_argument("wiki", nargs="?", default=None, help="the wiki folder (default: $WIKI_PATH or ./wiki)")
    p.add_argument("--wiki", dest="wiki_opt", default=None, help=argparse_suppress())
    return p


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        from ..config import load_settings

        args = build_parser().parse_args(argv)
        wiki = load_settings(args.wiki or args.wiki_opt).wiki
        print_json(init_wiki(wiki))
        return 0

    return run_main(body)
