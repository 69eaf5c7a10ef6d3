"""Sentence vectors stored at ingest (episteme.ingest.sentences, table ``sentence_vectors``)
and their use by the offline answerer, on real ingested papers (Attention + GAN), the real
model and real SQLite: ingest stores them, they equal a fresh embedding, they go with their
paper, an old store is still read and is backfilled, and the answerer scores candidates with
them instead of embedding sentences at query time."""

from __future__ import annotations

import json
import shutil
import sqlite3

import numpy as np
import pytest
from episteme.ingest.sentences import (
    SKIP_KINDS,
    backfill,
    clean_sentence,
    missing_papers,
    outdated_papers,
    section_sentences,
)
from episteme.query.chat import QueryEngine
from episteme.stores.sqlite import READABLE_FROM, SCHEMA_VERSION, Store, open_store
from ingested_wiki import wiki_settings
from serverlive import written_template  # noqa: F401  (fixture)

GAN = "gan_1406.2661v1.pdf"


@pytest.fixture
def wiki(written_template, tmp_path):  # noqa: F811
    w = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", w)
    (w / ".episteme" / "write.lock").unlink(missing_ok=True)
    return w


class Counting:
    """The real model, counting the texts it is asked to embed."""

    def __init__(self, inner):
        self.inner = inner
        self.texts: list[str] = []

    def encode(self, texts, *a, **k):
        self.texts.extend(texts)
        return self.inner.encode(texts, *a, **k)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _rows(wiki) -> dict[str, tuple]:
    with open_store(wiki_settings(wiki), readonly=True) as st:
        return {r[0]: (r[1], r[2], np.frombuffer(r[3], np.int32).reshape(-1, 2), r[4])
                for r in st.conn.execute(
                    "SELECT section_id, paper_id, model, spans, vectors FROM sentence_vectors")}


def test_ingest_stores_every_sections_sentences_and_they_equal_a_fresh_embedding(wiki, embedder):
    rows = _rows(wiki)
    with open_store(wiki_settings(wiki), readonly=True) as st:
        sections = st.sections()
    assert {s["section_id"] for s in sections} == set(rows)  # one row per section, none missing
    n_body = 0
    for s in sections:
        _pid, model, spans, _v = rows[s["section_id"]]
        assert model == embedder.name
        want = [] if s["kind"] in SKIP_KINDS else section_sentences(s["section_text"])
        assert [(int(a), int(b)) for a, b in spans] == [(a, b) for a, b, _t in want]
        n_body += len(want)
    assert n_body > 200  # two real papers' prose
    # the stored vectors are the model's embedding of the cleaned sentence (float16-rounded)
    body = next(s for s in sections if s["paper_id"] == GAN and s["kind"] == "body"
                and len(rows[s["section_id"]][2]) >= 3)
    with Store(wiki_settings(wiki).sqlite_path, readonly=True) as st:
        (spans, vecs), = st.sentence_vectors([body["section_id"]], embedder.name,
                                             embedder.dim).values()
    text = body["section_text"]
    fresh = embedder.encode([clean_sentence(text[a:b]) for a, b in spans])
    assert np.allclose(vecs, fresh, atol=2e-3)
    assert np.all(np.einsum("ij,ij->i", vecs, fresh) > 0.999)


def test_sentence_vectors_go_with_their_paper(wiki):
    settings = wiki_settings(wiki)
    with open_store(settings) as st:
        with st.transaction():
            assert st.delete_paper(GAN)
        left = {r[0] for r in st.conn.execute("SELECT DISTINCT paper_id FROM sentence_vectors")}
    assert GAN not in left and left  # the other paper's rows stay


def test_an_old_store_is_read_and_backfilled(wiki, embedder):
    settings = wiki_settings(wiki)
    before = _rows(wiki)
    # a store as an older episteme left it: schema 3, no sentence_vectors table
    con = sqlite3.connect(settings.sqlite_path)
    con.execute("DROP TABLE sentence_vectors")
    con.execute(f"PRAGMA user_version = {READABLE_FROM}")
    con.commit()
    con.close()
    with Store(settings.sqlite_path, readonly=True) as st:  # still readable, table optional
        assert st.schema_version() == READABLE_FROM and not st.has_table("sentence_vectors")
    counting = Counting(embedder)
    eng = QueryEngine(settings, embedder=counting, memo=False)
    try:  # the answerer falls back to embedding its candidates at query time
        res = eng.chat("What is the global optimum of the GAN minimax game?", mode="offline")
        assert not res.get("abstained") and len(counting.texts) > 5
    finally:
        eng.close()
    out = backfill(settings, embedder=embedder, progress=False)
    assert out["papers"] == 2 and out["sentences"] == sum(len(r[2]) for r in before.values())
    after = _rows(wiki)
    assert set(after) == set(before)
    for sid, (pid, model, spans, vecs) in before.items():
        assert after[sid][0] == pid and after[sid][1] == model
        assert np.array_equal(after[sid][2], spans)
        assert np.allclose(np.frombuffer(after[sid][3], np.float16).astype(np.float32),
                           np.frombuffer(vecs, np.float16).astype(np.float32), atol=2e-3)
    with Store(settings.sqlite_path) as st:
        assert st.schema_version() == SCHEMA_VERSION
        assert missing_papers(st, embedder.name) == []
    assert backfill(settings, embedder=embedder, progress=False)["papers"] == 0  # idempotent


def test_rows_split_by_an_older_splitter_are_refreshed(wiki, embedder, capsys):
    """A store whose rows an older sentence splitter wrote (here: one section's first two
    sentences stored as one span, as the splitter once merged a sentence into the equation
    label before it) is found outdated, its paper re-embedded by the backfill, and nothing
    else touched."""
    settings = wiki_settings(wiki)
    before = _rows(wiki)
    sid, (pid, model, spans, vecs) = next(
        (k, v) for k, v in before.items() if v[0] == GAN and len(v[2]) >= 3)
    merged = np.vstack([[spans[0][0], spans[1][1]], spans[2:]]).astype(np.int32)
    with open_store(settings) as st:
        assert outdated_papers(st, embedder.name) == []
        with st.transaction():
            st.conn.execute("UPDATE sentence_vectors SET spans = ?, vectors = ? WHERE section_id = ?",
                            (merged.tobytes(), np.frombuffer(vecs, np.float16)[embedder.dim:].tobytes(), sid))
        assert outdated_papers(st, embedder.name) == [GAN]
        assert missing_papers(st, embedder.name) == []  # a row exists: only the spans tell
        text = next(r[0] for r in st.conn.execute(
            "SELECT section_text FROM sections WHERE section_id = ?", (sid,)))
    # until the refresh, the answerer embeds a prose sentence the outdated row has no vector
    # for (here the second, stored merged with the first) rather than scoring it without one
    orphan = clean_sentence(text[spans[1][0]:spans[1][1]])
    eng = QueryEngine(settings, embedder=embedder, memo=False)
    try:
        q = f"Is it so that {orphan[0].lower()}{orphan[1:]}"
        ex = eng.offline.answer(q, eng.retrieve(q)["sections"], explain=True)
    finally:
        eng.close()
    cand = next(c for c in ex["candidates"] if c["text"] == orphan)
    assert cand["dense"] == 1.0  # scored by its own vector, embedded now
    from episteme.commands.rebuild import main as rebuild_main

    assert rebuild_main(["--sentences", "--wiki", str(wiki), "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["papers"] == 1  # GAN only; the sections and passages are not re-split
    after = _rows(wiki)
    assert np.array_equal(after[sid][2], spans)
    assert all(np.array_equal(after[k][2], v[2]) for k, v in before.items())
    with open_store(settings, readonly=True) as st:
        assert outdated_papers(st, embedder.name) == []


def test_the_answerer_scores_with_stored_vectors_instead_of_embedding(wiki, embedder):
    q = "How are the queries, keys and values combined in scaled dot-product attention?"
    counts = {}
    answers = {}
    for stored in (True, False):
        counting = Counting(embedder)
        eng = QueryEngine(wiki_settings(wiki), embedder=counting)
        try:
            eng.chat("warm up", mode="offline")
            eng.offline.use_stored = stored
            counting.texts.clear()
            res = eng.chat(q, mode="offline")
        finally:
            eng.close()
        counts[stored] = list(counting.texts)
        answers[stored] = res
    assert not answers[True].get("abstained")
    # with stored vectors: the question and at most a few wiki-only sentences are embedded; the
    # trace of the answer embeds none of the answer's sentences again (primed memo)
    cited = [c["sentence"] for c in answers[True]["citations"] if c.get("paper")]
    assert cited and not set(cited) & set(counts[True])
    assert len(counts[True]) < len(counts[False]) and len(counts[True]) <= 10


def test_dense_sentence_search_finds_a_sentence_by_its_meaning(wiki, embedder):
    eng = QueryEngine(wiki_settings(wiki), embedder=embedder)
    try:
        off = eng.offline
        rows = _rows(wiki)
        sid = next(s for s, r in rows.items() if r[0] == GAN and len(r[2]) > 4)
        with open_store(wiki_settings(wiki), readonly=True) as st:
            text = st.section(sid)["section_text"]
        a, b = (int(x) for x in rows[sid][2][2])
        qvec = embedder.encode([clean_sentence(text[a:b])])[0]
        hits = off._dense_sentences(qvec, [GAN, "attention_1706.03762v5.pdf"])
        best = max(hits, key=lambda h: h[2])
        assert (best[0], best[1]) == (sid, a) and best[2] > 0.99
        off.use_stored = False
        assert off._dense_sentences(qvec, [GAN]) == []
    finally:
        eng.close()
