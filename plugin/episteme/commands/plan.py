"""``episteme plan PAPER`` / ``plan_ingest.py``: for each section of an ingested paper, the most
related existing wiki sections, as JSON the agent reads before writing (skill ``wiki-ingest``).

One call returns every writable section (references, front matter and stubs are listed under
``skipped``): its store id and short ``name`` (``abstract``, ``3.2``), label, pages, full text
(``--brief``: a 300-character preview), ``key_terms``, a ``suggested_page`` named from them,
and ``related``: the top ``--k`` wiki sections by shared key terms, each with ``score``
(TF-IDF cosine) and ``shared_terms`` (the evidence), id, page, description and sources.  The
agent then writes everything with one ``write_section.py --batch``.  Writes nothing.
"""

from __future__ import annotations

from ..cliutil import ArgumentParser, print_json, run_main


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme plan", description=(
        "For each section of an ingested paper, the most related existing wiki sections, as JSON "
        "(what the wiki-ingest skill reads before writing). Writes nothing."))
    p.add_argument("paper", help="the ingested paper: its raw/ file name (or the PDF path)")
    p.add_argument("--wiki", default=None, help="the wiki folder (default: $WIKI_PATH or ./wiki)")
    p.add_argument("--k", type=int, default=5, help="related wiki sections per paper section (default 5)")
    p.add_argument("--brief", action="store_true", help="a preview instead of each section's full text")
    p.add_argument("--section", default=None,
                   help="only these paper sections, comma-separated: store id (attention.pdf#3.2), "
                        "number (3.2), name (abstract) or title")
    p.add_argument("--semantic", action="store_true",
                   help="also ask the wiki-section embedding search (loads the model and Chroma: slower)")
    return p


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..compile.writer import plan_paper, resolve_paper_id
        from ..config import load_settings
        from ..errors import UsageError

        if not 1 <= args.k <= 50:
            raise UsageError("--k must be between 1 and 50")
        settings = load_settings(args.wiki)
        pid = resolve_paper_id(settings, args.paper)
        print_json(plan_paper(settings, pid, k=args.k, text=not args.brief, only=args.section,
                              semantic=args.semantic))
        return 0

    return run_main(body)
