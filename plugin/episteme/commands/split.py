"""``episteme split PAPER.pdf``: print a PDF's logical sections as JSON, storing nothing.

For inspecting the splitter and for benchmarks; ``--no-outline`` ignores the PDF's bookmarks
so the printed-text detector can be judged on its own, ``--text`` includes each section's text.
"""

from __future__ import annotations

from pathlib import Path

from ..cliutil import ArgumentParser, print_json, run_main


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme split",
                       description="Print a PDF's logical sections as JSON, storing nothing.")
    p.add_argument("pdf", help="the PDF to split")
    p.add_argument("--no-outline", action="store_true", help="ignore the PDF outline/bookmarks")
    p.add_argument("--text", action="store_true", help="include each section's text")
    p.add_argument("--max-pages", type=int, default=None, help="refuse PDFs with more pages")
    return p


def split_json(path: str, *, use_outline: bool = True, with_text: bool = False,
               max_pages: int | None = None) -> dict:
    """The section JSON printed by ``episteme split`` (also used by the benchmark)."""
    from ..errors import NotFoundError, UsageError
    from ..pdf.split import split_pdf

    p = Path(path)
    if not p.exists():
        raise NotFoundError(f"no such file: {path}")
    if p.is_dir():
        raise UsageError(f"{path} is a folder, not a PDF")
    res = split_pdf(p, use_outline=use_outline, max_pages=max_pages)
    sections = []
    for s in res.sections:
        d = {
            "number": s.number,
            "title": s.title,
            "level": s.level,
            "kind": s.kind,
            "page_start": s.page_start,
            "page_end": s.page_end,
            "chars": len(s.text),
        }
        if with_text:
            d["text"] = s.text
        sections.append(d)
    out = {
        "paper": Path(path).name,
        "title": res.title,
        "authors": res.authors,
        "pages": res.pages,
        "used_outline": res.used_outline,
        "sections": sections,
        "objects": [o.as_dict() for o in res.objects],
    }
    if res.warnings:
        out["warnings"] = res.warnings
    return out


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        print_json(split_json(args.pdf, use_outline=not args.no_outline, with_text=args.text,
                              max_pages=args.max_pages))
        return 0

    return run_main(body)
