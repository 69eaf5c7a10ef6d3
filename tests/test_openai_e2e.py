"""The writer, the answerer and the verifier end to end through an OpenAI-compatible server (the
fake Chat Completions server on 127.0.0.1, the real ``openai`` SDK), on real stores: the same
guarantees as with Claude (verbatim quotes or the offline verdict stands, paper text as
delimited data, usage), evidence sized to a small window (``LLM_CONTEXT``), a configured model
that fails is an error and never the offline mode, and the CLI (= the MCP tools), the HTTP API
and the web UI name the model that answered."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest
from episteme.compile.writer import load_paper, write_paper
from episteme.fsutil import slugify
from episteme.llm.budget import CHARS_PER_TOKEN
from episteme.llm.client import UNTRUSTED_NOTICE, LLMClient, LLMError
from episteme.query.answer import answer
from episteme.query.trace import Tracer
from episteme.query.verify_llm import llm_verify
from episteme.wiki.edit import check_index_consistency
from fake_openai import error_response, text_response, tool_call_response
from ingested_wiki import wiki_settings
from serverlive import (  # noqa: F401  (written_template is a fixture)
    ATTENTION_Q,
    LiveServer,
    half_invented_answer,
    post_json,
    request,
    written_template,
)

MODEL = "qwen2.5:7b-instruct"
LABEL = f"openai:{MODEL}"
ATTENTION = "attention_1706.03762v5.pdf"
VERIFY_ANSWER = ("Dropout was applied in training the discriminator net. "
                 "The Transformer (big) reaches 34.2 BLEU on the WMT 2014 English-to-German task.")
SECTIONS = [
    {"id": "sec_004", "title": "Scaled dot-product attention", "page": "attention.md", "sources": ["attention.pdf"],
     "text": "For large key dimensions the dot products grow large and push the softmax into regions with "
             "extremely small gradients. Dividing the dot products by the square root of the key dimension "
             "counteracts this effect."},
    {"id": "sec_009", "title": "Training schedule", "page": "training.md", "sources": ["attention.pdf"],
     "text": "The big model trained for 3.5 days on eight P100 GPUs."},
]
QUESTION = "Why are the attention dot products scaled?"


def openai_settings(wiki, fake, **kw):
    return wiki_settings(wiki, llm_provider="openai", llm_model=MODEL, llm_base_url=fake.base_url, **kw)


def client_for(settings) -> LLMClient:
    return LLMClient(settings, base_delay=0.001, log=lambda line: None)


def prompt_tokens(req) -> int:
    """What a request's messages and tools weigh, in the budget's estimate."""
    return int(len(json.dumps(req.body.get("messages", [])) + json.dumps(req.body.get("tools", []))) / CHARS_PER_TOKEN)


# -------------------------------------------------------------------------------- answerer


def test_answer_through_the_openai_server_names_its_model(tmp_path, fake_openai, embedder):
    fake_openai.enqueue(tool_call_response("answer", {
        "answer": "Scaling keeps softmax gradients usable for large key sizes [sec_004].",
        "sections_used": ["sec_004"]}, {"prompt_tokens": 700, "completion_tokens": 40}))
    res = answer(openai_settings(tmp_path, fake_openai), QUESTION, SECTIONS, embedder=embedder)
    assert res["mode"] == "claude" and res["model"] == LABEL and res["sections_used"] == ["sec_004"]
    assert res["usage"]["input_tokens"] == 700 and res["usage"]["provider"] == "openai"
    (req,) = fake_openai.requests
    system = req.body["messages"][0]
    assert system["role"] == "system" and UNTRUSTED_NOTICE in system["content"]
    assert '<document label="sec_009 | training.md">' in req.body["messages"][1]["content"]
    assert req.body["tool_choice"]["function"]["name"] == "answer"


def test_answer_from_a_model_without_tool_calling(tmp_path, fake_openai, embedder):
    """A small local model: the server refuses tools, the answer comes as plain JSON, and an
    answer citing an id it was not given is sent back once."""
    fake_openai.enqueue(
        error_response(400, "tools are not supported by this model"),
        text_response('{"answer": "Made up [sec_777].", "sections_used": ["sec_777"]}'),
        text_response('{"answer": "Because of small gradients [sec_004].", "sections_used": ["sec_004"]}'),
    )
    res = answer(openai_settings(tmp_path, fake_openai), QUESTION, SECTIONS, embedder=embedder)
    assert res["answer"] == "Because of small gradients [sec_004]." and res["model"] == LABEL
    assert len(fake_openai.requests) == 3 and "sec_777" in fake_openai.requests[2].text()


def test_a_configured_model_that_is_down_is_an_error_never_the_offline_mode(tmp_path, embedder):
    settings = wiki_settings(tmp_path, llm_provider="openai", llm_model=MODEL, llm_base_url="http://127.0.0.1:9/v1")
    settings = settings.with_(extra={"EPISTEME_LLM_MAX_RETRIES": "0"})
    with pytest.raises(LLMError, match=r"could not reach the OpenAI-compatible server at http://127.0.0.1:9/v1 "
                                       r"\(model 'qwen2.5:7b-instruct'\)"):
        answer(settings, QUESTION, SECTIONS, embedder=embedder)


def test_a_small_window_bounds_the_sections_sent(tmp_path, fake_openai, embedder):
    long = [dict(SECTIONS[0], id=f"sec_{i:03d}", text=("Attention scales dot products. " * 400)) for i in range(1, 6)]
    fake_openai.enqueue(tool_call_response("answer", {"answer": "Scaled [sec_001].", "sections_used": ["sec_001"]}))
    settings = openai_settings(tmp_path, fake_openai, llm_context=2048)
    answer(settings, QUESTION, long, embedder=embedder)
    (req,) = fake_openai.requests
    assert req.body["max_tokens"] <= 2048 // 3
    assert prompt_tokens(req) + req.body["max_tokens"] <= 2048
    assert "sec_001" in req.text() and "sec_005" not in req.text()  # the best-ranked kept


# -------------------------------------------------------------------------------- verifier


@pytest.fixture
def traced(ingested_wiki, embedder):
    t = Tracer(wiki_settings(ingested_wiki), embedder=embedder)
    res = t.trace(VERIFY_ANSWER)
    t.store.close()
    return res


def span_of(traced: dict, ci: int, words: int = 8) -> str:
    return " ".join(traced["claims"][ci]["passages"][0]["passage"].split()[:words])


def test_verifier_through_the_openai_server_keeps_the_verbatim_rule(ingested_wiki, fake_openai, traced):
    assert [c["verdict"] for c in traced["claims"]] == ["supported", "contradicted"]
    fake_openai.enqueue(tool_call_response("verdicts", {"verdicts": [
        {"claim": 1, "verdict": "contradicted", "passage": 1,
         "quote": "Dropout was never used for the discriminator", "reason": "made up"},
        {"claim": 2, "verdict": "contradicted", "passage": 1, "quote": span_of(traced, 1),
         "reason": "the paper reports 28.4 BLEU"},
    ]}))
    with client_for(openai_settings(ingested_wiki, fake_openai)) as client:
        out = llm_verify(None, traced, client=client)
    c0, c1 = out["claims"]
    assert c0["verdict"] == "supported" and c0["verifier"] == "offline" and "verbatim" in c0["llm_rejected"]
    assert c1["verdict"] == "contradicted" and c1["verifier"] == "claude"
    assert c1["evidence"]["quote"] in c1["passages"][0]["passage"]
    assert out["model"] == LABEL and out["llm_usage"]["calls"] == 1
    assert "<document" in fake_openai.requests[0].text()


def test_verifier_sends_claims_in_batches_that_fit_a_small_window(ingested_wiki, fake_openai, traced):
    def reply(req):
        user = req.body["messages"][1]["content"]
        ci = 0 if "Dropout" in user.split("Claim 1:", 1)[1][:200] else 1
        return tool_call_response("verdicts", {"verdicts": [
            {"claim": 1, "verdict": "supported", "passage": 1, "quote": span_of(traced, ci), "reason": "stated"}]})

    fake_openai.enqueue(reply, reply)
    settings = openai_settings(ingested_wiki, fake_openai, llm_context=2048)
    with client_for(settings) as client:
        out = llm_verify(settings, traced, client=client)
    assert len(fake_openai.requests) == 2  # one claim per call
    for req in fake_openai.requests:
        text = req.text()
        assert "Claim 1:" in text and "Claim 2:" not in text
        assert "passage 1 of claim 1" in text and "passage 3 of claim 1" not in text  # fewer passages
        assert prompt_tokens(req) + req.body["max_tokens"] <= 2048
    assert [c["verdict"] for c in out["claims"]] == ["supported", "supported"]
    assert [c["verifier"] for c in out["claims"]] == ["claude", "claude"]
    assert out["claims"][1]["offline_verdict"] == "contradicted"  # the second batch's claim 1 is claim 2
    assert out["llm_usage"]["calls"] == 2


# -------------------------------------------------------------------------------- writer


def create_reply(req):
    m = re.search(r"Section to place: (.+?) \(pp?\. ", req.text())
    assert m, "request does not name its section"
    title = re.sub(r"^§\S+ ", "", m.group(1))
    title = re.sub(r" \(part \d+ of \d+\)$", "", title)
    return tool_call_response("write_wiki_section", {
        "action": "create", "page": slugify(title, max_len=60), "title": title,
        "description": f"{title}, as the paper describes it",
        "body": f"What the paper says about {title.lower()}.\n\nSee [[papers/attention-is-all-you-need]].",
        "tags": ["transformer"]}, {"prompt_tokens": 1000, "completion_tokens": 200})


def test_writer_through_the_openai_server_in_chunks_for_a_small_window(ingested_wiki, fake_openai):
    settings = openai_settings(ingested_wiki, fake_openai, llm_context=4096)
    fake_openai.enqueue(*[create_reply] * 200)
    out = write_paper(settings, ATTENTION, writer="claude", llm_client=client_for(settings))
    reqs = fake_openai.requests
    keep, _ = load_paper(settings, ATTENTION).writable()
    placed = [s for s in keep if s.kind != "abstract"]
    assert len(reqs) > len(placed)  # long sections went in parts
    assert any("(part 1 of " in r.text() for r in reqs) and any("(part 2 of " in r.text() for r in reqs)
    for r in reqs:
        assert prompt_tokens(r) + r.body["max_tokens"] <= 4096
        assert UNTRUSTED_NOTICE in r.body["messages"][0]["content"]
    assert out["writer"] == "claude" and out["llm_usage"]["label"] == LABEL
    assert out["llm_usage"]["calls"] == len(reqs) and out["llm_usage"]["cost_usd"] is None
    assert (ingested_wiki / "multi-head-attention.md").is_file()
    assert check_index_consistency(ingested_wiki) == []


def test_writer_with_a_failing_server_writes_nothing_and_says_why(ingested_wiki, fake_openai):
    fake_openai.enqueue(error_response(401, "bad key"))
    settings = openai_settings(ingested_wiki, fake_openai)
    before = sorted(p.name for p in ingested_wiki.rglob("*.md"))
    with pytest.raises(LLMError, match=r"rejected the key \(401\).*it said: bad key"):
        write_paper(settings, ATTENTION, writer="auto", llm_client=client_for(settings), env={})
    assert sorted(p.name for p in ingested_wiki.rglob("*.md")) == before


# -------------------------------------------------------------------------------- CLI / MCP, HTTP API, UI


def test_cli_chat_as_the_mcp_tool_runs_it_uses_the_configured_model(written_template, tmp_path, fake_openai,  # noqa: F811
                                                                   monkeypatch):
    from episteme.server.mcp import run_command

    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    top, said = half_invented_answer(wiki)
    fake_openai.enqueue(tool_call_response("answer", {"answer": said, "sections_used": [top]}))
    for key in [k for k in os.environ if k.startswith(("WIKI_PATH", "SQLITE_PATH", "CHROMA_PATH"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    monkeypatch.setenv("LLM_MODEL", MODEL)
    monkeypatch.setenv("LLM_BASE_URL", fake_openai.base_url)
    r = run_command(["chat", ATTENTION_Q, "--wiki", str(wiki)])
    assert r["mode"] == "claude" and r["model"] == LABEL and r["answer"] == said
    assert any("Moon" in c["claim"] for c in r["claims"] if c["verdict"] == "unsupported")
    assert ATTENTION_Q in fake_openai.requests[0].text()


def test_http_chat_and_health_name_the_model_and_the_ui_shows_it(written_template, tmp_path, fake_openai,  # noqa: F811
                                                                  page):
    from uibrowser import ask_in_chat

    wiki = tmp_path / "wiki"
    shutil.copytree(written_template / "wiki", wiki)
    top, said = half_invented_answer(wiki)
    fake_openai.enqueue(*[tool_call_response("answer", {"answer": said, "sections_used": [top]})] * 2)
    settings = openai_settings(wiki, fake_openai)
    with LiveServer(settings, write_mode="extractive") as srv:
        status, health, _ = request("GET", srv.url + "/health")
        assert status == 200 and health["llm_configured"] is True and health["llm_model"] == LABEL
        status, r, _ = post_json(srv.url, "/chat", {"query": ATTENTION_Q})
        assert status == 200, r
        assert r["model"] == LABEL and r["answer"] == said
        ask_in_chat(page, srv.url, ATTENTION_Q)
        assert page.inner_text("[data-testid=answer-model]") == f"answer: {LABEL}"
        page.goto("about:blank")
