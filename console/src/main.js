// rsep serve's console: one page over the HTTP API of docs/serve.md.
import { EditorView, basicSetup } from "codemirror";
import { setDiagnostics } from "@codemirror/lint";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import examples from "virtual:examples";
import { streamHighlight, streamSparql } from "./lang.js";
import "./console.css";

// A token given as /?token=T is passed on (EventSource cannot set an Authorization header).
const token = new URLSearchParams(location.search).get("token");
const auth = token ? { Authorization: "Bearer " + token } : {};
const withToken = (url) => (token ? url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : url);
const $ = (id) => document.getElementById(id);
const PAGE = 15;
const REFRESH_MS = 1000;

function api(path, opts = {}) {
  return fetch(path, { ...opts, headers: { ...auth, ...(opts.headers || {}) } });
}

async function errorOf(r) {
  try { return (await r.json()).error || r.statusText; } catch { return r.status + " " + r.statusText; }
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e[k] = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return e;
}

function say(id, text, ok) {
  const e = $(id);
  e.textContent = text;
  e.className = ok ? "ok" : "error";
}

// ------------------------------------------------------------------ the examples

// the stream or graph each example file is written for (docs/examples, examples/coupon)
const TARGET = {
  "docs/examples/rooms/readings.trig": "http://example.org/readings",
  "docs/examples/observations.trig": "http://example.org/obs",
  "docs/examples/warming/readings.trig": "http://example.org/station",
  "examples/coupon/coupons.trig": "http://coupons",
  "examples/coupon/locations.trig": "http://locations",
  "examples/rsepql/figure1.trig": "http://example.org/S",
  "docs/examples/rooms/rooms.ttl": "http://example.org/rooms",
  "docs/examples/rooms/rooms.ru": "http://example.org/rooms",
  "docs/examples/rooms/rooms-bad.ru": "http://example.org/rooms",
  "examples/coupon/products.ttl": "http://products",
};

function fill(select, kinds) {
  for (const [i, x] of examples.entries()) {
    if (kinds.includes(x.kind)) select.append(el("option", { value: String(i) }, x.path));
  }
}

function eventFormat(x) {
  if (x.path.endsWith(".jsonl")) return "jsonl";
  if (x.path.endsWith(".nq")) return x.text.match(/^MESSAGE\b/m) ? "rdfm-nquads" : "nquads";
  if (/^VERSION\s+"[^"]*messages"/m.test(x.text)) return "rdfm";
  return x.text.match(/^MESSAGE\b/m) ? "rdfm-trig" : "trig";
}

// ------------------------------------------------------------------ the editor

const editor = new EditorView({
  parent: $("q-editor"),
  extensions: [basicSetup, streamSparql, streamHighlight, EditorView.lineWrapping,
    EditorView.updateListener.of((u) => { if (u.docChanged) clearError(); })],
});

function clearError() {
  if ($("q-error").textContent) {
    $("q-error").textContent = "";
    editor.dispatch(setDiagnostics(editor.state, []));
  }
}

// the service's located message, "NAME:LINE:COLUMN: ...", marked in the editor: from the
// column to the end of the word there (one character at least)
function markError(message) {
  const m = /^[^\s:]*:(\d+):(\d+):\s*(.*)$/s.exec(message);
  say("q-error", message, false);
  if (!m) return;
  const doc = editor.state.doc;
  const line = doc.line(Math.min(Math.max(1, +m[1]), doc.lines));
  let from = Math.min(line.from + Math.max(0, +m[2] - 1), line.to);
  let to = from;
  while (to < line.to && /[\w?$:<>#"-]/.test(doc.sliceString(to, to + 1))) to++;
  if (to === from) {
    if (from < line.to) to = from + 1; else if (from > line.from) from -= 1; else to = Math.min(from + 1, doc.length);
  }
  editor.dispatch(setDiagnostics(editor.state, [{ from, to, severity: "error", message: m[3] }]));
}

$("q-example").onchange = (ev) => {
  const x = examples[+ev.target.value];
  if (!x) return;
  editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: x.text } });
  $("q-name").value = x.path.split("/").pop().replace(/\.rq$/, "");
  $("q-dialect").value = "";
};

$("q-register").onclick = async () => {
  // traceable: the trace panel may follow a key of an event query later (docs/serve.md)
  const body = { query: editor.state.doc.toString(), name: $("q-name").value || undefined,
                 dialect: $("q-dialect").value || undefined, traceable: true };
  const r = await api("/queries", { method: "POST", headers: { "Content-Type": "application/json" },
                                    body: JSON.stringify(body) });
  if (!r.ok) { markError(await errorOf(r)); return; }
  clearError();
  const q = await r.json();
  say("q-error", `registered ${q.name} (${q.kind})`, true);
  showQuery(q);
};

// ------------------------------------------------------------------ events, clock, graphs

$("e-example").onchange = (ev) => {
  const x = examples[+ev.target.value];
  if (!x) return;
  $("e-text").value = x.text;
  $("e-format").value = eventFormat(x);
  if (TARGET[x.path]) $("e-stream").value = TARGET[x.path];
};

async function bodyOf(fileId, textId) {
  const f = $(fileId).files[0];
  return f ? await f.arrayBuffer() : $(textId).value;
}

$("e-post").onclick = async () => {
  const stream = $("e-stream").value.trim();
  const url = `/events?stream=${encodeURIComponent(stream)}&format=${$("e-format").value}`;
  // octet-stream: the body's format is the ?format= chosen
  const r = await api(url, { method: "POST", headers: { "Content-Type": "application/octet-stream" },
                             body: await bodyOf("e-file", "e-text") });
  if (r.ok) {
    const d = await r.json();
    say("e-result", `${d.accepted} taken in, ${d.rejected} rejected`, d.rejected === 0);
    $("e-file").value = "";
  } else {
    say("e-result", await errorOf(r), false);
  }
  refresh();
};

$("c-move").onclick = async () => {
  const until = parseInt($("c-until").value, 10);
  const r = await api("/clock", { method: "POST", headers: { "Content-Type": "application/json" },
                                  body: JSON.stringify({ until }) });
  say("c-result", r.ok ? `engine time ${(await r.json()).engine_time}` : await errorOf(r), r.ok);
  refresh();
};

$("g-example").onchange = (ev) => {
  const x = examples[+ev.target.value];
  if (!x) return;
  $("g-text").value = x.text;
  $("g-mode").value = x.kind === "update" ? "update" : "put";
  if (TARGET[x.path]) $("g-iri").value = TARGET[x.path];
};

$("g-send").onclick = async () => {
  const mode = $("g-mode").value;
  const r = await api("/graphs?iri=" + encodeURIComponent($("g-iri").value.trim()), {
    method: mode === "put" ? "PUT" : "POST",
    headers: { "Content-Type": mode === "update" ? "application/sparql-update" : "text/turtle" },
    body: await bodyOf("g-file", "g-text") });
  if (r.ok) {
    const d = await r.json();
    say("g-result", `<${d.graph}>: ${d.triples} triples, at time ${d.time ?? "– (no event yet)"}`, true);
    $("g-file").value = "";
  } else {
    say("g-result", await errorOf(r), false);
  }
};

// ------------------------------------------------------------------ terms and prefixes

const WELL_KNOWN = {
  rdf: "http://www.w3.org/1999/02/22-rdf-syntax-ns#", rdfs: "http://www.w3.org/2000/01/rdf-schema#",
  xsd: "http://www.w3.org/2001/XMLSchema#", owl: "http://www.w3.org/2002/07/owl#",
};
const NUMERIC = /^"([^"]*)"\^\^<http:\/\/www\.w3\.org\/2001\/XMLSchema#(integer|decimal|double|float|int|long|short|byte|nonNegativeInteger|positiveInteger|negativeInteger|nonPositiveInteger|unsignedInt|unsignedLong)>$/;

function prefixesOf(text) {
  const out = { ...WELL_KNOWN };
  for (const m of text.matchAll(/PREFIX\s+([\w.-]*):\s*<([^>]*)>/gi)) out[m[1]] = m[2];
  // longest namespace first, so that a narrower one wins
  return Object.entries(out).sort((a, b) => b[1].length - a[1].length);
}

function compactIri(iri, prefixes) {
  for (const [p, ns] of prefixes) {
    if (ns && iri.startsWith(ns) && /^[\w-]*$/.test(iri.slice(ns.length))) return p + ":" + iri.slice(ns.length);
  }
  return "<" + iri + ">";
}

function compact(term, prefixes) {
  if (typeof term !== "string") return String(term ?? "");
  const num = NUMERIC.exec(term);
  if (num) return num[1];
  return term.replace(/<([^<>\s]*)>/g, (_, iri) => compactIri(iri, prefixes));
}

function numberOf(term) {
  if (typeof term === "number") return term;
  const m = typeof term === "string" && NUMERIC.exec(term);
  return m ? Number(m[1]) : null;
}

function timeOf(t) {
  if (typeof t === "number") return t;
  const n = Number(t);
  if (!Number.isNaN(n)) return n;
  const d = Date.parse(t);
  return Number.isNaN(d) ? null : d / 1000;  // (uPlot's time scale counts seconds)
}

// ------------------------------------------------------------------ a query's view

const shown = new Map();  // name -> view

function columnsOf(r) {
  const cols = ["time"];
  if ("from" in r) cols.push("from");
  if ("to" in r) cols.push("to");
  cols.push("op");
  if (r.bindings) cols.push(...Object.keys(r.bindings));
  else if ("triple" in r) cols.push("triple");
  else if ("boolean" in r) cols.push("boolean");
  return cols;
}

function valueOf(r, c) {
  if (c === "op") return r.op || "insert";
  if (c === "time" || c === "from" || c === "to") return r[c];
  if (r.bindings) return r.bindings[c];
  return r[c];
}

class QueryView {
  constructor(q) {
    this.name = q.name;
    this.prefixes = prefixesOf(q.query);
    this.rows = [];
    this.cols = null;
    this.page = 0;
    this.follow = true;  // on the last page while results come
    this.chart = null;
    this.dirty = false;
    const e = encodeURIComponent(q.name);
    this.section = el("section", { class: "panel query", "data-name": q.name },
      el("h2", {}, el("span", { class: "name" }, `${q.name} (${q.kind})`), el("span", { class: "stats" }),
        el("span", { class: "actions" },
          el("button", { class: "download-jsonl", onclick: () => this.download("jsonl") }, "jsonl"),
          el("button", { class: "download-csv", onclick: () => this.download("csv") }, "csv"),
          el("button", { class: "unregister",
                         onclick: () => api("/queries/" + e, { method: "DELETE" }).then(refresh) }, "unregister"))),
      el("div", { class: "query-body" },
        el("div", { class: "results-side" },
          el("table", { class: "results" }, el("thead"), el("tbody")),
          el("div", { class: "pager" },
            el("button", { class: "prev", onclick: () => this.turn(-1) }, "‹"),
            el("span", { class: "page" }),
            el("button", { class: "next", onclick: () => this.turn(1) }, "›")),
          el("div", { class: "chart" }),
          ...(q.kind === "rsp" ? [] : [this.tracePanel(e)])),
        el("div", { class: "explain-side" },
          el("h3", {}, "explain"), el("pre", { class: "explain" }),
          el("div", { class: "automaton" }),
          el("details", {}, el("summary", {}, "query text"), el("pre", { class: "text" }, q.query)))));
    $("queries").append(this.section);
    this.source = new EventSource(withToken("/queries/" + e + "/results"));
    this.source.addEventListener("result", (ev) => this.add(JSON.parse(ev.data)));
    this.source.addEventListener("error", (ev) => {
      if (ev.data) this.$(".stats").textContent = JSON.parse(ev.data).error;
    });
    this.source.addEventListener("end", () => this.remove());
    this.loadExplain(q);
    this.render();
  }

  $(sel) { return this.section.querySelector(sel); }

  // rsep run --trace for one key (PUT/GET/DELETE /queries/N/trace): SPASEQ and EP-SPARQL only
  tracePanel(e) {
    this.traceUrl = `/queries/${e}/trace`;
    this.traceSeq = null;  // the last line shown; null: not tracing
    const key = el("input", { class: "trace-key", size: "28", placeholder: "?VAR=VALUE, e.g. ?sensor=:s1" });
    key.onkeydown = (ev) => { if (ev.key === "Enter") this.startTrace(); };
    return el("div", { class: "trace" },
      el("h3", {}, "trace ", el("span", { class: "hint" }, "why is a match missing: one key's runs or events, from now on")),
      el("div", { class: "row" }, key,
        el("button", { class: "trace-start", onclick: () => this.startTrace() }, "trace"),
        el("button", { class: "trace-stop", onclick: () => this.stopTrace() }, "stop"),
        el("span", { class: "trace-status" })),
      el("div", { class: "trace-scroll" }, el("table", { class: "trace-lines" }, el("tbody"))));
  }

  async startTrace() {
    const r = await api(this.traceUrl, { method: "PUT", headers: { "Content-Type": "application/json" },
                                        body: JSON.stringify({ key: this.$(".trace-key").value.trim() }) });
    const st = this.$(".trace-status");
    if (!r.ok) { this.traceSeq = null; st.className = "trace-status error"; st.textContent = await errorOf(r); return; }
    const d = await r.json();
    this.traceSeq = 0;
    this.$(".trace-lines tbody").replaceChildren();
    st.className = "trace-status ok";
    st.textContent = `tracing ${d.key}`;
    this.traceLines(d);
  }

  async stopTrace() {
    if (this.traceSeq === null) return;
    this.traceSeq = null;
    await api(this.traceUrl, { method: "DELETE" });
    const st = this.$(".trace-status");
    st.className = "trace-status";
    st.textContent = "stopped";
  }

  // the lines after the last shown; called with each refresh (``key``: the server's; one
  // running when the card is made, e.g. before a reload, is shown, later ones are the user's)
  async pollTrace(key) {
    const first = !this.traceSeen;
    this.traceSeen = true;
    if (first && key) {
      this.traceSeq = 0;
      this.$(".trace-key").value = key;
      this.$(".trace-lines tbody").replaceChildren();
      this.$(".trace-status").className = "trace-status ok";
      this.$(".trace-status").textContent = `tracing ${key}`;
    }
    if (this.traceSeq === null || this.tracePolling) return;
    this.tracePolling = true;
    try {
      const r = await api(`${this.traceUrl}?since=${this.traceSeq}`);
      if (r.ok) this.traceLines(await r.json());
      else if (r.status === 404 && this.traceSeq !== null) { this.traceSeq = null; this.$(".trace-status").textContent = "stopped"; }
    } finally { this.tracePolling = false; }
  }

  traceLines(d) {
    const fresh = d.lines.filter((ln) => ln.seq > this.traceSeq);
    if (!fresh.length) return;
    this.traceSeq = fresh[fresh.length - 1].seq;
    const body = this.$(".trace-lines tbody");
    body.append(...fresh.map((ln) => el("tr", { class: "trace-line" },
      el("td", { class: "t" }, String(ln.time)), el("td", { class: "reason" }, ln.text))));
    while (body.rows.length > d.limit) body.deleteRow(0);
    if (d.dropped) this.$(".trace-status").textContent = `tracing ${d.key} (${d.dropped} older lines dropped)`;
  }

  remove() {
    this.source.close();
    this.chart?.destroy();
    this.section.remove();
    shown.delete(this.name);
  }

  add(r) {
    if (!this.cols) this.cols = columnsOf(r);
    else for (const c of columnsOf(r)) if (!this.cols.includes(c)) this.cols.push(c);
    this.rows.push(r);
    // results come in bursts: drawn once per frame
    if (!this.dirty) { this.dirty = true; requestAnimationFrame(() => { this.dirty = false; this.render(); }); }
  }

  pages() { return Math.max(1, Math.ceil(this.rows.length / PAGE)); }

  turn(d) {
    this.page = Math.min(Math.max(0, this.page + d), this.pages() - 1);
    this.follow = this.page === this.pages() - 1;
    this.render();
  }

  render() {
    if (this.follow) this.page = this.pages() - 1;
    const head = this.$("thead"), body = this.$("tbody");
    head.replaceChildren(el("tr", {}, ...(this.cols || ["results"]).map((c) => el("th", {}, c))));
    const rows = this.rows.slice(this.page * PAGE, (this.page + 1) * PAGE).map((r) =>
      el("tr", { class: "result" }, ...this.cols.map((c) => {
        const v = valueOf(r, c);
        return el("td", { title: typeof v === "string" ? v : "" }, compact(v, this.prefixes));
      })));
    body.replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { class: "empty" }, "no results yet"))]));
    this.$(".page").textContent = `page ${this.page + 1} of ${this.pages()} · ${this.rows.length} results`;
    this.drawChart();
  }

  // numeric bindings over the results' time: one series per variable with a number
  drawChart() {
    const vars = (this.cols || []).filter((c) => !["time", "from", "to", "op"].includes(c) &&
      this.rows.some((r) => r.bindings && numberOf(r.bindings[c]) !== null));
    const div = this.$(".chart");
    if (!vars.length) { div.hidden = true; return; }
    div.hidden = false;
    const pts = this.rows.filter((r) => r.bindings && (r.op || "insert") === "insert")
      .map((r) => [timeOf(r.time), ...vars.map((v) => numberOf(r.bindings[v]))])
      .filter((p) => p[0] !== null).sort((a, b) => a[0] - b[0]);
    const data = [pts.map((p) => p[0]), ...vars.map((_, i) => pts.map((p) => p[i + 1]))];
    const key = vars.join(" ");
    if (this.chart && this.chartKey === key) { this.chart.setData(data); return; }
    this.chart?.destroy();
    this.chartKey = key;
    const isDate = this.rows.some((r) => typeof r.time === "string" && Number.isNaN(Number(r.time)));
    const colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];
    this.chart = new uPlot({
      width: Math.max(320, div.clientWidth || 520), height: 200,
      scales: { x: { time: isDate } },
      series: [{ label: "time" }, ...vars.map((v, i) => ({
        label: v, stroke: colors[i % colors.length], width: 2,
        points: { show: true, size: 6, fill: colors[i % colors.length] } }))],
      axes: [{ label: "result time" }, {}],
    }, data, div);
  }

  async loadExplain(q) {
    const e = encodeURIComponent(q.name);
    const r = await api(`/queries/${e}/explain`);
    this.$(".explain").textContent = r.ok ? await r.text() : await errorOf(r);
    if (q.kind !== "spaseq") return;
    // SVG drawn server-side by Graphviz; without it, the DOT text
    let a = await api(`/queries/${e}/automaton`);
    const div = this.$(".automaton");
    if (a.ok) { div.innerHTML = await a.text(); return; }
    a = await api(`/queries/${e}/automaton?format=dot`);
    div.append(el("pre", {}, await a.text()));
  }

  stats(q) {
    const st = this.$(".stats");
    st.className = "stats" + (q.status === "failed" ? " failed" : "");
    st.textContent = q.status === "failed" ? q.error :
      `${q.events_in} events in, ${q.results_out} results out, ${q.pending_events} pending` +
      (q.state_triples !== null ? `, ${q.state_triples} triples in windows` : "") +
      (q.lag_ms !== null ? `, lag ${q.lag_ms.toFixed(1)} ms` : "");
  }

  download(fmt) {
    let text;
    if (fmt === "jsonl") {
      text = this.rows.map((r) => JSON.stringify(r)).join("\n") + (this.rows.length ? "\n" : "");
    } else {
      // full terms in N-Triples syntax, as rsep run --format csv leaves them
      const q = (v) => { const s = v === undefined || v === null ? "" : String(v);
                         return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s; };
      const cols = this.cols || [];
      text = [cols.join(","), ...this.rows.map((r) => cols.map((c) => q(valueOf(r, c))).join(","))]
        .join("\r\n") + "\r\n";
    }
    const a = el("a", { href: URL.createObjectURL(new Blob([text], { type: fmt === "csv" ? "text/csv" : "application/x-ndjson" })),
                        download: `${this.name}.${fmt}` });
    document.body.append(a);
    a.click();
    a.remove();
  }
}

function showQuery(q) {
  let view = shown.get(q.name);
  if (!view) { view = new QueryView(q); shown.set(q.name, view); }
  view.stats(q);
  if (view.traceUrl) view.pollTrace(q.trace);
}

// ------------------------------------------------------------------ the periodic refresh

function ago(s) {
  if (s === null || s === undefined) return "–";
  return s < 1 ? "just now" : s < 120 ? `${Math.round(s)} s ago` : `${Math.round(s / 60)} min ago`;
}

let deadShown = -1;

async function refresh() {
  try {
    const [h, qs, ss, dl] = await Promise.all(["/health", "/queries", "/streams/stats", "/deadletters"]
      .map((p) => api(p).then((r) => r.json())));
    $("health").textContent =
      `${h.queries} queries · ${h.events} events · engine time ${h.engine_time ?? "–"} · ${h.dead_letters} dead letters`;
    const names = new Set(qs.map((q) => q.name));
    for (const [name, view] of shown) if (!names.has(name)) view.remove();
    qs.forEach(showQuery);
    $("streams").tBodies[0].replaceChildren(...(ss.length ? ss.map((s) => el("tr", { class: "stream" },
      el("td", { title: s.iri }, s.iri), el("td", {}, s.accepted), el("td", {}, s.rejected), el("td", {}, s.held),
      el("td", {}, s.last_event_time ?? "–"), el("td", {}, ago(s.last_arrival_s_ago)),
      el("td", {}, `${s.rate_per_s}/s`), el("td", {}, s.allowed_lateness),
      el("td", {}, s.source ? `${s.source.url} (${s.source.status})` : "POST"))) :
      [el("tr", {}, el("td", { class: "empty", colspan: "9" }, "no events yet"))]));
    if (dl.length !== deadShown) {
      deadShown = dl.length;
      $("dead-count").textContent = `(${h.dead_letters})`;
      $("deadletters").tBodies[0].replaceChildren(...dl.slice(-50).reverse().map((d) => el("tr", { class: "dead" },
        el("td", { title: d.stream }, d.stream), el("td", {}, `${d.origin}:${d.line}`),
        el("td", { class: "reason", title: d.record }, d.reason))));
    }
  } catch (e) {
    $("health").textContent = "the server does not answer: " + e.message;
  }
}

fill($("q-example"), ["query"]);
fill($("e-example"), ["events"]);
fill($("g-example"), ["graph", "update"]);
refresh();
setInterval(refresh, REFRESH_MS);
