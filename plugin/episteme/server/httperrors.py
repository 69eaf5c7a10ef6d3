"""One error mapping for every route and job: an exception's type decides its HTTP status, and
the body is always ``{"error": message}`` (plus ``details`` when the error carries them), never
a stack trace.

Why one module: the routes answer errors through FastAPI's exception handlers and the ingest
jobs record them in ``/jobs/{id}``; both must say the same thing for the same failure.
"""

import sys
import traceback
from typing import Any

from ..errors import EpistemeError, MissingDependencyError, NotFoundError, UsageError

INTERNAL_ERROR = "internal error; see the server log"


class JobStopped(EpistemeError):
    """A job stopped by a cancel or its timeout."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class BodyTooLarge(Exception):
    """Raised into the app when a request body passes its limit while streaming in;
    :class:`.safety.BodyLimit` answers the 413 (not an error to log)."""


def status_for(err: BaseException) -> int:
    """The HTTP status for an error, from its type (never from parsing its message)."""
    from ..pdf.split import PdfError

    if isinstance(err, PdfError):
        return 413 if err.kind == "too_large" else 422
    try:
        from ..llm.client import LLMError
    except Exception:  # pragma: no cover - llm is part of the package
        LLMError = ()  # type: ignore[assignment]
    if LLMError and isinstance(err, LLMError):
        return 503 if getattr(err, "status", None) in (None, 429, 529) else 502
    if isinstance(err, JobStopped):
        return 409 if err.kind == "cancelled" else 504
    if isinstance(err, NotFoundError):
        return 404
    if isinstance(err, UsageError):
        return 400
    if isinstance(err, MissingDependencyError):
        return 503
    if isinstance(err, EpistemeError):
        return 422
    return 500


def error_body(err: BaseException) -> dict:
    """``{"error": message, "details"?: ...}`` for an error we raised; a generic line otherwise
    (an unexpected exception's text may hold paths or paper text, so it goes to the log only)."""
    if isinstance(err, EpistemeError):
        body: dict[str, Any] = {"error": err.message}
        if err.details:
            body["details"] = err.details
        return body
    return {"error": INTERNAL_ERROR}


def install_error_handlers(app) -> None:
    """Register the handlers that turn every error into ``{"error": message}``: ours by type,
    FastAPI's validation errors as one readable line, Starlette's 404/405 with the method and
    path, anything else as 500 with the traceback on stderr."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(EpistemeError)
    async def _episteme_error(request: Request, exc: EpistemeError):
        return JSONResponse(error_body(exc), status_code=status_for(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        errs = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errs):
            return JSONResponse({"error": "malformed JSON in the request body"}, status_code=400)
        parts = []
        for e in errs[:5]:
            loc = ".".join(str(x) for x in e.get("loc", ()) if x not in ("body",)) or "request"
            parts.append(f"{loc}: {e.get('msg', 'invalid')}")
        return JSONResponse({"error": "; ".join(parts) or "invalid request"}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        msg = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404 and msg == "Not Found":
            msg = f"no such endpoint: {request.method} {request.url.path}"
        elif exc.status_code == 405:
            msg = f"method {request.method} is not allowed on {request.url.path}"
        return JSONResponse({"error": msg}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        if isinstance(exc, BodyTooLarge):  # BodyLimit replaces this reply with its 413
            return JSONResponse({"error": "request body too large"}, status_code=413)
        print(f"episteme serve: {request.method} {request.url.path} failed:", file=sys.stderr)
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        return JSONResponse({"error": INTERNAL_ERROR}, status_code=500)
