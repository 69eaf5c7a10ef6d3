"""The wiki-section index: refresh by content hash, lexical + semantic search fused."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from episteme.query.wikisearch import WikiSectionIndex
from episteme.wiki.edit import WikiWriter
from helpers.wikis import make_wiki
from ingested_wiki import wiki_settings


@pytest.fixture
def small_wiki(tmp_path: Path):
    wiki = tmp_path / "wiki"
    ids = make_wiki(wiki)
    return wiki, ids


def test_refresh_counts_and_is_cheap_when_unchanged(small_wiki, embedder):
    wiki, ids = small_wiki
    idx = WikiSectionIndex(wiki_settings(wiki), embedder)
    first = idx.refresh()
    assert first["added"] == 4 and first["updated"] == 0 and first["removed"] == 0
    second = idx.refresh()
    assert second["added"] == second["updated"] == second["removed"] == 0
    assert second["pages_read"] == 0  # unchanged pages are not even read
    assert sorted(idx.ids()) == sorted(ids.values())


def test_search_finds_paraphrase_and_exact_terms(small_wiki, embedder):
    wiki, ids = small_wiki
    idx = WikiSectionIndex(wiki_settings(wiki), embedder)
    hits = idx.search("why scale the softmax inputs by sqrt of d_k?", k=2)
    assert hits[0]["id"] == ids["Scaled dot-product attention"]
    assert set(hits[0]) >= {"id", "page", "title", "description", "text", "score", "sources"}
    assert hits[0]["page"] == "transformer.md" and hits[0]["sources"] == ["attention.pdf"]
    # a pure paraphrase with no shared content word: only the semantic side can find it
    hits = idx.search("skip links that make it possible to optimise extremely deep nets", k=1)
    assert hits[0]["id"] == ids["Residual connections"]
    # a number only BM25 can match
    hits = idx.search("28.4", k=1)
    assert hits[0]["id"] == ids["Training cost of the big model"]
    # exclusion
    hits = idx.search("generator discriminator", k=4, exclude_ids=[ids["Adversarial training game"]])
    assert ids["Adversarial training game"] not in [h["id"] for h in hits]


def test_refresh_picks_up_edits_and_removals(small_wiki, embedder):
    wiki, ids = small_wiki
    settings = wiki_settings(wiki)
    idx = WikiSectionIndex(settings, embedder)
    idx.refresh()
    gan = ids["Adversarial training game"]
    with WikiWriter(wiki, op="test") as w:
        w.update_section("gan", gan, body="Mode collapse: the generator maps many noise vectors "
                         "to one output, the Helvetica scenario.")
    res = idx.refresh()
    assert res["updated"] == 1 and res["added"] == 0 and res["removed"] == 0
    assert idx.search("Helvetica scenario", k=1)[0]["id"] == gan
    os.remove(wiki / "resnet.md")
    res = idx.refresh()
    assert res["removed"] == 1
    assert ids["Residual connections"] not in idx.ids()
    # the semantic side forgot it too
    assert ids["Residual connections"] not in [s for s, _ in idx.semantic("residual identity shortcut", 10)]


def test_term_frequencies_ask_fts5_as_the_tracer_does(small_wiki, embedder):
    """A stem is asked through the question's own word: FTS5's Porter stemmer reads the stem
    "wors" (worse) as "wor", a prefix of "work", so a bare prefix query counted every section
    about work as one about being worse."""
    from episteme.query.text import stem, surface_words

    wiki, ids = small_wiki
    idx = WikiSectionIndex(wiki_settings(wiki), embedder)
    idx.refresh()
    with WikiWriter(wiki, op="test") as w:
        w.update_section("gan", ids["Adversarial training game"],
                         body="The generator gets worse when the discriminator wins early.")
        w.update_section("resnet", ids["Residual connections"],
                         body="Shortcuts work: deeper networks work as well as shallow ones.")
    idx.refresh()
    question = "When does the generator get worse?"
    term, surface = stem("worse"), surface_words([question])
    df, total = idx.term_df([term], surface)
    assert total >= 2 and df[term] == 1
    assert idx.term_df([term])[0][term] == 2  # the bare prefix: "work" counted too
    pages = idx.pages_with(term, ["gan.md", "resnet.md"], surface[term])
    assert pages == {"gan.md"}


def test_index_is_deletable(small_wiki, embedder):
    wiki, ids = small_wiki
    settings = wiki_settings(wiki)
    idx = WikiSectionIndex(settings, embedder)
    idx.refresh()
    idx.close()
    (settings.data_dir / "wiki_index.db").unlink()
    for extra in ("wiki_index.db-wal", "wiki_index.db-shm"):
        (settings.data_dir / extra).unlink(missing_ok=True)
    idx2 = WikiSectionIndex(settings, embedder)
    res = idx2.refresh()
    assert res["rebuilt"] and res["added"] == 4
    # no duplicate vectors left over from the first build
    assert idx2.vectors.count("wiki_sections") == sum(1 for _ in ids) * 1
    assert idx2.search("minimax game", k=1)[0]["id"] == ids["Adversarial training game"]


def test_lost_chroma_collection_is_rebuilt(small_wiki, embedder):
    wiki, ids = small_wiki
    settings = wiki_settings(wiki)
    idx = WikiSectionIndex(settings, embedder)
    idx.refresh()
    idx.vectors.drop("wiki_sections")
    res = WikiSectionIndex(settings, embedder).refresh()
    assert res["rebuilt"] and res["added"] == 4
    shutil.rmtree(wiki / ".episteme" / "tmp", ignore_errors=True)
