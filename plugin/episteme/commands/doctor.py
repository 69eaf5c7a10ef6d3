"""``episteme doctor``: check the configured language model with one tiny call and report the
provider, the model, the server's URL, the latency and whether tool calling works.

Run it after setting ``LLM_PROVIDER`` / ``LLM_BASE_URL`` / ``LLM_MODEL`` (or an Anthropic key):
it says in one line what is wrong (the server is down, the model name is unknown, the key is
refused) before an ingest spends minutes finding out.  With no model configured it reports the
offline mode and exits 0; a configured model that fails exits 1.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

from ..cliutil import (
    ArgumentParser,
    format_is_json,
    print_json,
    run_main,
    sanitize_terminal,
    write_text,
)
from ._stores import add_model_options

#: the one structured call: tiny, so even a slow local model answers in seconds
PING_TOOL: dict[str, Any] = {
    "name": "report_status",
    "description": "Report that the model is working.",
    "input_schema": {
        "type": "object",
        "properties": {"ok": {"type": "boolean", "description": "always true"}},
        "required": ["ok"],
    },
}
PING_PROMPT = "This is a connection check. Call `report_status` with ok set to true."


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme doctor", description=__doc__.splitlines()[0])
    p.add_argument("--format", choices=["json", "text"], default="json")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds to wait for the model (default 60; a local model loading its "
                        "weights for the first call can need that)")
    add_model_options(p)
    return p


def check_model(settings, *, timeout: float = 60.0, max_retries: int = 0) -> dict[str, Any]:
    """The report: ``ok``, ``mode``, ``provider``, ``model``, ``base_url``, ``context_tokens``,
    ``latency_s``, ``tool_calling``, ``structured_output`` (``tools`` or ``json``), ``usage``;
    ``error`` (one line) when the call failed, and for an OpenAI-compatible server the models it
    lists when the model name was the problem."""
    from ..llm.budget import Budget
    from ..llm.client import LLMClient, LLMError, llm_mode, mode_report

    report: dict[str, Any] = {"ok": True, "mode": llm_mode(settings)}
    if report["mode"] == "offline":
        info = mode_report(settings)
        return {**report, "provider": None, "model": None, "hint": info["hint"]}
    report.update({"provider": settings.provider, "model": settings.llm_model or None,
                   "base_url": settings.llm_base_url, "context_tokens": Budget.for_settings(settings).context})
    client = None
    try:
        client = LLMClient(settings, timeout=timeout, max_retries=max_retries, log=lambda line: None)
        report["base_url"] = str(getattr(client, "base_url", None) or getattr(client._client, "base_url", ""))
        start = time.monotonic()
        client.complete_tool("You answer connection checks.", [{"role": "user", "content": PING_PROMPT}],
                             PING_TOOL, max_tokens=200)
        report["latency_s"] = round(time.monotonic() - start, 3)
        calling = getattr(client, "tool_calling", True)
        report["tool_calling"] = bool(calling)
        report["structured_output"] = "tools" if calling else "json"
        report["label"] = client.label
        report["usage"] = client.usage_summary()
    except LLMError as e:
        report.update(ok=False, error=e.message, status=e.status)
        if client is not None and e.status == 404 and hasattr(client, "list_models"):
            with contextlib.suppress(LLMError):
                report["server_models"] = client.list_models()
    finally:
        if client is not None:
            client.close()
    return report


def format_report(r: dict[str, Any]) -> str:
    if r["mode"] == "offline":
        return f"model: none configured (offline mode)\n{r['hint']}\n"
    lines = [f"provider: {r['provider']}", f"model: {r['model']}", f"base URL: {r.get('base_url') or '(default)'}",
             f"context: {r['context_tokens']} tokens"]
    if r["ok"]:
        lines += [f"latency: {r['latency_s']:.2f} s",
                  "tool calling: " + ("works" if r["tool_calling"] else
                                      "not supported; structured output through plain JSON"),
                  "status: ok"]
    else:
        lines.append(f"status: FAILED: {r['error']}")
        if r.get("server_models"):
            lines.append("models the server lists: " + ", ".join(r["server_models"]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..config import load_settings

        settings = load_settings(None, llm_provider=args.llm_provider, llm_model=args.llm_model,
                                 llm_base_url=args.llm_base_url, llm_context=args.llm_context)
        report = check_model(settings, timeout=args.timeout)
        if args.format == "json":
            print_json(report)
        else:
            write_text(format_report(report))
        if not report["ok"]:
            print(sanitize_terminal(f"error: {report['error']}"), file=sys.stderr)
            return 1
        return 0

    return run_main(body, json_errors=lambda: format_is_json(argv, default=True))
