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
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.errors import EpistemeError
from episteme.ingest.pipeline import ingest_paper, paper_id_for
from episteme.stores.sqlite import open_store
from episteme.stores.vectors import open_vectors
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


# --------------------------------------------- 8 + 5. crashes at any point; idempotent re-runs

CRASH_POINTS = [
    "ingest:journal", "ingest:sqlite-written", "ingest:chroma-deleted", "ingest:chroma-added",
    "ingest:raw-moved-aside", "ingest:raw-placed", "ingest:sqlite-committed", "ingest:journal-cleared",
    "write:planned", "write:section#1", "write:section#2",
]


def wiki_sections(wiki: Path) -> list[tuple[str, str, tuple[str, ...]]]:
    """(page, title, sources) of every section of every page, in file order."""
    from episteme.wiki.sections import parse_page

    out = []
    for p in sorted(wiki.rglob("*.md")):
        rel = p.relative_to(wiki).as_posix()
        if rel.startswith(("raw/", ".")) or rel in ("index.md", "log.md", "SCHEMA.md"):
            continue
        for sec in parse_page(p.read_text(encoding="utf-8"), strict=False).sections:
            out.append((rel, sec.title, tuple(sec.sources)))
    return out


@pytest.fixture(scope="module")
def crash_template(tmp_path_factory):
    """A wiki with one paper written (other.pdf) and one only ingested (tides.pdf, v1); the v2
    bytes of tides.pdf; and the sections a clean ``ingest v2 --write`` leaves (the reference
    every crashed-then-re-run ingest must converge to)."""
    import shutil

    root = tmp_path_factory.mktemp("crash")
    for d in ("v1", "v2"):
        (root / d).mkdir()
    other = make_paper_pdf(root / "other.pdf", varied_paper(5, "Kernel Budgets"))
    v1 = make_paper_pdf(root / "v1" / "tides.pdf", varied_paper(7, "Tide Records and Drift"))
    v2 = make_paper_pdf(root / "v2" / "tides.pdf", varied_paper(8, "Tide Records and Drift"))
    wiki = root / "wiki"
    for args in ((other, "--write", "--writer", "extractive", "--date", "2026-01-02"), (v1,)):
        proc = cli("ingest", str(args[0]), *args[1:], "--wiki", str(wiki), "--no-progress")
        assert proc.returncode == 0, proc.stderr
    ref = root / "ref"
    shutil.copytree(wiki, ref)
    proc = cli("ingest", str(v2), "--wiki", str(ref), "--write", "--writer", "extractive",
               "--no-progress", "--date", "2026-01-02")
    assert proc.returncode == 0, proc.stderr
    reference = wiki_sections(ref)
    assert len([x for x in reference if "tides.pdf" in x[2]]) >= 3
    return {"wiki": wiki, "v2": v2, "reference": reference}


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_crash_at_any_point_is_reconciled_and_the_rerun_converges(point, crash_template, tmp_path):
    import shutil

    from episteme.fsutil import wiki_lock
    from episteme.ingest.pipeline import pending_journal, reconcile

    wiki = tmp_path / "wiki"
    shutil.copytree(crash_template["wiki"], wiki)
    s = wiki_settings(wiki)
    args = ("ingest", str(crash_template["v2"]), "--wiki", str(wiki), "--write", "--writer",
            "extractive", "--no-progress", "--date", "2026-01-02")
    proc = cli(*args, EPISTEME_CRASH_AT=point)
    assert proc.returncode == -9, (point, proc.returncode, proc.stderr[-2000:])
    # afterwards: what the next run does first (reconcile under the lock) leaves them agreeing
    with wiki_lock(wiki):
        reconcile(s)
    assert pending_journal(s) is None
    assert stores_agree(s) == [], point
    assert not list((s.data_dir / "tmp").glob("*")), "temp copies of the killed run remain"
    assert not [p for p in s.raw_dir.iterdir() if p.name.startswith(".")], "raw/ backups remain"
    # the natural re-run: succeeds, stores agree, the wiki holds each section exactly once
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    assert stores_agree(s) == []
    got = wiki_sections(wiki)
    assert sorted(got) == sorted(crash_template["reference"]), point
    assert len({(p, t) for p, t, _ in got}) == len(got), "a section was written twice"
    lint = cli("lint", "--wiki", str(wiki), "--stores", "--format", "json")
    assert lint.returncode == 0, lint.stdout[-2000:]


@pytest.mark.parametrize("point", ["remove:chroma-deleted", "remove:sqlite-committed"])
def test_crash_during_remove_is_undone_or_finished(point, crash_template, tmp_path):
    import shutil

    from episteme.fsutil import wiki_lock
    from episteme.ingest.pipeline import reconcile

    wiki = tmp_path / "wiki"
    shutil.copytree(crash_template["wiki"], wiki)
    s = wiki_settings(wiki)
    proc = cli("remove", "tides.pdf", "--wiki", str(wiki), EPISTEME_CRASH_AT=point)
    assert proc.returncode == -9, proc.stderr[-2000:]
    with wiki_lock(wiki):
        reconcile(s)
    assert stores_agree(s) == []
    with open_store(s, readonly=True) as st:
        present = st.paper("tides.pdf") is not None
    assert present == (point == "remove:chroma-deleted")  # before the commit: undone


@pytest.mark.parametrize("after", [0, 1, 3, 5, 8])
def test_full_disk_during_ingest_is_one_error_line_and_the_next_run_works(after, crash_template,
                                                                          tmp_path):
    """Issue 36 item 3: the disk fills after ``after`` file writes of ``ingest --write`` (the
    temp copy, the staged vectors, the journal, then the wiki writer's files): exit 1 with one
    clear line and no traceback, no temp copy or staged vectors left, raw/ + SQLite + Chroma
    agreeing, and the next run (disk freed) finishing with each section written once."""
    import shutil

    wiki = tmp_path / "wiki"
    shutil.copytree(crash_template["wiki"], wiki)
    s = wiki_settings(wiki)
    args = ("ingest", str(crash_template["v2"]), "--wiki", str(wiki), "--write", "--writer",
            "extractive", "--no-progress", "--date", "2026-01-02")
    proc = cli(*args, EPISTEME_FAIL_WRITES=f"enospc:{after}")
    assert proc.returncode == 1, (after, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "no space left on device" in errors[0], proc.stderr[-2000:]
    assert stores_agree(s) == [], after
    assert not list((s.data_dir / "tmp").glob("*")), "temp copies or staged vectors remain"
    assert not [p for p in wiki.rglob("*.tmp")], "temp files remain in the wiki"
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    assert stores_agree(s) == []
    got = wiki_sections(wiki)
    assert sorted(got) == sorted(crash_template["reference"]), after
    lint = cli("lint", "--wiki", str(wiki), "--stores", "--format", "json")
    assert lint.returncode == 0, lint.stdout[-2000:]


def test_too_little_free_space_refuses_an_ingest_before_it_changes_anything(crash_template,
                                                                          tmp_path):
    """A commit asks for free space first (on a nearly full disk Chroma fails mid-write or
    hangs: benchmarks/full_disk.py): a payload the disk cannot hold is one WriteError naming the
    free space, nothing stored; a small one passes."""
    import shutil

    from episteme.errors import WriteError
    from episteme.ingest.commit import MIN_FREE_BYTES, ensure_free_space

    wiki = tmp_path / "wiki"
    shutil.copytree(crash_template["wiki"], wiki)
    s = wiki_settings(wiki)
    free = shutil.disk_usage(s.data_dir).free
    with pytest.raises(WriteError, match="not enough free space") as info:
        ensure_free_space(s, free)
    assert info.value.errno == 28 and "nothing was stored" in info.value.message
    if free > 2 * MIN_FREE_BYTES:
        ensure_free_space(s, 1024)


def test_force_write_and_reruns_never_duplicate_sections(crash_template, tmp_path):
    import shutil

    wiki = tmp_path / "wiki"
    shutil.copytree(crash_template["wiki"], wiki)
    first = None
    for extra in ((), (), ("--force-write",), ("--force-write",)):
        proc = cli("ingest", str(crash_template["v2"]), "--wiki", str(wiki), "--write",
                   "--writer", "extractive", "--no-progress", "--date", "2026-01-02", *extra)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        if first is None:
            first = out
            assert out["new_sections"]
        else:
            assert out["new_sections"] == [], extra
    assert sorted(wiki_sections(wiki)) == sorted(crash_template["reference"])


# ------------------------------------------------- 2. one awkward section never half-writes

def _one_font_lines(seed: int, n: int = 150) -> list[str]:
    import random

    rng = random.Random(seed)
    words = ("signal", "model", "layer", "record", "estimate", "sample", "window", "graph")
    return [" ".join(rng.choice(words) for _ in range(14)) + "." for _ in range(n)]


@pytest.mark.parametrize("case", ["marker-title", "long-guessed-title", "marker-heading"])
def test_awkward_titles_are_sanitised_and_dry_run_matches_the_write(case, tmp_path):
    from pdfgen import Paper, Section, make_lines_pdf

    pdf = tmp_path / f"{case}.pdf"
    if case == "marker-title":
        make_lines_pdf(pdf, _one_font_lines(1), info_title='Robust <!-- section {"id": '
                       '"sec_001"} --> Methods -->')
    elif case == "long-guessed-title":  # one font, no metadata title: a guessed 200+ char title
        make_lines_pdf(pdf, _one_font_lines(2))
    else:
        paper = varied_paper(3)
        paper.sections.insert(1, Section("2", "Attack <!-- section --> and -->", paper.sections[1]
                                         .paragraphs))
        assert isinstance(paper, Paper)
        make_paper_pdf(pdf, paper)
    wiki = tmp_path / "wiki"
    base = ("ingest", str(pdf), "--wiki", str(wiki), "--write", "--writer", "extractive",
            "--no-progress", "--date", "2026-01-02")
    dry = cli(*base, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)["plan"]
    real = cli(*base)
    assert real.returncode == 0, real.stderr
    out = json.loads(real.stdout)
    assert out["write_status"] == "written" and len(out["new_sections"]) == len(plan)
    got = wiki_sections(wiki)
    assert sorted(t for _, t, _ in got) == sorted(d["title"] for d in plan)
    for _, title, _ in got:
        assert "<!--" not in title and "-->" not in title and len(title) <= 200
    lint = cli("lint", "--wiki", str(wiki), "--stores", "--format", "json")
    assert lint.returncode == 0, lint.stdout[-2000:]
    again = cli(*base)
    assert json.loads(again.stdout)["write_status"] == "already-written"
    assert wiki_sections(wiki) == got


def test_plan_validation_fails_before_anything_is_written(tmp_path, three_pdfs, embedder):
    """A decision that cannot be made valid (a page path out of the wiki) stops the whole plan
    before the first write: no page, no index, no log entry."""
    from episteme.compile.writer import Decision, WritePlan, validate_plan
    from episteme.errors import UsageError

    wiki = tmp_path / "w"
    s = wiki_settings(wiki)
    ingest_paper(s, three_pdfs["论文.pdf"], name="p.pdf", progress=False, embedder=embedder)
    ok = Decision("create", "fine-topic.md", "Fine", "A fine section.", "Body text.", ["p.pdf"])
    bad = Decision("create", "../outside.md", "Bad", "Escapes.", "Body.", ["p.pdf"])
    with pytest.raises(UsageError, match="nothing was written"):
        validate_plan(wiki, WritePlan("p.pdf", "extractive", [ok, bad]))
    assert sorted(p.name for p in wiki.iterdir()) == [".episteme", "raw"]


# -------------------------------------------- 7. rebuild recovers from any derived-store state

def _damage(s, how: str) -> None:
    import shutil

    if how == "chroma-truncated":
        db = s.chroma_path / "chroma.sqlite3"
        with open(db, "r+b") as f:
            f.truncate(db.stat().st_size // 3)
    elif how == "chroma-is-a-file":
        shutil.rmtree(s.chroma_path)
        s.chroma_path.write_bytes(b"not a folder")
    elif how == "both-garbage":
        for extra in ("-wal", "-shm"):
            Path(str(s.sqlite_path) + extra).unlink(missing_ok=True)
        s.sqlite_path.write_bytes(b"garbage, not SQLite" * 300)
        (s.chroma_path / "chroma.sqlite3").write_bytes(os.urandom(20000))


@pytest.mark.parametrize("how", ["chroma-truncated", "chroma-is-a-file", "both-garbage"])
def test_rebuild_recovers_from_a_damaged_store_and_errors_name_it(how, crash_template, tmp_path):
    import shutil

    wiki = tmp_path / "wiki"
    shutil.copytree(crash_template["wiki"], wiki)
    s = wiki_settings(wiki)
    _damage(s, how)
    proc = cli("ingest", str(crash_template["v2"]), "--wiki", str(wiki), "--no-progress")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "episteme rebuild" in json.loads(proc.stdout)["error"]
    proc = cli("rebuild", "--wiki", str(wiki), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert sorted(p["paper"] for p in out["papers"]) == ["other.pdf", "tides.pdf"]
    assert stores_agree(s) == []
    chat = cli("chat", "What is the kernel budget?", "--wiki", str(wiki), "--full")
    assert chat.returncode == 0, chat.stderr[-2000:]
    assert json.loads(chat.stdout)["sources"]


# ---------------------------------------------------- 10. regular files only; stdin streamed

def test_special_files_are_refused_and_stdin_is_streamed_with_the_limit(tmp_path, three_pdfs):
    fifo = tmp_path / "pipe.pdf"
    os.mkfifo(fifo)
    wiki = tmp_path / "w"
    for special in ("/dev/zero", str(fifo)):
        proc = cli("ingest", special, "--wiki", str(wiki), "--no-progress", timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert "not a regular file" in json.loads(proc.stdout)["error"]
    big = subprocess.run([sys.executable, "-m", "episteme.cli", "ingest", "-", "--wiki", str(wiki),
                          "--no-progress"], input=b"\0" * 3_000_000, capture_output=True,
                         env=_env(EPISTEME_MAX_PDF_BYTES="1000000"), timeout=60)
    assert big.returncode == 1 and b"over the limit" in big.stderr
    ok = subprocess.run([sys.executable, "-m", "episteme.cli", "ingest", "-", "--name", "piped.pdf",
                         "--wiki", str(wiki), "--no-progress"],
                        input=three_pdfs["论文.pdf"].read_bytes(), capture_output=True,
                        env=_env(), timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["paper"] == "piped.pdf"
    assert stores_agree(wiki_settings(wiki)) == []


# ---------------------------------------------------------------- 11. a read-only wiki

def test_read_only_wiki_read_commands_work_write_commands_say_one_line(crash_template, tmp_path):
    """A real read-only bind mount of a written wiki (the suite runs as root, where file modes
    do not stop writes)."""
    import shutil

    wiki = tmp_path / "wiki"
    shutil.copytree(crash_template["wiki"], wiki)
    ro = tmp_path / "ro"
    ro.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(wiki), str(ro)], capture_output=True)
    if mounted.returncode != 0:  # not root: plain file modes make it read-only
        ro.rmdir()
        ro = wiki
        subprocess.run(["chmod", "-R", "a-w", str(wiki)], check=True)
    else:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
    try:
        for args in (("graph", "--mode", "stats"), ("lint",)):
            proc = cli(*args, "--wiki", str(ro))
            assert proc.returncode == 0, proc.stderr
        # chat and retrieve: the section index is read in memory, Chroma through a temp copy
        for args in (("retrieve", "Kernel Budgets key points"),
                     ("chat", "What are the key points of Kernel Budgets?"),
                     ("trace", "--answer", "Kernel budgets are measured in trials [other.pdf].")):
            proc = cli(*args, "--wiki", str(ro))
            assert proc.returncode == 0, (args, proc.stderr)
            assert "Traceback" not in proc.stderr
        hits = json.loads(cli("retrieve", "Kernel Budgets key points", "--wiki", str(ro)).stdout)
        assert hits["sections"] and hits["index"]["unchanged"] + hits["index"]["added"] >= 3
        proc = cli("lint", "--stores", "--wiki", str(ro), "--format", "json")
        assert "error returned from database" not in proc.stdout + proc.stderr
        found = {f["rule"]: f["message"] for f in json.loads(proc.stdout)["findings"]}
        assert "store-unavailable" not in found and "read-only" in found["store-read-only"], found
        for args in (("ingest", str(crash_template["v2"]), "--no-progress"), ("rebuild",),
                     ("remove", "tides.pdf")):
            proc = cli(*args, "--wiki", str(ro))
            assert proc.returncode == 1, (args, proc.stderr)
            assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
            assert "needs write access" in json.loads(proc.stdout)["error"]
    finally:
        if ro != wiki:
            subprocess.run(["umount", str(ro)], check=False)
        else:
            subprocess.run(["chmod", "-R", "u+w", str(wiki)], check=False)


# ------------------------------------------------------- 13. modes, escapes, the link sanitizer

def test_rewritten_files_keep_their_mode_and_new_ones_get_the_umask_default(tmp_path):
    from episteme.fsutil import atomic_write_text

    page = tmp_path / "page.md"
    page.write_text("old")
    os.chmod(page, 0o664)
    atomic_write_text(page, "new")
    assert page.stat().st_mode & 0o777 == 0o664 and page.read_text() == "new"
    fresh = tmp_path / "fresh.md"
    atomic_write_text(fresh, "x")
    mask = os.umask(0)
    os.umask(mask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~mask


def test_terminal_escapes_in_pdf_text_are_stripped_before_storing(tmp_path, embedder):
    from episteme.cliutil import sanitize_terminal
    from pdfgen import make_lines_pdf

    lines = [f"Line {i} of a measured record with \x1b[31mred\x1b[0m text and a bell \x07 here."
             for i in range(80)]
    pdf = make_lines_pdf(tmp_path / "esc.pdf", lines)
    s = wiki_settings(tmp_path / "w")
    out = ingest_paper(s, pdf, progress=False, embedder=embedder)
    with open_store(s, readonly=True) as st:
        text = "".join(x["section_text"] for x in st.sections(out["paper"]))
    assert "red" in text and "\x1b" not in text and "\x07" not in text
    assert sanitize_terminal("a\x1b]0;title\x07b\x1b[2Jc\x9bd") == "abcd"


def test_text_output_never_carries_terminal_escapes(crash_template, tmp_path):
    """A hand-edited (hostile) page: its escapes must not reach the terminal through text
    output (retrieve, chat, lint, graph).  JSON output escapes them by itself."""
    import shutil

    wiki = tmp_path / "wiki"
    shutil.copytree(crash_template["wiki"], wiki)
    evil = "\x1b]0;pwned\x07\x1b[2J\x1b[31mKernel\x9b budgets\x07 "
    page = next(p for p in sorted(wiki.rglob("*.md")) if "## Summary" in p.read_text())
    text = page.read_text(encoding="utf-8").replace("## Summary\n", f"## Summary\n\n{evil}\n", 1)
    page.write_text(text, encoding="utf-8")
    (wiki / "bad\x1b[2Jname.md").write_text("# x\n[[missing-page]]\n", encoding="utf-8")
    runs = [("retrieve", "Kernel budgets summary"), ("chat", "What do Kernel budgets say?"),
            ("lint",), ("graph", "--mode", "orphans")]
    for args in runs:
        proc = cli(*args, "--wiki", str(wiki), "--format", "text")
        assert proc.returncode in (0, 1), (args, proc.stderr)
        assert proc.stdout.strip(), args
        for bad in ("\x1b", "\x07", "\x9b"):
            assert bad not in proc.stdout and bad not in proc.stderr, (args, proc.stdout)


def test_huge_text_layer_is_bounded(tmp_path):
    """72 KB of PDF holding 20 MB of text: refused or split quickly, never minutes."""
    import time

    from episteme.pdf.split import split_pdf
    from pdfgen import make_huge_text_pdf

    pdf = make_huge_text_pdf(tmp_path / "huge.pdf", 20_000_000)
    assert pdf.stat().st_size < 200_000
    t = time.process_time()
    with pytest.raises(EpistemeError) as err:  # its only page is past the content cap
        split_pdf(pdf)
    assert time.process_time() - t < 10
    # reported as what it is, not as a scan without a text layer
    assert err.value.details["kind"] == "too_large" and "no text layer" not in err.value.message
    assert "page(s) 1" in err.value.message and "content stream" in err.value.message
    small = make_huge_text_pdf(tmp_path / "big.pdf", 400_000, pages=4)
    res = split_pdf(small)
    assert sum(len(x.text) for x in res.sections) <= 4 * 30_000 + 1000


def test_a_page_skipped_for_its_content_stream_is_named_in_the_warnings(tmp_path):
    """Readable pages plus one with a 10 MB content stream: the paper is split, and the
    warnings say page 3 was not read because of its stream size."""
    from episteme.pdf.split import split_pdf
    from pdfgen import write_pdf

    words = ["sample", "station", "drift", "kernel", "budget", "measure", "window", "record",
             "signal", "vector"]

    def prose(seed: int) -> bytes:
        rows = [" ".join(words[(seed + i + j) % len(words)] for j in range(12)) for i in range(30)]
        body = b"".join(b"(" + r.encode() + b") Tj 0 -14 Td\n" for r in rows)
        return b"BT /F1 10 Tf 72 740 Td\n" + body + b"ET"

    run = b"(" + b"lorem ipsum dolor sit amet " * 40 + b") Tj\n"
    huge = b"BT /F1 10 Tf 72 700 Td\n" + run * (10_500_000 // len(run)) + b"ET"
    pdf = tmp_path / "mixed.pdf"
    pdf.write_bytes(write_pdf([prose(0), prose(3), huge, prose(5)]))
    res = split_pdf(pdf)
    assert sum(len(x.text) for x in res.sections) > 3000
    named = [w for w in res.warnings if w.startswith("page 3:")]
    assert named and "content stream" in named[0] and "MB" in named[0], res.warnings


# -------------------------------------------- 12 + 3. the server: streamed limit, cancel, timeout

@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    from serverlive import LiveServer

    wiki = tmp_path_factory.mktemp("srv") / "wiki"
    stale = wiki / ".episteme" / "uploads"
    stale.mkdir(parents=True)
    (stale / "999999.deadbeef.pdf").write_bytes(b"%PDF- leaked by a killed server")
    with LiveServer(wiki_settings(wiki, max_pdf_bytes=200_000), write_mode="extractive",
                    warm=False) as srv:
        yield srv


def test_killed_servers_uploads_are_cleaned_at_start(small_server):
    assert not list((small_server.settings.data_dir / "uploads").glob("999999.*"))


def test_chunked_upload_is_stopped_at_the_limit_while_streaming(small_server):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", small_server.port, timeout=60)
    boundary = "b0undary"
    conn.putrequest("POST", "/ingest")
    conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.pdf\""
            "\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\n").encode()
    sent = 0
    try:
        for chunk in [head] + [b"0" * 65536] * 200:  # 13 MB offered, limit 200 kB
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
    except OSError:
        pass  # the server closed the connection: it stopped reading
    resp = conn.getresponse()
    body = json.loads(resp.read())
    assert resp.status == 413 and body["details"]["kind"] == "too_large"
    uploads = small_server.settings.data_dir / "uploads"
    assert sum(f.stat().st_size for f in uploads.glob("*")) == 0


def test_a_queued_job_can_be_cancelled(small_server, three_pdfs):
    from serverlive import request, upload

    jobs = small_server.app.state.services.jobs if hasattr(small_server.app.state, "services") \
        else None
    release = None
    if jobs is not None:  # hold the worker so the next job stays queued
        import threading

        release = threading.Event()
        jobs.submit("hold", "-", lambda job: release.wait(60))
    status, body, _ = upload(small_server.url, "论文.pdf", three_pdfs["论文.pdf"].read_bytes(),
                             "?wait=false")
    assert status == 202
    status, cancelled, _ = request("DELETE", f"{small_server.url}/jobs/{body['job']}")
    assert status == 202
    if release is not None:
        release.set()
    import time

    for _ in range(600):
        _, final, _ = request("GET", f"{small_server.url}/jobs/{body['job']}")
        if final["status"] in ("cancelled", "done", "failed"):
            break
        time.sleep(0.1)
    assert final["status"] in ("cancelled", "done")  # done: it ran before the cancel arrived
    if release is not None:
        assert final["status"] == "cancelled"
        assert not (small_server.settings.raw_dir).exists() or not list(
            small_server.settings.raw_dir.iterdir())


def test_wikisearch_imports_without_fcntl():
    """Windows has no ``fcntl``: the section index must import without it (its lock comes from
    episteme.fsutil, which imports the platform's lock module only when locking)."""
    code = ("import sys; sys.modules['fcntl'] = None\n"
            "import episteme.query.wikisearch as w\n"
            "assert w.file_lock.__module__ == 'episteme.fsutil'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
