"""A fake OpenAI-compatible Chat Completions server on 127.0.0.1 for the real ``openai`` SDK: the
stand-in for OpenAI, Ollama, llama.cpp's server or vLLM, as ``fake_anthropic`` is for Claude.

A real HTTP server (``http.server`` in a daemon thread, a free port), so the SDK's whole path
runs: request building, headers, status handling, response parsing, timeouts.  A test scripts
the replies in order with :meth:`FakeOpenAI.enqueue` and reads what the client sent in
:attr:`FakeOpenAI.requests`.  When the script runs out the server answers a 500 whose message
says so (with ``x-should-retry: false``).  ``GET /v1/models`` lists :attr:`FakeOpenAI.models`.

Usage::

    def test_x(fake_openai):
        fake_openai.enqueue(tool_call_response("answer", {"answer": "..."}))
        settings = load_settings(tmp, env={"LLM_PROVIDER": "openai", "LLM_MODEL": "qwen2.5:7b",
                                           "LLM_BASE_URL": fake_openai.base_url}, dotenv=None)
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from fake_anthropic import RecordedRequest

_ids = itertools.count(1)


@dataclass
class Scripted:
    """One scripted reply: HTTP status, JSON body, extra headers, and seconds to wait before
    answering (a server that hangs)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion(message: dict[str, Any], *, finish_reason: str = "stop",
               usage: dict[str, int] | None = None) -> dict[str, Any]:
    """A valid ``chat.completion`` object with one choice (``model`` filled from the request)."""
    u = {"prompt_tokens": 10, "completion_tokens": 5, **(usage or {})}
    u["total_tokens"] = u["prompt_tokens"] + u["completion_tokens"]
    return {"id": f"chatcmpl-fake{next(_ids):06d}", "object": "chat.completion", "created": 1_700_000_000,
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason,
                         "logprobs": None}],
            "usage": u}


def tool_call_response(name: str, arguments: dict[str, Any] | str, usage: dict[str, int] | None = None,
                       *, content: str | None = None) -> Scripted:
    """A reply that calls function ``name`` (``arguments`` a dict, or a raw string: bad JSON)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call = {"id": f"call_fake{next(_ids):06d}", "type": "function", "function": {"name": name, "arguments": args}}
    return Scripted(200, completion({"content": content, "tool_calls": [call]}, finish_reason="tool_calls",
                                    usage=usage))


def text_response(text: str, usage: dict[str, int] | None = None, *, finish_reason: str = "stop") -> Scripted:
    """A plain text reply (what a model without tool calling sends)."""
    return Scripted(200, completion({"content": text}, finish_reason=finish_reason, usage=usage))


def error_response(status: int, message: str = "", *, headers: dict[str, str] | None = None) -> Scripted:
    """An API error in OpenAI's shape: ``{"error": {"message", "type", "code"}}``."""
    kind = {401: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return Scripted(status, {"error": {"message": message or kind, "type": kind, "param": None, "code": None}},
                    dict(headers or {}))


def hang(seconds: float) -> Scripted:
    """A server that takes ``seconds`` to answer (then answers a plain text reply)."""
    reply = text_response("too late")
    reply.delay = seconds
    return reply


Reply = Scripted | Callable[[RecordedRequest], Scripted]


class FakeOpenAI:
    """The server.  Thread-safe: the SDK may use several connections."""

    def __init__(self) -> None:
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.requests: list[RecordedRequest] = []
        self.models: list[str] = ["qwen2.5:7b-instruct", "llama3.1:8b"]
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-openai",
                                        daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        """The URL to configure (``LLM_BASE_URL``): the server root plus ``/v1``, as Ollama's."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def enqueue(self, *replies: Reply) -> FakeOpenAI:
        with self._lock:
            self._script.extend(replies)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    tool_call_response = staticmethod(tool_call_response)
    text_response = staticmethod(text_response)
    error_response = staticmethod(error_response)

    def close(self) -> None:
        self._closing.set()  # wake handlers that are hanging on purpose
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next(self, request: RecordedRequest) -> Scripted:
        with self._lock:
            self.requests.append(request)
            reply = self._script.popleft() if self._script else None
        if reply is None:
            out = error_response(500, f"fake_openai: script exhausted (request #{len(self.requests)} to "
                                      f"{request.path} had no scripted reply)")
            out.headers["x-should-retry"] = "false"
            return out
        return reply(request) if callable(reply) else reply

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, reply: Scripted) -> None:
                if reply.delay and fake._closing.wait(reply.delay):
                    return
                payload = b"" if reply.body is None else json.dumps(reply.body).encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (a timeout test)
                    pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                path = urlsplit(self.path).path
                rec = RecordedRequest("POST", path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
                if path != "/v1/chat/completions":
                    with fake._lock:
                        fake.requests.append(rec)
                    self._send(error_response(404, f"fake_openai: no route {path}"))
                    return
                reply = fake._next(rec)
                if reply.status == 200 and isinstance(reply.body, dict) and "model" not in reply.body:
                    model = body.get("model") if isinstance(body, dict) else None
                    reply = Scripted(reply.status, {**reply.body, "model": model or "unknown"}, reply.headers,
                                     reply.delay)
                self._send(reply)

            def do_GET(self) -> None:
                if urlsplit(self.path).path == "/v1/models":
                    self._send(Scripted(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "local"} for m in fake.models]}))
                    return
                self._send(error_response(404, f"fake_openai: no route {self.path}"))

        return Handler


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fresh fake Chat Completions server per test."""
    server = FakeOpenAI()
    try:
        yield server
    finally:
        server.close()

