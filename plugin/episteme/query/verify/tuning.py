"""The verifier's calibrated numbers, in one place: :class:`VerifyTuning`.

Each field names the benchmark that set it (``benchmarks/bench_verify.py`` on
``../shared/data/gold/dev_verify.jsonl``, cross-validated by paper; ``RESULTS-verify.md``).
A :class:`~.verifier.Verifier` takes one; tests and benchmarks pass other values instead of
changing module globals.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VerifyTuning:
    """What the verifier's checks need as thresholds (the defaults are what ships)."""

    #: How many of a claim's ranked passages the verifier reads (set by hand; bench_verify's
    #: "top passage gold" and true-kept figures at 6).
    evidence_k: int = 6
    #: Share of the claim's content words a passage sentence must contain before its negation
    #: or comparison is held against the claim (below it the sentence may be about something
    #: else).  Set by hand; bench_verify's grid (0.4-0.7) shows the fitted choice beside it.
    topic_cover: float = 0.4
    #: The claim's non-numeric content words a passage must share before a missing number
    #: counts as *contradicted* rather than *unsupported* (bench_verify's grid, 0.3-0.6).
    number_topic_cover: float = 0.45
    #: The least share of a claim's words (numbers aside) a passage must have for its numbers
    #: to count as the claim's values: half of ``topic_cover`` (a table row shares few words);
    #: set before measuring (RESULTS-verify.md, H10c).
    number_topic_floor: float = 0.2
    #: Distinct claim words a negation's scope must hold before a sentence counts as denying
    #: the claim (set by hand; bench_verify's negation rows).
    neg_min_hits: int = 2
    #: A negated sentence makes a red mark (``contradicted``) only when it holds this share of
    #: the claim's words and the claim's words in the negation's scope (two, or one as its head);
    #: below it the verdict is ``unsupported`` with ``check`` (issue 31: negations about
    #: something else read as contradictions of faithful paraphrases).  Set before measuring,
    #: between ``topic_cover`` and 1; dev_verify and the corpus claims give the figures
    #: (RESULTS-verify.md).
    negation_cover: float = 0.6


#: The shipped values.
DEFAULT = VerifyTuning()
