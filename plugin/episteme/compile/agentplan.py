"""The agent's plan (``episteme plan`` / ``plan_ingest.py``, skill ``wiki-ingest``): for every
paper section worth writing, its text, a suggested page and the related wiki sections with the
evidence that they are the same topic.  Reads the wiki's pages and SQLite; writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import NotFoundError
from ..fsutil import slugify
from ..paper import PaperSection
from .inputs import SKIPPED_KINDS, RelatedFinder, load_paper, paper_already_written
from .keyterms import TermSpace, title_names_topic, topic_name
from .naming import clean_title, is_generic, paper_page_for, short_title


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


def plan_paper(
    settings,
    paper_id: str,
    *,
    k: int = 5,
    text: bool = True,
    only: str | Iterable[str] | None = None,
    embedder=None,
    semantic: bool = False,
) -> dict[str, Any]:
    """What the agent (skill ``wiki-ingest``) reads before its one batch write: for every
    paper section worth writing, its full text (``text=False``: a preview), a suggested page
    named from its key terms, and the ``k`` most related existing wiki sections with the
    evidence -- ``shared_terms`` and a TF-IDF ``score`` (:mod:`episteme.compile.keyterms`).  Reads the
    wiki's pages and SQLite only (no embedder, no Chroma) unless ``semantic``, which adds the
    wiki-section search's hits (``similarity``).  Writes nothing."""
    info = load_paper(settings, paper_id)
    wiki = settings.wiki
    writable, skipped = info.writable()
    if only is not None:
        writable = select_sections(writable, only)
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
    for s in writable:
        title = clean_title(s.title)
        key = space.key_terms(f"p:{s.id}", 20)
        related: dict[str, dict[str, Any]] = {}
        for wk, score, shared in space.nearest(f"p:{s.id}", wiki_keys, k):
            sid = wk[2:]
            w = wiki_secs[sid]
            related[sid] = {"id": sid, "page": w["page"], "title": w["title"],
                            "description": w["description"], "sources": w["sources"],
                            "score": score, "shared_terms": shared, "match": "terms"}
        if finder is not None:
            for r in finder.search(f"{title}. {s.text[:2000]}", k=k):
                if r["id"] in related:
                    related[r["id"]]["similarity"] = r.get("similarity")
                    related[r["id"]]["match"] = "terms+search"
                elif r["id"] in wiki_secs:
                    score, shared = space.compare(f"p:{s.id}", f"w:{r['id']}")
                    w = wiki_secs[r["id"]]
                    related[r["id"]] = {"id": r["id"], "page": w["page"], "title": w["title"],
                                        "description": w["description"], "sources": w["sources"],
                                        "score": score, "shared_terms": shared,
                                        "similarity": r.get("similarity"), "match": "search"}
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
        item: dict[str, Any] = {
            "section_id": s.id, "name": s.id.split("#", 1)[-1], "label": s.label,
            "title": s.title, "kind": s.kind, "pages": s.pages_label, "chars": len(s.text),
            "key_terms": key[:8], "suggested_page": suggested,
            **({} if names_topic or not alt or is_generic(s)
               else {"topic_page": f"{slugify(alt, max_len=60)}.md"}),
            "related": sorted(related.values(), key=lambda r: -(r["score"] or 0)),
        }
        if text:
            item["text"] = s.text
        else:
            item["preview"] = " ".join(s.text.split())[:300]
        sections.append(item)
    return {
        "paper": paper_id,
        "title": info.title,
        "short_title": short_title(info.title),
        "authors": info.authors,
        "paper_page": paper_page,
        "paper_page_exists": (wiki / paper_page).is_file(),
        "already_written": paper_already_written(wiki, paper_id),
        "wiki_sections": len(wiki_secs),
        "sections": sections,
        "skipped": skipped,
    }
