"""The ingest pipeline on real papers: raw/ + SQLite + Chroma agree, re-ingest/replace/force,
all-or-nothing on failure, remove, rebuild."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from episteme.errors import EpistemeError, NotFoundError
from episteme.ingest.pipeline import ingest_paper, rebuild, remove_paper
from episteme.stores.sqlite import Store, open_store, search_passages_fts
from episteme.stores.vectors import PASSAGES, VectorStore, open_vectors, scope_where
from helpers.papers import ATT, GAN, snapshot, subset_pdf
from ingested_wiki import wiki_settings


def test_ingest_json_describes_every_section(ingested_papers):
    att = ingested_papers[ATT]
    assert att["status"] == "ingested"
    assert att["title"] == "Attention Is All You Need"
    assert "Ashish Vaswani" in att["authors"]
    assert att["pages"] == 15 and att["file"] == f"raw/{ATT}"
    ids = [s["section_id"] for s in att["sections"]]
    assert len(ids) == len(set(ids)) == att["sections_indexed"]
    assert all(i.startswith(f"{ATT}#") for i in ids)
    assert f"{ATT}#3.2" in ids and f"{ATT}#abstract" in ids
    keys = {"section_id", "number", "title", "level", "page_start", "page_end", "chars", "passages"}
    for s in att["sections"]:
        assert keys <= set(s)
        assert 1 <= s["page_start"] <= s["page_end"] <= att["pages"]
    # every passage belongs to a section or to an object (a table, figure or footnote)
    assert sum(s["passages"] for s in att["sections"]) + sum(
        o["passages"] for o in att["objects"]) == att["passages"] > 20
    labels = {o["label"]: o for o in att["objects"]}
    assert labels["Table 2"]["page"] == 8 and labels["Table 2"]["passages"] >= 1
    assert labels["Table 2"]["id"] == f"{ATT}#table-2"
    refs = [s for s in att["sections"] if s["kind"] == "references"]
    assert refs and all(s["passages"] == 0 and s["chars"] > 1000 for s in refs)
    assert ingested_papers[GAN]["pages"] == 9


def test_sqlite_and_chroma_agree_and_passages_fit_the_model(ingested_wiki, embedder):
    s = wiki_settings(ingested_wiki)
    with open_store(s, readonly=True) as st:
        sections = {x["section_id"]: x for x in st.sections()}
        passages = st.passages()
        assert {p["paper_id"] for p in passages} == {ATT, GAN}
    got = open_vectors(s, embedder).get()
    assert sorted(got["ids"]) == sorted(p["id"] for p in passages)
    meta = dict(zip(got["ids"], got["metadatas"], strict=True))
    for p in passages:
        sec = sections[p["section_id"]]
        assert sec["section_text"][p["char_start"]:p["char_end"]] == p["text"]
        assert sec["page_start"] <= p["page"] <= sec["page_end"]
        assert embedder.count_tokens(p["text"]) <= 256
        m = meta[p["id"]]
        assert (m["paper"], m["section_id"], m["page"]) == (p["paper_id"], p["section_id"], p["page"])
    assert (ingested_wiki / "raw" / ATT).read_bytes()[:5] == b"%PDF-"


def test_vector_and_lexical_search_find_the_right_section(ingested_wiki, embedder):
    s = wiki_settings(ingested_wiki)
    vs = open_vectors(s, embedder)
    q = embedder.encode(["dot products are scaled by one over the square root of d_k"])
    hits = vs.query_passages(q, 3, where=scope_where([ATT]))[0]
    with open_store(s, readonly=True) as st:
        parent = {o["id"]: o["section"] for o in st.objects(ATT)}
    # the best hit is in 3.2, or is a footnote printed in 3.2 (footnote 4: why dot products grow)
    top = hits[0]["metadata"]["section_id"]
    assert top.startswith(f"{ATT}#3.2") or parent.get(top, "").startswith("3.2"), top
    assert any(h["metadata"]["section_id"].startswith(f"{ATT}#3.2") for h in hits)
    gan_only = vs.query_passages(q, 3, where=scope_where([GAN]))[0]
    assert {h["metadata"]["paper"] for h in gan_only} == {GAN}
    assert search_passages_fts(s, "minimax", [GAN], limit=1)[0]["paper_id"] == GAN
    assert search_passages_fts(wiki_settings(ingested_wiki.parent / "empty"), "minimax") == []
    with open_store(s, readonly=True) as st:
        lex = st.search_passages_fts("discriminator minimax", limit=5)
        assert lex and lex[0]["paper_id"] == GAN
        assert st.search_passages_fts("minimax", paper_ids=[ATT]) == []
        assert st.search_passages_fts("minimax", paper_ids=[GAN])


def test_reingest_unchanged_is_a_noop_and_force_redoes(ingested_wiki, papers_dir, tmp_path, embedder):
    s = wiki_settings(ingested_wiki)
    one = subset_pdf(papers_dir / GAN, tmp_path / "gan page one.pdf", range(0, 1))
    first = ingest_paper(s, one, progress=False, embedder=embedder)
    assert first["status"] == "ingested" and first["paper"].startswith("gan_page_one-")
    before = snapshot(s)
    out = ingest_paper(s, one, progress=False, embedder=embedder)
    assert out["status"] == "unchanged" and "already ingested" in out["message"]
    assert snapshot(s) == before
    assert {k: v for k, v in out.items() if k not in ("status", "message", "seconds")} == {
        k: v for k, v in first.items() if k not in ("status", "seconds")}
    forced = ingest_paper(s, one, force=True, progress=False, embedder=embedder)
    assert forced["status"] == "replaced"
    assert [x["section_id"] for x in forced["sections"]] == [x["section_id"] for x in out["sections"]]
    assert forced["ingested_at"] >= out["ingested_at"]
    assert open_vectors(s, embedder).count() == len(before["chroma"])


def test_changed_file_with_same_name_replaces_rows_and_vectors(ingested_wiki, papers_dir, tmp_path,
                                                                embedder):
    s = wiki_settings(ingested_wiki)
    small = subset_pdf(papers_dir / ATT, tmp_path / ATT, range(0, 3))
    out = ingest_paper(s, small, progress=False, embedder=embedder)
    assert out["status"] == "replaced" and out["pages"] == 3
    assert (ingested_wiki / "raw" / ATT).read_bytes() == small.read_bytes()
    vs = open_vectors(s, embedder)
    assert len(vs.paper_vectors(ATT)["ids"]) == out["passages"]
    with open_store(s, readonly=True) as st:
        assert st.paper(ATT)["pages"] == 3
        assert len(st.passages(paper_id=ATT)) == out["passages"]
        assert max(x["page_end"] for x in st.sections(ATT)) <= 3
        assert st.paper(GAN) is not None  # the other paper untouched


@pytest.mark.parametrize("where", ["chroma_add_raises", "chroma_add_then_raises", "commit_raises"])
def test_failure_after_sqlite_write_leaves_everything_as_before(
    ingested_wiki, papers_dir, tmp_path, embedder, monkeypatch, where
):
    """Replace an existing paper and fail late: raw/, SQLite and Chroma exactly as before."""
    s = wiki_settings(ingested_wiki)
    small = subset_pdf(papers_dir / ATT, tmp_path / ATT, range(0, 1))
    before = snapshot(s)
    calls = []

    def boom(*a, **k):
        calls.append(where)
        raise RuntimeError(f"injected failure: {where}")

    if where == "chroma_add_raises":
        monkeypatch.setattr(VectorStore, "add", boom)
    elif where == "chroma_add_then_raises":
        real_add = VectorStore.add

        def add_then_boom(self, *a, **k):
            real_add(self, *a, **k)
            boom()

        monkeypatch.setattr(VectorStore, "add", add_then_boom)
    else:
        monkeypatch.setattr(Store, "commit", boom)
    with pytest.raises(EpistemeError, match="failed and was undone: RuntimeError: injected"):
        ingest_paper(s, small, progress=False, embedder=embedder)
    assert calls == [where]
    monkeypatch.undo()
    assert snapshot(s) == before
    assert not list((ingested_wiki / ".episteme" / "tmp").glob("*"))
    if where != "commit_raises":
        return
    # and a new paper failing at commit leaves no trace either
    monkeypatch.setattr(Store, "commit", boom)
    other = subset_pdf(papers_dir / ATT, tmp_path / "new paper.pdf", range(0, 1))
    with pytest.raises(EpistemeError, match="injected"):
        ingest_paper(s, other, progress=False, embedder=embedder)
    monkeypatch.undo()
    assert snapshot(s) == before


def test_remove_deletes_rows_vectors_and_raw_and_lists_citing_sections(ingested_wiki, embedder):
    s = wiki_settings(ingested_wiki)
    (ingested_wiki / "index.json").write_text(json.dumps({
        "sec_001": [ATT, GAN], "sec_002": GAN, "sec_003": [ATT], "sec_010": GAN,
    }))
    gan_vectors = len(open_vectors(s, embedder).paper_vectors(GAN)["ids"])
    out = remove_paper(s, str(ingested_wiki / "raw" / GAN))  # a path works as well as the id
    assert out["status"] == "removed" and out["paper"] == GAN
    assert out["cited_by"] == ["sec_001", "sec_002", "sec_010"]
    assert out["vectors_removed"] == gan_vectors > 0 and out["raw_removed"]
    assert not (ingested_wiki / "raw" / GAN).exists()
    assert open_vectors(s, embedder).paper_ids() == {ATT}
    with open_store(s, readonly=True) as st:
        assert st.paper(GAN) is None and st.sections(GAN) == []
        assert st.search_passages_fts("minimax") == []
        assert st.paper(ATT) is not None
    with pytest.raises(NotFoundError):
        remove_paper(s, GAN)


def test_rebuild_recreates_sqlite_and_chroma_from_raw(ingested_wiki, embedder):
    s = wiki_settings(ingested_wiki)
    remove_paper(s, ATT)  # one paper is enough (and keeps the test fast)
    with open_store(s, readonly=True) as st:
        want_sections = [x["section_id"] for x in st.sections()]
        want_passages = {p["id"]: p["text"] for p in st.passages()}
    s.sqlite_path.unlink()
    for extra in ("-wal", "-shm"):
        Path(str(s.sqlite_path) + extra).unlink(missing_ok=True)
    open_vectors(s, embedder).drop(PASSAGES)
    out = rebuild(s, progress=False, embedder=embedder)
    assert out["failed"] == [] and [p["paper"] for p in out["papers"]] == [GAN]
    with open_store(s, readonly=True) as st:
        assert [x["section_id"] for x in st.sections()] == want_sections
        assert {p["id"]: p["text"] for p in st.passages()} == want_passages
    assert out["passages"] == len(want_passages) == open_vectors(s, embedder).count()


def test_model_change_is_refused_until_rebuild(ingested_wiki, papers_dir, embedder, tmp_path):
    s = wiki_settings(ingested_wiki)
    remove_paper(s, ATT)
    vs = open_vectors(s, embedder)
    vs.drop(PASSAGES)
    VectorStore(s, "another-model", 384).collection(PASSAGES)  # recorded with another model
    small = subset_pdf(papers_dir / GAN, tmp_path / "g.pdf", range(0, 1))
    before = snapshot_without_chroma(s)
    with pytest.raises(EpistemeError, match="episteme rebuild"):
        ingest_paper(s, small, progress=False, embedder=embedder)
    assert snapshot_without_chroma(s) == before
    out = rebuild(s, progress=False, embedder=embedder)
    assert out["passages"] > 0
    assert open_vectors(s, embedder).collection().metadata["embedding_model"] == "all-MiniLM-L6-v2"


def snapshot_without_chroma(settings) -> tuple:
    files = sorted(p.name for p in settings.raw_dir.iterdir())
    con = sqlite3.connect(settings.sqlite_path)
    dump = list(con.iterdump())
    con.close()
    return files, dump


def test_corrupt_database_says_rebuild_and_rebuild_recovers(tmp_path, papers_dir, embedder):
    s = wiki_settings(tmp_path / "w")
    one = subset_pdf(papers_dir / GAN, tmp_path / "g.pdf", range(0, 1))
    first = ingest_paper(s, one, progress=False, embedder=embedder)
    for extra in ("-wal", "-shm"):
        Path(str(s.sqlite_path) + extra).unlink(missing_ok=True)
    s.sqlite_path.write_bytes(b"garbage, not SQLite" * 500)
    other = subset_pdf(papers_dir / ATT, tmp_path / "a.pdf", range(0, 1))
    with pytest.raises(EpistemeError, match="episteme rebuild"):
        ingest_paper(s, other, progress=False, embedder=embedder)
    out = rebuild(s, progress=False, embedder=embedder)
    assert [p["paper"] for p in out["papers"]] == ["g.pdf"] and out["failed"] == []
    with open_store(s, readonly=True) as st:
        assert len(st.passages(paper_id="g.pdf")) == first["passages"] == out["passages"]
    assert not s.sqlite_path.with_name(s.sqlite_path.name + ".rebuild").exists()


def test_cite_prints_bibtex_from_the_stored_metadata(ingested_wiki, capsys):
    from episteme.commands.cite import main as cite_main

    assert cite_main([ATT, "--wiki", str(ingested_wiki)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("@inproceedings{vaswani2017attention,")
    assert "title = {{Attention Is All You Need}}" in out
    assert "Łukasz Kaiser and Illia Polosukhin" in out and "eprint = {1706.03762}" in out
    assert cite_main(["no_such_paper.pdf", "--wiki", str(ingested_wiki)]) == 1
    with open_store(wiki_settings(ingested_wiki), readonly=True) as st:
        objs = {o["label"]: o for o in st.objects(ATT)}
        assert objs["Table 2"]["page"] == 8 and len(objs["Table 2"]["bbox"]) == 4
        assert st.paper(ATT)["meta"]["arxiv_id"] == "1706.03762v5"
