"""A paper's reference list, read into entries: authors, title, year, venue, arXiv id, DOI.

Input is the text of the sections the splitter marks ``kind == "references"``; the lines of an
entry are often joined with the next entry's (two columns, a short last line), so entries are
found by the list's own markers, in this order of evidence:

* **Numbered lists** (``[12] ...``, ``12. ...``): a marker counts only when it continues the
  count (1, 2, 3 ...), so "[3]" inside a title or "5." in a page range never cuts an entry.
* **Author-year lists** (ACL, APA, NeurIPS): an entry starts at a line start, or after an
  entry's end (a year, a page range, a venue, a URL, then a full stop), where an author list
  begins ("Jacob Devlin, Ming-Wei Chang, and ..." / "Bengio, Y., Simard, P., ..."); every entry
  must hold a year, so a sentence of a long title is never taken for an entry of its own.

The fields follow the entry's style, by form: an IEEE title is the quoted span; an ACL entry is
``Authors. YEAR. Title. Venue``; an APA one ``Authors (YEAR). Title. Venue``; the NeurIPS /
Vancouver form ``Authors. Title. Venue, YEAR``.  Precision first: a field that cannot be read
by one of these forms is left empty rather than guessed, and resolution to ingested papers
(:mod:`episteme.query.citations`) needs a title (or an id) to match.

Tuning: the bounds below were set on the 16 shared papers' reference lists
(``benchmarks/bench_citations.py``: entries with title and year, and the citation matrix).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import asdict, dataclass, field

#: a year a reference can print (a publication year, not a page number or a count)
YEAR = re.compile(r"(?<![\d/.:-])((?:1[89]\d|20[0-4])\d)(?:[a-z])?(?![\d])")
ARXIV = re.compile(r"(?:arXiv[:\s]*|abs/|arxiv\.org/abs/)\s*(\d{4}\.\d{4,5})(?:v\d+)?", re.I)
DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>,;]+[^\s\"<>,;.)\]])")
BRACKET = re.compile(r"\[(\d{1,3})\]\s+")
DOTTED = re.compile(r"(?:^|(?<=\s))(\d{1,3})\.\s+(?=\S)", re.M)
#: the start of an author list: "Jacob Devlin," / "J. Devlin," / "Devlin, J.," / "Devlin J,"
_NAME = r"(?:[A-Z][\w'’\-]+|[A-Z]\.(?:\s?[A-Z]\.)*)"
AUTHOR_START = re.compile(
    rf"(?<![\w.’'\-])(?:{_NAME}(?:\s+(?:{_NAME}|van|von|de|der|den|di|da|la|le))*,\s+(?:[A-Z]|and\b)"
    rf"|{_NAME}\s+(?:{_NAME}\s+)*(?:and|&)\s+{_NAME}"
    rf"|[A-Z][\w'’\-]+,\s+[A-Z]\.)")
#: what ends an entry before the next one starts: a year, pages, a venue or URL, then "."
ENTRY_END = re.compile(r"(?:\d{4}[a-z]?|\d+[–-]\d+|[A-Za-z)’']{2,}|\.pdf|\d)\.\s+$")
#: Vancouver authors (PLOS, medicine): "Farooq M, Bramley H, Palta J." (initials unpunctuated)
VANCOUVER = re.compile(r"((?:[A-Z][\w'’\-]+(?: [a-z]+)?(?: [A-Z][\w'’\-]+)? [A-Z]{1,3}, )*"
                       r"[A-Z][\w'’\-]+(?: [A-Z][\w'’\-]+)? [A-Z]{1,3}(?:, et al)?)\.\s+(?=[A-Z0-9])")
MIN_ENTRY_CHARS = 25
MAX_ENTRY_CHARS = 1200


@dataclass(frozen=True)
class Reference:
    """One entry of a reference list, as printed; empty fields were not readable by form."""

    raw: str
    number: str | None = None
    authors: list[str] = field(default_factory=list)
    title: str | None = None
    year: int | None = None
    venue: str | None = None
    arxiv: str | None = None
    doi: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Lower-case letters and digits only, accents removed: the key titles are matched by
    ("Pre-training" = "Pretraining", "Rocktäschel" = "Rocktaschel", line-end hyphens gone)."""
    t = unicodedata.normalize("NFKD", text or "")
    return "".join(c for c in t.lower() if c.isalnum() and not unicodedata.combining(c))


def _clean(text: str) -> str:
    t = re.sub(r"\s+", " ", text or "").strip()
    return t


def _numbered(text: str, rx: re.Pattern[str]) -> list[tuple[str, str]] | None:
    """Entries cut at markers that continue the count from 1; None when the list is not so."""
    cuts: list[tuple[int, int, str]] = []
    expect = 1
    for m in rx.finditer(text):
        n = int(m.group(1))
        if n == expect:
            cuts.append((m.start(), m.end(), m.group(1)))
            expect += 1
    if len(cuts) < 3:
        return None
    out = []
    for i, (_, end, num) in enumerate(cuts):
        stop = cuts[i + 1][0] if i + 1 < len(cuts) else len(text)
        out.append((num, _clean(text[end:stop])))
    return out


def _author_year(text: str) -> list[str]:
    """Entries of an unnumbered list: cut at line starts and at in-line author-list starts that
    follow an entry's end; pieces without a year are glued to the entry before them."""
    pieces: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        start = 0
        for m in AUTHOR_START.finditer(line):
            if m.start() <= start + MIN_ENTRY_CHARS:
                continue
            head = line[start:m.start()]
            if ENTRY_END.search(head) and YEAR.search(head):
                pieces.append(head.strip())
                start = m.start()
        pieces.append(line[start:].strip())
    entries: list[str] = []
    for p in pieces:
        starts_entry = bool(AUTHOR_START.match(p)) or bool(re.match(r"[A-Z]", p))
        if entries and (not YEAR.search(entries[-1]) or not starts_entry
                        or len(p) < MIN_ENTRY_CHARS):
            entries[-1] = f"{entries[-1]} {p}"
        else:
            entries.append(p)
    return [_clean(e) for e in entries]


def split_entries(text: str) -> list[tuple[str | None, str]]:
    """``(number or None, entry text)`` for each entry of a reference list."""
    text = (text or "").replace("\r", "")
    for rx in (BRACKET, DOTTED):
        got = _numbered(text, rx)
        if got:
            return [(n, e) for n, e in got if len(e) >= 5]
    return [(None, e) for e in _author_year(text) if len(e) >= MIN_ENTRY_CHARS]


def _year(raw: str) -> int | None:
    for rx in (r"\(((?:1[89]|20)\d\d)[a-z]?\)", r"(?:^|[.,;]\s)((?:1[89]|20)\d\d)[a-z]?\.",
               r"[,;]\s*((?:1[89]|20)\d\d)[a-z]?[.;:]"):
        m = re.search(rx, raw)
        if m and YEAR.fullmatch(m.group(1)):
            return int(m.group(1))
    years = [int(m.group(1)) for m in YEAR.finditer(raw)]
    if years:
        return years[-1]
    short = re.search(r"[’'](\d\d)\b", raw)  # IEEE venue years: "in CCS’10"
    if short:
        n = int(short.group(1))
        return 2000 + n if n <= 40 else 1900 + n
    return None


def _split_authors(text: str) -> list[str]:
    t = re.sub(r"\s+", " ", text).strip().rstrip(".,")
    t = re.sub(r",?\s+(?:and|&)\s+", ", ", t)
    t = re.sub(r"\bet al\b\.?", "", t).strip().rstrip(",")
    parts = [p.strip() for p in t.split(",") if p.strip()]
    out: list[str] = []
    for p in parts:
        # "Bengio, Y." -> one name from two parts; an initials-only part joins the surname before
        if out and re.fullmatch(r"(?:[A-Z]\.?\s?-?){1,4}", p) and " " not in out[-1].strip():
            out[-1] = f"{p} {out[-1]}".strip()
        else:
            out.append(p)
    return [a for a in out if 1 < len(a) <= 60 and any(c.isalpha() for c in a)]


def _sentence_end(text: str, start: int = 0) -> int:
    """Index of the full stop (or ?/!) that ends the field starting at ``start``: not an
    initial ("J."), not an abbreviation inside a name list, not a decimal."""
    for m in re.finditer(r"[.?!](?=\s|$)", text[start:]):
        i = start + m.start()
        word = re.search(r"(\S+)$", text[:i])
        w = word.group(1) if word else ""
        if w.lower() == "al" and text[:i].rstrip().lower().endswith("et al"):
            return i  # "et al." closes an author list
        if text[i] == "." and (re.fullmatch(r"[A-Z]|[A-Z]\.[A-Z]|[A-Z]\.-[A-Z]", w)
                               or w.lower() in {"vs", "proc", "no", "vol", "pp", "ed", "eds",
                                                "inc", "st", "jr", "dr", "e.g", "i.e"}):
            continue
        return i
    return -1


def parse_entry(raw: str, number: str | None = None) -> Reference:
    """Fields of one entry by its form (see the module docstring)."""
    raw = _clean(raw)
    arxiv = ARXIV.search(raw)
    doi = DOI.search(raw)
    year = _year(raw)
    authors: list[str] = []
    title = venue = None
    vancouver = VANCOUVER.match(raw)
    quoted = re.search(r"[“\"]([^”\"]{6,300}?)[,.]?[”\"]", raw)
    acl = re.match(r"(.{3,600}?)\.\s+((?:1[89]|20)\d\d)[a-z]?\.\s+(.+)$", raw)
    apa = re.match(r"(.{3,600}?)\s*\(((?:1[89]|20)\d\d)[a-z]?\)\.?\s+(.+)$", raw)
    if quoted:  # IEEE: Authors, “Title,” in Venue, year.
        authors = _split_authors(raw[: quoted.start()])
        title = quoted.group(1)
        venue = raw[quoted.end():].strip(" ,.") or None
    elif acl or apa:
        m = acl or apa
        authors = _split_authors(m.group(1))
        rest = m.group(3)
        end = _sentence_end(rest)
        title = rest[: end + (1 if end >= 0 and rest[end] in "?!" else 0)] if end > 0 else rest
        venue = rest[end + 1:].strip(" .") if end > 0 else None
    elif vancouver and not re.match(r"[A-Z][\w'’\-]+(?:,| and |\.\s)", raw[vancouver.end():]):
        # Surname AB, Surname C. Title. Journal. Year; vol: pages.  ("Alan M. Turing." is not:
        # a name goes on after the initial)
        authors = _split_authors(vancouver.group(1))
        rest = raw[vancouver.end():].strip()
        end = _sentence_end(rest)
        title = rest[: end + (1 if end >= 0 and rest[end] in "?!" else 0)] if end > 0 else None
        venue = rest[end + 1:].strip(" .") if end > 0 else None
    else:  # Authors. Title. Venue, YEAR.
        end = _sentence_end(raw)
        if end > 0:
            authors = _split_authors(raw[:end])
            rest = raw[end + 1:].strip()
            end2 = _sentence_end(rest)
            title = rest[: end2 + (1 if end2 >= 0 and rest[end2] in "?!" else 0)] if end2 > 0 else None
            venue = rest[end2 + 1:].strip(" .") if end2 > 0 else None
    if title:
        title = re.sub(r",\s*(?:1[89]|20)\d\d[a-z]?$", "", title.strip(" .,“”\"")).strip(" .,")
        if len(title) < 4 or YEAR.fullmatch(title):
            title = None
    if venue:
        venue = re.sub(r",?\s*(?:1[89]|20)\d\d[a-z]?\.?$", "", venue).strip(" .,") or None
        venue = venue[:200] if venue else None
    return Reference(raw=raw[:MAX_ENTRY_CHARS], number=number, authors=authors[:50], title=title,
                     year=year, venue=venue,
                     arxiv=arxiv.group(1) if arxiv else None,
                     doi=doi.group(1) if doi else None)


def parse_references(text: str) -> list[Reference]:
    """Every entry of a reference list's text, in order."""
    return [parse_entry(raw, number) for number, raw in split_entries(text)]
