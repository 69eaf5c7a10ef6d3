"""The hand-labelled prose corpus (benchmarks/prose_corpus): its labels must be the claim units
``lint --claims`` reads from its pages, one label each, and every seeded edit must apply to
exactly one place, or the benchmark would silently score the wrong sentences."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "benchmarks" / "prose_corpus"
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_prose import finding_for, manifest_rows  # noqa: E402
from episteme.query.claimtext import page_sections, section_units  # noqa: E402


def _rows(name: str) -> list[dict]:
    return [json.loads(x) for x in (CORPUS / name).read_text(encoding="utf-8").splitlines() if x.strip()]


def _units() -> list[tuple[str, str, str]]:
    wiki = CORPUS / "wiki"
    out = []
    for p in sorted(wiki.rglob("*.md")):
        if p.name in ("index.md", "log.md", "SCHEMA.md"):
            continue
        rel = p.relative_to(wiki).as_posix()
        for sec in page_sections(p.read_text(encoding="utf-8")):
            out.extend((rel, sec.id, u.text) for u in section_units(sec))
    return out


def test_labels_are_the_units_lint_reads() -> None:
    labels = _rows("labels.jsonl")
    assert Counter((x["page"], x["section"], x["text"]) for x in labels) == Counter(_units())
    assert all(x["label"] in ("true", "false") and x["reason"] for x in labels)
    assert len({x["id"] for x in labels}) == len(labels)


def test_label_papers_and_splits_follow_the_manifests() -> None:
    rows = manifest_rows()
    for x in _rows("labels.jsonl"):
        papers = x["paper"].split(";")
        assert all(p in rows for p in papers), x["id"]
        assert x["split"] == rows[papers[0]]["split"], x["id"]


def test_each_edit_applies_once_and_changes_its_sentence() -> None:
    edits = _rows("edits.jsonl")
    assert len(edits) >= 40
    for e in edits:
        text = (CORPUS / "wiki" / e["page"]).read_text(encoding="utf-8")
        assert text.count(e["original"]) == 1, e["original"][:60]
        assert e["edited"] != e["original"]
        assert e["kind"] in {"number", "comparison", "setting", "name", "negation", "direction"}


def test_finding_matching_prefers_the_error_and_stays_on_the_page() -> None:
    s = "Pastry routes were only about 30 to 40% longer than those of an idealised scheme."
    warn = {"rule": "claim-unsupported", "file": "papers/pastry.md", "claim": s}
    err = {"rule": "claim-contradicted", "file": "papers/pastry.md", "claim": "x " + s}
    other = {"rule": "claim-contradicted", "file": "tw-idf.md", "claim": s}
    assert finding_for([warn, err, other], "papers/pastry.md", s) is err
    assert finding_for([other], "papers/pastry.md", s) is None
