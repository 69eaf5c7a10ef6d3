"""Ingest PDFs: copy into raw/, split, store sections and passages in SQLite and vectors in Chroma.

``episteme ingest PAPER.pdf`` prints the paper's section JSON.

Re-ingesting the same bytes is a no-op (``"status": "unchanged"``); a changed file under the
same name replaces the old rows and vectors; ``--force`` redoes it anyway.

``--write`` then writes the paper into the wiki (:func:`episteme.compile.writer.write_paper`) with
``--writer claude`` (the configured model decides each section: Claude, or an OpenAI-compatible
server with ``LLM_PROVIDER=openai``), ``extractive`` (offline, deterministic) or ``auto`` (the
model when one is configured and not inside an agent, else extractive); the JSON
gains ``wiki_pages_updated``, ``new_sections``, ``updated_sections`` (and ``llm_usage``).
``--dry-run`` prints the plan instead of writing pages (the stores are still updated).

Several files, a folder (searched recursively for ``*.pdf``), ``--jobs N`` or ``--zotero DIR``
make it a batch (:func:`episteme.ingest.batch.ingest_batch`): one progress bar, a status line
per file, PDFs split in ``N`` worker processes, a bad file reported and skipped; the JSON is a
summary (``papers``: one entry per stored file, ``failed``: which and why) and the exit status
is 1 if any file failed.  Zotero linked files (kept outside ``storage/``) are ingested too: their
paths are absolute or relative to the base directory of Zotero's settings (``--zotero-base DIR``,
else read from ``prefs.js``); one that is not there is listed in ``zotero.linked_missing`` with
the reason and does not fail the batch.  Interrupted (Ctrl-C, a crash)?  Run the same command again: finished
papers are ``unchanged``, the rest are ingested, nothing is half-written.
"""

from __future__ import annotations

from ..cliutil import ArgumentParser, date_arg, print_json, run_main
from ._stores import add_model_options, add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme ingest", description=__doc__.splitlines()[0])
    p.add_argument("pdf", nargs="*", help="the PDF(s) or folders of PDFs to ingest (`-`: read one from standard input, named by --name)")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="batch: worker processes splitting PDFs (default: one per core)")
    p.add_argument("--zotero", default=None, metavar="ZOTERO_DIR",
                   help="ingest a Zotero data folder's storage/*/ PDFs with their Zotero metadata")
    p.add_argument("--zotero-base", default=None, metavar="DIR",
                   help="with --zotero: the linked attachment base directory (default: Zotero's "
                        "prefs.js)")
    p.add_argument("--force", action="store_true", help="redo even when the file is unchanged")
    p.add_argument("--no-outline", action="store_true", help="ignore the PDF outline/bookmarks")
    p.add_argument("--name", default=None, help="store under this file name (one PDF only)")
    p.add_argument("--write", action="store_true", help="also write the paper into the wiki pages")
    p.add_argument("--writer", choices=("auto", "claude", "extractive"), default="auto",
                   help="how --write decides: claude = the configured model (Claude or an OpenAI-compatible "
                        "server) (default auto: the model when one is configured, outside an agent)")
    p.add_argument("--dry-run", action="store_true", help="with --write: print the plan, write no page")
    p.add_argument("--strict", action="store_true",
                   help="with --write: refuse to write a plan with a sentence its sources contradict")
    p.add_argument("--force-write", action="store_true",
                   help="with --write: write even when the wiki already cites the paper "
                        "(adds its sections again; refine or remove the old ones)")
    p.add_argument("--date", default=None, help="with --write: date for pages and log.md (YYYY-MM-DD; default today)")
    add_store_options(p)
    add_model_options(p)
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


def _is_batch(args) -> bool:
    from pathlib import Path

    return bool(args.zotero or args.jobs is not None or len(args.pdf) != 1
                or (args.pdf[0] != "-" and Path(args.pdf[0]).is_dir()))


def _say_missing(missing: list[dict]) -> None:
    """One stderr line per linked Zotero file that is not there (the batch goes on without it;
    the JSON lists them under ``zotero.linked_missing``)."""
    import sys

    from ..cliutil import sanitize_terminal

    for m in missing:
        print(sanitize_terminal(f"missing    {m['file']}: {m['error']} (Zotero item "
                                f"{m['zotero_key']}: {m['title'] or 'untitled'})"),
              file=sys.stderr, flush=True)


def _batch(settings, args) -> int:
    """Several files / folders / a Zotero library: :func:`episteme.ingest.batch.ingest_batch`."""
    from ..errors import UsageError
    from ..ingest.batch import ingest_batch

    if args.name or "-" in args.pdf:
        raise UsageError("--name and `-` (standard input) take exactly one PDF, not a batch")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    metadata, names, files = None, None, None
    if args.zotero:
        from ..ingest.zotero import zotero_library

        if args.pdf:
            raise UsageError("--zotero takes the Zotero folder alone (no other files)")
        lib = zotero_library(args.zotero, base_dir=args.zotero_base)
        metadata, names, files = lib["metadata"], lib["names"], lib["files"]
        _say_missing(lib["linked_missing"])
    elif args.zotero_base:
        raise UsageError("--zotero-base needs --zotero")
    result = ingest_batch(settings, args.pdf, jobs=args.jobs, force=args.force,
                          use_outline=not args.no_outline, progress=not args.no_progress,
                          metadata=metadata, names=names, files=files,
                          after_commit=(lambda row: _write(settings, row, args))
                          if args.write else None)
    if args.zotero:
        result["zotero"] = {k: v for k, v in lib.items() if k not in ("metadata", "names", "files")}
    print_json(result, records=True)
    if result["status"] == "interrupted":
        return 130
    return 1 if result["failed"] else 0


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..errors import UsageError
        from ..ingest.pipeline import ingest_paper

        if not args.pdf and not args.zotero:
            raise UsageError("give a PDF, several, a folder of PDFs, or --zotero ZOTERO_DIR")
        if (args.dry_run or args.writer != "auto" or args.force_write or args.date) and not args.write:
            raise UsageError("--writer, --dry-run, --force-write and --date need --write")
        settings = settings_from_args(args)
        from .init import init_wiki, is_unstarted

        if is_unstarted(settings.wiki):  # a new wiki starts with its schema and indexes
            init_wiki(settings.wiki)
        if _is_batch(args):
            return _batch(settings, args)
        result = ingest_paper(settings, args.pdf[0], force=args.force,
                              use_outline=not args.no_outline, progress=not args.no_progress,
                              name=args.name)
        if args.write:
            result = _write(settings, result, args)
        print_json(result)
        return 0

    return run_main(body)
