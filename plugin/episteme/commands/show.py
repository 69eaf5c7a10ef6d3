"""``episteme show PAPER --page N [--quote "…" | --passage ID] --out FILE.png``: write a page of
a paper with the quoted passage highlighted, so an agent (or a person) can look at the evidence.

Without ``--page``, the page is the passage's (``--passage``) or wherever the quote is found.
Prints ``{"paper", "page", "out", "boxes", "scale", "pixels"}``.  ``render_sources`` is what
``trace``/``chat --render DIR`` call: one such image per source.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..cliutil import ArgumentParser, format_is_json, print_json, run_main
from ._stores import add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme show", description=__doc__.splitlines()[0])
    p.add_argument("paper", help="the paper's file name in raw/ (e.g. attention_1706.03762v5.pdf)")
    p.add_argument("--page", type=int, default=None, help="1-based page (default: the quote's)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quote", default=None, help="text to highlight (whitespace, hyphenation and "
                   "ligatures may differ from the PDF's)")
    g.add_argument("--passage", default=None, help="a passage id (from trace/chat) to highlight")
    p.add_argument("--out", required=True, help="the PNG file to write")
    p.add_argument("--scale", type=float, default=1.5, help="1 = 72 dpi (0.25..4, default 1.5)")
    p.add_argument("--format", choices=["json", "text"], default="json")
    add_store_options(p)
    return p


def passage_text(settings, passage_id: str) -> dict:
    """The stored passage ``{paper, page, text}`` for an id (NotFoundError if there is none)."""
    from ..errors import NotFoundError
    from ..stores.sqlite import open_store

    with open_store(settings, readonly=True) as st:
        row = st.passages_by_id([passage_id]).get(passage_id)
    if row is None:
        raise NotFoundError(f"no passage {passage_id!r} in the store")
    return {"paper": row.get("paper_id") or row.get("paper"), "page": row.get("page"),
            "text": row.get("text") or ""}


def show_page(wiki: Path, paper: str, out: Path, *, page: int | None = None,
              quote: str | None = None, scale: float = 1.5, boxes: list[dict] | None = None) -> dict:
    """Render ``paper``'s page with the boxes of ``quote`` (or the ``boxes`` given) drawn in, and
    write it to ``out`` atomically.  The page defaults to the first box's."""
    from ..errors import NotFoundError, UsageError
    from ..fsutil import atomic_write_bytes
    from ..pdf.highlight import quote_boxes
    from ..pdf.render import highlighted_png, paper_pdf

    pdf = paper_pdf(wiki, paper)
    if boxes is None:
        boxes = quote_boxes(pdf, page, quote) if quote else []
    if quote and not boxes:
        where = f"on page {page} or the next" if page else "in the paper"
        raise NotFoundError(f"the quote was not found {where} of {pdf.name}")
    if page is None:
        if not boxes:
            raise UsageError("give --page, or a --quote/--passage to find the page by")
        page = int(boxes[0]["page"])
    png, geo = highlighted_png(wiki, pdf.name, page, boxes, scale)
    atomic_write_bytes(out, png)
    return {"paper": pdf.name, "page": page, "out": str(out),
            "boxes": [b for b in boxes if b["page"] == page], "scale": geo["scale"],
            "pixels": geo["pixels"]}


def render_sources(wiki: Path, result: dict, out_dir: str | Path, scale: float = 1.5) -> list[str]:
    """One PNG per source of a trace/chat ``result`` in ``out_dir`` (``source-N-<paper>-pN.png``,
    N = the source's rank), the path recorded on the source as ``image``.  Sources whose page
    cannot be rendered get ``image_error`` instead; the answer itself is never lost."""
    from ..errors import EpistemeError
    from ..pdf.highlight import attach_boxes

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    attach_boxes(wiki, result)
    written: list[str] = []
    for n, s in enumerate(result.get("sources") or [], 1):
        boxes = s.get("boxes") or []
        page = int(boxes[0]["page"]) if boxes else s.get("page")
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", str(s.get("paper", "paper")))[:60].removesuffix(".pdf")
        out = out_dir / f"source-{n}-{stem}-p{page}.png"
        try:
            if page is None:
                raise EpistemeError("the source has no page")
            show_page(wiki, s["paper"], out, page=int(page), boxes=boxes, scale=scale)
        except EpistemeError as e:
            s["image_error"] = e.message
            continue
        s["image"] = str(out)
        written.append(str(out))
    return written


def emit_sourced(settings, result: dict, *, fmt: str, render: str | None, text) -> None:
    """Print a trace/chat ``result`` the way ``trace`` and ``chat`` both do: every source gains
    its highlight boxes (stored ones first), ``--render DIR`` writes one image per source, then
    ``text(result)`` through the terminal sanitiser or the JSON."""
    import functools

    from ..cliutil import write_text
    from ..pdf.highlight import attach_boxes
    from ..stores.sqlite import passage_boxes

    attach_boxes(settings.wiki, result, stored=functools.partial(passage_boxes, settings))
    if render:
        render_sources(settings.wiki, result, render)
    if fmt == "text":
        write_text(text(result))
    else:
        print_json(result)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..errors import UsageError

        settings = settings_from_args(args)
        quote, page = args.quote, args.page
        if args.passage:
            p = passage_text(settings, args.passage)
            if p["paper"] and p["paper"] != args.paper:
                raise UsageError(f"passage {args.passage} is from {p['paper']}, not {args.paper}")
            quote = p["text"]
            page = page or p["page"]
        out = show_page(settings.wiki, args.paper, Path(args.out), page=page, quote=quote,
                        scale=args.scale)
        if args.format == "text":
            print(f"{out['out']}: {out['paper']} p. {out['page']}, {len(out['boxes'])} box(es)")
        else:
            print_json(out)
        return 0

    return run_main(body, json_errors=lambda: format_is_json(argv, default=True))
