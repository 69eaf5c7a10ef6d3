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
* **Honest abstention**: when no sentence reaches :data:`MIN_EVIDENCE` — or, when retrieval
  says the wiki does not cover the question (``covered`` false), the higher
  :data:`MIN_EVIDENCE_UNCOVERED` (the papers the nearest sections point to may still answer it
  plainly) — the answer says so and names the closest topics instead of quoting filler.

Why one module: the candidate filters, the scoring and the ordering above are one answerer
(:class:`OfflineAnswerer`) whose weights were set together; split apart, a weight in one file
would silently depend on a filter in another.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

MIN_WORDS = 6  # shorter "sentences" are fragments ("Proposition 1.", "Results.")
MAX_WORDS = 70
MAX_SENTENCES = 4  # chosen sentences; up to two more that they lean on (_with_context)
MAX_ANSWER_WORDS = 120
REDUNDANCY = 0.3  # x the cosine to the most similar sentence already chosen (MMR)
#: per word of a sentence, taken off its selection gain: within the same word budget, more and
#: shorter sentences cover more of what the question may be asking (chosen by the 5-fold CV of
#: benchmarks/bench_answer.py on dev_trace, 0.005 -> 0.01 with SECTION_COST; RESULTS-answer.md)
LENGTH_COST = 0.01
#: x the share of the question's (locally weighted) terms a sentence adds to those the chosen
#: ones already hold: a two-part question ("what X, and how long Y?") gets both parts answered
COVERAGE = 0.2
#: x the number of chosen sentences already from the same paper section: the sentences that
#: restate the question's topic crowd one section (its opening, its definitions); the one that
#: answers is often a section further on (chosen by the same 5-fold CV: 0 -> 0.05)
SECTION_COST = 0.05
POOL = 4 * MAX_SENTENCES  # the best candidates (within MARGIN) the selection chooses among
TOP_PASSAGES = 20  # passages of the question's pool whose sentences become candidates
EMBED_TOP = 28  # sentences embedded per question, the best by the cheap pre-score (bounded work)
MARGIN = 0.35  # keep sentences within this of the best one's score

# score = W_COS * cosine + W_LEX * IDF coverage of the question + W_PASSAGE * passage score
#         (normalised to the best) + type bonus + W_POINTED (written-from section) - penalties
W_COS = 1.0
W_LEX = 0.6
W_PASSAGE = 0.15
W_POINTED = 0.15  # / (1 + rank of the wiki section that points there)
POINTED_RANKS = 5  # wiki sections whose paper sections are searched whole
W_WIKI_RANK = 0.03  # per rank step of the paper's best wiki section
TYPE_BONUS = 0.2  # was 0.12; 0.2 gained one TUNE question (RESULTS-answer.md)
TYPE_MISS = 0.08
W_CUE = 0.06  # a limitation / comparison question's sentence that states one  # a quantity question's sentence without any number
SUMMARY_PENALTY = 0.03  # abstract/introduction restate; the body usually says it fully
#: Best sentence score below which the offline answer abstains (calibrated on half the dev
#: questions by benchmarks/bench_answer.py; see RESULTS-answer.md).
MIN_EVIDENCE = 0.70
#: The same when retrieval's relevance signal says the wiki does not cover the question: only
#: clear evidence overrides it (calibrated like MIN_EVIDENCE, on the TUNE papers' questions and
#: the unanswerable ones; see RESULTS-answer.md).
MIN_EVIDENCE_UNCOVERED = 1.05

#: Stored sentences of the retrieved papers nearest the question that become candidates
#: (with their passages), beside the question's best passages.
DENSE_SENTENCES = 30
PAPER_CACHE = 48  # papers whose sentence matrices a warm answerer keeps
#: Sections of the retrieved papers whose title is nearest the question that are searched
#: whole (beside the pointed ones), when the title's cosine reaches TITLE_MIN_COS.
TITLE_SECTIONS = 2
TITLE_MIN_COS = 0.3

#: The ranking: a linear model over the candidate features (:meth:`OfflineAnswerer._score`'s
#: ``parts``) plus the learned answer metric (``parts["qa"]``, its own weights), fitted
#: together by ``benchmarks/bench_answer.py --fit`` (pairwise logistic, L2) on 227 questions
#: over 16 papers: dev_trace's 40, answer_heldout's 31, answer_train's 64 and answer_train2's 92
#: (RESULTS-answer.md gives the 8-fold cross-validation by paper and the blind test set, never
#: fitted on), last on the wiki the current offline writer makes (3 decimals).
FEATURES = ("cos", "pcos", "lex", "passage", "type", "cue", "pointed", "rank", "summary",
            "quoted", "first", "anaphor", "title", "words", "dense", "ctx", "pcos_prev",
            "tcos", "ccos")
WEIGHTS: dict[str, float] = {
    "cos": 0.100, "pcos": 0.251, "lex": 0.208, "passage": 0.118, "type": 0.040, "cue": 0.077,
    "pointed": 0.146, "rank": -0.058, "summary": 0.011, "quoted": 0.025, "first": -0.023,
    "anaphor": 0.014, "title": 0.279, "words": 0.025, "dense": 0.033, "ctx": 0.313,
    "pcos_prev": 0.131, "tcos": 0.141, "ccos": 0.172,
}

#: The learned answer metric (see the module docstring): a weight per embedding dimension,
#: fitted with :data:`WEIGHTS` by ``benchmarks/bench_answer.py --fit --save-metric``.
METRIC_FILE = Path(__file__).resolve().parent.parent / "data" / "answer_metric.json"

NO_ANSWER = "The wiki does not cover this question."


@functools.lru_cache(maxsize=4)
def load_metric(model: str, dim: int, path: Path = METRIC_FILE) -> tuple[float, ...] | None:
    """The answer metric's weights for the embedding ``model`` of ``dim`` dimensions, or None
    when the file is missing or was fitted for another model (its weights would mean nothing
    in another space).  ``parts["qa"]`` is then 0 and the ranking is the linear model alone."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("model") != model:
            return None
        weights, scale = data.get("weights"), float(data.get("scale", 1.0))
        if int(data.get("dim", 0)) != dim or not isinstance(weights, list) or len(weights) != dim:
            return None
        return tuple(float(x) * scale for x in weights)
    except (OSError, ValueError, TypeError):  # unreadable, not JSON, or not numbers
        return None


# --- the expected answer type, from the question's form (English question words only) ------
_QUANTITY_Q = re.compile(
    r"\b(how\s+(many|much|big|large|small|long|fast|often|close|far|well|accurate|high|low)"
    r"|what\s+([\w-]+\s+){0,3}(score|scores|accuracy|error|errors|rate|percentage|number|size|"
    r"bleu|f1|precision|recall|perplexity|speed|speedup|cost|numbers|log-likelihood|likelihood)"
    r"|which\s+([\w-]+\s+){0,2}(score|accuracy|error))\b", re.I)
_DEFINITION_Q = re.compile(r"^\s*(what\s+(is|are|was|were)\s+(an?\s+|the\s+)?|define\s|"
                           r"what\s+does\s+.+\s+mean)", re.I)
_REASON_Q = re.compile(r"^\s*(why|what\s+(causes|motivat\w*|is\s+the\s+reason))\b", re.I)
_MECHANISM_Q = re.compile(r"^\s*how\s+(does|do|did|is|are|was|were)\b", re.I)
# a question about a weakness wants a sentence that states one; a comparison, one that compares
_LIMITATION_Q = re.compile(r"\b(drawbacks?|downsides?|disadvantages?|limitations?|weakness(es)?|"
                           r"risks?|problems?|shortcomings?|slow|expensive|unstable|instability|"
                           r"stability|bottlenecks?|fail\w*)\b", re.I)
_COMPARISON_Q = re.compile(r"\b(compare[sd]?|comparison|differences?|differ|versus|vs\.?|"
                           r"better|worse|beat|outperform\w*)\b", re.I)

# --- what a sentence offers ---------------------------------------------------------------
# a number that is a quantity: not a reference ("Table 3", "Section 4.1", "[12]", "Eq. 2")
_REF_NUMBER = re.compile(
    r"\b(table|tab\.|figure|fig\.|section|sec\.|§|eq\.|equation|algorithm|appendix|"
    r"theorem|proposition|lemma|corollary|definition|step|line)\s*[A-Z]?\d+(\.\d+)*", re.I)
_QUANTITY = re.compile(r"(\d+(?:[.,]\d+)*\s*(%|x\b|×|k\b|m\b|b\b|bn\b|million|billion|thousand|"
                       r"hours?|days?|gpus?|tpu|points?|bleu)|\d+\.\d+|\b\d{2,}\b|\b\d\b)", re.I)
_DEFINES = re.compile(r"\b(is|are|was|were|refers? to|denotes?|means|is defined as|we (call|define|"
                      r"refer to)|is called|are called|consists? of|known as)\b", re.I)
_REASON = re.compile(r"\b(because|since|due to|in order to|so that|to (counteract|avoid|prevent|"
                     r"address|overcome|alleviate|mitigate)|as a result|leads? to|caus\w+|thus|"
                     r"therefore|hence|which (makes|allows|means)|this (is|means))\b", re.I)
_LIMITS = re.compile(r"\b(however|but|although|expensive|costly|impractical|slow(er|ly)?|drawbacks?|"
                     r"disadvantages?|limitations?|cannot|unable|fail\w*|worse|poor(ly)?|hurts?|"
                     r"degrad\w+|unstable|instabilit\w+|overfit\w*|difficult\w*|problem\w*|"
                     r"suffer\w*|at the cost of|risks?|bias(es|ed)?|lacks?|sparse|high variance)\b",
                     re.I)
_COMPARES = re.compile(r"\b(than|outperform\w*|compared (to|with)|whereas|unlike|in contrast|"
                       r"better|worse|superior|inferior|opposite|similar to|as (high|good|well) as)\b",
                       re.I)
# figure or table debris read into a sentence: a run of bare numbers or one-letter tokens
_DEBRIS = re.compile(r"(?:(?<!\S)\(?(?:\d{1,3}|[A-Za-z])\)?(?!\S)\s+){4,}"
                     r"|\b(figure|fig\.|table)\s*\d+\s*:|^(left|right|top|bottom|middle)\s*:", re.I)
_FORWARD = re.compile(
    r"\b(we|i)\s+(will|shall)\s+(now\s+)?(show|see|present|discuss|describe|introduce|prove|"
    r"demonstrate|explain|return|give|define|analy[sz]e|study|investigate|consider)\b"
    r"|\b(is|are|will be)\s+(described|discussed|presented|shown|given|explained|detailed|analy[sz]ed)"
    r"\s+(in|later|below|further)\b"
    r"|\b(see|in)\s+(section|sec\.|appendix|§)\s*\d+[^.]*\b(below|later)\b"
    r"|\b(later in|in the (next|following|remainder|rest) (of )?(this )?(section|paper|chapter))\b"
    r"|\b(the rest of|the remainder of) (this|the) paper\b"
    r"|^(in|the) (the )?(next|following) (section|sections|chapter)\b"
    r"|\bsection\s+\d+(\.\d+)*\s+(describes|presents|discusses|introduces|shows|concludes)\b",
    re.I)
_CAPTION = re.compile(r"^(figure|fig\.|table|algorithm)\s*\d+\s*[:.]", re.I)
# a sentence that only says where something is ("Table 2 summarizes the comparison ...",
# "Figure 3 shows the skip-gram model."), or an algorithm's title ("Algorithm 1 Minibatch ..."):
# it points the reader at a float and states nothing itself ("Fig. 7 shows that ..." does, and
# so does one that gives a number: "Table 2 reports a BLEU score of 28.4")
_POINTER = re.compile(
    r"^(?:figure|fig\.|table|tab\.|algorithm|appendix|section|sec\.)\s*[A-Z]?\d+(?:\.\d+)*\s*"
    r"(?:\([a-z]\)\s*)?(?:shows?|summari[sz]es|presents|lists|illustrates|depicts|gives|reports|"
    r"contains|corresponds|compares|displays|plots|provides|describes|outlines|details|"
    r"visuali[sz]es)\b(?!\s+that\b)"
    r"|^algorithm\s*\d+\s+[A-Z]", re.I)
_SUMMARY_TITLE = re.compile(r"^(\d+(\.\d+)*\.?\s+)?(abstract|introduction|conclusions?|summary)\b", re.I)
_ANAPHOR = re.compile(
    r"^(this|these|that|those|such|it|they|thus|hence|therefore|consequently|as a result|in turn|"
    r"to (counteract|address|avoid|overcome|fix|remedy|mitigate) (this|these|that|it)|"
    r"(this|these|that|such) \w+)\b", re.I)
_NAME = re.compile(r"\b(?:[A-Za-z]*[a-z][A-Z][\w-]*|[A-Z]{2,}[\w-]*|[A-Za-z]+-?\d[\w-]*)")
_SENT_END = re.compile(r"[.!?][\"”’)\]]*$")
_HYPHEN_BREAK = re.compile(r"(\w)- (\w)")


def expected_type(question: str) -> str:
    """``quantity`` | ``definition`` | ``reason`` | ``mechanism`` | ``other``, from the form of
    the question (its first words), not its topic."""
    if _QUANTITY_Q.search(question):
        return "quantity"
    if _REASON_Q.search(question):
        return "reason"
    if _DEFINITION_Q.search(question):
        return "definition"
    if _MECHANISM_Q.search(question):
        return "mechanism"
    return "other"


def has_quantity(sentence: str) -> bool:
    """Whether ``sentence`` states a number that is a quantity (not "Table 3" or "[12]")."""
    s = _REF_NUMBER.sub(" ", sentence)
    s = re.sub(r"\[[\d,\s–-]+\]", " ", s)  # citation brackets
    s = re.sub(r"\b(19|20)\d\d\b", " ", s)  # years
    return bool(_QUANTITY.search(s))


def clean_sentence(text: str) -> str:
    """Whitespace normalised, a trailing theorem label cut ("... generator G. Proposition 1." →
    "... generator G."): the same text ingest embedded (:mod:`episteme.ingest.sentences`)."""
    from ..ingest.sentences import clean_sentence as clean

    return clean(text)


@functools.lru_cache(maxsize=50_000)
def is_answer_sentence(s: str) -> bool:
    """A whole, self-standing sentence worth quoting: :data:`MIN_WORDS` to :data:`MAX_WORDS`
    words, starts like a sentence and ends like one, mostly words (not a formula or a table
    row), not a caption, a forward reference, a pointer at a float ("Table 2 summarizes the
    comparison ...") or a question: none of those states what it is about (among the candidates
    of the 275 training and test questions, 318 such, not one gold)."""
    ws = s.split()
    if not MIN_WORDS <= len(ws) <= MAX_WORDS:
        return False
    if not (s[0].isupper() or s[0].isdigit() or s[0] in "\"“‘'(") or not _SENT_END.search(s):
        return False
    if _CAPTION.match(s) or _FORWARD.search(s) or (
            _POINTER.match(s) and not has_quantity(s)):
        return False
    if s.rstrip("\"”’)]").endswith("?"):  # a question the paper asks (itself, or the reader)
        return False
    if "|" in s or "[[" in s or "http" in s or "<!--" in s or _DEBRIS.search(s):
        return False
    letters = sum(ch.isalpha() for ch in s)
    if letters / max(1, sum(not ch.isspace() for ch in s)) < 0.7:
        return False
    wordlike = sum(bool(re.fullmatch(r"[A-Za-z][a-z]+[,.;:]?|[a-z]{2,}[,.;:]?", w)) for w in ws)
    return wordlike >= 0.5 * len(ws)


#: a parenthetical aside of at least 4 words ("(in particular, G must not be trained ...)"),
#: no nested parentheses; a formula's "(x)" or a citation's "(Smith, 2019)" is shorter or kept
_ASIDE = re.compile(r"\s*\((?=(?:[^()]*\s){3})[^()]{12,}\)")
ELIDED = "(…)"


@functools.lru_cache(maxsize=20_000)
def shortened_sentence(s: str) -> str | None:
    """A sentence over :data:`MAX_WORDS` made quotable, or None: its parenthetical asides cut
    (each marked :data:`ELIDED`, so the quote stays honest about the cut), else its first
    clause up to a semicolon (ended with a full stop).  Why: a long sentence that states
    the answer ("The disadvantages are primarily that ... (a 40-word aside), much as ...")
    was never a candidate; its main clause usually stands alone.  The result must pass
    :func:`is_answer_sentence` (a run-on of table text does not become quotable by a cut)."""
    if len(s.split()) <= MAX_WORDS:
        return None
    cut = _ASIDE.sub(" " + ELIDED, s)
    cut = re.sub(r"\s+([,.;:])", r"\1", cut)
    if cut != s and is_answer_sentence(cut):
        return cut
    head = s.split("; ", 1)[0].rstrip(",:")
    if head != s and len(head.split()) >= 2 * MIN_WORDS:
        head += "."
        if is_answer_sentence(head):
            return head
    return None


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


class OfflineAnswerer:
    """Builds offline answers over one wiki's stores.  Thread-safe (the tracer guards SQLite;
    the caches here are filled under a lock)."""

    def __init__(self, settings, embedder, tracer=None):
        self.settings = settings
        self.embedder = embedder
        self.tracer = tracer
        self._lock = threading.Lock()
        self._section_text: dict[str, tuple[str, int, str, str, int, int]] = {}
        self._pointed: dict[tuple[str, str], frozenset[str]] = {}
        self._vec_cache: dict[str, object] = {}
        self._sent_table: bool | None = None
        self._sent_vecs: dict[str, dict[int, object] | None] = {}
        self._paper_sents: dict[str, tuple[list, object]] = {}
        self.weights: dict[str, float] = dict(WEIGHTS)  # the benchmark's folds set their own
        dim = getattr(embedder, "dim", None)
        self.metric = (load_metric(str(getattr(embedder, "name", "")), int(dim))
                       if isinstance(dim, int) else None)  # the benchmark's folds set their own
        self.use_stored = True  # False: ignore stored sentence vectors (the latency baseline)
        self.coverage = COVERAGE  # the benchmark's selection experiments set their own

    # -- store helpers -------------------------------------------------------------------------

    def _sections(self, section_ids: Sequence[str]) -> dict[str, tuple]:
        """``section_id -> (text, ord, title, kind, page_start, page_end)`` (cached)."""
        todo = [s for s in dict.fromkeys(section_ids) if s not in self._section_text]
        if todo:
            with self.tracer.locked_store() as store:
                rows = store.conn.execute(
                    "SELECT section_id, section_text, ord, section_title, kind, page_start, page_end "
                    f"FROM sections WHERE section_id IN ({','.join('?' * len(todo))})", todo).fetchall()
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
            return store.conn.execute(
                "SELECT id, section_id, char_start, char_end, page FROM passages WHERE section_id IN "
                f"({','.join('?' * len(section_ids))}) ORDER BY section_id, ord", list(section_ids)
            ).fetchall()

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
                rows = store.conn.execute(
                    "SELECT section_id, paper_id FROM sections WHERE paper_id IN "
                    f"({','.join('?' * len(papers))}) AND kind != 'references'", list(papers)).fetchall()
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
        need = MIN_EVIDENCE if covered else MIN_EVIDENCE_UNCOVERED
        evidence = max(c.evidence for c in cands)
        if evidence < need:
            why = (f"best evidence {evidence:.2f} is below {need}" if covered else
                   "retrieval found no wiki section that covers the question, and the best "
                   f"evidence {evidence:.2f} is below {need}")
            out = self._abstain(sections, why)
            if explain:
                out["candidates"] = [_explain(c) for c in cands]
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
            out["candidates"] = [_explain(c) for c in cands]
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
        for i, m in enumerate(_NAME.finditer(question)):
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
        from .answer import _sentences

        cands: dict[str, Candidate] = {}
        norm = _norm_key
        # 1. the wiki's own sentences (quotes of the papers, or Claude's prose)
        for rank, s in enumerate(sections):
            for sent in _sentences(s.get("text", "")):
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
        order = [int(j) for j in np.argsort(-scores, kind="stable")[:TOP_PASSAGES]]
        best = float(scores[order[0]]) or 1.0
        # the paper sections the best wiki sections were written from: their whole text is in
        # play (the fact asked for is often there, beside the sentences the wiki quotes)
        pointed: dict[str, tuple[int, str]] = {}  # store section -> (wiki rank, wiki section id)
        for rank, s in enumerate(sections[:POINTED_RANKS]):
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
            ids_all, matrix = self.tracer._matrix(papers, False)
            row_of = self.tracer._rows(papers, False)
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
            for k, (a, b) in enumerate(_sentence_spans(text)):
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
                              summary=kind in ("abstract",) or bool(_SUMMARY_TITLE.match(title)))
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
        """The :data:`TITLE_SECTIONS` body sections of ``papers`` whose (numberless) title is
        nearest the question by cosine, at least :data:`TITLE_MIN_COS` (titles are embedded
        once: a warm engine keeps their vectors)."""
        if self.tracer is None or not papers or TITLE_SECTIONS <= 0:
            return set()
        with self.tracer.locked_store() as store:
            rows = store.conn.execute(
                "SELECT section_id, section_title FROM sections WHERE paper_id IN "
                f"({','.join('?' * len(papers))}) AND kind NOT IN ('references', 'front', "
                "'table', 'figure', 'footnote') AND length(section_text) > 0",
                list(papers)).fetchall()
        rows = [(sid, _bare_title(t)) for sid, t in rows if t]
        if not rows:
            return set()
        sims = self._encode([t for _sid, t in rows]) @ qvec
        best = sorted(range(len(rows)), key=lambda i: -float(sims[i]))[:TITLE_SECTIONS]
        return {rows[i][0] for i in best if float(sims[i]) >= TITLE_MIN_COS}

    def _dense_sentences(self, qvec, papers: Sequence[str]) -> list[tuple[str, int, float]]:
        """The :data:`DENSE_SENTENCES` stored sentences of ``papers`` nearest the question:
        ``(section id, start, cosine)``.  Each paper's sentence matrix is read once and kept
        (bounded: :data:`PAPER_CACHE` papers)."""
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
                    sids = [r[0] for r in store.conn.execute(
                        "SELECT section_id FROM sections WHERE paper_id = ? AND kind NOT IN "
                        "('references', 'front') ORDER BY ord", (pid,))]
                    got = store.sentence_vectors(sids, emb.name, emb.dim)
                pk = [(sid, int(a)) for sid in sids if sid in got for a, _b in got[sid][0]]
                mat = (np.vstack([got[sid][1] for sid in sids if sid in got]) if pk
                       else np.zeros((0, emb.dim), np.float32))
                hit = (pk, mat)
                with self._lock:
                    if len(self._paper_sents) >= PAPER_CACHE:
                        self._paper_sents.pop(next(iter(self._paper_sents)))
                    self._paper_sents[pid] = hit
            keys.extend(hit[0])
            blocks.append(hit[1])
        if not keys:
            return []
        sims = np.vstack(blocks) @ np.asarray(qvec, dtype=np.float32)
        k = min(DENSE_SENTENCES, len(keys))
        top = np.argpartition(-sims, k - 1)[:k]
        return [(keys[int(j)][0], keys[int(j)][1], float(sims[j])) for j in top]

    # -- scoring ---------------------------------------------------------------------------------

    def _score(self, question: str, cands: list[Candidate], paper_rank: dict[str, int],
               products: bool = False) -> None:
        """Score every candidate.  Two scores: ``evidence`` (the calibrated measure the
        abstention thresholds are set on: cosine + IDF coverage + passage + answer type) and
        ``score`` (the ranking: a linear model over :func:`features`, weights :data:`WEIGHTS`
        fitted by benchmarks/bench_answer.py --fit on the dev questions).  A candidate without a
        stored vector is embedded now if it is among the :data:`EMBED_TOP` best by its cheap
        part; otherwise its passage's cosine stands in."""
        import numpy as np

        from .text import content_terms, surface_words

        qtype = expected_type(question)
        limitation = bool(_LIMITATION_Q.search(question))
        comparison = bool(_COMPARISON_Q.search(question))
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
                bonus = TYPE_BONUS if tmatch > 0 else -TYPE_MISS
            elif (qtype == "definition" and _DEFINES.search(c.text)) or (
                    qtype == "reason" and _REASON.search(c.text)):
                tmatch, bonus = 1.0, TYPE_BONUS * 0.5
            cue = 0.0
            if limitation and _LIMITS.search(c.text):
                cue += 1.0
            if comparison and _COMPARES.search(c.text):
                cue += 1.0
            bonus += W_CUE * cue
            rank = paper_rank.get(c.paper, 0) if c.paper else c.order[1]
            c.parts = {"cos": c.passage_cos, "pcos": c.passage_cos, "lex": lex,
                       "passage": c.passage_score, "type": tmatch, "cue": cue,
                       "pointed": 1.0 / (1 + c.pointed) if c.pointed is not None else 0.0,
                       "rank": min(rank, 4) / 4, "summary": float(c.summary),
                       "quoted": float(c.quoted or c.paper is None), "first": float(c.first),
                       "anaphor": float(bool(_ANAPHOR.match(c.text))), "title": title_lex,
                       "words": min(len(c.text.split()), 40) / 40, "dense": 0.0,
                       "ctx": ctx, "pcos_prev": 0.0}
            c.evidence = (W_LEX * lex + W_PASSAGE * c.passage_score + bonus
                          + (W_POINTED / (1 + c.pointed) if c.pointed is not None else 0.0)
                          - W_WIKI_RANK * min(rank, 4)
                          - (SUMMARY_PENALTY if c.summary else 0.0))
        # dense part: the stored vectors, or embed the best few of those without one
        qvec = self._encode([question])[0]
        # a sentence of a section whose sentences are not stored on purpose (a table's rows,
        # a caption) is not worth embedding now; a prose sentence without one is (the store's
        # rows were split by an older splitter: `episteme rebuild --sentences` refreshes them)
        missing = [i for i, c in enumerate(cands)
                   if c.vec is None and (c.shortened or not c.stored_section)]
        missing.sort(key=lambda i: -(cands[i].evidence + W_COS * cands[i].passage_cos))
        top = missing[:EMBED_TOP]
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
                c.evidence += W_COS * c.parts["cos"]
            else:  # not embedded: its passage's cosine, a little discounted
                c.parts["cos"] = c.passage_cos - 0.1
                c.evidence += W_COS * (c.passage_cos - 0.1)
        # the section's own relevance: its title's cosine to the question (titles are few and
        # short; a warm engine has embedded most of them before)
        titles = list(dict.fromkeys(_bare_title(c.section) for c in cands if c.section))
        tvec = dict(zip(titles, self._encode(titles) @ qvec, strict=True)) if titles else {}
        for c in cands:
            c.parts["tcos"] = float(tvec.get(_bare_title(c.section), 0.0)) if c.section else 0.0
        _centred_cosines(qvec, cands, self.metric, products)
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
        spans = _sentence_spans(sec[0])
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
        takes the candidate with the best score minus :data:`REDUNDANCY` x its cosine to the
        closest sentence already chosen minus :data:`LENGTH_COST` per word minus
        :data:`SECTION_COST` per chosen sentence of its paper section, within
        :data:`MARGIN` of the best score, no near-duplicates, bounded length."""
        best = cands[0].score
        pool = [c for c in cands if c.score >= best - MARGIN][:POOL]
        vecs = {c.text: c.vec for c in pool}
        picked: list[Candidate] = []
        covered: set[str] = set()
        nwords = 0
        while pool and len(picked) < MAX_SENTENCES + 2:
            def gain(c: Candidate) -> float:
                v = vecs.get(c.text)
                red = max((float(v @ vecs[p.text]) for p in picked
                           if v is not None and vecs.get(p.text) is not None), default=0.0)
                new = sum(w for t, w in c.qterms.items() if t not in covered)
                same = sum(p.section_id == c.section_id for p in picked if c.section_id)
                return (c.score - REDUNDANCY * red - LENGTH_COST * len(c.text.split())
                        + self.coverage * new - SECTION_COST * same)
            # the best sentence always leads; then relevance, novelty and brevity trade off
            c = max(pool, key=gain) if picked else max(pool, key=lambda c: c.score)
            pool.remove(c)
            ws = set(_norm_key(c.text).split())
            if any(len(ws & set(_norm_key(p.text).split())) > 0.6 * min(len(ws), len(p.text.split()))
                   for p in picked):
                continue
            n = len(c.text.split())
            if picked and nwords + n > MAX_ANSWER_WORDS:
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
        out = list(picked)
        have = {_norm_key(c.text) for c in out}
        nwords = sum(len(c.text.split()) for c in out)
        for c in list(picked):
            if c.section_id is None or c.order[2] is None:
                continue
            sec = self._section_text.get(c.section_id)
            if sec is None:
                continue
            text = sec[0]
            spans = _sentence_spans(text)
            i = next((k for k, (a, _b) in enumerate(spans) if a == c.order[2]), None)
            if i is None:
                continue
            wanted = []
            if _ANAPHOR.match(c.text) and i > 0:
                wanted.append((i - 1, -1))
            if i + 1 < len(spans) and _ANAPHOR.match(" ".join(text[spans[i + 1][0]:spans[i + 1][1]].split())):
                wanted.append((i + 1, 1))
            for k, _side in wanted:
                a, b = spans[k]
                sent = clean_sentence(text[a:b])
                key = _norm_key(sent)
                n = len(sent.split())
                if key in have or not is_answer_sentence(sent) or nwords + n > MAX_ANSWER_WORDS:
                    continue
                have.add(key)
                nwords += n
                out.append(Candidate(sent, c.paper, c.section_id, c.section, c.page, c.passage_id,
                                     (c.order[0], c.order[1], a), wiki_section=c.wiki_section,
                                     score=c.score - 0.01))
        return out

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
            key = _norm_key(c.text)
            verdict = None
            for cl in claims:
                ck = _norm_key(cl["claim"])
                if ck and (ck in key or key in ck):
                    verdict = cl.get("verdict", "supported" if cl.get("supported") else "unsupported")
                    if verdict != "supported":
                        break
            if verdict in (None, "supported"):
                ok.append(c)
        return ok, (traced if len(ok) == len(picked) else None)


#: A fixed factor (MiniLM's dimension) on the metric's products before its weights apply, so
#: that a product of two unit vectors' coordinates is of the order of 1 (what the fit assumes;
#: the fit and the answerer use this same constant, whatever the model).
METRIC_SCALE = 384.0


def _centred_cosines(qvec, cands: Sequence[Candidate], metric: Sequence[float] | None = None,
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


def _bare_title(title: str) -> str:
    """A section title without its number ("4.2 Results", "IV.B Cost", "A.1 Setup" -> the
    words; "A satisfactory model" keeps its article)."""
    bare = re.sub(r"^\s*(?:\d+(?:\.\d+)*\.?|[IVX]+(?:\.[A-Z\d]+)*\.?|[A-Z](?:\.[A-Z\d]+)+\.?"
                  r"|[A-Z]\.)\s+", "", title or "")
    return bare.strip() or title


def _norm_key(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


_SPAN_CACHE: dict[str, list[tuple[int, int]]] = {}


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    hit = _SPAN_CACHE.get(text)
    if hit is None:
        from ..pdf.passages import split_sentences

        hit = split_sentences(text)
        if len(_SPAN_CACHE) > 2000:
            _SPAN_CACHE.clear()
        _SPAN_CACHE[text] = hit
    return hit


def _explain(c: Candidate) -> dict:
    return {"text": c.text, "score": round(c.score, 4), "evidence": round(c.evidence, 4),
            "paper": c.paper, "section": c.section, "section_id": c.section_id,
            "start": c.order[2] if c.section_id else None,
            "wiki_section": c.wiki_section, "pointed": c.pointed,
            **{k: round(v, 4) for k, v in c.parts.items()}}
