/* episteme web UI: ask (answers with traced citations), browse the wiki, its map and its
 * library (library.js, wikimap.js), add papers.
 * Plain JS, no build step.  All server text goes through Markdown.render / escape or
 * textContent, never straight into innerHTML.
 */
(function () {
  "use strict";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const esc = (s) => window.Markdown.escape(s == null ? "" : s);
  const state = { pages: [], page: null, token: sessionStorage.getItem("episteme-token") || "" };

  // ------------------------------------------------------------------ API
  async function api(path, opts) {
    opts = opts || {};
    const headers = Object.assign({}, opts.headers || {});
    if (state.token) headers.Authorization = "Bearer " + state.token;
    let res;
    try {
      res = await fetch(path, Object.assign({}, opts, { headers: headers }));
    } catch (e) {
      throw new Error("cannot reach the server (" + e.message + ")");
    }
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (res.status === 401) { $("#token-bar").hidden = false; }
    if (!res.ok) {
      const err = new Error((body && body.error) || ("HTTP " + res.status));
      err.status = res.status;
      err.body = body;
      throw err;
    }
    return body;
  }

  $("#token-bar").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.token = $("#token-input").value.trim();
    sessionStorage.setItem("episteme-token", state.token);
    $("#token-bar").hidden = true;
    refreshStatus();
    route();
  });

  async function refreshStatus() {
    const st = $("#status");
    try {
      const h = await api("/health");
      state.limits = h.limits || null;
      st.className = "status ok";
      st.textContent = (h.warm && h.warm.embedder ? "ready" : "warming up") +
        (h.jobs && (h.jobs.running || h.jobs.queued) ? " · ingesting" : "");
      st.title = h.wiki;
    } catch (e) {
      st.className = "status bad";
      st.textContent = "offline";
      st.title = e.message;
    }
  }

  // ------------------------------------------------------------------ routing
  function route() {
    const hash = location.hash || "#/chat";
    const parts = hash.slice(2).split("/");
    const tab = ["chat", "wiki", "map", "library", "ingest"].includes(parts[0]) ? parts[0] : "chat";
    document.querySelectorAll(".view").forEach((v) => { v.hidden = v.id !== "view-" + tab; });
    document.querySelectorAll(".tabs a").forEach((a) => {
      a.classList.toggle("active", a.dataset.tab === tab);
      a.setAttribute("aria-selected", a.dataset.tab === tab ? "true" : "false");
    });
    if (tab === "wiki") {
      const page = parts.length > 1 ? decodeURIComponent(parts.slice(1).join("/")) : "";
      showWiki(page);
    } else if (tab === "map") {
      window.Library.showMap($("#view-map"));
    } else if (tab === "library") {
      window.Library.showLibrary($("#library-root"));
    } else if (tab === "chat") {
      $("#chat-input").focus();
    }
  }
  window.addEventListener("hashchange", route);

  // ------------------------------------------------------------------ chat
  // Marker characters inserted into the raw answer before markdown rendering; they survive
  // escaping and are swapped for buttons/marks afterwards.
  const CITE_RE = /\[(sec_\d{3,}(?:\s*[,;]\s*sec_\d{3,})*)\]/g;

  function claimText(c) { return typeof c === "string" ? c : (c && (c.claim || c.text)) || ""; }

  // The answer as the tracer saw it: citations removed, each link token (the server's
  // answer_view) read as its plain text, whitespace collapsed; map[i] / mapEnd[i] = where
  // plain[i] starts / ends in the original text (a link's letters start at its token and end
  // after it, so a mark never lands inside a token).
  function normalized(text, refs) {
    const plain = [];
    const map = [];
    const mapEnd = [];
    let i = 0;
    const skip = /^\s*\[sec_\d{3,}(?:\s*[,;]\s*sec_\d{3,})*\]/;
    const token = /^\uE000(\d+)\uE001/;
    while (i < text.length) {
      const rest = text.slice(i, i + 200);
      const m = skip.exec(rest);
      if (m) { i += m[0].length; continue; }
      const t = text[i] === "\uE000" ? token.exec(rest) : null;
      if (t) {
        const label = ((refs || [])[+t[1]] || {}).plain || "";
        for (let k = 0; k < label.length; k++) { plain.push(label[k]); map.push(i); mapEnd.push(i + t[0].length); }
        i += t[0].length;
        continue;
      }
      const ch = text[i];
      if (/\s/.test(ch)) {
        if (plain.length && plain[plain.length - 1] !== " ") { plain.push(" "); map.push(i); mapEnd.push(i + 1); }
      } else if (ch !== "*" && ch !== "_" && ch !== "`") {
        plain.push(ch); map.push(i); mapEnd.push(i + 1);
      }
      i++;
    }
    return { plain: plain.join(""), map: map, mapEnd: mapEnd };
  }
  // claims are the tracer's text, where links are already their plain text (wiki.links)
  const squash = (s) => s.replace(/\[sec_[^\]]*\]/g, "")
    .replace(/[*_`]/g, "").replace(/\s+/g, " ").trim();

  function locate(norm, text, claim) {
    const c = squash(claim);
    if (!c) return null;
    let at = norm.plain.indexOf(c);
    let len = c.length;
    if (at < 0) { // a long claim is cut by the tracer: match its first 60 characters
      const head = c.slice(0, 60);
      at = head.length >= 20 ? norm.plain.indexOf(head) : -1;
      len = head.length;
    }
    if (at < 0) return null;
    const start = norm.map[at];
    let end = norm.mapEnd[at + len - 1];
    // the citation goes after the sentence (and its [sec_..] ids), not mid-word
    const tail = /^[^.!?\n]*?(?:[.!?](?=\s|$)|(?=\n)|$)/.exec(text.slice(end));
    if (tail && !/[.!?]$/.test(text.slice(start, end).trim())) end += tail[0].length;
    const more = /^(\s*\[sec_\d{3,}(?:\s*[,;]\s*sec_\d{3,})*\])+[.!?]?/.exec(text.slice(end));
    if (more) end += more[0].length;
    return { start: start, end: end };
  }

  // Number the distinct passages in order of first use; map each claim to its numbers.
  function numberSources(r) {
    const sources = Array.isArray(r.sources) ? r.sources : [];
    const order = [];
    const byId = new Map();
    const textKey = (p) => p.paper + "|" + p.passage;
    sources.forEach((s) => {
      const id = s.passage_id || textKey(s);
      if (!byId.has(id)) {
        byId.set(id, order.length + 1);
        byId.set(textKey(s), order.length + 1); // claims may name passages by text only
        order.push(Object.assign({ claims: [] }, s));
      }
      const entry = order[byId.get(id) - 1];
      if (s.claim && !entry.claims.includes(s.claim)) entry.claims.push(s.claim);
    });
    let claims = Array.isArray(r.claims) ? r.claims.filter((c) => c.supported !== false) : [];
    if (!claims.length) {
      const m = new Map();
      sources.forEach((s) => { if (s.claim) { if (!m.has(s.claim)) m.set(s.claim, []); m.get(s.claim).push(s); } });
      claims = [...m.entries()].map(([claim, ps]) => ({ claim: claim, passages: ps }));
    }
    const cited = claims.map((c) => ({
      claim: c.claim,
      // citations by rank: the claim's best passage first (the tracer lists them best first)
      nums: [...new Set((c.passages || []).map((p) => byId.get(p.passage_id) || byId.get(textKey(p)))
        .filter(Boolean))],
    })).filter((c) => c.nums.length);
    return { list: order, cited: cited };
  }

  function annotate(text, cited, unsupported, contradicted, refs) {
    const norm = normalized(text, refs);
    const edits = []; // [position, insert text, order]
    const unplaced = [];
    cited.forEach((c) => {
      const loc = locate(norm, text, c.claim);
      const marks = c.nums.map((n) => "\u0000C" + n + "\u0000").join("");
      if (loc) edits.push([loc.end, marks, 1]); else unplaced.push(marks);
    });
    unsupported.forEach((u) => {
      const loc = locate(norm, text, claimText(u));
      if (loc) { edits.push([loc.start, "\u0001", 2]); edits.push([loc.end, "\u0002", 0]); }
    });
    (contradicted || []).forEach((c) => {
      const loc = locate(norm, text, claimText(c));
      if (loc) { edits.push([loc.start, "\u0004", 2]); edits.push([loc.end, "\u0002", 0]); }
    });
    edits.sort((x, y) => y[0] - x[0] || x[2] - y[2]);
    edits.forEach(([pos, ins]) => { text = text.slice(0, pos) + ins + text.slice(pos); });
    if (unplaced.length) text += " " + unplaced.join("");
    return text.replace(CITE_RE, (m, ids) => ids.split(/\s*[,;]\s*/).map((id) => "\u0003" + id + "\u0003").join(""));
  }

  function decorate(html, sectionPages) {
    return html
      .replace(/\u0000C(\d+)\u0000/g, (m, n) =>
        '<button type="button" class="cite" data-cite="' + n + '" aria-label="source ' + n + '">' + n + "</button>")
      .replace(/\u0001/g, '<mark class="unsupported" title="no passage of the source papers supports this">')
      .replace(/\u0004/g, '<mark class="contradicted" title="the source papers say otherwise">')
      .replace(/\u0002/g, "</mark>")
      .replace(/\u0003(sec_\d+)\u0003/g, (m, id) => {
        const page = sectionPages[id];
        return page ? '<a class="secref" href="#/wiki/' + esc(encodeURIComponent(page)) + '" title="wiki section ' + id + " on " + esc(page) + '">' + id + "</a>"
          : '<span class="secref">' + id + "</span>";
      });
  }

  // The claims the tracer found contradicted, each with its reason and contradicting quote.
  function contradictedClaims(r) {
    return (Array.isArray(r.claims) ? r.claims : []).filter((c) => c && c.verdict === "contradicted");
  }

  function contradictedBox(list) {
    return '<div class="contradicted-box" data-testid="contradicted"><strong>Contradicted by the sources (' +
      list.length + ")</strong><ul>" + list.map((c) => {
        const p = (c.passages || [])[0] || {};
        const quote = (c.evidence && c.evidence.quote) || p.quote || "";
        return '<li><span class="contra-claim">' + esc(c.claim) + "</span>" +
          (c.reason ? '<span class="contra-why" data-testid="contradicted-reason">' + esc(c.reason.text) + "</span>" : "") +
          (quote ? '<blockquote class="contra-quote" data-testid="contradicting-quote">' + esc(quote) + "</blockquote>" : "") +
          (p.paper ? '<span class="contra-where">' + esc(p.paper) + (p.section ? ", " + esc(p.section) : "") +
            (p.page ? ", p. " + esc(p.page) : "") + "</span>" : "") + "</li>";
      }).join("") + "</ul></div>";
  }

  // per answer: its numbered sources and claims, for the evidence panel
  const turnData = {};
  function claimInfo(r, text) {
    const c = (Array.isArray(r.claims) ? r.claims : []).find((x) => x && x.claim === text);
    if (!c) return {};
    return { verdict: c.verdict || (c.supported === false ? "unsupported" : c.supported ? "supported" : undefined),
      reason: c.reason };
  }
  function evidenceFor(turn, n) {
    const d = turnData[turn];
    const s = d && d.list[n - 1];
    if (!s) return null;
    const claim = s.claims[0] || s.claim || "";
    return Object.assign({ paper: s.paper, page: s.page, section: s.section, quote: s.quote, passage: s.passage,
      boxes: s.boxes, similarity: s.similarity, claim: claim }, claimInfo(d.r, claim));
  }
  // a claim the tracer rejected (contradicted, unsupported) with the passage it was checked against
  function claimEvidence(turn, i) {
    const d = turnData[turn];
    const c = d && d.rejected[i];
    if (!c) return null;
    const items = [].concat(c.evidence || [], c.passages || []).filter((e) => e && e.paper);
    const e = items.find((x) => x.boxes && x.boxes.length) || items[0];
    if (!e) return null;
    return { paper: e.paper, page: e.page, section: e.section, quote: e.quote, passage: e.passage || e.text,
      boxes: c.boxes && c.boxes.length ? c.boxes : e.boxes, claim: c.claim,
      verdict: c.verdict || "unsupported", reason: c.reason };
  }

  function renderAnswer(q, r, turn, citedBy) {
    citedBy = citedBy || {};
    const contradicted = contradictedClaims(r);
    const contraSet = new Set(contradicted.map((c) => c.claim));
    const unsupported = (Array.isArray(r.unsupported_claims) ? r.unsupported_claims : [])
      .filter((u) => !contraSet.has(claimText(u)));
    const { list, cited } = numberSources(r);
    const rejected = unsupported.map((u) => (Array.isArray(r.claims) ? r.claims : [])
      .find((c) => c && c.claim === claimText(u)) || (typeof u === "object" ? u : { claim: u }));
    turnData[turn] = { list: list, r: r, rejected: rejected };
    // the answer with its [[links]] found and resolved by the server (one link parser)
    const view = r.answer_view || { text: r.answer || "", links: [] };
    const sectionPages = {};
    (r.wiki_sections || []).forEach((w) => { if (w.page) sectionPages[w.id] = w.page; });
    const div = document.createElement("div");
    div.className = "turn";
    div.dataset.turn = String(turn);
    let html = '<div class="question">' + esc(q) + "</div>";
    html += '<div class="answer" data-testid="answer">' +
      decorate(window.Markdown.render(annotate(view.text, cited, unsupported, contradicted, view.links),
        { linkRefs: view.links }), sectionPages) + "</div>";
    if (contradicted.length) html += contradictedBox(contradicted);
    if (unsupported.length) {
      html += '<div class="unsupported-box" data-testid="unsupported"><strong>Not supported by the sources (' +
        unsupported.length + ")</strong><ul>" +
        unsupported.map((u, i) => {
          const c = rejected[i] || {};
          const has = [].concat(c.evidence || [], c.passages || []).some((e) => e && e.paper);
          return "<li>" + esc(claimText(u)) + (c.verdict ? ' <span class="verdict ' + esc(c.verdict) + '">' + esc(c.verdict) + "</span>" : "") +
            (has ? ' <button type="button" class="btn small-btn show-claim-evidence" data-claim="' + i + '">show the passage</button>' : "") + "</li>";
        }).join("") + "</ul></div>";
    }
    if (list.length) {
      html += '<h4 class="sources-title">Sources</h4><ol class="sources" data-testid="sources">' + list.map((s, i) => {
        const sim = typeof s.similarity === "number" ? s.similarity.toFixed(2) : "–";
        return '<li class="source" id="src-' + turn + "-" + (i + 1) + '" data-n="' + (i + 1) + '">' +
          '<button type="button" class="source-head" aria-expanded="false">' +
          '<span class="num">' + (i + 1) + "</span>" +
          '<span class="src-paper">' + esc(s.paper) + "</span>" +
          '<span class="src-section">' + esc(s.section || "") + "</span>" +
          (citedBy[s.paper] > 0 ? '<span class="chip cited-by" data-testid="src-cited-by">cited by ' + esc(citedBy[s.paper]) +
            " paper" + (citedBy[s.paper] === 1 ? "" : "s") + " in this wiki</span>" : "") +
          (s.page ? '<span class="chip">p. ' + esc(s.page) + "</span>" : "") +
          '<span class="chip sim" title="cosine similarity between the claim and the passage">' + sim + "</span>" +
          "</button>" +
          '<div class="source-body" hidden>' +
          '<blockquote class="passage" data-testid="passage">' + esc(s.passage || "") + "</blockquote>" +
          '<dl class="meta"><dt>Paper</dt><dd>' + esc(s.paper) + "</dd><dt>Section</dt><dd>" +
          esc(s.section || "—") + "</dd><dt>Page</dt><dd>" + esc(s.page || "—") +
          "</dd><dt>Similarity</dt><dd>" + sim + "</dd>" +
          (s.claims.length ? "<dt>Supports</dt><dd>" + s.claims.map((c) => "“" + esc(c) + "”").join("<br>") + "</dd>" : "") +
          '</dl><div class="source-actions"><button type="button" class="btn small-btn show-evidence" data-n="' + (i + 1) +
          '" data-testid="show-evidence">Show on the page</button></div></div></li>';
      }).join("") + "</ol>";
    } else {
      html += '<p class="muted small">' + esc(r.note || "No source passages were traced for this answer.") + "</p>";
    }
    const used = Array.isArray(r.wiki_sections_used) ? r.wiki_sections_used : [];
    if (used.length) {
      html += '<div class="used">From the wiki: ' + used.map((id) => {
        const page = sectionPages[id];
        return page ? '<a class="chip" href="#/wiki/' + esc(encodeURIComponent(page)) + '" title="' + esc(page) + '">' + esc(id) + "</a>"
          : '<span class="chip">' + esc(id) + "</span>";
      }).join(" ") + (r.model || r.mode ? '<span class="mode" data-testid="answer-model">answer: ' + esc(r.model || r.mode) + "</span>" : "") + "</div>";
    }
    div.innerHTML = html;
    return div;
  }

  function toggleSource(li, open) {
    const body = $(".source-body", li);
    const head = $(".source-head", li);
    const show = open === undefined ? body.hidden : open;
    body.hidden = !show;
    head.setAttribute("aria-expanded", show ? "true" : "false");
    li.classList.toggle("open", show);
  }

  let turns = 0;
  $("#chat-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = $("#chat-input");
    const q = input.value.trim();
    if (!q) return;
    const log = $("#chat-log");
    const empty = $("#chat-empty");
    if (empty) empty.remove();
    const pending = document.createElement("div");
    pending.className = "turn pending";
    pending.innerHTML = '<div class="question">' + esc(q) + '</div><div class="thinking">Reading the wiki and tracing sources…</div>';
    log.prepend(pending);
    $("#chat-send").disabled = true;
    try {
      const counts = window.Library.citedByCounts(); // fetched once, beside the first answer
      const r = await api("/chat", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ query: q }) });
      turns++;
      pending.replaceWith(renderAnswer(q, r, turns, await counts));
      input.value = "";
    } catch (e) {
      pending.classList.remove("pending");
      pending.querySelector(".thinking").outerHTML = '<div class="error">' + esc(e.message) + "</div>";
    } finally {
      $("#chat-send").disabled = false;
    }
  });

  function openEvidence(turnEl, n, opener) {
    const e = evidenceFor(turnEl.dataset.turn, Number(n));
    if (e && window.Evidence) window.Evidence.open(e, opener);
  }

  $("#chat-log").addEventListener("click", (ev) => {
    const cite = ev.target.closest(".cite");
    if (cite) {
      const turn = cite.closest(".turn");
      const li = turn.querySelector('.source[data-n="' + cite.dataset.cite + '"]');
      if (li) { toggleSource(li, true); li.scrollIntoView({ block: "nearest", behavior: "smooth" }); li.classList.add("flash"); setTimeout(() => li.classList.remove("flash"), 900); }
      openEvidence(turn, cite.dataset.cite, cite);
      return;
    }
    const show = ev.target.closest(".show-evidence");
    if (show) { openEvidence(show.closest(".turn"), show.dataset.n, show); return; }
    const rej = ev.target.closest(".show-claim-evidence");
    if (rej) {
      const e = claimEvidence(rej.closest(".turn").dataset.turn, Number(rej.dataset.claim));
      if (e && window.Evidence) window.Evidence.open(e, rej);
      return;
    }
    const head = ev.target.closest(".source-head");
    if (head) {
      const li = head.closest(".source");
      toggleSource(li);
      if (li.classList.contains("open")) openEvidence(li.closest(".turn"), li.dataset.n, head);
    }
  });

  // ------------------------------------------------------------------ wiki
  async function loadPages() {
    const r = await api("/wiki");
    state.pages = r.pages || [];
    renderPageList();
  }

  function renderPageList() {
    const filter = $("#page-filter").value.trim().toLowerCase();
    const groups = {};
    state.pages.forEach((p) => {
      if (filter && !(p.title + " " + p.page + " " + (p.tags || []).join(" ")).toLowerCase().includes(filter)) return;
      const t = p.type || "page";
      (groups[t] = groups[t] || []).push(p);
    });
    // papers first: they are the way in; then the other page types alphabetically
    const names = Object.keys(groups).sort((a, b) => (a === "paper" ? -1 : b === "paper" ? 1 : a.localeCompare(b)));
    const list = $("#page-list");
    if (!names.length) {
      list.innerHTML = '<p class="muted small">' + (state.pages.length ? "No page matches." : "The wiki is empty. Add a paper first.") + "</p>";
      return;
    }
    list.innerHTML = names.map((t) => '<div class="group"><div class="group-name">' + esc(t) +
      ' <span class="count">' + groups[t].length + "</span></div>" +
      groups[t].map((p) => '<a href="#/wiki/' + esc(encodeURIComponent(p.page)) + '" data-page="' + esc(p.page) + '"' +
        (state.page === p.page ? ' class="current"' : "") + ">" + esc(p.title) + "</a>").join("") +
      "</div>").join("");
  }
  $("#page-filter").addEventListener("input", renderPageList);

  // Each navigation takes a ticket; a response that arrives after a newer navigation is dropped,
  // so quick clicks never leave one page's text beside another page's graph.
  let navTicket = 0;
  let graphTicket = 0;

  async function showWiki(page) {
    if (!state.pages.length) {
      try { await loadPages(); } catch (e) { $("#page").innerHTML = '<div class="error">' + esc(e.message) + "</div>"; return; }
    }
    if (!page) {
      navTicket++;
      graphTicket++;
      state.page = null;
      renderPageList();
      showOverview();
      return;
    }
    const art = $("#page");
    $(".graph-panel").hidden = false;
    art.innerHTML = '<p class="muted">Loading…</p>';
    // the old page's graph and backlinks must not stay on screen beside the new page
    $("#graph").textContent = "";
    $("#backlinks").textContent = "";
    $("#citations").textContent = "";
    graphTicket++;
    const ticket = ++navTicket;
    let p;
    try {
      p = await api("/wiki/" + page.split("/").map(encodeURIComponent).join("/"));
    } catch (e) {
      if (ticket !== navTicket) return;
      const near = e.body && e.body.details && e.body.details.nearest;
      art.innerHTML = '<div class="error">' + esc(e.message) + "</div>" +
        (near && near.length ? '<p>Did you mean: ' + near.map((n) => '<a class="wikilink" href="#/wiki/' + esc(encodeURIComponent(n)) + '">' + esc(n) + "</a>").join(", ") + "</p>" : "");
      $("#graph").textContent = "";
      $("#backlinks").textContent = "";
      return;
    }
    // a later click won the race: its page is (or will be) shown, not this one
    if (ticket !== navTicket) return;
    state.page = p.page;
    renderPageList();
    // links come resolved by the server (p.view: the text with link tokens, and their records)
    const view = p.view || { preamble: "", sections: [], body: "", links: [] };
    const opts = { linkRefs: view.links, headingShift: 0 };
    let html = '<header class="page-head"><div class="crumbs">' + esc(p.page) + "</div><h1>" + esc(p.title) + "</h1>" +
      '<div class="tags">' + (p.type ? '<span class="chip type">' + esc(p.type) + "</span>" : "") +
      (p.tags || []).map((t) => '<span class="chip">#' + esc(t) + "</span>").join("") + "</div>" +
      ((p.sections || []).length ? '<div class="claims-status muted small" id="claims-status" aria-live="polite" data-state="checking">Checking this page\u2019s claims against its sources\u2026</div>' : "") +
      "</header>";
    if (p.preamble && p.preamble.trim()) html += '<div class="preamble">' + window.Markdown.render(view.preamble, opts) + "</div>";
    (p.sections || []).forEach((s, k) => {
      const level = Math.min(6, Math.max(2, s.level || 2));
      const v = view.sections[k] || { title: "", body: "" };
      html += '<section class="wsec" id="' + esc(s.id) + '"><h' + level + ">" + window.Markdown.inline(v.title, opts) +
        '<span class="sec-id" title="section id">' + esc(s.id) + "</span></h" + level + ">" +
        window.Markdown.render(v.body, opts) +
        (s.sources && s.sources.length ? '<div class="sec-sources">Sources: ' + s.sources.map((x) => '<span class="chip src">' + esc(x) + "</span>").join(" ") + "</div>" : "") +
        "</section>";
    });
    if (!(p.sections || []).length && !(p.preamble || "").trim()) {
      // a page written by hand without section markers: render its body as is
      html += window.Markdown.render(view.body, opts);
    }
    art.innerHTML = html;
    art.scrollTop = 0;
    if ((p.sections || []).length) loadClaims(p.page, ticket);
    drawGraph(p.page);
    window.Library.paperCitations($("#citations"), p, () => ticket === navTicket);
    const bl = p.backlinks || [];
    $("#backlinks").innerHTML = "<h3>Linked from</h3>" + (bl.length ? "<ul>" + bl.map((b) =>
      '<li><a class="wikilink" href="#/wiki/' + esc(encodeURIComponent(b.page)) + '">' + esc(b.title) + "</a></li>").join("") + "</ul>" : '<p class="muted small">No page links here.</p>');
  }

  // ------------------------------------------------------------------ claim marks
  // GET /wiki/{page}/claims (lint --claims for this page, cached per section) marks each
  // flagged sentence in place: a highlight plus a labelled button whose tooltip (on hover and
  // on keyboard focus, aria-describedby) gives the verdict's reason and the evidence quote;
  // clicking opens the evidence panel on the quoted page.  All finding text goes through
  // textContent: it quotes papers, which are untrusted.
  const CLAIM_KINDS = {
    "claim-contradicted": { cls: "contradicted", icon: "\u2716", label: "contradicted" },
    "claim-check": { cls: "check", icon: "!", label: "check this" },
    "claim-unsupported": { cls: "unsupported", icon: "?", label: "unsupported" },
    "claim-misquoted": { cls: "misquoted", icon: "\u201d", label: "misquoted" },
  };
  let claimSeq = 0;

  async function loadClaims(page, ticket) {
    const status = () => document.getElementById("claims-status");
    let r;
    try {
      r = await api("/wiki/" + page.split("/").map(encodeURIComponent).join("/") + "/claims");
    } catch (e) {
      if (ticket !== navTicket || !status()) return;
      status().textContent = "Claims not checked: " + e.message;
      status().dataset.state = "error";
      return;
    }
    if (ticket !== navTicket || !status()) return;
    const found = (r.findings || []).filter((f) => CLAIM_KINDS[f.rule]);
    const art = $("#page");
    let unplaced = 0;
    found.forEach((f) => { if (!markClaim(art, f)) unplaced++; });
    const s = r.summary || {};
    const n = (k) => found.filter((f) => f.rule === k).length;
    let text;
    if (r.reason) text = "Claims not checked: " + r.reason;
    else if (!found.length) text = "All " + (s.checked || 0) + " checked claims are supported by their sources" +
      (s.quotes_located ? " (" + s.quotes_located + " quotes found verbatim)." : ".");
    else {
      text = found.length + " sentence" + (found.length > 1 ? "s" : "") + " flagged of " + (s.checked || found.length) +
        " checked: " + n("claim-contradicted") + " contradicted, " +
        (n("claim-check") ? n("claim-check") + " to check, " : "") + n("claim-unsupported") + " unsupported" +
        (n("claim-misquoted") ? ", " + n("claim-misquoted") + " misquoted" : "") + ".";
      if (unplaced) text += " " + unplaced + " listed below their section (not found in the rendered text).";
    }
    status().textContent = text;
    status().dataset.state = "done";
  }

  const ALNUM = /[\p{L}\p{N}]/u;
  function normWords(s) {
    return String(s).toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim();
  }

  // The section's visible prose as one string (`raw`, each char's [node, offset] in `at`) and
  // its letters-and-digits reading (`norm`, `nmap[i]` = index in raw) to find a claim in.
  function textStream(root) {
    const skip = "h1,h2,h3,h4,h5,h6,pre,code,.sec-sources,.claim-flag,.claim-unplaced";
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: (nd) => (nd.parentElement.closest(skip) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    let raw = "";
    const at = [];
    let norm = "";
    const nmap = [];
    let block = null;
    let nd;
    while ((nd = walker.nextNode())) {
      const b = nd.parentElement.closest("p,li,blockquote,td,th");
      if (b !== block && norm && norm[norm.length - 1] !== " ") { norm += " "; nmap.push(raw.length); }
      block = b;
      const t = nd.nodeValue;
      for (let k = 0; k < t.length; k++) {
        const ch = t[k];
        if (ALNUM.test(ch)) { norm += ch.toLowerCase(); nmap.push(raw.length); }
        else if (norm && norm[norm.length - 1] !== " ") { norm += " "; nmap.push(raw.length); }
        raw += ch;
        at.push([nd, k]);
      }
    }
    return { raw: raw, at: at, norm: norm, nmap: nmap };
  }

  // [start, end) in raw of the claim's sentence, not overlapping a sentence already marked.
  function findClaim(st, claim) {
    const words = normWords(claim).split(" ").filter(Boolean);
    if (!words.length) return null;
    const tries = [words.join(" ")];
    if (words.length > 8) tries.push(words.slice(0, 8).join(" "));
    if (words.length > 5) tries.push(words.slice(0, 5).join(" "));
    for (let t = 0; t < tries.length; t++) {
      const needle = tries[t];
      let from = 0;
      while (true) {
        const i = st.norm.indexOf(needle, from);
        if (i < 0) break;
        from = i + 1;
        if (i > 0 && st.norm[i - 1] !== " ") continue; // a word boundary, not mid-word
        const endN = i + needle.length;
        if (endN < st.norm.length && st.norm[endN] !== " ") continue;
        const start = st.nmap[i];
        let end = st.nmap[endN - 1] + 1;
        if (t > 0 || !/[.!?]/.test(st.raw[end] || "")) {
          // a prefix matched (the claim drops locators and code): run on to the sentence's end
          const rest = /^[\s\S]*?[.!?](?=\s|$)/.exec(st.raw.slice(end, end + 2 * claim.length + 40));
          if (rest) end += rest[0].length;
        } else {
          end += 1; // the full stop
        }
        const marked = st.at.slice(start, end).some(([nd]) => nd.parentElement.closest("mark.claim-mark"));
        if (!marked) return [start, end];
      }
    }
    return null;
  }

  function claimTip(f, id) {
    const kind = CLAIM_KINDS[f.rule];
    const tip = document.createElement("span");
    tip.className = "claim-tip";
    tip.id = id;
    tip.setAttribute("role", "tooltip");
    const add = (cls, text, tag) => {
      const el = document.createElement(tag || "span");
      el.className = cls;
      el.textContent = text;
      tip.appendChild(el);
      return el;
    };
    add("tip-verdict " + kind.cls, kind.label.charAt(0).toUpperCase() + kind.label.slice(1));
    const reason = f.rule === "claim-misquoted"
      ? "the quote is not found verbatim in the sources (the closest passage supports it)"
      : (f.reason && (f.reason.text || f.reason.code)) || "";
    if (reason) add("tip-reason", reason);
    if (f.lost_support) add("tip-reason", "It lost its support: " + f.lost_support.paper + " was " + f.lost_support.why + ".");
    const ev = f.evidence;
    if (ev && ev.paper) {
      add("tip-where", (f.verdict === "contradicted" ? "Evidence: " : "Closest passage: ") +
        [ev.paper, ev.section, ev.page ? "p. " + ev.page : ""].filter(Boolean).join(" \u00b7 "));
      if (ev.quote) add("tip-quote", "\u201c" + ev.quote + "\u201d");
      add("tip-hint", "Click to open the page.");
    } else {
      add("tip-where", "No passage to show.");
    }
    return tip;
  }

  // Mark one finding in its section; false when its sentence is not found (it is then listed
  // below the section, so no finding is lost).
  function markClaim(art, f) {
    const kind = CLAIM_KINDS[f.rule];
    const sec = f.section_id ? art.querySelector('section.wsec[id="' + CSS.escape(f.section_id) + '"]') : null;
    const root = sec || art;
    const n = ++claimSeq;
    const flag = document.createElement("span");
    flag.className = "claim-flag " + kind.cls;
    flag.dataset.flag = String(n);
    const btn = document.createElement("button");
    btn.type = "button";
    btn.className = "claim-badge " + kind.cls;
    btn.dataset.flag = String(n);
    btn.setAttribute("aria-describedby", "claim-tip-" + n);
    const icon = document.createElement("span");
    icon.setAttribute("aria-hidden", "true");
    icon.className = "claim-icon";
    icon.textContent = kind.icon;
    btn.appendChild(icon);
    btn.appendChild(document.createTextNode(" " + kind.label));
    btn.setAttribute("aria-label", kind.label + " claim: " + (f.claim || ""));
    flag.appendChild(btn);
    flag.appendChild(claimTip(f, "claim-tip-" + n));
    btn.addEventListener("click", () => openClaimEvidence(f, btn));
    flag.addEventListener("mouseenter", () => placeTip(flag));
    btn.addEventListener("focus", () => placeTip(flag, true));
    btn.addEventListener("keydown", (ev) => { if (ev.key === "Escape") flag.classList.add("dismissed"); });
    btn.addEventListener("blur", () => flag.classList.remove("dismissed"));
    const st = textStream(root);
    const loc = findClaim(st, f.claim || "");
    if (!loc) {
      let box = root.querySelector(":scope > .claim-unplaced");
      if (!box) {
        box = document.createElement("div");
        box.className = "claim-unplaced";
        const h = document.createElement("span");
        h.className = "muted small";
        h.textContent = "Flagged sentences not found in the text above:";
        box.appendChild(h);
        root.appendChild(box);
      }
      const row = document.createElement("div");
      const q = document.createElement("span");
      q.className = "claim-mark " + kind.cls;
      q.textContent = f.claim || "";
      row.appendChild(q);
      row.appendChild(document.createTextNode(" "));
      row.appendChild(flag);
      box.appendChild(row);
      return false;
    }
    // split the text nodes at the sentence's ends and wrap each piece in a <mark>
    const segs = [];
    for (let i = loc[0]; i < loc[1]; i++) {
      const [nd, k] = st.at[i];
      const last = segs[segs.length - 1];
      if (last && last.nd === nd) last.b = k + 1; else segs.push({ nd: nd, a: k, b: k + 1 });
    }
    let lastMark = null;
    segs.forEach((sg) => {
      if (sg.b < sg.nd.nodeValue.length) sg.nd.splitText(sg.b);
      const mid = sg.a > 0 ? sg.nd.splitText(sg.a) : sg.nd;
      const mark = document.createElement("mark");
      mark.className = "claim-mark " + kind.cls;
      mark.dataset.flag = String(n);
      mid.parentNode.insertBefore(mark, mid);
      mark.appendChild(mid);
      mark.addEventListener("mouseenter", () => { flag.classList.add("show"); placeTip(flag); });
      mark.addEventListener("mouseleave", () => flag.classList.remove("show"));
      mark.addEventListener("click", () => openClaimEvidence(f, btn));
      lastMark = mark;
    });
    lastMark.parentNode.insertBefore(flag, lastMark.nextSibling);
    return true;
  }

  // Below the badge (above would cover the sentence); flush right when it would overflow the
  // window; on keyboard focus scrolled into view (a mouse user scrolls themselves).
  function placeTip(flag, focused) {
    const tip = flag.querySelector(".claim-tip");
    flag.classList.remove("flush-right");
    const r = tip.getBoundingClientRect();
    if (!r.height) return;
    if (r.right > window.innerWidth - 8) flag.classList.add("flush-right");
    if (focused && r.bottom > window.innerHeight) tip.scrollIntoView({ block: "nearest" });
  }

  async function openClaimEvidence(f, opener) {
    const ev = f.evidence;
    if (!ev || !ev.paper || !window.Evidence) return;
    let boxes = [];
    if (ev.quote) {
      try {
        const r = await api("/papers/" + encodeURIComponent(ev.paper) + "/boxes?quote=" +
          encodeURIComponent(ev.quote.slice(0, 4000)) + (ev.page ? "&page=" + encodeURIComponent(ev.page) : ""));
        boxes = r.boxes || [];
      } catch (e) { boxes = []; } // the page still opens, without highlight
    }
    window.Evidence.open({ paper: ev.paper, page: ev.page, section: ev.section, quote: ev.quote, boxes: boxes,
      claim: f.claim, verdict: f.verdict || CLAIM_KINDS[f.rule].label, reason: f.reason }, opener);
  }

  async function showOverview() {
    const art = $("#page");
    $(".graph-panel").hidden = true;
    $("#graph").textContent = "";
    $("#backlinks").textContent = "";
    $("#citations").textContent = "";
    if (!state.pages.length) {
      art.innerHTML = '<div class="empty"><h2>The wiki is empty</h2><p>Add a paper to start it.</p></div>';
      return;
    }
    try {
      const [stats, hubs] = await Promise.all([api("/graph?mode=stats"), api("/graph?mode=hubs&limit=12")]);
      const types = Object.entries(stats.types || {}).map(([t, n]) => '<span class="chip">' + esc(t) + " " + esc(n) + "</span>").join(" ");
      art.innerHTML = '<header class="page-head"><div class="crumbs">overview</div><h1>The wiki</h1><div class="tags">' + types + "</div></header>" +
        '<div class="stats">' + stat(stats.pages, "pages") + stat(stats.edges, "links between pages") +
        stat(stats.dangling, "links to missing pages") + stat(stats.frontmatter_errors, "frontmatter errors") + "</div>" +
        "<h2>Most connected pages</h2><ol class=\"hubs\">" + (hubs.hubs || []).map((h) =>
          '<li><a class="wikilink" href="#/wiki/' + esc(encodeURIComponent(h.id)) + '">' + esc(h.title) + "</a> " +
          '<span class="muted small">' + esc(h.in) + " in · " + esc(h.out) + " out</span></li>").join("") + "</ol>";
    } catch (e) {
      art.innerHTML = '<div class="error">' + esc(e.message) + "</div>";
    }
  }

  async function drawGraph(page) {
    const box = $("#graph");
    const depth = $("#graph-depth").value;
    const ticket = ++graphTicket;
    try {
      const r = await api("/graph?mode=neighbors&depth=" + encodeURIComponent(depth) + "&seed=" + encodeURIComponent(page));
      if (ticket !== graphTicket || page !== state.page) return;
      window.GraphView.draw(box, r, (id) => { location.hash = "#/wiki/" + encodeURIComponent(id); });
    } catch (e) {
      if (ticket !== graphTicket) return;
      box.innerHTML = '<p class="muted small">' + esc(e.message) + "</p>";
    }
  }
  $("#graph-depth").addEventListener("change", () => { if (state.page) drawGraph(state.page); });

  // ------------------------------------------------------------------ ingest
  let chosen = null;
  function choose(file) {
    chosen = file || null;
    $("#dz-main").textContent = chosen ? chosen.name : "Drop a PDF here or choose a file";
    $("#dz-sub").textContent = !chosen ? "" : chosen.size >= 1048576
      ? (chosen.size / 1048576).toFixed(1) + " MB" : Math.max(1, Math.round(chosen.size / 1024)) + " kB";
    $("#upload-btn").disabled = !chosen;
    $("#ingest-error").hidden = true;
  }
  $("#file-input").addEventListener("change", (e) => choose(e.target.files[0]));
  const dz = $("#dropzone");
  ["dragenter", "dragover"].forEach((t) => dz.addEventListener(t, (e) => { e.preventDefault(); dz.classList.add("over"); }));
  ["dragleave", "drop"].forEach((t) => dz.addEventListener(t, (e) => { e.preventDefault(); dz.classList.remove("over"); }));
  dz.addEventListener("drop", (e) => { if (e.dataTransfer.files.length) choose(e.dataTransfer.files[0]); });

  function setProgress(frac, text) {
    $("#progress").hidden = false;
    $("#progress-fill").style.width = Math.round(Math.max(0.03, Math.min(1, frac)) * 100) + "%";
    $("#progress-text").textContent = text;
  }

  const PHASES = { queued: "Waiting for the writer", starting: "Starting", splitting: "Splitting the PDF into sections",
    embedding: "Embedding passages", writing: "Writing the wiki", indexing: "Indexing the new wiki sections",
    done: "Done" };

  function describe(job) {
    const p = job.progress || {};
    let frac = 0.05;
    if (p.phase === "embedding" && p.total) frac = 0.15 + 0.6 * p.done / p.total;
    else if (p.phase === "writing") frac = 0.8 + 0.15 * (p.total ? p.done / p.total : 0);
    else if (p.phase === "indexing") frac = 0.96;
    else if (p.phase === "splitting") frac = 0.1;
    else if (p.phase === "done") frac = 1;
    let text = PHASES[p.phase] || p.phase || "";
    if (p.total && p.unit) text += " — " + p.done + " / " + p.total + " " + p.unit;
    if (p.sections_total != null && p.unit !== "sections") text += " · sections " + p.sections_done + " / " + p.sections_total;
    return [frac, text];
  }

  $("#upload-btn").addEventListener("click", async () => {
    if (!chosen) return;
    const max = state.limits && state.limits.max_pdf_bytes;
    if (max && chosen.size > max) { // refuse here: the server would refuse before reading it
      $("#ingest-error").textContent = "the file is " + chosen.size + " bytes, over the server's limit of " + max + " bytes";
      $("#ingest-error").hidden = false;
      return;
    }
    $("#upload-btn").disabled = true;
    $("#ingest-error").hidden = true;
    $("#ingest-result").innerHTML = "";
    setProgress(0.02, "Uploading " + chosen.name + "…");
    const fd = new FormData();
    fd.append("file", chosen, chosen.name);
    try {
      const job = await api("/ingest?wait=false", { method: "POST", body: fd });
      let j = job;
      while (j.status === "queued" || j.status === "running") {
        const [f, t] = describe(j);
        setProgress(f, t);
        await new Promise((res) => setTimeout(res, 500));
        j = await api("/jobs/" + encodeURIComponent(job.job));
      }
      if (j.status === "failed") throw new Error(j.error || "ingest failed");
      setProgress(1, "Done in " + (j.seconds || 0) + " s");
      renderIngest(j.result);
      state.pages = [];
      window.Library.reset(); // a new paper may cite (or be cited by) the others
    } catch (e) {
      $("#ingest-error").textContent = e.message;
      $("#ingest-error").hidden = false;
      $("#progress").hidden = true;
    } finally {
      $("#upload-btn").disabled = !chosen;
      refreshStatus();
    }
  });

  function renderIngest(r) {
    const secs = r.sections || [];
    const pages = r.wiki_pages_updated || [];
    const fresh = new Set(r.new_sections || []);
    let html = '<div class="card result" data-testid="ingest-result"><h2>' + esc(r.title || r.paper) + "</h2>" +
      '<p class="muted">' + esc((r.authors || []).join(", ")) + "</p>" +
      '<div class="stats">' +
      stat(r.pages, "pages") + stat(r.sections_indexed, "sections") + stat(r.passages, "passages") +
      stat(pages.length, "wiki pages") + stat(fresh.size, "new wiki sections") + "</div>";
    if (r.ingest_status === "unchanged") html += '<p class="note">This file was already ingested; nothing changed.</p>';
    if (pages.length) {
      html += '<h3>Wiki pages written</h3><ul class="written" data-testid="pages-written">' + pages.map((p) =>
        '<li><a class="wikilink" href="#/wiki/' + esc(encodeURIComponent(p)) + '">' + esc(p) + "</a></li>").join("") + "</ul>";
    } else if (r.write_status === "already-written") {
      html += '<p class="note">' + esc(r.message || "The wiki already cites this paper.") + "</p>";
    }
    html += '<h3>Sections found</h3><table class="sections" data-testid="sections-found"><thead><tr><th>#</th><th>Title</th><th>Kind</th><th>Pages</th><th>Passages</th></tr></thead><tbody>' +
      secs.map((s) => "<tr class=\"lvl" + esc(s.level) + "\"><td>" + esc(s.number || "") + "</td><td>" + esc(s.title) + "</td><td>" +
        esc(s.kind) + "</td><td>" + esc(s.page_start) + (s.page_end !== s.page_start ? "–" + esc(s.page_end) : "") +
        "</td><td>" + esc(s.passages) + "</td></tr>").join("") + "</tbody></table></div>";
    $("#ingest-result").innerHTML = html;
  }
  function stat(v, label) { return '<div class="stat"><b>' + esc(v == null ? "–" : v) + "</b><span>" + esc(label) + "</span></div>"; }

  // ------------------------------------------------------------------ start
  if (window.Evidence) window.Evidence.init({ api: api, token: () => state.token });
  window.Library.init({ api: api, onChange: () => { state.pages = []; refreshStatus(); } });
  $("#library-root").addEventListener("click", (ev) => {
    const btn = ev.target.closest("button[data-act]");
    if (btn) window.Library.libraryAction($("#library-root"), btn);
  });
  refreshStatus();
  setInterval(refreshStatus, 15000);
  route();
})();
