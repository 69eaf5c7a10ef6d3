"""The agent's side of the ingest loop, shared by tests/test_agent_loop.py and
benchmarks/bench_agent_loop.py: the environment the plugin scripts run in, and the batch an
agent would write from a ``plan_ingest.py`` plan."""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def script_env() -> dict[str, str]:
    """The environment a plugin script runs in from a test: this checkout's ``plugin/`` first on
    the path, and no store location inherited from the caller's shell."""
    drop = ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH", "CHROMA_HOST", "CHROMA_PORT", "EMBEDDING_MODEL")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = str(REPO / "plugin")
    return env


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (40 to 400 characters), ``[[``/``]]`` turned into
    parentheses so a copied sentence adds no links of its own."""
    flat = " ".join(text.split())
    m = re.match(r"(.{40,400}?[.!?])\s", flat + " ")
    return (m.group(1) if m else flat[:300]).replace("[[", "(").replace("]]", ")")


def batch_for(plan: dict, *, update_one: bool, n_topics: int | None = 3) -> tuple[list[dict], dict]:
    """What an agent decides from the plan: the paper page (summary + links), three topic
    sections (``n_topics``; None: all) on their suggested pages, and -- when the wiki has related sections -- one
    update and one append of the best-related existing sections."""
    paper, paper_page = plan["paper"], plan["paper_page"].removesuffix(".md")
    by_name = {s["name"]: s for s in plan["sections"]}
    topics = [s for s in plan["sections"] if s["suggested_page"] != plan["paper_page"]][:n_topics]
    links = " ".join(f"[[{s['suggested_page'].removesuffix('.md')}]]" for s in topics)
    abstract = by_name.get("abstract") or plan["sections"][0]
    lines = [{"op": "create", "page": paper_page, "type": "paper", "page_title": plan["title"],
              "title": "Summary", "description": f"What {plan['short_title']} contributes",
              "body": f"{first_sentence(abstract['text'])}\n\nTopics: {links}\n"}]
    for s in topics:
        lines.append({"op": "create", "page": s["suggested_page"].removesuffix(".md"),
                      "type": "concept", "title": s["title"][:80],
                      "description": f"{s['title'][:80]} as {plan['short_title']} describes it",
                      "body": f"{first_sentence(s['text'])} See [[{paper_page}]].\n"})
    picked: dict = {}
    if update_one:
        related = sorted((r for s in plan["sections"] for r in s["related"]),
                         key=lambda r: -r["score"])
        ids = []
        for r in related:
            if r["id"] not in ids:
                ids.append(r["id"])
        picked = {"update": ids[0], "append": ids[1]}
        lines.append({"op": "update", "section_id": ids[0],
                      "body": f"Rewritten with {paper} in view. See [[{paper_page}]].\n"})
        lines.append({"op": "append", "section_id": ids[1],
                      "text": f"{plan['short_title']} adds a related account. See [[{paper_page}]]."})
    for line in lines:
        line["sources"] = [paper]
    return lines, picked
