"""``episteme retrieve "question" [--k N]``: the wiki sections most relevant to a question
(BM25 over titles, index descriptions and text, fused with embedding similarity)."""

from __future__ import annotations

import sys

from ..cliutil import ArgumentParser, format_is_json, print_json, run_main, write_text
from ._stores import add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme retrieve", description=__doc__.splitlines()[0])
    p.add_argument("question", help="the question (or - to read it from stdin)")
    p.add_argument("--k", type=int, default=5, help="how many sections (default 5)")
    p.add_argument("--format", choices=["json", "text"], default="json")
    add_store_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..query.retrieve import Retriever, format_retrieve_text

        question = sys.stdin.read() if args.question == "-" else args.question
        result = Retriever(settings_from_args(args)).retrieve(question, k=args.k)
        if args.format == "text":
            write_text(format_retrieve_text(result))
        else:
            print_json(result)
        return 0

    return run_main(body, json_errors=lambda: format_is_json(argv, default=True))
