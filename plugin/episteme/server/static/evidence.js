/* episteme evidence panel: a cited passage shown on its PDF page, the quoted text highlighted.
 *
 * The page image comes from GET /papers/{paper}/pages/{n}.png (rendered and cached by the
 * server), the highlight boxes from the source's `boxes` ([{page, bbox}] in PDF points, origin
 * bottom-left), the page geometry from GET /papers/{paper}.  Boxes are positioned in percent
 * of the page, so zooming only changes the image.  Images are fetched with the bearer token
 * (a plain <img src> could not send it) and shown from blob: URLs.  All text goes through
 * textContent.  Keyboard: Esc closes, [ / ] or PageUp / PageDown turn pages, + / - zoom.
 */
(function () {
  "use strict";
  const ZOOMS = [0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3];
  const st = { api: null, token: () => "", info: {}, cur: null, page: 1, zoom: 3, url: null,
    opener: null, ticket: 0 };
  const $ = (sel) => document.querySelector(sel);
  const enc = (s) => encodeURIComponent(s);

  function init(opts) {
    st.api = opts.api;
    st.token = opts.token || (() => "");
    $("#ev-close").addEventListener("click", close);
    $("#ev-prev").addEventListener("click", () => turn(-1));
    $("#ev-next").addEventListener("click", () => turn(1));
    $("#ev-zoom-in").addEventListener("click", () => zoom(1));
    $("#ev-zoom-out").addEventListener("click", () => zoom(-1));
    $("#ev-pdf").addEventListener("click", openPdf);
    $("#evidence").addEventListener("keydown", (ev) => {
      if (ev.target.tagName === "INPUT") return;
      if (ev.key === "Escape") { ev.preventDefault(); close(); }
      else if (ev.key === "PageDown" || ev.key === "]") { ev.preventDefault(); turn(1); }
      else if (ev.key === "PageUp" || ev.key === "[") { ev.preventDefault(); turn(-1); }
      else if (ev.key === "+" || ev.key === "=") { ev.preventDefault(); zoom(1); }
      else if (ev.key === "-") { ev.preventDefault(); zoom(-1); }
    });
  }

  async function paperInfo(paper) {
    if (!st.info[paper]) st.info[paper] = st.api("/papers/" + enc(paper));
    try { return await st.info[paper]; } catch (e) { delete st.info[paper]; throw e; }
  }

  /* Open the panel on one piece of evidence: {paper, page, section, quote, passage, boxes,
   * claim, verdict, reason, similarity}.  `opener` gets the focus back on close. */
  async function open(ev, opener) {
    st.cur = ev;
    st.opener = opener || document.activeElement;
    const boxes = Array.isArray(ev.boxes) ? ev.boxes : [];
    st.page = boxes.length ? boxes[0].page : (ev.page || 1);
    const panel = $("#evidence");
    panel.hidden = false;
    document.body.classList.add("ev-open");
    $("#ev-claim").textContent = ev.claim ? "“" + ev.claim + "”" : "";
    $("#ev-claim").hidden = !ev.claim;
    const verdict = ev.verdict || (ev.claim ? "supported" : "");
    const vc = $("#ev-verdict");
    vc.textContent = verdict ? verdict + (ev.reason ? " — " + (ev.reason.text || ev.reason) : "") : "";
    vc.className = "verdict " + (verdict || "none");
    vc.hidden = !verdict;
    $("#ev-source").textContent = [ev.paper, ev.section, ev.page ? "p. " + ev.page : ""].filter(Boolean).join(" · ");
    $("#ev-quote").textContent = ev.quote || ev.passage || "";
    $("#ev-nobox").hidden = boxes.length > 0;
    $("#ev-close").focus();
    st.fit = true; // the first view of a source fits the page to the panel's width
    await show(true);
  }

  function close() {
    const panel = $("#evidence");
    if (panel.hidden) return;
    panel.hidden = true;
    document.body.classList.remove("ev-open");
    st.ticket++;
    if (st.url) { URL.revokeObjectURL(st.url); st.url = null; }
    $("#ev-img").removeAttribute("src");
    if (st.opener && document.body.contains(st.opener)) st.opener.focus();
  }

  function turn(d) {
    if (!st.cur) return;
    const info = st.info[st.cur.paper];
    st.page = Math.max(1, st.page + d);
    Promise.resolve(info).then((i) => {
      if (i && i.page_count) st.page = Math.min(st.page, i.page_count);
      show(false);
    });
  }

  function zoom(d) {
    st.zoom = Math.max(0, Math.min(ZOOMS.length - 1, st.zoom + d));
    show(false);
  }

  async function fetchBlob(url) {
    const headers = {};
    const tok = st.token();
    if (tok) headers.Authorization = "Bearer " + tok;
    const res = await fetch(url, { headers: headers });
    if (!res.ok) {
      let msg = "HTTP " + res.status;
      try { msg = (await res.json()).error || msg; } catch (e) { /* not JSON */ }
      throw new Error(msg);
    }
    return res.blob();
  }

  async function show(scrollToBox) {
    const ev = st.cur;
    const ticket = ++st.ticket;
    const err = $("#ev-error");
    err.hidden = true;
    let info;
    try {
      info = await paperInfo(ev.paper);
    } catch (e) {
      if (ticket !== st.ticket) return;
      err.textContent = e.message;
      err.hidden = false;
      return;
    }
    if (ticket !== st.ticket) return;
    const n = Math.min(Math.max(1, st.page), info.page_count);
    st.page = n;
    const geo = info.pages[n - 1];
    if (st.fit) {
      st.fit = false;
      const room = $("#ev-view").clientWidth - 28;
      let z = 0;
      ZOOMS.forEach((s, i) => { if (geo.width * s <= room) z = i; });
      st.zoom = z;
    }
    const scale = ZOOMS[st.zoom];
    $("#ev-pageno").textContent = "p. " + n + " / " + info.page_count;
    $("#ev-zoom").textContent = Math.round(scale * 100) + "%";
    $("#ev-prev").disabled = n <= 1;
    $("#ev-next").disabled = n >= info.page_count;
    $("#ev-zoom-out").disabled = st.zoom === 0;
    $("#ev-zoom-in").disabled = st.zoom === ZOOMS.length - 1;
    $("#ev-pdf").href = "/papers/" + enc(ev.paper) + "/pdf#page=" + n;
    const sheet = $("#ev-sheet");
    sheet.style.width = Math.round(geo.width * scale) + "px";
    sheet.style.aspectRatio = geo.width + " / " + geo.height;
    // the boxes of this page, in percent of the page
    const layer = $("#ev-boxes");
    layer.textContent = "";
    const mine = (ev.boxes || []).filter((b) => b.page === n);
    const [ox, oy] = geo.origin || [0, 0];
    mine.forEach((b) => {
      const [x0, y0, x1, y1] = b.bbox;
      const d = document.createElement("div");
      d.className = "hl";
      d.dataset.bbox = b.bbox.join(",");
      d.style.left = (100 * (x0 - ox - 1) / geo.width) + "%";
      d.style.top = (100 * (oy + geo.height - y1 - 1) / geo.height) + "%";
      d.style.width = (100 * (x1 - x0 + 2) / geo.width) + "%";
      d.style.height = (100 * (y1 - y0 + 2) / geo.height) + "%";
      layer.appendChild(d);
    });
    const elsewhere = [...new Set((ev.boxes || []).map((b) => b.page).filter((p) => p !== n))];
    $("#ev-more").textContent = elsewhere.length ? "The quote is also highlighted on p. " + elsewhere.join(", ") + "." : "";
    $("#ev-more").hidden = !elsewhere.length;
    $("#ev-img").alt = "page " + n + " of " + ev.paper + (mine.length ? ", the quoted passage highlighted" : "");
    // a sharp image on high-density screens, within the server's bound
    const px = Math.min(4, Math.round(scale * (window.devicePixelRatio || 1) * 4) / 4);
    try {
      const blob = await fetchBlob("/papers/" + enc(ev.paper) + "/pages/" + n + ".png?scale=" + px);
      if (ticket !== st.ticket) return;
      if (st.url) URL.revokeObjectURL(st.url);
      st.url = URL.createObjectURL(blob);
      const img = $("#ev-img");
      await new Promise((ok) => { img.onload = ok; img.onerror = ok; img.src = st.url; });
    } catch (e) {
      if (ticket !== st.ticket) return;
      err.textContent = e.message;
      err.hidden = false;
      return;
    }
    if (ticket !== st.ticket) return;
    $("#evidence").dataset.loaded = String(n);
    if (scrollToBox && mine.length) {
      const first = layer.firstChild;
      const view = $("#ev-view");
      view.scrollTop = Math.max(0, first.offsetTop - 80);
      view.scrollLeft = Math.max(0, first.offsetLeft - 40);
    }
  }

  async function openPdf(e) {
    // with a token the plain link would be refused: fetch the file and open it from a blob
    if (!st.token()) return;
    e.preventDefault();
    try {
      const blob = await fetchBlob("/papers/" + enc(st.cur.paper) + "/pdf");
      window.open(URL.createObjectURL(blob) + "#page=" + st.page, "_blank", "noopener");
    } catch (err) {
      $("#ev-error").textContent = err.message;
      $("#ev-error").hidden = false;
    }
  }

  window.Evidence = { init: init, open: open, close: close };
})();
