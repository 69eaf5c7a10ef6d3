"""Which files of a wiki folder are pages, and reading them safely.

A wiki can come from anywhere (a clone, a CI checkout of someone's pull request), so what is
read is decided here, once, for graph, lint, the writer's scans and the server:

- every ``*.md`` file recursively, except under ``raw/`` (at the root), hidden files and
  folders, and the structural root files (:data:`STRUCTURAL_FILES`);
- only regular files: a FIFO would block a read forever, a device (``/dev/zero``) never ends;
- a symlinked page is read only when its real path is a regular file inside the wiki's real
  path (git stores symlinks, so ``passwd.md -> /etc/passwd`` is one ``git clone`` away);
- at most :data:`MAX_PAGE_BYTES` of a page: a bigger file is reported, not read whole.

What is left out this way is listed (:func:`list_pages`), so lint can say so.
"""

from __future__ import annotations

import os
import stat

#: Root files that are part of the wiki's machinery, not pages (compared case-insensitively:
#: on macOS and Windows ``Index.md`` *is* ``index.md``).
STRUCTURAL_FILES = frozenset({"index.md", "log.md", "SCHEMA.md"})
_STRUCTURAL_LOWER = frozenset(n.lower() for n in STRUCTURAL_FILES)
RAW_DIR = "raw"
#: The wiki's folder of derived state (stores, lock, write markers, caches); hidden, so never
#: scanned for pages.
DATA_DIR = ".episteme"
#: The largest page read (bytes).  A real wiki page is a few kB; the cap keeps one hostile file
#: from exhausting memory.
MAX_PAGE_BYTES = 8 * 1024 * 1024


def is_structural(name: str) -> bool:
    """``name`` (a root-level file name) is one of :data:`STRUCTURAL_FILES`."""
    return name.lower() in _STRUCTURAL_LOWER


class PageListing:
    """``ids``: page ids (POSIX paths relative to the root) in code-point order; ``skipped``:
    ``(id, reason)`` of ``*.md`` entries that are not read (not a regular file, or a symlink
    leading outside the wiki)."""

    __slots__ = ("ids", "skipped")

    def __init__(self, ids: list[str], skipped: list[tuple[str, str]]):
        self.ids = ids
        self.skipped = skipped


def _link_reason(path: str, real_root: str) -> str | None:
    """Why the symlink at ``path`` is not read as a page (``None``: it is)."""
    real = os.path.realpath(path)
    if os.path.commonpath([real, real_root]) != real_root:
        return "a symlink to outside the wiki"
    try:
        st = os.stat(real)
    except OSError:
        return "a broken symlink"
    if not stat.S_ISREG(st.st_mode):
        return "a symlink to something that is not a regular file"
    return None


def list_pages(root: str | os.PathLike) -> PageListing:
    """Every page file under ``root`` (see the module docstring for which).  Symlinked folders
    are not followed, so a link cycle cannot make the scan loop."""
    root = os.fspath(root)
    out: list[str] = []
    skipped: list[tuple[str, str]] = []
    real_root: str | None = None
    stack = [("", root)]
    while stack:
        rel, d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                name = e.name
                if name.startswith("."):
                    continue
                try:
                    if e.is_dir(follow_symlinks=False):
                        if not (rel == "" and name == RAW_DIR):
                            stack.append((f"{rel}{name}/", e.path))
                        continue
                    if not name.endswith(".md") or (rel == "" and is_structural(name)):
                        continue
                    if e.is_file(follow_symlinks=False):
                        out.append(rel + name)
                        continue
                    if e.is_symlink():
                        if real_root is None:
                            real_root = os.path.realpath(root)
                        reason = _link_reason(e.path, real_root)
                    else:
                        reason = "not a regular file"
                except OSError as err:
                    reason = f"unreadable: {err.strerror}"
                if reason is None:
                    out.append(rel + name)
                else:
                    skipped.append((rel + name, reason))
    out.sort()
    skipped.sort()
    return PageListing(out, skipped)


def iter_page_files(root: str | os.PathLike) -> list[str]:
    """The page ids of :func:`list_pages`."""
    return list_pages(root).ids


class PageTooLarge(OSError):
    """A page over :data:`MAX_PAGE_BYTES` (an ``OSError``: the scan reports it like any
    unreadable file)."""

    def __init__(self, size: int):
        super().__init__(f"larger than {MAX_PAGE_BYTES // (1024 * 1024)} MB (read {size} bytes)")
        self.strerror = self.args[0]


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def read_bytes(path: str) -> bytes:
    """A page file's bytes, at most :data:`MAX_PAGE_BYTES` (else :class:`PageTooLarge`).

    The listing already admitted regular files only; should a FIFO or a device take a page's
    place since, ``O_NONBLOCK`` (where it exists) makes opening the FIFO return at once and
    reading it end at once, and the cap ends a device that never does.  ``os.open``/``os.read``
    cost half of ``open().read()`` (and no ``fstat``), which is most of a scan's I/O time on
    ten thousand small files."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        data = os.read(fd, 65536)
        if len(data) == 65536:  # a big page: read the rest (never past the cap)
            parts = [data]
            size = len(data)
            while chunk := os.read(fd, 1 << 20):
                size += len(chunk)
                if size > MAX_PAGE_BYTES:
                    raise PageTooLarge(size)
                parts.append(chunk)
            data = b"".join(parts)
        return data
    except BlockingIOError:  # a FIFO that has a writer but nothing written: not a page
        raise OSError(0, "not a regular file", path) from None
    finally:
        os.close(fd)


def read_page_text(root: str | os.PathLike, page_id: str) -> str:
    """A page's text (UTF-8, invalid bytes replaced) by its id, read like the scan reads it
    (the id must come from :func:`list_pages`: it is not checked for ``..`` here)."""
    return read_bytes(os.path.join(os.fspath(root), page_id)).decode("utf-8", "replace")
