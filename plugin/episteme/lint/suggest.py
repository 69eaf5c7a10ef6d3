"""lint: the closest page name to a dangling link target (``link-dangling``'s suggestion).

``difflib`` over every name costs tens of milliseconds per target on a 10k-page wiki, so
candidates are first narrowed to the dozen names sharing the most words with the target
(character trigrams when no word is shared, e.g. a typo inside a one-word name); only those are
scored with ``difflib``.  Results are cached per target.

Most of the time went into ``difflib``: a dozen ``quick_ratio()`` and five ``ratio()`` calls per
target.  Candidates are now ordered by an exact upper bound of ``ratio()`` from the longest
common subsequence (:func:`_lcs_length`), which rules out nearly all of them before
``ratio()``: the suggestions are the same, with one or two ``ratio()`` calls per target.  The
scores are counted with ``dict.fromkeys``, ``sorted`` and ``compress`` (C) where the same
results took Python loops.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Iterable
from itertools import compress, count, repeat
from operator import add, sub
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")


def name_index(stems: list[str], titles: list[str | None]) -> dict[str, int]:
    """Each page's title and file stem -> the first node (in id order) with that name, from
    names already lowercased: ``stems[i]`` and ``titles[i]`` (``None``: no title, so the stem
    stands for it) of node ``i``, as the graph's name index holds them."""
    names: dict[str, int] = {}
    put = names.setdefault
    for i, (stem, t) in enumerate(zip(stems, titles, strict=True)):
        put(stem if t is None else t, i)
        put(stem, i)
    return names


def _char_masks(b: str) -> dict[str, int]:
    """Character -> bit mask of its positions in ``b`` (for :func:`_lcs_length`)."""
    masks: dict[str, int] = {}
    for i, c in enumerate(b):
        masks[c] = masks.get(c, 0) | 1 << i
    return masks


def _lcs_length(a: str, masks: dict[str, int], n: int) -> int:
    """Length of the longest common subsequence of ``a`` and the ``n``-character string whose
    :func:`_char_masks` are ``masks`` (the bit-parallel algorithm of Allison and Dix, 1986).

    Why: difflib's matching blocks never cross, so together they are a common subsequence and
    ``ratio() <= 2 * LCS / (len(a) + n)``.  That bound costs a few integer operations per
    character where ``ratio()`` costs a Python search per block, and it is tighter than
    ``quick_ratio()`` (which ignores order), so most candidates are ruled out without it.

    The characters of ``a`` that ``b`` lacks (mask 0) leave the row unchanged, so they are
    skipped (in C, by ``filter``); and the row is cut to ``n`` bits once at the end: additions
    carry upwards only, so the bits above ``n`` never change the ones below."""
    v = full = (1 << n) - 1
    for m in filter(None, map(masks.get, a)):
        u = v & m
        v = (v + u) | (v - u)
    return n - (v & full).bit_count()


def _trigrams(s: str) -> set[str]:
    s = f"  {s} "
    return {s[i : i + 3] for i in range(len(s) - 2)}


def _dozen(counts: dict[str, float], n: int) -> list[str]:
    """The 12 names of ``counts`` with the best scores, ties between equal scores to the name
    closest in length to ``n``, then to the first in ``counts`` order (what ``nlargest(12)``
    of ``(score, -|len - n|, -position)`` gives).

    Why this way: only the set matters (the caller orders it by its own bound), the names
    scoring above the 12th best score are all in it, and only those tied at that score compete
    for the places left; they are ranked by sorting ``(|len - n|, position, name)`` tuples,
    made and compared in C, instead of decorating every name in a Python loop."""
    values = counts.values()
    floor = sorted(values, reverse=True)[11]
    above = list(compress(counts, map(floor.__lt__, values)))
    tied = list(compress(counts, map(floor.__eq__, values)))
    if len(above) + len(tied) > 12:
        dist = map(abs, map(sub, map(len, tied), repeat(n)))
        tied = [t[2] for t in sorted(zip(dist, count(), tied))[: 12 - len(above)]]
    return above + tied


class Suggester:
    """The closest page to a dangling target: :meth:`suggest`.

    ``Suggester(names, ids)``: ``names`` is lowercased page name -> node (see
    :func:`name_index`), ``ids`` the page ids by node; :meth:`of_graph` makes the name index
    from a graph when first needed."""

    def __init__(self, names: dict[str, int] | None, ids: list[str], graph: Any = None):
        self._names = names
        self._graph = graph
        self.ids = ids
        self._words: dict[str, list[str]] | None = None
        self._grams: dict[str, list[str]] | None = None
        self._cache: dict[str, str | None] = {}

    @classmethod
    def of_graph(cls, g: Any) -> Suggester:
        """A suggester over the pages of ``g`` (its name index made on first use)."""
        return cls(None, g.ids, g)

    @property
    def names(self) -> dict[str, int]:
        if self._names is None:
            g = self._graph
            self._names = name_index(g.names_by_node("stem"), g.names_by_node("title"))
        return self._names

    def word_index(self) -> dict[str, list[str]]:
        """Word -> the names containing it (made once, on first use)."""
        if self._words is None:
            words: defaultdict[str, list[str]] = defaultdict(list)
            findall = _WORD.findall
            for name in self.names:
                for w in set(findall(name)):
                    words[w].append(name)
            words.default_factory = None  # reads of a missing word fail as in a plain dict
            self._words = words
        return self._words

    def _gram_index(self) -> dict[str, list[str]]:
        if self._grams is None:
            grams: dict[str, list[str]] = {}
            for name in self.names:
                for t in _trigrams(name):
                    grams.setdefault(t, []).append(name)
            self._grams = grams
        return self._grams

    def _count(self, keys: Iterable[str], index: dict[str, list[str]]) -> dict[str, float]:
        """Names sharing ``keys``, scored by the keys' rarity (a shared rare word says more
        than a shared common one), in the order they are first met.  Keys on more than a
        twentieth of all names are skipped unless nothing else matches: they cost the most
        and discriminate least."""
        # keys in a fixed order: the scores are float sums, so their order must not depend on
        # string hashing (ties among the candidates would then differ from run to run)
        postings = sorted((index[k] for k in sorted(keys) if k in index), key=len)
        if not postings:
            return {}
        cap = max(50, len(self.names) // 20)
        use = [p for p in postings if len(p) <= cap] or postings[:1]
        # a posting names each name once, so the first one's scores are its weight (0.0 + w)
        counts = dict.fromkeys(use[0], 1.0 / len(use[0]))
        get = counts.get
        for names in use[1:]:
            # counts[name] = get(name, 0.0) + w for each name, in C: a name is in a posting
            # once, so reading all the old scores before writing any gives the same sums, and
            # new names are added in the same order
            scores = map(add, map(get, names, repeat(0.0)), repeat(1.0 / len(names)))
            counts.update(zip(names, scores, strict=True))
        return counts

    def suggest(self, target: str) -> str | None:
        """The id of the page whose title or stem is closest to ``target`` (difflib ratio above
        0.6, ties to the first name in code-point order), or ``None``."""
        full = target.lower().strip()
        if full in self._cache:
            return self._cache[full]
        key = full.rstrip("/").rsplit("/", 1)[-1]  # folder/name: folders are not names
        counts = self._count(set(_WORD.findall(key)), self.word_index())
        if not counts:
            counts = self._count(_trigrams(key), self._gram_index())
        n = len(key)
        top: Iterable[str] = counts
        if len(counts) > 12:
            top = _dozen(counts, n)
        masks = _char_masks(key)
        bounds = []
        for name in top:
            total = len(name) + n
            if 2.0 * min(len(name), n) / total > 0.6:  # (ratio <= these bounds)
                bounds.append((-(2.0 * _lcs_length(name, masks, n) / total), name))
        # the best ratio above 0.6, ties to the first name in code-point order; each ratio is
        # at most its LCS bound, so candidates go by that bound and stop once it is too low
        best, best_score = None, 0.6
        r = None
        for neg, name in sorted(bounds):
            if -neg < best_score:
                break
            if -neg == best_score and (best is None or name > best):
                continue
            if r is None:
                r = difflib.SequenceMatcher(None, "", key)  # (b = the target: indexed once)
            r.set_seq1(name)
            score = r.ratio()
            if score > best_score or (score == best_score and best is not None and name < best):
                best, best_score = name, score
        out = None if best is None else self.ids[self.names[best]]
        self._cache[full] = out
        return out
