"""wiki-lint on generated wikis: every rule once (rule, file, line), the clean starter wiki, --fix
safety and idempotence, output formats, exit codes, rule selection, and the import budget."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.lint import lint_wiki
from episteme.lint.rules import CLAIM_RULES, RULES, STORE_RULES, finding, normalize_date_text
from lint_fixture import TODAY, build_broken_wiki

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "plugin" / "scripts" / "wiki_lint.py"
TODAY_D = dt.date.fromisoformat(TODAY)


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "WIKI_PATH"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120)


def tree_digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "write.lock"
    }


def give_the_copy_its_own_id(root: Path) -> None:
    """Resolve the fixture's duplicated section id by hand (what --fix leaves to a person)."""
    dup = root / "zz-dup.md"
    dup.write_text(dup.read_text().replace('"sec_001"', '"sec_007"'))


@pytest.fixture
def broken(tmp_path: Path) -> tuple[Path, dict]:
    root = tmp_path / "wiki"
    return root, build_broken_wiki(root)


def test_every_rule_fires_exactly_once_at_its_file_and_line(broken):
    root, expected = broken
    report = lint_wiki(root, today=TODAY_D)
    by_rule: dict[str, list] = {}
    for f in report.findings:
        by_rule.setdefault(f.rule, []).append(f)
    assert set(expected) == set(RULES) - STORE_RULES - CLAIM_RULES  # every light rule (claims: test_lint_claims)
    assert set(by_rule) == set(expected)
    for rule, (file, line) in expected.items():
        [f] = by_rule[rule]
        assert (f.file, f.line) == (file, line), rule
        assert f.severity == RULES[rule].severity
    dangling = by_rule["link-dangling"][0]
    assert dangling.data["suggestion"] == "alpha.md" and "alpha.md" in dangling.message
    assert by_rule["fm-date"][0].data["fix_to"] == "2026-11-01"
    assert by_rule["link-ambiguous"][0].data["candidates"] == ["notes/twin.md", "other/twin.md"]


def test_suggestions_for_many_near_misses(tmp_path: Path):
    """A wiki with many dangling near-misses (typos, extra words, aliases): each gets the
    closest page, and the findings do not depend on the run."""
    root = tmp_path / "w"
    root.mkdir()
    words = ["kernel", "attention", "sparse", "graph", "matrix", "spectral", "token", "encoder", "decoder", "vector"]
    for i in range(60):
        a, b = words[i % 10], words[(i * 3 + 1) % 10]
        (root / f"{a}-{b}-{i}.md").write_text(
            f"---\ntitle: {a.title()} {b.title()} {i}\naliases: [{a[:3]}{i}]\n---\n"
            f"See [[{b.title()} {a.title()} {i}]], [[{a}-{b}-{(i + 1) % 60}]], [[{a[:3]}{(i + 7) % 60}]] and "
            f"[[{a.title()} {b.title()} {i + 1}x]].\n", encoding="utf-8")
    one = [f.to_dict() for f in lint_wiki(root, today=TODAY_D).findings]
    assert one == [f.to_dict() for f in lint_wiki(root, today=TODAY_D).findings]
    dangling = [f for f in one if f["rule"] == "link-dangling"]
    assert len({f["target"].lower() for f in dangling}) > 60 and sum(1 for f in dangling if f.get("suggestion")) > 60
    near = {f["target"]: f["suggestion"] for f in dangling}
    assert near["Kernel Attention 1x"] == "kernel-attention-10.md"  # "...10" is closest to "...1x"


def test_clean_starter_wiki_has_no_findings():
    report = lint_wiki(REPO / "wiki")
    assert report.findings == []
    proc = run("--wiki", str(REPO / "wiki"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["findings"] == [] and data["summary"]["errors"] == 0


def test_clean_wiki_written_through_wikiwrite(tmp_path: Path):
    """Pages written by the section writer (linked to each other) are lint-clean."""
    from episteme.wiki.edit import WikiWriter

    root = tmp_path / "wiki"
    shutil.copytree(REPO / "wiki", root)
    (root / "raw").mkdir(exist_ok=True)
    (root / "raw" / "a.pdf").write_bytes(b"%PDF-1.4\n")
    with WikiWriter(root, op="test", known_sources={"a.pdf"}) as w:
        w.create_section("attention", title="Attention", description="What attention is.",
                         body="Weights tokens; see [[Transformer]].", sources=["a.pdf"], page_title="Attention")
        w.create_section("transformer", title="Transformer", description="The architecture.",
                         body="Stacks of [[Attention]] layers.", sources=["a.pdf"], page_title="Transformer")
    report = lint_wiki(root)
    assert [f.to_dict() for f in report.findings] == []
    assert report.sections == 2


def test_fix_repairs_safely_and_is_idempotent(broken):
    root, expected = broken
    # while a section id is used on two pages the indexes are not rebuilt (that would hand the
    # id's sources to one of them): reported, nothing merged
    indexes_before = [(root / n).read_bytes() for n in ("index.md", "index.json")]
    date_before = (root / "date.md").read_bytes()
    held = run("--wiki", str(root), "--fix", "--today", TODAY, "--format", "json")
    skips = [f for f in json.loads(held.stdout)["fixes"] if f["fix"] == "skip"]
    assert len(skips) == 1 and "sec_001 used on two pages" in skips[0]["message"]
    assert [(root / n).read_bytes() for n in ("index.md", "index.json")] == indexes_before
    # the person gives the copy its own id; now --fix rebuilds
    give_the_copy_its_own_id(root)
    expected.pop("section-duplicate-id")
    pages_before = {p: (root / p).read_bytes() for p in ("paper.md", "hub.md", "bad.md", "broken.md", "zz-dup.md")}
    first = run("--wiki", str(root), "--fix", "--today", TODAY, "--format", "json")
    assert first.returncode == 1, first.stderr  # unfixable errors remain
    data = json.loads(first.stdout)
    kinds = [f["fix"] for f in data["fixes"] + json.loads(held.stdout)["fixes"]]
    assert "date" in kinds and "index-add" in kinds and "index-drop" in kinds and "interrupted-write" in kinds
    assert "temp-remove" in kinds and not (root / "newdir" / ".p.md.batch99999999-0.tmp").exists()
    remaining = {f["rule"] for f in data["findings"]}
    fixed_rules = {"fm-date", "section-not-in-index", "index-stale-entry", "index-json-unknown-section",
                   "index-out-of-date", "index-malformed", "index-interrupted-write", "stale-temp-file"}
    assert remaining == set(expected) - fixed_rules
    # the date fix rewrote exactly one line, keeping its comment
    before_lines = date_before.split(b"\n")
    after_lines = (root / "date.md").read_bytes().split(b"\n")
    changed = [i for i, (a, b) in enumerate(zip(before_lines, after_lines, strict=True)) if a != b]
    assert changed == [expected["fm-date"][1] - 1]
    assert after_lines[changed[0]] == b"created: 2026-11-01  # first draft"
    # page content is never touched by the index fixes
    for p, b in pages_before.items():
        assert (root / p).read_bytes() == b, p
    index = json.loads((root / "index.json").read_text())
    assert sorted(index) == ["sec_001", "sec_002", "sec_003", "sec_004", "sec_005", "sec_006", "sec_007"]
    assert index["sec_001"] == ["attention.pdf"] and index["sec_007"] == ["gan.pdf"]
    snapshot = tree_digest(root)
    second = run("--wiki", str(root), "--fix", "--today", TODAY, "--format", "json")
    assert json.loads(second.stdout)["fixes"] == []
    assert tree_digest(root) == snapshot
    assert {f["rule"] for f in json.loads(second.stdout)["findings"]} == remaining


def test_fix_prints_each_repair_in_text_format(broken):
    root, _ = broken
    give_the_copy_its_own_id(root)
    proc = run("--wiki", str(root), "--fix", "--today", TODAY)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("fixed")]
    assert any("date.md:5" in ln and "2026/11/01 -> 2026-11-01" in ln for ln in lines)
    assert any("added sec_004" in ln for ln in lines)
    assert any("dropped sec_090" in ln for ln in lines) and any("dropped sec_091" in ln for ln in lines)


def test_text_format_groups_by_file_with_summary(broken):
    root, expected = broken
    proc = run("--wiki", str(root), "--today", TODAY)
    assert proc.returncode == 1
    out = proc.stdout.splitlines()
    assert "hub.md" in out
    i = out.index("hub.md")
    block = out[i + 1 : i + 4]
    assert [b.split()[2] for b in block] == ["link-dangling", "link-structural", "link-ambiguous"]
    assert [int(b.split()[0]) for b in block] == sorted(int(b.split()[0]) for b in block)
    summary = out[-1]
    counts = {s: sum(1 for r in expected if RULES[r].severity == s) for s in ("error", "warning", "info")}
    assert summary.startswith(f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info")
    assert "20 pages" in summary  # (outside.md, a symlink out of the wiki, is not a page)


def test_json_format(broken):
    root, expected = broken
    proc = run("--wiki", str(root), "--today", TODAY, "--format", "json")
    data = json.loads(proc.stdout)
    assert set(data) >= {"findings", "summary", "fixes"}
    assert len(data["findings"]) == len(expected)
    f = next(x for x in data["findings"] if x["rule"] == "fm-date")
    assert f == {**f, "file": "date.md", "line": 5, "severity": "error", "fixable": True, "field": "created"}
    assert data["summary"]["rules"]["link-dangling"] == 1
    assert data["summary"]["errors"] == sum(1 for r in expected if RULES[r].severity == "error")
    # one finding per line (greppable), the rest indented as usual
    lines = proc.stdout.splitlines()
    per_line = [json.loads(x.strip().rstrip(",")) for x in lines if x.startswith('    {"rule": ')]
    assert per_line == data["findings"]
    assert '  "summary": {' in lines and '    "errors": ' + str(data["summary"]["errors"]) + "," in lines


def test_findings_write_the_json_the_encoder_writes(broken):
    root, _ = broken
    encode = json.JSONEncoder(ensure_ascii=False).encode
    findings = lint_wiki(root, today=TODAY_D).findings
    odd = finding("fm-type", "ü.md", None, 'say "hi"\t\u2028 ✓', field="n", got=[1, 2.5, None], ok=True, _hidden=1)
    for f in [*findings, odd]:
        assert f.to_json(encode) == encode(f.to_dict())
    assert '"_hidden"' not in odd.to_json(encode)


def test_vault_findings_write_the_json_the_encoder_writes(vaults_dir):
    encode = json.JSONEncoder(ensure_ascii=False).encode
    for f in lint_wiki(vaults_dir / "dendron-site", today=TODAY_D).findings:
        assert f.to_json(encode) == encode(f.to_dict())


def test_records_json_is_the_same_data_as_indented_json():
    from episteme.cliutil import dumps_records

    data = {"a": [{"x": 1, "y": "é\n"}, {"x": 2}], "b": {"c": [1, 2], "d": []}, "e": [], "f": [1, {"g": 1}], "h": None}
    text = dumps_records(data)
    assert json.loads(text) == data
    assert '    {"x": 1, "y": "é\\n"},' in text.splitlines()
    assert json.loads(dumps_records({})) == {}


def test_github_format(broken, tmp_path: Path):
    root, expected = broken
    proc = run("--wiki", "wiki", "--today", TODAY, "--format", "github", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    ann = [ln for ln in lines if ln.startswith("::")]
    assert len(ann) == len(expected)
    assert "::error file=wiki/hub.md,line=26,title=link-dangling::[[Alpah]] matches no page; closest page%3A alpha.md" not in ann
    assert "::error file=wiki/hub.md,line=26,title=link-dangling::[[Alpah]] matches no page; closest page: alpha.md" in ann
    assert "::notice file=wiki/leaf.md,line=1,title=page-leaf::linked from 1 page(s) but links nowhere" in ann
    assert "::warning file=wiki/log.md,line=7,title=log-malformed::" + \
        "entry heading is not '## [YYYY-MM-DD] op | subject'" in ann
    # a finding without a line has no line property
    assert any(a.startswith("::warning file=wiki/.episteme/pending-write.json,title=index-interrupted-write::") for a in ann)


def test_github_escapes_newlines_and_percent():
    from episteme.commands.lint import render_github
    from episteme.lint import LintReport
    from episteme.lint.rules import finding

    rep = LintReport("w", [finding("fm-yaml", "a,b:c.md", 3, "100% broken\nsecond line")], 1, frozenset(RULES))
    out = render_github(rep, "w", [])
    assert out.splitlines()[0] == "::error file=w/a%2Cb%3Ac.md,line=3,title=fm-yaml::100%25 broken%0Asecond line"


def test_exit_codes_and_rule_selection(broken, tmp_path: Path):
    root, _ = broken
    assert run("--wiki", str(REPO / "wiki")).returncode == 0
    assert run("--wiki", str(root), "--today", TODAY).returncode == 1
    bad = run("--wiki", str(root), "--rule", "no-such-rule")
    assert bad.returncode == 2 and "unknown rule" in bad.stderr
    assert run("--wiki", str(root), "--bogus-flag").returncode == 2
    assert run("--wiki", str(root), "--rule", "store-raw-missing").returncode == 2  # needs --stores
    missing = run("--wiki", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "not found" in missing.stderr
    # only warnings/info selected: exit 0
    only = run("--wiki", str(root), "--rule", "link-ambiguous,page-leaf", "--format", "json")
    assert only.returncode == 0
    assert sorted(f["rule"] for f in json.loads(only.stdout)["findings"]) == ["link-ambiguous", "page-leaf"]
    # --disable removes rules; the rest still run
    dis = json.loads(run("--wiki", str(root), "--today", TODAY, "--disable", "page-orphan", "--disable",
                         "link-dangling", "--format", "json").stdout)
    rules = {f["rule"] for f in dis["findings"]}
    assert "page-orphan" not in rules and "link-dangling" not in rules and "page-leaf" in rules
    lr = run("--list-rules", "--format", "json")
    assert lr.returncode == 0 and {r["rule"] for r in json.loads(lr.stdout)["rules"]} == set(RULES)


def test_schema_disable_and_severity(broken):
    root, _ = broken
    schema = (root / "SCHEMA.md").read_text()
    schema = schema.replace("disable: [no-such-rule]", "disable: [page-orphan, schema-invalid]\n  severity: {page-leaf: error}")
    (root / "SCHEMA.md").write_text(schema)
    report = lint_wiki(root, today=TODAY_D)
    rules = {f.rule: f for f in report.findings}
    assert "page-orphan" not in rules and "schema-invalid" not in rules
    assert rules["page-leaf"].severity == "error"
    # an explicit --rule runs a rule even when SCHEMA.md disables it
    again = lint_wiki(root, today=TODAY_D, select=["page-orphan"])
    assert [f.rule for f in again.findings] == ["page-orphan"]


def test_without_schema_only_schema_free_rules(tmp_path: Path):
    root = tmp_path / "w"
    root.mkdir()
    (root / "a.md").write_text("---\ncolor: red\ncreated: 1700000000000\nupdated: 2025/3/1\n---\n[[b]]\n")
    (root / "b.md").write_text("---\ntitle: B\ntags: one-string\ncreated: someday\n---\n[[a]]\n")
    report = lint_wiki(root)
    got = sorted((f.rule, f.file, f.line) for f in report.findings)
    # no schema: no required/unknown/type errors; epoch millis are dates; odd and unreadable dates flagged
    assert got == [("fm-date", "a.md", 4), ("fm-date", "b.md", 4)]


@pytest.mark.parametrize(
    ("text", "want"),
    [("2025-3-1", "2025-03-01"), ("2025/03/01", "2025-03-01"), ("'2025.03.01'", "2025-03-01"),
     ("1 March 2025", "2025-03-01"), ("Mar 1, 2025", "2025-03-01"), ("March 1st 2025", "2025-03-01"),
     ("01/03/2025", None), ("2025-02-30", None), ("2025-03-01T10:00", None), ("soon", None)],
)
def test_normalize_date_text(text, want):
    assert normalize_date_text(text) == want


def test_plain_lint_imports_nothing_heavy(broken):
    root, _ = broken
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(REPO / 'plugin')!r})\n"
        "from episteme.commands.lint import main\n"
        f"rc = main(['--wiki', {str(root)!r}, '--fix', '--format', 'json'])\n"
        "heavy = [m for m in ('torch', 'chromadb', 'numpy', 'onnxruntime', 'anthropic', 'tokenizers', 'sqlite3')\n"
        "         if m in sys.modules]\n"
        "print('HEAVY', heavy, rc, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "HEAVY [] 1" in proc.stderr, proc.stderr


def test_lint_of_a_plain_vault_starts_without_the_writer(tmp_path: Path):
    """A check-only run over a markdown vault (no episteme index) imports neither the wiki
    writer nor ``dataclasses`` (which imports ``inspect``): ~8 ms of start-up each, a tenth
    of linting a 1k-page vault."""
    root = tmp_path / "vault"
    root.mkdir()
    (root / "a.md").write_text("---\ntitle: A\n---\nSee [[B]] and [[Nowhere]].\n")
    (root / "b.md").write_text("# B\n[[A]]\n")
    code = (
        "import sys, io, contextlib\n"
        f"sys.path.insert(0, {str(REPO / 'plugin')!r})\n"
        "from episteme.commands.lint import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['--wiki', {str(root)!r}, '--format', 'json'])\n"
        "print('LOADED', sorted({'dataclasses', 'inspect', 'episteme.wiki.edit'} & set(sys.modules)), rc,\n"
        "      file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "LOADED [] 1" in proc.stderr, proc.stderr


def test_quoted_iso_date_is_unquoted_only_with_a_schema(tmp_path: Path):
    root = tmp_path / "w"
    shutil.copytree(REPO / "wiki", root)
    page = "---\ntitle: A\ntype: note\nupdated: '2026-11-01'\n---\n[[B]]\n"
    (root / "a.md").write_text(page)
    (root / "b.md").write_text("---\ntitle: B\ntype: note\n---\n[[A]]\n")
    [f] = lint_wiki(root).findings
    assert (f.rule, f.file, f.line, f.fixable) == ("fm-date", "a.md", 4, True)
    proc = run("--wiki", str(root), "--fix")
    assert proc.returncode == 0, proc.stdout
    assert (root / "a.md").read_text() == page.replace("'2026-11-01'", "2026-11-01")
    (root / "SCHEMA.md").unlink()
    (root / "a.md").write_text(page)
    assert lint_wiki(root).findings == []  # without a schema a quoted ISO date is fine


def test_rules_reference_lists_every_rule_with_its_severity():
    text = (REPO / "skills" / "wiki-lint" / "references" / "rules.md").read_text(encoding="utf-8")
    for rule, spec in RULES.items():
        assert f"| `{rule}` | {spec.severity} |" in text, rule
    skill = (REPO / "skills" / "wiki-lint" / "SKILL.md").read_text(encoding="utf-8")
    assert "${CLAUDE_PLUGIN_ROOT}/plugin/scripts/wiki_lint.py" in skill


def test_index_checks_agree_with_wikiwrite_consistency_check(broken):
    """Lint compares indexes with the sections of its own single scan; wikiwrite's
    check_index_consistency rescans the pages.  Both must see the same problems."""
    from episteme.wiki.edit import check_index_consistency

    root, _ = broken
    code_to_rule = {
        "index-json-missing-section": "section-not-in-index", "index-md-missing-section": "section-not-in-index",
        "index-md-stale": "index-stale-entry", "index-json-stale": "index-json-unknown-section",
        "index-md-mismatch": "index-out-of-date", "index-json-sources": "index-out-of-date",
        "duplicate-section-id": "section-duplicate-id", "section-without-sources": "section-no-sources",
        "broken-marker": "section-marker-invalid", "interrupted-write": "index-interrupted-write",
        "index-md-format": "index-malformed",
    }
    theirs = {(code_to_rule[p.code], p.section) for p in check_index_consistency(root)}
    ours = {(f.rule, (f.data or {}).get("section")) for f in lint_wiki(root, select=sorted(set(code_to_rule.values()))).findings}
    assert {r for r, _ in ours} == {r for r, _ in theirs}
    with_ids = {x for x in theirs if x[1]}
    assert with_ids <= ours


def test_unreadable_or_missing_indexes_are_regenerated(tmp_path: Path):
    from episteme.wiki.edit import WikiWriter
    from episteme.wiki.index import read_index_json, read_index_md

    root = tmp_path / "wiki"
    shutil.copytree(REPO / "wiki", root)
    with WikiWriter(root, op="test", known_sources=None) as w:
        w.create_section("a", title="A", description="About A.", body="See [[B]].", sources=["x.pdf"])
        w.create_section("b", title="B", description="About B.", body="See [[A]].", sources=["x.pdf"])
    want_json, want_md = (root / "index.json").read_text(), (root / "index.md").read_text()
    (root / "index.json").write_text('{\n  "sec_001": ["x.pdf"],\n  oops\n}\n')
    [f] = lint_wiki(root).findings
    assert (f.rule, f.file, f.line) == ("index-malformed", "index.json", 3)
    (root / "index.md").unlink()
    rules = sorted((f.rule, f.file) for f in lint_wiki(root).findings)
    assert rules == [("index-malformed", "index.json"), ("section-not-in-index", "a.md"),
                     ("section-not-in-index", "b.md")]
    proc = run("--wiki", str(root), "--fix", "--format", "json")
    assert proc.returncode == 0, proc.stdout
    assert (root / "index.json").read_text() == want_json
    assert set(read_index_md(root).entries) == set(read_index_json(root)) == {"sec_001", "sec_002"}
    assert (root / "index.md").read_text().split("## sec_001", 1)[1] == want_md.split("## sec_001", 1)[1]


def test_usage_errors_come_in_the_format_asked_for(broken):
    root, _ = broken
    as_json = run("--wiki", str(root), "--format=json", "--rule", "no-such-rule")
    assert as_json.returncode == 2 and "no-such-rule" in json.loads(as_json.stdout)["error"]
    as_text = run("--wiki", str(root), "--rule", "no-such-rule")  # text is lint's default
    assert as_text.returncode == 2 and as_text.stdout == "" and "no-such-rule" in as_text.stderr
    bad_day = run("--wiki", str(root), "--today", "2026-13-01")
    assert bad_day.returncode == 2 and "--today must be YYYY-MM-DD, got '2026-13-01'" in bad_day.stderr


def test_closest_page_is_difflibs_best_match_among_the_candidates():
    """Whatever bound orders the candidates, the suggestion is the name with the best difflib
    ratio above 0.6 (ties to the first in code-point order): checked against every name, on
    names that all share the target's word (so every one of them is a candidate)."""
    import difflib
    import random

    from episteme.lint.suggest import Suggester

    rnd = random.Random(3)
    stems = ["alpha", "alpah", "beta", "gamma", "delta", "deltas", "epsilon", "zeta", "eta", "theta", "iota"]
    names = {f"{s} node": i for i, s in enumerate(stems)}
    ids = [f"{s}.md" for s in stems]
    sug = Suggester(names, ids)
    letters = "abdeghilmnopstz"
    for _ in range(400):
        base = list(rnd.choice(stems))
        for _ in range(rnd.randint(0, 3)):
            base[rnd.randrange(len(base))] = rnd.choice(letters)
        target = "".join(base) + " node"
        scored = [(difflib.SequenceMatcher(None, n, target).ratio(), n) for n in sorted(names)]
        above = [(r, n) for r, n in scored if r > 0.6]
        want = None
        if above:
            top = max(r for r, _ in above)
            want = ids[names[min(n for r, n in above if r == top)]]
        assert sug.suggest(target) == want, target
