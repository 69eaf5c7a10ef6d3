/* A page's neighborhood as SVG: our own small layout, no libraries.
 *
 * Layout: the `neighbors` result comes in BFS layers, so the seed sits in the middle and layer d
 * on a ring of radius d*R (a layered radial layout); each ring is ordered by the mean angle of
 * the nodes it links to in the inner ring, which keeps edges short and mostly uncrossed.  A few
 * rounds of pairwise repulsion then push apart labels that still overlap, while a spring holds
 * every node near its ring.  Deterministic: the same graph always draws the same way.
 */
(function (global) {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  function layout(layers, edges, width, height) {
    const pos = {};
    const cx = width / 2, cy = height / 2;
    const rings = Math.max(1, layers.length - 1);
    // elliptic rings: labels sit outside the ring, left/right, so the ring is tall and narrow
    const Rx = Math.max(40, (width / 2 - 96)) / rings;
    const Ry = Math.max(60, (height / 2 - 22)) / rings;
    const adj = {};
    edges.forEach(([a, b]) => { (adj[a] = adj[a] || []).push(b); (adj[b] = adj[b] || []).push(a); });
    layers.forEach((layer, d) => {
      if (d === 0) { pos[layer[0].id] = { x: cx, y: cy, a: 0, d: 0, ax: cx, ay: cy }; return; }
      const keyed = layer.map((n, idx) => {
        const inner = (adj[n.id] || []).map((m) => pos[m]).filter((p) => p && p.d === d - 1);
        let a = idx / layer.length * 2 * Math.PI;
        if (inner.length && d > 1) {
          const sx = inner.reduce((s, p) => s + Math.cos(p.a), 0);
          const sy = inner.reduce((s, p) => s + Math.sin(p.a), 0);
          a = Math.atan2(sy, sx);
        }
        return { n: n, a: a };
      });
      if (d > 1) keyed.sort((p, q) => p.a - q.a);
      const offset = -Math.PI / 2 + (d % 2 ? 0 : Math.PI / layer.length);
      keyed.forEach((k, j) => {
        const a = offset + (j + 0.5) / keyed.length * 2 * Math.PI;
        const x = cx + d * Rx * Math.cos(a), y = cy + d * Ry * Math.sin(a);
        pos[k.n.id] = { x: x, y: y, a: a, d: d, ax: x, ay: y };
      });
    });
    // relax: close pairs repel, a spring holds each node near its place on the ring
    const ids = Object.keys(pos);
    for (let it = 0; it < 60; it++) {
      for (let i = 0; i < ids.length; i++) {
        const p = pos[ids[i]];
        if (p.d === 0) continue;
        let fx = (p.ax - p.x) * 0.15, fy = (p.ay - p.y) * 0.15;
        for (let j = 0; j < ids.length; j++) {
          if (i === j) continue;
          const q = pos[ids[j]];
          const dx = p.x - q.x, dy = (p.y - q.y) * 2.5; // labels are wide: vertical gaps count more
          const dist2 = Math.max(dx * dx + dy * dy, 1);
          if (dist2 < 60 * 60) { const f = 150 / dist2; fx += dx * f; fy += dy * f; }
        }
        p.x = Math.min(width - 8, Math.max(8, p.x + Math.max(-4, Math.min(4, fx))));
        p.y = Math.min(height - 10, Math.max(10, p.y + Math.max(-4, Math.min(4, fy))));
      }
    }
    return pos;
  }

  function draw(container, result, onOpen) {
    container.textContent = "";
    const layers = result.layers || [];
    if (!layers.length) { container.textContent = "No neighborhood."; return; }
    const nodes = [].concat.apply([], layers);
    const width = Math.max(container.clientWidth || 320, 260);
    const height = Math.max(220, Math.min(560, 120 + nodes.length * 18));
    const svg = el("svg", { viewBox: "0 0 " + width + " " + height, width: "100%", height: height,
      role: "img", "aria-label": "links around " + result.seed, "data-testid": "graph-svg" }, container);
    const defs = el("defs", {}, svg);
    const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5",
      markerWidth: "6", markerHeight: "6", orient: "auto-start-reverse" }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", class: "g-arrow" }, marker);
    const pos = layout(layers, result.edges || [], width, height);
    const gEdges = el("g", { class: "g-edges" }, svg);
    (result.edges || []).forEach(([a, b]) => {
      const p = pos[a], q = pos[b];
      if (!p || !q) return;
      const dx = q.x - p.x, dy = q.y - p.y;
      const len = Math.sqrt(dx * dx + dy * dy) || 1;
      const pad = 9;
      el("line", { x1: p.x + dx / len * pad, y1: p.y + dy / len * pad, x2: q.x - dx / len * pad,
        y2: q.y - dy / len * pad, class: "g-edge", "marker-end": "url(#arrow)" }, gEdges);
    });
    const gNodes = el("g", { class: "g-nodes" }, svg);
    nodes.forEach((n) => {
      const p = pos[n.id];
      const g = el("g", { class: "g-node d" + p.d + (n.type ? " t-" + String(n.type).replace(/[^\w-]/g, "") : ""),
        transform: "translate(" + p.x.toFixed(1) + "," + p.y.toFixed(1) + ")", tabindex: "0",
        "data-page": n.id }, gNodes);
      el("title", {}, g).textContent = n.title + (n.type ? " (" + n.type + ")" : "");
      el("circle", { r: p.d === 0 ? 9 : 6 }, g);
      // label outside the ring: right of nodes on the right half, left of those on the left
      const c = Math.cos(p.a);
      const side = p.d === 0 ? "middle" : c > 0.15 ? "start" : c < -0.15 ? "end" : "middle";
      const label = el("text", {
        x: side === "start" ? 10 : side === "end" ? -10 : 0,
        y: side === "middle" ? (p.d === 0 || Math.sin(p.a) < 0 ? -13 : 19) : 4,
        "text-anchor": side }, g);
      label.textContent = short(n.title, p.d === 0 ? 34 : 18);
      const open = () => onOpen(n.id);
      g.addEventListener("click", open);
      g.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
    });
  }

  global.GraphView = { draw: draw, layout: layout };
})(window);
