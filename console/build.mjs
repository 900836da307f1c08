// Bundles the console into ../rsep/serve/static/ (console.js, console.css), with the
// examples of docs/examples and examples/ inlined so that the page can load them without
// the server exposing the checkout's files.
import { build } from "esbuild";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const KINDS = { ".rq": "query", ".trig": "events", ".nq": "events", ".jsonl": "events",
                ".ttl": "graph", ".nt": "graph", ".ru": "update" };

function walk(dir) {
  return readdirSync(dir).sort().flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

const examples = [];
for (const dir of ["docs/examples", "examples/coupon", "examples/rsepql"]) {
  for (const p of walk(join(root, dir))) {
    const ext = p.slice(p.lastIndexOf("."));
    // (files over 64 KiB are data sets, not examples to read in a text box)
    if (KINDS[ext] && statSync(p).size < 65536) {
      examples.push({ path: relative(root, p), kind: KINDS[ext], text: readFileSync(p, "utf8") });
    }
  }
}

const inline = {
  name: "examples",
  setup(b) {
    b.onResolve({ filter: /^virtual:examples$/ }, () => ({ path: "examples", namespace: "examples" }));
    b.onLoad({ filter: /.*/, namespace: "examples" }, () => ({
      contents: JSON.stringify(examples), loader: "json" }));
  },
};

await build({
  entryPoints: { console: join(root, "console/src/main.js") },
  bundle: true, minify: true, format: "iife", target: "es2020", legalComments: "eof",
  outdir: join(root, "rsep/serve/static"), plugins: [inline], logLevel: "warning",
});
console.log(`console: ${examples.length} examples bundled into rsep/serve/static/`);
