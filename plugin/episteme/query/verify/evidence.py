"""A candidate passage as the checks see it (:class:`Evidence`), and what it states of a claim's
names and numbers: whether it names a claim's name (in any of its written forms), the sibling
it names instead, and which of its numbers stands in the place of a claim's."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..text import STOP, fold, normalize, stem, words
from .names import LANGUAGES, Ent, entities_in, lang_pair, siblings
from .numbers import Num, fmt_num, number_matches, numbers_in, year_like
from .sentences import sentence_of, stem_set


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


def has_entity(ev: Evidence, e: Ent) -> bool:
    key = e.key
    keys = {x.key for x in ev.ents}
    if key in keys or key.rstrip("s") in {k.rstrip("s") for k in keys}:
        return True
    pair = lang_pair(e.text)
    if pair:
        # written with spaces in the passage: "English to German", "English → German"
        names = [[w for w, c in LANGUAGES.items() if c == code] for code in pair]
        pat = (r"\b(?:" + "|".join(names[0]) + r")\s*(?:-to-|-|→|->|\s+to\s+)\s*(?:"
               + "|".join(names[1]) + r")\b")
        return re.search(pat, normalize(ev.text), re.IGNORECASE) is not None
    # written apart or with other punctuation in the passage ("BERT LARGE", "WMT '14")
    folded = fold(normalize(ev.text)).lower()  # "Rocktäschel" in the passage = "Rocktaschel"
    squashed = re.sub(r"[^0-9a-z]", "", folded)
    if len(key) >= 4 and key in squashed:
        pat = r"(?<![0-9a-z])" + r"[\s\-'./]?".join(map(re.escape, key)) + r"s?(?![0-9a-z])"
        return re.search(pat, folded) is not None
    return False

def sibling_in(ev: Evidence, e: Ent) -> Ent | None:
    for x in ev.ents:
        if siblings(x, e):
            return x
    return None


def aligned_number(claim: str, n: Num, ev: Evidence) -> Num | None:
    """The passage number in the place of the claim's ``n``: a year for a year, a value for a
    value; then the one whose sentence says most of what the claim says and whose surrounding
    words share most with the words around ``n`` in the claim (ties: same format, then first)."""
    ctx = stem_set(normalize(claim)[max(0, n.start - 40):n.end + 40])
    best, best_key = None, None
    cnums = numbers_in(claim)
    claim_terms = stem_set(claim)
    claim_keys = {e.key for e in entities_in(claim)}
    for en in ev.nums:
        if en.lo is not None or any(number_matches(c, en) for c in cnums):
            continue  # a value the claim also states is not the one it gets wrong
        around = stem_set(normalize(ev.text)[max(0, en.start - 40):en.end + 40])
        same_fmt = ("." in en.text) == ("." in n.text) and ("%" in en.text) == ("%" in n.text)
        # the sentence saying most of what the claim says (its words and its names)
        sa, sb = sentence_of(ev.text, en.start)
        sent = ev.text[sa:sb]
        keys = {e.key for e in entities_in(sent)}
        said = len(claim_terms & stem_set(sent)) + 2 * len(claim_keys & keys)
        # then the closest in magnitude: a wrong value is usually of the same order
        va, vb = min(n.values), min(en.values)
        near = -abs(math.log(abs(va) / abs(vb))) if va and vb else -99.0
        k = (year_like(en) == year_like(n), not en.word, said, same_fmt, len(ctx & around),
             round(near, 1), -en.start)
        if best_key is None or k > best_key:
            best, best_key = en, k
    return best


#: Words around a number that say nothing about which quantity it is.
_VAGUE = frozenset(["model", "result", "valu", "number", "total", "use", "show", "report", "tabl",
                    "paper", "set", "score"])


def number_aligned(claim: str, n: Num, ev: Evidence, other: Num | None, cnums: list[Num]) -> str | None:
    """``None`` when the passage's ``other`` stands for the same quantity as the claim's ``n``
    (so a different value contradicts the claim), else why that is uncertain.  The same quantity:
    the same kind (a percentage, a year, or neither; the same order of magnitude) and the same
    place, read from the texts' own words: the same unit or word right after both numbers, a
    content word shared by the few words around each, or another of the claim's values stated in
    the same sentence or table line as ``other``."""
    if other is None:
        return "the passage gives no number in its place"
    if year_like(n) != year_like(other):
        return "a year and a value are not the same quantity"
    pct = ("%" in n.text or "percent" in n.text) != ("%" in other.text or "percent" in other.text)
    va, vb = min(n.values), min(other.values)
    if not other.word and not n.word and va and vb and abs(math.log(abs(va) / abs(vb))) > math.log(10) \
            and not pct:
        return f"{fmt_num(other)} is of another order of magnitude"
    text = normalize(ev.text)
    sa, sb = sentence_of(text, other.start)
    line_a = text.rfind("\n", 0, other.start) + 1
    line_b = text.find("\n", other.end)
    line_b = len(text) if line_b < 0 else line_b
    for en in ev.nums:
        if en is other or en.lo is not None:
            continue
        if any(number_matches(c, en) for c in cnums if c is not n) and \
                (sa <= en.start < sb or line_a <= en.start < line_b):
            return None  # the claim's other values stated beside it: its row, its sentence
    if _unit_after(normalize(claim), n) and _unit_after(normalize(claim), n) == _unit_after(text, other):
        return None
    near_c = _near_words(normalize(claim), n) - _VAGUE
    near_e = _near_words(text, other) - _VAGUE
    if near_c & near_e:
        return None
    return f"the words around {fmt_num(other)} are not the claim's"


def _unit_after(text: str, n: Num) -> str:
    m = re.match(r"\s*(%|[A-Za-z][\w-]*)", text[n.end:n.end + 20])
    return stem(m.group(1).lower()) if m else ""


def _near_words(text: str, n: Num, k: int = 4) -> set[str]:
    """The stems of the ``k`` content words on each side of ``n``, within its clause."""
    left = re.split(r"[;.:!?\n]", text[max(0, n.start - 60):n.start])[-1]
    right = re.split(r"[;.:!?\n]", text[n.end:n.end + 60])[0]
    lw = [w for w in words(left) if w not in STOP and not w.isdigit()][-k:]
    rw = [w for w in words(right) if w not in STOP and not w.isdigit()][:k]
    return {stem(w) for w in lw + rw}
