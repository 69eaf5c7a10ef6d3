"""The batch writer (``write_section --batch``) under hostile input, failing disks and kills
(issue 36): a failure changes nothing or is finished by the next writer, never repeated; a full
disk gives one clear error and leaves no temp files; modes are kept; bad JSON lines are usage
errors.  Light: the wiki package alone (the full disk is fault injection through
``EPISTEME_FAIL_WRITES``, the kill is ``EPISTEME_CRASH_AT``), so it runs in the portable suite.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.errors import EpistemeError, UsageError
from episteme.wiki.batch import parse_batch, run_batch
from episteme.wiki.edit import (
    check_index_consistency,
    create_section,
    rebuild_indexes,
    resolve_page,
)
from episteme.wiki.index import read_index_json

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "plugin" / "scripts" / "write_section.py"
KNOWN = {"attention.pdf", "bert.pdf"}


@pytest.fixture
def wiki(tmp_path) -> Path:
    w = tmp_path / "wiki"
    shutil.copytree(REPO / "wiki", w, ignore=shutil.ignore_patterns(".episteme"))
    (w / "raw").mkdir(exist_ok=True)
    for name in KNOWN:
        (w / "raw" / name).write_bytes(b"%PDF-1.4 stand-in")
    create_section(w, "attention", title="Old", description="old one", body="Old body.",
                   sources=["attention.pdf"], known_sources=KNOWN)
    return w


def _line(**kw) -> str:
    return json.dumps(kw)


CREATE_TWO = "\n".join([
    _line(op="create", page="attention", title="New One", description="a new one", body="New body."),
    _line(op="create", page="newdir/fresh-page", title="Fresh", description="a fresh page", body="Fresh body."),
    _line(op="update", section_id="sec_001", body="Changed body."),
])


def _snapshot(wiki: Path) -> dict[str, bytes]:
    """Every file of the wiki outside ``.episteme/`` (pages, indexes, log)."""
    return {p.relative_to(wiki).as_posix(): p.read_bytes() for p in sorted(wiki.rglob("*"))
            if p.is_file() and ".episteme" not in p.relative_to(wiki).parts}


def _temp_files(wiki: Path) -> list[str]:
    return sorted(p.relative_to(wiki).as_posix() for p in wiki.rglob("*.tmp"))


def _run(wiki: Path, text: str = CREATE_TWO, **kw):
    return run_batch(wiki, parse_batch(text), known_sources=KNOWN, default_sources=["attention.pdf"], **kw)


def _sections_titled(wiki: Path, title: str) -> int:
    return sum(p.read_text(encoding="utf-8").count(f"## {title}\n") for p in wiki.rglob("*.md"))


# ------------------------------------------------------------------- item 2: failed = unchanged


def test_unwritable_log_fails_before_anything_changes_and_the_retry_writes_once(wiki):
    """log.md cannot be appended (here: a folder in its place, as ``chattr +i`` would make it
    for root): the batch fails naming log.md, the pages and indexes are unchanged, and once
    log.md is writable again the same batch writes its sections once (no duplicates)."""
    before = (wiki / "log.md").read_bytes()
    (wiki / "log.md").unlink()
    (wiki / "log.md").mkdir()
    snap = _snapshot(wiki)
    with pytest.raises(EpistemeError, match="log.md"):
        _run(wiki)
    assert _snapshot(wiki) == snap and _temp_files(wiki) == []
    (wiki / "log.md").rmdir()
    (wiki / "log.md").write_bytes(before)
    _run(wiki)
    assert _sections_titled(wiki, "New One") == 1 and _sections_titled(wiki, "Fresh") == 1
    assert check_index_consistency(wiki) == []


def test_unwritable_log_refuses_a_single_write_too(wiki):
    (wiki / "log.md").unlink()
    (wiki / "log.md").mkdir()
    snap = _snapshot(wiki)
    with pytest.raises(EpistemeError, match="log.md"):
        create_section(wiki, "attention", title="Single", description="one", body="Body.",
                       sources=["attention.pdf"], known_sources=KNOWN)
    assert _snapshot(wiki) == snap


# ------------------------------------------------------------------- item 3: a full disk


@pytest.mark.parametrize("after", range(0, 7))
def test_full_disk_during_a_batch_changes_nothing_and_leaves_no_temp_files(wiki, monkeypatch, after):
    """The disk fills after ``after`` file writes of the batch (marker, temp pages, indexes,
    id mark): one clear EpistemeError saying so, the wiki exactly as before, no temp file
    anywhere, and the next batch (disk freed) works and leaves consistent indexes."""
    snap = _snapshot(wiki)
    monkeypatch.setenv("EPISTEME_FAIL_WRITES", f"enospc:{after}")
    with pytest.raises(EpistemeError, match="no space left on device") as info:
        _run(wiki)
    assert not isinstance(info.value, OSError) or info.value.errno is not None
    monkeypatch.delenv("EPISTEME_FAIL_WRITES")
    assert _snapshot(wiki) == snap
    assert _temp_files(wiki) == []
    _run(wiki)
    assert _sections_titled(wiki, "New One") == 1 and check_index_consistency(wiki) == []


def test_full_disk_during_a_single_write_and_an_index_rebuild(wiki, monkeypatch):
    for after in range(0, 5):
        monkeypatch.setenv("EPISTEME_FAIL_WRITES", f"enospc:{after}")
        with pytest.raises(EpistemeError, match="no space left on device"):
            create_section(wiki, "attention", title=f"Try {after}", description="d", body="B.",
                           sources=["attention.pdf"], known_sources=KNOWN)
        monkeypatch.delenv("EPISTEME_FAIL_WRITES")
        assert _temp_files(wiki) == []
    (wiki / "index.md").write_text("# Index\n")  # stale: a rebuild has to rewrite it
    monkeypatch.setenv("EPISTEME_FAIL_WRITES", "enospc:0")
    with pytest.raises(EpistemeError, match="no space left on device"):
        rebuild_indexes(wiki)
    monkeypatch.delenv("EPISTEME_FAIL_WRITES")
    assert _temp_files(wiki) == []
    rebuild_indexes(wiki)
    assert check_index_consistency(wiki) == []
    create_section(wiki, "attention", title="After", description="d", body="B.",
                   sources=["attention.pdf"], known_sources=KNOWN)
    assert check_index_consistency(wiki) == []


def test_full_disk_is_one_error_line_from_the_command(wiki):
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugin"), "EPISTEME_FAIL_WRITES": "enospc:2"}
    p = subprocess.run([sys.executable, str(SCRIPT), "--wiki", str(wiki), "--batch",
                        "--source", "attention.pdf"], input=CREATE_TWO, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    errors = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1 and "no space left on device" in errors[0], p.stderr
    assert _temp_files(wiki) == []


# ------------------------------------------------------------------- item 4: killed batches


def _kill_batch_after_its_temp_files(wiki: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugin"),
           "EPISTEME_CRASH_AT": "batch:temps-written"}
    p = subprocess.run([sys.executable, str(SCRIPT), "--wiki", str(wiki), "--batch",
                        "--source", "attention.pdf"], input=CREATE_TWO, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode in (-9, 137), p.stderr
    temps = _temp_files(wiki)
    assert any(t.startswith("newdir/") for t in temps), temps  # a page in a new folder


def test_temp_pages_of_a_killed_batch_are_reported_by_lint_and_removed_by_fix(wiki):
    from episteme.lint import apply_fixes, lint_wiki

    _kill_batch_after_its_temp_files(wiki)
    report = lint_wiki(wiki)
    stale = sorted(f.file for f in report.findings if f.rule == "stale-temp-file")
    assert stale == _temp_files(wiki) and stale
    apply_fixes(wiki, report)
    assert _temp_files(wiki) == []
    assert not [f for f in lint_wiki(wiki).findings if f.rule == "stale-temp-file"]


def test_temp_pages_of_a_killed_batch_are_removed_by_the_next_write_and_rebuild(wiki):
    _kill_batch_after_its_temp_files(wiki)
    create_section(wiki, "attention", title="Next", description="d", body="B.",
                   sources=["attention.pdf"], known_sources=KNOWN)
    assert _temp_files(wiki) == []
    _kill_batch_after_its_temp_files(wiki)
    res = rebuild_indexes(wiki)
    assert _temp_files(wiki) == [] and any(t.startswith("newdir/") for t in res["removed_temp_files"])
    _run(wiki)  # the batch, run again, writes once
    assert _sections_titled(wiki, "Fresh") == 1 and check_index_consistency(wiki) == []


# ------------------------------------------------------------------- item 5: modes


def test_batch_keeps_file_modes(wiki):
    for name in ("attention.md", "index.md", "index.json"):
        os.chmod(wiki / name, 0o600)
    _run(wiki)
    for name in ("attention.md", "index.md", "index.json"):
        assert stat.S_IMODE(os.stat(wiki / name).st_mode) == 0o600, name
    new = stat.S_IMODE(os.stat(wiki / "newdir" / "fresh-page.md").st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert new == 0o666 & ~umask  # a new page: what any new file gets


# ------------------------------------------------------------------- item 7: the JSON lines


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085", "\x1c", "\x0b"])
def test_a_body_holding_a_unicode_line_separator_is_one_line(wiki, sep):
    text = _line(op="create", page="attention", title="Odd", description="odd",
                 body=f"before{sep}after")
    # json.dumps escapes it; an agent may send it raw (valid JSON inside a string)
    raw = text.replace("\\u2028", "\u2028").replace("\\u2029", "\u2029").replace("\\u0085", "\u0085")
    [item] = parse_batch(raw)
    assert item["body"] == f"before{sep}after"


@pytest.mark.parametrize("extra,msg", [
    ({"level": "abc"}, "level"), ({"level": {}}, "level"), ({"level": True}, "level"),
    ({"level": 9}, "level"), ({"level": 2.5}, "level"),
])
def test_bad_level_is_a_usage_error(wiki, extra, msg):
    line = _line(op="create", page="attention", title="T", description="d", body="B.", **extra)
    with pytest.raises(UsageError, match=msg):
        _run(wiki, line)


@pytest.mark.parametrize("value", ["false", "true", 1, 0, None, [], {}])
def test_non_boolean_replace_sources_is_a_usage_error(wiki, value):
    line = _line(op="update", section_id="sec_001", body="X.", sources=["bert.pdf"],
                 replace_sources=value)
    with pytest.raises(UsageError, match="replace_sources"):
        parse_batch(line)


def test_deeply_nested_line_is_a_usage_error():
    with pytest.raises(UsageError, match="line 1"):
        parse_batch('{"op": "create", "body": ' + "[" * 100_000 + "]" * 100_000 + "}")


def test_a_usage_error_leaves_the_wiki_alone(wiki):
    snap = _snapshot(wiki)
    bad = CREATE_TWO + "\n" + _line(op="create", page="attention", title="T", description="d",
                                    body="B.", level="abc")
    with pytest.raises(UsageError):
        _run(wiki, bad)
    assert _snapshot(wiki) == snap


# ------------------------------------------------------------------- item 8: names


def test_a_page_differing_only_in_case_from_an_existing_one_is_refused(wiki):
    (wiki / "Attention Notes.md").write_text("hand made\n")
    (wiki / "Concepts").mkdir()
    (wiki / "Concepts" / "x.md").write_text("hand made\n")
    with pytest.raises(UsageError, match="letter case"):
        resolve_page(wiki, "concepts/new-page")
    assert resolve_page(wiki, "Attention Notes")[0] == "Attention Notes.md"  # itself: fine
    with pytest.raises(UsageError, match="letter case"):
        _run(wiki, _line(op="create", page="concepts/y", title="T", description="d", body="B."))
    (wiki / "Bert.md").write_text("hand made\n")
    with pytest.raises(UsageError, match="Bert.md"):
        resolve_page(wiki, "bert")


def test_an_unwritable_page_in_a_batch_is_named(wiki, monkeypatch):
    """The temp file beside a page cannot be written (permission): the error names the page,
    not ``.attention.md.batchPID-N.tmp``, and nothing changed."""
    snap = _snapshot(wiki)
    monkeypatch.setenv("EPISTEME_FAIL_WRITES", "eacces:1")  # the marker passes, the first page fails
    with pytest.raises(EpistemeError) as info:
        _run(wiki)
    assert "attention.md" in str(info.value) and ".tmp" not in str(info.value)
    assert _snapshot(wiki) == snap and _temp_files(wiki) == []


# ------------------------------------------------------------------- issue 34: --source adds


def test_batch_source_is_added_to_a_line_s_own_sources(wiki):
    line = _line(op="create", page="attention", title="Two", description="from two papers",
                 body="Both.", sources=["bert.pdf"])
    out = _run(wiki, line)
    assert out["results"][0]["sources"] == ["bert.pdf", "attention.pdf"]
    sid = out["results"][0]["section_id"]
    assert read_index_json(wiki)[sid] == ["bert.pdf", "attention.pdf"]
