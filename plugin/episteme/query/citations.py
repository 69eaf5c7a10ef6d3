"""Citations between ingested papers: each paper's reference list resolved against the others.

A wiki of papers is a small citation network: the Transformer paper cites Bahdanau et al., BERT
cites the Transformer, ViT cites both.  This module reads every stored paper's reference list
(the sections the splitter marks ``references``, parsed by :mod:`episteme.pdf.references`) and
links an entry to an ingested paper when the entry names it, by the strongest evidence first:

1. the same arXiv id (version ignored) or DOI;
2. the paper's whole title printed in the entry (compared folded: case, accents, spacing,
   hyphens and punctuation ignored, so "Pre-training" = "Pretraining" and a title broken at a
   line end still matches);
3. for a short title (under :data:`SHORT_TITLE` folded characters, "Deep Boltzmann machines"),
   the title *and* the paper's first author's surname *and* its year.

Precision first: an author and a year alone never link (Goodfellow et al. 2013 is "Maxout
networks", not the GAN paper), and a title that is only a prefix of a longer one is no match
("CiteSeer" is not "CiteSee").  Everything is derived from the store on demand — nothing is
saved — so a paper ingested later is linked to the papers that cited it the next time it is
asked.  Measured by ``benchmarks/bench_citations.py`` against a hand-labelled matrix.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from ..pdf.references import Reference, fold, parse_references

#: folded title length under which a title match also needs the first author and the year
SHORT_TITLE = 24


@dataclass(frozen=True)
class CitationLink:
    """``citing`` lists ``cited`` in its references; ``how`` names the evidence."""

    citing: str
    cited: str
    how: str  # "arxiv" | "doi" | "title" | "title+author+year"
    entry: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class PaperCitations:
    """One paper's place in the wiki's citation network."""

    paper: str
    title: str | None
    year: int | None
    references: int
    cites: list[str] = field(default_factory=list)
    cited_by: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class CitationGraph:
    """Every ingested paper with what it cites and what cites it, and the links themselves."""

    papers: dict[str, PaperCitations]
    links: list[CitationLink]
    entries: dict[str, list[Reference]]

    def most_cited(self, limit: int = 10) -> list[dict]:
        ranked = sorted(self.papers.values(), key=lambda p: (-len(p.cited_by), p.paper))
        return [{"paper": p.paper, "title": p.title, "cited_by": len(p.cited_by)}
                for p in ranked[:limit] if p.cited_by]

    def reading_list(self, paper: str) -> list[dict]:
        """The entries of ``paper``'s reference list that are not ingested papers."""
        linked = {lk.entry for lk in self.links if lk.citing == paper}
        return [r.to_dict() for r in self.entries.get(paper, []) if r.raw not in linked]

    def to_dict(self, *, paper: str | None = None, limit: int = 10) -> dict:
        papers = [p.to_dict() for p in self.papers.values() if paper in (None, p.paper)]
        links = [lk.to_dict() for lk in self.links if paper in (None, lk.citing, lk.cited)]
        return {"papers": papers, "links": links, "most_cited": self.most_cited(limit)}


def _surname(author: str) -> str:
    parts = re.sub(r"[*†‡§¶\d,]+", " ", author or "").split()
    return fold(parts[-1]) if parts else ""


def _year(paper: dict) -> int | None:
    meta = paper.get("meta") or {}
    y = meta.get("year")
    try:
        return int(y) if y else None
    except (TypeError, ValueError):
        return None


def _base_arxiv(value: str | None) -> str | None:
    m = re.search(r"(\d{4}\.\d{4,5})", value or "")
    return m.group(1) if m else None


def match_entry(entry: Reference, paper: dict) -> str | None:
    """How ``entry`` names the stored ``paper`` (a dict of ``Store.papers()``), or None."""
    meta = paper.get("meta") or {}
    arxiv = _base_arxiv(meta.get("arxiv") or meta.get("arxiv_id"))
    if arxiv and arxiv == _base_arxiv(entry.arxiv or ""):
        return "arxiv"
    doi = (meta.get("doi") or "").lower().rstrip(".")
    if doi and entry.doi and entry.doi.lower().rstrip(".") == doi:
        return "doi"
    title = fold(paper.get("title") or "")
    if len(title) < 8:
        return None
    raw = fold(entry.raw)
    if title not in raw:
        return None
    if len(title) >= SHORT_TITLE:
        return "title"
    authors = paper.get("authors") or []
    surname = _surname(authors[0]) if authors else ""
    year = _year(paper)
    if surname and surname in raw and year and entry.year == year:
        return "title+author+year"
    return None


def references_text(sections: list[dict]) -> str:
    """The text of a paper's reference-list sections (``Store.sections`` rows), in order."""
    return "\n".join(s.get("section_text") or s.get("text") or "" for s in sections
                     if s.get("kind") == "references")


def build_graph(papers: list[dict], sections_by_paper: dict[str, list[dict]]) -> CitationGraph:
    """Parse each paper's references and resolve them against every other paper."""
    entries = {pid: parse_references(references_text(secs))
               for pid, secs in sections_by_paper.items()}
    out = {p["id"]: PaperCitations(paper=p["id"], title=p.get("title"), year=_year(p),
                                   references=len(entries.get(p["id"], [])))
           for p in papers}
    links: list[CitationLink] = []
    for citing, refs in entries.items():
        for target in papers:
            if target["id"] == citing:
                continue
            for entry in refs:
                how = match_entry(entry, target)
                if how:
                    links.append(CitationLink(citing, target["id"], how, entry.raw))
                    break
    for lk in links:
        if lk.citing in out and lk.cited not in out[lk.citing].cites:
            out[lk.citing].cites.append(lk.cited)
        if lk.cited in out and lk.citing not in out[lk.cited].cited_by:
            out[lk.cited].cited_by.append(lk.citing)
    for pc in out.values():
        pc.cites.sort()
        pc.cited_by.sort()
    return CitationGraph(papers=out, links=links, entries=entries)


def citation_graph(store) -> CitationGraph:
    """The citation network of every paper in an open :class:`~episteme.stores.sqlite.Store`."""
    papers = store.papers()
    by_paper: dict[str, list[dict]] = {}
    for s in store.sections():
        if s.get("kind") == "references":
            by_paper.setdefault(s["paper_id"], []).append(s)
    for p in papers:
        by_paper.setdefault(p["id"], [])
    return build_graph(papers, by_paper)
