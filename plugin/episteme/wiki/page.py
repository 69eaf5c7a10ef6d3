"""One wiki page as the scan sees it: id, frontmatter, links."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .files import read_bytes
from .frontmatter import body_start, frontmatter_title, page_frontmatter, strip_bom
from .links import NO_LINKS, Link, link_targets, scan_links


class Page:
    """One wiki page.

    ``props``: the frontmatter mapping (``{}`` when absent or malformed); ``fm_error`` /
    ``fm_error_line``: why it was malformed and where (1-based file line); ``links``: a
    :class:`~episteme.wiki.links.LinkList` (targets with lines) when scanned with lines;
    ``targets``: the link targets without lines when scanned without them (the graph's lean
    build; emptied once the edges are made).

    A plain slotted class, not a dataclass: ``dataclasses`` imports ``inspect``, which cost the
    graph command more start-up time than a 1k-page scan."""

    __slots__ = ("id", "path", "props", "links", "fm_error", "fm_error_line", "has_frontmatter", "targets")

    def __init__(
        self,
        id: str,  # noqa: A002 - the field's name
        path: str,
        props: dict[str, Any],
        links: Sequence[Link] = NO_LINKS,
        fm_error: str | None = None,
        fm_error_line: int | None = None,
        has_frontmatter: bool = False,
        targets: tuple[str, ...] = (),
    ):
        self.id = id
        self.path = path
        self.props = props
        self.links = links
        self.fm_error = fm_error
        self.fm_error_line = fm_error_line
        self.has_frontmatter = has_frontmatter
        self.targets = targets

    def _key(self) -> tuple:
        return (self.id, self.path, self.props, self.links, self.fm_error, self.fm_error_line, self.has_frontmatter)

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, Page) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  (mutable)

    def __repr__(self) -> str:
        return f"Page(id={self.id!r}, props={self.props!r}, links={len(self.links)}, fm_error={self.fm_error!r})"

    @property
    def stem(self) -> str:
        """File name without ``.md``: the third link resolution step matches it."""
        name = self.id.rsplit("/", 1)[-1]
        return name[:-3] if name.endswith(".md") else name

    @property
    def folder(self) -> str:
        """Folder of the page relative to the root (``""`` at the root)."""
        return self.id.rsplit("/", 1)[0] if "/" in self.id else ""

    @property
    def title(self) -> str:
        """Frontmatter ``title`` when it is a non-empty scalar, else the file stem."""
        t = frontmatter_title(self.props)
        return t if t is not None else self.stem


def parse_page(page_id: str, path: str, data: bytes, *, lines: bool = True) -> Page:
    """Build a :class:`Page` from file bytes (invalid UTF-8 is replaced, never fatal).

    ``lines=False``: the links' targets only (:attr:`Page.targets`), no line numbers."""
    data = strip_bom(data)
    if data[:3] != b"---":
        if lines:
            return Page(page_id, path, {}, scan_links(data, 1))
        return Page(page_id, path, {}, targets=link_targets(data))
    fm = page_frontmatter(data)
    if not lines:
        return Page(page_id, path, fm.props, NO_LINKS, fm.error, fm.error_line, fm.present,
                    link_targets(data, fm.body_offset))
    links = scan_links(data[fm.body_offset :], fm.body_line) if fm.body_offset else scan_links(data, 1)
    return Page(page_id, path, fm.props, links, fm.error, fm.error_line, fm.present)


def unreadable_page(page_id: str, path: str, error: OSError) -> Page:
    """The page of a file that could not be read (too large, gone, no permission)."""
    return Page(page_id, path, {}, fm_error=f"unreadable: {error.strerror or error}")


def read_page(root: str | os.PathLike, page_id: str) -> Page:
    """Read and parse one page file (``page_id`` relative to ``root``, as listed by
    :func:`~episteme.wiki.files.list_pages`)."""
    path = os.path.join(os.fspath(root), page_id)
    return parse_page(page_id, path, read_bytes(path))


def read_body(root: str | os.PathLike, page_id: str) -> tuple[bytes, int]:
    """A page file's body (its bytes after the frontmatter, without BOM) and the 1-based file
    line it starts on: what :func:`~episteme.wiki.links.scan_links` and
    :func:`~episteme.wiki.links.link_lines` take (only where the body starts matters, so the
    frontmatter is not parsed)."""
    data = strip_bom(read_bytes(os.path.join(os.fspath(root), page_id)))
    offset, line = body_start(data)
    return (data[offset:], line) if offset else (data, 1)
