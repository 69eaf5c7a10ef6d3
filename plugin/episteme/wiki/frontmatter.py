"""Frontmatter: the one reader of a page's ``---`` YAML block (graph, lint, the writer, the
server and the section parser all call it, so they cannot disagree on where it ends).

- :func:`frontmatter_bounds` finds the block: an opening ``---`` line, a closing ``---`` line
  (trailing spaces, tabs or CR allowed).  An opening that never closes is an *error*, and the
  whole file is then body: nothing reads ``{title: A}`` out of ``---\ntitle: A\n...``.
- :func:`parse_frontmatter` parses it: ``props``, ``error`` with its 1-based line, where the
  body starts.
- :func:`frontmatter_title`, :func:`frontmatter_tags`, :func:`frontmatter_aliases`: the
  normalised values every layer uses.

Why there is a PyYAML-free parser (:func:`fast_frontmatter`): PyYAML costs ~150 µs a block,
more than reading the file, and every graph and lint call re-reads the wiki.  It answers only
when its result is certainly what PyYAML would build (checked on every page of the real vaults
by ``tests/test_pages.py``); anything else goes to PyYAML's CSafeLoader.
"""

from __future__ import annotations

import datetime as _dt
import operator
import re
from collections.abc import Iterable
from typing import Any, NamedTuple


class Frontmatter(NamedTuple):
    """``props`` (``{}`` when absent or malformed); ``error`` / ``error_line`` when malformed;
    ``body_offset``: byte offset where the body starts; ``body_line``: 1-based line of the
    body's first line; ``present``: the page opens with a ``---`` block (closed or not)."""

    props: dict[str, Any]
    error: str | None
    error_line: int | None
    body_offset: int
    body_line: int
    present: bool


def frontmatter_title(props: dict[str, Any]) -> str | None:
    """The frontmatter title as text, or ``None`` when it is missing, empty or not a scalar."""
    t = props.get("title")
    if t is None or isinstance(t, (list, dict)):
        return None
    s = str(t).strip()
    return s or None


def frontmatter_tags(props: dict[str, Any]) -> list[str]:
    """Frontmatter ``tags`` as :func:`normalize_tags` makes them."""
    return normalize_tags(props.get("tags"))


def normalize_tags(value: Any) -> list[str]:
    """A ``tags`` value as a list of strings without a leading ``#`` (a string value may hold
    several tags separated by commas or white space; nested lists and mappings are no tags).
    Graph, queries and the server all read tags through this."""
    if value is None or isinstance(value, dict):
        return []
    if isinstance(value, str):
        items: Iterable[Any] = value.replace(",", " ").split()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        items = [value]  # a lone number or date used as a tag
    out = []
    for t in items:
        if t is None or isinstance(t, (list, dict, tuple)):
            continue
        s = str(t).strip().lstrip("#").strip()
        if s:
            out.append(s)
    return out


def frontmatter_aliases(props: dict[str, Any]) -> list[str]:
    """Frontmatter ``aliases`` as a list of strings (one string is one alias)."""
    v = props.get("aliases")
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple)):
        return [str(a) for a in v if a is not None and not isinstance(a, (list, dict))]
    return [str(v)]


_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_WORDS = _NULLS | _TRUE | _FALSE
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
_UNSAFE_CHARS = "[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]"
_unsafe_re: re.Pattern[str] | None = None


def _unsafe(line: str) -> bool:
    """``line`` holds one of :data:`_UNSAFE_CHARS`.  Asked only of lines that
    ``str.isprintable`` refuses: each of those characters is unprintable (``Cc``, ``Cs``,
    ``Cf``, ``Cn``), so a printable line is safe, and most lines are.  Why not the regex on
    every block: its class spans the whole BMP, so compiling it cost every command ~1 ms of
    start-up, and searching a block cost more than parsing it."""
    global _unsafe_re
    if _unsafe_re is None:
        _unsafe_re = re.compile(_UNSAFE_CHARS)
    return _unsafe_re.search(line) is not None
_FALLBACK = object()


def _plain_scalar(s: str, flow: bool) -> Any:
    """Resolve a plain (unquoted) scalar the way PyYAML's SafeLoader would, or ``_FALLBACK``.

    The words PyYAML resolves (:data:`_WORDS`) are asked once, and a scalar starting with a
    letter, the most common kind by far, returns before the digit checks."""
    if s in _WORDS:
        if s in _NULLS:
            return None if not flow or s else _FALLBACK
        return s in _TRUE
    if " #" in s or ": " in s or s[-1] == ":" or "\t" in s:  # (s is not "": _NULLS holds it)
        return _FALLBACK
    if flow and ("#" in s or ":?" in s or s[0] in "-?:"):  # PyYAML: ":?" inside a flow scalar is an error
        return _FALLBACK
    c = s[0]
    if c.isalpha() or c in "_(/$":
        return s
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
_strip_spaces = operator.methodcaller("strip", " ")  # (not str.strip: a no-break space is kept)


def _flow_list(s: str) -> Any:
    """A one-line ``[a, 'b', "c"]`` list of scalars."""
    inner = s[1:-1]
    if not inner.strip(" "):
        return []
    if not _FLOW_SPECIAL.search(inner):
        # no quotes, brackets, braces or "#": the items are the comma-separated parts, trimmed
        # of spaces (what _FLOW_ITEM matches; an empty part is the regex's failure too)
        parts = list(map(_strip_spaces, inner.split(",")))
        items = list(map(_FLOW_SCALARS.get, parts))
        if None not in items:  # every item seen before (and none of them a null)
            return items
        items = []
        for item in parts:
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
    props: dict[str, Any] = {}
    list_key: str | None = None  # key whose block list we are filling
    list_indent = -1
    cached = _LINE_CACHE.get
    cached_item = _ITEM_CACHE.get
    for line in block.split("\n"):
        hit = cached(line)
        if hit is not None:  # a "key: value" line seen before (on this page or another)
            key, v = hit
            props[key] = list(v) if type(v) is tuple else v  # each page gets its own list
            list_key = None
            continue
        if not line:
            continue
        # (a line from the cache above or below was checked before it went there)
        if not line.isprintable() and _unsafe(line):
            return None
        c0 = line[0]
        if c0 == " " or c0 == "-" or c0 == "#":
            hit = cached_item(line)
            if hit is None:  # not a "- item" line seen before
                stripped = line.strip(" ")
                if not stripped or stripped[0] == "#":
                    continue
                if not stripped.startswith("-"):
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
                hit = (len(line) - len(line.lstrip(" ")), v)
                if len(_ITEM_CACHE) < 50_000:
                    _ITEM_CACHE[line] = hit
            # only block-list items of the key above, all at one indent
            if list_key is None:
                return None
            indent, v = hit
            lst = props[list_key]
            if lst is None:
                lst = props[list_key] = []
                list_indent = indent
            elif indent != list_indent:
                return None
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
        # remember lines likely to repeat: not titles (each page has its own) nor long strings,
        # and once full, keep what is there (the common lines come early; clearing would make
        # big wikis thrash)
        if (len(_LINE_CACHE) < 50_000 and len(line) <= 100 and key != "title"
                and (type(v) is not str or len(v) <= 24)):
            _LINE_CACHE[line] = (key, tuple(v) if type(v) is list else v)
        props[key] = v
    return props


#: a top-level ``key: value`` line -> ``(key, value)``, lists stored as tuples: ``type: entity``,
#: ``updated: 2025-03-01`` and tag lists repeat across thousands of pages, so most lines cost
#: one dict lookup.  Cleared after every scan (a long-lived server must not accumulate the
#: lines of every wiki it scanned).
_LINE_CACHE: dict[str, tuple[str, Any]] = {}
#: a non-string top-level value's text -> its value (lists as tuples): ``created:`` and
#: ``updated:`` lines share dates, and a page's first lines are seldom seen before, so a cold
#: scan misses the line cache for most of them.  Bounded; cleared with the line cache.
_TYPED_VALUES: dict[str, Any] = {}
#: a block-list item line (``  - ml/llm``) -> ``(indent, value)``: tags written one per line
#: repeat across pages as much as the lines above.  Bounded; cleared with the line cache.
_ITEM_CACHE: dict[str, tuple[int, Any]] = {}
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
    return _plain_scalar(value, False)


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


#: :func:`frontmatter_bounds` of a page whose opening ``---`` never closes (all of it is body)
NEVER_CLOSED = (-1, -1, -1)
NEVER_CLOSED_ERROR = "frontmatter opened with '---' is never closed"


def frontmatter_bounds(data: bytes) -> tuple[int, int, int] | None:
    """``(block_start, block_end, body_start)`` byte offsets of ``data`` (a page without its
    BOM), ``None`` when there is no frontmatter, or :data:`NEVER_CLOSED` when it opens but
    never closes."""
    if data[:4] == b"---\n":  # the usual opening line: no regex needed
        start = 4
    else:
        m = _FM_OPEN.match(data)
        if not m:
            return None  # "----" or "--- x": a rule or text, not frontmatter
        start = m.end()
    # the closing line: "---" at a line start, then only spaces, tabs or CRs
    # (the opening line ends with a newline, or the data ends there: either way every line
    # start at or after ``start`` follows a newline at ``start - 1`` or later)
    pos = start - 1
    n = len(data)
    while True:
        pos = data.find(b"\n---", pos)
        if pos < 0:
            return NEVER_CLOSED
        k = pos + 4
        while k < n and data[k] in b" \t\r":
            k += 1
        if k == n or data[k] == 10:
            return (start, pos + 1, min(k + 1, n))
        pos += 1


def strip_bom(data: bytes) -> bytes:
    """``data`` without a UTF-8 byte order mark (every offset here is counted without it)."""
    return data[3:] if data[:3] == b"\xef\xbb\xbf" else data


def body_start(data: bytes) -> tuple[int, int]:
    """``(byte offset, 1-based line)`` where the body of ``data`` (without BOM) starts: after a
    closed frontmatter block, else at the beginning."""
    if data[:3] != b"---":
        return 0, 1
    b = frontmatter_bounds(data)
    if b is None or b is NEVER_CLOSED:
        return 0, 1
    return b[2], 3 + data.count(b"\n", b[0], b[1])


def parse_frontmatter(data: bytes | str) -> Frontmatter:
    """Split a page into frontmatter properties and body position (byte offset, counted
    without a BOM).

    Malformed or non-mapping frontmatter yields ``props == {}`` and an error with its 1-based
    line; an opening ``---`` that never closes is an error too (the whole file is then body)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return page_frontmatter(strip_bom(data))


def page_frontmatter(data: bytes) -> Frontmatter:
    """:func:`parse_frontmatter` of a page's bytes already without BOM (what the scan holds:
    it saves the scan a second look for a BOM on every page)."""
    b = frontmatter_bounds(data)
    if b is None:
        return Frontmatter({}, None, None, 0, 1, False)
    if b is NEVER_CLOSED:
        return Frontmatter({}, NEVER_CLOSED_ERROR, 1, 0, 1, True)
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


def clear_caches() -> None:
    """The fast parser's caches: cleared after each scan, so a long-lived process (the server
    scans many wikis) does not accumulate the lines of every wiki it read."""
    _LINE_CACHE.clear()
    _TYPED_VALUES.clear()
    _ITEM_CACHE.clear()
    _FLOW_SCALARS.clear()
