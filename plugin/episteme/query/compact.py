"""The compact form of a trace or chat result: what an agent reads by default.

Inside Claude Code every byte a command prints is read by the model.  A full trace gives, per
claim, three passages with their whole text, scores and highlight boxes, and then the sources
again (about 10 KB per claim); what the agent acts on is, per claim, the verdict, the reason and
the one best quote with where it is printed.  So ``trace`` and ``chat`` print that by default
(JSON), and the whole result with ``--full`` (what the web UI, ``--render`` and ``--format
text`` use); ``--boxes`` adds the best quote's highlight boxes to the compact form.  The schema
is documented in ``skills/wiki-query/references/output.md``.

Per claim (:func:`compact_claim`): ``claim``, ``verdict`` (``supported`` | ``unsupported`` |
``contradicted``), ``reason`` (one sentence), and ``quote`` (``{paper, section, page, text}``:
the passage that supports or contradicts it) or, for an unsupported claim, ``closest`` (the
nearest passage, which does *not* state it).

Light: standard library only, until ``--boxes`` asks for the PDF's boxes.
"""

from __future__ import annotations

from typing import Any

#: top-level keys of a chat result kept in the compact form, in this order (when present)
CHAT_KEYS = ("question", "answer", "mode", "model", "covered", "abstained", "wiki_sections_used",
             "closest_topics", "dropped_claims", "note", "warning", "trace_error")
#: top-level keys of a trace result kept in the compact form, besides ``claims`` and ``counts``
TRACE_KEYS = ("verifier", "model", "note", "warning")


def add_output_options(parser: Any) -> None:
    """``--full`` and ``--boxes`` for a command that prints a trace or chat result."""
    parser.add_argument("--full", action="store_true",
                        help="print the whole result: every passage per claim with its scores "
                             "and boxes, and the sources (default: per claim the verdict, the "
                             "reason and the best quote)")
    parser.add_argument("--boxes", action="store_true",
                        help="with the compact form: the best quote's highlight boxes too")


def best_passage(claim: dict) -> dict | None:
    """The passage a claim's verdict rests on: its evidence (supported or contradicted), else
    its first-ranked passage (the closest, for an unsupported claim)."""
    passages = [p for p in claim.get("passages") or [] if isinstance(p, dict)]
    ev = claim.get("evidence")
    if isinstance(ev, dict):
        pid = ev.get("passage_id")
        for p in passages:
            if p.get("passage_id") == pid:
                return {**p, "quote": ev.get("quote") or p.get("quote"),
                        "boxes": ev.get("boxes") or p.get("boxes")}
        if ev.get("paper"):
            return ev
    return passages[0] if passages else None


def compact_claim(claim: dict, *, boxes: bool = False) -> dict:
    """One claim as the agent reads it (see the module docstring)."""
    verdict = claim.get("verdict") or ("supported" if claim.get("supported") else "unsupported")
    reason = claim.get("reason")
    out: dict[str, Any] = {"claim": claim.get("claim", ""), "verdict": verdict,
                           "reason": reason.get("text", "") if isinstance(reason, dict) else
                           (reason or "")}
    if claim.get("check"):  # unsupported, with a possible contradiction the rules could not align
        out["check"] = True
    if isinstance(claim.get("compared"), dict):  # what the verdict compared, to judge it at a glance
        out["compared"] = claim["compared"]
    best = best_passage(claim)
    if best is not None:
        quote = {"paper": best.get("paper"), "section": best.get("section"),
                 "page": best.get("page"),
                 "text": best.get("quote") or best.get("passage") or best.get("text") or ""}
        if boxes:
            quote["boxes"] = best.get("boxes") or []
        out["quote" if verdict != "unsupported" else "closest"] = quote
    return out


def _counts(claims: list[dict]) -> dict[str, int]:
    out = {"supported": 0, "unsupported": 0, "contradicted": 0}
    for c in claims:
        out[c["verdict"]] = out.get(c["verdict"], 0) + 1
    return out


def compact_trace(result: dict, *, boxes: bool = False) -> dict:
    """A trace result's compact form: ``claims`` (compact), ``counts`` of each verdict, and
    ``verifier``/``note``/``warning`` when present."""
    claims = [compact_claim(c, boxes=boxes) for c in result.get("claims") or []]
    out: dict[str, Any] = {"claims": claims, "counts": _counts(claims)}
    for key in TRACE_KEYS:
        if result.get(key):
            out[key] = result[key]
    return out


def compact_chat(result: dict, *, boxes: bool = False) -> dict:
    """A chat result's compact form: the answer, its mode and coverage, the wiki sections it
    used, the claims (compact) and the notes, when present."""
    out: dict[str, Any] = {}
    for key in CHAT_KEYS:
        if key in result and (result[key] or key in ("covered", "answer", "wiki_sections_used")):
            out[key] = result[key]
    claims = [compact_claim(c, boxes=boxes) for c in result.get("claims") or []]
    out["claims"] = claims
    out["counts"] = _counts(claims)
    return out


def emit_compact(settings: Any, result: dict, args: Any, *, kind: str) -> bool:
    """Print ``result`` (a ``trace`` or ``chat`` result) in the compact form and return True,
    or return False when the command asked for the whole result (``--full``, ``--render``,
    ``--format text``): the caller then prints it as before."""
    if getattr(args, "full", False) or getattr(args, "render", None) or \
            getattr(args, "format", "json") == "text":
        return False
    boxes = bool(getattr(args, "boxes", False))
    if boxes:
        import functools

        from ..pdf.highlight import attach_boxes
        from ..stores.sqlite import passage_boxes

        attach_boxes(settings.wiki, result, stored=functools.partial(passage_boxes, settings))
    from ..cliutil import print_json

    print_json(compact_chat(result, boxes=boxes) if kind == "chat" else
               compact_trace(result, boxes=boxes))
    return True
