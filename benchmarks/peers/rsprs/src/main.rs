//! rsep bench's harness around rsp-rs (crates.io): the stream file every RSP peer reads,
//! fed event by event to rsp-rs's `RSPEngine`, timed whole: TriG parsing, rsp-rs's windows
//! and SPARQL (its own thread), and every result row parsed and written, up to the last
//! result. (rsp-rs's published throughput times only the producer's enqueue into its
//! unbounded channel; `stages.enqueue_s` here is that part, `stages.drain_s` the rest.)
//!
//! Usage: `rsep-bench-rsprs SPEC.json`; the spec (rsep/bench/peers.py) gives `trig`, `stream`
//! (the stream IRI of the query), `query` (RSP-QL as rsp-rs parses it: one clause a line),
//! `range`, `step`, `matches` and `result`.
//!
//! Window conventions. rsp-rs's windows are `[o, c)` with closes on a grid anchored at the
//! first timestamp it sees (`t0 + k step`), and a window reports when an event later than `c`
//! arrives (only the latest of the windows such an event closes; the others are dropped).
//! rsep's windows are `(c - range, c]` at each multiple `c` of the step. So that rsp-rs's
//! windows hold exactly rsep's, the harness feeds time `t + OFFSET` and first one marker
//! quad at `MARK = OFFSET + 1 - j step`, far enough before the stream that none of its windows
//! reaches the first event: the grid is then `OFFSET + 1 + k step`, and rsp-rs's window
//! closing at `c + OFFSET + 1` holds rsep's `(c - range, c]`. The marker's own window (reported
//! when the first event arrives) is left out. The stream ends with rsp-rs's own
//! `close_stream` sentinel, placed to report the window of the last multiple of the step.

use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::{GraphName, Literal, NamedNode, NamedOrBlankNode, Quad, Term};
use rsp_rs::RSPEngine;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const PROV: &str = "http://www.w3.org/ns/prov#generatedAtTime";

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() {
    if let Err(e) = run() {
        eprintln!("rsep-bench-rsprs: {e}");
        std::process::exit(1);
    }
}

fn epoch() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

fn field<'a>(spec: &'a Value, k: &str) -> Res<&'a Value> {
    spec.get(k).ok_or_else(|| format!("spec has no {k:?}").into())
}

fn text(spec: &Value, k: &str) -> Res<String> {
    Ok(field(spec, k)?.as_str().ok_or_else(|| format!("{k:?} is not a string"))?.to_string())
}

fn int(spec: &Value, k: &str) -> Res<i64> {
    field(spec, k)?.as_i64().ok_or_else(|| format!("{k:?} is not an integer").into())
}

fn run() -> Res<()> {
    let path = std::env::args().nth(1).ok_or("usage: rsep-bench-rsprs SPEC.json")?;
    let spec: Value = serde_json::from_reader(BufReader::new(File::open(&path)?))?;
    let (range, step) = (int(&spec, "range")?, int(&spec, "step")?);
    if range <= 0 || step <= 0 || range < step {
        // with range < step some times are in no window: the end below waits for the
        // sentinel's quad to be in one
        return Err("range and step must be positive, range at least step".into());
    }
    // j steps between the marker and the stream: more than a range, so no window holds both
    let j = (range + 2 * step + step - 1) / step;
    let offset = (j + 1) * step;
    let mark = offset + 1 - j * step; // = step + 1: never 0, which rsp-rs reads as "no t0 yet"
    let grid = offset + 1; // every window close is grid + k step (fed time)

    let mut engine = RSPEngine::new(text(&spec, "query")?);
    engine.initialize()?;
    let stream_iri = text(&spec, "stream")?;
    let stream = engine
        .get_stream(&stream_iri)
        .ok_or_else(|| format!("the query reads no stream {stream_iri}"))?;
    let defs = &engine.parsed_query().s2r;
    if defs.len() != 1 || defs[0].width != range || defs[0].slide != step {
        return Err(format!("the query must have one window [RANGE {range} STEP {step}]").into());
    }
    let window = engine.get_window(&defs[0].window_name).ok_or("rsp-rs made no window")?;
    let results = engine.start_processing();

    let ready = epoch();
    let t0 = Instant::now();
    let origin = Quad::new(
        NamedNode::new("urn:rsep:bench:origin")?,
        NamedNode::new("urn:rsep:bench:origin")?,
        Literal::new_simple_literal("origin"),
        GraphName::DefaultGraph,
    );
    stream.add_quads(vec![origin], mark)?;

    // the closes of the windows rsp-rs reports, in order (fed time): at an event e after
    // event p, the latest close c with p <= c < e (rsp-rs: close < e, not reported at p)
    let mut reported: Vec<i64> = Vec::new();
    let mut prev = mark;
    let report = |e: i64, prev: i64, out: &mut Vec<i64>| {
        let c = e - 1 - (e - 1 - grid).rem_euclid(step);
        if c >= prev {
            out.push(c);
        }
    };

    let parser = RdfParser::from_format(RdfFormat::TriG)
        .for_reader(BufReader::with_capacity(1 << 20, File::open(text(&spec, "trig")?)?));
    let mut times: HashMap<String, i64> = HashMap::new();
    let mut graph: Option<String> = None;
    let mut quads: Vec<Quad> = Vec::new();
    let mut events = 0u64;
    let mut last = i64::MIN;
    let mut flush = |graph: &Option<String>, quads: &mut Vec<Quad>, times: &mut HashMap<String, i64>,
                     prev: &mut i64, reported: &mut Vec<i64>| -> Res<()> {
        let Some(g) = graph else { return Ok(()) };
        let t = times.remove(g).ok_or_else(|| format!("event graph {g} has no generatedAtTime"))?;
        if t < last {
            return Err(format!("event at {t} after {last}: rsp-rs does not handle out-of-order").into());
        }
        last = t;
        let fed = t + offset;
        if fed > *prev {
            report(fed, *prev, reported);
            *prev = fed;
        }
        stream.add_quads(std::mem::take(quads), fed)?;
        events += 1;
        Ok(())
    };
    for q in parser {
        let q = q?;
        match &q.graph_name {
            GraphName::DefaultGraph => {
                if q.predicate.as_str() == PROV {
                    if let (NamedOrBlankNode::NamedNode(g), Term::Literal(l)) = (&q.subject, &q.object) {
                        times.insert(g.as_str().to_string(), l.value().parse()?);
                    }
                }
            }
            GraphName::NamedNode(n) => {
                if graph.as_deref() != Some(n.as_str()) {
                    flush(&graph, &mut quads, &mut times, &mut prev, &mut reported)?;
                    graph = Some(n.as_str().to_string());
                }
                // the window renames the graph to its own: the event's name is not data
                quads.push(Quad::new(q.subject, q.predicate, q.object, GraphName::DefaultGraph));
            }
            GraphName::BlankNode(_) => return Err("blank-node event graphs are not read".into()),
        }
    }
    flush(&graph, &mut quads, &mut times, &mut prev, &mut reported)?;
    drop(flush);
    if events == 0 {
        return Err("no events in the stream".into());
    }
    // the sentinel reports the window closing at the last multiple c of the step at or before
    // the last event (fed close c + grid - ... = floor((last - 0) / step) * step + offset + 1)
    let last_close = last.div_euclid(step) * step + offset + 1;
    let sentinel = (last_close + 1).max(prev + 1);
    report(sentinel, prev, &mut reported);
    engine.close_stream(&stream_iri, sentinel)?;
    let enqueue_s = t0.elapsed().as_secs_f64();

    // rsp-rs's window thread holds the window's lock for the whole of an event (the SPARQL
    // evaluation and the sending of its rows happen inside it): once the sentinel's quad is
    // in the window, every result is in the channel. (The channel itself never closes: the
    // window's callback holds the window, so waiting for its end would wait for ever.)
    loop {
        {
            let w = window.lock().map_err(|_| "rsp-rs's window thread panicked")?;
            if w.active_windows.values().any(|c| c.last_timestamp_changed >= sentinel) {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    // the marker's window is the first report; the rest are rsep's windows c = close - grid
    let closes: Vec<i64> = reported.iter().skip(1).copied().collect();
    let mut rows: BTreeMap<i64, Vec<Value>> = closes.iter().map(|c| (c - grid, Vec::new())).collect();
    let mut n_rows = 0u64;
    while let Ok(r) = results.try_recv() {
        if r.timestamp_from == mark {
            continue; // the marker's own window
        }
        // the window holding the row's window's newest quad: the first close after it
        let i = closes.partition_point(|&c| c <= r.timestamp_from);
        let c = *closes.get(i).ok_or_else(|| format!("a result at {} after the last window", r.timestamp_from))?;
        rows.entry(c - grid).or_default().push(Value::Object(parse_solution(&r.bindings)?));
        n_rows += 1;
    }
    let mut out = BufWriter::new(File::create(text(&spec, "matches")?)?);
    for (w, rs) in &rows {
        serde_json::to_writer(&mut out, &json!({"window": w, "rows": rs}))?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    drop(out);
    let run_s = t0.elapsed().as_secs_f64();
    let steady_end = epoch();
    let res = json!({
        "ready": ready, "run_s": run_s, "events": events, "steady_end": steady_end,
        "latency_ms": null, "self_peak_rss_kb": peak_rss_kb(),
        "stages": {"enqueue_s": enqueue_s, "drain_s": run_s - enqueue_s},
        "note": format!("rsp-rs 0.3.5: {} windows reported, {n_rows} rows; latency not measured \
                         (results are strings on a channel, no trigger time)", rows.len()),
        "finished": epoch(),
    });
    std::fs::write(text(&spec, "result")?, serde_json::to_vec(&res)?)?;
    Ok(())
}

/// This process's peak resident set (VmHWM), as the Python workers report theirs.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

// ---------------------------------------------------------------- rsp-rs's result rows
//
// rsp-rs hands each solution over as `format!("{:?}", solution)`: oxigraph's QuerySolution
// printed with Rust's derived Debug, e.g. `{Variable { name: "s" }: NamedNode(NamedNode {
// iri: "http://x" }), ...}`. Parsed back here into {variable: N-Triples term}, the shape the
// other workers write.

// Every variant's contents are read: Atom's and List's only through Debug, in the error
// message of a term this parser does not expect (the compiler does not count that as a use).
#[allow(dead_code)]
#[derive(Debug)]
enum D {
    Str(String),
    Atom(String),               // a number, or an identifier without arguments
    Tuple(String, Vec<D>),      // Name(a, b)
    Struct(String, Vec<(String, D)>), // Name { k: v }
    Map(Vec<(D, D)>),           // {k: v}
    List(Vec<D>),               // [a, b]
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn need(&mut self, c: u8) -> Res<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected {:?} at {} of rsp-rs's row", c as char, self.i).into())
        }
    }
    fn word(&mut self) -> String {
        self.ws();
        let a = self.i;
        while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || b"_.-+".contains(&self.s[self.i])) {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[a..self.i]).into_owned()
    }
    fn string(&mut self) -> Res<String> {
        self.need(b'"')?;
        let mut out = String::new();
        let rest = std::str::from_utf8(&self.s[self.i..])?;
        let mut it = rest.char_indices();
        while let Some((k, ch)) = it.next() {
            match ch {
                '"' => {
                    self.i += k + 1;
                    return Ok(out);
                }
                '\\' => match it.next().map(|x| x.1) {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('0') => out.push('\0'),
                    Some('u') => {
                        // \u{XXXX}
                        let mut hex = String::new();
                        for (_, h) in it.by_ref() {
                            match h {
                                '{' => {}
                                '}' => break,
                                _ => hex.push(h),
                            }
                        }
                        let v = u32::from_str_radix(&hex, 16)?;
                        out.push(char::from_u32(v).ok_or("bad \\u escape")?);
                    }
                    Some(c) => out.push(c), // \" \\ \'
                    None => break,
                },
                c => out.push(c),
            }
        }
        Err("unterminated string in rsp-rs's row".into())
    }
    fn value(&mut self) -> Res<D> {
        self.ws();
        match self.s.get(self.i) {
            Some(b'"') => Ok(D::Str(self.string()?)),
            Some(b'{') => {
                self.i += 1;
                let mut es = Vec::new();
                while !self.eat(b'}') {
                    let k = self.value()?;
                    self.need(b':')?;
                    es.push((k, self.value()?));
                    self.eat(b',');
                }
                Ok(D::Map(es))
            }
            Some(b'[') => {
                self.i += 1;
                let mut es = Vec::new();
                while !self.eat(b']') {
                    es.push(self.value()?);
                    self.eat(b',');
                }
                Ok(D::List(es))
            }
            _ => {
                let name = self.word();
                if name.is_empty() {
                    return Err(format!("unexpected text at {} of rsp-rs's row", self.i).into());
                }
                if self.eat(b'(') {
                    let mut es = Vec::new();
                    while !self.eat(b')') {
                        es.push(self.value()?);
                        self.eat(b',');
                    }
                    Ok(D::Tuple(name, es))
                } else if self.eat(b'{') {
                    let mut fs = Vec::new();
                    while !self.eat(b'}') {
                        let k = self.word();
                        self.need(b':')?;
                        fs.push((k, self.value()?));
                        self.eat(b',');
                    }
                    Ok(D::Struct(name, fs))
                } else {
                    Ok(D::Atom(name))
                }
            }
        }
    }
}

fn get<'a>(fs: &'a [(String, D)], k: &str) -> Res<&'a D> {
    fs.iter().find(|f| f.0 == k).map(|f| &f.1).ok_or_else(|| format!("no field {k}").into())
}

fn s(d: &D) -> Res<&str> {
    match d {
        D::Str(x) => Ok(x),
        _ => Err(format!("expected a string, got {d:?}").into()),
    }
}

fn iri(d: &D) -> Res<String> {
    match d {
        D::Struct(n, fs) if n == "NamedNode" => Ok(s(get(fs, "iri")?)?.to_string()),
        D::Tuple(n, a) if n == "NamedNode" && a.len() == 1 => iri(&a[0]),
        _ => Err(format!("expected a NamedNode, got {d:?}").into()),
    }
}

fn escape(v: &str) -> String {
    let mut o = String::with_capacity(v.len() + 2);
    for c in v.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            c => o.push(c),
        }
    }
    o
}

/// A Debug-printed oxigraph Term as N-Triples.
fn term(d: &D) -> Res<String> {
    match d {
        D::Tuple(n, a) if a.len() == 1 => match n.as_str() {
            "NamedNode" => Ok(format!("<{}>", iri(&a[0])?)),
            "BlankNode" => match &a[0] {
                D::Tuple(_, b) => match b.first() {
                    Some(D::Tuple(k, x)) if k == "Named" && x.len() == 1 => Ok(format!("_:{}", s(&x[0])?)),
                    Some(D::Struct(k, fs)) if k == "Anonymous" => {
                        // the id's text form is oxigraph's hex string
                        match get(fs, "str")? {
                            D::Tuple(_, x) if !x.is_empty() => Ok(format!("_:{}", s(&x[0])?)),
                            other => Ok(format!("_:{}", s(other)?)),
                        }
                    }
                    _ => Err(format!("unknown blank node {d:?}").into()),
                },
                _ => Err(format!("unknown blank node {d:?}").into()),
            },
            "Literal" => match &a[0] {
                D::Tuple(l, c) if l == "Literal" && c.len() == 1 => match &c[0] {
                    D::Tuple(k, v) if k == "String" && v.len() == 1 => Ok(format!("\"{}\"", escape(s(&v[0])?))),
                    D::Struct(k, fs) if k == "LanguageTaggedString" => Ok(format!(
                        "\"{}\"@{}", escape(s(get(fs, "value")?)?), s(get(fs, "language")?)?)),
                    D::Struct(k, fs) if k == "TypedLiteral" => Ok(format!(
                        "\"{}\"^^<{}>", escape(s(get(fs, "value")?)?), iri(get(fs, "datatype")?)?)),
                    _ => Err(format!("unknown literal {d:?}").into()),
                },
                _ => Err(format!("unknown literal {d:?}").into()),
            },
            _ => Err(format!("unknown term {d:?}").into()),
        },
        _ => Err(format!("unknown term {d:?}").into()),
    }
}

fn parse_solution(text: &str) -> Res<Map<String, Value>> {
    let mut p = P { s: text.as_bytes(), i: 0 };
    let D::Map(es) = p.value()? else {
        return Err(format!("rsp-rs's row is not a map: {text}").into());
    };
    let mut row = Map::new();
    for (k, v) in &es {
        let name = match k {
            D::Struct(n, fs) if n == "Variable" => s(get(fs, "name")?)?.to_string(),
            _ => return Err(format!("expected a Variable, got {k:?}").into()),
        };
        row.insert(name, Value::String(term(v)?));
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::sparql::QuerySolution;
    use oxigraph::model::Variable;

    #[test]
    fn debug_rows_parse_back() {
        let sol = QuerySolution::from((
            vec![Variable::new("s").unwrap(), Variable::new("o").unwrap(), Variable::new("n").unwrap(),
                 Variable::new("l").unwrap()],
            vec![
                Some(NamedNode::new("http://x/a").unwrap().into()),
                Some(Literal::new_simple_literal("va\"l\\ue").into()),
                Some(Literal::from(1.5).into()),
                Some(Literal::new_language_tagged_literal("hé", "en").unwrap().into()),
            ],
        ));
        let row = parse_solution(&format!("{sol:?}")).unwrap();
        assert_eq!(row["s"], "<http://x/a>");
        assert_eq!(row["o"], "\"va\\\"l\\\\ue\"");
        assert_eq!(row["n"], "\"1.5\"^^<http://www.w3.org/2001/XMLSchema#double>");
        assert_eq!(row["l"], "\"hé\"@en");
    }
}
