"""Chroma (embedded): explicit embeddings, cosine space, model recorded and enforced, scoping."""

from __future__ import annotations

import pytest
from episteme.errors import EpistemeError
from episteme.stores.vectors import PASSAGES, WIKI_SECTIONS, VectorStore, open_vectors, scope_where
from ingested_wiki import wiki_settings

TEXTS = {
    "a.pdf#1~0": ("a.pdf", "Scaled dot-product attention divides the logits by the square root of the key size."),
    "a.pdf#1~1": ("a.pdf", "The encoder is a stack of six identical layers."),
    "b.pdf#2~0": ("b.pdf", "The generator and discriminator play a minimax game."),
    "b.pdf#2~1": ("b.pdf", "Dropout was applied when training the discriminator net."),
}


def _fill(vs: VectorStore, embedder) -> None:
    ids = list(TEXTS)
    vecs = embedder.encode([TEXTS[i][1] for i in ids])
    metas = [{"paper": TEXTS[i][0], "section_id": i.split("~")[0], "page": 1, "ord": n}
             for n, i in enumerate(ids)]
    vs.add(ids, vecs, metas, [TEXTS[i][1] for i in ids])


def test_add_query_scope_and_metadata(tmp_path, embedder):
    s = wiki_settings(tmp_path / "w")
    vs = open_vectors(s, embedder)
    _fill(vs, embedder)
    assert vs.count() == 4
    col = vs.collection()
    assert col.configuration["hnsw"]["space"] == "cosine"
    assert col.metadata["embedding_model"] == "all-MiniLM-L6-v2"
    q = embedder.encode(["why divide attention scores by sqrt(d_k)?"])
    hits = vs.query_passages(q, 2)[0]
    assert hits[0]["id"] == "a.pdf#1~0"
    assert 0.3 < hits[0]["similarity"] <= 1.0
    assert hits[0]["similarity"] == pytest.approx(1 - hits[0]["distance"])
    assert hits[0]["metadata"]["section_id"] == "a.pdf#1"
    assert hits[0]["document"].startswith("Scaled dot-product")
    scoped = vs.query_passages(q, 4, where=scope_where(["b.pdf"]))[0]
    assert {h["metadata"]["paper"] for h in scoped} == {"b.pdf"}
    both = vs.query_passages(q, 4, where=scope_where(["a.pdf", "b.pdf"]))[0]
    assert len(both) == 4
    assert vs.paper_ids() == {"a.pdf", "b.pdf"}


def test_cosine_similarity_equals_dot_product_of_normalised_vectors(tmp_path, embedder):
    vs = open_vectors(wiki_settings(tmp_path / "w"), embedder)
    _fill(vs, embedder)
    q = embedder.encode(["minimax game between two networks"])
    hit = vs.query_passages(q, 1)[0][0]
    want = float(embedder.encode([TEXTS[hit["id"]][1]])[0] @ q[0])
    assert hit["similarity"] == pytest.approx(want, abs=1e-4)


def test_delete_and_restore_a_paper(tmp_path, embedder):
    vs = open_vectors(wiki_settings(tmp_path / "w"), embedder)
    _fill(vs, embedder)
    saved = vs.paper_vectors("a.pdf")
    assert sorted(saved["ids"]) == ["a.pdf#1~0", "a.pdf#1~1"]
    vs.delete_paper("a.pdf")
    assert vs.count() == 2 and vs.paper_ids() == {"b.pdf"}
    vs.restore(saved)
    assert vs.count() == 4
    q = embedder.encode([TEXTS["a.pdf#1~1"][1]])
    assert vs.query_passages(q, 1)[0][0]["similarity"] == pytest.approx(1.0, abs=1e-4)


def test_other_model_is_a_clear_error_naming_rebuild(tmp_path, embedder):
    s = wiki_settings(tmp_path / "w")
    _fill(open_vectors(s, embedder), embedder)
    with pytest.raises(EpistemeError, match="episteme rebuild") as e:
        VectorStore(s, "some-other-model", 768).collection(PASSAGES)
    assert "all-MiniLM-L6-v2" in e.value.message
    # persisted: a fresh client in another process sees the same record
    import subprocess
    import sys

    code = (
        "from episteme.config import load_settings\n"
        "from episteme.stores.vectors import VectorStore\n"
        f"s = load_settings({str(tmp_path / 'w')!r}, env={{}}, dotenv=None)\n"
        "try:\n    VectorStore(s, 'other', 384).collection()\nexcept Exception as e:\n    print(e)\n"
        "print(VectorStore(s, 'all-MiniLM-L6-v2', 384).count())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "episteme rebuild" in out.stdout and out.stdout.strip().endswith("4")


def test_second_collection_for_wiki_sections(tmp_path, embedder):
    vs = open_vectors(wiki_settings(tmp_path / "w"), embedder)
    _fill(vs, embedder)
    v = embedder.encode(["Wiki section about attention."])
    vs.add(["sec_001"], v, [{"page": "attention.md"}], ["Wiki section about attention."],
           collection=WIKI_SECTIONS)
    assert vs.count(WIKI_SECTIONS) == 1 and vs.count(PASSAGES) == 4
    assert vs.query(v, 3, collection=WIKI_SECTIONS)[0][0]["id"] == "sec_001"
    vs.drop(WIKI_SECTIONS)
    vs.drop(WIKI_SECTIONS)  # dropping a missing collection is fine
    assert vs.count(WIKI_SECTIONS) == 0  # re-created empty on next use


def test_long_running_process_sees_vectors_another_process_added(tmp_path, embedder):
    """An embedded client keeps its index in memory; writers bump a token so readers reopen."""
    import subprocess
    import sys

    s = wiki_settings(tmp_path / "w")
    vs = open_vectors(s, embedder)
    _fill(vs, embedder)
    q = embedder.encode(["a brand new passage about convolutional image classifiers"])
    assert len(vs.query_passages(q, 10)[0]) == 4
    code = (
        "from episteme.config import load_settings\n"
        "from episteme.stores.embedding import load_embedder\n"
        "from episteme.stores.vectors import open_vectors\n"
        f"s = load_settings({str(tmp_path / 'w')!r}, env={{}}, dotenv=None)\n"
        "e = load_embedder()\n"
        "t = 'a brand new passage about convolutional image classifiers'\n"
        "open_vectors(s, e).add(['c.pdf#1~0'], e.encode([t]), [{'paper': 'c.pdf'}], [t])\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    hits = vs.query_passages(q, 10)[0]
    assert len(hits) == 5 and hits[0]["id"] == "c.pdf#1~0"
    assert vs.query_passages(q, 3, where=scope_where([]))[0] == []
