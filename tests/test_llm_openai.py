"""The OpenAI-compatible client (episteme.llm.openai_api) with the real ``openai`` SDK against the
fake Chat Completions server on 127.0.0.1: tool calls, the plain-JSON fallback, an invalid reply
then a retry, 429 then success, 401, a server that hangs, an unknown model; the configuration
(LLM_PROVIDER, LLM_BASE_URL without a key), the evidence budget, and ``episteme doctor``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from episteme.config import load_settings
from episteme.errors import UsageError
from episteme.llm.budget import Budget, pack, share, split_text
from episteme.llm.client import (
    UNTRUSTED_NOTICE,
    LLMClient,
    LLMError,
    format_usage,
    llm_mode,
    wrap_untrusted,
)
from episteme.llm.openai_api import OpenAIClient, parse_json_object
from fake_openai import error_response, hang, text_response, tool_call_response

REPO = Path(__file__).resolve().parent.parent
MODEL = "qwen2.5:7b-instruct"
DECIDE = {
    "name": "decide",
    "description": "Decide where a paper section goes in the wiki.",
    "input_schema": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["create", "update"]},
            "title": {"type": "string", "minLength": 1},
        },
        "required": ["action", "title"],
    },
}
GO = [{"role": "user", "content": "go"}]


def settings_for(tmp_path: Path, fake=None, **env: str):
    values = {"LLM_PROVIDER": "openai", "LLM_MODEL": MODEL}
    if fake is not None:
        values["LLM_BASE_URL"] = fake.base_url
    values.update(env)
    return load_settings(tmp_path / "wiki", env=values, dotenv=None)


def client_for(tmp_path: Path, fake, **kw) -> OpenAIClient:
    kw.setdefault("base_delay", 0.001)
    kw.setdefault("log", lambda line: None)
    client = LLMClient(settings_for(tmp_path, fake), **kw)
    assert isinstance(client, OpenAIClient)
    return client


def test_forced_tool_call_request_shape_usage_and_label(tmp_path, fake_openai):
    fake_openai.enqueue(tool_call_response("decide", {"action": "create", "title": "Attention"},
                                           {"prompt_tokens": 120, "completion_tokens": 30}))
    client = client_for(tmp_path, fake_openai)
    system = "You maintain a research wiki. " + UNTRUSTED_NOTICE
    out = client.complete_tool(system, [{"role": "user", "content": wrap_untrusted("p.pdf", "text")}], DECIDE)
    assert out == {"action": "create", "title": "Attention"}
    (req,) = fake_openai.requests
    assert req.path == "/v1/chat/completions"
    body = req.body
    assert body["model"] == MODEL
    assert body["messages"][0] == {"role": "system", "content": system}
    assert '<document label="p.pdf">' in body["messages"][1]["content"]
    assert body["tools"][0]["function"]["name"] == "decide"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["action", "title"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "decide"}}
    # a local server needs no key: the SDK sends a placeholder, never another provider's key
    assert req.api_key == "no-key"
    s = client.usage_summary()
    assert (s["input_tokens"], s["output_tokens"], s["calls"]) == (120, 30, 1)
    assert s["cost_usd"] is None and s["provider"] == "openai" and s["label"] == f"openai:{MODEL}"
    assert client.label == f"openai:{MODEL}" and client.tool_calling is True
    assert format_usage(s).startswith(f"Model usage ({MODEL}): 1 calls") and "no price on file" in format_usage(s)


def test_server_without_tools_falls_back_to_plain_json(tmp_path, fake_openai):
    """A 400 about tools (Ollama: 'does not support tools') switches to the JSON protocol."""
    fake_openai.enqueue(
        error_response(400, f"registry.ollama.ai/library/{MODEL} does not support tools"),
        text_response('Here it is:\n```json\n{"action": "create", "title": "BERT"}\n```'),
        text_response('{"action": "update", "title": "GPT"}'),
    )
    lines: list[str] = []
    client = client_for(tmp_path, fake_openai, log=lines.append)
    assert client.complete_tool("sys", GO, DECIDE) == {"action": "create", "title": "BERT"}
    first, second = (r.body for r in fake_openai.requests)
    assert "tools" in first and "tools" not in second and "tool_choice" not in second
    assert "Reply with exactly one JSON object" in second["messages"][0]["content"]
    assert '"required": ["action", "title"]' in second["messages"][0]["content"]
    assert client.tool_calling is False and any("does not take tool calls" in x for x in lines)
    # the client remembers: the next call asks for JSON at once
    assert client.complete_tool("sys", GO, DECIDE)["title"] == "GPT"
    assert "tools" not in fake_openai.requests[2].body


def test_reply_that_ignores_the_tool_but_holds_valid_json_is_used(tmp_path, fake_openai):
    fake_openai.enqueue(text_response('{"action": "create", "title": "GAN"}'))
    client = client_for(tmp_path, fake_openai)
    assert client.complete_tool("sys", GO, DECIDE)["title"] == "GAN"
    assert client.tool_calling is False and len(fake_openai.requests) == 1


def test_reply_that_ignores_the_tool_with_bad_json_is_asked_again_for_json(tmp_path, fake_openai):
    fake_openai.enqueue(text_response('{"action": "remove", "title": "GAN"}'),
                        text_response('{"action": "create", "title": "GAN"}'))
    client = client_for(tmp_path, fake_openai)
    assert client.complete_tool("sys", GO, DECIDE)["action"] == "create"
    retry = fake_openai.requests[1].body
    assert "tools" not in retry and "Reply with exactly one JSON object" in retry["messages"][0]["content"]
    assert "input.action must be one of ['create', 'update']" in retry["messages"][-1]["content"]


def test_arguments_encoded_twice_are_read(tmp_path, fake_openai):
    fake_openai.enqueue(tool_call_response("decide", json.dumps(json.dumps({"action": "create", "title": "X"}))))
    assert client_for(tmp_path, fake_openai).complete_tool("sys", GO, DECIDE)["title"] == "X"


def test_invalid_tool_arguments_are_fed_back_and_the_retry_accepted(tmp_path, fake_openai):
    fake_openai.enqueue(
        tool_call_response("decide", '{"action": "create", "title": '),  # truncated JSON
        tool_call_response("decide", {"action": "delete", "title": "x"}),  # enum violation
    )
    client = client_for(tmp_path, fake_openai, tool_attempts=3)
    fake_openai.enqueue(tool_call_response("decide", {"action": "create", "title": "Fixed"}))
    assert client.complete_tool("sys", GO, DECIDE)["title"] == "Fixed"
    second = fake_openai.requests[1].body["messages"]
    assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"][0]["function"]["name"] == "decide"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == second[-2]["tool_calls"][0]["id"]
    assert "not valid JSON" in second[-1]["content"]
    third = fake_openai.requests[2].body["messages"]
    assert "input.action must be one of ['create', 'update']" in third[-1]["content"]
    assert client.usage_summary()["tool_retries"] == 2


def test_invalid_json_then_one_retry_then_a_clear_error(tmp_path, fake_openai, monkeypatch):
    """The JSON protocol: one retry on invalid output (the default for this provider), then an
    error naming the server, the model and the problem."""
    monkeypatch.setenv("EPISTEME_LLM_STRUCTURED", "json")
    fake_openai.enqueue(text_response("I would create a page called BERT."),
                        text_response('{"action": "create"}'))
    client = client_for(tmp_path, fake_openai)
    with pytest.raises(LLMError) as e:
        client.complete_tool("sys", GO, DECIDE)
    assert len(fake_openai.requests) == 2 and "tools" not in fake_openai.requests[0].body
    msg = e.value.message
    assert fake_openai.base_url in msg and MODEL in msg and "after 2 attempts" in msg
    assert "missing the required field 'title'" in msg
    retry = fake_openai.requests[1].body["messages"]
    assert retry[-2] == {"role": "assistant", "content": "I would create a page called BERT."}
    assert "not a JSON object" in retry[-1]["content"]


def test_server_quirks_named_tool_choice_and_max_completion_tokens(tmp_path, fake_openai):
    """llama.cpp's server takes tool_choice auto/none/required only; OpenAI's newer models take
    max_completion_tokens only: each refusal is answered by the other form, once, and remembered."""
    fake_openai.enqueue(
        error_response(400, "Invalid tool_choice: only 'auto', 'none' and 'required' are supported"),
        tool_call_response("decide", {"action": "create", "title": "A"}),
        error_response(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                            "Use 'max_completion_tokens' instead."),
        tool_call_response("decide", {"action": "create", "title": "B"}),
    )
    client = client_for(tmp_path, fake_openai)
    assert client.complete_tool("sys", GO, DECIDE)["title"] == "A"
    assert client.complete_tool("sys", GO, DECIDE, max_tokens=300)["title"] == "B"
    bodies = [r.body for r in fake_openai.requests]
    assert bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "decide"}}
    assert bodies[1]["tool_choice"] == bodies[2]["tool_choice"] == "required"
    assert bodies[2]["max_tokens"] == 300 and "max_completion_tokens" not in bodies[2]
    assert bodies[3]["max_completion_tokens"] == 300 and "max_tokens" not in bodies[3]
    assert client.tool_calling is True


def test_429_with_retry_after_then_success(tmp_path, fake_openai):
    fake_openai.enqueue(error_response(429, "rate limit reached", headers={"retry-after": "0.05"}),
                        tool_call_response("decide", {"action": "create", "title": "T"}))
    client = client_for(tmp_path, fake_openai, base_delay=5.0)  # retry-after must win
    start = time.monotonic()
    assert client.complete_tool("sys", GO, DECIDE)["title"] == "T"
    assert 0.05 <= time.monotonic() - start < 2.0
    assert client.retry_log == [{"attempt": 1, "status": 429, "delay": 0.05, "reason": "rate limit reached"}]
    assert fake_openai.requests[0].body == fake_openai.requests[1].body


def test_503_is_retried_with_backoff_then_reported(tmp_path, fake_openai):
    fake_openai.enqueue(*[error_response(503, "model is loading") for _ in range(3)])
    client = client_for(tmp_path, fake_openai, max_retries=2, base_delay=0.01)
    with pytest.raises(LLMError, match=r"unavailable \(503\) after 3 attempts: model is loading") as e:
        client.complete_text("sys", GO)
    assert e.value.status == 503 and [r["status"] for r in client.retry_log] == [503, 503]


def test_401_is_one_clear_line_with_url_model_and_what_the_server_said(tmp_path, fake_openai):
    fake_openai.enqueue(error_response(401, "Incorrect API key provided"), text_response("never"))
    settings = settings_for(tmp_path, fake_openai, LLM_API_KEY="sk-wrong")
    client = LLMClient(settings, base_delay=0.001, log=lambda line: None)
    with pytest.raises(LLMError) as e:
        client.complete_tool("sys", GO, DECIDE)
    assert e.value.message == (
        f"the OpenAI-compatible server at {fake_openai.base_url} (model '{MODEL}') rejected the key (401): "
        "check LLM_API_KEY / OPENAI_API_KEY (it said: Incorrect API key provided)")
    assert "\n" not in e.value.message and e.value.status == 401
    assert len(fake_openai.requests) == 1 and fake_openai.requests[0].api_key == "sk-wrong"


def test_a_server_that_hangs_times_out(tmp_path, fake_openai):
    fake_openai.enqueue(hang(5), hang(5))
    client = client_for(tmp_path, fake_openai, timeout=0.3, max_retries=1)
    start = time.monotonic()
    with pytest.raises(LLMError) as e:
        client.complete_text("sys", GO)
    assert time.monotonic() - start < 3.0
    assert e.value.message.startswith(f"the OpenAI-compatible server at {fake_openai.base_url} (model '{MODEL}') "
                                      "did not answer within 0.3 s (EPISTEME_LLM_TIMEOUT) after 2 attempts")
    assert [r["status"] for r in client.retry_log] == [None]


def test_unknown_model_and_a_base_url_without_v1_get_hints(tmp_path, fake_openai):
    fake_openai.enqueue(error_response(404, "model 'qwen9' not found"))
    client = LLMClient(settings_for(tmp_path, fake_openai, LLM_MODEL="qwen9"), log=lambda line: None)
    with pytest.raises(LLMError, match=r"does not know this model or endpoint \(404\): model 'qwen9' not found; "
                                       r"check LLM_MODEL \(now 'qwen9'\); the server's GET /v1/models"):
        client.complete_text("sys", GO)
    root = fake_openai.base_url[:-3]
    client = LLMClient(settings_for(tmp_path, None, LLM_BASE_URL=root), log=lambda line: None)
    with pytest.raises(LLMError, match=r"\(404\).*usually answer under /v1 \(LLM_BASE_URL=.*/v1\?\)"):
        client.complete_text("sys", GO)


def test_down_server_is_one_line_naming_url_and_model(tmp_path):
    settings = settings_for(tmp_path, None, LLM_BASE_URL="http://127.0.0.1:9/v1")
    client = LLMClient(settings, base_delay=0.001, max_retries=1, timeout=2, log=lambda line: None)
    with pytest.raises(LLMError) as e:
        client.complete_text("sys", GO)
    assert e.value.message.startswith("could not reach the OpenAI-compatible server at http://127.0.0.1:9/v1 "
                                      f"(model '{MODEL}') after 2 attempts: Connection error")


def test_configuration(tmp_path):
    env = {"LLM_BASE_URL": "http://localhost:11434/v1", "LLM_MODEL": MODEL}
    local = load_settings(tmp_path, env=env, dotenv=None)
    # a server URL and no key: an OpenAI-compatible local server, and a configured model
    assert local.provider == "openai" and local.api_key is None and llm_mode(local) == "claude"
    assert Budget.for_settings(local).context == 8192
    # an Anthropic key is never sent to another provider's server
    other = load_settings(tmp_path, env={"LLM_PROVIDER": "openai", "ANTHROPIC_API_KEY": "sk-ant",
                                         "LLM_MODEL": "gpt-4o"}, dotenv=None)
    assert other.api_key is None and other.llm_model == "gpt-4o"
    hosted = load_settings(tmp_path, env={"LLM_PROVIDER": "openai", "OPENAI_API_KEY": "sk-oa",
                                          "LLM_MODEL": "gpt-4o-mini", "LLM_CONTEXT": "16000"}, dotenv=None)
    assert hosted.api_key == "sk-oa" and Budget.for_settings(hosted).context == 16000
    # an explicit provider with nothing else is configured (an error, never the offline mode)
    bare = load_settings(tmp_path, env={"LLM_PROVIDER": "openai"}, dotenv=None)
    assert llm_mode(bare) == "claude"
    with pytest.raises(LLMError, match="LLM_PROVIDER=openai needs LLM_MODEL"):
        LLMClient(bare)
    with pytest.raises(LLMError, match="needs LLM_API_KEY .* or LLM_BASE_URL for a local server"):
        LLMClient(load_settings(tmp_path, env={"LLM_PROVIDER": "openai", "LLM_MODEL": "m"}, dotenv=None))
    with pytest.raises(UsageError, match="LLM_PROVIDER must be one of anthropic, openai"):
        load_settings(tmp_path, env={"LLM_PROVIDER": "ollama"}, dotenv=None)
    with pytest.raises(UsageError, match="LLM_CONTEXT must be a number of tokens"):
        load_settings(tmp_path, env={"LLM_CONTEXT": "8k"}, dotenv=None)
    # the Anthropic path as before
    claude = load_settings(tmp_path, env={"ANTHROPIC_API_KEY": "k"}, dotenv=None)
    assert claude.provider == "anthropic" and Budget.for_settings(claude).context == 200_000
    assert llm_mode(load_settings(tmp_path, env={}, dotenv=None)) == "offline"


def test_official_openai_models_are_priced_and_local_ones_not(tmp_path, fake_openai):
    fake_openai.enqueue(text_response("hi", {"prompt_tokens": 1_000_000, "completion_tokens": 0}))
    client = LLMClient(settings_for(tmp_path, fake_openai, LLM_MODEL="gpt-4o"), log=lambda line: None)
    client.complete_text("sys", GO)
    assert client.usage_summary()["cost_usd"] is None  # a local server named gpt-4o costs nothing known
    from episteme.llm.base import estimate_cost

    assert estimate_cost("gpt-4o", {"input_tokens": 1_000_000}, "openai", "https://api.openai.com/v1") == 2.5


def test_parse_json_object():
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object('```json\n{"a": [1, 2]}\n```') == {"a": [1, 2]}
    assert parse_json_object('Sure! {"a": "}"} Hope that helps.') == {"a": "}"}
    assert parse_json_object('<think>maybe {"a": 0}? no</think>\n{"a": 2}') == {"a": 2}
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_json_object("no json here")


def test_budget_helpers():
    small, large = Budget(8192), Budget(200_000)
    assert small.reply_tokens(4096) == 8192 // 3 and large.reply_tokens(4096) == 4096
    assert large.evidence_chars(4096, "x" * 3200) > 100 * small.evidence_chars(2730, "x" * 3200) / 10
    parts = split_text(("A sentence of text. " * 300).strip(), 1000)
    assert len(parts) == 6 and all(len(p) <= 1000 for p in parts)
    assert " ".join(parts) == ("A sentence of text. " * 300).strip()  # nothing lost or doubled
    assert split_text("short", 1000) == ["short"]
    assert pack([5, 5, 5, 20, 1], 10) == [[0, 1], [2], [3], [4]]
    assert share([100, 100], 1000, 6000, 50) == (2, 6000)  # everything fits: the cap is unchanged
    assert share([100, 5000, 5000], 3000, 6000, 50) == (3, 1450)  # the short one leaves room to the long
    assert share([5000] * 5, 1000, 6000, 400) == (2, 500)  # too many to give each its floor


def test_import_loads_neither_sdk():
    code = ("import sys, episteme.llm.client, episteme.llm.budget; "
            "print('anthropic' in sys.modules, 'openai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO / "plugin")})
    assert out.stdout.split() == ["False", "False"]


# -------------------------------------------------------------------------------- doctor


def _doctor(fake, *args: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    full.update({"PYTHONPATH": str(REPO / "plugin"), "LLM_PROVIDER": "openai", "LLM_MODEL": MODEL,
                 "LLM_BASE_URL": fake.base_url, **env})
    return subprocess.run([sys.executable, "-m", "episteme.cli", "doctor", *args], capture_output=True,
                          text=True, timeout=120, env=full, cwd=str(REPO))


def test_doctor_reports_model_latency_and_tool_calling(fake_openai):
    fake_openai.enqueue(tool_call_response("report_status", {"ok": True}))
    proc = _doctor(fake_openai)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert (r["ok"], r["provider"], r["model"], r["base_url"]) == (True, "openai", MODEL, fake_openai.base_url)
    assert r["tool_calling"] is True and r["structured_output"] == "tools" and r["context_tokens"] == 8192
    assert 0 <= r["latency_s"] < 30 and r["label"] == f"openai:{MODEL}"
    assert len(fake_openai.requests) == 1 and fake_openai.requests[0].body["tools"][0]["function"]["name"] == "report_status"


def test_doctor_text_says_when_tool_calling_is_missing(fake_openai):
    fake_openai.enqueue(error_response(400, "this model does not support tools"), text_response('{"ok": true}'))
    proc = _doctor(fake_openai, "--format", "text")
    assert proc.returncode == 0, proc.stderr
    assert f"model: {MODEL}" in proc.stdout and f"base URL: {fake_openai.base_url}" in proc.stdout
    assert "tool calling: not supported; structured output through plain JSON" in proc.stdout
    assert "status: ok" in proc.stdout


def test_doctor_failure_exits_1_with_one_line_and_lists_the_servers_models(fake_openai):
    fake_openai.enqueue(error_response(404, "model 'qwen9' not found"))
    proc = _doctor(fake_openai, LLM_MODEL="qwen9")
    assert proc.returncode == 1
    r = json.loads(proc.stdout)
    assert r["ok"] is False and r["status"] == 404 and "model 'qwen9' not found" in r["error"]
    assert r["server_models"] == sorted(fake_openai.models)
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: the OpenAI-compatible server at {fake_openai.base_url} (model 'qwen9')")


def test_doctor_with_claude(fake_anthropic):
    from fake_anthropic import tool_use_response

    fake_anthropic.enqueue(tool_use_response("report_status", {"ok": True}))
    full = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    full.update({"PYTHONPATH": str(REPO / "plugin"), "ANTHROPIC_API_KEY": "sk-test",
                 "ANTHROPIC_BASE_URL": fake_anthropic.base_url})
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "doctor"], capture_output=True, text=True,
                          timeout=120, env=full, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert (r["provider"], r["tool_calling"], r["context_tokens"]) == ("anthropic", True, 200_000)
    assert r["label"].startswith("anthropic:claude-") and r["base_url"] == fake_anthropic.base_url


def test_doctor_without_a_model_reports_the_offline_mode():
    full = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    full["PYTHONPATH"] = str(REPO / "plugin")
    proc = subprocess.run([sys.executable, "-m", "episteme.cli", "doctor"], capture_output=True, text=True,
                          timeout=120, env=full, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["mode"] == "offline" and r["provider"] is None and "offline" in r["hint"]
