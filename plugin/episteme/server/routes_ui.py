"""The web UI's files (``/``, ``/docs``, ``/static``, the icon) and ``GET /health``."""

import time
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from .. import __version__
from .services import Services

STATIC_DIR = Path(__file__).with_name("static")


def mount_static(app) -> None:
    """Serve ``static/`` (the UI's scripts and styles) under ``/static``."""
    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")


def router(services: Services) -> APIRouter:
    """The UI pages and the health report over ``services``."""
    r = APIRouter()
    settings = services.settings

    @r.get("/", include_in_schema=False)
    def index():
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    @r.get("/docs", include_in_schema=False)
    def docs():
        return FileResponse(STATIC_DIR / "docs.html", media_type="text/html")

    @r.get("/favicon.ico", include_in_schema=False)
    def favicon():
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    @r.get("/health", summary="Liveness and what is loaded")
    def health() -> dict:
        from ..llm.client import llm_mode, model_label
        from ..stores.embedding import embedder_loaded

        return {
            "status": "ok",
            "version": __version__,
            "wiki": str(settings.wiki),
            "auth": bool(services.token),
            "warm": {
                "embedder": embedder_loaded(),
                "query_engine": services.engine_loaded,
            },
            "llm_configured": llm_mode(settings) == "claude",
            "llm_model": model_label(settings) if llm_mode(settings) == "claude" else None,
            "jobs": services.jobs.counts(),
            "limits": {"max_pdf_bytes": settings.max_pdf_bytes, "max_pages": settings.max_pages},
            "uptime_s": round(time.time() - services.started, 1),
        }

    return r
