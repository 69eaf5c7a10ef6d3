"""Any OpenAI-compatible Chat Completions server through the ``openai`` SDK and a ``base_url``:
the :class:`~episteme.llm.base.LLMClient` for ``LLM_PROVIDER=openai``.

That covers OpenAI itself and the local servers researchers run when papers may not leave the
machine: Ollama (``http://localhost:11434/v1``), llama.cpp's ``llama-server``
(``http://localhost:8080/v1``), vLLM, LM Studio, LiteLLM.  A local server needs no key.

Structured output, two ways (``EPISTEME_LLM_STRUCTURED``):

* ``tools``: one forced function call (``tool_choice`` names the function), its ``arguments``
  parsed as JSON and checked like the Anthropic tool input;
* ``json``: for servers or models without tool calling (small local models), the schema goes
  into the system prompt and the reply must be one JSON object, parsed (code fences and prose
  around it tolerated) and checked the same way;
* ``auto`` (the default): ``tools`` first; a server that rejects tools (a 400 about tools or
  functions) or a reply that ignores them switches this client to ``json`` for the rest of
  its life (a reply that ignored the tool but is valid JSON is used as is).

Either way an invalid reply is answered with the problem and asked once more
(``default_tool_attempts`` = 2), then a clear :class:`~episteme.llm.base.LLMError`.
This is the one module that touches the ``openai`` SDK, imported lazily.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..config import Settings
from ..errors import MissingDependencyError
from .base import (
    OPENAI_API_HOST,
    Failure,
    LLMClient,
    LLMError,
    check_reply,
    env_text,
    error_text,
    register,
)

STRUCTURED_MODES = ("auto", "tools", "json")
DEFAULT_OPENAI_BASE_URL = f"https://{OPENAI_API_HOST}/v1"
#: what the SDK is given as the key for a server that needs none (it refuses an empty one)
NO_KEY = "no-key"
_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n?|\n?```\s*$")
_TOOLS_REJECTED = re.compile(r"tool|function", re.IGNORECASE)
_THINKING = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)


def _sdk():
    try:
        import openai
    except ImportError as e:  # pragma: no cover - the dev environment has it
        raise MissingDependencyError(
            "LLM_PROVIDER=openai needs the openai package: pip install 'episteme[llm]'"
        ) from e
    return openai


def parse_json_object(text: str) -> Any:
    """The JSON value a plain-text reply holds: the whole text, else inside a code fence, else
    from its first ``{`` to its last ``}`` (small models wrap JSON in prose).  ``ValueError``
    when there is none."""
    text = _THINKING.sub("", text or "").strip()  # a reasoning model's thoughts come first
    candidates = [text, _FENCE.sub("", text).strip()]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for cand in candidates:
        try:
            return json.loads(cand)
        except ValueError:
            continue
    raise ValueError("the reply is not a JSON object" + (" (it is empty)" if not text else ""))


def json_instruction(tool: Mapping[str, Any]) -> str:
    """The system-prompt paragraph that asks for the tool's input as a plain JSON reply."""
    schema = json.dumps(tool.get("input_schema") or {"type": "object"}, ensure_ascii=False)
    return (f"Reply with exactly one JSON object and nothing else (no prose, no code fence): the "
            f"input of `{tool['name']}` ({tool.get('description', '')}), following this JSON "
            f"schema: {schema}")


def _text_of(content: Any) -> str:
    """A message's content as text: a string as is, Anthropic-style blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


@register
class OpenAIClient(LLMClient):
    """A Chat Completions server; see the module docstring and
    :class:`~episteme.llm.base.LLMClient`.  ``tool_calling`` is ``True`` once a forced tool
    call worked, ``False`` once the client fell back to plain JSON, ``None`` before."""

    provider = "openai"
    default_tool_attempts = 2
    key_variables = "LLM_API_KEY / OPENAI_API_KEY"

    def _connect(self, settings: Settings) -> None:
        if not self.model:
            raise LLMError(
                "LLM_PROVIDER=openai needs LLM_MODEL: the name of the model the server serves "
                "(for Ollama e.g. qwen2.5:7b-instruct; the server's GET /v1/models lists them)"
            )
        api_key = (settings.api_key or "").strip()
        if not api_key and not self.base_url:
            raise LLMError(
                "LLM_PROVIDER=openai needs LLM_API_KEY (or OPENAI_API_KEY) for OpenAI's API, or "
                "LLM_BASE_URL for a local server (e.g. http://localhost:11434/v1 for Ollama)"
            )
        self.base_url = (self.base_url or DEFAULT_OPENAI_BASE_URL).rstrip("/")
        self.structured = env_text(settings, "EPISTEME_LLM_STRUCTURED", "auto")
        if self.structured not in STRUCTURED_MODES:
            raise LLMError(f"EPISTEME_LLM_STRUCTURED must be one of {', '.join(STRUCTURED_MODES)}, "
                           f"got {self.structured!r}")
        self.tool_calling: bool | None = None
        self._max_tokens_param = "max_tokens"
        #: how the forced call is asked for: the named function (OpenAI, vLLM, Ollama), else
        #: "required" (llama.cpp's server takes only auto/none/required; one tool is offered, so
        #: it is the same request)
        self._tool_choice: Any = None
        openai = _sdk()
        self._client = openai.OpenAI(api_key=api_key or NO_KEY, base_url=self.base_url,
                                     timeout=self.timeout, max_retries=0)

    def _describe(self) -> str:
        return f"the OpenAI-compatible server at {self.base_url} (model {self.model!r})"

    def _not_found_hint(self) -> str:
        if not re.search(r"/v\d+$", self.base_url):
            return f"; OpenAI-compatible servers usually answer under /v1 (LLM_BASE_URL={self.base_url}/v1?)"
        return "; the server's GET /v1/models lists the names it knows"

    def _failure(self, err: BaseException) -> Failure | None:
        openai = _sdk()
        if isinstance(err, openai.APIStatusError):
            return Failure(err.status_code, error_text(err), err.response.headers)
        if isinstance(err, openai.APIConnectionError):
            timed_out = isinstance(err, openai.APITimeoutError)
            reason = error_text(err)
            cause = err.__cause__
            if cause is not None and not timed_out and str(cause):
                reason = f"{reason} ({str(cause).splitlines()[0][:200]})"
            return Failure(None, reason, None, timed_out)
        if isinstance(err, openai.APIResponseValidationError):  # pragma: no cover - defensive
            raise LLMError(f"{self._describe()} sent a reply this client cannot read: {err}") from err
        return None

    def _reply_usage(self, reply: Any) -> dict[str, int]:
        usage = getattr(reply, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        return {"input_tokens": prompt - cached, "cache_read_input_tokens": cached,
                "output_tokens": int(getattr(usage, "completion_tokens", 0) or 0)}

    def _create(self, convo: list[dict[str, Any]], max_tokens: int, **params: Any) -> Any:
        """One completion.  OpenAI's newer models refuse ``max_tokens`` (they take
        ``max_completion_tokens``, which local servers do not know): the refusal switches this
        client to the other name, once."""
        def send() -> Any:
            return self._client.chat.completions.create(
                model=self.model, messages=convo, **{self._max_tokens_param: max_tokens}, **params)

        try:
            reply = self._call(send)
        except LLMError as err:
            if not (err.status == 400 and "max_completion_tokens" in err.message
                    and self._max_tokens_param == "max_tokens"):
                raise
            self._max_tokens_param = "max_completion_tokens"
            reply = self._call(send)
        if not getattr(reply, "choices", None):
            raise LLMError(f"{self._describe()} returned no choices")
        return reply

    @staticmethod
    def _messages(system: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"role": "system", "content": system},
                *({"role": m.get("role", "user"), "content": _text_of(m.get("content"))} for m in messages)]

    # -- the interface ------------------------------------------------------------------------

    def complete_tool(
        self,
        system: str,
        messages: list[dict[str, Any]],
        tool: Mapping[str, Any],
        *,
        max_tokens: int = 4096,
        validate: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        name = str(tool["name"])
        schema = dict(tool.get("input_schema") or {"type": "object"})
        function = {"type": "function", "function": {
            "name": name, "description": str(tool.get("description", "")), "parameters": schema}}
        # json: asked for, or learnt from an earlier call of this client (tools rejected or ignored)
        mode = "json" if self.structured == "json" or (self.structured == "auto" and self.tool_calling is False) else "tools"
        convo = self._messages(system if mode == "tools" else f"{system}\n\n{json_instruction(tool)}", messages)
        problem = ""
        attempts = 0
        while attempts < self.tool_attempts:
            attempts += 1
            if mode == "tools":
                choice = self._tool_choice or {"type": "function", "function": {"name": name}}
                try:
                    reply = self._create(convo, max_tokens, tools=[function], tool_choice=choice)
                except LLMError as err:
                    rejected = err.status in (400, 422, 500, 501) and _TOOLS_REJECTED.search(err.message)
                    if rejected and self._tool_choice is None and "tool_choice" in err.message:
                        self._tool_choice, attempts = "required", attempts - 1
                        continue
                    if not (self.structured == "auto" and rejected):
                        raise
                    self._log(f"{self._describe()} does not take tool calls ({err.message}); "
                              "asking for plain JSON instead")
                    mode, self.tool_calling, attempts = "json", False, attempts - 1
                    convo = self._messages(f"{system}\n\n{json_instruction(tool)}", messages)
                    continue
            else:
                reply = self._create(convo, max_tokens)
            first = reply.choices[0]
            message = first.message
            truncated = first.finish_reason == "length"
            text = (message.content or "").strip() if isinstance(message.content, str) else ""
            calls = [c for c in (getattr(message, "tool_calls", None) or [])
                     if getattr(getattr(c, "function", None), "name", None) == name]
            call = calls[0] if calls else None
            if mode == "tools" and call is not None:
                try:
                    value = json.loads(call.function.arguments or "")
                    if isinstance(value, str):  # arguments encoded twice (seen from small models)
                        value = json.loads(value)
                except ValueError:
                    found = "the tool arguments are not valid JSON"
                else:
                    found = check_reply(value, schema, validate)
                if found is None:
                    self.tool_calling = True
                    return value
                problem, hint = found, f"Rejected: {found}."
            else:
                # no tool call: plain JSON is what json mode asks for, and what a server that
                # ignores tool_choice may still send
                try:
                    value = parse_json_object(text)
                except ValueError as err:
                    value, found = None, str(err)
                else:
                    found = check_reply(value, schema, validate)
                if found is None:
                    if mode == "tools":
                        self.tool_calling = False
                    return value
                problem = found if mode == "json" or value is not None else "the reply did not call the tool"
                hint = (f"Rejected: {found}." if mode == "json" or value is not None
                        else f"Your reply did not call the `{name}` tool.")
            if truncated:
                problem += f" (the reply hit max_tokens={max_tokens})"
                hint += " The reply hit the length limit: keep it shorter."
            if mode == "tools" and call is None and self.structured == "auto":
                # the server ignored the forced call: switch to the JSON protocol for the retry
                self._log(f"{self._describe()} answered without the tool call; asking for plain JSON instead")
                mode, self.tool_calling = "json", False
                convo = [*self._messages(f"{system}\n\n{json_instruction(tool)}", messages),
                         {"role": "assistant", "content": text or "(no reply)"},
                         {"role": "user", "content": f"{hint} Reply with only the JSON object."}]
            elif mode == "tools":
                convo = [*convo, *self._tool_feedback(message, calls, call, hint, name)]
            else:
                convo = [*convo, {"role": "assistant", "content": text or "(no reply)"},
                         {"role": "user", "content": f"{hint} Reply again with only the JSON object, "
                                                     "following the schema."}]
            self._note_tool_retry()
        how = "a valid JSON reply" if mode == "json" else f"a valid `{name}` call"
        raise LLMError(
            f"{self._describe()} did not produce {how} for `{name}` after {self.tool_attempts} "
            f"attempts; last problem: {problem}",
            details={"tool": name, "problem": problem},
        )

    @staticmethod
    def _tool_feedback(message: Any, calls: list[Any], call: Any, hint: str, name: str) -> list[dict[str, Any]]:
        """The rejected reply replayed as the assistant turn, a ``tool`` message answering each
        of its calls (the API wants one per call id), and the problem."""
        all_calls = list(getattr(message, "tool_calls", None) or [])
        if not all_calls:
            return [{"role": "assistant", "content": (message.content or "(no reply)")},
                    {"role": "user", "content": f"{hint} Call `{name}` with input that follows its schema."}]
        turn = {"role": "assistant", "content": message.content or None, "tool_calls": [
            {"id": c.id, "type": "function",
             "function": {"name": c.function.name, "arguments": c.function.arguments or ""}}
            for c in all_calls]}
        out: list[dict[str, Any]] = [turn]
        for c in all_calls:
            is_call = call is not None and c.id == call.id
            out.append({"role": "tool", "tool_call_id": c.id,
                        "content": f"{hint} Call `{name}` again with input that follows its schema."
                        if is_call else "Ignored: only one call of the requested tool is used."})
        if call is None:
            out.append({"role": "user", "content": f"{hint} Call `{name}` with input that follows its schema."})
        return out

    def complete_text(self, system: str, messages: list[dict[str, Any]], *, max_tokens: int = 2048) -> str:
        reply = self._create(self._messages(system, list(messages)), max_tokens)
        choice = reply.choices[0]
        text = (choice.message.content or "").strip() if isinstance(choice.message.content, str) else ""
        if not text:
            raise LLMError(f"{self._describe()} returned no text (finish_reason: {choice.finish_reason})")
        return text

    def list_models(self) -> list[str]:
        """The model names the server lists (``GET /models``); [] when it lists none."""
        page = self._call(lambda: self._client.models.list())
        return sorted(str(getattr(m, "id", "")) for m in getattr(page, "data", []) or [] if getattr(m, "id", ""))
