"""The writer's inputs: a paper's metadata and sections from SQLite (:class:`PaperInfo`,
:func:`load_paper`), which of them are worth writing, the stored id of a paper named by the
user (:func:`resolve_paper_id`), and what the wiki already holds (the related wiki sections
by embedding, :class:`RelatedFinder`; a page's type; whether a paper was written already).
Read only: nothing here writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import EpistemeError, NotFoundError
from ..paper import PaperSection
from ..wiki.edit import load_page
from .decisions import escape_html, normal_case, sanitize_title

# no wiki text comes from these (objects are quoted from the sections they belong to)
SKIPPED_KINDS = frozenset({"references", "front", "table", "figure", "algorithm", "footnote"})
MIN_SECTION_CHARS = 200  # shorter sections (bare parent headings, stubs) are not written
PAPERS_FOLDER = "papers"


@dataclass
class PaperInfo:
    id: str
    title: str
    authors: list[str]
    sections: list[PaperSection]
    meta: dict = field(default_factory=dict)  # year, venue, arxiv_id, doi (pdfmeta)

    def meta_fields(self) -> dict[str, Any]:
        """The page frontmatter fields the paper page carries besides its authors."""
        return {k: self.meta[k] for k in ("year", "venue", "arxiv_id", "doi", "citation_key")
                if self.meta.get(k)}

    def meta_line(self) -> str | None:
        """"**Published:** venue, year · arXiv:… · doi:…" for the paper page, or None."""
        m = self.meta
        bits = [", ".join(str(x) for x in (m.get("venue"), m.get("year")) if x)]
        bits += [f"arXiv:{m['arxiv_id']}" if m.get("arxiv_id") else "",
                 f"doi:{m['doi']}" if m.get("doi") else ""]
        bits = [b for b in bits if b]
        return f"**Published:** {' · '.join(bits)}" if bits else None

    def writable(self) -> tuple[list[PaperSection], list[dict[str, str]]]:
        """The sections worth writing, and the others with the reason they are skipped."""
        keep: list[PaperSection] = []
        skipped: list[dict[str, str]] = []
        for s in self.sections:
            if s.kind in SKIPPED_KINDS:
                skipped.append({"paper_section": s.id, "title": s.title, "reason": f"{s.kind} section"})
            elif len(s.text.strip()) < MIN_SECTION_CHARS:
                skipped.append({"paper_section": s.id, "title": s.title,
                                "reason": f"too short ({len(s.text.strip())} chars)"})
            else:
                keep.append(s)
        return keep, skipped


def load_paper(settings, paper_id: str) -> PaperInfo:
    """A paper's metadata and sections from SQLite (raises :class:`NotFoundError`)."""
    from ..stores.sqlite import open_store

    with open_store(settings, readonly=True) as store:
        row = store.paper(paper_id)
        if row is None:
            known = ", ".join(p["id"] for p in store.papers()) or "none"
            raise NotFoundError(f"paper {paper_id!r} is not ingested in this wiki (ingested: {known})")
        sections = store.paper_sections(paper_id)
    title = (row.get("title") or "").strip() or Path(paper_id).stem
    # headings as every writer and the plan show them: title case for ALL CAPS, HTML escaped
    acronyms = paper_acronyms(sections)
    sections = [s if s.title == (t := escape_html(normal_case(s.title, acronyms))) else replace(s, title=t)
                for s in sections]
    authors = [escape_html(str(a)) for a in (row.get("authors") or [])]
    return PaperInfo(paper_id, sanitize_title(normal_case(title, acronyms)), authors, sections,
                     dict(row.get("meta") or {}))


_ACRONYM = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]*[A-Z0-9](?![\w-])")


def paper_acronyms(sections: list[PaperSection]) -> set[str]:
    """Words the paper writes in capitals in its prose at least twice ("RNN", "BLEU"): kept
    in capitals when its ALL-CAPS headings are put in title case (:func:`normal_case`)."""
    counts: dict[str, int] = {}
    for s in sections:
        if s.kind in ("references", "front"):
            continue
        for w in _ACRONYM.findall(s.text):
            counts[w] = counts.get(w, 0) + 1
    return {w for w, n in counts.items() if n >= 2}


def resolve_paper_id(settings, paper: str) -> str:
    """``attention.pdf``, ``raw/attention.pdf`` or a path to the PDF → the stored paper id."""
    from ..ingest.pipeline import paper_id_for

    name = Path(str(paper)).name
    if name and not name.startswith(".") and (settings.raw_dir / name).is_file():
        return name  # already a stored id (ids are not a fixed point of paper_id_for)
    pid = paper_id_for(name)
    if not (settings.raw_dir / pid).is_file():
        raise NotFoundError(f"{pid} is not in {settings.raw_dir} (ingest it first)")
    return pid


class RelatedFinder:
    """The top related wiki sections for a piece of text: :mod:`episteme.query.wikisearch`'s
    embedding index over wiki sections (refreshed once per paper), never the whole index."""

    def __init__(self, settings, embedder=None):
        from ..query.wikisearch import WikiSectionIndex

        self._index = WikiSectionIndex(settings, embedder=embedder)
        self.refreshed: dict[str, Any] | None = None

    def refresh(self) -> dict[str, Any]:
        self.refreshed = self._index.refresh()
        return self.refreshed

    def search(self, text: str, k: int = 6, exclude_ids: Iterable[str] = ()) -> list[dict[str, Any]]:
        if self.refreshed is None:
            self.refresh()
        return list(self._index.search(text, k=k, exclude_ids=tuple(exclude_ids)))


def page_type_of(wiki: str | Path, page: str) -> str | None:
    """The ``type`` in a page's frontmatter (``None`` if unreadable or absent)."""
    try:
        _, _, fm = load_page(wiki, page)
    except EpistemeError:
        return None
    value = fm.get("type")
    return str(value) if value else None


def paper_already_written(wiki: str | Path, paper_id: str) -> bool:
    """True when some wiki section already cites ``paper_id`` (``index.json``)."""
    from ..wiki.index import read_index_json

    try:
        return any(paper_id in srcs for srcs in read_index_json(wiki).values())
    except EpistemeError:
        return False
