"""The evidence as the checks see it: a candidate passage (:class:`Evidence`), its sentences
(cut after glued footnote markers too), table-like text, and the stemmed content words a topic share
is measured with."""

from __future__ import annotations

import functools
import re

from ..text import STOP, stem, unligature, words
from .cues import NEG_CUES

_FOOTNOTE_BREAK = re.compile(r"(?<=[a-z)\]]\.)\d{1,2}(?=\s+[A-Z])")


@functools.lru_cache(maxsize=4096)
def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentences, also cut after a footnote marker glued to a period ("(2011).5 We ...")."""
    from ...pdf.passages import split_sentences

    out = []
    for a, b in split_sentences(text) or [(0, len(text))]:
        cuts = [m.end() for m in _FOOTNOTE_BREAK.finditer(text, a, b)]
        start = a
        for c in cuts:
            out.append((start, c))
            start = c
            while start < b and text[start].isspace():
                start += 1
        out.append((start, b))
    return [(x, y) for x, y in out if y > x]


@functools.lru_cache(maxsize=16384)
def tabular(sentence: str) -> bool:
    """Table text (cells, not prose): a quarter or more of its tokens are numbers or dashes."""
    toks = sentence.split()
    if len(toks) < 6:
        return False
    cells = sum(1 for t in toks if re.fullmatch(r"[-±]|[\d.,/%±]+[kKMB]?", t))
    return cells / len(toks) >= 0.25


def sentence_of(text: str, pos: int) -> tuple[int, int]:
    for a, b in sentence_spans(text):
        if a <= pos < b:
            return a, b
    return 0, len(text)


def stem_set(text: str) -> set[str]:
    return set(_stems_cached(text))


@functools.lru_cache(maxsize=32768)
def _stems_cached(text: str) -> frozenset[str]:

    # negation cues are a sentence's polarity, not its topic ("without" is no content word)
    return frozenset(stem(w) for w in words(unligature(text)) if w not in STOP and not w.isdigit()
                     and w not in NEG_CUES
                     and len(w) > 1)


def best_sentence(text: str, cterms: set[str], *, prose: bool = False) -> tuple[int, int, float]:
    """The sentence of ``text`` sharing the most of ``cterms``, and that share (``prose``:
    table text left out)."""
    best = (0, len(text), 0.0)
    for a, b in sentence_spans(text):
        if prose and tabular(text[a:b]):
            continue
        share = len(cterms & stem_set(text[a:b])) / (len(cterms) or 1)
        if share > best[2]:
            best = (a, b, share)
    return best


def claim_topic_share(claim: str, text: str) -> float:
    """Share of the claim's words (numbers left out) found in ``text``."""
    terms = stem_set(re.sub(r"\d", " ", claim))
    return len(terms & stem_set(text)) / (len(terms) or 1)
