"""The library and the map: ``GET /library``, ``GET /citations``, ``GET /map``, and a paper's
removal and re-ingest from the library (``DELETE /papers/{paper}``,
``POST /papers/{paper}/reingest``), both run as jobs on the writer queue like an upload."""

import os
import shutil
import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from ..errors import NotFoundError
from .jobs import Job
from .libraryview import CitationCache, citations, library, wiki_map
from .routes_ingest import job_reply
from .services import Services


def router(services: Services) -> APIRouter:
    """The library, citation and map routes over ``services``."""
    r = APIRouter()
    settings = services.settings
    cache = CitationCache()

    @r.get("/library", summary="Every ingested paper with its metadata, wiki sections and citation counts")
    def library_route() -> dict:
        """``{"papers": [{paper, title, authors, year, venue, arxiv_id, doi, pages,
        ingested_at, wiki_sections, wiki_page, cites, cited_by}], "count"}``:
        ``wiki_sections`` counts the sections of ``index.json`` that list the paper as a source;
        ``cites``/``cited_by`` count the other ingested papers it cites / that cite it."""
        return library(settings, cache)

    @r.get("/citations", summary="Which ingested papers cite each other (`episteme citations`)")
    def citations_route(
        paper: Annotated[str | None, Query(description="only this paper's links, plus its reading list")] = None,
        limit: Annotated[int, Query(ge=1, le=1000, description="most-cited papers listed")] = 10,
    ) -> dict:
        """``{"papers": [{paper, title, year, references, cites, cited_by}], "links":
        [{citing, cited, how, entry}], "most_cited", "pages": {paper: wiki page}}``; with
        ``paper``: its ``reading_list`` too (404 when it is not ingested)."""
        return citations(settings, cache, paper, limit)

    @r.get("/map", summary="The whole wiki's link graph, for the map view")
    def map_route() -> dict:
        """``{"nodes": [{id, title, type, tags, sources, paper, in, out}], "edges": [[i, j]],
        "count"}``: every page, and every resolved link as a pair of node indexes."""
        return wiki_map(settings.wiki)

    run_job = job_reply  # the same reply as POST /ingest's (routes_ingest.job_reply)

    def known(paper: str) -> str:
        names = {p["id"] for p in cache.papers_and_graph(settings)[0]}
        if paper not in names:
            raise NotFoundError(f"no ingested paper {paper!r}")
        return paper

    @r.delete("/papers/{paper}", summary="Remove a paper (`episteme remove`)")
    async def remove_route(
        paper: str,
        wait: Annotated[bool, Query(description="false: return the job at once (202)")] = True,
    ):
        """Un-ingest the paper: its SQLite rows, Chroma vectors and raw/ file, all or nothing
        (``episteme remove``).  The wiki pages are kept; ``cited_by_sections`` lists the sections
        that cite it.  404 when no such paper is ingested."""
        from ..ingest.pipeline import remove_paper

        name = known(paper)

        def work(job: Job) -> dict:
            out = remove_paper(settings, name)
            services.after_write(job)
            return out

        return await run_job(services.jobs.submit("remove", name, work), wait)

    @r.post("/papers/{paper}/reingest", summary="Ingest a paper again from its raw/ file")
    async def reingest_route(
        paper: str,
        wait: Annotated[bool, Query(description="false: return the job at once (202)")] = True,
        write: Annotated[bool, Query(description="false: only index (raw/, SQLite, Chroma)")] = True,
    ):
        """The stored PDF split, indexed and written again (``ingest --force --write`` on
        ``raw/<paper>``), as a job like an upload's.  404 when no such paper is ingested."""
        from ..pdf.render import paper_pdf

        name = known(paper)
        src = paper_pdf(settings.wiki, name)  # path-checked: only files in raw/
        folder = settings.data_dir / "uploads"
        folder.mkdir(parents=True, exist_ok=True)
        upload = folder / f"{os.getpid()}.{uuid.uuid4().hex}.pdf"
        shutil.copyfile(src, upload)  # run_ingest consumes (deletes) its upload
        job = services.jobs.submit(
            "ingest", name,
            lambda job: services.run_ingest(job, upload, name, force=True, write=write,
                                           force_write=True),
            file=name)
        return await run_job(job, wait)

    return r
