// RSP-JS (npm rsp-js) in node: the stream file is parsed with N3's TriG parser, each event's
// quads are added with the event's time, one evaluation at a time (the driver waits for an
// evaluation's results before feeding the next event, so its latency is its own).
// Usage: node rspjs_worker.js SPEC.json   (run with cwd = the rsp-js install folder)
"use strict";
const fs = require("fs");
const path = require("path");
const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const modules = path.join(spec.rspjs_dir, "node_modules");
const N3 = require(path.join(modules, "n3"));
const { RSPEngine } = require(path.join(modules, "rsp-js"));
const PROV = "http://www.w3.org/ns/prov#generatedAtTime";

// rsp-js prints every element it receives (console.debug/log): silenced, that is I/O, not
// the engine's work; its INFO log to a file is left as shipped.
console.debug = () => {};
console.log = () => {};

function term(t) {
  if (t.termType === "Literal") return `"${t.value}"^^<${t.datatype.value}>`;
  if (t.termType === "NamedNode") return `<${t.value}>`;
  return `_:${t.value}`;
}

async function main() {
  const engine = new RSPEngine(spec.query);
  const stream = engine.getStream(spec.stream);
  const emitter = engine.register();
  emitter.on("RStream", () => {});
  const step = spec.step;
  const shift = spec.shift; // fed time = t + shift (see the harness: aligns RSP-JS's [o, c) windows)
  const win = engine.windows[0];
  const r2r = engine.r2r;
  const original = r2r.execute.bind(r2r);
  const latencies = [];
  const windows = new Map();
  let pending = null;
  r2r.execute = async (container) => {
    const t0 = process.hrtime.bigint();
    // the window [o, c) RSP-JS evaluates: c is the latest multiple of the step before the
    // trigger; with fed times t + shift it holds the events of rsep's (c' - range, c'],
    // c' = c - shift - 1
    const close = Math.floor((win.time - 1) / step) * step;
    const key = close - shift - 1;
    const rows = [];
    windows.set(key, rows);
    let done;
    pending = new Promise((r) => { done = r; });
    const bindings = await original(container);
    bindings.on("data", (b) => {
      const row = {};
      for (const [k, v] of b) row[k.value] = term(v);
      rows.push(row);
    });
    bindings.on("end", () => {
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      done();
    });
    bindings.on("error", (e) => { console.error(String(e)); done(); });
    return bindings;
  };
  const ready = Date.now() / 1000;
  const t0 = process.hrtime.bigint();
  const parser = new N3.StreamParser({ format: "application/trig" });
  fs.createReadStream(spec.trig).pipe(parser);
  let graph = null, time = null, quads = [], events = 0;
  const times = new Map();
  async function flush() {
    if (graph === null) return;
    const ts = times.get(graph);
    times.delete(graph);
    for (const q of quads) {
      stream.add(q, ts + shift);
      if (pending) { const p = pending; pending = null; await p; }
    }
    events++;
    quads = [];
  }
  for await (const q of parser) {
    if (q.graph.termType === "DefaultGraph") {
      if (q.predicate.value === PROV) times.set(q.subject.value, Number(q.object.value));
      continue;
    }
    if (q.graph.value !== graph) {
      await flush();
      graph = q.graph.value;
    }
    quads.push(N3.DataFactory.quad(q.subject, q.predicate, q.object, N3.DataFactory.defaultGraph()));
  }
  await flush();
  if (pending) await pending;
  const runS = Number(process.hrtime.bigint() - t0) / 1e9;
  const out = fs.createWriteStream(spec.matches);
  for (const [k, rows] of [...windows.entries()].sort((a, b) => a[0] - b[0])) {
    out.write(JSON.stringify({ window: k, rows }) + "\n");
  }
  out.end();
  const s = [...latencies].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.round(p * (s.length - 1)))];
  fs.writeFileSync(spec.result, JSON.stringify({
    ready, run_s: runS, events,
    latency_ms: s.length ? { p50: q(0.5), p99: q(0.99), max: s[s.length - 1], n: s.length } : null,
    self_peak_rss_kb: process.resourceUsage().maxRSS, stages: {},
    note: "latency = one evaluation: from RSP-JS's window trigger to the end of its results",
    finished: Date.now() / 1000,
  }));
}
main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
