"""Crash safety and locking of the wiki writer, with real processes.

A writer subprocess creating and updating sections in a loop is SIGKILLed at random moments;
afterwards no page may be torn, every section whose write returned must still be there, no id may
be duplicated, and ``rebuild_indexes`` (or simply the next write) must bring ``index.md`` and
``index.json`` back in line with the pages.  Two concurrent writers must never lose a section.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from episteme.wiki.edit import (
    check_index_consistency,
    iter_page_paths,
    pending_write,
    rebuild_indexes,
    scan_sections,
)
from episteme.wiki.index import read_index_json, read_index_md, read_log
from episteme.wiki.sections import parse_page

REPO = Path(__file__).resolve().parent.parent

WRITER = r'''
import json, random, sys
from episteme.wiki.edit import WikiWriter
wiki, tag, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(tag)
pages = [f"topic-{i}" for i in range(5)] + ["nested/deep-topic"]
mine = {}
filler = " ".join(["attention weights softmax keys queries values"] * 60)
for b in range(batches):
    with WikiWriter(wiki, op="ingest", subject=f"{tag}-{b}.pdf", known_sources={"a.pdf", "b.pdf"}) as w:
        for j in range(3):
            if mine and rng.random() < 0.4:
                sid = rng.choice(sorted(mine))
                r = w.update_section(mine[sid], sid, body=f"updated {tag} {b} {j}\n\n{filler}",
                                     sources=[rng.choice(["a.pdf", "b.pdf"])])
            else:
                r = w.create_section(rng.choice(pages), title=f"{tag} {b} {j}",
                                     description=f"section {tag} {b} {j}",
                                     body=f"text {tag} {b} {j} [[topic-1]]\n\n{filler}",
                                     sources=[rng.choice(["a.pdf", "b.pdf"])], tags=[tag])
                mine[r.section_id] = r.page
            print(json.dumps({"status": r.status, "id": r.section_id, "page": r.page}), flush=True)
'''


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "plugin") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _new_wiki(tmp_path: Path) -> tuple[Path, Path]:
    wiki = tmp_path / "wiki"
    shutil.copytree(REPO / "wiki", wiki, ignore=shutil.ignore_patterns(".episteme"))
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return wiki, script


def _assert_pages_whole(wiki: Path) -> dict[str, str]:
    """Every page parses strictly with valid frontmatter; returns section id → page."""
    where: dict[str, str] = {}
    for rel in iter_page_paths(wiki):
        text = (wiki / rel).read_text(encoding="utf-8")
        assert text.startswith("---\n") and text.endswith("\n"), rel
        fm = yaml.safe_load(text.split("---\n")[1])
        assert isinstance(fm, dict) and fm["title"] and fm["type"] == "concept", rel
        for sec in parse_page(text, strict=True).sections:
            assert sec.id not in where, f"{sec.id} duplicated on {where.get(sec.id)} and {rel}"
            assert sec.body.endswith("keys queries values"), f"{rel} {sec.id} body truncated"
            where[sec.id] = rel
    return where


def test_sigkill_at_random_points_then_recovery(tmp_path):
    wiki, script = _new_wiki(tmp_path)
    rng = random.Random(20261129)
    committed: dict[str, str] = {}
    killed_mid_write = 0
    for rnd in range(6):
        proc = subprocess.Popen([sys.executable, str(script), str(wiki), f"w{rnd}", "1000"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        first = proc.stdout.readline()  # writing has started
        assert first, proc.stderr.read()
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        for line in [first, *rest.splitlines()]:
            if line.strip():
                d = json.loads(line)
                committed[d["id"]] = d["page"]
        killed_mid_write += pending_write(wiki) is not None
        # The wiki right after the kill: pages whole, nothing committed lost, ids unique.
        where = _assert_pages_whole(wiki)
        for sid, page in committed.items():
            assert where.get(sid) == page, f"committed {sid} lost (expected on {page})"
        assert not [p for p in scan_sections(wiki).problems if p.code == "duplicate-section-id"]
    assert killed_mid_write >= 1  # the kills did land inside writes
    report = rebuild_indexes(wiki)
    assert report["problems"] == [] and report["sections"] == len(_assert_pages_whole(wiki))
    assert check_index_consistency(wiki) == []
    assert not list(wiki.rglob(".*.tmp"))
    ijson, imd = read_index_json(wiki), read_index_md(wiki).entries
    assert set(ijson) == set(imd) == set(_assert_pages_whole(wiki))
    assert all(imd[sid].page == page for sid, page in _assert_pages_whole(wiki).items())
    again = rebuild_indexes(wiki)
    assert again["changed"] is False


def test_next_write_recovers_after_kill(tmp_path):
    wiki, script = _new_wiki(tmp_path)
    proc = subprocess.Popen([sys.executable, str(script), str(wiki), "k", "1000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    assert proc.stdout.readline()
    time.sleep(0.2)
    proc.kill()
    proc.communicate(timeout=30)
    # Finish with a short clean run of the same writer: its first batch repairs the indexes.
    done = subprocess.run([sys.executable, str(script), str(wiki), "clean", "1"], capture_output=True,
                          text=True, env=_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert pending_write(wiki) is None
    assert check_index_consistency(wiki) == []


def test_two_concurrent_writers_lose_nothing(tmp_path):
    wiki, script = _new_wiki(tmp_path)
    procs = [subprocess.Popen([sys.executable, str(script), str(wiki), tag, "6"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env()) for tag in ("left", "right")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    results = [json.loads(line) for out, _ in outs for line in out.splitlines() if line.strip()]
    created = [r["id"] for r in results if r["status"] == "created"]
    assert len(results) == 36 and len(created) == len(set(created))
    where = _assert_pages_whole(wiki)
    assert set(where) == set(created)  # every created section survived both writers
    assert check_index_consistency(wiki) == []  # consistent without any rebuild
    entries, problems = read_log(wiki)
    assert not problems and len(entries) == 12
    assert sorted(s for e in entries for s in e.items.get("created", [])) == sorted(created)


CRASHER = r'''
import os, sys
import episteme.fsutil as fs
import episteme.wiki.edit as ww
import episteme.wiki.upkeep as up
from episteme.wiki.edit import WikiWriter
wiki, point, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
real = getattr(ww, point)
# every module that writes a file of the batch (the marker is fsutil's journal, the id mark upkeep's)
mods = [ww, up, fs] if point == "atomic_write_text" else [ww]
calls = []
def die(*args, **kwargs):  # the process dies right before the nth such step, as with a power cut
    calls.append(1)
    if len(calls) == nth:
        os._exit(9)
    return real(*args, **kwargs)
for m in mods:
    setattr(m, point, die)
with WikiWriter(wiki, op="ingest", subject="b.pdf", known_sources={"a.pdf", "b.pdf"}) as w:
    w.update_section("topic-0", "sec_001", body="changed body", sources=["b.pdf"])
    w.create_section("topic-0", title="New", description="brand new", body="new body", sources=["b.pdf"])
'''


# A batch (update sec_001, then create sec_002) makes these atomic writes, in order: 1 marker,
# 2 page, 3 index.json, 4 index.md, 5 page, 6 id high-water mark, 7 index.json, 8 index.md; then
# the log append and the marker removal.  The process dies right before the chosen one.
@pytest.mark.parametrize("point,nth,page_written", [
    *[("atomic_write_text", n, n > 2) for n in range(1, 9)],
    ("append_log", 1, True), ("clear_pending", 1, True),
])
def test_crash_at_each_step_is_recoverable(tmp_path, point, nth, page_written):
    from episteme.wiki.edit import create_section

    wiki, _ = _new_wiki(tmp_path)
    create_section(wiki, "topic-0", title="Old", description="old one", body="old body", sources=["a.pdf"],
                   known_sources={"a.pdf"})
    script = tmp_path / "crasher.py"
    script.write_text(CRASHER)
    p = subprocess.run([sys.executable, str(script), str(wiki), point, str(nth)], env=_env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 9, p.stderr
    # Any crash after the marker is visible to the next writer and to lint.
    assert (pending_write(wiki) is not None) == ((point, nth) != ("atomic_write_text", 1))
    pages = _assert_pages_whole_any(wiki)
    rebuild_indexes(wiki)
    assert check_index_consistency(wiki) == [] and pending_write(wiki) is None
    assert set(read_index_json(wiki)) == set(pages)
    assert read_index_json(wiki)["sec_001"] == (["a.pdf", "b.pdf"] if page_written else ["a.pdf"])
    assert rebuild_indexes(wiki)["changed"] is False


def _assert_pages_whole_any(wiki: Path) -> dict[str, str]:
    where = {}
    for rel in iter_page_paths(wiki):
        for sec in parse_page((wiki / rel).read_text(encoding="utf-8"), strict=True).sections:
            assert sec.id not in where
            where[sec.id] = rel
    return where
