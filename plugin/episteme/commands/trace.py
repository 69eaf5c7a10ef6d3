"""``episteme trace --answer - [--sections sec_002,sec_007 | --papers a.pdf,b.pdf]``: split an
answer into claims and find, for each, the paper passages that support it.

The scope is the source papers of the given wiki sections (via ``index.json``), or the named
papers, or every ingested paper.  Claims whose best passage scores below the calibrated
threshold are listed in ``unsupported_claims``.
"""

from __future__ import annotations

import sys

from ..cliutil import ArgumentParser, format_is_json, run_main
from ._stores import add_store_options, settings_from_args


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="episteme trace", description=__doc__.splitlines()[0])
    p.add_argument("--answer", required=True,
                   help="the answer text, or - to read it from stdin, or @FILE to read a file")
    p.add_argument("--sections", default=None,
                   help="comma-separated wiki section ids the answer was written from")
    p.add_argument("--papers", default=None, help="comma-separated paper file names to search")
    p.add_argument("--top", type=int, default=3, help="passages reported per claim (default 3)")
    p.add_argument("--threshold", type=float, default=None,
                   help="support score below which a claim is unsupported (default: calibrated)")
    p.add_argument("--include-references", action="store_true",
                   help="also trace into reference-list sections (excluded by default)")
    p.add_argument("--verifier", choices=["auto", "offline", "claude"], default="auto",
                   help="who gives the verdicts: the offline rules, or Claude on top of them (one "
                        "call per answer; auto = Claude when an API key is set)")
    p.add_argument("--format", choices=["json", "text"], default="json")
    p.add_argument("--render", default=None, metavar="DIR",
                   help="write one PNG per source (its page, the quote highlighted) into DIR")
    p.add_argument("--boxes", action="store_true",
                   help="give each source and passage its highlight boxes on the page (off by default: "
                        "the JSON stays compact for a reader; --render implies it)")
    add_store_options(p)
    return p


def read_answer(value: str) -> str:
    """``-`` = stdin, ``@path`` = a file, anything else is the text itself."""
    from ..errors import UsageError

    if value == "-":
        return sys.stdin.read()
    if value.startswith("@"):
        try:
            with open(value[1:], encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError as e:
            raise UsageError(f"cannot read the answer file {value[1:]}: {e.strerror}") from None
    return value


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        args = build_parser().parse_args(argv)
        from ..errors import UsageError
        from ..query.results import TraceResult, format_trace_text
        from ..query.trace import Tracer

        if args.sections and args.papers:
            raise UsageError("give --sections or --papers, not both")
        if args.top < 1 or args.top > 20:
            raise UsageError("--top must be between 1 and 20")
        answer = read_answer(args.answer)
        settings = settings_from_args(args)
        tracer = Tracer(settings)
        result: TraceResult = tracer.trace(answer, sections=args.sections, papers=args.papers, top=args.top,
                              threshold=args.threshold, include_references=args.include_references)
        result["verifier"] = "offline"
        if args.verifier != "offline":
            from ..llm.client import llm_mode

            if llm_mode(settings) == "claude":
                from ..query.verify_llm import llm_verify

                result = llm_verify(settings, result)
                if result.get("llm_usage"):
                    from ..llm.client import format_usage

                    print(format_usage(result["llm_usage"]), file=sys.stderr)
            elif args.verifier == "claude":
                raise UsageError("--verifier claude needs an API key (LLM_API_KEY / ANTHROPIC_API_KEY)")
        if args.boxes or args.render:
            from .show import emit_sourced

            emit_sourced(tracer.settings, result, fmt=args.format, render=args.render,
                         text=format_trace_text)
        elif args.format == "text":
            from ..cliutil import write_text

            write_text(format_trace_text(result))
        else:
            from ..cliutil import print_json

            print_json(result)
        return 0

    return run_main(body, json_errors=lambda: format_is_json(argv, default=True))
