"""Recreate SQLite and the Chroma passage vectors from raw/ alone.

``episteme rebuild``: after an embedding-model change, a lost database, or a splitter upgrade.
``episteme rebuild --sentences``: only the stored sentence vectors the offline answerer scores
with, computed where they are missing or were split by an older sentence splitter (seconds per
paper; the sections and passages stay as they are)."""

from __future__ import annotations

from ..cliutil import ArgumentParser, print_json, run_main
from ._stores import add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme rebuild", description=__doc__.splitlines()[0])
    p.add_argument("--no-outline", action="store_true", help="ignore the PDF outlines")
    p.add_argument("--sentences", action="store_true",
                   help="only compute the missing or outdated sentence vectors (no re-split)")
    p.add_argument("--jobs", "-j", type=int, default=1,
                   help="worker processes splitting PDFs (default 1; one per core is fastest)")
    add_store_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..errors import UsageError
        from ..ingest.pipeline import rebuild

        if args.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        if args.sentences:
            from ..ingest.sentences import backfill

            print_json(backfill(settings_from_args(args), progress=not args.no_progress))
            return 0
        out = rebuild(settings_from_args(args), progress=not args.no_progress,
                      use_outline=not args.no_outline, jobs=args.jobs)
        print_json(out)
        return 1 if out["failed"] else 0

    return run_main(body)
