"""One graph query by mode, as JSON: what ``episteme graph`` prints and ``GET /graph`` returns,
so the command and the HTTP API can never disagree."""

from __future__ import annotations

import datetime as _dt
import os

from ..errors import UsageError

MODES = ("stats", "neighbors", "shortest-path", "hubs", "orphans", "cluster", "query")
#: modes that default to the active tier when tiers are enabled ("focus surface" queries)
FOCUS_MODES = ("query", "hubs", "orphans", "cluster")


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
        from .querylang import QuerySyntaxError, parse_query

        try:
            q = parse_query(query)  # fail on syntax before reading a single page
        except QuerySyntaxError as e:  # one line: the column and the problem
            raise UsageError(e.message.splitlines()[0], details=e.details) from None

    from . import algorithms as G
    from .core import WikiGraph

    g = WikiGraph.build(wiki, today=today, keep_links=False)
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
