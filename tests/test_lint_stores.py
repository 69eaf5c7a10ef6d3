"""wiki-lint --stores on wikis built by ingesting real papers (real SQLite, Chroma, embedder):
clean after ingest and after the extractive writer, each store rule on a real breakage, and the
vector re-embedding fix."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from episteme.lint import apply_fixes, lint_wiki
from ingested_wiki import wiki_settings

REPO = Path(__file__).resolve().parent.parent
ATT = "attention_1706.03762v5.pdf"
GAN = "gan_1406.2661v1.pdf"


def store_lint(wiki: Path, **kw):
    return lint_wiki(wiki, stores=True, settings=wiki_settings(wiki, **kw))


def test_freshly_ingested_wiki_is_clean(ingested_wiki: Path):
    report = store_lint(ingested_wiki)
    assert report.stores_checked
    assert [f.to_dict() for f in report.findings] == []


def test_store_rules_fire_on_real_breakage(ingested_wiki: Path, papers_dir: Path):
    from episteme.stores.vectors import make_client

    s = wiki_settings(ingested_wiki)
    col = make_client(s).get_collection("passages", embedding_function=None)
    gone = col.get(where={"paper": ATT}, include=["embeddings"])
    drop = list(gone["ids"][:4])
    col.delete(ids=drop)
    with open(ingested_wiki / "raw" / GAN, "ab") as f:
        f.write(b"\n% edited\n")
    extra = sorted(p for p in papers_dir.glob("*.pdf") if p.name not in (ATT, GAN))[0]
    shutil.copy(extra, ingested_wiki / "raw" / extra.name)
    (ingested_wiki / "index.json").write_text(json.dumps({"sec_001": [ATT, "nowhere.pdf"]}, indent=2) + "\n")

    report = store_lint(ingested_wiki)
    got = {(f.rule, f.file, f.line) for f in report.findings if f.rule.startswith("store-")}
    assert got == {
        ("store-vector-count", f"raw/{ATT}", None),
        ("store-sha-mismatch", f"raw/{GAN}", None),
        ("store-row-missing", f"raw/{extra.name}", None),
        ("store-unknown-source", "index.json", 2),
    }
    vc = next(f for f in report.findings if f.rule == "store-vector-count")
    assert vc.data["missing"] == 4 and vc.data["vectors"] == vc.data["passages"] - 4 and vc.fixable

    # the fix embeds exactly the missing passages again, with the same vectors ingest made
    fixes = apply_fixes(ingested_wiki, report, settings=s)
    # (sec_001 exists on no page, so the index fix drops it too)
    assert sorted(f["fix"] for f in fixes) == ["index-drop", "vectors"]
    assert "4 missing" in next(f for f in fixes if f["fix"] == "vectors")["message"]
    back = col.get(ids=drop, include=["embeddings", "metadatas"])
    assert sorted(back["ids"]) == sorted(drop)
    old = {i: e for i, e in zip(gone["ids"], gone["embeddings"], strict=True)}
    for i, e, m in zip(back["ids"], back["embeddings"], back["metadatas"], strict=True):
        dot = sum(a * b for a, b in zip(old[i], e, strict=True))
        assert dot > 0.999, i
        assert m["paper"] == ATT and m["section_id"] == i.split("~")[0]
    again = store_lint(ingested_wiki)
    assert "store-vector-count" not in {f.rule for f in again.findings}
    assert apply_fixes(ingested_wiki, lint_wiki(ingested_wiki, stores=True, settings=s, select=["store-vector-count"]),
                       settings=s) == []

    # a paper row whose file disappeared
    (ingested_wiki / "raw" / GAN).unlink()
    rules = Counter(f.rule for f in store_lint(ingested_wiki).findings)
    assert rules["store-raw-missing"] == 1 and rules["store-sha-mismatch"] == 0


def test_model_mismatch(ingested_wiki: Path):
    report = store_lint(ingested_wiki, embedding_model="some-other-model")
    mism = [f for f in report.findings if f.rule == "store-model-mismatch"]
    assert len(mism) == 3  # the passage collection and both papers
    assert {(f.data or {}).get("paper") for f in mism} == {None, ATT, GAN}


def test_unreadable_sqlite_is_reported(ingested_wiki: Path):
    s = wiki_settings(ingested_wiki)
    for suffix in ("-wal", "-shm"):
        Path(str(s.sqlite_path) + suffix).unlink(missing_ok=True)
    s.sqlite_path.write_bytes(b"this is not a database" * 100)
    report = store_lint(ingested_wiki)
    assert [f.rule for f in report.findings] == ["store-unavailable"]
    assert report.findings[0].file == ".episteme/sections.db"


def test_wiki_written_by_the_extractive_writer_has_no_errors(ingested_wiki: Path, embedder):
    from episteme.compile.writer import write_paper

    for name in ("SCHEMA.md", "index.md", "index.json", "log.md"):
        shutil.copy(REPO / "wiki" / name, ingested_wiki / name)
    s = wiki_settings(ingested_wiki)
    out = write_paper(s, ATT, writer="extractive", embedder=embedder)
    assert out["new_sections"]
    report = lint_wiki(ingested_wiki, stores=True, settings=s)
    errors = [f.to_dict() for f in report.findings if f.severity == "error"]
    assert errors == []
    cited = (out.get("citations") or {}).get("created", [])  # the paper page's Citations section
    assert report.sections == len(out["new_sections"]) + len(cited) and report.pages >= 2
