"""The wiki's pages (``/wiki``, one page, its ``lint --claims`` findings) and ``/graph``."""

import threading

from fastapi import APIRouter

from ..errors import EpistemeError, UsageError
from .services import Services
from .wikiview import list_pages, page_claims, page_file, read_wiki_page


def router(services: Services) -> APIRouter:
    """The wiki and graph routes over ``services``."""
    r = APIRouter()
    settings = services.settings
    claims_lock = threading.Lock()

    @r.get("/wiki", summary="All pages with title, type and tags")
    def wiki_pages() -> dict:
        pages = list_pages(settings.wiki)
        return {"pages": pages, "count": len(pages)}

    def _claims_tracer():
        try:
            return services.engine().tracer
        except (EpistemeError, ImportError):
            return None  # the checker opens its own

    @r.get("/wiki/{page:path}/claims", summary="lint --claims findings of one page (cached)")
    def wiki_page_claims(page: str) -> dict:
        """``{"page", "findings": [{rule, severity, line, section_id, claim, verdict, reason,
        evidence: {paper, section, page, quote}}], "summary", "sections_verified",
        "sections_cached", "reason"}``: ``lint --claims`` for this page only, from the cache
        when its sections are unchanged.  ``reason`` says why nothing could be checked (no
        papers ingested); that is an empty list, not an error."""
        if page_file(settings.wiki, page) is None and page_file(settings.wiki, page + "/claims"):
            return read_wiki_page(settings.wiki, page + "/claims")  # a page named "claims"
        return page_claims(settings, page, tracer=_claims_tracer(), lock=claims_lock)

    @r.get("/wiki/{page:path}", summary="One page: markdown, sections, resolved links")
    def wiki_page(page: str) -> dict:
        """A page by path (``concepts/x.md``, ``.md`` optional) or by the name a ``[[link]]``
        would use; ``links`` maps each link target to the page it resolves to (or null), as
        ``episteme graph`` resolves it from this page; ``view`` is the text as the UI renders
        it, every link found by wiki.links and replaced by a token naming its record in
        ``view.links`` (``{raw, kind, target, anchor, page, display, plain, dangling}``)."""
        return read_wiki_page(settings.wiki, page)

    @r.get("/graph", summary="graph_query's JSON (modes as in `episteme graph`)")
    def graph(
        mode: str = "stats",
        seed: str | None = None,
        depth: int = 1,
        src: str | None = None,
        dst: str | None = None,
        tag: str | None = None,
        query: str | None = None,
        sort: str | None = None,
        limit: int | None = None,
        tier: str | None = None,
        format: str = "json",  # noqa: A002 - the query parameter's public name
    ):
        from fastapi.responses import PlainTextResponse

        from ..graph.run import graph_query

        if format not in ("json", "mermaid"):
            raise UsageError("format must be json or mermaid")
        result = graph_query(settings.wiki, mode, seed=seed, depth=depth, src=src, dst=dst,
                             tag=tag, query=query, sort=sort, limit=limit, tier=tier)
        if format == "mermaid":  # the diagram, as `episteme graph --format mermaid` prints it
            from ..graph.format import render_mermaid

            return PlainTextResponse(render_mermaid(mode, result), media_type="text/plain")
        return result

    return r
