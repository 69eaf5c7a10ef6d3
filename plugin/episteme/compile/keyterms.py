"""Key terms of sections and the "same topic" evidence the ingest plan shows the agent.

Why not the embedding similarity alone: in a one-topic wiki every section is close to every
other one in embedding space (a Conclusion scored 0.63 against an LSTM section), so a cosine
threshold says little.  What an agent can check is *which* specific terms two sections share:
``shared_terms`` lists them, and ``score`` is the TF-IDF cosine of the two sections' term
vectors (unigrams and bigrams, IDF over every section in view), which is near 0 for sections
that share only common vocabulary.  Pure Python over text already in memory: the plan needs
no embedder and no Chroma, and answers in well under a second on a wiki of hundreds of sections.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ..query.text import KEYTERM_STOP

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]|[A-Za-z]")
# Function words and the scaffolding of scientific prose: they carry no topic (the one list
# and its named difference live with the query layer's stop words).
_STOP = KEYTERM_STOP


def tokens(text: str) -> list[str]:
    """Lower-case content words (hyphenated compounds kept), numbers and stop words dropped."""
    out = []
    for m in _WORD.finditer(text):
        w = m.group(0).lower().strip("-")
        if len(w) > 2 and w not in _STOP:
            out.append(w)
    return out


def terms(text: str) -> Counter:
    """Unigram and adjacent-bigram counts of ``text`` (bigrams name concepts: "layer norm")."""
    toks = tokens(text)
    c = Counter(toks)
    c.update(f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False) if a != b)
    return c


class TermSpace:
    """TF-IDF over a set of documents (paper sections and wiki sections together)."""

    def __init__(self, docs: Mapping[str, str]):
        self.counts = {k: terms(v) for k, v in docs.items()}
        df: Counter = Counter()
        for c in self.counts.values():
            df.update(c.keys())
        n = max(1, len(self.counts))
        self.idf = {t: math.log((1 + n) / (1 + d)) + 1.0 for t, d in df.items()}
        self.vectors = {k: self._weigh(c) for k, c in self.counts.items()}

    def _weigh(self, c: Counter) -> dict[str, float]:
        v = {t: (1 + math.log(f)) * self.idf.get(t, 1.0) for t, f in c.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {t: x / norm for t, x in v.items()}

    def key_terms(self, key: str, n: int = 8) -> list[str]:
        """The ``n`` most distinctive terms of one document (a bigram hides its own words)."""
        v = self.vectors.get(key, {})
        ranked = sorted(v, key=lambda t: (-v[t], t))
        out: list[str] = []
        for t in ranked:
            if any(t in o.split() for o in out if " " in o):
                continue
            out.append(t)
            if len(out) == n:
                break
        return out

    def compare(self, a: str, b: str, n: int = 6) -> tuple[float, list[str]]:
        """``(cosine, shared terms best first)`` of two documents."""
        va, vb = self.vectors.get(a, {}), self.vectors.get(b, {})
        if len(va) > len(vb):
            va, vb = vb, va
        shared = {t: va[t] * vb[t] for t in va if t in vb}
        score = sum(shared.values())
        best = sorted(shared, key=lambda t: (-shared[t], t))
        top: list[str] = []
        for t in best:
            if any(t in o.split() for o in top if " " in o):
                continue
            top.append(t)
            if len(top) == n:
                break
        return round(score, 3), top

    def nearest(self, key: str, candidates: Iterable[str], k: int) -> list[tuple[str, float, list[str]]]:
        """The ``k`` candidates with the highest cosine to ``key`` (score > 0 only)."""
        scored = []
        for c in candidates:
            s, shared = self.compare(key, c)
            if s > 0:
                scored.append((c, s, shared))
        scored.sort(key=lambda x: (-x[1], x[0]))
        return scored[:k]


def title_names_topic(title: str, key: Sequence[str]) -> bool:
    """Whether a heading names what its text is about: one of its content words is among the
    text's distinctive terms (``key``, best first, ~20).  "Multi-Head Attention" over a text
    about attention heads does; "Hardware and Schedule" or "Reading" over a text whose
    distinctive terms are GPUs, steps, read heads does not: such a heading organises the paper,
    it does not name a topic page."""
    title_words = set(tokens(title))
    title_words |= {p for w in title_words for p in w.split("-") if len(p) > 2}
    key_words = {w for t in key for w in t.split()}
    key_words |= {p for w in key_words for p in w.split("-") if len(p) > 2}
    return bool(title_words & key_words)


def topic_name(key: Sequence[str]) -> str | None:
    """A short topic name from key terms: the best bigram (a concept: "positional encodings"),
    else the best single term."""
    for t in key:
        if " " in t:
            return t
    return key[0] if key else None
