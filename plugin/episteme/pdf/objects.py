"""Tables, figures, algorithms and footnotes: found in the repaired lines, taken out of the prose.

A paper's text layer interleaves its prose with the things that float around it: captions,
table cells, figure tick labels, footnotes.  Left in, they break sentences ("The location-based
function does 10 20 30 40 ... Figure 6 ... not learn") and get cited under the wrong section.
This module finds them from layout evidence relative to the document's own body text, so the
rules carry over to layouts nobody tuned for:

* a **caption** starts a line with ``Table N`` / ``Figure N`` / ``Fig. N`` / ``Algorithm N``
  followed by ``:`` / ``.`` / ``|`` (or set in a face other than the body's), and continues over
  the following lines of the same size and spacing;
* a **float's content** (table rows, figure labels) is the run of non-prose lines next to its
  caption on the same page: lines that are short, smaller than the body, mostly numbers, or
  not aligned with the margins the body text starts at;
* a **footnote** is a line in the lower part of a page, set smaller than the body, that starts
  with a marker (a number or ∗ † ‡ § ¶) after the body text of its column, plus the small lines
  that continue it.

Every object keeps its page and an (approximate) bounding box in PDF points; the lines it was
made from are reported so the splitter leaves them out of section bodies.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .captions import CAPTION_LABEL, caption_kind, caption_label, caption_match
from .text import Line, normalize_text

#: kept under its old name for callers of this module; the rule is :mod:`.captions`'
CAPTION_START = CAPTION_LABEL
FOOTNOTE_MARK = re.compile(r"^(?P<mark>\d{1,2}|[∗*†‡§¶]{1,2})\s*(?P<text>\S.*)$")
_NUMERIC = re.compile(r"^[\d.,%±×x·()\[\]+\-–/]+$")


@dataclass
class PdfObject:
    """A table, figure, algorithm or footnote: its label, caption, contents and place."""

    id: str
    kind: str  # table | figure | algorithm | footnote
    label: str  # "Table 4", "Figure 2", "footnote 3", "footnote †"
    page: int
    caption: str
    text: str  # table rows (cells separated by " | "), figure labels, or the footnote text
    bbox: list[float]  # [x0, y0, x1, y1] in PDF points, origin bottom-left (as PDF/pypdf)
    section: str = ""  # the section it belongs to (filled in by the splitter)
    lines: list[int] = field(default_factory=list)  # indices of its lines in the document
    anchor: int = 0  # index of the line it was printed at (for the section it belongs to)

    def as_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "label": self.label, "page": self.page,
                "caption": self.caption, "text": self.text, "section": self.section,
                "bbox": [round(v, 1) for v in self.bbox]}


def line_bbox(ln: Line) -> list[float]:
    """An approximate box for a line: pypdf reports where runs start, not their widths, so the
    right edge is estimated from the characters after the last positioned run (about half an
    em each in the Latin fonts papers use).  PDFium's glyph boxes are used when the line has them."""
    exact = ln.bbox
    if exact is not None:
        return exact
    if ln.x is None or ln.y is None:
        return [0.0, 0.0, 0.0, 0.0]
    x1 = ln.x
    tail = 0
    for r in ln.runs:
        if r.x is not None and r.x >= x1:
            x1, tail = r.x, len(r.text)
        else:
            tail += len(r.text)
    x1 += 0.45 * ln.size * tail
    return [ln.x, ln.y - 0.25 * ln.size, max(x1, ln.x + 1.0), ln.y + 0.8 * ln.size]


def union_bbox(boxes: list[list[float]]) -> list[float]:
    boxes = [b for b in boxes if b[2] > b[0]]
    if not boxes:
        return [0.0, 0.0, 0.0, 0.0]
    return [min(b[0] for b in boxes), min(b[1] for b in boxes),
            max(b[2] for b in boxes), max(b[3] for b in boxes)]


def _cells(ln: Line) -> str:
    """A table row as printed, with a tab where positioned runs leave a column gap: the cells
    are told apart, and the row still reads as its printed text once whitespace is folded."""
    parts: list[str] = []
    end = None
    for r in ln.runs:
        t = r.text
        if r.x is not None and end is not None and r.x > end + 1.2 * r.size and parts:
            parts.append("\t")
        parts.append(t)
        if r.x is not None:
            end = r.x + 0.5 * r.size * len(t)
        elif end is not None:
            end += 0.5 * r.size * len(t)
    row = normalize_text("".join(parts))
    row = re.sub(r" *\t[ \t]*", "\t", row)
    return re.sub(r" {2,}", " ", row).strip()


@dataclass
class _Body:
    size: float
    margins: set[int]  # rounded x positions where body lines start (column edges, indents)
    leading: float


def _body(lines: list[Line]) -> _Body:
    sizes: Counter[float] = Counter()
    for ln in lines:
        sizes[round(ln.size * 2) / 2] += len(ln.text)
    size = sizes.most_common(1)[0][0] if sizes else 10.0
    xs: Counter[int] = Counter()
    gaps: list[float] = []
    for a, b in zip(lines, lines[1:], strict=False):
        if abs(a.size - size) < 0.6 and a.x is not None and len(a.text.split()) >= 6:
            xs[round(a.x)] += 1
        if (a.page == b.page and a.y is not None and b.y is not None
                and abs(a.size - size) < 0.6 and abs(b.size - size) < 0.6):
            d = a.y - b.y
            if 0.8 * size < d < 2.0 * size:
                gaps.append(d)
    total = sum(xs.values()) or 1
    margins = {x for x, c in xs.items() if c >= max(5, 0.01 * total)}
    gaps.sort()
    return _Body(size, margins, gaps[len(gaps) // 2] if gaps else size * 1.2)


def _at_margin(ln: Line, body: _Body) -> bool:
    if ln.x is None:
        return True
    x = round(ln.x)
    return any(abs(x - m) <= 2 for m in body.margins)


def _is_prose(ln: Line, body: _Body) -> bool:
    """A line of running text: body size, several words, mostly words, starting at a margin."""
    words = ln.text.split()
    if abs(ln.size - body.size) > 0.6 or len(words) < 7:
        return False
    numeric = sum(bool(_NUMERIC.match(w)) for w in words)
    if numeric >= 0.3 * len(words):
        return False
    return _at_margin(ln, body)


def find_objects(lines: list[Line], heights: dict[int, float], *,
                 refs: range | None = None, headings: set[int] | None = None) -> list[PdfObject]:
    """Captions with their float contents, and footnotes, in ``lines`` outside ``refs`` (the
    reference list's lines).  ``headings`` are indices of heading lines, never taken."""
    stop = len(lines)
    headings = set(headings or ()) | set(refs or ())
    body = _body([ln for k, ln in enumerate(lines) if k not in headings])
    taken: set[int] = set()
    objects: list[PdfObject] = []
    seen_labels: Counter[str] = Counter()

    # -- captions ---------------------------------------------------------------------------
    caps: list[tuple[int, int, str, str]] = []  # (start, end, kind, label)
    echoes = _label_echoes(lines, headings, body)
    i = 0
    while i < stop:
        ln = lines[i]
        m = caption_match(ln.text)
        if m and i not in headings and i not in echoes and _caption_like(ln, m, body):
            kind = caption_kind(m.group("kind"))
            label = f"{kind.capitalize()} {m.group('num').rstrip('.')}"
            j = i + 1
            while j < stop and j - i < 14 and _continues_caption(lines, j, ln, body):
                j += 1
            caps.append((i, j, kind, label))
            taken.update(range(i, j))
            i = j
            continue
        i += 1
    sides = _caption_sides(lines, caps, stop, body, taken, headings)
    for start, end, kind, label in caps:
        # tables put their caption above the rows, figures below the drawing, unless this
        # paper's captions say otherwise
        content = _float_content(lines, start, end, stop, body, taken, headings,
                                 sides.get(kind, 1 if kind == "table" else -1))
        taken.update(content)
        cap_text = re.sub(r"\s+", " ", " ".join(lines[k].text for k in range(start, end)))
        rows = [(_cells(lines[k]) if kind == "table" else lines[k].text.strip())
                for k in sorted(content)]
        seen_labels[label] += 1
        oid = _slug(label) + (f"-{seen_labels[label]}" if seen_labels[label] > 1 else "")
        objects.append(PdfObject(
            oid, kind, label, lines[start].page, cap_text.strip(), "\n".join(rows),
            union_bbox([line_bbox(lines[k]) for k in [*range(start, end), *content]]),
            lines=sorted({*range(start, end), *content}), anchor=start,
        ))

    # -- footnotes --------------------------------------------------------------------------
    for fn in _footnotes(lines, stop, body, heights, taken | headings):
        seen_labels[fn.label] += 1
        if seen_labels[fn.label] > 1:
            fn.id = f"{fn.id}-{seen_labels[fn.label]}"
        taken.update(fn.lines)
        objects.append(fn)
    objects.sort(key=lambda o: o.anchor)
    return objects


def _slug(label: str) -> str:
    s = label.lower().replace("†", "dagger").replace("‡", "ddagger").replace("∗", "star")
    s = s.replace("*", "star").replace("§", "section").replace("¶", "para")
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-")


def _delim(m: re.Match) -> str:
    return m.group("delim").strip() or "-"


def _label_echoes(lines: list[Line], skip: set[int], body: _Body) -> set[int]:
    """Lines that look like a caption's label but repeat the label of another caption with
    the delimiter the paper's captions use ("Table 4:" is the caption; a wrapped sentence
    "Table 4. On average, ..." is body text that happens to start a line).  A paper sets all
    its captions one way, so a second "Table 4" in another style is not a caption."""
    found: list[tuple[int, str, str]] = []  # (line, label, delimiter)
    for k, ln in enumerate(lines):
        m = caption_match(ln.text)
        if m and k not in skip and _caption_like(ln, m, body):
            label = caption_label(ln.text)
            found.append((k, label, _delim(m)))
    style = Counter(d for _, _, d in found).most_common(1)
    if not style:
        return set()
    main = style[0][0]
    styled = {label for _, label, d in found if d == main}
    return {k for k, label, d in found if d != main and label in styled}


def _caption_like(ln: Line, m: re.Match, body: _Body) -> bool:
    """A caption's label line, not a sentence that starts with "Table 2 shows"."""
    if m.group("delim").strip():
        return True
    # "Table 3" alone on its line, or the label set in its own face (bold "Figure 2")
    rest = ln.text.strip()[m.end():].strip()
    return not rest or ln.bold or ln.size < body.size - 0.6


def _continues_caption(lines: list[Line], j: int, first: Line, body: _Body) -> bool:
    ln, prev = lines[j], lines[j - 1]
    if ln.page != first.page or ln.y is None or prev.y is None:
        return False
    if caption_match(ln.text):
        return False
    # the caption's size, or the size of its words after a label set larger ("Table 1:" at
    # 10 pt, the caption at 9 pt)
    if abs(ln.size - first.size) > 0.6 and abs(ln.size - _tail_size(first)) > 0.3:
        return False
    gap = prev.y - ln.y
    if not (0 < gap <= 1.45 * max(first.size, 1.0)):
        return False
    if first.x is None or ln.x is None or abs(ln.x - first.x) <= 3 * first.size:
        return True
    # a centred caption's lines share their middle, not their start ("TABLE I" over a
    # longer line); a line far to the side is the other column
    a, b = line_bbox(first), line_bbox(ln)
    return abs((a[0] + a[2]) - (b[0] + b[2])) / 2 <= 2 * first.size


def _tail_size(ln: Line) -> float:
    """The size of the last run with letters in it (the line's size without a larger label)."""
    for r in reversed(ln.runs):
        if sum(c.isalpha() for c in r.text) >= 2 and r.size:
            return r.size
    return ln.size


def _next_line(a: Line, b: Line, leading: float = 1.5) -> bool:
    """``b`` is set as the line after ``a``: same page and size, below it by less than
    ``leading`` times its size."""
    return (a.page == b.page and a.y is not None and b.y is not None
            and abs(a.size - b.size) < 0.3 and 0 < a.y - b.y < leading * b.size)


def _caption_sides(lines: list[Line], caps: list[tuple[int, int, str, str]], stop: int,
                   body: _Body, taken: set[int], headings: set[int]) -> dict[str, int]:
    """Per kind of float, the side its contents sit on in this paper: ``-1`` (before the
    caption: the caption is set below) or ``1`` (after it), by a vote of the captions whose
    contents lie on one side only; kinds without a clear majority are left out (the default
    applies).  Why: a paper sets all its captions of a kind the same way, and where two floats
    are stacked (rows, caption, rows, caption) the rows between the captions are claimed by
    both; taking them for the caption above, when this paper sets its captions below, gave
    each table the next one's rows and left its own rows in the body text, mid-sentence."""
    votes: dict[str, Counter[int]] = {}
    for start, end, kind, _label in caps:
        up = _float_run(lines, start - 1, -1, stop, body, taken, headings, lines[start].page)
        down = _float_run(lines, end, 1, stop, body, taken, headings, lines[start].page)
        if (len(up) >= 2) != (len(down) >= 2):
            votes.setdefault(kind, Counter())[-1 if len(up) >= 2 else 1] += 1
    out = {}
    for kind, c in votes.items():
        (side, n), *rest = c.most_common()
        if not rest or n > rest[0][1]:
            out[kind] = side
    return out


def _float_run(lines: list[Line], k: int, step: int, stop: int, body: _Body, taken: set[int],
               headings: set[int], page: int) -> list[int]:
    """The non-prose lines from ``k`` going ``step`` (-1 up, 1 down) on ``page``, up to the
    first line of prose, heading, footnote (its first line, or the next line of a footnote
    begun on the line before) or line already taken (another caption)."""
    out: list[int] = []
    while 0 <= k < stop and lines[k].page == page and len(out) < 120:
        ln = lines[k]
        if k in taken or k in headings or _is_prose(ln, body) or _footnote_start(ln, body):
            break
        # (a footnote's lines may be set a little looser than the footnote finder asks)
        if k > 0 and _footnote_start(lines[k - 1], body) and _next_line(lines[k - 1], ln, 1.7):
            break
        if step > 0 and ln.text.rstrip().endswith((".", ":")) and len(ln.text.split()) >= 6:
            break  # a sentence of body text after the float
        out.append(k)
        k += step
    return out


def _float_content(lines: list[Line], start: int, end: int, stop: int, body: _Body,
                   taken: set[int], headings: set[int], first: int) -> set[int]:
    """The non-prose lines on the caption's page right before and after it (its rows, cells
    and labels), up to the first line of prose either way.  ``first``: the side to look at
    first, 1 (after the caption) or -1 (before it; :func:`_caption_sides`)."""
    page = lines[start].page
    out: set[int] = set()
    order = ((1, end), (-1, start - 1)) if first > 0 else ((-1, start - 1), (1, end))
    for step, k in order:
        if len(out) >= 2:
            break
        out.update(_float_run(lines, k, step, stop, body, taken, headings, page))
    return out


def _footnote_start(ln: Line, body: _Body) -> re.Match | None:
    if ln.size > body.size - 0.6:
        return None
    m = FOOTNOTE_MARK.match(ln.text.strip())
    if not m:
        return None
    first = next((r for r in ln.runs if r.text.strip()), None)
    raised = first is not None and (
        first.size < 0.85 * ln.size or first.text.strip() == m.group("mark"))
    text = m.group("text")
    if not re.search(r"[^\W\d_]{2}", text):
        return None  # a footnote says something: "0 1 2 3 4 5 6" is a plot's axis, its 0 raised
    if m.group("mark").isdigit() and not raised and not (
        text[:1].isupper() or text.lower().startswith(("http", "www"))
    ):
        return None  # "12 layers ..." in a small table: a marker is raised or starts a sentence
    return m


def _footnotes(lines: list[Line], stop: int, body: _Body, heights: dict[int, float],
               taken: set[int]) -> list[PdfObject]:
    out: list[PdfObject] = []
    i = 0
    while i < stop:
        ln = lines[i]
        h = heights.get(ln.page, 792.0)
        m = _footnote_start(ln, body) if i not in taken else None
        if not m or ln.y is None or ln.y > 0.45 * h:
            i += 1
            continue
        prev = lines[i - 1] if i > 0 else None
        # footnotes stand apart from what precedes them: not the next line of a block of small
        # text in their own size (a table, a list of references), unless an earlier footnote
        if (prev is not None and _next_line(prev, ln)
                and not (out and out[-1].lines and out[-1].lines[-1] == i - 1)):
            i += 1
            continue
        j = i + 1
        while (j < stop and j not in taken and lines[j].page == ln.page
               and lines[j].size <= body.size - 0.6 and lines[j].y is not None
               and lines[j].y < 0.45 * h and not _footnote_start(lines[j], body)
               and not caption_match(lines[j].text)):
            j += 1
        text = re.sub(r"\s+", " ", " ".join(
            [m.group("text")] + [lines[k].text.strip() for k in range(i + 1, j)])).strip()
        mark = m.group("mark")
        label = f"footnote {mark}"
        out.append(PdfObject(
            _slug(label), "footnote", label, ln.page, text, text,
            union_bbox([line_bbox(lines[k]) for k in range(i, j)]),
            lines=list(range(i, j)), anchor=i,
        ))
        i = j
    return out


def _fold(s: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", normalize_text(s).lower())


def quote_boxes(lines: list[Line], quote: str) -> list[dict]:
    """The boxes (``[{page, bbox}]``, PDF points) of the printed lines a quote spans.

    Quote and lines are compared with case, spacing, punctuation and line-break hyphens folded
    away, so a quote cut from joined prose finds the lines it was printed on.  Linear in the
    text of ``lines``; ``[]`` when the quote is not there."""
    want = _fold(quote)
    if not want:
        return []
    starts: list[int] = []
    parts: list[str] = []
    pos = 0
    for ln in lines:
        starts.append(pos)
        f = _fold(ln.text)
        parts.append(f)
        pos += len(f)
    hay = "".join(parts)
    at = hay.find(want)
    if at < 0:
        return []
    end = at + len(want)
    out = []
    for ln, s0, f in zip(lines, starts, parts, strict=True):
        if f and s0 < end and s0 + len(f) > at:
            out.append({"page": ln.page, "bbox": [round(v, 1) for v in line_bbox(ln)]})
    return out
