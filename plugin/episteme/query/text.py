"""The one owner of the query layer's text rules: tokens, stems, stop words, typographic folding.

Every module that compares words (the tracer's claim-to-passage overlap, the verifier's checks,
the wiki search's FTS5 queries, the answerers' features, ``lint --claims`` and the compiler's
key terms) reads them here, so a word is cut, stemmed and folded the same way on both sides of
every comparison.  Light (standard library only): :mod:`episteme.query.wikisearch` and the
compiler import it without the tracer's embedding stack.

Sentence splitting is owned by :func:`episteme.pdf.passages.split_sentences` (the PDF layer,
below this one, needs it at ingest).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence

# ------------------------------------------------------------------------------ stop words

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


# ------------------------------------------------------------------------------ folding

_ONE = str.maketrans({"’": "'", "‘": "'", "−": "-", "–": "-", "—": "-", "“": '"', "”": '"',
                      "\u00a0": " ", "\u2009": " ", "\u202f": " "})
_LIG = str.maketrans({"ﬁ": "fi", "ﬂ": "fl", "ﬀ": "ff", "ﬃ": "ffi", "ﬄ": "ffl"})

def normalize(text: str) -> str:
    """Typographic quotes, dashes and odd spaces to their plain forms, one character for one,
    so offsets into the result are offsets into ``text`` (quotes are cut from the original)."""
    return (text or "").translate(_ONE)


def unligature(text: str) -> str:
    """``ﬁ`` → ``fi`` and friends (changes lengths: for matching words only)."""
    return (text or "").translate(_LIG)


def fold(text: str) -> str:
    """Accents and compatibility forms folded away (Unicode NFKD, combining marks dropped):
    "Rocktäschel" = "Rocktaschel", "Müller" = "Muller", ligatures and full-width forms to their
    plain letters.  A name is the same name however a PDF or a writer spelled its letters.
    Changes lengths: for keys and matching only, never for offsets."""
    text = text or ""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


# ------------------------------------------------------------------------------ tokens and stems

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


# ------------------------------------------------------------------------------ text helpers


#: words whose "at" before a suffix is the verb ending "-ate" ("generated", "generation"): that
#: "at" goes too, so the verb and its noun meet ("gener"); "defeated" has no "-ate" (see stem)
_ATE_FORMS = re.compile(r"at(?:e|es|ed|ely|ing|ion|ions|ional|ionally)$")


def _has_vowel(s: str) -> bool:
    return any(c in "aeiou" for c in s) or "y" in s[1:]


def _short_cvc(s: str) -> bool:
    """A 3-letter root consonant-vowel-consonant ("bas", "tim", "hop"): its word ends in an "e"
    ("base", "time", "hope"), kept so the stem stays 4 letters (and a prefix of what FTS5's
    Porter stemmer makes of the word, which :meth:`Tracer.doc_freq` relies on)."""
    return (len(s) == 3 and s[0] not in "aeiou" and s[1] in "aeiouy" and s[2] not in "aeiouwxy")


def _undouble(root: str) -> str:
    """A root whose last consonant was doubled before its suffix: "stopp" -> "stop", "runn" ->
    "run" (not "l", "s", "z": "call", "pass"), and British "-elled" / "-olled" ("modell")."""
    if len(root) >= 4 and root[-1] == root[-2] and root[-1] not in "aeiouylsz":
        return root[:-1]
    if (root.endswith("ell") and len(root) >= 6) or (root.endswith("oll") and len(root) >= 7):
        return root[:-1]
    return root


def fts_quoted(text: str) -> str:
    """``text`` as one FTS5 string (a phrase when it holds several words), quotes escaped."""
    return '"' + text.replace('"', '""') + '"'


def fts_term(term: str, word: str | None = None) -> str:
    """The FTS5 query that counts the passages holding a (stemmed) ``term``, ``word`` being a
    word of the text asked about that makes the stem.  FTS5 runs its Porter stemmer on the
    query too, and our stem is no Porter stem: Porter cuts the final "s" of our "wors" (worse)
    to "wor", a prefix of "work"; our "negativ" is no prefix of Porter's "neg"; our "tru" is
    not Porter's "true".  So: ``word`` as FTS5 reads it (Porter's class of that word), or the
    stem as a prefix (4+ letters: the other words of the class, "vanish" for "vanishingly" when
    the passages say "vanishing"), unless it ends in an "s" Porter would cut.

    Why the word comes from the caller's own text (:func:`surface_words`), never from what the
    process met before: a document frequency that depended on history made the same question
    score differently in a warm server and a fresh command line."""
    prefix = fts_quoted(term) + ("*" if len(term) >= 4 and not term.isdigit() else "")
    if word is None or word == term:
        return prefix
    if term.endswith("s") and not term.endswith("ss"):
        return fts_quoted(word)
    return f"{fts_quoted(word)} OR {prefix}"


def surface_words(texts: Iterable[str]) -> dict[str, str]:
    """Stem -> the first word of ``texts`` that makes it (for :func:`fts_term`)."""
    out: dict[str, str] = {}
    for text in texts:
        for w in words(text):
            out.setdefault(stem(w), w)
    return out


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A small suffix stripper, applied to claim and passage words alike, so a word meets its
    inflections: "reduce" / "reduced" / "reduces" / "reducing" -> "reduc", "study" / "studied" /
    "studies" -> "studi", "stop" / "stopped" -> "stop", "use" / "used" / "using" -> "use",
    "generate" / "generation" -> "gener", "gradients" -> "gradient".  Not Porter: it only has
    to be consistent on both sides, and it is (benchmarks/RESULTS-verify.md counts the regular
    inflections of the papers' own words that meet their base form).  In order: a plural or
    third-person "s"; one of "-ing", "-ed", "-ied" (a doubled consonant undone); an adverb's
    "-ly"; then nouns of quality and action ("-ness", "-ment", "-ity", "-ation" ...) with a
    final "e" dropped and a final "y" after a consonant read as "i" (what "-ies" / "-ied"
    leave).  Words with digits, and words of 1-2 letters, are kept as they are."""
    w = word.lower()
    if len(w) <= 2 or not w.isalpha():
        return w
    r = w
    cut = False  # an inflection was removed (a 2-letter root then gets its "e" back: "used")
    if r.endswith("sses"):
        r = r[:-2]
    elif r.endswith("ies") and len(r) >= 4:
        r, cut = r[:-3] + "i", True
    elif r.endswith("s") and len(r) >= 4 and not r.endswith(("ss", "ias")) and not (
            len(r) >= 5 and r.endswith(("us", "is"))):  # "corpus", "basis"; but "gpus", "apis"
        r = r[:-1]
    for suffix in ("ingly", "edly", "ing", "ied", "ed"):
        if r.endswith(suffix) and not (suffix == "ed" and r.endswith("eed")):  # "need", "exceed"
            root = r[: len(r) - len(suffix)] + ("i" if suffix == "ied" else "")
            if len(root) >= 2 and _has_vowel(root):  # not "thing", "string"
                r, cut = _undouble(root), True
                if r != root and r.endswith("ed") and _has_vowel(r[:-2]):
                    r = r[:-2]  # "embedded" -> "embed" -> as "embed" itself reads ("emb")
                elif r == root and _short_cvc(r):
                    r += "e"  # "based", "timed", "hoped" (but "hopped" -> "hop")
            break
    if r.endswith("ily") and len(r) >= 7:
        r = r[:-3] + "i"  # "heavily" = "heavy"
    elif r.endswith("bly") and len(r) >= 6:
        r = r[:-1]  # "probably" = "probable"
    elif r.endswith("ly") and not r.endswith("ily") and len(r) >= 6 and r[-3] != r[-4] \
            and r[-3] != "p":  # not "supply", "apply", "multiply"
        r = r[:-2]
    if len(r) == 2 and cut:
        r += "e"
    for _ in range(2):  # "implementation" -> "implement" -> "imple" -> "impl"
        before = r
        for suffix, repl, keep in (("ization", "iz", 4), ("isation", "is", 4), ("ational", "at", 2),
                                   ("ation", "at", 2), ("ness", "", 4), ("ment", "", 4),
                                   ("ity", "", 4), ("iti", "", 4)):
            if r.endswith(suffix) and len(r) - len(suffix) >= keep:
                r = r[: len(r) - len(suffix)] + repl
                break
        if r.endswith("e") and len(r) >= 4 and not (len(r) == 4 and _short_cvc(r[:3])):
            r = r[:-1]
        if r.endswith("y") and r[-2] not in "aeiou":
            r = r[:-1] + "i"
        if r.endswith("at") and len(r) >= 6 and r[-3] not in "aeiou" and _ATE_FORMS.search(w):
            r = r[:-2]
        if r == before:
            break
    return r


def words(text: str) -> list[str]:
    """Lower-cased word tokens (hyphenated words split, underscores dropped)."""
    return [m.group(0).lower() for m in _TOKEN.finditer(text or "")]


def content_terms(text: str) -> list[str]:
    """Distinct stemmed content words of ``text`` in order (stopwords and 1-letter words dropped)."""
    out: dict[str, None] = {}
    for w in words(text):
        if w in STOP or (len(w) == 1 and not w.isdigit()):
            continue
        out.setdefault(stem(w), None)
    return list(out)


def longest_common_run(a: Sequence[str], b: Sequence[str] | dict[str, list[int]]) -> int:
    """Length of the longest run of consecutive words shared by ``a`` and ``b``; ``b`` may be
    given as its word → positions index (:func:`word_positions`), which callers cache.  The
    work is proportional to the number of matching word pairs, not ``len(a) * len(b)``."""
    where = b if isinstance(b, dict) else word_positions(b)
    if not a or not where:
        return 0
    best = 0
    prev: dict[int, int] = {}
    for x in a:
        cur: dict[int, int] = {}
        for j in where.get(x, ()):
            n = prev.get(j - 1, 0) + 1
            cur[j] = n
            if n > best:
                best = n
        prev = cur
    return best


def word_positions(ws: Sequence[str]) -> dict[str, list[int]]:
    where: dict[str, list[int]] = {}
    for j, y in enumerate(ws):
        where.setdefault(y, []).append(j)
    return where
