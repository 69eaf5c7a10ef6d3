"""A page's tags from its own text: the paper's topic words (:func:`keyphrases`) and a topic
section's distinctive key terms that name something (:func:`topic_tags`).
"""

from __future__ import annotations

import re
from collections import Counter

from ..fsutil import slugify
from ..query.text import TAG_STOP
from .decisions import clean_tags

TOPIC_TAGS = 3  # tags per topic page: its key terms and the paper's topic words it shares
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z-]*[A-Za-z]")


def keyphrases(text: str, n: int = 3) -> list[str]:
    """Up to ``n`` tags: frequent two-word phrases (twice or more; never across a stop word or
    a sentence or clause boundary) and content words (three times or more), as lowercase
    hyphenated slugs; a word already inside a chosen phrase is not repeated.  Ties break alphabetically, so the result is deterministic."""
    uni: Counter[str] = Counter()
    bi: Counter[str] = Counter()
    prev: str | None = None
    for m in re.finditer(r"[A-Za-z][A-Za-z-]*[A-Za-z]|[.;:!?()]", text):
        w = m.group(0).lower()
        if w in TAG_STOP or len(w) < 3:  # a stop word, or punctuation: a phrase ends here
            prev = None
            continue
        uni[w] += 1
        if prev is not None:
            bi[f"{prev} {w}"] += 1
        prev = w
    scored = [(c * 2.0, p) for p, c in bi.items() if c >= 2] + [(float(c), p) for p, c in uni.items() if c >= 3]
    scored.sort(key=lambda x: (-x[0], x[1]))
    chosen: list[str] = []
    for _score, phrase in scored:
        if any(phrase in c.split(" ") or phrase == c for c in chosen):
            continue
        if " " in phrase and any(c in phrase.split(" ") for c in chosen):
            continue
        chosen.append(phrase)
        if len(chosen) >= n:
            break
    return [slugify(p, max_len=40) for p in chosen]


def _noun_phrase(words: list[str]) -> bool:
    """Whether a two-word term reads as a noun phrase rather than words across a verb: no
    participle or adverb (-ed, -ly) and no third-person verb or plural in front ("allows
    users", "participants recalled", "actively engaged" are no names)."""
    if any(w.endswith(("ed", "ly")) for w in words):
        return False
    first = words[0]
    return not (first.endswith("s") and not first.endswith(("ss", "us", "is")))


def topic_tags(title: str, key_terms: list[str], sentences: list[str], paper_topics: list[str],
               text: str, n: int = TOPIC_TAGS) -> list[str]:
    """A topic page's tags, from what it holds: one of the paper's topic words
    (:func:`keyphrases` of the whole paper) that the section repeats, so a paper's pages share
    a tag; then the section's distinctive key terms (TF-IDF within the paper, best first;
    :class:`keyterms.TermSpace`) that name something: a two-word term its heading or at least
    two of its quotable sentences use, or a single word of its heading -- so formula debris and
    one-off words are no tags.  A page with none of these is tagged with its short heading.  At
    most ``n``, through :func:`decisions.clean_tags`.  Why these: they depend only on the paper's
    own text, so a re-ingest gives the same tags, whatever else the wiki holds."""
    def norm(x: str) -> str:
        return " " + " ".join(re.findall(r"[a-z0-9]+", x.lower())) + " "

    head, low = norm(title), norm(text)
    prose = [norm(x) for x in sentences]
    out: list[str] = []
    used: set[str] = set()  # word stems of the key terms chosen (one term per word)

    def stems(term: str) -> set[str]:
        return {p.rstrip("s") for w in term.split() for p in w.split("-") if p}

    for topic in paper_topics:
        if low.count(norm(topic.replace("-", " "))) >= 2:
            out.append(topic)
            break
    for term in key_terms:
        words = term.split()
        if any(w in TAG_STOP or len(w) < 3 or w.isdigit() for w in words):
            continue
        t = norm(term)
        named = t in head or (len(words) > 1 and _noun_phrase(words) and sum(t in x for x in prose) >= 2)
        if named and not stems(term) & used and slugify(term, max_len=40) not in out:
            out.append(term)
            used |= stems(term)
        if len(out) >= n:
            break
    if not out and len(_WORD_RE.findall(title)) <= 3:
        out.append(title)
    return clean_tags(out)[:n]
