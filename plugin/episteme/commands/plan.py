"""``episteme plan PAPER`` / ``plan_ingest.py``: the outline of an ingested paper for the agent
that writes it into the wiki (skill ``wiki-ingest``), then the text of the sections it asks for.

Without ``--section``: every writable section (references, front matter and stubs are listed
under ``skipped``) by its short ``name`` (``abstract``, ``3.2``), title, pages, size, a one-line
``gist``, ``key_terms``, a ``suggested_page`` named from them, and ``related``: up to ``--k``
wiki sections that share *specific* terms with it, each with that ``evidence`` (names and
phrases both use, never generic words) and a TF-IDF ``score``.  ``--section a,b`` returns those
sections with their ``text``; ``--text`` every section's text at once.  The agent then writes
everything with one ``write_section.py --batch``.  Writes nothing.

Why outline first: every byte printed is read by the model; the outline of a 15-page paper is
a few thousand tokens, and the agent reads the text only of what it writes.
"""

from __future__ import annotations

from argparse import SUPPRESS

from ..cliutil import ArgumentParser, print_json, run_main


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme plan", description=(
        "The outline of an ingested paper (per section: name, size, gist, key terms, suggested "
        "page, related wiki sections with their evidence), then the text of the sections asked "
        "for with --section, as JSON (what the wiki-ingest skill reads before writing). Writes nothing."))
    p.add_argument("paper", help="the ingested paper: its raw/ file name (or the PDF path)")
    p.add_argument("--wiki", default=None, help="the wiki folder (default: $WIKI_PATH or ./wiki)")
    p.add_argument("--k", type=int, default=3, help="related wiki sections per paper section (default 3)")
    p.add_argument("--section", default=None,
                   help="only these paper sections, with their text, comma-separated: name "
                        "(abstract, 3.2), store id (attention.pdf#3.2) or title")
    p.add_argument("--text", action="store_true", help="every section's full text in one reply")
    p.add_argument("--brief", action="store_true", help=SUPPRESS)  # the outline is brief now
    p.add_argument("--semantic", action="store_true",
                   help="also ask the wiki-section embedding search (loads the model and Chroma: slower)")
    return p


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..compile.agentplan import plan_paper
        from ..compile.inputs import resolve_paper_id
        from ..config import load_settings
        from ..errors import UsageError

        if not 1 <= args.k <= 50:
            raise UsageError("--k must be between 1 and 50")
        settings = load_settings(args.wiki)
        pid = resolve_paper_id(settings, args.paper)
        print_json(plan_paper(settings, pid, k=args.k, text=args.text, only=args.section,
                              semantic=args.semantic), records=True)
        return 0

    return run_main(body)
