// Parses Mermaid diagrams with the real Mermaid parser (the version pinned in package.json).
// Usage: npm ci --prefix tests/mermaid && node tests/mermaid/parse.mjs FILE...
// Prints one JSON line per file, {"file", "ok": true, "diagramType", "lineColours"} or {"file",
// "ok": false, "error"}, and exits 1 when any file does not parse (2 when no file is given).
// lineColours: an xychart's line colours as Mermaid draws them, after the file's directives
// (`%%{init: …}%%`, which mermaid.parse applies to the configuration); [] for other diagrams.
//
// mermaid.parse needs a DOM in Node: while parsing it sanitizes titles and labels with
// DOMPurify, which has no sanitize() without a window. jsdom provides one, set as a global
// before mermaid is imported (mermaid reads it at import time).
import { readFile } from 'node:fs/promises';
import { JSDOM } from 'jsdom';

const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write('usage: node parse.mjs FILE...\n');
  process.exit(2);
}
const { window } = new JSDOM('');
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false });

let failed = false;
for (const file of files) {
  const text = await readFile(file, 'utf8');
  try {
    const { diagramType } = await mermaid.parse(text);
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const plots = diagramType === 'xychart' ? diagram.db.getXYChartData().plots : [];
    const lineColours = plots.filter((p) => p.type === 'line').map((p) => p.strokeFill);
    console.log(JSON.stringify({ file, ok: true, diagramType, lineColours }));
  } catch (error) {
    failed = true;
    console.log(JSON.stringify({ file, ok: false, error: String(error?.message ?? error) }));
  }
}
window.close();
process.exitCode = failed ? 1 : 0;
