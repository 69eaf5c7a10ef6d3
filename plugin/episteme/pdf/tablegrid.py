"""Table cells placed by where they are printed: rows, columns and multi-line headers by x.

The text of a table (as :mod:`episteme.pdf.objects` stores it) is one printed line per row, but
which header name stands above which cell is not in the text: a tab marks a column gap only
where the run positions showed one, multi-word names ("Disks 1&2 Disks 4&5") run together, and a
header printed on two lines ("TREC 2004 Robust" over "MAP P@10") names two columns at once.
PDFium knows where every character is.  This module finds the table's lines on the page (the
same characters, whitespace aside, in the same order), splits each line into cells at gaps wider
than a word space, and gives each value cell the header cells printed above it -- every header
line's cell whose x-range overlaps it (or the nearest one, for a short name centred over a wide
column) -- so a two-line header names a cell by both its lines.

:func:`table_grid` is the entry point; it returns None when pypdfium2 or the PDF is missing or
the lines are not found (callers then read the text alone).
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .captions import caption_match

#: a gap wider than this share of the type size between two words starts a new cell (a word
#: space is about 0.25-0.35 em in the fonts papers use; column gaps are one em or more)
CELL_GAP_EM = 0.6
#: a header cell farther than this (in em) from a value column does not name it
HEADER_REACH_EM = 3.0

_NUM = r"[-+−–]?(?:\d[\d.,]*|\.\d+)(?:%|[kKMB])?[*†‡§]*"
# a value cell: a number (with a unit sign or significance stars), "a / b", "a ± b", a dash
_VALUE = re.compile(rf"^{_NUM}(?:(?:/|±|\(|\)){_NUM}\)?)*(?:[a-zA-Z]{{1,3}})?$|^[-–—×✓✗]$")


@dataclass
class Cell:
    """One printed cell: its text (as the stored line has it), x-range and offsets in the line."""

    text: str
    x0: float
    x1: float
    start: int
    end: int
    size: float = 10.0  # type size (points)

    @property
    def value(self) -> bool:
        return bool(_VALUE.match(self.text.replace(" ", "")))


@dataclass
class GridRow:
    """A line of value cells: the words before its first value (``label``), each value cell
    with the header names printed above it (top line first)."""

    line: int  # index into the lines given
    text: str  # that line
    label: str
    cells: list[Cell]
    heads: list[list[str]]  # per cell, the header names above it
    values: list[int] = field(default_factory=list)  # indexes of the value cells
    cols: dict[int, int] = field(default_factory=dict)  # value cell index -> column number


@dataclass
class Grid:
    header_lines: list[list[Cell]]
    rows: list[GridRow]
    label_heads: set[str] = field(default_factory=set)  # header names over the label column

    def column_names(self) -> set[str]:
        return {c.text for line in self.header_lines for c in line}


def _squash(s: str) -> tuple[str, list[int]]:
    """``s`` without whitespace, NFKC-folded per character, and for each kept character its
    offset in ``s``."""
    out, src = [], []
    for i, ch in enumerate(s):
        if ch.isspace():
            continue
        for c in unicodedata.normalize("NFKC", ch):
            if not c.isspace():
                out.append(c)
                src.append(i)
    return "".join(out), src


_LOCK = threading.Lock()


@functools.lru_cache(maxsize=32)
def _page_chars(path: str, size: int, mtime: int, page: int) -> tuple[str, tuple]:
    """The page's printed characters, whitespace left out and NFKC-folded, with each one's
    ``(x0, x1, y, size)``; cached per file version and page."""
    import ctypes

    import pypdfium2.raw as raw

    from .pdfium_text import JOIN_HYPHENS
    from .render import open_document

    chars: list[str] = []
    boxes: list[tuple[float, float, float, float]] = []
    with open_document(Path(path)) as doc:
        pg = doc[page - 1]
        tp = pg.get_textpage()
        try:
            h = tp.raw
            n = raw.FPDFText_CountChars(h)
            left, right, bottom, top = (ctypes.c_double() for _ in range(4))
            # the page's text in one call when it has one unit per character (it does unless
            # a character lies beyond the BMP); PDFium's generated characters are spaces and
            # line breaks, left out with the other whitespace
            whole = tp.get_text_range()
            if len(whole) != n:
                whole = "".join(chr(c) if 0 < (c := raw.FPDFText_GetUnicode(h, j)) < 0x110000 else " "
                                for j in range(n))
            for j, ch in enumerate(whole):
                if ch.isspace():
                    continue
                if ch in JOIN_HYPHENS:
                    ch = "-"
                folded = unicodedata.normalize("NFKC", ch)
                if not folded.strip() or "\ud800" <= ch <= "\udfff" or ord(ch) < 32:
                    continue
                raw.FPDFText_GetCharBox(h, j, left, right, bottom, top)
                # the glyph's height stands for the type size (FPDFText_GetFontSize gives the
                # nominal size, before the text matrix scales it)
                fs = max(0.0, top.value - bottom.value)
                for c in folded:
                    if not c.isspace():
                        chars.append(c)
                        boxes.append((left.value, right.value, bottom.value, fs))
        finally:
            with contextlib.suppress(Exception):
                tp.close()
                pg.close()
    return "".join(chars), tuple(boxes)


def line_cells(pdf: Path, page: int, lines: Sequence[str]) -> list[list[Cell] | None]:
    """Each of ``lines`` (a table's text lines, in order) split into printed cells, or None for
    a line not found on ``page``."""
    st = pdf.stat()
    with _LOCK:
        squashed, boxes = _page_chars(str(pdf.resolve()), st.st_size, st.st_mtime_ns, page)
    out: list[list[Cell] | None] = []
    at = 0
    for line in lines:
        sq, src = _squash(line)
        if not sq:
            out.append(None)
            continue
        k = squashed.find(sq, at)
        if k < 0 and len(sq) >= 6:
            k = squashed.find(sq)
        if k < 0:
            out.append(None)
            continue
        at = k + len(sq)
        cbox = boxes[k:k + len(sq)]
        # tokens of the line with their x-range
        toks: list[tuple[int, int, float, float, float]] = []
        for m in re.finditer(r"\S+", line):
            idx = [i for i, s in enumerate(src) if m.start() <= s < m.end()]
            if not idx:
                continue
            bx = [cbox[i] for i in idx]
            x0 = min(b[0] for b in bx)
            x1 = max(b[1] for b in bx)
            toks.append((m.start(), m.end(), x0, x1, max(b[3] for b in bx)))
        # the line's type size: its tallest glyphs (capitals, digits, ascenders) are about
        # 0.7 em high
        size = max((t[4] for t in toks), default=7.0) / 0.7 or 10.0
        cells: list[Cell] = []
        for a, b, x0, x1, _h in toks:
            if cells and x0 - cells[-1].x1 <= CELL_GAP_EM * size and x0 >= cells[-1].x0:
                c = cells[-1]
                c.end, c.x1 = b, max(c.x1, x1)
                c.text = line[c.start:b]
            else:
                cells.append(Cell(line[a:b], x0, x1, a, b, size))
        out.append(cells)
    return out


def _gap(a0: float, a1: float, b0: float, b1: float) -> float:
    """Distance between two x-ranges, negative for an overlap (minus its width)."""
    return max(a0, b0) - min(a1, b1)


def build_grid(cells_per_line: Sequence[list[Cell] | None],
               texts: Sequence[str] | None = None) -> Grid | None:
    """Rows and header lines from placed cells: lines before the first line with two value
    cells (or one after a label) are the header; each value cell of a row gets, per header
    line, the header cell overlapping it most, else the nearest one within reach on that side
    where no other value column is nearer."""
    lines = [c for c in cells_per_line]
    first_row = None
    for i, cs in enumerate(lines):
        if cs and len(cs) >= 2 and sum(c.value for c in cs) >= 1:
            first_row = i
            break
    if first_row is None:
        return None
    header = [cs for cs in lines[:first_row] if cs and not caption_match(cs[0].text)
              and sum(len(c.text.split()) for c in cs) <= 16]
    rows: list[GridRow] = []
    for i, cs in enumerate(lines):
        if i < first_row or not cs:
            continue
        vals = [k for k, c in enumerate(cs) if c.value]
        if not vals:
            continue
        label = " ".join(c.text for c in cs[:vals[0]])
        rows.append(GridRow(i, texts[i] if texts else "", label, cs, [[] for _ in cs], vals))
    if not rows:
        return None
    # value columns: x-ranges of value cells across rows, to tell whether a header cell is
    # nearer another column than this one
    cols: list[tuple[float, float]] = []
    for r in rows:
        for k in r.values:
            c = r.cells[k]
            for j, (a, b) in enumerate(cols):
                if _gap(a, b, c.x0, c.x1) < 0:
                    cols[j] = (min(a, c.x0), max(b, c.x1))
                    break
            else:
                cols.append((c.x0, c.x1))
    cols.sort()
    for r in rows:
        for k in r.values:
            c = r.cells[k]
            r.cols[k] = min(range(len(cols)), key=lambda j: _gap(*cols[j], c.x0, c.x1))
    # header cells printed left of every value column name the row labels ("Model", "Gene")
    left = min(a for a, _b in cols)
    label_heads = {h.text for hl in header for h in hl if h.x1 <= left}
    for hl in header:
        hl = [h for h in hl if h.text not in label_heads]
        for r in rows:
            for k in r.values:
                c = r.cells[k]
                best, best_gap = None, None
                for h in hl:
                    g = _gap(h.x0, h.x1, c.x0, c.x1)
                    if best_gap is None or g < best_gap:
                        best, best_gap = h, g
                if best is None:
                    continue
                size = c.size
                if best_gap > 0:
                    # not over the cell: only when within reach and no other value column lies
                    # between (a short name centred over a wide column)
                    if best_gap > HEADER_REACH_EM * size:
                        continue
                    mid = (best.x0 + best.x1) / 2
                    own = abs(mid - (c.x0 + c.x1) / 2)
                    if any(abs(mid - (a + b) / 2) < own and _gap(a, b, c.x0, c.x1) > 0
                           for a, b in cols):
                        continue
                r.heads[k].append(best.text)
    return Grid(header, rows, label_heads)


def table_grid(pdf: Path, page: int, text: str) -> Grid | None:
    """The grid of the table whose stored text is ``text`` (caption line first, as
    :mod:`episteme.pdf.objects` writes it), printed on ``page`` of ``pdf``; None when PDFium is
    not installed, the file is missing or the lines cannot be found."""
    try:
        import pypdfium2  # noqa: F401
    except ImportError:
        return None
    if not pdf.is_file():
        return None
    lines = text.split("\n")
    # the caption and other prose lines are no part of the grid (kept as None, in place)
    lines = ["" if (caption_match(ln) or len(ln.split()) > 16) else ln for ln in lines]
    try:
        placed = line_cells(pdf, page, lines)
    except Exception:  # noqa: BLE001 - a damaged page only loses the layout reading
        return None
    if sum(p is not None for p in placed) < 2:
        return None
    return build_grid(placed, lines)
