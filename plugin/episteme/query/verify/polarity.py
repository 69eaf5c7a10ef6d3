"""Polarity: negation (what each cue governs, verbs of absence) and comparison direction (sides,
denied comparatives, quantities where more is worse); roles swapped between sibling words; and
whether a sentence restates a claim with its polarity."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import STOP, normalize, stem, unligature
from .cues import (
    BAD_QUANTITIES,
    CLAUSE_BREAK,
    GOOD_CUES,
    MAG_CUES,
    NEG_CUES,
    NEG_MULTI,
    PRIVATIVE,
    cue_tokens,
)
from .evidence import Evidence
from .names import entities_in, siblings
from .numbers import Num, number_matches, numbers_in
from .sentences import stem_set


def negated_near(text: str, terms: set[str], *, min_hits: int = 1) -> tuple[bool, int | None]:
    """Whether a negation cue stands within 4 words before one of ``terms`` (stemmed content
    words) — or within 2 after, for "X is absent" / "no X" styles; returns the cue's offset."""

    toks = cue_tokens(text)
    norm = unligature(normalize(text))
    hits = [i for i, (w, _s, _e) in enumerate(toks) if stem(w) in terms]
    for i, (w, s, _e) in enumerate(toks):
        cue = w in NEG_CUES or w.endswith("n't")
        if not cue:
            cue = any(w == a and i + 1 < len(toks) and toks[i + 1][0] == b for a, b in NEG_MULTI)
        if not cue:
            continue
        # the cue's scope: to the end of its clause (a comma, semicolon, period or a
        # contrastive conjunction), at most 12 words
        end = i + 1
        while end < len(toks) and end - i <= 12:
            if re.search(r"[,;.:]", norm[toks[end - 1][2]:toks[end][1]]) or toks[end][0] in CLAUSE_BREAK:
                break
            end += 1
        inside = {toks[h][0] for h in hits if i < h < end or 0 < i - h <= 2}
        if len(inside) >= min_hits:
            return True, s
    return False, None


def privative_near(text: str, terms: set[str]) -> bool:
    """A verb of absence ("discarded", "excludes") next to the claim's words: the text denies
    something without a "not"."""

    toks = cue_tokens(text)
    for i, (w, _s, _e) in enumerate(toks):
        if w in PRIVATIVE and any(stem(t[0]) in terms for t in toks[max(0, i - 3):i + 5] if t[0] != w):
            return True
    return False


def negated_terms(text: str, cue_at: int | None, n: int = 2) -> set[str]:
    """The first ``n`` content words after the negation cue at offset ``cue_at``."""

    if cue_at is None:
        return set()
    out: list[str] = []
    for w, s, _e in cue_tokens(text):
        if s <= cue_at or w in STOP or w in NEG_CUES or w.endswith("n't") or len(w) < 3:
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

    toks = cue_tokens(text)
    norm = unligature(normalize(text))
    out: set[str] = set()
    for i, (w, _s, _e) in enumerate(toks):
        if not (w in NEG_CUES or w.endswith("n't")):
            continue
        got = 0
        for j in range(i + 1, min(len(toks), i + 8)):
            if re.search(r"[,;.:]", norm[toks[j - 1][2]:toks[j][1]]) or toks[j][0] in CLAUSE_BREAK:
                break
            t = toks[j][0]
            if t in STOP or t in NEG_CUES or len(t) < 3 or t.isdigit():
                continue
            out.add(stem(t))
            got += 1
            if got >= n:
                break
    return out


def denied_stated(claim: str, cue_at: int | None, sentence: str) -> bool:
    """Whether ``sentence`` states what the claim denies: the word the claim negates and at
    least two thirds of the four content words after the negation are all there."""
    first = negated_terms(claim, cue_at, 1)
    window = negated_terms(claim, cue_at, 4)
    have = stem_set(sentence)
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
    toks = cue_tokens(text)
    out = []
    for i, (w, _s, _e) in enumerate(toks):
        if w not in GOOD_CUES and w not in MAG_CUES:
            continue
        if _ADJ_CUE.search(w) and not any(t[0] == "than" for t in toks[i + 1:i + 6]):
            continue
        # a denied comparative states the other direction ("does not reduce", "no better
        # than"; not "not only improves")
        flip = -1 if any((t in ("not", "never", "cannot", "no") or t.endswith("n't"))
                         and (k + 1 >= len(toks) or toks[k + 1][0] != "only")
                         for k, (t, _a, _b) in enumerate(toks[max(0, i - 3):i], start=max(0, i - 3))) else 1
        cue = w if flip > 0 else "not " + w
        if w in GOOD_CUES:
            out.append(Comparison(flip * GOOD_CUES[w], "good", cue, i, False))
        else:
            window = [t[0] for t in toks[max(0, i - 3):i + 4]]
            out.append(Comparison(flip * MAG_CUES[w], "mag", cue, i,
                                  any(x in BAD_QUANTITIES for x in window)))
    return out


def goodness(c: Comparison) -> int:
    if c.kind == "good":
        return c.sign
    return -c.sign if c.bad_quantity else c.sign


def restates(claim: str, cterms: set[str], cnums: list[Num], negated: bool, sent: str) -> bool:
    """Whether ``sent`` states everything ``claim`` states, with the same polarity: every
    content word and every number of the claim is in it, and a negation stands near the
    claim's words in the sentence exactly when one does in the claim (a verbatim or trimmed
    copy of a sentence always restates it; "we use dropout" does not restate "we do not
    use dropout", nor the reverse)."""
    if not cterms or not cterms <= stem_set(sent):
        return False
    if cnums:
        snums = numbers_in(sent, evidence=True)
        if not all(any(number_matches(n, en) for en in snums) for n in cnums):
            return False
    if negated_near(sent, cterms)[0] != negated:
        return False
    # a verb of absence ("removed", "excluded") by the claim's words: the claim must have it too
    return not privative_near(sent, cterms) or privative_near(claim, cterms)


def role_swap(claim: str, sent: str) -> str | None:
    """Two sibling words (generator/discriminator, input/output) that the claim and the
    sentence bind to different shared words."""

    ct = [(stem(w), i) for i, (w, _s, _e) in enumerate(cue_tokens(claim)) if w not in STOP]
    st = [(stem(w), i) for i, (w, _s, _e) in enumerate(cue_tokens(sent)) if w not in STOP]
    shared = {w for w, _ in ct} & {w for w, _ in st}
    anchors = sorted(w for w in shared if len(w) >= 5 and w.isalpha()
                     and any(v != w and len(v) >= 5 and v.isalpha() and siblings(w, v, min_affix=3)
                             for v in shared))
    if len(anchors) < 2:
        return None
    # in the claim's word order: the reason names the same word in every process (a set's order
    # follows the string hash seed)
    attrs = list(dict.fromkeys(w for w, _i in ct if w in shared and w not in anchors and w.isalpha()
                               and len(w) >= 4))

    def bind(text):
        """Each shared word → the sibling word of its clause (a clause without one takes
        the previous clause's): "the generator used X, while the discriminator used Y"."""
        text = re.sub(r"\[[\d,\s]+\]", " ", text)
        out: dict[str, str | None] = {}
        current = None
        for clause in re.split(r"[,;:]|\b(?:and|while|whereas|but|although)\b", text):
            stems_ = [stem(w) for w, _s, _e in cue_tokens(clause) if w not in STOP]
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

def comparison_in(claim: str, cands: list[Evidence], sents: list) -> tuple | None:
    """``(reason, passage, span, agrees, (claim cue, passage cue, uncertain))`` for the sentence
    among ``sents`` that compares the same two things as the claim (both sides' words found
    around its comparative).  ``uncertain``: the sides were matched across the comparative on
    little evidence (fewer than three of the claim's side words, or fewer than three times as many
    as were found straight)."""
    cc = comparisons(claim)
    if not cc:
        return None

    ctoks = cue_tokens(claim)

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
            if w in CLAUSE_BREAK or w in ("because", "since", "when", "whenever"):
                break
            if w in STOP or w in MAG_CUES or w in GOOD_CUES:
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
            stoks = cue_tokens(sent)
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
                    best = (k, c, s, flip, agrees, i, sa, sb, same, crossed)
    if best is None:
        return None
    _k, c, s, flip, agrees, i, sa, sb, same, crossed = best
    if not agrees:
        return (f"the claim says \"{c.cue}\"; the passage says \"{s.cue}\"" +
                (" with the sides the other way round" if flip < 0 else ""), i, (sa, sb), False,
                (c.cue, s.cue, flip < 0 and not (crossed >= 3 and crossed >= 3 * same)))
    return ("", i, (sa, sb), True, (c.cue, s.cue, flip < 0))


# ------------------------------------------------------------------------------ alternatives

#: "A instead of B", "A rather than B", "A, not B": the claim asserts A and denies B.
_INSTEAD = re.compile(r"(?P<a>(?:[\w\-/]+\s+){0,3}[\w\-/]+)\s*(?:,\s*)?(?:instead\s+of|rather\s+than|,\s*not)\s+"
                      r"(?:an?\s+|the\s+)?(?P<b>(?:[\w\-/]+\s+){0,2}[\w\-/]+)", re.IGNORECASE)


#: Words by which a sentence sets one thing against another: B in such a sentence may be what
#: was replaced, not what was used.
_ALTERNATIVE_CUES = frozenset(["instead", "rather", "replace", "replaced", "replaces", "replacing",
                               "not", "no", "without", "unlike", "than", "substitute", "substituted",
                               "removed", "remove", "versus", "vs"])


#: A verb saying what was used, just before B in the passage's sentence.
_USED_BEFORE = re.compile(r"\b(?:use[sd]?|using|employ(?:s|ed)?|adopt(?:s|ed)?|consists?\s+of|is|are|was|were|"
                          r"propose[sd]?|chose|choose[s]?|rel(?:y|ies|ied)\s+on|based\s+on)\b[^.;:]{0,40}$",
                          re.IGNORECASE)


def _before_phrase(sent: str, b: str) -> str:
    """The text of ``sent`` before the first word of ``b`` that it holds."""
    first = next((w for w in re.findall(r"[\w\-]+", b) if w.lower() not in STOP), "")
    m = re.search(r"\b" + re.escape(first) + r"\b", sent, re.IGNORECASE) if first else None
    return sent[:m.start()] if m else ""


def _content(text: str) -> set[str]:
    return {stem(w) for w, _s, _e in cue_tokens(text) if w not in STOP and len(w) > 2 and not w.isdigit()}


def alternative_swapped(claim: str, sent: str, elsewhere: set[str],
                        min_share: float) -> tuple[str, str] | None:
    """``(what the claim asserts, what it denies)`` when the claim says "A instead of B" (or
    "A rather than B", "A, not B") and ``sent`` states B, saying ``min_share`` of the rest of the
    claim, while A is nowhere in the evidence (``elsewhere``: the stems of every candidate
    passage): the paper did what the claim says it did not.  Only the words that tell A from B
    count (those of A that B lacks): one of them must be absent from every passage, and the
    sentence must not itself set B against something (a replacement, a negation, a "than")."""
    m = _INSTEAD.search(normalize(claim))
    if not m:
        return None
    a, b = _content(m.group("a")), _content(m.group("b"))
    only_a = a - b
    have = stem_set(sent)
    if len(b) < 2 and not entities_in(m.group("b")):
        return None  # "instead of over all words": too little to say what B is
    if not b or not only_a or not b <= have:
        return None
    if not _USED_BEFORE.search(_before_phrase(sent, m.group("b"))):
        return None  # the sentence does not say B was used ("... the cost over all words")
    rest = stem_set(claim) - only_a
    if len(rest & have) < min_share * len(rest):
        return None
    if not only_a - elsewhere:
        return None  # the evidence names all of A too: nothing to hold against the claim
    if {w for w, _s, _e in cue_tokens(sent)} & _ALTERNATIVE_CUES:
        return None  # the sentence itself sets B against something ("we replace B by ...")
    said = m.group("a").split()
    while said and said[0].lower() in STOP:
        said = said[1:]  # "used a convolutional encoder" -> "convolutional encoder"
    return " ".join(said), m.group("b").strip()


#: Two settings of one kind that a claim can confuse: the paper states the claim for the other.
#: (Not "training" / "test": "trained" is a verb of almost every claim about a model.)
SETTING_PAIRS = (("base", "big"), ("base", "large"), ("small", "large"), ("encoder", "decoder"),
                 ("source", "target"), ("input", "output"),
                 ("generator", "discriminator"), ("teacher", "student"), ("forward", "backward"),
                 ("minimum", "maximum"), ("unsupervised", "supervised"), ("pre-training", "fine-tuning"))
_SETTING_OF = {}
for _x, _y in SETTING_PAIRS:
    _SETTING_OF.setdefault(stem(_x), set()).add(stem(_y))
    _SETTING_OF.setdefault(stem(_y), set()).add(stem(_x))


def setting_swapped(claim: str, sents: list[str]) -> tuple[str, str, int] | None:
    """``(claim's setting, passage's setting, sentence index)`` when the claim names one of two
    settings (base / big, encoder / decoder ...) and a sentence of ``sents`` says the rest of
    what the claim says (two thirds of its other content words, and every number of it) for the
    other one, while no such sentence says it for the claim's: the wrong one of two settings."""
    cterms = _content(claim)
    named = [t for t in cterms if t in _SETTING_OF]
    if len(named) != 1:
        return None  # none, or several: the claim's own setting is not one word
    mine = named[0]
    rest = cterms - {mine} - _SETTING_OF[mine]
    if len(rest) < 2:
        return None
    cnums = [n for n in numbers_in(claim) if not n.word]
    found = None
    for k, sent in enumerate(sents):
        have = _content(sent)
        if 3 * len(rest & have) < 2 * len(rest):
            continue
        if cnums:
            snums = numbers_in(sent, evidence=True)
            if not all(any(number_matches(n, en) for en in snums) for n in cnums):
                continue
        if mine in have:
            return None  # a sentence states it for the claim's own setting
        other = (_SETTING_OF[mine] & have) - cterms
        if other and found is None:
            found = (mine, sorted(other)[0], k)
    return found
