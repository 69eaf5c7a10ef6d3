"""Quotes: a claim that copies a passage's sentence (or a clause-bounded part of one) word for word."""

from __future__ import annotations

import functools
import re

from ..text import normalize, unligature
from .cues import CLAUSE_BREAK

_QTOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:'t)?")
_HYPHEN_BREAK = re.compile(r"[^\W\d_]-\s+[a-z]")
_STOP_GAP = re.compile(r"[.!?;:\n\t]")  # a sentence, clause or table-cell end
_END_GAP = re.compile(r"[.!?;:,\n\t]")


@functools.lru_cache(maxsize=8192)
def _quote_tokens(text: str) -> tuple[tuple[str, int, int, bool, bool], ...]:
    """``text``'s words as ``(word, start, end, may_start, may_end)``: lower-cased, ligatures
    and quote marks folded, a word broken at a line end ("tempera- ture") joined; a quote may
    start where a sentence, clause (";", ":", a contrastive "while", "but" ...) or table cell
    starts, and end where one ends or at a comma."""
    text = normalize(text)  # one character for one: the offsets stay the text's
    raw = [(m.group(0), m.start(), m.end()) for m in _QTOKEN.finditer(text)]
    toks: list[list] = []
    for w, a, b in raw:
        if toks and _HYPHEN_BREAK.fullmatch(text[toks[-1][2] - 1:a + 1]):
            toks[-1][0] += w
            toks[-1][2] = b
            continue
        toks.append([w, a, b])
    words_ = [unligature(w).lower() for w, _a, _b in toks]
    out = []
    for k, (_w, a, b) in enumerate(toks):
        gap_before = text[toks[k - 1][2]:a] if k else "."
        gap_after = text[b:toks[k + 1][1]] if k + 1 < len(toks) else "."
        prev_break = k > 0 and words_[k - 1] in CLAUSE_BREAK and (
            k == 1 or re.search(r"[.!?;:,\n\t]", text[toks[k - 2][2]:toks[k - 1][1]]) is not None)
        may_start = bool(_STOP_GAP.search(gap_before)) or prev_break
        may_end = bool(_END_GAP.search(gap_after)) or (
            k + 1 < len(toks) and words_[k + 1] in CLAUSE_BREAK)
        out.append((words_[k], a, b, may_start, may_end))
    return tuple(out)


def verbatim_span(claim: str, text: str, *, min_words: int = 4) -> tuple[int, int] | None:
    """The span of ``text`` that ``claim`` copies word for word — a whole sentence, or a part
    of one from a sentence or clause start to a clause end ("X ranged from 29.7 to 48.3" of
    "X ranged from 29.7 to 48.3, while Y ...") — ignoring case, whitespace, punctuation,
    ligatures and words hyphenated across a line; ``None`` when there is none.  A quote cannot
    misstate its source: what it drops is a whole clause, never a "not" inside its own."""
    ct = [t[0] for t in _quote_tokens(claim)]
    if len(ct) < min_words:
        return None
    toks = _quote_tokens(text)
    m = len(ct)
    for i in range(len(toks) - m + 1):
        if toks[i][0] != ct[0] or not toks[i][3] or not toks[i + m - 1][4]:
            continue
        if all(toks[i + j][0] == ct[j] for j in range(1, m)):
            return toks[i][1], toks[i + m - 1][2]
    return None
