"""Issue 16, "nothing lost, nothing escapes": each failure a hostile-input run found, reproduced
with generated inputs (``pdfgen``) and kept fixed.  Real SQLite, Chroma, embedder and PDFs.

The crash tests (``test_crash_*``) kill a real ``episteme ingest`` subprocess with SIGKILL at
named points (``EPISTEME_CRASH_AT``, see :func:`episteme.fsutil.crash_point`) and check that the
stores and the wiki agree afterwards and after the natural re-run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.errors import EpistemeError
from episteme.ingest import ingest_paper, paper_id_for
from episteme.store import open_store
from episteme.vectors import open_vectors
from ingested_wiki import wiki_settings
from pdfgen import make_paper_pdf, varied_paper

REPO = Path(__file__).resolve().parent.parent


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_", "EPISTEME_CRASH"))}
    env["PYTHONPATH"] = str(REPO / "plugin") + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def cli(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "episteme.cli", *args], capture_output=True,
                          text=True, env=_env(**env), timeout=timeout)


def stores_agree(settings) -> list[str]:
    """Every disagreement between raw/, SQLite and Chroma (empty = consistent)."""
    problems: list[str] = []
    raw = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
           for p in settings.raw_dir.iterdir() if p.is_file() and not p.name.startswith(".")} \
        if settings.raw_dir.is_dir() else {}
    rows, passages = {}, {}
    if settings.sqlite_path.exists():
        with open_store(settings, readonly=True) as st:
            rows = {p["id"]: p["sha256"] for p in st.papers()}
            for pid in rows:
                passages[pid] = {p["id"] for p in st.passages(paper_id=pid)}
    if raw != rows:
        problems.append(f"raw/ {sorted(raw)} vs SQLite {sorted(rows)} (or their sha256)")
    if settings.chroma_path.exists():
        got = open_vectors(settings, model_name="all-MiniLM-L6-v2", dim=384).get()
        by_paper: dict[str, set[str]] = {}
        for i, m in zip(got["ids"], got["metadatas"], strict=True):
            by_paper.setdefault(m["paper"], set()).add(i)
        for pid in set(by_paper) | set(passages):
            if by_paper.get(pid, set()) != passages.get(pid, set()):
                problems.append(f"{pid}: {len(passages.get(pid, ()))} passages in SQLite, "
                                f"{len(by_paper.get(pid, ()))} vectors in Chroma")
    return problems


# ------------------------------------------------------------- 1. distinct papers never collide


def test_non_ascii_names_get_distinct_readable_stable_ids():
    names = ["注意力.pdf", "残差网络.pdf", "论文.pdf", "Résumé.pdf", "a b.pdf", "a_b.pdf", "a?b.pdf",
             "a/b.pdf", "x", "x.pdf", "..", "...", "論文.PDF", "a-0123456789.pdf"]
    ids = [paper_id_for(n) for n in names]
    assert len(set(ids)) == len(ids)
    # "a/b.pdf" is the path a/ + the file name b.pdf: the name the user gave is "b.pdf"
    assert paper_id_for("a/b.pdf") == paper_id_for("b.pdf") == "b.pdf"
    assert paper_id_for("注意力.pdf").startswith("ZhuYiLi-")  # readable transliteration
    assert paper_id_for("残差网络.pdf").startswith("CanChaWangLuo-")
    assert paper_id_for("注意力.pdf") == paper_id_for("/elsewhere/注意力.pdf")  # stable
    assert paper_id_for("attention_1706.03762v5.pdf") == "attention_1706.03762v5.pdf"
    for pid in ids:
        assert pid.endswith((".pdf", ".PDF")) and not pid.startswith(".") and "/" not in pid


@pytest.fixture(scope="module")
def three_pdfs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cjk")
    out = {}
    for i, name in enumerate(["注意力.pdf", "残差网络.pdf", "论文.pdf"]):
        out[name] = make_paper_pdf(d / name, varied_paper(100 + i))
    out["v2"] = make_paper_pdf(d / "v2.pdf", varied_paper(200))
    return out


def test_three_chinese_names_are_three_papers_over_the_cli(tmp_path, three_pdfs):
    wiki = tmp_path / "wiki"
    got = []
    for name in ("注意力.pdf", "残差网络.pdf", "论文.pdf"):
        proc = cli("ingest", str(three_pdfs[name]), "--wiki", str(wiki), "--no-progress")
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["status"] == "ingested" and out["given_name"] == name
        got.append(out)
    ids = [o["paper"] for o in got]
    assert len(set(ids)) == 3
    s = wiki_settings(wiki)
    assert sorted(p.name for p in s.raw_dir.iterdir()) == sorted(ids)
    assert stores_agree(s) == []
    # each paper's sections trace to its own bytes
    with open_store(s, readonly=True) as st:
        for o, name in zip(got, ("注意力.pdf", "残差网络.pdf", "论文.pdf"), strict=True):
            assert st.paper(o["paper"])["sha256"] == hashlib.sha256(
                three_pdfs[name].read_bytes()).hexdigest()
    # the same name again with new bytes: "replaced", and it says so
    src = tmp_path / "注意力.pdf"
    src.write_bytes(three_pdfs["v2"].read_bytes())
    proc = cli("ingest", str(src), "--wiki", str(wiki), "--no-progress")
    out = json.loads(proc.stdout)
    assert out["status"] == "replaced" and out["paper"] == ids[0]
    assert "same file name" in out["message"] and "注意力.pdf" in out["message"]
    assert len(list(s.raw_dir.iterdir())) == 3 and stores_agree(s) == []


def test_names_differing_only_in_case_do_not_share_a_file(tmp_path, three_pdfs, embedder):
    s = wiki_settings(tmp_path / "w")
    a = ingest_paper(s, three_pdfs["注意力.pdf"], name="Paper.pdf", progress=False, embedder=embedder)
    b = ingest_paper(s, three_pdfs["论文.pdf"], name="paper.pdf", progress=False, embedder=embedder)
    assert a["paper"] == "Paper.pdf" and b["status"] == "ingested"
    assert b["paper"].lower() != "paper.pdf" and b["paper"].startswith("paper-")
    assert stores_agree(s) == []


def test_an_old_wikis_lossy_name_stays_unchanged_on_reingest(tmp_path, three_pdfs, embedder):
    """Wikis ingested before unique names keep working: same bytes under the old id → unchanged."""
    s = wiki_settings(tmp_path / "w")
    first = ingest_paper(s, three_pdfs["论文.pdf"], name="pdf.pdf", progress=False, embedder=embedder)
    assert first["paper"] == "pdf.pdf"  # what "论文.pdf" used to be stored as
    again = ingest_paper(s, three_pdfs["论文.pdf"], progress=False, embedder=embedder)
    assert again["status"] == "unchanged" and again["paper"] == "pdf.pdf"
