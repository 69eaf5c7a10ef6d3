"""Growth that stays flat (issue 15 item 3), the small CI version of benchmarks/bench_growth.py.

Twelve small generated papers are ingested and written (real split, real embedder, real SQLite
and Chroma, the extractive writer).  Timing on a shared 2-core machine proves nothing, so the
tests count the work that used to grow with the library, and assert it stays bounded by what
the one new paper brings:

* writing a paper parses no ``index.md`` entry (finding a section to merge into used to parse
  the whole index, and so did the section index's refresh);
* the wiki-section index's refresh after a paper's write reads the stored rows of that paper's
  pages only, and a query's refresh with nothing changed reads none;
* appending to ``log.md`` reads its last bytes, not the whole log.
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pdfgen
import pytest

N_PAPERS = 12


@pytest.fixture(scope="module")
def grown(tmp_path_factory, embedder):
    """A wiki grown paper by paper, with the work counted for every write."""
    from episteme.commands.init import init_wiki
    from episteme.compile import writer as writer_mod
    from episteme.config import load_settings
    from episteme.ingest.pipeline import ingest_paper
    from episteme.query import wikisearch
    from episteme.wiki import edit, index

    root = tmp_path_factory.mktemp("growth")
    wiki = root / "wiki"
    init_wiki(wiki)
    settings = load_settings(wiki, env={}, dotenv=None)
    counts = {"entries_parsed": 0, "find_section": 0, "refreshes": []}
    real_parse, real_find = index.parse_index_md, edit.find_section
    real_refresh = wikisearch.WikiSectionIndex.refresh

    def counting_parse(text):
        out = real_parse(text)
        counts["entries_parsed"] += len(out.entries)
        return out

    def counting_find(wiki_, sid):
        counts["find_section"] += 1
        return real_find(wiki_, sid)

    def counting_refresh(self):
        out = real_refresh(self)
        counts["refreshes"].append(out)
        return out

    mp = pytest.MonkeyPatch()
    from episteme.wiki import indexfiles, upkeep

    for mod in (index, edit, indexfiles, upkeep):  # every module of the write path that reads it
        if hasattr(mod, "parse_index_md"):
            mp.setattr(mod, "parse_index_md", counting_parse)
    mp.setattr(edit, "find_section", counting_find)
    mp.setattr(wikisearch.WikiSectionIndex, "refresh", counting_refresh)
    per_paper = []
    try:
        for i in range(N_PAPERS):
            pdf = pdfgen.make_paper_pdf(root / f"grow{i:02d}.pdf", pdfgen.varied_paper(700 + i))
            res = ingest_paper(settings, pdf, progress=False, embedder=embedder)
            counts.update(entries_parsed=0, find_section=0, refreshes=[])
            # without the write-time claim check (lint --claims' check, which reads nothing that
            # grows with the wiki): it is most of a write's time, and the suite must stay fast
            out = writer_mod.write_paper(settings, res["paper"], writer="extractive", embedder=embedder,
                                         today=dt.date(2026, 12, 1), check_claims=False)
            per_paper.append({"entries_parsed": counts["entries_parsed"],
                              "find_section": counts["find_section"],
                              "refreshes": list(counts["refreshes"]),
                              "sections": len(out["new_sections"]) + len(out["updated_sections"]),
                              "pages": len(out["wiki_pages_updated"])})
    finally:
        mp.undo()
    return {"settings": settings, "wiki": wiki, "per_paper": per_paper, "embedder": embedder}


def _sections_on(wiki: Path) -> int:
    from episteme.wiki.index import read_index_json

    return len(read_index_json(wiki))


def test_the_wiki_grew(grown):
    """The fixture is not hollow: every paper was written, and later papers merged into
    sections of earlier ones (so the merge lookup really ran)."""
    pp = grown["per_paper"]
    assert all(p["sections"] > 0 for p in pp)
    assert _sections_on(grown["wiki"]) >= N_PAPERS * 2
    assert sum(p["find_section"] for p in pp[1:]) >= 1


def test_writing_a_paper_parses_no_index_entry(grown):
    """Finding the page of a section to merge into searches index.md for one entry; the
    section index's refresh parses index.md only for a marker without a description."""
    for i, p in enumerate(grown["per_paper"]):
        assert p["entries_parsed"] == 0, (i, p)


def test_refresh_after_a_write_reads_only_that_papers_rows(grown):
    """Rows read by the refresh that follows paper k's write are bounded by what the write
    touched (its pages' sections), not by the k-1 papers already in the wiki."""
    from episteme.query.wikisearch import WikiSectionIndex

    pp = grown["per_paper"]
    total = _sections_on(grown["wiki"])
    for p in pp[N_PAPERS // 2:]:
        assert p["refreshes"], "the writer refreshed the section index"
        for r in p["refreshes"]:
            assert r["pages_read"] <= p["pages"] + max(q["pages"] for q in pp), (r, p)
            assert r["rows_read"] <= total // 2, (r, p, total)
    with WikiSectionIndex(grown["settings"], embedder=grown["embedder"]) as idx:
        first = idx.refresh()
        again = idx.refresh()
    # the writer refreshes the index as it writes (the first question is as fast as the next),
    # so a refresh after the last write has nothing left to read
    assert any(r["pages_read"] > 0 for p in pp for r in p["refreshes"])
    assert first["pages_read"] == 0
    assert again == {**again, "pages_read": 0, "rows_read": 0, "added": 0, "updated": 0,
                     "removed": 0, "index_md_read": False}
    assert again["unchanged"] == total


def test_log_append_reads_the_tail_only(grown, monkeypatch):
    """A long log.md is not read to append one entry (its middle may even be garbage)."""
    from episteme.wiki import index

    log = grown["wiki"] / "log.md"
    before = log.read_bytes()
    assert before.count(b"\n## [") >= N_PAPERS  # one entry per written paper
    big = before + b"\n" + b"x" * 2_000_000 + b"\xff\xfe\n"  # not even UTF-8
    log.write_bytes(big)
    reads = []
    real_open = io.open

    class Counted:
        def __init__(self, f):
            self._f = f

        def read(self, n=-1):
            data = self._f.read(n)
            reads.append(len(data))
            return data

        def __getattr__(self, name):
            return getattr(self._f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._f.close()

    def counting_open(path, mode="r", *a, **k):
        f = real_open(path, mode, *a, **k)
        return Counted(f) if Path(path).name == "log.md" and "r" in mode else f

    monkeypatch.setattr("builtins.open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    index.append_log(grown["wiki"], index.make_log_entry("test", "tail", pages=["a.md"]))
    monkeypatch.undo()
    assert sum(reads) <= 16
    assert log.read_bytes().startswith(big)
    assert log.read_bytes().endswith(b"## [" + dt.date.today().isoformat().encode() + b"] test | tail\n- pages: a.md\n")
