"""The ``episteme`` console command: one subcommand per script in ``plugin/scripts``.

Subcommand modules are imported lazily so ``episteme graph`` and ``episteme lint`` start without
touching torch, chromadb or anthropic.
"""

from __future__ import annotations

import importlib
import sys

# subcommand -> (module under episteme.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("init", "start a wiki: starter SCHEMA.md, index.md, index.json, log.md"),
    "graph": ("graph", "structural queries over the wiki's link graph (= graph_query.py)"),
    "lint": ("lint", "check the wiki (and with --stores its databases); --fix repairs (= wiki_lint.py)"),
    "ingest": ("ingest", "ingest a PDF: raw/ + SQLite + Chroma (+ wiki pages with --write) (= ingest.py)"),
    "split": ("split", "print a PDF's logical sections as JSON, storing nothing (= split_pdf.py)"),
    "cite": ("cite", "print BibTeX for a paper, or for the papers a wiki page cites"),
    "citations": ("citations", "which ingested papers cite each other (reference lists resolved)"),
    "remove": ("remove", "un-ingest a paper: rows, vectors and raw file"),
    "rebuild": ("rebuild", "recreate SQLite and Chroma from raw/ alone"),
    "plan": ("plan", "for each section of a paper, list related wiki sections (= plan_ingest.py)"),
    "write-section": ("write_section", "create or update one wiki section (= write_section.py)"),
    "retrieve": ("retrieve", "find the wiki sections relevant to a question (= retrieve.py)"),
    "trace": ("trace", "trace an answer's claims to source passages (= trace.py)"),
    "chat": ("chat", "retrieve, answer and trace in one go (= chat.py)"),
    "show": ("show", "write a page of a paper as PNG with a quote or passage highlighted"),
    "serve": ("serve", "run the HTTP API and web UI"),
    "mcp": ("mcp", "the MCP server over stdio (Claude Desktop, Cursor, any MCP client)"),
    "doctor": ("doctor", "check the configured language model: one tiny call, latency, tool calling"),
}


def _usage() -> str:
    lines = ["usage: episteme <command> [options]", "", "commands:"]
    width = max(len(c) for c in COMMANDS)
    for name, (_, help_) in COMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {help_}")
    lines.append("")
    lines.append("Run 'episteme <command> --help' for a command's options.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv[0] == "--version":
        from . import __version__

        print(f"episteme {__version__}")
        return 0
    name = argv[0]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"episteme.commands.{COMMANDS[name][0]}")
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
