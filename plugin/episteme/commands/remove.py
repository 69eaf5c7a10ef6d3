"""Un-ingest a paper: its SQLite rows, Chroma vectors and raw/ file, all or nothing.

``episteme remove PAPER`` also lists the wiki sections whose ``index.json`` sources cite it (the
pages themselves are kept: editing them is the writer's or the user's call)."""

from __future__ import annotations

from ..cliutil import ArgumentParser, print_json, run_main
from ._stores import add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme remove", description=__doc__.splitlines()[0])
    p.add_argument("paper", help="the paper id (stored file name in raw/) or its path")
    add_store_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..ingest.pipeline import remove_paper

        print_json(remove_paper(settings_from_args(args), args.paper))
        return 0

    return run_main(body)
