"""Wiki write primitives: validation, section create/replace, frontmatter, ids, index rebuild."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from episteme.errors import EpistemeError, NotFoundError, UsageError
from episteme.wiki.edit import (
    WikiWriter,
    check_index_consistency,
    create_section,
    find_section,
    next_section_id,
    raw_sources,
    rebuild_indexes,
    resolve_page,
    update_section,
    validate_body,
    validate_description,
    validate_sources,
    validate_title,
)
from episteme.wiki.index import read_index_json, read_index_md, read_log
from episteme.wiki.sections import parse_page, split_frontmatter

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
    return w


def mk(wiki, page="attention", title="Scaled dot-product attention", desc="Softmax of scaled dot products",
       body="Queries meet keys. See [[bert]].", sources=("attention.pdf",), **kw):
    return create_section(wiki, page, title=title, description=desc, body=body, sources=list(sources),
                          known_sources=KNOWN, **kw)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("page", ["../x", "/etc/passwd", "a/../../x", ".hidden/x", "raw/a", "index", "LOG.md",
                                  "SCHEMA", "Has Spaces", "a/b/c", "UPPER", "", "x\x00y", "sub/.x"])
def test_resolve_page_refuses_escapes_structural_and_bad_slugs(wiki, page):
    with pytest.raises(UsageError):
        resolve_page(wiki, page)


def test_resolve_page_accepts_slug_forms_and_existing_odd_names(wiki):
    assert resolve_page(wiki, "bert")[0] == "bert.md"
    assert resolve_page(wiki, "concepts/bert.md")[0] == "concepts/bert.md"
    (wiki / "Old Note.md").write_text("hand made\n")
    assert resolve_page(wiki, "Old Note")[0] == "Old Note.md"  # existing pages may be updated


def test_resolve_page_refuses_symlink_out_of_wiki(wiki, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (wiki / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UsageError, match="escapes"):
        resolve_page(wiki, "link/page")


@pytest.mark.parametrize("body,msg", [
    ("text\n<!-- section {\"id\": \"sec_009\"} -->\n## X", "section marker"),
    ("text <!--  Section broken", "section marker"),
    ("---\ntitle: x\n---\nbody", "frontmatter"),
    ("```python\nunclosed", "unclosed"),
    ("   \n\n", "empty"),
    ("a\x00b", "NUL"),
])
def test_validate_body_refuses(body, msg):
    with pytest.raises(UsageError, match=msg):
        validate_body(body)


def test_validate_body_drops_echoed_heading_and_normalises_newlines():
    assert validate_body("## Encoder\r\n\r\nText\r\n", "encoder") == "Text"
    assert validate_body("```\n<!-- x -->\n```\nok") == "```\n<!-- x -->\n```\nok"
    assert validate_body("a\n\n---\n\nb") == "a\n\n---\n\nb"  # a rule inside a body is fine


def test_title_description_sources_checks():
    for bad in ["", "  ", "two\nlines", "C#", "# x", "x <!-- section y"]:
        with pytest.raises(UsageError):
            validate_title(bad)
    for bad in ["", "a\nb", "Page: x.md", "Source: a.pdf", "## sec_001"]:
        with pytest.raises(UsageError):
            validate_description(bad)
    assert validate_description("  spaced   out ") == "spaced out"
    assert validate_sources(["a.pdf", "a.pdf", "b.pdf"]) == ["a.pdf", "b.pdf"]
    for bad in [["../a.pdf"], ["sub/a.pdf"], ["a b.pdf"], ["a,b.pdf"], []]:
        with pytest.raises(UsageError):
            validate_sources(bad)
    with pytest.raises(UsageError, match="unknown source"):
        validate_sources(["c.pdf"], KNOWN)
    assert validate_sources(["a.pdf"], lambda s: s == "a.pdf") == ["a.pdf"]


# -------------------------------------------------------------------------- create/update


def test_create_writes_page_indexes_and_log(wiki):
    r = mk(wiki, page_title="Attention", tags=["nlp/attention"], page_type="method")
    assert (r.status, r.page, r.section_id, r.page_created) == ("created", "attention.md", "sec_001", True)
    text = (wiki / "attention.md").read_text()
    fm = yaml.safe_load(text.split("---\n")[1])
    today = dt.date.today()
    assert fm == {"title": "Attention", "type": "method", "tags": ["nlp/attention"], "created": today,
                  "updated": today, "sources": ["attention.pdf"], "ingested_at": today}
    assert "&id" not in text and list(fm)[:3] == ["title", "type", "tags"]
    sec = parse_page(text).get("sec_001")
    assert sec.title == "Scaled dot-product attention" and sec.body == "Queries meet keys. See [[bert]]."
    assert read_index_json(wiki) == {"sec_001": ["attention.pdf"]}
    e = read_index_md(wiki).entries["sec_001"]
    assert (e.page, e.description, e.sources) == ("attention.md", "Softmax of scaled dot products", ["attention.pdf"])
    entries, problems = read_log(wiki)
    assert not problems and entries[-1].op == "write-section" and entries[-1].sections == ["sec_001"]
    assert check_index_consistency(wiki) == []


def test_update_replaces_one_section_and_keeps_every_other_byte(wiki):
    mk(wiki)
    mk(wiki, title="Multi-head", desc="Heads in parallel", body="Heads.")
    mk(wiki, title="Positional encoding", desc="Sines", body="Sines and cosines.\n\n```\ncode\n```")
    path = wiki / "attention.md"
    # A person edits the page by hand: a preamble, odd spacing in another section, a comment.
    text = path.read_text().replace("---\n<!-- section", "---\nIntro by hand.\n\n\n<!-- section", 1)
    text = text.replace("Sines and cosines.", "Sines   and cosines.  <!-- keep me -->")
    text = text.replace("type: concept\n", "type: concept\nauthors:\n- Vaswani\ncustom_field: {a: 1}\n")
    path.write_text(text)
    before = text.split("\n")
    r = update_section(wiki, "attention", "sec_002", body="Heads, rewritten.", sources=["bert.pdf"],
                       tags=["transformers"], known_sources=KNOWN)
    assert r.status == "updated" and r.sources == ["attention.pdf", "bert.pdf"]
    after = path.read_text()
    page = parse_page(after)
    assert [s.id for s in page.sections] == ["sec_001", "sec_002", "sec_003"]
    assert page.get("sec_002").body == "Heads, rewritten." and page.get("sec_002").title == "Multi-head"
    assert "Sines   and cosines.  <!-- keep me -->" in after and "Intro by hand." in after
    body_before = [ln for ln in before if "sec_002" not in ln and ln != "Heads."]
    body_after = after.split("\n")
    start = body_after.index("Intro by hand.")
    assert body_before[body_before.index("Intro by hand."):] == [
        ln for ln in body_after[start:] if "sec_002" not in ln and ln != "Heads, rewritten."]
    fm = yaml.safe_load(after.split("---\n")[1])
    assert fm["authors"] == ["Vaswani"] and fm["custom_field"] == {"a": 1}  # unknown fields kept
    assert fm["sources"] == ["attention.pdf", "bert.pdf"] and fm["tags"] == ["transformers"]
    assert read_index_json(wiki)["sec_002"] == ["attention.pdf", "bert.pdf"]
    assert check_index_consistency(wiki) == []
    r = update_section(wiki, "attention", "sec_002", sources=["bert.pdf"], replace_sources=True,
                       description="Only BERT now", known_sources=KNOWN)
    assert r.sources == ["bert.pdf"] and read_index_md(wiki).entries["sec_002"].description == "Only BERT now"


def test_update_errors_say_where_the_section_is(wiki):
    mk(wiki)
    mk(wiki, page="bert", title="MLM", desc="Masked LM", sources=["bert.pdf"])
    with pytest.raises(NotFoundError, match="lives on attention.md"):
        update_section(wiki, "bert", "sec_001", body="x", known_sources=KNOWN)
    with pytest.raises(NotFoundError, match="does not exist"):
        update_section(wiki, "bert", "sec_077", body="x", known_sources=KNOWN)
    with pytest.raises(UsageError):
        update_section(wiki, "bert", "sec_1", body="x")
    assert find_section(wiki, "sec_002")[0] == "bert.md"


def test_invalid_write_leaves_everything_untouched(wiki):
    mk(wiki)
    snapshot = {p.name: p.read_bytes() for p in wiki.iterdir() if p.is_file()}
    with pytest.raises(UsageError):
        mk(wiki, body="x <!-- section {}")
    with pytest.raises(UsageError):
        mk(wiki, sources=["ghost.pdf"])
    with pytest.raises(UsageError):
        mk(wiki, page_type="poem", page="new-page")
    assert {p.name: p.read_bytes() for p in wiki.iterdir() if p.is_file()} == snapshot
    assert not (wiki / ".episteme" / "pending-write.json").exists()


def test_broken_frontmatter_is_not_overwritten(wiki):
    (wiki / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    with pytest.raises(EpistemeError, match="frontmatter"):
        mk(wiki, page="broken")
    assert (wiki / "broken.md").read_text() == "---\ntitle: [unclosed\n---\nbody\n"


def test_page_without_frontmatter_gets_one_and_keeps_text(wiki):
    (wiki / "notes.md").write_text("# My notes\n\nfree text\n")
    mk(wiki, page="notes")
    text = (wiki / "notes.md").read_text()
    assert text.startswith("---\ntitle: Notes\ntype: note\n") and "# My notes\n\nfree text\n" in text


def test_ids_are_global_and_never_reused(wiki):
    assert next_section_id(wiki) == "sec_001"
    mk(wiki)
    mk(wiki, page="bert", sources=["bert.pdf"])
    r3 = mk(wiki, page="concepts/heads")
    assert r3.section_id == "sec_003" and r3.page == "concepts/heads.md"
    # Delete the newest section by hand and rebuild: its id must not come back.
    (wiki / "concepts" / "heads.md").unlink()
    rebuild_indexes(wiki)
    assert mk(wiki, page="x").section_id == "sec_004"
    # Without the high-water mark, the pages and index.json still set the floor.
    (wiki / ".episteme" / "section_seq").unlink()
    (wiki / "index.json").write_text(json.dumps({"sec_040": "a.pdf"}))
    assert next_section_id(wiki) == "sec_041"
    # A page carrying a higher id than any index (hand-copied) also counts.
    (wiki / ".episteme" / "section_seq").unlink()
    (wiki / "index.json").write_text("{}")
    (wiki / "index.md").write_text("# Index\n")
    (wiki / "far.md").write_text('<!-- section {"id": "sec_123", "description": "d", "sources": ["a.pdf"]} -->\n## T\n\nb\n')
    assert next_section_id(wiki) == "sec_124"


def test_batch_logs_once_and_insert_after(wiki):
    mk(wiki)
    with WikiWriter(wiki, op="ingest", subject="bert.pdf", known_sources=KNOWN) as w:
        a = w.create_section("bert", title="MLM", description="Masked LM", body="Mask.", sources=["bert.pdf"])
        b = w.create_section("bert", title="NSP", description="Next sentence", body="Pairs.", sources=["bert.pdf"])
        c = w.create_section("bert", title="Between", description="In between", body="Mid.",
                             sources=["bert.pdf"], after=a.section_id)
        w.update_section("attention", "sec_001", sources=["bert.pdf"], body="Now cites BERT too.")
        rel, created = w.ensure_page("papers/bert", title="BERT", page_type="paper", sources=["bert.pdf"],
                                     page_fields={"arxiv_id": "1810.04805", "published_at": "2018-10-11"},
                                     preamble="BERT pre-trains deep bidirectional encoders.")
        assert created and rel == "papers/bert.md"
    assert [s.id for s in parse_page((wiki / "bert.md").read_text()).sections] == [a.section_id, c.section_id, b.section_id]
    entries, _ = read_log(wiki)
    last = entries[-1]
    assert (last.op, last.subject) == ("ingest", "bert.pdf")
    assert last.items["created"] == ["sec_002", "sec_003", "sec_004"] and last.items["updated"] == ["sec_001"]
    assert last.pages == ["bert.md", "attention.md", "papers/bert.md"]
    fm = yaml.safe_load((wiki / "papers" / "bert.md").read_text().split("---\n")[1])
    assert fm["published_at"] == dt.date(2018, 10, 11) and fm["type"] == "paper"
    assert check_index_consistency(wiki) == []


def test_writer_outside_context_and_missing_wiki(tmp_path):
    with pytest.raises(RuntimeError):
        WikiWriter(tmp_path).create_section("a", title="t", description="d", body="b", sources=["a.pdf"])
    with pytest.raises(NotFoundError), WikiWriter(tmp_path / "nope"):
        pass


# ----------------------------------------------------------------- rebuild / consistency


def test_consistency_detects_each_kind_and_rebuild_fixes_idempotently(wiki):
    mk(wiki)
    mk(wiki, page="bert", title="MLM", desc="Masked LM", sources=["bert.pdf"])
    mk(wiki, page="bert", title="NSP", desc="Next sentence", sources=["bert.pdf"])
    ij = read_index_json(wiki)
    ij["sec_002"] = ["attention.pdf"]  # wrong sources
    del ij["sec_003"]  # missing
    ij["sec_050"] = ["x.pdf"]  # stale
    (wiki / "index.json").write_text(json.dumps(ij))
    md = (wiki / "index.md").read_text().replace("Masked LM", "Something else")
    (wiki / "index.md").write_text(md)
    codes = {p.code for p in check_index_consistency(wiki)}
    assert {"index-json-sources", "index-json-missing-section", "index-json-stale", "index-md-mismatch"} <= codes
    report = rebuild_indexes(wiki)
    assert report["changed"] and report["removed"] == ["sec_050"] and "sec_002" in report["updated"]
    assert check_index_consistency(wiki) == []
    snapshot = ((wiki / "index.md").read_bytes(), (wiki / "index.json").read_bytes())
    again = rebuild_indexes(wiki)
    assert again["changed"] is False and not again["added"] and not again["removed"] and not again["updated"]
    assert ((wiki / "index.md").read_bytes(), (wiki / "index.json").read_bytes()) == snapshot
    assert (wiki / "index.md").read_text().startswith("# Index\n\nOne entry per wiki section")


def test_duplicates_and_broken_markers_are_reported(wiki):
    mk(wiki)
    (wiki / "copy.md").write_text((wiki / "attention.md").read_text())
    (wiki / "bad.md").write_text("<!-- section {oops} -->\n## X\n")
    codes = [p.code for p in check_index_consistency(wiki)]
    assert "duplicate-section-id" in codes and "broken-marker" in codes
    report = rebuild_indexes(wiki)
    assert read_index_md(wiki).entries["sec_001"].page == "attention.md"  # first one wins
    assert {p["code"] for p in report["problems"]} == {"duplicate-section-id", "broken-marker"}


def test_interrupted_write_is_repaired_by_next_write(wiki):
    mk(wiki)
    # Simulate a crash right after the page write: page has sec_002, indexes do not, marker left.
    text = (wiki / "attention.md").read_text()
    text += '\n<!-- section {"id": "sec_002", "description": "Orphan", "sources": ["bert.pdf"]} -->\n## O\n\nbody\n'
    (wiki / "attention.md").write_text(text)
    (wiki / ".episteme" / "pending-write.json").write_text('{"pid": 1}')
    (wiki / ".attention.md.abc123.tmp").write_text("half a page")
    assert {"interrupted-write", "index-json-missing-section"} <= {p.code for p in check_index_consistency(wiki)}
    r = mk(wiki, page="bert", sources=["bert.pdf"])
    assert r.recovered and r.section_id == "sec_003"
    assert read_index_json(wiki)["sec_002"] == ["bert.pdf"]
    assert not (wiki / ".attention.md.abc123.tmp").exists()
    assert check_index_consistency(wiki) == []


# ------------------------------------------------------------------------------- script


def run_script(wiki, *args, body="Body text with [[bert]].", cwd=None):
    return subprocess.run([sys.executable, str(SCRIPT), "--wiki", str(wiki), *args], input=body,
                          capture_output=True, text=True, timeout=60, cwd=cwd)


def test_script_create_update_and_refusals(wiki):
    assert raw_sources(wiki) == KNOWN
    p = run_script(wiki, "--page", "multi-head-attention", "--title", "Multi-Head Attention",
                   "--description", "Parallel heads", "--source", "attention.pdf", "--tag", "nlp",
                   "--page-title", "Multi-head attention", "--type", "method")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "created" and out["page"] == "multi-head-attention.md" and out["section_id"] == "sec_001"
    p = run_script(wiki, "--page", "multi-head-attention.md", "--section-id", "sec_001",
                   "--source", "bert.pdf", body="Rewritten.")
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["status"] == "updated" and out["sources"] == ["attention.pdf", "bert.pdf"]
    assert parse_page((wiki / "multi-head-attention.md").read_text()).get("sec_001").body == "Rewritten."
    p = run_script(wiki, "--page", "multi-head-attention", "--section-id", "sec_001", "--keep-body",
                   "--description", "New description", body="")
    assert p.returncode == 0 and json.loads(p.stdout)["description"] == "New description"
    refusals = [
        (["--page", "../../etc/passwd", "--title", "T", "--description", "D", "--source", "bert.pdf"], "escapes"),
        (["--page", "x", "--title", "T", "--description", "D", "--source", "ghost.pdf"], "unknown source"),
        (["--page", "x", "--title", "T", "--description", "D"], "source"),
        (["--page", "x", "--title", "T", "--source", "bert.pdf"], "--description"),
        (["--page", "index", "--title", "T", "--description", "D", "--source", "bert.pdf"], "structural"),
    ]
    for args, msg in refusals:
        p = run_script(wiki, *args)
        assert p.returncode == 2 and msg in json.loads(p.stdout)["error"], (args, p.stdout)
    p = run_script(wiki, "--page", "x", "--title", "T", "--description", "D", "--source", "bert.pdf",
                   body="a\n<!-- section {\"id\": \"sec_999\"} -->\n")
    assert p.returncode == 2 and "marker" in json.loads(p.stdout)["error"]
    assert not (wiki / "x.md").exists() and check_index_consistency(wiki) == []
    p = run_script(wiki, "--page", "y", "--title", "T", "--description", "D", "--source", "hand.pdf",
                   "--no-source-check")
    assert p.returncode == 0 and json.loads(p.stdout)["warnings"]


def test_unicode_and_tricky_text_round_trip(wiki):
    r = mk(wiki, page="attention", title="Attention — \"quoted\" ünïcode", desc='Says "-->" and <b> and {json}',
           body="Ω body with <!-- a comment --> and `code`", page_title="Atténtion: a study")
    page = parse_page((wiki / "attention.md").read_text(encoding="utf-8"))
    sec = page.get(r.section_id)
    assert sec.title == "Attention — \"quoted\" ünïcode" and sec.description == 'Says "-->" and <b> and {json}'
    assert yaml.safe_load(page.frontmatter_text)["title"] == "Atténtion: a study"
    assert read_index_md(wiki).entries[r.section_id].description == 'Says "-->" and <b> and {json}'
    assert check_index_consistency(wiki) == [] and rebuild_indexes(wiki)["changed"] is False


def test_threads_in_one_process_do_not_interleave(wiki):
    import threading

    errors: list[BaseException] = []

    def worker(tag: str) -> None:
        try:
            for i in range(8):
                mk(wiki, page=f"{tag}-{i % 2}", title=f"{tag} {i}", desc=f"{tag} {i}")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in ("left", "right", "mid")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ids = read_index_json(wiki)
    assert len(ids) == 24 and sorted(ids) == [f"sec_{n:03d}" for n in range(1, 25)]
    assert check_index_consistency(wiki) == []


@pytest.mark.parametrize("vault", ["13th-age-srd", "dendron-site"])
def test_real_vault_pages_keep_their_text_and_fields(vaults_dir, tmp_path, vault):
    """Adding and replacing sections on real third-party pages: their own frontmatter fields keep
    their values (epoch-ms ``updated`` stays an int), their text stays verbatim before our
    sections, and the indexes come out consistent over the whole vault."""
    src = vaults_dir / vault
    wiki = tmp_path / vault
    shutil.copytree(src, wiki, ignore=shutil.ignore_patterns(".git"))
    (wiki / "raw").mkdir(exist_ok=True)
    (wiki / "raw" / "paper.pdf").write_bytes(b"%PDF stand-in")
    from episteme.wiki.edit import iter_page_paths

    candidates = [rel for rel in iter_page_paths(wiki) if (wiki / rel).read_text(encoding="utf-8").startswith("---\n")]
    chosen = candidates[:: max(1, len(candidates) // 6)][:6]
    assert len(chosen) == 6
    before = {rel: (wiki / rel).read_text(encoding="utf-8") for rel in chosen}
    with WikiWriter(wiki, op="ingest", subject="paper.pdf", known_sources={"paper.pdf"}) as w:
        made = {rel: w.create_section(rel, title="From the paper", description="What the paper adds",
                                      body="New text citing [[elsewhere]].", sources=["paper.pdf"]).section_id
                for rel in chosen}
        for rel, sid in made.items():
            w.update_section(rel, sid, body="Replaced text.")
    for rel, text in before.items():
        after = (wiki / rel).read_text(encoding="utf-8")
        old_yaml, old_body, _ = split_frontmatter(text)
        new_yaml, new_body, _ = split_frontmatter(after)
        old_fm, new_fm = yaml.safe_load(old_yaml) or {}, yaml.safe_load(new_yaml)
        for key, value in old_fm.items():
            if key not in ("updated", "sources", "tags"):
                assert new_fm[key] == value, (rel, key)
        if isinstance(old_fm.get("updated"), int):
            assert isinstance(new_fm["updated"], int) and new_fm["updated"] > old_fm["updated"]
        assert new_body.startswith(old_body.strip("\n")), rel
        assert parse_page(after).get(made[rel]).body == "Replaced text."
    assert check_index_consistency(wiki) == []
    assert set(read_index_json(wiki)) == set(made.values())
    assert rebuild_indexes(wiki)["changed"] is False


def test_delete_section_keeps_rest_and_never_reuses_id(wiki):
    mk(wiki, title="A", desc="a")
    mk(wiki, title="B", desc="b")
    mk(wiki, title="C", desc="c")
    with WikiWriter(wiki, op="prune", subject="attention.md") as w:
        assert w.delete_section("attention", "sec_002") == "attention.md"
        with pytest.raises(NotFoundError):
            w.delete_section("attention", "sec_002")
    page = parse_page((wiki / "attention.md").read_text())
    assert [s.id for s in page.sections] == ["sec_001", "sec_003"] and page.get("sec_003").title == "C"
    assert set(read_index_json(wiki)) == {"sec_001", "sec_003"} and check_index_consistency(wiki) == []
    assert read_log(wiki)[0][-1].items["deleted"] == ["sec_002"]
    assert mk(wiki).section_id == "sec_004"
    with WikiWriter(wiki) as w:
        w.delete_section("attention", "sec_004")
    assert mk(wiki).section_id == "sec_005"  # the last id deleted is not handed out again either


def test_garbled_index_json_is_rebuilt_by_the_next_write(wiki):
    mk(wiki)
    (wiki / "index.json").write_text("{ this is not json")
    assert "index-json-invalid" in {p.code for p in check_index_consistency(wiki)}
    r = mk(wiki, page="bert", sources=["bert.pdf"])
    assert r.section_id == "sec_002"
    assert read_index_json(wiki) == {"sec_001": ["attention.pdf"], "sec_002": ["bert.pdf"]}
    assert check_index_consistency(wiki) == []


def test_index_splicing_matches_full_render(tmp_path):
    """The incremental index update gives byte for byte what a full render gives, for random
    sequences of new ids, updates and deletions, and still lands correctly on hand-edited files."""
    import random

    from episteme.wiki.edit import IndexFiles
    from episteme.wiki.index import IndexEntry, IndexMd, render_index_json

    rng = random.Random(7)
    for trial in range(4):
        w = tmp_path / f"w{trial}"
        w.mkdir()
        truth: dict[str, IndexEntry] = {}
        if trial == 3:  # hand-edited, non-canonical starting files
            (w / "index.json").write_text(json.dumps({"sec_002": "a.pdf", "sec_001": ["b.pdf"]}, indent=4))
            (w / "index.md").write_text("# Index\n\n## sec_002\nline one\nline two\nSource: a.pdf\n## sec_001\nx\nSource: b.pdf\n")
            truth = {"sec_001": IndexEntry("sec_001", "x", "", ["b.pdf"]),
                     "sec_002": IndexEntry("sec_002", "line one line two", "", ["a.pdf"])}
        files = IndexFiles(w)
        n = 2 if trial == 3 else 0
        for _ in range(60):
            op = rng.random()
            if op < 0.5 or not truth:
                n += rng.choice([1, 1, 1, 5, 900])
                sid = f"sec_{n:03d}"
            else:
                sid = rng.choice(sorted(truth))
            if op > 0.85 and sid in truth:
                del truth[sid]
                files.delete(sid)
                continue
            e = IndexEntry(sid, f"about {rng.random():.4f}", f"p{rng.randint(0, 9)}.md",
                           rng.sample(["a.pdf", "b.pdf", "c.pdf"], rng.randint(1, 3)))
            truth[sid] = e
            files.set(e)
        assert files.render_json() == render_index_json({k: v.sources for k, v in truth.items()})
        header = "# Index\n" if trial == 3 else IndexMd().header
        assert files.render_md() == IndexMd(header=header, entries=dict(truth)).render()


def test_nested_writer_in_one_thread_is_refused(wiki):
    with WikiWriter(wiki, known_sources=KNOWN) as w:
        w.create_section("a", title="T", description="D", body="B", sources=["bert.pdf"])
        with pytest.raises(RuntimeError, match="already open"):
            mk(wiki)
        w.create_section("a", title="T2", description="D2", body="B2", sources=["bert.pdf"])
    assert set(read_index_json(wiki)) == {"sec_001", "sec_002"} and check_index_consistency(wiki) == []
    assert mk(wiki).section_id == "sec_003"  # the lock and the open-writer mark were released
