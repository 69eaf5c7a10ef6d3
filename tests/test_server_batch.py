"""``POST /ingest`` with several files: one job per file under one batch id, a bad file failing
alone, ``GET /jobs?batch=`` per file; a real uvicorn server over a fresh wiki, real PDFs."""

from __future__ import annotations

import pytest
from ingested_wiki import wiki_settings
from serverlive import LiveServer, request, small_paper_pdf, wait_job


def multipart_files(files: list[tuple[str, bytes]]) -> tuple[bytes, str]:
    """Several ``file`` fields in one multipart/form-data body: (body, content type)."""
    boundary = "episteme-batch-boundary-51c2"
    parts = []
    for name, content in files:
        parts.append((f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                      f"filename=\"{name}\"\r\nContent-Type: application/pdf\r\n\r\n").encode()
                     + content + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch-server")
    with LiveServer(wiki_settings(root / "wiki"), write_mode="extractive") as srv:
        yield srv


def test_several_files_in_one_post_are_one_job_each(server, tmp_path):
    pdfs = [small_paper_pdf(tmp_path / f"{t}.pdf", t) for t in ("alpha", "beta")]
    files = [(p.name, p.read_bytes()) for p in pdfs] + [("junk.pdf", b"%PDF-1.4 junk, no end")]
    body, ctype = multipart_files(files)
    status, out, _ = request("POST", server.url + "/ingest?wait=false&write=false", data=body,
                             headers={"Content-Type": ctype})
    assert status == 202, out
    assert [j["file"] for j in out["jobs"]] == ["alpha.pdf", "beta.pdf"]
    assert all(j["batch"] == out["batch"] and j["url"] == f"/jobs/{j['job']}" for j in out["jobs"])
    # the bad file is refused by its own checks; the other two still run
    assert [(f["file"], f["http_status"]) for f in out["failed"]] == [("junk.pdf", 422)]
    finals = [wait_job(server.url, j["job"]) for j in out["jobs"]]
    assert [f["status"] for f in finals] == ["done", "done"]
    assert [f["result"]["paper"] for f in finals] == ["alpha.pdf", "beta.pdf"]
    status, listing, _ = request("GET", f"{server.url}/jobs?batch={out['batch']}")
    assert status == 200 and listing["counts"] == {"done": 2}
    assert [j["file"] for j in listing["jobs"]] == ["alpha.pdf", "beta.pdf"]
    raw = server.settings.wiki / "raw"
    assert sorted(p.name for p in raw.iterdir()) == ["alpha.pdf", "beta.pdf"]

    # waiting: one answer with every file's result; the same bytes again are unchanged
    gamma = small_paper_pdf(tmp_path / "gamma.pdf", "gamma")
    body, ctype = multipart_files([(p.name, p.read_bytes()) for p in (pdfs[0], gamma)])
    status, res, _ = request("POST", server.url + "/ingest", data=body,
                             headers={"Content-Type": ctype})
    assert status == 200 and res["status"] == "ok" and res["failed"] == []
    got = {p["file"]: p for p in res["papers"]}
    assert got["alpha.pdf"]["ingest_status"] == "unchanged"
    assert got["gamma.pdf"]["ingest_status"] == "ingested"
    assert got["gamma.pdf"]["write_status"] == "written" and got["gamma.pdf"]["wiki_pages_updated"]
    status, err, _ = request("GET", server.url + "/jobs?batch=nosuchbatch")
    assert status == 404 and "no batch" in err["error"]
