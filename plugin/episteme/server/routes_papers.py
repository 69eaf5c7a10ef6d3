"""The evidence behind an answer: a paper's pages, page images, highlight boxes, the PDF."""

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse

from .services import Services


def router(services: Services) -> APIRouter:
    """The paper routes over ``services`` (every name checked by :mod:`episteme.pdf.render`)."""
    r = APIRouter()
    settings = services.settings

    @r.get("/papers/{paper}", summary="A paper's pages (size in PDF points) for the viewer")
    def paper_pages(paper: str) -> dict:
        from ..pdf.render import paper_info

        return paper_info(settings.wiki, paper)

    @r.get("/papers/{paper}/pages/{n}.png", summary="A page of a paper as PNG (cached)",
           response_class=FileResponse)
    def page_image(paper: str, n: str, scale: float = 1.5):
        """Rendered with PDFium, cached under ``<wiki>/.episteme/pages/``.  404: no such paper
        in raw/ or page out of range; 400: scale outside 0.25..4."""
        from ..pdf.render import page_png

        path = page_png(settings, paper, n, scale)
        return FileResponse(path, media_type="image/png",
                            headers={"Cache-Control": "private, max-age=3600",
                                     "X-Content-Type-Options": "nosniff"})

    @r.get("/papers/{paper}/boxes", summary="Highlight boxes of a quote on a page")
    def quote_boxes_route(paper: str, quote: Annotated[str, Query(min_length=1, max_length=4000)],
                          page: int | None = None) -> dict:
        """``{"paper", "page", "boxes": [{page, bbox}]}``: where ``quote`` is printed, looked
        for on ``page`` and the next (every page when omitted)."""
        from ..pdf.highlight import quote_boxes
        from ..pdf.render import paper_pdf

        pdf = paper_pdf(settings.wiki, paper)
        return {"paper": pdf.name, "page": page, "boxes": quote_boxes(pdf, page, quote)}

    @r.get("/papers/{paper}/pdf", summary="The PDF itself, from raw/", response_class=FileResponse)
    def paper_file(paper: str):
        """Served inline (open it at a page with ``#page=N``); only files in raw/."""
        from ..pdf.render import paper_pdf

        pdf = paper_pdf(settings.wiki, paper)
        return FileResponse(pdf, media_type="application/pdf", headers={
            "Content-Disposition": f"inline; filename=\"{pdf.name}\"",
            "X-Content-Type-Options": "nosniff",
        })

    return r
