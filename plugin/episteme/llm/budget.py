"""How much evidence one model call may carry: ``LLM_CONTEXT`` tokens, shared between the
prompt and the reply, so that an 8k-context local model gets requests it can read whole.

A server that gets more than its window either truncates the prompt silently (Ollama keeps the
end and drops the start: the instructions and the first passages) or refuses it; both are worse
than sending less.  So each caller asks :class:`Budget` how many characters of evidence fit and
shapes its requests: the verifier sends batches of claims and fewer passages per claim, the
answerer shorter (or fewer) sections, the writer a long paper section in chunks.  With the
default windows below the Anthropic path sends what it always sent.

Tokens are estimated from characters (:data:`CHARS_PER_TOKEN`): no tokenizer of the model is at
hand, and a cautious ratio costs a little room, not a truncated prompt.  Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Settings

#: context window (tokens) when ``LLM_CONTEXT`` is not set: Claude's 200k; for an
#: OpenAI-compatible server 8k, the common window of small local models (OpenAI's own API:
#: 128k, the window of its gpt-4o and gpt-4.1 models)
DEFAULT_CONTEXT = {"anthropic": 200_000, "openai": 8_192, "openai-hosted": 128_000}
#: characters per token for the estimate: English prose runs about 4 with the BPE tokenizers of
#: current models, paper text with numbers, symbols and names lower; 3.2 keeps a margin
#: (benchmarks/bench_chars_per_token.py, a WordPiece proxy: dev papers min 3.60 / median 4.03,
#: held-out layouts min 3.18 / median 4.14; benchmarks/RESULTS-llm-budget.md)
CHARS_PER_TOKEN = 3.2
#: tokens kept free for the chat template, tool definitions and message framing
OVERHEAD_TOKENS = 300


def tokens(text: str) -> int:
    """Estimated tokens of ``text`` (see :data:`CHARS_PER_TOKEN`)."""
    return int(len(text or "") / CHARS_PER_TOKEN) + 1


@dataclass(frozen=True)
class Budget:
    """The context window of the configured model, in tokens."""

    context: int

    @classmethod
    def for_settings(cls, settings: Settings | None) -> Budget:
        if settings is None:
            return cls(DEFAULT_CONTEXT["anthropic"])
        if settings.llm_context:
            return cls(int(settings.llm_context))
        provider = settings.provider
        if provider == "openai" and (not settings.llm_base_url or "api.openai.com" in settings.llm_base_url):
            provider = "openai-hosted"
        return cls(DEFAULT_CONTEXT.get(provider, DEFAULT_CONTEXT["openai"]))

    def reply_tokens(self, wanted: int) -> int:
        """``max_tokens`` for a reply: ``wanted``, but at most a third of the window, so the
        prompt keeps room (a small window still gets a useful reply of 1/3 of it)."""
        return max(256, min(int(wanted), self.context // 3))

    def evidence_chars(self, reply_tokens: int, *fixed: str) -> int:
        """Characters of evidence that fit beside the ``fixed`` texts (system prompt, question,
        framing) and a reply of ``reply_tokens``; at least 0."""
        left = self.context - reply_tokens - OVERHEAD_TOKENS - sum(tokens(t) for t in fixed)
        return max(0, int(left * CHARS_PER_TOKEN))


def split_text(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, cut at a paragraph, else a sentence,
    else a space boundary in the last third of each piece (a chunk a model can still read as
    prose); one piece when it fits."""
    text = text or ""
    if size <= 0 or len(text) <= size:
        return [text]
    out: list[str] = []
    rest = text
    while len(rest) > size:
        window = rest[:size]
        cut = -1
        for sep in ("\n\n", ". ", "\n", " "):
            at = window.rfind(sep, size * 2 // 3)
            if at > 0:
                cut = at + len(sep)
                break
        if cut <= 0:
            cut = size
        out.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        out.append(rest)
    return out


def pack(costs: list[int], capacity: int) -> list[list[int]]:
    """Indices ``0..len(costs)-1`` in order, grouped so that each group's costs sum to at most
    ``capacity`` (an item larger than ``capacity`` alone in its group)."""
    groups: list[list[int]] = []
    used = 0
    for i, cost in enumerate(costs):
        if groups and used + cost <= capacity:
            groups[-1].append(i)
            used += cost
        else:
            groups.append([i])
            used = cost
    return groups


def share(lengths: list[int], room: int, cap: int, floor: int) -> tuple[int, int]:
    """``(n, each)``: keep the first ``n`` items (best first), each cut to ``each`` characters
    (at most ``cap``), so that ``sum(min(length, each))`` fits ``room``.  Short items leave
    their unused share to long ones; when even ``floor`` characters each do not fit, items are
    dropped from the end (at least one is kept)."""
    n = len(lengths)
    while n > 0:
        items = sorted(lengths[:n])
        left, each = room, cap
        for i, length in enumerate(items):
            fair = left // (n - i)
            if length <= fair:
                left -= length
                continue
            each = min(cap, fair)
            break
        if each >= floor or n == 1:
            return n, max(each, 0)
        n -= 1
    return 0, cap
