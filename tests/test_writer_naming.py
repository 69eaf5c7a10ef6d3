"""How the writers name and title what they write (issues 34, 35, 36): ALL-CAPS headings in
title case, generic headings kept off the top level, paper pages named from the whole title,
HTML in a PDF's title escaped in pages and frontmatter, and index.md's contents.  Light: a
wiki made with ``episteme init`` and the real writer, no stores."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from episteme.commands.init import init_wiki
from episteme.compile.decisions import (
    Decision,
    WritePlan,
    apply_plan,
    escape_html,
    normal_case,
    sanitize_title,
    validate_plan,
)
from episteme.compile.inputs import PaperInfo
from episteme.compile.keyterms import specific_terms
from episteme.compile.naming import is_generic, paper_page_for
from episteme.lint.core import lint_wiki
from episteme.paper import PaperSection
from episteme.wiki.frontmatter import parse_frontmatter
from episteme.wiki.index import SECTION_MAP_HEADING, read_index_json, read_index_md

TODAY = dt.date(2026, 1, 1)


def _section(title: str, kind: str = "body") -> PaperSection:
    return PaperSection(number="3", title=title, level=1, kind=kind, page_start=1, page_end=1,
                        text="x" * 300, id=f"p.pdf#{title}")


def test_all_caps_titles_become_title_case_keeping_the_papers_acronyms():
    acr = {"RNN", "BLEU"}
    assert normal_case("ENCODER", acr) == "Encoder"
    assert normal_case("RNN ENCODER\u2013DECODER", acr) == "RNN Encoder\u2013Decoder"
    assert normal_case("DECODER: GENERAL DESCRIPTION", acr) == "Decoder: General Description"
    assert (normal_case("NEURAL MACHINE TRANSLATION BY JOINTLY LEARNING TO ALIGN AND TRANSLATE", acr)
            == "Neural Machine Translation by Jointly Learning to Align and Translate")
    assert normal_case("WMT14 RESULTS (BLEU)", acr) == "WMT14 Results (BLEU)"
    for kept in ("Multi-Head Attention", "BERT: Pre-training", "iPhone"):
        assert normal_case(kept, acr) == kept  # a title with a lower-case letter is the author's


def test_html_in_a_title_is_escaped_once():
    title = sanitize_title("<b>Bold</b> & <script>alert(1)</script>")
    assert "<" not in title and ">" not in title and title.startswith("&lt;b&gt;Bold")
    assert sanitize_title(title) == title == escape_html(title)  # idempotent: & is not touched


def test_html_in_pdf_titles_is_escaped_in_the_page_and_its_frontmatter(tmp_path):
    wiki = tmp_path / "wiki"
    init_wiki(wiki)
    (wiki / "raw").mkdir(exist_ok=True)
    (wiki / "raw" / "p.pdf").write_bytes(b"%PDF-1.4\n")
    plan = WritePlan(paper="p.pdf", writer="extractive", decisions=[Decision(
        action="create", page="papers/x.md", title="<img src=x onerror=alert(1)> Results",
        description="d", body="Text.", sources=["p.pdf"], page_title="<i>A</i> <script>T</script>",
        page_type="paper")])
    validate_plan(wiki, plan, {"p.pdf"})
    apply_plan(wiki, plan, known_sources={"p.pdf"}, today=TODAY)
    text = (wiki / "papers/x.md").read_text(encoding="utf-8")
    assert "<img" not in text and "<script" not in text and "<i>" not in text
    assert "## &lt;img src=x onerror=alert(1)&gt; Results" in text
    props = parse_frontmatter(text).props
    assert props["title"] == "&lt;i&gt;A&lt;/i&gt; &lt;script&gt;T&lt;/script&gt;"


def test_generic_headings_stay_off_the_top_level():
    for title in ("A First Algorithm", "A Second Algorithm", "Acknowledgement", "ACKNOWLEDGMENTS",
                  "Summary", "Main Results", "A Dilemma", "Algorithms"):
        assert is_generic(_section(title)), title
    for title in ("Multi-Head Attention", "Model Architecture", "Positional Encoding",
                  "Byzantine Agreement", "A Consensus Algorithm for Partial Synchrony"):
        assert not is_generic(_section(title)), title


def test_paper_pages_are_named_from_the_whole_title(tmp_path):
    wiki = tmp_path
    (wiki / "papers").mkdir()
    info = PaperInfo("deep.pdf", "Learning Deep Transformer Models for Machine Translation", [], [])
    assert paper_page_for(wiki, info) == "papers/learning-deep-transformer-models-for-machine-translation.md"
    # a page this paper already has under the older cut name keeps serving it
    (wiki / "papers/learning-deep-transformer-models-for-machine.md").write_text(
        "---\ntitle: X\ntype: paper\nsources: [deep.pdf]\n---\n", encoding="utf-8")
    assert paper_page_for(wiki, info) == "papers/learning-deep-transformer-models-for-machine.md"
    long = PaperInfo("l.pdf", " ".join(["Word"] * 40), [], [])
    page = paper_page_for(wiki, long)
    assert len(page) <= len("papers/") + 100 + 3 and page.endswith("word.md")  # cut at a word


def test_evidence_is_names_and_phrases_not_common_words():
    a = ("The Transformer uses multi-head attention. We report BLEU on the WMT 2014 task. "
         "On this account we call the past step again, as in machine translation systems; "
         "machine translation is the task.")
    b = ("Machine translation with attention: the Transformer reaches 28.4 BLEU. Each step "
         "of the past call is an account of self-attention and multi-head attention, "
         "and multi-head attention again.")
    shared = ["account", "call", "past", "step", "transformer", "bleu", "multi-head attention",
              "account past", "machine translation", "multi-head"]
    ev = specific_terms(shared, a, b)
    assert {"transformer", "bleu", "multi-head attention", "machine translation"} <= set(ev)
    assert not {"account", "call", "past", "step", "account past"} & set(ev)
    assert "multi-head" not in ev  # inside a phrase already given


def _write(wiki: Path, plan: WritePlan) -> None:
    validate_plan(wiki, plan, {"a.pdf", "b.pdf"})
    apply_plan(wiki, plan, known_sources={"a.pdf", "b.pdf"}, today=TODAY)


def test_index_md_is_a_table_of_contents_and_keeps_the_section_map(tmp_path):
    wiki = tmp_path / "wiki"
    init_wiki(wiki)
    _write(wiki, WritePlan(paper="a.pdf", writer="extractive", decisions=[
        Decision(action="create", page="papers/paper-a.md", title="Summary", description="Paper A in short",
                 body="A.", sources=["a.pdf"], page_title="Paper A", page_type="paper",
                 page_fields={"authors": ["Ann Smith", "Bo Li", "Cy Wu"], "year": 2017}),
        Decision(action="create", page="papers/paper-a-results.md", title="Results", description="A's results",
                 body="R. [[papers/paper-a]]", sources=["a.pdf"], page_title="Results (Paper A)",
                 page_type="result", page_fields={"paper": "papers/paper-a.md"}),
        Decision(action="create", page="attention.md", title="Attention", description="Attention: Weighting inputs by relevance",
                 body="Attn. [[papers/paper-a]]", sources=["a.pdf"], page_title="Attention", page_type="method"),
    ]))
    _write(wiki, WritePlan(paper="b.pdf", writer="extractive", decisions=[
        Decision(action="create", page="bleu.md", title="BLEU", description="A translation metric",
                 body="B. [[attention]]", sources=["b.pdf"], page_title="BLEU", page_type="concept"),
    ]))
    text = (wiki / "index.md").read_text(encoding="utf-8")
    head, _, _ = text.partition(SECTION_MAP_HEADING)
    assert "# Papers (1)" in head and "# Topics (2)" in head
    assert "- [[papers/paper-a|Paper A]] — Smith et al., 2017" in head
    assert "its results, setup and data: [[papers/paper-a-results|Results]]" in head
    assert "topics: [[attention|Attention]]" in head
    assert "**Methods**" in head and "- [[attention|Attention]] — Weighting inputs by relevance" in head
    assert "- [[bleu|BLEU]] — A translation metric" in head
    # the section map is the writer's, as before: every section, parsed back
    md = read_index_md(wiki)
    assert set(md.entries) == set(read_index_json(wiki)) and len(md.entries) == 4
    assert not md.problems
    report = lint_wiki(wiki, today=TODAY)
    assert not [f for f in report.findings if f.rule.startswith(("index", "section-not"))], report.findings
