"""The offline answerer's ranking and selection (:class:`Ranker`, a part of
:class:`~episteme.query.answer_offline.OfflineAnswerer`): each candidate scored twice, by the
hand-set ``evidence`` the abstention thresholds apply to and by the fitted linear ``score``
over its features (:data:`~episteme.query.answer_params.WEIGHTS`, plus the learned answer
metric over the centred embedding space); then maximal marginal relevance picks the answer's
sentences and puts back the ones they lean on.  Every number comes from the answerer's
:class:`~episteme.query.answer_params.AnswerTuning`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .answer_candidates import Candidate
from .answer_features import (
    ANAPHOR,
    COMPARES,
    COMPARISON_Q,
    DEFINES,
    LIMITATION_Q,
    LIMITS,
    REASON,
    bare_title,
    clean_sentence,
    expected_type,
    has_quantity,
    is_answer_sentence,
    norm_key,
    sentence_spans,
)
from .answer_params import METRIC_SCALE


class Ranker:
    """Scoring and selection of :class:`~episteme.query.answer_offline.OfflineAnswerer` (a
    mixin: it uses the answerer's ``tracer``, ``embedder``, ``tuning``, ``weights``, ``metric``,
    ``coverage``, its caches and ``_lock``)."""

    # -- scoring ---------------------------------------------------------------------------------

    def _score(self, question: str, cands: list[Candidate], paper_rank: dict[str, int],
               products: bool = False) -> None:
        """Score every candidate.  Two scores: ``evidence`` (the calibrated measure the
        abstention thresholds are set on: cosine + IDF coverage + passage + answer type) and
        ``score`` (the ranking: a linear model over :func:`features`, weights ``weights`` (:data:`~episteme.query.answer_params.WEIGHTS`)
        fitted by benchmarks/bench_answer.py --fit on the dev questions).  A candidate without a
        stored vector is embedded now if it is among the ``tuning.embed_top`` best by its cheap
        part; otherwise its passage's cosine stands in."""
        import numpy as np

        from .text import content_terms, surface_words

        tuning = self.tuning
        qtype = expected_type(question)
        limitation = bool(LIMITATION_Q.search(question))
        comparison = bool(COMPARISON_Q.search(question))
        qterms = content_terms(question)
        if self.tracer is not None:
            df = self.tracer.doc_freq(qterms, surface_words([question]))
            weights = {t: self.tracer.idf(t, df) for t in qterms}
        else:
            weights = dict.fromkeys(qterms, 1.0)
        total = sum(weights.values()) or 1.0
        cterms = [set(content_terms(c.text)) for c in cands]
        # the question's terms weighted by their rarity among *these* candidates: a term every
        # candidate holds (the paper's own subject) tells them apart no more than a stopword
        n = len(cands)
        local = {t: math.log((n + 1) / (df + 0.5)) for t in qterms
                 if (df := sum(t in ts for ts in cterms)) > 0}
        ltotal = sum(local.values()) or 1.0
        for c, terms in zip(cands, cterms, strict=True):
            lex = sum(w for t, w in weights.items() if t in terms) / total
            lexl = sum(w for t, w in local.items() if t in terms) / ltotal
            prev_text, prev_vec = self._previous(c)
            if prev_text:
                both = terms | set(content_terms(prev_text))
                ctx = sum(w for t, w in local.items() if t in both) / ltotal
            else:
                ctx = lexl
            c.prev_vec = prev_vec
            c.qterms = {t: w / ltotal for t, w in local.items() if t in terms}
            tterms = set(content_terms(c.section))
            title_lex = sum(w for t, w in weights.items() if t in tterms) / total
            bonus, tmatch = 0.0, 0.0
            if qtype == "quantity":
                tmatch = 1.0 if has_quantity(c.text) else -1.0
                bonus = tuning.type_bonus if tmatch > 0 else -tuning.type_miss
            elif (qtype == "definition" and DEFINES.search(c.text)) or (
                    qtype == "reason" and REASON.search(c.text)):
                tmatch, bonus = 1.0, tuning.type_bonus * 0.5
            cue = 0.0
            if limitation and LIMITS.search(c.text):
                cue += 1.0
            if comparison and COMPARES.search(c.text):
                cue += 1.0
            bonus += tuning.w_cue * cue
            rank = paper_rank.get(c.paper, 0) if c.paper else c.order[1]
            c.parts = {"cos": c.passage_cos, "pcos": c.passage_cos, "lex": lex,
                       "passage": c.passage_score, "type": tmatch, "cue": cue,
                       "pointed": 1.0 / (1 + c.pointed) if c.pointed is not None else 0.0,
                       "rank": min(rank, 4) / 4, "summary": float(c.summary),
                       "quoted": float(c.quoted or c.paper is None), "first": float(c.first),
                       "anaphor": float(bool(ANAPHOR.match(c.text))), "title": title_lex,
                       "words": min(len(c.text.split()), 40) / 40, "dense": 0.0,
                       "ctx": ctx, "pcos_prev": 0.0}
            c.evidence = (tuning.w_lex * lex + tuning.w_passage * c.passage_score + bonus
                          + (tuning.w_pointed / (1 + c.pointed) if c.pointed is not None else 0.0)
                          - tuning.w_wiki_rank * min(rank, 4)
                          - (tuning.summary_penalty if c.summary else 0.0))
        # dense part: the stored vectors, or embed the best few of those without one
        qvec = self._encode([question])[0]
        # a sentence of a section whose sentences are not stored on purpose (a table's rows,
        # a caption) is not worth embedding now; a prose sentence without one is (the store's
        # rows were split by an older splitter: `episteme rebuild --sentences` refreshes them)
        missing = [i for i, c in enumerate(cands)
                   if c.vec is None and (c.shortened or not c.stored_section)]
        missing.sort(key=lambda i: -(cands[i].evidence + tuning.w_cos * cands[i].passage_cos))
        top = missing[:tuning.embed_top]
        if top:
            vecs = self._encode([cands[i].text for i in top])
            for i, v in zip(top, vecs, strict=True):
                cands[i].vec = v
        for c in cands:
            if c.prev_vec is not None:  # the sentence it follows: what "this" refers to
                c.parts["pcos_prev"] = float(np.asarray(c.prev_vec, dtype=np.float32) @ qvec)
            if c.vec is not None:
                c.parts["cos"] = float(np.asarray(c.vec, dtype=np.float32) @ qvec)
                c.parts["dense"] = 1.0
                c.evidence += tuning.w_cos * c.parts["cos"]
            else:  # not embedded: its passage's cosine, a little discounted
                c.parts["cos"] = c.passage_cos - 0.1
                c.evidence += tuning.w_cos * (c.passage_cos - 0.1)
        # the section's own relevance: its title's cosine to the question (titles are few and
        # short; a warm engine has embedded most of them before)
        titles = list(dict.fromkeys(bare_title(c.section) for c in cands if c.section))
        tvec = dict(zip(titles, self._encode(titles) @ qvec, strict=True)) if titles else {}
        for c in cands:
            c.parts["tcos"] = float(tvec.get(bare_title(c.section), 0.0)) if c.section else 0.0
        centred_cosines(qvec, cands, self.metric, products)
        w = self.weights
        for c in cands:
            # parts["qa"] carries its own scale (the metric's weights): it is not in WEIGHTS
            c.score = (sum(w.get(k, 0.0) * v for k, v in c.parts.items() if k != "qa")
                       + c.parts.get("qa", 0.0) + w.get("bias", 0.0))

    def _previous(self, c: Candidate) -> tuple[str | None, object]:
        """The sentence before ``c`` in its paper section (its text and stored vector), or
        ``(None, None)``: a sentence that opens "This activity is ..." answers with the one
        before it, so its context counts in its ranking (``ctx``, ``pcos_prev``)."""
        if c.section_id is None or c.order[2] is None:
            return None, None
        sec = self._section_text.get(c.section_id)
        if sec is None:
            return None, None
        spans = sentence_spans(sec[0])
        i = next((k for k, (a, _b) in enumerate(spans) if a == c.order[2]), None)
        if not i:
            return None, None
        a, b = spans[i - 1]
        vecs = self._sent_vecs.get(c.section_id) or {}
        return clean_sentence(sec[0][a:b]), vecs.get(a)

    def _encode(self, texts: list[str]):
        """Embeddings, with the sentences' vectors kept (a warm engine meets them again)."""
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self._vec_cache]
        if todo:
            vecs = self.embedder.encode(todo)
            with self._lock:
                if len(self._vec_cache) > 50_000:
                    self._vec_cache.clear()
                self._vec_cache.update(zip(todo, vecs, strict=True))
        return np.vstack([self._vec_cache[t] for t in texts])

    def _select(self, cands: list[Candidate]) -> list[Candidate]:
        """Greedy, maximal marginal relevance: the best-scored sentence first, then each step
        takes the candidate with the best score minus ``tuning.redundancy`` x its cosine to the
        closest sentence already chosen minus ``tuning.length_cost`` per word minus
        ``tuning.section_cost`` per chosen sentence of its paper section, within
        ``tuning.margin`` of the best score, no near-duplicates, bounded length."""
        tuning = self.tuning
        best = cands[0].score
        pool = [c for c in cands if c.score >= best - tuning.margin][:tuning.pool]
        vecs = {c.text: c.vec for c in pool}
        picked: list[Candidate] = []
        covered: set[str] = set()
        nwords = 0
        while pool and len(picked) < tuning.max_sentences + 2:
            def gain(c: Candidate) -> float:
                v = vecs.get(c.text)
                red = max((float(v @ vecs[p.text]) for p in picked
                           if v is not None and vecs.get(p.text) is not None), default=0.0)
                new = sum(w for t, w in c.qterms.items() if t not in covered)
                same = sum(p.section_id == c.section_id for p in picked if c.section_id)
                return (c.score - tuning.redundancy * red - tuning.length_cost * len(c.text.split())
                        + self.coverage * new - tuning.section_cost * same)
            # the best sentence always leads; then relevance, novelty and brevity trade off
            c = max(pool, key=gain) if picked else max(pool, key=lambda c: c.score)
            pool.remove(c)
            ws = set(norm_key(c.text).split())
            if any(len(ws & set(norm_key(p.text).split())) > 0.6 * min(len(ws), len(p.text.split()))
                   for p in picked):
                continue
            n = len(c.text.split())
            if picked and nwords + n > tuning.max_answer_words:
                continue
            picked.append(c)
            covered.update(c.qterms)
            nwords += n
        return picked

    def _with_context(self, picked: list[Candidate]) -> list[Candidate]:
        """Put back the sentence a chosen one leans on: a sentence opening with an anaphor or a
        connective ("This leads to ...", "To counteract this effect, ...") gets the sentence
        before it; one followed by such a sentence gets that one (it usually completes the
        point).  Within the answer's word budget; companions are quoted from the same section."""
        tuning = self.tuning
        out = list(picked)
        have = {norm_key(c.text) for c in out}
        nwords = sum(len(c.text.split()) for c in out)
        for c in list(picked):
            if c.section_id is None or c.order[2] is None:
                continue
            sec = self._section_text.get(c.section_id)
            if sec is None:
                continue
            text = sec[0]
            spans = sentence_spans(text)
            i = next((k for k, (a, _b) in enumerate(spans) if a == c.order[2]), None)
            if i is None:
                continue
            wanted = []
            if ANAPHOR.match(c.text) and i > 0:
                wanted.append((i - 1, -1))
            if i + 1 < len(spans) and ANAPHOR.match(" ".join(text[spans[i + 1][0]:spans[i + 1][1]].split())):
                wanted.append((i + 1, 1))
            for k, _side in wanted:
                a, b = spans[k]
                sent = clean_sentence(text[a:b])
                key = norm_key(sent)
                n = len(sent.split())
                if key in have or not is_answer_sentence(sent) or nwords + n > tuning.max_answer_words:
                    continue
                have.add(key)
                nwords += n
                out.append(Candidate(sent, c.paper, c.section_id, c.section, c.page, c.passage_id,
                                     (c.order[0], c.order[1], a), wiki_section=c.wiki_section,
                                     score=c.score - 0.01))
        return out


def centred_cosines(qvec, cands: Sequence[Candidate], metric: Sequence[float] | None = None,
                     products: bool = False) -> None:
    """``parts["ccos"]``: each candidate's cosine to the question after both are centred on the
    mean of the candidates' vectors.  Every candidate is about the question's topic (that is
    how it was found), so the plain cosine mostly measures how well a sentence restates that
    topic; with the shared direction taken out, what is left is the part of the question that
    tells its sentences apart (the aspect asked about).  ``parts["qa"]``: the learned metric
    over the same centred vectors, ``METRIC_SCALE * sum_d metric[d] * q[d] * s[d]``.  A
    candidate without a vector gets 0 for both.  ``products``: keep each candidate's centred
    product vector in ``c.product`` (what the benchmark fits the metric on)."""
    import numpy as np

    have = [c for c in cands if c.vec is not None]
    for c in cands:
        c.parts["ccos"] = 0.0
        c.parts["qa"] = 0.0
    if len(have) < 3:
        return
    m = np.vstack([np.asarray(c.vec, dtype=np.float32) for c in have])
    centre = m.mean(axis=0)
    q = np.asarray(qvec, dtype=np.float32) - centre
    m = m - centre
    norms = np.linalg.norm(m, axis=1) * (float(np.linalg.norm(q)) or 1.0)
    sims = (m @ q) / np.where(norms > 0, norms, 1.0)
    qa = (m @ (q * np.asarray(metric, dtype=np.float32))) * METRIC_SCALE if (
        metric is not None and len(metric) == q.size) else None
    for i, (c, v) in enumerate(zip(have, sims, strict=True)):
        c.parts["ccos"] = float(v)
        if qa is not None:
            c.parts["qa"] = float(qa[i])
    if products:
        for c, row in zip(have, m * q, strict=True):
            c.product = row


def explain_candidate(c: Candidate) -> dict:
    """A scored candidate as the benchmark reads it (``answer(..., explain=True)``)."""
    return {"text": c.text, "score": round(c.score, 4), "evidence": round(c.evidence, 4),
            "paper": c.paper, "section": c.section, "section_id": c.section_id,
            "start": c.order[2] if c.section_id else None,
            "wiki_section": c.wiki_section, "pointed": c.pointed,
            **{k: round(v, 4) for k, v in c.parts.items()}}
