"""The verdicts and the record of one: what :class:`~.verifier.Verifier` returns.

Three verdicts, and a flag:

* ``supported``: a passage states the claim;
* ``contradicted`` (a red mark, a lint error): a passage states another value or the opposite for
  the *same* thing the claim is about (the same quantity, name, cell, direction), aligned by the
  claim's and the passage's own words;
* ``unsupported`` (a warning): no passage states it.  With ``check`` true, a passage gives something
  else that the rules could not align with the claim for certain (another number near other words, a
  comparison with its sides read the other way round ...): not a contradiction, a "check this".

Every verdict carries ``compared``: ``{"claim": ..., "evidence": ...}``, the claim's words the
verdict rests on and the passage's words they were compared with (``evidence`` None when no
passage has any), so a person or the agent can judge it at a glance.
"""

from __future__ import annotations

SUPPORTED, CONTRADICTED, UNSUPPORTED = "supported", "contradicted", "unsupported"
VERDICTS = (SUPPORTED, CONTRADICTED, UNSUPPORTED)


def outcome(verdict: str, code: str, text: str, best: int | None,
            span: tuple[int, int] | None, order: list[int], cands: list | None = None, *,
            compared: tuple[str, str | None] | None = None, check: str | None = None) -> dict:
    """A verdict as :meth:`~.verifier.Verifier.verify` returns it: ``span`` (the quote's offsets in
    passage ``best``) only when there is a passage and a span; ``check`` (why the alignment is
    uncertain) turns a contradiction into ``unsupported`` with ``check`` set."""
    if check is not None:
        verdict, text = UNSUPPORTED, f"{text} (check this: {check})"
    out = {"verdict": verdict, "reason": {"code": code, "text": text}, "evidence": best,
           "order": order}
    if check is not None:
        out["check"] = True
    if compared is not None:
        out["compared"] = {"claim": compared[0], "evidence": compared[1]}
    if best is not None and cands is not None and span is not None:
        a, b = span
        out["span"] = (a, b)
    return out


def front(order: list[int], i: int) -> list[int]:
    """``order`` with passage ``i`` moved first (the passage the verdict rests on)."""
    return [i] + [j for j in order if j != i]
