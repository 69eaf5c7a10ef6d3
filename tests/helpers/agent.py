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


def short_title(title: str) -> str:
    """``BERT: Pre-training of ...`` -> ``BERT``: what the agent calls the paper in prose."""
    head = title.split(":", 1)[0].strip()
    return head if head != title and len(head.split()) <= 5 else title


def sections_to_read(plan: dict, *, n_topics: int | None = 3) -> list[str]:
    """The sections an agent reads the text of after the outline: the abstract and the topic
    sections it will write (``n_topics``; None: all)."""
    topics = [s["name"] for s in plan["sections"] if s["suggested_page"] != plan["paper_page"]][:n_topics]
    first = "abstract" if any(s["name"] == "abstract" for s in plan["sections"]) else plan["sections"][0]["name"]
    return list(dict.fromkeys([first, *topics]))


def batch_for(plan: dict, texts: dict, *, update_one: bool, n_topics: int | None = 3,
              fallback_ids: list[str] = ()) -> tuple[list[dict], dict]:
    """What an agent decides from the outline (``plan``) and the text of the sections it asked
    for (``texts``, the ``--section`` reply): the paper page (summary + links), the topic
    sections (``n_topics``; None: all) on their suggested pages, and -- when the wiki has
    related sections -- one update and one append of the best-related existing sections
    (``fallback_ids``: the sections an agent would pick by reading when the outline shows
    fewer than two)."""
    paper, paper_page = plan["paper"], plan["paper_page"].removesuffix(".md")
    name = short_title(plan["title"])
    text_of = {s["name"]: s["text"] for s in texts["sections"]}
    topics = [s for s in plan["sections"] if s["suggested_page"] != plan["paper_page"]][:n_topics]
    links = " ".join(f"[[{s['suggested_page'].removesuffix('.md')}]]" for s in topics)
    first = sections_to_read(plan, n_topics=0)[0]
    lines = [{"op": "create", "page": paper_page, "type": "paper", "page_title": plan["title"],
              "title": "Summary", "description": f"What {name} contributes",
              "body": f"{first_sentence(text_of[first])}\n\nTopics: {links}\n"}]
    for s in topics:
        lines.append({"op": "create", "page": s["suggested_page"].removesuffix(".md"),
                      "type": "concept", "title": s["title"][:80],
                      "description": f"{s['title'][:80]} as {name} describes it",
                      "body": f"{first_sentence(text_of[s['name']])} See [[{paper_page}]].\n"})
    picked: dict = {}
    if update_one:
        ids = list(dict.fromkeys([r["id"] for s in plan["sections"] for r in s["related"]] + list(fallback_ids)))
        picked = {"update": ids[0], "append": ids[1]}
        lines.append({"op": "update", "section_id": ids[0],
                      "body": f"Rewritten with {paper} in view. See [[{paper_page}]].\n"})
        lines.append({"op": "append", "section_id": ids[1],
                      "text": f"{name} adds a related account. See [[{paper_page}]]."})
    for line in lines:
        line["sources"] = [paper]
    return lines, picked
