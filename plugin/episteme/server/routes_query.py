"""``POST /chat`` and ``POST /trace``: the warm query engine of :mod:`episteme.query.chat`, with
highlight boxes for every source and, for chat, the UI's view of the answer."""

from fastapi import APIRouter

from ..errors import UsageError
from .schemas import ChatRequest, TraceRequest
from .services import Services, with_boxes
from .wikiview import answer_view, section_pages


def router(services: Services) -> APIRouter:
    """The question-answering routes over ``services``."""
    r = APIRouter()
    settings = services.settings

    @r.post("/chat", summary="Answer from the wiki and trace the answer to source passages")
    def chat(body: ChatRequest) -> dict:
        """``{"answer", "wiki_sections_used", "sources": [{paper, section, passage, similarity,
        page, claim}], "unsupported_claims", "claims", "mode"}``: the answer is written from the
        retrieved wiki sections, then each claim is traced to the papers' passages.  The body is
        ``{"query": ...}``; ``{"question": ...}`` (the MCP tool's name) is accepted too."""
        q = body.query.strip()
        if not q:
            raise UsageError("query is empty")
        result = services.engine().chat(q)
        with_boxes(settings, result)
        # for the UI: where each cited wiki section lives (from index.md, no second pipeline)
        result["wiki_sections"] = section_pages(settings.wiki, result.get("wiki_sections_used") or [])
        result["answer_view"] = answer_view(settings.wiki, result.get("answer") or "")
        return result

    @r.post("/trace", summary="Trace an answer's claims to source passages (with boxes)")
    def trace(body: TraceRequest) -> dict:
        """``episteme trace``'s JSON: ``claims`` (each with ``verdict``, ``reason``, ``evidence``
        and ``passages`` best first), ``sources`` (each with ``quote`` and ``boxes: [{page,
        bbox}]`` in PDF points), ``unsupported_claims``, ``contradicted_claims``, ``scope``."""
        if body.sections and body.papers:
            raise UsageError("give sections or papers, not both")
        result = services.engine().trace(body.answer, sections=body.sections or None,
                                         papers=body.papers or None, top=body.top)
        return with_boxes(settings, result)

    return r
