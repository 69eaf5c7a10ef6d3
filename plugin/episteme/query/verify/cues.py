"""The words the polarity checks read: negation cues, verbs of absence, clause breaks, comparatives
(with their inflections) and quantities where more is worse; and the cue tokenizer that keeps "n't"."""

from __future__ import annotations

import functools
import re

from ..text import normalize, unligature

# ----------------------------------------------------------------------------- words, cues

_WORD = re.compile(r"[^\W_]+(?:'t)?", re.UNICODE)

NEG_CUES = frozenset(["not", "no", "never", "without", "none", "neither", "nor", "cannot", "nothing", "lack", "lacks", "lacking", "absence"])
NEG_MULTI = (("free", "of"),)
# verbs that state an absence ("discarded", "excludes"): negations in other words
PRIVATIVE = frozenset(["exclude", "excludes", "excluded", "excluding", "omit", "omits", "omitted", "discard", "discards", "discarded", "remove", "removes", "removed", "removing", "drop", "drops", "dropped", "dropping", "lack", "lacks", "lacked", "avoid", "avoids", "avoided", "fail", "fails", "failed", "absent"])
CLAUSE_BREAK = frozenset(["but", "although", "though", "whereas", "while", "however", "instead", "unlike"])

# comparative cues: +1 = more / better for the subject, -1 = less / worse
MAG_CUES = {
    "higher": 1, "more": 1, "greater": 1, "larger": 1, "bigger": 1, "increase": 1, "increases": 1,
    "increased": 1, "rises": 1, "rise": 1, "rose": 1, "grows": 1, "exceeds": 1, "exceed": 1,
    "lower": -1, "less": -1, "fewer": -1, "smaller": -1, "decrease": -1, "decreases": -1,
    "decreased": -1, "reduces": -1, "reduce": -1, "reduced": -1, "falls": -1, "fall": -1,
    "fell": -1, "drops": -1, "drop": -1, "shrinks": -1,
}
GOOD_CUES = {
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


MAG_CUES = _inflect(MAG_CUES)
GOOD_CUES = _inflect(GOOD_CUES)
# quantities where more is worse: "higher error" = worse, "fewer FLOPs" = cheaper
BAD_QUANTITIES = frozenset(["error", "errors", "err", "loss", "losses", "cost", "costs", "complexity", "time", "latency", "perplexity", "flops", "memory", "overhead", "runtime"])


@functools.lru_cache(maxsize=8192)
def cue_tokens(text: str) -> tuple[tuple[str, int, int], ...]:
    return tuple((m.group(0).lower(), m.start(), m.end())
                 for m in _WORD.finditer(unligature(normalize(text))))
