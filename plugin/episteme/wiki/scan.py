"""Scanning a whole wiki: every page file read once, in one process.

Why one process: on the 2-core machines this runs on, a forked second scanner measured no
gain (10k pages: 0.72 s in one process, 0.78 s in two), forking is unavailable on Windows and
unsafe on macOS once system libraries started threads, and the per-page work is small.

Why ``visit``: lint runs its per-page checks while a file's bytes are in hand, so a lint run
reads each page exactly once, like a graph query.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from . import frontmatter, links
from .files import list_pages, read_bytes
from .frontmatter import strip_bom
from .page import Page, parse_page, unreadable_page

#: ``visit(page, data)``: called for each page right after it is parsed, with the file's bytes
#: without BOM (``None`` when the file could not be read).
Visitor = Callable[[Page, "bytes | None"], None]


class Scan(NamedTuple):
    """A wiki's pages sorted by id, and the ``*.md`` entries left unread with the reason
    (see :func:`episteme.wiki.files.list_pages`)."""

    pages: list[Page]
    skipped: list[tuple[str, str]]


def scan(root: str | os.PathLike, *, lines: bool = True, visit: Visitor | None = None) -> Scan:
    """Read and parse every page under ``root``.

    ``lines=False``: links as bare targets (:attr:`Page.targets`), which is all the link graph
    needs.  The frontmatter parser's caches are cleared at the end; the link parser's (a
    bounded map of link text to target) when the scan starts, so that what this scan filled
    still serves the re-reads that follow it (the graph's line-numbered dangling links re-read
    a fifth of the pages of a big wiki: a cold cache cost them a tenth more)."""
    root = os.fspath(root)
    listing = list_pages(root)
    links.clear_caches()
    prefix = root if root.endswith(("/", os.sep)) or not root else root + "/"
    pages: list[Page] = []
    add = pages.append
    try:
        for pid in listing.ids:
            path = prefix + pid
            try:
                data = read_bytes(path)
            except OSError as e:
                page = unreadable_page(pid, path, e)
                add(page)
                if visit is not None:
                    visit(page, None)
                continue
            page = parse_page(pid, path, data, lines=lines)
            add(page)
            if visit is not None:
                visit(page, strip_bom(data))
    finally:
        frontmatter.clear_caches()
    return Scan(pages, listing.skipped)


def scan_wiki(root: str | os.PathLike) -> list[Page]:
    """Every page under ``root``, parsed with line-numbered links, sorted by id."""
    return scan(root).pages
