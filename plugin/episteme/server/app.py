"""The HTTP API and web UI: ``create_app(settings)`` builds a FastAPI app over one wiki.

Why it looks like this:

- **Same code paths as the CLI.**  ``POST /ingest`` runs :func:`episteme.ingest.pipeline.ingest_paper`
  and then the same wiki-writer call as ``episteme ingest --write``; ``POST /chat`` calls the
  query engine of :mod:`episteme.query.chat`; ``GET /graph`` returns
  :func:`episteme.graph.run.graph_query`'s JSON.  Nothing here re-implements a pipeline.
- **Warm.**  The embedder, the Chroma client and the query engine are loaded once (at start-up
  when ``warm=True``) and kept in the app state; every request reuses them.
- **Writers serialized.**  Ingests run as jobs on one worker thread per app (a queue), and that
  worker also holds an in-process lock around the write; inside, the pipeline takes the wiki's
  ``flock`` as always, which keeps other processes out.  ``fsutil.wiki_lock`` is re-entrant per
  *process*, not per thread, so the in-process serialization is what keeps two threads apart.
- **Safe by default.**  Loopback only unless a bearer token is configured; upload bytes are
  checked as a PDF (header/``%%EOF``) and against size and page limits before anything is
  stored; uploaded names go through ``ingest.paper_id_for``; page paths through ``safe_join``;
  every error is ``{"error": message}`` with a meaningful status, never a stack trace.

The parts, one module each: :mod:`.safety` (bind check, browser guard, token, body limit),
:mod:`.httperrors` (the one error mapping), :mod:`.jobs` (the writer queue), :mod:`.services`
(what is kept warm), :mod:`.uploads`, :mod:`.wikiview` (pages as the routes read them),
:mod:`.libraryview` (the library, citations and whole-wiki map),
:mod:`.schemas` (request bodies) and the routes by area (``routes_*``).  This module only
assembles them; the work behind each route lives in the library packages.
"""

import asyncio
import contextlib
import sys

from .. import __version__
from ..errors import MissingDependencyError
from .httperrors import JobStopped, error_body, status_for
from .jobs import Job, JobQueue
from .safety import PUBLIC_PATHS, browser_guard, check_bind, is_loopback
from .services import Services
from .uploads import MAX_UPLOAD_FILES, MULTIPART_SLACK, drop_stale_uploads
from .wikiview import answer_view, list_pages, page_claims, read_wiki_page, section_pages

__all__ = [
    "MAX_UPLOAD_FILES", "MULTIPART_SLACK", "PUBLIC_PATHS", "Job", "JobQueue", "JobStopped",
    "Services", "answer_view", "browser_guard", "check_bind", "create_app", "error_body",
    "is_loopback", "list_pages", "page_claims", "read_wiki_page", "section_pages", "serve",
    "status_for",
]


def create_app(settings, *, token: str | None = None, warm: bool = True,
               write_mode: str | None = None):
    """The FastAPI app for one wiki.  ``token``: require ``Authorization: Bearer <token>`` on
    the API.  ``warm``: load the model and stores at start-up (tests of pure routing skip it)."""
    try:
        from fastapi import FastAPI
    except ImportError as e:
        raise MissingDependencyError(
            f"the server needs fastapi and uvicorn ({e.name} missing); "
            "run pip install 'episteme[server]'"
        ) from e
    from . import (
        routes_ingest,
        routes_library,
        routes_papers,
        routes_query,
        routes_ui,
        routes_wiki,
    )
    from .httperrors import install_error_handlers
    from .safety import BodyLimit, body_limit, make_guard

    services = Services(settings, token=token, write_mode=write_mode)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        drop_stale_uploads(settings)
        if warm:
            await asyncio.to_thread(services.warm)
        yield
        await asyncio.to_thread(services.jobs.shutdown)

    app = FastAPI(
        title="episteme",
        version=__version__,
        description="LLM wiki for arXiv papers: ingest PDFs into a markdown wiki and trace "
        "every answer back to the exact source passages.",
        lifespan=lifespan,
        docs_url=None,  # our own /docs (routes_ui): FastAPI's page loads Swagger UI from a CDN
        redoc_url=None,
    )
    app.state.services = services
    install_error_handlers(app)
    app.middleware("http")(make_guard(services))
    routes_ui.mount_static(app)
    # in this order: it is the order of /openapi.json, and /wiki/{page}/claims must come first
    for area in (routes_ui, routes_ingest, routes_query, routes_papers, routes_library,
                 routes_wiki):
        app.include_router(area.router(services))
    app.add_middleware(BodyLimit,
                       limit_for=lambda method, path: body_limit(services, method, path))
    return app


def serve(settings, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
          write_mode: str | None = None, log_level: str = "info") -> None:
    """Run the app with uvicorn (blocking)."""
    token = (token or "").strip() or None
    check_bind(host, token)
    try:
        import uvicorn
    except ImportError as e:
        raise MissingDependencyError("the server needs uvicorn; run pip install 'episteme[server]'") from e
    app = create_app(settings, token=token, write_mode=write_mode)
    print(f"episteme: serving {settings.wiki} on http://{host}:{port}/ "
          f"({'token required' if token else 'no token, loopback only'})", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False,
                timeout_graceful_shutdown=5)

