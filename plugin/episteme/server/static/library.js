/* The library (every paper, its citations, remove / re-ingest), the whole-wiki map and the
 * citations of a paper page.  GET /citations is fetched once and shared by all of them and by
 * the answer's sources (reset after anything is ingested or removed).  Server text goes through
 * Markdown.escape or textContent, never straight into innerHTML.
 */
(function (global) {
  "use strict";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const esc = (s) => global.Markdown.escape(s == null ? "" : String(s));
  const enc = encodeURIComponent;
  const st = { api: null, onChange: () => {}, citations: null, mapTicket: 0 };

  function init(opts) {
    st.api = opts.api;
    st.onChange = opts.onChange || st.onChange;
  }

  /* GET /citations, fetched once (a promise; null when it failed, and then asked again next
   * time: a 401 before the token was given must not stick). */
  function citations() {
    if (!st.citations) {
      const p = st.api("/citations?limit=1000").catch(() => {
        if (st.citations === p) st.citations = null;
        return null;
      });
      st.citations = p;
    }
    return st.citations;
  }
  function reset() { st.citations = null; }

  function pageLink(page, text, testid) {
    return '<a class="wikilink" href="#/wiki/' + esc(enc(page)) + '"' + (testid ? ' data-testid="' + testid + '"' : "") +
      ">" + esc(text) + "</a>";
  }

  function paperLabel(c, id) {
    const p = (c.papers || []).find((x) => x.paper === id);
    const title = (p && p.title) || id;
    const page = (c.pages || {})[id];
    return (page ? pageLink(page, title, "cite-link") : '<span class="nopage">' + esc(title) + "</span>") +
      (p && p.year ? ' <span class="muted small">' + esc(p.year) + "</span>" : "");
  }

  // ------------------------------------------------------------------ paper page
  /* The paper a page stands for: its `paper_file: raw/<id>`, else its only source. */
  function paperOfPage(p) {
    const fm = p.frontmatter || {};
    if (typeof fm.paper_file === "string" && fm.paper_file.startsWith("raw/")) return fm.paper_file.slice(4);
    if (p.type === "paper" && Array.isArray(fm.sources) && fm.sources.length === 1) return String(fm.sources[0]);
    return null;
  }

  /* Fill `box` with what cites the paper of page `p` and what it cites (empty when not a paper). */
  async function paperCitations(box, p, isCurrent) {
    box.textContent = "";
    const id = p.type === "paper" ? paperOfPage(p) : null;
    if (!id) return;
    const c = await citations();
    if (!isCurrent()) return;
    const me = c && (c.papers || []).find((x) => x.paper === id);
    if (!me) return;
    const list = (ids, testid) => ids.length
      ? '<ul data-testid="' + testid + '">' + ids.map((x) => "<li>" + paperLabel(c, x) + "</li>").join("") + "</ul>"
      : '<p class="muted small" data-testid="' + testid + '">None in this wiki.</p>';
    box.innerHTML = '<h3>Cited by <span class="count">' + esc(me.cited_by.length) + "</span></h3>" +
      list(me.cited_by, "cited-by") +
      '<h3>Cites <span class="count">' + esc(me.cites.length) + "</span></h3>" + list(me.cites, "cites") +
      '<p class="muted small">' + esc(me.references) + " entries in its reference list.</p>";
  }

  /* {paper id: number of ingested papers citing it} (empty when the route failed). */
  async function citedByCounts() {
    const c = await citations();
    const out = {};
    ((c && c.papers) || []).forEach((p) => { out[p.paper] = (p.cited_by || []).length; });
    return out;
  }

  // ------------------------------------------------------------------ library
  async function showLibrary(root) {
    root.innerHTML = '<p class="muted">Loading the library…</p>';
    let lib, c;
    try {
      [lib, c] = await Promise.all([st.api("/library"), citations()]);
    } catch (e) {
      root.innerHTML = '<div class="error">' + esc(e.message) + "</div>";
      return;
    }
    const papers = lib.papers || [];
    let html = '<div class="lib-head"><h2>Library <span class="count">' + papers.length + "</span></h2>" +
      '<p class="muted small">Every ingested paper. Sections: wiki sections that draw on it. Cited by / cites: other papers of this wiki.' +
      " Removing a paper takes it out of the stores and raw/; its wiki pages are kept.</p></div>" +
      '<div class="lib-msg" id="lib-msg" aria-live="polite"></div>';
    if (!papers.length) {
      root.innerHTML = html + '<div class="empty"><h2>No papers yet</h2><p><a href="#/ingest">Add a paper</a> to start the library.</p></div>';
      return;
    }
    const cit = {};
    ((c && c.papers) || []).forEach((p) => { cit[p.paper] = p; });
    html += '<table class="library" data-testid="library"><thead><tr><th>Title</th><th>Authors</th><th>Year</th><th>Venue</th>' +
      '<th title="wiki sections that list it as a source">Sections</th><th>Cited by</th><th>Cites</th><th></th></tr></thead><tbody>' +
      papers.map((p) => {
        const cp = cit[p.paper] || { cites: [], cited_by: [] };
        const names = (ids) => ids.map((x) => (cit[x] && cit[x].title) || x).join("\n");
        const authors = p.authors || [];
        return '<tr data-paper="' + esc(p.paper) + '">' +
          '<td class="lib-title">' + (p.wiki_page ? pageLink(p.wiki_page, p.title || p.paper) : esc(p.title || p.paper)) +
          '<div class="muted small">' + esc(p.paper) + "</div></td>" +
          '<td class="small">' + esc(authors.slice(0, 3).join(", ") + (authors.length > 3 ? " et al." : "")) + "</td>" +
          "<td>" + esc(p.year || "") + "</td>" +
          '<td class="small lib-venue">' + esc(p.venue || "") + "</td>" +
          '<td class="num" data-col="sections">' + esc(p.wiki_sections) + "</td>" +
          '<td class="num" data-col="cited-by" title="' + esc(names(cp.cited_by)) + '">' + esc(p.cited_by) + "</td>" +
          '<td class="num" data-col="cites" title="' + esc(names(cp.cites)) + '">' + esc(p.cites) + "</td>" +
          '<td class="lib-actions"><button type="button" class="btn small-btn" data-act="reingest">Re-ingest</button> ' +
          '<button type="button" class="btn small-btn danger" data-act="remove">Remove</button>' +
          '<div class="lib-status small muted" aria-live="polite"></div></td></tr>';
      }).join("") + "</tbody></table>";
    root.innerHTML = html;
  }

  async function waitJob(job, status) {
    let j = job;
    while (j.status === "queued" || j.status === "running") {
      const p = j.progress || {};
      status.textContent = (p.phase || j.status) + (p.total ? " " + p.done + "/" + p.total : "") + "…";
      await new Promise((res) => setTimeout(res, 400));
      j = await st.api("/jobs/" + enc(job.job || job.id));
    }
    if (j.status === "failed") throw new Error((j.error && (j.error.error || j.error)) || "failed");
    return j;
  }

  async function libraryAction(root, btn) {
    const tr = btn.closest("tr");
    const paper = tr.dataset.paper;
    const status = $(".lib-status", tr);
    if (btn.dataset.act === "remove" && !btn.classList.contains("armed")) {
      btn.classList.add("armed"); // a second click confirms: nothing is removed by one slip
      btn.textContent = "Confirm removal";
      status.textContent = "Click again to remove it from the stores and raw/.";
      return;
    }
    tr.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    try {
      const job = btn.dataset.act === "remove"
        ? await st.api("/papers/" + enc(paper) + "?wait=false", { method: "DELETE" })
        : await st.api("/papers/" + enc(paper) + "/reingest?wait=false", { method: "POST" });
      const j = await waitJob(job, status);
      reset();
      st.onChange();
      await showLibrary(root);
      const r = j.result || {};
      const msg = $("#lib-msg", root);
      if (btn.dataset.act === "remove") {
        const kept = (Array.isArray(r.cited_by) ? r.cited_by : []).length;
        msg.textContent = "Removed " + paper + "." + (kept ? " " + kept + " wiki sections still name it as a source (pages kept)." : "");
      } else {
        msg.textContent = "Re-ingested " + paper + ": " + (r.sections_indexed || 0) + " sections, " +
          (r.wiki_pages_updated || []).length + " wiki pages written.";
      }
    } catch (e) {
      status.textContent = e.message;
      status.classList.add("error-text");
      tr.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    }
  }

  // ------------------------------------------------------------------ map
  async function showMap(root) {
    const t0 = performance.now();
    const ticket = ++st.mapTicket;
    const stage = $("#map-stage", root);
    const info = $("#map-info", root);
    stage.removeAttribute("data-ready");
    let data, c;
    try {
      // the pages are read again each time (they change outside the UI); the citations once
      [data, c] = await Promise.all([st.api("/map"), citations()]);
    } catch (e) {
      stage.innerHTML = '<div class="error">' + esc(e.message) + "</div>";
      return;
    }
    if (ticket !== st.mapTicket) return;
    const nodes = data.nodes || [];
    const idx = {};
    nodes.forEach((nd, i) => { idx[nd.id] = i; });
    const pages = (c && c.pages) || {};
    const cites = [];
    let unplaced = 0;
    ((c && c.links) || []).forEach((lk) => {
      const a = idx[pages[lk.citing]], b = idx[pages[lk.cited]];
      if (a == null || b == null) unplaced++; else cites.push([a, b]);
    });
    const handle = global.WikiMap.draw(stage, data, cites, {
      onOpen: (id) => { location.hash = "#/wiki/" + enc(id); } });
    // the filters: tags by how many pages carry them, papers by title
    const tagCount = {};
    nodes.forEach((nd) => (nd.tags || []).forEach((t) => { tagCount[t] = (tagCount[t] || 0) + 1; }));
    const tags = Object.keys(tagCount).sort((a, b) => tagCount[b] - tagCount[a] || a.localeCompare(b)).slice(0, 300);
    const tagSel = $("#map-tag", root), paperSel = $("#map-paper", root);
    tagSel.innerHTML = '<option value="">all tags</option>' + tags.map((t) =>
      '<option value="' + esc(t) + '">#' + esc(t) + " (" + tagCount[t] + ")</option>").join("");
    const paperIds = {};
    ((c && c.papers) || []).forEach((p) => { paperIds[p.paper] = p.title || p.paper; });
    nodes.forEach((nd) => { if (nd.paper && !paperIds[nd.paper]) paperIds[nd.paper] = nd.title; });
    paperSel.innerHTML = '<option value="">all papers</option>' + Object.keys(paperIds)
      .sort((a, b) => String(paperIds[a]).localeCompare(String(paperIds[b])))
      .map((p) => '<option value="' + esc(p) + '">' + esc(short(paperIds[p], 60)) + "</option>").join("");
    const counts = () => {
      const tag = tagSel.value, paper = paperSel.value;
      const keep = !tag && !paper ? null : (nd) => (!tag || (nd.tags || []).includes(tag)) &&
        (!paper || nd.paper === paper || (nd.sources || []).includes(paper));
      const kept = handle.filter(keep);
      info.textContent = (keep ? kept + " of " : "") + nodes.length + " pages · " + (data.edges || []).length +
        " topic links · " + cites.length + " citations" + (unplaced ? " (" + unplaced + " between papers without a page)" : "");
    };
    const find = $("#map-find", root);
    const found = () => handle.find(find.value);
    find.oninput = found;
    find.onkeydown = (ev) => {
      const id = ev.key === "Enter" ? found() : null;
      if (id) location.hash = "#/wiki/" + enc(id);
    };
    if (find.value) found();
    tagSel.onchange = counts;
    paperSel.onchange = counts;
    $("#map-show-links", root).onchange = (e) => handle.show("links", e.target.checked);
    $("#map-show-cites", root).onchange = (e) => handle.show("cites", e.target.checked);
    handle.show("links", $("#map-show-links", root).checked);
    handle.show("cites", $("#map-show-cites", root).checked);
    counts();
    const ms = performance.now() - t0;
    stage.dataset.renderMs = ms.toFixed(1);
    stage.dataset.layoutMs = handle.layoutMs.toFixed(1);
    stage.dataset.ready = "1";
    stage.title = nodes.length + " pages laid out in " + handle.layoutMs.toFixed(0) + " ms, shown in " + ms.toFixed(0) + " ms";
  }
  function short(s, n) { s = String(s || ""); return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  global.Library = {
    init: init, citations: citations, citedByCounts: citedByCounts, reset: reset,
    showLibrary: showLibrary, libraryAction: libraryAction, showMap: showMap,
    paperCitations: paperCitations, paperOfPage: paperOfPage,
  };
})(window);
