"""Reference lists read into entries, and citations between ingested papers (issue 35).

The unit tests use reference lists written for them (no paper's text); the end-to-end test
ingests a paper into the shared Attention + GAN wiki and checks that the Transformer paper's
reference to it becomes a link the next time ``episteme citations`` runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.pdf.references import fold, parse_references, split_entries
from episteme.query.citations import build_graph

NUMBERED = """[1] Ada Lovelace and Charles Babbage. Notes on an analytical engine. In Proc. of the
Royal Society, pages 1–20, 1843. [2] Alan M. Turing. On computable numbers, with an application to
the Entscheidungsproblem. Proceedings of the London Mathematical Society, 2(42):230–265, 1936.
[3] Grace Hopper, Jean E. Sammet, and John W. Backus. Compilers for business data processing
[3] revisited. arXiv preprint arXiv:1901.01234, 2019.
"""

AUTHOR_YEAR = (
    "Kurt Goedel and Emmy Noether. 2011. Structures of proof in modern algebra. In Proceedings of "
    "the Annual Meeting, pages 10–20. Claude Shannon, Warren Weaver, and Norbert Wiener. 2015. A "
    "mathematical theory of signalling channels. Journal of Signals, 7:1–9.\n"
    "John von Neumann. 2018. Self-reproducing automata at scale. In ICLR.\n"
)

APA = ("Hopper, G., Lovelace, A., and Turing, A. (2014). Sequence models for ledger "
       "reconciliation. In Workshop on Accounts, pages 3–9.\n"
       "Babbage, C. (2009). Difference engines revisited. Now Publishers.\n")

IEEE = ('[1] A. Lovelace and C. Babbage, “Engines that weave algebraic patterns,” in CCS’10.\n'
        '[2] G. Hopper, “Debugging moths in relays,” 2001, http://example.org/moth.\n'
        '[3] A. Turing, “Morphogenesis of stripes,” in Proc. ICML, 2003.\n')

VANCOUVER = ("1. Lovelace A, Babbage C. Weaving numbers on punched cards. Ann Eng. 1843; 12: 1–9.\n"
             "2. Turing AM, Hopper G, Wiener N. Machines that learn to count sheep. Nat Mach. "
             "1950; 3: 33–44. 3. Shannon CE. Noise in channels. Bell J. 1948; 27: 379–423.\n")


def _titles(text: str) -> list[tuple[str | None, int | None]]:
    return [(r.title, r.year) for r in parse_references(text)]


def test_numbered_entries_follow_the_count_and_read_title_and_year():
    refs = parse_references(NUMBERED)
    assert [r.number for r in refs] == ["1", "2", "3"]  # the "[3]" inside entry 3 cuts nothing
    assert refs[0].title == "Notes on an analytical engine" and refs[0].year == 1843
    assert refs[1].authors == ["Alan M. Turing"] and refs[1].year == 1936
    assert refs[2].arxiv == "1901.01234" and refs[2].year == 2019


def test_author_year_entries_joined_on_one_line_are_cut_apart():
    assert _titles(AUTHOR_YEAR) == [
        ("Structures of proof in modern algebra", 2011),
        ("A mathematical theory of signalling channels", 2015),
        ("Self-reproducing automata at scale", 2018),
    ]
    refs = parse_references(AUTHOR_YEAR)
    assert refs[1].authors == ["Claude Shannon", "Warren Weaver", "Norbert Wiener"]


def test_apa_ieee_and_vancouver_forms():
    assert _titles(APA) == [("Sequence models for ledger reconciliation", 2014),
                            ("Difference engines revisited", 2009)]
    assert parse_references(APA)[0].authors[0] == "G. Hopper"
    assert _titles(IEEE) == [("Engines that weave algebraic patterns", 2010),
                             ("Debugging moths in relays", 2001),
                             ("Morphogenesis of stripes", 2003)]
    assert _titles(VANCOUVER) == [("Weaving numbers on punched cards", 1843),
                                  ("Machines that learn to count sheep", 1950),
                                  ("Noise in channels", 1948)]
    assert parse_references(VANCOUVER)[1].authors == ["Turing AM", "Hopper G", "Wiener N"]


def test_fold_ignores_case_accents_hyphens_and_spacing():
    assert fold("Pre-training of Deep  Nets") == fold("pretraining of deep nets")
    assert fold("Rocktäschel") == fold("Rocktaschel")
    assert split_entries("") == []


def _paper(pid: str, title: str, authors: list[str], year: int | None = None, **meta) -> dict:
    return {"id": pid, "title": title, "authors": authors, "meta": {"year": year, **meta}}


def _refs(text: str) -> list[dict]:
    return [{"kind": "references", "section_text": text}]


def test_links_by_title_by_id_and_never_by_author_and_year_alone():
    papers = [
        _paper("engine.pdf", "Engines that weave algebraic patterns", ["Ada Lovelace"], 2010),
        _paper("moth.pdf", "Relay Moths", ["Grace Hopper"], 2001),  # a short title
        _paper("stripes.pdf", "Morphogenesis of Stripes and Spots", ["Alan Turing"], 2003),
        _paper("ledger.pdf", "Ledger machines", ["Charles Babbage"], 2019, arxiv_id="1901.01234"),
        _paper("citing.pdf", "A survey", ["Norbert Wiener"], 2020),
    ]
    citing = _refs(IEEE + "[4] G. Hopper, “Relay moths,” in Proc. Bugs, 2001.\n"
                   "[5] C. Babbage, “Compilers,” arXiv:1901.01234v2, 2019.\n")
    graph = build_graph(papers, {"citing.pdf": citing, "engine.pdf": [], "moth.pdf": [],
                                 "stripes.pdf": [], "ledger.pdf": []})
    got = {(lk.cited, lk.how) for lk in graph.links}
    assert ("engine.pdf", "title") in got
    assert ("moth.pdf", "title+author+year") in got
    assert ("ledger.pdf", "arxiv") in got
    # "Morphogenesis of stripes" is a prefix of the stored title, not the title: no link
    assert not any(c == "stripes.pdf" for c, _ in got)
    assert graph.papers["engine.pdf"].cited_by == ["citing.pdf"]
    assert graph.papers["citing.pdf"].cites == ["engine.pdf", "ledger.pdf", "moth.pdf"]
    assert graph.most_cited()[0]["cited_by"] == 1
    # the same author and year without the title is another paper of that author
    other = build_graph(papers[:2] + papers[4:], {"citing.pdf": _refs(
        "[1] G. Hopper, “Relay logic in practice,” in Proc. Bugs, 2001.\n[2] x y, “z w,” 2002.\n"
        "[3] a b, “c d,” 2003.\n")})
    assert other.links == []


@pytest.mark.slow
def test_citations_command_links_a_paper_ingested_later(ingested_wiki: Path, papers_dir: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_"))}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "episteme.cli", *args, "--wiki",
                               str(ingested_wiki)], capture_output=True, text=True, env=env,
                              timeout=600)

    before = json.loads(run("citations").stdout)
    att = next(p for p in before["papers"] if p["paper"].startswith("attention"))
    assert att["references"] >= 35 and att["cites"] == [] and before["links"] == []
    assert run("ingest", str(papers_dir / "bahdanau_1409.0473v7.pdf"), "--no-progress").returncode == 0
    after = json.loads(run("citations").stdout)
    assert {(lk["citing"], lk["cited"], lk["how"]) for lk in after["links"]} == {
        ("attention_1706.03762v5.pdf", "bahdanau_1409.0473v7.pdf", "arxiv")}
    bah = next(p for p in after["papers"] if p["paper"].startswith("bahdanau"))
    assert bah["cited_by"] == ["attention_1706.03762v5.pdf"]
    text = run("citations", "--paper", "attention_1706.03762v5.pdf", "--references",
               "--format", "text").stdout
    assert "cites:    bahdanau_1409.0473v7.pdf" in text
    assert "Layer normalization (2016) arXiv:1607.06450" in text  # the reading list, with its id
    missing = run("citations", "--paper", "nope.pdf")
    assert missing.returncode == 1 and "no ingested paper" in missing.stderr


@pytest.mark.slow
def test_written_paper_pages_link_their_citations(ingested_wiki: Path, papers_dir: Path):
    """ingest --write puts the citations into the paper pages, both ways, as links the graph
    follows; lint stays clean and a second run rewrites nothing."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_", "ANTHROPIC_", "LLM_"))}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "episteme.cli", *args, "--wiki",
                               str(ingested_wiki)], capture_output=True, text=True, env=env,
                              timeout=900)

    first = run("ingest", str(papers_dir / "bahdanau_1409.0473v7.pdf"), "--write", "--no-progress")
    assert first.returncode == 0, first.stderr
    second = run("ingest", str(ingested_wiki / "raw" / "attention_1706.03762v5.pdf"), "--write",
                 "--no-progress")
    assert second.returncode == 0, second.stderr
    from episteme.compile.citelinks import paper_pages

    pages = paper_pages(ingested_wiki)
    att = (ingested_wiki / pages["attention_1706.03762v5.pdf"]).read_text(encoding="utf-8")
    bah = (ingested_wiki / pages["bahdanau_1409.0473v7.pdf"]).read_text(encoding="utf-8")
    bah_link = "[[" + pages["bahdanau_1409.0473v7.pdf"][:-3] + "|"
    att_link = "[[" + pages["attention_1706.03762v5.pdf"][:-3] + "|"
    assert "## Citations" in att and "**Cites (in this wiki):** " + bah_link in att
    assert "**Cited by (in this wiki):** " + att_link in bah
    assert "- **Reference:** Layer normalization (2016; arXiv:1607.06450)" in att
    assert "cites:\n- bahdanau_1409.0473v7.pdf" in att and "cited_by:\n- attention_1706.03762v5.pdf" in bah
    seed = pages["attention_1706.03762v5.pdf"][:-3]
    nb = json.loads(run("graph", "--mode", "neighbors", "--seed", seed, "--depth", "1").stdout)
    assert pages["bahdanau_1409.0473v7.pdf"][:-3] in json.dumps(nb)
    lint = json.loads(run("lint", "--format", "json", "--claims").stdout)
    assert lint["summary"]["errors"] == 0
    assert not [f for f in lint["findings"] if "Citations" in json.dumps(f)
                and f["rule"].startswith("claim-")]
    again = json.loads(run("citations", "--write").stdout)
    assert again["written"] == {"updated": [], "created": [], "pages": []}
