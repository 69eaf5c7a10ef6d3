/* The whole wiki as one map: every page a dot, topic links and citations drawn apart.
 *
 * Layout, computed once per map: a force layout (Fruchterman-Reingold: every pair repels,
 * every link pulls, a weak pull to the centre keeps unlinked pages near) run a fixed number of
 * rounds from a deterministic start (a sunflower spiral, best-linked pages in the middle), so the
 * same wiki always draws the same way.  The rounds shrink as the wiki grows so that the pairwise
 * work stays under a budget (MAP_TUNING, set with benchmarks/bench_ui_map.py: 300 pages lay out
 * in ~260 ms and are on screen in ~380 ms on the shared 2-core machine at load 25; see
 * benchmarks/RESULTS-ui-map.md).  Filters dim pages; they never move them.
 *
 * Drawing: all topic links are one SVG path and all citations another (thousands of <line>s
 * are what makes large SVGs slow), one circle per page, and labels only for the hubs (the
 * best-linked pages and the papers, skipping any that would overlap a label already placed)
 * and for the page under the pointer.  Wheel zooms at the pointer, drag pans.  Every text goes
 * in through textContent or an attribute: page titles are untrusted.
 */
(function (global) {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  // the layout's pair-work budget (rounds x pages^2) and bounds, the pull to the centre, the
  // sideways stretch for a wide stage, and the labels: see the header
  const MAP_TUNING = { pairBudget: 2.4e7, minRounds: 40, maxRounds: 300, gravity: 2.5, maxStretch: 1.7,
    hubLabels: 24, labelChars: 28, labelPx: 12.5 };

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function short(s, n) { s = String(s || ""); return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  /* Positions (Float64Arrays xs, ys) for n nodes and the undirected pairs in `links`. */
  function layout(n, links, size) {
    const xs = new Float64Array(n), ys = new Float64Array(n);
    if (!n) return { xs: xs, ys: ys };
    const deg = new Float64Array(n);
    links.forEach(([a, b]) => { deg[a]++; deg[b]++; });
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => deg[b] - deg[a] || a - b);
    const k = Math.sqrt(size * size / n) * 0.9;
    const golden = Math.PI * (3 - Math.sqrt(5));
    order.forEach((i, r) => {
      const rad = k * 0.6 * Math.sqrt(r + 0.5);
      xs[i] = rad * Math.cos(r * golden);
      ys[i] = rad * Math.sin(r * golden);
    });
    const rounds = Math.max(MAP_TUNING.minRounds, Math.min(MAP_TUNING.maxRounds,
      Math.floor(MAP_TUNING.pairBudget / (n * n))));
    const dx = new Float64Array(n), dy = new Float64Array(n);
    const k2 = k * k;
    let temp = size / 8;
    const cool = temp / (rounds + 1);
    for (let it = 0; it < rounds; it++) {
      dx.fill(0); dy.fill(0);
      for (let i = 0; i < n; i++) {
        const xi = xs[i], yi = ys[i];
        for (let j = i + 1; j < n; j++) {
          let ex = xi - xs[j], ey = yi - ys[j];
          let d2 = ex * ex + ey * ey;
          if (d2 < 0.01) { ex = 0.1 * ((i * 7 + j) % 3 - 1) || 0.1; ey = 0.1; d2 = 0.02; }
          const f = k2 / d2;
          dx[i] += ex * f; dy[i] += ey * f;
          dx[j] -= ex * f; dy[j] -= ey * f;
        }
      }
      for (let e = 0; e < links.length; e++) {
        const a = links[e][0], b = links[e][1];
        const ex = xs[a] - xs[b], ey = ys[a] - ys[b];
        const d = Math.sqrt(ex * ex + ey * ey) || 0.01;
        const f = d / k;
        dx[a] -= ex * f; dy[a] -= ey * f;
        dx[b] += ex * f; dy[b] += ey * f;
      }
      for (let i = 0; i < n; i++) {
        dx[i] -= xs[i] * MAP_TUNING.gravity; dy[i] -= ys[i] * MAP_TUNING.gravity; // islands stay in view
        const d = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) || 1;
        const step = Math.min(d, temp);
        xs[i] += dx[i] / d * step; ys[i] += dy[i] / d * step;
      }
      temp -= cool;
    }
    return { xs: xs, ys: ys };
  }

  /* Draw `data` ({nodes, edges} of GET /map) with `cites` ([[i, j]]: page i's paper cites page
   * j's) into `container`.  Returns a handle: filter(fn), show(kind, on), timings. */
  function draw(container, data, cites, opts) {
    opts = opts || {};
    const t0 = performance.now();
    container.textContent = "";
    const nodes = data.nodes || [];
    const n = nodes.length;
    const topic = (data.edges || []).filter(([a, b]) => a < n && b < n);
    cites = (cites || []).filter(([a, b]) => a < n && b < n && a !== b);
    const size = 1000;
    const pos = layout(n, topic.concat(cites), size);
    const t1 = performance.now();
    const xs = pos.xs, ys = pos.ys;
    // the layout is round and the stage wide: stretch it sideways to use the room
    const stageW = container.clientWidth || 900, stageH = container.clientHeight || 600;
    const stretch = Math.max(1, Math.min(MAP_TUNING.maxStretch, stageW / stageH));
    for (let i = 0; i < n; i++) xs[i] *= stretch;
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let i = 0; i < n; i++) {
      x0 = Math.min(x0, xs[i]); x1 = Math.max(x1, xs[i]); y0 = Math.min(y0, ys[i]); y1 = Math.max(y1, ys[i]);
    }
    if (!n) { x0 = y0 = -100; x1 = y1 = 100; }
    const pad = 60;
    const vb = [x0 - pad, y0 - pad, (x1 - x0) + 2 * pad, (y1 - y0) + 2 * pad];
    const svg = el("svg", { viewBox: vb.join(" "), width: "100%", height: "100%", role: "img",
      "aria-label": "map of the wiki: " + n + " pages", "data-testid": "map-svg",
      preserveAspectRatio: "xMidYMid meet" }, container);
    const view = el("g", { class: "m-view" }, svg);
    const deg = new Int32Array(n), cdeg = new Int32Array(n);
    topic.forEach(([a, b]) => { deg[a]++; deg[b]++; });
    cites.forEach(([a, b]) => { cdeg[a]++; cdeg[b]++; });
    const rad = new Float64Array(n);
    for (let i = 0; i < n; i++) rad[i] = 3 + Math.min(9, Math.sqrt(deg[i] + 2 * cdeg[i]) * 1.2);
    const unitsPerPx = Math.max(vb[2] / stageW, vb[3] / stageH);
    const pathOf = (pairs) => pairs.map(([a, b]) => "M" + xs[a].toFixed(1) + " " + ys[a].toFixed(1) +
      "L" + xs[b].toFixed(1) + " " + ys[b].toFixed(1)).join("");
    // the more links, the fainter each: a dense wiki stays a shape, not a black blot
    const topicPath = el("path", { class: "m-links", d: pathOf(topic), "data-testid": "map-links",
      "data-count": String(topic.length),
      "stroke-opacity": Math.max(0.12, Math.min(0.45, 8 / Math.sqrt(topic.length + 1))).toFixed(2) }, view);
    const citePath = el("path", { class: "m-cites", d: pathOf(cites), "data-testid": "map-cites",
      "data-count": String(cites.length) }, view);
    // an arrowhead at the cited paper's end of each citation (which paper cites which)
    const arrows = cites.map(([a, b]) => {
      const ex = xs[b] - xs[a], ey = ys[b] - ys[a];
      const len = Math.sqrt(ex * ex + ey * ey) || 1;
      const ux = ex / len, uy = ey / len;
      const tipX = xs[b] - ux * (rad[b] + 2), tipY = ys[b] - uy * (rad[b] + 2);
      const back = 11 * unitsPerPx, half = 4.5 * unitsPerPx;
      const bx = tipX - ux * back, by = tipY - uy * back;
      return "M" + tipX.toFixed(1) + " " + tipY.toFixed(1) + "L" + (bx - uy * half).toFixed(1) + " " +
        (by + ux * half).toFixed(1) + "L" + (bx + uy * half).toFixed(1) + " " + (by - ux * half).toFixed(1) + "Z";
    }).join("");
    const arrowPath = el("path", { class: "m-arrows", d: arrows }, view);
    const hi = el("path", { class: "m-hi", d: "" }, view);
    const gNodes = el("g", { class: "m-nodes" }, view);
    const circles = new Array(n);
    for (let i = 0; i < n; i++) {
      const nd = nodes[i];
      const r = rad[i];
      const kind = nd.paper ? "m-paper" : nd.type === "paper" ? "m-paperpart" : "m-topic";
      circles[i] = el("circle", { cx: xs[i].toFixed(1), cy: ys[i].toFixed(1), r: r.toFixed(1),
        class: "m-node " + kind, "data-i": String(i), "data-page": nd.id }, gNodes);
    }
    // labels: papers and the best-linked pages first, each skipped if it would overlap one placed
    const gLabels = el("g", { class: "m-labels" }, view);
    // labels of about 12 screen pixels at the first zoom, whatever the wiki's extent
    const fontPx = MAP_TUNING.labelPx * unitsPerPx;
    gLabels.setAttribute("font-size", fontPx.toFixed(1));
    const ranked = Array.from({ length: n }, (_, i) => i).sort((a, b) =>
      (nodes[b].paper ? 1 : 0) - (nodes[a].paper ? 1 : 0) || (deg[b] + 2 * cdeg[b]) - (deg[a] + 2 * cdeg[a]) || a - b);
    const boxes = [];
    let placed = 0;
    for (const i of ranked) {
      if (placed >= MAP_TUNING.hubLabels) break;
      if (!nodes[i].paper && deg[i] < 2) break;
      const text = short(nodes[i].title, MAP_TUNING.labelChars);
      const w = text.length * fontPx * 0.55, h = fontPx * 1.2;
      const bx = xs[i] - w / 2, by = ys[i] - 8 - h;
      if (boxes.some((b) => bx < b[0] + b[2] && b[0] < bx + w && by < b[1] + b[3] && b[1] < by + h)) continue;
      boxes.push([bx, by, w, h]);
      const t = el("text", { x: xs[i].toFixed(1), y: (ys[i] - 9).toFixed(1), "text-anchor": "middle",
        class: "m-label" + (nodes[i].paper ? " m-label-paper" : ""), "data-i": String(i) }, gLabels);
      t.textContent = text;
      placed++;
    }
    const hover = el("text", { class: "m-label m-hover", "text-anchor": "middle", visibility: "hidden",
      "data-testid": "map-hover" }, view);
    hover.setAttribute("font-size", (fontPx * 1.15).toFixed(1));

    // neighbours, for the hover highlight
    const adj = Array.from({ length: n }, () => []);
    topic.concat(cites).forEach(([a, b]) => { adj[a].push(b); adj[b].push(a); });

    // zoom and pan on the viewBox
    let cur = vb.slice();
    const setBox = () => {
      svg.setAttribute("viewBox", cur.map((v) => v.toFixed(1)).join(" "));
      const s = cur[2] / vb[2];
      gLabels.setAttribute("font-size", (fontPx * s).toFixed(2));
      hover.setAttribute("font-size", (fontPx * 1.15 * s).toFixed(2));
    };
    const toWorld = (ev) => {
      const r = svg.getBoundingClientRect();
      const scale = Math.max(cur[2] / r.width, cur[3] / r.height);
      const ox = (r.width * scale - cur[2]) / 2, oy = (r.height * scale - cur[3]) / 2;
      return [cur[0] - ox + (ev.clientX - r.left) * scale, cur[1] - oy + (ev.clientY - r.top) * scale, scale];
    };
    svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const [wx, wy] = toWorld(ev);
      const f = Math.exp(Math.max(-0.5, Math.min(0.5, ev.deltaY * 0.0015)));
      const nw = Math.min(vb[2] * 4, Math.max(vb[2] / 20, cur[2] * f));
      const g = nw / cur[2];
      cur = [wx - (wx - cur[0]) * g, wy - (wy - cur[1]) * g, cur[2] * g, cur[3] * g];
      setBox();
    }, { passive: false });
    let drag = null;
    svg.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, y: ev.clientY, box: cur.slice(), moved: false };
    });
    window.addEventListener("pointermove", (ev) => {
      if (!drag || !svg.isConnected) return;
      const r = svg.getBoundingClientRect();
      const scale = Math.max(cur[2] / r.width, cur[3] / r.height);
      const mx = ev.clientX - drag.x, my = ev.clientY - drag.y;
      if (Math.abs(mx) + Math.abs(my) > 3) drag.moved = true;
      if (!drag.moved) return;
      cur = [drag.box[0] - mx * scale, drag.box[1] - my * scale, cur[2], cur[3]];
      setBox();
    });
    window.addEventListener("pointerup", () => { setTimeout(() => { drag = null; }, 0); });

    function focus(i) {
      if (i == null) { hover.setAttribute("visibility", "hidden"); hi.setAttribute("d", ""); return; }
      hover.textContent = short(nodes[i].title, 60);
      hover.setAttribute("x", xs[i].toFixed(1));
      hover.setAttribute("y", (ys[i] - 11).toFixed(1));
      hover.setAttribute("visibility", "visible");
      hover.dataset.i = String(i);
      hi.setAttribute("d", pathOf(adj[i].map((j) => [i, j])));
    }
    gNodes.addEventListener("pointerover", (ev) => {
      const c = ev.target.closest && ev.target.closest(".m-node");
      focus(c ? Number(c.dataset.i) : null);
    });
    gNodes.addEventListener("pointerout", () => focus(null));
    gNodes.addEventListener("click", (ev) => {
      const c = ev.target.closest && ev.target.closest(".m-node");
      if (c && !(drag && drag.moved) && opts.onOpen) opts.onOpen(nodes[Number(c.dataset.i)].id);
    });

    const t2 = performance.now();
    const handle = {
      layoutMs: t1 - t0,
      drawMs: t2 - t0,
      focus: focus,
      /* Dim every page for which keep(node) is false; returns how many are kept. */
      filter(keep) {
        let kept = 0;
        for (let i = 0; i < n; i++) {
          const on = !keep || keep(nodes[i]);
          circles[i].classList.toggle("m-dim", !on);
          if (on) kept++;
        }
        gLabels.querySelectorAll(".m-label").forEach((t) => {
          t.classList.toggle("m-dim", circles[Number(t.dataset.i)].classList.contains("m-dim"));
        });
        svg.classList.toggle("m-filtered", !!keep);
        return kept;
      },
      /* Ring the pages whose title holds `text` (case-folded) and point at the first; returns
       * the first one's page id (null when none or `text` is empty). */
      find(text) {
        const q = String(text || "").trim().toLowerCase();
        let first = null;
        for (let i = 0; i < n; i++) {
          const hit = !!q && String(nodes[i].title || "").toLowerCase().includes(q);
          circles[i].classList.toggle("m-found", hit);
          if (hit && (first === null || deg[i] + cdeg[i] > deg[first] + cdeg[first])) first = i;
        }
        focus(first);
        return first === null ? null : nodes[first].id;
      },
      show(kind, on) {
        (kind === "cites" ? [citePath, arrowPath] : [topicPath]).forEach((e) => { e.style.display = on ? "" : "none"; });
      },
    };
    return handle;
  }

  global.WikiMap = { draw: draw, layout: layout, MAP_TUNING: MAP_TUNING };
})(window);
