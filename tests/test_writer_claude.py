"""The Claude writer with the real ``anthropic`` SDK against the fake Messages API on 127.0.0.1:
create, update, malformed tool output, 429 then success, 401, and replies that try to write
outside the wiki.  Real stores (the session's ingested Attention + GAN wiki), real embeddings."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from episteme.compile.writer import (
    Decision,
    choose_writer,
    load_paper,
    validate_decision,
    write_paper,
)
from episteme.config import load_settings
from episteme.errors import NotFoundError, UsageError
from episteme.fsutil import slugify
from episteme.llm.client import UNTRUSTED_NOTICE, LLMClient, LLMError
from episteme.wiki.edit import check_index_consistency, create_section, iter_page_paths
from episteme.wiki.index import read_index_json, read_index_md, read_log
from fake_anthropic import error_response, tool_use_response

REPO = Path(__file__).resolve().parent.parent
ATTENTION = "attention_1706.03762v5.pdf"
GAN = "gan_1406.2661v1.pdf"
TOOL = "write_wiki_section"
TODAY = dt.date(2026, 11, 29)


def _settings(wiki: Path, fake) -> object:
    return load_settings(wiki, env={"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": fake.base_url}, dotenv=None)


def _client(settings) -> LLMClient:
    return LLMClient(settings, base_delay=0.001, log=lambda line: None)


def _label(req) -> tuple[str, str]:
    """(label, title) of the paper section a request asks about."""
    m = re.search(r"Section to place: (.+?) \(pp?\. ", req.text())
    assert m, "request does not name its section"
    label = m.group(1)
    return label, re.sub(r"^§\S+ ", "", label)


def create_reply(req):
    _label_text, title = _label(req)
    return tool_use_response(TOOL, {
        "action": "create", "page": slugify(title, max_len=60), "title": title,
        "description": f"{title}, as the paper describes it",
        "body": f"What the paper says about {title.lower()}.\n\nSee [[papers/attention-is-all-you-need]].",
        "tags": ["transformer"],
    }, usage={"input_tokens": 1000, "output_tokens": 200})


def _calls(settings, paper: str) -> int:
    keep, _ = load_paper(settings, paper).writable()
    return sum(1 for s in keep if s.kind != "abstract")


def _nothing_written(wiki: Path) -> None:
    """No page, no section in either index, no log entry: at most the starter files that the
    first ingest into an empty folder lays down (``episteme init``)."""
    assert iter_page_paths(wiki) == []
    if (wiki / "index.json").exists():
        assert json.loads((wiki / "index.json").read_text(encoding="utf-8")) == {}
    if (wiki / "index.md").exists():
        assert "sec_" not in (wiki / "index.md").read_text(encoding="utf-8")
    if (wiki / "log.md").exists():
        assert "## [" not in (wiki / "log.md").read_text(encoding="utf-8")


# -------------------------------------------------------------------------------- create


def test_cli_write_with_claude_creates_sections_and_reports_usage(ingested_wiki, fake_anthropic, papers_dir):
    n = _calls(load_settings(ingested_wiki, env={}, dotenv=None), ATTENTION)
    fake_anthropic.enqueue(*[create_reply] * n)
    env = {k: v for k, v in os.environ.items() if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH")}
    env.update({"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
                "PYTHONPATH": str(REPO / "plugin"), "LLM_MODEL": "claude-sonnet-4-5"})
    proc = subprocess.run(
        [sys.executable, "-m", "episteme.cli", "ingest", str(papers_dir / ATTENTION), "--wiki", str(ingested_wiki),
         "--no-progress", "--write", "--date", "2026-11-29"],  # --writer auto: a key, no agent
        capture_output=True, text=True, timeout=600, env=env, cwd=str(REPO),
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["writer"] == "claude" and out["status"] == "unchanged" and out["paper"] == ATTENTION
    assert len(out["new_sections"]) == n + 1  # + the paper page's summary
    assert out["updated_sections"] == []
    usage = out["llm_usage"]
    assert usage["calls"] == n and usage["input_tokens"] == 1000 * n and usage["output_tokens"] == 200 * n
    assert usage["model"] == "claude-sonnet-4-5" and usage["cost_usd"] == pytest.approx(n * (0.003 + 0.003))
    assert "Claude usage (claude-sonnet-4-5)" in proc.stderr and f"{n} calls" in proc.stderr
    # what Claude was sent: the notice, the forced tool, the paper text as delimited data
    assert len(fake_anthropic.requests) == n
    first = fake_anthropic.requests[0]
    assert UNTRUSTED_NOTICE in first.body["system"]
    assert first.body["tool_choice"]["name"] == TOOL and first.body["tools"][0]["name"] == TOOL
    texts = [r.text() for r in fake_anthropic.requests]
    mha = next(t for t in texts if "§3.2.2 Multi-Head Attention" in t)
    assert f'<document label="{ATTENTION} §3.2.2 Multi-Head Attention">' in mha
    assert "Instead of performing a single attention function" in mha.replace("\n", " ")
    assert not any("References" in _t.split("Section to place:")[1][:40] for _t in texts)
    # the wiki
    assert (ingested_wiki / "multi-head-attention.md").is_file()
    assert (ingested_wiki / "papers/attention-is-all-you-need.md").is_file()
    assert check_index_consistency(ingested_wiki) == []
    # one ingest entry (the Citations sections the run then writes are logged apart, "citations")
    (entry,) = [e for e in read_log(ingested_wiki)[0] if e.op == "ingest"]
    assert entry.op == "ingest" and entry.subject == ATTENTION and entry.date == "2026-11-29"
    # later requests see the pages planned earlier in the run
    assert "multi-head-attention (Multi-Head Attention)" in texts[-1]


# -------------------------------------------------------------------------------- update


def test_second_paper_updates_a_related_section(ingested_wiki, fake_anthropic):
    settings = _settings(ingested_wiki, fake_anthropic)
    fake_anthropic.enqueue(*[create_reply] * _calls(settings, ATTENTION))
    first = write_paper(settings, ATTENTION, writer="claude", today=TODAY, llm_client=_client(settings))
    assert first["write_status"] == "written"
    fake_anthropic.requests.clear()

    chosen: dict[str, str] = {}

    def update_reply(req):
        text = req.text()
        m = re.search(r"(sec_\d{3}) on ([\w/.-]+\.md): ([^\n—]+) —", text)
        assert m, "the request lists no related wiki section"
        chosen.update(id=m.group(1), page=m.group(2), title=m.group(3).strip())
        return tool_use_response(TOOL, {
            "action": "update", "section_id": m.group(1), "page": m.group(2), "title": m.group(3).strip(),
            "description": "Merged: what both papers say",
            "body": "Both papers touch this. [[papers/generative-adversarial-nets]]",
        })

    n_gan = _calls(settings, GAN)
    fake_anthropic.enqueue(update_reply, *[create_reply] * (n_gan - 1))
    out = write_paper(settings, GAN, writer="claude", today=TODAY, llm_client=_client(settings))
    sid = chosen["id"]
    assert out["updated_sections"] == [sid] and sid in first["new_sections"]
    assert read_index_json(ingested_wiki)[sid] == [ATTENTION, GAN]
    entry = read_index_md(ingested_wiki).entries[sid]
    assert entry.description == "Merged: what both papers say" and entry.page == chosen["page"]
    page_text = (ingested_wiki / chosen["page"]).read_text(encoding="utf-8")
    assert "Both papers touch this." in page_text
    assert check_index_consistency(ingested_wiki) == []
    # the retrieved related sections went in as delimited data, not the whole index
    req = fake_anthropic.requests[0]
    assert req.text().count("<document label=\"sec_") <= 6


# ---------------------------------------------------------------------------- bad output


def test_malformed_and_invalid_tool_output_is_rejected_and_retried(ingested_wiki, fake_anthropic):
    settings = _settings(ingested_wiki, fake_anthropic)
    n = _calls(settings, ATTENTION)
    missing_body = tool_use_response(TOOL, {"action": "create", "page": "x", "title": "X", "description": "x"})
    ghost = tool_use_response(TOOL, {"action": "update", "section_id": "sec_999", "page": "x", "title": "X",
                                     "description": "x", "body": "text"})
    fake_anthropic.enqueue(missing_body, ghost, *[create_reply] * n)
    client = _client(settings)
    out = write_paper(settings, ATTENTION, writer="claude", today=TODAY, llm_client=client)
    assert len(out["new_sections"]) == n + 1
    assert out["llm_usage"]["tool_retries"] == 2 and out["llm_usage"]["calls"] == n + 2
    second, third = fake_anthropic.requests[1], fake_anthropic.requests[2]
    assert "missing the required field 'body'" in second.text()
    assert "sec_999 does not exist" in third.text()
    assert not (ingested_wiki / "x.md").exists()
    assert check_index_consistency(ingested_wiki) == []
    assert "notes" not in out  # every [[link]] points at a page the run wrote


def test_429_then_success(ingested_wiki, fake_anthropic):
    settings = _settings(ingested_wiki, fake_anthropic)
    n = _calls(settings, ATTENTION)
    fake_anthropic.enqueue(error_response(429, "slow down", headers={"retry-after": "0"}), *[create_reply] * n)
    out = write_paper(settings, ATTENTION, writer="claude", today=TODAY, llm_client=_client(settings))
    assert out["write_status"] == "written" and len(out["new_sections"]) == n + 1
    assert out["llm_usage"]["retries"] == 1 and out["llm_usage"]["http_requests"] == n + 1


def test_cli_401_is_a_clear_error_and_writes_nothing(ingested_wiki, fake_anthropic, papers_dir):
    fake_anthropic.enqueue(error_response(401, "invalid x-api-key"))
    env = {k: v for k, v in os.environ.items() if k not in ("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH")}
    env.update({"ANTHROPIC_API_KEY": "sk-wrong", "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
                "PYTHONPATH": str(REPO / "plugin")})
    proc = subprocess.run(
        [sys.executable, "-m", "episteme.cli", "ingest", str(papers_dir / ATTENTION), "--wiki", str(ingested_wiki),
         "--no-progress", "--write", "--writer", "claude"],
        capture_output=True, text=True, timeout=600, env=env, cwd=str(REPO),
    )
    assert proc.returncode == 1
    assert "rejected the key (401)" in proc.stderr and "ANTHROPIC_API_KEY" in proc.stderr
    assert f"{ATTENTION} is stored, but nothing was written to the wiki" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "401" in json.loads(proc.stdout)["error"]
    assert len(fake_anthropic.requests) == 1  # no retry on a bad key
    _nothing_written(ingested_wiki)


def test_replies_writing_outside_the_wiki_are_refused(ingested_wiki, fake_anthropic, tmp_path):
    settings = _settings(ingested_wiki, fake_anthropic)
    base = {"action": "create", "title": "Escape", "description": "tries to leave the wiki", "body": "text"}
    fake_anthropic.enqueue(
        tool_use_response(TOOL, {**base, "page": "../../outside"}),
        tool_use_response(TOOL, {**base, "page": str(tmp_path / "abs")}),
        tool_use_response(TOOL, {**base, "page": "fine-page", "body": "see [[../../../etc/passwd]]"}),
    )
    with pytest.raises(LLMError) as err:
        write_paper(settings, ATTENTION, writer="claude", today=TODAY, llm_client=_client(settings))
    assert "after 3 attempts" in err.value.message and "implausible link" in err.value.message
    assert "escapes" in fake_anthropic.requests[1].text()
    _nothing_written(ingested_wiki)
    assert not list(tmp_path.glob("outside*")) and not list(tmp_path.glob("abs*"))
    assert not (ingested_wiki.parent.parent / "outside.md").exists()


def test_dry_run_prints_the_plan_and_writes_nothing(ingested_wiki, fake_anthropic):
    settings = _settings(ingested_wiki, fake_anthropic)
    n = _calls(settings, ATTENTION)
    fake_anthropic.enqueue(*[create_reply] * n)
    out = write_paper(settings, ATTENTION, writer="claude", dry_run=True, llm_client=_client(settings))
    assert out["dry_run"] is True and len(out["plan"]) == n + 1 and out["llm_usage"]["calls"] == n
    assert out["plan"][0]["page"] == "papers/attention-is-all-you-need.md"
    assert {d["action"] for d in out["plan"]} == {"create"} and all(d["body"] for d in out["plan"])
    _nothing_written(ingested_wiki)


def test_links_to_pages_nobody_wrote_are_reported(ingested_wiki, fake_anthropic):
    settings = _settings(ingested_wiki, fake_anthropic)
    n = _calls(settings, ATTENTION)

    def dangling(req):
        reply = create_reply(req)
        reply.body["content"][-1]["input"]["body"] += " Compare [[recurrent-neural-network|RNNs]]."
        return reply

    fake_anthropic.enqueue(dangling, *[create_reply] * (n - 1))
    out = write_paper(settings, ATTENTION, writer="claude", today=TODAY, llm_client=_client(settings))
    assert out["write_status"] == "written"
    (note,) = out["notes"]
    assert note.endswith(": recurrent-neural-network")


# ------------------------------------------------------------------------ types and tags


def test_page_types_and_tags_come_from_the_model_validated(ingested_wiki, fake_anthropic):
    """The model chooses each new page's type from the set the wiki allows (an enum in the
    tool schema, with what each type means) and proposes tags: a type outside the set is sent
    back by the schema check, a missing one falls back to ``concept``, tags are normalised the
    one way; a result page under papers/ names its paper."""
    settings = _settings(ingested_wiki, fake_anthropic)
    n = _calls(settings, ATTENTION)
    seen: dict[str, str] = {}
    plan = iter([("method", ["Self Attention", "#nlp/Sequence Models", "self-attention"]), ("result", None),
                 ("dataset", None)])

    def typed(req):
        reply = create_reply(req)
        inp = reply.body["content"][-1]["input"]
        ptype, tags = next(plan, (None, None))
        if ptype is None:
            seen.setdefault(inp["page"], "concept")  # no type given: the fallback
            return reply
        if ptype == "result":
            inp["page"] = f"papers/attention-is-all-you-need-{inp['page']}"
        inp["page_type"] = ptype
        if tags:
            inp["tags"] = tags
        seen[inp["page"]] = ptype
        return reply

    def banana(req):
        reply = create_reply(req)
        reply.body["content"][-1]["input"]["page_type"] = "banana"
        return reply

    fake_anthropic.enqueue(banana, *[typed] * n)
    out = write_paper(settings, ATTENTION, writer="claude", today=TODAY, llm_client=_client(settings))
    assert out["write_status"] == "written" and out["llm_usage"]["tool_retries"] == 1
    tool = fake_anthropic.requests[0].body["tools"][0]["input_schema"]["properties"]["page_type"]
    assert "paper" not in tool["enum"] and {"concept", "method", "dataset", "result"} <= set(tool["enum"])
    assert "method:" in tool["description"]
    assert "page_type must be one of" in fake_anthropic.requests[1].text()
    assert {"method", "result", "dataset", "concept"} <= set(seen.values())
    for page, ptype in seen.items():
        fm = _frontmatter(ingested_wiki / f"{page}.md")
        assert fm["type"] == ptype, (page, fm["type"])
        if ptype == "result":
            assert page.startswith("papers/") and fm["paper"] == "papers/attention-is-all-you-need.md"
        if ptype == "method":
            assert fm["tags"] == ["self-attention", "nlp/sequence-models"]
        else:
            assert fm["tags"] == ["transformer"]


def test_a_wiki_with_an_older_schema_gets_a_type_it_allows(ingested_wiki, fake_anthropic):
    """A wiki whose SCHEMA.md lists no result/setup/dataset: the tool offers only the types it
    allows; a model's type it does not allow becomes the older stand-in, never a lint error."""
    from episteme.compile.claude import _decision, page_type_from, tool_for

    schema = ingested_wiki / "SCHEMA.md"
    schema.write_text(schema.read_text(encoding="utf-8").replace(", result, setup, dataset]", "]"), encoding="utf-8")
    from episteme.compile.naming import allowed_types

    allowed = allowed_types(ingested_wiki)
    assert "result" not in allowed and "method" in allowed
    enum = tool_for(allowed)["input_schema"]["properties"]["page_type"]["enum"]
    assert "result" not in enum and "dataset" not in enum and enum[0] == "concept"
    assert page_type_from("result", allowed) == "note" and page_type_from("dataset", allowed) == "entity"
    assert page_type_from(" Method ", allowed) == "method" and page_type_from(None, allowed) == "concept"
    section = load_paper(load_settings(ingested_wiki, env={}, dotenv=None), ATTENTION).writable()[0][1]
    d = _decision({"action": "update", "page": "x", "section_id": "sec_001", "title": "X", "description": "x",
                   "body": "b", "page_type": "method", "tags": ["A B"]}, ATTENTION, section, allowed)
    assert d.page_type is None and d.tags == ["a-b"]  # an update changes no page's type


def _frontmatter(path: Path) -> dict:
    import yaml

    text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text[4:text.index("\n---", 4)])


# ------------------------------------------------------------------------- mode + checks


def test_choose_writer_modes(tmp_path):
    keyed = load_settings(tmp_path, env={"ANTHROPIC_API_KEY": "k"}, dotenv=None)
    bare = load_settings(tmp_path, env={}, dotenv=None)
    assert choose_writer("auto", keyed, env={}) == "claude"
    assert choose_writer("auto", keyed, env={"CLAUDECODE": "1"}) == "extractive"  # the agent writes
    assert choose_writer("auto", bare, env={}) == "extractive"
    assert choose_writer("extractive", keyed, env={}) == "extractive"
    with pytest.raises(UsageError, match="needs ANTHROPIC_API_KEY"):
        choose_writer("claude", bare, env={})


def test_validate_decision_rules(tmp_path):
    wiki = tmp_path / "wiki"
    (wiki / "raw").mkdir(parents=True)
    (wiki / "raw" / "a.pdf").write_bytes(b"%PDF-1.4")
    res = create_section(wiki, "topic", title="Topic", description="d", body="b", sources=["a.pdf"], known_sources={"a.pdf"})
    known = {"a.pdf"}

    def d(**kw) -> Decision:
        base = dict(action="create", page="new-topic", title="T", description="d", body="text", sources=["a.pdf"])
        base.update(kw)
        return Decision(**base)

    ok = validate_decision(wiki, d(body="# T\n\ntext [[topic]] [[papers/x|X]]"), known)
    assert ok.page == "new-topic.md" and ok.body == "text [[topic]] [[papers/x|X]]"  # echoed heading dropped
    assert validate_decision(wiki, d(action="update", section_id=res.section_id, page="topic"), known).page == "topic.md"
    bad = [
        (d(page="../x"), "escapes"),
        (d(page=".hidden/x"), "hidden"),
        (d(page="index"), "structural"),
        (d(page="Bad Slug"), "lowercase"),
        (d(action="delete"), "action"),
        (d(action="update", section_id="sec_999", page="topic"), "does not exist"),
        (d(action="update", section_id=res.section_id, page="other"), "lives on topic.md"),
        (d(body="x\n<!-- section {\"id\": \"sec_001\"} -->"), "section marker"),
        (d(body="[[../../etc/passwd]]"), "implausible link"),
        (d(body="[[/abs/path]]"), "implausible link"),
        (d(sources=["nope.pdf"]), "unknown source"),
        (d(description="two\nlines"), "single line"),
    ]
    for dec, msg in bad:
        with pytest.raises((UsageError, NotFoundError), match=msg):
            validate_decision(wiki, dec, known)
    # the paper being written is always among the sources
    assert validate_decision(wiki, d(sources=[]), known, required_source="a.pdf").sources == ["a.pdf"]
