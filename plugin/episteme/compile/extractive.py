"""The offline writer: a deterministic wiki skeleton built only from the paper's own sentences.

No model writes anything here, so nothing can be invented: every sentence on a page is quoted
from the paper (whitespace normalised), with the section and pages it came from.  What the
writer decides is *which* sentences and *where* they go:

* **Key sentences** — a section's candidate sentences (clean, self-contained prose; no captions,
  formulas or table rows) are embedded and ranked by centrality: cosine similarity to the mean
  of the section's sentence vectors, i.e. the sentences most representative of the section.
* **Roles** — beside them, each written section quotes the definitions of its key terms, its
  results and key numbers, and its explanations (a reason or a mechanism) (:func:`sentences.choose_sentences`,
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
  (:class:`episteme.compile.inputs.RelatedFinder`) and compared exactly with the section's key text; a
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
* **Tags** — a few per page, from its content (:func:`tags.topic_tags`): one of the paper's topic
  words the section repeats (so a paper's pages share a tag) and the section's distinctive key
  terms that name something; through the one tag normaliser (:func:`decisions.clean_tags`).

Deterministic: the same wiki and paper give the same decisions, byte for byte (dates come from
the injected ``today``).  The result is an honest skeleton an LLM (or a person) can refine.

Where the parts live: choosing sentences in :mod:`episteme.compile.sentences`, tags in
:mod:`episteme.compile.tags`, titles and page names in :mod:`episteme.compile.naming`; merging
and linking are the steps of :func:`plan_extractive` here, which share its deterministic order
and its thresholds; the decision types and their checks, shared with the Claude writer, are in
:mod:`episteme.compile.decisions`.
"""


from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..fsutil import slugify
from ..paper import PaperSection
from ..wiki.edit import find_section, load_page
from .decisions import Decision, WritePlan, clean_tags
from .inputs import PAPERS_FOLDER, PaperInfo, RelatedFinder, load_paper, page_type_of
from .naming import (
    ROLE_LABEL,
    allowed_type,
    allowed_types,
    clean_title,
    field_defined,
    is_framing,
    is_generic,
    one_line,
    page_type_for,
    paper_page_for,
    quote_lines,
    short_title,
    wikilink,
)
from .sentences import TOPIC_SENTENCES, Chosen, SectionKeys, choose_sentences, rank_sentences
from .tags import keyphrases, topic_tags
from .topics import EVIDENCE_SIMILARITY, attribution, quoted_text, shared_evidence

TABLE_ROWS = 3  # key rows quoted per table
MERGE_SIMILARITY = 0.6  # cosine (MiniLM) of key texts above which a topic joins an existing one
#: and the cosine its title must have with that section's title (titles of the same topic in
#: different papers: 0.63-0.88; of the merges this stopped, all wrong: 0.03-0.45)
MERGE_TITLE_SIMILARITY = 0.5
RELATED_SIMILARITY = 0.5  # cosine above which two topics link to each other
GENERIC_SENTENCES = 2
SUMMARY_SENTENCES = 3
KEY_POINTS = 5
MAX_RELATED_LINKS = 3
CANDIDATES = 6  # related wiki sections retrieved per topic
#: longest paper-page name the pages under it start with (a longer one is replaced by the
#: paper's short title, so that ``max_len=80`` never cuts two children to one name)
CHILD_STEM_CHARS = 60


def _facts_paragraph(c: Chosen) -> str:
    out = ""
    if c.definitions:
        out += f"\n\nDefinitions:\n\n{quote_lines(c.definitions)}"
    if c.numbers:
        out += f"\n\nResults and key numbers:\n\n{quote_lines(c.numbers)}"
    if c.explanations:
        out += f"\n\nExplanations:\n\n{quote_lines(c.explanations)}"
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
    under_paper: bool = False  # beyond the paper's budget of top-level pages: a page under its page
    folded_into: str = ""  # the title of the topic whose page this subsection joins
    evidence: list[str] = field(default_factory=list)  # the specific terms a merge rests on


@dataclass
class _Paper:
    """What every step of one paper's plan reads: the paper, its page, its ranked sentences,
    its tables and numbers, and the plan the steps add their decisions to."""

    settings: Any
    wiki: Any
    paper_id: str
    info: PaperInfo
    plan: WritePlan
    embedder: Any
    writable: list[PaperSection]
    keys: dict[str, SectionKeys]
    paper_page: str
    paper_label: str
    paper_link: str
    objects: list[dict[str, Any]] = field(default_factory=list)
    prose_numbers: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    titles_by_number: dict[str, str] = field(default_factory=dict)
    paper_topics: list[str] = field(default_factory=list)
    result_numbers: set[str] = field(default_factory=set)  # printed in its tables or abstract
    picks: dict[str, Chosen] = field(default_factory=dict)
    cited_as: str = ""  # " (Vaswani et al., 2017)" after the paper's link in its paragraphs
    see_also: list[tuple[str, str]] = field(default_factory=list)  # (page, title): its nearest pages

    def parents_of(self, s: PaperSection) -> list[str]:
        parts = (s.number or "").split(".")
        return [self.titles_by_number[".".join(parts[:i])] for i in range(1, len(parts))
                if ".".join(parts[:i]) in self.titles_by_number]

    def paragraph_of(self, t: _Topic) -> str:
        """One paper section's paragraph: its quotes, its facts, its tables and figures."""
        from .objects import objects_paragraph, section_objects

        para = f"From {self.paper_link}{self.cited_as}, {t.section.label} ({t.section.pages_label}):\n\n{quote_lines(t.sentences)}"
        para += _facts_paragraph(self.picks[t.section.id])
        floats = objects_paragraph(section_objects(self.objects, t.section.number, t.section.title),
                                   rows=_rows_for(self.prose_numbers, self.names))
        return para + (f"\n\n{floats}" if floats else "")


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
    """Decide every write for ``paper_id`` (nothing is written; see :func:`decisions.apply_plan`).

    The steps, in their deterministic order: the paper's sentences ranked and its sections
    sorted into topics, the paper's own experiments and framing sections; each topic matched
    to the related wiki sections (merge or link); the paper page; the pages under it; the
    topic sections."""
    from ..stores.embedding import get_embedder

    embedder = embedder or get_embedder(settings)
    p = _start(settings, paper_id, embedder)
    topics, children, generic = _sort_sections(p)
    stem = p.paper_page[len(PAPERS_FOLDER) + 1:-3]
    if len(stem) > CHILD_STEM_CHARS:  # a long whole-title page name: its pages take the short one
        stem = slugify(short_title(p.info.title), max_len=CHILD_STEM_CHARS)
    for t in children:
        t.page = f"{PAPERS_FOLDER}/{slugify(f'{stem} {t.title}', max_len=80)}.md"
    finder = finder or RelatedFinder(settings, embedder=embedder)
    _shape_topics(p, topics, {t.page for t in children}, stem, finder)
    if not topics and not children:  # only framing sections: the page would link nowhere
        p.see_also = _nearest_pages(p, generic, finder)
        own = [s for s in generic if s.kind != "abstract"]
        if not p.see_also and own:  # nothing to link to yet: its longest section, a page under it
            s = max(own, key=lambda x: (len(x.text), -x.ord))
            generic.remove(s)
            title, c = clean_title(s.title), p.picks[s.id]
            t = _Topic(s, title, slugify(title, max_len=60), c.central, clean_tags(p.paper_topics[:2]), None,
                       c.facts(), under_paper=True)
            t.page = f"{PAPERS_FOLDER}/{slugify(f'{stem} {title}', max_len=80)}.md"
            topics.append(t)
    _paper_page_decisions(p, topics, children, generic)
    _child_decisions(p, children)
    _topic_decisions(p, topics)
    return p.plan


def _start(settings, paper_id: str, embedder) -> _Paper:
    """The paper loaded, its writable sections' sentences ranked (a section with none is
    skipped), and what the steps share: its page, tables and numbers."""
    from .objects import paper_objects
    from .roles import number_key, number_keys, own_names, quantities

    wiki = settings.wiki
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
    p = _Paper(settings, wiki, paper_id, info, plan, embedder, writable, keys, paper_page, paper_label,
               wikilink(paper_page, paper_label))
    p.objects = paper_objects(settings, paper_id)
    who = attribution(info.authors, info.meta.get("year"))
    p.cited_as = f" ({who})" if who else ""
    abstract_text = " ".join(s.text for s in writable if s.kind == "abstract")
    p.prose_numbers = {k for s in writable for q in quantities(s.text) for k in number_keys(q)}
    p.names = own_names(info.title, abstract_text)
    p.titles_by_number = {s.number: clean_title(s.title) for s in info.sections if s.number}
    p.paper_topics = keyphrases("\n".join(s.text for s in writable), 5)  # the paper's topic words
    # the paper's result numbers: printed in its tables or stated in its abstract
    p.result_numbers = {number_key(q) for o in p.objects if o["kind"] == "table" for q in quantities(o["text"])}
    p.result_numbers |= {number_key(q) for q in quantities(abstract_text)}
    return p


def _sort_sections(p: _Paper) -> tuple[list[_Topic], list[_Topic], list[PaperSection]]:
    """Each writable section's sentences chosen, and the section sorted: a topic (its own
    page), the paper's own results / setup / data (a page under the paper's page), or a
    generic section (on the paper's page)."""
    from .keyterms import TermSpace
    from .roles import key_words_of, paper_role

    space = TermSpace({s.id: s.text for s in p.writable})
    topics: list[_Topic] = []
    children: list[_Topic] = []  # the paper's own results, setup, datasets: pages under its page
    generic: list[PaperSection] = []
    for s in p.writable:
        title = clean_title(s.title)
        key = space.key_terms(s.id, 20)
        p.picks[s.id] = choose_sentences(p.keys[s.id], key_words_of(title, key), p.result_numbers,
                                         central=GENERIC_SENTENCES if is_framing(s) else TOPIC_SENTENCES)
        role = None if is_framing(s) else paper_role(title, p.parents_of(s), p.keys[s.id].sentences)
        if role is None and is_generic(s):
            generic.append(s)
            continue
        c = p.picks[s.id]
        tags = topic_tags(title, key, p.keys[s.id].sentences, p.paper_topics, s.text)
        t = _Topic(s, title, slugify(title, max_len=60), c.central, tags, None, c.facts())
        t.role = role or ""
        t.match = f"{title}. {' '.join(c.central)}"  # what it is matched to related wiki sections by
        (children if role else topics).append(t)
    return topics, children, generic


def _candidates(p: _Paper, topics: list[_Topic], finder: RelatedFinder,
                is_topic_page: Callable[[str], bool]) -> tuple[list[list[str]], dict[str, dict], dict[str, str]]:
    """Per topic, the ids of its related wiki sections on topic pages (paper pages take no
    merges: more are asked for, the topics kept), with their rows and the text compared."""
    cand_text: dict[str, str] = {}
    cand_rows: dict[str, dict] = {}
    per_topic: list[list[str]] = []
    for t in topics:
        ids = []
        for row in finder.search(t.match, k=2 * CANDIDATES):
            if not is_topic_page(row["page"]) or len(ids) >= CANDIDATES:
                continue
            ids.append(row["id"])
            cand_rows[row["id"]] = row
            body = _without_explanations(str(row.get("text", "")))
            cand_text[row["id"]] = f"{row['title']}. {row.get('description', '')} {' '.join(body.split()[:180])}"
        per_topic.append(ids)
    return per_topic, cand_rows, cand_text


def _match_topics(p: _Paper, topics: list[_Topic], finder: RelatedFinder) -> None:
    """Each topic's page: an existing section it merges into (same slug, or key texts at
    least :data:`MERGE_SIMILARITY` alike with titles at least :data:`MERGE_TITLE_SIMILARITY`
    alike), else its own new page; and the related wiki sections it links to."""
    wiki, embedder = p.wiki, p.embedder
    qvecs = _embed_norm(embedder, [t.match for t in topics])
    for t, v in zip(topics, qvecs, strict=True):
        t.vector = v
    if topics:
        finder.refresh()
    types: dict[str, str | None] = {}

    def is_topic_page(page: str) -> bool:
        if page.startswith(f"{PAPERS_FOLDER}/"):
            return False
        if page not in types:
            types[page] = page_type_of(wiki, page)
        return types[page] != "paper"

    per_topic, cand_rows, cand_text = _candidates(p, topics, finder, is_topic_page)
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
        else:  # the same named technique, dataset or metric in both, and in both titles
            named = []  # (title similarity, section, evidence): the likest title wins
            for sim, c in sims:
                if sim < EVIDENCE_SIMILARITY:
                    break
                row = cand_rows[c]
                ev = shared_evidence(t.title, t.section.text, clean_title(row["title"]),
                                     quoted_text(str(row.get("text", ""))))
                if ev:
                    named.append((round(float(tvecs[clean_title(row["title"])] @ tvecs[t.title]), 6), c, ev))
            if named:
                _, target_id, t.evidence = max(named, key=lambda x: (x[0], x[1]))
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


def _nearest_pages(p: _Paper, generic: list[PaperSection], finder: RelatedFinder) -> list[tuple[str, str]]:
    """The wiki pages nearest a paper that has no topic of its own (every section of it frames
    the paper): its page lists them, so it is not an orphan (lint: page-orphan) and a reader
    finds the topics it speaks to."""
    text = " ".join([p.info.title, *(c for s in generic for c in p.picks[s.id].central)])
    out: list[tuple[str, str]] = []
    for row in finder.search(text, k=2 * CANDIDATES):
        if row["page"] != p.paper_page and row["page"] not in [q for q, _ in out]:
            out.append((row["page"], clean_title(row["title"])))
    return out[:MAX_RELATED_LINKS]


def _heading_is_generic(title: str) -> bool:
    """Whether a heading (of a section or of its ancestor) frames or organises the paper."""
    probe = PaperSection(number=None, title=title, level=1, kind="body", page_start=0, page_end=0, text="")
    from .topics import organising_heading

    return is_generic(probe) or is_framing(probe) or organising_heading(title)  # "Untitled": no headings


def _shape_topics(p: _Paper, topics: list[_Topic], taken: set[str], stem: str,
                  finder: RelatedFinder) -> None:
    """The paper's topics shaped into fewer, broader pages (:mod:`episteme.compile.topics`):
    subsections folded into their ancestor topic's page, the groups matched to the wiki (merge
    or link), and the groups beyond the paper's budget of new top-level pages put under the
    paper's page."""
    from .topics import TopicItem, fold_groups, keep_top_level

    items = [TopicItem(t.section.number, t.title, len(t.section.text.split())) for t in topics]
    groups = fold_groups(items, _heading_is_generic)
    heads = [topics[g.head] for g in groups]
    _match_topics(p, heads, finder)
    keep = keep_top_level(groups, items, [h.target is not None for h in heads],
                          eligible=[not _heading_is_generic(h.title) for h in heads])
    for h, top in zip(heads, keep, strict=True):
        if not top:
            page = f"{PAPERS_FOLDER}/{slugify(f'{stem} {h.title}', max_len=80)}.md"
            h.page = page if page not in taken else page[:-3] + "-topic.md"
            h.under_paper = True
    _link_own_topics(heads)  # to the pages the topics have now
    for g, h in zip(groups, heads, strict=True):
        for j in g.members[1:]:
            t = topics[j]
            t.page, t.target, t.under_paper, t.related = h.page, h.target, h.under_paper, []
            t.folded_into = h.title


def _link_own_topics(topics: list[_Topic]) -> None:
    """Topics of this paper that resemble each other link to each other (before the wiki's)."""
    for i, t in enumerate(topics):
        sims = sorted(
            ((float(t.vector @ u.vector), j) for j, u in enumerate(topics) if j != i and u.page != t.page),
            key=lambda x: (-round(x[0], 6), x[1]),
        )
        own = [(topics[j].page, topics[j].title) for s, j in sims if s >= RELATED_SIMILARITY]
        merged: list[tuple[str, str]] = []
        for page, label in own[:2] + t.related:
            if page != t.page and page not in [q for q, _ in merged]:
                merged.append((page, label))
        t.related = merged[:MAX_RELATED_LINKS]


def _key_points(p: _Paper, topics: list[_Topic]) -> str | None:
    """The paper's most central sentences overall, each pointing at its topic page (``None``
    when there are none)."""
    if not topics:
        return None
    import numpy as np

    keys = p.keys
    points: list[tuple[float, int, str, _Topic]] = []
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
    if not points:
        return None
    points.sort(key=lambda x: (-x[0], x[1]))
    chosen = sorted(points[:KEY_POINTS], key=lambda x: (x[3].section.ord, x[3].sentences.index(x[2])))
    return "\n".join(f"- “{sent}” ({t.section.label}; {wikilink(t.page, t.title)})" for _s, _o, sent, t in chosen)


def _paper_page_decisions(p: _Paper, topics: list[_Topic], children: list[_Topic],
                          generic: list[PaperSection]) -> None:
    """The paper's page: its summary (authors, metadata, the abstract's key sentences), its
    key points, its generic sections, its topics and its own experiments' pages."""
    from .objects import objects_paragraph, section_objects

    info, paper_id, label = p.info, p.paper_id, p.paper_label
    paper_tags = clean_tags(p.paper_topics)
    page_fields: dict[str, Any] = {"authors": list(info.authors), "paper_file": f"raw/{paper_id}",
                                   **info.meta_fields()}
    abstract = next((s for s in generic if s.kind == "abstract"), None)
    summary_sents = p.keys[abstract.id].top(SUMMARY_SENTENCES) if abstract else []
    first = True
    by_title: dict[str, Decision] = {}  # a heading once per page (lint: section-duplicate)

    def paper_decision(title: str, description: str, body: str, paper_section: str | None) -> None:
        nonlocal first
        if title.casefold() in by_title:  # a paper's second "Summary": joins the first
            by_title[title.casefold()].body += "\n\n" + body
            return
        by_title[title.casefold()] = Decision(
            action="create", page=p.paper_page, title=title, description=one_line(description),
            body=body, sources=[paper_id], tags=paper_tags if first else [],
            page_title=info.title if first else None, page_type="paper" if first else None,
            page_fields=page_fields if first else {}, paper_section=paper_section,
            reason="paper summary page" if first else "paper page section",
        )
        p.plan.decisions.append(by_title[title.casefold()])
        first = False

    lines = []
    if info.authors:
        lines.append(f"**Authors:** {', '.join(info.authors)}")
    if info.meta_line():
        lines.append(info.meta_line())
    lines.append(f"**Source:** `raw/{paper_id}`")
    if summary_sents:
        lines.append(f"From the abstract ({abstract.pages_label}):")
        lines.append(quote_lines(summary_sents))
    intro = summary_sents[0] if summary_sents else (topics[0].sentences[0] if topics else info.title)
    paper_decision("Summary", f"{label}: {intro}", "\n\n".join(lines), abstract.id if abstract else None)

    points = _key_points(p, topics)
    if points is not None:
        paper_decision("Key points", f"{label}: the most central sentences of the paper, with their topic pages", points, None)

    for s in generic:
        if s is abstract:
            continue
        c = p.picks[s.id]
        body = f"From {s.label} ({s.pages_label}):\n\n{quote_lines(c.central)}"
        body += _facts_paragraph(c)
        floats = objects_paragraph(section_objects(p.objects, s.number, s.title),
                                   rows=_rows_for(p.prose_numbers, p.names))
        if floats:
            body += f"\n\n{floats}"
        paper_decision(clean_title(s.title), f"{label}, {clean_title(s.title).lower()}: {c.central[0]}",
                       body, s.id)

    if topics:
        seen: list[str] = []
        items = []
        for t in topics:
            if t.page in seen:
                continue
            seen.append(t.page)
            item_label = t.target["title"] if t.target else t.title
            items.append(f"- {wikilink(t.page, item_label)} ({t.section.label})")
        names_ = ", ".join(t.title for t in topics[:6]) + (", …" if len(topics) > 6 else "")
        paper_decision("Topics", f"{label}: wiki topics compiled from the paper: {names_}", "\n".join(items), None)

    if children:
        items = [f"- {wikilink(t.page, t.title)} ({t.section.label}; {ROLE_LABEL[t.role]})"
                 for k, t in enumerate(children) if t.page not in [u.page for u in children[:k]]]
        paper_decision("Experiments and results",
                       f"{label}: its own results, experimental setup and data, one page each: "
                       + ", ".join(dict.fromkeys(t.title for t in children[:6]))
                       + (", …" if len(children) > 6 else ""), "\n".join(items), None)

    if p.see_also:
        paper_decision("Related in this wiki", f"{label}: the wiki pages nearest the paper",
                       "\n".join(f"- {wikilink(page, title)}" for page, title in p.see_also), None)


def _child_decisions(p: _Paper, children: list[_Topic]) -> None:
    """The paper's own results, setup and datasets: one page each under the paper's page
    (two sections of one name, such as a dataset in two experiments, share it)."""
    allowed = allowed_types(p.wiki)
    child_fields = {"paper": p.paper_page} if field_defined(p.wiki, "paper") else {}
    child_pages: dict[str, Decision] = {}
    for t in children:
        para = p.paragraph_of(t)
        if t.page in child_pages:
            child_pages[t.page].body += "\n\n" + para
            continue
        d = Decision(
            action="create", page=t.page, title=t.title,
            description=one_line(f"{p.paper_label}, {t.title}: {t.sentences[0]}"), body=para,
            sources=[p.paper_id], tags=t.tags, page_title=f"{t.title} ({p.paper_label})",
            page_type=allowed_type(t.role, allowed), page_fields=dict(child_fields),
            paper_section=t.section.id,
            reason=f"the paper's own {ROLE_LABEL[t.role]}: a page under {p.paper_page}",
        )
        child_pages[t.page] = d
        p.plan.decisions.append(d)


def _topic_decisions(p: _Paper, topics: list[_Topic]) -> None:
    """Each topic's section: appended to the section it merges into, or created on its page
    (a second section of the same name in this paper joins the first)."""
    allowed = allowed_types(p.wiki)
    child_fields = {"paper": p.paper_page} if field_defined(p.wiki, "paper") else {}
    updates: dict[str, Decision] = {}
    created: dict[str, Decision] = {}
    by_title: dict[tuple[str, str], Decision] = {}  # (page, title casefolded): no heading twice
    for t in topics:
        para = p.paragraph_of(t)
        if t.related:
            para += "\n\nRelated: " + ", ".join(wikilink(page, label) for page, label in t.related)
        if t.target is not None:
            tid = t.target["id"]
            if tid in updates:
                updates[tid].body += "\n\n" + para
                continue
            d = Decision(
                action="update", page=t.page, section_id=tid, title=t.target["title"],
                description=t.target["description"] or one_line(f"{t.target['title']}: {t.sentences[0]}"),
                body=f"{t.target['body'].rstrip()}\n\n{para}", sources=[p.paper_id], tags=t.tags,
                paper_section=t.section.id, reason=f"merged: {t.title!r} matches {tid} ({t.target['title']!r}"
                + (f", similarity {t.closest[0]}" if t.closest else "")
                + (f", both name: {', '.join(t.evidence)})" if t.evidence else ")"),
            )
            updates[tid] = d
            p.plan.decisions.append(d)
        elif t.page in created:
            key = (t.page, t.title.casefold())
            if t.folded_into and key not in by_title:  # a subsection: a section of its own there
                d = Decision(
                    action="create", page=t.page, title=t.title,
                    description=one_line(f"{t.title}: {t.sentences[0]}"), body=para,
                    sources=[p.paper_id], tags=[], paper_section=t.section.id,  # the page's tags are its head's
                    reason=f"a subsection of {t.folded_into!r}: a section on its page",
                )
                by_title[key] = d
                p.plan.decisions.append(d)
            else:  # a second section of the same name joins the first
                by_title.get(key, created[t.page]).body += "\n\n" + para
        else:
            d = Decision(
                action="create", page=t.page, title=t.title,
                description=one_line(f"{t.title}: {t.sentences[0]}"), body=para,
                sources=[p.paper_id], tags=t.tags,
                page_title=f"{t.title} ({p.paper_label})" if t.under_paper else t.title,
                page_type=allowed_type(page_type_for(t.title, p.keys[t.section.id].sentences,
                                                      p.parents_of(t.section), t.section.text), allowed),
                page_fields=dict(child_fields) if t.under_paper else {},
                paper_section=t.section.id,
                reason=("a topic beyond the paper's new top-level pages: a page under " + p.paper_page
                        if t.under_paper else "new topic")
                + (f" (closest: {t.closest[1]}, similarity {t.closest[0]})" if t.closest else ""),
            )
            created[t.page] = by_title[(t.page, t.title.casefold())] = d
            p.plan.decisions.append(d)
