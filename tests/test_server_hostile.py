"""The HTTP server under the second red-team run's hostile input (issue 36, items 6 and 8):
bodies over the limit refused while they stream in, reads another site asks for refused, the
page-image cache bounded, a blank token no token.  A real uvicorn server, real PDFs.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import time

import pytest
from episteme.errors import UsageError
from episteme.server.app import check_bind
from ingested_wiki import wiki_settings
from serverlive import LiveServer, post_json, request, small_paper_pdf


@pytest.fixture
def wiki(tmp_path):
    w = tmp_path / "wiki"
    (w / "raw").mkdir(parents=True)
    small_paper_pdf(w / "raw" / "small.pdf", "alpha")
    (w / "note.md").write_text("---\ntitle: Note\ntype: concept\n---\nA note.\n", encoding="utf-8")
    return w


def _raw_post(port: int, head: str, chunks: int, chunk: bytes) -> tuple[int, bytes]:
    """Send ``head`` then ``chunks`` chunks of a chunked body *without its end*, and read the
    answer: a server that waits for the whole body times out here."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head.encode())
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        try:
            for _ in range(chunks):
                with selectors.DefaultSelector() as sel:  # (select.select fails past fd 1024)
                    sel.register(s, selectors.EVENT_READ)
                    if sel.select(timeout=0):
                        break  # the answer is there: stop sending, as a browser would
                s.sendall(frame)
        except OSError:
            pass  # the server answered and closed while we were still sending
        data = b""
        with contextlib.suppress(ConnectionResetError):
            while b"\r\n\r\n" not in data:
                more = s.recv(65536)
                if not more:
                    break
                data += more
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data


def test_post_bodies_over_the_limit_are_refused_as_they_stream(wiki):
    with LiveServer(wiki_settings(wiki), warm=False) as srv:
        # a declared size over the limit: refused from the headers, nothing read
        head = (f"POST /chat HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                "Content-Type: application/json\r\nContent-Length: 209715200\r\n\r\n")
        status, data = _raw_post(srv.port, head, 0, b"")
        assert status == 413 and b"over the limit of 1048576 bytes" in data, data[:300]
        # no declared size (chunked): refused once 1 MB has arrived, the rest never read
        for path in ("/chat", "/trace"):
            head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                    "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            t0 = time.monotonic()
            status, data = _raw_post(srv.port, head, 40, b'{"query": "' + b"x" * 65536)
            assert status == 413, (path, data[:300])
            assert time.monotonic() - t0 < 15
        # a body within the limit is read as before; `question` is the query's other name
        status, body, _ = post_json(srv.url, "/chat", {"question": "   "})
        assert status == 400 and body == {"error": "query is empty"}, body
        status, body, _ = post_json(srv.url, "/chat", {})
        assert status == 422 and body == {"error": "query: Field required"}, body
        status, health, _ = request("GET", srv.url + "/health")
        assert status == 200  # the server lives on


def test_reads_another_site_asks_for_are_refused(wiki):
    """Another site's ``<img src=http://127.0.0.1/...png>`` or ``fetch`` makes the server
    render; browsers say where such a request comes from, and it is refused."""
    with LiveServer(wiki_settings(wiki), warm=False) as srv:
        png = srv.url + "/papers/small.pdf/pages/1.png?scale=1"
        for headers in ({"Referer": "https://evil.example/page"},
                        {"Sec-Fetch-Site": "cross-site"},
                        {"Sec-Fetch-Site": "same-site"},
                        {"Origin": "https://evil.example"},
                        {"Referer": f"http://127.0.0.1:{srv.port + 1}/"}):
            for url in (png, srv.url + "/wiki/note", srv.url + "/wiki/note/claims"):
                status, body, _ = request("GET", url, headers=headers)
                assert status == 403 and "refused" in body["error"], (url, headers, body)
        assert not (wiki / ".episteme" / "pages").exists()  # nothing was rendered
        # our own UI, a typed address and a client that is not a browser are served
        for headers in ({"Referer": srv.url + "/", "Sec-Fetch-Site": "same-origin"},
                        {"Sec-Fetch-Site": "none"}, {}):
            status, _, hdrs = request("GET", png, headers=headers)
            assert status == 200 and hdrs["content-type"] == "image/png", headers
        # the UI itself may be opened from a link on any site
        status, _, _ = request("GET", srv.url + "/", headers={"Sec-Fetch-Site": "cross-site",
                                                              "Referer": "https://evil.example/"})
        assert status == 200


def test_page_image_cache_is_bounded(wiki):
    from episteme.pdf.render import page_png

    settings = wiki_settings(wiki)
    pages = wiki / ".episteme" / "pages"
    with LiveServer(settings, warm=False) as srv:
        for i in range(20):  # 1.00, 1.01, ... 1.19: two cached scales, not twenty
            status, _, _ = request("GET", f"{srv.url}/papers/small.pdf/pages/1.png?scale={1 + i / 100:.2f}")
            assert status == 200
    assert sorted(p.name for p in pages.rglob("*.png")) == ["p1@1.25.png", "p1@1.png"]
    # past the size bound the oldest images go, never the one just asked for
    second = page_png(settings, "small.pdf", 2, 1.0)  # unbounded here: measure it
    size2 = second.stat().st_size
    second.unlink()
    newer = next(pages.rglob("p1@1.25.png"))
    second = page_png(settings, "small.pdf", 2, 1.0,
                      max_cache_bytes=newer.stat().st_size + size2)
    assert sorted(p.name for p in pages.rglob("*.png")) == ["p1@1.25.png", "p2@1.png"]  # 1 went
    tiny = page_png(settings, "small.pdf", 2, 0.5, max_cache_bytes=1)
    assert tiny.is_file() and [p.name for p in pages.rglob("*.png")] == ["p2@0.5.png"]


@pytest.mark.parametrize("token", ["", " ", "   ", "\t", "\n", " \t\n "])
def test_a_blank_token_does_not_pass_the_public_bind_check(token):
    with pytest.raises(UsageError, match="without a token"):
        check_bind("0.0.0.0", token)
    check_bind("0.0.0.0", " t0ken ")


def test_serve_refuses_a_public_bind_with_a_blank_token(tmp_path):
    import os
    import subprocess
    import sys

    from serverlive import free_port

    for args, env_token in ((["--token", "  "], None), ([], " \t ")):
        env = {k: v for k, v in os.environ.items() if k != "EPISTEME_TOKEN"}
        if env_token is not None:
            env["EPISTEME_TOKEN"] = env_token
        proc = subprocess.run([sys.executable, "-m", "episteme.cli", "serve", "--wiki",
                               str(tmp_path / "w"), "--host", "0.0.0.0", "--port",
                               str(free_port()), *args],
                              capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "refusing to listen on 0.0.0.0 without a token" in proc.stderr
        assert not (tmp_path / "w").exists()
