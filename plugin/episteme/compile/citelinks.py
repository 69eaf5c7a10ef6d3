"""Citations on the paper pages: what each paper cites in this wiki, what cites it, what it reads.

:mod:`episteme.query.citations` finds, from the stored reference lists, which ingested papers
cite each other.  This module writes that into the wiki, where the graph, the UI and Obsidian see
it: each paper page gets one ``Citations`` section —

* ``**Cites (in this wiki):**`` and ``**Cited by (in this wiki):**`` lines of ``[[links]]`` to
  the other papers' pages (so ``graph --mode neighbors`` follows citations), and
* a reading list: the paper's reference entries that are not ingested papers, one line each with
  its year and arXiv id / DOI where printed;

and, where the wiki's schema defines them, ``cites`` / ``cited_by`` frontmatter fields (paper
ids).  Only papers that have a page are linked.  It runs after every paper the writer writes
(that paper and every paper it cites or that cites it), and as ``episteme citations --write``
for the whole wiki.  A section whose text would not change is not rewritten, so a second run
writes nothing.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..wiki.edit import WikiWriter, load_page, raw_sources
from ..wiki.files import iter_page_files
from .naming import field_defined, short_title, wikilink

CITATIONS_TITLE = "Citations"
#: reading-list entries listed on a page (the rest are counted)
MAX_READING = 200


def paper_pages(wiki: Path) -> dict[str, str]:
    """Paper id -> the page (``type: paper``) that summarises it, by ``paper_file`` or its one source."""
    out: dict[str, str] = {}
    for rel in iter_page_files(wiki):
        if not rel.startswith("papers/"):
            continue
        try:
            _, _, fm = load_page(wiki, rel)
        except Exception:  # noqa: BLE001 - an unreadable page is lint's to report
            continue
        if str(fm.get("type") or "") != "paper":
            continue
        pf = str(fm.get("paper_file") or "")
        srcs = [str(s) for s in (fm.get("sources") or [])]
        pid = pf[len("raw/"):] if pf.startswith("raw/") else (srcs[0] if len(srcs) == 1 else "")
        if pid and pid not in out:
            out[pid] = rel
    return out


def _label(paper: dict) -> str:
    authors = paper.get("authors") or []
    first = str(authors[0]).split()[-1] if authors else ""
    who = f"{first} et al." if len(authors) > 2 else " and ".join(str(a).split()[-1] for a in authors)
    year = (paper.get("meta") or {}).get("year")
    tail = ", ".join(x for x in (who, str(year) if year else "") if x)
    title = short_title(str(paper.get("title") or paper.get("id") or ""))
    return f"{title} ({tail})" if tail else title


def citations_body(paper_id: str, graph, pages: dict[str, str], papers: dict[str, dict]) -> str:
    """The ``Citations`` section's text for one paper (links only to papers with pages)."""
    pc = graph.papers[paper_id]
    lines: list[str] = []
    cites = [p for p in pc.cites if p in pages]
    cited_by = [p for p in pc.cited_by if p in pages]
    if cites:
        lines.append("**Cites (in this wiki):** " + " · ".join(
            wikilink(pages[p], _label(papers[p])) for p in cites))
    if cited_by:
        lines.append("**Cited by (in this wiki):** " + " · ".join(
            wikilink(pages[p], _label(papers[p])) for p in cited_by))
    reading = graph.reading_list(paper_id)
    if reading:
        if lines:
            lines.append("")
        lines.append(f"Reading list, the {len(reading)} references not in this wiki:")
        lines.append("")
        for r in reading[:MAX_READING]:
            ids = ", ".join(x for x in (r.get("arxiv") and f"arXiv:{r['arxiv']}",
                                        r.get("doi") and f"doi:{r['doi']}") if x)
            text = " ".join((r.get("title") or r["raw"][:160]).split())
            tail = "; ".join(x for x in (str(r["year"]) if r.get("year") else "", ids) if x)
            lines.append(f"- **Reference:** {text}" + (f" ({tail})" if tail else ""))
        if len(reading) > MAX_READING:
            lines.append(f"- and {len(reading) - MAX_READING} more")
    return "\n".join(lines).strip()


def update_citation_sections(settings, *, papers: Iterable[str] | None = None,
                             today: _dt.date | None = None, store=None) -> dict[str, Any]:
    """Write the ``Citations`` section (and ``cites``/``cited_by`` fields) of the paper pages of
    ``papers`` and of every paper they cite or are cited by (all paper pages when None)."""
    from ..query.citations import citation_graph
    from ..stores.sqlite import open_store
    from ..wiki.sections import parse_page

    wiki = Path(settings.wiki)
    if store is None:
        with open_store(settings, readonly=True) as st:
            graph = citation_graph(st)
            stored = {p["id"]: p for p in st.papers()}
    else:
        graph = citation_graph(store)
        stored = {p["id"]: p for p in store.papers()}
    pages = {pid: rel for pid, rel in paper_pages(wiki).items() if pid in stored}
    if papers is None:
        targets = set(pages)
    else:
        targets = set()
        for pid in papers:
            if pid in graph.papers:
                targets |= {pid, *graph.papers[pid].cites, *graph.papers[pid].cited_by}
    targets &= set(pages)
    fields_ok = field_defined(wiki, "cites") and field_defined(wiki, "cited_by")
    changes: list[tuple[str, str, str | None, str, list[str], dict]] = []
    for pid in sorted(targets):
        rel = pages[pid]
        body = citations_body(pid, graph, pages, stored)
        pc = graph.papers[pid]
        fields = {"cites": [p for p in pc.cites if p in pages],
                  "cited_by": [p for p in pc.cited_by if p in pages]} if fields_ok else {}
        sources = [pid]  # the section reads the paper's own reference list (and others' of it)
        text = (wiki / rel).read_text(encoding="utf-8")
        _, _, fm = load_page(wiki, rel)
        current = next((s for s in parse_page(text, strict=False).sections
                        if s.title == CITATIONS_TITLE), None)
        same_fields = all((fm.get(k) or []) == v for k, v in fields.items())
        if current is not None and current.body.strip() == body and same_fields \
                and sorted(current.sources) == sorted(sources):
            continue
        if current is None and not body:
            continue  # nothing to say: no section (an empty one would only be noise)
        changes.append((pid, rel, current.id if current else None, body, sources, fields))
    out: dict[str, Any] = {"updated": [], "created": [], "pages": []}
    if not changes:
        return out
    with WikiWriter(wiki, op="citations", subject=", ".join(c[0] for c in changes),
                    known_sources=raw_sources(wiki), today=today) as w:
        for pid, rel, sid, body, sources, fields in changes:
            title = short_title(str(stored[pid].get("title") or pid))
            desc = f"{title}: the papers of this wiki it cites and that cite it, and its reading list"
            if fields:
                w.ensure_page(rel, title=str(stored[pid].get("title") or pid), page_type="paper",
                              page_fields=fields)
            body = body or "- **Reference:** none read from this paper's reference list"
            if sid:
                w.update_section(rel, sid, title=CITATIONS_TITLE, description=desc, body=body,
                                 sources=sources, replace_sources=True)
                out["updated"].append(sid)
            else:
                res = w.create_section(rel, title=CITATIONS_TITLE, description=desc, body=body,
                                       sources=sources)
                out["created"].append(res.section_id)
            if rel not in out["pages"]:
                out["pages"].append(rel)
    return out
