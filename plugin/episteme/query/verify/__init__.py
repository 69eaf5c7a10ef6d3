"""Offline claim verification: does the evidence *say* what the claim says?

Similarity finds the passage a claim is about; it cannot tell "27.3 BLEU" from "28.4 BLEU", a
swapped language pair, an added "not" or a reversed "higher".  This module compares what a claim
asserts with the text of its candidate passages, deterministically (no model, no LLM):

* **Numbers** (:func:`numbers_in`): values with their format and scale read the same way on
  both sides (``28.4`` = ``28.40``; ``86.3%`` = ``0.863``; ``37,000`` = ``37000`` = pypdf's
  ``37, 000``; ``4.5 million`` = ``4.5M``; ``3/4`` = the ``3 4`` a superscript fraction becomes;
  number words; ``a third`` = 1/3; a value inside a stated range ``2-4``).  A claim number the
  evidence does not contain makes the claim contradicted when the passage is about the same
  thing and gives another value, unsupported otherwise.
* **Named things** (:func:`entities_in`), recognised by *form*, not by a list: tokens mixing
  letters and digits (``ResNet-152``, ``P4``, ``CoNLL-2012``), mixed-case or all-caps tokens
  (``ViT``, ``MNIST``), capitalised words inside a sentence, ``X-to-Y`` pairs (direction kept:
  ``English-to-German`` = ``English-German`` ≠ ``German-English``).  A name no passage in scope
  contains makes the claim unsupported; a name replaced in the evidence by a *sibling* (same
  shape and a shared prefix or suffix: ``ViT-Large``/``ViT-Huge``, ``RNNsearch-50``/
  ``RNNencdec-50``, ``English-German``/``English-French``) makes it contradicted.
* **Bindings**: a claim value must belong to the claim's name in the evidence.  Three readings
  of the evidence's layout: the nearest preceding sibling name (table rows: ``ViT-Large 24 1024
  ... ViT-Huge 32 ...``), table columns (a header run of names, then rows of as many cells), and
  parallel order (``on A and B ... x y``).  Roles (``the generator used X, the discriminator
  Y``) are checked the same way with word siblings (``generator``/``discriminator``,
  ``input``/``output``).
* **Negation** (``not``, ``no``, ``never``, ``without``, ``n't``, ``free of`` ...) near the
  shared content words of the claim and its best evidence sentence must agree.  A sentence that
  says all the claim says (every content word and number) with the claim's polarity settles it:
  a negation elsewhere in the passage about some of the same words denies something else.
* **Quotes** (:func:`verbatim_span`): a claim copying a sentence of a passage, or a part of one
  from a sentence or clause start to a clause end, is supported by it before any check runs (a
  passage cannot contradict itself; ``bench_verify.py --self-consistency`` checks that the
  checks agree even without this rule).
* **Comparisons**: ``higher/lower``, ``more/less``, ``better/worse``, ``faster/slower``,
  ``outperforms/underperforms``, ``rises/falls`` ... compared by direction, with the sides of the
  comparison (which shared words stand before and after the comparative) and with quantities
  where more is worse (error, loss, cost, time ...) turning "higher" into "worse".

Every verdict comes with a ``reason`` ``{code, text}`` and the exact ``quote`` (a span of the
passage, verbatim) that supports or contradicts the claim.

The package: one module per check (:mod:`.numbers`, :mod:`.names`, :mod:`.bindings` and
:mod:`.tables`, :mod:`.polarity` over the cue words of :mod:`.cues`, :mod:`.quotes`), the
evidence's sentences (:mod:`.sentences`), and :mod:`.verifier`, which orders the checks and
decides which verdict wins (the precedence lives there alone).  Thresholds are
:class:`~.tuning.VerifyTuning`.  Dependencies run one way: ``query.text`` <- ``verify`` <-
``query.trace``; nothing here imports the tracer.  The names other modules use are
re-exported here, so ``from episteme.query.verify import Verifier`` is the import to write.
"""

from __future__ import annotations

from pathlib import Path

from .cues import GOOD_CUES, MAG_CUES, NEG_CUES
from .evidence import Evidence
from .names import Ent, entities_in, entity_key, lang_pair, shape, siblings
from .numbers import LABEL_WORD, Num, claim_numbers, number_matches, numbers_in
from .polarity import Comparison, comparisons, goodness, negated_heads, negated_near
from .quotes import verbatim_span
from .sentences import sentence_spans, tabular
from .tables import TableRow, grid_check, table_rows
from .tuning import DEFAULT as DEFAULT_TUNING
from .tuning import VerifyTuning
from .verdict import CONTRADICTED, SUPPORTED, UNSUPPORTED, VERDICTS
from .verifier import Verifier

#: The shipped thresholds under their old names (read-only: pass a :class:`VerifyTuning` to
#: :class:`Verifier` to change them).
EVIDENCE_K = DEFAULT_TUNING.evidence_k
TOPIC_COVER = DEFAULT_TUNING.topic_cover
NUMBER_TOPIC_COVER = DEFAULT_TUNING.number_topic_cover


def source_files() -> list[Path]:
    """The package's modules: what a cache of verdicts must hash (``lint --claims``)."""
    return sorted(Path(__file__).parent.glob("*.py"))


__all__ = [
    "CONTRADICTED", "DEFAULT_TUNING", "EVIDENCE_K", "GOOD_CUES", "LABEL_WORD", "MAG_CUES",
    "NEG_CUES", "NUMBER_TOPIC_COVER", "SUPPORTED", "TOPIC_COVER", "UNSUPPORTED", "VERDICTS",
    "Comparison", "Ent", "Evidence", "Num", "TableRow", "Verifier", "VerifyTuning",
    "claim_numbers", "comparisons", "entities_in", "entity_key", "goodness", "grid_check",
    "lang_pair", "negated_heads", "negated_near", "number_matches", "numbers_in", "sentence_spans",
    "shape", "siblings", "source_files", "tabular", "table_rows", "verbatim_span",
]
