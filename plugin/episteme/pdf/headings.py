"""Heading detection over repaired lines: printed numbering, known names, font evidence.

Rules, in the order they matter:

* A numbered heading (``3``, ``3.2.1``, ``A``, ``A.1``, ``3.1.``) must *fit the numbering so
  far*: the first child of the last heading, or the next number at any enclosing level.  This
  one rule throws out most false hits — numbers in sentences, table rows, reference entries,
  author affiliations — because those rarely continue the sequence.
* It must also look like a heading: a short title starting with a capital, mostly letters, and
  typographic evidence (bold, larger than the body, capitals, or a different font than the body).
* Unnumbered headings are either well-known names (Abstract, References, Acknowledgements, …)
  on a line of their own, or lines set exactly in the font and size the document already uses
  for its numbered headings (e.g. an unnumbered appendix title).
* A heading wrapped over two or three lines is joined back when the following lines share its
  style.

Why one module: every rule above weighs the same evidence (the numbering so far, the body font
in :class:`DocStats`, the line styles) in one pass; :func:`detect_headings` is the entry and the
rest are its rules.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .captions import names_float
from .text import Line

NUMBERED = re.compile(
    r"^(?P<num>(?:\d{1,2}|[A-H])(?:\.\d{1,2}){0,3})(?P<dot>\.?)\s+(?P<title>\S.*)$"
)
# IEEE style: "IV. EXPERIMENTS" (a period is required, so a pronoun "I" never matches)
ROMAN = re.compile(r"^(?P<num>(?=[IVX])X{0,3}(?:IX|IV|V?I{0,3}))\.\s+(?P<title>\S.*)$")
APPENDIX_NUMBERED = re.compile(
    r"^(?:appendix|supplementary material)\s+(?P<num>[A-H](?:\.\d{1,2}){0,2})\s*[.:\-–—]?\s*(?P<title>\S.*)$",
    re.I,
)
KNOWN = re.compile(
    r"^(?P<name>abstract|introduction|related work|background|conclusions?|"
    r"conclusions? and future work|discussion|acknowledge?ments?|references|bibliography|"
    r"literature cited|works cited|"
    r"appendix|appendices|supplementary material|keywords|ccs concepts|limitations|"
    r"ethics statement|broader impact|index terms|contents|table of contents)\s*[.:]?$",
    re.I,
)
ABSTRACT_RUNIN = re.compile(r"^(abstract)\s*[.:\-–—]\s*(\S.*)$", re.I)
# IEEE \\subsubsection: "1) Special allocators: The naive approach ..." (title set in italics)
PAREN_RUNIN = re.compile(r"^(?P<num>\d{1,2})\)\s+(?P<title>[^:.]{2,80}?):\s+(?P<rest>\S.*)$")
OCR_ZERO = re.compile(r"^[oO](?=\.\s+[A-Z])")
#: a line led by one of these words is a block's label, not a heading (floats: :mod:`.captions`)
NOT_HEADING_LEAD = re.compile(r"^(listing|proof|theorem|lemma|definition)\b", re.I)


@dataclass
class Heading:
    """A detected heading: where it starts, how many lines it spans, and how it is numbered."""

    index: int  # index of the heading's first line in the document's line list
    span: int  # number of lines the heading occupies (wrapped headings > 1)
    number: str
    title: str
    level: int
    rest: str = ""  # text after a run-in heading on its first line (belongs to the body)
    style: tuple[str, float, bool] | None = None
    source: str = "text"  # "text" or "outline"


def roman_value(s: str) -> int:
    vals = {"I": 1, "V": 5, "X": 10}
    total = 0
    for a, b in zip(s, s[1:] + " ", strict=True):
        v = vals[a]
        total += -v if b != " " and vals.get(b, 0) > v else v
    return total


def number_parts(number: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in number.split("."))


def _succ(part) -> object:
    return part + 1 if isinstance(part, int) else chr(ord(part) + 1)


def fits_after(prev: tuple | None, cand: tuple, *, letters_ok: bool) -> bool:
    """Whether ``cand`` may follow ``prev`` in a paper's numbering."""
    if prev is None:
        if isinstance(cand[0], str):
            return letters_ok and cand == ("A",)
        return cand in ((1,), (0,), (2,))
    if isinstance(cand[0], str) and not isinstance(prev[0], str):
        return letters_ok and cand == ("A",)
    if isinstance(cand[0], str) != isinstance(prev[0], str):
        return False
    if cand == (*prev, 1):
        return True
    return any(cand == (*prev[:j], _succ(prev[j])) for j in range(len(prev)))


@dataclass
class DocStats:
    """Body font evidence: the most common size and font by character count."""

    body_size: float
    body_font: str
    body_italic: bool = False

    @classmethod
    def of(cls, lines: list[Line]) -> DocStats:
        sizes: Counter[float] = Counter()
        fonts: Counter[str] = Counter()
        italic: dict[str, bool] = {}
        for ln in lines:
            sizes[round(ln.size * 2) / 2] += len(ln.text)
            fonts[ln.font] += len(ln.text)
            italic.setdefault(ln.font, ln.italic)
        font = fonts.most_common(1)[0][0] if fonts else ""
        return cls(
            sizes.most_common(1)[0][0] if sizes else 10.0,
            font,
            italic.get(font, False),
        )


def _family(font: str) -> str:
    base = font.split("+", 1)[-1]
    return re.split(r"[-,]", base)[0].rstrip("0123456789").lower()


_MATH_FONTS = ("cmmi", "cmsy", "cmex", "cmr", "msbm", "msam", "eufm", "rsfs", "symbol")


def has_evidence(line: Line, title: str, stats: DocStats, *, run_in: bool = False) -> bool:
    """Typographic evidence that a line is set as a heading, not as body text."""
    letters = [c for c in title if c.isalpha()]
    upper = len(letters) >= 3 and all(c.isupper() for c in letters)
    if line.bold or line.size >= stats.body_size + 0.8 or upper:
        return True
    if not run_in and line.italic and not stats.body_italic and line.styled_share >= 0.6:
        return True  # IEEE subsections: italic on a line of their own (not an italic lead-in)
    fam = _family(line.font)
    return (run_in or line.size >= stats.body_size - 1.5) and fam != _family(
        stats.body_font
    ) and not fam.startswith(_MATH_FONTS)


def plausible_title(title: str, *, numbered: bool, lower_ok: bool = False) -> bool:
    """Reject titles that are sentences, table rows, addresses or references."""
    t = title.strip()
    if not t or len(t) > 150:
        return False
    first_alpha = next((c for c in t if c.isalpha()), "")
    if not first_alpha or not (first_alpha.isupper() or t[0] in "[(\"“'" or lower_ok):
        return False
    if t[0].isdigit() and not re.match(r"^\d+[A-Za-z]", t):
        return False
    words = t.split()
    if len(words) > 16:
        return False
    if t.endswith((",", ";", "-")) or "@" in t or "http" in t.lower():
        return False
    if t.count(",") >= 3:  # an address or an author list
        return False
    if re.search(r"(\.\s?){4,}|…", t):  # a table-of-contents line with dot leaders
        return False
    chars = [c for c in t if not c.isspace()]
    alpha = sum(c.isalpha() for c in chars)
    if alpha < 0.6 * len(chars):
        return False
    if sum(bool(re.fullmatch(r"[\d.,%±]+", w)) for w in words) >= 2:
        return False
    if names_float(t) or NOT_HEADING_LEAD.match(t) or t[0] in "•·∙◦▪–—-*":
        return False
    # a sentence that happens to start with a number: many lower-case function words and a
    # final period, e.g. "2 layers are used in all experiments."
    return not (t.endswith(".") and len(words) > 10)


#: a gap between two runs of one line wider than this many ems separates table cells (a word
#: space is a third of an em, the gap after a heading's number about one em); a heading is
#: never a row of cells ("System  Ppl  BLEU" over a table's columns)
CELL_GAP_EM = 1.5
#: a section number of several parts with a Roman first part ("I.1.", "IV.2")
_MIXED_NUMBER = re.compile(r"^((?:[IVX]{1,4})(?:\.\d{1,2}){1,3})\.?\s+(\S.*)$")
#: type this many points larger than the body sets a line apart even in the body's own font
#: and weight (Word's "Heading 1": 14-20 pt regular over 10-12 pt text)
LARGE_PT = 2.5


def _run_x(r) -> tuple[float, float]:
    if r.box is not None and r.box[2] > r.box[0]:
        return r.box[0], r.box[2]
    x = r.x or 0.0
    return x, x + 0.5 * r.size * len(r.text.rstrip())


def table_row(ln: Line) -> bool:
    """The line is a row of table cells: words set apart by gaps of more than
    :data:`CELL_GAP_EM` ems (the gap after a leading section number does not count)."""
    runs = [r for r in ln.runs if r.text.strip()]
    if len(runs) < 2 or any(r.x is None for r in runs):
        return False
    if re.fullmatch(r"[\dA-Z]{1,2}(?:\.\d{1,2})*\.?", runs[0].text.strip()):
        runs = runs[1:]
    for a, b in zip(runs, runs[1:], strict=False):
        gap = _run_x(b)[0] - _run_x(a)[1]
        if gap > CELL_GAP_EM * max(a.size, b.size, 1.0):
            return True
    return False


def _breaks_a_word(lines: list[Line], i: int) -> bool:
    """The line before ends inside a word hyphenated across the break ("we can fur-"): what
    follows it is that paragraph's next line, so a line here that looks like a heading is a
    float's line printed in between (a table's header row), not the start of a section."""
    return i > 0 and bool(re.search(r"[a-z]-$", lines[i - 1].text.rstrip()))


def _clean_title(t: str) -> str:
    t = re.sub(r"\s+", " ", t).strip()
    if t.endswith(".") and not t.endswith(".."):
        t = t[:-1].rstrip()
    return t


def _style(line: Line) -> tuple[str, float, bool]:
    """A line's style: font, size (to half a point) and whether a rule underlines it."""
    return (line.font, round(line.size * 2) / 2, line.underlined)


def detect_headings(lines: list[Line]) -> list[Heading]:
    """Find the headings printed in ``lines`` (the whole document, in reading order)."""
    stats = DocStats.of(lines)
    leading = _leading(lines, stats)
    heads: list[Heading] = []
    prev_num: tuple | None = None
    seen_refs = False
    consumed: set[int] = toc_lines(lines)  # a table of contents repeats the headings
    roman_top = ""  # set once the paper numbers its sections I., II., ... (IEEE)
    paren_next = 1  # the next "1) Title:" run-in number under the current heading

    for i, ln in enumerate(lines):
        if i in consumed:
            continue
        text = ln.text.strip()
        if prev_num is None:
            text = OCR_ZERO.sub("0", text)  # OCR reads a leading "0." as "o."
        isolated = _isolated(lines, i, leading)
        # -- IEEE run-in sub-subsections "1) Special allocators: text" -------------------------
        pm = PAREN_RUNIN.match(text)
        if pm and heads and not seen_refs and int(pm.group("num")) == paren_next:
            ttl = pm.group("title").strip()
            if plausible_title(ttl, numbered=True) and _styled_prefix(ln, pm.end("title")):
                parent = next((h.level for h in reversed(heads) if h.number), 1)
                heads.append(Heading(i, 1, pm.group("num"), _clean_title(ttl),
                                     min(parent + 1, 4), pm.group("rest"), _style(ln)))
                paren_next += 1
                continue
        lead = ln.lead
        run_in = bool(lead) and len(lead) < len(text) - 1 and text.startswith(lead)
        # -- Roman-numbered sections (IEEE) ---------------------------------------------------
        r = ROMAN.match(text)
        if r and not seen_refs and (roman_top or prev_num is None):
            cand = (roman_value(r.group("num")),)
            title = r.group("title")
            if (
                plausible_title(title, numbered=True)
                and has_evidence(ln, title, stats)
                and fits_after(prev_num, cand, letters_ok=False)
            ):
                span, title = _join_wrapped(lines, i, title, ln, stats, False)
                consumed.update(range(i + 1, i + span))
                roman_top = r.group("num")
                heads.append(Heading(i, span, roman_top, _clean_title(title), 1, "", _style(ln)))
                prev_num = cand
                paren_next = 1
                continue
        # -- numbered -------------------------------------------------------------------------
        m = APPENDIX_NUMBERED.match(text) or NUMBERED.match(text)
        if m:
            src, is_run_in, rest = _heading_part(text, lead, run_in)
            mm = APPENDIX_NUMBERED.match(src) or NUMBERED.match(src)
            if mm:
                num = mm.group("num")
                title = mm.group("title")
                cand = number_parts(num)
                if roman_top and not seen_refs and mm.re is NUMBERED:
                    if not (len(cand) == 1 and isinstance(cand[0], str)):
                        cand = ()  # Arabic numbers under Roman sections are list items
                    else:  # IEEE subsection "B." under section "III."
                        cand = (prev_num[0], ord(cand[0]) - 64) if prev_num else ()
                        num = f"{roman_top}.{mm.group('num')}"
                strong = ln.bold and ln.size >= stats.body_size + 0.8 and not is_run_in
                ok = (
                    ln.size >= 0.75 * stats.body_size  # never type much smaller than the body
                    and plausible_title(title, numbered=True, lower_ok=strong)
                    and (has_evidence(ln, title, stats, run_in=is_run_in)
                         or (isolated and not is_run_in and ln.size >= stats.body_size - 0.5))
                    and bool(cand)
                    and fits_after(prev_num, cand, letters_ok=True)
                    and (not isinstance(cand[0], str) or len(cand) > 1 or seen_refs or
                         ln.bold or ln.size >= stats.body_size + 0.8 or title.isupper())
                    # an appendix letter never opens page 1: "A New Model for ..." there is
                    # the paper's title starting with the article
                    and not (isinstance(cand[0], str) and ln.page == 1 and prev_num is None)
                )
                if ok:
                    span, title = _join_wrapped(lines, i, title, ln, stats, is_run_in)
                    for k in range(i + 1, i + span):
                        consumed.add(k)
                    heads.append(
                        Heading(i, span, num, _clean_title(title), len(cand), rest, _style(ln))
                    )
                    prev_num = cand
                    paren_next = 1
                    continue
        # -- well-known unnumbered names ----------------------------------------------------
        k = KNOWN.match(text)
        if k and (ln.size >= stats.body_size - 0.5 or ln.bold or text.isupper()) and (
            has_evidence(ln, text, stats) or ln.font != stats.body_font or isolated
        ):
            name = _clean_title(text.rstrip(":"))
            if name.lower() in ("references", "bibliography", "literature cited", "works cited"):
                seen_refs = True
            heads.append(Heading(i, 1, "", name, 1, "", _style(ln)))
            paren_next = 1
            continue
        a = ABSTRACT_RUNIN.match(text)
        if a and not heads and (ln.bold or lead.lower().startswith("abstract")):
            heads.append(Heading(i, 1, "", a.group(1), 1, a.group(2), _style(ln)))
            continue
    heads = _add_style_matches(lines, heads, stats, consumed)
    return heads


#: a table of contents: at least this many lines in a row (one other line allowed between)
#: that end in a page number, the numbers never going down
TOC_MIN_LINES = 4
_TOC_ENTRY = re.compile(r"^(?=.*[A-Za-z]{3}).{3,150}?[\s.]\s*(?P<page>\d{1,3})$")


def toc_lines(lines: list[Line]) -> set[int]:
    """Indices of the lines of a printed table of contents ("Introduction 3", "2.1 Data 6"):
    they name the headings, so read as headings they would cut the paper at its contents page
    and use up the numbering before the real headings."""
    out: set[int] = set()
    run: list[int] = []
    last_page = -1
    gap = 0

    def close() -> None:
        if len(run) >= TOC_MIN_LINES:
            out.update(range(run[0], run[-1] + 1))

    for i, ln in enumerate(lines):
        m = _TOC_ENTRY.match(ln.text.strip())
        if m and int(m.group("page")) >= last_page and (not run or ln.page == lines[run[-1]].page):
            run.append(i)
            last_page = int(m.group("page"))
            gap = 0
            continue
        if run and gap == 0 and not m:
            gap = 1  # a wrapped entry's first line
            continue
        close()
        run, last_page, gap = ([i], int(m.group("page")), 0) if m else ([], -1, 0)
    close()
    return out


def _heading_part(text: str, lead: str, run_in: bool) -> tuple[str, bool, str]:
    """Split a line into (heading text, is run-in, body text after a run-in heading).

    The lead (text in the line's first font) is a run-in heading's title only when the body
    visibly starts after it: the lead ends with a period, or a sentence starts right after a
    period following it.  Otherwise a font change inside the line is math or a small-caps or
    symbol glyph inside the heading itself (``4.1 Global Optimality of p_g = p_data``).
    """
    if not run_in or re.fullmatch(r"[\dA-Z]{1,2}(?:\.\d{1,2})*\.?", lead):
        return text, False, ""  # only the number is set apart (bold number, code-font title)
    if lead.endswith("."):
        return lead, True, text[len(lead):].strip()
    m = re.compile(r"\.\s+(?=[A-Z])").search(text, len(lead))
    if m and len(text[: m.start()].split()) <= 16:
        return text[: m.start()], True, text[m.end():].strip()
    return text, False, ""


def _join_wrapped(
    lines: list[Line], i: int, title: str, ln: Line, stats: DocStats, run_in: bool
) -> tuple[int, str]:
    """Join up to two following lines set in the heading's style (a wrapped heading)."""
    if run_in:
        return 1, title
    span = 1
    style = _style(ln)
    while span < 3 and i + span < len(lines):
        nxt = lines[i + span]
        caps = (  # small caps faked with two sizes: the wrapped part may be set smaller
            _upper(title) and _upper(nxt.text) and nxt.font == ln.font
            and nxt.size <= ln.size + 0.1 and nxt.y is not None and ln.y is not None
            and 0 < ln.y - nxt.y < 1.8 * ln.size
        )
        if nxt.page != ln.page or not (_style(nxt) == style or caps):
            break
        if nxt.lead != nxt.text.strip() and not caps:
            break
        if nxt.font == stats.body_font and round(nxt.size) == round(stats.body_size):
            break
        if NUMBERED.match(nxt.text) or KNOWN.match(nxt.text):
            break
        if len(nxt.text.split()) > 12:
            break
        if title.endswith("-") and nxt.text[:1].islower():
            title = f"{title[:-1]}{nxt.text.strip()}"  # a word hyphenated across the wrap
        else:
            title = f"{title} {nxt.text.strip()}"
        span += 1
    return span, title


def _upper(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 3 and all(c.isupper() for c in letters)


def _leading(lines: list[Line], stats: DocStats) -> float:
    """The body's usual baseline-to-baseline distance (for 'is there space above?')."""
    gaps = []
    for a, b in zip(lines, lines[1:], strict=False):
        if a.page == b.page and a.y is not None and b.y is not None:
            d = a.y - b.y
            if 0.5 * stats.body_size < d < 2.5 * stats.body_size and round(a.size) == round(
                b.size
            ) == round(stats.body_size):
                gaps.append(d)
    gaps.sort()
    return gaps[len(gaps) // 2] if gaps else stats.body_size * 1.2


def _styled_prefix(ln: Line, n: int) -> bool:
    """Most letters of the first ``n`` characters of the line are bold or italic, and most of
    the rest are not: a run-in title set apart from its paragraph by its face."""
    head = [0, 0]
    tail = [0, 0]
    pos = 0
    for r in ln.runs:
        for c in r.text:
            if not c.isalpha():
                pos += 1
                continue
            part = head if pos < n else tail
            part[0] += 1
            part[1] += bool(r.bold or r.italic)
            pos += 1
    return head[0] > 0 and head[1] >= 0.7 * head[0] and tail[1] <= 0.5 * max(tail[0], 1)


def _isolated(lines: list[Line], i: int, leading: float) -> bool:
    """The line stands apart: clearly more space above and below it than the body leading, on
    the same page.  Evidence for a heading when the font tags say nothing (OCR layers)."""
    ln = lines[i]
    if ln.y is None or i == 0 or i + 1 >= len(lines):
        return False
    prev, nxt = lines[i - 1], lines[i + 1]
    if nxt.page != ln.page or nxt.y is None or len(ln.text.split()) > 10:
        return False
    below = ln.y - nxt.y
    if prev.page != ln.page or prev.y is None or prev.y < ln.y:
        return below > 1.6 * leading  # first line of a page or column: the gap below decides
    return prev.y - ln.y > 1.6 * leading and below > 1.25 * leading


def _space_above(lines: list[Line], i: int, leading: float) -> bool:
    """True when the line has visibly more space above it than the body leading (or starts a
    column or page, where that cannot be told)."""
    ln = lines[i]
    if i == 0 or ln.y is None:
        return ln.y is not None
    prev = lines[i - 1]
    if prev.page != ln.page or prev.y is None:
        return True
    d = prev.y - ln.y
    return d < 0 or d > 1.3 * leading


def _body_follows(lines: list[Line], i: int, stats: DocStats) -> bool:
    """The next line is ordinary prose: body font, not bold, several words."""
    if i + 1 >= len(lines):
        return False
    nxt = lines[i + 1]
    return (
        nxt.page == lines[i].page
        and not nxt.bold
        and abs(nxt.size - stats.body_size) < 1.0
        and len(nxt.text.split()) >= 6
    )


def _add_style_matches(
    lines: list[Line], heads: list[Heading], stats: DocStats, consumed: set[int]
) -> list[Heading]:
    """Unnumbered headings recognised by typography alone.

    * a line set exactly like the document's numbered headings (font and size), e.g. an
      unnumbered appendix title;
    * a bold line at body size standing on its own with space above and prose below, in the
      bold face the headings use (``PASCAL VOC`` under an appendix section).  These are the
      riskiest, so they must not look like a run-in label (no colon or final period), a table
      header (no bare numbers) or a caption.
    """
    styles: dict[tuple[str, float, bool], int] = {}
    families: set[str] = set()
    for h in heads:
        if h.number and not h.rest and h.style is not None:
            styles.setdefault(h.style, h.level)
            families.add(_family(h.style[0]))
    numbered = bool(styles)
    for h in heads:  # a known name (Introduction, References) set apart from the body
        if not h.number and not h.rest and h.style is not None and h.style not in styles:
            ln = lines[h.index]
            if ln.size >= stats.body_size + 0.8 or (ln.bold and ln.font != stats.body_font):
                styles[h.style] = 1
    if not heads:
        return heads
    leading = _leading(lines, stats)
    for st, lvl in _discover_styles(lines, heads, stats, consumed, leading, styles).items():
        styles.setdefault(st, lvl)
    if not styles:
        return heads
    taken = {h.index for h in heads} | consumed
    by_index = {h.index: h for h in heads}
    first = min(h.index for h in heads)
    extra: list[Heading] = []
    level_now = 1
    in_refs = False
    i = first
    while i < len(lines):
        if i in by_index:
            h = by_index[i]
            if h.number:
                level_now = h.level
            in_refs = h.title.lower() in ("references", "bibliography", "literature cited",
                                          "works cited")
        ln = lines[i]
        st = _style(ln)
        text = ln.text.strip()
        body_sized = abs(ln.size - stats.body_size) < 0.8
        base_ok = (
            i not in taken
            and plausible_title(text, numbered=False)
            and not table_row(ln)
            and not _breaks_a_word(lines, i)
            and len(text.split()) <= 12
            and not text.endswith((".", ":"))
            and not NUMBERED.match(text)
        )
        level = None
        if base_ok and st in styles and (
            not body_sized or ln.underlined
            # bold at body size, as the paper sets its known-name headings (Abstract,
            # Discussion), on a line of its own with prose below: Nature's and bioRxiv's style
            or (ln.all_bold and not numbered and _space_above(lines, i, leading)
                and _body_follows(lines, i, stats))
        ) and (
            ln.lead == text or ln.styled_share >= 0.8
        ) and (ln.font != stats.body_font or ln.bold or text.isupper() or ln.underlined
               or ln.size >= stats.body_size + LARGE_PT):
            level = styles[st]
            if level == 0:  # a style found by its layout alone, in a numbered paper
                level = min(level_now + 1, 4) if numbered else 1
        elif (
            base_ok
            and ln.bold
            and not in_refs
            and ln.all_bold
            and body_sized
            and len(text.split()) <= 8
            and _family(ln.font) in families
            and ":" not in text
            and not re.search(r"(?<![\w.])\d+(?![\w.])", text)
            and _space_above(lines, i, leading)
            and _body_follows(lines, i, stats)
        ):
            level = min(level_now + 1, 3)
        if level is None:
            i += 1
            continue
        span, title = _join_wrapped(lines, i, text, ln, stats, False)
        # "I.1. Architectures ..." (REVTeX under Roman sections): the number apart
        nm = _MIXED_NUMBER.match(title)
        number, title = (nm.group(1), nm.group(2)) if nm else ("", title)
        extra.append(Heading(i, span, number, _clean_title(title), level, "", st))
        i += span
    return sorted(heads + extra, key=lambda h: h.index)


def _distinct_face(ln: Line, stats: DocStats) -> bool:
    """The whole line is set apart from the body by weight, slant or size."""
    if ln.size < stats.body_size - 0.5:
        return False
    if ln.size >= stats.body_size + 0.8 and ln.font != stats.body_font:
        return True
    if ln.underlined or ln.size >= stats.body_size + LARGE_PT:
        return True  # a word processor's heading styles: underlined, or much larger type
    return ln.styled_share >= 0.8 and (ln.bold or (ln.italic and not stats.body_italic))


def _discover_styles(
    lines: list[Line], heads: list[Heading], stats: DocStats, consumed: set[int],
    leading: float, known: dict[tuple[str, float, bool], int],
) -> dict[tuple[str, float, bool], int]:
    """Heading styles a paper uses without numbers, found from its own layout.

    A candidate line stands on its own (space above, prose or another candidate below), is
    short, reads like a title and is set apart from the body by its face or size.  A style
    (font, size) is a heading style when it has at least two such lines and those lines hold
    most of the text ever set in it: a face also used for emphasis, table cells or figure
    labels fails that test.  Returns style → level; 0 means "one below the current numbered
    heading" (resolved by the caller), otherwise levels continue below the known styles,
    larger type first.
    """
    taken = {h.index for h in heads} | consumed
    refs_at = next((h.index for h in heads if _REFS_NAME.match(h.title)), len(lines))
    total: Counter[tuple[str, float]] = Counter()
    for ln in lines:
        for r in ln.runs:
            total[(r.font, round(r.size * 2) / 2)] += sum(c.isalpha() for c in r.text)

    def candidate(i: int) -> bool:
        ln = lines[i]
        text = ln.text.strip()
        return (
            i not in taken
            and i < refs_at
            and _distinct_face(ln, stats)
            and plausible_title(text, numbered=False)
            and not table_row(ln)
            and not _breaks_a_word(lines, i)
            and len(text.split()) <= 14
            and not text.endswith((".", ":"))
            and not NUMBERED.match(text)
        )

    found: dict[tuple[str, float, bool], list[int]] = {}
    for i in range(len(lines)):
        if not candidate(i) or not _space_above(lines, i, leading):
            continue
        below_ok = _body_follows(lines, i, stats) or (
            i + 1 < len(lines) and candidate(i + 1) and _body_follows(lines, i + 1, stats)
        )
        if below_ok:
            found.setdefault(_style(lines[i]), []).append(i)
    out: dict[tuple[str, float, bool], int] = {}
    accepted = []
    for st, idx in found.items():
        if st in known:
            continue
        chars = sum(sum(c.isalpha() for c in lines[i].text) for i in idx)
        if len(idx) >= 2 and chars >= 0.5 * max(total[st], 1):
            accepted.append((st, idx[0]))
    if any(h.number for h in heads):
        return {st: 0 for st, _ in accepted}
    top = max(known.values(), default=0)
    for n, (st, _) in enumerate(sorted(accepted, key=lambda a: (-a[0][1], a[1]))):
        out[st] = top + 1 + n
    return out


_REFS_NAME = re.compile(r"^(references|bibliography|literature cited|works cited)$", re.I)
