/* The API reference at /docs, rendered from /openapi.json by our own code (FastAPI's default
 * Swagger page loads its scripts from a CDN, which an offline machine cannot reach). */
(function () {
  "use strict";
  const esc = (s) => window.Markdown.escape(s == null ? "" : s);

  function schemaText(spec, schema) {
    if (!schema) return "";
    if (schema.$ref) return schema.$ref.split("/").pop();
    if (schema.anyOf) return schema.anyOf.map((s) => schemaText(spec, s)).join(" | ");
    if (schema.type === "array") return schemaText(spec, schema.items) + "[]";
    return schema.type || "";
  }

  function bodyText(spec, op) {
    const content = op.requestBody && op.requestBody.content;
    if (!content) return "";
    return Object.keys(content).map((ct) => {
      let schema = content[ct].schema || {};
      if (schema.$ref) schema = spec.components.schemas[schema.$ref.split("/").pop()] || schema;
      const props = schema.properties || {};
      const req = new Set(schema.required || []);
      return '<div class="doc-body"><b>Body</b> <code>' + esc(ct) + "</code><ul>" +
        Object.keys(props).map((k) => "<li><code>" + esc(k) + "</code> " + esc(schemaText(spec, props[k])) +
          (req.has(k) ? " <em>required</em>" : "") + (props[k].description ? " — " + esc(props[k].description) : "") + "</li>").join("") +
        "</ul></div>";
    }).join("");
  }

  fetch("/openapi.json").then((r) => r.json()).then((spec) => {
    let html = '<div class="card"><h2>' + esc(spec.info.title) + " " + esc(spec.info.version) + "</h2>" +
      '<p class="muted">' + esc(spec.info.description || "") + "</p>" +
      '<p class="small">Errors are always <code>{"error": message}</code> (plus <code>details</code> when there are any). ' +
      "When the server was started with a token, send <code>Authorization: Bearer &lt;token&gt;</code>.</p></div>";
    Object.keys(spec.paths).forEach((path) => {
      const item = spec.paths[path];
      Object.keys(item).forEach((method) => {
        const op = item[method];
        const params = op.parameters || [];
        html += '<div class="card doc-op"><h3><span class="verb ' + esc(method) + '">' + esc(method.toUpperCase()) +
          "</span> <code>" + esc(path) + "</code></h3><p>" + window.Markdown.inline(op.summary || "") + "</p>" +
          (op.description ? '<p class="muted small">' + window.Markdown.inline(op.description) + "</p>" : "") +
          (params.length ? "<table><thead><tr><th>parameter</th><th>in</th><th>type</th><th>default</th><th></th></tr></thead><tbody>" +
            params.map((p) => "<tr><td><code>" + esc(p.name) + "</code>" + (p.required ? " *" : "") + "</td><td>" + esc(p.in) +
              "</td><td>" + esc(schemaText(spec, p.schema)) + "</td><td>" + esc(p.schema && p.schema.default !== undefined ? JSON.stringify(p.schema.default) : "") +
              "</td><td>" + esc(p.description || "") + "</td></tr>").join("") + "</tbody></table>" : "") +
          bodyText(spec, op) +
          '<p class="small muted">Responses: ' + Object.keys(op.responses || {}).map(esc).join(", ") + "</p></div>";
      });
    });
    document.getElementById("docs").innerHTML = html;
  }).catch((e) => {
    document.getElementById("docs").innerHTML = '<div class="error">' + esc(e.message) + "</div>";
  });
})();
