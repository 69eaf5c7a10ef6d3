"""Client/server mode: a real ``chroma run`` on 127.0.0.1, started and stopped by the test."""

from __future__ import annotations

import pytest
from episteme.errors import EpistemeError
from episteme.ingest.pipeline import ingest_paper, remove_paper
from episteme.stores.vectors import VectorStore, open_vectors, scope_where
from helpers.chroma import chroma_server as start_chroma_server
from helpers.chroma import free_port
from helpers.papers import ATT, GAN, subset_pdf
from ingested_wiki import wiki_settings


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    """(host, port) of a fresh Chroma server; killed at the end of the module."""
    with start_chroma_server(tmp_path_factory.mktemp("chroma-server")) as addr:
        yield addr


def test_ingest_query_and_remove_through_a_chroma_server(chroma_server, tmp_path, papers_dir,
                                                          embedder):
    host, port = chroma_server
    s = wiki_settings(tmp_path / "w", chroma_host=host, chroma_port=port)
    a = subset_pdf(papers_dir / ATT, tmp_path / "a.pdf", range(2, 5))
    g = subset_pdf(papers_dir / GAN, tmp_path / "g.pdf", range(0, 2))
    out_a = ingest_paper(s, a, progress=False, embedder=embedder)
    out_g = ingest_paper(s, g, progress=False, embedder=embedder)
    assert not s.chroma_path.exists()  # nothing embedded locally: the server holds the vectors
    vs = open_vectors(s, embedder)
    assert vs.count() == out_a["passages"] + out_g["passages"]
    q = embedder.encode(["multi-head attention with several parallel heads"])
    hit = vs.query_passages(q, 1, where=scope_where(["a.pdf", "g.pdf"]))[0][0]
    assert hit["metadata"]["paper"] == "a.pdf" and 0 < hit["similarity"] <= 1
    with pytest.raises(EpistemeError, match="episteme rebuild"):
        VectorStore(s, "other-model", 384).collection()
    remove_paper(s, "a.pdf")
    assert open_vectors(s, embedder).paper_ids() == {"g.pdf"}


def test_unreachable_server_is_a_clear_error(tmp_path, embedder):
    s = wiki_settings(tmp_path / "w", chroma_host="127.0.0.1", chroma_port=free_port())
    with pytest.raises(EpistemeError, match="Chroma"):
        open_vectors(s, embedder).count()


def test_a_batch_against_a_chroma_server(chroma_server, tmp_path, embedder):
    """The batch (spawned splitters, passages embedded across papers) with the vectors on the
    server: nothing embedded locally, and the re-run finds every paper unchanged."""
    from episteme.ingest.batch import ingest_batch
    from pdfgen import make_paper_pdf, varied_paper

    host, port = chroma_server
    src = tmp_path / "library"
    src.mkdir()
    for i in range(3):
        make_paper_pdf(src / f"batch{i}.pdf", varied_paper(400 + i))
    s = wiki_settings(tmp_path / "w", chroma_host=host, chroma_port=port)
    out = ingest_batch(s, [src], jobs=2, progress=False, embedder=embedder)
    assert out["status"] == "ok" and out["counts"]["ingested"] == 3
    assert not s.chroma_path.exists()
    vs = open_vectors(s, embedder)
    assert vs.paper_ids() >= {"batch0.pdf", "batch1.pdf", "batch2.pdf"}
    n = sum(p["passages"] for p in out["papers"])
    got = vs.collection().get(where={"paper": {"$in": [p["paper"] for p in out["papers"]]}})
    assert len(got["ids"]) == n
    again = ingest_batch(s, [src], jobs=2, progress=False, embedder=embedder)
    assert again["counts"]["unchanged"] == 3 and again["counts"]["ingested"] == 0
