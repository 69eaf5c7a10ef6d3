"""Characters from PDFium's text page: lines and runs with their exact glyph boxes, drawn rules.

The faster of the splitter's two character sources (:func:`char_engine`): PDFium's text page
(``pypdfium2``) gives each character's font, size, baseline and glyph box, read here into the
same :class:`~episteme.pdf.text.Line` / :class:`~episteme.pdf.text.Run` evidence that
:func:`episteme.pdf.text.page_lines` reads from pypdf's visitor, so everything downstream is the
same.  Also the page's thin drawn rules (:func:`pdfium_rules`: underlined headings, table
rules) and accents printed as glyphs of their own (:func:`place_accents`).  ``pypdfium2`` is
imported inside the functions: this module loads without it.
"""

from __future__ import annotations

import math

from .text import (
    MATH_FAMILIES,
    MAX_PAGE_CHARS,
    MAX_PAPER_CHARS,
    PAPER_BUDGET,
    SPACING_ACCENTS,
    Line,
    Run,
    compose_accent,
    is_bold_font,
    is_italic_font,
    make_line,
    normalize_text,
    split_returns,
    strip_controls,
)


#: how the splitter reads characters: "pdfium" (PDFium's text page, ~5x less CPU than pypdf's
#: visitor and exact glyph boxes) when pypdfium2 is installed, else "pypdf".  The environment
#: variable ``EPISTEME_PDF_CHARS`` forces one (the benchmarks compare both in one run).
def char_engine() -> str:
    import os

    want = os.environ.get("EPISTEME_PDF_CHARS", "").strip().lower()
    if want == "pypdf":
        return "pypdf"
    try:
        import pypdfium2  # noqa: F401
    except ImportError:
        if want == "pdfium":
            raise
        return "pypdf"
    return "pdfium"


_FONT_BUF_SIZE = 256


class _PageReader:
    """The state of one page's read (:func:`pdfium_page_lines`): the line and run being built,
    the current text object's font and baseline, the characters used of the page's budget."""

    def __init__(self, raw, tp, page_no: int, rotated: list[str] | None) -> None:
        import ctypes

        self.raw, self.tp, self.page_no, self.rotated = raw, tp, page_no, rotated
        self.lines: list[Line] = []
        self.cur: list[Run] = []
        self.buf: list[str] = []
        self.run: Run | None = None
        self.box = [0.0, 0.0, 0.0, 0.0]
        self.left, self.right, self.bottom, self.top = (ctypes.c_double() for _ in range(4))
        self.ox, self.oy = ctypes.c_double(), ctypes.c_double()
        self.mat = raw.FS_MATRIX()
        self.fbuf = ctypes.create_string_buffer(_FONT_BUF_SIZE)
        self.flags = ctypes.c_int()
        self.fonts: dict[int, tuple[str, bool, bool]] = {}
        self.last_obj = None
        self.turned = False
        self.rot_obj = None
        self.base: tuple[float, float] | None = None  # (baseline y, size) of the current line
        self.cur_right: float | None = None  # right edge of the current line's glyphs so far
        self.run_tf = 0.0
        self.used = 0
        self.accents: list[tuple[float, str]] = []  # (x centre, mark) of the line's accent glyphs

    def end_run(self) -> None:
        if self.run is not None and self.buf:
            self.run.text = "".join(self.buf)
            self.run.box = list(self.box)
            self.cur.append(self.run)
        self.buf.clear()
        self.run = None

    def flush(self) -> None:
        self.end_run()
        if self.accents:
            place_accents(self.cur, self.accents)
            self.accents.clear()
        if self.cur:
            for group in split_returns(self.cur):
                line = make_line(group, self.page_no)
                if line is not None:
                    self.lines.append(line)
            self.cur.clear()

    def font(self, j: int, objkey) -> tuple[str, bool, bool]:
        """``(name, bold, italic)`` of the text object ``objkey`` (read once per object)."""
        if objkey not in self.fonts:
            raw = self.raw
            raw.FPDFText_GetFontInfo(self.tp, j, self.fbuf, _FONT_BUF_SIZE, self.flags)
            name = self.fbuf.value.decode("latin-1", "replace")
            bold, italic = is_bold_font(name), is_italic_font(name)
            weight = raw.FPDFText_GetFontWeight(self.tp, j)
            family = name.split("+", 1)[-1].lower()
            bold = bold or weight >= 600 or bool(self.flags.value & (1 << 18))
            if not family.startswith(MATH_FAMILIES):
                italic = italic or bool(self.flags.value & (1 << 6))
            self.fonts[objkey] = (name, bold, italic)
        return self.fonts[objkey]

    def new_object(self, j: int, objkey) -> None:
        """A character of another text object: is the page turned here, does the line end (the
        baseline moved), does a new run start (another font, size or baseline, or a gap)?"""
        raw = self.raw
        self.last_obj = objkey
        raw.FPDFText_GetMatrix(self.tp, j, self.mat)
        mat = self.mat
        self.turned = abs(mat.b) > 1e-3 * max(abs(mat.a), 1e-9) or mat.a <= 0
        if self.turned:
            self.end_run()
            return
        raw.FPDFText_GetCharOrigin(self.tp, j, self.ox, self.oy)
        tf = raw.FPDFText_GetFontSize(self.tp, j)
        size = tf * (math.hypot(mat.c, mat.d) or 1.0)
        name, bold, italic = self.font(j, objkey)
        x, y = self.ox.value, self.oy.value
        base, left = self.base, self.left
        if base is not None and (
            abs(y - base[0]) > 0.7 * max(size, base[1], 1.0)
            or (self.cur_right is not None and left.value < self.cur_right - 0.5 * size
                and (abs(y - base[0]) > 0.45 * max(size, base[1], 1.0)
                     or size > 1.25 * base[1]))
        ):
            # the baseline moved a line away from the line's main baseline, or half a
            # line while going back left, or larger type printed over the line so far
            # (a figure's labels over or under a heading)
            self.flush()
            self.base = base = None
            self.cur_right = None
        if base is None or size > 1.1 * base[1]:
            self.base = (y, size)  # the line's main baseline: its first full-size run's
        run = self.run
        if (run is not None and run.font == name and abs(self.run_tf - tf) < 0.01
                and run.y is not None and abs(run.y - y) < 0.15 * max(size, 1.0)
                and -0.5 <= left.value - self.box[2] <= 1.0 * max(size, 1.0)):
            # the next object in the same font on the same baseline, a word space
            # away at most: the same run, as pypdf's visitor reports it (its size is
            # the first object's, as there: OCR layers scale every word apart)
            return
        self.end_run()
        self.run = Run("", name, size, x, y, bold, italic)
        self.run_tf = tf
        self.box[:] = [left.value, self.bottom.value, self.right.value, self.top.value]

    def add_char(self, ch: str) -> None:
        """One printed character of the current object (after :meth:`new_object`)."""
        left, right, bottom, top = self.left, self.right, self.bottom, self.top
        if self.turned:
            rotated = self.rotated
            if rotated is not None and len(rotated) < 200:
                if not rotated or self.last_obj != self.rot_obj:
                    rotated.append("")
                    self.rot_obj = self.last_obj
                rotated[-1] += ch
            return
        if ch in SPACING_ACCENTS and right.value > left.value:
            # an accent printed as its own glyph over a letter (old TeX fonts): placed on
            # that letter by position when the line is complete (PDFium reports it out of
            # order: "Montr ´ eal ´")
            self.accents.append(((left.value + right.value) / 2, SPACING_ACCENTS[ch]))
            return
        if ch in JOIN_HYPHENS:
            ch = "-"
        ch = strip_controls(ch)
        if not ch:
            return
        self.buf.append(ch)
        self.used += 1
        if right.value > left.value:
            self.cur_right = right.value if self.cur_right is None else max(self.cur_right, right.value)
        if right.value > left.value or top.value > bottom.value:
            box = self.box
            box[0] = min(box[0], left.value)
            box[1] = min(box[1], bottom.value)
            box[2] = max(box[2], right.value)
            box[3] = max(box[3], top.value)


def pdfium_page_lines(textpage, page_no: int, rotated: list[str] | None = None) -> list[Line]:
    """One page's lines from PDFium's text page (``pypdfium2`` ``PdfTextPage``), with the same
    :class:`Line`/:class:`Run` evidence :func:`page_lines` gets from pypdf, plus exact boxes.

    Characters come in content-stream order (the reading order of LaTeX output, as with pypdf).
    A run is a stretch of one text object's characters -- consecutive objects in the same font,
    size and baseline with no gap between them are one run, as pypdf's visitor reports them --
    and a line ends where the baseline moves by more than 0.7 of the type size away from the
    line's main baseline (so superscripts, subscripts and fractions stay in their line).  Each
    run records the union of its glyph boxes (``Run.box``), so line and passage boxes are the
    printed ones, not estimates.  The same per-page and per-paper character caps apply."""
    import ctypes

    import pypdfium2.raw as raw

    if page_no <= 1 or not hasattr(PAPER_BUDGET, "left"):
        PAPER_BUDGET.left = MAX_PAPER_CHARS
    room = min(MAX_PAGE_CHARS, PAPER_BUDGET.left)
    tp = textpage.raw
    n = raw.FPDFText_CountChars(tp)
    r = _PageReader(raw, tp, page_no, rotated)
    pair_tail = -1  # index of the low surrogate already joined to the character before it
    for j in range(n):
        if r.used >= room:
            break
        if j == pair_tail:
            continue
        code = raw.FPDFText_GetUnicode(tp, j)
        if 0xD800 <= code < 0xDC00 and j + 1 < n:
            # PDFium counts UTF-16 code units: a character beyond the BMP (a mathematical
            # italic letter, say) arrives as two "characters"; join them into one
            low = raw.FPDFText_GetUnicode(tp, j + 1)
            if 0xDC00 <= low < 0xE000:
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                pair_tail = j + 1
        ch = chr(code) if 0 < code < 0x110000 else ""
        if raw.FPDFText_IsGenerated(tp, j) == 1:
            # PDFium's generated breaks also fall around every superscript and fraction; a
            # line ends where the baseline moves a line away (below), as pypdf's visitor does
            if r.run is not None and not r.turned and r.buf and r.buf[-1] != " ":
                r.buf.append(" ")  # a generated space, or a generated break inside a line
            continue
        if not ch or ch in "\r\n":
            continue
        obj = raw.FPDFText_GetTextObject(tp, j)
        objkey = ctypes.cast(obj, ctypes.c_void_p).value if obj else None
        raw.FPDFText_GetCharBox(tp, j, r.left, r.right, r.bottom, r.top)
        if objkey != r.last_obj or r.run is None:
            r.new_object(j, objkey)
        r.add_char(ch)
    r.flush()
    if rotated is not None:
        rotated[:] = [normalize_text(t) for t in rotated if t.strip()]
    PAPER_BUDGET.left -= r.used
    return r.lines


#: a page with more drawn objects than this is a plot or a diagram: its rules are not read
MAX_RULE_OBJECTS = 4000


def pdfium_rules(page) -> list[tuple[float, float, float]]:
    """The thin horizontal rules drawn on a PDFium page, as (x0, x1, y): path objects under 2 pt
    tall and over 10 pt wide (underlines, table rules), top-level objects only."""
    import ctypes

    import pypdfium2.raw as raw

    n = raw.FPDFPage_CountObjects(page.raw)
    if n > MAX_RULE_OBJECTS:
        return []
    out = []
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    for k in range(n):
        obj = raw.FPDFPage_GetObject(page.raw, k)
        if raw.FPDFPageObj_GetType(obj) != raw.FPDF_PAGEOBJ_PATH:
            continue
        if not raw.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
            continue
        if top.value - bottom.value < 2.0 and right.value - left.value > 10.0:
            out.append((left.value, right.value, (top.value + bottom.value) / 2))
    return out


def mark_underlined(lines: list[Line], rules: list[tuple[float, float, float]]) -> None:
    """Set ``Line.underlined`` where a rule lies just under a line's baseline (within 0.45 of
    its type size) and spans its text: at least 80% of its width and at most 30% more (a table
    rule under a header row spans the whole table, wider than the row's words)."""
    if not rules:
        return
    for ln in lines:
        box = ln.bbox
        if box is None or ln.y is None:
            continue
        width = box[2] - box[0]
        if width <= 0:
            continue
        for x0, x1, y in rules:
            if not (0 <= ln.y - y <= 0.45 * max(ln.size, 1.0)):
                continue
            cover = min(x1, box[2]) - max(x0, box[0])
            if cover >= 0.8 * width and (x1 - x0) <= 1.3 * width:
                ln.underlined = True
                break


VOWEL_MARKS = frozenset("\u0301\u0300\u0302\u0308\u0303\u030a\u0304\u0306\u030b")


def place_accents(runs: list[Run], accents: list[tuple[float, str]]) -> None:
    """Put each accent (x centre, combining mark) on the letter printed under it: the run whose
    box holds the centre, the letter at the matching share of the run's width (one letter
    either side allowed, a letter the mark composes with preferred).  A space PDFium generated
    where the accent glyph interrupted a word ("Montr" "eal") is taken out.  An accent over
    no letter is dropped."""
    for cx, mark in accents:
        k = next((k for k, r in enumerate(runs) if r.box and r.box[0] - 0.5 <= cx <= r.box[2] + 0.5
                  and r.text.strip()), None)
        if k is None:
            continue
        r = runs[k]
        text = r.text.rstrip()
        width = r.box[2] - r.box[0]
        guess = int((cx - r.box[0]) / width * len(text)) if width > 0 else 0
        order = sorted(range(max(0, guess - 1), min(len(text), guess + 2)),
                       key=lambda i: abs(i - guess))
        letters = [i for i in order if text[i].isalpha() or text[i] in "\u0131\u0237"]
        composed = [i for i in letters
                    if len(compose_accent(mark, text[i])) == 1]
        if mark in VOWEL_MARKS:  # acute, grave, circumflex, diaeresis, tilde, ring: vowels
            composed = ([i for i in composed if text[i].lower() in "aeiouy\u0131"]
                        or composed)
        at = (composed or letters or [None])[0]
        if at is None:
            continue
        r.text = r.text[:at] + compose_accent(mark, text[at]) + r.text[at + 1:]
        if k > 0 and runs[k - 1].text.endswith(" ") and runs[k - 1].box and r.box and (
                r.box[0] - runs[k - 1].box[2] < 0.2 * max(r.size, 1.0)):
            runs[k - 1].text = runs[k - 1].text.rstrip(" ")


#: what PDFium reports for a hyphen that broke a word at a line end
JOIN_HYPHENS = frozenset("\ufffe\u0002")
