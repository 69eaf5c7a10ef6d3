"""What the offline answerer reads in a question and a sentence, by form alone: the question's
expected answer type (quantity, definition, reason, mechanism) and cues (limitation,
comparison); whether a sentence is a whole, self-standing answer sentence (not a fragment, a
caption, a forward reference, a pointer at a float, a question or formula debris); the
shortened form of an over-long one; and the wiki text's own sentences.

Why a module of its own: these are rules (English question words, sentence forms), shared by
the candidate search, the ranking and the benchmark's diagnosis; none of them is tuned by a fit.
"""

from __future__ import annotations

import functools
import re

from ..wiki.links import display_text

MIN_WORDS = 6  # shorter "sentences" are fragments ("Proposition 1.", "Results.")
MAX_WORDS = 70

# --- the expected answer type, from the question's form (English question words only) ------
_QUANTITY_Q = re.compile(
    r"\b(how\s+(many|much|big|large|small|long|fast|often|close|far|well|accurate|high|low)"
    r"|what\s+([\w-]+\s+){0,3}(score|scores|accuracy|error|errors|rate|percentage|number|size|"
    r"bleu|f1|precision|recall|perplexity|speed|speedup|cost|numbers|log-likelihood|likelihood)"
    r"|which\s+([\w-]+\s+){0,2}(score|accuracy|error))\b", re.I)
_DEFINITION_Q = re.compile(r"^\s*(what\s+(is|are|was|were)\s+(an?\s+|the\s+)?|define\s|"
                           r"what\s+does\s+.+\s+mean)", re.I)
_REASON_Q = re.compile(r"^\s*(why|what\s+(causes|motivat\w*|is\s+the\s+reason))\b", re.I)
_MECHANISM_Q = re.compile(r"^\s*how\s+(does|do|did|is|are|was|were)\b", re.I)
# a question about a weakness wants a sentence that states one; a comparison, one that compares
LIMITATION_Q = re.compile(r"\b(drawbacks?|downsides?|disadvantages?|limitations?|weakness(es)?|"
                           r"risks?|problems?|shortcomings?|slow|expensive|unstable|instability|"
                           r"stability|bottlenecks?|fail\w*)\b", re.I)
COMPARISON_Q = re.compile(r"\b(compare[sd]?|comparison|differences?|differ|versus|vs\.?|"
                           r"better|worse|beat|outperform\w*)\b", re.I)

# --- what a sentence offers ---------------------------------------------------------------
# a number that is a quantity: not a reference ("Table 3", "Section 4.1", "[12]", "Eq. 2")
_REF_NUMBER = re.compile(
    r"\b(table|tab\.|figure|fig\.|section|sec\.|§|eq\.|equation|algorithm|appendix|"
    r"theorem|proposition|lemma|corollary|definition|step|line)\s*[A-Z]?\d+(\.\d+)*", re.I)
_QUANTITY = re.compile(r"(\d+(?:[.,]\d+)*\s*(%|x\b|×|k\b|m\b|b\b|bn\b|million|billion|thousand|"
                       r"hours?|days?|gpus?|tpu|points?|bleu)|\d+\.\d+|\b\d{2,}\b|\b\d\b)", re.I)
DEFINES = re.compile(r"\b(is|are|was|were|refers? to|denotes?|means|is defined as|we (call|define|"
                      r"refer to)|is called|are called|consists? of|known as)\b", re.I)
REASON = re.compile(r"\b(because|since|due to|in order to|so that|to (counteract|avoid|prevent|"
                     r"address|overcome|alleviate|mitigate)|as a result|leads? to|caus\w+|thus|"
                     r"therefore|hence|which (makes|allows|means)|this (is|means))\b", re.I)
LIMITS = re.compile(r"\b(however|but|although|expensive|costly|impractical|slow(er|ly)?|drawbacks?|"
                     r"disadvantages?|limitations?|cannot|unable|fail\w*|worse|poor(ly)?|hurts?|"
                     r"degrad\w+|unstable|instabilit\w+|overfit\w*|difficult\w*|problem\w*|"
                     r"suffer\w*|at the cost of|risks?|bias(es|ed)?|lacks?|sparse|high variance)\b",
                     re.I)
COMPARES = re.compile(r"\b(than|outperform\w*|compared (to|with)|whereas|unlike|in contrast|"
                       r"better|worse|superior|inferior|opposite|similar to|as (high|good|well) as)\b",
                       re.I)
# figure or table debris read into a sentence: a run of bare numbers or one-letter tokens
_DEBRIS = re.compile(r"(?:(?<!\S)\(?(?:\d{1,3}|[A-Za-z])\)?(?!\S)\s+){4,}"
                     r"|\b(figure|fig\.|table)\s*\d+\s*:|^(left|right|top|bottom|middle)\s*:", re.I)
_FORWARD = re.compile(
    r"\b(we|i)\s+(will|shall)\s+(now\s+)?(show|see|present|discuss|describe|introduce|prove|"
    r"demonstrate|explain|return|give|define|analy[sz]e|study|investigate|consider)\b"
    r"|\b(is|are|will be)\s+(described|discussed|presented|shown|given|explained|detailed|analy[sz]ed)"
    r"\s+(in|later|below|further)\b"
    r"|\b(see|in)\s+(section|sec\.|appendix|§)\s*\d+[^.]*\b(below|later)\b"
    r"|\b(later in|in the (next|following|remainder|rest) (of )?(this )?(section|paper|chapter))\b"
    r"|\b(the rest of|the remainder of) (this|the) paper\b"
    r"|^(in|the) (the )?(next|following) (section|sections|chapter)\b"
    r"|\bsection\s+\d+(\.\d+)*\s+(describes|presents|discusses|introduces|shows|concludes)\b",
    re.I)
_CAPTION = re.compile(r"^(figure|fig\.|table|algorithm)\s*\d+\s*[:.]", re.I)
# a sentence that only says where something is ("Table 2 summarizes the comparison ...",
# "Figure 3 shows the skip-gram model."), or an algorithm's title ("Algorithm 1 Minibatch ..."):
# it points the reader at a float and states nothing itself ("Fig. 7 shows that ..." does, and
# so does one that gives a number: "Table 2 reports a BLEU score of 28.4")
_POINTER = re.compile(
    r"^(?:figure|fig\.|table|tab\.|algorithm|appendix|section|sec\.)\s*[A-Z]?\d+(?:\.\d+)*\s*"
    r"(?:\([a-z]\)\s*)?(?:shows?|summari[sz]es|presents|lists|illustrates|depicts|gives|reports|"
    r"contains|corresponds|compares|displays|plots|provides|describes|outlines|details|"
    r"visuali[sz]es)\b(?!\s+that\b)"
    r"|^algorithm\s*\d+\s+[A-Z]", re.I)
SUMMARY_TITLE = re.compile(r"^(\d+(\.\d+)*\.?\s+)?(abstract|introduction|conclusions?|summary)\b", re.I)
ANAPHOR = re.compile(
    r"^(this|these|that|those|such|it|they|thus|hence|therefore|consequently|as a result|in turn|"
    r"to (counteract|address|avoid|overcome|fix|remedy|mitigate) (this|these|that|it)|"
    r"(this|these|that|such) \w+)\b", re.I)
NAME = re.compile(r"\b(?:[A-Za-z]*[a-z][A-Z][\w-]*|[A-Z]{2,}[\w-]*|[A-Za-z]+-?\d[\w-]*)")
_SENT_END = re.compile(r"[.!?][\"”’)\]]*$")


def expected_type(question: str) -> str:
    """``quantity`` | ``definition`` | ``reason`` | ``mechanism`` | ``other``, from the form of
    the question (its first words), not its topic."""
    if _QUANTITY_Q.search(question):
        return "quantity"
    if _REASON_Q.search(question):
        return "reason"
    if _DEFINITION_Q.search(question):
        return "definition"
    if _MECHANISM_Q.search(question):
        return "mechanism"
    return "other"


def has_quantity(sentence: str) -> bool:
    """Whether ``sentence`` states a number that is a quantity (not "Table 3" or "[12]")."""
    s = _REF_NUMBER.sub(" ", sentence)
    s = re.sub(r"\[[\d,\s–-]+\]", " ", s)  # citation brackets
    s = re.sub(r"\b(19|20)\d\d\b", " ", s)  # years
    return bool(_QUANTITY.search(s))


def clean_sentence(text: str) -> str:
    """Whitespace normalised, a trailing theorem label cut ("... generator G. Proposition 1." →
    "... generator G."): the same text ingest embedded (:mod:`episteme.ingest.sentences`)."""
    from ..ingest.sentences import clean_sentence as clean

    return clean(text)


@functools.lru_cache(maxsize=50_000)
def is_answer_sentence(s: str) -> bool:
    """A whole, self-standing sentence worth quoting: :data:`MIN_WORDS` to :data:`MAX_WORDS`
    words, starts like a sentence and ends like one, mostly words (not a formula or a table
    row), not a caption, a forward reference, a pointer at a float ("Table 2 summarizes the
    comparison ...") or a question: none of those states what it is about (among the candidates
    of the 275 training and test questions, 318 such, not one gold)."""
    ws = s.split()
    if not MIN_WORDS <= len(ws) <= MAX_WORDS:
        return False
    if not (s[0].isupper() or s[0].isdigit() or s[0] in "\"“‘'(") or not _SENT_END.search(s):
        return False
    if _CAPTION.match(s) or _FORWARD.search(s) or (
            _POINTER.match(s) and not has_quantity(s)):
        return False
    if s.rstrip("\"”’)]").endswith("?"):  # a question the paper asks (itself, or the reader)
        return False
    if "|" in s or "[[" in s or "http" in s or "<!--" in s or _DEBRIS.search(s):
        return False
    letters = sum(ch.isalpha() for ch in s)
    if letters / max(1, sum(not ch.isspace() for ch in s)) < 0.7:
        return False
    wordlike = sum(bool(re.fullmatch(r"[A-Za-z][a-z]+[,.;:]?|[a-z]{2,}[,.;:]?", w)) for w in ws)
    return wordlike >= 0.5 * len(ws)


#: a parenthetical aside of at least 4 words ("(in particular, G must not be trained ...)"),
#: no nested parentheses; a formula's "(x)" or a citation's "(Smith, 2019)" is shorter or kept
_ASIDE = re.compile(r"\s*\((?=(?:[^()]*\s){3})[^()]{12,}\)")
ELIDED = "(…)"


@functools.lru_cache(maxsize=20_000)
def shortened_sentence(s: str) -> str | None:
    """A sentence over :data:`MAX_WORDS` made quotable, or None: its parenthetical asides cut
    (each marked :data:`ELIDED`, so the quote stays honest about the cut), else its first
    clause up to a semicolon (ended with a full stop).  Why: a long sentence that states
    the answer ("The disadvantages are primarily that ... (a 40-word aside), much as ...")
    was never a candidate; its main clause usually stands alone.  The result must pass
    :func:`is_answer_sentence` (a run-on of table text does not become quotable by a cut)."""
    if len(s.split()) <= MAX_WORDS:
        return None
    cut = _ASIDE.sub(" " + ELIDED, s)
    cut = re.sub(r"\s+([,.;:])", r"\1", cut)
    if cut != s and is_answer_sentence(cut):
        return cut
    head = s.split("; ", 1)[0].rstrip(",:")
    if head != s and len(head.split()) >= 2 * MIN_WORDS:
        head += "."
        if is_answer_sentence(head):
            return head
    return None


def bare_title(title: str) -> str:
    """A section title without its number ("4.2 Results", "IV.B Cost", "A.1 Setup" -> the
    words; "A satisfactory model" keeps its article)."""
    bare = re.sub(r"^\s*(?:\d+(?:\.\d+)*\.?|[IVX]+(?:\.[A-Z\d]+)*\.?|[A-Z](?:\.[A-Z\d]+)+\.?"
                  r"|[A-Z]\.)\s+", "", title or "")
    return bare.strip() or title


def norm_key(text: str) -> str:
    """A sentence's comparison key: lower-case words only (duplicates and trace claims match
    on it)."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


_SPAN_CACHE: dict[str, list[tuple[int, int]]] = {}


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of a paper section's text (cached: the same sections
    are split again by every question)."""
    hit = _SPAN_CACHE.get(text)
    if hit is None:
        from ..pdf.passages import split_sentences

        hit = split_sentences(text)
        if len(_SPAN_CACHE) > 2000:
            _SPAN_CACHE.clear()
        _SPAN_CACHE[text] = hit
    return hit


def wiki_sentences(text: str) -> list[str]:
    """The whole sentences of a wiki section's markdown (links as their label, list marks and
    headings dropped, a line ending in ":" skipped): the wiki's own answer candidates."""
    from ..pdf.passages import split_sentences

    clean = display_text(text or "")  # [[link|label]] -> label
    # Each list item, heading and paragraph is its own block, so a list of topic names never
    # runs together into one pseudo-sentence.
    blocks = re.split(r"\n\s*\n|\n(?=\s*(?:[-*>]|#+|\d+\.)\s)", clean)
    out = []
    for block in blocks:
        block = re.sub(r"^\s*(?:[-*>]|#+|\d+\.)\s+", "", block, flags=re.M)  # list/quote/heading marks
        # a line ending in ":" introduces what follows ("From <paper>, §3.2 (p. 4):"), it is no claim
        block = re.sub(r"^[^\n]*:[ \t]*$", "", block, flags=re.M)
        for a, b in split_sentences(block):
            s = " ".join(block[a:b].split()).strip(" \"“”")
            n = len(s.split())
            # a claim is a whole sentence: it ends like one (titles and link lists do not)
            if 6 <= n <= 80 and not s.startswith("|") and re.search(r"[.!?][\"”’)\]]*$", s):
                out.append(s)
    return out
