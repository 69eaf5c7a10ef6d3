"""A batch writes its papers into the wiki in the batch's order, whatever order workers finish
in: ``--jobs 2`` and a killed-then-resumed batch write what ``--jobs 1`` writes (issue 36: a
resumed folder ingest ended with permuted section ids and missing "Related" links)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.ingest.batch import BatchItem, OrderedWrites
from pdfgen import Paper, Section, make_paper_pdf, varied_paper

REPO = Path(__file__).resolve().parent.parent


def test_writes_follow_the_batch_order_not_the_finishing_order():
    items = [BatchItem(path=Path(f"{n}.pdf"), given=f"{n}.pdf", paper_id=f"{n}.pdf")
             for n in "abcde"]
    written: list[str] = []
    w = OrderedWrites(items, lambda row: written.append(row["paper"]) or {})
    a, b, c, d, e = items
    c.status = "ingested"
    w.final_item(c)  # c finished first: a and b are not done yet
    assert written == []
    a.status = "unchanged"
    w.final_item(a)
    assert written == ["a.pdf"]
    b.status = "failed"  # a failed paper is skipped, and no longer holds back the ones after it
    w.final_item(b)
    assert written == ["a.pdf", "c.pdf"]
    e.status = "ingested"
    w.final_item(e)  # d never finished (the batch was interrupted): e waits for the re-run
    assert written == ["a.pdf", "c.pdf"]


def _big_paper(seed: int) -> Paper:
    base = varied_paper(seed)
    text = " ".join(s.paragraphs[0] for s in base.sections) * 6
    return Paper(title=base.title, authors=base.authors, affiliations=base.affiliations,
                 abstract=base.abstract,
                 sections=[Section(str(i), f"Part {i} of the Survey", [text]) for i in range(1, 9)])


def _ingest(folder: Path, wiki: Path, jobs: int) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_", "ANTHROPIC_", "LLM_"))}
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "ingest", str(folder), "--wiki",
                           str(wiki), "--write", "--writer", "extractive", "--jobs", str(jobs),
                           "--no-progress", "--date", "2026-01-01"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _pages(wiki: Path) -> dict[str, bytes]:
    return {p.relative_to(wiki).as_posix(): p.read_bytes() for p in sorted(wiki.rglob("*"))
            if p.is_file() and ".episteme" not in p.parts and "raw" not in p.relative_to(wiki).parts
            and p.name != "log.md"}


@pytest.mark.slow
def test_two_workers_write_the_same_wiki_as_one(tmp_path: Path):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    # the first paper is much longer, so with two workers it finishes after the others
    make_paper_pdf(folder / "a-long.pdf", _big_paper(11))
    make_paper_pdf(folder / "b.pdf", varied_paper(12))
    make_paper_pdf(folder / "c.pdf", varied_paper(13))
    one, two = tmp_path / "one", tmp_path / "two"
    import shutil

    for w in (one, two):
        shutil.copytree(REPO / "wiki", w)
    _ingest(folder, one, jobs=1)
    out = _ingest(folder, two, jobs=2)
    assert [p["paper"] for p in out["papers"]] == ["a-long.pdf", "b.pdf", "c.pdf"]
    assert _pages(two) == _pages(one)
