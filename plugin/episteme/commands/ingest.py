"""``episteme ingest PAPER.pdf``: copy into ``raw/``, split, store sections + passages in
SQLite and passage vectors in Chroma; print the paper's section JSON.

Re-ingesting the same bytes is a no-op (``"status": "unchanged"``); a changed file under the
same name replaces the old rows and vectors; ``--force`` redoes it anyway.
"""

from __future__ import annotations

from ..cliutil import ArgumentParser, print_json, run_main
from ._stores import add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme ingest", description=__doc__.splitlines()[0])
    p.add_argument("pdf", nargs="+", help="the PDF(s) to ingest")
    p.add_argument("--force", action="store_true", help="redo even when the file is unchanged")
    p.add_argument("--no-outline", action="store_true", help="ignore the PDF outline/bookmarks")
    p.add_argument("--name", default=None, help="store under this file name (one PDF only)")
    add_store_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..errors import UsageError
        from ..ingest import ingest_paper

        if args.name and len(args.pdf) > 1:
            raise UsageError("--name needs exactly one PDF")
        settings = settings_from_args(args)
        results = [
            ingest_paper(settings, pdf, force=args.force, use_outline=not args.no_outline,
                         progress=not args.no_progress, name=args.name)
            for pdf in args.pdf
        ]
        print_json(results[0] if len(results) == 1 else {"papers": results})
        return 0

    return run_main(body)
