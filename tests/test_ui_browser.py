"""The web UI in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright; no
downloaded browser): upload a paper and watch it finish, browse the pages it wrote and follow a
[[link]], ask a question and open a citation.  Screenshots go to $TMPDIR/episteme-test-artifacts/ui/.
"""

from __future__ import annotations

import shutil

import pytest
from ingested_wiki import wiki_settings
from serverlive import (  # noqa: F401  (written_template is a fixture)
    ATTENTION_Q,
    LiveServer,
    half_invented_answer,
    serve_copy,
    small_paper_pdf,
    written_template,
)
from uibrowser import REPO, SHOTS, ask_in_chat


@pytest.fixture(scope="module")
def site(written_template, tmp_path_factory):  # noqa: F811
    with serve_copy(written_template, tmp_path_factory.mktemp("ui") / "wiki") as srv:
        yield srv


def test_upload_shows_progress_sections_and_pages_then_follow_links(site, page, tmp_path):
    pdf = small_paper_pdf(tmp_path / "sparsify.pdf", "alpha")
    page.goto(site.url + "/#/ingest")
    page.wait_for_selector("#status.ok")
    page.set_input_files("#file-input", str(pdf))
    assert page.inner_text("#dz-main") == "sparsify.pdf"
    page.click("#upload-btn")
    page.wait_for_selector("#progress:not([hidden])")
    result = page.wait_for_selector("[data-testid=ingest-result]", timeout=300_000)
    page.screenshot(path=str(SHOTS / "1-ingest-result.png"), full_page=True)
    assert "Graph Sparsification" in result.inner_text()
    rows = page.query_selector_all("[data-testid=sections-found] tbody tr")
    titles = [r.query_selector_all("td")[1].inner_text() for r in rows]
    assert "Introduction" in titles and "Experiments" in titles
    written = page.query_selector_all("[data-testid=pages-written] a")
    assert written, "the pages written are listed"
    assert (site.settings.wiki / "raw" / "sparsify.pdf").is_file()
    assert "100%" in page.get_attribute("#progress-fill", "style")

    # open the paper's page from the result, then follow a [[link]] in its text
    paper_link = next(a for a in written if a.inner_text().startswith("papers/"))
    target = paper_link.inner_text()
    paper_link.click()
    page.wait_for_selector("#page h1")
    page.wait_for_function(f"document.querySelector('#page .crumbs')?.textContent === {target!r}")
    assert page.inner_text("#page h1").startswith("Notes on Graph Sparsification")
    page.wait_for_selector("[data-testid=graph-svg] .g-node")
    page.screenshot(path=str(SHOTS / "2-wiki-paper-page.png"), full_page=False)
    links = page.query_selector_all("#page a.wikilink:not(.dangling)")
    assert links, "the paper page links to its topic pages"
    dest = links[0].get_attribute("data-page")
    links[0].click()
    page.wait_for_function(f"document.querySelector('#page .crumbs')?.textContent !== {target!r}")
    assert page.url.split("#", 1)[1].startswith("/wiki/")
    assert page.inner_text("#page .crumbs") == dest or dest in page.url
    # the neighborhood graph is drawn around the new page, and its nodes open pages
    # (never the previous page's graph: the panel is cleared on navigation and late answers dropped)
    page.wait_for_selector("[data-testid=graph-svg] .g-node.d0")
    seed = page.get_attribute("[data-testid=graph-svg] .g-node.d0", "data-page")
    assert seed == page.inner_text("#page .crumbs")
    assert len(page.query_selector_all("[data-testid=graph-svg] .g-node")) >= 2
    page.screenshot(path=str(SHOTS / "3-wiki-followed-link.png"), full_page=False)
    other = page.query_selector("[data-testid=graph-svg] .g-node:not(.d0)")
    other_id = other.get_attribute("data-page")
    other.click()
    page.wait_for_function(f"document.querySelector('#page .crumbs')?.textContent === {other_id!r}")


def test_quick_clicks_end_on_the_last_page_and_its_graph(site, page):
    """Two navigations in a row: whichever answer comes back last, the page shown, its crumbs and
    the graph's centre are all the second page (no stale graph beside a fresh page)."""
    import json
    import urllib.request

    with urllib.request.urlopen(site.url + "/wiki") as r:
        names = [p["page"] for p in json.load(r)["pages"]]
    assert len(names) >= 3
    first, last = names[1], names[2]
    # make every answer about the first page slow, so it arrives after the second page's
    # (the page API spells the name with '/', the graph API with '%2F')
    page.add_init_script(f"""
        const realFetch = window.fetch, name = encodeURIComponent({first!r});
        const slow = (u) => u.includes(name) || u.includes(name.split('%2F').join('/'));
        window.fetch = (u, o) => slow(String(u))
            ? new Promise((ok) => setTimeout(ok, 700)).then(() => realFetch(u, o)) : realFetch(u, o);""")
    page.goto(site.url + "/#/wiki/" + names[0])
    page.wait_for_selector("[data-testid=graph-svg] .g-node.d0")
    page.evaluate(f"location.hash = '#/wiki/' + encodeURIComponent({first!r}); "
                  f"setTimeout(() => {{ location.hash = '#/wiki/' + encodeURIComponent({last!r}); }}, 0)")
    page.wait_for_function(f"document.querySelector('#page .crumbs')?.textContent === {last!r}")
    page.wait_for_function(
        f"document.querySelector('[data-testid=graph-svg] .g-node.d0')?.getAttribute('data-page') === {last!r}")
    page.wait_for_timeout(1200)  # the first page's slow answers have landed by now
    assert page.inner_text("#page .crumbs") == last
    centres = page.query_selector_all("[data-testid=graph-svg] .g-node.d0")
    assert [c.get_attribute("data-page") for c in centres] == [last]


def test_bad_upload_shows_the_servers_message(site, page, tmp_path):
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"this is plain text pretending to be a PDF\n" * 10)
    page.goto(site.url + "/#/ingest")
    page.set_input_files("#file-input", str(fake))
    page.click("#upload-btn")
    page.wait_for_selector("#ingest-error:not([hidden])")
    assert "not a PDF" in page.inner_text("#ingest-error")
    page.screenshot(path=str(SHOTS / "4-ingest-error.png"))
    page.problems.clear()  # the failed fetch logs a console error by design


HOSTILE_URLS = [
    "\x1fjavascript:alert(1)", "\x00javascript:alert(1)", " javascript:alert(1)",
    "java\tscript:alert(1)", "java\nscript:alert(1)", "JaVaScRiPt:alert(1)",
    "\u0085javascript:alert(1)", "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)", "\x01\x02javascript:alert(1)", "javascript&colon;alert(1)",
]


def test_link_sanitizer_yields_no_script_url_in_a_real_browser(page):
    """markdown.js's links as the browser itself parses them: for every hostile URL (control
    characters that browsers strip before reading the scheme, mixed case, other schemes) no
    rendered <a> may resolve to a scheme other than http(s), mailto or the page's own."""
    static = REPO / "plugin" / "episteme" / "server" / "static" / "markdown.js"
    page.set_content("<!doctype html><html><head><base href=\"https://app.invalid/\"></head>"
                     "<body><div id=out></div></body></html>")
    page.add_script_tag(path=str(static))
    md = "\n\n".join(f"[x{i}]({u})" for i, u in enumerate(HOSTILE_URLS))
    md += "\n\n[ok](https://example.org/a) [rel](papers/x.md)"
    protocols = page.evaluate("""(md) => {
        const out = document.getElementById('out');
        out.innerHTML = window.Markdown.render(md);
        return Array.from(out.querySelectorAll('a[href]')).map(a => [a.textContent, a.protocol]);
    }""", md)
    assert dict(protocols).get("ok") == "https:" and "rel" in dict(protocols)  # links still work
    bad = [(t, pr) for t, pr in protocols if pr not in ("http:", "https:", "mailto:")]
    assert not bad, bad


def test_wiki_page_text_is_escaped(site, page):
    """Page text is data: HTML in it is shown, never run (and the CSP would block it anyway)."""
    evil = site.settings.wiki / "evil.md"
    evil.write_text("---\ntitle: Evil\n---\nHello <img src=x onerror=\"window.__pwned=1\"> "
                    "<script>window.__pwned=2</script> and [[Attention]] and "
                    "[click](javascript:window.__pwned=3).\n", encoding="utf-8")
    try:
        page.goto(site.url + "/#/wiki/evil.md")
        page.wait_for_selector("#page h1")
        body = page.inner_text("#page")
        assert "<img src=x" in body and "<script>" in body
        assert page.query_selector("#page img") is None and page.query_selector("#page script") is None
        assert page.evaluate("window.__pwned === undefined")
        assert page.query_selector("#page a[href^=javascript]") is None
        assert page.query_selector("#page a.wikilink[data-page]") is not None
    finally:
        evil.unlink()


def test_ask_shows_citations_passages_and_unsupported_claims(written_template, tmp_path,  # noqa: F811
                                                             fake_anthropic, page):
    """Claude (the fake Messages API) answers with one true and one invented claim: the true one
    gets numbered citations that open the quoted passage; the invented one is marked."""
    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    q = ATTENTION_Q
    top, answer = half_invented_answer(wiki)
    fake_anthropic.enqueue(fake_anthropic.tool_use_response(
        "answer", {"answer": answer, "sections_used": [top]}))
    settings = wiki_settings(wiki, api_key="test-key", llm_base_url=fake_anthropic.base_url)
    with LiveServer(settings, write_mode="extractive") as srv:
        ask_in_chat(page, srv.url, q)
        answer_el = page.query_selector("[data-testid=answer]")
        assert "projects the queries" in answer_el.inner_text()
        marked = page.query_selector_all("[data-testid=answer] mark.unsupported")
        assert marked and "Moon" in marked[0].inner_text()
        assert "projects the queries" not in marked[0].inner_text()
        assert "Moon" in page.inner_text("[data-testid=unsupported]")
        cites = page.query_selector_all("[data-testid=answer] .cite")
        assert cites, "the supported claim carries numbered citations"
        n = cites[0].get_attribute("data-cite")
        body = page.query_selector(f'.source[data-n="{n}"] .source-body')
        assert not body.is_visible()
        cites[0].click()
        page.wait_for_selector(f'.source[data-n="{n}"] .source-body:not([hidden])')
        passage = page.inner_text(f'.source[data-n="{n}"] [data-testid=passage]')
        meta = page.inner_text(f'.source[data-n="{n}"] .meta')
        assert "attention_1706.03762v5.pdf" in meta and "Page" in meta and "Similarity" in meta
        assert len(passage) > 80 and "attention" in passage.lower()
        # the passage shown is verbatim a stored passage
        from episteme.stores.sqlite import open_store

        with open_store(settings, readonly=True) as st:
            texts = {p["text"] for p in st.passages(paper_id="attention_1706.03762v5.pdf")}
        assert passage.strip() in {t.strip() for t in texts}
        page.screenshot(path=str(SHOTS / "5-chat-citation-open.png"), full_page=True)
        # the header toggles it closed again; a [sec_] id links to its wiki page
        page.click(f'.source[data-n="{n}"] .source-head')
        assert not page.query_selector(f'.source[data-n="{n}"] .source-body').is_visible()
        page.click("[data-testid=answer] a.secref >> nth=0")
        page.wait_for_selector("#page h1")
        assert page.url.split("#", 1)[1].startswith("/wiki/")
        page.goto("about:blank")  # no request of the page outlives the server


def test_contradicted_claim_is_shown_with_its_contradicting_quote(written_template, tmp_path,  # noqa: F811
                                                                  fake_anthropic, page):
    """Claude (the fake Messages API) answers with a true claim and one whose number is wrong:
    the wrong one is marked as contradicted in the answer and listed with the reason and the
    verbatim quote of the passage that gives the right value; the true one keeps its citations."""
    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    top, _answer = half_invented_answer(wiki)
    answer = (f"Multi-head attention linearly projects the queries, keys and values h times with "
              f"different, learned linear projections [{top}]. The big Transformer reaches 34.2 BLEU "
              f"on the WMT 2014 English-to-German translation task [{top}].")
    fake_anthropic.enqueue(fake_anthropic.tool_use_response(
        "answer", {"answer": answer, "sections_used": [top]}))
    settings = wiki_settings(wiki, api_key="test-key", llm_base_url=fake_anthropic.base_url)
    with LiveServer(settings, write_mode="extractive") as srv:
        ask_in_chat(page, srv.url, ATTENTION_Q)
        marked = page.query_selector_all("[data-testid=answer] mark.contradicted")
        assert marked and "34.2" in marked[0].inner_text()
        assert "projects the queries" not in marked[0].inner_text()
        assert not page.query_selector_all("[data-testid=answer] mark.unsupported")
        box = page.inner_text("[data-testid=contradicted]")
        assert "34.2" in box and "Contradicted" in box
        assert "28.4" in page.inner_text("[data-testid=contradicted-reason]")
        quote = page.inner_text("[data-testid=contradicting-quote]")
        assert "28.4" in quote
        from episteme.stores.sqlite import open_store

        with open_store(settings, readonly=True) as st:
            texts = [p["text"] for p in st.passages(paper_id="attention_1706.03762v5.pdf")]
        assert any(" ".join(quote.split()) in " ".join(t.split()) for t in texts)  # verbatim
        assert page.query_selector_all("[data-testid=answer] .cite")  # the true claim is cited
        page.screenshot(path=str(SHOTS / "6-chat-contradicted.png"), full_page=True)
        page.goto("about:blank")  # no request of the page outlives the server


def test_token_prompt_then_browse_and_docs(page, tmp_path):
    """With a token, the UI asks for it once (the API answered 401) and then works; /docs
    renders the API reference from /openapi.json without any CDN."""
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "alpha.md").write_text("---\ntitle: Alpha\ntype: concept\n---\nSee [[Beta]].\n")
    (wiki / "beta.md").write_text("---\ntitle: Beta\ntype: concept\n---\nBack to [[Alpha]].\n")
    with LiveServer(wiki_settings(wiki), token="ui-token", warm=False) as srv:
        page.goto(srv.url + "/#/wiki/alpha.md")
        page.wait_for_selector("#token-bar:not([hidden])")
        page.fill("#token-input", "ui-token")
        page.click("#token-save")
        page.wait_for_selector("#page h1")
        assert page.inner_text("#page h1") == "Alpha"
        page.click("#page a.wikilink")
        page.wait_for_function("document.querySelector('#page h1')?.textContent === 'Beta'")
        page.click(".tabs a[data-tab=wiki]")  # no page chosen: the overview (stats + hubs)
        page.wait_for_selector("#page .hubs li")
        assert [li.inner_text().split(" ")[0] for li in page.query_selector_all("#page .hubs li")] == ["Alpha", "Beta"]
        assert page.query_selector(".graph-panel").is_hidden()
        page.problems.clear()  # the first, refused requests log 401s by design
        page.goto(srv.url + "/docs")
        page.wait_for_selector(".doc-op")
        text = page.inner_text("#docs")
        for endpoint in ("/ingest", "/chat", "/wiki/{page}", "/graph", "/jobs/{job_id}", "/health"):
            assert endpoint in text, endpoint
        page.screenshot(path=str(SHOTS / "6-api-docs.png"), full_page=False)
        page.goto("about:blank")  # no request of the page outlives the server


def test_oversized_file_is_refused_before_upload(page, tmp_path):
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    with LiveServer(wiki_settings(wiki, max_pdf_bytes=1000), warm=False) as srv:
        big = tmp_path / "big.pdf"
        big.write_bytes(b"%PDF-1.4\n" + b"0" * 5000 + b"\n%%EOF\n")
        page.goto(srv.url + "/#/ingest")
        page.wait_for_selector("#status.ok")
        page.set_input_files("#file-input", str(big))
        page.click("#upload-btn")
        page.wait_for_selector("#ingest-error:not([hidden])")
        assert "over the server's limit of 1000 bytes" in page.inner_text("#ingest-error")
        assert page.is_hidden("#progress")
        page.goto("about:blank")  # no request of the page outlives the server
    assert not (wiki / ".episteme" / "uploads").exists()  # nothing was sent
