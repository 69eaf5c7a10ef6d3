"""tools/docs_check.py: the docs' command examples are rerun and their shown output checked.

Runs the real tool (a subprocess, as `make test` does) on the shipped docs and on small docs
written here, against the fixed wiki examples/demo-wiki."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "docs_check.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    return subprocess.run(
        [sys.executable, str(TOOL), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_shipped_docs_match_real_output():
    proc = _run("--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _doc(tmp_path: Path, shown: str, marker: str = "<!-- docs-check -->") -> Path:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Example\n\n" + marker + "\n```console\n"
        "$ episteme graph --wiki demo-wiki --mode stats --format text | head -n 3\n"
        + shown
        + "\n$ episteme lint --wiki demo-wiki\n"
        "0 error(s), 0 warning(s), 0 info — 13 pages, 19 sections checked in 9.99 s\n"
        "```\nafter\n",
        encoding="utf-8",
    )
    return doc


def test_drifted_output_fails_check_and_is_rewritten(tmp_path):
    doc = _doc(tmp_path, "[Operation] wiki-graph | stats\n\n[Scanned] 99 pages, 1 edges\n")
    proc = _run("--check", str(doc))
    assert proc.returncode == 1
    assert "+[Scanned] 13 pages, 38 edges (0 dangling)" in proc.stdout
    before = doc.read_text(encoding="utf-8")
    assert _run(str(doc)).returncode == 0
    after = doc.read_text(encoding="utf-8")
    assert after != before and "[Scanned] 13 pages, 38 edges (0 dangling)" in after
    # the timing differs from any real run, but only timings: the doc's text is kept
    assert "checked in 9.99 s" in after
    assert after.endswith("```\nafter\n")
    assert _run("--check", str(doc)).returncode == 0


def test_run_block_with_a_bad_flag_fails(tmp_path):
    doc = tmp_path / "skill.md"
    doc.write_text(
        "<!-- docs-check run -->\n```bash\n"
        "python3 ${CLAUDE_PLUGIN_ROOT}/plugin/scripts/graph_query.py --wiki WIKI --mode stats\n"
        "python3 ${CLAUDE_PLUGIN_ROOT}/plugin/scripts/graph_query.py --wiki WIKI --sort -updated\n"
        "```\n",
        encoding="utf-8",
    )
    proc = _run("--check", str(doc))
    assert proc.returncode == 1
    assert "--sort: expected one argument" in proc.stderr


def test_slow_blocks_are_skipped_without_slow(tmp_path):
    doc = _doc(tmp_path, "not what it prints\n", marker="<!-- docs-check slow -->")
    assert _run("--check", str(doc)).returncode == 0


def test_unknown_option_is_an_error(tmp_path):
    doc = _doc(tmp_path, "x\n", marker="<!-- docs-check fast-please -->")
    proc = _run("--check", str(doc))
    assert proc.returncode != 0 and "unknown docs-check option" in proc.stderr


def test_a_figure_not_in_its_results_file_fails(tmp_path):
    results = REPO / "benchmarks" / "RESULTS-graph.md"
    doc = tmp_path / "figures.md"
    doc.write_text(
        "| stats | 123.456 s <!-- figures: benchmarks/RESULTS-graph.md --> |\n", encoding="utf-8")
    assert "123.456" not in results.read_text(encoding="utf-8")
    proc = _run("--check", str(doc))
    assert proc.returncode == 1 and "123.456 not in benchmarks/RESULTS-graph.md" in proc.stderr
    doc.write_text("| stats | 10k pages, no decimals <!-- figures: benchmarks/RESULTS-graph.md -->\n",
                   encoding="utf-8")
    assert _run("--check", str(doc)).returncode == 0
