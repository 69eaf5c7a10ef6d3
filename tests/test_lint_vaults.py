"""wiki-lint on the real vaults in ../shared/data/vaults: it runs, finds what is really there, and
reports nothing a vault without SCHEMA.md cannot be blamed for."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from episteme.graph import WikiGraph, orphans
from episteme.lint import lint_wiki
from episteme.wiki.frontmatter import frontmatter_title
from episteme.wiki.scan import scan_wiki

REPO = Path(__file__).resolve().parent.parent
SCHEMA_RULES = {"fm-missing-required", "fm-unknown-field", "fm-type", "fm-value"}
SECTION_RULES = {"section-marker-invalid", "section-duplicate-id", "section-not-in-index", "index-stale-entry",
                 "index-json-unknown-section", "index-out-of-date", "index-malformed", "section-no-sources",
                 "section-empty", "index-interrupted-write"}


@pytest.fixture(scope="module", params=["13th-age-srd", "dendron-site"])
def vault(request, vaults_dir: Path):
    root = vaults_dir / request.param
    return request.param, root, lint_wiki(root)


def test_vault_lint_agrees_with_the_graph(vault):
    name, root, report = vault
    g = WikiGraph.build(root)
    rules = Counter(f.rule for f in report.findings)
    assert report.pages == len(g.ids) > 900
    o = orphans(g)
    assert rules["page-orphan"] == o["orphan_count"] > 0
    assert rules["page-leaf"] == o["leaf_count"] > 0
    assert rules["link-dangling"] + rules["link-structural"] == len(g.dangling)
    amb = {(a.source, a.target.lower()) for a in g.ambiguities}
    assert rules["link-ambiguous"] == len(amb)
    # no SCHEMA.md: nothing schema-specific; no section markers: nothing about sections
    assert not (set(rules) & SCHEMA_RULES), rules
    assert not (set(rules) & SECTION_RULES), rules
    assert "page-stale" not in rules  # tiers are off without a schema
    # every finding points into the vault at a real line
    for f in report.findings:
        path = root / f.file
        assert path.is_file()
        if f.line is not None:
            assert 1 <= f.line <= path.read_bytes().count(b"\n") + 1


def test_13th_age_broken_dates_are_found(vaults_dir: Path):
    root = vaults_dir / "13th-age-srd"
    report = lint_wiki(root, select=["fm-date"])
    page = "Compendium/13A/13th-Age-Index.md"
    lines = (root / page).read_text(encoding="utf-8").splitlines()
    want = sorted((page, i + 1) for i, ln in enumerate(lines[:20]) if ln.startswith(("created: +", "updated: +")))
    assert len(want) == 2
    assert sorted((f.file, f.line) for f in report.findings) == want
    assert all(not f.fixable for f in report.findings)  # "+002023-02-07 2316" is not guessed at


def test_dendron_epoch_dates_pass_and_duplicate_titles_are_counted(vaults_dir: Path):
    root = vaults_dir / "dendron-site"
    report = lint_wiki(root, select=["fm-date", "title-duplicate"])
    assert not [f for f in report.findings if f.rule == "fm-date"]  # epoch milliseconds are dates
    seen: set[str] = set()
    dups = 0
    for p in scan_wiki(root):
        t = frontmatter_title(p.props)
        if t is None:
            continue
        dups += t.lower() in seen
        seen.add(t.lower())
    assert sum(f.rule == "title-duplicate" for f in report.findings) == dups > 50


def test_dangling_suggestions_are_real_pages(vault):
    _, root, report = vault
    dangling = [f for f in report.findings if f.rule == "link-dangling"]
    suggested = [f.data["suggestion"] for f in dangling if f.data.get("suggestion")]
    assert suggested
    for s in suggested:
        assert (root / s).is_file()


def test_fix_on_a_real_vault_changes_nothing(vaults_dir: Path, tmp_path: Path):
    src = vaults_dir / "13th-age-srd"
    root = tmp_path / "vault"
    shutil.copytree(src, root)

    def digest() -> dict[str, str]:
        return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file()}

    before = digest()
    proc = subprocess.run([sys.executable, str(REPO / "plugin" / "scripts" / "wiki_lint.py"), "--wiki", str(root),
                           "--fix", "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1  # real errors (orphans, broken dates) remain
    data = json.loads(proc.stdout)
    assert data["fixes"] == []
    assert digest() == before
    assert not (root / "index.md").exists() and not (root / ".episteme").exists()
