"""Which of a paper section's sentences the offline writer quotes: the quotable ones
(:func:`candidate_sentences`), ranked by centrality (:func:`rank_sentences`), and chosen by
role -- central sentences, definitions, results and key numbers, explanations --
within a word budget (:func:`choose_sentences`, roles from :mod:`episteme.compile.roles`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..paper import PaperSection

EXTRA_DEFINITIONS = 2  # definitions of the section's key terms, beyond the central sentences
EXTRA_NUMBERS = 3  # results and key numbers, beyond the central sentences
EXTRA_EXPLANATIONS = 2  # reasons and mechanisms ("this is because ..."), beyond the central sentences
EXTRA_BUDGET = 110  # words of definitions and numbers per written section (a readable length)
EXPLAIN_BUDGET = 45  # words of explanations per written section, beside EXTRA_BUDGET
FILL_SENTENCES = 2  # central sentences beyond TOPIC_SENTENCES when the budget has room
TOPIC_SENTENCES = 3  # central sentences of a topic section
_SENT_BAD = re.compile(r"\[\[|\]\]|<!--|-->|`|\*|\||~~~|https?:|www\.|@|\\")
_CAPTION_RE = re.compile(r"(^|\s)(Figure|Fig\.|Table|Algorithm)\s*\d+\s*[:.]", re.IGNORECASE)
LEAD_BONUS = 0.06  # the first sentences of a section tend to state its point
LENGTH_BONUS = 0.03  # for sentences of 15-45 words: informative but still quotable
META_PENALTY = 0.1  # sentences about the paper's own structure say little about the topic
_META_RE = re.compile(
    r"^(We now|Now we|In this (section|paper|work)|This (section|paper)|The rest of|As (shown|described|discussed)"
    r"|Next,|Finally,|Here,? we|Below|Above|See |We (first|then) (describe|present|introduce))\b",
)


# ----------------------------------------------------------------------------- sentences


def candidate_sentences(text: str) -> list[str]:
    """The quotable sentences of a section, in order, whitespace normalised.

    Kept: 8-70 words, 50-420 characters, mostly letters, starting with a capital (or a quote)
    and ending with sentence punctuation.  Dropped: captions, formulas and table debris, URLs,
    e-mail addresses and anything that could be read as wiki markup.
    """
    from ..pdf.passages import split_sentences

    out: list[str] = []
    for start, end in split_sentences(text):
        s = " ".join(text[start:end].split())
        if not 50 <= len(s) <= 420:
            continue
        words = s.split()
        if not 8 <= len(words) <= 70:
            continue
        if not (s[0].isupper() or s[0] in "\"“‘'") or s[-1] not in ".!?\"”’'":
            continue
        if _SENT_BAD.search(s) or _CAPTION_RE.search(s):
            continue
        letters = sum(ch.isalpha() for ch in s)
        if letters / max(1, sum(not ch.isspace() for ch in s)) < 0.8:
            continue
        if sum(len(w) == 1 and w.isalpha() for w in words) > len(words) // 4:  # math symbols
            continue
        out.append(s)
    return out


@dataclass
class SectionKeys:
    """A section's ranked sentences: ``sentences`` in document order with their centrality."""

    section: PaperSection
    sentences: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    vectors: Any = None  # np.ndarray (n, dim)

    def top(self, n: int) -> list[str]:
        """The ``n`` most central sentences, back in document order (ties: earlier first)."""
        order = sorted(range(len(self.sentences)), key=lambda i: (-round(self.scores[i], 6), i))[:n]
        return [self.sentences[i] for i in sorted(order)]


def rank_sentences(sections: list[PaperSection], embedder) -> dict[str, SectionKeys]:
    """Candidate sentences of every section scored for a summary (one embedding batch): cosine
    to the section's mean sentence vector (centrality), plus small bonuses for leading position
    and a comfortable length, minus a penalty for sentences about the paper's own structure
    ("In this section we ...")."""
    import numpy as np

    keys = {s.id: SectionKeys(s, candidate_sentences(s.text)) for s in sections}
    flat = [(sid, i) for sid, k in keys.items() for i in range(len(k.sentences))]
    if not flat:
        return keys
    vecs = embedder.encode([keys[sid].sentences[i] for sid, i in flat], batch_size=32)
    pos = 0
    for k in keys.values():
        n = len(k.sentences)
        if n:
            v = np.asarray(vecs[pos : pos + n], dtype=np.float64)
            centroid = v.mean(axis=0)
            norm = float(np.linalg.norm(centroid)) or 1.0
            central = v @ (centroid / norm)
            k.scores = [
                float(central[i]) + LEAD_BONUS * (1.0 - i / n)
                + (LENGTH_BONUS if 15 <= len(sent.split()) <= 45 else 0.0)
                - (META_PENALTY if _META_RE.match(sent) else 0.0)
                for i, sent in enumerate(k.sentences)
            ]
            k.vectors = v
        pos += n
    return keys


@dataclass
class Chosen:
    """The sentences a written section quotes, by role, each list in document order."""

    central: list[str]
    definitions: list[str] = field(default_factory=list)
    numbers: list[str] = field(default_factory=list)
    explanations: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return self.central + self.definitions + self.numbers + self.explanations

    def facts(self) -> list[str]:
        """The sentences beside the central ones: definitions, numbers, explanations."""
        return self.definitions + self.numbers + self.explanations


def choose_sentences(keys: SectionKeys, key_words: set[str], result_numbers: set[str], *,
                     central: int = TOPIC_SENTENCES, definitions: int = EXTRA_DEFINITIONS,
                     numbers: int = EXTRA_NUMBERS, explanations: int = EXTRA_EXPLANATIONS,
                     budget: int = EXTRA_BUDGET, explain_budget: int = EXPLAIN_BUDGET) -> Chosen:
    """A section's sentences by role (:mod:`episteme.compile.roles`): its most central ones,
    the definitions of its key terms, its results and key numbers (sentences reporting an
    outcome or a quantity; result numbers are those printed in the paper's tables or abstract),
    and its explanations (a reason or a mechanism: "this is because ...", "which allows ...").
    The central sentences always; definitions and numbers in turns (definition, number,
    definition, ...) while their words stay within ``budget``; among numbers, outcome sentences
    first, then those with more of the paper's result numbers; budget still left goes to the
    next most central sentences (at most :data:`FILL_SENTENCES`); then the most central
    explanations not quoted yet, within ``explain_budget`` words of their own.  Why turns: a
    short budget must still hold a definition, and a section of many numbers must not quote
    only numbers.  Why a budget of their own: the sentences chosen without explanations stay
    exactly as they were, so the topic matches and merges the same wiki sections (and every
    section id after it stays the same) whether or not explanations are quoted."""
    from .roles import is_definition, is_explanation, is_result, number_key, quantities

    n = len(keys.sentences)
    by_score = sorted(range(n), key=lambda i: (-round(keys.scores[i], 6), i))
    cent = by_score[:central]
    rest = [i for i in by_score if i not in cent]
    defs = [i for i in rest if is_definition(keys.sentences[i], key_words)][:definitions]

    def num_rank(i: int) -> tuple:
        q = {number_key(x) for x in quantities(keys.sentences[i])}
        return (not is_result(keys.sentences[i]), -min(2, len(q & result_numbers)), by_score.index(i))

    nums = sorted((i for i in rest if i not in defs and (quantities(keys.sentences[i])
                                                        or is_result(keys.sentences[i]))),
                  key=num_rank)[:numbers]
    turns: list[tuple[str, int]] = []
    for j in range(max(len(defs), len(nums))):
        turns += [(role, lst[j]) for role, lst in (("d", defs), ("n", nums)) if j < len(lst)]
    picked: dict[str, list[int]] = {"c": list(cent), "d": [], "n": [], "e": []}
    words = 0
    for role, i in turns:
        w = len(keys.sentences[i].split())
        if words + w > budget:
            continue
        picked[role].append(i)
        words += w
    # budget left: the next most central sentences (up to FILL_SENTENCES), with the central ones
    for i in rest:
        if len(picked["c"]) >= len(cent) + FILL_SENTENCES:
            break
        if i in picked["d"] or i in picked["n"] or i in picked["e"]:
            continue
        w = len(keys.sentences[i].split())
        if words + w <= budget:
            picked["c"].append(i)
            words += w
    taken = {i for lst in picked.values() for i in lst}
    room = explain_budget
    for i in rest:
        if len(picked["e"]) >= explanations:
            break
        w = len(keys.sentences[i].split())
        if i not in taken and w <= room and is_explanation(keys.sentences[i]):
            picked["e"].append(i)
            room -= w
    return Chosen(*[[keys.sentences[i] for i in sorted(picked[r])] for r in ("c", "d", "n", "e")])


def key_facts(keys: SectionKeys, chosen: list[str], key_words: set[str] | None = None,
              result_numbers: set[str] | None = None) -> list[str]:
    """The definitions, key numbers and explanations :func:`choose_sentences` adds beyond
    ``chosen`` (the central sentences), in document order."""
    c = choose_sentences(keys, key_words or set(), result_numbers or set())
    return [x for x in keys.sentences if x in c.facts() and x not in chosen]
