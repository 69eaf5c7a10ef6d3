"""The offline writer: a deterministic wiki skeleton built only from the paper's own sentences.

No model writes anything here, so nothing can be invented: every sentence on a page is quoted
from the paper (whitespace normalised), with the section and pages it came from.  What the
writer decides is *which* sentences and *where* they go:

* **Key sentences** — a section's candidate sentences (clean, self-contained prose; no captions,
  formulas or table rows) are embedded and ranked by centrality: cosine similarity to the mean
  of the section's sentence vectors, i.e. the sentences most representative of the section.
* **Roles** — beside them, each written section quotes the definitions of its key terms, its
  results and key numbers, and its explanations (a reason or a mechanism) (:func:`choose_sentences`,
  :mod:`episteme.compile.roles`: found from the sentences' form, within a word budget), and its
  tables' key rows under their captions (:mod:`episteme.compile.objects`).
* **The paper's own experiments** — a section about the paper's results, experimental setup
  or data (by its heading, its parent heading or its content) becomes a page under the
  paper's page, ``papers/<paper>-<section>.md`` (``type: result | setup | dataset``,
  ``paper: papers/<paper>.md``), listed in the paper page's "Experiments and results"; such
  pages take no merges from other papers.
* **Pages** — one summary page per paper (``papers/<slug>.md``, ``type: paper``: the abstract's
  key sentences, the paper's most central sentences, its generic sections such as Introduction
  and Conclusion, and a list of its topics); every other section becomes a topic page
  ``<slug-of-the-section-title>.md`` (``multi-head-attention.md``).
* **Merging** — before creating a topic, the related wiki sections are retrieved
  (:class:`episteme.compile.writer.RelatedFinder`) and compared exactly with the section's key text; a
  topic page with the same slug, or a topic section at least :data:`MERGE_SIMILARITY` similar
  whose title is at least :data:`MERGE_TITLE_SIMILARITY` similar to the section's, is updated
  instead: the paper joins its sources and a "From <paper>" paragraph is appended.  (The title
  test: two papers' architecture or background sections read alike to the embedding whatever
  they describe, so the key texts alone merged "Network Architectures" and "Vision Transformer"
  into "Position-wise Feed-Forward Networks"; the same topic keeps a like title, "Multi-Head
  Attention" / "Multihead self-attention" 0.87.  A topic not merged gets its own page and a
  Related link, which a later edit can still merge; a wrong merge mixes two topics in one page.)
* **Links** — topic sections link to their paper page and to the most similar other topics
  (of this paper and already in the wiki); the paper page links to every topic it touched, so
  the graph tools see papers connected through shared topics.
* **Types** — a topic page's ``type`` from what it holds (:func:`roles.topic_type`): a
  ``method``, a ``concept``, a ``dataset``, an ``entity``, a ``comparison`` or a ``note``, by
  its heading's form, its parent headings, its own definition of its heading term and how many
  of its sentences describe a procedure; a type the wiki's ``SCHEMA.md`` does not list falls
  back to an older one.
* **Tags** — a few per page, from its content (:func:`topic_tags`): one of the paper's topic
  words the section repeats (so a paper's pages share a tag) and the section's distinctive key
  terms that name something; through the one tag normaliser (:func:`writer.clean_tags`).

Deterministic: the same wiki and paper give the same decisions, byte for byte (dates come from
the injected ``today``).  The result is an honest skeleton an LLM (or a person) can refine.

Why one module: choosing sentences, naming pages, merging and linking are the steps of one plan
(:func:`plan_extractive`) that share its deterministic order; the decision types and their
checks, shared with the Claude writer, are in :mod:`episteme.compile.writer`.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..fsutil import slugify
from .writer import (
    PAPERS_FOLDER,
    Decision,
    PaperInfo,
    PaperSection,
    RelatedFinder,
    WritePlan,
    clean_tags,
    load_page,
    load_paper,
    page_type_of,
)

EXTRA_DEFINITIONS = 2  # definitions of the section's key terms, beyond the central sentences
EXTRA_NUMBERS = 3  # results and key numbers, beyond the central sentences
EXTRA_EXPLANATIONS = 2  # reasons and mechanisms ("this is because ..."), beyond the central sentences
EXTRA_BUDGET = 110  # words of definitions and numbers per written section (a readable length)
EXPLAIN_BUDGET = 45  # words of explanations per written section, beside EXTRA_BUDGET
TOPIC_TAGS = 3  # tags per topic page: its key terms and the paper's topic words it shares
TABLE_ROWS = 3  # key rows quoted per table
FILL_SENTENCES = 2  # central sentences beyond TOPIC_SENTENCES when the budget has room
MERGE_SIMILARITY = 0.6  # cosine (MiniLM) of key texts above which a topic joins an existing one
#: and the cosine its title must have with that section's title (titles of the same topic in
#: different papers: 0.63-0.88; of the merges this stopped, all wrong: 0.03-0.45)
MERGE_TITLE_SIMILARITY = 0.5
RELATED_SIMILARITY = 0.5  # cosine above which two topics link to each other
TOPIC_SENTENCES = 3
GENERIC_SENTENCES = 2
SUMMARY_SENTENCES = 3
KEY_POINTS = 5
MAX_RELATED_LINKS = 3
CANDIDATES = 6  # related wiki sections retrieved per topic

#: Section titles that describe the paper rather than a topic: they go on the paper's page.
GENERIC_TITLES = frozenset({
    "abstract", "introduction", "background", "related work", "prior work", "previous work",
    "conclusion", "conclusions", "discussion", "results", "experiments", "experiment",
    "experimental setup", "experimental results", "evaluation", "training", "method", "methods",
    "methodology", "approach", "overview", "summary", "analysis", "setup", "preliminaries",
    "future work", "limitations", "acknowledgements", "acknowledgments", "appendix",
    "supplementary material", "conclusion and future work", "conclusions and future work",
    "discussion and conclusion", "results and discussion", "motivation", "model", "our approach",
    "proposed method", "implementation details", "implementation", "ablation studies",
    "ablation study", "ablations", "additional ablation studies", "detailed experimental setup",
})

_STOP_WORDS = """a about above after again against all also although among an and any are as at be because
    been before being below between both but by can could did do does doing down during each either
    et al etc few for from further had has have having he her here hers him his how however i if in
    into is it its itself just let may me might more most much must my no nor not now of off on
    once only or other our ours out over own per same she should since so some such than that the
    their theirs them then there these they this those through thus to too under until up upon us
    use used uses using very via was we were what when where whether which while who whom why will
    with within without would yet you your one two three four five first second third new show
    shows shown given based well many several like different another often large small high low
    fig figure table section paper work approach method results result also make makes made
    model models task tasks set sets number following example see use show obtain obtained able
    respectively compared across due since even still case cases way ways rather less much
    propose proposed present presented describe described report reported"""
_STOP = frozenset(_STOP_WORDS.split())
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z-]*[A-Za-z]")
_SENT_BAD = re.compile(r"\[\[|\]\]|<!--|-->|`|\*|\||~~~|https?:|www\.|@|\\")
_CAPTION_RE = re.compile(r"(^|\s)(Figure|Fig\.|Table|Algorithm)\s*\d+\s*[:.]", re.IGNORECASE)
LEAD_BONUS = 0.06  # the first sentences of a section tend to state its point
LENGTH_BONUS = 0.03  # for sentences of 15-45 words: informative but still quotable
META_PENALTY = 0.1  # sentences about the paper's own structure say little about the topic
_META_RE = re.compile(
    r"^(We now|Now we|In this (section|paper|work)|This (section|paper)|The rest of|As (shown|described|discussed)"
    r"|Next,|Finally,|Here,? we|Below|Above|See |We (first|then) (describe|present|introduce))\b",
)


# ----------------------------------------------------------------------------- sentences


def candidate_sentences(text: str) -> list[str]:
    """The quotable sentences of a section, in order, whitespace normalised.

    Kept: 8-70 words, 50-420 characters, mostly letters, starting with a capital (or a quote)
    and ending with sentence punctuation.  Dropped: captions, formulas and table debris, URLs,
    e-mail addresses and anything that could be read as wiki markup.
    """
    from ..pdf.passages import split_sentences

    out: list[str] = []
    for start, end in split_sentences(text):
        s = " ".join(text[start:end].split())
        if not 50 <= len(s) <= 420:
            continue
        words = s.split()
        if not 8 <= len(words) <= 70:
            continue
        if not (s[0].isupper() or s[0] in "\"“‘'") or s[-1] not in ".!?\"”’'":
            continue
        if _SENT_BAD.search(s) or _CAPTION_RE.search(s):
            continue
        letters = sum(ch.isalpha() for ch in s)
        if letters / max(1, sum(not ch.isspace() for ch in s)) < 0.8:
            continue
        if sum(len(w) == 1 and w.isalpha() for w in words) > len(words) // 4:  # math symbols
            continue
        out.append(s)
    return out


@dataclass
class SectionKeys:
    """A section's ranked sentences: ``sentences`` in document order with their centrality."""

    section: PaperSection
    sentences: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    vectors: Any = None  # np.ndarray (n, dim)

    def top(self, n: int) -> list[str]:
        """The ``n`` most central sentences, back in document order (ties: earlier first)."""
        order = sorted(range(len(self.sentences)), key=lambda i: (-round(self.scores[i], 6), i))[:n]
        return [self.sentences[i] for i in sorted(order)]


def rank_sentences(sections: list[PaperSection], embedder) -> dict[str, SectionKeys]:
    """Candidate sentences of every section scored for a summary (one embedding batch): cosine
    to the section's mean sentence vector (centrality), plus small bonuses for leading position
    and a comfortable length, minus a penalty for sentences about the paper's own structure
    ("In this section we ...")."""
    import numpy as np

    keys = {s.id: SectionKeys(s, candidate_sentences(s.text)) for s in sections}
    flat = [(sid, i) for sid, k in keys.items() for i in range(len(k.sentences))]
    if not flat:
        return keys
    vecs = embedder.encode([keys[sid].sentences[i] for sid, i in flat], batch_size=32)
    pos = 0
    for k in keys.values():
        n = len(k.sentences)
        if n:
            v = np.asarray(vecs[pos : pos + n], dtype=np.float64)
            centroid = v.mean(axis=0)
            norm = float(np.linalg.norm(centroid)) or 1.0
            central = v @ (centroid / norm)
            k.scores = [
                float(central[i]) + LEAD_BONUS * (1.0 - i / n)
                + (LENGTH_BONUS if 15 <= len(sent.split()) <= 45 else 0.0)
                - (META_PENALTY if _META_RE.match(sent) else 0.0)
                for i, sent in enumerate(k.sentences)
            ]
            k.vectors = v
        pos += n
    return keys


@dataclass
class Chosen:
    """The sentences a written section quotes, by role, each list in document order."""

    central: list[str]
    definitions: list[str] = field(default_factory=list)
    numbers: list[str] = field(default_factory=list)
    explanations: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return self.central + self.definitions + self.numbers + self.explanations

    def facts(self) -> list[str]:
        """The sentences beside the central ones: definitions, numbers, explanations."""
        return self.definitions + self.numbers + self.explanations


def choose_sentences(keys: SectionKeys, key_words: set[str], result_numbers: set[str], *,
                     central: int = TOPIC_SENTENCES, definitions: int = EXTRA_DEFINITIONS,
                     numbers: int = EXTRA_NUMBERS, explanations: int = EXTRA_EXPLANATIONS,
                     budget: int = EXTRA_BUDGET, explain_budget: int = EXPLAIN_BUDGET) -> Chosen:
    """A section's sentences by role (:mod:`episteme.compile.roles`): its most central ones,
    the definitions of its key terms, its results and key numbers (sentences reporting an
    outcome or a quantity; result numbers are those printed in the paper's tables or abstract),
    and its explanations (a reason or a mechanism: "this is because ...", "which allows ...").
    The central sentences always; definitions and numbers in turns (definition, number,
    definition, ...) while their words stay within ``budget``; among numbers, outcome sentences
    first, then those with more of the paper's result numbers; budget still left goes to the
    next most central sentences (at most :data:`FILL_SENTENCES`); then the most central
    explanations not quoted yet, within ``explain_budget`` words of their own.  Why turns: a
    short budget must still hold a definition, and a section of many numbers must not quote
    only numbers.  Why a budget of their own: the sentences chosen without explanations stay
    exactly as they were, so the topic matches and merges the same wiki sections (and every
    section id after it stays the same) whether or not explanations are quoted."""
    from .roles import is_definition, is_explanation, is_result, number_key, quantities

    n = len(keys.sentences)
    by_score = sorted(range(n), key=lambda i: (-round(keys.scores[i], 6), i))
    cent = by_score[:central]
    rest = [i for i in by_score if i not in cent]
    defs = [i for i in rest if is_definition(keys.sentences[i], key_words)][:definitions]

    def num_rank(i: int) -> tuple:
        q = {number_key(x) for x in quantities(keys.sentences[i])}
        return (not is_result(keys.sentences[i]), -min(2, len(q & result_numbers)), by_score.index(i))

    nums = sorted((i for i in rest if i not in defs and (quantities(keys.sentences[i])
                                                        or is_result(keys.sentences[i]))),
                  key=num_rank)[:numbers]
    turns: list[tuple[str, int]] = []
    for j in range(max(len(defs), len(nums))):
        turns += [(role, lst[j]) for role, lst in (("d", defs), ("n", nums)) if j < len(lst)]
    picked: dict[str, list[int]] = {"c": list(cent), "d": [], "n": [], "e": []}
    words = 0
    for role, i in turns:
        w = len(keys.sentences[i].split())
        if words + w > budget:
            continue
        picked[role].append(i)
        words += w
    # budget left: the next most central sentences (up to FILL_SENTENCES), with the central ones
    for i in rest:
        if len(picked["c"]) >= len(cent) + FILL_SENTENCES:
            break
        if i in picked["d"] or i in picked["n"] or i in picked["e"]:
            continue
        w = len(keys.sentences[i].split())
        if words + w <= budget:
            picked["c"].append(i)
            words += w
    taken = {i for lst in picked.values() for i in lst}
    room = explain_budget
    for i in rest:
        if len(picked["e"]) >= explanations:
            break
        w = len(keys.sentences[i].split())
        if i not in taken and w <= room and is_explanation(keys.sentences[i]):
            picked["e"].append(i)
            room -= w
    return Chosen(*[[keys.sentences[i] for i in sorted(picked[r])] for r in ("c", "d", "n", "e")])


def key_facts(keys: SectionKeys, chosen: list[str], key_words: set[str] | None = None,
              result_numbers: set[str] | None = None) -> list[str]:
    """The definitions, key numbers and explanations :func:`choose_sentences` adds beyond
    ``chosen`` (the central sentences), in document order."""
    c = choose_sentences(keys, key_words or set(), result_numbers or set())
    return [x for x in keys.sentences if x in c.facts() and x not in chosen]


def page_type_for(title: str, sentences: list[str] | None = None, parents: list[str] | None = None,
                  text: str = "") -> str:
    """A topic page's ``type`` from its heading, sentences, parent headings and text
    (:func:`roles.topic_type`)."""
    from .roles import topic_type

    return topic_type(title, sentences or [], parents or [], text)


_ROLE_LABEL = {"result": "results", "setup": "experimental setup", "dataset": "data"}
#: a wiki whose SCHEMA.md predates these page types gets the nearest older type instead
_FALLBACK_TYPE = {"result": "note", "setup": "note", "dataset": "entity"}


def allowed_type(ptype: str, allowed: set[str]) -> str:
    """``ptype`` when the wiki's schema allows it, else its older stand-in, else ``concept``."""
    if ptype in allowed:
        return ptype
    fallback = _FALLBACK_TYPE.get(ptype, "concept")
    return fallback if fallback in allowed else "concept"


def allowed_types(wiki) -> set[str]:
    """The page types the wiki's ``SCHEMA.md`` allows (every known type when it lists none)."""
    from ..wiki.schema import PAGE_TYPES, load_schema

    values = (load_schema(wiki).fields.get("type") or {}).get("values")
    return {str(v) for v in values} if isinstance(values, list) and values else set(PAGE_TYPES)


def field_defined(wiki, name: str) -> bool:
    """Whether a frontmatter field may be written without a lint warning: the wiki's schema
    defines it, or defines no fields at all."""
    from ..wiki.schema import load_schema

    fields = load_schema(wiki).fields
    return not fields or name in fields


def _facts_paragraph(c: Chosen) -> str:
    out = ""
    if c.definitions:
        out += f"\n\nDefinitions:\n\n{_quotes(c.definitions)}"
    if c.numbers:
        out += f"\n\nResults and key numbers:\n\n{_quotes(c.numbers)}"
    if c.explanations:
        out += f"\n\nExplanations:\n\n{_quotes(c.explanations)}"
    return out


def _without_explanations(body: str) -> str:
    """A section body without its "Explanations:" quotes: what a topic is compared with is the
    text the writer chose before it quoted explanations (so merges do not change with them)."""
    out, inside = [], False
    for line in body.split("\n"):
        if line == "Explanations:":
            inside = True
            continue
        if inside and (line.startswith("> ") or not line.strip()):
            continue
        inside = False
        out.append(line)
    return "\n".join(out)


def _rows_for(prose_numbers: set[str], names: set[str]):
    """The key-row chooser :func:`objects.objects_paragraph` calls per table."""
    from .roles import key_rows

    return lambda text: key_rows(text, prose_numbers, names, TABLE_ROWS)


# ----------------------------------------------------------------------------- keyphrases


def keyphrases(text: str, n: int = 3) -> list[str]:
    """Up to ``n`` tags: frequent two-word phrases (twice or more; never across a stop word or
    a sentence or clause boundary) and content words (three times or more), as lowercase
    hyphenated slugs; a word already inside a chosen phrase is not repeated.  Ties break alphabetically, so the result is deterministic."""
    uni: Counter[str] = Counter()
    bi: Counter[str] = Counter()
    prev: str | None = None
    for m in re.finditer(r"[A-Za-z][A-Za-z-]*[A-Za-z]|[.;:!?()]", text):
        w = m.group(0).lower()
        if w in _STOP or len(w) < 3:  # a stop word, or punctuation: a phrase ends here
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
    most ``n``, through :func:`writer.clean_tags`.  Why these: they depend only on the paper's
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
        if any(w in _STOP or len(w) < 3 or w.isdigit() for w in words):
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


# ----------------------------------------------------------------------------- naming


def clean_title(title: str) -> str:
    t = " ".join(title.replace("“", '"').replace("”", '"').split()).strip(" .:;#")
    return t[:120].rstrip() or "Untitled"


#: Generic titles that frame the paper (why, what came before, what it concludes): they stay on
#: the paper's page whatever their content; the other generic titles (results, experiments,
#: setup, ...) are the paper's own experiments and get pages under the paper's page.
FRAMING_TITLES = frozenset({
    "abstract", "introduction", "background", "related work", "prior work", "previous work",
    "conclusion", "conclusions", "discussion", "future work", "limitations", "acknowledgements",
    "acknowledgments", "appendix", "supplementary material", "conclusion and future work",
    "conclusions and future work", "discussion and conclusion", "motivation", "preliminaries",
    "overview", "summary", "method", "methods", "methodology", "approach", "model", "our approach",
    "proposed method", "training",
})


def _title_key(title: str) -> str:
    return " ".join(re.sub(r"[^a-z ]+", " ", title.lower()).split())


def is_framing(section: PaperSection) -> bool:
    """The abstract and the sections that frame the paper (:data:`FRAMING_TITLES`)."""
    return section.kind == "abstract" or _title_key(section.title) in FRAMING_TITLES


def is_generic(section: PaperSection) -> bool:
    if section.kind in ("abstract",):
        return True
    t = re.sub(r"[^a-z ]+", " ", section.title.lower())
    return " ".join(t.split()) in GENERIC_TITLES


def short_title(title: str) -> str:
    """``BERT: Pre-training of ...`` → ``BERT``; long titles → their first six words."""
    head = title.split(":", 1)[0].strip()
    if 0 < len(head.split()) <= 5 and head != title:
        return head
    words = title.split()
    return " ".join(words[:6]) if len(words) > 6 else title


def paper_page_for(wiki, info: PaperInfo) -> str:
    """``papers/<slug>.md`` for the paper; a slug taken by another paper's page falls back to
    the stored file name."""
    for stem in (slugify(short_title(info.title), max_len=60), slugify(info.id.rsplit(".", 1)[0], max_len=60)):
        rel = f"{PAPERS_FOLDER}/{stem}.md"
        path = wiki / rel
        if not path.exists():
            return rel
        try:
            _, _, fm = load_page(wiki, rel)
        except Exception:  # noqa: BLE001 - an unreadable page is not ours to reuse
            continue
        if info.id in [str(s) for s in (fm.get("sources") or [])]:
            return rel
    return f"{PAPERS_FOLDER}/{slugify(info.id, max_len=70)}.md"


def _alias(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").replace("|", "/").split())


def wikilink(page: str, label: str) -> str:
    """``[[papers/bert|BERT]]``: the page path without ``.md`` (unambiguous for the graph's
    resolver), and a readable label."""
    target = page[:-3] if page.endswith(".md") else page
    return f"[[{target}|{_alias(label)}]]"


def _one_line(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def _quotes(sentences: list[str]) -> str:
    return "\n\n".join(f"> {s}" for s in sentences)


# ----------------------------------------------------------------------------- planning


@dataclass
class _Topic:
    section: PaperSection
    title: str
    slug: str
    sentences: list[str]
    tags: list[str]
    vector: Any
    facts: list[str] = field(default_factory=list)  # definitions and key numbers (choose_sentences)
    role: str = ""  # "result" | "setup" | "dataset" for a page under the paper's page
    match: str = ""  # the text it is matched to related wiki sections by
    target: dict | None = None  # the existing section it merges into
    page: str = ""
    related: list[tuple[str, str]] = field(default_factory=list)  # (page, label)
    closest: tuple[float, str] | None = None  # best (similarity, section id) among candidates


def _embed_norm(embedder, texts: list[str]):
    import numpy as np

    if not texts:
        return np.zeros((0, 1))
    return np.asarray(embedder.encode(texts, batch_size=16), dtype=np.float64)


def plan_extractive(
    settings,
    paper_id: str,
    *,
    embedder=None,
    today: _dt.date | None = None,
    finder: RelatedFinder | None = None,
) -> WritePlan:
    """Decide every write for ``paper_id`` (nothing is written; see :func:`writer.apply_plan`)."""
    from ..stores.embedding import get_embedder
    from ..wiki.edit import find_section

    wiki = settings.wiki
    embedder = embedder or get_embedder(settings)
    info = load_paper(settings, paper_id)
    plan = WritePlan(paper=paper_id, writer="extractive")
    writable, skipped = info.writable()
    plan.skipped.extend(skipped)
    keys = rank_sentences(writable, embedder)
    for s in list(writable):
        if not keys[s.id].sentences:
            plan.skipped.append({"paper_section": s.id, "title": s.title, "reason": "no quotable sentences"})
            writable.remove(s)
    paper_page = paper_page_for(wiki, info)
    paper_label = short_title(info.title) if ":" in info.title else info.title
    paper_link = wikilink(paper_page, paper_label)

    # -- topics and their related wiki sections ------------------------------------------------
    from .keyterms import TermSpace
    from .objects import objects_paragraph, paper_objects, section_objects
    from .roles import key_words_of, number_key, number_keys, own_names, paper_role, quantities

    objects = paper_objects(settings, paper_id)
    space = TermSpace({s.id: s.text for s in writable})
    abstract_text = " ".join(s.text for s in writable if s.kind == "abstract")
    # the paper's result numbers: printed in its tables or stated in its abstract
    result_numbers = {number_key(q) for o in objects if o["kind"] == "table" for q in quantities(o["text"])}
    result_numbers |= {number_key(q) for q in quantities(abstract_text)}
    prose_numbers = {k for s in writable for q in quantities(s.text) for k in number_keys(q)}
    names = own_names(info.title, abstract_text)
    titles_by_number = {s.number: clean_title(s.title) for s in info.sections if s.number}

    def parents_of(s: PaperSection) -> list[str]:
        parts = (s.number or "").split(".")
        return [titles_by_number[".".join(parts[:i])] for i in range(1, len(parts))
                if ".".join(parts[:i]) in titles_by_number]

    paper_topics = keyphrases("\n".join(s.text for s in writable), 5)  # the paper's topic words
    topics: list[_Topic] = []
    children: list[_Topic] = []  # the paper's own results, setup, datasets: pages under its page
    generic: list[PaperSection] = []
    picks: dict[str, Chosen] = {}
    for s in writable:
        title = clean_title(s.title)
        key = space.key_terms(s.id, 20)
        picks[s.id] = choose_sentences(keys[s.id], key_words_of(title, key), result_numbers,
                                        central=GENERIC_SENTENCES if is_framing(s) else TOPIC_SENTENCES)
        role = None if is_framing(s) else paper_role(title, parents_of(s), keys[s.id].sentences)
        if role is None and is_generic(s):
            generic.append(s)
            continue
        c = picks[s.id]
        tags = topic_tags(title, key, keys[s.id].sentences, paper_topics, s.text)
        t = _Topic(s, title, slugify(title, max_len=60), c.central, tags, None, c.facts())
        t.role = role or ""
        t.match = f"{title}. {' '.join(c.central)}"  # what it is matched to related wiki sections by
        (children if role else topics).append(t)
    qvecs = _embed_norm(embedder, [t.match for t in topics])
    for t, v in zip(topics, qvecs, strict=True):
        t.vector = v

    finder = finder or RelatedFinder(settings, embedder=embedder)
    if topics:
        finder.refresh()
    types: dict[str, str | None] = {}

    def is_topic_page(page: str) -> bool:
        if page.startswith(f"{PAPERS_FOLDER}/"):
            return False
        if page not in types:
            types[page] = page_type_of(wiki, page)
        return types[page] != "paper"

    cand_text: dict[str, str] = {}
    cand_rows: dict[str, dict] = {}
    per_topic: list[list[str]] = []
    for t in topics:
        ids = []
        for row in finder.search(t.match, k=2 * CANDIDATES):
            if not is_topic_page(row["page"]) or len(ids) >= CANDIDATES:
                continue  # paper pages take no merges: ask for more, keep the topics
            ids.append(row["id"])
            cand_rows[row["id"]] = row
            body = _without_explanations(str(row.get("text", "")))
            cand_text[row["id"]] = f"{row['title']}. {row.get('description', '')} {' '.join(body.split()[:180])}"
        per_topic.append(ids)
    cand_ids = sorted(cand_text)
    cvecs = dict(zip(cand_ids, _embed_norm(embedder, [cand_text[c] for c in cand_ids]), strict=True))

    existing_by_slug: dict[str, str] = {}
    for t in topics:
        rel = f"{t.slug}.md"
        if (wiki / rel).is_file() and is_topic_page(rel):
            existing_by_slug[t.slug] = rel

    titles = sorted({clean_title(cand_rows[c]["title"]) for c in cand_ids} | {t.title for t in topics})
    tvecs = dict(zip(titles, _embed_norm(embedder, titles), strict=True))

    for t, ids in zip(topics, per_topic, strict=True):
        sims = sorted(((float(cvecs[c] @ t.vector), c) for c in ids), key=lambda x: (-round(x[0], 6), x[1]))
        target_id = None
        # a merge wants the key texts alike *and* the titles: see MERGE_TITLE_SIMILARITY;
        # "closest" (in the plan's reasons) is the nearest section it could merge into
        sims_merge = [(sim, c) for sim, c in sims if float(
            tvecs[clean_title(cand_rows[c]["title"])] @ tvecs[t.title]) >= MERGE_TITLE_SIMILARITY]
        t.closest = (round(sims_merge[0][0], 3), sims_merge[0][1]) if sims_merge else None
        if t.slug in existing_by_slug:
            on_page = [c for _s, c in sims if cand_rows[c]["page"] == existing_by_slug[t.slug]]
            if on_page:
                target_id = on_page[0]
            else:
                _, parsed, _ = load_page(wiki, existing_by_slug[t.slug])
                target_id = parsed.sections[0].id if parsed.sections else None
        elif sims_merge and sims_merge[0][0] >= MERGE_SIMILARITY:
            target_id = sims_merge[0][1]
        if target_id is not None:
            page, sec = find_section(wiki, target_id)
            t.target = {"id": target_id, "page": page, "title": sec.title, "description": sec.description,
                        "body": sec.body}
            t.page = page
        else:
            t.page = f"{t.slug}.md"
        for sim, c in sims:
            row = cand_rows[c]
            if sim >= RELATED_SIMILARITY and c != target_id and row["page"] != t.page:
                t.related.append((row["page"], row["title"]))

    # topics of this paper that resemble each other link to each other
    for i, t in enumerate(topics):
        sims = sorted(
            ((float(t.vector @ u.vector), j) for j, u in enumerate(topics) if j != i and u.page != t.page),
            key=lambda x: (-round(x[0], 6), x[1]),
        )
        own = [(topics[j].page, topics[j].title) for s, j in sims if s >= RELATED_SIMILARITY]
        merged: list[tuple[str, str]] = []
        for page, label in own[:2] + t.related:
            if page != t.page and page not in [p for p, _ in merged]:
                merged.append((page, label))
        t.related = merged[:MAX_RELATED_LINKS]

    # -- the paper page ------------------------------------------------------------------------
    paper_tags = clean_tags(paper_topics)
    page_fields: dict[str, Any] = {"authors": list(info.authors), "paper_file": f"raw/{paper_id}",
                                   **info.meta_fields()}
    abstract = next((s for s in generic if s.kind == "abstract"), None)
    summary_sents = keys[abstract.id].top(SUMMARY_SENTENCES) if abstract else []
    first = True

    def paper_decision(title: str, description: str, body: str, paper_section: str | None) -> None:
        nonlocal first
        plan.decisions.append(Decision(
            action="create", page=paper_page, title=title, description=_one_line(description),
            body=body, sources=[paper_id], tags=paper_tags if first else [],
            page_title=info.title if first else None, page_type="paper" if first else None,
            page_fields=page_fields if first else {}, paper_section=paper_section,
            reason="paper summary page" if first else "paper page section",
        ))
        first = False

    lines = []
    if info.authors:
        lines.append(f"**Authors:** {', '.join(info.authors)}")
    if info.meta_line():
        lines.append(info.meta_line())
    lines.append(f"**Source:** `raw/{paper_id}`")
    if summary_sents:
        lines.append(f"From the abstract ({abstract.pages_label}):")
        lines.append(_quotes(summary_sents))
    intro = summary_sents[0] if summary_sents else (topics[0].sentences[0] if topics else info.title)
    paper_decision("Summary", f"{paper_label}: {intro}", "\n\n".join(lines), abstract.id if abstract else None)

    # the paper's most central sentences overall, each pointing at its topic page
    points: list[tuple[float, int, str, _Topic]] = []
    if topics:
        import numpy as np

        allv = np.vstack([keys[t.section.id].vectors for t in topics])
        centroid = allv.mean(axis=0)
        centroid = centroid / (float(np.linalg.norm(centroid)) or 1.0)
        for t in topics:
            if t.section.kind == "appendix":
                continue
            k = keys[t.section.id]
            for sent in t.sentences:
                i = k.sentences.index(sent)
                points.append((round(float(k.vectors[i] @ centroid), 6), t.section.ord, sent, t))
        points.sort(key=lambda p: (-p[0], p[1]))
        chosen = sorted(points[:KEY_POINTS], key=lambda p: (p[3].section.ord, p[3].sentences.index(p[2])))
        body = "\n".join(f"- “{sent}” ({t.section.label}; {wikilink(t.page, t.title)})" for _s, _o, sent, t in chosen)
    if points:
        paper_decision("Key points", f"{paper_label}: the most central sentences of the paper, with their topic pages", body, None)

    for s in generic:
        if s is abstract:
            continue
        c = picks[s.id]
        body = f"From {s.label} ({s.pages_label}):\n\n{_quotes(c.central)}"
        body += _facts_paragraph(c)
        floats = objects_paragraph(section_objects(objects, s.number, s.title),
                                   rows=_rows_for(prose_numbers, names))
        if floats:
            body += f"\n\n{floats}"
        paper_decision(clean_title(s.title), f"{paper_label}, {clean_title(s.title).lower()}: {c.central[0]}",
                       body, s.id)

    if topics:
        seen: list[str] = []
        items = []
        for t in topics:
            if t.page in seen:
                continue
            seen.append(t.page)
            label = t.target["title"] if t.target else t.title
            items.append(f"- {wikilink(t.page, label)} ({t.section.label})")
        names_ = ", ".join(t.title for t in topics[:6]) + (", …" if len(topics) > 6 else "")
        paper_decision("Topics", f"{paper_label}: wiki topics compiled from the paper: {names_}", "\n".join(items), None)

    # -- the paper's own results, setup and datasets: pages under the paper's page -------------
    allowed = allowed_types(wiki)
    child_fields = {"paper": paper_page} if field_defined(wiki, "paper") else {}
    stem = paper_page[len(PAPERS_FOLDER) + 1:-3]
    child_pages: dict[str, Decision] = {}
    for t in children:
        t.page = f"{PAPERS_FOLDER}/{slugify(f'{stem} {t.title}', max_len=80)}.md"
    if children:
        items = [f"- {wikilink(t.page, t.title)} ({t.section.label}; {_ROLE_LABEL[t.role]})"
                 for k, t in enumerate(children) if t.page not in [u.page for u in children[:k]]]
        paper_decision("Experiments and results",
                       f"{paper_label}: its own results, experimental setup and data, one page each: "
                       + ", ".join(dict.fromkeys(t.title for t in children[:6]))
                       + (", …" if len(children) > 6 else ""), "\n".join(items), None)

    def paragraph_of(t) -> str:
        """One paper section's paragraph: its quotes, its facts, its tables and figures."""
        para = f"From {paper_link}, {t.section.label} ({t.section.pages_label}):\n\n{_quotes(t.sentences)}"
        para += _facts_paragraph(picks[t.section.id])
        floats = objects_paragraph(section_objects(objects, t.section.number, t.section.title),
                                   rows=_rows_for(prose_numbers, names))
        return para + (f"\n\n{floats}" if floats else "")

    for t in children:
        para = paragraph_of(t)
        if t.page in child_pages:  # two sections of one name (a dataset in two experiments)
            child_pages[t.page].body += "\n\n" + para
            continue
        ptype = allowed_type(t.role, allowed)
        d = Decision(
            action="create", page=t.page, title=t.title,
            description=_one_line(f"{paper_label}, {t.title}: {t.sentences[0]}"), body=para,
            sources=[paper_id], tags=t.tags, page_title=f"{t.title} ({paper_label})", page_type=ptype,
            page_fields=dict(child_fields), paper_section=t.section.id,
            reason=f"the paper's own {_ROLE_LABEL[t.role]}: a page under {paper_page}",
        )
        child_pages[t.page] = d
        plan.decisions.append(d)

    # -- topic sections ------------------------------------------------------------------------
    updates: dict[str, Decision] = {}
    created: dict[str, Decision] = {}
    for t in topics:
        para = paragraph_of(t)
        if t.related:
            para += "\n\nRelated: " + ", ".join(wikilink(p, label) for p, label in t.related)
        if t.target is not None:
            tid = t.target["id"]
            if tid in updates:
                updates[tid].body += "\n\n" + para
                continue
            d = Decision(
                action="update", page=t.page, section_id=tid, title=t.target["title"],
                description=t.target["description"] or _one_line(f"{t.target['title']}: {t.sentences[0]}"),
                body=f"{t.target['body'].rstrip()}\n\n{para}", sources=[paper_id], tags=t.tags,
                paper_section=t.section.id, reason=f"merged: {t.title!r} matches {tid} ({t.target['title']!r}"
                + (f", similarity {t.closest[0]})" if t.closest else ")"),
            )
            updates[tid] = d
            plan.decisions.append(d)
        elif t.page in created:  # a second section of the same name in this paper: one section
            created[t.page].body += "\n\n" + para
        else:
            d = Decision(
                action="create", page=t.page, title=t.title,
                description=_one_line(f"{t.title}: {t.sentences[0]}"), body=para,
                sources=[paper_id], tags=t.tags, page_title=t.title,
                page_type=allowed_type(page_type_for(t.title, keys[t.section.id].sentences,
                                                      parents_of(t.section), t.section.text), allowed),
                paper_section=t.section.id,
                reason="new topic" + (f" (closest: {t.closest[1]}, similarity {t.closest[0]})" if t.closest else ""),
            )
            created[t.page] = d
            plan.decisions.append(d)
    return plan
