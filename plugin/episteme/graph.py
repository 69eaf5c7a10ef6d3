"""The wiki's link graph: link resolution and the graph algorithms of ``graph_query.py``.

API (stable; lint builds on it):

- ``WikiGraph.build(root, *, today=None, jobs=None) -> WikiGraph``: scan, resolve, index.
- ``WikiGraph.from_pages(pages, schema, *, today=None)``: the same from already scanned pages.
- ``g.resolve(target, from_id=None) -> Resolution``: what a link text (or a page argument)
  points at, with the resolution step and, when several pages matched, the candidates.
- ``g.find_page(name) -> str``: a page argument (title, path, stem or alias) to its id, or
  :class:`~episteme.errors.NotFoundError` listing the nearest names.
- ``g.out_edges[i]`` / ``g.in_edges[i]``: sorted unique neighbour indices of node ``i``;
  ``g.ids[i]``, ``g.index[id]``, ``g.pages[i]``, ``g.tiers[i]``.
- ``g.dangling`` (:class:`Dangling` per unique (source, target-casefolded) pair),
  ``g.ambiguities`` (:class:`Ambiguity` per link occurrence resolved by a tie-break),
  ``g.frontmatter_errors`` (pages with malformed frontmatter).
- ``g.node_set(tier) -> set[int] | None``: the nodes of a tier (``None`` = no restriction).
- Algorithms returning JSON-ready dicts: :func:`stats`, :func:`neighbors`,
  :func:`shortest_paths`, :func:`hubs`, :func:`orphans`, :func:`cluster`, :func:`query`.

Resolution (case-insensitive; the first step that matches wins):
1. frontmatter ``title``; 2. path relative to the root without ``.md``; 3. file name stem;
4. a frontmatter ``aliases`` entry.  Several candidates at one step: the one in the linking
page's own folder, else the shortest relative path (characters), else code-point order of the
path; the tie-break is recorded as an :class:`Ambiguity`.  Unresolved targets are dangling.
Self-links are dropped and edges are unique (source, target) pairs.

Why plain lists of ints: the graph is rebuilt on every call (the files are the only source of
truth), so building must cost little more than the scan itself.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections import deque, namedtuple
from collections.abc import Iterable
from itertools import islice

from .errors import NotFoundError, UsageError
from .pages import (
    NO_LINKS,
    LinkList,
    Page,
    frontmatter_title,
    normalize_target,
    scan_wiki,
    scan_wiki_lean,
)
from .schema import TIERS, Schema, compute_tier, load_schema

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (typing costs start-up time)
    from typing import Any

STEPS = ("title", "path", "stem", "alias")
MAX_DEPTH = 4


# Immutable records as named tuples: ``dataclasses`` (with ``inspect``) would cost the command
# more start-up time than scanning a thousand pages.
Resolution = namedtuple("Resolution", ["node", "step", "candidates"], defaults=[()])
Resolution.__doc__ = """Result of resolving a link target.  ``node`` is ``None`` when dangling; ``step`` is
one of :data:`STEPS`; ``candidates`` lists every page matched at that step (sorted) when there
was more than one."""

Dangling = namedtuple("Dangling", ["source", "target", "line"])
Dangling.__doc__ = "An unresolved link: the linking page's id, the target as written, its line."

Ambiguity = namedtuple("Ambiguity", ["source", "target", "line", "step", "chosen", "candidates"])
Ambiguity.__doc__ = """A link that several pages match at one resolution step, and the page the
tie-break chose (``candidates``: every matching page id, sorted)."""


def _tags_of(props: dict[str, Any]) -> list[str]:
    """Frontmatter ``tags`` as a list of strings without a leading ``#`` (a string value may
    hold several tags separated by commas or spaces)."""
    v = props.get("tags")
    if v is None:
        return []
    if isinstance(v, str):
        items: Iterable[Any] = v.replace(",", " ").split()
    elif isinstance(v, (list, tuple)):
        items = v
    else:
        items = [v]
    out = []
    for t in items:
        if t is None or isinstance(t, (list, dict)):
            continue
        s = str(t).strip().lstrip("#").strip()
        if s:
            out.append(s)
    return out


def _aliases_of(props: dict[str, Any]) -> list[str]:
    v = props.get("aliases")
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple)):
        return [str(a) for a in v if a is not None and not isinstance(a, (list, dict))]
    return [str(v)]


def _add_names(keys: dict[str, dict[str, int | list[int]]], pages: list[Page], start: int) -> None:
    """Add ``pages[start:]`` (nodes ``start..``) to the name index ``keys`` (step -> lowercased
    name -> node, or a list of nodes when several pages share the name: one list per key would
    make the four indexes the graph's largest structure at 50k pages).  Nodes must be added in
    order: candidate lists stay sorted."""
    title_k, path_k, stem_k, alias_k = (keys[s] for s in STEPS)

    def again(d: dict, key: str, i: int) -> None:  # the key is taken: by another page?
        v = d[key]
        if type(v) is list:
            if v[-1] != i:
                v.append(i)
        elif v != i:
            d[key] = [v, i]

    for i in range(start, len(pages)):
        p = pages[i]
        props = p.props
        if props:
            t = props.get("title")
            if t is not None:
                t = (t.strip() or None) if type(t) is str else frontmatter_title(props)
                if t is not None:
                    t = t.lower()
                    if title_k.setdefault(t, i) != i:
                        again(title_k, t, i)
            if "aliases" in props:
                for a in _aliases_of(props):
                    a = a.strip().lower()
                    if a and alias_k.setdefault(a, i) != i:
                        again(alias_k, a, i)
        pid = p.id
        low = pid[:-3].lower() if pid.endswith(".md") else pid.lower()
        if path_k.setdefault(low, i) != i:
            again(path_k, low, i)
        stem = low[low.rfind("/") + 1 :]
        if stem_k.setdefault(stem, i) != i:
            again(stem_k, stem, i)


class WikiGraph:
    """Pages as nodes ``0..n-1`` (in id order) and resolved links as directed edges."""

    def __init__(
        self,
        root: str,
        pages: list[Page],
        schema: Schema,
        today: _dt.date | None,
        keep_links: bool = True,
        targets: list[tuple[str, ...]] | None = None,
        keys: dict[str, dict[str, int | list[int]]] | None = None,
    ):
        """``targets`` (a lean build): each page's link targets without line numbers, the pages
        carrying no links; the line-numbered :attr:`dangling` and :attr:`ambiguities` lists are
        then made on first use by re-reading only the pages that have such links."""
        self.root = root
        self.schema = schema
        self.today = today or _dt.date.today()
        self.pages = pages
        self.ids = [p.id for p in pages]
        self.index = {pid: i for i, pid in enumerate(self.ids)}
        tiers_cfg = schema.tiers
        self.tiers_enabled = tiers_cfg.enabled
        if tiers_cfg.enabled:
            self.tiers = [compute_tier(p.props, tiers_cfg, self.today) for p in pages]
        else:
            self.tiers = ["active"] * len(pages)  # what compute_tier says for every page
        if keys is None:  # (a lean build brings the name index made along the scan)
            keys = {s: {} for s in STEPS}
            _add_names(keys, pages, 0)
        self._keys = keys
        self._cache: dict[str, tuple[str | None, list[int]]] = {}
        self.out_edges: list[list[int]] = []
        self._in_edges: list[list[int]] | None = None  # made from out_edges when first needed
        self._dangling: list[Dangling] | None = []
        self._ambiguities: list[Ambiguity] | None = []
        #: source node of each :attr:`dangling` entry, in order (counts without line numbers)
        self.dangling_sources: list[int] = []
        self.ambiguity_count = 0
        self.link_count = 0
        self._reread: list[int] = []  # lean build: pages whose dangling/ambiguous links need lines
        if targets is None:
            self._build_edges()
            if not keep_links:  # the caller needs only the graph: free ~40% of the memory
                for p in pages:
                    p.links = NO_LINKS
        else:
            self._build_edges_lean(targets)
        self.frontmatter_errors = [
            {"id": p.id, "error": p.fm_error, "line": p.fm_error_line} for p in pages if p.fm_error
        ]

    # ---------------------------------------------------------------- construction

    @classmethod
    def build(
        cls,
        root: str | os.PathLike,
        *,
        today: _dt.date | None = None,
        jobs: int | None = None,
        keep_links: bool = True,
    ) -> WikiGraph:
        """Scan the wiki at ``root`` and build its graph.

        ``keep_links=False`` is the lean build of the graph command: pages carry no links
        (``page.links`` is empty), link line numbers are never computed during the scan, and
        :attr:`dangling` / :attr:`ambiguities` re-read the few pages concerned when first asked
        for; every result equals the full build's.

        The cyclic garbage collector is paused meanwhile: the scan allocates hundreds of
        thousands of small containers and no cycles, and repeated full collections over them
        made large wikis super-linear (50k pages took 5× the time of 10k pages × 5)."""
        import gc

        root = os.fspath(root)
        if not os.path.isdir(root):
            raise NotFoundError(f"wiki folder not found: {root}")
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            schema = load_schema(root)
            if keep_links:
                return cls(root, scan_wiki(root, jobs=jobs), schema, today)
            # os.path.join(root, pid) for a relative pid, without a Python call per page
            prefix = "" if not root or root.endswith("/") else root + "/"
            pages: list[Page] = []
            keys: dict[str, dict[str, int | list[int]]] = {s: {} for s in STEPS}

            def page_objects(part: list[str], rows: list) -> None:
                # the first part's pages and names, made while the worker may still be scanning
                pages.extend(Page(pid, prefix + pid, r[0], NO_LINKS, r[1], r[2], r[3]) for pid, r in zip(part, rows, strict=True))
                _add_names(keys, pages, 0)

            ids, rows = scan_wiki_lean(root, jobs=jobs, meanwhile=page_objects)
            done = len(pages)
            pages.extend(
                Page(pid, prefix + pid, r[0], NO_LINKS, r[1], r[2], r[3])
                for pid, r in zip(ids[done:], rows[done:], strict=True)
            )
            _add_names(keys, pages, done)
            targets = [r[4] for r in rows]
            del rows
            return cls(root, pages, schema, today, False, targets, keys)
        finally:
            if was_enabled:
                gc.enable()

    @classmethod
    def from_pages(
        cls, pages: list[Page], schema: Schema, *, root: str = "", today: _dt.date | None = None
    ) -> WikiGraph:
        """Build from pages already scanned (sorted by id)."""
        return cls(root, sorted(pages, key=lambda p: p.id), schema, today)

    def _lookup(self, key: str) -> tuple[str | None, list[int]]:
        hit = self._cache.get(key)
        if hit is None:
            hit = (None, [])
            k = key
            if k.startswith("./"):
                k = k[2:]
            k = k.lstrip("/") if "/" in k else k
            for step in STEPS:
                c = self._keys[step].get(k if step in ("path", "stem") else key)
                if c is not None:
                    hit = (step, c if type(c) is list else [c])
                    break
            self._cache[key] = hit
        return hit

    def _choose(self, candidates: list[int], folder: str | None) -> int:
        pool = candidates
        if folder is not None:
            here = [c for c in candidates if self.pages[c].folder == folder]
            if here:
                pool = here
        return min(pool, key=lambda c: (len(self.ids[c]), self.ids[c]))

    def resolve(self, target: str, from_id: str | None = None) -> Resolution:
        """Resolve a link target (already normalized or raw link text) from page ``from_id``
        (``None`` = no linking page, so no same-folder preference)."""
        key = normalize_target(target).lower()
        if not key:
            return Resolution(None, None)
        step, cands = self._lookup(key)
        if not cands:
            return Resolution(None, None)
        if len(cands) == 1:
            return Resolution(cands[0], step)
        folder = None
        if from_id is not None:
            folder = from_id.rsplit("/", 1)[0] if "/" in from_id else ""
        return Resolution(self._choose(cands, folder), step, tuple(sorted(cands)))

    def _build_edges(self) -> None:
        out_edges = self.out_edges
        # raw target text -> candidates; most wikis spell a target the same way many times
        by_text: dict[str, tuple[str | None, list[int]]] = {}
        self.link_counts = link_counts = []
        for i, p in enumerate(self.pages):
            links = p.links
            link_counts.append(len(links))
            if not links:
                out_edges.append([])
                continue
            pairs = links.pairs() if type(links) is LinkList else links
            out_edges.append(self._resolve_links(i, pairs, by_text, True))
        self.link_count = sum(link_counts)

    def _resolve_links(
        self, i: int, pairs: Iterable[tuple[str, int]], by_text: dict[str, tuple[str | None, list[int]]], record: bool
    ) -> list[int]:
        """Resolve page ``i``'s ``(target, line)`` links; returns its sorted out-neighbours
        and (``record``) appends its dangling and ambiguous links to the lists."""
        p = self.pages[i]
        lookup = self._lookup
        ids = self.ids
        seen: set[str] = set()
        out: set[int] = set()
        folder = None
        for target, line in pairs:
            hit = by_text.get(target)
            if hit is None:
                hit = by_text[target] = lookup(target.lower())
            cands = hit[1]
            if not cands:
                key = target.lower()
                if key not in seen:
                    seen.add(key)
                    if record:
                        self._dangling.append(Dangling(p.id, target, line))
                        self.dangling_sources.append(i)
                continue
            if len(cands) == 1:
                j = cands[0]
            else:
                if folder is None:
                    folder = p.folder
                j = self._choose(cands, folder)
                if record:
                    self.ambiguity_count += 1
                    self._ambiguities.append(
                        Ambiguity(p.id, target, line, hit[0] or "", ids[j], tuple(ids[c] for c in sorted(cands)))
                    )
            out.add(j)
        out.discard(i)  # self-links are dropped
        return sorted(out)

    def _build_edges_lean(self, targets: list[tuple[str, ...]]) -> None:
        """:meth:`_build_edges` from bare targets.  Each distinct target text is resolved once
        to a code: its node, ``-1`` when dangling, ``-2`` when several pages match (the choice
        depends on the linking page's folder); a page whose codes are all nodes needs no loop
        in Python: one ``set(map(...))``."""
        out_edges = self.out_edges
        self.link_counts = link_counts = list(map(len, targets))
        self.link_count = sum(link_counts)
        self._dangling = self._ambiguities = None  # made on first use, with line numbers
        lowered: dict[str, str] = {}  # dangling target text -> its lowercase (what "unique" means)
        code = self._target_codes(set().union(*targets), lowered)
        self._codes = code  # (kept: lint finds the lines of just the links that need them)
        get = code.__getitem__
        low = lowered.get
        dangling_sources = self.dangling_sources
        reread = self._reread
        by_text: dict[str, tuple[str | None, list[int]]] = {}
        for i, ts in enumerate(targets):
            if not ts:
                out_edges.append([])
                continue
            hits = set(map(get, ts))
            if -1 in hits or -2 in hits:
                reread.append(i)
                if -1 in hits:
                    seen = set(map(low, ts))
                    seen.discard(None)
                    dangling_sources.extend([i] * len(seen))
                if -2 in hits:
                    self.ambiguity_count += sum(1 for t in ts if code[t] == -2)
                    hits = set(self._resolve_links(i, ((t, 0) for t in ts), by_text, False))
                else:
                    hits.discard(-1)
            hits.discard(i)  # self-links are dropped
            out_edges.append(sorted(hits))

    def _target_codes(self, texts: set[str], lowered: dict[str, str]) -> dict[str, int]:
        """Target text -> node, ``-1`` (dangling) or ``-2`` (several candidates): the four steps
        of :meth:`_lookup` inlined (it also strips ``./`` and ``/`` for the path and stem steps:
        those spellings go through it).  ``lowered`` receives each dangling text's lowercase."""
        title_k, path_k, stem_k, alias_k = (self._keys[s].get for s in STEPS)
        code: dict[str, int] = {}
        for t in texts:
            key = t.lower()
            if key.startswith(("./", "/")):
                cands = self._lookup(key)[1]
                v: int | list[int] | None = None if not cands else cands[0] if len(cands) == 1 else cands
            else:
                v = title_k(key)
                if v is None:
                    v = path_k(key)
                    if v is None:
                        v = stem_k(key)
                        if v is None:
                            v = alias_k(key)
            if v is None:
                code[t] = -1
                lowered[t] = key
            else:
                code[t] = -2 if type(v) is list else v  # type: ignore[assignment]
        return code

    def _line_numbered(self) -> None:
        """Make :attr:`dangling` and :attr:`ambiguities` of a lean build: re-read the pages
        that have such links (and only those) for their line numbers."""
        from .pages import read_page

        self._dangling, self._ambiguities = [], []
        self.dangling_sources, count = [], self.ambiguity_count
        by_text: dict[str, tuple[str | None, list[int]]] = {}
        for i in self._reread:
            p = self.pages[i]
            try:
                links = read_page(self.root, p.id).links
            except OSError:
                continue  # deleted since the scan: nothing to point at
            self._resolve_links(i, links.pairs(), by_text, True)
        self.ambiguity_count = count  # counted at the scan; the re-read only adds lines

    @property
    def dangling(self) -> list[Dangling]:
        """:class:`Dangling` per unique (source, target compared case-insensitively) pair, in
        page order then link order."""
        if self._dangling is None:
            self._line_numbered()
        return self._dangling  # type: ignore[return-value]

    @property
    def ambiguities(self) -> list[Ambiguity]:
        """:class:`Ambiguity` per link occurrence resolved by a tie-break."""
        if self._ambiguities is None:
            self._line_numbered()
        return self._ambiguities  # type: ignore[return-value]

    @property
    def in_edges(self) -> list[list[int]]:
        """``in_edges[j]``: sorted nodes that link to ``j`` (built on first use: stats and
        hubs need only the in-degrees, see :meth:`in_degrees`)."""
        if self._in_edges is None:
            ins: list[list[int]] = [[] for _ in self.ids]
            for i, lst in enumerate(self.out_edges):
                for j in lst:
                    ins[j].append(i)  # sources in increasing order: each list comes out sorted
            self._in_edges = ins
        return self._in_edges

    def in_degrees(self) -> list[int]:
        """In-degree of every node (counted in C when :attr:`in_edges` is not built)."""
        if self._in_edges is not None:
            return [len(x) for x in self._in_edges]
        from collections import Counter
        from itertools import chain

        counts = Counter(chain.from_iterable(self.out_edges))
        return [counts.get(j, 0) for j in range(len(self.ids))]

    @property
    def dangling_count(self) -> int:
        return len(self.dangling_sources)

    # ---------------------------------------------------------------- lookups

    @property
    def edge_count(self) -> int:
        return sum(len(o) for o in self.out_edges)

    def node_set(self, tier: str | None) -> set[int] | None:
        """Node indices of ``tier`` (``None`` or ``"all"`` = no restriction)."""
        if tier in (None, "all"):
            return None
        if tier not in TIERS:
            raise UsageError(f"unknown tier {tier!r} (use one of: {', '.join(TIERS)}, all)")
        return {i for i, t in enumerate(self.tiers) if t == tier}

    def find_page(self, name: str) -> int:
        """A page argument to its node index; accepts what a link accepts, plus the id."""
        raw = name.strip()
        if raw in self.index:
            return self.index[raw]
        r = self.resolve(raw)
        if r.node is not None:
            return r.node
        near = self.nearest(raw)
        hint = f"; nearest: {', '.join(near)}" if near else ""
        raise NotFoundError(f"no page matches {name!r}{hint}", details={"nearest": near})

    def nearest(self, name: str, n: int = 5) -> list[str]:
        """Page ids whose title, path, stem or alias is closest to ``name`` (difflib ratio)."""
        import difflib

        key = normalize_target(name).lower() or name.lower()
        names: dict[str, int] = {}
        for step in STEPS:
            for k, c in self._keys[step].items():
                names.setdefault(k, c[0] if type(c) is list else c)
        close = difflib.get_close_matches(key, list(names), n=n * 2, cutoff=0.5)
        if not close:
            close = [k for k in names if key and key in k][: n * 2]
        out: list[str] = []
        for k in close:
            pid = self.ids[names[k]]
            if pid not in out:
                out.append(pid)
        return out[:n]

    def node_info(self, i: int) -> dict[str, Any]:
        """``{id, title, type, tags (first 2), tier}``: how results name a page."""
        p = self.pages[i]
        t = p.props.get("type")
        return {
            "id": p.id,
            "title": p.title,
            "type": None if t is None else str(t),
            "tags": _tags_of(p.props)[:2],
            "tier": self.tiers[i],
        }

    def undirected(self, i: int, allowed: set[int] | None) -> list[int]:
        """Sorted neighbours of ``i`` over in ∪ out edges, restricted to ``allowed``."""
        nb = set(self.out_edges[i])
        nb.update(self.in_edges[i])
        nb.discard(i)
        if allowed is not None:
            nb &= allowed
        return sorted(nb, key=self.ids.__getitem__)


# ==================================================================== algorithms


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
        f = {"tag:" + t.lower() for t in _tags_of(g.pages[i].props)}
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
    all_members = [i for i, p in enumerate(g.pages) if p.props and tag_matches(_tags_of(p.props), want)]
    if not all_members:
        import difflib

        known = sorted({t.lower() for p in g.pages for t in _tags_of(p.props)})
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
