"""The one list of function words the query layer leaves out of matching, and the compile layer's
named extensions of it (key terms, tags).

The tracer (claim-to-passage overlap, the verifier's content words, the abstention signal) and
the wiki search (the FTS5 OR query over wiki sections) used to keep a list each, and the two had
drifted apart ("we", "use", "one", "however" were content words to one and noise to the other).
Both now read this one; it lives in its own small module because :mod:`episteme.query.wikisearch`
must not import the tracer (and its embedding stack) to get it.
"""

from __future__ import annotations

_STOP_WORDS = (
    "a an and are as at be by can do does did for from has have had how in into is it its of on "
    "or that the their there these this those to was were what when where which who whom why "
    "with about after also between both each more most other over same such than then they "
    "them via would could should will may might been being not no so if while because using "
    "used use uses our we i you he she his her one two any all some only very much many "
    "just like thus hence therefore however"
)

#: Lower-case function words (compare ``word.lower()``).
STOP: frozenset[str] = frozenset(_STOP_WORDS.split())

# The compile layer's lists: the same function words plus the scaffolding of scientific prose,
# which carries no topic.  They extend :data:`STOP` rather than keep lists of their own; the
# differences between them are kept as named sets, on purpose, because the offline writer's
# pages, tags and the plan's key terms were measured with exactly these lists (changing one
# changes what the writer quotes and merges, so it is a benchmark change, not a clean-up).

#: Words of scientific prose that name no topic ("figure", "results", "proposed", "et al"):
#: left out of both the key terms and the tags.
_PROSE_SCAFFOLD_WORDS = """
    able above across again against al although among another based before below but case
    cases different doing down due during either et etc example few fig figure first
    following four further given having here hers him itself less let made make makes me
    must my new nor now number off often once out own paper per present proposed rather
    results second section see several show shown shows since table third three through too
    under until up upon us way ways well whether within without work yet your
"""
PROSE_SCAFFOLD: frozenset[str] = frozenset(_PROSE_SCAFFOLD_WORDS.split())

#: Further words the tags leave out: a paper's own vocabulary of method and outcome ("model",
#: "task", "reported") is in every section, so it would tag every page alike.
_TAG_ONLY_STOP_WORDS = """
    approach compared describe described even five high large low method model models obtain
    obtained ours presented propose report reported respectively result set sets small still
    task tasks theirs
"""
TAG_ONLY_STOP: frozenset[str] = frozenset(_TAG_ONLY_STOP_WORDS.split())

#: Further words the key terms leave out: hedges and fillers ("similar", "various", "e.g.").
#: "model" and "task" stay key terms: in the plan they tell sections apart.
_KEYTERM_ONLY_STOP_WORDS = """
    almost already always around best better certain done e.g eg else found i.e ie least
    near neither others particular possible provide similar simple though toward towards
    type types various whose works
"""
KEYTERM_ONLY_STOP: frozenset[str] = frozenset(_KEYTERM_ONLY_STOP_WORDS.split())

#: The key terms' and the plan's stop words (:mod:`episteme.compile.keyterms`).  "hence" is a
#: content word there, as it was when the plan's evidence was measured.
KEYTERM_STOP: frozenset[str] = (STOP - {"hence"}) | PROSE_SCAFFOLD | KEYTERM_ONLY_STOP

#: The tags' stop words (:mod:`episteme.compile.tags`); "hence" and "therefore" stay words there.
TAG_STOP: frozenset[str] = (STOP - {"hence", "therefore"}) | PROSE_SCAFFOLD | TAG_ONLY_STOP
