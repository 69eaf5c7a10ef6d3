"""The offline answer: the sentences that answer *this* question, from the wiki and the passages
it points to, each cited.  No model writes anything, so every sentence is the paper's own.

Why this shape (and not "the retrieved wiki sections' most similar sentences"):

* **The wiki points, the papers answer.**  An offline wiki section quotes a few central
  sentences of a paper section; the fact a question asks for is usually elsewhere in that
  paper.  So the retrieved wiki sections are followed to their sources (``sources`` of each
  section = the papers, and the paper section each one quotes, found by its quoted sentences),
  and the candidates are the sentences of those papers' passages that the question's dense and
  lexical search finds (:meth:`episteme.query.trace.Tracer.score_pool`), plus the wiki sentences.
* **Every sentence has a vector**: ingest stores one per sentence
  (:mod:`episteme.ingest.sentences`), so each candidate is scored by its *own* cosine to the
  question at no query-time cost (only the question is embedded), and the papers' sentences
  nearest the question (:data:`DENSE_SENTENCES`) join the candidates even when their passage
  did not rank; so do the sections of those papers whose title is nearest the question
  (:data:`TITLE_SECTIONS`).  A store without them (ingested before) falls back to embedding
  the :data:`EMBED_TOP` best candidates, as before.
* **Question-focused scoring** of each candidate sentence (its ``parts``): cosine similarity to
  the question, the IDF-weighted share of the question's content words the sentence holds (rare
  words weigh most: the question's key terms) and the same for its section's title, the score
  and cosine of the passage it sits in, whether it is in a paper section a retrieved wiki
  section was written from or quoted by the wiki, its position (first of its section), a
  sentence leaning on the one before, its *context* (the sentence before it: its cosine, and
  the question's terms the two hold together, each weighted by its rarity among the
  candidates, so the paper's ubiquitous subject counts little), its section title's cosine to
  the question, its *centred* cosine (question and sentence taken relative to the candidates'
  mean vector: the topic every candidate shares drops out, so a sentence that merely restates
  it no longer looks like the answer), its length, and the *expected answer type*: a quantity
  question ("how many", "how big", "what score") wants a sentence with a number, a definition
  question ("what is X") a sentence that defines, a "why" question one that gives a reason, a
  limitation / comparison question one that states one.  The ranking is a linear model over
  these features whose weights (:data:`WEIGHTS`) were fitted on 227 questions over 16 papers
  (benchmarks/bench_answer.py ``--fit``: pairwise logistic; cross-validation by paper and a
  test set written blind and never fitted on are reported); none names a paper or a gold item.
* **A learned answer metric** (``parts["qa"]``, :func:`load_metric`): cosine and centred
  cosine weigh every direction of the embedding space alike, but some directions tell a
  sentence that *answers* from one that shares the question's topic, and others carry only
  the topic.  So the same fit learns a weight per dimension over the product of the centred
  question and candidate vectors (a diagonal bilinear score: one matrix-vector product at
  query time), shipped as ``episteme/data/answer_metric.json`` for the embedding model it was
  fitted with and unused with any other.  The abstention thresholds apply to a separate,
  hand-set ``evidence`` score, so refitting the ranking does not move them.
* **Only whole, self-standing sentences**: fragments (fewer than :data:`MIN_WORDS` words,
  "Proposition 1."), forward references ("We will show in section 4.1 that ..."), captions,
  pointers at a float ("Table 2 summarizes the comparison ..."), the paper's own questions,
  formula debris and reference-list text are never candidates.  A sentence over
  :data:`MAX_WORDS` is quoted shortened when its main clause stands alone (its parenthetical
  asides cut and marked, :func:`shortened_sentence`).
* **Selection**: the best sentence leads; then maximal marginal relevance, with a small cost
  per word (more, shorter sentences within the word budget), a cost per sentence already taken
  from the same paper section (the topic-restating sentences crowd one section) and a gain for
  the question terms a sentence adds to those already covered (both parts of a two-part
  question answered).
* **Readable order**: the chosen sentences are put back in the order of the paper (papers in
  the order their wiki sections ranked), so the answer reads like an excerpt, not a shuffle.
* **Checked by the tracer**: the chosen sentences are traced to the papers; one the trace does
  not support (``verdict`` other than ``supported`` when the tracer reports verdicts, else
  ``supported``) is dropped, so an offline answer never states what its own trace rejects.
* **Honest abstention**: when no sentence reaches ``min_evidence`` — or, when retrieval
  says the wiki does not cover the question (``covered`` false), the higher
  ``min_evidence_uncovered`` (the papers the nearest sections point to may still answer it
  plainly) — the answer says so and names the closest topics instead of quoting filler.

Where each part lives (one answerer, its parts in modules along their seams, every number in
one :class:`~episteme.query.answer_params.AnswerTuning` so they are set together): the question
and sentence forms in :mod:`episteme.query.answer_features`, the candidate search in
:mod:`episteme.query.answer_candidates`, the scoring and selection in
:mod:`episteme.query.answer_rank`, the tuning in :mod:`episteme.query.answer_params`; this
module composes, checks and abstains.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from .answer_candidates import Candidate, CandidateSource
from .answer_features import (
    ELIDED,
    MAX_WORDS,
    MIN_WORDS,
    NAME,
    clean_sentence,
    expected_type,
    has_quantity,
    is_answer_sentence,
    norm_key,
    shortened_sentence,
)
from .answer_params import DEFAULT_TUNING, NO_ANSWER, AnswerTuning, load_metric
from .answer_rank import Ranker, explain_candidate

__all__ = ["ELIDED", "MAX_WORDS", "MIN_WORDS", "NO_ANSWER", "AnswerTuning", "Candidate",
           "OfflineAnswerer", "clean_sentence", "expected_type", "has_quantity",
           "is_answer_sentence", "shortened_sentence"]


class OfflineAnswerer(CandidateSource, Ranker):
    """Builds offline answers over one wiki's stores.  Thread-safe (the tracer guards SQLite;
    the caches here are filled under a lock).  ``tuning``: the calibrated numbers (the
    benchmark's folds and the tests pass their own)."""

    def __init__(self, settings, embedder, tracer=None, *, tuning: AnswerTuning = DEFAULT_TUNING):
        self.settings = settings
        self.embedder = embedder
        self.tracer = tracer
        self.tuning = tuning
        self._lock = threading.Lock()
        self._section_text: dict[str, tuple[str, int, str, str, int, int]] = {}
        self._pointed: dict[tuple[str, str], frozenset[str]] = {}
        self._vec_cache: dict[str, object] = {}
        self._sent_table: bool | None = None
        self._sent_vecs: dict[str, dict[int, object] | None] = {}
        self._paper_sents: dict[str, tuple[list, object]] = {}
        self.weights: dict[str, float] = dict(tuning.weights)  # the benchmark's folds set their own
        dim = getattr(embedder, "dim", None)
        self.metric = (load_metric(str(getattr(embedder, "name", "")), int(dim))
                       if isinstance(dim, int) else None)  # the benchmark's folds set their own
        self.use_stored = True  # False: ignore stored sentence vectors (the latency baseline)
        self.coverage = tuning.coverage  # the benchmark's selection experiments set their own

    # -- the answer ----------------------------------------------------------------------------

    def answer(self, question: str, sections: Sequence[dict], *, covered: bool = True,
               explain: bool = False) -> dict:
        """``{"answer", "mode": "offline", "sections_used", "citations", "abstained"}``;
        ``citations`` = one per sentence: ``{sentence, wiki_section, paper, section, page,
        passage_id}``.  ``explain`` adds the scored candidates (for the benchmark)."""
        if not sections:
            return self._abstain(sections, "no wiki section matched the question")
        papers, paper_rank, wiki_of_paper = self._papers(sections)
        unknown = self.unknown_names(question)
        if unknown:
            return self._abstain(sections, "no ingested paper mentions " + ", ".join(unknown))
        cands = self._candidates(question, sections, papers, paper_rank)
        if not cands:
            return self._abstain(sections, "no sentence of the wiki or its papers answers the question")
        self._score(question, cands, paper_rank, products=explain)
        cands.sort(key=lambda c: -c.score)
        # retrieval's relevance signal says no wiki section covers the question: answer only
        # when a sentence of the papers those sections point to answers it clearly
        need = self.tuning.min_evidence if covered else self.tuning.min_evidence_uncovered
        evidence = max(c.evidence for c in cands)
        if evidence < need:
            why = (f"best evidence {evidence:.2f} is below {need}" if covered else
                   "retrieval found no wiki section that covers the question, and the best "
                   f"evidence {evidence:.2f} is below {need}")
            out = self._abstain(sections, why)
            if explain:
                out["candidates"] = [explain_candidate(c) for c in cands]
                out["candidate_products"] = [c.product for c in cands]
            return out
        picked = self._select(cands)
        picked = self._with_context(picked)
        picked.sort(key=lambda c: c.order)
        picked, traced = self._verified(picked, papers, sections, wiki_of_paper)
        if not picked:
            return self._abstain(sections, "the trace supports none of the candidate sentences")
        text, citations = self._compose(picked, sections, wiki_of_paper)
        out = {"answer": text, "mode": "offline",
               "sections_used": list(dict.fromkeys(x["wiki_section"] for x in citations)),
               "citations": citations, "abstained": False}
        if traced is not None:
            out["trace"] = traced  # the trace of exactly this text: chat need not trace again
        if explain:
            out["candidates"] = [explain_candidate(c) for c in cands]
            out["candidate_products"] = [c.product for c in cands]
        return out

    def unknown_names(self, question: str) -> list[str]:
        """Names in the question (mixed case or letters with digits: "LoRA", "CASP14",
        "SciTrace-2") that no passage of any ingested paper contains: a question about a thing
        the papers never mention cannot be answered from them, however similar its topic."""
        if self.tracer is None:
            return []
        from .text import stem, words

        out = []
        for i, m in enumerate(NAME.finditer(question)):
            token = m.group(0)
            if i == 0 and m.start() == 0 and token[1:].islower():
                continue
            if re.fullmatch(r"[A-Z]{2,4}s?", token):
                continue  # a short acronym ("NMT") may only ever be spelled out in the paper
            pieces = token.split("-")
            if len(pieces) > 1:
                # a compound's plain lower-case words are English, not the name: "k1-style",
                # "QR-decomposed" name k1 and QR ("CRISPR-Cas9" keeps both of its parts)
                pieces = [x for x in pieces if not x.isalpha() or not x.islower()]
            parts = [w for x in pieces for w in words(x) if len(w) >= 3 and not w.isdigit()]
            if not parts:
                continue
            # a letters-and-digits word also counts as known by its letters: "WMT14" is
            # written "WMT 2014"; "CASP14" is not known by "casp"
            letters = {w: re.sub(r"\d+", "", w) for w in parts}
            surface = {stem(x): x for w in parts for x in (w, letters[w]) if x}
            df = self.tracer.doc_freq(set(surface), surface)
            if any(df.get(stem(w), 0) == 0 and (len(letters[w]) < 3 or df.get(stem(letters[w]), 0) == 0)
                   for w in parts) and not self._line_broken(token):
                out.append(token)
        return out

    def _line_broken(self, token: str) -> bool:
        """Whether a joined mixed-case name ("BerkeleyParser") is printed split at a line end
        ("Berkeley- Parser"): the extracted text keeps the hyphen and the break, so the name is
        in no passage as one word.  Only that exact spelling counts: the parts as two words
        ("query set" for "QuerySet") do not make a name known."""
        parts = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", token)
        if len(parts) < 2 or "".join(parts) != token.replace("-", ""):
            return False
        broken = re.compile(r"-\s+".join(re.escape(x) for x in parts[:2]) + "".join(
            r"-?\s*" + re.escape(x) for x in parts[2:]), re.I)
        return any(broken.search(t) for t in self.tracer.phrase_texts(parts))

    def _abstain(self, sections: Sequence[dict], why: str) -> dict:
        """No answer, and the closest topics the wiki does have (the retrieved titles)."""
        topics = []
        for s in sections[:3]:
            title = s.get("title") or s["id"]
            page = s.get("page", "")
            label = f"{title} ({page})" if page else title
            if label not in topics:
                topics.append(label)
        text = NO_ANSWER
        if topics:
            text += " Closest topics in the wiki: " + "; ".join(topics) + "."
        return {"answer": text, "mode": "offline", "sections_used": [], "citations": [],
                "abstained": True, "abstain_reason": why,
                "closest_topics": [{"id": s["id"], "title": s.get("title"), "page": s.get("page")}
                                   for s in sections[:3]]}

    @staticmethod
    def _compose(picked: list[Candidate], sections: Sequence[dict],
                 wiki_of_paper: dict[str, str]) -> tuple[str, list[dict]]:
        parts, citations = [], []
        for c in picked:
            sid = c.wiki_section or wiki_of_paper.get(c.paper) or sections[0]["id"]
            parts.append(f"{c.text} [{sid}]")
            citations.append({"sentence": c.text, "wiki_section": sid, "paper": c.paper,
                              "section": c.section, "page": c.page, "passage_id": c.passage_id})
        return " ".join(parts), citations

    def _verified(self, picked: list[Candidate], papers: list[str], sections: Sequence[dict],
                  wiki_of_paper: dict[str, str]) -> tuple[list[Candidate], dict | None]:
        """Trace the composed answer and keep the sentences the tracer supports (its
        ``verdict`` when it gives one, else ``supported``).  Returns the kept sentences and,
        when nothing was dropped, the trace (of exactly the answer's text)."""
        if self.tracer is None or not picked:
            return picked, None
        text, cites = self._compose(picked, sections, wiki_of_paper)
        prime = getattr(self.embedder, "prime", None)
        if prime is not None:  # the trace embeds the answer's sentences: they have vectors
            prime([c.text for c in picked if c.vec is not None],
                  [c.vec for c in picked if c.vec is not None])
        used = list(dict.fromkeys(c["wiki_section"] for c in cites))
        index_json = {s["id"]: list(s.get("sources") or []) for s in sections}
        try:
            # scoped like chat's own trace: the papers of the wiki sections the answer cites
            traced = self.tracer.trace(text, sections=used, index_json=index_json)
        except Exception:  # noqa: BLE001 - an untraceable answer is not stated
            return [], None
        claims = traced.get("claims") or []
        ok: list[Candidate] = []
        for c in picked:
            key = norm_key(c.text)
            verdict = None
            for cl in claims:
                ck = norm_key(cl["claim"])
                if ck and (ck in key or key in ck):
                    verdict = cl.get("verdict", "supported" if cl.get("supported") else "unsupported")
                    if verdict != "supported":
                        break
            if verdict in (None, "supported"):
                ok.append(c)
        return ok, (traced if len(ok) == len(picked) else None)

