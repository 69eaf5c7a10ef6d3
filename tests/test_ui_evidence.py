"""The evidence panel in a real headless Chromium (Debian's /usr/bin/chromium via Playwright):
ask a question over real ingested papers, open a source, and check that the highlight boxes
drawn over the page image sit on the quote's words -- the text under each box, read from the
PDF's own text positions, holds the quote's words in order.  Screenshots: $TMPDIR/episteme-test-artifacts/ui/.
"""

from __future__ import annotations

import shutil

from episteme.pdf.highlight import words_in_order
from ingested_wiki import wiki_settings
from serverlive import LiveServer, serve_copy, written_template  # noqa: F401  (fixture)
from uibrowser import ATTENTION, SHOTS, ask_in_chat

QUESTION = "What BLEU score did the Transformer reach on English-to-French translation?"


def boxes_on_screen(page) -> list[dict]:
    return page.evaluate("""() => [...document.querySelectorAll('#ev-boxes .hl')].map((d) => {
        const r = d.getBoundingClientRect();
        return {bbox: d.dataset.bbox.split(',').map(Number), x: r.left, y: r.top, w: r.width, h: r.height};
    })""")


def test_a_source_opens_its_page_with_the_quote_highlighted(written_template, tmp_path, page):  # noqa: F811
    from episteme.pdf.highlight import text_in_box

    with serve_copy(written_template, tmp_path / "wiki") as srv:
        wiki = srv.settings.wiki
        ask_in_chat(page, srv.url, QUESTION)
        cites = page.query_selector_all("[data-testid=answer] .cite")
        assert cites, "the answer carries numbered citations"
        n = cites[0].get_attribute("data-cite")
        paper = page.inner_text(f'.source[data-n="{n}"] .src-paper')
        cites[0].click()
        page.wait_for_selector("#evidence:not([hidden])[data-loaded]")
        shown = int(page.get_attribute("#evidence", "data-loaded"))
        assert page.inner_text("#ev-pageno").startswith(f"p. {shown} / ")
        quote = page.inner_text("[data-testid=ev-quote]")
        assert len(quote) > 40
        assert page.inner_text("[data-testid=ev-claim]").strip("“”")  # the claim, above the page
        assert page.inner_text("[data-testid=ev-verdict]").startswith("supported")
        # the page image loaded, and every highlight box sits on the quote's words
        assert page.evaluate("document.querySelector('#ev-img').naturalWidth") > 500
        boxes = boxes_on_screen(page)
        assert boxes, "the quote is highlighted"
        pdf = wiki / "raw" / paper
        under = " ".join(text_in_box(pdf, shown, b["bbox"]) for b in boxes)
        assert words_in_order(quote, under) >= 0.9, (quote, under)
        # ... and is drawn where its PDF coordinates say, over the image
        img = page.evaluate("""(() => { const r = document.querySelector('#ev-img').getBoundingClientRect();
                               return {x: r.left, y: r.top, w: r.width, h: r.height}; })()""")
        import json
        import urllib.request

        with urllib.request.urlopen(f"{srv.url}/papers/{paper}") as r:
            geo = json.load(r)["pages"][shown - 1]
        for b in boxes:
            x0, _y0, _x1, y1 = b["bbox"]
            want_x = img["x"] + (x0 - geo["origin"][0] - 1) / geo["width"] * img["w"]
            want_y = img["y"] + (geo["origin"][1] + geo["height"] - y1 - 1) / geo["height"] * img["h"]
            assert abs(b["x"] - want_x) < 2 and abs(b["y"] - want_y) < 2
        page.screenshot(path=str(SHOTS / "7-evidence-panel.png"), full_page=False)
        page.locator("#ev-sheet").screenshot(path=str(SHOTS / "8-evidence-page.png"))

        # keyboard: next / previous page, zoom, the PDF link follows the page, Esc closes
        width = page.evaluate("document.querySelector('#ev-sheet').getBoundingClientRect().width")
        page.keyboard.press("]")
        page.wait_for_selector(f'#evidence[data-loaded="{shown + 1}"]')
        # another page shows only its own boxes, and says where the quote is highlighted
        assert len(boxes_on_screen(page)) < len(boxes) or not boxes_on_screen(page)
        assert f"p. {shown}" in page.inner_text("#ev-more")
        assert page.get_attribute("#ev-pdf", "href") == f"/papers/{paper}/pdf#page={shown + 1}"
        page.keyboard.press("[")
        page.wait_for_selector(f'#evidence[data-loaded="{shown}"]')
        assert len(boxes_on_screen(page)) == len(boxes)
        page.keyboard.press("+")
        page.wait_for_function(
            f"document.querySelector('#ev-sheet').getBoundingClientRect().width > {width + 20}")
        page.keyboard.press("Escape")
        assert page.is_hidden("#evidence")
        assert page.evaluate("document.activeElement.classList.contains('cite')")

        # the header of a source opens the panel too; the PDF itself is served from raw/
        page.click(f'.source[data-n="{n}"] .source-head')  # closes the expanded source
        page.click(f'.source[data-n="{n}"] .source-head')  # opens it again, with the panel
        page.wait_for_selector("#evidence:not([hidden])[data-loaded]")
        with urllib.request.urlopen(srv.url + page.get_attribute("#ev-pdf", "href").split("#")[0]) as r:
            assert r.headers["content-type"] == "application/pdf"
            assert r.read() == pdf.read_bytes()
    # no request left this machine's server (works without network)
    assert page.requests and all(u.startswith((srv.url, "blob:", "data:")) for u in page.requests), \
        [u for u in page.requests if not u.startswith(srv.url)]


def test_page_images_are_fetched_with_the_token(page, tmp_path, papers_dir):
    """With a bearer token, the panel's page image and geometry still load (fetched with the
    header, shown from a blob: URL that the CSP allows)."""
    wiki = tmp_path / "wiki"
    (wiki / "raw").mkdir(parents=True)
    shutil.copy(papers_dir / ATTENTION, wiki / "raw" / ATTENTION)
    with LiveServer(wiki_settings(wiki), token="ev-token", warm=False) as srv:
        page.goto(srv.url + "/#/chat")
        page.evaluate("sessionStorage.setItem('episteme-token', 'ev-token')")
        page.reload()
        page.wait_for_selector("#status.ok")
        page.evaluate(f"""window.Evidence.open({{paper: {ATTENTION!r}, page: 3, section: '3 Model',
            quote: 'a quote', boxes: [{{page: 3, bbox: [108, 600, 300, 612]}}],
            claim: 'A claim.', verdict: 'contradicted', reason: {{text: 'the numbers differ'}}}})""")
        page.wait_for_selector('#evidence[data-loaded="3"]')
        assert page.evaluate("document.querySelector('#ev-img').src").startswith("blob:")
        assert page.evaluate("document.querySelector('#ev-img').naturalWidth") > 500
        assert "contradicted" in page.inner_text("[data-testid=ev-verdict]")
        assert "the numbers differ" in page.inner_text("[data-testid=ev-verdict]")
        assert len(boxes_on_screen(page)) == 1
        page.screenshot(path=str(SHOTS / "9-evidence-contradicted-token.png"), full_page=False)
        page.goto("about:blank")  # no request of the page outlives the server


def test_an_unsupported_claim_shows_the_passage_it_was_checked_against(written_template, tmp_path,  # noqa: F811
                                                                      fake_anthropic, page):
    """Claude (the fake Messages API) answers with one invented claim: the "not supported" box
    offers the closest passage, which opens on its page with the claim and its verdict."""
    from serverlive import ATTENTION_Q, half_invented_answer

    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    top, answer = half_invented_answer(wiki)
    fake_anthropic.enqueue(fake_anthropic.tool_use_response(
        "answer", {"answer": answer, "sections_used": [top]}))
    settings = wiki_settings(wiki, api_key="test-key", llm_base_url=fake_anthropic.base_url)
    with LiveServer(settings, write_mode="extractive") as srv:
        ask_in_chat(page, srv.url, ATTENTION_Q, until=".turn:not(.pending) [data-testid=unsupported]")
        btn = page.query_selector("[data-testid=unsupported] .show-claim-evidence")
        assert btn, "the rejected claim offers the passage it was checked against"
        btn.click()
        page.wait_for_selector("#evidence:not([hidden])[data-loaded]")
        assert "Moon" in page.inner_text("[data-testid=ev-claim]")
        verdict = page.inner_text("[data-testid=ev-verdict]")
        assert verdict.split(" ")[0] in ("unsupported", "contradicted")
        assert page.evaluate("document.querySelector('#ev-img').naturalWidth") > 500
        page.screenshot(path=str(SHOTS / "10-evidence-unsupported-claim.png"), full_page=False)
        page.goto("about:blank")  # no request of the page outlives the server
