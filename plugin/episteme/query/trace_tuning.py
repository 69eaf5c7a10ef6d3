"""The tracer's calibrated numbers, in one place: :class:`TraceTuning`.

Each field says which benchmark set it (``benchmarks/bench_trace.py`` on
``../shared/data/gold/dev_trace.jsonl``, ``RESULTS-trace.md``; the table penalty in
``RESULTS-verify.md``).  A :class:`~episteme.query.trace.Tracer` and its
:class:`~episteme.query.pool.Pool` take one; tests and benchmarks pass other values instead of
changing module globals.  The verifier's thresholds are :class:`episteme.query.verify.VerifyTuning`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TraceTuning:
    """How passages are pooled and scored for the claims of an answer (defaults = what ships).

    Support of a passage for a claim = ``w_cos`` x cosine + ``w_cover`` x IDF-weighted coverage
    of the claim's content words + ``w_run`` x shared-run bonus.  Order of passages for the
    answer as a whole: ``w_answer_max`` x best claim support + the claims' support averaged with
    weights = how much each claim says (its IDF mass, so "Yes." weighs nothing) +
    ``w_answer_bm25`` x BM25 of the whole answer (normalised to the pool's best) -
    ``summary_penalty`` for abstract / introduction / conclusion passages, which restate results
    that a body section states in full (when both match, the body is the better citation).
    """

    #: Dense (embedding) candidates per claim (set by hand; bench_trace's recall).
    dense_k: int = 24
    #: BM25 candidates per claim (set by hand; bench_trace's recall).
    lexical_k: int = 24
    #: Weight of the cosine similarity in a passage's support (bench_trace).
    w_cos: float = 1.0
    #: Weight of the IDF-weighted coverage of the claim's content words (bench_trace).
    w_cover: float = 0.5
    #: Weight of the shared-run bonus (verbatim-ish quotes; bench_trace).
    w_run: float = 0.1
    #: A shared run of this many words gets the whole run bonus.
    run_full: int = 6
    #: Weight of the whole answer's BM25 in the answer-level order (bench_trace).
    w_answer_bm25: float = 0.25
    #: The best single claim counts half: a passage fitting one claim closely (the sentence that
    #: restates "divide by sqrt(d_k)") must not outrank the one that supports the answer's claims
    #: together (answers usually come from one place).  Measured on dev_trace (answer hit@1 the
    #: same for 0.25 .. 0.75, 0.05 lower at 1.0 with the stemmer of session 7; leave-one-out 0.95).
    w_answer_max: float = 0.5
    #: Per claim, passages are ordered by their own support + this x the answer-level score
    #: (normalised to the best passage), a coherence prior; the claim's support stays its own.
    claim_context_weight: float = 0.3
    #: Lowered answer-level score of abstract / introduction / conclusion passages (bench_trace).
    summary_penalty: float = 0.06
    #: A table passage (an object of its own since ingest keeps tables apart: caption + one row
    #: per line) matches an answer's words through its caption and row labels, but it *states*
    #: values: for claims that assert no number (a qualitative finding, "removing X hurts Y") the
    #: sentence of the body that says it is the better citation.  So at the answer level a table
    #: passage loses this when no claim of the answer states a number (as the verifier reads
    #: numbers: not "SQuAD v1.1" or "newstest2014"); an answer about a table value keeps the table
    #: at full strength, even beside a qualitative claim (the table is then a right citation;
    #: scaling the penalty by the qualitative claims' share instead cost 2 of 60 two-claim answers
    #: their gold table).  The value sits on a plateau: 0.1 to 0.5 give the same ranks
    #: (RESULTS-verify.md).
    table_penalty: float = 0.25
    #: Claims whose best passage scores below this are reported as unsupported (calibrated in
    #: benchmarks/bench_trace.py on ../shared/data/gold/dev_trace.jsonl; see RESULTS-trace.md).
    support_threshold: float = 0.68


#: The shipped values.
DEFAULT = TraceTuning()
