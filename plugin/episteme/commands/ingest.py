"""Ingest PDFs: copy into raw/, split, store sections and passages in SQLite and vectors in Chroma.

``episteme ingest PAPER.pdf`` prints the paper's section JSON.

Re-ingesting the same bytes is a no-op (``"status": "unchanged"``); a changed file under the
same name replaces the old rows and vectors; ``--force`` redoes it anyway.

``--write`` then writes the paper into the wiki (:func:`episteme.compile.writer.write_paper`) with
``--writer claude`` (Claude decides each section), ``extractive`` (offline, deterministic) or
``auto`` (Claude when an API key is set and not inside an agent, else extractive); the JSON
gains ``wiki_pages_updated``, ``new_sections``, ``updated_sections`` (and ``llm_usage``).
``--dry-run`` prints the plan instead of writing pages (the stores are still updated).
"""

from __future__ import annotations

from ..cliutil import ArgumentParser, date_arg, print_json, run_main
from ._stores import add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme ingest", description=__doc__.splitlines()[0])
    p.add_argument("pdf", nargs="+", help="the PDF(s) to ingest (`-`: read one from standard input, named by --name)")
    p.add_argument("--force", action="store_true", help="redo even when the file is unchanged")
    p.add_argument("--no-outline", action="store_true", help="ignore the PDF outline/bookmarks")
    p.add_argument("--name", default=None, help="store under this file name (one PDF only)")
    p.add_argument("--write", action="store_true", help="also write the paper into the wiki pages")
    p.add_argument("--writer", choices=("auto", "claude", "extractive"), default="auto",
                   help="how --write decides (default auto: claude with an API key outside an agent)")
    p.add_argument("--dry-run", action="store_true", help="with --write: print the plan, write no page")
    p.add_argument("--strict", action="store_true",
                   help="with --write: refuse to write a plan with a sentence its sources contradict")
    p.add_argument("--force-write", action="store_true",
                   help="with --write: write even when the wiki already cites the paper "
                        "(adds its sections again; refine or remove the old ones)")
    p.add_argument("--date", default=None, help="with --write: date for pages and log.md (YYYY-MM-DD; default today)")
    add_store_options(p)
    return p


def _write(settings, result: dict, args) -> dict:
    """Run the wiki writer on one ingested paper and merge its keys into ``result``."""
    import sys

    from ..compile.writer import write_paper
    from ..errors import EpistemeError
    from ..llm.client import format_usage

    today = date_arg(args.date, "--date")
    try:
        out = write_paper(settings, result["paper"], writer=args.writer, dry_run=args.dry_run,
                          today=today, force=args.force_write, strict=args.strict)
    except EpistemeError as e:  # say that the stores have the paper and the pages do not
        e.args = (f"{result['paper']} is stored, but nothing was written to the wiki: {e.message}", *e.args[1:])
        raise
    if out.get("llm_usage"):
        print(format_usage(out["llm_usage"]), file=sys.stderr)
    return {**result, **out}


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..errors import UsageError
        from ..ingest.pipeline import ingest_paper

        if args.name and len(args.pdf) > 1:
            raise UsageError("--name needs exactly one PDF")
        if (args.dry_run or args.writer != "auto" or args.force_write or args.date) and not args.write:
            raise UsageError("--writer, --dry-run, --force-write and --date need --write")
        settings = settings_from_args(args)
        from .init import init_wiki, is_unstarted

        if is_unstarted(settings.wiki):  # a new wiki starts with its schema and indexes
            init_wiki(settings.wiki)
        results = [
            ingest_paper(settings, pdf, force=args.force, use_outline=not args.no_outline,
                         progress=not args.no_progress, name=args.name)
            for pdf in args.pdf
        ]
        if args.write:
            results = [_write(settings, r, args) for r in results]
        print_json(results[0] if len(results) == 1 else {"papers": results})
        return 0

    return run_main(body)
