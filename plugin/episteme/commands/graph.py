"""``graph_query.py`` / ``episteme graph``: structural queries over the wiki's link graph.

Every call scans the markdown files, builds the graph in memory, answers, and exits; nothing is
cached, so the answer always reflects the files.  Imports only the standard library and PyYAML.
"""

from __future__ import annotations

import datetime as _dt
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

MODES = ("stats", "neighbors", "shortest-path", "hubs", "orphans", "cluster", "query")
FORMATS = ("json", "text", "mermaid")
#: modes that default to the active tier when tiers are enabled ("focus surface" queries)
FOCUS_MODES = ("query", "hubs", "orphans", "cluster")


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


def graph_query(
    wiki: str | os.PathLike,
    mode: str = "stats",
    *,
    seed: str | None = None,
    depth: int = 1,
    src: str | None = None,
    dst: str | None = None,
    tag: str | None = None,
    query: str | None = None,
    sort: str | None = None,
    limit: int | None = None,
    tier: str | None = None,
    today: _dt.date | None = None,
) -> dict:
    """The JSON result of one graph query (what ``--format json`` prints).  The HTTP API calls
    this too, so the command and ``GET /graph`` can never disagree."""
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if tier is not None and tier not in ("active", "archived", "frozen", "all"):
        raise UsageError(f"unknown tier {tier!r}; choose active, archived, frozen or all")
    if limit is not None and limit < 0:
        raise UsageError("--limit must be >= 0")
    need = {"neighbors": ["seed"], "shortest-path": ["src", "dst"], "cluster": ["tag"], "query": ["query"]}
    given = {"seed": seed, "src": src, "dst": dst, "tag": tag, "query": query}
    for name in need.get(mode, []):
        if not given[name]:
            raise UsageError(f"--mode {mode} needs --{name}")
    q = None
    if mode == "query":
        from ..graph.querylang import QuerySyntaxError, parse_query

        try:
            q = parse_query(query)  # fail on syntax before reading a single page
        except QuerySyntaxError as e:  # one line: the column and the problem
            raise UsageError(e.message.splitlines()[0], details=e.details) from None

    from .. import graph as G

    g = G.WikiGraph.build(wiki, today=today, keep_links=False)
    if tier is None and mode in FOCUS_MODES and g.tiers_enabled:
        tier = "active"
    if tier == "all":
        tier = None

    if mode == "stats":
        result = G.stats(g, tier)
    elif mode == "neighbors":
        result = G.neighbors(g, g.find_page(seed), depth, tier)
    elif mode == "shortest-path":
        result = G.shortest_paths(g, g.find_page(src), g.find_page(dst), tier)
    elif mode == "hubs":
        result = G.hubs(g, 20 if limit is None else limit, tier)
    elif mode == "orphans":
        result = G.orphans(g, limit, tier)
    elif mode == "cluster":
        result = G.cluster(g, tag, tier, limit)
    else:
        result = G.query(g, q, sort, tier, limit)
        result["query"] = query
    scanned = {"pages": len(g.ids), "edges": g.edge_count, "dangling": g.dangling_count}
    return {"mode": mode, **result, "scanned": scanned, "wiki": os.path.abspath(wiki)}


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
