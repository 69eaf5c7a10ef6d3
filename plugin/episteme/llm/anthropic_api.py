"""Claude through the Anthropic Messages API (the ``anthropic`` SDK): the
:class:`~episteme.llm.base.LLMClient` for ``LLM_PROVIDER=anthropic`` (the default).

Structured output is one forced tool call (``tool_choice`` names the tool); a reply without the
call, or one whose input fails the schema or the caller's check, is answered in the same
conversation (a ``tool_result`` with ``is_error`` for each ``tool_use`` block) and asked again.
This is the one module that touches the ``anthropic`` SDK, imported lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..config import Settings
from ..errors import MissingDependencyError
from .base import Failure, LLMClient, LLMError, check_reply, error_text, register


def _sdk():
    try:
        import anthropic
    except ImportError as e:  # pragma: no cover - the dev environment has it
        raise MissingDependencyError(
            "the Claude mode needs the anthropic package: pip install 'episteme[llm]'"
        ) from e
    return anthropic


def _block_to_param(block: Any) -> dict[str, Any] | None:
    """An assistant content block as a request param (only the fields the API accepts back)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return None


@register
class AnthropicClient(LLMClient):
    """Claude through the Messages API; see :class:`~episteme.llm.base.LLMClient`."""

    provider = "anthropic"
    default_tool_attempts = 3
    key_variables = "LLM_API_KEY / ANTHROPIC_API_KEY"

    def _connect(self, settings: Settings) -> None:
        api_key = (settings.api_key or "").strip()
        if not api_key:
            raise LLMError(
                "no Anthropic API key: set ANTHROPIC_API_KEY (or LLM_API_KEY) to use Claude, "
                "or run in the offline mode"
            )
        anthropic = _sdk()
        # max_retries=0: the base class owns the retry policy.  An explicit timeout also stops
        # the SDK from refusing large non-streaming max_tokens values.
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,
        )

    def _describe(self) -> str:
        return "the Anthropic API"

    def _unreachable(self, failure: Failure, attempt: int) -> LLMError:
        return LLMError(
            f"could not reach the Anthropic API at {self._client.base_url} after "
            f"{attempt + 1} attempts: {failure.reason}"
        )

    def _failure(self, err: BaseException) -> Failure | None:
        anthropic = _sdk()
        if isinstance(err, anthropic.APIStatusError):
            return Failure(err.status_code, error_text(err), err.response.headers)
        if isinstance(err, anthropic.APIConnectionError):
            return Failure(None, error_text(err), None, isinstance(err, anthropic.APITimeoutError))
        if isinstance(err, anthropic.APIResponseValidationError):  # pragma: no cover - defensive
            raise LLMError(f"the Anthropic API sent a reply this client cannot read: {err}") from err
        return None

    def _reply_usage(self, reply: Any) -> dict[str, int]:
        usage = getattr(reply, "usage", None)
        return {key: int(getattr(usage, key, 0) or 0) for key in self._usage}

    def _create(self, **params: Any) -> Any:
        return self._call(lambda: self._client.messages.create(model=self.model, **params))

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
        tool_param = {
            "name": name,
            "description": str(tool.get("description", "")),
            "input_schema": dict(tool.get("input_schema") or {"type": "object"}),
        }
        convo = list(messages)
        problem = ""
        for _attempt in range(self.tool_attempts):
            reply = self._create(
                system=system,
                messages=convo,
                max_tokens=max_tokens,
                tools=[tool_param],
                tool_choice={"type": "tool", "name": name, "disable_parallel_tool_use": True},
            )
            if reply.stop_reason == "refusal":
                raise LLMError("Claude declined to answer this request (stop_reason: refusal)")
            truncated = reply.stop_reason == "max_tokens"
            call = next(
                (b for b in reply.content if getattr(b, "type", None) == "tool_use" and b.name == name),
                None,
            )
            if call is None:
                problem = "the reply did not call the tool"
                hint = f"Your reply did not call the `{name}` tool."
            else:
                found = check_reply(call.input, tool_param["input_schema"], validate)
                if found is None:
                    return call.input
                problem = found
                hint = f"Rejected: {problem}."
            if truncated:
                problem += f" (the reply hit max_tokens={max_tokens})"
                hint += " The reply hit the length limit: keep the input shorter."
            hint += f" Call `{name}` again with input that follows its schema."
            convo = [*convo, *self._feedback_turns(reply.content, call, hint)]
            self._note_tool_retry()
        raise LLMError(
            f"Claude did not produce a valid `{name}` call after {self.tool_attempts} attempts; "
            f"last problem: {problem}",
            details={"tool": name, "problem": problem},
        )

    @staticmethod
    def _feedback_turns(content: list[Any], call: Any, hint: str) -> list[dict[str, Any]]:
        """The rejected reply replayed as the assistant turn, plus a user turn that answers every
        ``tool_use`` block in it (the API requires a ``tool_result`` for each) and says what to
        fix: in the failing call's result when there is one, else as text."""
        assistant = [p for p in (_block_to_param(b) for b in content) if p is not None]
        answer: list[dict[str, Any]] = []
        for block in assistant:
            if block["type"] != "tool_use":
                continue
            is_call = call is not None and block["id"] == call.id
            answer.append(
                {
                    "type": "tool_result",
                    "tool_use_id": block["id"],
                    "is_error": True,
                    "content": hint if is_call else "Ignored: only one call of the requested tool is used.",
                }
            )
        if call is None:
            answer.append({"type": "text", "text": hint})
        turns = [{"role": "assistant", "content": assistant}] if assistant else []
        return [*turns, {"role": "user", "content": answer}]

    def complete_text(self, system: str, messages: list[dict[str, Any]], *, max_tokens: int = 2048) -> str:
        reply = self._create(system=system, messages=list(messages), max_tokens=max_tokens)
        if reply.stop_reason == "refusal":
            raise LLMError("Claude declined to answer this request (stop_reason: refusal)")
        text = "".join(b.text for b in reply.content if getattr(b, "type", None) == "text").strip()
        if not text:
            raise LLMError(f"Claude returned no text (stop_reason: {reply.stop_reason})")
        return text
