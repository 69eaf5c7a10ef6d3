"""One link parser: the web UI draws the [[links]] the server found (wiki.links) and resolved
(the graph), so what a reader clicks is what `episteme graph` and `episteme lint` report.

A real Chromium renders a page full of the cases the parsers used to disagree on (code spans,
fences, embeds, same-page links, escaped pipes in tables, `.md` names, an ambiguous title that
the linking page's folder decides); the test compares the page's links with the CLI's JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ingested_wiki import wiki_settings
from serverlive import (  # noqa: F401  (written_template is a fixture)
    ATTENTION_Q,
    LiveServer,
    half_invented_answer,
    written_template,
)
from uibrowser import REPO, SHOTS, ask_in_chat

LINKER = """---
title: Linker
---
Plain [[Shared]], an alias [[Goal|the goal]], a heading [[Target#Usage|usage]], a file
name [[target.md]], spaced [[ Target ]], missing [[Nowhere Page]] and [[another missing]].

Code does not link: `[[Code Span]]` and an embed does not either: ![[figure.png]].
Same page: [[#Top]]. A forged token \ue0000\ue001 is only text.

```
[[Fenced Link]]
```

| a | b |
|---|---|
| [[Target\\|in a table]] | [[Missing In Table]] |
"""


@pytest.fixture(scope="module")
def link_wiki(tmp_path_factory):
    wiki = tmp_path_factory.mktemp("links") / "wiki"
    (wiki / "a").mkdir(parents=True)
    (wiki / "b").mkdir()
    (wiki / "a" / "shared.md").write_text("---\ntitle: Shared\n---\nA [[Target]].\n", encoding="utf-8")
    (wiki / "b" / "shared.md").write_text("---\ntitle: Shared\n---\nB [[Target]].\n", encoding="utf-8")
    (wiki / "target.md").write_text(
        "---\ntitle: Target\naliases: [Goal]\n---\nBack to [[a/shared]].\n", encoding="utf-8")
    (wiki / "b" / "linker.md").write_text(LINKER, encoding="utf-8")
    return wiki


def _cli(wiki, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", *args, "--wiki", str(wiki)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_ui_links_agree_with_graph_and_lint(link_wiki, page):
    graph = _cli(link_wiki, "graph", "--mode", "neighbors", "--seed", "b/linker.md", "--depth", "1")
    lint = _cli(link_wiki, "lint", "--format", "json")
    # nothing links to b/linker.md, so its neighbours at depth 1 are exactly its out-links
    out_links = {p["id"] for p in graph["layers"][1]}
    dangling = {f["target"] for f in lint["findings"]
                if f["rule"] == "link-dangling" and f["file"] == "b/linker.md"}
    chosen = {f["target"]: f["chosen"] for f in lint["findings"]
              if f["rule"] == "link-ambiguous" and f["file"] == "b/linker.md"}
    assert out_links == {"b/shared.md", "target.md"}  # the same-folder page wins the tie
    assert dangling == {"Nowhere Page", "another missing", "Missing In Table"}

    with LiveServer(wiki_settings(link_wiki), warm=False) as srv:
        page.goto(srv.url + "/#/wiki/b/linker.md")
        page.wait_for_selector("#page h1")
        page.screenshot(path=str(SHOTS / "links-agree.png"), full_page=True)
        anchors = page.evaluate("""() => Array.from(document.querySelectorAll('#page a.wikilink'))
            .map(a => ({page: a.dataset.page, text: a.textContent,
                        dangling: a.classList.contains('dangling')}))""")
        codes = page.evaluate(
            "() => Array.from(document.querySelectorAll('#page code')).map(c => c.textContent)")
        texts = page.evaluate("""() => Array.from(document.querySelectorAll('#page .wikilink-text'))
            .map(s => [s.className, s.textContent])""")
        body = page.inner_text("#page")

    ui_pages = {a["page"] for a in anchors if not a["dangling"]}
    ui_dangling = {a["page"] for a in anchors if a["dangling"]}
    assert ui_pages == out_links
    assert ui_dangling == dangling
    shared = next(a for a in anchors if a["text"] == "Shared")
    assert shared["page"] == chosen["Shared"] == "b/shared.md"
    # labels as written; a table's escaped pipe separates target and label
    assert {"the goal", "usage", "in a table"} <= {a["text"] for a in anchors}
    # code shows the link text verbatim, and nothing in code or an embed is a link
    assert "[[Code Span]]" in codes and any("[[Fenced Link]]" in c for c in codes)
    assert not {"Code Span", "Fenced Link", "figure.png"} & {a["page"] for a in anchors}
    assert ["wikilink-text embed", "figure.png"] in [list(t) for t in texts]
    assert ["wikilink-text self", "› Top"] in [list(t) for t in texts]
    # the private-use characters the server uses for tokens cannot be forged by a page
    assert "\ue000" not in body and "A forged token 0 is only text" in body


def test_page_api_gives_resolved_links(link_wiki):
    """GET /wiki/{page} ``view``: the text with link tokens and one record per link."""
    import urllib.request

    with LiveServer(wiki_settings(link_wiki), warm=False) as srv, \
            urllib.request.urlopen(srv.url + "/wiki/b/linker.md") as r:
        view = json.load(r)["view"]
    links = view["links"]
    by_raw = {x["raw"]: x for x in links}
    assert by_raw["[[Shared]]"]["page"] == "b/shared.md"
    assert by_raw["[[Goal|the goal]]"] == {
        "raw": "[[Goal|the goal]]", "kind": "link", "target": "Goal", "anchor": "", "page": "target.md",
        "display": "the goal", "plain": "the goal", "dangling": False}
    assert by_raw["[[Nowhere Page]]"]["dangling"] is True
    assert by_raw["![[figure.png]]"]["kind"] == "embed" and not by_raw["![[figure.png]]"]["dangling"]
    assert by_raw["[[#Top]]"]["kind"] == "self"
    assert "[[Code Span]]" not in by_raw and "[[Fenced Link]]" not in by_raw
    # every token in the text names one record, in order
    text = view["preamble"] + view["body"]  # a page without section markers: its preamble
    assert "[[" not in text.replace("[[Code Span]]", "").replace("[[Fenced Link]]", "")
    assert [text.count(f"\ue000{i}\ue001") for i in range(len(links))] == [1] * len(links)


def test_answer_view_resolves_an_answers_links(link_wiki):
    """POST /chat's ``answer_view``: an answer's links, resolved against the wiki (no linking
    page, so no folder preference); ``plain`` is what the tracer read for each link."""
    from episteme.server.app import answer_view

    v = answer_view(link_wiki, "It is [[Goal|the goal]] (see [[Nowhere Page]]) [sec_001].")
    assert v["text"] == "It is \ue0000\ue001 (see \ue0001\ue001) [sec_001]."
    assert [(x["page"], x["dangling"], x["plain"]) for x in v["links"]] == [
        ("target.md", False, "the goal"), (None, True, "Nowhere Page")]
    assert answer_view(link_wiki, "No links here.") == {"text": "No links here.", "links": []}


def test_answer_links_render_with_citations_and_marks(written_template, tmp_path,  # noqa: F811
                                                     fake_anthropic, page):
    """An answer with a [[link]] inside a claim: the link is drawn where the server resolved it
    (the page `episteme graph` names for it), and the claim marks still land around it."""
    import shutil

    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    top, answer = half_invented_answer(wiki)
    answer = answer.replace("Multi-head attention", "[[Multi-Head Attention|Multi-head attention]]", 1)
    assert "[[Multi-Head Attention|" in answer
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    seed = subprocess.run([sys.executable, "-m", "episteme.cli", "graph", "--wiki", str(wiki),
                           "--mode", "neighbors", "--seed", "Multi-Head Attention"],
                          capture_output=True, text=True, env=env, timeout=60)
    expected = json.loads(seed.stdout)["seed"] if seed.returncode == 0 else None
    fake_anthropic.enqueue(fake_anthropic.tool_use_response(
        "answer", {"answer": answer, "sections_used": [top]}))
    settings = wiki_settings(wiki, api_key="test-key", llm_base_url=fake_anthropic.base_url)
    with LiveServer(settings, write_mode="extractive") as srv:
        ask_in_chat(page, srv.url, ATTENTION_Q)
        links = page.query_selector_all("[data-testid=answer] a.wikilink")
        assert len(links) == 1 and links[0].inner_text() == "Multi-head attention"
        if expected is None:
            assert "dangling" in links[0].get_attribute("class")
        else:
            assert links[0].get_attribute("data-page") == expected
        text = page.inner_text("[data-testid=answer]")
        assert "[[" not in text and "\ue000" not in text
        assert page.query_selector_all("[data-testid=answer] .cite"), "the true claim is cited"
        marked = page.query_selector_all("[data-testid=answer] mark.unsupported")
        assert marked and "Moon" in marked[0].inner_text()
