/* A small markdown renderer for wiki pages and answers.
 *
 * Why our own: no build step and no downloaded libraries, and page text comes from papers and an
 * LLM, so it is untrusted.  Every piece of text is HTML-escaped before any markup is added; the
 * only tags produced are the ones below, and link URLs are limited to http(s), mailto and
 * relative paths.
 *
 * [[links]] are not parsed here: the server finds them with the one link parser (wiki/links)
 * and resolves them as the graph does (server/pageview.py), replacing each by a token
 * "\uE000N\uE001" whose record opts.linkRefs[N] = {raw, kind, page, display, dangling} says
 * what to draw.  Inside code the token shows its raw text again.
 */
(function (global) {
  "use strict";

  function esc(s) {
    return String(s)
      .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }

  function safeUrl(url) {
    // Browsers drop control characters (and tabs/newlines anywhere) from a URL before reading
    // its scheme, so "\x1fjavascript:" or "java\tscript:" would slip past the test below.
    if (/[\u0000-\u001f\u007f-\u009f]/.test(url)) return null;
    const u = url.trim();
    if (/^(https?:|mailto:)/i.test(u)) return u;
    if (/^[a-z][a-z0-9+.-]*:/i.test(u)) return null; // javascript:, data:, ... refused
    return u;
  }

  const TOKEN = /\uE000(\d+)\uE001/g;

  // A token back to the link text it stands for (in code, and wherever links are not drawn).
  function restore(text, opts) {
    const refs = (opts && opts.linkRefs) || [];
    return String(text).replace(TOKEN, (t, n) => (refs[+n] ? refs[+n].raw : ""));
  }

  // Inline markup on raw (unescaped) text: split out code spans, link tokens and links first so
  // their contents are not re-interpreted, escape everything else.
  function inline(text, opts) {
    const out = [];
    const re = /(`+)([\s\S]*?[^`])\1(?!`)|\uE000(\d+)\uE001|\[([^\]\n]+)\]\(([^)\s]+)\)|\$([^$\n]+)\$/g;
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      out.push(emphasis(text.slice(last, m.index)));
      if (m[1]) {
        out.push("<code>" + esc(restore(m[2], opts).trim()) + "</code>");
      } else if (m[3]) {
        out.push(wikilink(((opts && opts.linkRefs) || [])[+m[3]]));
      } else if (m[4]) {
        const url = safeUrl(restore(m[5], opts));
        out.push(url === null ? esc(restore(m[0], opts))
          : '<a href="' + esc(url) + '" target="_blank" rel="noopener noreferrer">' + emphasis(restore(m[4], opts)) + "</a>");
      } else if (m[6]) {
        out.push('<span class="math">' + esc(restore(m[6], opts)) + "</span>");
      }
      last = re.lastIndex;
    }
    out.push(emphasis(text.slice(last)));
    return out.join("");
  }

  function emphasis(raw) {
    let s = esc(raw);
    s = s.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>");
    s = s.replace(/__(?=\S)([\s\S]*?\S)__/g, "<strong>$1</strong>");
    s = s.replace(/(^|[^*\w])\*(?=\S)([^*\n]*?\S)\*(?!\w)/g, "$1<em>$2</em>");
    s = s.replace(/(^|[^_\w])_(?=\S)([^_\n]*?\S)_(?!\w)/g, "$1<em>$2</em>");
    return s;
  }

  // One link as the server resolved it: an in-app link to its page (dangling: to the name,
  // marked); embeds and same-page links are not links for graph and lint, so shown as text.
  function wikilink(ref) {
    if (!ref) return "";
    if (ref.kind !== "link") {
      return '<span class="wikilink-text ' + esc(ref.kind) + '">' + esc(ref.display || "") + "</span>";
    }
    const page = ref.page || ref.target;
    return '<a class="wikilink' + (ref.dangling ? " dangling" : "") + '" href="#/wiki/' +
      esc(encodeURIComponent(page)) + '" data-page="' + esc(page) + '"' +
      (ref.dangling ? ' title="no page with this name yet"' : "") + ">" + esc(ref.display || page) + "</a>";
  }

  // Block structure: fenced code, headings, rules, quotes, lists, tables, paragraphs.
  function render(md, opts) {
    opts = opts || {};
    const src = String(md || "").replace(/\r\n?/g, "\n")
      .replace(/<!--[\s\S]*?-->/g, ""); // section markers and other comments: not content
    const lines = src.split("\n");
    const html = [];
    let i = 0;
    const headingShift = opts.headingShift || 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (/^\s*$/.test(line)) { i++; continue; }
      if ((m = /^(\s*)(```+|~~~+)\s*([\w+-]*)\s*$/.exec(line))) {
        const fence = m[2];
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence)) { body.push(lines[i]); i++; }
        i++;
        html.push("<pre><code>" + esc(restore(body.join("\n"), opts)) + "</code></pre>");
        continue;
      }
      if ((m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
        const level = Math.min(6, m[1].length + headingShift);
        html.push("<h" + level + ">" + inline(m[2], opts) + "</h" + level + ">");
        i++;
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { html.push("<hr>"); i++; continue; }
      if (/^\s*>/.test(line)) {
        const body = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) { body.push(lines[i].replace(/^\s*> ?/, "")); i++; }
        html.push("<blockquote>" + render(body.join("\n"), opts) + "</blockquote>");
        continue;
      }
      if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
        const ordered = /^\s*\d+[.)]\s+/.test(line);
        const items = [];
        while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
          let item = lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, "");
          i++;
          while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !/^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
            item += " " + lines[i].trim();
            i++;
          }
          const task = /^\[([ xX])\]\s+/.exec(item);
          if (task) item = item.slice(task[0].length);
          items.push("<li>" + (task ? (task[1] === " " ? "☐ " : "☑ ") : "") + inline(item, opts) + "</li>");
        }
        html.push((ordered ? "<ol>" : "<ul>") + items.join("") + (ordered ? "</ol>" : "</ul>"));
        continue;
      }
      if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|[\s:|-]+\|\s*$/.test(lines[i + 1])) {
        const cells = (l) => l.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
        const head = cells(line);
        i += 2;
        const rows = [];
        while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) { rows.push(cells(lines[i])); i++; }
        html.push("<table><thead><tr>" + head.map((c) => "<th>" + inline(c, opts) + "</th>").join("") +
          "</tr></thead><tbody>" + rows.map((r) => "<tr>" + r.map((c) => "<td>" + inline(c, opts) + "</td>").join("") + "</tr>").join("") +
          "</tbody></table>");
        continue;
      }
      const para = [];
      while (i < lines.length && !/^\s*$/.test(lines[i]) && !/^(#{1,6})\s/.test(lines[i]) &&
             !/^\s*(```|~~~)/.test(lines[i]) && !/^\s*>/.test(lines[i]) &&
             !/^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
        para.push(lines[i].trim());
        i++;
      }
      html.push("<p>" + inline(para.join("\n"), opts).replace(/\n/g, " ") + "</p>");
    }
    return html.join("\n");
  }

  global.Markdown = { render: render, inline: inline, escape: esc, restore: restore };
})(window);
