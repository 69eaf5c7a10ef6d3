"""The shapes of a trace's results, typed: what ``episteme trace`` prints as JSON, what chat,
``lint --claims``, the server and the UI read.  ``TypedDict`` only, so the JSON is the dicts
themselves, key for key; and the trace's text rendering (:func:`format_trace_text`).

Optional keys (added by some paths: Claude's re-check, page boxes, images) are declared in the
``total=False`` parts; every other key is always there.
"""

from __future__ import annotations

from typing import TypedDict

# ------------------------------------------------------------------------------ passages


class TracedPassage(TypedDict):
    """One scored passage as the JSON shows it."""

    paper: str
    section: str
    section_id: str
    page: int
    passage: str
    passage_id: str
    similarity: float  # cosine of the claim and the passage
    score: float  # the claim's support from this passage (see TraceTuning)


class ClaimPassage(TracedPassage, total=False):
    """A passage cited for one claim, best first: its rank and the quote (the first passage's
    quote is the span the verdict rests on)."""

    rank: int
    quote: str
    boxes: list[dict]  # highlight boxes of the quote (pdf.highlight.attach_boxes)


class Source(TracedPassage, total=False):
    """A passage supporting the answer, with the claim it supports best."""

    claim: str
    quote: str
    boxes: list[dict]
    image: str  # --render: the PNG written
    image_error: str


# ------------------------------------------------------------------------------ verdicts


class Reason(TypedDict):
    """Why a verdict: a stable ``code`` (``match``, ``number_mismatch``, ``negation`` ...) and
    a sentence for people."""

    code: str
    text: str


class EvidenceRef(TypedDict):
    """The passage and quote a supported or contradicted verdict rests on."""

    passage_id: str
    quote: str


class _ClaimVerdictBase(TypedDict):
    claim: str
    verdict: str  # supported | contradicted | unsupported (verify.VERDICTS)
    supported: bool
    support: float
    reason: Reason
    passages: list[ClaimPassage]


class Compared(TypedDict):
    """What a verdict compared: the claim's words it rests on (a value, a name, a comparative,
    the claim) and the passage's (its value, name or sentence; None when no passage has any)."""

    claim: str
    evidence: str | None


class ClaimVerdict(_ClaimVerdictBase, total=False):
    """One claim of a traced answer with its verdict.  ``passages``: the one the verdict rests
    on first (its quote is the verdict's span), then the other candidates by score, best first."""

    compared: Compared
    check: bool  # unsupported, with a possible contradiction the rules could not align: check it
    evidence: EvidenceRef  # absent when unsupported
    boxes: list[dict]
    # Claude's re-check (query.verify_llm)
    verifier: str  # "offline" | "claude"
    offline_verdict: str
    llm_rejected: str


# ------------------------------------------------------------------------------ the trace

TraceScope = TypedDict("TraceScope", {
    "from": str,  # "sections" | "papers" | "all"
    "papers": list[str] | None,  # None = every ingested paper
    "sections": list[str],
    "sections_without_sources": list[str],
    "missing_papers": list[str],
})


class _TraceResultBase(TypedDict):
    scope: TraceScope
    threshold: float
    claims: list[ClaimVerdict]
    sources: list[Source]
    unsupported_claims: list[str]  # not supported (contradicted ones included)
    contradicted_claims: list[str]


class TraceResult(_TraceResultBase, total=False):
    """What :meth:`episteme.query.trace.Tracer.trace` returns (and ``episteme trace`` prints)."""

    claims_not_traced: int
    warning: str
    note: str
    verifier: str  # set by the command: "offline", or "claude" after the re-check
    llm_usage: dict


def public_passage(h: dict) -> TracedPassage:
    """What the JSON output shows of one scored passage (``h``: a pooled hit)."""
    return {
        "paper": h["paper"],
        "section": h["section"],
        "section_id": h["section_id"],
        "page": h["page"],
        "passage": h["text"],
        "passage_id": h["id"],
        "similarity": round(float(h["similarity"]), 4),
        "score": round(float(h["score"]), 4),
    }


def quote(text: str, limit: int = 400) -> str:
    """A passage for display: one line, cut at a word boundary with an ellipsis."""
    one = " ".join((text or "").split())
    if len(one) <= limit:
        return one
    cut = one[:limit].rsplit(" ", 1)[0]
    return cut + " …"


def format_trace_text(result: TraceResult) -> str:
    """A trace result for people: each claim with its verdict ("CHECK THIS" for an unsupported
    claim with a possible contradiction to look at), the reason and what was compared, then its
    passages: the first one's quote is the span the verdict rests on, the others by score."""
    lines: list[str] = []
    label = {"supported": "supported", "contradicted": "CONTRADICTED", "unsupported": "UNSUPPORTED"}
    for i, c in enumerate(result.get("claims", []), 1):
        verdict = c.get("verdict") or ("supported" if c["supported"] else "unsupported")
        shown_as = "CHECK THIS" if c.get("check") else label.get(verdict, verdict)
        lines.append(f"{i}. {c['claim']}  [{shown_as}, support {c['support']:.2f}]")
        if c.get("reason") and verdict != "supported":
            lines.append(f"   why: {c['reason']['text']}")
        cmp = c.get("compared") or {}
        if verdict != "supported" and cmp.get("evidence"):
            lines.append(f"   compared: claim \"{quote(cmp['claim'], 160)}\" / passage "
                         f"\"{quote(cmp['evidence'], 160)}\"")
        shown = c["passages"] if verdict == "supported" else c["passages"][:1]
        for rank, p in enumerate(shown, 1):
            lines.append(f"   [{rank}] {p['paper']}, {p['section']}, p. {p['page']} "
                         f"(similarity {p['similarity']:.2f}, score {p['score']:.2f})")
            mark = "contradicting quote" if verdict == "contradicted" and rank == 1 else ""
            lines.append(f"     > {quote(p.get('quote') or p['passage'])}" + (f"  ({mark})" if mark else ""))
    n_contra = len(result.get("contradicted_claims") or [])
    n_uns = len(result.get("unsupported_claims") or []) - n_contra
    if result.get("claims"):
        lines.append(f"verdicts: {len(result['claims']) - n_contra - n_uns} supported, {n_contra} "
                     f"contradicted, {n_uns} unsupported")
    for key in ("warning", "note"):
        if result.get(key):
            lines.append(f"{key}: {result[key]}")
    return "\n".join(lines) + "\n"
