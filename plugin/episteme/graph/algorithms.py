"""The graph algorithms of ``episteme graph``: each takes a :class:`~episteme.graph.core.WikiGraph`
and returns a JSON-ready dict (what ``--format json`` prints)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from itertools import islice
from typing import Any

from ..errors import NotFoundError, UsageError
from ..wiki.frontmatter import frontmatter_tags
from ..wiki.schema import TIERS
from .core import MAX_DEPTH, WikiGraph


def _scope(g: WikiGraph, tier: str | None, keep: Iterable[int] = ()) -> set[int] | None:
    allowed = g.node_set(tier)
    if allowed is not None:
        allowed = allowed | set(keep)
    return allowed


def stats(g: WikiGraph, tier: str | None = None) -> dict[str, Any]:
    """Counts over the graph (restricted to ``tier`` when given).

    Returns ``pages``, ``edges`` (unique directed pairs), ``links`` (link occurrences),
    ``dangling`` (unique (source, target) pairs), ``tiers`` (count per tier), ``tiers_enabled``,
    ``frontmatter_errors`` (count) with ``frontmatter_error_pages``, ``ambiguous_links``,
    ``types`` (count per frontmatter ``type``)."""
    allowed = _scope(g, tier)
    nodes = range(len(g.ids)) if allowed is None else sorted(allowed)
    node_ids = None if allowed is None else {g.ids[i] for i in allowed}
    edges = sum(
        len(g.out_edges[i]) if allowed is None else sum(1 for j in g.out_edges[i] if j in allowed)
        for i in nodes
    )
    tiers = dict.fromkeys(TIERS, 0)
    types: dict[str, int] = {}
    if allowed is None:  # the common case: count in C, then name the values
        from collections import Counter

        tiers.update(Counter(g.tiers))
        raw = Counter([p.props.get("type") for p in g.pages])
        if all(t is None or type(t) is str for t in raw):  # else equal values may print apart
            types = {"(none)" if t is None else t: c for t, c in raw.items()}
            if None in raw and "(none)" in raw:  # the literal type "(none)" and no type
                types["(none)"] = raw[None] + raw["(none)"]
            nodes_left: Iterable[int] = ()
        else:
            tiers = dict.fromkeys(TIERS, 0)
            nodes_left = nodes
    else:
        nodes_left = nodes
    for i in nodes_left:
        tiers[g.tiers[i]] += 1
        t = g.pages[i].props.get("type")
        key = "(none)" if t is None else str(t)
        types[key] = types.get(key, 0) + 1
    src = g.dangling_sources
    dangling = len(src) if allowed is None else sum(1 for i in src if i in allowed)
    fm = [e for e in g.frontmatter_errors if node_ids is None or e["id"] in node_ids]
    return {
        "pages": len(nodes),
        "edges": edges,
        "links": g.link_count if allowed is None else sum(g.link_counts[i] for i in nodes),
        "dangling": dangling,
        "tiers": tiers,
        "tiers_enabled": g.tiers_enabled,
        "active": tiers["active"],
        "archived": tiers["archived"],
        "frozen": tiers["frozen"],
        "frontmatter_errors": len(fm),
        "frontmatter_error_pages": fm,
        "ambiguous_links": g.ambiguity_count,
        "types": dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def neighbors(g: WikiGraph, seed: int, depth: int = 1, tier: str | None = None) -> dict[str, Any]:
    """Breadth-first layers around ``seed`` over in ∪ out edges.

    ``layers[d]`` lists the pages exactly ``d`` undirected hops from the seed (layer 0 is the
    seed), each as :meth:`WikiGraph.node_info`, in id order.  ``edges`` lists the directed
    links among the returned pages.  With ``tier`` only pages of that tier are traversed (the
    seed is always kept).  ``depth`` must be 1..4."""
    if not 1 <= depth <= MAX_DEPTH:
        raise UsageError(f"--depth must be between 1 and {MAX_DEPTH}, got {depth}")
    allowed = _scope(g, tier, [seed])
    dist = {seed: 0}
    layers = [[seed]]
    for d in range(1, depth + 1):
        nxt: set[int] = set()
        for u in layers[-1]:
            for v in g.undirected(u, allowed):
                if v not in dist:
                    dist[v] = d
                    nxt.add(v)
        if not nxt:
            break
        layers.append(sorted(nxt, key=g.ids.__getitem__))
    shown = set(dist)
    edges = [
        [g.ids[u], g.ids[v]]
        for u in sorted(shown, key=g.ids.__getitem__)
        for v in g.out_edges[u]
        if v in shown and v != u
    ]
    return {
        "seed": g.ids[seed],
        "depth": depth,
        "tier": tier or "all",
        "layers": [[g.node_info(i) for i in layer] for layer in layers],
        "count": len(shown) - 1,
        "edges": edges,
    }


def _bfs(g: WikiGraph, start: int, allowed: set[int] | None) -> dict[int, int]:
    dist = {start: 0}
    q = deque([start])
    while q:
        u = q.popleft()
        du = dist[u] + 1
        for v in g.undirected(u, allowed):
            if v not in dist:
                dist[v] = du
                q.append(v)
    return dist


def shortest_paths(
    g: WikiGraph, src: int, dst: int, tier: str | None = None, k: int = 3
) -> dict[str, Any]:
    """Up to ``k`` shortest undirected paths from ``src`` to ``dst``.

    ``length`` is the number of hops (``None`` when unreachable); ``paths`` lists the first
    ``k`` shortest paths in lexicographic order of their id sequences, each a list of ids;
    ``nodes`` annotates every page on them (:meth:`WikiGraph.node_info`); ``edges`` gives each
    hop with its link direction.  When no path exists ``paths`` is ``[]`` and ``closest``
    suggests bridge candidates: pages reachable from one end that share the most tags (or the
    type) with the other end."""
    allowed = _scope(g, tier, [src, dst])
    ds = _bfs(g, src, allowed)
    result: dict[str, Any] = {"src": g.ids[src], "dst": g.ids[dst], "tier": tier or "all"}
    if dst not in ds:
        dt = _bfs(g, dst, allowed)
        result.update(length=None, paths=[], nodes={}, edges=[], closest=_closest(g, ds, dt, src, dst))
        return result
    if src == dst:
        paths = [[src]]
    else:
        dt = _bfs(g, dst, allowed)
        total = ds[dst]
        paths = []

        def walk(path: list[int]) -> None:
            if len(paths) >= k:
                return
            u = path[-1]
            if u == dst:
                paths.append(list(path))
                return
            du = ds[u]
            for v in g.undirected(u, allowed):  # id order => lexicographic paths
                if ds.get(v) == du + 1 and dt.get(v, -1) == total - du - 1:
                    path.append(v)
                    walk(path)
                    path.pop()
                    if len(paths) >= k:
                        return

        walk([src])
    on_path = sorted({i for p in paths for i in p}, key=g.ids.__getitem__)
    edges = []
    for p in paths:
        for a, b in zip(p, p[1:], strict=False):
            e = [g.ids[a], g.ids[b]] if b in g.out_edges[a] else [g.ids[b], g.ids[a]]
            if e not in edges:
                edges.append(e)
    result.update(
        length=len(paths[0]) - 1,
        paths=[[g.ids[i] for i in p] for p in paths],
        nodes={g.ids[i]: g.node_info(i) for i in on_path},
        edges=edges,
    )
    return result


def _closest(g: WikiGraph, ds: dict[int, int], dt: dict[int, int], src: int, dst: int) -> list[dict[str, Any]]:
    def features(i: int) -> set[str]:
        f = {"tag:" + t.lower() for t in frontmatter_tags(g.pages[i].props)}
        t = g.pages[i].props.get("type")
        if t is not None:
            f.add("type:" + str(t).lower())
        return f

    out = []
    for side, comp, other in (("src", ds, dst), ("dst", dt, src)):
        target = features(other)
        scored = []
        for i, d in comp.items():
            if d == 0:
                continue
            shared = features(i) & target
            if shared:
                scored.append((-len(shared), d, g.ids[i], i, shared))
        scored.sort()
        for neg, d, pid, _i, shared in scored[:3]:
            out.append({"id": pid, "side": side, "hops": d, "shared": sorted(shared), "score": -neg})
    return out


def degrees(g: WikiGraph, allowed: set[int] | None) -> tuple[list[int], list[int], list[int]]:
    """``(nodes, in_degree, out_degree)`` within ``allowed`` (degree lists indexed by node)."""
    n = len(g.ids)
    if allowed is None:
        return list(range(n)), g.in_degrees(), [len(x) for x in g.out_edges]
    indeg = [0] * n
    outdeg = [0] * n
    for i in allowed:
        outdeg[i] = sum(1 for j in g.out_edges[i] if j in allowed)
        indeg[i] = sum(1 for j in g.in_edges[i] if j in allowed)
    return sorted(allowed), indeg, outdeg


def hubs(g: WikiGraph, limit: int | None = 20, tier: str | None = None) -> dict[str, Any]:
    """Pages by ``score = in + 0.5·out`` descending, then id; the first ``limit``."""
    nodes, indeg, outdeg = degrees(g, _scope(g, tier))
    ids = g.ids
    if all(map(str.__lt__, ids, islice(ids, 1, None))):
        # ids in node order (always, for built graphs): a stable sort of the nodes (in node
        # order) by score alone breaks ties by id, with no key tuple per node
        neg = [-(a + 0.5 * b) for a, b in zip(indeg, outdeg, strict=True)]
        if limit is not None and limit < len(nodes):
            import heapq

            ranked = heapq.nsmallest(limit, nodes, key=neg.__getitem__)  # = sorted(...)[:limit]
        else:
            ranked = sorted(nodes, key=neg.__getitem__)
    else:
        ranked = sorted(nodes, key=lambda i: (-(indeg[i] + 0.5 * outdeg[i]), ids[i]))
        if limit is not None:
            ranked = ranked[:limit]
    return {
        "tier": tier or "all",
        "hubs": [
            {
                "id": g.ids[i],
                "title": g.pages[i].title,
                "in": indeg[i],
                "out": outdeg[i],
                "score": indeg[i] + 0.5 * outdeg[i],
                "tier": g.tiers[i],
            }
            for i in ranked
        ],
        "pages": len(nodes),
    }


def orphans(g: WikiGraph, limit: int | None = None, tier: str | None = None) -> dict[str, Any]:
    """``orphans`` (no in- and no out-links), ``leaves`` (in-links only) and ``dangling``
    (``{from, target, line}`` per unique unresolved target per page), within ``tier``."""
    allowed = _scope(g, tier)
    nodes, indeg, outdeg = degrees(g, allowed)
    orph = [g.ids[i] for i in nodes if indeg[i] == 0 and outdeg[i] == 0]
    leaves = [g.ids[i] for i in nodes if indeg[i] > 0 and outdeg[i] == 0]
    ids = None if allowed is None else {g.ids[i] for i in allowed}
    dang = [
        {"from": d.source, "target": d.target, "line": d.line}
        for d in g.dangling
        if ids is None or d.source in ids
    ]
    out = {
        "tier": tier or "all",
        "pages": len(nodes),
        "orphan_count": len(orph),
        "leaf_count": len(leaves),
        "dangling_count": len(dang),
        "orphans": orph if limit is None else orph[:limit],
        "leaves": leaves if limit is None else leaves[:limit],
        "dangling": dang if limit is None else dang[:limit],
    }
    return out


def tag_matches(tags: list[str], tag: str) -> bool:
    """``tag`` (case-insensitive, leading ``#`` ignored) equals a tag or is a parent of a
    nested ``tag/...`` one."""
    t = tag.strip().lstrip("#").strip().lower()
    for x in tags:
        x = x.lower()
        if x == t or x.startswith(t + "/"):
            return True
    return False


def cluster(g: WikiGraph, tag: str, tier: str | None = None, limit: int | None = None) -> dict[str, Any]:
    """The pages carrying ``tag`` (nested ``tag/x`` counts) and how tightly they link.

    ``members`` (id order, each with its in-degree; with ``limit`` the ``limit`` members with
    most in-links), ``member_count`` (before the limit), ``anchor`` (member with most in-links
    in the graph, ties by id), ``intra_edges`` (unordered member pairs linked either way),
    ``external_edges`` (links from members to non-members), ``density`` =
    intra / (N·(N−1)/2) (0 for N < 2).  An unknown tag is a :class:`NotFoundError`."""
    want = tag.strip().lstrip("#").strip()
    if not want:
        raise UsageError("--tag needs a tag name")
    all_members = [i for i, p in enumerate(g.pages) if p.props and tag_matches(frontmatter_tags(p.props), want)]
    if not all_members:
        import difflib

        known = sorted({t.lower() for p in g.pages for t in frontmatter_tags(p.props)})
        near = difflib.get_close_matches(want.lower(), known, n=5, cutoff=0.5)
        hint = f"; nearest tags: {', '.join(near)}" if near else ""
        raise NotFoundError(f"no page is tagged {tag!r}{hint}", details={"nearest": near})
    allowed = _scope(g, tier)
    members = [i for i in all_members if allowed is None or i in allowed]
    mset = set(members)
    _, indeg, _ = degrees(g, allowed)
    pairs: set[tuple[int, int]] = set()
    external = 0
    for i in members:
        for j in g.out_edges[i]:
            if j in mset:
                pairs.add((i, j) if i < j else (j, i))
            elif allowed is None or j in allowed:
                external += 1
    n = len(members)
    anchor = min(members, key=lambda i: (-indeg[i], g.ids[i])) if members else None
    shown = members if limit is None else sorted(members, key=lambda i: (-indeg[i], g.ids[i]))[:limit]
    edges = [[g.ids[a], g.ids[b]] for a in shown for b in g.out_edges[a] if b in mset and b in set(shown)]
    return {
        "tag": want,
        "tier": tier or "all",
        "members": [{**g.node_info(i), "in": indeg[i]} for i in shown],
        "member_count": n,
        "anchor": None if anchor is None else g.ids[anchor],
        "intra_edges": len(pairs),
        "external_edges": external,
        "density": (len(pairs) / (n * (n - 1) / 2)) if n >= 2 else 0.0,
        "edges": edges,
    }


def query(g: WikiGraph, q: Any, sort: str | None = None, tier: str | None = None, limit: int | None = None) -> dict[str, Any]:
    """Pages whose frontmatter matches the parsed query ``q`` (``q.matches(props)``), sorted by
    ``sort`` (``F`` ascending, ``-F`` descending; default ``-updated``; pages without the field
    last, ties by id).  Each match: ``{id, title, tier, properties}``."""
    from .querylang import DEFAULT_SORT, sort_pages

    allowed = _scope(g, tier)
    hits = [
        (g.ids[i], g.pages[i].props, i)
        for i in range(len(g.ids))
        if (allowed is None or i in allowed) and q.matches(g.pages[i].props)
    ]
    ordered = sort_pages(hits, sort or DEFAULT_SORT)
    if limit is not None:
        ordered = ordered[:limit]
    return {
        "tier": tier or "all",
        "sort": sort or DEFAULT_SORT,
        "count": len(hits),
        "matches": [
            {"id": pid, "title": g.pages[i].title, "tier": g.tiers[i], "properties": props}
            for pid, props, i in ordered
        ],
    }
