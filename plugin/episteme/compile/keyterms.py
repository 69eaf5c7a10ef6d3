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


# ------------------------------------------------------------------ "same topic" evidence

#: How many specific shared terms make a related section worth showing (the plan's
#: ``related``): one name or phrase both texts use is enough when it is specific; tuned on
#: hand-labelled pairs (benchmarks/RESULTS-plan.md).
MIN_EVIDENCE = 1
#: a shared phrase is evidence when written out in both texts this many times in all (once
#: each is the common phrasing of the field: "performance comparable", "network reads")
PHRASE_REPEATS = 3


def _name_like(term: str, text: str) -> bool:
    """Whether ``term`` (one lower-case word) is written as a name in ``text``: an acronym or
    a capitalised word inside sentences ("Transformer", "BLEU", "WMT", "Adam"), most of the
    times it occurs there -- not a common word that only starts sentences, nor a word of a
    heading set in capitals ("NEURAL MACHINE TRANSLATION")."""
    hits = named = 0
    for m in re.finditer(rf"(?<![A-Za-z0-9-]){re.escape(term)}(?![A-Za-z0-9-])", text, re.IGNORECASE):
        hits += 1
        word = m.group(0)
        if word.islower() or not _NAME_FORM.match(word):
            continue  # "xTx", "Ua": formula debris, not a name
        before = text[max(0, m.start() - 12):m.start()].rstrip(" \t>\"'\u201c\u2018([*-")
        if not before or before[-1] in ".!?:;\n" or m.start() <= 12 and len(before) < 2:
            continue  # a sentence's (or a quote's, or a line's) first word is capitalised anyway
        if _FORMULA.search(text[max(0, m.start() - 6):m.end() + 6]):
            continue  # inside a formula: "Uzsi-1 + Czci"
        if word.isupper() and (_CAPS_WORD.search(text[max(0, m.start() - 40):m.start()])
                               or _CAPS_WORD.match(text[m.end():m.end() + 40].lstrip(" :-\u2013"))):
            continue  # a word of a heading in capitals, not an acronym
        named += 1
    return hits > 0 and named * 2 >= hits


#: a name as printed: an acronym ("BLEU", "WMT", "GloVe" not) or a capitalised word of 4+ letters
_NAME_FORM = re.compile(r"^(?:[A-Z]{2,8}s?|[A-Z][a-z]{3,})$")
_LINK = re.compile(r"\[\[[^\]\n]*\]\]")
_FORMULA = re.compile(r"[=+\u2212\u2208\u00d7^_\\]")
_CAPS_WORD = re.compile(r"(?:^|(?<=\s))[A-Z]{3,}(?=[\s:]*$)|^[A-Z]{3,}\b")


def _cited_name(term: str, text: str) -> bool:
    """Whether ``term`` is an author's name in a citation ("Cho et al.", "Graves, 2013")."""
    return re.search(rf"(?<![A-Za-z]){re.escape(term)}(?:\s+et\s+al|\s+and\s+[A-Z]\w+)?[\s,.]*\(?(?:19|20)\d\d",
                     text, re.IGNORECASE) is not None or re.search(
        rf"(?<![A-Za-z]){re.escape(term)}\s+et\s+al\b", text, re.IGNORECASE) is not None


def _literal_phrase(term: str, text: str) -> int:
    """How often the two words of ``term`` stand next to each other in ``text`` (a space or a
    hyphen between them): the key terms' bigrams skip stop words, so "account of the past"
    counts as "account past", which names nothing."""
    a, b = term.split(" ", 1)
    return len(re.findall(rf"(?<![A-Za-z0-9]){re.escape(a)}[\s-]+{re.escape(b)}(?![A-Za-z0-9])", text,
                          re.IGNORECASE))


def specific_terms(shared: Iterable[str], text_a: str, text_b: str, n: int = 5) -> list[str]:
    """The shared terms that say two texts are about the same thing, not that they are written
    in the same field: a phrase both texts write out, one of them more than once ("machine
    translation", "multi-head attention"), a word with a digit or a hyphen ("seq2seq", "self-attention"), or a word
    written as a name in both texts ("Transformer", "BLEU").  Generic words such as
    "account, call, past, step" are none of these.  At most ``n``, in the given order."""
    text_a, text_b = _LINK.sub(" ", text_a), _LINK.sub(" ", text_b)  # a link's label is no use
    out: list[str] = []
    for t in shared:
        if " " in t:  # a phrase: written out in both, and repeated in one (a topic recurs)
            na, nb = _literal_phrase(t, text_a), _literal_phrase(t, text_b)
            ok = na > 0 and nb > 0 and na + nb >= PHRASE_REPEATS
        elif _cited_name(t, text_a) or _cited_name(t, text_b):
            ok = False  # "Cho et al. (2014)": both cite one author, which is not one topic
        else:
            ok = (any(ch.isdigit() for ch in t) or "-" in t.strip("-")
                  or _name_like(t, text_a) and _name_like(t, text_b))  # a name is one in both
        if ok and not any(t in o.split() for o in out if " " in o):
            out.append(t)
            if len(out) == n:
                break
    return out


def names_shared_topic(title: str, shared: Iterable[str]) -> bool:
    """Whether a content word of a wiki section's ``title`` is among the terms it shares with
    a paper section (plural and hyphen folded: "Self-Attention" ~ "selfattention"): the topic
    the section is named for is in both texts.  Measured with :func:`specific_terms` on
    hand-labelled pairs (benchmarks/RESULTS-plan.md): precision 0.16 -> 0.22 at the same recall."""
    def stems(words: Iterable[str]) -> set[str]:
        return {w.rstrip("s").replace("-", "") for w in words}

    return bool(stems(tokens(title)) & stems(w for t in shared for w in t.split()))
