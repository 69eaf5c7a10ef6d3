"""The offline writer's topic shaping (compile/topics.py): which of a paper's topic sections
get a top-level page, which fold into their parent's page, and when two papers' sections share
the specific evidence that makes them one topic (issue 35)."""

from __future__ import annotations

from episteme.compile.topics import TopicItem, fold_groups, keep_top_level, shared_evidence


def _generic(title: str) -> bool:
    return title in ("Design", "Evaluation")


def test_small_subsections_fold_into_their_parent_topic_and_large_ones_keep_a_group():
    items = [
        TopicItem("3", "Chain Replication", 400),
        TopicItem("3.1", "Protocol Details", 120),      # small: joins 3
        TopicItem("3.1.1", "Head Failure", 60),         # small: joins 3 (through 3.1's group)
        TopicItem("3.2", "Reconfiguration", 900),       # large: a group of its own
        TopicItem("4.1", "Client Library", 50),         # its parent "4" is no topic here
        TopicItem("5", "Design", 300),                  # a generic heading: never a parent
        TopicItem("5.1", "Placement", 80),
        TopicItem(None, "Unnumbered", 30),
    ]
    groups = fold_groups(items, _generic, fold_words=200)
    assert [g.members for g in groups] == [(0, 1, 2), (3,), (4,), (5,), (6,), (7,)]
    assert groups[0].title == "Chain Replication" and groups[0].head == 0


def test_only_the_largest_new_groups_stay_top_level_and_merges_cost_nothing():
    items = [TopicItem(str(i), f"T{i}", w) for i, w in enumerate([100, 500, 300, 800, 50])]
    groups = fold_groups(items, _generic)
    merged = [False, False, False, False, True]
    keep = keep_top_level(groups, items, merged, limit=2)
    assert keep == [False, True, False, True, True]
    # ties go to the earlier group
    same = [TopicItem(str(i), f"T{i}", 100) for i in range(4)]
    assert keep_top_level(fold_groups(same, _generic), same, [False] * 4, limit=2) == [True, True, False, False]


def test_merge_evidence_is_a_specific_term_both_titles_name():
    a = ("Multi-Head Attention", "Multi-head attention allows the model to attend to information from "
         "different subspaces. We use multi-head attention with h = 8 heads in the Transformer.")
    b = ("Multihead Self-Attention", "The Transformer encoder applies multi-head self-attention to the "
         "patch embeddings; multi-head attention runs k self-attention operations in parallel.")
    assert "multi-head" in shared_evidence(*a, *b)
    # the same field's vocabulary, and a name that no title carries, are no evidence
    c = ("Training Procedure", "We train the Transformer with Adam and a learning rate warmup; the "
         "model is trained on eight GPUs for three days.")
    assert shared_evidence(*a, *c) == []
    d = ("Optimizer Settings", "Adam is used with a learning rate warmup, as in the Transformer.")
    assert shared_evidence(*c, *d) == []


def test_a_paragraph_names_its_paper_by_authors_and_year():
    from episteme.compile.topics import attribution

    assert attribution(["Ashish Vaswani", "Noam Shazeer", "Niki Parmar"], 2017) == "Vaswani et al., 2017"
    assert attribution(["Armando Fox", "Eric A. Brewer"], "1999") == "Fox and Brewer, 1999"
    assert attribution(["Leslie Lamport"]) == "Lamport"
    assert attribution([], 2017) == "" and attribution(["  "], 2017) == ""


def test_a_heading_that_names_no_topic_never_gets_a_top_level_page():
    items = [TopicItem(None, "Untitled", 5000), TopicItem("2", "Paxos", 100)]
    groups = fold_groups(items, _generic)
    assert keep_top_level(groups, items, [False, False], limit=1, eligible=[False, True]) == [False, True]


def test_a_first_paper_with_only_framing_sections_is_no_orphan(tmp_path):
    """A paper whose every section frames it (Introduction, Discussion, Conclusion) written
    first into an empty wiki: its page has no topic and no wiki page to link to, so its longest
    section becomes a page under it; the written wiki lints clean (it was a page-orphan error
    on the library benchmark, issue 35)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from pdfgen import Paper, Section, make_paper_pdf

    text = ("Harbour records are long and the stations that keep them change their instruments "
            "over the decades, so every comparison first has to align the records. ")
    paper = Paper(title="Notes on Harbour Records", authors=["Mira Okafor"], affiliations=["Portsmouth"],
                  abstract="We discuss harbour records. " + text,
                  sections=[Section("1", "Introduction", [text * 4]), Section("2", "Discussion", [text * 6]),
                            Section("3", "Conclusion", [text * 2])])
    pdf = make_paper_pdf(tmp_path / "notes.pdf", paper)
    repo = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIKI_", "SQLITE_", "CHROMA_"))}
    env["PYTHONPATH"] = str(repo / "plugin")
    wiki = tmp_path / "wiki"

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "episteme.cli", *args], capture_output=True, text=True,
                              env=env, timeout=600)

    p = cli("ingest", str(pdf), "--wiki", str(wiki), "--write", "--writer", "extractive", "--no-progress")
    assert p.returncode == 0, p.stderr
    under = sorted(r.relative_to(wiki).as_posix() for r in (wiki / "papers").glob("notes-on-harbour-records-*.md"))
    assert under == ["papers/notes-on-harbour-records-discussion.md"], under
    assert "[[papers/notes-on-harbour-records-discussion|" in (wiki / "papers/notes-on-harbour-records.md").read_text(
        encoding="utf-8")
    lint = json.loads(cli("lint", "--wiki", str(wiki), "--format", "json").stdout)
    assert lint["summary"]["errors"] == 0, [f for f in lint["findings"] if f["severity"] == "error"]


def test_a_definitions_heading_only_organises_the_paper():
    from episteme.compile.topics import organising_heading

    assert organising_heading("Definitions") and organising_heading("Untitled")
    assert not organising_heading("Definitions of Consistency") and not organising_heading("Paxos")
