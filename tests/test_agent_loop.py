"""The wiki-ingest skill's loop, run literally: ingest -> plan -> one batch write -> lint, per
paper, with the call count asserted; and the batch's all-or-nothing guarantee under SIGKILL.

The "agent" here is deterministic code that reads only what the plan prints (the sections'
text, suggested pages, related sections) and builds the batch from it -- the same information
a model gets, so the loop cannot lean on anything the skill does not teach.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, SCRIPTS
from episteme.wiki.edit import check_index_consistency, iter_page_paths
from episteme.wiki.frontmatter import parse_frontmatter
from episteme.wiki.index import read_index_json, read_log
from episteme.wiki.sections import parse_page
from helpers.agent import batch_for, script_env, sections_to_read

ATTENTION = "attention_1706.03762v5.pdf"
GAN = "gan_1406.2661v1.pdf"
SKILL = REPO / "skills" / "wiki-ingest" / "SKILL.md"


class Agent:
    """Runs the skill's scripts and counts the calls per paper."""

    def __init__(self, wiki: Path):
        self.wiki = wiki
        self.calls: list[str] = []
        self.seconds = 0.0

    def run(self, script: str, *args: str, stdin: str | None = None, ok=(0,)) -> subprocess.CompletedProcess:
        self.calls.append(script)
        t = time.perf_counter()
        p = subprocess.run([sys.executable, str(SCRIPTS / script), *args], input=stdin,
                           capture_output=True, text=True, timeout=600, env=script_env())
        self.seconds += time.perf_counter() - t
        assert p.returncode in ok, (script, p.returncode, p.stderr[-3000:])
        return p


def _loop(agent: Agent, pdf: Path, *, update_one: bool) -> tuple[dict, dict, dict]:
    """The skill's four steps for one paper; returns (plan, batch result, picked ids)."""
    start = len(agent.calls)
    ing = json.loads(agent.run("ingest.py", str(pdf), "--wiki", str(agent.wiki), "--no-progress").stdout)
    paper = ing["paper"]
    t = time.perf_counter()
    out = agent.run("plan_ingest.py", paper, "--wiki", str(agent.wiki)).stdout
    plan = json.loads(out)
    assert not any("text" in s for s in plan["sections"]), "the outline first, no section text"
    names = sections_to_read(plan)
    texts = json.loads(agent.run("plan_ingest.py", paper, "--wiki", str(agent.wiki),
                                 "--section", ",".join(names)).stdout)
    plan_seconds = time.perf_counter() - t
    assert [s["name"] for s in texts["sections"]] == [s["name"] for s in plan["sections"] if s["name"] in names]
    plan["_chars"] = len(out) + sum(len(s["text"]) for s in texts["sections"])
    lines, picked = batch_for(plan, texts, update_one=update_one,
                              fallback_ids=sorted(read_index_json(agent.wiki)) if update_one else [])
    out = json.loads(agent.run("write_section.py", "--wiki", str(agent.wiki), "--batch",
                               "--subject", paper, stdin="\n".join(map(json.dumps, lines))).stdout)
    agent.run("wiki_lint.py", "--wiki", str(agent.wiki))  # exit 0: no errors
    assert len(agent.calls) - start <= 5
    plan["_seconds"] = plan_seconds
    return plan, out, picked


def test_skill_teaches_exactly_this_loop():
    text = SKILL.read_text(encoding="utf-8")
    steps = re.findall(r"\$\{CLAUDE_PLUGIN_ROOT\}/plugin/scripts/(\w+\.py)", text.split("## Without")[0])
    assert [s for s in dict.fromkeys(steps) if s != "setup_env.py"] == [
        "ingest.py", "plan_ingest.py", "write_section.py", "wiki_lint.py"]
    assert "--batch" in text and '"op": "append"' in text
    assert len(text.splitlines()) < 120  # short: detail lives in references/


def test_agent_loop_two_papers_in_five_calls_each(ingested_template, papers_dir, tmp_path):
    import shutil

    wiki = tmp_path / "wiki"
    shutil.copytree(ingested_template / "wiki", wiki)
    agent = Agent(wiki)
    plan1, out1, _ = _loop(agent, papers_dir / ATTENTION, update_one=False)
    assert len(agent.calls) == 5  # ingest, outline, the text asked for, one batch, lint
    assert out1["status"] == "written" and len(out1["created"]) == 4 and out1["updated"] == []
    # the paper page's metadata comes from the store, not from the agent's line
    fm = parse_frontmatter((wiki / plan1["paper_page"]).read_text(encoding="utf-8")).props
    assert fm["authors"][0] == "Ashish Vaswani" and fm["year"] == 2017
    assert fm["arxiv_id"].startswith("1706.03762") and fm["paper_file"] == f"raw/{ATTENTION}"
    # index.md opens with the contents: the paper and its topics, linked
    contents = (wiki / "index.md").read_text(encoding="utf-8").split("# Section map")[0]
    assert f"[[{plan1['paper_page'][:-3]}|Attention Is All You Need]] — Vaswani et al., 2017" in contents
    # section names are addressable: `abstract` and a number, in one call
    one = json.loads(agent.run("plan_ingest.py", ATTENTION, "--wiki", str(wiki),
                               "--section", "abstract,3.2.2").stdout)
    assert [s["name"] for s in one["sections"]] == ["abstract", "3.2.2"]
    agent.calls.pop()

    before = read_index_json(wiki)
    plan2, out2, picked = _loop(agent, papers_dir / GAN, update_one=True)
    assert len(agent.calls) == 10  # two papers, five calls each
    assert plan2["wiki_sections"] == len(before)
    related = [r for s in plan2["sections"] for r in s["related"]]
    assert all(r["evidence"] and not r["page"].startswith("papers/") for r in related)
    assert sorted(out2["updated"]) == sorted(picked.values())
    assert len(out2["created"]) == 4
    index = read_index_json(wiki)
    for sid in picked.values():
        assert GAN in index[sid] and ATTENTION in index[sid]  # the new paper joins its sources
    # append kept the old body and added the new paragraph
    page = next(p for p in iter_page_paths(wiki) if picked["append"] in (wiki / p).read_text())
    sec = parse_page((wiki / page).read_text(encoding="utf-8")).get(picked["append"])
    assert sec.body.rstrip().endswith("adds a related account. See [[papers/generative-adversarial-nets]].")
    assert "Rewritten" not in sec.body and len(sec.body) > 120
    # one log entry per batch (not one per section)
    entries, _ = read_log(wiki)
    assert [e.subject for e in entries[-2:]] == [ATTENTION, GAN]
    assert len(entries) == 2
    assert check_index_consistency(wiki) == []
    print(f"\nagent loop: {len(agent.calls) / 2:.0f} calls and {agent.seconds / 2:.1f} s per paper; "
          f"plan {plan2['_seconds']:.2f} s on {plan2['wiki_sections']} sections")


def test_a_bad_line_writes_nothing(ingested_wiki):
    wiki = ingested_wiki
    snap = {p.relative_to(wiki).as_posix(): p.read_bytes() for p in wiki.rglob("*")
            if p.is_file() and ".episteme" not in p.parts}
    lines = [
        {"op": "create", "page": "good-topic", "title": "Good", "description": "fine",
         "body": "A fine body.\n", "sources": [GAN]},
        {"op": "create", "page": "other", "title": "Bad", "description": "x",
         "body": "Unknown source.\n", "sources": ["nope.pdf"]},
    ]
    p = subprocess.run([sys.executable, str(SCRIPTS / "write_section.py"), "--wiki", str(wiki),
                        "--batch"], input="\n".join(map(json.dumps, lines)), capture_output=True,
                       text=True, timeout=120, env=script_env())
    assert p.returncode != 0 and "batch line 2" in p.stderr and "nothing was written" in p.stderr
    after = {q.relative_to(wiki).as_posix(): q.read_bytes() for q in wiki.rglob("*")
             if q.is_file() and ".episteme" not in q.parts}
    assert after == snap


_BATCH_KILLER = r'''
import json, sys
from episteme.wiki.batch import parse_batch, run_batch
wiki, n = sys.argv[1], int(sys.argv[2])
filler = " ".join(["generator discriminator minimax game value function"] * 80)
lines = [json.dumps({"op": "create", "page": f"topic-{i % 7}", "title": f"Topic {i}",
                     "description": f"topic {i}", "body": f"Body {i}. {filler}",
                     "sources": ["gan_1406.2661v1.pdf"]}) for i in range(n)]
print("start", flush=True)
print(json.dumps(run_batch(wiki, parse_batch("\n".join(lines)), known_sources=None,
                           subject="gan_1406.2661v1.pdf")["created"]), flush=True)
'''


@pytest.mark.slow
def test_batch_killed_mid_write_is_all_or_nothing(ingested_wiki):
    """SIGKILL a 60-write batch at random moments (mostly inside its write phase); after the
    next writer opens the wiki, either every write of the batch is there or none is."""
    from episteme.wiki.edit import WikiWriter

    wiki = ingested_wiki
    rng = random.Random(os.getpid())
    outcomes = set()
    for round_ in range(6):
        before = set(read_index_json(wiki)) if (wiki / "index.json").exists() else set()
        proc = subprocess.Popen([sys.executable, "-c", _BATCH_KILLER, str(wiki), "60"],
                                stdout=subprocess.PIPE, text=True, env=script_env())
        assert proc.stdout.readline().strip() == "start"
        time.sleep(rng.uniform(0.0, 0.6) if round_ else 5.0)  # round 0: let it finish
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        with WikiWriter(wiki, known_sources=None):  # the next writer recovers the batch
            pass
        for rel in iter_page_paths(wiki):
            parse_page((wiki / rel).read_text(encoding="utf-8"), strict=True)  # never torn
        after = set(read_index_json(wiki))
        new = after - before
        assert len(new) in (0, 60), (round_, len(new))
        topics = [p for p in iter_page_paths(wiki) if p.startswith("topic-")]
        on_pages = {s.id for p in topics for s in parse_page((wiki / p).read_text()).sections}
        assert on_pages == {sid for sid in after if sid in on_pages} and new <= on_pages | set()
        assert check_index_consistency(wiki) == []
        outcomes.add(len(new))
    assert 60 in outcomes  # the batch does land when not interrupted
