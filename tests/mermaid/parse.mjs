// Parse Mermaid diagrams with the real Mermaid library (run by tests/test_mermaid.py).
// stdin: JSON list of diagram texts.  stdout: JSON list of
//   {ok: true, type, nodes: [[id, label]], edges: [[from, to]]}  or  {ok: false, error}.
// Labels are decoded the way Mermaid decodes them when it renders (entity codes -> characters).
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });

function decode(text) {
  // Mermaid hides "#name;" entity codes behind placeholders while parsing, then turns them
  // into HTML entities; a textarea decodes those like a browser does.
  const html = String(text).replace(/ﬂ°°/g, '&#').replace(/ﬂ°/g, '&').replace(/¶ß/g, ';');
  const t = document.createElement('textarea');
  t.innerHTML = html;
  return t.value;
}

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const diagrams = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const out = [];
for (const text of diagrams) {
  try {
    const parsed = await mermaid.parse(text);
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const v = diagram.db.getVertices();
    const verts = v instanceof Map ? [...v.values()] : Object.values(v);
    out.push({
      ok: true,
      type: parsed.diagramType,
      nodes: verts.map((x) => [x.id, decode(x.text)]),
      edges: diagram.db.getEdges().map((e) => [e.start, e.end]),
    });
  } catch (e) {
    out.push({ ok: false, error: String(e && e.message ? e.message : e) });
  }
}
process.stdout.write(JSON.stringify(out));
