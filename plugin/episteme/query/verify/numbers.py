"""Numbers as values: formats, scales, ranges, number words, hedges; labels ("Table 2", "Section 3.2")
and citation markers are not values.  Also which passage number stands in the place of a claim's
(:func:`aligned_number`), for the reason a mismatch prints."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..text import normalize

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
CITATION_MARKS = re.compile(r"\[\d{1,3}(?:\s*[,;\u2013-]\s*\d{1,3})*\]")
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
    text = CITATION_MARKS.sub(lambda m: " " * len(m.group(0)), text)
    text = blank_citation_years(text)
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
            # WMT'14 = 2014: a year in a name, never the value 14
            vals = {_key(2000 + value if value < 50 else 1900 + value)}
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
    if evidence:
        out = _drop_line_numbers(out)
    out.sort(key=lambda n: n.start)
    return out


#: A year as written in a citation: "(Smith et al., 2017)", "(Lee and Kim 2019a; Wu, 2020)",
#: "Rocktäschel et al. (2016)".  Its year names a paper, it states no value.
_YEAR = r"(?:19|20)\d{2}[a-z]?"
_PAREN = re.compile(r"\(([^()]{0,300})\)")
_AUTHOR_YEAR = re.compile(r"[A-Z][\w'\-]+(?:\s+et\s+al\.?|\s+(?:and|&)\s+[A-Z][\w'\-]+)?\s*,?\s*"
                          + _YEAR + r"(?![\w])")
_ET_AL_YEAR = re.compile(r"(?:et\s+al\.?|[A-Z][\w'\-]+)\s*,?\s*\(\s*(" + _YEAR + r"(?:\s*[,;]\s*" + _YEAR
                         + r")*)\s*\)")
_YEAR_TOKEN = re.compile(r"(?<![\w.])" + _YEAR + r"(?![\w])")


def blank_citation_years(text: str) -> str:
    """``text`` with the years of its author-year citations blanked (offsets kept): inside a
    parenthesis that pairs a capitalised name with a year, and the "(2016)" after "et al." or a
    name.  A year elsewhere ("released in 2017") stays a value."""
    if not re.search(_YEAR, text):
        return text
    chars = list(text)

    def blank(a: int, b: int) -> None:
        for m in _YEAR_TOKEN.finditer(text, a, b):
            chars[m.start():m.end()] = " " * (m.end() - m.start())

    for m in _PAREN.finditer(text):
        if _AUTHOR_YEAR.search(m.group(1)) and re.search(r"[a-z]", m.group(1)):
            blank(m.start(1), m.end(1))
    for m in _ET_AL_YEAR.finditer(text):
        blank(m.start(1), m.end(1))
    return "".join(chars)


def _drop_line_numbers(nums: list[Num]) -> list[Num]:
    """Without the margin line numbers of a preprint ("... of the 617 samples 618 were ..."):
    integers from 10 up that count up by one through the text, a line's length apart (three or
    more), are the page's line numbers, not values of the prose (a list's "1. 2. 3." is not)."""
    chains: dict[float, list[Num]] = {}
    members: list[list[Num]] = []
    for n in sorted(nums, key=lambda x: x.start):
        if n.word or n.lo is not None or not re.fullmatch(r"\d{1,4}", n.text):
            continue
        v = float(n.text)
        prev = chains.pop(v - 1, None)
        if prev is not None and 10 <= n.start - prev[-1].end <= 400:
            prev.append(n)
            chains[v] = prev
        else:
            chains[v] = [n]
            members.append(chains[v])
    drop = {id(n) for ch in members if len(ch) >= 3 and float(ch[0].text) >= 10 for n in ch}
    return [n for n in nums if id(n) not in drop] if drop else nums


def year_like(n: Num) -> bool:
    """A bare four-digit year (1900-2099): compared only with another year."""
    return not n.word and re.fullmatch(r"(?:19|20)\d{2}", n.text.strip()) is not None


def specificity(n: Num) -> float:
    """How much a value pins down where it is stated: its digits (``21.43`` 4, ``10`` 2), a
    number word counting as one digit."""
    if n.word:
        return 1.0
    scaled = re.search(r"[%kKMB]|thousand|million|billion|trillion|percent", n.text)
    return float(max(1, len(re.sub(r"\D", "", n.text))) + (1 if scaled else 0))


def compound(text: str, n: Num) -> bool:
    """A number glued by a hyphen to the word after it ("10-crop", "34-layer"): it names a
    setting rather than stating a result."""
    return not n.word and re.match(r"-[A-Za-z]", normalize(text)[n.end:n.end + 2]) is not None


def claim_numbers(claim: str) -> list[Num]:
    """The values a claim asserts (its numbers, labels such as "Table 2" left out)."""
    return numbers_in(claim)


def number_matches(claim_num: Num, ev: Num) -> bool:
    """Same value in any reading (28.4 = 28.40, 86.3% = 0.863), or inside a stated range; a
    hedged claim value ("about 90%") also matches the evidence rounded to its precision, and a
    value written with a scale word ("210 thousand", "4.5M") the plain value rounded to it."""
    if claim_num.values & ev.values:
        return True
    scale = re.search(r"\s?(thousand|million|billion|trillion|[kKMB])$", claim_num.text.strip())
    if scale and not claim_num.word and ev.lo is None and not re.search(r"[kKMB]|illion|thousand", ev.text):
        # "210 thousand" is stated to its scale: 210,286 rounds to it
        mant = claim_num.text.strip()[:scale.start()].strip().replace(",", "")
        digits = len(mant.split(".")[1]) if "." in mant else 0
        unit = _SCALE[scale.group(1).lower()]
        try:
            want = float(mant)
        except ValueError:
            want = None
        if want is not None and any(v and abs(round(v / unit, digits) - want) < 1e-9 for v in ev.values):
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


def fmt_num(n: Num) -> str:
    return n.text.strip()
