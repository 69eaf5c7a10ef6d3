"""The per-answer candidate pool: every claim of an answer scored against every pooled passage.

:class:`Pool` holds the matrices :meth:`episteme.query.trace.Tracer.score_pool` builds (claims x
passages: cosine, coverage, shared run, support) and orders passages per claim and for the answer
as a whole, with the weights of :class:`~episteme.query.trace_tuning.TraceTuning`.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from .text import stem, word_positions, words
from .trace_tuning import DEFAULT, TraceTuning


@dataclass
class Pool:
    """Every claim scored against every pooled candidate passage (matrices claims × passages)."""

    claims: list[str]
    ids: list[str]
    info: dict[str, dict]
    sim: object
    cover: object
    run: object
    score: object
    mass: object  # per claim: the summed IDF of its content words (how much it says)
    answer_bm25: object  # per passage: BM25 of the whole answer
    summary: object  # per passage: 1 for abstract / introduction / conclusion passages
    anchored: list[list[int]] | None = None  # per claim: pooled passages stating its numbers
    table: object = None  # per passage: 1 for a table object's passage (see TraceTuning.table_penalty)
    numeric: object = None  # per claim: 1 when the claim states a number (see TraceTuning.table_penalty)
    tuning: TraceTuning = DEFAULT  # the answer-level weights

    def candidates(self, ci: int, k: int) -> list[dict]:
        """Claim ``ci``'s ``k`` best passages, plus the passages that state all (or all but one)
        of its numbers: what the verifier reads."""
        out = self.ranked(limit=k)[ci] if k else []
        seen = {h["id"] for h in out}
        for pj in (self.anchored or [[]] * len(self.claims))[ci]:
            if self.ids[pj] not in seen:
                out.append(self.hit(ci, pj))
                seen.add(self.ids[pj])
        return out

    def hit(self, ci: int, pj: int) -> dict:
        return {**self.info[self.ids[pj]], "similarity": float(self.sim[ci, pj]),
                "coverage": float(self.cover[ci, pj]), "run": int(self.run[ci, pj]),
                "score": float(self.score[ci, pj])}

    def support(self, ci: int) -> float:
        """How well the best passage supports claim ``ci`` (its own score, no context)."""
        return float(self.score[ci].max()) if len(self.ids) else 0.0

    def ranked(self, limit: int | None = None) -> list[list[dict]]:
        """Each claim's passages, best first: the claim's own score plus a small prior for
        passages that support the rest of the answer too (answers usually come from one place,
        so among near-equal passages the one that fits the whole answer is the better cite)."""
        import numpy as np

        ctx = np.zeros(len(self.ids), dtype=np.float32)
        if len(self.claims) > 1 and len(self.ids):
            agg = self.answer_scores()
            top = float(agg.max())
            ctx = agg / top if top > 0 else ctx
        out = []
        for ci in range(len(self.claims)):
            order = np.argsort(-(self.score[ci] + self.tuning.claim_context_weight * ctx), kind="stable")[:limit]
            out.append([self.hit(ci, int(pj)) for pj in order])
        return out

    def answer_order(self) -> list[int]:
        """Pooled passages ordered for the answer as a whole (best first)."""
        import numpy as np

        agg = self.answer_scores()
        return [int(j) for j in np.argsort(-agg, kind="stable")]

    def answer_scores(self):
        """Per pooled passage, how well it supports the answer as a whole."""
        import numpy as np

        if not self.ids or not self.claims:
            return np.zeros(len(self.ids), dtype=np.float32)
        mass = np.asarray(self.mass, dtype=np.float32)
        w = mass / mass.sum() if mass.sum() > 0 else np.full(len(mass), 1.0 / len(mass), np.float32)
        bm = np.asarray(self.answer_bm25, dtype=np.float32)
        bm = bm / bm.max() if bm.max() > 0 else bm
        t = self.tuning
        agg = (t.w_answer_max * self.score.max(axis=0) + (w[:, None] * self.score).sum(axis=0)
               + t.w_answer_bm25 * bm - t.summary_penalty * self.summary)
        if self.table is not None and self.numeric is not None and not np.any(self.numeric):
            agg = agg - t.table_penalty * np.asarray(self.table, dtype=np.float32)
        return agg


def bare_title(section_title: str) -> str:
    """"1 Introduction" / "5. Conclusions" -> "Introduction" / "Conclusions"."""
    return re.sub(r"^[\dIVXivx.]+\s+", "", (section_title or "").strip()).strip()


_TEXT_CACHE: dict[str, tuple[frozenset[str], dict[str, list[int]]]] = {}
_TEXT_CACHE_LOCK = threading.Lock()


def passage_index(text: str) -> tuple[frozenset[str], dict[str, list[int]]]:
    """A passage's stemmed term set and word positions, computed once per passage text (a warm
    process sees the same passages again and again)."""
    hit = _TEXT_CACHE.get(text)
    if hit is None:
        ws = words(text)
        hit = (frozenset(stem(w) for w in ws), word_positions(ws))
        with _TEXT_CACHE_LOCK:
            if len(_TEXT_CACHE) > 20_000:
                _TEXT_CACHE.clear()
            _TEXT_CACHE[text] = hit
    return hit
