"""The language model: one interface (:class:`episteme.llm.client.LLMClient`) over the Anthropic
Messages API and any OpenAI-compatible Chat Completions server (local ones included), with the
offline-mode detection, the evidence budget for small context windows (:mod:`.budget`) and the
untrusted-text wrapper that keeps paper text from becoming instructions."""
