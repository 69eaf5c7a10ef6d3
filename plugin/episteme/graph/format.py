"""Text and Mermaid renderings of ``graph_query.py`` results.

API:

- ``render_text(mode, result, scanned) -> str``: the report layout every wiki skill uses
  (``[Operation] [Scanned] [Results] [Summary] [Suggested next]``).
- ``render_mermaid(mode, result) -> str``: a ``graph TD`` block for ``neighbors``,
  ``shortest-path`` and ``cluster`` (``UsageError`` for other modes).
- ``mermaid_label(text) -> str``: a label made safe inside ``["..."]``.

Why Mermaid node ids are ``n0, n1, ...``: page ids contain slashes, spaces, dots and words
Mermaid reserves (``end``, ``graph``); numbered ids with quoted labels can never break the
diagram, whatever the wiki's file names are.  ``tests/test_mermaid.py`` proves it with the
real Mermaid parser.
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError

MERMAID_MODES = ("neighbors", "shortest-path", "cluster")
#: Mermaid refuses diagrams with more edges than this (its ``maxEdges`` default, which a diagram
#: cannot raise); larger results are cut and say so in a ``%%`` comment.
MERMAID_MAX_EDGES = 500
_TIER_STYLE = {
    "archived": "fill:#eeeeee,stroke:#999999,color:#555555",
    "frozen": "fill:#dde6f0,stroke:#7a8ca3,color:#44556b,stroke-dasharray: 4 2",
}


# ---------------------------------------------------------------------------- Mermaid


def mermaid_label(text: str) -> str:
    """Escape a label for ``id["label"]``: Mermaid entity codes for the characters that end a
    label or start an entity, and no line breaks."""
    out = []
    for ch in str(text):
        if ch == '"':
            out.append("#quot;")
        elif ch == "#":
            out.append("#35;")
        elif ch == "&":
            out.append("#38;")
        elif ch == "<":
            out.append("#lt;")
        elif ch == ">":
            out.append("#gt;")
        elif ch in "\r\n\t":
            out.append(" ")
        elif ch in "`":
            out.append("#96;")
        else:
            out.append(ch)
    return "".join(out).strip() or " "


class _Diagram:
    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.lines: list[str] = ["graph TD"]
        self.tiers: dict[str, list[str]] = {}

    def node(self, page_id: str, label: str, tier: str | None = None) -> str:
        nid = self.ids.get(page_id)
        if nid is None:
            nid = f"n{len(self.ids)}"
            self.ids[page_id] = nid
            self.lines.append(f'    {nid}["{mermaid_label(label)}"]')
            if tier in _TIER_STYLE:
                self.tiers.setdefault(tier, []).append(nid)
        return nid

    def edge(self, a: str, b: str) -> None:
        self.lines.append(f"    {self.ids[a]} --> {self.ids[b]}")

    def text(self) -> str:
        for tier, nids in self.tiers.items():
            self.lines.append(f"    classDef {tier} {_TIER_STYLE[tier]}")
            self.lines.append(f"    class {','.join(nids)} {tier}")
        return "\n".join(self.lines) + "\n"


def render_mermaid(mode: str, result: dict[str, Any]) -> str:
    """A Mermaid ``graph TD`` of the pages and links a result covers."""
    if mode not in MERMAID_MODES:
        raise UsageError(f"--format mermaid is available for {', '.join(MERMAID_MODES)}, not {mode}")
    d = _Diagram()
    if mode == "neighbors":
        for layer in result["layers"]:
            for n in layer:
                d.node(n["id"], n["title"], n["tier"])
        edges = result["edges"]
    elif mode == "shortest-path":
        nodes = result["nodes"]
        if not result["paths"]:
            d.node(result["src"], result["src"])
            d.node(result["dst"], result["dst"])
            d.lines.append(f"    {d.ids[result['src']]} -.-|no path| {d.ids[result['dst']]}")
            return d.text()
        for path in result["paths"]:
            for pid in path:
                n = nodes[pid]
                d.node(pid, n["title"], n["tier"])
        edges = result["edges"]
    else:
        for n in result["members"]:
            d.node(n["id"], n["title"], n["tier"])
        edges = result["edges"]
    for a, b in edges[:MERMAID_MAX_EDGES]:
        d.edge(a, b)
    if len(edges) > MERMAID_MAX_EDGES:
        d.lines.append(
            f"    %% {len(edges) - MERMAID_MAX_EDGES} more links not drawn "
            f"(Mermaid draws at most {MERMAID_MAX_EDGES}); use --limit or a smaller --depth"
        )
    return d.text()


# ---------------------------------------------------------------------------- text


def _node_line(n: dict[str, Any]) -> str:
    bits = []
    if n.get("type"):
        bits.append(str(n["type"]))
    if n.get("tags"):
        bits.append(", ".join(f"#{t}" for t in n["tags"]))
    extra = f" ({'; '.join(bits)})" if bits else ""
    return f"[[{n['id']}]]{extra} [{n['tier']}]"


def _operation(mode: str, result: dict[str, Any]) -> str:
    if mode == "neighbors":
        arg = f"{result['seed']} (depth {result['depth']})"
    elif mode == "shortest-path":
        arg = f"{result['src']} → {result['dst']}"
    elif mode == "cluster":
        arg = f"#{result['tag']}"
    elif mode == "query":
        arg = result.get("query", "")
    elif mode == "hubs":
        arg = f"top {len(result['hubs'])}"
    else:
        arg = "whole wiki"
    tier = result.get("tier")
    if tier and tier != "all":
        arg += f" [tier: {tier}]"
    return f"[Operation] wiki-graph | {mode}: {arg}"


def _body(mode: str, r: dict[str, Any]) -> tuple[list[str], str, list[str]]:
    """(result lines, summary, suggested next actions)."""
    lines: list[str] = []
    nxt: list[str] = []
    if mode == "stats":
        lines.append(f"pages: {r['pages']}  edges: {r['edges']}  link occurrences: {r['links']}")
        t = r["tiers"]
        state = "enabled" if r["tiers_enabled"] else "disabled (every page active)"
        lines.append(f"tiers ({state}): active {t['active']}, archived {t['archived']}, frozen {t['frozen']}")
        lines.append(f"dangling links: {r['dangling']}  ambiguous links: {r['ambiguous_links']}")
        lines.append(f"frontmatter errors: {r['frontmatter_errors']}")
        for e in r["frontmatter_error_pages"][:10]:
            where = f" (line {e['line']})" if e.get("line") else ""
            lines.append(f"  {e['id']}{where}: {e['error']}")
        top = list(r["types"].items())[:8]
        if top:
            lines.append("types: " + ", ".join(f"{k} {v}" for k, v in top))
        summary = f"{r['pages']} pages joined by {r['edges']} links; {r['dangling']} links point nowhere."
        if r["dangling"] or r["frontmatter_errors"]:
            nxt.append("wiki-lint to list and fix dangling links and broken frontmatter")
        nxt.append("wiki-graph --mode hubs to see which pages hold the wiki together")
    elif mode == "neighbors":
        for d, layer in enumerate(r["layers"]):
            label = "(seed)" if d == 0 else f"({len(layer)})"
            lines.append(f"depth {d} {label}:")
            lines.extend(f"  {_node_line(n)}" for n in layer)
        summary = f"{r['count']} pages within {r['depth']} hop(s) of [[{r['seed']}]]."
        nxt.append("wiki-graph --format mermaid to draw this neighbourhood")
        if r["count"] == 0:
            nxt.append("wiki-lint --fix to find cross-reference candidates for this isolated page")
    elif mode == "shortest-path":
        if r["paths"]:
            nodes = r["nodes"]
            for p in r["paths"]:
                lines.append(
                    " → ".join(
                        f"[[{pid}]] ({nodes[pid].get('type') or '-'}, {nodes[pid]['tier']})" for pid in p
                    )
                )
            summary = f"{len(r['paths'])} shortest path(s) of {r['length']} hop(s)."
            if r["length"] and r["length"] >= 2:
                nxt.append("wiki-query to write up the bridge between these pages as a comparison page")
        else:
            lines.append("no path")
            for c in r.get("closest", []):
                lines.append(f"  candidate near {c['side']}: [[{c['id']}]] shares {', '.join(c['shared'])}")
            summary = "The two pages are in different components of the link graph."
            nxt.append("wiki-lint --fix, or add a link between the closest candidates")
    elif mode == "hubs":
        for h in r["hubs"]:
            lines.append(f"  {h['score']:>7g}  in {h['in']:>4}  out {h['out']:>4}  [[{h['id']}]]")
        summary = f"Top {len(r['hubs'])} of {r['pages']} pages by in + 0.5·out links."
        nxt.append("wiki-graph --mode neighbors --seed <hub> to see what a hub connects")
    elif mode == "orphans":
        lines.append(f"orphans ({r['orphan_count']}):")
        lines.extend(f"  [[{x}]]" for x in r["orphans"])
        lines.append(f"leaves ({r['leaf_count']}):")
        lines.extend(f"  [[{x}]]" for x in r["leaves"])
        lines.append(f"dangling ({r['dangling_count']}):")
        lines.extend(f"  [[{x['target']}]] in {x['from']} line {x['line']}" for x in r["dangling"])
        summary = (
            f"{r['orphan_count']} isolated pages, {r['leaf_count']} dead ends, "
            f"{r['dangling_count']} unresolved links."
        )
        if r["orphan_count"] or r["dangling_count"]:
            nxt.append("wiki-lint --fix to surface cross-reference candidates")
    elif mode == "cluster":
        lines.append(f"members: {r['member_count']}  anchor: [[{r['anchor']}]]")
        lines.append(
            f"intra edges: {r['intra_edges']}  external edges: {r['external_edges']}  density: {r['density']:.3f}"
        )
        lines.extend(f"  {_node_line(n)} in {n['in']}" for n in r["members"])
        shelf = "a tightly linked topic" if r["density"] >= 0.2 else "a loose grouping (more shelf than topic)"
        summary = f"#{r['tag']} has {r['member_count']} pages; density {r['density']:.3f}: {shelf}."
        if not any((m.get("type") or "") == "synthesis" for m in r["members"]):
            # wiki-query answers, then files the answer back through write_section.py
            nxt.append(f'wiki-query "synthesis of {r["tag"]}", then file the answer as a '
                       f'type: synthesis page')
    else:  # query
        for m in r["matches"]:
            p = m["properties"]
            extra = ", ".join(f"{k}: {p[k]}" for k in ("type", "updated") if p.get(k) is not None)
            lines.append(f"  [[{m['id']}]] [{m['tier']}]" + (f" ({extra})" if extra else ""))
        summary = f"{r['count']} page(s) match."
        nxt.append("wiki-graph --mode neighbors --seed <match> to explore a result")
    return lines, summary, nxt


def render_text(mode: str, result: dict[str, Any], scanned: dict[str, int]) -> str:
    lines, summary, nxt = _body(mode, result)
    out = [
        _operation(mode, result),
        "",
        f"[Scanned] {scanned['pages']} pages, {scanned['edges']} edges ({scanned['dangling']} dangling)",
        "",
        "[Results]",
        *(lines or ["(nothing)"]),
        "",
        "[Summary]",
        summary,
        "",
        "[Suggested next]",
        *(f"→ {n}" for n in (nxt or ["nothing to do"])),
    ]
    return "\n".join(out) + "\n"
