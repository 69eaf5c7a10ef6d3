"""The HTTP API against a real uvicorn server on 127.0.0.1: real ingest of a real paper (job
progress, result, files), wiki and graph reads, bad uploads, limits, malformed requests, auth.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.stores.sqlite import OBJECT_KINDS
from ingested_wiki import wiki_settings
from serverlive import (
    ATTENTION_Q,
    LiveServer,
    half_invented_answer,
    post_json,
    request,
    serve_copy,
    upload,
    wait_job,
    written_template,  # noqa: F401  (fixture)
)

REAL_PAPER = "bahdanau_1409.0473v7.pdf"


@pytest.fixture(scope="module")
def live(written_template, tmp_path_factory):  # noqa: F811
    """One server for the module over a private copy of the written wiki."""
    with serve_copy(written_template, tmp_path_factory.mktemp("served") / "wiki") as srv:
        yield srv


@pytest.fixture
def limited(ingested_template, tmp_path):
    """A server with tiny limits (3 pages, 300 kB) over a copy of the ingested wiki."""
    with serve_copy(ingested_template, tmp_path / "wiki", max_pdf_bytes=300_000, max_pages=3) as srv:
        yield srv


# ------------------------------------------------------------------------------- basics


def test_health_openapi_and_ui(live):
    status, body, _ = request("GET", live.url + "/health")
    assert status == 200 and body["status"] == "ok"
    assert body["warm"]["embedder"] is True  # loaded at start-up, not on the first request
    assert Path(body["wiki"]) == live.settings.wiki
    status, spec, _ = request("GET", live.url + "/openapi.json")
    assert status == 200
    for path in ("/ingest", "/chat", "/wiki", "/wiki/{page}", "/graph", "/jobs/{job_id}", "/health"):
        assert path in spec["paths"], path
    assert "post" in spec["paths"]["/ingest"] and "post" in spec["paths"]["/chat"]
    status, page, hdrs = request("GET", live.url + "/docs")
    assert status == 200 and "openapi.json" in page["_raw"]
    status, html, hdrs = request("GET", live.url + "/")
    assert status == 200 and "<title>episteme</title>" in html["_raw"]
    assert "default-src 'self'" in hdrs["content-security-policy"]
    for asset in ("app.js", "markdown.js", "graphview.js", "style.css"):
        status, _, _ = request("GET", f"{live.url}/static/{asset}")
        assert status == 200, asset


def test_unknown_routes_and_methods_are_json(live):
    status, body, _ = request("GET", live.url + "/no-such-thing")
    assert status == 404 and "no such endpoint" in body["error"]
    status, body, _ = request("GET", live.url + "/chat")
    assert status == 405 and "not allowed" in body["error"]
    status, body, _ = request("GET", live.url + "/jobs/deadbeef")
    assert status == 404 and "no job" in body["error"]


# -------------------------------------------------------------------------------- ingest


def test_ingest_real_paper_as_job_then_again_with_dotdot_name(live, papers_dir):
    """A real paper through ?wait=false: progress is reported while it runs, the result has
    the seed's keys, the files land in the wiki.  Uploading the same bytes again under a
    ``../`` name (waiting) finds the same sanitized paper, unchanged, and writes nothing new."""
    data = (papers_dir / REAL_PAPER).read_bytes()
    status, job, hdrs = upload(live.url, REAL_PAPER, data, "?wait=false")
    assert status == 202, job
    assert job["status"] in ("queued", "running") and hdrs["location"] == f"/jobs/{job['job']}"
    seen: list[dict] = []
    final = wait_job(live.url, job["job"], seen=seen)
    assert final["status"] == "done", final
    # the answerer's sentence vectors are embedded first and counted as sentences, apart
    assert {p["unit"] for p in seen if p["phase"] == "embedding"} <= {"sentences", "passages"}
    embedding = [p for p in seen if p["phase"] == "embedding" and p["unit"] == "passages"]
    assert embedding and embedding[-1]["total"] > 10
    assert all(0 <= p["done"] <= p["total"] for p in seen if p["total"])
    assert final["progress"]["sections_total"] == final["result"]["sections_indexed"]
    # sections done / total while embedding: counted up, never past the total, all at the end
    n = final["result"]["sections_indexed"]
    done = [p["sections_done"] for p in embedding]
    assert all(p["sections_total"] == n for p in embedding)
    assert done == sorted(done) and done[-1] <= n
    assert embedding[-1]["done"] < embedding[-1]["total"] or done[-1] == n

    r = final["result"]
    for key in ("status", "paper", "sections_indexed", "wiki_pages_updated", "new_sections"):
        assert key in r, key
    assert r["status"] == "ok" and r["ingest_status"] == "ingested"
    assert r["paper"] == REAL_PAPER and r["sections_indexed"] >= 5
    assert r["writer"] == "extractive" and r["write_status"] == "written"
    assert r["wiki_pages_updated"] and r["new_sections"]
    wiki = live.settings.wiki
    assert (wiki / "raw" / REAL_PAPER).read_bytes() == data
    for page in r["wiki_pages_updated"]:
        assert (wiki / page).is_file(), page
    index = json.loads((wiki / "index.json").read_text())
    for sid in r["new_sections"]:
        assert REAL_PAPER in index[sid]
    assert not list((wiki / ".episteme" / "uploads").glob("*")), "upload temp files are removed"

    # the new pages are browsable at once, and the paper's sections match SQLite's
    status, listing, _ = request("GET", live.url + "/wiki")
    assert set(r["wiki_pages_updated"]) <= {p["page"] for p in listing["pages"]}
    from episteme.stores.sqlite import open_store

    with open_store(live.settings, readonly=True) as st:
        assert [s["title"] for s in st.sections(REAL_PAPER)  # tables/footnotes: r["objects"]
                    if s["kind"] not in OBJECT_KINDS] == [s["title"] for s in r["sections"]]

    # same bytes, hostile name: sanitized to the same stored name, nothing outside the wiki
    status, again, _ = upload(live.url, "../../../" + REAL_PAPER, data)
    assert status == 200, again
    assert again["paper"] == REAL_PAPER and again["ingest_status"] == "unchanged"
    assert again["write_status"] == "already-written" and again["new_sections"] == []
    assert not (wiki.parent.parent / REAL_PAPER).exists()
    assert sorted(p.name for p in (wiki / "raw").iterdir() if not p.name.startswith(".")) == sorted(
        [REAL_PAPER, "attention_1706.03762v5.pdf", "gan_1406.2661v1.pdf"])


def test_bad_uploads_are_refused_before_anything_is_stored(live, papers_dir):
    wiki = live.settings.wiki
    before = sorted(p.name for p in (wiki / "raw").iterdir())
    real = (papers_dir / "gan_1406.2661v1.pdf").read_bytes()
    cases = [
        ("notes.pdf", b"hello, I am not a PDF at all\n" * 20, 422, "not a PDF"),
        ("empty.pdf", b"", 422, "empty"),
        ("cut.pdf", real[: len(real) // 2], 422, "truncated"),
        ("../../../../tmp/evil.pdf", b"#!/bin/sh\necho pwned\n", 422, "not a PDF"),
        ("garbage.pdf", b"%PDF-1.5\n" + b"x" * 5000 + b"\n%%EOF\n", 422, "corrupt"),
    ]
    for name, content, code, words in cases:
        status, body, _ = upload(live.url, name, content)
        assert status == code, (name, body)
        assert set(body) <= {"error", "details"} and words in body["error"], (name, body)
        assert "Traceback" not in json.dumps(body)
    # a form without the file field, and a body that is not multipart at all
    status, body, _ = upload(live.url, "x.pdf", real, field="document")
    assert status == 422 and "file" in body["error"]
    status, body, _ = post_json(live.url, "/ingest", {"file": "x"})
    assert status == 422 and "error" in body
    assert sorted(p.name for p in (wiki / "raw").iterdir()) == before
    assert not Path("/tmp/evil.pdf").exists()
    assert not list((wiki / ".episteme" / "uploads").glob("*"))


def test_size_and_page_limits(limited, papers_dir):
    import http.client

    big = (papers_dir / "gan_1406.2661v1.pdf").read_bytes()  # 595 kB > 300 kB
    # a declared size far over the limit is refused from the headers, before any body byte
    # (a client that keeps sending after the answer may see a reset: curl reads the 413)
    conn = http.client.HTTPConnection("127.0.0.1", limited.port, timeout=60)
    conn.putrequest("POST", "/ingest")
    conn.putheader("Content-Type", "multipart/form-data; boundary=x")
    conn.putheader("Content-Length", str(50 * 1024 * 1024))
    conn.endheaders()
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 413 and "over the limit of 300000 bytes" in body["error"]
    assert body["details"]["kind"] == "too_large"
    # just over the limit (inside the multipart slack): refused while streaming, not by header
    status, body, _ = upload(limited.url, "gan.pdf", big[:300_500])
    assert status == 413 and body["error"] == "the upload is over the limit of 300000 bytes"
    assert not list((limited.settings.wiki / ".episteme" / "uploads").glob("*"))
    # within the byte limit but over the page limit: a generated paper, repeated
    from serverlive import small_paper_pdf

    pdf = small_paper_pdf(limited.settings.wiki.parent / "p.pdf", "alpha").read_bytes()
    import io

    import pypdf

    pages = len(pypdf.PdfReader(io.BytesIO(pdf)).pages)
    w = pypdf.PdfWriter()
    for _ in range(4 // pages + 1):
        w.append(pypdf.PdfReader(io.BytesIO(pdf)))
    buf = io.BytesIO()
    w.write(buf)
    pdf = buf.getvalue()
    assert len(pdf) < 300_000 and len(pypdf.PdfReader(io.BytesIO(pdf)).pages) > 3
    status, body, _ = upload(limited.url, "long.pdf", pdf, "?wait=false")
    assert status == 413 and "pages, over the limit of 3" in body["error"], body
    assert not (limited.settings.wiki / "raw" / "long.pdf").exists()
    status, health, _ = request("GET", limited.url + "/health")
    assert health["limits"] == {"max_pdf_bytes": 300_000, "max_pages": 3}
    assert health["jobs"]["queued"] == health["jobs"]["running"] == 0  # nothing was queued


# ---------------------------------------------------------------------------------- chat


def test_chat_rejects_malformed_requests(live):
    status, body, _ = post_json(live.url, "/chat", b'{"query": "unterminated')
    assert status == 400 and body == {"error": "malformed JSON in the request body"}
    status, body, _ = post_json(live.url, "/chat", {"q": "wrong key"})
    assert status == 422 and "query" in body["error"]
    status, body, _ = post_json(live.url, "/chat", {"query": ""})
    assert status == 422 and "query" in body["error"]
    status, body, _ = post_json(live.url, "/chat", {"query": "   "})
    assert status == 400 and "empty" in body["error"]
    status, body, _ = post_json(live.url, "/chat", {"query": "x" * 5000})
    assert status == 422 and "4000" in body["error"]
    status, body, _ = post_json(live.url, "/chat", [1, 2])
    assert status == 422 and "error" in body


# ---------------------------------------------------------------------------------- wiki


def test_wiki_listing_and_pages(live):
    status, body, _ = request("GET", live.url + "/wiki")
    assert status == 200 and body["count"] == len(body["pages"]) > 5
    by_id = {p["page"]: p for p in body["pages"]}
    # papers/ holds each paper's page and the pages of its own results, setup and data
    paper_pages = [p for p in body["pages"] if p["page"].startswith("papers/") and p["type"] == "paper"]
    children = [p for p in body["pages"] if p["page"].startswith("papers/") and p["type"] != "paper"]
    # (and, since the library work, a paper's smaller topics: pages of any topic type)
    assert len(paper_pages) >= 2 and children and all(p["type"] in (
        "result", "setup", "dataset", "method", "concept", "entity", "comparison", "synthesis", "note")
        for p in children)
    assert all(isinstance(p["tags"], list) and p["title"] for p in body["pages"])

    page_id = paper_pages[0]["page"]
    status, page, _ = request("GET", f"{live.url}/wiki/{page_id}")
    assert status == 200 and page["page"] == page_id and page["type"] == "paper"
    text = (live.settings.wiki / page_id).read_text()
    assert page["markdown"] == text
    assert page["sections"] and all(s["id"].startswith("sec_") for s in page["sections"])
    assert all(s["id"] in text for s in page["sections"])
    assert page["links"] and all(v is None or v in by_id for v in page["links"].values())

    # by title (as a [[link]] names it), without .md, and a near-miss with suggestions
    status, same, _ = request("GET", f"{live.url}/wiki/{page_id[:-3]}")
    assert status == 200 and same["page"] == page_id
    title = page["title"].replace(" ", "%20")
    status, same, _ = request("GET", f"{live.url}/wiki/{title}")
    assert status == 200 and same["page"] == page_id
    status, body, _ = request("GET", f"{live.url}/wiki/Attention%20Is%20All%20You%20Nees")
    assert status == 404 and body["details"]["nearest"]


@pytest.mark.parametrize("path,code", [
    ("..%2F..%2F..%2Fetc%2Fpasswd", 400),
    ("%2Fetc%2Fpasswd", 400),
    ("raw/gan_1406.2661v1.pdf", 404),
    (".episteme/sections.db", 404),
    ("index.md", 404),
])
def test_wiki_paths_cannot_leave_the_wiki(live, path, code):
    status, body, _ = request("GET", f"{live.url}/wiki/{path}")
    assert status == code, body
    assert "error" in body and "root:" not in json.dumps(body)


def test_wiki_symlink_out_of_the_wiki_is_refused(live, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("top secret\n")
    link = live.settings.wiki / "sneaky.md"
    link.symlink_to(secret)
    try:
        status, body, _ = request("GET", f"{live.url}/wiki/sneaky.md")
        assert status == 400 and "escapes" in body["error"]
        assert "top secret" not in json.dumps(body)
    finally:
        link.unlink()


def test_graph_matches_the_command(live):
    from episteme.commands.graph import graph_query

    status, body, _ = request("GET", live.url + "/graph?mode=stats")
    assert status == 200 and body == graph_query(live.settings.wiki, "stats")
    seed = "papers/attention-is-all-you-need.md"
    status, nb, _ = request("GET", f"{live.url}/graph?mode=neighbors&seed={seed}&depth=1")
    assert status == 200 and nb["seed"] == seed and nb["count"] >= 3
    assert nb == graph_query(live.settings.wiki, "neighbors", seed=seed, depth=1)
    # the same page through the command line: identical JSON
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "graph", "--wiki",
                           str(live.settings.wiki), "--mode", "neighbors", "--seed", seed],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout) == nb
    status, body, _ = request("GET", live.url + "/graph?mode=hubs&limit=3")
    assert status == 200 and len(body["hubs"]) == 3
    # format=mermaid: the diagram the command prints, not the JSON
    status, body, hdrs = request("GET", f"{live.url}/graph?mode=neighbors&seed={seed}&format=mermaid")
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "graph", "--wiki",
                           str(live.settings.wiki), "--mode", "neighbors", "--seed", seed,
                           "--format", "mermaid"], capture_output=True, text=True, timeout=120)
    assert status == 200 and hdrs["content-type"].startswith("text/plain")
    assert body["_raw"].startswith("graph TD") and body["_raw"] == proc.stdout
    status, body, _ = request("GET", live.url + "/graph?mode=stats&format=mermaid")
    assert status == 400 and "mermaid" in body["error"]
    status, body, _ = request("GET", live.url + "/graph?mode=neighbors")
    assert status == 400 and "needs --seed" in body["error"]
    status, body, _ = request("GET", live.url + "/graph?mode=bogus")
    assert status == 400 and "unknown mode" in body["error"]
    status, body, _ = request("GET", live.url + "/graph?mode=query&query=type%20%3D%3D")
    assert status == 400 and "error" in body


# ----------------------------------------------------------------------------- chat (real)


def _sid_in_page(text: str, sid: str) -> bool:
    return f'"id": "{sid}"' in text


def test_chat_answers_with_traced_sources_like_the_cli(live):
    q = "What BLEU score did the Transformer reach on English-to-French translation?"
    status, r, _ = post_json(live.url, "/chat", {"query": q})
    assert status == 200, r
    for key in ("answer", "wiki_sections_used", "sources", "unsupported_claims"):
        assert key in r, key
    assert r["mode"] == "offline" and "41." in r["answer"]
    index = json.loads((live.settings.wiki / "index.json").read_text())
    assert r["wiki_sections_used"] and all(sid in index for sid in r["wiki_sections_used"])
    # where each cited section lives (the UI links them): index.md says, and the page has it
    for w in r["wiki_sections"]:
        assert _sid_in_page((live.settings.wiki / w["page"]).read_text(), w["id"])
    assert r["sources"]
    from episteme.stores.sqlite import open_store

    with open_store(live.settings, readonly=True) as st:
        for s in r["sources"]:
            assert set(s) >= {"paper", "section", "passage", "similarity", "page", "claim"}
            assert 0 < s["similarity"] <= 1 and s["page"] >= 1
            rows = [p for p in st.passages(paper_id=s["paper"]) if p["text"] == s["passage"]]
            assert rows, "every quoted passage is verbatim a stored passage of that paper"
            assert s["claim"] and s["claim"][:40] in " ".join(r["answer"].split())
    assert any(s["paper"] == "attention_1706.03762v5.pdf" and "41" in s["passage"] for s in r["sources"])

    # the command line gives the same answer and the same sources (one implementation)
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "chat", q, "--wiki",
                           str(live.settings.wiki), "--no-progress", "--full"],
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "WIKI_PATH"})
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(proc.stdout)
    for key in ("answer", "wiki_sections_used", "sources", "unsupported_claims"):
        assert cli[key] == r[key], key


def test_trace_endpoint_gives_verdicts_and_not_covered_chat_names_topics(live):
    answer = ("The Transformer (big) reaches 28.4 BLEU on the WMT 2014 English-to-German task. "
              "The Transformer (big) reaches 34.2 BLEU on the WMT 2014 English-to-German task.")
    status, r, _ = post_json(live.url, "/trace", {"answer": answer})
    assert status == 200, r
    assert [c["verdict"] for c in r["claims"]] == ["supported", "contradicted"]
    bad = r["claims"][1]
    assert "34.2" in bad["reason"]["text"] and "28.4" in bad["evidence"]["quote"]
    assert r["contradicted_claims"] == [bad["claim"]]
    status, r, _ = post_json(live.url, "/trace", {"answer": answer, "sections": ["sec_001"],
                                                  "papers": ["x.pdf"]})
    assert status == 400 and "not both" in r["error"]
    status, r, _ = post_json(live.url, "/chat", {"query": "Which reward model fine-tunes InstructGPT "
                                                          "with human feedback?"})
    assert status == 200, r
    assert r["covered"] is False and r["answer"].startswith("The wiki does not cover this question.")
    assert r["closest_topics"] and r["sources"] == [] and r["claims"] == []


def test_chat_with_claude_marks_an_invented_claim_unsupported(written_template, tmp_path,  # noqa: F811
                                                               fake_anthropic):
    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    settings = wiki_settings(wiki, api_key="test-key", llm_base_url=fake_anthropic.base_url)
    q = ATTENTION_Q
    top, answer = half_invented_answer(wiki)
    fake_anthropic.enqueue(fake_anthropic.tool_use_response(
        "answer", {"answer": answer, "sections_used": [top]}))
    with LiveServer(settings, write_mode="extractive") as srv:
        status, r, _ = post_json(srv.url, "/chat", {"query": q})
    assert status == 200, r
    assert r["mode"] == "claude" and r["answer"] == answer
    assert r["wiki_sections_used"] == [top]
    assert any("Moon" in c for c in r["unsupported_claims"])
    assert not any("projects the queries" in c for c in r["unsupported_claims"])
    assert any("projects the queries" in s["claim"] and s["paper"] == "attention_1706.03762v5.pdf"
               for s in r["sources"])
    sent = fake_anthropic.requests[0].text()
    assert q in sent and top in sent  # the question and the retrieved section went to Claude


def test_chat_llm_failure_is_a_clear_json_error(written_template, tmp_path, fake_anthropic):  # noqa: F811
    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    settings = wiki_settings(wiki, api_key="bad-key", llm_base_url=fake_anthropic.base_url)
    fake_anthropic.enqueue(fake_anthropic.error_response(401, "invalid x-api-key"))
    with LiveServer(settings, write_mode="extractive") as srv:
        status, r, _ = post_json(srv.url, "/chat", {"query": "How does multi-head attention work?"})
    assert status == 502 and "error" in r and "Traceback" not in json.dumps(r)
