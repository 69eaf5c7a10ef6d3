"""``graph_query.py`` / ``episteme graph``: structural queries over the wiki's link graph.

Every call scans the markdown files, builds the graph in memory, answers, and exits; nothing is
cached, so the answer always reflects the files.  Imports only the standard library and PyYAML.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys

from ..cliutil import ArgumentParser, date_arg, format_is_json, print_json, prog_name, run_main
from ..errors import UsageError

MODES = ("stats", "neighbors", "shortest-path", "hubs", "orphans", "cluster", "query")
FORMATS = ("json", "text", "mermaid")
#: modes that default to the active tier when tiers are enabled ("focus surface" queries)
FOCUS_MODES = ("query", "hubs", "orphans", "cluster")


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, asking for the terminal width only when help is formatted.

    Why: argparse builds a formatter in every ``add_argument`` (to check the metavar), and the
    stock one looks the width up at once, importing ``shutil`` (with ``bz2``, ``lzma``...:
    ~2 ms of a command measured against a bare file scan).  The width is the stock one:
    ``shutil.get_terminal_size().columns - 2``, from which ``_max_help_position`` follows."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None, **kwargs):
        lazy = width is None
        super().__init__(prog, indent_increment, max_help_position, 10_000 if lazy else width, **kwargs)
        if lazy:
            del self._width, self._max_help_position
            self._help_position_cap = max_help_position
        self._lazy_width = lazy

    def __getattr__(self, name: str):
        if name in ("_width", "_max_help_position") and self.__dict__.get("_lazy_width"):
            import shutil

            width = shutil.get_terminal_size().columns - 2
            self._width = width
            self._max_help_position = min(self._help_position_cap, max(width - 20, self._indent_increment * 2))
            self._lazy_width = False
            return self.__dict__[name]
        raise AttributeError(name)


#: the --jobs help of every command that scans the wiki (pages.default_jobs decides)
JOBS_HELP = ("scan processes (default: $EPISTEME_JOBS, else one per 4000 pages from 8000 pages on, "
             "at most one per usable CPU)")


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog=prog_name("graph", "graph_query.py"),
        formatter_class=_HelpFormatter,
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
    p.add_argument(
        "--jobs",
        type=int,
        help=JOBS_HELP,
    )
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
    jobs: int | None = None,
    hold: list | None = None,
) -> dict:
    """The JSON result of one graph query (what ``--format json`` prints).  The HTTP API calls
    this too, so the command and ``GET /graph`` can never disagree.

    ``hold``: a list the graph is appended to, so that it outlives this call: a one-shot
    process that ends with ``os._exit`` (graph_query.py) then never pays for freeing its
    hundreds of thousands of objects one by one (~4 ms at 10k pages)."""
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
        from ..querylang import QuerySyntaxError, parse_query

        try:
            q = parse_query(query)  # fail on syntax before reading a single page
        except QuerySyntaxError as e:  # one line: the column and the problem
            raise UsageError(e.message.splitlines()[0], details=e.details) from None

    from .. import graph as G

    g = G.WikiGraph.build(wiki, today=today, jobs=jobs, keep_links=False)
    if hold is not None:
        hold.append(g)
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


def _run(argv: list[str], hold: list | None = None) -> int:
    args = build_parser().parse_args(argv)
    mode = args.mode
    if args.format == "mermaid" and mode not in ("neighbors", "shortest-path", "cluster"):
        raise UsageError(f"--format mermaid is available for neighbors, shortest-path and cluster, not {mode}")
    today = date_arg(args.today, "--today")

    wiki = args.wiki or os.environ.get("WIKI_PATH") or "wiki"
    result = graph_query(
        wiki, mode, seed=args.seed, depth=args.depth, src=args.src, dst=args.dst, tag=args.tag,
        query=args.query, sort=args.sort, limit=args.limit, tier=args.tier, today=today,
        jobs=args.jobs, hold=hold,
    )
    scanned = result["scanned"]

    if args.format == "json":
        print_json(result)
    elif args.format == "text":
        from ..graph_format import render_text

        sys.stdout.write(render_text(mode, result, scanned))
    else:
        from ..graph_format import render_mermaid

        sys.stdout.write(render_mermaid(mode, result))
    return 0


def main(argv: list[str] | None = None, *, hold: list | None = None) -> int:
    """The command.  ``hold``: see :func:`graph_query` (for a caller that exits right after)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_main(lambda: _run(argv, hold), json_errors=lambda: format_is_json(argv, default=True))
