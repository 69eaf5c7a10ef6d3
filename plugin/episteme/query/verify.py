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

Why one module: numbers, names, bindings, tables, negation and comparisons are checks one
:class:`Verifier` runs over the same evidence sentences, and which verdict wins (contradicted
over unsupported) is decided in :meth:`Verifier.verify`; split apart, that precedence would be
spread over files.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .text import STOP, normalize, stem, unligature, words

SUPPORTED, CONTRADICTED, UNSUPPORTED = "supported", "contradicted", "unsupported"
VERDICTS = (SUPPORTED, CONTRADICTED, UNSUPPORTED)

#: Distinct claim words a negation's scope must hold in the two most on-topic sentences (2 in
#: the others) before the passage counts as denying a positive claim.
NEG_MIN_HITS = 2
#: How many of a claim's ranked passages the verifier reads.
EVIDENCE_K = 6
#: Share of the claim's content words a passage sentence must contain before its negation or
#: comparison is held against the claim (below it the sentence may be about something else).
TOPIC_COVER = 0.4
#: The claim's non-numeric content words a passage must share before a missing number counts
#: as *contradicted* rather than *unsupported*.
NUMBER_TOPIC_COVER = 0.45
#: the least share of a claim's words (numbers aside) a passage must have for its numbers to
#: count as the claim's values (half of :data:`TOPIC_COVER`: a table row shares few words)
NUMBER_TOPIC_FLOOR = 0.2


# ------------------------------------------------------------------------------------ numbers

_NUM_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "hundred": 100, "twice": 2, "thrice": 3, "double": 2, "triple": 3,
}
_FRACTION_WORDS = {"half": 0.5, "third": 1 / 3, "quarter": 0.25, "fourth": 0.25, "fifth": 0.2}
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "mio": 1e6, "b": 1e9,
          "billion": 1e9, "bn": 1e9, "t": 1e12, "trillion": 1e12}
_NUM = re.compile(
    r"(?<![\w.])(?<![A-Za-z]-)(?<![A-Za-z]/)"
    r"(?P<num>\d{1,3}(?:,\s?\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<exp>[eE]-?\d+)?"
    r"(?:\s?(?P<pct>%|percent\b))?"
    r"(?:\s?(?P<scale>[kKMB](?![A-Za-z])|thousand\b|million\b|billion\b|trillion\b|bn\b))?"
    # never part of a digit run: "31st" is an ordinal, not a "3" followed by "1st"
    r"(?![A-Za-z\d])"
)
_WORD_NUM = re.compile(r"\b(?P<pre>an?\s+|one\s+)?(?P<w>" + "|".join(
    sorted(list(_NUM_WORDS) + list(_FRACTION_WORDS), key=len, reverse=True)) + r")s?\b", re.IGNORECASE)
_HEDGE = re.compile(r"\b(about|roughly|approximately|around|nearly|almost|close to|some|over|~)\s*$",
                    re.IGNORECASE)
_REFS = re.compile(r"\[\d{1,3}(?:\s*[,;\u2013-]\s*\d{1,3})*\]")
#: A word that names a numbered part of a paper ("Table 2", "Fig. 4", "Section 3.2", "Eq. (5)",
#: "§3", "p. 24"): the number right after one is a label, not a value.  Words that also name a
#: quantity ("total step 250", "in case 2 of 3") are labels only capitalised ("Step 2", "Study 1",
#: "Task 3").  Only these: a number after any other word ("After 24 hours") is a value.
LABEL_WORD = (
    r"(?i:fig(?:ure)?s?|tab(?:le)?s?|sec(?:tion)?s?|§§?|ch(?:ap(?:ter)?)?s?|app(?:endix|endices)?"
    r"|eqn?s?|equations?|alg(?:orithm)?s?|thm|theorems?|lemmas?|corollar(?:y|ies)"
    r"|prop(?:osition)?s?|def(?:inition)?s?|listings?|footnotes?|pages?|pp?\.)\.?"
    r"|(?:Stud(?:y|ies)|Exp(?:eriment)?s?|Steps?|Stages?|Phases?|Tasks?|Cases?|Conditions?|Rounds?"
    r"|Parts?|Lines?|Rows?|Col(?:umn)?s?|Examples?|Remarks?|Assumptions?|Hypothes[ie]s)\.?")
_LABEL_BEFORE = re.compile(r"(?<![\w.])(?:" + LABEL_WORD + r")\s?\(?$")
#: a label's number: "2", "3.2", "A.1" is no number at all
_LABEL_NUM = re.compile(r"\d{1,3}(?:\.\d{1,2}){0,3}")
#: between two labels of one label word ("Tables 2 and 3", "Figures 4-6", "Sections 3, 4")
_LABEL_JOIN = re.compile(r"\)?\s*(?:,\s*(?:and\s+)?|and\s+|&\s*|[-\u2013]\s*|to\s+)\(?")
_FRAC = re.compile(r"(?<![\w./])(\d{1,2})\s?/\s?(\d{1,2})(?![\w/])")
_RANGE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?(?:-|to)\s?(\d+(?:\.\d+)?)(?![\w.])")


@dataclass
class Num:
    """One number as written: ``values`` are its readings (the value, and scaled/percent forms)."""

    text: str
    start: int
    end: int
    values: frozenset[float]
    word: bool = False  # written as a word ("three")
    lo: float | None = None  # a range "2-4" also carries its bounds
    hi: float | None = None
    hedged: bool = False  # "about 90%", "roughly 4.5M": stated to its precision only


def _key(x: float) -> float:
    return float(f"{x:.6g}")


def _readings(value: float, pct: bool, scale: str | None) -> frozenset[float]:
    out = {value}
    if pct:
        out.add(value / 100.0)
    if scale:
        out.add(value * _SCALE[scale.lower()])
    return frozenset(_key(v) for v in out)


def numbers_in(text: str, *, evidence: bool = False) -> list[Num]:
    """See :func:`_numbers`; passage readings are cached (they never change)."""
    return list(_numbers_cached(text)) if evidence else _numbers(text)


@functools.lru_cache(maxsize=8192)
def _numbers_cached(text: str) -> tuple[Num, ...]:
    return tuple(_numbers(text, evidence=True))


def _numbers(text: str, *, evidence: bool = False) -> list[Num]:
    """The numbers of ``text`` with their spans.  With ``evidence`` (passage text) a comma group
    with a space (pypdf's ``508, 305``) is read both as one number and as two, and two adjacent
    small integers (a superscript fraction ``3 4``) also as their quotient."""
    text = normalize(text)
    # citation markers ("[23]", "[19, 9]") are not values: blank them, keeping offsets
    text = _REFS.sub(lambda m: " " * len(m.group(0)), text)
    out: list[Num] = []
    label_end = -1  # where the last label ended ("Tables 2 and 3": the 3 is one too)
    for m in _NUM.finditer(text):
        raw = m.group("num")
        if _LABEL_NUM.fullmatch(m.group(0)) and (
                _LABEL_BEFORE.search(text[max(0, m.start() - 14):m.start()])
                or (label_end >= 0 and _LABEL_JOIN.fullmatch(text, label_end, m.start()))):
            label_end = m.end()
            continue  # "Table 2", "Figure 4", "Section 3.2", "Study 1": a name, not a value
        if not evidence and re.search(r",\s", raw):
            # in a claim "10, 100" is a list: read the first group alone
            first = raw.split(",")[0]
            out.append(Num(first, m.start(), m.start() + len(first), _readings(float(first), False, None)))
            continue
        try:
            value = float(raw.replace(",", "").replace(" ", "") + (m.group("exp") or ""))
        except ValueError:
            continue
        vals = set(_readings(value, bool(m.group("pct")), m.group("scale")))
        if re.fullmatch(r"\d\d", raw) and text[max(0, m.start() - 1):m.start()] == "'":
            vals.add(_key(2000 + value if value < 50 else 1900 + value))  # WMT'14 = 2014
        if evidence and re.search(r",\s", raw):
            for part in raw.split(","):
                part = part.strip()
                if part:
                    vals.add(_key(float(part)))
        out.append(Num(m.group(0), m.start(), m.end(), frozenset(vals)))
    for m in _FRAC.finditer(text):
        a, b = int(m.group(1)), int(m.group(2))
        if b and a < b:  # 3/4, not 86.7/85.9 (those are two numbers, read above)
            if not evidence:  # in a claim the fraction is one value, not its two parts
                out = [n for n in out if not (m.start() <= n.start < m.end())]
            out.append(Num(m.group(0), m.start(), m.end(), frozenset({_key(a / b)})))
    for m in _WORD_NUM.finditer(text):
        w = m.group("w").lower()
        if w in _FRACTION_WORDS:
            if not m.group("pre") and w != "half":
                continue  # "third" alone is an ordinal ("the third layer"), not a fraction
            if text[m.end():m.end() + 1] == "-":
                continue  # "half-size", "third-party"
            val = _FRACTION_WORDS[w]
        else:
            val = float(_NUM_WORDS[w])
            before = text[max(0, m.start() - 5):m.start()].lower()
            if before.endswith("all "):
                continue  # "all three" counts the things just named, it states no new value
        out.append(Num(m.group(0), m.start(), m.end(), frozenset({_key(val)}), word=True))
    if not evidence:
        for n in out:
            n.hedged = bool(_HEDGE.search(text[max(0, n.start - 25):n.start]))
    if evidence:
        ints = [n for n in out if not n.word and re.fullmatch(r"\d{1,2}", n.text)]
        for a, b in zip(ints, ints[1:], strict=False):
            if text[a.end:b.start].strip() == "" and int(a.text) < int(b.text):
                out.append(Num(text[a.start:b.end], a.start, b.end,
                               frozenset({_key(int(a.text) / int(b.text))})))
        for m in _RANGE.finditer(text):
            lo, hi = float(m.group(1)), float(m.group(2))
            if lo < hi:
                out.append(Num(m.group(0), m.start(), m.end(), frozenset(), lo=lo, hi=hi))
    out.sort(key=lambda n: n.start)
    return out


def _specificity(n: Num) -> float:
    """How much a value pins down where it is stated: its digits (``21.43`` 4, ``10`` 2), a
    number word counting as one digit."""
    if n.word:
        return 1.0
    scaled = re.search(r"[%kKMB]|thousand|million|billion|trillion|percent", n.text)
    return float(max(1, len(re.sub(r"\D", "", n.text))) + (1 if scaled else 0))


def _compound(text: str, n: Num) -> bool:
    """A number glued by a hyphen to the word after it ("10-crop", "34-layer"): it names a
    setting rather than stating a result."""
    return not n.word and re.match(r"-[A-Za-z]", normalize(text)[n.end:n.end + 2]) is not None


def claim_numbers(claim: str) -> list[Num]:
    """The values a claim asserts (its numbers, labels such as "Table 2" left out)."""
    return numbers_in(claim)


def number_matches(claim_num: Num, ev: Num) -> bool:
    """Same value in any reading (28.4 = 28.40, 86.3% = 0.863), or inside a stated range; a
    hedged claim value ("about 90%") also matches the evidence rounded to its precision."""
    if claim_num.values & ev.values:
        return True
    if claim_num.hedged and not claim_num.word and ev.lo is None:
        digits = len(claim_num.text.split(".")[1].rstrip("%kKMB ")) if "." in claim_num.text else 0
        for cv in claim_num.values:
            for v in ev.values:
                if v and abs(round(v, digits) - cv) < 1e-9 and abs(v - cv) / abs(v) < 0.05:
                    return True
    if ev.lo is not None and ev.hi is not None:
        return any(ev.lo <= v <= ev.hi for v in claim_num.values)
    return False


# ----------------------------------------------------------------------------------- entities

_TOKEN = re.compile(r"[^\s,;:()\[\]{}\"]+")
_STRIP_LEAD = "'\"([{<*"
_STRIP_TRAIL = ".,;:!?)]}>'\"*"
_PAIR = re.compile(r"\b([A-Z][a-z]+)(?:-to-|\s+to\s+|\s?→\s?|-)([A-Z][a-z]+)\b")


@dataclass
class Ent:
    """A named thing as written, its matching key (lower-case, letters and digits only; an
    ``X-to-Y`` pair as ``x-y``) and its span."""

    text: str
    key: str
    start: int
    end: int


# ISO 639-1 codes of languages: a language pair is written "English-to-German", "English-German",
# "En→De" or, in table headers, "EN-DE"; all read as the pair of codes, in order
_LANG = {
    "english": "en", "german": "de", "french": "fr", "romanian": "ro", "czech": "cs",
    "russian": "ru", "chinese": "zh", "japanese": "ja", "spanish": "es", "italian": "it",
    "portuguese": "pt", "dutch": "nl", "finnish": "fi", "turkish": "tr", "arabic": "ar",
    "hindi": "hi", "korean": "ko", "polish": "pl", "swedish": "sv", "estonian": "et",
    "latvian": "lv", "lithuanian": "lt", "gujarati": "gu", "kazakh": "kk", "vietnamese": "vi",
    "hungarian": "hu", "greek": "el", "hebrew": "he", "danish": "da", "norwegian": "no",
    "ukrainian": "uk", "bulgarian": "bg", "croatian": "hr", "serbian": "sr", "slovak": "sk",
    "slovenian": "sl", "persian": "fa", "thai": "th", "indonesian": "id", "malay": "ms",
    "urdu": "ur", "bengali": "bn", "tamil": "ta", "swahili": "sw", "icelandic": "is",
}
_LANG_CODES = frozenset(_LANG.values())
_LANG_PAIR = re.compile(r"([A-Za-z]+)\s?(?:-to-|-|→|->|\s+to\s+)\s?([A-Za-z]+)")


def lang_pair(token: str) -> tuple[str, str] | None:
    """``("en", "de")`` for "English-to-German", "English-German", "En→De", "EN-DE"; None for
    anything that is not a pair of languages (direction kept: German-English is ("de", "en"))."""
    m = _LANG_PAIR.fullmatch(normalize(token).strip())
    if not m:
        return None
    out = []
    for part in m.groups():
        low = part.lower()
        if low in _LANG:
            out.append(_LANG[low])
        elif len(low) == 2 and low in _LANG_CODES and (part.isupper() or part.istitle()):
            out.append(low)
        else:
            return None
    return out[0], out[1]


def entity_key(token: str) -> str:
    pair = lang_pair(token)
    if pair:
        return pair[0] + pair[1]
    t = unligature(normalize(token))
    t = re.sub(r"(?i)-to-", "-", t)
    return re.sub(r"[^0-9a-z]", "", t.lower())


def _is_entity(tok: str, initial: bool) -> bool:
    letters = [c for c in tok if c.isalpha()]
    if len(letters) < 1 or len(tok) < 2:
        return False
    first_digit = next((i for i, c in enumerate(tok) if c.isdigit()), None)
    if first_digit is not None:
        # letters then digits: ResNet-152, P4, CoNLL-2012, v1.1, GPT-4o (not 10-crop, 2D)
        return any(c.isalpha() for c in tok[:first_digit]) and not re.fullmatch(r"\d+[eE]-?\d+", tok)
    if len(letters) >= 2 and any(c.isupper() for c in tok[1:]):
        return True  # ViT, MNIST, SciBERT, BERT-LARGE
    # a capitalised word inside a sentence: Treebank, Chrome, English-German
    return tok[0].isupper() and not initial


def entities_in(text: str) -> list[Ent]:
    """Named things of ``text`` by form (see the module docstring), in order (cached: a warm
    process meets the same passages again and again)."""
    return list(_entities_cached(text))


@functools.lru_cache(maxsize=8192)
def _entities_cached(text: str) -> tuple[Ent, ...]:
    return tuple(_entities(text))


def _entities(text: str) -> list[Ent]:
    text = normalize(text)
    out: list[Ent] = []
    prev_end_char = "."
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        s, e = m.start(), m.end()
        while tok and tok[0] in _STRIP_LEAD:
            tok, s = tok[1:], s + 1
        while tok and tok[-1] in _STRIP_TRAIL:
            tok, e = tok[:-1], e - 1
        before = text[max(0, m.start() - 3):m.start()].strip()
        initial = prev_end_char in ".!?:" or not before or before[-1:] in ".!?:"
        prev_end_char = m.group(0)[-1]
        if not tok or not _is_entity(tok, initial):
            continue
        if tok.lower() in _CAP_FUNCTION:
            continue
        key = entity_key(tok)
        if len(key) >= 2:
            out.append(Ent(tok, key, s, e))
    return out


# capitalised function words that open clauses or titles (never names)
_CAP_FUNCTION = frozenset(
    ["the", "a", "an", "in", "on", "of", "for", "and", "or", "but", "to", "with", "by", "from", "at", "as", "is", "are", "was", "were", "this", "that", "these", "those", "it", "its", "we", "our", "their", "they", "he", "she", "when", "where", "which", "while", "whereas", "however", "also", "table", "figure", "section", "fig", "eq", "equation"]
)


def shape(key_text: str) -> str:
    """Character classes with runs collapsed: ``ViT-Large`` → ``XxX-Xx``."""
    out = []
    for c in key_text:
        k = "X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c
        if not out or out[-1] != k:
            out.append(k)
    return "".join(out)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def siblings(a: Ent | str, b: Ent | str, *, min_affix: int = 2) -> bool:
    """Two different names of the same kind, told apart by form: the same shape and a shared
    prefix or suffix (``ViT-Large``/``ViT-Huge``, ``P3``/``P4``, ``English-German``/
    ``English-French``, ``RNNsearch-50``/``RNNencdec-50``)."""
    ta, tb = (a.text if isinstance(a, Ent) else a), (b.text if isinstance(b, Ent) else b)
    pa, pb = lang_pair(ta), lang_pair(tb)
    if pa or pb:
        return bool(pa and pb and pa != pb)  # English-German / English-French / EN-FR
    ka, kb = entity_key(ta), entity_key(tb)
    if not ka or not kb or ka == kb or ka.rstrip("s") == kb.rstrip("s"):
        return False
    if shape(normalize(ta).replace("-to-", "-")) != shape(normalize(tb).replace("-to-", "-")):
        return False
    if re.sub(r"\d", "0", ka) == re.sub(r"\d", "0", kb) and re.search(r"[a-z]", ka):
        return True  # told apart by digits only: P3/P4, VGG-16/VGG-19, CoNLL-2003/CoNLL-2012
    if min_affix >= 3 and ka.isalpha() and kb.isalpha() and ka.islower() and kb.islower() \
            and ta.islower() and tb.islower():
        # plain words (roles): generator/discriminator, input/output
        return _common_prefix(ka, kb) >= min_affix or _common_prefix(ka[::-1], kb[::-1]) >= min_affix
    return _common_prefix(ka, kb) >= max(3, min_affix)  # names: ViT-Large/ViT-Huge, not ResNet/ImageNet


# ----------------------------------------------------------------------------- words, cues

_WORD = re.compile(r"[^\W_]+(?:'t)?", re.UNICODE)

_NEG_CUES = frozenset(["not", "no", "never", "without", "none", "neither", "nor", "cannot", "nothing", "lack", "lacks", "lacking", "absence"])
_NEG_MULTI = (("free", "of"),)
# verbs that state an absence ("discarded", "excludes"): negations in other words
_PRIVATIVE = frozenset(["exclude", "excludes", "excluded", "excluding", "omit", "omits", "omitted", "discard", "discards", "discarded", "remove", "removes", "removed", "removing", "drop", "drops", "dropped", "dropping", "lack", "lacks", "lacked", "avoid", "avoids", "avoided", "fail", "fails", "failed", "absent"])
_CLAUSE_BREAK = frozenset(["but", "although", "though", "whereas", "while", "however", "instead", "unlike"])

# comparative cues: +1 = more / better for the subject, -1 = less / worse
_MAG_CUES = {
    "higher": 1, "more": 1, "greater": 1, "larger": 1, "bigger": 1, "increase": 1, "increases": 1,
    "increased": 1, "rises": 1, "rise": 1, "rose": 1, "grows": 1, "exceeds": 1, "exceed": 1,
    "lower": -1, "less": -1, "fewer": -1, "smaller": -1, "decrease": -1, "decreases": -1,
    "decreased": -1, "reduces": -1, "reduce": -1, "reduced": -1, "falls": -1, "fall": -1,
    "fell": -1, "drops": -1, "drop": -1, "shrinks": -1,
}
_GOOD_CUES = {
    "better": 1, "best": 1, "outperforms": 1, "outperform": 1, "outperformed": 1, "superior": 1,
    "faster": 1, "cheaper": 1, "improves": 1, "improve": 1, "improved": 1, "beats": 1, "stronger": 1,
    "worse": -1, "worst": -1, "underperforms": -1, "underperform": -1, "underperformed": -1,
    "inferior": -1, "slower": -1, "costlier": -1, "degrades": -1, "degrade": -1, "weaker": -1,
    "hurts": -1,
}
def _inflect(cues: dict[str, int]) -> dict[str, int]:
    """Add the -s / -ed / -ing forms of the verb cues ("outperforming", "reducing")."""
    out = dict(cues)
    for w, v in cues.items():
        if w.endswith(("er", "est")) or w in ("more", "less", "fewer", "superior", "inferior"):
            continue
        base = w[:-1] if w.endswith("s") and not w.endswith("ss") else w
        stem_ = base[:-1] if base.endswith("e") else base
        for form in (base, base + "s", stem_ + "ed", stem_ + "ing", base + "d"):
            out.setdefault(form, v)
    return out


_MAG_CUES = _inflect(_MAG_CUES)
_GOOD_CUES = _inflect(_GOOD_CUES)
# quantities where more is worse: "higher error" = worse, "fewer FLOPs" = cheaper
_BAD_QUANTITIES = frozenset(["error", "errors", "err", "loss", "losses", "cost", "costs", "complexity", "time", "latency", "perplexity", "flops", "memory", "overhead", "runtime"])


@functools.lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[tuple[str, int, int], ...]:
    return tuple((m.group(0).lower(), m.start(), m.end())
                 for m in _WORD.finditer(unligature(normalize(text))))


def negated_near(text: str, terms: set[str], *, min_hits: int = 1) -> tuple[bool, int | None]:
    """Whether a negation cue stands within 4 words before one of ``terms`` (stemmed content
    words) — or within 2 after, for "X is absent" / "no X" styles; returns the cue's offset."""

    toks = _tokens(text)
    norm = unligature(normalize(text))
    hits = [i for i, (w, _s, _e) in enumerate(toks) if stem(w) in terms]
    for i, (w, s, _e) in enumerate(toks):
        cue = w in _NEG_CUES or w.endswith("n't")
        if not cue:
            cue = any(w == a and i + 1 < len(toks) and toks[i + 1][0] == b for a, b in _NEG_MULTI)
        if not cue:
            continue
        # the cue's scope: to the end of its clause (a comma, semicolon, period or a
        # contrastive conjunction), at most 12 words
        end = i + 1
        while end < len(toks) and end - i <= 12:
            if re.search(r"[,;.:]", norm[toks[end - 1][2]:toks[end][1]]) or toks[end][0] in _CLAUSE_BREAK:
                break
            end += 1
        inside = {toks[h][0] for h in hits if i < h < end or 0 < i - h <= 2}
        if len(inside) >= min_hits:
            return True, s
    return False, None


def _privative_near(text: str, terms: set[str]) -> bool:
    """A verb of absence ("discarded", "excludes") next to the claim's words: the text denies
    something without a "not"."""

    toks = _tokens(text)
    for i, (w, _s, _e) in enumerate(toks):
        if w in _PRIVATIVE and any(stem(t[0]) in terms for t in toks[max(0, i - 3):i + 5] if t[0] != w):
            return True
    return False


def _negated_terms(text: str, cue_at: int | None, n: int = 2) -> set[str]:
    """The first ``n`` content words after the negation cue at offset ``cue_at``."""

    if cue_at is None:
        return set()
    out: list[str] = []
    for w, s, _e in _tokens(text):
        if s <= cue_at or w in STOP or w in _NEG_CUES or w.endswith("n't") or len(w) < 3:
            continue
        out.append(stem(w))
        if len(out) >= n:
            break
    return set(out)


def negated_heads(text: str, n: int = 1) -> set[str]:
    """The stems a negation of ``text`` governs: for every cue ("not", "no", "without",
    "n't" ...), the first ``n`` content words after it in its clause ("we do not use dropout in
    these models" → dropout; "use" is a function word here, "models" lies outside the head).
    What a sentence denies, to compare with what a claim asserts."""

    toks = _tokens(text)
    norm = unligature(normalize(text))
    out: set[str] = set()
    for i, (w, _s, _e) in enumerate(toks):
        if not (w in _NEG_CUES or w.endswith("n't")):
            continue
        got = 0
        for j in range(i + 1, min(len(toks), i + 8)):
            if re.search(r"[,;.:]", norm[toks[j - 1][2]:toks[j][1]]) or toks[j][0] in _CLAUSE_BREAK:
                break
            t = toks[j][0]
            if t in STOP or t in _NEG_CUES or len(t) < 3 or t.isdigit():
                continue
            out.add(stem(t))
            got += 1
            if got >= n:
                break
    return out


def _denied_stated(claim: str, cue_at: int | None, sentence: str) -> bool:
    """Whether ``sentence`` states what the claim denies: the word the claim negates and at
    least two thirds of the four content words after the negation are all there."""
    first = _negated_terms(claim, cue_at, 1)
    window = _negated_terms(claim, cue_at, 4)
    have = _stems(sentence)
    return bool(first) and first <= have and len(window & have) * 3 >= 2 * len(window)


@dataclass
class Comparison:
    sign: int  # +1 the subject is more/better, -1 less/worse
    kind: str  # "mag" | "good"
    cue: str
    at: int  # token index
    bad_quantity: bool  # the compared quantity is one where more is worse


_ADJ_CUE = re.compile(r"(er|est)$|^(more|less|fewer|superior|inferior)$")


def comparisons(text: str) -> list[Comparison]:
    """The comparatives of ``text``: verbs (outperforms, reduces, rises) always; adjectives and
    adverbs (higher, better, more) only in a comparison proper, with a "than" within 5 words
    ("more layers" states no comparison)."""
    toks = _tokens(text)
    out = []
    for i, (w, _s, _e) in enumerate(toks):
        if w not in _GOOD_CUES and w not in _MAG_CUES:
            continue
        if _ADJ_CUE.search(w) and not any(t[0] == "than" for t in toks[i + 1:i + 6]):
            continue
        # a denied comparative states the other direction ("does not reduce", "no better
        # than"; not "not only improves")
        flip = -1 if any((t in ("not", "never", "cannot", "no") or t.endswith("n't"))
                         and (k + 1 >= len(toks) or toks[k + 1][0] != "only")
                         for k, (t, _a, _b) in enumerate(toks[max(0, i - 3):i], start=max(0, i - 3))) else 1
        cue = w if flip > 0 else "not " + w
        if w in _GOOD_CUES:
            out.append(Comparison(flip * _GOOD_CUES[w], "good", cue, i, False))
        else:
            window = [t[0] for t in toks[max(0, i - 3):i + 4]]
            out.append(Comparison(flip * _MAG_CUES[w], "mag", cue, i,
                                  any(x in _BAD_QUANTITIES for x in window)))
    return out


def goodness(c: Comparison) -> int:
    if c.kind == "good":
        return c.sign
    return -c.sign if c.bad_quantity else c.sign


# ------------------------------------------------------------------------------- the verdict


@dataclass
class Check:
    verdict: str
    code: str
    text: str
    passage: int  # index into the candidate passages
    span: tuple[int, int] | None = None  # offsets into that passage's text for the quote
    strength: float = 0.0  # for ordering competing findings


@dataclass
class Evidence:
    """A candidate passage as the verifier sees it."""

    text: str
    score: float
    paper: str | None = None
    head: str = ""  # a table chunk's caption and column header (the text of its section before it)
    nums: list[Num] = field(default_factory=list)
    ents: list[Ent] = field(default_factory=list)
    src: dict = field(default_factory=dict)  # the passage as the tracer gave it


_FOOTNOTE_BREAK = re.compile(r"(?<=[a-z)\]]\.)\d{1,2}(?=\s+[A-Z])")


@functools.lru_cache(maxsize=4096)
def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentences, also cut after a footnote marker glued to a period ("(2011).5 We ...")."""
    from ..pdf.passages import split_sentences

    out = []
    for a, b in split_sentences(text) or [(0, len(text))]:
        cuts = [m.end() for m in _FOOTNOTE_BREAK.finditer(text, a, b)]
        start = a
        for c in cuts:
            out.append((start, c))
            start = c
            while start < b and text[start].isspace():
                start += 1
        out.append((start, b))
    return [(x, y) for x, y in out if y > x]


@functools.lru_cache(maxsize=16384)
def tabular(sentence: str) -> bool:
    """Table text (cells, not prose): a quarter or more of its tokens are numbers or dashes."""
    toks = sentence.split()
    if len(toks) < 6:
        return False
    cells = sum(1 for t in toks if re.fullmatch(r"[-±]|[\d.,/%±]+[kKMB]?", t))
    return cells / len(toks) >= 0.25


def _sentence_of(text: str, pos: int) -> tuple[int, int]:
    for a, b in _sentence_spans(text):
        if a <= pos < b:
            return a, b
    return 0, len(text)


def _fmt_num(n: Num) -> str:
    return n.text.strip()


def _stems(text: str) -> set[str]:
    return set(_stems_cached(text))


@functools.lru_cache(maxsize=32768)
def _stems_cached(text: str) -> frozenset[str]:

    # negation cues are a sentence's polarity, not its topic ("without" is no content word)
    return frozenset(stem(w) for w in words(unligature(text)) if w not in STOP and not w.isdigit()
                     and w not in _NEG_CUES
                     and len(w) > 1)


_QTOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:'t)?")
_HYPHEN_BREAK = re.compile(r"[^\W\d_]-\s+[a-z]")
_STOP_GAP = re.compile(r"[.!?;:\n\t]")  # a sentence, clause or table-cell end
_END_GAP = re.compile(r"[.!?;:,\n\t]")


@functools.lru_cache(maxsize=8192)
def _quote_tokens(text: str) -> tuple[tuple[str, int, int, bool, bool], ...]:
    """``text``'s words as ``(word, start, end, may_start, may_end)``: lower-cased, ligatures
    and quote marks folded, a word broken at a line end ("tempera- ture") joined; a quote may
    start where a sentence, clause (";", ":", a contrastive "while", "but" ...) or table cell
    starts, and end where one ends or at a comma."""
    text = normalize(text)  # one character for one: the offsets stay the text's
    raw = [(m.group(0), m.start(), m.end()) for m in _QTOKEN.finditer(text)]
    toks: list[list] = []
    for w, a, b in raw:
        if toks and _HYPHEN_BREAK.fullmatch(text[toks[-1][2] - 1:a + 1]):
            toks[-1][0] += w
            toks[-1][2] = b
            continue
        toks.append([w, a, b])
    words_ = [unligature(w).lower() for w, _a, _b in toks]
    out = []
    for k, (_w, a, b) in enumerate(toks):
        gap_before = text[toks[k - 1][2]:a] if k else "."
        gap_after = text[b:toks[k + 1][1]] if k + 1 < len(toks) else "."
        prev_break = k > 0 and words_[k - 1] in _CLAUSE_BREAK and (
            k == 1 or re.search(r"[.!?;:,\n\t]", text[toks[k - 2][2]:toks[k - 1][1]]) is not None)
        may_start = bool(_STOP_GAP.search(gap_before)) or prev_break
        may_end = bool(_END_GAP.search(gap_after)) or (
            k + 1 < len(toks) and words_[k + 1] in _CLAUSE_BREAK)
        out.append((words_[k], a, b, may_start, may_end))
    return tuple(out)


def verbatim_span(claim: str, text: str, *, min_words: int = 4) -> tuple[int, int] | None:
    """The span of ``text`` that ``claim`` copies word for word — a whole sentence, or a part
    of one from a sentence or clause start to a clause end ("X ranged from 29.7 to 48.3" of
    "X ranged from 29.7 to 48.3, while Y ...") — ignoring case, whitespace, punctuation,
    ligatures and words hyphenated across a line; ``None`` when there is none.  A quote cannot
    misstate its source: what it drops is a whole clause, never a "not" inside its own."""
    ct = [t[0] for t in _quote_tokens(claim)]
    if len(ct) < min_words:
        return None
    toks = _quote_tokens(text)
    m = len(ct)
    for i in range(len(toks) - m + 1):
        if toks[i][0] != ct[0] or not toks[i][3] or not toks[i + m - 1][4]:
            continue
        if all(toks[i + j][0] == ct[j] for j in range(1, m)):
            return toks[i][1], toks[i + m - 1][2]
    return None


def _best_sentence(text: str, cterms: set[str], *, prose: bool = False) -> tuple[int, int, float]:
    """The sentence of ``text`` sharing the most of ``cterms``, and that share (``prose``:
    table text left out)."""
    best = (0, len(text), 0.0)
    for a, b in _sentence_spans(text):
        if prose and tabular(text[a:b]):
            continue
        share = len(cterms & _stems(text[a:b])) / (len(cterms) or 1)
        if share > best[2]:
            best = (a, b, share)
    return best


class Verifier:
    """Verify claims against ranked candidate passages.

    ``in_scope(entity_text) -> bool`` says whether any passage of the papers in scope names a
    thing (the tracer answers it from SQLite); without it a name absent from the candidates is
    not held against the claim.
    """

    def __init__(self, in_scope: Callable[[str], bool] | None = None,
                 threshold: float | None = None, *, topic_cover: float = TOPIC_COVER,
                 number_topic_cover: float = NUMBER_TOPIC_COVER,
                 grid_of: Callable[[dict, list[Num]], object] | None = None,
                 verbatim: bool = True):
        self.in_scope = in_scope
        # a claim quoting a passage (:func:`verbatim_span`) is supported without further
        # checks; ``False`` only to measure the checks themselves (bench_verify --self-consistency)
        self.verbatim = verbatim
        # (table passage, claim numbers) -> its cells placed by x (pdf.tablegrid.Grid), or None
        # when that table states none of the numbers
        self.grid_of = grid_of
        self.threshold = threshold
        self.topic_cover = topic_cover
        self.number_topic_cover = number_topic_cover

    # -- per-check helpers ---------------------------------------------------------------------

    def verify(self, claim: str, passages: Sequence[dict], *, support: float | None = None) -> dict:
        """The verdict of ``claim`` given its ranked passages (dicts with ``text`` and ``score``).

        Returns ``{"verdict", "reason": {"code", "text"}, "evidence": i, "quote": str,
        "order": [passage indexes, best first]}``; ``evidence`` is the passage the verdict rests
        on (``None`` when there is none) and ``order`` the citations re-ranked so that passages
        stating the claim's numbers and names come first."""
        # the K best passages, plus any further candidate that states *all* the claim's values
        # when together they are specific enough not to meet by chance (``_specificity`` summed
        # ≥ 4: "27.3 … 38.1", "15.2 million", not "3 … 8").  The tracer appends the passages
        # anchored on the claim's numbers: a table row rarely ranks high by wording, yet it is
        # the passage a number claim is about.
        idx = list(range(min(EVIDENCE_K, len(passages))))
        hard = [n for n in numbers_in(claim) if not n.word]
        if sum(map(_specificity, hard)) >= 4:
            for j in range(EVIDENCE_K, len(passages)):
                pn = numbers_in(passages[j]["text"], evidence=True)
                if all(any(number_matches(n, en) for en in pn) for n in hard):
                    idx.append(j)
        out = self._verify(claim, [passages[j] for j in idx], support)
        out["order"] = [idx[i] for i in out["order"]]
        if out["evidence"] is not None:
            out["evidence"] = idx[out["evidence"]]
        return out

    def _verify(self, claim: str, passages: Sequence[dict], support: float | None) -> dict:
        cands = [Evidence(p["text"], float(p.get("score", 0.0)), p.get("paper"),
                          head=p.get("table_head") or "", src=p) for p in passages]
        cnums = [n for n in numbers_in(claim)]
        if not cands:
            return self._out(UNSUPPORTED, "no_passage", "no passage of the papers in scope is "
                             "close to this claim", None, None, [])
        if self.verbatim:
            # 0. a quote of a passage: the paper says it (no check below may overrule its
            # source; a check that would has misread the passage)
            for i, ev in enumerate(cands):
                span = verbatim_span(claim, ev.text)
                if span is not None:
                    return self._out(SUPPORTED, "match", "the passage states this word for word",
                                     i, span, _front(list(range(len(cands))), i), cands)
        cents = self._claim_entities(claim)
        cterms = _stems(claim)
        for ev in cands:
            ev.nums = numbers_in(ev.text, evidence=True)
            ev.ents = entities_in(ev.text)
        # which claim numbers / names each passage states
        # a value counts only where the passage is about the claim at all: a "5" in a passage
        # sharing almost none of the claim's words ("5 hybrids" in another paper, for "k = 5
        # steps") is a coincidence of digits, and must not outrank the on-topic passage that
        # gives the claim's quantity another value (a table's chunk is read with its caption;
        # the share is of the claim's words without digits, "CIFAR100" is a name, and a claim
        # of numbers alone has nothing to judge by)
        words_of = {t for t in cterms if not any(c.isdigit() for c in t)}
        topic_of = [len(words_of & _stems(f"{ev.head}\n{ev.text}")) / len(words_of) if words_of
                    else 1.0 for ev in cands]
        found_n = [[t >= NUMBER_TOPIC_FLOOR and any(number_matches(n, en) for en in ev.nums)
                    for n in cnums] for ev, t in zip(cands, topic_of, strict=True)]
        found_e = [[self._has_entity(ev, e) for e in cents] for ev in cands]
        cover = [len(cterms & _stems(ev.text)) / (len(cterms) or 1) for ev in cands]

        # a value's weight is its specificity (digits written): "21.43" identifies a passage,
        # the "10" of "10-crop" hardly does
        nweight = [_specificity(n) for n in cnums]

        def rank_key(i: int):
            # the claim's numbers first (a passage giving all of them is the one it is about),
            # then its names, its words and the tracer's score
            nums = sum(w for w, f in zip(nweight, found_n[i], strict=True) if f) / sum(nweight) \
                if cnums else 0.0
            ents = sum(found_e[i]) / len(cents) if cents else 0.0
            return (-round(nums, 3), -(ents + 0.5 * cover[i] + cands[i].score), i)

        order = sorted(range(len(cands)), key=rank_key)
        best = order[0]
        ev = cands[best]

        # 1. names the papers never mention
        for e in cents:
            if not any(found_e[i][cents.index(e)] for i in range(len(cands))) and self.in_scope is not None \
                    and not self._known(e):
                sib = self._sibling_in(ev, e)
                if sib is not None and cover[best] >= self.number_topic_cover:
                    return self._out(CONTRADICTED, "entity_mismatch",
                                     f"the claim names {e.text}; the passage names {sib.text}",
                                     best, _sentence_of(ev.text, sib.start), order, cands)
                return self._out(UNSUPPORTED, "entity_absent",
                                 f"no passage of the papers in scope mentions {e.text}",
                                 best, None, order, cands)

        # 2. a table read by the cells' printed places: the cell the claim points at
        # (the first table passage in rank order that states one of the claim's values decides)
        grid_agrees = ""  # the reason text when a table's cell states the claim
        # (a long table is cut into passages: its grid is the whole table, so a passage of it
        # counts even when the value is in another of its chunks)
        tables, seen = [], set()
        for i in order:
            sid = cands[i].src.get("section_id") or i
            if cands[i].src.get("kind") == "table" and sid not in seen:
                seen.add(sid)
                tables.append(i)
        for i in (tables if self.grid_of is not None and cnums else []):
            grid = self.grid_of(cands[i].src, cnums)
            found = grid_check(claim, cnums, grid) if grid is not None else None
            if found is None:
                continue
            if found[0] == "agree":
                # the claim's row holds its values under its columns: that table is the
                # evidence, and the text-level number and binding checks are not needed
                grid_agrees = found[1]
                order, best, ev = _front(order, i), i, cands[i]
                break
            code, text, (ri, ki) = found
            return self._out(CONTRADICTED, code, text, i, _grid_span(cands[i], grid, ri, ki),
                             _front(order, i), cands)

        # 3. numbers
        missing = [] if grid_agrees else [n for k, n in enumerate(cnums) if not found_n[best][k]]
        if missing and sum(found_n[best]) >= 2 and all(
                _compound(claim, cnums[k]) and any(
                    found_n[i][k] for i in range(len(cands)) if i != best and cands[i].paper == ev.paper)
                for k in range(len(cnums)) if not found_n[best][k]):
            # the best passage states two or more of the claim's values, and what it lacks are
            # settings written as compounds ("10-crop", "34-layer") that another passage of the
            # same paper states (the setting in a caption, the results in a table)
            missing = []
        if missing:
            n = missing[0]
            hard = [m for m in missing if not m.word]
            topic = self._topic_cover(claim, ev.text)
            if ev.nums and topic >= self.number_topic_cover and (hard or len(missing) == len(cnums)):
                other = self._aligned_number(claim, n, ev)
                span = _sentence_of(ev.text, other.start) if other else None
                said = f"the passage says {_fmt_num(other)}" if other else "the passage gives other values"
                return self._out(CONTRADICTED, "number_mismatch",
                                 f"the claim says {_fmt_num(n)}; {said}", best, span, order, cands)
            if hard or not any(found_n[best]):
                return self._out(UNSUPPORTED, "number_absent",
                                 f"no passage close to the claim states {_fmt_num(n)}",
                                 best, None, order, cands)

        # 3. a name the evidence replaces by a sibling
        for k, e in enumerate(cents):
            if found_e[best][k]:
                continue
            sib = self._sibling_in(ev, e)
            if sib is not None and not any(found_e[i][k] for i in range(len(cands))) \
                    and cover[best] >= self.number_topic_cover:
                return self._out(CONTRADICTED, "entity_mismatch",
                                 f"the claim names {e.text}; the passage names {sib.text}",
                                 best, _sentence_of(ev.text, sib.start), order, cands)

        # 4. values bound to another name: a table's columns (one row per line), then rows,
        # columns and parallel order in running text
        bound = None if grid_agrees else _table_binding(claim, cnums, cents, ev)
        if bound is None and not grid_agrees:
            bound = self._binding(claim, cnums, cents, ev)
        if bound is not None:
            code, text, pos = bound
            return self._out(CONTRADICTED, code, text, best, _sentence_of(ev.text, pos), order, cands)

        a, b, share = _best_sentence(ev.text, cterms, prose=True)
        if share >= self.topic_cover:
            # 5. roles swapped between sibling words
            swap = self._role_swap(claim, ev.text[a:b])
            if swap:
                return self._out(CONTRADICTED, "roles_swapped", swap, best, (a, b), order, cands)
        # the prose sentences of the passages that state the claim's numbers as well as the best
        # one does, most on-topic first: where a negation or a comparison is read
        tier = {i for i in order if found_n[i] == found_n[best] or not cnums}
        sents = []
        for i in order:
            spans = _sentence_spans(cands[i].text)
            for k, (sa, sb) in enumerate(spans):
                st = cands[i].text[sa:sb]
                if tabular(st):
                    continue
                # on-topic share over the sentence and the one before it (a sentence often
                # leaves its subject to the previous one: "We do not use dropout.")
                ctx = cands[i].text[spans[k - 1][0] if k else sa:sb]
                sh = len(cterms & _stems(ctx)) / (len(cterms) or 1)
                sents.append((sh, -order.index(i), i, sa, sb))
        sents.sort(reverse=True)
        on_tier = [x for x in sents if x[2] in tier]
        # 6. comparison direction, against the sentence that compares the same two things
        cmp = self._comparison_in(claim, cands, sents)
        agreed = False
        if cmp is not None:
            text, i, span, agrees = cmp
            if not agrees:
                return self._out(CONTRADICTED, "comparison", text, i, span, _front(order, i), cands)
            order, best, agreed = _front(order, i), i, True
        # 7. negation (not when a sentence already states the claim's comparison as claimed)
        top_share = on_tier[0][0] if on_tier else 0.0
        close = [x for x in on_tier if x[0] >= max(self.topic_cover, top_share - 0.3)]
        leading = {id(x) for x in close[:2]}
        cn, cpos = negated_near(claim, cterms)

        # the words a negated claim denies (its cue's head: "without *dropout*", "not *tie*")
        cheads = _negated_terms(claim, cpos, 1) if cn else set()

        def neg(x) -> bool:
            """Negated about the claim's words: two shared words in the cue's scope; or, in one
            of the two most on-topic sentences, a claim word heading a negation there ("do not
            use *dropout*") or a verb of absence next to them."""
            st = cands[x[2]].text[x[3]:x[4]]
            shared = cterms & _stems(st)
            if negated_near(st, shared, min_hits=2)[0]:
                return True
            if id(x) not in leading:
                return False
            return bool(negated_heads(st) & (cheads or cterms)) or _privative_near(st, shared)

        # a sentence that says all the claim says (every content word, every number) with the
        # claim's polarity is the passage's statement of it: a negation in another sentence
        # about some of the same words ("the effect was not significant for grains per spike")
        # denies something else, and is not read against the claim
        restated = any(self._restates(claim, cterms, cnums, cn, cands[x[2]].text[x[3]:x[4]])
                       for x in sents)
        if close and not agreed and not restated:
            negs = [x for x in close if neg(x)]
            if not cn and negs and not _privative_near(claim, cterms):
                x = negs[0]
                return self._out(CONTRADICTED, "negation",
                                 "the passage states it negated; the claim states it as true",
                                 x[2], (x[3], x[4]), _front(order, x[2]), cands)
            # a negated claim is contradicted only where the passage states the very thing it
            # denies (a passage may deny in other words: "discarded" for "not retained")
            stated = [x for x in close if _denied_stated(claim, cpos, cands[x[2]].text[x[3]:x[4]])]
            if cn and cheads:
                # a negation agrees with a negated claim only where it is about what the claim
                # denies ("did not *reduce* fade" finds no agreement in "not significant for fade")
                negs = [x for x in negs if cheads <= _stems(cands[x[2]].text[x[3]:x[4]])]
            if cn and not negs and stated and not _privative_near(cands[stated[0][2]].text, cterms):
                x = stated[0]
                return self._out(CONTRADICTED, "negation", "the claim denies what the passage states",
                                 x[2], (x[3], x[4]), _front(order, x[2]), cands)
            if cn and negs:
                order, best = _front(order, negs[0][2]), negs[0][2]

        # 8. similarity alone
        sup = support if support is not None else max(c.score for c in cands)
        if self.threshold is not None and sup < self.threshold:
            return self._out(UNSUPPORTED, "low_support",
                             f"no passage states this claim (best support {sup:.2f} < "
                             f"{self.threshold:.2f})", best, None, order, cands)
        if grid_agrees:
            return self._out(SUPPORTED, "match", grid_agrees, best, None, order, cands)
        stated = [n.text for k, n in enumerate(cnums) if found_n[best][k]] + \
                 [e.text for k, e in enumerate(cents) if found_e[best][k]]
        text = ("the passage states " + ", ".join(stated[:6])) if stated else \
            "the passage states the claim's content words"
        return self._out(SUPPORTED, "match", text, best, None, order, cands)

    # -- pieces --------------------------------------------------------------------------------

    @staticmethod
    def _restates(claim: str, cterms: set[str], cnums: list[Num], negated: bool, sent: str) -> bool:
        """Whether ``sent`` states everything ``claim`` states, with the same polarity: every
        content word and every number of the claim is in it, and a negation stands near the
        claim's words in the sentence exactly when one does in the claim (a verbatim or trimmed
        copy of a sentence always restates it; "we use dropout" does not restate "we do not
        use dropout", nor the reverse)."""
        if not cterms or not cterms <= _stems(sent):
            return False
        if cnums:
            snums = numbers_in(sent, evidence=True)
            if not all(any(number_matches(n, en) for en in snums) for n in cnums):
                return False
        if negated_near(sent, cterms)[0] != negated:
            return False
        # a verb of absence ("removed", "excluded") by the claim's words: the claim must have it too
        return not _privative_near(sent, cterms) or _privative_near(claim, cterms)

    @staticmethod
    def _claim_entities(claim: str) -> list[Ent]:
        seen: dict[str, Ent] = {}
        for e in entities_in(claim):
            seen.setdefault(e.key, e)
        return list(seen.values())

    def _known(self, e: Ent) -> bool:
        """Whether the papers in scope name ``e`` (a hyphenated compound such as ``root-to-w2``
        counts when each of its parts is named)."""
        if len(e.key) < 3 or self.in_scope(e.text):
            return True  # two-letter acronyms ("MT") are too ambiguous to judge absence by
        if re.search(r"[A-Z]s$", e.text) and self.in_scope(e.text[:-1]):
            return True  # "GANs" = "GAN"
        parts = [p for p in re.split(r"-(?:to-)?", e.text) if len(p) >= 2]
        if len(parts) < 2 or not all(re.search(r"[A-Za-z]", p) for p in parts):
            return False  # "CoNLL-2012": the number is part of the name
        return all(self.in_scope(p) for p in parts)

    @staticmethod
    def _has_entity(ev: Evidence, e: Ent) -> bool:
        key = e.key
        keys = {x.key for x in ev.ents}
        if key in keys or key.rstrip("s") in {k.rstrip("s") for k in keys}:
            return True
        pair = lang_pair(e.text)
        if pair:
            # written with spaces in the passage: "English to German", "English → German"
            names = [[w for w, c in _LANG.items() if c == code] for code in pair]
            pat = (r"\b(?:" + "|".join(names[0]) + r")\s*(?:-to-|-|→|->|\s+to\s+)\s*(?:"
                   + "|".join(names[1]) + r")\b")
            return re.search(pat, normalize(ev.text), re.IGNORECASE) is not None
        # written apart or with other punctuation in the passage ("BERT LARGE", "WMT '14")
        squashed = re.sub(r"[^0-9a-z]", "", normalize(ev.text).lower())
        if len(key) >= 4 and key in squashed:
            pat = r"(?<![0-9a-z])" + r"[\s\-'./]?".join(map(re.escape, key)) + r"s?(?![0-9a-z])"
            return re.search(pat, normalize(ev.text).lower()) is not None
        return False

    @staticmethod
    def _sibling_in(ev: Evidence, e: Ent) -> Ent | None:
        for x in ev.ents:
            if siblings(x, e):
                return x
        return None

    @staticmethod
    def _topic_cover(claim: str, text: str) -> float:
        """Share of the claim's words (numbers left out) found in ``text``."""
        terms = _stems(re.sub(r"\d", " ", claim))
        return len(terms & _stems(text)) / (len(terms) or 1)

    @staticmethod
    def _aligned_number(claim: str, n: Num, ev: Evidence) -> Num | None:
        """The passage number in the place of the claim's ``n``: the one whose surrounding words
        share most with the words around ``n`` in the claim (ties: same format, then first)."""
        ctx = _stems(normalize(claim)[max(0, n.start - 40):n.end + 40])
        best, best_key = None, None
        cnums = numbers_in(claim)
        claim_terms = _stems(claim)
        claim_keys = {e.key for e in entities_in(claim)}
        for en in ev.nums:
            if en.lo is not None or any(number_matches(c, en) for c in cnums):
                continue  # a value the claim also states is not the one it gets wrong
            around = _stems(normalize(ev.text)[max(0, en.start - 40):en.end + 40])
            same_fmt = ("." in en.text) == ("." in n.text) and ("%" in en.text) == ("%" in n.text)
            # the sentence saying most of what the claim says (its words and its names)
            sa, sb = _sentence_of(ev.text, en.start)
            sent = ev.text[sa:sb]
            keys = {e.key for e in entities_in(sent)}
            said = len(claim_terms & _stems(sent)) + 2 * len(claim_keys & keys)
            # then the closest in magnitude: a wrong value is usually of the same order
            va, vb = min(n.values), min(en.values)
            near = -abs(math.log(abs(va) / abs(vb))) if va and vb else -99.0
            k = (not en.word, said, same_fmt, len(ctx & around), round(near, 1), -en.start)
            if best_key is None or k > best_key:
                best, best_key = en, k
        return best

    def _binding(self, claim: str, cnums: list[Num], cents: list[Ent], ev: Evidence):
        """``(code, reason, offset)`` when a claim value belongs to another name in ``ev``."""
        vals = [n for n in cnums if not n.word]
        if not vals:
            return None
        occ = {id(n): [en for en in ev.nums if en.lo is None and number_matches(n, en)] for n in vals}
        # the names of the claim that the passage has siblings of: those a value can be misbound to
        heads = {x.key for run in self._header_runs(ev) for x in run}
        fam = [e for e in cents if e.key in heads or any(siblings(x, e) for x in ev.ents)]
        pairs: list[tuple[Num, Ent]] = []
        for n in vals:
            best, dist = None, 1e9
            for e in fam:
                gap = (e.start - n.end) * 0.6 if e.start >= n.end else (n.start - e.end)
                if gap < dist:
                    best, dist = e, gap
            if best is not None:
                pairs.append((n, best))
        # parallel order: names listed first ("on A and B"), then their values in the same order
        multi = [(n, e) for n, e in pairs if occ[id(n)]]
        if len(multi) >= 2 and len({e.key for _, e in multi}) >= 2:
            n1, e1 = multi[0]
            n2, e2 = next(p for p in multi[1:] if p[1].key != e1.key)
            p1 = [x for x in ev.ents if x.key == e1.key]
            p2 = [x for x in ev.ents if x.key == e2.key]
            if p1 and p2 and siblings(e1, e2):
                q1, q2 = occ[id(n1)][0].start, occ[id(n2)][0].start
                if max(p1[0].start, p2[0].start) < min(q1, q2):
                    if (p1[0].start < p2[0].start) != (q1 < q2):
                        return ("values_swapped",
                                f"the passage gives its values for {p1[0].text} and {p2[0].text} in "
                                f"the other order: {n1.text} belongs to {p2[0].text}, not "
                                f"{p1[0].text}", min(q1, q2))
                    return None
        header = self._header(ev)

        def owner(en: Num, e: Ent) -> Ent | None:
            col = self._column_of(ev, en, e, None)
            if col is not None:
                return col
            prev = [x for x in ev.ents if x.end <= en.start and (x.key == e.key or siblings(x, e))
                    and not (header and x in header[0] and header[1] <= en.start)]
            return prev[-1] if prev else None

        for n in vals:
            hits = occ[id(n)]
            if not hits or not fam:
                continue
            # a value is misbound when some claim name has an owner for it in the passage and
            # no claim name owns it there
            found = {(id(en), e.key): owner(en, e) for en in hits for e in fam}
            if any(o is not None and o.key == k for (_i, k), o in found.items()):
                continue
            if any(self._owned_in_sentence(ev, en, e) for en in hits for e in fam):
                continue
            for e in fam:
                owners = [found[(id(en), e.key)] for en in hits]
                if all(o is not None for o in owners):
                    return ("value_of_other",
                            f"the passage gives {hits[0].text} for {owners[0].text}, not for {e.text}",
                            hits[0].start)
        return self._row_label(claim, vals, occ, ev)

    @staticmethod
    def _owned_in_sentence(ev: Evidence, en: Num, e: Ent) -> bool:
        """Whether the prose sentence stating ``en`` names ``e`` as the nearest of ``e``'s
        family (``e`` or its siblings; a name after the value counts at 0.6 of its distance, as
        in the claim): "In MCF-7 cells, PLSCR2 levels fell" gives the 7 to PLSCR2 whatever
        sibling the sentence before ends with.  Table text is left to the row and column
        readings."""
        a, b = _sentence_of(ev.text, en.start)
        if tabular(ev.text[a:b]):
            return False
        best, dist = None, 1e9
        for x in ev.ents:
            if not (a <= x.start < b) or not (x.key == e.key or siblings(x, e)):
                continue
            gap = (x.start - en.end) * 0.6 if x.start >= en.end else (en.start - x.end)
            if gap < dist:
                best, dist = x, gap
        return best is not None and best.key == e.key

    def _row_label(self, claim: str, vals: list[Num], occ: dict, ev: Evidence):
        """In table text, the words just before a value are its row label ("No authors 0.3M").
        A claim value whose row label shares no word with the claim, while another row's label
        does, is given in the passage for that other row."""
        text = normalize(ev.text)
        cterms = _stems(re.sub(r"\d", " ", claim))
        for n in vals:
            found = None
            for en in occ[id(n)]:
                block = _table_block(text, en.start)
                sa, sb = block or _sentence_of(text, en.start)
                if block is None and cterms and cterms <= _stems(text[sa:sb]):
                    found = None
                    break  # stated in a sentence holding all the claim's words: the claim's own
                labels = [lab for lab in _row_labels(text, sa, sb)
                          if lab[0] and len(lab[3].split()) <= 4 and not re.search(r"[,;.:()]", lab[3])]
                if len(labels) < 3:
                    continue  # not a table: a few numbers in prose
                mine = next((lab for lab in labels if lab[1] <= en.start <= lab[2]), None)
                if mine is None:
                    continue
                if mine[0] & cterms:
                    found = None
                    break  # this occurrence is bound to the claim's own row
                other = [lab for lab in labels if lab[0] & cterms and lab is not mine]
                if other and found is None:
                    found = ("value_of_other",
                             f"the passage gives {en.text} for \"{mine[3]}\", not for \"{other[0][3]}\"",
                             en.start)
            if found:
                return found
        return None

    @staticmethod
    def _header_runs(ev: Evidence) -> list[list[Ent]]:
        """Runs of ≥ 2 names with nothing but spaces between them (a table's column header)."""
        text = normalize(ev.text)
        runs: list[list[Ent]] = []
        cur: list[Ent] = []
        for x in ev.ents:
            if cur and text[cur[-1].end:x.start].strip(" \n") == "":
                cur.append(x)
            else:
                if len(cur) >= 2:
                    runs.append(cur)
                cur = [x]
        if len(cur) >= 2:
            runs.append(cur)
        return runs

    def _header(self, ev: Evidence, e: Ent | None = None, before: int | None = None):
        """A table's column header: a run of ≥ 2 names with only spaces between them (the last
        one before ``before`` holding ``e`` or a sibling, else the last one), its last name
        dropped when a number follows it directly (that is the first row's label)."""
        text = normalize(ev.text)
        runs = []
        for run in self._header_runs(ev):
            if before is not None and run[-1].end > before:
                continue
            after = text[run[-1].end:run[-1].end + 12]
            if re.match(r"\s*(?:\[\d+\]\s*)?\d", after):
                run = run[:-1]
            if len(run) >= 2:
                runs.append(run)
        if not runs:
            return None
        if e is not None:
            fam = [r for r in runs if any(x.key == e.key or siblings(x, e) for x in r)]
            if fam:
                return fam[-1], fam[-1][-1].end
        return runs[-1], runs[-1][-1].end

    def _column_of(self, ev: Evidence, en: Num, e: Ent, header) -> Ent | None:
        """The header name above the cell holding ``en``, when the claim's name ``e`` (or a
        sibling) heads a column: the cells are matched to the run of ``e``'s siblings in the
        header from its start, or, when the header holds no siblings of ``e``, to the whole
        header from its end (a first header word may name the row-label column)."""
        header = self._header(ev, e, en.start)
        if header is None:
            return None
        run = header[0]
        fam = [x for x in run if x.key == e.key or siblings(x, e)]
        if not any(x.key == e.key for x in run) and len(fam) < 2:
            return None
        whole = len(fam) < 2
        text = normalize(ev.text)
        row = next((r for r in _cells(text) if any(a <= en.start < b for a, b in r)), None)
        if row is None or len(row) < 2:
            return None
        idx = next(i for i, (a, b) in enumerate(row) if a <= en.start < b)
        if whole:
            k = len(run) - len(row) + idx
            return run[k] if 0 <= k < len(run) and len(row) <= len(run) else None
        return fam[idx] if idx < len(fam) else None

    @staticmethod
    def _role_swap(claim: str, sent: str) -> str | None:
        """Two sibling words (generator/discriminator, input/output) that the claim and the
        sentence bind to different shared words."""

        ct = [(stem(w), i) for i, (w, _s, _e) in enumerate(_tokens(claim)) if w not in STOP]
        st = [(stem(w), i) for i, (w, _s, _e) in enumerate(_tokens(sent)) if w not in STOP]
        shared = {w for w, _ in ct} & {w for w, _ in st}
        anchors = sorted(w for w in shared if len(w) >= 5 and w.isalpha()
                         and any(v != w and len(v) >= 5 and v.isalpha() and siblings(w, v, min_affix=3)
                                 for v in shared))
        if len(anchors) < 2:
            return None
        attrs = [w for w in shared if w not in anchors and w.isalpha() and len(w) >= 4]

        def bind(text):
            """Each shared word → the sibling word of its clause (a clause without one takes
            the previous clause's): "the generator used X, while the discriminator used Y"."""
            text = re.sub(r"\[[\d,\s]+\]", " ", text)
            out: dict[str, str | None] = {}
            current = None
            for clause in re.split(r"[,;:]|\b(?:and|while|whereas|but|although)\b", text):
                stems_ = [stem(w) for w, _s, _e in _tokens(clause) if w not in STOP]
                here = [w for w in stems_ if w in anchors]
                if len(set(here)) == 1:
                    current = here[0]
                elif len(set(here)) > 1:
                    current = None
                for w in stems_:
                    if w in attrs:
                        # a word found with two different anchors binds to neither
                        out[w] = current if out.get(w, current) == current else None
                        if w in out and out[w] is None:
                            out[w] = ""
            return {a: (out.get(a) or None) for a in attrs}

        bc, bs = bind(claim), bind(sent)
        agree = sum(1 for a in attrs if bc[a] and bc[a] == bs[a])
        differ = [a for a in attrs if bc[a] and bs[a] and bc[a] != bs[a]]
        if len(differ) >= 2 and len(differ) > agree:
            a = differ[0]
            return f"the claim ties {a} to {bc[a]}; the passage ties it to {bs[a]}"
        return None

    def _comparison_in(self, claim: str, cands: list[Evidence], sents: list) -> tuple | None:
        """``(reason, passage, span, agrees)`` for the sentence among ``sents`` that compares
        the same two things as the claim (both sides' words found around its comparative)."""
        cc = comparisons(claim)
        if not cc:
            return None

        ctoks = _tokens(claim)

        def names(text: str, toks) -> set[int]:
            """Indexes of the tokens of a name written in several ("ViT-Base", "VGG-16/19"):
            a name's words are read as written, not stemmed (the "Base" of "ViT-Base" is not
            the "based" of "ResNet-based baselines")."""
            out: set[int] = set()
            for e in entities_in(unligature(normalize(text))):
                inside = [j for j, (_w, a, b) in enumerate(toks) if e.start <= a and b <= e.end]
                if len(inside) > 1:
                    out.update(inside)
            return out

        def side(toks, lo, hi, n=6, rev=False, named=frozenset()):
            """The ``n`` content words nearest the comparative on one side (its arguments),
            not crossing a clause break."""
            seq = []
            rng = range(hi - 1, lo - 1, -1) if rev else range(lo, hi)
            for j in rng:
                w = toks[j][0]
                if w in _CLAUSE_BREAK or w in ("because", "since", "when", "whenever"):
                    break
                if w in STOP or w in _MAG_CUES or w in _GOOD_CUES:
                    continue
                seq.append(w if j in named else stem(w))
                if len(seq) >= n:
                    break
            return set(seq)

        best = None
        cnamed = names(claim, ctoks)
        for c in cc:
            left = side(ctoks, 0, c.at, rev=True, named=cnamed)
            right = side(ctoks, c.at + 1, len(ctoks), named=cnamed)
            only_left, only_right = left - right, right - left
            for _sh, _o, i, sa, sb in sents:
                sent = cands[i].text[sa:sb]
                stoks = _tokens(sent)
                snamed = None
                for s in comparisons(sent):
                    if snamed is None:
                        snamed = names(sent, stoks)
                    sleft = side(stoks, 0, s.at, rev=True, named=snamed)
                    sright = side(stoks, s.at + 1, len(stoks), named=snamed)
                    same = len(only_left & sleft) + len(only_right & sright)
                    crossed = len(only_left & sright) + len(only_right & sleft)
                    # both things compared, each on one side of the passage's comparative
                    straight = bool(only_left & sleft) and bool(only_right & sright)
                    across = bool(only_left & sright) and bool(only_right & sleft)
                    if not (straight or across):
                        continue
                    flip = -1 if (across and not straight and crossed > same) else 1
                    low = f" {claim.lower()} "
                    if " from " in low and " to " in low:
                        flip = 1  # "falls from A to B": a before and an after, not two things
                    if c.kind == s.kind:
                        agrees = c.sign == s.sign * flip
                    else:
                        agrees = goodness(c) == goodness(s) * flip
                    # the best-matched pair; among equals, one that agrees
                    k = (max(same, crossed), _sh, agrees)
                    if best is None or k > best[0]:
                        best = (k, c, s, flip, agrees, i, sa, sb)
        if best is None:
            return None
        _k, c, s, flip, agrees, i, sa, sb = best
        if not agrees:
            return (f"the claim says \"{c.cue}\"; the passage says \"{s.cue}\"" +
                    (" with the sides the other way round" if flip < 0 else ""), i, (sa, sb), False)
        return ("", i, (sa, sb), True)

    # -- output --------------------------------------------------------------------------------

    def _out(self, verdict: str, code: str, text: str, best: int | None,
             span: tuple[int, int] | None, order: list[int], cands: list[Evidence] | None = None) -> dict:
        out = {"verdict": verdict, "reason": {"code": code, "text": text}, "evidence": best,
               "order": order}
        if best is not None and cands is not None and span is not None:
            a, b = span
            out["span"] = (a, b)
        return out


def _front(order: list[int], i: int) -> list[int]:
    return [i] + [j for j in order if j != i]


_ROW_LINE = re.compile(r"(?<![\w.])\d[\d.,]*%?[kKMB]?(?![\w])|(?<!\S)-(?!\S)")


def _table_block(text: str, pos: int) -> tuple[int, int] | None:
    """The run of lines around ``pos`` that each hold a cell (a number or a dash): a table laid
    out one row per line, as the PDF layer extracts tables.  None for one-line text."""
    if "\n" not in text:
        return None
    lines = []
    start = 0
    for line in text.split("\n"):
        lines.append((start, start + len(line)))
        start += len(line) + 1
    at = next((i for i, (a, b) in enumerate(lines) if a <= pos <= b), None)
    if at is None:
        return None

    def row(i: int) -> bool:
        return _ROW_LINE.search(text, lines[i][0], lines[i][1]) is not None

    lo = hi = at
    while lo > 0 and row(lo - 1):
        lo -= 1
    while hi + 1 < len(lines) and row(hi + 1):
        hi += 1
    return (lines[lo][0], lines[hi][1]) if hi > lo else None


def _row_labels(text: str, a: int, b: int) -> list[tuple[set[str], int, int, str]]:
    """In the table text ``text[a:b]``, each run of cells with the words before it (back to the
    previous cell): ``(label stems, cells start, cells end, label text)``."""
    rows = [r for r in _cells(text) if r[0][0] >= a and r[-1][1] <= b]
    out = []
    prev_end = a
    for r in rows:
        label = text[prev_end:r[0][0]].strip()
        out.append((_stems(label), r[0][0], r[-1][1], label))
        prev_end = r[-1][1]
    return out


@functools.lru_cache(maxsize=4096)
def _cells(text: str) -> list[list[tuple[int, int]]]:
    """Runs of table cells: numbers (with "± x", "%", "/y"), dashes; as character spans
    (reference markers such as "[3]" are not cells)."""
    text = re.sub(r"\[\d+(?:,\s*\d+)*\]", lambda m: " " * len(m.group(0)), text)
    cell = re.compile(r"(?<![\w.])(?:-|\d[\d.,]*%?(?:/\d[\d.,]*)?(?:\s?±\s?\d[\d.]*)?[kKMB]?)(?![\w])")
    rows: list[list[tuple[int, int]]] = []
    cur: list[tuple[int, int]] = []
    last = None
    for m in cell.finditer(text):
        if last is not None and text[last:m.start()].strip() == "":
            cur.append((m.start(), m.end()))
        else:
            if cur:
                rows.append(cur)
            cur = [(m.start(), m.end())]
        last = m.end()
    if cur:
        rows.append(cur)
    return rows



# ------------------------------------------------------------------------------------- tables
# Tables as the PDF layer extracts them: one row per line, the row label first, then its cells;
# above the rows a header line of column names.  A claim value is read in its row (the row label
# must be something the claim names) and its column (the header name above its cell).

_TCELL = re.compile(
    r"(?<![\w.=])(?<![A-Za-z]-)(?:\d[\d.,]*(?:\s?·\s?\d+)?%?(?:/\d[\d.,]*%?)?(?:\s?±\s?\d[\d.]*)?[kKMB]?"
    r"|(?<=\S\s)-|(?<=\S\t)-)(?![\w.]\w)")
_HEADER_MAX_TOKENS = 16


@dataclass
class TableRow:
    label: str
    start: int  # line offsets in the text read
    end: int
    cells: list[tuple[int, int]]
    header: list[tuple[str, int, int]] | None  # the column names above the row


def table_rows(text: str) -> list[TableRow]:
    """The rows of line-laid table text, each with the header line last seen above it (a line
    of 2–16 names and no cells; a long caption line is prose, not a header)."""
    rows: list[TableRow] = []
    header: tuple[list, list] | None = None
    pos = 0
    for line in text.split("\n"):
        a, b = pos, pos + len(line)
        pos = b + 1
        body = _REFS.sub(lambda m: " " * len(m.group(0)), line)
        cells = [(a + m.start(), a + m.end()) for m in _TCELL.finditer(body)]
        toks = [(m.group(0), a + m.start(), a + m.end()) for m in re.finditer(r"\S+", line)]
        # words among the cells (a caption line "Table 1: ..." holds a number, then prose)
        inner = len([t for t in toks if t[1] >= cells[0][1] and not any(
            x <= t[1] < y for x, y in cells)]) if cells else 0
        label = body[:cells[0][0] - a].strip(" -\t") if cells else ""
        if not cells or inner > 3 or len(label.split()) > 10:
            if 2 <= len(toks) <= _HEADER_MAX_TOKENS:
                # names split at spaces, and at tabs (a tab-separated header may hold
                # multi-word names: "Alpha Bank\tBeta Bank")
                tabbed = [(m.group(0).strip(), a + m.start(), a + m.end())
                          for m in re.finditer(r"[^\t]+", line) if m.group(0).strip()]
                header = (toks, tabbed)
            continue
        cols = None
        if header is not None:
            toks_h, tabbed = header
            fits = (len(cells), len(cells) + 1)
            cols = tabbed if len(tabbed) in fits and len(toks_h) not in fits else toks_h
        rows.append(TableRow(label, a, b, cells, cols))
    return rows


def _column(row: TableRow, k: int) -> str | None:
    """The header name above cell ``k``: only when the header has as many names as the row has
    cells (or one more, naming the label column); otherwise the columns are not certain."""
    if row.header is None:
        return None
    n, m = len(row.header), len(row.cells)
    if n == m:
        return row.header[k][0]
    if n == m + 1:
        return row.header[k + 1][0]
    return None


def _table_binding(claim: str, cnums: list[Num], cents: list[Ent], ev: Evidence):
    """A claim value that a line-laid table of the passage gives under another column than the
    one the claim names (``value_of_other``), or two values whose columns the claim swaps
    (``values_swapped``: their order in the row against their columns' order in the header).
    Returns ``(code, text, offset in the passage)`` or None."""

    vals = [n for n in cnums if not n.word]
    if not vals or "\n" not in ev.text:
        return None
    head = ev.head.rstrip("\n") + "\n" if ev.head else ""
    text = normalize(head + ev.text)
    shift = len(head)
    rows = [r for r in table_rows(text) if r.start >= shift and r.header]
    if not rows:
        return None
    cterms = _stems(re.sub(r"\d", " ", claim))
    ckeys = {e.key for e in cents}
    # what the claim names that a header can name: its entities and its plain words
    items = [(e.key, e.start, e.end) for e in cents] + [
        ("w:" + stem(w), s_, e_) for w, s_, e_ in _tokens(claim) if w.isalpha() and len(w) > 2]

    def hkey(tok: str) -> set[str]:
        out = {entity_key(tok)}
        low = re.sub(r"[^a-z]", "", tok.lower())
        if low:
            out.add("w:" + stem(low))
        return out

    def tkeys(tok: str) -> set[str]:
        """A header name's keys, and its words' keys when it has several words."""
        out = hkey(tok)
        if " " in tok:
            for w in tok.split():
                out |= hkey(w)
        return out

    def row_named(r: TableRow) -> bool:
        lab = r.label
        if not lab:
            return False
        squashed = re.sub(r"[^0-9a-z]", "", lab.lower())
        return bool(_stems(lab) & cterms) or any(len(k) >= 3 and k in squashed for k in ckeys)

    def claimed_column(n: Num, r: TableRow, aligned: bool = False) -> tuple[str, int] | None:
        """The header name the claim ties ``n`` to: the nearest claim item naming a column."""
        best, dist = None, 1e9
        # read against the aligned columns, a header one name longer than the row names its
        # label column first: that name ("Gene", "System") is never a value's column
        skip = 1 if aligned and len(r.header) == len(r.cells) + 1 else 0
        for key, s_, e_ in items:
            hit = [i for i, (t, _a, _b) in enumerate(r.header) if i >= skip and key in tkeys(t)]
            if not hit or len({r.header[i][0] for i in hit}) > 1:
                continue  # names no column, or several ("Bank" of "Alpha Bank", "Beta Bank")
            idx = hit[0]
            gap = (s_ - n.end) * 0.6 if s_ >= n.end else (n.start - e_)
            if gap < dist:
                best, dist = (r.header[idx][0], idx), gap
        return best

    def cell_has(r: TableRow, k: int, n: Num) -> bool:
        a, b = r.cells[k]
        return any(number_matches(n, en) for en in numbers_in(text[a:b], evidence=True))

    placed: dict[int, list[tuple[TableRow, int]]] = {}
    for n in vals:
        placed[id(n)] = [(r, k) for r in rows if row_named(r) for k in range(len(r.cells))
                         if cell_has(r, k, n)]
    # a value under a column other than the one the claim names for it
    for n in vals:
        occ = placed[id(n)]
        verdicts = []
        for r, k in occ:
            col = _column(r, k)
            want = claimed_column(n, r, aligned=True)
            if col is None or want is None:
                verdicts.append(None)
                continue
            verdicts.append(col if col != want[0] and not (hkey(col) & {i[0] for i in items}) else "")
        if verdicts and all(v for v in verdicts):
            r, k = occ[0]
            want = claimed_column(n, r, aligned=True)
            return ("value_of_other", f"the table gives {text[slice(*r.cells[k])]} under "
                    f"{verdicts[0]}, not under {want[0]}", r.cells[k][0] - shift)
    # two values of one row whose columns the claim names in the other order
    for i, n1 in enumerate(vals):
        for n2 in vals[i + 1:]:
            for r, k1 in placed[id(n1)]:
                for r2, k2 in placed[id(n2)]:
                    if r2 is not r or k1 == k2:
                        continue
                    c1, c2 = claimed_column(n1, r), claimed_column(n2, r)
                    if not c1 or not c2 or c1[0] == c2[0] or entity_key(c1[0]) == entity_key(c2[0]):
                        continue
                    if (k1 < k2) != (c1[1] < c2[1]):
                        first, second = (n1, n2) if k1 < k2 else (n2, n1)
                        cf, cs = (c1, c2) if k1 < k2 else (c2, c1)
                        return ("values_swapped",
                                f"the table's row gives {first.text} then {second.text} and its "
                                f"header {cs[0]} then {cf[0]}: {first.text} is under {cs[0]}, not "
                                f"{cf[0]}",
                                r.cells[min(k1, k2)][0] - shift)
    return None


# ------------------------------------------------------------------- tables placed by x-position
# When the tracer can read the table's page (PDFium), each value cell comes with the header
# names printed above it and its row's label (``episteme.pdf.tablegrid``): a claim's value is then
# checked in the cell the claim points at, whatever the text's tabs and spaces say.

_STRICT = re.compile(r"[^0-9a-z+#]")


def _strict_tokens(text: str) -> set[str]:
    """A text's tokens, lower-case, letters, digits, ``+`` and ``#`` kept (``BM25+`` is not
    ``BM25``), citation markers and brackets left out."""
    text = _REFS.sub(" ", normalize(unligature(text)))
    out = set()
    for tok in re.split(r"[\s,;:()\[\]{}\"]+", text):
        tok = tok.strip(_STRIP_LEAD + _STRIP_TRAIL)
        key = _STRICT.sub("", tok.lower())
        if key:
            out.add(key)
    return out


def _name_parts(name: str) -> tuple[set[str], set[str]]:
    """A row label's or header name's distinctive tokens (names by form and tokens with digits,
    as strict keys: ``BM25+``, ``1&2``, ``.GOV2``) and its plain content stems."""
    name = _REFS.sub(" ", name)
    pair = lang_pair(name.strip())
    if pair:
        return {"pair:" + "".join(pair)}, set()
    ents = {_STRICT.sub("", e.text.lower()) for e in entities_in(name)
            if re.search(r"[A-Za-z]", e.text) and (re.search(r"\d", e.text) or
                                                   any(c.isupper() for c in e.text[1:]))}
    ents |= {t for t in _strict_tokens(name) if re.search(r"\d", t)}
    ents.discard("")
    return ents, _stems(re.sub(r"\d", " ", name))


def _names(name: str, claim_tokens: set[str], claim_stems: set[str]) -> bool:
    """Whether the claim names ``name``: every distinctive token of it and half its plain words
    or more (all of them when it has no distinctive token, at least one of three letters)."""
    ents, stems = _name_parts(name)
    if ents:
        return ents <= claim_tokens and 2 * len(stems & claim_stems) >= len(stems)
    return bool(stems) and stems <= claim_stems and any(len(s) >= 3 for s in stems)


def grid_check(claim: str, cnums: list[Num], grid) -> tuple[str, str, tuple[int, int]] | None:
    """``(code, reason, (row index, cell index))``: ``("agree", "", cell)`` when a row the claim
    names (any row, when it names none) holds all its values under the columns it names; else
    when the table contradicts a claim value:

    * ``value_of_other``: the claim's row holds the value under another column than the one the
      claim names (the columns from the header lines printed above each cell);
    * ``cell_differs``: the value stands in a row the claim does not name, and the claim's row
      holds another value in that column;
    * ``values_split``: the claim's values stand in two different rows (each once), the
      claim naming neither apart: the row of the one in the leftmost column holds another value.
    None when the table agrees or cannot tell."""
    vals = [n for n in cnums if not n.word and n.lo is None]
    if not vals or grid is None or not grid.rows:
        return None
    ctoks = _strict_tokens(claim) | {"pair:" + "".join(p) for e in entities_in(claim)
                                     if (p := lang_pair(e.text))}
    cstems = _stems(re.sub(r"\d", " ", claim))

    def has(cell, n: Num) -> bool:
        return any(number_matches(n, en) for en in numbers_in(cell.text, evidence=True))

    # a row is named by one of its label cells (a label may run over two columns: a gene and
    # its location, a group and a method)
    named_rows = {i for i, r in enumerate(grid.rows)
                  if any(_names(c.text, ctoks, cstems) for c in r.cells[:r.values[0]])}
    labelled = any(r.label for r in grid.rows)
    # the header names the claim names; a name's words also found in a row label do not count
    header_names = {c.text for line in grid.header_lines for c in line} - grid.label_heads
    named_cols = {h for h in header_names if _names(h, ctoks, cstems)}
    where = {id(n): [(i, k) for i, r in enumerate(grid.rows) for k in r.values if has(r.cells[k], n)]
             for n in vals}
    in_table = [n for n in vals if where[id(n)]]
    if not in_table:
        return None
    rows = grid.rows
    # the claim's values the table does not hold (a setting such as "10-crop", or a number in
    # a name, "Recall@20", "ResNet-152", names the table or a column, not a value of it)
    text = normalize(claim)
    missing = [n for n in vals if not where[id(n)] and not _compound(claim, n)
               and (n.start == 0 or text[n.start - 1].isspace() or text[n.start - 1] in "(")]
    # a row holding all the claim's values (named, or no row named at all): the table agrees
    # unless the claim names another column for one of them
    first_bad = None
    for i, r in enumerate(rows):
        if (i in named_rows or not labelled) and all(any(j == i for j, _k in where[id(n)])
                                                       for n in in_table):
            # a named column holding another of the claim's values in this row is that value's
            used = {h for n in in_table for j, k in where[id(n)] if j == i for h in r.heads[k]}

            def ok(k: int, r=r, used=used) -> bool:
                """On every header line where the claim names a column, the name above cell
                ``k`` is one the claim names (or the column of another of its values)."""
                rivals = named_cols - (used - set(r.heads[k]))
                mine = set(r.heads[k])
                for line in grid.header_lines:
                    texts = {c.text for c in line}
                    if texts & rivals and texts & mine and not (texts & mine & rivals):
                        return False
                return True

            bad = [n for n in in_table if not any(ok(k) for j, k in where[id(n)] if j == i)]
            if not bad and missing and i in named_rows:
                # the row the claim names holds its other values, and under the one column
                # it names that they do not fill, another value than the claim's: that is
                # the value the claim changed (19.38 for the table's 21.43)
                free = [k for k in r.values if set(r.heads[k]) & named_cols
                        and not set(r.heads[k]) & used and numbers_in(r.cells[k].text, evidence=True)]
                if len(missing) == 1 and len(free) == 1:
                    k = free[0]
                    return ("cell_differs", f"the table gives {r.cells[k].text} for "
                            f"{r.label or 'that row'} under {' / '.join(r.heads[k])}, not "
                            f"{_fmt_num(missing[0])}", (i, k))
            if not bad:
                k0 = next(k for j, k in where[id(in_table[0])] if j == i)
                return ("agree", f"the table's row {r.label or r.cells[k0].text} gives "
                        f"{r.cells[k0].text} under {' / '.join(r.heads[k0]) or 'its column'}", (i, k0))
            if first_bad is None:
                n = bad[0]
                k = next(k for j, k in where[id(n)] if j == i)
                rivals = sorted(named_cols - used) or sorted(named_cols)
                first_bad = ("value_of_other", f"the table gives {r.cells[k].text} for "
                             f"{r.label or 'that row'} under {' / '.join(r.heads[k]) or 'another column'}"
                             f", not under {rivals[0]}", (i, k))
    if first_bad is not None:
        return first_bad
    if len(named_rows) >= 1:
        # the value stands only in rows the claim does not name
        for n in in_table:
            occ = where[id(n)]
            if any(j in named_rows for j, _k in occ) or len(occ) != 1:
                continue
            j, k = occ[0]
            col = rows[j].cols.get(k)
            targets = [(i, kk) for i in sorted(named_rows) for kk in rows[i].values
                       if rows[i].cols.get(kk) == col]
            if len(targets) == 1 and not (_strict_tokens(rows[j].label) - _strict_tokens(
                    rows[targets[0][0]].label)) <= ctoks:
                i, kk = targets[0]
                return ("cell_differs", f"the table gives {rows[i].cells[kk].text} for "
                        f"{rows[i].label} under {' / '.join(rows[i].heads[kk]) or 'that column'}; "
                        f"{rows[j].cells[k].text} is {rows[j].label}'s", (i, kk))
    if len(in_table) >= 2:
        for a in in_table:
            for b in in_table:
                if a is b or len(where[id(a)]) != 1 or len(where[id(b)]) != 1:
                    continue
                (ia, ka), (ib, kb) = where[id(a)][0], where[id(b)][0]
                if ia == ib or ia in named_rows and ib in named_rows:
                    continue
                if rows[ia].cols.get(ka, 99) >= rows[ib].cols.get(kb, 99):
                    continue  # a is the row's key: the leftmost of the two
                col = rows[ib].cols.get(kb)
                other = [kk for kk in rows[ia].values if rows[ia].cols.get(kk) == col]
                if len(other) != 1:
                    continue
                kk = other[0]
                return ("values_split", f"the table's row with {rows[ia].cells[ka].text} gives "
                        f"{rows[ia].cells[kk].text} under {' / '.join(rows[ia].heads[kk]) or 'that column'}"
                        f"; {rows[ib].cells[kb].text} is another row's", (ia, kk))
    return None


def _grid_span(ev: Evidence, grid, ri: int, ki: int) -> tuple[int, int] | None:
    """The passage offsets of the printed line holding grid row ``ri`` (None when the row is
    in another chunk of the table than this passage)."""
    line = grid.rows[ri].text
    at = ev.text.find(line) if line else -1
    return (at, at + len(line)) if at >= 0 else None
