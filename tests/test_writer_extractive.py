"""The offline (extractive) wiki writer on real papers: Attention, then BERT, through the real
``episteme ingest --write`` command, real SQLite/Chroma and the real embedding model.

The expensive part (ingest both papers, write Attention, write BERT) is built once into a cache
folder keyed by the papers and the package source (as ``ingested_wiki.py`` does), under a file
lock shared by pytest-xdist workers; tests copy the stage they need before touching it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from episteme.config import load_settings
from episteme.wiki.edit import (
    check_index_consistency,
    iter_page_paths,
    pending_write,
    rebuild_indexes,
)
from episteme.wiki.index import read_index_json, read_index_md, read_log
from episteme.wiki.sections import parse_page, split_frontmatter
from ingested_wiki import _cache_key, cache_root, cached_build

REPO = Path(__file__).resolve().parent.parent
ATTENTION = "attention_1706.03762v5.pdf"
BERT = "bert_1810.04805v2.pdf"
DATE = "2026-11-29"
ATT_PAGE = "papers/attention-is-all-you-need.md"
BERT_PAGE = "papers/bert-pre-training-of-deep-bidirectional-transformers-for-language-understanding.md"
BERT_LINK = "[[papers/bert-pre-training-of-deep-bidirectional-transformers-for-language-understanding|BERT]]"


def _env() -> dict[str, str]:
    drop = ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT", "EMBEDDING_MODEL")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = str(REPO / "plugin")
    return env


def _cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "episteme.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=_env(), cwd=str(REPO))


@pytest.fixture(scope="session")
def writer_stages(papers_dir: Path) -> Path:
    """``<cache>/stores`` (both papers ingested, no pages), ``after_attention`` (Attention
    written), ``after_bert`` (then BERT written), and the JSON each ``ingest --write`` printed."""
    import hashlib

    papers = [papers_dir / ATTENTION, papers_dir / BERT]
    # the stages are the writer's output too: a changed writer (or schema) must rebuild them
    h = hashlib.sha256()
    pkg = REPO / "plugin" / "episteme"
    for src in sorted([*(pkg / "compile").glob("*.py"), pkg / "wiki" / "edit.py", pkg / "data" / "SCHEMA.md"]):
        h.update(src.read_bytes())
    name = f"writer-{_cache_key(papers)}-{h.hexdigest()[:8]}"
    with cached_build(name, "done") as build:
        if build is not None:
            wiki = build / "wiki"
            p = _cli("ingest", *map(str, papers), "--wiki", str(wiki), "--no-progress")
            assert p.returncode == 0, p.stderr
            shutil.copytree(wiki, build / "stores")
            for paper, stage in ((papers[0], "after_attention"), (papers[1], "after_bert")):
                p = _cli("ingest", str(paper), "--wiki", str(wiki), "--no-progress", "--write",
                         "--writer", "extractive", "--date", DATE)
                assert p.returncode == 0, p.stderr
                (build / f"{stage}.json").write_text(p.stdout, encoding="utf-8")
                shutil.copytree(wiki, build / stage)
            shutil.rmtree(wiki)
            (build / "done").write_text("ok\n", encoding="utf-8")
    return cache_root() / name


def _copy(stages: Path, stage: str, tmp_path: Path) -> Path:
    dest = tmp_path / "wiki"
    shutil.copytree(stages / stage, dest)
    return dest


def _load(stages: Path, stage: str) -> dict:
    return json.loads((stages / f"{stage}.json").read_text(encoding="utf-8"))


def _snapshot(wiki: Path) -> dict[str, bytes]:
    """Every page plus index.md, index.json and log.md, byte for byte."""
    files = {rel: (wiki / rel).read_bytes() for rel in iter_page_paths(wiki)}
    for name in ("index.md", "index.json", "log.md"):
        if (wiki / name).exists():
            files[name] = (wiki / name).read_bytes()
    return files


def _frontmatter(path: Path) -> dict:
    fm, _, _ = split_frontmatter(path.read_text(encoding="utf-8"))
    return yaml.safe_load(fm)


# ------------------------------------------------------------------------------------ tests


def test_ingest_write_prints_the_seed_keys_and_second_paper_updates_first(writer_stages):
    att, bert = _load(writer_stages, "after_attention"), _load(writer_stages, "after_bert")
    for out, paper in ((att, ATTENTION), (bert, BERT)):
        assert {"status", "paper", "sections_indexed", "wiki_pages_updated", "new_sections"} <= set(out)
        assert out["paper"] == paper and out["writer"] == "extractive" and out["write_status"] == "written"
        assert out["sections_indexed"] > 20 and out["new_sections"]
        assert "llm_usage" not in out
    assert att["updated_sections"] == []
    assert ATT_PAGE in att["wiki_pages_updated"] and "model-architecture.md" in att["new_pages"]
    # BERT merges only into Attention's topics, never into its result / setup pages (which
    # took the one merge an older writer made: both papers' "training data" setup sections);
    # the merge itself: test_a_topic_above_the_merge_threshold_joins_the_existing_section
    assert set(bert["updated_sections"]) <= set(att["new_sections"])
    assert not set(bert["new_sections"]) & set(att["new_sections"])
    wiki = writer_stages / "after_bert"
    ijson, imd = read_index_json(wiki), read_index_md(wiki)
    for sid in bert["updated_sections"]:
        assert not imd.entries[sid].page.startswith("papers/")
        assert ijson[sid] == [ATTENTION, BERT]
        assert imd.entries[sid].sources == [ATTENTION, BERT]
        page = wiki / imd.entries[sid].page
        body = next(s for s in parse_page(page.read_text(encoding="utf-8")).sections if s.id == sid).body
        assert "From [[papers/attention-is-all-you-need|" in body and f"From {BERT_LINK}" in body
        assert _frontmatter(page)["sources"] == [ATTENTION, BERT]
    # skipped: references, front matter and stubs, with a reason each
    reasons = {s["paper_section"]: s["reason"] for s in att["skipped_sections"]}
    assert reasons[f"{ATTENTION}#references"] == "references section"
    assert reasons[f"{ATTENTION}#6"].startswith("too short")


def test_indexes_pages_and_log_agree(writer_stages):
    for stage in ("after_attention", "after_bert"):
        wiki = writer_stages / stage
        assert check_index_consistency(wiki) == [], stage
        assert pending_write(wiki) is None
    wiki = writer_stages / "after_bert"
    everything, problems = read_log(wiki)
    assert problems == []
    # each paper's write is one "ingest" entry; the Citations sections written after it, "citations"
    assert {e.op for e in everything} <= {"ingest", "citations"}
    entries = [e for e in everything if e.op == "ingest"]
    assert [(e.op, e.subject, e.date) for e in entries] == [("ingest", ATTENTION, DATE), ("ingest", BERT, DATE)]
    bert = _load(writer_stages, "after_bert")
    assert entries[1].items["created"] == bert["new_sections"]
    assert entries[1].items.get("updated", []) == bert["updated_sections"]
    assert entries[1].pages == bert["wiki_pages_updated"]


def test_pages_have_graph_frontmatter_titles_and_tags(writer_stages):
    wiki = writer_stages / "after_bert"
    fm = _frontmatter(wiki / ATT_PAGE)
    assert fm["title"] == "Attention Is All You Need" and fm["type"] == "paper"
    assert fm["sources"] == [ATTENTION] and str(fm["ingested_at"]) == DATE and str(fm["created"]) == DATE
    assert "Ashish Vaswani" in fm["authors"] and fm["tags"]
    # the Transformer's subsections are sections of its "Model Architecture" page (issue 35:
    # fewer, broader topic pages), each under its own heading
    mha = _frontmatter(wiki / "model-architecture.md")
    assert mha["title"] == "Model Architecture" and mha["type"] == "method"  # a mechanism
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", t) for t in mha["tags"]) and mha["tags"]
    text = (wiki / "model-architecture.md").read_text(encoding="utf-8")
    assert "[[papers/attention-is-all-you-need|Attention Is All You Need]] (Vaswani et al., 2017)" in text
    assert "§3.2.2 Multi-Head Attention" in text
    assert "Multi-Head Attention" in [s.title for s in parse_page(text).sections]
    paper_text = (wiki / ATT_PAGE).read_text(encoding="utf-8")
    assert "[[model-architecture|Model Architecture]]" in paper_text  # the paper lists its topics
    for rel in iter_page_paths(wiki):
        assert rel.startswith("papers/") or "/" not in rel
        assert re.fullmatch(r"(papers/)?[a-z0-9]+(-[a-z0-9]+)*\.md", rel), rel


def test_every_quote_is_the_papers_own_text(writer_stages):
    """Nothing invented: every quoted sentence occurs verbatim (whitespace aside) in the paper
    the section cites, inside the section the text says it came from."""
    from episteme.stores.sqlite import open_store

    wiki = writer_stages / "after_bert"
    settings = load_settings(wiki, env={}, dotenv=None)
    with open_store(settings, readonly=True) as store:
        texts = {p: " ".join(" ".join(s["section_text"] for s in store.sections(p)).split())
                 for p in (ATTENTION, BERT)}
    quotes = 0
    for rel in iter_page_paths(wiki):
        for sec in parse_page((wiki / rel).read_text(encoding="utf-8")).sections:
            for line in sec.body.split("\n"):
                m = re.match(r"^> (.+)$", line) or re.match(r"^- “(.+)” \(", line)
                if not m:
                    continue
                quotes += 1
                assert any(m.group(1) in texts[p] for p in sec.sources), (rel, m.group(1))
    assert quotes > 100


def test_graph_query_connects_the_two_papers(writer_stages):
    wiki = writer_stages / "after_bert"
    proc = subprocess.run(
        [sys.executable, str(REPO / "plugin/scripts/graph_query.py"), "--wiki", str(wiki), "--mode",
         "shortest-path", "--src", ATT_PAGE, "--dst", BERT_PAGE],
        capture_output=True, text=True, timeout=120, env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["paths"] and out["length"] <= 3
    path = out["paths"][0]
    assert path[0] == ATT_PAGE and path[-1] == BERT_PAGE
    # BERT cites the Transformer paper: its Citations section links the two paper pages directly
    assert len(path) == 2
    bert_text = (wiki / BERT_PAGE).read_text(encoding="utf-8")
    assert "## Citations" in bert_text and "**Cites (in this wiki):** [[" in bert_text


def test_same_input_gives_a_byte_identical_wiki(writer_stages, tmp_path, embedder):
    from episteme.compile.writer import write_paper

    wiki = _copy(writer_stages, "stores", tmp_path)
    settings = load_settings(wiki, env={}, dotenv=None)
    out = write_paper(settings, ATTENTION, writer="extractive", today=dt.date.fromisoformat(DATE), embedder=embedder)
    assert out["new_sections"] == _load(writer_stages, "after_attention")["new_sections"]
    assert _snapshot(wiki) == _snapshot(writer_stages / "after_attention")
    # writing the same paper again is refused rather than duplicated
    again = write_paper(settings, ATTENTION, writer="extractive", today=dt.date.fromisoformat(DATE), embedder=embedder)
    assert again["write_status"] == "already-written" and again["new_sections"] == []
    assert _snapshot(wiki) == _snapshot(writer_stages / "after_attention")


def test_dry_run_plans_the_update_and_writes_nothing(writer_stages, tmp_path, embedder):
    from episteme.compile.writer import write_paper

    wiki = _copy(writer_stages, "after_attention", tmp_path)
    before = _snapshot(wiki)
    settings = load_settings(wiki, env={}, dotenv=None)
    out = write_paper(settings, BERT, writer="extractive", dry_run=True, embedder=embedder,
                      today=dt.date.fromisoformat(DATE))
    assert out["dry_run"] is True and out["new_sections"] == []
    assert _snapshot(wiki) == before
    updates = [d for d in out["plan"] if d["action"] == "update"]
    assert sorted(d["section_id"] for d in updates) == sorted(_load(writer_stages, "after_bert")["updated_sections"])
    assert all(d["reason"].startswith("merged:") and BERT in d["sources"] for d in updates)
    creates = [d for d in out["plan"] if d["action"] == "create"]
    assert creates[0]["page"] == BERT_PAGE and creates[0]["page_type"] == "paper"


_KILLER = r'''
import os, random, signal, sys, datetime
import episteme.fsutil as fsutil, episteme.wiki.edit as ww, episteme.wiki.index as wi
from episteme.config import load_settings
from episteme.compile.writer import apply_plan
from episteme.compile.extractive import plan_extractive
wiki, paper, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
settings = load_settings(wiki, env={}, dotenv=None)
plan = plan_extractive(settings, paper, today=datetime.date(2026, 11, 29))
kill_at = random.Random(seed).randint(1, 3 * len(plan.decisions))
calls = [0]
def counting(real):
    def wrapped(*a, **k):
        calls[0] += 1
        if calls[0] >= kill_at:
            print(f"killing at write {calls[0]}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **k)
    return wrapped
ww.atomic_write_text = counting(ww.atomic_write_text)
wi.atomic_write_text = counting(wi.atomic_write_text)
wi.append_text = counting(wi.append_text)
apply_plan(wiki, plan, today=datetime.date(2026, 11, 29))
print("finished", flush=True)
'''


def test_sigkill_during_a_write_is_repaired_by_rebuild(writer_stages, tmp_path):
    wiki = _copy(writer_stages, "after_attention", tmp_path)
    seed = random.randrange(1 << 30)
    proc = subprocess.run([sys.executable, "-c", _KILLER, str(wiki), BERT, str(seed)],
                          capture_output=True, text=True, timeout=600, env=_env())
    assert proc.returncode == -signal.SIGKILL, (seed, proc.stdout, proc.stderr[-2000:])
    assert "killing at write" in proc.stdout
    # pages are never torn: each parses, and Attention's sections are all still there
    for rel in iter_page_paths(wiki):
        parse_page((wiki / rel).read_text(encoding="utf-8"), strict=True)
    assert pending_write(wiki) is not None  # the interrupted write is detectable
    # `episteme lint --fix` restores index.md / index.json from the pages
    p = _cli("lint", "--wiki", str(wiki), "--fix")
    assert "Traceback" not in p.stderr and p.returncode in (0, 1), p.stderr
    assert check_index_consistency(wiki) == [], seed
    assert pending_write(wiki) is None
    assert rebuild_indexes(wiki)["changed"] is False  # nothing left to repair
    ids = set(read_index_json(wiki))
    assert set(_load(writer_stages, "after_attention")["new_sections"]) <= ids


#: words the old plan gave as "shared terms" (issue 34): common words, no evidence of a topic
GENERIC_WORDS = frozenset({"account", "call", "past", "step", "steps", "time", "training", "input",
                           "output", "layer", "layers", "model", "data", "large", "performance"})


def test_plan_lists_related_sections_for_the_agent(writer_stages, tmp_path):
    """The plan is an outline first (no section text), each related section with the specific
    terms both share; ``--section`` gives the text of the sections named."""
    wiki = _copy(writer_stages, "after_attention", tmp_path)
    proc = subprocess.run(
        [sys.executable, str(REPO / "plugin/scripts/plan_ingest.py"), BERT, "--wiki", str(wiki), "--k", "4"],
        capture_output=True, text=True, timeout=300, env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["paper"] == BERT and plan["paper_page"] == BERT_PAGE and plan["already_written"] is False
    assert plan["year"] == 2018 and plan["authors"][0] == "Jacob Devlin"
    assert plan["wiki_sections"] == len(read_index_json(wiki))
    by_name = {s["name"]: s for s in plan["sections"]}
    assert "references" not in by_name and any(x.startswith("references") for x in plan["skipped"])
    existing = set(read_index_json(wiki))
    for s in plan["sections"]:
        assert "text" not in s and s["gist"] and len(s["gist"]) <= 160
        assert len(s["related"]) <= 4 and {r["id"] for r in s["related"]} <= existing
        for r in s["related"]:  # evidence: names and phrases, never a lone common word
            assert r["evidence"] and not set(r["evidence"]) & GENERIC_WORDS, r
    assert any(r["evidence"] for s in plan["sections"] for r in s["related"])
    assert by_name["3.1"]["suggested_page"] == "pre-training-bert.md"
    assert by_name["1"]["suggested_page"] == BERT_PAGE  # generic sections: the paper's page
    assert len(proc.stdout) < sum(s["chars"] for s in plan["sections"])  # smaller than the text
    # one section with its full text
    proc = subprocess.run(
        [sys.executable, str(REPO / "plugin/scripts/plan_ingest.py"), BERT, "--wiki", str(wiki), "--section", "3.1"],
        capture_output=True, text=True, timeout=300, env=_env(),
    )
    one = json.loads(proc.stdout)
    assert [s["name"] for s in one["sections"]] == ["3.1"]
    assert set(one["sections"][0]) == {"name", "pages", "text"}  # what the outline did not say
    assert "masked" in one["sections"][0]["text"].lower()


def test_agent_flow_write_section_then_consistent(writer_stages, tmp_path):
    """The skill's write step: write_section.py with the body on stdin, sources checked."""
    wiki = _copy(writer_stages, "after_attention", tmp_path)
    mha = read_index_md(wiki).entries
    sid = next(s for s, e in mha.items() if e.page == "model-architecture.md" and e.description.startswith("Multi-Head Attention:"))
    body = f"BERT uses the same multi-head self-attention in every encoder layer. {BERT_LINK}\n"
    p = subprocess.run(
        [sys.executable, str(REPO / "plugin/scripts/write_section.py"), "--wiki", str(wiki),
         "--page", "model-architecture", "--section-id", sid, "--source", BERT,
         "--op", "ingest", "--subject", BERT],
        input=body, capture_output=True, text=True, timeout=120, env=_env(),
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["status"] == "updated"
    assert read_index_json(wiki)[sid] == [ATTENTION, BERT]
    assert check_index_consistency(wiki) == []
    bad = subprocess.run(
        [sys.executable, str(REPO / "plugin/scripts/write_section.py"), "--wiki", str(wiki),
         "--page", "../outside", "--title", "X", "--description", "x", "--source", BERT],
        input=body, capture_output=True, text=True, timeout=120, env=_env(),
    )
    assert bad.returncode == 2 and "escapes" in bad.stderr
    assert not (tmp_path / "outside.md").exists()


def test_keyphrases_and_sentences_are_deterministic_and_clean():
    from episteme.compile.sentences import candidate_sentences
    from episteme.compile.tags import keyphrases

    text = ("Multi-head attention allows the model to jointly attend to information. "
            "Figure 3: attention heads in layer 5 of 6 are shown here in colour. "
            "Multi-head attention uses several attention heads. Attention heads see subspaces of keys. "
            "x = y + z. See https://example.org for the code we release today for everyone. "
            "Each of the attention heads projects the queries, keys and values linearly.")
    sents = candidate_sentences(text)
    assert sents[0].startswith("Multi-head attention allows")
    assert not any("Figure" in s or "https" in s or s.startswith("x =") for s in sents)
    assert len(sents) == 2  # the short ones (< 8 words) are not quotable either
    # "attention heads" 4x beats "multi-head attention" 2x; "attention" alone is inside both
    assert keyphrases(text, 3) == ["attention-heads", "multi-head-attention"]


def test_cli_flags_need_write(tmp_path):
    p = _cli("ingest", str(tmp_path / "x.pdf"), "--wiki", str(tmp_path / "w"), "--dry-run")
    assert p.returncode == 2 and "need --write" in p.stderr
    p = _cli("ingest", str(tmp_path / "x.pdf"), "--wiki", str(tmp_path / "w"), "--write", "--writer", "nope")
    assert p.returncode == 2


def test_shipped_sample_paper_ingests_and_writes_end_to_end(tmp_path):
    """The README's main job on the PDF the project ships: no ../shared, no key, no agent."""
    wiki = tmp_path / "wiki"
    p = _cli("ingest", str(REPO / "examples/sample-paper.pdf"), "--wiki", str(wiki), "--write", "--no-progress")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "ingested" and out["writer"] == "extractive" and out["paper"] == "sample-paper.pdf"
    assert out["sections_indexed"] > 5 and len(out["new_sections"]) > 5
    assert out["wiki_pages_updated"][0].startswith("papers/") and len(out["wiki_pages_updated"]) > 3
    assert check_index_consistency(wiki) == []
    paper = _frontmatter(wiki / out["wiki_pages_updated"][0])
    assert paper["type"] == "paper" and paper["title"] == out["title"] and paper["authors"] == out["authors"]
    assert all(_frontmatter(wiki / rel)["tags"] for rel in out["wiki_pages_updated"][1:])
    lint = subprocess.run([sys.executable, str(REPO / "plugin/scripts/wiki_lint.py"), "--wiki", str(wiki),
                           "--format", "json"], capture_output=True, text=True, timeout=120, env=_env())
    assert lint.returncode == 0, lint.stdout[-2000:]
    findings = json.loads(lint.stdout)["findings"]
    assert not [f for f in findings if f.get("severity") in ("error", "warning")], findings


# ------------------------------------------------------------- roles: definitions, numbers, nesting


def _sections(wiki: Path, rel: str):
    return parse_page((wiki / rel).read_text(encoding="utf-8")).sections


def _quoted_under(body: str, heading: str) -> list[str]:
    """The ``> `` quotes of the paragraph group that follows ``heading`` (up to the next label)."""
    out, inside = [], False
    for line in body.split("\n"):
        if line == heading:
            inside = True
        elif inside and line.startswith("> "):
            out.append(line[2:])
        elif inside and line and not line.startswith("> "):
            break
    return out


def test_topic_sections_quote_definitions_results_and_key_numbers(writer_stages):
    """Beside the central sentences, topic sections carry labelled definitions (a sentence of
    definition form whose defined term is a key term of the section) and results / key numbers
    (each stating a quantity or an outcome); all quoted verbatim, and section length bounded."""
    import statistics

    from episteme.compile.roles import defined_term, is_result, quantities
    from episteme.compile.sentences import EXTRA_BUDGET

    wiki = writer_stages / "after_attention"
    defs, nums, lengths = [], [], []
    for rel in iter_page_paths(wiki):
        for sec in _sections(wiki, rel):
            quoted = [x[2:] for x in sec.body.split("\n") if x.startswith("> ")]
            lengths.append(sum(len(q.split()) for q in quoted))
            if rel != ATT_PAGE:
                # the writer's budget holds per paper section (one "From ..." paragraph each)
                assert lengths[-1] <= EXTRA_BUDGET + 3 * 70, (rel, lengths[-1])
            defs += _quoted_under(sec.body, "Definitions:")
            nums += _quoted_under(sec.body, "Results and key numbers:")
    assert len(nums) >= 10, nums  # (Attention's few definitions are among its central sentences)
    wiki2 = writer_stages / "after_bert"  # BERT defines more of its terms
    defs2 = [q for rel in iter_page_paths(wiki2) for sec in _sections(wiki2, rel)
             for q in _quoted_under(sec.body, "Definitions:")]
    assert len(defs2) >= 4, defs2
    defs += defs2
    assert all(defined_term(d) for d in defs), defs
    assert all(quantities(n) or is_result(n) for n in nums), nums
    # the big model's BLEU result reaches the wiki (a gold fact the central sentences missed)
    text = " ".join(" ".join((wiki / r).read_text(encoding="utf-8").split()) for r in iter_page_paths(wiki))
    assert "establishing a new state-of-the-art BLEU score of 28.4" in text
    assert statistics.median(lengths) <= 2 * EXTRA_BUDGET


def test_tables_list_their_key_rows_beside_the_caption(writer_stages):
    """A table's caption comes with the rows carrying the numbers the prose repeats or naming
    the paper's own system -- as stored in the table's text, so each traces to the object."""
    from episteme.stores.sqlite import open_store

    wiki = writer_stages / "after_attention"
    settings = load_settings(wiki, env={}, dotenv=None)
    with open_store(settings, readonly=True) as store:
        tables = {o["label"]: " ".join(o["text"].split()) for o in store.objects(ATTENTION) if o["kind"] == "table"}
    rows_seen = 0
    table2 = None
    for rel in iter_page_paths(wiki):
        for sec in _sections(wiki, rel):
            label, in_rows = None, False
            for line in sec.body.split("\n"):
                m = re.match(r"^- p\. \d+, \*\*(Table [\w.]+)\*\*: “.*”$", line)
                if m:
                    label, in_rows = m.group(1), False
                elif line == "  |---|":
                    in_rows = True  # the header line is above; the rows follow
                elif label and in_rows and line.startswith("  | ") and line.endswith(" |"):
                    row = line[4:-2]
                    assert row.rstrip("…") in tables[label], (label, row)
                    rows_seen += 1
                    if label == "Table 2":
                        table2 = (table2 or "") + "\n" + row
                else:
                    in_rows = False
    assert rows_seen >= 4
    assert table2 and "Transformer (big) 28.4 41.8" in table2  # the result the abstract states


def test_the_papers_own_experiments_are_pages_under_its_page(writer_stages):
    """Results, setup and data sections become ``papers/<paper>-<section>.md`` pages typed
    result / setup / dataset, naming their paper in ``paper:`` and listed on the paper page;
    the written wiki lints clean."""
    wiki = writer_stages / "after_bert"
    children = [r for r in iter_page_paths(wiki) if r.startswith("papers/attention-is-all-you-need-")]
    assert len(children) >= 3, children
    types = set()
    paper_text = (wiki / ATT_PAGE).read_text(encoding="utf-8")
    for rel in children:
        fm = _frontmatter(wiki / rel)
        assert fm["type"] in ("result", "setup", "dataset") and fm["paper"] == ATT_PAGE, (rel, fm)
        assert fm["sources"] == [ATTENTION]
        types.add(fm["type"])
        assert f"[[{rel[:-3]}|" in paper_text  # listed under "Experiments and results"
    assert {"result", "setup"} <= types
    mt = "papers/attention-is-all-you-need-machine-translation.md"
    assert mt in children and not (wiki / "machine-translation.md").exists()
    # topics stay top-level pages of their own
    assert _frontmatter(wiki / "model-architecture.md")["type"] in ("concept", "method")
    p = _cli("lint", "--wiki", str(wiki), "--format", "json")
    assert p.returncode == 0, p.stdout[-2000:]
    assert json.loads(p.stdout)["summary"]["errors"] == 0


def test_a_wiki_with_an_older_schema_gets_types_it_allows(writer_stages, tmp_path, embedder):
    """A wiki whose SCHEMA.md predates result/setup/dataset (and the ``paper`` field) is not
    given values its lint would reject: the plan falls back to the older types."""
    from episteme.compile.extractive import plan_extractive

    wiki = _copy(writer_stages, "stores", tmp_path)
    schema = (wiki / "SCHEMA.md").read_text(encoding="utf-8")
    old = schema.replace(", result, setup, dataset]", "]")
    old = "\n".join(x for x in old.split("\n") if not x.lstrip().startswith("paper:"))
    assert old != schema
    (wiki / "SCHEMA.md").write_text(old, encoding="utf-8")
    plan = plan_extractive(load_settings(wiki, env={}, dotenv=None), ATTENTION, embedder=embedder,
                           today=dt.date.fromisoformat(DATE))
    kids = [d for d in plan.decisions if d.page.startswith("papers/attention-is-all-you-need-") and d.page_type]
    assert kids and all(d.page_type in ("note", "entity") for d in kids)
    assert all("paper" not in d.page_fields for d in kids)


def test_sentence_roles_from_form_on_real_sentences(writer_stages):
    """The role tests on the stored paper's own sentences: definitions of a section's key terms
    (not any "X is a ..."), quantities without references, citations and years, and the
    parent-heading rule for experiment sections."""
    from episteme.compile.roles import (
        is_definition,
        key_words_of,
        paper_role,
        quantities,
    )
    from episteme.compile.sentences import candidate_sentences
    from episteme.stores.sqlite import open_store

    settings = load_settings(writer_stages / "stores", env={}, dotenv=None)
    with open_store(settings, readonly=True) as store:
        secs = {s["title"]: s for s in store.sections(ATTENTION)}
        bert = {s["title"]: s for s in store.sections(BERT)}
    bg = candidate_sentences(secs["Background"]["section_text"])
    self_att = next(s for s in bg if s.startswith("Self-attention, sometimes called intra-attention"))
    assert is_definition(self_att, key_words_of("Background", ["self-attention", "intra-attention"]))
    assert not is_definition(self_att, key_words_of("Background", ["convolution"]))
    assert quantities("Training took 3.5 days on 8 P100 GPUs, see Table 3 and Section 5.2 [12] (2017).") == ["3.5"]
    assert quantities("It reaches 95% precision on 8.1M papers") == ["95%", "8.1M"]
    # BERT's GLUE section (4.1) is an experiment of the paper: its parent heading says so
    glue = bert["GLUE"]
    assert glue["number"].startswith("4.")
    assert paper_role("GLUE", ["Experiments"], candidate_sentences(glue["section_text"])) == "result"
    mha = candidate_sentences(secs["Multi-Head Attention"]["section_text"])
    assert paper_role("Multi-Head Attention", ["Model Architecture", "Attention"], mha) is None


def test_topic_pages_are_typed_and_tagged_from_what_they_hold(writer_stages):
    """Page types from the content: the mechanisms of Attention's model are methods, its "Why
    Self-Attention" and BERT's related work (a parent heading of background prose) concepts,
    BERT's appendix title a note; the related-work section "Transfer Learning from Supervised
    Data" is a top-level concept, not a dataset page under the paper (its data noun follows a
    preposition).  Tags: at most three slugs per page, each named in its page's text, and one
    of the paper's topic words shared by several of its pages."""
    wiki = writer_stages / "after_bert"
    types = {rel: _frontmatter(wiki / rel)["type"] for rel in iter_page_paths(wiki)}
    assert types["model-architecture.md"] == "method"
    for rel in ("why-self-attention.md", "unsupervised-feature-based-approaches.md",
                "papers/bert-transfer-learning-from-supervised-data.md"):
        assert types[rel] == "concept", (rel, types[rel])
    assert types["papers/bert-appendix-for-bert-pre-training-of-deep-bidirectional-transformers-for-langu.md"] == "note"
    assert set(types.values()) >= {"paper", "method", "concept", "note", "result", "setup"}
    per_paper: dict[str, list[str]] = {}
    for rel in iter_page_paths(wiki):
        fm = _frontmatter(wiki / rel)
        if fm["type"] == "paper":
            continue
        assert 1 <= len(fm["tags"]) <= 3 * len(fm["sources"]), (rel, fm["tags"])
        text = " ".join(re.findall(r"[a-z0-9]+", (wiki / rel).read_text(encoding="utf-8").lower()))
        for tag in fm["tags"]:
            assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", tag), tag
            assert " ".join(tag.split("-")) in text, (rel, tag)
        for src in fm["sources"]:
            per_paper.setdefault(src, []).extend(fm["tags"])
    for src, tags in per_paper.items():  # (its subsections fold into fewer pages: two is "several")
        assert max(tags.count(t) for t in tags) >= 2, (src, tags)


def test_explanations_are_a_role_of_their_own(writer_stages):
    """Sentences that give a reason or a mechanism are quoted under "Explanations:" (each has
    the form: a causal connective or a hedge), within their own word budget; Attention's reason
    for scaling the dot products reaches the wiki; a forward reference is no explanation."""
    from episteme.compile.roles import is_explanation

    wiki = writer_stages / "after_attention"
    expl = [q for rel in iter_page_paths(wiki) for sec in _sections(wiki, rel)
            for q in _quoted_under(sec.body, "Explanations:")]
    assert len(expl) >= 3, expl
    assert all(is_explanation(x) for x in expl), expl
    text = " ".join(" ".join((wiki / r).read_text(encoding="utf-8").split()) for r in iter_page_paths(wiki))
    assert "We suspect that for large values of dk, the dot products grow large in magnitude" in text
    assert not is_explanation("We will show in section 4.1 that this minimax game has a global optimum.")
    assert not is_explanation("The encoder is composed of a stack of N = 6 identical layers.")


def test_a_topic_above_the_merge_threshold_joins_the_existing_section(writer_stages, tmp_path, embedder,
                                                                    monkeypatch):
    """The merge on real papers: BERT's topic most similar to one of Attention's topic sections
    (its plan names it "closest") is planned as an update of that section once the threshold
    is just below that similarity; written, the section cites both papers and quotes both."""
    from episteme.compile import extractive
    from episteme.compile.writer import apply_plan, validate_plan

    wiki = _copy(writer_stages, "after_attention", tmp_path)
    settings = load_settings(wiki, env={}, dotenv=None)
    today = dt.date.fromisoformat(DATE)
    assert not [d for d in extractive.plan_extractive(settings, BERT, embedder=embedder, today=today).decisions
                if d.action == "update"]  # the default thresholds merge nothing
    # the title test off: the closest section by key text alone
    monkeypatch.setattr(extractive, "MERGE_TITLE_SIMILARITY", -1.0)
    plan = extractive.plan_extractive(settings, BERT, embedder=embedder, today=today)
    closest = [re.search(r"closest: (sec_\d+), similarity ([\d.]+)", d.reason) for d in plan.decisions]
    best = max((float(m[2]), m[1]) for m in closest if m)
    assert best[0] < extractive.MERGE_SIMILARITY
    monkeypatch.setattr(extractive, "MERGE_SIMILARITY", best[0] - 0.001)
    plan = extractive.plan_extractive(settings, BERT, embedder=embedder, today=today)
    updates = [d for d in plan.decisions if d.action == "update"]
    assert [d.section_id for d in updates] == [best[1]]
    assert updates[0].reason.startswith("merged:") and not updates[0].page.startswith("papers/")
    apply_plan(wiki, validate_plan(wiki, plan), today=today)
    assert read_index_json(wiki)[best[1]] == [ATTENTION, BERT]
    sec = next(s for s in _sections(wiki, updates[0].page) if s.id == best[1])
    assert "From [[papers/attention-is-all-you-need|" in sec.body and f"From {BERT_LINK}" in sec.body
    assert check_index_consistency(wiki) == []


def test_a_topic_alike_in_text_but_not_in_title_gets_its_own_page(writer_stages, tmp_path, embedder,
                                                                    monkeypatch):
    """The title test: BERT's topic nearest one of Attention's sections by key text, with the
    text threshold just below their similarity, still does not merge when the two titles are
    unlike (architecture and background sections read alike to the embedding, whatever they
    describe); it gets its own page."""
    from episteme.compile import extractive, naming

    wiki = _copy(writer_stages, "after_attention", tmp_path)
    settings = load_settings(wiki, env={}, dotenv=None)
    today = dt.date.fromisoformat(DATE)
    with monkeypatch.context() as m:
        m.setattr(extractive, "MERGE_TITLE_SIMILARITY", -1.0)
        plan = extractive.plan_extractive(settings, BERT, embedder=embedder, today=today)
    closest = [(re.search(r"closest: (sec_\d+), similarity ([\d.]+)", d.reason), d) for d in plan.decisions]
    (sim, sid), topic = max(((float(m[2]), m[1]), d) for m, d in closest if m)
    from episteme.wiki.edit import find_section

    emb = embedder.encode([naming.clean_title(topic.title), naming.clean_title(find_section(wiki, sid)[1].title)])
    assert float(emb[0] @ emb[1]) < extractive.MERGE_TITLE_SIMILARITY  # unlike titles
    monkeypatch.setattr(extractive, "MERGE_SIMILARITY", sim - 0.001)
    plan = extractive.plan_extractive(settings, BERT, embedder=embedder, today=today)
    assert not [d for d in plan.decisions if d.action == "update"]


def test_a_merge_checks_only_the_text_it_adds(writer_stages, tmp_path, embedder, monkeypatch):
    """The write-time claim check of an update checks the paragraphs the write adds, against
    the section's sources after the write: the quotes already there (from the other paper) are
    neither re-checked against the new paper alone (false "contradicted") nor re-verified at
    every later merge (a cost that grew with the library)."""
    from episteme.compile import extractive
    from episteme.compile.writer import write_paper

    wiki = _copy(writer_stages, "after_attention", tmp_path)
    settings = load_settings(wiki, env={}, dotenv=None)
    # BERT's closest topic merges once the threshold is just below its similarity (and the
    # title test is off: no BERT topic shares a title with one of Attention's)
    monkeypatch.setattr(extractive, "MERGE_TITLE_SIMILARITY", -1.0)
    plan = extractive.plan_extractive(settings, BERT, embedder=embedder,
                                      today=dt.date.fromisoformat(DATE))
    closest = [re.search(r"closest: (sec_\d+), similarity ([\d.]+)", d.reason) for d in plan.decisions]
    monkeypatch.setattr(extractive, "MERGE_SIMILARITY", max(float(m[2]) for m in closest if m) - 0.001)
    out = write_paper(settings, BERT, writer="extractive", dry_run=True, embedder=embedder,
                      today=dt.date.fromisoformat(DATE))
    merged = {d["page"] for d in out["plan"] if d["action"] == "update"}
    assert merged
    # (the new paper's own new sections may have findings of their own: not this test's matter)
    assert [f for f in out["claim_findings"] if f["file"] in merged and f["rule"] != "claim-located"] == []


@pytest.mark.parametrize("sentence, expected", [
    # a finding stated in words, its numbers left to a table: a result
    ("Overall, our findings indicate that the tuned planner clearly beats both heuristics.", True),
    ("We find that sparse routing significantly improves recall on long queries.", True),
    ("These experiments show that the cached variant is faster than the baseline.", True),
    # a finding cue without a comparison, or a comparison without outcome, finding or number
    ("Our results suggest a different explanation for the drift.", False),
    ("The second encoder is better than the first one in some ways.", False),
    ("We describe the planner and its two heuristics.", False),
])
def test_a_finding_that_compares_is_a_result(sentence: str, expected: bool):
    from episteme.compile.roles import is_result

    assert is_result(sentence) is expected
