"""The LLM verifier: one Claude call per answer checks every claim against its top passages.

The offline verifier (:mod:`episteme.query.verify`) reads numbers, names, negations and comparisons
by rule; Claude reads meaning ("discarded" = "not retained").  It runs after the offline pass,
when a key is set, and is held to the same standard of evidence: each verdict must quote the
span of a given passage it rests on, and a quote that does not occur verbatim in that passage
(after collapsing whitespace) is rejected, so the claim keeps its offline verdict.  The
passages go into the prompt as delimited untrusted data; the answer comes back through a forced
tool call (``verdicts``) validated against its schema and the claim/passage numbers.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .verify import CONTRADICTED, SUPPORTED, UNSUPPORTED, VERDICTS

EVIDENCE_PER_CLAIM = 3
MAX_PASSAGE_CHARS = 1800

SYSTEM_PROMPT = (
    "You check claims against passages of research papers. For each numbered claim you get its "
    "candidate passages. Decide: 'supported' when a passage states the claim (same numbers, "
    "names, direction and polarity), 'contradicted' when a passage states something that makes "
    "the claim false (another value for the same thing, the opposite direction, a negation, a "
    "swapped name), 'unsupported' when no passage says it either way. For supported and "
    "contradicted verdicts, give the passage number and copy the shortest span of it that shows "
    "this, character for character. Return every claim through the `verdicts` tool."
)

VERDICTS_TOOL: dict[str, Any] = {
    "name": "verdicts",
    "description": "Report a verdict for every claim, with the quoted evidence span.",
    "input_schema": {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "claim": {"type": "integer", "description": "the claim's number"},
                        "verdict": {"type": "string", "enum": list(VERDICTS)},
                        "passage": {"type": "integer", "description": "the passage's number"},
                        "quote": {"type": "string", "description": "verbatim span of that passage"},
                        "reason": {"type": "string", "description": "one sentence: why"},
                    },
                    "required": ["claim", "verdict", "reason"],
                },
            },
        },
        "required": ["verdicts"],
    },
}


def _squash(text: str) -> str:
    return " ".join((text or "").split())


def build_messages(traced: dict, k: int = EVIDENCE_PER_CLAIM) -> tuple[str, list[dict]]:
    """The system prompt and the user turn: each claim with its top-``k`` passages, numbered
    ``<claim>.<passage>`` (passages as delimited untrusted blocks)."""
    from ..llm.client import UNTRUSTED_NOTICE, wrap_untrusted

    parts = []
    for ci, c in enumerate(traced.get("claims", []), 1):
        parts.append(f"Claim {ci}: {c['claim']}")
        for pj, p in enumerate(c.get("passages", [])[:k], 1):
            parts.append(wrap_untrusted(f"passage {pj} of claim {ci} | {p['paper']} | {p['section']}",
                                        p["passage"][:MAX_PASSAGE_CHARS]))
        parts.append("")
    user = "Verify each claim against its passages.\n\n" + "\n".join(parts)
    return f"{SYSTEM_PROMPT}\n\n{UNTRUSTED_NOTICE}", [{"role": "user", "content": user}]


def llm_verify(settings, traced: dict, *, client=None, k: int = EVIDENCE_PER_CLAIM) -> dict:
    """``traced`` (a :meth:`Tracer.trace` result) with Claude's verdicts applied where their
    quotes check out.  Each claim gains ``offline_verdict`` and ``verifier`` ("claude" or
    "offline", with ``llm_rejected`` saying why Claude's verdict was not used); the result gains
    ``verifier`` and ``llm_usage`` (tokens and estimated cost, as the writer reports)."""
    from ..llm.budget import Budget
    from ..llm.client import LLMClient

    claims = traced.get("claims", [])
    if not claims:
        return traced

    def validator(claims: list[dict], k: int):  # one batch's check (its own claim numbers)
        n = len(claims)

        def validate(data: dict) -> None:
            seen = set()
            for v in data.get("verdicts", []):
                ci = v.get("claim")
                if not isinstance(ci, int) or not 1 <= ci <= n:
                    raise ValueError(f"claim numbers run from 1 to {n}; got {ci!r}")
                seen.add(ci)
                if v.get("verdict") != UNSUPPORTED:
                    pj = v.get("passage")
                    have = len(claims[ci - 1].get("passages", [])[:k])
                    if not isinstance(pj, int) or not 1 <= pj <= have:
                        raise ValueError(f"claim {ci}: a {v.get('verdict')} verdict needs a passage number "
                                         f"from 1 to {have}")
            missing = sorted(set(range(1, n + 1)) - seen)
            if missing:
                raise ValueError(f"no verdict for claim(s) {', '.join(map(str, missing))}")
        return validate

    own = client is None
    client = client or LLMClient(settings)
    by_claim: dict[int, dict] = {}
    try:
        budget = Budget.for_settings(client.settings)
        for idx, kb in batches(budget, claims, k):  # one call per answer unless the window is small
            part = [claims[i] for i in idx]
            system, messages = build_messages({**traced, "claims": part}, kb)
            data = client.complete_tool(system, messages, VERDICTS_TOOL,
                                        max_tokens=budget.reply_tokens(400 + 250 * len(part)),
                                        validate=validator(part, kb))
            by_claim.update({idx[v["claim"] - 1] + 1: v for v in data["verdicts"]})
        usage = client.usage_summary()
    finally:
        if own:
            client.close()
    out = {**traced, "claims": [dict(c) for c in claims], "verifier": "claude", "llm_usage": usage,
           "model": client.label}
    for ci, c in enumerate(out["claims"], 1):
        v = by_claim[ci]
        c["offline_verdict"] = c.get("verdict")
        verdict = v["verdict"]
        if verdict == UNSUPPORTED:
            _apply(c, verdict, v, None, None)
            continue
        pj = int(v["passage"]) - 1
        passage = c["passages"][pj]
        quote = _squash(v.get("quote", ""))
        text = _squash(passage["passage"])
        if not quote or quote not in text:
            c["verifier"] = "offline"
            c["llm_rejected"] = ("Claude's quote does not occur verbatim in the passage it names; "
                                 "the offline verdict stands")
            continue
        _apply(c, verdict, v, pj, _exact_span(passage["passage"], quote))
    out["unsupported_claims"] = [c["claim"] for c in out["claims"] if c["verdict"] != SUPPORTED]
    out["contradicted_claims"] = [c["claim"] for c in out["claims"] if c["verdict"] == CONTRADICTED]
    supported_ids = {c["passages"][0]["passage_id"] for c in out["claims"]
                     if c["verdict"] == SUPPORTED and c.get("passages")}
    out["sources"] = [s for s in traced.get("sources", []) if s["passage_id"] in supported_ids] or \
        [s for s in traced.get("sources", []) if any(s["claim"] == c["claim"] and c["supported"]
                                                    for c in out["claims"])]
    return out


def batches(budget, claims: list[dict], k: int) -> list[tuple[list[int], int]]:
    """The claims (their indices) in groups that fit the model's window, each with the passages
    per claim it can carry (``k``, fewer when one claim with ``k`` passages does not fit): one
    group for Claude's window, several for an 8k local model (``LLM_CONTEXT``)."""
    from ..llm.budget import OVERHEAD_TOKENS, pack, tokens

    def cost(c: dict, kk: int) -> int:  # prompt tokens of a claim + its share of the reply
        return (tokens(c["claim"]) + 20 + 250
                + sum(tokens(p["passage"][:MAX_PASSAGE_CHARS]) + 30 for p in c.get("passages", [])[:kk]))

    reply_cap = budget.reply_tokens(10**9)
    room = budget.context - OVERHEAD_TOKENS - 400 - tokens(SYSTEM_PROMPT + json.dumps(VERDICTS_TOOL)) - 200
    kk = k
    while kk > 1 and max(cost(c, kk) for c in claims) > room:
        kk -= 1
    most = max(1, (reply_cap - 400) // 250)  # claims whose verdicts fit one reply
    groups = [g[i:i + most] for g in pack([cost(c, kk) for c in claims], room) for i in range(0, len(g), most)]
    return [(g, kk) for g in groups]


def _exact_span(passage: str, squashed_quote: str) -> str:
    """The quote as it is written in the passage (original whitespace kept)."""
    words = squashed_quote.split()
    pat = r"\s+".join(map(re.escape, words))
    m = re.search(pat, passage)
    return m.group(0) if m else squashed_quote


def _apply(c: dict, verdict: str, v: dict, pj: int | None, quote: str | None) -> None:
    c["verdict"] = verdict
    c["supported"] = verdict == SUPPORTED
    c["verifier"] = "claude"
    c["reason"] = {"code": "llm", "text": str(v.get("reason", "")).strip() or verdict}
    if pj is not None and quote is not None:
        passages = c["passages"]
        cited = dict(passages[pj], quote=quote)
        c["passages"] = [cited] + [p for i, p in enumerate(passages) if i != pj]
        for rank, p in enumerate(c["passages"], 1):
            p["rank"] = rank
        c["evidence"] = {"passage_id": cited["passage_id"], "quote": quote}
    elif verdict == UNSUPPORTED:
        c.pop("evidence", None)
