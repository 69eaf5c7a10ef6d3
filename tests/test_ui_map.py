"""The whole-wiki map, the library and the citations in the web UI, in a real Chromium
(Debian's, via Playwright; one browser for the module):

- the map of a generated 300-page wiki renders within a second (hash change to painted, measured
  with ``performance.now()`` in the page), labels only its hubs, zooms, and filters by tag;
- on a wiki where a third paper cites the two others (a generated survey whose references give
  their arXiv ids), the map draws the two citations apart from the topic links and filters by
  paper; the library lists every paper with its metadata, wiki sections and citation counts, and
  re-ingests and removes from there; a paper page shows what cites it and what it cites; an
  answer's source says "cited by 1 paper in this wiki".
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from ingested_wiki import wiki_settings
from serverlive import (  # noqa: F401  (written_template is a fixture)
    ATTENTION_Q,
    LiveServer,
    request,
    serve_copy,
    written_template,
)
from uibrowser import REPO, SHOTS, ask_in_chat

GEN_VAULT = REPO.parent / "shared" / "tools" / "gen_vault.py"
SURVEY = "survey.pdf"
ATT = "attention_1706.03762v5.pdf"
GAN = "gan_1406.2661v1.pdf"
#: a page title that would run script if it reached innerHTML unescaped
HOSTILE = '<img src=x onerror="window.__pwned=1">Evil page'


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.load(r)


def survey_pdf(path: Path) -> Path:
    """A short generated paper whose reference list names Attention and GAN by arXiv id."""
    from pdfgen import Paper, Section, make_paper_pdf

    para = ("We revisit sequence transduction with attention and adversarial training. The method "
            "is simple to implement and runs in linear time on three benchmarks.")
    return make_paper_pdf(path, Paper(
        title="A Survey of Attention and Adversarial Nets", authors=["Cora Citer"],
        affiliations=["Example University"], abstract=para,
        sections=[Section("1", "Introduction", [para, para]), Section("2", "Discussion", [para])],
        references=[
            "A. Vaswani, N. Shazeer, N. Parmar, et al. Attention is all you need. In Advances in "
            "Neural Information Processing Systems, 2017. arXiv:1706.03762.",
            "I. Goodfellow, J. Pouget-Abadie, M. Mirza, et al. Generative adversarial nets. In "
            "NIPS, 2014. arXiv:1406.2661.",
            "A. Author. An older paper. 2001.",
        ]))


@pytest.fixture(scope="module")
def cited_template(written_template, tmp_path_factory) -> Path:  # noqa: F811
    """The written Attention + GAN wiki plus the survey (ingested and written), and one page with
    a hostile title; the survey is ingested in a child process so no store stays open here."""
    root = tmp_path_factory.mktemp("cited")
    shutil.copytree(written_template / "wiki", root / "wiki")
    pdf = survey_pdf(root / SURVEY)
    code = ("import sys\n"
            "from episteme.config import load_settings\n"
            "from episteme.ingest.pipeline import ingest_paper\n"
            "from episteme.compile.writer import write_paper\n"
            "s = load_settings(sys.argv[1], env={}, dotenv=None)\n"
            "r = ingest_paper(s, sys.argv[2], progress=False)\n"
            "write_paper(s, r['paper'], writer='extractive')\n")
    proc = subprocess.run([sys.executable, "-c", code, str(root / "wiki"), str(pdf)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (root / "wiki" / "evil.md").write_text(
        f"---\ntitle: '{HOSTILE}'\ntype: concept\ntags: [evil]\n---\n"
        "Links to [[Attention]].\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def cited_site(cited_template, tmp_path_factory):
    with serve_copy(cited_template, tmp_path_factory.mktemp("cited-site") / "wiki") as srv:
        yield srv


@pytest.fixture(scope="module")
def vault300(tmp_path_factory):
    if not GEN_VAULT.is_file():
        pytest.skip("../shared (gen_vault.py) is absent")
    out = tmp_path_factory.mktemp("v300") / "wiki"
    subprocess.run([sys.executable, str(GEN_VAULT), "--pages", "300", "--seed", "1", "--out",
                    str(out)], check=True, capture_output=True, timeout=120)
    with LiveServer(wiki_settings(out), warm=False) as srv:
        yield srv


#: from the hash change to the map drawn and painted (two animation frames later)
MEASURE = """() => new Promise((ok) => {
  document.querySelector('#map-stage').removeAttribute('data-ready');  // no earlier map counts
  const t0 = performance.now();
  location.hash = '#/map';
  const tick = () => {
    if (!document.querySelector('#map-stage[data-ready]')) return requestAnimationFrame(tick);
    requestAnimationFrame(() => requestAnimationFrame(() => ok(performance.now() - t0)));
  };
  tick();
})"""


def test_map_of_300_pages_renders_within_a_second(vault300, page):
    data = get(vault300.url + "/map")
    assert data["count"] == 300
    times = []
    for run in range(3):  # best of three: the machine is shared; each run a fresh page load
        page.goto(f"{vault300.url}/?run={run}#/chat")  # a new query string: a real load
        page.wait_for_selector("#status.ok")
        times.append(page.evaluate(MEASURE))
    best = min(times)
    print(f"map of 300 pages: {', '.join(f'{t:.0f}' for t in times)} ms "
          f"(layout {page.get_attribute('#map-stage', 'data-layout-ms')} ms)")
    assert best <= 1000, times
    page.screenshot(path=str(SHOTS / "map-300.png"))
    assert len(page.query_selector_all("[data-testid=map-svg] .m-node")) == 300
    assert page.get_attribute("[data-testid=map-links]", "data-count") == str(len(data["edges"]))
    assert page.get_attribute("[data-testid=map-cites]", "data-count") == "0"
    # labels only for the hubs, the best-linked pages first
    labels = page.query_selector_all("[data-testid=map-svg] .m-labels .m-label")
    assert 5 <= len(labels) <= 24
    top = max(range(300), key=lambda i: (data["nodes"][i]["in"] + data["nodes"][i]["out"], -i))
    assert data["nodes"][top]["title"][:20] in " ".join(x.text_content() for x in labels)
    # a quiet page shows its title when pointed at
    quiet = min(range(300), key=lambda i: (data["nodes"][i]["in"] + data["nodes"][i]["out"], i))
    page.hover(f"[data-testid=map-svg] .m-node[data-i='{quiet}']", force=True)
    assert page.text_content("[data-testid=map-hover]") == data["nodes"][quiet]["title"][:60]
    # the wheel zooms in at the pointer
    box = page.get_attribute("[data-testid=map-svg]", "viewBox")
    page.mouse.move(700, 450)
    page.mouse.wheel(0, -400)
    page.wait_for_function(f"document.querySelector('[data-testid=map-svg]').getAttribute('viewBox') !== {box!r}")
    w0, w1 = float(box.split()[2]), float(page.get_attribute("[data-testid=map-svg]", "viewBox").split()[2])
    assert w1 < w0
    # a tag keeps its pages and dims the others, without moving anything
    tag = page.eval_on_selector("#map-tag", "s => s.options[1].value")
    with_tag = {i for i, n in enumerate(data["nodes"]) if tag in n["tags"]}
    before = page.get_attribute(".m-node[data-i='0']", "cx")
    page.select_option("#map-tag", tag)
    dim = {int(e.get_attribute("data-i")) for e in page.query_selector_all(".m-node.m-dim")}
    assert dim == set(range(300)) - with_tag and with_tag
    assert page.get_attribute(".m-node[data-i='0']", "cx") == before
    assert page.inner_text("#map-info").startswith(f"{len(with_tag)} of 300 pages")


def test_map_draws_citations_apart_and_filters_by_paper(cited_site, page):
    page.goto(cited_site.url + "/#/map")
    page.wait_for_selector("#map-stage[data-ready]")
    data = get(cited_site.url + "/map")
    assert page.get_attribute("[data-testid=map-cites]", "data-count") == "2"
    cites_d = page.get_attribute("[data-testid=map-cites]", "d")
    assert cites_d.count("M") == 2
    # the citations run from the survey's page to the two cited papers' pages
    by_paper = {n["paper"]: i for i, n in enumerate(data["nodes"]) if n["paper"]}
    assert {SURVEY, ATT, GAN} <= set(by_paper)

    def at(i):
        c = page.query_selector(f".m-node[data-i='{i}']")
        return f"{float(c.get_attribute('cx')):.1f} {float(c.get_attribute('cy')):.1f}"

    assert f"M{at(by_paper[SURVEY])}L{at(by_paper[ATT])}" in cites_d
    assert f"M{at(by_paper[SURVEY])}L{at(by_paper[GAN])}" in cites_d
    assert page.query_selector(f".m-node.m-paper[data-i='{by_paper[ATT]}']")
    # each citation has its arrowhead at the cited paper's end
    arrows = page.get_attribute("[data-testid=map-svg] .m-arrows", "d")
    assert arrows.count("M") == 2 and arrows.count("Z") == 2
    tips = [tuple(map(float, part.split("L")[0].split())) for part in arrows.split("M")[1:]]

    def xy(i):
        c = page.query_selector(f".m-node[data-i='{i}']")
        return float(c.get_attribute("cx")), float(c.get_attribute("cy"))

    def dist(p, q):
        return ((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2) ** 0.5

    for tip in tips:
        near = min((by_paper[ATT], by_paper[GAN], by_paper[SURVEY]), key=lambda i: dist(tip, xy(i)))
        assert near in (by_paper[ATT], by_paper[GAN])
    page.screenshot(path=str(SHOTS / "map-cited.png"))
    # hiding the topic links leaves the citations
    page.uncheck("#map-show-links")
    assert page.eval_on_selector("[data-testid=map-links]", "e => getComputedStyle(e).display") == "none"
    assert page.eval_on_selector("[data-testid=map-cites]", "e => getComputedStyle(e).display") != "none"
    # by paper: the GAN's own pages stay, the Transformer's are dimmed
    page.select_option("#map-paper", GAN)
    kept = {int(e.get_attribute("data-i")) for e in page.query_selector_all(".m-node:not(.m-dim)")}
    assert kept == {i for i, n in enumerate(data["nodes"]) if n["paper"] == GAN or GAN in n["sources"]}
    assert by_paper[ATT] not in kept
    # the hostile title is text, never markup
    evil = next(i for i, n in enumerate(data["nodes"]) if n["id"] == "evil.md")
    page.select_option("#map-paper", "")
    page.hover(f".m-node[data-i='{evil}']", force=True)
    assert page.text_content("[data-testid=map-hover]").startswith("<img src=x")
    assert page.evaluate("window.__pwned") is None
    assert not page.query_selector("[data-testid=map-svg] img")
    # the find box rings the pages whose title holds the text, names the best linked, and
    # Enter opens it (the keyboard's way in)
    page.fill("#map-find", "adversarial nets")
    found = {int(e.get_attribute("data-i")) for e in page.query_selector_all(".m-node.m-found")}
    assert found == {i for i, n in enumerate(data["nodes"]) if "adversarial nets" in n["title"].lower()}
    assert by_paper[GAN] in found and by_paper[ATT] not in found
    assert "Adversarial Nets" in page.text_content("[data-testid=map-hover]")
    page.press("#map-find", "Enter")
    page.wait_for_function("document.querySelector('#page .crumbs')?.textContent.length > 0")
    assert page.inner_text("#page .crumbs") in {data["nodes"][i]["id"] for i in found}
    # a dot opens its page
    page.goto(cited_site.url + "/#/map")
    page.wait_for_selector("#map-stage[data-ready]")
    page.click(f".m-node[data-i='{by_paper[ATT]}']", force=True)
    page.wait_for_function("document.querySelector('#page h1')?.textContent === 'Attention Is All You Need'")


def test_paper_page_shows_what_cites_it_and_what_it_cites(cited_site, page):
    lib = {p["paper"]: p for p in get(cited_site.url + "/library")["papers"]}
    page.goto(cited_site.url + "/#/wiki/" + lib[ATT]["wiki_page"])
    page.wait_for_selector("[data-testid=cited-by] a")
    cited_by = page.query_selector_all("[data-testid=cited-by] a")
    assert [a.inner_text() for a in cited_by] == ["A Survey of Attention and Adversarial Nets"]
    assert page.inner_text("[data-testid=cites]") == "None in this wiki."
    page.screenshot(path=str(SHOTS / "paper-cited-by.png"))
    cited_by[0].click()
    page.wait_for_function(f"document.querySelector('#page .crumbs')?.textContent === {lib[SURVEY]['wiki_page']!r}")
    page.wait_for_selector("[data-testid=cites] a")
    assert sorted(a.inner_text() for a in page.query_selector_all("[data-testid=cites] a")) == [
        "Attention Is All You Need", "Generative Adversarial Nets"]
    assert page.inner_text("[data-testid=cited-by]") == "None in this wiki."
    # a topic page has no citations box
    topic = next(p["page"] for p in get(cited_site.url + "/wiki")["pages"]
                 if not p["page"].startswith("papers/") and p["type"] != "paper")
    page.goto(cited_site.url + "/#/wiki/" + topic)
    page.wait_for_selector("[data-testid=graph-svg] .g-node")
    assert page.inner_text("[data-testid=paper-citations]") == ""


def test_answer_source_says_how_many_papers_cite_it(cited_site, page):
    ask_in_chat(page, cited_site.url, ATTENTION_Q)
    heads = page.query_selector_all("[data-testid=sources] .source-head")
    att = [h for h in heads if h.query_selector(".src-paper").inner_text() == ATT]
    assert att, [h.inner_text() for h in heads]
    for h in att:
        assert h.query_selector("[data-testid=src-cited-by]").inner_text() == "cited by 1 paper in this wiki"
    # a source no ingested paper cites carries no such chip
    for h in heads:
        if h.query_selector(".src-paper").inner_text() == SURVEY:
            assert not h.query_selector("[data-testid=src-cited-by]")
    page.fill("#chat-input", "What does the discriminator do?")
    page.press("#chat-input", "Enter")
    page.wait_for_function("document.querySelectorAll('.turn:not(.pending) [data-testid=answer]').length === 2")
    assert sum("/citations" in u for u in page.requests) == 1  # fetched once for both answers


def test_library_lists_papers_then_reingests_and_removes(cited_template, tmp_path, page):
    with serve_copy(cited_template, tmp_path / "wiki") as site:
        index = json.loads((site.settings.wiki / "index.json").read_text(encoding="utf-8"))
        page.goto(site.url + "/#/library")
        page.wait_for_selector("[data-testid=library] tbody tr")
        rows = {r.get_attribute("data-paper"): r for r in page.query_selector_all("[data-testid=library] tbody tr")}
        assert set(rows) == {ATT, GAN, SURVEY}

        def cell(paper, col):
            return page.inner_text(f"tr[data-paper='{paper}'] td[data-col='{col}']")

        att = rows[ATT].inner_text()
        assert "Attention Is All You Need" in att and "Ashish Vaswani" in att and "2017" in att
        assert "Neural Information Processing Systems" in att
        assert cell(ATT, "sections") == str(sum(ATT in s for s in index.values()))
        assert (cell(ATT, "cited-by"), cell(ATT, "cites")) == ("1", "0")
        assert (cell(SURVEY, "cited-by"), cell(SURVEY, "cites")) == ("0", "2")
        page.screenshot(path=str(SHOTS / "library.png"), full_page=True)
        # the title opens the paper's page
        assert page.get_attribute(f"tr[data-paper='{ATT}'] a.wikilink", "href") == (
            "#/wiki/" + "papers%2Fattention-is-all-you-need.md")

        # re-ingest the survey from raw/: a job, then the table again
        page.click(f"tr[data-paper='{SURVEY}'] button[data-act=reingest]")
        page.wait_for_function("document.querySelector('#lib-msg')?.textContent.startsWith('Re-ingested')",
                               timeout=300_000)
        assert "Re-ingested survey.pdf:" in page.inner_text("#lib-msg")
        assert cell(SURVEY, "cites") == "2"
        papers = [r.get_attribute("data-paper") for r in page.query_selector_all("[data-testid=library] tbody tr")]
        assert sorted(papers) == sorted([ATT, GAN, SURVEY])  # the same paper again, not a copy

        # remove it: one click arms, the second removes
        page.click(f"tr[data-paper='{SURVEY}'] button[data-act=remove]")
        assert page.inner_text(f"tr[data-paper='{SURVEY}'] button[data-act=remove]") == "Confirm removal"
        assert (site.settings.wiki / "raw" / SURVEY).is_file()
        page.click(f"tr[data-paper='{SURVEY}'] button[data-act=remove]")
        page.wait_for_function("document.querySelector('#lib-msg')?.textContent.startsWith('Removed')")
        assert not page.query_selector(f"tr[data-paper='{SURVEY}']")
        assert not (site.settings.wiki / "raw" / SURVEY).exists()
        # the citations were fetched again: nothing cites the Transformer any more
        assert cell(ATT, "cited-by") == "0"
        status, body, _ = request("DELETE", site.url + "/papers/" + SURVEY)
        assert status == 404 and "no ingested paper" in body["error"]
        status, body, _ = request("GET", site.url + "/citations?paper=nope.pdf")
        assert status == 404


def test_an_empty_wiki_has_an_empty_map_and_library(tmp_path, page):
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    with LiveServer(wiki_settings(wiki), warm=False) as srv:
        assert get(srv.url + "/library") == {"papers": [], "count": 0}
        assert get(srv.url + "/citations")["links"] == []
        assert get(srv.url + "/map")["count"] == 0
        page.goto(srv.url + "/#/map")
        page.wait_for_selector("#map-stage[data-ready]")
        assert page.inner_text("#map-info") == "0 pages · 0 topic links · 0 citations"
        page.click(".tabs a[data-tab=library]")
        page.wait_for_selector("#library-root .empty")
        assert "No papers yet" in page.inner_text("#library-root")
        page.goto("about:blank")  # no request of the page outlives the server
