"""The library, the citations and the whole-wiki map as the UI reads them.

Three reads over what already exists, nothing stored:

- :func:`citations` is :func:`episteme.query.citations.citation_graph` over the SQLite store
  (what ``episteme citations`` prints), plus the wiki page of each paper, so the UI can turn a
  paper id into a link;
- :func:`library` is every stored paper with its metadata, how many wiki sections draw on it
  (``index.json``'s sources) and its citation counts;
- :func:`wiki_map` is the whole link graph of the wiki (:class:`episteme.graph.core.WikiGraph`,
  the graph ``episteme graph`` and ``lint`` build), every page as a node with its type, tags and
  sources, so the UI can lay it out once and filter it without asking again.

A paper's wiki page is the page whose frontmatter names its file (``paper_file: raw/<id>``, as
the writers put it), or else the one ``type: paper`` page whose only source is the paper.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from ..errors import NotFoundError


def _frontmatter_tags(props: dict) -> list[str]:
    from ..wiki.frontmatter import frontmatter_tags

    return [str(t) for t in frontmatter_tags(props)]


def _sources(props: dict) -> list[str]:
    src = props.get("sources")
    if isinstance(src, list):
        return [str(s) for s in src if isinstance(s, str | int | float)]
    return [src] if isinstance(src, str) else []


def paper_page_of(pages) -> dict[str, str]:
    """``{paper id: page id}`` for the scanned ``pages`` (see the module docstring)."""
    by_file: dict[str, str] = {}
    by_source: dict[str, list[str]] = {}
    for p in pages:
        props = p.props or {}
        if str(props.get("type") or "") != "paper":
            continue
        pf = props.get("paper_file")
        if isinstance(pf, str) and pf.startswith("raw/"):
            by_file.setdefault(pf[4:], p.id)
        src = _sources(props)
        if len(src) == 1:
            by_source.setdefault(src[0], []).append(p.id)
    out = {k: v[0] for k, v in by_source.items() if len(v) == 1}
    out.update(by_file)
    return out


def _scan(wiki: Path):
    from ..wiki.scan import scan_wiki

    return scan_wiki(wiki) if wiki.is_dir() else []


class CitationCache:
    """The last citation graph of one store, kept while its papers are the same ones.

    Resolving every reference entry against every paper is quadratic in the papers; the UI asks
    for it on every library view, map and first answer, while it changes only when a paper is
    ingested, re-ingested or removed.  The key is each paper's id, content hash and ingest time,
    read from the store on every call (one small query), so a change made by another process
    (the CLI beside the server) is seen at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._graph = None

    def papers_and_graph(self, settings):
        """``(papers, CitationGraph)`` of the store, or ``([], None)`` when nothing is ingested."""
        from ..query.citations import citation_graph
        from ..stores.sqlite import open_store

        if not Path(settings.sqlite_path).is_file():
            return [], None
        with open_store(settings, readonly=True) as st:
            papers = st.papers()
            key = (str(settings.sqlite_path),
                   tuple((p["id"], p.get("sha256"), p.get("ingested_at")) for p in papers))
            with self._lock:
                if key != self._key:
                    self._graph, self._key = citation_graph(st), key
                return papers, self._graph


def citations(settings, cache: CitationCache, paper: str | None = None, limit: int = 10) -> dict:
    """``episteme citations``' JSON (``papers`` with ``cites``/``cited_by``, ``links``,
    ``most_cited``) and ``pages``: each paper's wiki page (absent when it has none); with
    ``paper``, only its links and its ``reading_list`` (references not in the wiki)."""
    _, graph = cache.papers_and_graph(settings)
    if graph is None:
        if paper:
            raise NotFoundError(f"no ingested paper {paper!r}")
        return {"papers": [], "links": [], "most_cited": [], "pages": {}}
    if paper and paper not in graph.papers:
        raise NotFoundError(f"no ingested paper {paper!r}")
    out = graph.to_dict(paper=paper, limit=limit)
    out["pages"] = paper_page_of(_scan(settings.wiki))
    if paper:
        out["reading_list"] = graph.reading_list(paper)
    return out


def _section_counts(wiki: Path) -> dict[str, int]:
    """How many wiki sections list each paper among their sources (``index.json``)."""
    try:
        index = json.loads((wiki / "index.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    counts: dict[str, int] = {}
    if not isinstance(index, dict):
        return counts
    for sources in index.values():
        for s in set(sources if isinstance(sources, list) else []):
            if isinstance(s, str):
                counts[s] = counts.get(s, 0) + 1
    return counts


def library(settings, cache: CitationCache) -> dict:
    """Every ingested paper: ``{paper, title, authors, year, venue, arxiv_id, doi, pages,
    ingested_at, wiki_sections, wiki_page, cites, cited_by}`` (the last two are counts; the
    ids are in ``GET /citations``)."""
    papers, graph = cache.papers_and_graph(settings)
    sections = _section_counts(settings.wiki)
    pages = paper_page_of(_scan(settings.wiki)) if papers else {}
    out = []
    for p in papers:
        meta = p.get("meta") or {}
        pc = graph.papers.get(p["id"]) if graph else None
        out.append({
            "paper": p["id"],
            "title": p.get("title"),
            "authors": p.get("authors") or [],
            "year": meta.get("year"),
            "venue": meta.get("venue"),
            "arxiv_id": meta.get("arxiv_id") or meta.get("arxiv"),
            "doi": meta.get("doi"),
            "pages": p.get("pages"),
            "ingested_at": p.get("ingested_at"),
            "wiki_sections": sections.get(p["id"], 0),
            "wiki_page": pages.get(p["id"]),
            "cites": len(pc.cites) if pc else 0,
            "cited_by": len(pc.cited_by) if pc else 0,
        })
    return {"papers": out, "count": len(out)}


def wiki_map(wiki: Path) -> dict:
    """The whole wiki as one graph: ``nodes`` ``[{id, title, type, tags, sources, paper, in,
    out}]`` (``paper``: the paper id a paper page stands for) and ``edges`` ``[[i, j]]`` (node
    indexes: page i links to page j; self-links dropped)."""
    from ..graph.core import WikiGraph

    g = WikiGraph.build(wiki, keep_links=False)
    papers = {page: pid for pid, page in paper_page_of(g.pages).items()}
    edges = sorted({(i, j) for i, outs in enumerate(g.out_edges) for j in outs if i != j})
    ins = [0] * len(g.pages)
    outs = [0] * len(g.pages)
    for i, j in edges:
        outs[i] += 1
        ins[j] += 1
    nodes = []
    for i, p in enumerate(g.pages):
        t = p.props.get("type")
        nodes.append({
            "id": p.id,
            "title": p.title,
            "type": None if t is None else str(t),
            "tags": _frontmatter_tags(p.props),
            "sources": _sources(p.props),
            "paper": papers.get(p.id),
            "in": ins[i],
            "out": outs[i],
        })
    return {"nodes": nodes, "edges": [list(e) for e in edges], "count": len(nodes)}
