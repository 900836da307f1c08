// Records what RSP-JS itself outputs on the streams of cases.json, into rspjs-outputs.json.
// Not part of the test suite (it needs npm): run it where `npm install rsp-js@1.3.5` was done,
//   NODE_PATH=/that/dir/node_modules node record.js
// Each event is added on its own and the run waits until RSP-JS's (asynchronous) SPARQL
// evaluations have settled, so every evaluation is tagged with the arrival that triggered it
// and the window instance [open, close) that RSP-JS reported.
const fs = require("fs");
const path = require("path");
const { RSPEngine } = require("rsp-js");
const { DataFactory } = require("n3");
const { namedNode, defaultGraph, quad } = DataFactory;

const here = __dirname;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const term = (t) => (t.termType === "NamedNode" ? `<${t.value}>`
  : t.termType === "Literal" ? JSON.stringify(t.value) + (t.language ? "@" + t.language
    : t.datatype && t.datatype.value !== "http://www.w3.org/2001/XMLSchema#string" ? `^^<${t.datatype.value}>` : "")
  : "_:" + t.value);

async function runCase(c) {
  const query = fs.readFileSync(path.join(here, c.query), "utf8");
  const engine = new RSPEngine(query);
  for (const [s, p, o] of c.static || []) engine.addStaticData(quad(namedNode(s), namedNode(p), namedNode(o), defaultGraph()));
  const evaluations = [];
  let arrival = null;
  const tagOf = new Map(); // reported QuadContainer -> {window, open, close}
  for (const w of engine.windows) {
    w.subscribe("RStream", (data) => {
      for (const [inst, content] of w.active_windows) {
        if (content === data) tagOf.set(data, { window: w.name, open: inst.open, close: inst.close });
      }
    });
  }
  const r2r = engine.r2r;
  const execute = r2r.execute.bind(r2r);
  r2r.execute = async (container) => {
    const ev = { arrival, ...tagOf.get(container), size: container.len(), bindings: [] };
    evaluations.push(ev);
    const stream = await execute(container);
    stream.on("data", (b) => {
      const row = {};
      for (const [k, v] of b) row[k.value] = term(v);
      ev.bindings.push(row);
    });
    return stream;
  };
  engine.register().on("RStream", () => {});
  for (const [s, t, subj, p, o] of c.events) {
    arrival = t;
    engine.getStream(s).add(quad(namedNode(subj), namedNode(p), namedNode(o), defaultGraph()), t);
    await sleep(400);
  }
  for (const ev of evaluations) ev.bindings.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return { name: c.name, evaluations, rows: evaluations.reduce((n, e) => n + e.bindings.length, 0) };
}

(async () => {
  const log = console.log, debug = console.debug;
  console.log = () => {};
  console.debug = () => {};
  const { cases } = JSON.parse(fs.readFileSync(path.join(here, "cases.json"), "utf8"));
  const out = [];
  for (const c of cases) out.push(await runCase(c));
  console.log = log;
  console.debug = debug;
  const pkg = require("rsp-js/package.json");
  const text = JSON.stringify({ engine: `rsp-js ${pkg.version} (npm), node ${process.version}`, runs: out }, null, 1)
    .replace(/\{\n\s*("[^"\n]*": "(?:[^"\\\n]|\\.)*",?\n\s*)+\}/g, (m) => m.replace(/\n\s*/g, " "));
  fs.writeFileSync(path.join(here, "rspjs-outputs.json"), text + "\n");
  for (const r of out) log(r.name, r.rows, r.evaluations.map((e) => `${e.arrival}:${e.window}[${e.open},${e.close})=${e.bindings.length}`).join(" "));
})();
