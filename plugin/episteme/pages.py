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
from collections import namedtuple
from collections.abc import Iterable, Iterator, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs the command ~5 ms of start-up
    from typing import Any

STRUCTURAL_FILES = frozenset({"index.md", "log.md", "SCHEMA.md"})
RAW_DIR = "raw"

#: Pages per worker process below which a second process does not pay for its start-up.
PARALLEL_MIN_PAGES = 4000


Link = namedtuple("Link", ["target", "line"])
Link.__doc__ = """One ``[[target]]`` occurrence in a page body.  ``target`` is already normalized
(see :func:`normalize_target`); ``line`` is the 1-based line in the file."""


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


#: The (shared, never modified) links of a page scanned without them.
NO_LINKS = _linklist_from((), array("i"))


class Record:
    """A slotted record class: the ``__init__``-less part of ``@dataclass(slots=True)``
    (field-wise ``==``, a ``repr`` naming the fields, unhashable) without importing
    ``dataclasses``, which with ``inspect`` costs more start-up than a 1k-page scan."""

    __slots__ = ()

    def _values(self) -> tuple:
        return tuple(getattr(self, f) for f in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Page(Record):
    """One wiki page.  ``props`` is the frontmatter mapping (``{}`` when absent or malformed);
    ``fm_error`` / ``fm_error_line`` say why it was malformed and where (1-based file line);
    ``links`` is a :class:`LinkList` when scanned."""

    __slots__ = ("id", "path", "props", "links", "fm_error", "fm_error_line", "has_frontmatter")

    def __init__(
        self,
        id: str,  # noqa: A002 - the field's name
        path: str,
        props: dict[str, Any],
        links: Sequence[Link] | None = None,
        fm_error: str | None = None,
        fm_error_line: int | None = None,
        has_frontmatter: bool = False,
    ):
        self.id = id
        self.path = path
        self.props = props
        self.links = [] if links is None else links
        self.fm_error = fm_error
        self.fm_error_line = fm_error_line
        self.has_frontmatter = has_frontmatter

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


class Frontmatter(Record):
    """``props``; ``error`` / ``error_line`` when malformed; ``body_offset``: byte offset where
    the body starts; ``body_line``: 1-based line of the body's first line; ``present``."""

    __slots__ = ("props", "error", "error_line", "body_offset", "body_line", "present")

    def __init__(
        self,
        props: dict[str, Any],
        error: str | None,
        error_line: int | None,
        body_offset: int,
        body_line: int,
        present: bool,
    ):
        self.props = props
        self.error = error
        self.error_line = error_line
        self.body_offset = body_offset
        self.body_line = body_line
        self.present = present


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
# (the complement of "\n", \x20-\x7e, \xa0-\ud7ff, \ue000-\ufefe, \uff00-\ufffd, astral planes,
# written as the short positive class: the negated one took 5 ms to compile at every start)
_UNSAFE_CHARS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]")
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
    if flow and ("#" in s or ":?" in s or s[0] in "-?:"):  # PyYAML: ":?" inside a flow scalar is an error
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


# YAML's white space is the space and the tab (tabs never reach this parser): not "\s", which
# would also eat a no-break space that PyYAML keeps as part of the value.
_FLOW_ITEM = re.compile(r"""[ ]*('(?:[^']|'')*'|"[^"\\]*"|[^,'"\[\]{}#][^,\[\]{}#]*?)[ ]*(,|\Z)""")


_FLOW_SPECIAL = re.compile(r"""['"\[\]{}#]""")
_FLOW_SCALARS: dict[str, Any] = {}  # flow-list item -> value (tags repeat across pages)


def _flow_list(s: str) -> Any:
    """A one-line ``[a, 'b', "c"]`` list of scalars."""
    inner = s[1:-1]
    if not inner.strip(" "):
        return []
    if not _FLOW_SPECIAL.search(inner):
        # no quotes, brackets, braces or "#": the items are the comma-separated parts, trimmed
        # of spaces (what _FLOW_ITEM matches; an empty part is the regex's failure too)
        items = []
        for part in inner.split(","):
            item = part.strip(" ")
            if not item:
                return _FALLBACK
            v = _FLOW_SCALARS.get(item, _FALLBACK)
            if v is _FALLBACK:
                v = _scalar(item, flow=True)
                if v is _FALLBACK:
                    return _FALLBACK
                if len(_FLOW_SCALARS) < 20_000:
                    _FLOW_SCALARS[item] = v
            items.append(v)
        return items
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
    cached = _LINE_CACHE.get
    for line in block.split("\n"):
        hit = cached(line)
        if hit is not None:  # a "key: value" line seen before (on this page or another)
            key, v = hit
            props[key] = list(v) if type(v) is tuple else v  # each page gets its own list
            list_key = None
            continue
        if not line:
            continue
        c0 = line[0]
        if c0 == " " or c0 == "-" or c0 == "#":
            stripped = line.strip(" ")
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
            item = item.strip(" ")
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
        value = rest.strip(" ")
        if not value:
            props[key] = None
            list_key = key
            continue
        v = _TYPED_VALUES.get(value, _FALLBACK)
        if v is _FALLBACK:
            v = _top_value(value)
            if v is _FALLBACK:
                return None
            if type(v) is not str and len(_TYPED_VALUES) < 20_000:
                _TYPED_VALUES[value] = tuple(v) if type(v) is list else v
        elif type(v) is tuple:
            v = list(v)
        # remember lines likely to repeat: not long strings (titles), and once full, keep what
        # is there (the common lines come early; clearing would make big wikis thrash)
        if len(_LINE_CACHE) < 50_000 and len(line) <= 100 and (type(v) is not str or len(v) <= 24):
            _LINE_CACHE[line] = (key, tuple(v) if type(v) is list else v)
        props[key] = v
    return props


#: a top-level ``key: value`` line -> ``(key, value)``, lists stored as tuples: ``type: entity``,
#: ``updated: 2025-03-01`` and tag lists repeat across thousands of pages, so most lines cost
#: one dict lookup.  Cleared after every scan (a long-lived server must not accumulate the
#: lines of every wiki it scanned).
_LINE_CACHE: dict[str, tuple[str, Any]] = {}
_VALUE_CACHE = _LINE_CACHE  # the name lint_rules clears after its scan
#: a non-string top-level value's text -> its value (lists as tuples): ``created:`` and
#: ``updated:`` lines share dates, and a page's first lines are seldom seen before, so a cold
#: scan misses the line cache for most of them.  Bounded; cleared with the line cache.
_TYPED_VALUES: dict[str, Any] = {}
_GOOD_KEYS: dict[str, str] = {}
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
    if data[:4] == b"---\n":  # the usual opening line: no regex needed
        start = 4
    else:
        m = _FM_OPEN.match(data)
        if not m:
            return None  # "----" or "--- x": a rule or text, not frontmatter
        start = m.end()
    # the closing line: "---" at a line start, then only spaces, tabs or CRs (= _FM_CLOSE)
    # (the opening line ends with a newline, or the data ends there: either way every line
    # start at or after ``start`` follows a newline at ``start - 1`` or later)
    pos = start - 1
    n = len(data)
    while True:
        pos = data.find(b"\n---", pos)
        if pos < 0:
            return (-1, -1, -1)
        k = pos + 4
        while k < n and data[k] in b" \t\r":
            k += 1
        if k == n or data[k] == 10:
            return (start, pos + 1, min(k + 1, n))
        pos += 1


def parse_frontmatter(data: bytes | str) -> Frontmatter:
    """Split a page into frontmatter properties and body position (byte offset).

    Malformed or non-mapping frontmatter yields ``props == {}`` and an error with its 1-based
    line; an opening ``---`` that never closes is an error too (the whole file is then body)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return Frontmatter(*_split_frontmatter(data))


def _split_frontmatter(data: bytes) -> tuple[dict[str, Any], str | None, int | None, int, int, bool]:
    """:func:`parse_frontmatter` as a plain tuple (``data`` without a BOM): the scan's hot
    path, so no object is built that the caller would take apart again."""
    b = _frontmatter_bounds(data)
    if b is None:
        return {}, None, None, 0, 1, False
    if b[0] < 0:
        return {}, "frontmatter opened with '---' is never closed", 1, 0, 1, True
    start, end, body = b
    raw = data[start:end]
    body_line = 2 + raw.count(b"\n") + 1
    block = raw.decode("utf-8", "replace")
    if "\r" in block:
        block = block.replace("\r\n", "\n")
    props = fast_frontmatter(block)
    if props is not None:
        return props, None, None, body, body_line, True
    props, err, line = yaml_frontmatter(block)
    return props, err, None if line is None else line + 2, body, body_line, True


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


_CLOSERS: dict[tuple[bytes, int], re.Pattern[bytes]] = {}  # closing-fence regex per opening run


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
        close = _CLOSERS.get((ch, len(run)))
        if close is None:
            close = _CLOSERS[(ch, len(run))] = re.compile(
                rb"^ {0,3}" + re.escape(ch) + b"{" + str(len(run)).encode() + rb",}[ \t\r]*$", re.M
            )
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


def read_bytes(path: str) -> bytes:
    """A file's bytes.  ``os.open``/``os.read`` cost half of ``open().read()`` (no buffered
    file object per file), which is most of a scan's I/O time on ten thousand small files."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, 65536)
        if len(data) == 65536:  # a big page: read the rest
            parts = [data]
            while chunk := os.read(fd, 1 << 20):
                parts.append(chunk)
            data = b"".join(parts)
        return data
    finally:
        os.close(fd)


def read_page(root: str | os.PathLike, page_id: str) -> Page:
    """Read and parse one page file (``page_id`` relative to ``root``)."""
    path = os.path.join(os.fspath(root), page_id)
    return parse_page(page_id, path, read_bytes(path))


def parse_page(page_id: str, path: str, data: bytes) -> Page:
    """Build a :class:`Page` from file bytes.  Invalid UTF-8 is replaced, never fatal."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.startswith(b"---"):
        return Page(page_id, path, {}, scan_links(data, 1))
    props, err, err_line, body, body_line, present = _split_frontmatter(data)
    links = scan_links(data[body:], body_line) if body else scan_links(data, 1)
    return Page(page_id, path, props, links, err, err_line, present)


_LINK_TEXT = re.compile(rb"\[\[([^\[\]\n]*)\]\]")  # = _LINK with its two groups as one
_LINK_HEAD = re.compile(rb"\[\[([^\[\]\n|#\\]*)[^\[\]\n]*\]\]")  # = _LINK, only the first group
#: link text (or its part before ``|``/``#``) -> normalize_target() of it ("" = same page)
_NORMALIZED: dict[bytes, str] = {}


def link_targets(data: bytes, start: int = 0) -> tuple[str, ...]:
    """``scan_links(data[start:]).targets`` (the same targets in the same order) without line
    numbers.

    Why: graph queries need only where links point; counting lines and building a
    :class:`LinkList` per page was a third of a ``stats`` run.  A page without code (no
    backtick, no ``~~~``) takes one ``findall`` on the file's bytes; see :func:`_code_targets`
    for the others."""
    if start and data[start - 1] == 33:  # "!" just before the body: not an embed there
        data, start = data[start:], 0
    # one-byte probes first: memchr is ~4x faster than a multi-byte substring search
    if b"`" in data or (b"~" in data and b"~~~" in data):
        return _code_targets(data[start:] if start else data)
    return _plain_targets(data, start)


def _plain_targets(data: bytes, start: int) -> tuple[str, ...]:
    """Targets of a body without code.  An embed ``![[`` is first defused in a same-length
    copy (``!\\0[``) so that the regex cannot match it, which leaves every other match as it
    was (a link text never contains ``[``).  Without a backslash in the page, a link's target
    is its text before the first ``|`` or ``#``, so only that part is captured: it repeats
    across pages (``[[X|label]]``, ``[[X#Heading]]``) and the cache below serves it."""
    if b"!" in data and b"![[" in data:
        data = data.replace(b"![[", b"!\0[")
    raws = (_LINK_TEXT if b"\\" in data else _LINK_HEAD).findall(data, start)
    if not raws:
        return ()
    got = list(map(_NORMALIZED.get, raws))
    if None in got:
        for k, t in enumerate(got):
            if t is None:
                got[k] = _normalize_raw(raws[k])
    return tuple(filter(None, got))  # drops "" (same-page links like [[#heading]])


def _code_targets(body: bytes) -> tuple[str, ...]:
    """Targets of a body with code: fenced blocks are cut out (they span whole lines and a
    link never spans a line break, so the rest matches as before); inline code spans, which
    live on one line, are then checked per link as :func:`scan_links` does."""
    regions = _fenced_regions(body)
    if regions:
        parts = []
        pos = 0
        for a, b in regions:
            parts.append(body[pos:a])
            pos = b
        parts.append(body[pos:])
        body = b"\n".join(parts)
    if b"`" not in body:
        return _plain_targets(body, 0)
    out = []
    spans_at: dict[int, list[tuple[int, int]]] = {}
    for m in _LINK_TEXT.finditer(body):
        s = m.start()
        if s and body[s - 1] == 33:  # "!": an embed
            continue
        ls = body.rfind(b"\n", 0, s) + 1
        spans = spans_at.get(ls)
        if spans is None:
            spans = spans_at[ls] = _line_spans(body, ls, s)
        if spans and any(a <= s < b for a, b in spans):
            continue
        raw = m[1]
        t = _NORMALIZED.get(raw)
        if t is None:
            t = _normalize_raw(raw)
        if t:
            out.append(t)
    return tuple(out)


def _line_spans(body: bytes, ls: int, s: int) -> list[tuple[int, int]]:
    """Inline code spans (byte ranges) of the line that starts at ``ls`` and holds ``s``."""
    le = body.find(b"\n", s)
    text_line = body[ls : le if le >= 0 else len(body)]
    if b"`" not in text_line:
        return []
    return [(ls + c.start(), ls + c.end()) for c in _CODE_SPAN.finditer(text_line)]


def _normalize_raw(raw: bytes) -> str:
    t = raw.decode("utf-8", "replace")
    if "|" in t or "#" in t or "\\" in t or t[-3:].lower() == ".md" or t[:1].isspace() or t[-1:].isspace():
        t = normalize_target(t)
    t = _intern(t, t)
    if len(_NORMALIZED) < 200_000:
        _NORMALIZED[raw] = t
    return t


if TYPE_CHECKING:
    #: What a graph-only scan keeps of a page: ``(props, fm_error, fm_error_line,
    #: has_frontmatter, link targets)``.
    LeanPage = tuple[dict[str, Any], str | None, int | None, bool, tuple[str, ...]]


def lean_page(data: bytes) -> LeanPage:
    """The parts of a page the link graph needs (no line numbers, no :class:`Page`)."""
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    if data[:3] != b"---":
        return {}, None, None, False, link_targets(data)
    props, err, err_line, body, _, present = _split_frontmatter(data)
    return props, err, err_line, present, link_targets(data, body)


def _scan_chunk(root: str, ids: list[str]) -> list[Page]:
    out = []
    for pid in ids:
        path = f"{root}/{pid}"
        try:
            data = read_bytes(path)
        except OSError as e:
            out.append(Page(pid, path, {}, [], f"unreadable: {e.strerror}", None))
            continue
        out.append(parse_page(pid, path, data))
    return out


def _scan_packed(root: str, ids: list[str]) -> list[tuple]:
    """Worker side of a parallel scan: plain tuples pickle several times faster than
    dataclass instances and named tuples."""
    return [
        (p.id, p.path, p.props, p.links, p.fm_error, p.fm_error_line, p.has_frontmatter)
        for p in _scan_chunk(root, ids)
    ]


def _lean_chunk(root: str, ids: list[str]) -> list[LeanPage]:
    out = []
    for pid in ids:
        try:
            data = read_bytes(f"{root}/{pid}")
        except OSError as e:
            out.append(({}, f"unreadable: {e.strerror}", None, False, ()))
            continue
        out.append(lean_page(data))
    return out


def default_jobs(n_pages: int) -> int:
    """Processes worth using for ``n_pages``.

    ``$EPISTEME_JOBS`` (a number) wins.  Otherwise one process per :data:`PARALLEL_MIN_PAGES`
    pages, at most one per CPU this process may run on (``sched_getaffinity``: a container's
    or ``taskset``'s limit, not the host's core count).  The machine's current load is not
    consulted on purpose: a load average says nothing about the next half second, and on a
    busy machine a second process costs only its start-up and the pickling of its results
    (a few percent of the CPU time) while on an idle one it nearly halves the wait."""
    env = os.environ.get("EPISTEME_JOBS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    if n_pages < 2 * PARALLEL_MIN_PAGES:
        return 1
    if hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    else:
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, n_pages // PARALLEL_MIN_PAGES))


def _can_fork() -> bool:
    """Forking is safe here only without other threads (a forked child inherits locks held by
    threads that do not exist in it: the server, for one, runs scans in worker threads)."""
    if not hasattr(os, "fork"):
        return False
    import sys

    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() <= 1


def _split(ids: list[str], jobs: int) -> list[list[str]]:
    """Contiguous slices of equal size (each process reads its own folders).  A child
    pickles its result and sends it through a pipe; this process, after its own part, makes
    that part's page objects and name index (``meanwhile`` of :func:`fork_map`).  The two
    extras cost about the same per page: at 10k pages on 2 cores, splits from 0.95 : 1 to
    1.1 : 1 measured the same, 0.85 : 1 was ~5 % slower."""
    if jobs <= 1 or len(ids) < 2:
        return [ids]
    weights = [1.0] * jobs
    total = sum(weights)
    out, start = [], 0
    for k, w in enumerate(weights):
        end = len(ids) if k == jobs - 1 else start + round(len(ids) * w / total)
        out.append(ids[start:end])
        start = end
    return [part for part in out if part]


def _widen_pipe(fd: int) -> None:
    """Let a pipe hold a whole result (Linux: up to ``/proc/sys/fs/pipe-max-size``, 1 MB by
    default; 10k pages pickle to ~0.8 MB).  With the default 64 kB the child's write and this
    process's read took turns, a few milliseconds of the wait after the scan; best effort."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    except (ImportError, AttributeError, OSError):
        pass


class Followup:
    """A second round of work for the forked children of :func:`fork_map`, after their part.

    A child that has sent its part's result does not exit: it waits for a request from this
    process, made by ``request(parts, results)``, and answers it with
    ``serve(request, index, its_part, its_result)`` (``index``: its part's place in ``parts``,
    from 1), computed while this process goes on with its own work.  :meth:`answers` collects
    the answers (``None`` for a child that failed, so the caller does that work itself);
    :meth:`close` ends children whose answers were never asked for.

    ``early``: with two parts, the request is made as soon as this process's own part is done
    (``results`` then holds only that part's result, the child's is ``None``), so the child can
    start the moment its result is sent.  The request goes into the pipe without blocking and
    whatever does not fit follows once the child's result is read, so neither side ever waits on
    a full pipe the other is not reading.  Otherwise it is made once every result is in."""

    def __init__(self, request: Any, serve: Any, prepare: Any = None, *, early: bool = False):
        self.request = request
        self.serve = serve
        #: child side, ``prepare(index, its_part, its_result)``: runs right after the result is
        #: sent, before the request is read (the child's chance to use the wait)
        self.prepare = prepare
        self.early = early
        #: what the caller wants the children to know: filled before the fork, so they have it free
        self.context: dict[str, Any] = {}
        self.used = False  # set by a caller that forked with it (nothing forks on small wikis)
        self._pending: list[tuple[int, int]] = []  # (pid, answer pipe) of children still to collect

    @staticmethod
    def _message(obj: Any) -> bytes:
        import pickle

        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        return len(payload).to_bytes(8, "little") + payload

    def _child(self, req_fd: int, ans_fd: int, index: int, part: list[str], result: Any) -> None:
        """Child side, after its result is sent: read the request (length first: the parent may
        keep the pipe open), answer it."""
        import pickle

        if self.prepare is not None:
            self.prepare(index, part, result)
        buf = bytearray()
        need = 8
        while len(buf) < need:
            chunk = os.read(req_fd, max(need - len(buf), 1 << 16))
            if not chunk:
                return  # the parent wants nothing more (its request failed)
            buf += chunk
            if need == 8 and len(buf) >= 8:
                need = 8 + int.from_bytes(buf[:8], "little")
        os.close(req_fd)
        _write_all(ans_fd, pickle.dumps(self.serve(pickle.loads(buf[8:need]), index, part, result),
                                        protocol=pickle.HIGHEST_PROTOCOL))

    def answers(self) -> list[Any]:
        """One answer per child still running the follow-up, in part order (``None`` where it failed)."""

        out = []
        pending, self._pending = self._pending, []
        for pid, fd in pending:
            payload = _read_to_end(fd)
            _, status = os.waitpid(pid, 0)
            out.append(_unpickle(payload) if status == 0 else None)
        return out

    def close(self) -> None:
        """End every child whose answer was not collected (e.g. after an error here)."""
        import contextlib
        import signal

        pending, self._pending = self._pending, []
        for pid, fd in pending:
            os.close(fd)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _read_to_end(fd: int) -> bytes:
    """Everything a pipe gives until its writer closes it; the pipe is closed."""
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _unpickle(payload: bytes) -> Any:
    """A child's pickled result, or ``None`` when there is none or it was cut short."""
    import pickle

    if not payload:
        return None
    try:
        return pickle.loads(payload)
    except Exception:
        return None


def _send_some(fd: int, payload: bytes) -> bytes:
    """Write what fits in the pipe now, without waiting; return the rest."""
    os.set_blocking(fd, False)
    view = memoryview(payload)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except (BlockingIOError, BrokenPipeError):
        pass  # the rest is sent later (or the reader is gone, which the caller finds out)
    finally:
        os.set_blocking(fd, True)
    return bytes(view)


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def fork_map(
    work: Any, root: str, parts: list[list[str]], child_work: Any = None, meanwhile: Any = None,
    followup: Followup | None = None,
) -> list[list]:
    """``[work(root, part) for part in parts]``, ``parts[1:]`` in forked child processes
    (which run ``child_work`` instead when given: e.g. one that returns cheaper-to-pickle rows).
    ``meanwhile(parts[0], result)`` runs here after this process's own part, while the children
    may still be working (the caller's chance to start on what it will do with the results).
    ``followup``: a :class:`Followup` the children then run (collect with its ``answers()``).

    Why fork by hand rather than ``multiprocessing``: importing ``multiprocessing`` and
    starting a pool cost more than a whole 1k-page scan; a fork shares the parent's imports
    and caches for free, and a pipe carries the pickled result back.  A child that fails for
    any reason is not an error: its part is scanned here instead."""
    import pickle

    children = []
    for index, part in enumerate(parts[1:], 1):
        r, w = os.pipe()
        _widen_pipe(w)
        req_r = req_w = ans_r = ans_w = -1
        if followup is not None:
            req_r, req_w = os.pipe()
            _widen_pipe(req_w)  # (an early request then fits without waiting)
            ans_r, ans_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: compute, send, and leave without running the parent's cleanup
            code = 1
            try:
                os.close(r)
                for fd in (req_w, ans_r):
                    if fd >= 0:
                        os.close(fd)
                result = (child_work or work)(root, part)
                _write_all(w, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
                os.close(w)  # the parent sees the end of the result
                if followup is not None:
                    followup._child(req_r, ans_w, index, part, result)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        for fd in (req_r, ans_w):
            if fd >= 0:
                os.close(fd)
        children.append((pid, r, part, req_w, ans_r))
    early = b""  # what is left to send of a request made before the children's results
    sent_early = followup is not None and followup.early and len(children) == 1
    try:
        results = [work(root, parts[0])]
        if meanwhile is not None:
            meanwhile(parts[0], results[0])
        if sent_early:
            early = _send_some(children[0][3], followup._message(followup.request(parts, results + [None])))  # type: ignore[union-attr]
    except BaseException:  # (Ctrl-C included) leave no child behind
        import signal

        for pid, r, _, req_w, ans_r in children:
            for fd in (r, req_w, ans_r):
                if fd >= 0:
                    os.close(fd)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
    live = []  # children that sent their result and wait for (the rest of) the request
    for pid, r, part, req_w, ans_r in children:
        got = _unpickle(_read_to_end(r))  # (None: the child died, perhaps while sending)
        if followup is None:
            _, status = os.waitpid(pid, 0)
            if status != 0:
                got = None
        elif got is not None:
            live.append((pid, req_w, ans_r))
        else:
            os.close(req_w)
            os.close(ans_r)
            os.waitpid(pid, 0)
        results.append(got if got is not None else work(root, part))
    if followup is not None:
        import contextlib

        message = early
        try:
            if not sent_early:
                message = followup._message(followup.request(parts, results))
        finally:
            for pid, req_w, ans_r in live:
                # (nothing when the request failed: the child just ends; a child that died
                # meanwhile breaks the pipe, and its answer is then None)
                with contextlib.suppress(OSError):
                    _write_all(req_w, message)
                os.close(req_w)
                followup._pending.append((pid, ans_r))
    return results


def _clear_caches() -> None:
    """Per-scan caches: kept small in a long-lived process (the server scans many wikis)."""
    _LINE_CACHE.clear()
    _TYPED_VALUES.clear()
    _FLOW_SCALARS.clear()
    _NORMALIZED.clear()
    if len(_TARGETS) > 200_000:
        _TARGETS.clear()


def map_pages(
    root: str | os.PathLike, work: Any, *, jobs: int | None = None, child_work: Any = None,
    meanwhile: Any = None, followup: Followup | None = None,
) -> tuple[list[str], list]:
    """``(ids, rows)``: every page id under ``root`` (sorted) and ``work(root, ids)``'s rows,
    one per page in id order, made in this process or, on big wikis, in contiguous parts with
    forked children (:func:`fork_map`; ``child_work``, ``meanwhile`` and ``followup`` as there,
    the follow-up's ``context`` getting ``ids`` before the fork and ``used`` set only when one
    runs).  ``jobs``: processes (``None`` = :func:`default_jobs`, ``1`` = in this process).
    The per-scan caches are cleared at the end."""
    root = os.fspath(root)
    ids = iter_page_files(root)
    if jobs is None:
        jobs = default_jobs(len(ids))
    try:
        if jobs <= 1 or len(ids) < 2 or not _can_fork():
            return ids, work(root, ids)
        if followup is not None:
            followup.context["ids"] = ids
            followup.used = True
        parts = fork_map(work, root, _split(ids, jobs), child_work, meanwhile, followup)
        rows = parts[0]
        for more in parts[1:]:
            rows.extend(more)
        return ids, rows  # contiguous slices of a sorted list, in order: still sorted
    finally:
        _clear_caches()


def scan_wiki(root: str | os.PathLike, *, jobs: int | None = None) -> list[Page]:
    """Every page under ``root``, parsed, sorted by id.

    ``jobs``: processes (``None`` = :func:`default_jobs`, ``1`` = in this process).  Results
    are identical either way."""
    _, rows = map_pages(root, _scan_chunk, jobs=jobs, child_work=_scan_packed)
    # Page objects from this process, tuples from the children
    return [row if type(row) is Page else Page(*row) for row in rows]


def scan_wiki_lean(
    root: str | os.PathLike, *, jobs: int | None = None, meanwhile: Any = None
) -> tuple[list[str], list[LeanPage]]:
    """``(ids, lean pages)`` of every page under ``root``, sorted by id: what the link graph
    needs and nothing more (see :func:`lean_page`).  Same files, frontmatter and link
    targets as :func:`scan_wiki`; ``jobs`` as there.  ``meanwhile(first_ids, first_rows)``:
    see :func:`fork_map` (called only when a second process runs)."""
    return map_pages(root, _lean_chunk, jobs=jobs, meanwhile=meanwhile)
