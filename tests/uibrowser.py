"""Shared browser fixtures for the UI tests: Debian's Chromium driven by Playwright (no
downloaded browser), one browser per test module, and a fresh page per test that fails the
test on any script error or CSP violation it logged.  Also the helpers two UI test files share
with their API twins (where the quote's words lie, a wiki page with a wrong number)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Outside the checkout: a local marketplace install copies the whole folder (issue 12).
ARTIFACTS = Path(os.environ.get("EPISTEME_TEST_ARTIFACTS")
                 or Path(tempfile.gettempdir()) / "episteme-test-artifacts")
SHOTS = ARTIFACTS / "ui"
CHROMIUM = Path("/usr/bin/chromium")
# The flags this closed machine needs: without the background-networking ones Chromium keeps
# trying hosts it cannot reach.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

ATTENTION = "attention_1706.03762v5.pdf"
#: a sentence whose number disagrees with the Attention paper (28.4 BLEU on English-German)
ALTERED = ("The Transformer (big) reaches a BLEU score of 26.1 on the WMT 2014 English-to-German "
           "translation task.")


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail("Debian chromium is missing: run plugin/scripts/setup_env.py --browser")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A page whose ``problems`` (script errors, console errors) must stay empty and whose
    ``requests`` lists every URL it asked for.  bypass_csp: Playwright evaluates its wait
    predicates as strings, which our CSP forbids; the escaping tests therefore prove the
    renderer escapes, without the CSP net."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
    pg = ctx.new_page()
    problems: list[str] = []
    requests: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    pg.on("request", lambda r: requests.append(r.url))
    pg.problems, pg.requests = problems, requests
    yield pg
    ctx.close()
    assert not problems, problems  # no script errors, no CSP violations


def corrupt(wiki: Path) -> str:
    """Add :data:`ALTERED` at the end of Attention's machine-translation results page (a
    paragraph of its last section)."""
    page = wiki / "papers/attention-is-all-you-need-machine-translation.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.rstrip("\n") + "\n\n" + ALTERED + "\n", encoding="utf-8")
    return page.relative_to(wiki).as_posix()


def ask_in_chat(page, url: str, question: str,
                until: str = ".turn:not(.pending) [data-testid=answer]") -> None:
    """Ask ``question`` in the web UI's chat at ``url`` (a live server) and wait for ``until``,
    the element the finished turn shows (the answer by default)."""
    page.goto(url + "/#/chat")
    page.fill("#chat-input", question)
    page.press("#chat-input", "Enter")
    page.wait_for_selector(until, timeout=120_000)
