"""The one list of function words the query layer leaves out of matching.

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
