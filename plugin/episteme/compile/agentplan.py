"""The agent's plan (``episteme plan`` / ``plan_ingest.py``, skill ``wiki-ingest``), outline
first: for every paper section worth writing, a one-line gist, a suggested page and the related
topic sections with the evidence that they are the same topic; then, asked by name, the text of
the sections the agent writes.  Why two steps: every byte printed is read by the model, and the
outline of a paper is a third of its text.  Reads the wiki's pages and SQLite; writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import NotFoundError
from ..fsutil import slugify
from ..paper import PaperSection
from .inputs import PAPERS_FOLDER, SKIPPED_KINDS, RelatedFinder, load_paper, paper_already_written
from .keyterms import (
    MIN_EVIDENCE,
    TermSpace,
    names_shared_topic,
    specific_terms,
    title_names_topic,
    topic_name,
)
from .naming import clean_title, is_generic, paper_page_for


def select_sections(sections: list[PaperSection], only: str | Iterable[str]) -> list[PaperSection]:
    """The sections ``only`` names, in paper order: each name may be a store id
    (``attention.pdf#3.2``), the part after ``#`` (``abstract``, ``3.2``), a number, or a title
    (case-insensitive); comma-separated in one string.  Unknown names are an error listing the
    addressable ones."""
    names = [x.strip() for x in (only.split(",") if isinstance(only, str) else only) if x.strip()]
    picked: list[PaperSection] = []
    for name in names:
        low = name.lower()
        hits = [s for s in sections
                if name in (s.id, s.number) or s.id.split("#", 1)[-1].lower() == low
                or " ".join(s.title.lower().split()) == " ".join(low.split())]
        if not hits:
            known = ", ".join(s.id.split("#", 1)[-1] for s in sections)
            raise NotFoundError(f"no writable section {name!r}; writable: {known}")
        picked.extend(h for h in hits if h not in picked)
    return [s for s in sections if s in picked]


def _wiki_section_texts(wiki: Path) -> dict[str, dict[str, Any]]:
    """Every wiki section's id -> page, title, description, sources and body (one scan)."""
    from ..wiki.files import iter_page_files
    from ..wiki.sections import SectionFormatError, parse_page

    out: dict[str, dict[str, Any]] = {}
    for rel in iter_page_files(wiki):
        try:
            text = (wiki / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "<!-- section" not in text:
            continue
        try:
            parsed = parse_page(text, strict=False)
        except SectionFormatError:
            continue
        for sec in parsed.sections:
            out.setdefault(sec.id, {"page": rel, "title": sec.title,
                                    "description": " ".join(sec.description.split()),
                                    "sources": list(sec.sources), "body": sec.body})
    return out


#: characters of a section's one-line gist in the outline
GIST_CHARS = 140
#: specific shared terms shown per related section (the best ones; more add tokens, not proof)
EVIDENCE_TERMS = 3


def gist_of(text: str, limit: int = GIST_CHARS) -> str:
    """A section's first quotable sentence (else its first words), cut at ``limit``
    characters at a word: enough for the agent to tell what the section is about before it
    asks for the text."""
    from .sentences import candidate_sentences

    first = next(iter(candidate_sentences(text[:3000])), "") or " ".join(text.split())
    if len(first) <= limit:
        return first
    return first[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def _related(space: TermSpace, s: PaperSection, wiki_secs: dict[str, dict[str, Any]],
             wiki_keys: list[str], k: int) -> list[dict[str, Any]]:
    """The ``k`` wiki sections nearest by key terms that share *specific* terms with the
    section (:func:`keyterms.specific_terms`), each with that ``evidence``; sections that
    share only generic words are left out, however high their score, as are those whose title
    names nothing both texts share (:func:`keyterms.names_shared_topic`), and so are the pages
    under ``papers/`` (a paper's own page and its results take no other paper's text)."""
    out = []
    for wk, _score, _shared in space.nearest(f"p:{s.id}", wiki_keys, 4 * k):
        sid = wk[2:]
        w = wiki_secs[sid]
        if w["page"].startswith(f"{PAPERS_FOLDER}/"):
            continue  # a paper's own pages take no merges from another paper
        _, shared = space.compare(f"p:{s.id}", wk, n=30)
        evidence = specific_terms(shared, s.text, f"{w['description']}. {w['body']}", n=EVIDENCE_TERMS)
        if len(evidence) < MIN_EVIDENCE or not names_shared_topic(w["title"], shared):
            continue
        out.append({"id": sid, "page": w["page"], "title": w["title"], "evidence": evidence})
        if len(out) == k:
            break
    return out


def plan_paper(
    settings,
    paper_id: str,
    *,
    k: int = 3,
    text: bool = False,
    only: str | Iterable[str] | None = None,
    embedder=None,
    semantic: bool = False,
) -> dict[str, Any]:
    """What the agent (skill ``wiki-ingest``) reads before its one batch write, outline first.

    Per paper section worth writing: its ``name`` (what ``only`` takes), title, pages, size,
    a one-line ``gist``, its key terms, a suggested page named from them, and ``related``: up
    to ``k`` existing wiki sections that share *specific* terms with it, each with that
    ``evidence`` (:func:`keyterms.specific_terms`) and a TF-IDF ``score``.  The section's
    ``text`` comes only for the sections named in ``only`` (or every section with ``text``):
    the outline of a 15-page paper is a few thousand tokens, the text the agent then asks for
    is what it writes from.  Reads the wiki's pages and SQLite only (no embedder, no Chroma)
    unless ``semantic``, which adds the wiki-section search's hits (``similarity``).  Writes
    nothing."""
    info = load_paper(settings, paper_id)
    wiki = settings.wiki
    writable, skipped = info.writable()
    picked = select_sections(writable, only) if only is not None else None
    wiki_secs = _wiki_section_texts(wiki)
    docs = {f"w:{sid}": f"{w['title']}. {w['description']}. {w['body']}" for sid, w in wiki_secs.items()}
    # the text alone (not the heading): a heading word must earn its place among key terms
    docs.update({f"p:{s.id}": s.text for s in info.sections
                 if s.kind not in SKIPPED_KINDS})
    space = TermSpace(docs)
    wiki_keys = [f"w:{sid}" for sid in wiki_secs]
    finder = None
    if semantic and wiki_secs and writable:
        finder = RelatedFinder(settings, embedder=embedder)
        finder.refresh()
    paper_page = paper_page_for(wiki, info)
    taken_pages: set[str] = set()
    sections = []
    for s in writable:  # every section, so the suggested pages are the same with or without ``only``
        title = clean_title(s.title)
        key = space.key_terms(f"p:{s.id}", 20)
        # A topic page when the heading names the text's topic; an organisational heading
        # ("Hardware and Schedule") puts its text on the paper page, with the text's own
        # key-term topic offered as the alternative page name.
        names_topic = not is_generic(s) and title_names_topic(title, key)
        alt = topic_name(key)
        if names_topic:
            suggested = f"{slugify(title, max_len=60)}.md"
            if suggested in taken_pages and alt:  # two sections on one name: keep them apart
                suggested = f"{slugify(alt, max_len=60)}.md"
            taken_pages.add(suggested)
        else:
            suggested = paper_page
        if picked is not None and s not in picked:
            continue
        name = s.id.split("#", 1)[-1]
        if picked is not None:  # the text asked for: what the outline did not say
            sections.append({"name": name, "pages": s.pages_label, "text": s.text})
            continue
        # framing sections (introduction, conclusion, acknowledgements) go on the paper page:
        # the wiki sections they share words with are no merge candidates
        related = [] if is_generic(s) else _related(space, s, wiki_secs, wiki_keys, k)
        if finder is not None and not is_generic(s):
            _add_search_hits(finder, space, s, title, wiki_secs, related, k)
        item: dict[str, Any] = {
            "name": name, "title": title, "chars": len(s.text), "gist": gist_of(s.text),
            "suggested_page": suggested,
            **({} if names_topic or not alt or is_generic(s)
               else {"topic_page": f"{slugify(alt, max_len=60)}.md"}),
            "related": related,
        }
        if text:
            item["pages"] = s.pages_label
            item["text"] = s.text
        sections.append(item)
    return {
        "paper": paper_id,
        "title": info.title,
        "authors": info.authors,
        **info.meta_fields(),
        "paper_page": paper_page,
        "paper_page_exists": (wiki / paper_page).is_file(),
        "already_written": paper_already_written(wiki, paper_id),
        "wiki_sections": len(wiki_secs),
        "sections": sections,
        "skipped": [f"{x['paper_section'].split('#', 1)[-1]} ({x['reason']})" for x in skipped
                    if x["reason"] not in _QUIET_SKIPS],
        **({} if text or picked is not None else
           {"next": "read the text of the sections you will write: --section NAME,NAME,..."}),
    }


#: skip reasons not worth a line in the outline (floats are quoted with their sections)
_QUIET_SKIPS = frozenset({"table section", "figure section", "algorithm section", "footnote section"})


def _add_search_hits(finder: RelatedFinder, space: TermSpace, s: PaperSection, title: str,
                     wiki_secs: dict[str, dict[str, Any]], related: list[dict[str, Any]], k: int) -> None:
    """``--semantic``: the wiki-section search's hits beside the key-term ones (``similarity``),
    with their specific shared terms as evidence (possibly none: the agent judges)."""
    by_id = {r["id"]: r for r in related}
    for r in finder.search(f"{title}. {s.text[:2000]}", k=k):
        if r["id"] in by_id:
            by_id[r["id"]]["similarity"] = r.get("similarity")
        elif r["id"] in wiki_secs and not wiki_secs[r["id"]]["page"].startswith(f"{PAPERS_FOLDER}/"):
            w = wiki_secs[r["id"]]
            score, shared = space.compare(f"p:{s.id}", f"w:{r['id']}", n=30)
            related.append({"id": r["id"], "page": w["page"], "title": w["title"],
                            "evidence": specific_terms(shared, s.text, f"{w['description']}. {w['body']}",
                                                       n=EVIDENCE_TERMS),
                            "score": score, "similarity": r.get("similarity")})
