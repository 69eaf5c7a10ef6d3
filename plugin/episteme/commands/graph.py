"""``graph_query.py`` / ``episteme graph``: structural queries over the wiki's link graph.

Every call scans the markdown files, builds the graph in memory, answers, and exits; nothing is
cached, so the answer always reflects the files.  Imports only the standard library and PyYAML.
"""

from __future__ import annotations

import os
import sys

from ..cliutil import (
    ArgumentParser,
    date_arg,
    format_is_json,
    print_json,
    prog_name,
    run_main,
    write_text,
)
from ..errors import UsageError
from ..graph.run import MODES, graph_query

FORMATS = ("json", "text", "mermaid")


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog=prog_name("graph", "graph_query.py"),
        description="Structural queries over the wiki's [[link]] graph (JSON on stdout).",
    )
    p.add_argument("--wiki", help="wiki folder (default: $WIKI_PATH, else ./wiki)")
    p.add_argument("--mode", choices=MODES, default="stats")
    p.add_argument("--format", choices=FORMATS, default="json")
    p.add_argument("--limit", type=int, help="at most N results (hubs default 20)")
    p.add_argument(
        "--tier",
        choices=("active", "archived", "frozen", "all"),
        help="restrict to one memory tier (default: active for query/hubs/orphans/cluster when "
        "tiers are enabled, else all)",
    )
    p.add_argument("--seed", help="neighbors: the page (title, path, stem or alias)")
    p.add_argument("--depth", type=int, default=1, help="neighbors: hops, 1-4 (default 1)")
    p.add_argument("--src", help="shortest-path: start page")
    p.add_argument("--dst", help="shortest-path: end page")
    p.add_argument("--tag", help="cluster: the tag (nested tags a/b count for a)")
    p.add_argument("--query", help='query: e.g. "type: entity AND updated > 2025-01"')
    p.add_argument("--sort", help="query: F ascending or -F descending (default -updated)")
    p.add_argument("--today", help="reference date for tiers, YYYY-MM-DD (default: today)")
    return p


def _run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    mode = args.mode
    if args.format == "mermaid" and mode not in ("neighbors", "shortest-path", "cluster"):
        raise UsageError(f"--format mermaid is available for neighbors, shortest-path and cluster, not {mode}")
    today = date_arg(args.today, "--today")

    wiki = args.wiki or os.environ.get("WIKI_PATH") or "wiki"
    result = graph_query(
        wiki, mode, seed=args.seed, depth=args.depth, src=args.src, dst=args.dst, tag=args.tag,
        query=args.query, sort=args.sort, limit=args.limit, tier=args.tier, today=today,
    )
    scanned = result["scanned"]

    if args.format == "json":
        print_json(result)
    elif args.format == "text":
        from ..graph.format import render_text

        write_text(render_text(mode, result, scanned))
    else:
        from ..graph.format import render_mermaid

        sys.stdout.write(render_mermaid(mode, result))
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command (exit status: 0 answered, 1 not found, 2 usage error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_main(lambda: _run(argv), json_errors=lambda: format_is_json(argv, default=True))
