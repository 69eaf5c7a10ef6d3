"""A fake Anthropic Messages API on 127.0.0.1 for the real ``anthropic`` SDK — the only stand-in
the test suite allows.

It is a real HTTP server (``http.server`` in a daemon thread, a free port on 127.0.0.1), so the
SDK's whole path runs: request building, headers, status handling, response parsing.  A test
scripts the replies in order with :meth:`FakeAnthropic.enqueue` and inspects what the client sent
in :attr:`FakeAnthropic.requests`.  When the script runs out the server answers a 500 whose
message says so (with ``x-should-retry: false``, so clients fail at once instead of retrying).

Loaded by ``tests/conftest.py`` (``pytest_plugins``).  Besides the ``fake_anthropic`` fixture it
makes the whole test session unable to reach the real APIs: ``pytest_configure`` removes API keys,
the ``LLM_*`` model settings and agent markers from the environment and points
``ANTHROPIC_BASE_URL`` and ``OPENAI_BASE_URL`` at a closed local port, so code that forgets to use
a fake fails fast instead of spending money.

Usage::

    def test_x(fake_anthropic):
        fake_anthropic.enqueue(tool_use_response("decide", {"action": "create"}))
        settings = load_settings(tmp, env={"ANTHROPIC_API_KEY": "test-key",
                                           "ANTHROPIC_BASE_URL": fake_anthropic.base_url})
        ...
        assert fake_anthropic.requests[0].body["model"] == "claude-sonnet-4-5"
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

_ids = itertools.count(1)


@dataclass
class Scripted:
    """One scripted reply: HTTP status, JSON body and extra headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RecordedRequest:
    """One request as the server received it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes

    @property
    def api_key(self) -> str | None:
        """The key the client sent: ``x-api-key``, or the ``Authorization: Bearer`` token that
        recent SDKs (2.x) use for API keys."""
        if self.headers.get("x-api-key"):
            return self.headers["x-api-key"]
        auth = self.headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return (self.body or {}).get("messages", []) if isinstance(self.body, dict) else []

    def text(self) -> str:
        """Every string in the request body, joined: handy for 'the prompt mentions X' checks."""
        out: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, str):
                out.append(node)
            elif isinstance(node, dict):
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)

        walk(self.body)
        return "\n".join(out)


def _usage(usage: dict[str, int] | None) -> dict[str, int]:
    base = {"input_tokens": 10, "output_tokens": 5}
    base.update(usage or {})
    return base


def message_body(
    content: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    usage: dict[str, int] | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """A valid Messages API ``Message``; ``model`` left ``None`` is filled from the request."""
    body: dict[str, Any] = {
        "id": f"msg_fake_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _usage(usage),
    }
    if model:
        body["model"] = model
    return body


def tool_use_response(
    name: str,
    input: dict[str, Any],
    usage: dict[str, int] | None = None,
    *,
    text: str | None = None,
    model: str | None = None,
) -> Scripted:
    """A reply that calls tool ``name`` with ``input`` (optionally preceded by some text)."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    content.append({"type": "tool_use", "id": f"toolu_fake_{next(_ids):06d}", "name": name, "input": input})
    return Scripted(200, message_body(content, stop_reason="tool_use", usage=usage, model=model))


def text_response(
    text: str,
    usage: dict[str, int] | None = None,
    *,
    stop_reason: str = "end_turn",
    model: str | None = None,
) -> Scripted:
    """A plain text reply."""
    return Scripted(
        200, message_body([{"type": "text", "text": text}], stop_reason=stop_reason, usage=usage, model=model)
    )


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def error_response(
    status: int, message: str = "", *, type: str | None = None, headers: dict[str, str] | None = None
) -> Scripted:
    """An API error in the real shape: ``{"type": "error", "error": {"type", "message"}}``."""
    kind = type or _ERROR_TYPES.get(status, "api_error")
    body = {"type": "error", "error": {"type": kind, "message": message or kind.replace("_", " ")}}
    return Scripted(status, body, dict(headers or {}))


Reply = Scripted | Callable[[RecordedRequest], Scripted]


class FakeAnthropic:
    """The server.  Thread-safe: the SDK may use several connections."""

    def __init__(self) -> None:
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A short poll interval keeps shutdown (once per test) fast.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-anthropic", daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- scripting ---------------------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> FakeAnthropic:
        """Append replies (a :class:`Scripted`, or a function of the request returning one)."""
        with self._lock:
            self._script.extend(replies)
        return self

    def enqueue_json(
        self, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> FakeAnthropic:
        return self.enqueue(Scripted(status, body, dict(headers or {})))

    @property
    def pending(self) -> int:
        """Scripted replies not yet played."""
        with self._lock:
            return len(self._script)

    # helpers as methods too, so a test needs only the fixture
    tool_use_response = staticmethod(tool_use_response)
    text_response = staticmethod(text_response)
    error_response = staticmethod(error_response)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- serving -----------------------------------------------------------------------------

    def _next(self, request: RecordedRequest) -> Scripted:
        with self._lock:
            self.requests.append(request)
            reply = self._script.popleft() if self._script else None
        if reply is None:
            out = error_response(
                500,
                f"fake_anthropic: script exhausted (request #{len(self.requests)} to {request.path} "
                "had no scripted reply)",
            )
            out.headers["x-should-retry"] = "false"
            return out
        return reply(request) if callable(reply) else reply

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, reply: Scripted) -> None:
                payload = b"" if reply.body is None else json.dumps(reply.body).encode("utf-8")
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.send_header("request-id", f"req_fake_{len(fake.requests):06d}")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                path = urlsplit(self.path).path
                rec = RecordedRequest(
                    "POST", path, {k.lower(): v for k, v in self.headers.items()}, body, raw
                )
                if path != "/v1/messages":
                    with fake._lock:
                        fake.requests.append(rec)
                    self._send(error_response(404, f"fake_anthropic: no route {path}"))
                    return
                reply = fake._next(rec)
                if (
                    reply.status == 200
                    and isinstance(reply.body, dict)
                    and reply.body.get("type") == "message"
                    and "model" not in reply.body
                ):
                    model = body.get("model") if isinstance(body, dict) else None
                    reply = Scripted(reply.status, {**reply.body, "model": model or "unknown"}, reply.headers)
                self._send(reply)

            def do_GET(self) -> None:
                self._send(error_response(404, f"fake_anthropic: no route {self.path}"))

        return Handler


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A fresh fake Messages API per test (starting one costs about a millisecond)."""
    server = FakeAnthropic()
    try:
        yield server
    finally:
        server.close()


# -- keep the whole session away from the real API -------------------------------------------

_GUARDED = ("ANTHROPIC_API_KEY", "LLM_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDECODE",
            "CLAUDE_CODE_ENTRYPOINT", "EPISTEME_AGENT", "ANTHROPIC_BASE_URL", "ANTHROPIC_PROFILE",
            "OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_PROVIDER", "LLM_BASE_URL", "LLM_MODEL",
            "LLM_CONTEXT", "EPISTEME_LLM_STRUCTURED", "NO_PROXY", "no_proxy")
_saved_env: dict[str, str | None] = {}
# Port 9 (discard) on loopback: nothing listens, so a stray real-SDK call fails at once.
DEAD_BASE_URL = "http://127.0.0.1:9"


def pytest_configure(config: pytest.Config) -> None:
    no_proxy = os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or ""
    for key in _GUARDED:
        _saved_env[key] = os.environ.pop(key, None)
    os.environ["ANTHROPIC_BASE_URL"] = DEAD_BASE_URL
    os.environ["OPENAI_BASE_URL"] = DEAD_BASE_URL
    # Loopback must never go through a proxy a developer may have configured.
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = ",".join(
        p for p in (no_proxy, "127.0.0.1", "localhost") if p
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    for key, value in _saved_env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
