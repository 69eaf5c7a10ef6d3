"""Who may talk to the server: the bind check (no public address without a token), the
browser guard (Host, Origin, Referer and Sec-Fetch-Site checks against DNS rebinding, cross-site
forms and another site's ``<img>``), the bearer token, the security headers of the UI, and the
body limits (every request; uploads apart) enforced while the body streams in.

Why these are middleware, not per-route checks: a route that forgets one is the hole, and the
multipart parser would read a whole oversized body before any route ran.
"""

import hmac
import ipaddress
import sys
import traceback

from ..errors import UsageError
from .httperrors import INTERNAL_ERROR, BodyTooLarge
from .uploads import MAX_UPLOAD_FILES, MULTIPART_SLACK

PUBLIC_PATHS = frozenset({"/", "/health", "/docs", "/openapi.json", "/docs/oauth2-redirect",
                          "/favicon.ico"})
#: the largest body of any request but an upload: the JSON routes take a question of at most
#: 4,000 and an answer of 20,000 characters (:mod:`.schemas`), which JSON escapes can make six
#: times longer; a body past this is refused (413) as it streams in, never read whole
MAX_JSON_BODY = 1024 * 1024
#: the UI's pages and files: only our own scripts, styles and images, never framed
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; "
    "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def is_loopback(host: str) -> bool:
    """True for hosts only this machine can reach (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a bearer token (anyone on the network could
    otherwise write to the wiki and spend the LLM budget)."""
    if not is_loopback(host) and not (token or "").strip():
        raise UsageError(
            f"refusing to listen on {host} without a token: pass --token T "
            "(or set EPISTEME_TOKEN), or bind 127.0.0.1"
        )


def host_name(value: str) -> str:
    """``host[:port]`` / ``[v6]:port`` / a URL's netloc -> the bare host name, lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def browser_guard(request, token: str | None) -> str | None:
    """Why a request that a *web page* could have sent must be refused, or None.

    A server on 127.0.0.1 is reachable from any page the user's browser opens: a form on a
    hostile site can POST a multipart upload here without any CORS preflight, and a DNS
    rebinding attack makes a hostile name resolve to 127.0.0.1.  So: without a token, the Host
    header must be a loopback name; and a state-changing request that carries an Origin must
    come from this very origin (our UI always does).  Reads do work too (a page image is
    rendered, a page's claims verified), and another site's ``<img>`` or ``fetch`` sends no
    Origin on a GET: so every API request (the UI's own files apart) that says it comes from
    elsewhere -- by its Origin, ``Sec-Fetch-Site`` or Referer -- is refused as well.  A client
    that is not a browser sends none of them and is not affected."""
    from urllib.parse import urlsplit

    host = request.headers.get("host", "")
    if not token and host and not is_loopback(host_name(host)):
        return f"host {host!r} refused: this server only answers to loopback names"
    origin = request.headers.get("origin")
    foreign_origin = bool(origin) and (origin == "null"
                                       or urlsplit(origin).netloc.lower() != host.lower())
    if foreign_origin and request.method not in ("GET", "HEAD", "OPTIONS"):
        return "cross-origin request refused"
    path = request.url.path
    if path in PUBLIC_PATHS or path.startswith("/static/"):
        return None  # the UI may be opened from a link anywhere
    if foreign_origin:
        return "cross-origin request refused"
    if request.headers.get("sec-fetch-site", "").lower() in ("cross-site", "same-site"):
        return "cross-site request refused"
    referer = request.headers.get("referer")
    if referer and urlsplit(referer).netloc.lower() != host.lower():
        return "cross-site request refused"
    return None


def body_limit(services, method: str, path: str) -> tuple[int, str] | None:
    """``(bytes allowed, the 413's message)`` for a request's body, or None for no limit: an
    upload's is the per-file limit x files + multipart framing, any other's
    :data:`MAX_JSON_BODY`."""
    if method == "POST" and path == "/ingest":
        limit = services.settings.max_pdf_bytes * MAX_UPLOAD_FILES
        if not limit:
            return None
        return limit + MULTIPART_SLACK, f"the upload is over the limit of {limit} bytes"
    return MAX_JSON_BODY, f"the request body is over the limit of {MAX_JSON_BODY} bytes"

def make_guard(services):
    """The ``http`` middleware of the app: the browser guard, the body's Content-Length, the
    bearer token, then the UI's security headers on the way out."""
    from fastapi import Request
    from fastapi.responses import JSONResponse

    async def guard(request: Request, call_next):
        path = request.url.path
        refusal = browser_guard(request, services.token)
        if refusal:
            return JSONResponse({"error": refusal}, status_code=403)
        try:
            length = int(request.headers.get("content-length", "0"))
        except ValueError:
            length = 0
        if request.method == "POST" and path == "/ingest":
            limit = services.settings.max_pdf_bytes
            if limit and length > limit * MAX_UPLOAD_FILES + MULTIPART_SLACK:
                return JSONResponse(
                    {"error": f"the upload is {length} bytes, over the limit of {limit} bytes "
                              f"per file × {MAX_UPLOAD_FILES} files (EPISTEME_MAX_UPLOAD_FILES)",
                     "details": {"kind": "too_large"}}, status_code=413)
        elif length > MAX_JSON_BODY:
            return JSONResponse(
                {"error": f"the request body is {length} bytes, over the limit of "
                          f"{MAX_JSON_BODY} bytes", "details": {"kind": "too_large"}},
                status_code=413)
        if services.token and path not in PUBLIC_PATHS and not path.startswith("/static/"):
            header = request.headers.get("authorization", "")
            scheme, _, given = header.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), services.token.encode()
            ):
                return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
        try:
            response = await call_next(request)
        except BodyTooLarge:
            raise  # answered by BodyLimit, outside
        except Exception as exc:  # errors raised below the exception middleware
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
            return JSONResponse({"error": INTERNAL_ERROR}, status_code=500)
        if path in ("/", "/docs") or path.startswith("/static/"):
            response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
            response.headers["X-Content-Type-Options"] = "nosniff"
            response.headers["Cache-Control"] = "no-cache"
        return response

    return guard


class BodyLimit:
    """Pure ASGI: counts the bytes of every request body *as they arrive* and answers 413 once
    they pass the request's limit (:func:`body_limit`).  Why: a chunked body has no
    Content-Length for the guard to check, the multipart parser would otherwise spool a whole
    upload to disk, and a JSON route would read any body into memory before it is validated."""

    def __init__(self, app, limit_for):
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope, receive, send):
        rule = self.limit_for(scope["method"], scope["path"]) if scope.get("type") == "http" \
            else None
        if rule is None:
            return await self.app(scope, receive, send)
        limit, message = rule
        seen = 0
        over = False
        started = False

        async def counted():
            nonlocal seen, over
            message = await receive()
            if message.get("type") == "http.request":
                seen += len(message.get("body") or b"")
                if seen > limit:
                    over = True
                    raise BodyTooLarge()
            return message

        async def guarded_send(message):
            nonlocal started
            if over:
                return  # the app's own error reply to the aborted body is replaced below
            if message.get("type") == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, guarded_send)
        except Exception:
            if not over:
                raise
        if over and not started:
            import json

            body = json.dumps({"error": message, "details": {"kind": "too_large"}}).encode()
            await send({"type": "http.response.start", "status": 413,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()),
                                    (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": body})
