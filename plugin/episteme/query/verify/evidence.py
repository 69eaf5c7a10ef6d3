"""A candidate passage as the checks see it (:class:`Evidence`), and what it states of a claim's
names and numbers: whether it names a claim's name (in any of its written forms), the sibling
it names instead, and which of its numbers stands in the place of a claim's."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..text import normalize
from .names import LANGUAGES, Ent, entities_in, lang_pair, siblings
from .numbers import Num, number_matches, numbers_in
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
    squashed = re.sub(r"[^0-9a-z]", "", normalize(ev.text).lower())
    if len(key) >= 4 and key in squashed:
        pat = r"(?<![0-9a-z])" + r"[\s\-'./]?".join(map(re.escape, key)) + r"s?(?![0-9a-z])"
        return re.search(pat, normalize(ev.text).lower()) is not None
    return False

def sibling_in(ev: Evidence, e: Ent) -> Ent | None:
    for x in ev.ents:
        if siblings(x, e):
            return x
    return None


def aligned_number(claim: str, n: Num, ev: Evidence) -> Num | None:
    """The passage number in the place of the claim's ``n``: the one whose surrounding words
    share most with the words around ``n`` in the claim (ties: same format, then first)."""
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
        k = (not en.word, said, same_fmt, len(ctx & around), round(near, 1), -en.start)
        if best_key is None or k > best_key:
            best, best_key = en, k
    return best
