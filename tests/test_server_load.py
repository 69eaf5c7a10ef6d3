"""Concurrency on a real server: simultaneous uploads are serialized by the writer queue and
lose nothing; a small version of benchmarks/bench_server_load.py (chat clients during ingests).
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path

import pytest
from serverlive import (  # noqa: F401  (written_template is a fixture)
    LiveServer,
    request,
    serve_copy,
    small_paper_pdf,
    upload,
    wait_job,
    written_template,
)

REPO = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("bench_server_load",
                                                  REPO / "benchmarks" / "bench_server_load.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def served(written_template, tmp_path):  # noqa: F811
    with serve_copy(written_template, tmp_path / "wiki") as srv:
        yield srv


def test_concurrent_uploads_are_serialized_and_nothing_is_lost(served, tmp_path):
    wiki = served.settings.wiki
    before = json.loads((wiki / "index.json").read_text())
    log_before = (wiki / "log.md").read_text().count("\n## ")
    pdfs = [small_paper_pdf(tmp_path / f"{t}.pdf", t) for t in ("alpha", "beta")]
    results: dict[str, tuple[int, dict]] = {}
    gate = threading.Barrier(len(pdfs))

    def send(pdf: Path) -> None:
        gate.wait()
        results[pdf.name] = upload(served.url, pdf.name, pdf.read_bytes())[:2]

    threads = [threading.Thread(target=send, args=(p,)) for p in pdfs]
    for t in threads:
        t.start()
    # meanwhile one more as a background job
    late = small_paper_pdf(tmp_path / "delta.pdf", "delta")
    status, job, _ = upload(served.url, late.name, late.read_bytes(), "?wait=false")
    assert status == 202
    for t in threads:
        t.join(600)
    final = wait_job(served.url, job["job"])
    assert final["status"] == "done", final
    results[late.name] = (200, final["result"])

    assert {n: s for n, (s, _) in results.items()} == dict.fromkeys(
        ["alpha.pdf", "beta.pdf", "delta.pdf"], 200)
    bodies = [b for _, b in results.values()]
    problems = _bench().check_nothing_lost(wiki, before, bodies)
    assert problems == []
    # each written paper's sections, and the Citations sections written after it
    new = [sid for b in bodies for sid in [*b["new_sections"], *(b.get("citations") or {}).get("created", [])]]
    assert len(new) == len(set(new)) >= 6  # no section id handed out twice
    after = json.loads((wiki / "index.json").read_text())
    assert set(after) == set(before) | set(new)
    # one log entry per written paper, none interleaved or lost
    log = (wiki / "log.md").read_text()
    assert log.count("\n## ") - log_before >= 3
    for name in ("alpha.pdf", "beta.pdf", "delta.pdf"):
        assert name in log
    # the queue ran them one at a time: no two jobs overlap in time
    status, jobs, _ = request("GET", served.url + "/jobs")
    spans = sorted((j["started_at"], j["finished_at"]) for j in jobs["jobs"])
    assert len(spans) == 3
    for (_, e1), (s2, _) in zip(spans[:-1], spans[1:], strict=True):
        assert e1 <= s2


def test_small_load_chat_during_ingests(served, tmp_path):
    """benchmarks/bench_server_load.py in small: 2 chat clients x 5 questions while 2 papers are
    uploaded at the same time -- no errors, every answer well formed, nothing lost."""
    bench = _bench()
    pdfs = [small_paper_pdf(tmp_path / f"{t}.pdf", t) for t in ("gamma", "delta")]
    res = bench.run_load(served.url, served.settings.wiki, clients=2, questions=5, ingest_pdfs=pdfs)
    assert res["errors"] == [] and res["chat_bad"] == [] and res["lost"] == []
    assert len(res["chat_latencies"]) == 10
    assert sorted(r["paper"] for r in res["ingests"]) == ["delta.pdf", "gamma.pdf"]
    assert all(r["new_sections"] for r in res["ingests"])
    # the new papers are answerable at once (the tracer reloaded after each ingest)
    status, body, _ = request(
        "POST", served.url + "/chat",
        data=b'{"query": "How does the wavelet method choose coefficients in image compression?"}',
        headers={"Content-Type": "application/json"})
    assert status == 200, body
    assert any(s["paper"] == "delta.pdf" for s in body["sources"]), body["sources"][:2]
