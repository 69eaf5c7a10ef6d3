"""The LLM verifier through the real anthropic client against the fake Messages API: Claude's
verdicts replace the offline ones when their quotes are verbatim, a made-up quote is rejected
(the offline verdict stands), a 429 is retried, a 401 is a clear error."""

from __future__ import annotations

import pytest
from episteme.llm.client import LLMClient, LLMError
from episteme.query.trace import Tracer
from episteme.query.verify_llm import VERDICTS_TOOL, llm_verify
from fake_anthropic import error_response, tool_use_response
from ingested_wiki import wiki_settings

ANSWER = ("Dropout was applied in training the discriminator net. "
          "The Transformer (big) reaches 34.2 BLEU on the WMT 2014 English-to-German task.")


@pytest.fixture
def traced(ingested_wiki, embedder):
    t = Tracer(wiki_settings(ingested_wiki), embedder=embedder)
    res = t.trace(ANSWER)
    t.store.close()
    return res


def client_for(ingested_wiki, fake) -> LLMClient:
    settings = wiki_settings(ingested_wiki, api_key="sk-test", llm_base_url=fake.base_url)
    return LLMClient(settings, base_delay=0.001, log=lambda line: None)


def span_of(traced: dict, ci: int, words: int = 8) -> str:
    """A verbatim span of claim ``ci``'s first passage (what an honest verifier would quote)."""
    return " ".join(traced["claims"][ci]["passages"][0]["passage"].split()[:words])


def test_claude_verdicts_applied_with_verbatim_quotes(ingested_wiki, fake_anthropic, traced):
    assert [c["verdict"] for c in traced["claims"]] == ["supported", "contradicted"]
    q0, q1 = span_of(traced, 0), span_of(traced, 1)
    fake_anthropic.enqueue(tool_use_response("verdicts", {"verdicts": [
        {"claim": 1, "verdict": "supported", "passage": 1, "quote": q0, "reason": "stated as is"},
        {"claim": 2, "verdict": "contradicted", "passage": 1, "quote": q1,
         "reason": "the paper reports 28.4 BLEU, not 34.2"},
    ]}, usage={"input_tokens": 900, "output_tokens": 120}))
    with client_for(ingested_wiki, fake_anthropic) as client:
        out = llm_verify(None, traced, client=client)
    (req,) = fake_anthropic.requests
    assert req.body["tool_choice"]["name"] == "verdicts"
    assert "<document" in req.text() and "Claim 2:" in req.text()  # passages as untrusted blocks
    c0, c1 = out["claims"]
    assert c0["verifier"] == c1["verifier"] == "claude" and out["verifier"] == "claude"
    assert c1["verdict"] == "contradicted" and "28.4" in c1["reason"]["text"]
    assert c1["evidence"]["quote"] in c1["passages"][0]["passage"]
    assert c0["offline_verdict"] == "supported" and c1["offline_verdict"] == "contradicted"
    assert out["contradicted_claims"] == [c1["claim"]]
    assert out["llm_usage"]["input_tokens"] == 900 and out["llm_usage"]["calls"] == 1


def test_made_up_quote_is_rejected_and_offline_verdict_stands(ingested_wiki, fake_anthropic, traced):
    fake_anthropic.enqueue(tool_use_response("verdicts", {"verdicts": [
        {"claim": 1, "verdict": "contradicted", "passage": 1,
         "quote": "Dropout was never used for the discriminator", "reason": "made up"},
        {"claim": 2, "verdict": "unsupported", "reason": "no passage gives 34.2"},
    ]}))
    with client_for(ingested_wiki, fake_anthropic) as client:
        out = llm_verify(None, traced, client=client)
    c0, c1 = out["claims"]
    assert c0["verdict"] == "supported" and c0["verifier"] == "offline" and "verbatim" in c0["llm_rejected"]
    assert c1["verdict"] == "unsupported" and c1["verifier"] == "claude" and "evidence" not in c1


def test_429_then_success_and_invalid_claim_number_fed_back(ingested_wiki, fake_anthropic, traced):
    good = {"verdicts": [
        {"claim": 1, "verdict": "supported", "passage": 1, "quote": span_of(traced, 0), "reason": "ok"},
        {"claim": 2, "verdict": "contradicted", "passage": 1, "quote": span_of(traced, 1), "reason": "28.4"},
    ]}
    fake_anthropic.enqueue(
        error_response(429, "rate limited", headers={"retry-after": "0.01"}),
        tool_use_response("verdicts", {"verdicts": [{"claim": 7, "verdict": "supported",
                                                     "passage": 1, "reason": "?"}]}),
        tool_use_response("verdicts", good),
    )
    with client_for(ingested_wiki, fake_anthropic) as client:
        out = llm_verify(None, traced, client=client)
        summary = client.usage_summary()
    assert len(fake_anthropic.requests) == 3
    assert "claim numbers run from 1 to 2" in fake_anthropic.requests[2].text()
    assert summary["retries"] >= 1 and summary["tool_retries"] == 1
    assert [c["verdict"] for c in out["claims"]] == ["supported", "contradicted"]


def test_401_is_a_clear_error(ingested_wiki, fake_anthropic, traced):
    fake_anthropic.enqueue(error_response(401, "invalid x-api-key"))
    with client_for(ingested_wiki, fake_anthropic) as client, pytest.raises(LLMError) as err:
        llm_verify(None, traced, client=client)
    assert "401" in err.value.message and "API_KEY" in err.value.message
    assert VERDICTS_TOOL["input_schema"]["required"] == ["verdicts"]


def test_trace_command_claude_verifier_needs_a_key(ingested_wiki, capsys, monkeypatch):
    from episteme.commands.trace import main

    for key in ("ANTHROPIC_API_KEY", "LLM_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(ingested_wiki.parent)
    code = main(["--wiki", str(ingested_wiki), "--answer", ANSWER, "--verifier", "claude"])
    assert code == 2 and "needs an API key" in capsys.readouterr().out
    code = main(["--wiki", str(ingested_wiki), "--answer", ANSWER, "--verifier", "offline"])
    out = capsys.readouterr().out
    assert code == 0 and '"verifier": "offline"' in out and '"contradicted"' in out
