"""Server safety: bearer token, refusing to bind beyond loopback without one, JSON for every
error (no stack trace), ``episteme serve`` argument handling.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from episteme.errors import UsageError
from episteme.server.app import check_bind, is_loopback
from ingested_wiki import wiki_settings
from serverlive import LiveServer, free_port, post_json, request, upload

TOKEN = "t0ken-for-tests"


@pytest.fixture
def wiki(tmp_path):
    w = tmp_path / "wiki"
    (w / "concepts").mkdir(parents=True)
    (w / "concepts" / "alpha.md").write_text(
        "---\ntitle: Alpha\ntype: concept\ntags: [greek, letters]\n---\n"
        '<!-- section {"id": "sec_001", "description": "first letter", "sources": []} -->\n'
        "## Alpha\n\nFirst letter, before [[Beta]].\n", encoding="utf-8")
    (w / "concepts" / "beta.md").write_text(
        "---\ntitle: Beta\ntype: concept\n---\nSecond letter, after [[Alpha]] and [[Gamma]].\n",
        encoding="utf-8")
    return w


def test_token_guards_the_api_but_not_the_ui(wiki):
    with LiveServer(wiki_settings(wiki), token=TOKEN, warm=False) as srv:
        for path in ("/", "/health", "/static/app.js", "/openapi.json"):
            status, _, _ = request("GET", srv.url + path)
            assert status == 200, path
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                        {"Authorization": f"Basic {TOKEN}"}):
            status, body, hdrs = request("GET", srv.url + "/wiki", headers=headers)
            assert status == 401 and body == {"error": "missing or wrong bearer token"}, headers
            assert hdrs["www-authenticate"] == "Bearer"
        ok = {"Authorization": f"Bearer {TOKEN}"}
        status, body, _ = request("GET", srv.url + "/wiki", headers=ok)
        assert status == 200 and {p["page"] for p in body["pages"]} == {"concepts/alpha.md", "concepts/beta.md"}
        # uploads and chat are refused before the body is looked at
        status, body, _ = upload(srv.url, "x.pdf", b"%PDF-1.4\n%%EOF\n")
        assert status == 401
        status, body, _ = post_json(srv.url, "/chat", b"{not json")
        assert status == 401
        status, body, _ = post_json(srv.url, "/chat", b"{not json", headers=ok)
        assert status == 400  # past the guard: now the JSON itself is the problem
        assert not (wiki / "raw").exists()


def test_wiki_page_shape(wiki):
    with LiveServer(wiki_settings(wiki), warm=False) as srv:
        status, page, _ = request("GET", srv.url + "/wiki/concepts/alpha.md")
        assert status == 200
        assert page["title"] == "Alpha" and page["type"] == "concept" and page["tags"] == ["greek", "letters"]
        assert page["sections"] == [{"id": "sec_001", "title": "Alpha", "level": 2,
                                     "description": "first letter", "sources": [],
                                     "body": "First letter, before [[Beta]]."}]
        assert page["links"] == {"Beta": "concepts/beta.md"}
        assert page["backlinks"] == [{"page": "concepts/beta.md", "title": "Beta"}]
        status, page, _ = request("GET", srv.url + "/wiki/Beta")  # by title, as a link says it
        assert status == 200 and page["page"] == "concepts/beta.md" and page["sections"] == []
        assert page["links"] == {"Alpha": "concepts/alpha.md", "Gamma": None}  # dangling link


def test_unexpected_errors_are_json_without_internals(wiki, capfd):
    srv = LiveServer(wiki_settings(wiki), warm=False)

    def boom():
        raise RuntimeError("secret internal detail /etc/shadow")

    srv.app.add_api_route("/boom", boom, methods=["GET"])
    with srv:
        status, body, _ = request("GET", srv.url + "/boom")
    assert status == 500 and body == {"error": "internal error; see the server log"}
    assert "secret internal detail" in capfd.readouterr().err  # logged for the operator


@pytest.mark.parametrize("host,loop", [("127.0.0.1", True), ("127.8.0.1", True), ("::1", True),
                                       ("[::1]", True), ("localhost", True), ("0.0.0.0", False),
                                       ("192.168.1.4", False), ("example.org", False), ("::", False)])
def test_is_loopback(host, loop):
    assert is_loopback(host) is loop


def test_check_bind_needs_a_token_beyond_loopback():
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "secret")
    with pytest.raises(UsageError, match="without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(UsageError, match="without a token"):
        check_bind("10.1.2.3", "")


def test_serve_command_refuses_public_bind_without_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "EPISTEME_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "serve", "--wiki", str(tmp_path / "w"),
                           "--host", "0.0.0.0", "--port", str(free_port())],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "w").exists()  # refused before touching anything
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "serve", "--port", "70000"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2 and "--port" in proc.stderr


def test_serve_command_runs_and_answers(tmp_path, wiki):
    """`episteme serve` as a real process: health answers, the wiki is served, Ctrl-C stops it."""
    import signal
    import time

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("EPISTEME_TOKEN", "WIKI_PATH")}
    proc = subprocess.Popen([sys.executable, "-m", "episteme.cli", "serve", "--wiki", str(wiki),
                             "--port", str(port), "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, body, _ = request("GET", f"http://127.0.0.1:{port}/health", timeout=5)
                if status == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "server did not come up"
            time.sleep(0.2)
        assert body["wiki"] == str(wiki) and body["auth"] is False
        status, listing, _ = request("GET", f"http://127.0.0.1:{port}/wiki")
        assert listing["count"] == 2
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and f"http://127.0.0.1:{port}/" in err
    assert json.dumps(body)  # the health body was JSON


def test_cross_site_requests_and_dns_rebinding_are_refused(wiki):
    """A hostile web page can make the user's browser POST to 127.0.0.1 (a multipart form needs
    no CORS preflight) or resolve its own name to 127.0.0.1: both are refused."""
    with LiveServer(wiki_settings(wiki), warm=False) as srv:
        same = {"Origin": srv.url}
        status, body, _ = post_json(srv.url, "/chat", b"{bad", headers=same)
        assert status == 400  # our own UI's origin passes the guard (then the JSON is bad)
        for origin in ("http://evil.example", "null", f"http://127.0.0.1:{srv.port + 1}"):
            status, body, _ = upload(srv.url, "x.pdf", b"%PDF-1.4\n%%EOF\n", headers={"Origin": origin})
            assert status == 403 and body == {"error": "cross-origin request refused"}, origin
        # reads do work (render, verify): a GET a foreign page sends is refused too (issue 36)
        status, body, _ = request("GET", srv.url + "/wiki", headers={"Origin": "http://evil.example"})
        assert status == 403 and body == {"error": "cross-origin request refused"}
        status, body, _ = request("GET", srv.url + "/wiki", headers={"Host": "evil.example:80"})
        assert status == 403 and "loopback" in body["error"]
        for host in (f"localhost:{srv.port}", f"127.0.0.1:{srv.port}", f"[::1]:{srv.port}"):
            status, _, _ = request("GET", srv.url + "/health", headers={"Host": host})
            assert status == 200, host
    assert not (wiki / "raw").exists()
    # with a token (any interface), the Host may be any name: the token is the guard
    with LiveServer(wiki_settings(wiki), token=TOKEN, warm=False) as srv:
        status, _, _ = request("GET", srv.url + "/wiki",
                               headers={"Host": "papers.example.org", "Authorization": f"Bearer {TOKEN}"})
        assert status == 200


def test_stale_upload_files_are_removed_at_start(wiki):
    import time

    uploads = wiki / ".episteme" / "uploads"
    uploads.mkdir(parents=True)
    old, fresh = uploads / "old.pdf", uploads / "fresh.pdf"
    old.write_bytes(b"%PDF-")
    fresh.write_bytes(b"%PDF-")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    with LiveServer(wiki_settings(wiki), warm=False):
        pass
    assert not old.exists() and fresh.exists()
