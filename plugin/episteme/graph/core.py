"""The wiki's link graph: pages as nodes, resolved links as edges.

API (lint builds on it; nothing outside this module touches an underscored name):

- ``WikiGraph.build(root, *, today=None, keep_links=True, visit=None) -> WikiGraph``: scan,
  resolve, index (``visit``: see :func:`episteme.wiki.scan.scan`).
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
- ``g.skipped``: ``*.md`` entries not read (not regular files, symlinks leading outside).
- ``g.shared_names(step)``: the node lists of names several pages share at one step.
- ``g.node_set(tier) -> set[int] | None``: the nodes of a tier (``None`` = no restriction).
- The algorithms over it are in :mod:`episteme.graph.algorithms`.

Resolution (case-insensitive; the first step that matches wins):
1. frontmatter ``title``; 2. path relative to the root without ``.md``; 3. file name stem;
4. a frontmatter ``aliases`` entry.  Several candidates at one step: the one in the linking
page's own folder, else the shortest relative path (characters), else code-point order of the
path; the tie-break is recorded as an :class:`Ambiguity`.  Unresolved targets are dangling.
Self-links are dropped and edges are unique (source, target) pairs.

Why plain lists of ints: the graph is rebuilt on every call (the files are the only source of
truth), so building must cost little more than the scan itself.

Why one module: building the graph, resolving names and the records of what did not resolve
cleanly (:class:`Dangling`, :class:`Ambiguity`) share one name index and the same plain-int
lists; the algorithms over a built graph are already apart (:mod:`episteme.graph.algorithms`).
"""

from __future__ import annotations

import datetime as _dt
import os
from collections import namedtuple
from collections.abc import Iterable
from itertools import compress
from typing import Any

from ..errors import NotFoundError, UsageError
from ..wiki.frontmatter import frontmatter_aliases, frontmatter_tags, frontmatter_title
from ..wiki.links import NO_LINKS, LinkList, link_lines, normalize_target, scan_links
from ..wiki.page import Page, read_body
from ..wiki.scan import Visitor, scan
from ..wiki.schema import TIERS, Schema, compute_tier, load_schema

STEPS = ("title", "path", "stem", "alias")
MAX_DEPTH = 4


Resolution = namedtuple("Resolution", ["node", "step", "candidates"], defaults=[()])
Resolution.__doc__ = """Result of resolving a link target.  ``node`` is ``None`` when dangling; ``step`` is
one of :data:`STEPS`; ``candidates`` lists every page matched at that step (sorted) when there
was more than one."""

Dangling = namedtuple("Dangling", ["source", "target", "line"])
Dangling.__doc__ = "An unresolved link: the linking page's id, the target as written, its line."

Ambiguity = namedtuple("Ambiguity", ["source", "target", "line", "step", "chosen", "candidates"])
Ambiguity.__doc__ = """A link that several pages match at one resolution step, and the page the
tie-break chose (``candidates``: every matching page id, sorted)."""





def _add_names(keys: dict[str, dict[str, int | list[int]]], pages: list[Page]) -> None:
    """Add ``pages`` (nodes ``0..``) to the name index ``keys`` (step -> lowercased
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

    for i, p in enumerate(pages):
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
                for a in frontmatter_aliases(props):
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
        keys: dict[str, dict[str, int | list[int]]] = {s: {} for s in STEPS}
        _add_names(keys, pages)
        self._keys = keys
        #: ``*.md`` entries the scan did not read, with the reason (see :meth:`build`)
        self.skipped: list[tuple[str, str]] = []
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
        self._reread_targets: list[tuple[str, ...]] = []  # ... and their targets
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
        keep_links: bool = True,
        visit: Visitor | None = None,
        schema: Schema | None = None,
    ) -> WikiGraph:
        """Scan the wiki at ``root`` and build its graph.

        ``keep_links=False`` is the lean build of the graph command and lint: pages carry no
        links (``page.links`` is empty), link line numbers are never computed during the scan,
        and :attr:`dangling` / :attr:`ambiguities` re-read the few pages concerned when first
        asked for; every result equals the full build's.  ``visit``: called with each page and
        its bytes during the scan (see :func:`episteme.wiki.scan.scan`).  ``schema``: the
        wiki's SCHEMA.md when the caller has loaded it already."""
        root = os.fspath(root)
        if not os.path.isdir(root):
            raise NotFoundError(f"wiki folder not found: {root}")
        if schema is None:
            schema = load_schema(root)
        result = scan(root, lines=keep_links, visit=visit)
        if keep_links:
            g = cls(root, result.pages, schema, today)
        else:
            targets = [p.targets for p in result.pages]
            for p in result.pages:
                p.targets = ()
            g = cls(root, result.pages, schema, today, False, targets)
        g.skipped = result.skipped
        return g

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
        self._codes = code  # (kept: the line-numbered re-read looks at just the links that need it)
        get = code.__getitem__
        low = lowered.get
        dangling_sources = self.dangling_sources
        reread, reread_targets = self._reread, self._reread_targets
        by_text: dict[str, tuple[str | None, list[int]]] = {}
        for i, ts in enumerate(targets):
            if not ts:
                out_edges.append([])
                continue
            hits = set(map(get, ts))
            if -1 in hits or -2 in hits:
                reread.append(i)
                reread_targets.append(ts)
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
        self._dangling, self._ambiguities = [], []
        self.dangling_sources, count = [], self.ambiguity_count
        by_text: dict[str, tuple[str | None, list[int]]] = {}
        code = self._codes.get
        ids = self.ids
        for i, targets in zip(self._reread, self._reread_targets, strict=True):
            p = self.pages[i]
            try:
                body, first = read_body(self.root, p.id)
            except OSError:
                continue  # deleted since the scan: nothing to point at
            codes = list(map(code, targets))
            # only the links that dangle (-1) or have several candidates (-2), picked in C;
            # only their lines are found, by their target's text where that is exact
            ks = list(compress(range(len(codes)), map((0).__gt__, codes)))
            lines = link_lines(body, first, targets, ks)
            if lines is None:
                links = scan_links(body, first)
                if links.targets != targets:  # changed since the scan
                    self._resolve_links(i, links.pairs(), by_text, True)
                    continue
                lines = [links.lines[k] for k in ks]
            seen: set[str] = set()
            for k, line in zip(ks, lines, strict=True):
                target, c = targets[k], codes[k]
                if c == -1:
                    key = target.lower()
                    if key not in seen:
                        seen.add(key)
                        self._dangling.append(Dangling(p.id, target, line))
                        self.dangling_sources.append(i)
                elif c == -2:
                    step, cands = self._lookup(target.lower())
                    j = self._choose(cands, p.folder)
                    self._ambiguities.append(
                        Ambiguity(p.id, target, line, step or "", ids[j],
                                  tuple(ids[c] for c in sorted(cands))))
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

    def shared_names(self, step: str) -> list[list[int]]:
        """The nodes (ascending) of every name that several pages share at resolution ``step``
        (one of :data:`STEPS`), in the order the names were first seen."""
        return [v for v in self._keys[step].values() if type(v) is list]

    def names_by_node(self, step: str) -> list[str | None]:
        """Each node's lowercased name at resolution ``step`` (``"title"`` or ``"stem"``; ``None``
        for a page without a title), read back from the name index rather than from every
        page's frontmatter again."""
        if step not in ("title", "stem"):
            raise UsageError(f"names_by_node: one name per page only at 'title' or 'stem', not {step!r}")
        out: list[str | None] = [None] * len(self.ids)
        for name, v in self._keys[step].items():
            if type(v) is list:
                for i in v:
                    out[i] = name
            else:
                out[v] = name  # type: ignore[index]
        return out

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
            "tags": frontmatter_tags(p.props)[:2],
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
