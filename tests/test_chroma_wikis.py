"""Several wikis on one real ``chroma run`` server: each wiki's collections are named by its id,
so two wikis holding a paper of the same name see only their own vectors; and a wiki that used
the server before ids existed (plain ``passages``) is migrated without re-embedding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from episteme.ingest.pipeline import ingest_paper, rebuild, remove_paper
from episteme.stores.vectors import (
    PASSAGES,
    forget_clients,
    make_client,
    open_vectors,
    scope_where,
    wiki_id,
)
from helpers.chroma import chroma_server
from ingested_wiki import wiki_settings
from pdfgen import make_paper_pdf, varied_paper

REPO = Path(__file__).resolve().parent.parent


def _collection_names(host: str, port: int) -> set[str]:
    import chromadb

    client = chromadb.HttpClient(host=host, port=port)
    return {c.name if hasattr(c, "name") else str(c) for c in client.list_collections()}


def _lint_stores(wiki: Path, host: str, port: int) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_", "EMBEDDING_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO / "plugin"), env.get("PYTHONPATH", "")]),
               CHROMA_HOST=host, CHROMA_PORT=str(port))
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "lint", "--stores", "--wiki",
                           str(wiki), "--format", "json"], capture_output=True, text=True,
                          env=env, timeout=300)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, report["findings"]
    return report


def test_two_wikis_share_one_server_without_seeing_each_other(tmp_path, embedder):
    with _server(tmp_path / "server") as (host, port):
        _two_wikis(tmp_path, embedder, host, port)


def _two_wikis(tmp_path: Path, embedder, host: str, port: int) -> None:
    lib = tmp_path / "pdfs"
    (lib / "a").mkdir(parents=True)
    (lib / "b").mkdir(parents=True)
    # the same file name, different papers: one paper id in both wikis
    pa = make_paper_pdf(lib / "a" / "paper.pdf", varied_paper(611, "Tidal Harbour Records"))
    pb = make_paper_pdf(lib / "b" / "paper.pdf", varied_paper(612, "Glacier Melt Gauges"))
    only_b = make_paper_pdf(lib / "b" / "extra.pdf", varied_paper(613))
    wa = wiki_settings(tmp_path / "wa", chroma_host=host, chroma_port=port)
    wb = wiki_settings(tmp_path / "wb", chroma_host=host, chroma_port=port)
    out_a = ingest_paper(wa, pa, progress=False, embedder=embedder)
    out_b = ingest_paper(wb, pb, progress=False, embedder=embedder)
    out_x = ingest_paper(wb, only_b, progress=False, embedder=embedder)
    assert out_a["paper"] == out_b["paper"] == "paper.pdf"
    ida, idb = wiki_id(wa), wiki_id(wb)
    assert ida != idb and wiki_id(wa) == ida  # stable: read back, not made again
    names = _collection_names(host, port)
    assert {f"passages_{ida}", f"passages_{idb}"} <= names and "passages" not in names

    va, vb = open_vectors(wa, embedder), open_vectors(wb, embedder)
    assert va.count() == out_a["passages"]
    assert vb.count() == out_b["passages"] + out_x["passages"]
    assert va.paper_ids() == {"paper.pdf"} and vb.paper_ids() == {"paper.pdf", "extra.pdf"}
    # the same paper id, each wiki's own text
    doc_a = va.get(where={"paper": "paper.pdf"})["documents"]
    doc_b = vb.get(where={"paper": "paper.pdf"})["documents"]
    assert set(doc_a).isdisjoint(doc_b)
    q = embedder.encode([doc_b[0]])
    assert vb.query_passages(q, 1, where=scope_where(["paper.pdf"]))[0][0]["document"] == doc_b[0]
    assert va.query_passages(q, 1)[0][0]["document"] in doc_a

    # removing from one wiki leaves the other alone; so does a rebuild
    remove_paper(wb, "extra.pdf")
    forget_clients()
    assert open_vectors(wb, embedder).paper_ids() == {"paper.pdf"}
    assert open_vectors(wa, embedder).count() == out_a["passages"]
    rb = rebuild(wa, progress=False, embedder=embedder)
    assert not rb["failed"] and rb["passages"] == out_a["passages"]
    assert wiki_id(wa) == ida  # the id is in the wiki folder, not in the rebuilt SQLite
    assert open_vectors(wb, embedder).count() == out_b["passages"]
    # the wiki-section index (the writer's related-section search) is per wiki too
    from episteme.compile.writer import write_paper
    from episteme.query.wikisearch import WikiSectionIndex

    write_paper(wa, "paper.pdf", writer="extractive", embedder=embedder)
    with WikiSectionIndex(wa, embedder) as index:
        index.refresh()
    names = _collection_names(host, port)
    assert f"wiki_sections_{ida}" in names and "wiki_sections" not in names
    assert f"wiki_sections_{idb}" not in names  # wb has written nothing
    _lint_stores(tmp_path / "wa", host, port)
    _lint_stores(tmp_path / "wb", host, port)


def _legacy_copy(local_settings, host: str, port: int, papers: set[str] | None = None) -> dict:
    """Put a local wiki's passages into the server's plain ``passages`` collection, as the
    code before wiki ids wrote them; returns what was copied (ids -> embedding)."""
    import chromadb

    src = make_client(local_settings).get_collection(PASSAGES, embedding_function=None)
    got = src.get(include=["embeddings", "metadatas", "documents"])
    keep = [i for i, m in enumerate(got["metadatas"]) if papers is None or m["paper"] in papers]
    client = chromadb.HttpClient(host=host, port=port)
    col = client.get_or_create_collection(PASSAGES, configuration={"hnsw": {"space": "cosine"}},
                                          metadata=dict(src.metadata), embedding_function=None)
    col.add(ids=[got["ids"][i] for i in keep],
            embeddings=[list(map(float, got["embeddings"][i])) for i in keep],
            metadatas=[got["metadatas"][i] for i in keep],
            documents=[got["documents"][i] for i in keep])
    return {got["ids"][i]: np.asarray(got["embeddings"][i]) for i in keep}


def _server(folder: Path):
    """A fresh real ``chroma run`` for one case, stopped at the end."""
    return chroma_server(folder)


def _as_server(local_settings, host: str, port: int):
    return local_settings.with_(chroma_host=host, chroma_port=port)


def test_a_wiki_from_before_ids_is_migrated_without_re_embedding(tmp_path, embedder):
    """A fresh server per case (plain ``passages`` is a server-wide name)."""
    lib = tmp_path / "pdfs"
    lib.mkdir()
    p1 = make_paper_pdf(lib / "one.pdf", varied_paper(621, "Estuary Sediment Budgets"))
    p2 = make_paper_pdf(lib / "two.pdf", varied_paper(622, "Pulsar Timing Arrays"))
    # two wikis made with the embedded store, then moved to a server by the old code
    local_a = wiki_settings(tmp_path / "wa")
    local_b = wiki_settings(tmp_path / "wb")
    ingest_paper(local_a, p1, progress=False, embedder=embedder)
    ingest_paper(local_b, p2, progress=False, embedder=embedder)

    # case 1: the server's plain collection holds one wiki's papers only: renamed
    with _server(tmp_path / "server1") as (host, port):
        copied = _legacy_copy(local_a, host, port)
        forget_clients()
        sa = _as_server(local_a, host, port)
        va = open_vectors(sa, embedder)
        assert va.count() == len(copied)
        names = _collection_names(host, port)
        assert f"passages_{wiki_id(sa)}" in names and "passages" not in names
        got = va.get(include_embeddings=True)
        for pid, vec in zip(got["ids"], got["embeddings"], strict=True):
            assert np.allclose(np.asarray(vec), copied[pid], atol=1e-6)  # the stored vectors
        _lint_stores(tmp_path / "wa", host, port)

    # case 2: both wikis had written into the one plain collection: each copies its own out
    with _server(tmp_path / "server2") as (host, port):
        copied = _legacy_copy(local_a, host, port)
        copied_b = _legacy_copy(local_b, host, port)
        forget_clients()
        sa, sb = _as_server(local_a, host, port), _as_server(local_b, host, port)
        va = open_vectors(sa, embedder)
        assert va.paper_ids() == {"one.pdf"} and va.count() == len(copied)
        assert "passages" in _collection_names(host, port)  # still holds the other wiki's
        vb = open_vectors(sb, embedder)
        assert vb.paper_ids() == {"two.pdf"} and vb.count() == len(copied_b)
        got = vb.get(include_embeddings=True)
        for pid, vec in zip(got["ids"], got["embeddings"], strict=True):
            assert np.allclose(np.asarray(vec), copied_b[pid], atol=1e-6)
        _lint_stores(tmp_path / "wb", host, port)


def test_a_damaged_wiki_id_is_a_clear_error(tmp_path):
    from episteme.errors import EpistemeError

    s = wiki_settings(tmp_path / "w")
    s.data_dir.mkdir(parents=True)
    (s.data_dir / "wiki-id").write_text("not an id at all\n", encoding="ascii")
    with pytest.raises(EpistemeError, match="does not hold a wiki id"):
        wiki_id(s)
