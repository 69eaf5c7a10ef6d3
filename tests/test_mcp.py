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


async def _hostile_run(wiki: Path, other: Path, allowed: Path, nowhere: Path) -> dict:
    """The calls a prompt-injected agent could make, through the SDK's own client."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "LLM_API_KEY", "CHROMA_HOST", "SQLITE_PATH", "CHROMA_PATH")}
    env["PYTHONPATH"] = str(REPO / "plugin")
    env["WIKI_PATH"] = str(wiki)
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(REPO / "plugin" / "scripts" / "mcp_server.py"), "--allow-wiki", str(allowed)],
        env=env, cwd=str(wiki.parent))

    def outcome(res) -> tuple[bool, str]:
        return res.is_error, res.content[0].text if res.content else ""

    out: dict = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        out["lint_other"] = outcome(await s.call_tool("lint", {"wiki": str(other), "fix": True}))
        out["lint_dotdot"] = outcome(await s.call_tool(
            "lint", {"wiki": str(wiki / ".." / other.name), "fix": True}))
        out["ingest_nowhere"] = outcome(await s.call_tool(
            "ingest", {"pdf": str(wiki / "x.pdf"), "wiki": str(nowhere)}))
        out["lint_allowed"] = _result(await s.call_tool("lint", {"wiki": str(allowed)}))
        out["lint_default"] = _result(await s.call_tool("lint", {}))
        out["zotero"] = outcome(await s.call_tool("ingest", {"pdf": f"--zotero={other}"}))
        out["help"] = outcome(await s.call_tool("chat", {"question": "--help"}))
        out["huge"] = outcome(await s.call_tool("chat", {"question": "why? " * 40_000}))
        out["huge_seed"] = outcome(await s.call_tool("graph", {"mode": "neighbors",
                                                               "seed": "s" * 200_000}))
        out["mode_opt"] = outcome(await s.call_tool("graph", {"mode": "--help"}))
        body = "line\u2028separators\u2029inside\u0085one paragraph.\n"
        out["separators"] = outcome(await s.call_tool("write_sections", {
            "writes": [{"op": "create", "page": "seps", "title": "Separators",
                        "description": "a body with Unicode line separators", "body": body}],
            "source": "s.pdf"}))
    return out


def _page(folder: Path, updated: str = "2020/01/01") -> Path:
    folder.mkdir(parents=True)
    page = folder / "note.md"
    page.write_text(f"---\ntitle: Note\ntype: concept\nupdated: {updated}\n---\nA note.\n",
                    encoding="utf-8")
    return page


def test_mcp_tools_are_confined_to_the_wiki_and_values_are_never_options(tmp_path):
    """Issue 36 item 1: a tool's ``wiki`` may only name a wiki the server was started for;
    a question or a file name starting with ``-`` is a value; an argument too large for a
    command line is passed on stdin or refused with a clear error."""
    wiki, other, allowed, nowhere = (tmp_path / n for n in ("wiki", "other", "allowed", "nowhere"))
    _page(wiki)
    (wiki / "raw").mkdir()
    (wiki / "raw" / "s.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")  # a source name to cite
    other_page = _page(other)
    before = other_page.read_bytes()
    _page(allowed)
    out = asyncio.run(asyncio.wait_for(_hostile_run(wiki, other, allowed, nowhere), timeout=600))
    for key in ("lint_other", "lint_dotdot", "ingest_nowhere"):
        is_error, text = out[key]
        assert is_error and "is not served here" in text, (key, text)
    assert other_page.read_bytes() == before and not (other / ".episteme").exists()
    assert not nowhere.exists()
    assert out["lint_allowed"]["summary"] is not None and out["lint_default"]["summary"] is not None
    is_error, text = out["zotero"]
    assert is_error and f"no such file: --zotero={other}" in text, text  # a name, not --zotero
    for key in ("help", "huge"):  # the question reached chat (an empty wiki: nothing to answer)
        is_error, text = out[key]
        assert is_error and "has no sections yet" in text, (key, text[:300])
    is_error, text = out["huge_seed"]
    assert is_error and "over the limit of" in text, text[:300]
    is_error, text = out["mode_opt"]
    assert is_error and "--help" in text and "usage" not in text.lower(), text[:300]
    assert out["separators"][0] is False, out["separators"]  # one batch line, not three
    assert "separators\u2029inside\u0085one" in (wiki / "seps.md").read_text(encoding="utf-8")
