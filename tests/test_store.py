"""SQLite store: schema/migrations, one-transaction replace, cascades into FTS, safe FTS queries."""

from __future__ import annotations

import sqlite3

import pytest
from episteme.errors import EpistemeError
from episteme.paper import PaperSection
from episteme.stores.sqlite import (
    SCHEMA_VERSION,
    PaperRow,
    PassageRow,
    Store,
    fts5_quote,
    section_id_for,
)


def _paper(pid="p.pdf", sha="a" * 64, *, texts=("Scaled dot-product attention uses queries.",
                                                  "Residual connections ease optimisation.")):
    paper = PaperRow(pid, f"raw/{pid}", sha, "A Title", ["Ann Author", "Bo Béla"], 3,
                     "2026-01-01T00:00:00+00:00", True, [], "all-MiniLM-L6-v2")
    taken: set[str] = set()
    sections = []
    for i, text in enumerate(texts):
        sid = section_id_for(pid, str(i + 1), "t", taken)
        s = PaperSection(str(i + 1), f"Section {i + 1}", 1, "body", 1, 2, text, id=sid, ord=i)
        s.passages.append(PassageRow(f"{sid}~0", 0, text, 1 + i, 0, len(text)))
        sections.append(s)
    return paper, sections


def test_fresh_database_has_schema_wal_and_foreign_keys(tmp_path):
    with Store(tmp_path / "s.db") as st:
        assert st.schema_version() == SCHEMA_VERSION >= 1
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert st.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    # reopening does not re-run migrations (would fail: tables exist)
    with Store(tmp_path / "s.db") as st:
        assert st.counts() == {"papers": 0, "sections": 0, "passages": 0}


def test_newer_schema_and_garbage_files_are_clear_errors(tmp_path):
    db = tmp_path / "new.db"
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    con.close()
    with pytest.raises(EpistemeError, match="newer episteme"):
        Store(db)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(EpistemeError, match="rebuild"):
        Store(junk)
    with pytest.raises(EpistemeError, match="no SQLite store"):
        Store(tmp_path / "missing.db", readonly=True)


def test_write_read_replace_and_cascade(tmp_path):
    st = Store(tmp_path / "s.db")
    paper, sections = _paper()
    with st.transaction():
        st.write_paper(paper, sections)
    got = st.paper("p.pdf")
    assert got["authors"] == ["Ann Author", "Bo Béla"] and got["used_outline"] is True
    assert [s["section_id"] for s in st.sections("p.pdf")] == ["p.pdf#1", "p.pdf#2"]
    assert st.sections("p.pdf")[0]["section_title"] == "1 Section 1"
    assert st.sections("p.pdf")[0]["source_filename"] == "p.pdf"
    assert st.passages_by_id(["p.pdf#2~0"])["p.pdf#2~0"]["page"] == 2
    assert len(st.search_passages_fts("attention")) == 1
    # replace with one section: old rows and their FTS entries are gone
    paper2, sections2 = _paper(sha="b" * 64, texts=("Layer normalisation only.",))
    with st.transaction():
        st.write_paper(paper2, sections2)
    assert st.counts() == {"papers": 1, "sections": 1, "passages": 1}
    assert st.search_passages_fts("attention") == []
    assert st.search_passages_fts("normalisation")[0]["id"] == "p.pdf#1~0"
    # delete cascades to sections, passages and the FTS index
    with st.transaction():
        assert st.delete_paper("p.pdf")
    assert st.counts() == {"papers": 0, "sections": 0, "passages": 0}
    assert st.conn.execute("SELECT count(*) FROM passages_fts").fetchone()[0] == 0
    st.close()


def test_one_section_type_from_splitter_through_store_to_writer(tmp_path):
    """The splitter, the store and the writer share one PaperSection: what ingest writes is
    what the writer reads back (same fields, same labels the sources and plans show)."""
    from episteme.compile import writer
    from episteme.pdf import split

    assert split.PaperSection is writer.PaperSection is PaperSection
    paper, sections = _paper()
    with Store(tmp_path / "s.db") as st:
        with st.transaction():
            st.write_paper(paper, sections)
        back = st.paper_sections("p.pdf")
    assert [(s.id, s.ord, s.number, s.title, s.level, s.kind, s.page_start, s.page_end, s.text)
            for s in back] == [
        (s.id, s.ord, s.number, s.title, s.level, s.kind, s.page_start, s.page_end, s.text)
        for s in sections]
    assert back[0].section_title == "1 Section 1" and back[0].label == "§1 Section 1"
    assert back[0].pages_label == "pp. 1–2" and back[0].page_at(5) == 1


def test_rollback_leaves_previous_rows(tmp_path):
    st = Store(tmp_path / "s.db")
    paper, sections = _paper()
    with st.transaction():
        st.write_paper(paper, sections)
    paper2, sections2 = _paper(sha="c" * 64, texts=("Completely different text.",))
    st.begin()
    st.write_paper(paper2, sections2)
    st.rollback()
    assert st.paper("p.pdf")["sha256"] == "a" * 64
    assert st.counts()["passages"] == 2
    assert st.search_passages_fts("different") == []
    with pytest.raises(RuntimeError):
        st.write_paper(paper2, sections2)  # outside a transaction
    st.close()


def test_section_ids_are_readable_and_deduplicated():
    taken: set[str] = set()
    assert section_id_for("a.pdf", "3.2", "Multi-Head", taken) == "a.pdf#3.2"
    assert section_id_for("a.pdf", "A.", "Appendix", taken) == "a.pdf#A"
    assert section_id_for("a.pdf", None, "Related Work", taken) == "a.pdf#related-work"
    assert section_id_for("a.pdf", None, "Related  work!", taken) == "a.pdf#related-work-2"
    assert section_id_for("a.pdf", "3.2", "Again", taken) == "a.pdf#3.2-2"
    assert section_id_for("a.pdf", None, "", taken) == "a.pdf#section"


@pytest.mark.parametrize(
    "query",
    ['attention"', "NEAR(attention queries)", "att*", "text: attention", "-attention",
     "attention AND OR NOT", "(((", "'; DROP TABLE passages; --", "^attention"],
)
def test_fts_query_is_quoted_safely(tmp_path, query):
    with Store(tmp_path / "s.db") as st:
        paper, sections = _paper()
        with st.transaction():
            st.write_paper(paper, sections)
        hits = st.search_passages_fts(query)
        assert all(h["paper_id"] == "p.pdf" for h in hits)
        assert st.counts()["passages"] == 2


def test_fts_scoping_ranking_and_empty_queries(tmp_path):
    with Store(tmp_path / "s.db") as st:
        for pid, texts in (("a.pdf", ("attention attention attention heads", "unrelated words")),
                           ("b.pdf", ("attention once among many other words here",))):
            paper, sections = _paper(pid, texts=texts)
            with st.transaction():
                st.write_paper(paper, sections)
        hits = st.search_passages_fts("attention heads")
        assert [h["paper_id"] for h in hits] == ["a.pdf", "b.pdf"]
        assert hits[0]["score"] > hits[1]["score"]
        assert [h["paper_id"] for h in st.search_passages_fts("attention", ["b.pdf"])] == ["b.pdf"]
        assert st.search_passages_fts("attention", []) == []
        assert st.search_passages_fts("  ?! ") == []
        assert st.search_passages_fts("attention heads", match_all=True)[0]["paper_id"] == "a.pdf"
        assert len(st.search_passages_fts("attention heads", match_all=True)) == 1
    assert fts5_quote('say "hi"') == '"say" OR "hi"'
