"""The offline answerer's tuning, in one place: every calibrated number of its candidate search,
ranking, selection and abstention (:class:`AnswerTuning`), the fitted ranking weights
(:data:`WEIGHTS` over :data:`FEATURES`) and the learned answer metric (:func:`load_metric`).

Why a frozen dataclass and not module globals: the benchmark's folds and the tests pass their
own values (``OfflineAnswerer(..., tuning=replace(DEFAULT_TUNING, section_cost=0.0))``) instead
of patching globals other threads of a warm engine also read.  Each field says which benchmark
set it (``benchmarks/bench_answer.py``; results in ``benchmarks/RESULTS-answer.md``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

NO_ANSWER = "The wiki does not cover this question."

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

#: The learned answer metric (see :mod:`episteme.query.answer_offline`): a weight per embedding
#: dimension, fitted with :data:`WEIGHTS` by ``benchmarks/bench_answer.py --fit --save-metric``.
METRIC_FILE = Path(__file__).resolve().parent.parent / "data" / "answer_metric.json"

#: A fixed factor (MiniLM's dimension) on the metric's products before its weights apply, so
#: that a product of two unit vectors' coordinates is of the order of 1 (what the fit assumes;
#: the fit and the answerer use this same constant, whatever the model).
METRIC_SCALE = 384.0


@dataclass(frozen=True)
class AnswerTuning:
    """The offline answerer's calibrated numbers (defaults = what ships)."""

    #: chosen sentences; up to two more that they lean on (``_with_context``)
    max_sentences: int = 4
    max_answer_words: int = 120
    #: x the cosine to the most similar sentence already chosen (MMR)
    redundancy: float = 0.3
    #: per word of a sentence, taken off its selection gain: within the same word budget, more
    #: and shorter sentences cover more of what the question may be asking (chosen by the 5-fold
    #: CV of benchmarks/bench_answer.py on dev_trace, 0.005 -> 0.01 with section_cost)
    length_cost: float = 0.01
    #: x the share of the question's (locally weighted) terms a sentence adds to those the chosen
    #: ones already hold: a two-part question ("what X, and how long Y?") gets both parts answered
    coverage: float = 0.2
    #: x the number of chosen sentences already from the same paper section: the sentences that
    #: restate the question's topic crowd one section (its opening, its definitions); the one
    #: that answers is often a section further on (chosen by the same 5-fold CV: 0 -> 0.05)
    section_cost: float = 0.05
    #: the best candidates (within ``margin``) the selection chooses among (4 x max_sentences)
    pool: int = 16
    #: passages of the question's pool whose sentences become candidates
    top_passages: int = 20
    #: sentences embedded per question, the best by the cheap pre-score (bounded work)
    embed_top: int = 28
    #: keep sentences within this of the best one's score
    margin: float = 0.35
    # evidence = w_cos * cosine + w_lex * IDF coverage of the question + w_passage * passage
    # score (normalised to the best) + type bonus + w_pointed (written-from section) - penalties;
    # hand-set, checked by benchmarks/bench_answer.py (RESULTS-answer.md)
    w_cos: float = 1.0
    w_lex: float = 0.6
    w_passage: float = 0.15
    #: / (1 + rank of the wiki section that points there)
    w_pointed: float = 0.15
    #: wiki sections whose paper sections are searched whole
    pointed_ranks: int = 5
    #: per rank step of the paper's best wiki section
    w_wiki_rank: float = 0.03
    #: was 0.12; 0.2 gained one TUNE question of bench_answer.py (RESULTS-answer.md)
    type_bonus: float = 0.2
    #: a quantity question's sentence without any number
    type_miss: float = 0.08
    #: a limitation / comparison question's sentence that states one
    w_cue: float = 0.06
    #: abstract/introduction restate; the body usually says it fully
    summary_penalty: float = 0.03
    #: best ``evidence`` below which the offline answer abstains (calibrated on half the dev
    #: questions by benchmarks/bench_answer.py; see RESULTS-answer.md)
    min_evidence: float = 0.70
    #: the same when retrieval's relevance signal says the wiki does not cover the question:
    #: only clear evidence overrides it (calibrated like min_evidence by bench_answer.py, on the
    #: TUNE papers' questions and the unanswerable ones; see RESULTS-answer.md)
    min_evidence_uncovered: float = 1.05
    #: stored sentences of the retrieved papers nearest the question that become candidates
    #: (with their passages), beside the question's best passages
    dense_sentences: int = 30
    #: papers whose sentence matrices a warm answerer keeps
    paper_cache: int = 48
    #: sections of the retrieved papers whose title is nearest the question that are searched
    #: whole (beside the pointed ones), when the title's cosine reaches ``title_min_cos``
    title_sections: int = 2
    title_min_cos: float = 0.3
    #: the ranking's fitted weights (:data:`WEIGHTS`, benchmarks/bench_answer.py --fit)
    weights: dict[str, float] = field(default_factory=lambda: dict(WEIGHTS))


DEFAULT_TUNING = AnswerTuning()


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
