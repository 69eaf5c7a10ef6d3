"""One wiki model: every layer reads frontmatter, links and page files the same way, and hostile
wiki content (symlinks out of the wiki, FIFOs, devices, huge files, control characters in file
names) cannot make graph, lint or the server hang, read outside the wiki, or print a command.

Each test here failed before the rule it checks had one implementation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.errors import EpistemeError
from episteme.graph import WikiGraph, stats
from episteme.lint import apply_fixes, lint_wiki
from episteme.wiki import files, frontmatter, links, sections
from episteme.wiki.scan import scan

REPO = Path(__file__).resolve().parent.parent
LINT = REPO / "plugin" / "scripts" / "wiki_lint.py"
GRAPH = REPO / "plugin" / "scripts" / "graph_query.py"


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def run(script: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "WIKI_PATH"}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


# ----------------------------------------------------------------------- one frontmatter reader

UNCLOSED = "---\ntitle: A\n...\nSome text [[B]].\n"


def test_an_unclosed_frontmatter_is_unclosed_for_every_reader(tmp_path: Path):
    """``---`` ... ``...`` never closes: the scan, the section parser and the writer agree (the
    writer used to read it as ``{title: A}`` while lint called it never closed)."""
    fm = frontmatter.parse_frontmatter(UNCLOSED)
    assert fm.props == {} and fm.error == frontmatter.NEVER_CLOSED_ERROR
    assert sections.split_frontmatter(UNCLOSED) == (None, UNCLOSED, 1)
    write(tmp_path, "a.md", UNCLOSED)
    from episteme.wiki.edit import load_page

    with pytest.raises(EpistemeError, match="never closed"):
        load_page(tmp_path, "a")
    [page] = scan(tmp_path).pages
    assert page.fm_error == frontmatter.NEVER_CLOSED_ERROR and [t.target for t in page.links] == ["B"]


def test_section_parser_and_scan_find_the_same_body_start():
    for text in ("---\ntitle: T\n---\nbody\n", "---\r\ntitle: T\r\n---  \r\nbody\n", "---\n---\nx", "no fm\n",
                 "---\ntitle: T\n----\nnot closed\n", "\ufeff---\ntitle: T\n---\nbody\n"):
        data = frontmatter.strip_bom(text.encode())
        fm = frontmatter.parse_frontmatter(data)
        yaml_text, body, line = sections.split_frontmatter(data.decode())
        assert (yaml_text is None) == (fm.body_offset == 0), text
        assert line == fm.body_line and body.encode() == data[fm.body_offset:], text


def test_structural_files_are_one_list_in_any_case(tmp_path: Path):
    """``Index.md`` at the root is the index on macOS and Windows: not a page for the scan,
    and the writer refuses it (the two lists used to differ in case rules)."""
    write(tmp_path, "Index.md", "# not a page\n")
    write(tmp_path, "LOG.md", "# not a page\n")
    write(tmp_path, "notes/index.md", "a real page in a folder\n")
    assert files.iter_page_files(tmp_path) == ["notes/index.md"]
    from episteme.wiki.edit import resolve_page

    with pytest.raises(EpistemeError, match="structural"):
        resolve_page(tmp_path, "Index")


# --------------------------------------------------------------------------- one link parser

def test_writer_checks_the_links_the_graph_sees():
    from episteme.compile.writer import check_links, link_targets

    body = "[[A|label]] ![[img.png]] `[[../../etc/passwd]]`\n```\n[[/abs]]\n```\n[[B#h]] [[C.md]]\n"
    assert link_targets(body) == list(links.scan_links(body.encode()).targets) == ["A", "B", "C"]
    check_links(body)  # code and embeds are not links: nothing to refuse
    with pytest.raises(EpistemeError):
        check_links("see [[../../etc/passwd]]")


def test_answer_display_text_uses_the_link_parser():
    from episteme.query.answer_features import (
        display_text,  # answers strip links with the one parser
    )

    assert display_text is links.display_text
    assert links.display_text("[[a|b]] and [[c#h]] and ![[d]]") == "b and c#h and !d"
    assert links.display_text("code `[[x|y]]` stays") == "code `[[x|y]]` stays"
    assert links.display_text("[[t\\|label]] in a table") == "label in a table"


def test_tags_are_normalised_once():
    from episteme.graph.querylang import parse_query

    props = {"tags": "#ml, nlp/bert"}
    assert frontmatter.frontmatter_tags(props) == ["ml", "nlp/bert"]
    assert parse_query("tags contains nlp").matches(props) and parse_query("tags: ml").matches(props)


# ------------------------------------------------------------------------ hostile wiki content

@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    write(root, "good.md", "---\ntitle: Good\n---\n[[Other]]\n")
    write(root, "other.md", "---\ntitle: Other\n---\n[[Good]]\n")
    secret = write(tmp_path, "secret.txt", "---\ntitle: PASSWD\n---\nroot:x:0:0\n")
    (root / "passwd.md").symlink_to(secret)
    (root / "zero.md").symlink_to("/dev/zero")
    os.mkfifo(root / "fifo.md")
    (root / "inside.md").symlink_to(root / "good.md")  # a symlink within the wiki is a page
    return root


HOSTILE_SKIPPED = {"fifo.md", "passwd.md", "zero.md"}


def test_graph_and_lint_skip_what_is_not_a_regular_file_inside_the_wiki(hostile: Path):
    listing = files.list_pages(hostile)
    assert listing.ids == ["good.md", "inside.md", "other.md"]
    assert {pid for pid, _ in listing.skipped} == HOSTILE_SKIPPED
    g = WikiGraph.build(hostile, keep_links=False)
    assert stats(g)["pages"] == 3
    report = lint_wiki(hostile)
    unread = {f.file: f.message for f in report.findings if f.rule == "page-unreadable"}
    assert set(unread) == HOSTILE_SKIPPED
    assert "outside the wiki" in unread["passwd.md"] and "not a regular file" in unread["fifo.md"]
    # the command lines too, well within the timeout (a FIFO used to hang them forever)
    r = run(GRAPH, "--wiki", str(hostile), timeout=30)
    assert r.returncode == 0 and json.loads(r.stdout)["pages"] == 3
    r = run(LINT, "--wiki", str(hostile), "--format", "json", timeout=30)
    found = json.loads(r.stdout)["findings"]
    assert {f["file"] for f in found if f["rule"] == "page-unreadable"} == HOSTILE_SKIPPED


def test_a_page_over_the_size_cap_is_reported_not_read(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(files, "MAX_PAGE_BYTES", 100_000)
    write(tmp_path, "big.md", "---\ntitle: Big\n---\n" + "[[x]] " * 50_000)
    write(tmp_path, "small.md", "[[Big]]\n")
    [big, small] = scan(tmp_path).pages
    assert big.fm_error.startswith("unreadable: larger than") and len(big.links) == 0
    [f] = [f for f in lint_wiki(tmp_path).findings if f.rule == "page-unreadable"]
    assert f.file == "big.md"


def test_server_page_lookup_never_leaves_the_wiki(hostile: Path):
    from ingested_wiki import wiki_settings
    from serverlive import LiveServer, request

    with LiveServer(wiki_settings(hostile), warm=False) as srv:
        for name in ("PASSWD", "passwd", "passwd.md", "zero", "fifo"):
            status, body, _ = request("GET", srv.url + "/wiki/" + name)
            assert status in (400, 404), (name, status, body)
            assert "root:x" not in json.dumps(body)
        status, body, _ = request("GET", srv.url + "/wiki/" + "a" * 5000)
        assert status == 400, status
        status, body, _ = request("GET", srv.url + "/wiki/" + "b" * 300)  # over NAME_MAX
        assert status == 404, status
        status, body, _ = request("GET", srv.url + "/wiki/Good")
        assert status == 200 and body["page"] == "good.md"


def test_fix_never_writes_through_or_over_a_symlink(tmp_path: Path):
    root = tmp_path / "wiki"
    write(root, "real.md", "---\ntitle: Real\ncreated: 2026/11/01\n---\n[[Alias Page]]\n")
    outside = write(tmp_path, "outside.md", "---\ntitle: Out\ncreated: 2026/11/02\n---\n[[Real]]\n")
    (root / "out.md").symlink_to(outside)
    (root / "alias.md").symlink_to(root / "real.md")  # inside the wiki: read, but never rewritten
    before_outside = outside.read_bytes()
    report = lint_wiki(root)
    dated = sorted(f.file for f in report.findings if f.rule == "fm-date")
    assert dated == ["alias.md", "real.md"]
    fixes = apply_fixes(root, report)
    assert {(fx["fix"], fx["file"]) for fx in fixes} == {("date", "real.md"), ("skip", "alias.md")}
    assert (root / "out.md").is_symlink() and (root / "alias.md").is_symlink()
    assert outside.read_bytes() == before_outside
    assert b"created: 2026-11-01" in (root / "real.md").read_bytes()


def test_a_duplicated_section_is_reported(tmp_path: Path):
    """What a killed write and its re-run left (issue 16 item 5): the same section twice."""
    def marker(sid: str) -> str:
        return f'<!-- section {{"id": "{sid}", "description": "d", "sources": ["a.pdf"]}} -->\n## Summary\n\nText.\n\n'

    write(tmp_path, "p.md", "---\ntitle: P\n---\n" + marker("sec_001") + marker("sec_002"))
    [f] = [f for f in lint_wiki(tmp_path).findings if f.rule == "section-duplicate"]
    assert (f.file, f.data["section"], f.data["other"]) == ("p.md", "sec_002", "sec_001")


def test_a_newline_in_a_file_name_cannot_print_a_workflow_command(tmp_path: Path):
    write(tmp_path, "ok.md", "[[nowhere]]\n")
    write(tmp_path, "evil\n::error title=pwned::owned.md", "[[nowhere]]\n")
    r = run(LINT, "--wiki", str(tmp_path))
    assert r.returncode == 1
    assert not [ln for ln in r.stdout.splitlines() if ln.startswith("::")], r.stdout
    assert "evil\\n::error title=pwned::owned.md" in r.stdout
    gh = run(LINT, "--wiki", str(tmp_path), "--format", "github")
    assert all(ln.startswith(("::", "wiki-lint:")) for ln in gh.stdout.splitlines())


def test_display_text_reads_a_link_as_its_label_or_with_names_its_page_name():
    from episteme.wiki.links import display_text

    text = "See [[papers/multi-head-attention#Heads]], [[bert|BERT]], [[x|]] and `[[code]]`."
    assert display_text(text) == "See papers/multi-head-attention#Heads, BERT,  and `[[code]]`."
    assert display_text(text, names=True) == "See multi head attention, BERT, x and `[[code]]`."
