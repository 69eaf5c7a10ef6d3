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
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .pdftext import Line

NUMBERED = re.compile(
    r"^(?P<num>(?:\d{1,2}|[A-H])(?:\.\d{1,2}){0,3})(?P<dot>\.?)\s+(?P<title>\S.*)$"
)
APPENDIX_NUMBERED = re.compile(
    r"^(?:appendix|supplementary material)\s+(?P<num>[A-H](?:\.\d{1,2}){0,2})\s*[.:\-–—]?\s*(?P<title>\S.*)$",
    re.I,
)
KNOWN = re.compile(
    r"^(?P<name>abstract|introduction|related work|background|conclusions?|"
    r"conclusions? and future work|discussion|acknowledge?ments?|references|bibliography|"
    r"appendix|appendices|supplementary material|keywords|ccs concepts|limitations|"
    r"ethics statement|broader impact|index terms)\s*[.:]?$",
    re.I,
)
ABSTRACT_RUNIN = re.compile(r"^(abstract)\s*[.:\-–—]\s*(\S.*)$", re.I)
CAPTION = re.compile(r"^(fig(ure)?|table|algorithm|listing|proof|theorem|lemma|definition)\b", re.I)


@dataclass
class Heading:
    """A detected heading: where it starts, how many lines it spans, and how it is numbered."""

    index: int  # index of the heading's first line in the document's line list
    span: int  # number of lines the heading occupies (wrapped headings > 1)
    number: str
    title: str
    level: int
    rest: str = ""  # text after a run-in heading on its first line (belongs to the body)
    style: tuple[str, float] | None = None
    source: str = "text"  # "text" or "outline"


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

    @classmethod
    def of(cls, lines: list[Line]) -> DocStats:
        sizes: Counter[float] = Counter()
        fonts: Counter[str] = Counter()
        for ln in lines:
            sizes[round(ln.size * 2) / 2] += len(ln.text)
            fonts[ln.font] += len(ln.text)
        return cls(
            sizes.most_common(1)[0][0] if sizes else 10.0,
            fonts.most_common(1)[0][0] if fonts else "",
        )


def _family(font: str) -> str:
    base = font.split("+", 1)[-1]
    return re.split(r"[-,]", base)[0].rstrip("0123456789").lower()


def has_evidence(line: Line, title: str, stats: DocStats, *, run_in: bool = False) -> bool:
    """Typographic evidence that a line is set as a heading, not as body text."""
    letters = [c for c in title if c.isalpha()]
    upper = len(letters) >= 3 and all(c.isupper() for c in letters)
    if line.bold or line.size >= stats.body_size + 0.8 or upper:
        return True
    return run_in and line.font != stats.body_font and _family(line.font) != _family(
        stats.body_font
    )


def plausible_title(title: str, *, numbered: bool) -> bool:
    """Reject titles that are sentences, table rows, addresses or references."""
    t = title.strip()
    if not t or len(t) > 150:
        return False
    first_alpha = next((c for c in t if c.isalpha()), "")
    if not first_alpha or not (first_alpha.isupper() or t[0] in "[(\"“'"):
        return False
    if t[0].isdigit() and not re.match(r"^\d+[A-Za-z]", t):
        return False
    words = t.split()
    if len(words) > 16:
        return False
    if t.endswith((",", ";", "-")) or "@" in t or "http" in t.lower():
        return False
    chars = [c for c in t if not c.isspace()]
    alpha = sum(c.isalpha() for c in chars)
    if alpha < 0.6 * len(chars):
        return False
    if sum(bool(re.fullmatch(r"[\d.,%±]+", w)) for w in words) >= 2:
        return False
    if CAPTION.match(t):
        return False
    # a sentence that happens to start with a number: many lower-case function words and a
    # final period, e.g. "2 layers are used in all experiments."
    return not (t.endswith(".") and len(words) > 10)


def _clean_title(t: str) -> str:
    t = re.sub(r"\s+", " ", t).strip()
    if t.endswith(".") and not t.endswith(".."):
        t = t[:-1].rstrip()
    return t


def _style(line: Line) -> tuple[str, float]:
    return (line.font, round(line.size * 2) / 2)


def detect_headings(lines: list[Line]) -> list[Heading]:
    """Find the headings printed in ``lines`` (the whole document, in reading order)."""
    stats = DocStats.of(lines)
    heads: list[Heading] = []
    prev_num: tuple | None = None
    seen_refs = False
    consumed: set[int] = set()

    for i, ln in enumerate(lines):
        if i in consumed:
            continue
        text = ln.text.strip()
        lead = ln.lead
        run_in = bool(lead) and len(lead) < len(text) - 1 and text.startswith(lead)
        # -- numbered -------------------------------------------------------------------------
        m = APPENDIX_NUMBERED.match(text) or NUMBERED.match(text)
        if m:
            src = lead if run_in and NUMBERED.match(lead) else text
            mm = APPENDIX_NUMBERED.match(src) or NUMBERED.match(src)
            if mm:
                num = mm.group("num")
                title = mm.group("title")
                cand = number_parts(num)
                is_run_in = src is lead
                ok = (
                    plausible_title(title, numbered=True)
                    and has_evidence(ln, title, stats, run_in=is_run_in)
                    and fits_after(prev_num, cand, letters_ok=True)
                    and (not isinstance(cand[0], str) or len(cand) > 1 or seen_refs or
                         ln.bold or ln.size >= stats.body_size + 0.8 or title.isupper())
                )
                if ok:
                    span, title = _join_wrapped(lines, i, title, ln, stats, is_run_in)
                    for k in range(i + 1, i + span):
                        consumed.add(k)
                    rest = text[len(lead):].strip() if is_run_in else ""
                    heads.append(
                        Heading(i, span, num, _clean_title(title), len(cand), rest, _style(ln))
                    )
                    prev_num = cand
                    continue
        # -- well-known unnumbered names ----------------------------------------------------
        k = KNOWN.match(text)
        if k and (has_evidence(ln, text, stats) or ln.font != stats.body_font):
            name = _clean_title(text.rstrip(":"))
            if name.lower() in ("references", "bibliography"):
                seen_refs = True
            heads.append(Heading(i, 1, "", name, 1, "", _style(ln)))
            continue
        a = ABSTRACT_RUNIN.match(text)
        if a and not heads and (ln.bold or lead.lower().startswith("abstract")):
            heads.append(Heading(i, 1, "", a.group(1), 1, a.group(2), _style(ln)))
            continue
    heads = _add_style_matches(lines, heads, stats, consumed)
    return heads


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
        if nxt.page != ln.page or _style(nxt) != style or nxt.lead != nxt.text.strip():
            break
        if nxt.font == stats.body_font and round(nxt.size) == round(stats.body_size):
            break
        if NUMBERED.match(nxt.text) or KNOWN.match(nxt.text):
            break
        if len(nxt.text.split()) > 12:
            break
        title = f"{title} {nxt.text.strip()}"
        span += 1
    return span, title


def _add_style_matches(
    lines: list[Line], heads: list[Heading], stats: DocStats, consumed: set[int]
) -> list[Heading]:
    """Unnumbered lines set exactly like the document's numbered headings become headings."""
    styles: dict[tuple[str, float], int] = {}
    for h in heads:
        if h.number and not h.rest and h.style is not None:
            styles.setdefault(h.style, h.level)
    if not heads or not styles:
        return heads
    taken = {h.index for h in heads} | consumed
    first = min(h.index for h in heads)
    extra: list[Heading] = []
    i = first
    while i < len(lines):
        ln = lines[i]
        st = _style(ln)
        text = ln.text.strip()
        if (
            i in taken
            or st not in styles
            or ln.lead != text
            or (ln.font == stats.body_font and not ln.bold and not text.isupper())
            or not plausible_title(text, numbered=False)
            or len(text.split()) > 12
            or text.endswith((".", ":"))
            or NUMBERED.match(text)
        ):
            i += 1
            continue
        span, title = _join_wrapped(lines, i, text, ln, stats, False)
        extra.append(Heading(i, span, "", _clean_title(title), styles[st], "", st))
        i += span
    return sorted(heads + extra, key=lambda h: h.index)
