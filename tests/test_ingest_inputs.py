"""Bad input is a clear error with nothing written; unsafe names stay inside raw/; the CLI; two
ingests into one wiki at the same time both land."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.errors import EpistemeError
from episteme.ingest.pipeline import ingest_paper
from episteme.stores.sqlite import open_store
from episteme.stores.vectors import open_vectors
from helpers.papers import ATT, GAN, snapshot, subset_pdf
from ingested_wiki import wiki_settings

REPO = Path(__file__).resolve().parent.parent


def _write_pdf(dest: Path, build) -> Path:
    import pypdf

    w = pypdf.PdfWriter()
    build(w)
    buf = io.BytesIO()
    w.write(buf)
    dest.write_bytes(buf.getvalue())
    return dest


def _bad_inputs(papers_dir: Path, tmp: Path) -> dict[str, tuple[Path, str, dict]]:
    """name -> (file, expected error kind, settings overrides)."""
    att = (papers_dir / ATT).read_bytes()
    cases: dict[str, tuple[Path, str, dict]] = {}
    (tmp / "notes.pdf").write_text("just some notes, not a PDF at all\n" * 20)
    cases["text_named_pdf"] = (tmp / "notes.pdf", "not_pdf", {})
    (tmp / "image.pdf").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(2000))
    cases["png_named_pdf"] = (tmp / "image.pdf", "not_pdf", {})
    (tmp / "truncated.pdf").write_bytes(att[: len(att) // 2])
    cases["truncated"] = (tmp / "truncated.pdf", "corrupt", {})
    (tmp / "garbled.pdf").write_bytes(b"%PDF-1.5\n" + os.urandom(5000) + b"\n%%EOF\n")
    cases["garbled"] = (tmp / "garbled.pdf", "corrupt", {})
    (tmp / "empty.pdf").write_bytes(b"")
    cases["empty_file"] = (tmp / "empty.pdf", "empty", {})
    cases["zero_pages"] = (_write_pdf(tmp / "zero.pdf", lambda w: None), "empty", {})
    cases["scanned"] = (
        _write_pdf(tmp / "scan.pdf", lambda w: [w.add_blank_page(612, 792) for _ in range(3)]),
        "no_text", {})

    def encrypted(w):
        import pypdf

        for page in pypdf.PdfReader(papers_dir / GAN).pages[:1]:
            w.add_page(page)
        w.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")

    cases["encrypted"] = (_write_pdf(tmp / "locked.pdf", encrypted), "encrypted", {})
    cases["too_many_bytes"] = (papers_dir / GAN, "too_large", {"max_pdf_bytes": 100_000})
    cases["too_many_pages"] = (papers_dir / GAN, "too_large", {"max_pages": 4})
    return cases


BAD = ["text_named_pdf", "png_named_pdf", "truncated", "garbled", "empty_file", "zero_pages",
       "scanned", "encrypted", "too_many_bytes", "too_many_pages"]


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error_and_writes_nothing(case, ingested_wiki, papers_dir, tmp_path,
                                                       embedder):
    path, kind, overrides = _bad_inputs(papers_dir, tmp_path)[case]
    s = wiki_settings(ingested_wiki, **overrides)
    before = snapshot(s)
    with pytest.raises(EpistemeError) as e:
        ingest_paper(s, path, progress=False, embedder=embedder, name="incoming.pdf")
    assert getattr(e.value, "kind", None) == kind, e.value.message
    assert e.value.details.get("kind") == kind
    assert "\n" not in e.value.message and len(e.value.message) < 300
    assert snapshot(s) == before
    assert not (ingested_wiki / "raw" / "incoming.pdf").exists()


def test_bad_input_into_a_fresh_wiki_creates_no_stores(tmp_path, papers_dir, embedder):
    path, _, _ = _bad_inputs(papers_dir, tmp_path)["scanned"]
    s = wiki_settings(tmp_path / "fresh")
    with pytest.raises(EpistemeError):
        ingest_paper(s, path, progress=False, embedder=embedder)
    assert not s.sqlite_path.exists() and not s.chroma_path.exists() and not s.raw_dir.exists()


@pytest.mark.parametrize(
    ("given", "stored"),
    [("../../etc/evil name.pdf", r"evil_name-[0-9a-f]{10}\.pdf"),
     ("Résumé de l’article (v2).pdf", r"Resume_de_l_article_v2-[0-9a-f]{10}\.pdf"),
     ("..", r"paper-[0-9a-f]{10}\.pdf"),
     ("no-extension", r"no-extension-[0-9a-f]{10}\.pdf"),
     ("safe_name-v2.pdf", r"safe_name-v2\.pdf")],
)
def test_unsafe_names_are_sanitised_inside_raw(given, stored, tmp_path, papers_dir, embedder):
    import re

    s = wiki_settings(tmp_path / "w")
    one = subset_pdf(papers_dir / GAN, tmp_path / "src.pdf", range(0, 1))
    out = ingest_paper(s, one, progress=False, embedder=embedder, name=given)
    assert re.fullmatch(stored, out["paper"]), out["paper"]
    assert [p.name for p in s.raw_dir.iterdir()] == [out["paper"]]
    assert all(sec["section_id"].startswith(f"{out['paper']}#") for sec in out["sections"])
    assert sorted(p.name for p in (tmp_path).iterdir()) == ["src.pdf", "w"]  # nothing escaped


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT")}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_cli_script_ingests_a_file_with_spaces_and_unicode(tmp_path, papers_dir):
    src = subset_pdf(papers_dir / ATT, tmp_path / "my attention — paper.pdf", range(0, 2))
    wiki = tmp_path / "wiki"
    proc = _cli(str(REPO / "plugin" / "scripts" / "ingest.py"), str(src), "--wiki", str(wiki),
                "--no-progress")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    stored = out["paper"]
    assert out["status"] == "ingested" and stored.startswith("my_attention_")
    assert out["sections"] and (wiki / "raw" / stored).is_file()
    again = _cli("-m", "episteme.cli", "ingest", str(src), "--wiki", str(wiki), "--no-progress")
    assert json.loads(again.stdout)["status"] == "unchanged"
    bad = tmp_path / "bad.pdf"
    bad.write_text("hello")
    proc = _cli("-m", "episteme.cli", "ingest", str(bad), "--wiki", str(wiki))
    assert proc.returncode == 1
    assert "not a PDF" in json.loads(proc.stdout)["error"]
    assert proc.stderr.strip().startswith("error: not a PDF")
    gone = _cli("-m", "episteme.cli", "remove", stored, "--wiki", str(wiki))
    assert gone.returncode == 0 and json.loads(gone.stdout)["status"] == "removed"
    missing = _cli("-m", "episteme.cli", "ingest", str(tmp_path / "nope.pdf"), "--wiki", str(wiki))
    assert missing.returncode == 1 and "no such file" in json.loads(missing.stdout)["error"]


def test_flags_override_env_and_dotenv(tmp_path, papers_dir):
    """--sqlite-path / --chroma-path beat .env; the .env's WIKI_PATH is used when no --wiki."""
    src = subset_pdf(papers_dir / GAN, tmp_path / "g.pdf", range(0, 1))
    (tmp_path / ".env").write_text(f"WIKI_PATH={tmp_path / 'envwiki'}\nSQLITE_PATH={tmp_path / 'env.db'}\n")
    proc = _cli("-m", "episteme.cli", "ingest", str(src), "--sqlite-path", str(tmp_path / "flag.db"),
                "--chroma-path", str(tmp_path / "flagchroma"), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "envwiki" / "raw" / "g.pdf").is_file()
    assert (tmp_path / "flag.db").is_file() and not (tmp_path / "env.db").exists()
    assert (tmp_path / "flagchroma").is_dir()


def test_two_processes_ingesting_into_one_wiki_both_land(tmp_path, papers_dir, embedder):
    a = subset_pdf(papers_dir / ATT, tmp_path / "a.pdf", range(0, 2))
    b = subset_pdf(papers_dir / GAN, tmp_path / "b.pdf", range(0, 2))
    wiki = tmp_path / "wiki"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_"))}
    procs = [
        subprocess.Popen([sys.executable, "-m", "episteme.cli", "ingest", str(p), "--wiki", str(wiki),
                          "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
        for p in (a, b)
    ]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout))
    assert {o["paper"] for o in outs} == {"a.pdf", "b.pdf"}
    s = wiki_settings(wiki)
    with open_store(s, readonly=True) as st:
        assert {p["id"] for p in st.papers()} == {"a.pdf", "b.pdf"}
        for o in outs:
            assert len(st.passages(paper_id=o["paper"])) == o["passages"]
    vs = open_vectors(s, embedder)
    assert vs.count() == sum(o["passages"] for o in outs)
    assert sorted(p.name for p in s.raw_dir.iterdir()) == ["a.pdf", "b.pdf"]
    q = embedder.encode(["generative adversarial networks"])
    assert vs.query_passages(q, 1)[0][0]["metadata"]["paper"] == "b.pdf"
