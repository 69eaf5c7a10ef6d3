"""The offline answerer's candidates: the sentences that could answer a question, gathered from
the retrieved wiki sections and the papers they point to (:class:`CandidateSource`, a part of
:class:`~episteme.query.answer_offline.OfflineAnswerer`).

Four sources, each cheap at query time: the wiki sections' own sentences; the sentences of the
question's best pooled passages in the papers the sections cite; the whole paper sections the
best wiki sections were written from (found by their quoted sentences) or whose title is nearest
the question; and the papers' stored sentences nearest the question (their vectors were stored
at ingest, :mod:`episteme.ingest.sentences`).  Every read of the paper store goes through
:class:`~episteme.stores.sqlite.Store` methods, under the tracer's lock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .answer_features import (
    SUMMARY_TITLE,
    bare_title,
    clean_sentence,
    is_answer_sentence,
    norm_key,
    sentence_spans,
    shortened_sentence,
    wiki_sentences,
)


@dataclass
class Candidate:
    """One sentence that could go into the answer, with where it came from."""

    text: str
    paper: str | None
    section_id: str | None  # the store's paper section (None for a wiki-only sentence)
    section: str  # the paper section's title, for the citation
    page: int | None
    passage_id: str | None
    order: tuple  # position for the readable order: (paper rank, section ord, char offset)
    passage_score: float = 0.0
    passage_cos: float = 0.0  # the passage's cosine to the question (dense part until embedded)
    wiki_section: str | None = None  # the wiki section it is quoted in, if any
    pointed: int | None = None  # rank of the wiki section written from its paper section
    summary: bool = False
    score: float = 0.0  # the ranking score (fitted weights over ``parts``)
    evidence: float = 0.0  # the calibrated score the abstention thresholds apply to
    parts: dict = field(default_factory=dict)
    vec: object = None  # its unit vector (stored at ingest, or embedded now), when it has one
    quoted: bool = False  # a wiki section quotes it
    first: bool = False  # the first sentence of its paper section
    #: its section's stored sentence vectors leave it out on purpose (a table's or a caption's
    #: section: ingest stores none of their sentences); a prose sentence of a stored section
    #: without a vector was split by an older splitter, and is embedded like an unstored one
    stored_section: bool = False
    prev_vec: object = None  # the stored vector of the sentence before it, when there is one
    qterms: dict = field(default_factory=dict)  # question term -> its share of the question
    shortened: bool = False  # a long sentence cut short (no stored vector: embedded now)
    product: object = None  # its centred product with the question (explain only: the fit's)


class CandidateSource:
    """The candidate search of :class:`~episteme.query.answer_offline.OfflineAnswerer` (a mixin:
    it uses the answerer's ``tracer``, ``embedder``, ``tuning``, ``use_stored``, its caches and
    ``_lock``, and its ``_encode``)."""

    # -- store helpers -------------------------------------------------------------------------

    def _sections(self, section_ids: Sequence[str]) -> dict[str, tuple]:
        """``section_id -> (text, ord, title, kind, page_start, page_end)`` (cached)."""
        todo = [s for s in dict.fromkeys(section_ids) if s not in self._section_text]
        if todo:
            with self.tracer.locked_store() as store:
                rows = store.section_texts(todo)
            with self._lock:
                if len(self._section_text) > 5000:
                    self._section_text.clear()
                for r in rows:
                    self._section_text[r[0]] = (r[1], int(r[2]), r[3], r[4], int(r[5]), int(r[6]))
        return {s: self._section_text[s] for s in section_ids if s in self._section_text}

    def _passages_of(self, section_ids: Sequence[str]) -> list[tuple]:
        """``(passage id, section id, char_start, char_end, page)`` of the given sections."""
        if not section_ids:
            return []
        with self.tracer.locked_store() as store:
            return store.passage_spans(section_ids)

    def _paper_of(self, section_id: str, paper: str | None) -> str:
        """The paper of a store section (its id is ``<paper>#<number>``)."""
        return paper or section_id.split("#", 1)[0]

    def pointed_sections(self, wiki_section: dict, papers: Sequence[str]) -> frozenset[str]:
        """The store sections a wiki section was written from: those whose text holds one of
        the section's quoted sentences (the offline writer quotes verbatim; a Claude-written
        section that quotes nothing points at none, and its papers are still searched)."""
        key = (wiki_section["id"], str(hash(wiki_section.get("text", ""))))
        hit = self._pointed.get(key)
        if hit is not None:
            return hit
        quotes = [" ".join(m.group(1).split())[:160] for m in
                  re.finditer(r"^>\s*(.{40,})$", wiki_section.get("text", ""), flags=re.M)]
        quotes += [" ".join(m.group(1).split())[:160] for m in
                   re.finditer(r"“([^”]{40,})”", wiki_section.get("text", ""))]
        found: set[str] = set()
        if quotes and papers:
            with self.tracer.locked_store() as store:
                rows = store.unreferenced_section_ids(papers)
            texts = self._sections([r[0] for r in rows])
            for sid, (text, *_rest) in texts.items():
                flat = " ".join(text.split())
                if any(q in flat for q in quotes):
                    found.add(sid)
        out = frozenset(found)
        with self._lock:
            if len(self._pointed) > 5000:
                self._pointed.clear()
            self._pointed[key] = out
        return out

    def _papers(self, sections: Sequence[dict]):
        """Ingested papers the retrieved sections cite, best-ranked section first."""
        papers: list[str] = []
        rank: dict[str, int] = {}
        wiki_of: dict[str, str] = {}
        for i, s in enumerate(sections):
            for src in s.get("sources") or []:
                pid = self.tracer.resolve_paper(src) if self.tracer is not None else None
                if pid and pid not in rank:
                    rank[pid] = i
                    wiki_of[pid] = s["id"]
                    papers.append(pid)
        return papers, rank, wiki_of

    def _candidates(self, question: str, sections: Sequence[dict], papers: list[str],
                    paper_rank: dict[str, int]) -> list[Candidate]:
        """The candidate sentences: the wiki sections' own, and the sentences of (a) the
        question's best pooled passages in the papers they cite, (b) the paper sections the
        best wiki sections were written from, and (c) the papers' sentences nearest the
        question by their stored vectors (:mod:`episteme.ingest.sentences`), whatever passage
        they sit in.  Each paper sentence carries its stored vector when it has one."""
        from ..ingest.sentences import SKIP_KINDS

        cands: dict[str, Candidate] = {}
        norm = norm_key
        # 1. the wiki's own sentences (quotes of the papers, or Claude's prose)
        for rank, s in enumerate(sections):
            for sent in wiki_sentences(s.get("text", "")):
                sent = clean_sentence(sent)
                if not is_answer_sentence(sent):
                    continue
                # no passage yet: the retrieval rank stands in for its passage's cosine
                cands.setdefault(norm(sent), Candidate(
                    sent, None, None, s.get("title", ""), None, None, (99, rank, 0),
                    wiki_section=s["id"], passage_cos=max(0.0, 0.45 - 0.05 * rank)))
        if self.tracer is None or not papers:
            return list(cands.values())
        # 2. the passages of the papers they point to that the question finds
        pool = self.tracer.score_pool([question], papers)
        if not pool.ids:
            return list(cands.values())
        import numpy as np

        scores = np.asarray(pool.score[0], dtype=np.float64)
        order = [int(j) for j in np.argsort(-scores, kind="stable")[:self.tuning.top_passages]]
        best = float(scores[order[0]]) or 1.0
        # the paper sections the best wiki sections were written from: their whole text is in
        # play (the fact asked for is often there, beside the sentences the wiki quotes)
        pointed: dict[str, tuple[int, str]] = {}  # store section -> (wiki rank, wiki section id)
        for rank, s in enumerate(sections[:self.tuning.pointed_ranks]):
            own = [p for p in papers if p in (s.get("sources") or [])] or papers
            for sid in sorted(self.pointed_sections(s, own)):
                pointed.setdefault(sid, (rank, s["id"]))
        pos = {pid: j for j, pid in enumerate(pool.ids)}
        pinfo: dict[str, tuple[dict, float, float]] = {
            pool.ids[j]: (pool.info[pool.ids[j]], float(scores[j]) / best, float(pool.sim[0, j]))
            for j in order}
        qvec = self._encode([question])[0]
        # 3. the papers' sentences nearest the question (stored vectors): their passages join
        dense_hits = self._dense_sentences(qvec, papers)
        # 4. the sections of those papers whose title is nearest the question ("How was X
        # evaluated?" -> "5.2 Study 1 Results"): their whole text is in play, like a pointed one
        titled = self._titled_sections(qvec, papers)
        whole = set(pointed) | titled
        extra_secs = sorted(whole | {sid for sid, _a, _c in dense_hits})
        wanted_at: dict[str, set[int]] = {}
        for sid, a, _c in dense_hits:
            wanted_at.setdefault(sid, set()).add(a)
        extra = []
        for row in self._passages_of(extra_secs):
            pid, sec_id, a0, b0, _page = row
            if pid in pinfo:
                continue
            if sec_id in whole or any(a0 <= a < b0 for a in wanted_at.get(sec_id, ())):
                extra.append(row)
        if extra:
            ids_all, matrix = self.tracer.passage_matrix(papers, False)
            row_of = self.tracer.passage_rows(papers, False)
            for pid, sec_id, a0, b0, page in extra:
                if pid not in row_of:
                    continue
                j = pos.get(pid)
                pscore = float(scores[j]) / best if j is not None else 0.0
                info = {"paper": sec_id.split("#", 1)[0], "section_id": sec_id, "char_start": a0,
                        "char_end": b0, "page": page}
                pinfo[pid] = (info, pscore, float(matrix[row_of[pid]] @ qvec))
        sec_ids = list(dict.fromkeys(info["section_id"] for info, _s, _c in pinfo.values()))
        texts = self._sections(sec_ids)
        stored = self._stored_vectors(sec_ids)
        for pid, (info, pscore, pcos) in pinfo.items():
            sec = texts.get(info["section_id"])
            if sec is None or sec[3] in ("references", "front"):
                continue
            text, sord, title, kind, _p0, _p1 = sec
            paper = self._paper_of(info["section_id"], info.get("paper"))
            a0, b0 = int(info["char_start"]), int(info["char_end"])
            prank, pwiki = pointed.get(info["section_id"], (None, None))
            svecs = stored.get(info["section_id"], {})
            for k, (a, b) in enumerate(sentence_spans(text)):
                if b <= a0 or a >= b0:
                    continue
                if a < a0 and (a0 - a) > (b - a) / 2:
                    continue  # mostly in the previous passage: that passage owns it
                sent = clean_sentence(text[a:b])
                short = None
                if not is_answer_sentence(sent):
                    short = shortened_sentence(sent)
                    if short is None:
                        continue
                    sent = short
                key = norm(sent)
                prev = cands.get(key)
                if prev is not None and prev.paper is not None:
                    prev.passage_score = max(prev.passage_score, pscore)
                    prev.passage_cos = max(prev.passage_cos, pcos)
                    continue
                c = Candidate(sent, paper, info["section_id"], title, info["page"], pid,
                              (paper_rank.get(paper, 50), sord, a), passage_score=pscore,
                              passage_cos=pcos, pointed=prank,
                              summary=kind in ("abstract",) or bool(SUMMARY_TITLE.match(title)))
                c.wiki_section = prev.wiki_section if prev is not None else pwiki
                c.quoted = prev is not None
                c.first = k == 0
                c.vec = svecs.get(a)
                c.stored_section = info["section_id"] in stored and kind in SKIP_KINDS
                c.shortened = short is not None
                cands[key] = c
        return list(cands.values())

    # -- stored sentence vectors -----------------------------------------------------------------

    def _has_sentence_table(self) -> bool:
        if self._sent_table is None:
            with self.tracer.locked_store() as store:
                self._sent_table = store.has_table("sentence_vectors")
        return self._sent_table

    def _stored_vectors(self, section_ids: Sequence[str]) -> dict[str, dict[int, object]]:
        """``{section id: {sentence start: unit vector}}`` of the sections with stored sentence
        vectors (cached: a warm engine meets the same sections again)."""
        if self.tracer is None or not self.use_stored or not self._has_sentence_table():
            return {}
        todo = [s for s in dict.fromkeys(section_ids) if s not in self._sent_vecs]
        if todo:
            emb = self.embedder
            with self.tracer.locked_store() as store:
                got = store.sentence_vectors(todo, emb.name, emb.dim)
            with self._lock:
                if len(self._sent_vecs) > 20_000:
                    self._sent_vecs.clear()
                for sid in todo:
                    spans, vecs = got.get(sid, (None, None))
                    self._sent_vecs[sid] = (None if spans is None else  # None: no row stored
                                            {int(a): vecs[i] for i, (a, _b) in enumerate(spans)})
        return {s: v for s in section_ids if (v := self._sent_vecs.get(s)) is not None}

    def _titled_sections(self, qvec, papers: Sequence[str]) -> set[str]:
        """The ``tuning.title_sections`` body sections of ``papers`` whose (numberless) title is
        nearest the question by cosine, at least ``tuning.title_min_cos`` (titles are embedded
        once: a warm engine keeps their vectors)."""
        if self.tracer is None or not papers or self.tuning.title_sections <= 0:
            return set()
        with self.tracer.locked_store() as store:
            rows = store.body_section_titles(papers)
        rows = [(sid, bare_title(t)) for sid, t in rows if t]
        if not rows:
            return set()
        sims = self._encode([t for _sid, t in rows]) @ qvec
        best = sorted(range(len(rows)), key=lambda i: -float(sims[i]))[:self.tuning.title_sections]
        return {rows[i][0] for i in best if float(sims[i]) >= self.tuning.title_min_cos}

    def _dense_sentences(self, qvec, papers: Sequence[str]) -> list[tuple[str, int, float]]:
        """The ``tuning.dense_sentences`` stored sentences of ``papers`` nearest the question:
        ``(section id, start, cosine)``.  Each paper's sentence matrix is read once and kept
        (bounded: ``tuning.paper_cache`` papers)."""
        import numpy as np

        if (self.tracer is None or not papers or not self.use_stored
                or not self._has_sentence_table()):
            return []
        emb = self.embedder
        keys: list[tuple[str, int]] = []
        blocks = []
        for pid in papers:
            hit = self._paper_sents.get(pid)
            if hit is None:
                with self.tracer.locked_store() as store:
                    sids = store.prose_section_ids(pid)
                    got = store.sentence_vectors(sids, emb.name, emb.dim)
                pk = [(sid, int(a)) for sid in sids if sid in got for a, _b in got[sid][0]]
                mat = (np.vstack([got[sid][1] for sid in sids if sid in got]) if pk
                       else np.zeros((0, emb.dim), np.float32))
                hit = (pk, mat)
                with self._lock:
                    if len(self._paper_sents) >= self.tuning.paper_cache:
                        self._paper_sents.pop(next(iter(self._paper_sents)))
                    self._paper_sents[pid] = hit
            keys.extend(hit[0])
            blocks.append(hit[1])
        if not keys:
            return []
        sims = np.vstack(blocks) @ np.asarray(qvec, dtype=np.float32)
        k = min(self.tuning.dense_sentences, len(keys))
        top = np.argpartition(-sims, k - 1)[:k]
        return [(keys[int(j)][0], keys[int(j)][1], float(sims[j])) for j in top]

    # -- scoring ---------------------------------------------------------------------------------
