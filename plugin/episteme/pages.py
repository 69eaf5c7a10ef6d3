"""Scanning the wiki: which files are pages, their frontmatter, and their ``[[links]]``.

API (stable; graph and lint build on it):

- ``iter_page_files(root) -> list[str]``: page ids (POSIX paths relative to ``root``) in sorted
  order.  Every ``*.md`` recursively, except under ``raw/`` (at the root) and hidden folders, and
  except the structural root files ``index.md``, ``log.md``, ``SCHEMA.md``.
- ``scan_wiki(root, *, jobs=None) -> list[Page]``: one :class:`Page` per page file, sorted by id.
- ``read_page(root, page_id) -> Page``: scan one file.
- ``parse_frontmatter(text) -> Frontmatter``: properties, error and where the body starts.
- ``fast_frontmatter(block) -> dict | None``: the PyYAML-free parser for plain frontmatter;
  ``None`` means "not certain, ask PyYAML".
- ``extract_links(body: bytes, first_line=1) -> list[Link]``: wiki links with 1-based line numbers
  (``Page.links`` holds the same as a compact :class:`LinkList`; iterate it like a list).
- ``normalize_target(text) -> str``: what a link (or a page argument) points at.

Why it looks like this: a scan is the hot path of every graph and lint call, and the wiki is
re-read from disk on every call (the files are the only source of truth).  PyYAML costs ~150 µs a
frontmatter block, more than reading the file, so plain ``key: value`` frontmatter goes through a
small parser that only answers when its result is certainly what PyYAML would build (proven on
every page of the real vaults by ``tests/test_pages.py``); anything else goes to PyYAML's
CSafeLoader.  Links are found on bytes with one regex; only pages that contain backticks or
tildes pay for code fence / code span handling.  No page body is kept after its scan.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

STRUCTURAL_FILES = frozenset({"index.md", "log.md", "SCHEMA.md"})
RAW_DIR = "raw"

#: Pages per worker process below which a second process does not pay for its start-up.
PARALLEL_MIN_PAGES = 4000


class Link(NamedTuple):
    """One ``[[target]]`` occurrence in a page body.  ``target`` is already normalized
    (see :func:`normalize_target`); ``line`` is the 1-based line in the file."""

    target: str
    line: int


class LinkList(Sequence):
    """A page's links, stored as a tuple of targets and an ``array`` of line numbers (12 bytes a
    link instead of ~70 for a list of tuples: at 50k pages this is what keeps a scan under
    150 MB).  Reads like a ``list[Link]``: ``len``, iteration, indexing, ``==`` with a list."""

    __slots__ = ("targets", "lines")

    def __init__(self, links: Iterable[tuple[str, int]] = ()):
        pairs = list(links)
        self.targets: tuple[str, ...] = tuple(t for t, _ in pairs)
        self.lines = array("i", [n for _, n in pairs])

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [Link(t, n) for t, n in zip(self.targets[i], self.lines[i], strict=True)]
        return Link(self.targets[i], self.lines[i])

    def __iter__(self) -> Iterator[Link]:
        return map(Link, self.targets, self.lines)

    def pairs(self) -> Iterator[tuple[str, int]]:
        """``(target, line)`` pairs without building :class:`Link` objects."""
        return zip(self.targets, self.lines, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LinkList, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"LinkList({list(self)!r})"

    def __reduce__(self):
        return (_linklist_from, (self.targets, self.lines))


def _linklist_from(targets: tuple[str, ...], lines: array) -> LinkList:
    ll = LinkList()
    ll.targets = targets
    ll.lines = lines
    return ll


@dataclass(slots=True)
class Page:
    """One wiki page.  ``props`` is the frontmatter mapping (``{}`` when absent or malformed);
    ``fm_error`` / ``fm_error_line`` say why it was malformed and where (1-based file line)."""

    id: str
    path: str
    props: dict[str, Any]
    links: Sequence[Link] = field(default_factory=list)  # a LinkList when scanned
    fm_error: str | None = None
    fm_error_line: int | None = None
    has_frontmatter: bool = False

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


@dataclass(slots=True)
class Frontmatter:
    props: dict[str, Any]
    error: str | None
    error_line: int | None
    body_offset: int  # byte/char offset where the body starts
    body_line: int  # 1-based line number of the body's first line
    present: bool


def frontmatter_title(props: dict[str, Any]) -> str | None:
    """The frontmatter title as text, or ``None`` when it is missing, empty or not a scalar."""
    t = props.get("title")
    if t is None or isinstance(t, (list, dict)):
        return None
    s = str(t).strip()
    return s or None


# --------------------------------------------------------------------------------------------
# files


def iter_page_files(root: str | os.PathLike) -> list[str]:
    """Page ids under ``root`` in code-point order.  Symlinked folders are not followed, so a
    link cycle cannot make the scan loop."""
    root = os.fspath(root)
    out: list[str] = []
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
                    is_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if rel == "" and name == RAW_DIR:
                        continue
                    stack.append((f"{rel}{name}/", e.path))
                elif name.endswith(".md"):
                    if rel == "" and name in STRUCTURAL_FILES:
                        continue
                    out.append(rel + name)
    out.sort()
    return out


# --------------------------------------------------------------------------------------------
# frontmatter

_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"[0-9]+\.[0-9]+\Z")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
# Supersets of the YAML 1.1 int / float / sexagesimal / timestamp forms.  A plain scalar that
# starts with a digit and matches none of them can only be a string.
_MAYBE_TYPED = re.compile(
    r"[-+]?(?:0[xXbBoO]?[0-9a-fA-F_]*"
    r"|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
    r"|[0-9][0-9_]*(?::[0-9_.]*)+"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt \t].*)?)\Z"
)
# Anything PyYAML's reader rejects or treats specially (control characters, BOMs, NEL, ...).
_UNSAFE_CHARS = re.compile("[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_FALLBACK = object()


def _plain_scalar(s: str, flow: bool) -> Any:
    """Resolve a plain (unquoted) scalar the way PyYAML's SafeLoader would, or ``_FALLBACK``."""
    if s in _NULLS:
        return None if not flow or s else _FALLBACK
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    if " #" in s or ": " in s or s.endswith(":") or "\t" in s:
        return _FALLBACK
    if flow and ("#" in s or s[0] in "-?:"):
        return _FALLBACK
    c = s[0]
    if c.isdigit():
        if _INT.match(s):
            return int(s)
        m = _DATE.match(s)
        if m:
            try:
                return _dt.date(int(m[1]), int(m[2]), int(m[3]))
            except ValueError:
                return _FALLBACK
        if _FLOAT.match(s):
            return float(s)
        if _MAYBE_TYPED.match(s):
            return _FALLBACK
        return s
    if c in "-+":
        return int(s) if _INT.match(s) else _FALLBACK
    if c.isalpha() or c in "_(/$":
        return s
    return _FALLBACK


def _quoted(s: str) -> Any:
    """A one-line single- or double-quoted scalar (nothing after the closing quote)."""
    q = s[0]
    if len(s) < 2 or s[-1] != q:
        return _FALLBACK
    inner = s[1:-1]
    if q == "'":
        if "'" in inner.replace("''", ""):
            return _FALLBACK
        return inner.replace("''", "'")
    if '"' in inner or "\\" in inner:
        return _FALLBACK
    return inner


def _scalar(s: str, flow: bool = False) -> Any:
    if s and s[0] in "'\"":
        return _quoted(s)
    return _plain_scalar(s, flow)


_FLOW_ITEM = re.compile(r"""\s*('(?:[^']|'')*'|"[^"\\]*"|[^,'"\[\]{}#][^,\[\]{}#]*?)\s*(,|\Z)""")


def _flow_list(s: str) -> Any:
    """A one-line ``[a, 'b', "c"]`` list of scalars."""
    inner = s[1:-1]
    if not inner.strip():
        return []
    out = []
    pos = 0
    n = len(inner)
    while pos < n:
        m = _FLOW_ITEM.match(inner, pos)
        if not m:
            return _FALLBACK
        v = _scalar(m[1], flow=True)
        if v is _FALLBACK:
            return _FALLBACK
        out.append(v)
        pos = m.end()
        if m[2] == "," and pos >= n:
            return _FALLBACK  # trailing comma: leave it to PyYAML
    return out


def fast_frontmatter(block: str) -> dict[str, Any] | None:
    """Parse plain frontmatter without PyYAML.

    Handles top-level ``key: value`` lines whose values are plain or simple quoted scalars
    (strings, ints, ``YYYY-MM-DD`` dates, booleans, nulls), one-line ``[a, b]`` lists and block
    ``- item`` lists of such scalars, blank lines and full-line comments.  Returns ``None`` as
    soon as anything else appears (nested mappings, multi-line scalars, anchors, tags, floats,
    escapes, odd characters...) so that the caller asks PyYAML instead: the result, when there
    is one, equals ``yaml.load(block, CSafeLoader)`` (or ``{}`` where PyYAML gives ``None``).
    """
    if _UNSAFE_CHARS.search(block):
        return None
    props: dict[str, Any] = {}
    list_key: str | None = None  # key whose block list we are filling
    list_indent = -1
    cache = _VALUE_CACHE
    for line in block.split("\n"):
        if not line:
            continue
        c0 = line[0]
        if c0 == " " or c0 == "-" or c0 == "#":
            stripped = line.strip()
            if not stripped or stripped[0] == "#":
                continue
            # only block-list items of the key above
            if list_key is None or not stripped.startswith("-"):
                return None
            indent = len(line) - len(line.lstrip(" "))
            if props[list_key] is None:
                list_indent = indent
            elif indent != list_indent:
                return None
            item = stripped[1:]
            if item and item[0] != " ":
                return None
            item = item.strip()
            if not item:
                v = None
            else:
                if item[0] in "[{-?":
                    return None
                v = _scalar(item)
                if v is _FALLBACK:
                    return None
            lst = props[list_key]
            if lst is None:
                lst = props[list_key] = []
            lst.append(v)
            continue
        list_key = None
        key, sep, rest = line.partition(":")
        if not sep or (rest and rest[0] != " "):
            return None
        k = _GOOD_KEYS.get(key)
        if k is None:
            if not _good_key(key):
                return None
            k = key
        key = k  # one shared string per key name across all pages
        value = rest.strip()
        if not value:
            props[key] = None
            list_key = key
            continue
        v = cache.get(value, _MISS)
        if v is _MISS:
            v = _top_value(value)
            if len(value) <= 80:
                if len(cache) > 20_000:
                    cache.clear()
                cache[value] = tuple(v) if type(v) is list else v
        elif type(v) is tuple:
            v = list(v)
        if v is _FALLBACK:
            return None
        props[key] = v
    return props


_VALUE_CACHE: dict[str, Any] = {}
_GOOD_KEYS: dict[str, str] = {}
_MISS = object()
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def _good_key(key: str) -> bool:
    """A plain key that PyYAML reads as that same string (not ``yes``, ``null``, ``<<``...)."""
    if not _KEY.match(key) or key in _NULLS or key in _TRUE or key in _FALSE:
        return False
    if len(_GOOD_KEYS) < 10_000:
        _GOOD_KEYS[key] = key
    return True


def _top_value(value: str) -> Any:
    """The value of a top-level ``key: value`` line (stripped, non-empty), or ``_FALLBACK``."""
    c = value[0]
    if c == "[":
        if not value.endswith("]"):
            return _FALLBACK
        return _flow_list(value)
    if c in "'\"":
        return _quoted(value)
    if c in "{&*!|>%@`?:,]}#":
        return _FALLBACK
    return _plain_scalar(value, flow=False)


_yaml_loader = None


def _yaml_load(block: str) -> Any:
    global _yaml_loader
    import yaml

    if _yaml_loader is None:
        _yaml_loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(block, Loader=_yaml_loader)  # noqa: S506 - a safe loader


def yaml_frontmatter(block: str) -> tuple[dict[str, Any], str | None, int | None]:
    """PyYAML on a frontmatter block: ``(props, error, 0-based line within the block)``."""
    import yaml

    try:
        data = _yaml_load(block)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line if mark is not None else None
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        return {}, f"invalid YAML: {problem}", line
    except (ValueError, OverflowError, TypeError) as e:  # e.g. 2024-02-30 as a date
        return {}, f"invalid YAML value: {e}", None
    if data is None:
        return {}, None, None
    if not isinstance(data, dict):
        return {}, f"frontmatter is a {type(data).__name__}, not a mapping", 0
    return data, None, None


_FM_OPEN = re.compile(rb"---[ \t\r]*(?:\n|\Z)")
_FM_CLOSE = re.compile(rb"^---[ \t\r]*$", re.M)


def _frontmatter_bounds(data: bytes) -> tuple[int, int, int] | None:
    """``(block_start, block_end, body_start)`` byte offsets, ``None`` when there is no
    frontmatter, or ``(-1, -1, -1)`` when it opens but never closes."""
    m = _FM_OPEN.match(data)
    if not m:
        return None  # "----" or "--- x": a rule or text, not frontmatter
    start = m.end()
    c = _FM_CLOSE.search(data, start)
    if not c:
        return (-1, -1, -1)
    return (start, c.start(), min(c.end() + 1, len(data)))


def parse_frontmatter(data: bytes | str) -> Frontmatter:
    """Split a page into frontmatter properties and body position (byte offset).

    Malformed or non-mapping frontmatter yields ``props == {}`` and an error with its 1-based
    line; an opening ``---`` that never closes is an error too (the whole file is then body)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    b = _frontmatter_bounds(data)
    if b is None:
        return Frontmatter({}, None, None, 0, 1, False)
    if b[0] < 0:
        return Frontmatter({}, "frontmatter opened with '---' is never closed", 1, 0, 1, True)
    start, end, body = b
    raw = data[start:end]
    body_line = 2 + raw.count(b"\n") + 1
    block = raw.decode("utf-8", "replace")
    if "\r" in block:
        block = block.replace("\r\n", "\n")
    props = fast_frontmatter(block)
    if props is not None:
        return Frontmatter(props, None, None, body, body_line, True)
    props, err, line = yaml_frontmatter(block)
    return Frontmatter(props, err, None if line is None else line + 2, body, body_line, True)


# --------------------------------------------------------------------------------------------
# links

_LINK = re.compile(rb"\[\[([^\[\]\n|#\\]*)([^\[\]\n]*)\]\]")
_FENCE = re.compile(rb"^ {0,3}(`{3,}|~{3,})([^\n]*)$", re.M)
_CODE_SPAN = re.compile(rb"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)")


def normalize_target(text: str) -> str:
    """The page a link text points at: before ``|`` (or the table-escaped ``\\|``), minus
    ``#heading`` / ``#^block``, trimmed, without a trailing ``.md``.  ``""`` = same page."""
    i = text.find("|")
    if i >= 0:
        text = text[:i]
        if text.endswith("\\"):
            text = text[:-1]
    j = text.find("#")
    if j >= 0:
        text = text[:j]
    text = text.strip()
    if text[-3:].lower() == ".md":
        text = text[:-3].rstrip()
    return text


def _fenced_regions(body: bytes) -> list[tuple[int, int]]:
    """Byte ranges covered by fenced code blocks (``` or ~~~), fence lines included.  An
    unclosed fence runs to the end of the body, as in CommonMark."""
    regions = []
    pos = 0
    n = len(body)
    while True:
        m = _FENCE.search(body, pos)
        if not m:
            return regions
        run, info = m[1], m[2]
        ch = run[:1]
        if ch == b"`" and b"`" in info:
            pos = m.end() + 1  # not a fence: inline code on that line
            if pos > n:
                return regions
            continue
        start = m.start()
        close = re.compile(rb"^ {0,3}" + re.escape(ch) + b"{" + str(len(run)).encode() + rb",}[ \t\r]*$", re.M)
        c = close.search(body, m.end() + 1)
        if not c:
            regions.append((start, n))
            return regions
        regions.append((start, c.end()))
        pos = c.end() + 1
        if pos > n:
            return regions


_TARGETS: dict[str, str] = {}
_intern = _TARGETS.setdefault  # one string per distinct target text: links repeat targets a lot


def extract_links(body: bytes, first_line: int = 1) -> list[Link]:
    """Wiki links in ``body`` (bytes of the page after its frontmatter).

    Not links: embeds ``![[...]]``, same-page ``[[#heading]]``, anything in fenced code or in
    an inline code span on the same line.  Every occurrence is returned (duplicates included)
    with its 1-based line number, counting from ``first_line`` for the body's first line."""
    return list(scan_links(body, first_line))


def scan_links(body: bytes, first_line: int = 1) -> LinkList:
    """:func:`extract_links` as a compact :class:`LinkList` (what pages store)."""
    if b"[[" not in body:
        return _linklist_from((), array("i"))
    has_code = b"`" in body or b"~~~" in body
    regions = _fenced_regions(body) if has_code else None
    targets: list[str] = []
    lines: list[int] = []
    add_target = targets.append
    add_line = lines.append
    line = first_line
    last = 0
    ri = 0
    span_cache: dict[int, list[tuple[int, int]]] = {}
    count = body.count
    for m in _LINK.finditer(body):
        s = m.start()
        if s and body[s - 1] == 33:  # "!": an embed
            continue
        if has_code:
            if regions:
                while ri < len(regions) and regions[ri][1] <= s:
                    ri += 1
                if ri < len(regions) and regions[ri][0] <= s:
                    continue
            ls = body.rfind(b"\n", 0, s) + 1
            spans = span_cache.get(ls)
            if spans is None:
                le = body.find(b"\n", s)
                text_line = body[ls : le if le >= 0 else len(body)]
                spans = (
                    [(ls + c.start(), ls + c.end()) for c in _CODE_SPAN.finditer(text_line)]
                    if b"`" in text_line
                    else []
                )
                span_cache[ls] = spans
            if spans and any(a <= s < b for a, b in spans):
                continue
        head, rest = m.groups()
        if rest:
            target = normalize_target((head + rest).decode("utf-8", "replace"))
        else:
            target = head.decode("utf-8", "replace")
            if target[-3:].lower() == ".md" or target[:1].isspace() or target[-1:].isspace():
                target = normalize_target(target)
        if target:
            line += count(b"\n", last, s)
            last = s
            add_target(_intern(target, target))
            add_line(line)
    return _linklist_from(tuple(targets), array("i", lines))


# --------------------------------------------------------------------------------------------
# pages


def read_page(root: str | os.PathLike, page_id: str) -> Page:
    """Read and parse one page file (``page_id`` relative to ``root``)."""
    path = os.path.join(os.fspath(root), page_id)
    with open(path, "rb") as f:
        data = f.read()
    return parse_page(page_id, path, data)


def parse_page(page_id: str, path: str, data: bytes) -> Page:
    """Build a :class:`Page` from file bytes.  Invalid UTF-8 is replaced, never fatal."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.startswith(b"---"):
        return Page(page_id, path, {}, scan_links(data, 1))
    fm = parse_frontmatter(data)
    if fm.body_offset:
        links = scan_links(data[fm.body_offset :], fm.body_line)
    else:
        links = scan_links(data, 1)
    return Page(page_id, path, fm.props, links, fm.error, fm.error_line, fm.present)


def _scan_chunk(args: tuple[str, list[str]]) -> list[Page]:
    root, ids = args
    out = []
    join = os.path.join
    for pid in ids:
        path = join(root, pid)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            out.append(Page(pid, path, {}, [], f"unreadable: {e.strerror}", None))
            continue
        out.append(parse_page(pid, path, data))
    return out


def _scan_packed(args: tuple[str, list[str]]) -> list[tuple]:
    """Worker side of a parallel scan: plain tuples pickle several times faster than
    dataclass instances and named tuples."""
    return [
        (p.id, p.path, p.props, p.links, p.fm_error, p.fm_error_line, p.has_frontmatter)
        for p in _scan_chunk(args)
    ]


def _unpack(rows: list[tuple]) -> list[Page]:
    return [Page(*r) for r in rows]


def default_jobs(n_pages: int) -> int:
    """Processes worth using for ``n_pages``: one per :data:`PARALLEL_MIN_PAGES` pages, at most
    one per core that is idle right now (a second process on a busy core only adds start-up
    and pickling cost)."""
    if n_pages < 2 * PARALLEL_MIN_PAGES:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        idle = cpus - os.getloadavg()[0]
    except OSError:
        idle = cpus
    return max(1, min(cpus, int(idle + 0.5), n_pages // PARALLEL_MIN_PAGES))


def scan_wiki(root: str | os.PathLike, *, jobs: int | None = None) -> list[Page]:
    """Every page under ``root``, parsed, sorted by id.

    ``jobs``: worker processes (``None`` = both cores when the wiki is large enough for a
    second process to pay for its start-up, ``1`` = in this process).  Results are identical
    either way."""
    root = os.fspath(root)
    ids = iter_page_files(root)
    if jobs is None:
        jobs = default_jobs(len(ids))
    if len(_TARGETS) > 200_000:  # a long-lived process (the server) scanning many wikis
        _TARGETS.clear()
    if jobs <= 1 or len(ids) < 2:
        out = _scan_chunk((root, ids))
        _VALUE_CACHE.clear()
        return out
    import multiprocessing as mp

    # contiguous slices keep each worker's directory reads local; the parent takes one slice
    # itself instead of idling while the workers run
    step = -(-len(ids) // jobs)
    chunks = [(root, ids[k : k + step]) for k in range(0, len(ids), step)]
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    with ctx.Pool(len(chunks) - 1) as pool:
        pending = pool.map_async(_scan_packed, chunks[1:])
        first = _scan_chunk(chunks[0])
        parts = pending.get()
    for rows in parts:
        first.extend(_unpack(rows))
    return first  # slices of a sorted list, concatenated in order: still sorted
