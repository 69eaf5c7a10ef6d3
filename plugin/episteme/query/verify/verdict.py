"""The verdicts and the record of one: what :class:`~.verifier.Verifier` returns."""

from __future__ import annotations

SUPPORTED, CONTRADICTED, UNSUPPORTED = "supported", "contradicted", "unsupported"
VERDICTS = (SUPPORTED, CONTRADICTED, UNSUPPORTED)


def outcome(verdict: str, code: str, text: str, best: int | None,
            span: tuple[int, int] | None, order: list[int], cands: list | None = None) -> dict:
    """A verdict as :meth:`~.verifier.Verifier.verify` returns it: ``span`` (the quote's offsets in
    passage ``best``) only when there is a passage and a span."""
    out = {"verdict": verdict, "reason": {"code": code, "text": text}, "evidence": best,
           "order": order}
    if best is not None and cands is not None and span is not None:
        a, b = span
        out["span"] = (a, b)
    return out


def front(order: list[int], i: int) -> list[int]:
    """``order`` with passage ``i`` moved first (the passage the verdict rests on)."""
    return [i] + [j for j in order if j != i]
