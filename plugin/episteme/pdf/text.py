"""PDF → repaired text lines with layout evidence (PDFium characters, or pypdf's visitor).

Heading detection needs more than ``page.extract_text()``: it needs to know which line is set in a
bigger or bolder font than the body, where a line sits on the page (running headers and footers
live in the margins), and which text is rotated (arXiv's margin stamp).  pypdf's ``visitor_text``
callback reports each text run with its matrices and font, in content-stream order, which for
LaTeX output is the reading order even in two columns.  This module turns those runs into
:class:`Line` objects and repairs them: NFKC (ligatures), stamp/header/footer/page-number removal.
Joining lines into prose (de-hyphenation) is done later by :func:`join_lines`, because whether a
broken word should be re-joined depends on the vocabulary of the whole document.

:func:`pdfium_page_lines` builds the same lines from PDFium's text page instead (the default:
less CPU -- pypdf re-reads every form XObject's fonts -- and real glyph boxes on every run);
the rules downstream see the same evidence either way (``benchmarks/RESULTS-headings.md``).

Why one module: both engines (pypdf's runs, PDFium's characters) produce the same :class:`Line`
and share the repairs (furniture, column order, de-hyphenation), so the rules downstream see the
same evidence whichever engine ran.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Run:
    """One text run as pypdf reports it: text, font name, effective size, start position."""

    text: str
    font: str
    size: float
    x: float | None
    y: float | None
    bold: bool | None = None  # from the font descriptor when it says; else from the name
    italic: bool | None = None
    box: list[float] | None = None  # union of its glyph boxes [x0, y0, x1, y1] (PDFium only)

    def __post_init__(self) -> None:
        if self.bold is None:
            self.bold = is_bold_font(self.font)
        if self.italic is None:
            self.italic = is_italic_font(self.font)


@dataclass
class Line:
    """One printed line (or one line's worth of runs) with the evidence heading detection uses."""

    text: str
    page: int  # 1-based
    x: float | None
    y: float | None
    size: float  # largest effective font size among the line's letter-bearing runs
    font: str  # font of the first letter-bearing run
    bold: bool
    runs: list[Run] = field(default_factory=list)
    italic: bool = False
    underlined: bool = False  # a drawn rule runs under the line's text (PDFium only)

    @property
    def bbox(self) -> list[float] | None:
        """The union of the runs' glyph boxes (PDF points), or None when the extractor gave
        none (pypdf reports where runs start, not how wide they are)."""
        boxes = [r.box for r in self.runs if r.box is not None and r.box[2] > r.box[0]]
        if not boxes:
            return None
        return [min(b[0] for b in boxes), min(b[1] for b in boxes),
                max(b[2] for b in boxes), max(b[3] for b in boxes)]

    @property
    def all_bold(self) -> bool:
        """Every run with words in it is bold (symbols and math glyphs may differ)."""
        worded = [r for r in self.runs if sum(c.isalpha() for c in r.text) >= 2]
        return bool(worded) and all(r.bold for r in worded)

    @property
    def styled_share(self) -> float:
        """Share of the line's letters set bold or italic (a heading set apart by its face,
        with a word in another face inside it, e.g. a bold package name in an italic title)."""
        total = styled = 0
        for r in self.runs:
            n = sum(c.isalpha() for c in r.text)
            total += n
            if r.bold or r.italic:
                styled += n
        return styled / total if total else 0.0

    @property
    def lead(self) -> str:
        """The text set in the same font as the line's first run: a run-in heading's title."""
        out = []
        first = None
        for r in self.runs:
            if not r.text.strip() and first is None:
                continue
            if first is None:
                first = (r.font, round(r.size))
            # small caps are faked with two sizes of one font: only a font change ends the lead
            if r.font != first[0] and r.text.strip():
                break
            out.append(r.text)
        return normalize_text("".join(out)).strip()


def is_bold_font(name: str) -> bool:
    """Bold/medium weights by the naming conventions of common TeX and Office fonts."""
    base = name.split("+", 1)[-1].lower()
    if any(h in base for h in ("bold", "medi", "semibold", "demi", "heavy", "black")):
        return True
    if base.startswith(("cmbx", "sfbx", "cmb", "ptmb", "phvb")):
        return True
    return base.endswith(("-b", "tb", "-bd", ",bold", "-bi", "-sb"))


MATH_FAMILIES = ("cmmi", "cmsy", "cmex", "msbm", "msam", "eufm", "rsfs", "symbol", "mt", "math")


def is_italic_font(name: str) -> bool:
    """Italic/oblique faces by name: ``-Italic``, ``-It``, ``Oblique``, ``cmti``, ``-I``."""
    base = name.split("+", 1)[-1].lower()
    if any(k in base for k in ("ital", "oblique", "-it", "cmti", "ti10", "-bi", "slant")):
        return True
    return base.endswith(("-i", "-ri", ",italic"))


_TRAITS: dict[str, tuple[bool, bool]] = {}


def font_traits(font_dict, name: str) -> tuple[bool, bool]:
    """(bold, italic) of a font: its name, then its descriptor (/FontWeight ≥ 600 or the
    ForceBold flag; the Italic flag or a non-zero /ItalicAngle).  Cached by font name, since
    one document's fonts are read thousands of times."""
    key = name
    if key and key in _TRAITS:
        return _TRAITS[key]
    bold, italic = is_bold_font(name), is_italic_font(name)
    try:
        fd = font_dict.get("/FontDescriptor") if font_dict is not None else None
        if fd is None and font_dict is not None and "/DescendantFonts" in font_dict:
            fd = font_dict["/DescendantFonts"][0].get_object().get("/FontDescriptor")
        if fd is not None:
            fd = fd.get_object()
            flags = int(fd.get("/Flags", 0) or 0)
            weight = float(fd.get("/FontWeight", 0) or 0)
            angle = float(fd.get("/ItalicAngle", 0) or 0)
            base = name.split("+", 1)[-1].lower()
            bold = bold or weight >= 600 or bool(flags & (1 << 18))
            if not base.startswith(MATH_FAMILIES):
                italic = italic or bool(flags & (1 << 6)) or abs(angle) > 0.5
    except Exception:  # a malformed descriptor: the name is all the evidence there is
        pass
    if len(_TRAITS) > 4096:
        _TRAITS.clear()
    if key:
        _TRAITS[key] = (bold, italic)
    return bold, italic


#: TeX's accents as old fonts print them: a spacing accent glyph before the letter it sits on
#: (``L´aszl´o``, ``Lemaˆıtre`` with a dotless i), a cedilla after it (``c¸``); mapped to the
#: combining marks they stand for
SPACING_ACCENTS = {"\u00b4": "\u0301", "\u02c6": "\u0302", "\u00a8": "\u0308",
                    "\u02dc": "\u0303", "\u02c7": "\u030c", "\u02da": "\u030a",
                    "\u00af": "\u0304", "\u02d8": "\u0306", "\u02d9": "\u0307",
                    "\u02dd": "\u030b", "\u00b8": "\u0327"}
_ACCENT_BEFORE = re.compile("([" + "".join(SPACING_ACCENTS) + "])([A-Za-z\u0131\u0237])")
_GRAVE_BEFORE = re.compile(r"(?<=[A-Za-z])`([aeiouAEIOU])")
_CEDILLA_AFTER = re.compile("([cCsStT])\u00b8(?![A-Za-z])")


def compose_accent(mark: str, letter: str) -> str:
    letter = {"\u0131": "i", "\u0237": "j"}.get(letter, letter)
    return unicodedata.normalize("NFC", letter + mark)


def compose_accents(s: str) -> str:
    """Accented letters printed as a spacing accent and a letter, composed into one letter
    ("L´aszl´o" -> "László", "Lemaˆıtre" -> "Lemaître", "Fran¸cois" -> "François").  Why: left apart, NFKC turns the accent into a
    space and a combining mark, so names, titles and quotes do not match the printed words."""
    if not any(c in s for c in "\u00b4\u02c6\u00a8\u02dc\u02c7\u02da\u00af\u02d8\u02d9\u02dd`\u00b8"):
        return s
    s = _ACCENT_BEFORE.sub(lambda m: compose_accent(SPACING_ACCENTS[m.group(1)], m.group(2)), s)
    s = _GRAVE_BEFORE.sub(lambda m: compose_accent("\u0300", m.group(1)), s)
    return _CEDILLA_AFTER.sub(lambda m: compose_accent("\u0327", m.group(1)), s)


def normalize_text(s: str) -> str:
    """NFKC folds ligatures (ﬁ → fi) and full-width forms; accents printed apart from their
    letters are composed first (:func:`compose_accents`); soft hyphens and NULs are dropped."""
    s = unicodedata.normalize("NFKC", compose_accents(s))
    return s.replace("\u00ad", "").replace("\x00", "")


def _mat_mul(a: list[float], b: list[float]) -> list[float]:
    return [
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
        a[4] * b[0] + a[5] * b[2] + b[4],
        a[4] * b[1] + a[5] * b[3] + b[5],
    ]


#: Text kept per page and per paper.  Why: a 72 KB PDF can carry a 20 MB text layer; what
#: follows extraction must see a bounded input.  A dense real page holds ~8k characters and a
#: long paper ~500k, so neither cap touches real papers.  (The splitter after this point is
#: still super-linear in the length of one line; the page cap bounds that too.)
MAX_PAGE_CHARS = 30_000
MAX_PAPER_CHARS = 1_500_000
PAPER_BUDGET = threading.local()


MAX_PAGE_CONTENT_BYTES = 8 * 1024 * 1024  # decoded content stream; its text is not read past it


def content_bytes(page) -> int:
    """Decoded size of a page's content stream(s) (0 when it cannot be told)."""
    try:
        contents = page.get("/Contents")
        if contents is None:
            return 0
        contents = contents.get_object()
        parts = contents if isinstance(contents, list) else [contents]
        return sum(len(p.get_object().get_data()) for p in parts)
    except Exception:
        return 0


class PageTooLarge(Exception):
    """A page whose decoded content stream is over :data:`MAX_PAGE_CONTENT_BYTES`: its text is
    not read at all (pypdf parses every operator before any cap could stop it).  Raised, not
    swallowed, so the caller reports *that* rather than a page without text."""

    def __init__(self, page_no: int, size: int):
        super().__init__(f"page {page_no}: content stream of {size / 1048576:.1f} MB")
        self.page_no = page_no
        self.size = size


class _PageFull(Exception):
    """Raised inside pypdf's visitor to stop extracting a page whose cap is reached."""


def strip_controls(text: str) -> str:
    """PDF text without terminal escapes and other C0/C1 controls (tab and newline kept, and
    the ligature codes the fonts map are already decoded by now): paper text is data that is
    stored, printed and shown, and must not carry ESC/BEL sequences to a terminal."""
    return _CONTROLS.sub("", text)


# ... and without lone UTF-16 surrogates: they cannot be encoded as UTF-8, so SQLite, JSON and
# the tokenizer would all refuse the text (a mathematical letter read half by half)
_CONTROLS = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def page_lines(page, page_no: int, rotated: list[str] | None = None) -> list[Line]:
    """Collect one page's text runs through pypdf's visitor and group them into lines (at most
    :data:`MAX_PAGE_CHARS` per page and :data:`MAX_PAPER_CHARS` per paper, counted from page 1).
    Rotated text (the arXiv stamp, margin notes) is left out; ``rotated`` collects it."""
    lines: list[Line] = []
    cur: list[Run] = []
    if page_no <= 1 or not hasattr(PAPER_BUDGET, "left"):
        PAPER_BUDGET.left = MAX_PAPER_CHARS
    room = [min(MAX_PAGE_CHARS, PAPER_BUDGET.left)]

    def flush() -> None:
        nonlocal cur
        for group in split_returns(cur):
            line = make_line(group, page_no)
            if line is not None:
                lines.append(line)
        cur = []

    def visit(text, cm, tm, font_dict, font_size) -> None:
        if not text:
            return
        if room[0] <= 0:
            raise _PageFull
        text = strip_controls(text)[: room[0]]
        room[0] -= len(text)
        m = _mat_mul(list(tm), list(cm))
        scale_y = math.hypot(m[2], m[3])
        size = (font_size or 0.0) * (scale_y or 1.0)
        turned = abs(m[1]) > 1e-3 * max(abs(m[0]), 1e-9) or m[0] <= 0
        font = ""
        if font_dict is not None:
            try:
                font = str(font_dict.get("/BaseFont", "") or "")
            except Exception:
                font = ""
        bold, italic = font_traits(font_dict, font)
        parts = text.split("\n")
        for i, part in enumerate(parts):
            if i > 0:
                flush()
            if part:
                if turned:
                    # the arXiv stamp and other rotated margin text: never part of the prose
                    if rotated is not None and len(rotated) < 200:
                        rotated.append(normalize_text(part))
                    continue
                x, y = (m[4], m[5]) if i == 0 else (None, None)
                cur.append(Run(part, font, size, x, y, bold, italic))

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    start = room[0]
    size = content_bytes(page)
    if size > MAX_PAGE_CONTENT_BYTES:
        raise PageTooLarge(page_no, size)  # pypdf would parse every operator before any cap
    with contextlib.suppress(_PageFull):
        page.extract_text(visitor_text=visit)
    PAPER_BUDGET.left -= start - max(room[0], 0)
    flush()
    return lines


def split_returns(runs: list[Run]) -> list[list[Run]]:
    """Split what pypdf joined into one line where the text went back to the left on another
    baseline (pypdf only breaks lines on large vertical moves, so rows of two columns written
    alternately can arrive as one line)."""
    groups: list[list[Run]] = []
    last: Run | None = None
    for r in runs:
        if (
            groups
            and last is not None
            and r.x is not None
            and r.y is not None
            and r.x < last.x - 1
            and abs(r.y - last.y) > 0.3 * max(r.size, 1.0)
        ):
            groups.append([r])
        elif groups:
            groups[-1].append(r)
        else:
            groups.append([r])
        if r.x is not None and r.y is not None:
            last = r
    return groups


def fix_column_order(lines: list[Line], page_width: float) -> list[Line]:
    """Restore column order on a page whose text was written row by row across two columns.

    LaTeX writes a column at a time, so stream order is reading order and nothing changes.
    Some producers write each row of both columns together; pypdf then returns lines that
    hold a left-column run and a right-column run.  When at least a fifth of a page's lines
    are such mixed lines, each is split at the gutter and the page is re-ordered: the lines
    above the first mixed line (title, abstract) first, then the left column, then the right.
    """
    mid = page_width / 2

    def split_at_gutter(ln: Line) -> tuple[list[Run], list[Run]] | None:
        left: list[Run] = []
        right: list[Run] = []
        side = left
        for r in ln.runs:
            if r.x is not None:
                side = right if r.x > mid else left
            side.append(r)
        if left and right and any(r.x is not None and r.x < mid - 5 for r in left):
            return left, right
        return None

    splits = [split_at_gutter(ln) for ln in lines]
    starts = Counter(
        round(next(r.x for r in sp[1] if r.x is not None) / 3) for sp in splits if sp is not None
    )
    # in a one-column page, font changes past the middle (italics, math) start anywhere; in
    # interleaved columns the right-hand part starts at the right column's edge, line after line
    n_mixed = starts.most_common(1)[0][1] if starts else 0
    if n_mixed < max(3, len(lines) // 5):
        return lines
    edge = starts.most_common(1)[0][0] * 3

    def at_edge(x: float | None) -> bool:  # the right column's edge, or a paragraph indent
        return x is not None and edge - 4 <= x <= edge + 30

    splits = [
        sp if sp is not None and at_edge(next(r.x for r in sp[1] if r.x is not None)) else None
        for sp in splits
    ]
    first = next(i for i, sp in enumerate(splits) if sp is not None)
    head: list[Line] = []
    left: list[Line] = []
    right: list[Line] = []
    for ln in lines[:first]:  # full-width title block, except right-column lines written early
        (right if at_edge(ln.x) else head).append(ln)
    side = left
    for ln, sp in zip(lines[first:], splits[first:], strict=True):
        if sp is not None:
            for part, dest in ((sp[0], left), (sp[1], right)):
                made = make_line(part, ln.page)
                if made is not None:
                    dest.append(made)
            side = right
            continue
        if ln.x is not None:
            side = right if ln.x > mid else left
        side.append(ln)
    return head + left + right


def make_line(runs: list[Run], page_no: int) -> Line | None:
    text = normalize_text("".join(r.text for r in runs))
    text = re.sub(r"[ \t]+", " ", text).strip()
    if not text:
        return None
    letter_runs = [r for r in runs if any(c.isalnum() for c in r.text)] or runs
    first = letter_runs[0]
    x = next((r.x for r in runs if r.x is not None), None)
    y = next((r.y for r in runs if r.y is not None), None)
    size = max(r.size for r in letter_runs)
    return Line(text, page_no, x, y, round(size, 2), first.font, bool(first.bold), runs,
                bool(first.italic))


_ARXIV_STAMP = re.compile(r"^arXiv:\d{4}\.\d{4,5}(v\d+)?\s*\[[^\]]+\]\s*\d{1,2}\s*\w{3}\s*\d{4}$")
_PAGE_NUM = re.compile(r"^(?:page\s*)?(?:\d{1,4}|[ivxlc]{1,6})(?:\s*(?:of|/)\s*\d{1,4})?$", re.I)


def _shape(text: str) -> str:
    """A line's shape for repeat detection: digits folded so 'Page 3' and 'Page 4' match."""
    return re.sub(r"\d+", "#", text.lower()).strip()


def drop_furniture(pages: list[list[Line]], heights: list[float]) -> list[list[Line]]:
    """Remove running headers/footers, page numbers and arXiv stamps.

    A line in the top or bottom 9% of the page whose digit-folded text repeats on at least three
    pages (or on most pages of a short document) is a running header/footer; a bare number there
    is a page number.  Anything that survives is kept, so a real heading at the top of a page is
    safe unless the same text repeats in the margin of other pages.
    """
    n = len(pages)
    edges: list[set[int]] = []  # per page: ids of its topmost and bottom-most lines
    for lines in pages:
        ys = [ln.y for ln in lines if ln.y is not None]
        top, bottom = (max(ys), min(ys)) if ys else (None, None)
        edges.append({id(ln) for ln in lines if ln.y is not None and ln.y in (top, bottom)})

    def in_margin(line: Line, h: float, edge: set[int]) -> bool:
        # the outer band of the page, or the first/last line (tall pages put the running
        # head lower than a fixed band)
        return line.y is not None and (
            line.y > h * 0.91 or line.y < h * 0.09 or id(line) in edge
        )

    counts: Counter[str] = Counter()
    for lines, h, edge in zip(pages, heights, edges, strict=True):
        seen = {_shape(ln.text) for ln in lines if in_margin(ln, h, edge)}
        counts.update(seen)
    need = 3 if n >= 5 else 2
    out = []
    for lines, h, edge in zip(pages, heights, edges, strict=True):
        kept = []
        for ln in lines:
            t = ln.text.strip()
            if _ARXIV_STAMP.match(t):
                continue
            if in_margin(ln, h, edge) and (
                _PAGE_NUM.match(t) or (n > 1 and counts[_shape(t)] >= need and len(t) < 200)
            ):
                continue
            kept.append(ln)
        out.append(kept)
    return out


#: margin line numbers, as word processors and review templates print them.  A page's
#: numbers are taken out only when the paper numbers its lines throughout: numbers at the
#: start (or end) of at least this share of a page's lines, on at least this share of its
#: pages, in one narrow band of x, increasing down the page.  Why so strict: a table's first
#: column ("1  ResNet  34.5") also prints increasing numbers in a band, but on one page and
#: for a few of its lines (tests/test_pdfsplit.py::test_margin_line_numbers_are_not_text).
LINE_NUMBERS = {"page_share": 0.15, "pages": 0.5, "band_pt": 12.0, "increasing": 0.8}
_LINE_NO = re.compile(r"^\d{1,5}$")


def _run_span(r: Run) -> tuple[float, float]:
    """A run's x-range: its glyph box, or its start and an estimated width (pypdf)."""
    if r.box is not None and r.box[2] > r.box[0]:
        return r.box[0], r.box[2]
    x = r.x or 0.0
    return x, x + 0.5 * r.size * len(r.text.strip())


def _line_number_candidates(ln: Line, pi: int, li: int, cands: dict) -> None:
    """Record the line's first (side 0) or last (side 1) run when it is a bare number set a
    clear gap apart from the rest of the line."""
    runs = [r for r in ln.runs if r.text.strip()]
    if not runs:
        return
    first, last = runs[0], runs[-1]
    if _LINE_NO.match(first.text.strip()) and (
        len(runs) == 1
        or _run_span(runs[1])[0] - _run_span(first)[1] > max(runs[1].size, 1.0)
    ):
        cands[0].append((pi, li, int(first.text.strip()), *_run_span(first)))
    elif len(runs) > 1 and _LINE_NO.match(last.text.strip()) and (
        _run_span(last)[0] - _run_span(runs[-2])[1] > max(runs[-2].size, 1.0)
    ):
        cands[1].append((pi, li, int(last.text.strip()), *_run_span(last)))


def drop_line_numbers(pages: list[list[Line]]) -> list[list[Line]]:
    """Take margin line numbers (Word, bioRxiv, review copies) out of the lines.

    Such a number is printed on a text line's baseline, a clear gap (over an em) left of the
    line's first word or right of its last, so extraction meets it as the line's first or last
    run ("50 region of the Pbs2 ..."), or as a line of its own.  Left in, it becomes part of the
    text ("the Pbs2 50 region") and of headings ("1 Residues Neighboring ..." read as section
    1).  See :data:`LINE_NUMBERS` for when a paper is taken to number its lines.
    """
    cands: dict[int, list[tuple[int, int, int, float, float]]] = {0: [], 1: []}
    for pi, lines in enumerate(pages):
        for li, ln in enumerate(lines):
            _line_number_candidates(ln, pi, li, cands)
    drop: dict[tuple[int, int], int] = {}
    # a review copy's ruler read as one line ("000 001 002 ... 107"): a run of consecutive
    # numbers and nothing else is never text
    ruler: set[tuple[int, int]] = set()
    for pi, lines in enumerate(pages):
        for li, ln in enumerate(lines):
            toks = ln.text.split()
            if len(toks) >= 5 and all(_LINE_NO.match(t) for t in toks) and all(
                    int(b) == int(a) + 1 for a, b in zip(toks, toks[1:], strict=False)):
                ruler.add((pi, li))
    if ruler:
        pages = [[ln for li, ln in enumerate(lines) if (pi, li) not in ruler]
                 for pi, lines in enumerate(pages)]
        cands = {0: [], 1: []}
        for pi, lines in enumerate(pages):
            for li, ln in enumerate(lines):
                _line_number_candidates(ln, pi, li, cands)
    texty = [pi for pi, lines in enumerate(pages) if len(lines) >= 5]
    for side, found in cands.items():
        if len(found) < 10 or not texty:
            continue
        # one narrow band of x: the numbers' right edges (right-aligned) or left edges
        band = LINE_NUMBERS["band_pt"]
        for edge in (4, 3):
            mid = sorted(c[edge] for c in found)[len(found) // 2]
            inband = [c for c in found if abs(c[edge] - mid) <= band]
            if len(inband) >= 0.8 * len(found):
                break
        per_page = Counter(c[0] for c in inband)
        full = [pi for pi in texty if per_page[pi] >= max(3, LINE_NUMBERS["page_share"]
                                                          * len(pages[pi]))]
        if len(full) < max(1, LINE_NUMBERS["pages"] * len(texty)):
            continue
        values = [c[2] for c in inband]
        ups = sum(b > a for a, b in zip(values, values[1:], strict=False))
        if ups < LINE_NUMBERS["increasing"] * (len(values) - 1):
            continue
        for c in inband:
            drop[(c[0], c[1])] = side
    if not drop:
        return pages
    out = []
    for pi, lines in enumerate(pages):
        kept = []
        for li, ln in enumerate(lines):
            side = drop.get((pi, li))
            if side is None:
                kept.append(ln)
                continue
            runs = [r for r in ln.runs if r.text.strip()]
            rest = runs[1:] if side == 0 else runs[:-1]
            made = make_line(rest, ln.page) if rest else None
            if made is not None:
                made.underlined = ln.underlined
                kept.append(made)
        out.append(kept)
    return out


_WORD = re.compile(r"[A-Za-z]+")


_COMPOUND = re.compile(r"[A-Za-z]+-[A-Za-z]+")
_SUFFIXES = ("s", "es", "ed", "d", "ing", "ly", "al", "er", "ers", "ion", "ions", "ity")


def vocabulary(lines: list[Line]) -> set[str]:
    """Lower-cased words of the document, for deciding whether a broken word is re-joined.

    Hyphenated compounds printed inside a line are recorded too (as ``"fine-tuned"``), so a
    compound broken at its own hyphen keeps it.
    """
    vocab: set[str] = set()
    prev_broken = False
    for ln in lines:
        text = ln.text
        if prev_broken:  # the line starts with the tail of a broken word: not a word
            text = re.sub(r"^[A-Za-z]+", "", text)
        prev_broken = text.endswith("-")
        if prev_broken:  # and ends with the head of one
            text = re.sub(r"[A-Za-z]+-$", "", text)
        vocab.update(w.lower() for w in _WORD.findall(text))
        vocab.update(w.lower() for w in _COMPOUND.findall(text))
    return vocab


def _known_word(word: str, vocab: set[str]) -> bool:
    """``word`` or an inflection of it (result/results, offer/offering) occurs in ``vocab``."""
    w = word.lower()
    if w in vocab:
        return True
    for suf in _SUFFIXES:
        if w + suf in vocab or (w.endswith(suf) and len(w) - len(suf) >= 4 and w[: -len(suf)] in vocab):
            return True
    return False


_HYPHEN_END = re.compile(r"(?<![A-Za-z-])([A-Za-z]+)-$")
_START_WORD = re.compile(r"^([a-z]+)")


def _rejoin(left: str, right: str, vocab: set[str]) -> bool:
    """Whether ``left-`` at a line end + ``right`` is one word broken by hyphenation.

    A compound printed with its hyphen elsewhere (``pre-trained``) keeps it; a word printed
    whole elsewhere (``representation``) is re-joined.  When the document does not say, two
    halves that are words by themselves (``sentence``/``level``) are a compound, otherwise a
    fragment (``ap``/``pear``, ``acti``/``vation``) was split by TeX's hyphenation.
    """
    if f"{left}-{right}".lower() in vocab:
        return False
    if _known_word(left + right, vocab):
        return True
    if right.lower() in _SUFFIXES or len(left) < 3:
        return True
    return not (_known_word(left, vocab) and _known_word(right, vocab))


def join_lines(texts: list[str], vocab: set[str]) -> tuple[str, list[int]]:
    """Join printed lines into prose and return (text, start offset of each line in it).

    A line ending in ``word-`` followed by a lower-case word is re-joined without the hyphen
    when the joined word occurs elsewhere in the document (``repre-`` + ``sentation``); otherwise
    the hyphen stays and no space is added (``state-of-`` + ``the-art``).  Other line breaks
    become a space; a short line that ends a sentence becomes a paragraph break.
    """
    parts: list[str] = []
    offsets: list[int] = []
    pos = 0
    lengths = sorted(len(t) for t in texts)
    typical = lengths[len(lengths) * 3 // 4] if lengths else 0
    prev = ""
    for i, t in enumerate(texts):
        if i > 0:
            m = _HYPHEN_END.search(prev)
            n = _START_WORD.match(t)
            if m and n:
                if _rejoin(m.group(1), n.group(1), vocab):
                    parts[-1] = parts[-1][:-1]
                    pos -= 1
                sep = ""
            elif n and re.search(r"[A-Za-z]-[A-Za-z]+-$", prev):
                sep = ""  # "left-to-" + "right": a compound broken at one of its hyphens
            elif prev.endswith((".", "?", "!", ":")) and len(prev) < 0.8 * typical:
                sep = "\n"
            else:
                sep = " "
            parts.append(sep)
            pos += len(sep)
        offsets.append(pos)
        parts.append(t)
        pos += len(t)
        prev = t
    return "".join(parts), offsets
