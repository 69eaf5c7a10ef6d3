"""The wiki view marks flagged sentences inline, in a real headless Chromium: a number changed
in a page written from the real Attention paper is highlighted as contradicted, with a
labelled button (not colour alone) whose tooltip, on hover and on keyboard focus, gives the
reason and the paper's quote (aria-describedby); clicking opens the evidence panel on the
quoted page.  Screenshot: $TMPDIR/episteme-test-artifacts/ui/11-wiki-claims.png."""

from __future__ import annotations

import shutil

from ingested_wiki import wiki_settings
from serverlive import LiveServer, written_template  # noqa: F401  (a fixture)
from uibrowser import ALTERED, ATTENTION, SHOTS, corrupt


def test_a_contradicted_sentence_is_marked_with_its_evidence(written_template, tmp_path, page):  # noqa: F811
    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    rel = corrupt(wiki)
    # untrusted text in a flagged sentence is shown as text, never as markup
    p = wiki / rel
    p.write_text(p.read_text(encoding="utf-8").replace(
        ALTERED, ALTERED + " The <img src=x onerror=window.__pwned=1> model reaches 99.5 BLEU on the "
        "WMT 2014 English-to-French translation task.", 1), encoding="utf-8")
    with LiveServer(wiki_settings(wiki), warm=False) as srv:
        page.goto(srv.url + "/#/wiki/" + rel)
        page.wait_for_selector('#claims-status[data-state="done"]', timeout=120_000)
        marks = page.locator("mark.claim-mark.check")  # own wording: "check this", not an error
        assert marks.count() >= 1, page.inner_text("#claims-status")
        marked = " ".join(marks.all_inner_texts())
        assert "26.1" in marked and "English-to-German" in marked
        assert "to check" in page.inner_text("#claims-status")
        assert page.evaluate("window.__pwned") is None
        # the invented sentence is marked too, as unsupported: its own colour and label
        unsup = page.locator("mark.claim-mark.unsupported")
        assert "<img src=x" in " ".join(unsup.all_inner_texts())
        u_no = unsup.first.get_attribute("data-flag")
        assert "unsupported" in page.inner_text(f'.claim-badge[data-flag="{u_no}"]')
        assert page.evaluate("""() => getComputedStyle(document.querySelector('mark.claim-mark.unsupported'))
            .borderBottomStyle""") != page.evaluate("""() => getComputedStyle(document.querySelector(
            'mark.claim-mark.check')).borderBottomStyle""")
        assert page.locator("#page img").count() == 0

        flag_no = marks.first.get_attribute("data-flag")
        badge = page.locator(f'.claim-badge[data-flag="{flag_no}"]')
        assert "check this" in badge.inner_text()  # a text label beside the colour
        tip_id = badge.get_attribute("aria-describedby")
        tip = page.locator(f"#{tip_id}")
        assert tip.get_attribute("role") == "tooltip"
        assert not tip.is_visible()

        # hover over the sentence: the tooltip shows the reason and the paper's quote
        marks.first.hover()
        tip.wait_for(state="visible")
        text = tip.inner_text()
        assert "Check this" in text and ATTENTION in text and "28.4" in text, text
        assert "p. " in text
        page.screenshot(path=str(SHOTS / "11-wiki-claims.png"), full_page=False)
        page.mouse.move(5, 5)
        tip.wait_for(state="hidden")

        # keyboard: focus the badge (Tab reaches it), the same tooltip; Escape dismisses it
        page.focus("#page-filter")
        for _ in range(400):
            page.keyboard.press("Tab")
            if page.evaluate(f"document.activeElement.dataset.flag === {flag_no!r} && "
                             "document.activeElement.classList.contains('claim-badge')"):
                break
        else:
            raise AssertionError("Tab never reaches the claim's badge")
        tip.wait_for(state="visible")
        assert "28.4" in tip.inner_text()
        page.screenshot(path=str(SHOTS / "13-wiki-claim-focus.png"), full_page=False)
        page.keyboard.press("Escape")
        tip.wait_for(state="hidden")

        # click: the evidence panel opens on the quoted page with the claim and its verdict
        badge.click()
        page.wait_for_selector("#evidence:not([hidden])[data-loaded]", timeout=60_000)
        assert "26.1" in page.inner_text("[data-testid=ev-claim]")
        assert page.inner_text("[data-testid=ev-verdict]").startswith("contradicted")
        assert "28.4" in page.inner_text("[data-testid=ev-quote]")
        page.screenshot(path=str(SHOTS / "12-wiki-claim-evidence.png"), full_page=False)
        page.goto("about:blank")  # no request of the page outlives the server
