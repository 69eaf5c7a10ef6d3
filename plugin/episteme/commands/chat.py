"""``episteme chat "question"``: retrieve wiki sections, answer from them (the configured model:
Claude or an OpenAI-compatible server; else a deterministic extractive answer), and trace every
claim to its source passages."""

from __future__ import annotations

import sys

from ..cliutil import ArgumentParser, format_is_json, run_main
from ..query.compact import add_output_options, emit_compact
from ._stores import add_model_options, add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme chat", description=__doc__.splitlines()[0])
    p.add_argument("question", help="the question (or - to read it from stdin)")
    p.add_argument("--k", type=int, default=5, help="wiki sections to retrieve (default 5)")
    p.add_argument("--mode", choices=["auto", "claude", "offline"], default="auto",
                   help="answer with the configured model (claude: Claude, or the OpenAI-compatible "
                        "server LLM_PROVIDER=openai names) or offline (default: the model when one is configured)")
    p.add_argument("--top", type=int, default=3, help="passages per claim (default 3)")
    p.add_argument("--format", choices=["json", "text"], default="json")
    p.add_argument("--render", default=None, metavar="DIR",
                   help="write one PNG per source (its page, the quote highlighted) into DIR")
    add_output_options(p)
    add_store_options(p)
    add_model_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..errors import UsageError
        from ..query.chat import QueryEngine, format_chat_text

        if not 1 <= args.top <= 20:
            raise UsageError("--top must be between 1 and 20")
        question = sys.stdin.read() if args.question == "-" else args.question
        engine = QueryEngine(settings_from_args(args))
        try:
            result = engine.chat(question, k=args.k, mode=args.mode, top=args.top)
        finally:
            engine.close()
        from .show import emit_sourced

        if not emit_compact(engine.settings, result, args, kind="chat"):
            emit_sourced(engine.settings, result, fmt=args.format, render=args.render, text=format_chat_text)
        return 0

    return run_main(body, json_errors=lambda: format_is_json(argv, default=True))
