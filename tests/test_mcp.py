"""``episteme mcp`` driven by the official SDK's own client over stdio: list the tools, ingest
a real paper, batch-write, chat with traced sources, graph stats, lint -- and a tool error."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytest.importorskip("mcp")

GAN = "gan_1406.2661v1.pdf"
TOOLS = {"ingest", "plan", "write_sections", "retrieve", "trace", "chat", "graph", "lint"}


def _result(res) -> dict:
    """The tool's JSON: structured content, else the text block."""
    data = getattr(res, "structured_content", None)
    if data is None:
        data = json.loads(res.content[0].text)
    return data.get("result", data) if isinstance(data, dict) and set(data) == {"result"} else data


async def _session_run(wiki: Path, pdf: Path) -> dict:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "LLM_API_KEY", "CHROMA_HOST", "SQLITE_PATH", "CHROMA_PATH")}
    env["PYTHONPATH"] = str(REPO / "plugin")
    env["WIKI_PATH"] = str(wiki)
    params = StdioServerParameters(command=sys.executable,
                                   args=[str(REPO / "plugin" / "scripts" / "mcp_server.py")],
                                   env=env, cwd=str(wiki.parent))
    out: dict = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        out["tools"] = {t.name for t in (await s.list_tools()).tools}
        out["ingest"] = _result(await s.call_tool("ingest", {"pdf": str(pdf)}))
        plan = _result(await s.call_tool("plan", {"paper": GAN, "sections": "abstract"}))
        out["plan"] = plan
        text = plan["sections"][0]["text"]
        first = " ".join(text.split()).split(". ")[0].rstrip(".") + "."
        writes = [
            {"op": "create", "page": "papers/generative-adversarial-nets", "type": "paper",
             "page_title": plan["title"], "title": "Summary",
             "description": "Adversarial training of a generator against a discriminator",
             "body": f"{first} See [[adversarial-nets]].\n"},
            {"op": "create", "page": "adversarial-nets", "type": "concept",
             "title": "Adversarial nets", "description": "The two-player minimax game",
             "body": f"{first} From [[papers/generative-adversarial-nets]].\n"},
        ]
        out["write"] = _result(await s.call_tool("write_sections", {"writes": writes, "source": GAN,
                                                                     "subject": GAN}))
        bad = await s.call_tool("write_sections", {"writes": [{**writes[1], "sources": ["nope.pdf"]}]})
        out["bad"] = (bad.is_error, bad.content[0].text)
        out["chat"] = _result(await s.call_tool("chat", {"question": "What does the generator do?"}))
        out["graph"] = _result(await s.call_tool("graph", {"mode": "stats"}))
        out["lint"] = _result(await s.call_tool("lint", {}))
        unknown = await s.call_tool("graph", {"mode": "neighbors", "seed": "no-such-page"})
        out["unknown"] = (unknown.is_error, unknown.content[0].text)
    return out


@pytest.mark.slow
def test_mcp_tools_over_stdio_with_the_sdk_client(papers_dir, tmp_path):
    wiki = tmp_path / "wiki"
    out = asyncio.run(asyncio.wait_for(_session_run(wiki, papers_dir / GAN), timeout=900))
    assert out["tools"] >= TOOLS
    assert out["ingest"]["status"] == "ingested" and out["ingest"]["paper"] == GAN
    assert (wiki / "SCHEMA.md").is_file()  # the first ingest started the wiki
    assert [s["name"] for s in out["plan"]["sections"]] == ["abstract"]
    assert out["write"]["status"] == "written" and len(out["write"]["created"]) == 2
    assert out["bad"][0] is True and "nope.pdf" in out["bad"][1]
    chat = out["chat"]
    assert chat["answer"] and chat["claims"], chat  # the compact form: a best quote per claim
    assert "sources" not in chat
    assert all(q["paper"] == GAN for c in chat["claims"] if (q := c.get("quote") or c.get("closest")))
    assert out["graph"]["pages"] == 2 and out["graph"]["edges"] >= 2
    assert out["lint"]["summary"]["errors"] == 0, out["lint"]
    assert out["unknown"][0] is True and "no-such-page" in out["unknown"][1]
