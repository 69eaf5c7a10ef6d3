"""Sentence-aware passage windows sized to the embedding model.

all-MiniLM-L6-v2 silently drops everything past 256 word pieces, so a section is never embedded
as one vector: it is cut into windows of whole sentences that stay under ``max_tokens`` word
pieces (as counted by the caller's tokenizer), with a sentence of overlap so a claim that spans
a window edge is still found.  Every passage keeps its character span in the section text, so
the tracer can quote it exactly and name its page.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# Words after which a period does not end a sentence (lower-cased, without the period).
ABBREVIATIONS = frozenset(
    (
        "al", "e.g", "i.e", "cf", "vs", "fig", "figs", "eq", "eqs", "eqn", "sec", "secs", "tab",
        "tabs", "ref", "refs", "no", "nos", "vol", "pp", "ch", "chap", "def", "thm", "prop", "alg",
        "appx", "approx", "resp", "dr", "mr", "mrs", "ms", "prof", "jr", "sr", "inc", "ltd",
        "corp", "dept", "univ", "eds", "viz", "ca", "incl",
    )
)

#: A sentence ends at terminal punctuation (closing quotes and brackets included) before a
#: space, at a line break, after a display equation's label ("... V (1) The two ...": the
#: label closes the equation), or after a footnote mark glued to a full stop ("... library.1
#: Because ..."): PDF text prints both without the space a boundary needs.
_BOUNDARY = re.compile(r"[.?!][\"”’')\]]*(?=\s+)|\n+|(?<=\s)(?P<label>\(\d{1,3}[a-z]?\))(?=\s+[A-Z])"
                       r"|(?<=[a-z][a-z]\.)(?P<mark>\d{1,2})(?=\s+[A-Z][a-z])")
_NEXT_START = re.compile(r"\s+([\"“‘(\[]*[A-Z0-9])")
#: What the text before an equation label looks like: formula signs, not words.  An
#: enumeration's "(2) We show ..." follows prose ("...; (2)"), and stays one sentence.
_FORMULA_TAIL = re.compile(r"[=+−×·√∑∏∫≤≥∈∼^_|]|\)\s*$")


@dataclass
class Passage:
    text: str
    char_start: int
    char_end: int
    page: int


def _is_boundary(text: str, end: int, m: re.Match | None = None) -> bool:
    """Whether the punctuation ending at ``end`` (the :data:`_BOUNDARY` match ``m``) closes a
    sentence."""
    if text[end - 1] == "\n":
        return True
    if m is not None and m.group("label"):
        # an equation's label: the formula before it (on its line) has formula signs
        tail = text[max(0, text.rfind("\n", 0, m.start()) + 1, m.start() - 40):m.start()]
        return bool(tail.strip()) and bool(_FORMULA_TAIL.search(tail))
    if m is not None and m.group("mark"):
        k = m.start() - 1  # the full stop
        w = k
        while w > 0 and not text[w - 1].isspace() and text[w - 1] not in "([":
            w -= 1
        return text[w:k].lower() not in ABBREVIATIONS
    m = _NEXT_START.match(text, end)
    if not m:
        return False
    j = end - 1
    while j >= 0 and text[j] in "\"”’')]":
        j -= 1
    if text[j] != ".":
        return True
    k = j
    while k > 0 and not text[k - 1].isspace() and text[k - 1] not in "([":
        k -= 1
    word = text[k:j].lower().lstrip("\"“‘(")
    if word in ABBREVIATIONS:
        return False
    # an initial ("J. Smith", "A. Vaswani"): a single capital letter before the period
    if re.fullmatch(r"[A-Z]", text[k:j]):
        return False
    # "Fig. 3", "Eq. 2", "No. 5": an abbreviation followed by a number never ends a sentence
    return not (word in ("fig", "figs", "eq", "eqs", "sec", "tab", "no") and m.group(1).isdigit())


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` in ``text``, leading/trailing whitespace excluded."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end()
        if not _is_boundary(text, end, m):
            continue
        _add_span(text, start, end, spans)
        start = end
    _add_span(text, start, len(text), spans)
    return spans


def _add_span(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append((start, end))


def _cut_long(text: str, span: tuple[int, int], count: Callable[[str], int], limit: int) -> list[
    tuple[int, int]
]:
    """Cut one over-long sentence at word boundaries into pieces of at most ``limit`` tokens."""
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text[span[0]:span[1]])]
    pieces: list[tuple[int, int]] = []
    i = 0
    while i < len(words):
        j = i + 1
        # grow greedily; counting the candidate piece keeps the result exact for any tokenizer
        while j < len(words) and count(text[span[0] + words[i][0]:span[0] + words[j][1]]) <= limit:
            j += 1
        start, end = span[0] + words[i][0], span[0] + words[j - 1][1]
        if j == i + 1 and count(text[start:end]) > limit:
            pieces.extend(_cut_word(text, start, end, count, limit))
        else:
            pieces.append((start, end))
        i = j
    return pieces


def _cut_word(text: str, start: int, end: int, count: Callable[[str], int], limit: int) -> list[
    tuple[int, int]
]:
    """Cut one enormous 'word' (a URL, a base64 blob, a run of symbols) by characters."""
    pieces = []
    while start < end:
        lo, hi = start + 1, end
        while lo < hi:  # the longest prefix that fits
            mid = (lo + hi + 1) // 2
            if count(text[start:mid]) <= limit:
                lo = mid
            else:
                hi = mid - 1
        pieces.append((start, lo))
        start = lo
    return pieces


def make_passages(
    section,
    count_tokens: Callable[[str], int],
    *,
    max_tokens: int = 200,
    overlap_sentences: int = 1,
) -> list[Passage]:
    """Windows of whole sentences of ``section.text``, each ≤ ``max_tokens`` tokens."""
    text: str = section.text
    units: list[tuple[int, int]] = []
    for sp in split_sentences(text):
        if count_tokens(text[sp[0]:sp[1]]) <= max_tokens:
            units.append(sp)
        else:
            units.extend(_cut_long(text, sp, count_tokens, max_tokens))
    out: list[Passage] = []
    i = 0
    while i < len(units):
        j = i + 1
        while j < len(units) and count_tokens(text[units[i][0]:units[j][1]]) <= max_tokens:
            j += 1
        start, end = units[i][0], units[j - 1][1]
        out.append(Passage(text[start:end], start, end, section.page_at(start)))
        if j >= len(units):
            break
        # overlap: start the next window a few sentences back, but always move forward
        i = max(i + 1, j - overlap_sentences) if overlap_sentences > 0 else j
    return out
