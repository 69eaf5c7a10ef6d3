"""Wiki links: the one parser of ``[[target]]``, ``[[target|label]]``, ``[[target#heading]]``
(graph, lint, the writer's checks and the answers' display text all call it).

Not links: embeds ``![[...]]``, same-page ``[[#heading]]``, anything in fenced code (``` or
~~~, unclosed fences run to the end) or in an inline code span on the same line.  A link never
spans a line break.  :func:`normalize_target` says what a link text points at.

Why bytes and three entry points: a scan is the hot path of every graph and lint call.
:func:`scan_links` gives targets with line numbers (lint's findings need them);
:func:`link_targets` gives the same targets without them (a third of a ``stats`` run went into
counting lines); only pages with backticks or tildes pay for code handling.

Why one module of ~500 lines: it is the one parser of what a link is (graph, lint, writer,
answers and the server's page view all call it), and its fast entry points must agree with
:func:`scan_links` link for link (tests/test_graph_lean.py checks them on random bodies);
:func:`link_line` locates one link by its target's text where that is exact.

Why ``96 in data`` and ``data.find(b"[[") < 0`` rather than ``b"`" in data``: CPython's
``bytes in bytes`` first tries the needle as an integer and formats a ``TypeError`` before it
searches, which cost more than the search itself (a tenth of a ``stats`` run went there); an
integer needle (one byte) is a bare ``memchr``.
"""

from __future__ import annotations

import re
from array import array
from collections import namedtuple
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, chain, compress, repeat
from operator import itemgetter

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

    def __hash__(self) -> int:  # immutable once made (a dataclass default may share one)
        return hash(self.targets)

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


_BACKTICK, _TILDE, _BACKSLASH = b"`~\\"  # one-byte probes, as integers (see above)

_CLOSERS: dict[tuple[bytes, int], re.Pattern[bytes]] = {}  # closing-fence regex per opening run


_FENCE_RUNS = (b"```", b"~~~")


def _line_search(pattern: re.Pattern[bytes], body: bytes, pos: int, runs: tuple[bytes, ...]) -> re.Match | None:
    """``pattern.search(body, pos)`` for a fence-line pattern (``^ {0,3}`` then one of
    ``runs``, ``re.M``) from a line start ``pos``.  Why: a multi-line regex without a literal
    prefix is tried at every byte of the page; here ``bytes.find`` jumps to the lines that hold
    a run within their first four bytes, and only those are matched."""
    while True:
        hits = [i for i in map(body.find, runs, repeat(pos)) if i >= 0]
        if not hits:
            return None
        i = min(hits)
        ls = body.rfind(b"\n", 0, i) + 1
        if ls >= pos and i - ls <= 3:
            m = pattern.match(body, ls)
            if m:
                return m
        pos = body.find(b"\n", i) + 1  # the rest of that line cannot match: the next line
        if not pos:
            return None


def _fenced_regions(body: bytes) -> list[tuple[int, int]]:
    """Byte ranges covered by fenced code blocks (``` or ~~~), fence lines included.  An
    unclosed fence runs to the end of the body, as in CommonMark."""
    regions = []
    pos = 0
    n = len(body)
    while True:
        m = _line_search(_FENCE, body, pos, _FENCE_RUNS)
        if not m:
            return regions
        run, info = m[1], m[2]
        ch = run[:1]
        if ch == b"`" and _BACKTICK in info:
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
        c = _line_search(close, body, m.end() + 1, (ch * 3,))
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
    if body.find(b"[[") < 0:
        return _linklist_from((), array("i"))
    if _BACKTICK in body or (_TILDE in body and body.find(b"~~~") >= 0):
        return _code_links(body, first_line)
    # no code: the body matched as _plain_targets matches it (a link never spans a line
    # break); each link's line is the lines counted (bytes.count) from the link before it,
    # summed (accumulate).  Every step is a C call mapped over the matches: splitting the page
    # into lines, or a Python loop per link, cost several times more.
    matches = list((_LINK_TEXT_NO_EMBED if _BACKSLASH in body else _LINK_HEAD).finditer(body))
    raws = list(map(_group_1, matches))
    got = list(map(_NORMALIZED.get, raws))
    if None in got:
        for k, t in enumerate(got):
            if t is None:
                got[k] = _normalize_raw(raws[k])
    starts = list(map(_Match_start, matches))
    gaps = map(body.count, repeat(b"\n"), chain((0,), starts), starts)
    lines = accumulate(gaps, initial=first_line)
    next(lines)  # (the initial value itself)
    # compress(.., got) drops "" (same-page links like [[#heading]])
    return _linklist_from(tuple(compress(got, got)), array("i", compress(lines, got)))


_group_1 = itemgetter(1)
_Match_start = re.Match.start


def link_line(body: bytes, first_line: int, targets: tuple[str, ...], k: int) -> int | None:
    """The line of the ``k``-th link of ``body``: :func:`link_lines` for one link."""
    lines = link_lines(body, first_line, targets, [k])
    return None if lines is None else lines[0]


def link_lines(body: bytes, first_line: int, targets: tuple[str, ...], ks: list[int]) -> list[int] | None:
    """The lines of the ``ks``-th links of ``body`` (``targets``: the body's link targets, as
    :func:`scan_links` finds them), found without parsing every link: ``None`` when this way is
    not certain to agree with :func:`scan_links` (the body has backslashes, a target holds a
    replaced byte, or the page changed since its targets were read), and the caller parses the
    body instead.

    Why: lint reports a page's dangling links, often one or two of a dozen, and parsing the
    whole page again for their lines was most of what a lint run did beyond the scan.  How: a
    target is a piece of its link's text (normalizing only cuts and trims), and a link holds no
    ``[`` after its ``[[``; so every link to ``targets[k]`` holds the target's bytes and starts
    at the last ``[[`` before them, where the link pattern must match.  The ``k``-th link is
    the ``j``-th link to its target, counted along the links that pass.  The page's code blocks
    are found once for all of ``ks`` (a page with code and many reported links would otherwise
    pay for them per link)."""
    if _BACKSLASH in body:
        return None
    code = _BACKTICK in body or (_TILDE in body and body.find(b"~~~") >= 0)
    regions = _fenced_regions(body) if code else []
    in_code: dict[int, bool] = {}
    out: list[int] = []
    for k in ks:
        target = targets[k]
        if "\ufffd" in target:  # (invalid UTF-8 in the page: its bytes are not the target's)
            return None
        j = targets[: k + 1].count(target)
        needle = target.encode("utf-8")
        last = -1
        pos = body.find(needle)
        while pos >= 0:
            q = body.rfind(b"[[", 0, pos)
            if q > last:
                last = q
                m = _LINK_HEAD.match(body, q)
                if m is not None and code:
                    c = in_code.get(q)
                    if c is None:
                        c = in_code[q] = _in_code(body, q, regions)
                    if c:
                        m = None
                if m is not None:
                    raw = m[1]
                    t = _NORMALIZED.get(raw)
                    if (_normalize_raw(raw) if t is None else t) == target:
                        j -= 1
                        if not j:
                            out.append(first_line + body.count(b"\n", 0, q))
                            break
            pos = body.find(needle, pos + 1)
        else:
            return None  # (the page changed since its targets were read)
    return out


def _in_code(body: bytes, s: int, regions: list[tuple[int, int]]) -> bool:
    """Whether offset ``s`` of ``body`` is in a fenced block (``regions``, see
    :func:`_fenced_regions`) or in an inline code span of its line (as :func:`_code_links`
    tests each link)."""
    if any(a <= s < b for a, b in regions):
        return True
    spans = _line_spans(body, body.rfind(b"\n", 0, s) + 1, s)
    return any(a <= s < b for a, b in spans)


def _code_links(body: bytes, first_line: int) -> LinkList:
    """:func:`scan_links` of a body with backticks or ``~~~``: links in fenced blocks and in
    inline code spans are left out."""
    regions = _fenced_regions(body)
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
        if regions:
            while ri < len(regions) and regions[ri][1] <= s:
                ri += 1
            if ri < len(regions) and regions[ri][0] <= s:
                continue
        ls = body.rfind(b"\n", 0, s) + 1
        spans = span_cache.get(ls)
        if spans is None:
            spans = span_cache[ls] = _line_spans(body, ls, s)
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

_LINK_TEXT = re.compile(rb"\[\[([^\[\]\n]*)\]\]")  # = _LINK with its two groups as one
# _LINK_TEXT and _LINK_HEAD (= _LINK, only the first group) without embeds: a "[[" right after
# "!" is refused by the look-behind, which is tried only where "[[" was found (the regex still
# starts with a literal, so it is searched for as fast as before)
_LINK_TEXT_NO_EMBED = re.compile(rb"\[\[(?<!!\[\[)([^\[\]\n]*)\]\]")
_LINK_HEAD = re.compile(rb"\[\[(?<!!\[\[)([^\[\]\n|#\\]*)[^\[\]\n]*\]\]")
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
    if _BACKTICK in data or (_TILDE in data and data.find(b"~~~") >= 0):
        return _code_targets(data[start:] if start else data)
    return _plain_targets(data, start)


def _plain_targets(data: bytes, start: int) -> tuple[str, ...]:
    """Targets of ``data[start:]``, a body without code.  Embeds ``![[`` are refused by the
    regexes' look-behind.  Without a backslash in the page, a link's target is its text before
    the first ``|`` or ``#``, so only that part is captured: it repeats across pages
    (``[[X|label]]``, ``[[X#Heading]]``) and the cache below serves it."""
    raws = (_LINK_TEXT_NO_EMBED if _BACKSLASH in data else _LINK_HEAD).findall(data, start)
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
    if _BACKTICK not in body:
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
    if _BACKTICK not in text_line:
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


def display_text(text: str, *, names: bool = False) -> str:
    """``text`` with each link (as :func:`scan_links` finds them, embeds included) replaced by
    what a reader sees: its label after ``|``, else its text (``[[a|b]]`` -> ``b``,
    ``[[a#h]]`` -> ``a#h``).  ``names``: an unlabelled link reads as the name of the page it
    points to (``[[papers/multi-head-attention#x]]`` -> ``multi head attention``), the words a
    sentence around it says (``lint --claims`` reads claims so)."""
    if "[[" not in text:
        return text
    data = text.encode("utf-8", "surrogatepass")
    spans = _link_spans(data)
    if not spans:
        return text
    out = []
    pos = 0
    for a, b in spans:
        out.append(data[pos:a])
        inner = data[a + 2 : b - 2]
        target, sep, label = inner.partition(b"|")
        if sep and (label or not names):
            out.append(label)
        elif names:
            out.append(target.split(b"#", 1)[0].rsplit(b"/", 1)[-1].replace(b"-", b" "))
        else:
            out.append(inner)
        pos = b
    out.append(data[pos:])
    return b"".join(out).decode("utf-8", "surrogatepass")


LinkMark = namedtuple("LinkMark", ["start", "end", "text", "embed"])
LinkMark.__doc__ = """Where one ``[[...]]`` sits in a text (character offsets, ``start`` at the
first ``[``), its inner ``text`` as written, and whether a ``!`` before it makes it an embed."""


def link_marks(text: str) -> list[LinkMark]:
    """Every ``[[...]]`` of ``text`` that is not in code, with its place in ``text``: what the
    server hands the web UI so that the page is linked by this parser, not a second one.
    ``normalize_target(mark.text)`` is where a link points (``""``: the same page)."""
    if "[[" not in text:
        return []
    data = text.encode("utf-8", "surrogatepass")
    out = []
    pos = chars = 0  # byte offset and the character offset it corresponds to
    for a, b in _link_spans(data):
        chars += len(data[pos:a].decode("utf-8", "surrogatepass"))
        inner = data[a + 2 : b - 2].decode("utf-8", "surrogatepass")
        end = chars + len(inner) + 4
        out.append(LinkMark(chars, end, inner, a > 0 and data[a - 1] == 33))
        pos, chars = b, end
    return out


def _link_spans(body: bytes) -> list[tuple[int, int]]:
    """Byte ranges ``[[...]]`` of the links in ``body`` (embeds' ``!`` left outside) that are
    not in code."""
    code = _BACKTICK in body
    regions = _fenced_regions(body) if (code or body.find(b"~~~") >= 0) else []
    out = []
    ri = 0
    spans_at: dict[int, list[tuple[int, int]]] = {}
    for m in _LINK_TEXT.finditer(body):
        s = m.start()
        while ri < len(regions) and regions[ri][1] <= s:
            ri += 1
        if ri < len(regions) and regions[ri][0] <= s:
            continue
        if code:
            ls = body.rfind(b"\n", 0, s) + 1
            spans = spans_at.get(ls)
            if spans is None:
                spans = spans_at[ls] = _line_spans(body, ls, s)
            if spans and any(a <= s < b for a, b in spans):
                continue
        out.append((s, m.end()))
    return out


def clear_caches() -> None:
    """Per-scan caches, kept small in a long-lived process."""
    _NORMALIZED.clear()
    if len(_TARGETS) > 200_000:
        _TARGETS.clear()
