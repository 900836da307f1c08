//! A windowed `SELECT` of one triple pattern evaluated on ids: the time window's content at
//! each close, the pattern's solutions, R2S and the JSON lines written from ids.
//!
//! It computes what rsep's maintained path (rsep/windows/maintained.py) outputs for such a
//! query, under window-close reports: at every close c of the window's grid from the first
//! event's time to the last's, the window holds the events whose time t is in (c' - range,
//! c' - offset] (right-closed) or [c' - range, c' - offset) (left-closed), c' = c on the grid;
//! its rows are each live event's solutions in arrival order, a solution once per event
//! (an event's repeated triple is one solution). That order holds while no matching triple
//! is in two live events (the locality check of rsep/windows/incremental.py): when one is,
//! rsep answers from pyoxigraph's store, in its order, so this operator *refuses* the run,
//! as it does when a limit of the run would be crossed (the window's triples, an
//! evaluation's rows): the caller then runs today's path, which says what it always said.

use crate::dictionary::{TermId, Terms};
use crate::source::{Feed, Whole};
use crate::stream::Events;
use hashbrown::HashMap;
use std::collections::VecDeque;
use std::io::{self, Write};

/// How many live events hold each term rsep's locality check reads (a triple, or the terms
/// it counts), and how many such terms two live events hold: a conflict, where rsep answers
/// from its store and the window operators refuse the run.
pub struct Holders<K> {
    counts: HashMap<K, u32>,
    pub conflicts: u64,
}

impl<K> Default for Holders<K> {
    fn default() -> Self {
        Holders {
            counts: HashMap::new(),
            conflicts: 0,
        }
    }
}

impl<K: Copy + Eq + std::hash::Hash> Holders<K> {
    /// An event's terms come into the window.
    pub fn enter<'a>(&mut self, keys: impl IntoIterator<Item = &'a K>)
    where
        K: 'a,
    {
        for t in keys {
            let h = self.counts.entry(*t).or_insert(0);
            *h += 1;
            if *h == 2 {
                self.conflicts += 1;
            }
        }
    }

    /// An event's terms leave the window (each counted in by `enter`).
    pub fn leave<'a>(&mut self, keys: impl IntoIterator<Item = &'a K>)
    where
        K: 'a,
    {
        for t in keys {
            let h = self.counts.get_mut(t).expect("counted in");
            *h -= 1;
            if *h == 1 {
                self.conflicts -= 1;
            } else if *h == 0 {
                self.counts.remove(t);
            }
        }
    }
}

/// A position of the pattern: a term that must be there (its id; `None` when the stream
/// has no such term: nothing matches), or a variable (its number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Const(Option<TermId>),
    Var(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum R2s {
    RStream,
    IStream,
    DStream,
}

/// What the operator runs: the window (in timeline units), the report policy's options,
/// the pattern, the projection and the run's limits.
#[derive(Clone, Debug)]
pub struct Spec {
    pub range: i64,
    pub step: i64,
    pub offset: i64,
    pub origin: i64,
    pub right_closed: bool,
    pub non_empty: bool,
    pub r2s: R2s,
    pub pattern: [Slot; 3],
    /// The pattern as rsep's locality check reads it (rsep/windows/incremental.py's
    /// Pattern): only IRIs are constants there (`Some`), a literal or a repeated variable
    /// matches anything; the triples it matches are the ones counted for conflicts.
    pub loose: [Option<Option<TermId>>; 3],
    /// per output column: its name and the variable it reads (None: never bound)
    pub project: Vec<(String, Option<usize>)>,
    pub max_window_triples: u64,
    pub max_results: u64,
    /// `--format tsv` (rsep/runtime/sinks.py's): else jsonl
    pub tsv: bool,
}

/// Why the operator did not run the query to its end (nothing it wrote is to be kept).
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub String);

/// Run an operator, its panic made a refusal: a panic is a bug of the native path, not of
/// the input, and as a refusal it has today's path run the query (as on any refusal, what
/// was written is thrown away), where crossing into Python it stopped `rsep run` (exit 1).
pub fn unpanicked<T>(
    run: impl FnOnce() -> std::io::Result<Result<T, Refused>>,
) -> std::io::Result<Result<T, Refused>> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            Ok(Err(Refused(format!(
                "the native operator failed ({what}), a bug of rsep's native path"
            ))))
        }
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Done {
    pub evaluations: u64,
    pub rows: u64,
}

fn floor_div(a: i64, b: i64) -> i64 {
    a.div_euclid(b)
}

impl Spec {
    /// The first close after `after` (resolved.Window.next_close).
    fn next_close(&self, after: i64) -> i64 {
        self.origin + (floor_div(after - self.origin, self.step) + 1) * self.step
    }

    /// Times t inside the window at close c: floor <= t < ceil (operator.WindowOperator's).
    fn limits(&self, c: i64) -> (i64, i64) {
        let aligned = self.origin + floor_div(c - self.origin, self.step) * self.step;
        let (lo, hi) = (aligned - self.range, aligned - self.offset);
        if self.right_closed {
            (lo + 1, hi + 1)
        } else {
            (lo, hi)
        }
    }

    /// The event's solutions, each a matched triple, once each, in the event's order.
    fn solutions(&self, triples: &[[TermId; 3]], out: &mut Vec<[TermId; 3]>) {
        // variables are numbered from 0 in the pattern: three at most
        let mut first: [Option<TermId>; 3] = [None; 3];
        let mut seen: hashbrown::HashSet<[TermId; 3]> = hashbrown::HashSet::new();
        let many = triples.len() > 16;
        'next: for t in triples {
            first.fill(None);
            for (i, slot) in self.pattern.iter().enumerate() {
                match *slot {
                    Slot::Const(c) => {
                        if c != Some(t[i]) {
                            continue 'next;
                        }
                    }
                    Slot::Var(v) => {
                        // a repeated variable binds one term
                        if let Some(bound) = first[v] {
                            if bound != t[i] {
                                continue 'next;
                            }
                        }
                        first[v] = Some(t[i]);
                    }
                }
            }
            // (a large event's triples by a set: a scan of what it found would be quadratic)
            if if many {
                seen.insert(*t)
            } else {
                !out.contains(t)
            } {
                out.push(*t);
            }
        }
    }

    /// The value of variable `v` in a matched triple.
    fn value(&self, t: &[TermId; 3], v: usize) -> Option<TermId> {
        self.pattern
            .iter()
            .position(|s| *s == Slot::Var(v))
            .map(|i| t[i])
    }
}

/// Each term's N-Triples form as a JSON string (quoted, escaped as Python's json module
/// escapes with ensure_ascii=False), made once per term.
struct Encoded {
    cache: Vec<Option<Box<[u8]>>>, // by id
    tsv: bool,                     // the N-Triples form as it is, not a JSON string
    /// the feed's generation the cache is of (ids given to other terms since: made again)
    generation: u64,
}

impl Encoded {
    fn fresh(&mut self, generation: u64) {
        if generation != self.generation {
            self.cache.clear();
            self.generation = generation;
        }
    }

    fn get(&mut self, terms: &Terms, id: TermId) -> &[u8] {
        let i = id as usize;
        if i >= self.cache.len() {
            self.cache.resize(i + 1, None);
        }
        let tsv = self.tsv;
        self.cache[i].get_or_insert_with(|| {
            let text = terms.term(id).map(|t| t.to_string()).unwrap_or_default();
            if tsv {
                text.into_bytes().into_boxed_slice()
            } else {
                json_string(&text).into_boxed_slice()
            }
        })
    }

    /// A row's bindings appended to `out`: JSON members (`"name": "term", ...`), or with
    /// `tsv` each column's term after a tab (nothing for an unbound one).
    fn members(&mut self, terms: &Terms, names: &[Vec<u8>], key: &Key, out: &mut Vec<u8>) {
        if self.tsv {
            for v in key {
                out.push(b'\t');
                if let Some(id) = v {
                    out.extend_from_slice(self.get(terms, *id));
                }
            }
            return;
        }
        let mut first = true;
        for (name, v) in names.iter().zip(key) {
            if let Some(id) = v {
                if !first {
                    out.extend_from_slice(b", ");
                }
                first = false;
                out.extend_from_slice(name);
                out.extend_from_slice(self.get(terms, *id));
            }
        }
    }
}

/// `s` as a JSON string literal, as `json.JSONEncoder(ensure_ascii=False)` writes it.
pub fn json_string(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{08}' => out.extend_from_slice(b"\\b"),
            '\u{0c}' => out.extend_from_slice(b"\\f"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
    out
}

type Key = Vec<Option<TermId>>;

/// Run the query over the events, writing its JSON lines to `out`.
pub fn run(
    spec: &Spec,
    events: &Events,
    terms: &Terms,
    out: &mut impl Write,
) -> Result<Result<Done, Refused>, io::Error> {
    run_on(spec, &mut Whole { events, terms }, out)
}

/// [`run`] over events as a [`Feed`] gives them, each let go of once past the window (and,
/// under ISTREAM and DSTREAM, the window before).
pub fn run_on(
    spec: &Spec,
    feed: &mut impl Feed,
    out: &mut impl Write,
) -> Result<Result<Done, Refused>, io::Error> {
    let mut done = Done::default();
    macro_rules! has {
        ($k:expr) => {
            match feed.has($k) {
                Ok(b) => b,
                Err(r) => return Ok(Err(r)),
            }
        };
    }
    if !has!(0) {
        return Ok(Ok(done));
    }
    if spec.step <= 0 {
        return Ok(Err(Refused("a step that is not positive".into())));
    }
    // per event from lo, made as it enters: its solutions, the triples the locality check
    // counts (once each), its triples' count, whether it was inside a window, and (RSTREAM)
    // its rows' members (written at every close it is live at: RANGE / STEP times)
    struct Live {
        sols: Vec<[TermId; 3]>,
        loose: Vec<[TermId; 3]>,
        triples: u64,
        inside: bool,
        frag: Vec<u8>,
        ends: Vec<u32>,
    }
    let mut live: VecDeque<Live> = VecDeque::new();
    let mut seen: hashbrown::HashSet<[TermId; 3]> = hashbrown::HashSet::new();
    let loose_of = |triples: &[[TermId; 3]], seen: &mut hashbrown::HashSet<[TermId; 3]>| {
        let mut loose: Vec<[TermId; 3]> = Vec::new();
        // (a large event's by a set: a scan of what it found would be quadratic)
        let many = triples.len() > 16;
        seen.clear();
        for t in triples {
            let hit = spec
                .loose
                .iter()
                .zip(t)
                .all(|(c, x)| c.is_none_or(|c| c == Some(*x)));
            if hit
                && if many {
                    seen.insert(*t)
                } else {
                    !loose.contains(t)
                }
            {
                loose.push(*t);
            }
        }
        loose
    };
    // the JSON of each column's name, `"name": `
    let names: Vec<Vec<u8>> = spec
        .project
        .iter()
        .map(|(name, _)| {
            let mut b = json_string(name);
            b.extend_from_slice(b": ");
            b
        })
        .collect();
    let mut enc = Encoded {
        cache: Vec::new(),
        tsv: spec.tsv,
        generation: feed.generation(),
    };
    // TSV's header, before the first row: `time op ?v ...` (a column named as time or op
    // is marked too, as the sink's `"?" + c if c in cols` does)
    let mut header: Option<Vec<u8>> = spec.tsv.then(|| {
        let cols: Vec<&str> = spec.project.iter().map(|(n, _)| n.as_str()).collect();
        let mark = |c: &str| {
            if cols.contains(&c) {
                format!("?{c}")
            } else {
                c.to_owned()
            }
        };
        let mut row: Vec<String> = vec![mark("time"), mark("op")];
        row.extend(cols.iter().map(|c| format!("?{c}")));
        let mut b = row.join("\t").into_bytes();
        b.push(b'\n');
        b
    });
    let key = |t: &[TermId; 3]| -> Key {
        spec.project
            .iter()
            .map(|(_, v)| v.and_then(|v| spec.value(t, v)))
            .collect()
    };
    // the live events are lo..hi; how many live events hold each matching triple
    let (mut lo, mut hi) = (0usize, 0usize);
    let mut holders: Holders<[TermId; 3]> = Holders::default();
    let mut live_triples = 0u64;
    let mut previous: Vec<Key> = Vec::new();
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut scratch = Vec::new();
    let mut c = spec.next_close(feed.time(0) - 1);
    // rsep also brings the windows to the first close at or after the last event (the close
    // an arrival advances to): their content there counts for the triples' limit too; the
    // last event is known once the feed has no event after hi
    loop {
        let (floor, ceil) = spec.limits(c);
        while has!(hi) && feed.time(hi) < ceil {
            let t = feed.time(hi);
            let triples = feed.triples_of(hi);
            // (an event below the floor passes by without being inside)
            let inside = t >= floor;
            scratch.clear();
            spec.solutions(triples, &mut scratch);
            let mut l = Live {
                sols: scratch.clone(),
                loose: loose_of(triples, &mut seen),
                triples: triples.len() as u64,
                inside,
                frag: Vec::new(),
                ends: Vec::new(),
            };
            if inside {
                holders.enter(&l.loose);
                live_triples += l.triples;
            }
            if spec.r2s == R2s::RStream && inside {
                enc.fresh(feed.generation());
                for t in &l.sols {
                    enc.members(feed.terms(), &names, &key(t), &mut l.frag);
                    l.ends.push(l.frag.len() as u32);
                }
            }
            live.push_back(l);
            hi += 1;
        }
        // the last event's time, unless an event at c or later says it is c or later (an
        // event after hi may be before c: the window ends `offset` before its close)
        let mut j = hi;
        while has!(j) && feed.time(j) < c {
            j += 1;
        }
        let last = if has!(j) {
            None
        } else {
            Some(feed.time(j - 1))
        };
        if last.is_some_and(|last| c > spec.next_close(last - 1)) {
            break;
        }
        while lo < hi && feed.time(lo) < floor {
            let l = live.pop_front().expect("a live event");
            if l.inside {
                holders.leave(&l.loose);
                live_triples -= l.triples;
            }
            lo += 1;
        }
        if live_triples > spec.max_window_triples {
            return Ok(Err(Refused(
                "the window's triples go over the limit".into(),
            )));
        }
        if last.is_some_and(|last| c > last) {
            break;
        }
        if spec.non_empty && live_triples == 0 {
            c = spec.next_close(c);
            feed.release(lo);
            continue;
        }
        if holders.conflicts > 0 {
            return Ok(Err(Refused(
                "a matching triple is in two live events (rsep answers from its store then)".into(),
            )));
        }
        let rows: u64 = live.iter().map(|l| l.sols.len() as u64).sum();
        if rows > spec.max_results {
            return Ok(Err(Refused(
                "an evaluation's rows go over the limit".into(),
            )));
        }
        done.evaluations += 1;
        enc.fresh(feed.generation());
        let terms = feed.terms();
        let mut write = |key: &Key, delete: bool, line: &mut Vec<u8>| -> io::Result<()> {
            line.clear();
            if let Some(h) = header.take() {
                line.extend_from_slice(&h);
            }
            if spec.tsv {
                line.extend_from_slice(c.to_string().as_bytes());
                line.extend_from_slice(if delete { b"\tdelete" } else { b"\tinsert" });
                enc.members(terms, &names, key, line);
                line.push(b'\n');
            } else {
                line.extend_from_slice(b"{\"time\": ");
                line.extend_from_slice(c.to_string().as_bytes());
                line.extend_from_slice(b", \"bindings\": {");
                enc.members(terms, &names, key, line);
                line.extend_from_slice(if delete {
                    b"}, \"op\": \"delete\"}\n".as_slice()
                } else {
                    b"}}\n".as_slice()
                });
            }
            out.write_all(line)?;
            done.rows += 1;
            Ok(())
        };
        match spec.r2s {
            R2s::RStream => {
                let (head, tail): (String, &[u8]) = if spec.tsv {
                    (format!("{c}\tinsert"), b"\n")
                } else {
                    (format!("{{\"time\": {c}, \"bindings\": {{"), b"}}\n")
                };
                for l in &live {
                    let mut at = 0;
                    for &end in &l.ends {
                        if let Some(h) = header.take() {
                            out.write_all(&h)?;
                        }
                        out.write_all(head.as_bytes())?;
                        out.write_all(&l.frag[at..end as usize])?;
                        out.write_all(tail)?;
                        at = end as usize;
                    }
                    done.rows += l.ends.len() as u64;
                }
            }
            R2s::IStream | R2s::DStream => {
                let current: Vec<Key> = live.iter().flat_map(|l| l.sols.iter().map(key)).collect();
                if spec.r2s == R2s::IStream {
                    // R(t) - R(t'), bags, in R(t)'s order
                    let mut budget = counts(&current);
                    for (k, n) in counts(&previous) {
                        if let Some(b) = budget.get_mut(&k) {
                            *b -= n;
                        }
                    }
                    for k in &current {
                        let b = budget.get_mut(k).expect("counted");
                        if *b > 0 {
                            *b -= 1;
                            write(k, false, &mut line)?;
                        }
                    }
                } else {
                    // R(t') - R(t): each key of R(t') in its first place, its surplus in a run
                    let now = counts(&current);
                    let mut order: Vec<&Key> = Vec::new();
                    let mut had: HashMap<&Key, i64> = HashMap::new();
                    for k in &previous {
                        let e = had.entry(k).or_insert(0);
                        if *e == 0 {
                            order.push(k);
                        }
                        *e += 1;
                    }
                    for k in order {
                        let gone = had[k] - now.get(k).copied().unwrap_or(0);
                        for _ in 0..gone.max(0) {
                            write(k, true, &mut line)?;
                        }
                    }
                }
                previous = current;
            }
        }
        // the previous window's keys are of events from lo on
        feed.release(lo);
        c = spec.next_close(c);
    }
    Ok(Ok(done))
}

fn counts(keys: &[Key]) -> HashMap<Key, i64> {
    let mut m: HashMap<Key, i64> = HashMap::new();
    for k in keys {
        *m.entry(k.clone()).or_insert(0) += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_events;

    const T: &str = "<http://www.w3.org/ns/prov#generatedAtTime>";

    fn events(spec: &[(i64, &[&str])]) -> (Events, Terms) {
        let mut doc = String::new();
        for (i, (t, triples)) in spec.iter().enumerate() {
            doc += &format!("<http://g/{i}> {T} {t} .\n<http://g/{i}> {{ ");
            for tr in triples.iter() {
                doc += &format!("{tr} . ");
            }
            doc += "}\n";
        }
        let mut terms = Terms::new();
        let points = ["http://www.w3.org/ns/prov#generatedAtTime".to_owned()];
        let ev = read_events(doc.as_bytes(), &mut terms, &points, 1 << 26).unwrap();
        (ev, terms)
    }

    fn spec(range: i64, step: i64, r2s: R2s) -> Spec {
        Spec {
            range,
            step,
            offset: 0,
            origin: 0,
            right_closed: true,
            non_empty: false,
            r2s,
            pattern: [Slot::Var(0), Slot::Var(1), Slot::Var(2)],
            loose: [None; 3],
            project: vec![
                ("o".into(), Some(2)),
                ("p".into(), Some(1)),
                ("s".into(), Some(0)),
            ],
            max_window_triples: 10_000_000,
            max_results: 1_000_000,
            tsv: false,
        }
    }

    fn lines(s: &Spec, ev: &Events, terms: &Terms) -> Result<Vec<String>, Refused> {
        let mut out = Vec::new();
        run(s, ev, terms, &mut out).unwrap()?;
        Ok(String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect())
    }

    #[test]
    fn a_panic_is_a_refusal() {
        let r: std::io::Result<Result<Done, Refused>> =
            unpanicked(|| panic!("index {} out of range", 7));
        assert_eq!(
            r.unwrap(),
            Err(Refused(
                "the native operator failed (index 7 out of range), a bug of rsep's native path"
                    .to_owned()
            ))
        );
        let r: std::io::Result<Result<Done, Refused>> = unpanicked(|| panic!("static"));
        assert!(matches!(r, Ok(Err(Refused(ref m))) if m.contains("(static)")));
        let r = unpanicked(|| {
            Ok(Ok(Done {
                evaluations: 1,
                rows: 2,
            }))
        });
        assert_eq!(
            r.unwrap(),
            Ok(Done {
                evaluations: 1,
                rows: 2
            })
        );
    }

    #[test]
    fn rstream_rows_in_arrival_order_at_each_close() {
        let (ev, terms) = events(&[
            (0, &["<e:a> <e:p> \"x\"", "<e:a> <e:p> \"x\""]),
            (1, &["<e:b> <e:p> \"y\""]),
            (4, &["<e:c> <e:p> \"z\""]),
        ]);
        let got = lines(&spec(3, 2, R2s::RStream), &ev, &terms).unwrap();
        let row = |t: i64, s: &str, o: &str| {
            format!("{{\"time\": {t}, \"bindings\": {{\"o\": \"\\\"{o}\\\"\", \"p\": \"<e:p>\", \"s\": \"<e:{s}>\"}}}}")
        };
        // closes 0, 2, 4: (-3, 0] holds event 0; (-1, 2] events 0, 1; (1, 4] event 2
        assert_eq!(
            got,
            [
                row(0, "a", "x"),
                row(2, "a", "x"),
                row(2, "b", "y"),
                row(4, "c", "z")
            ]
        );
    }

    #[test]
    fn constants_and_repeated_variables() {
        let (ev, terms) = events(&[(
            0,
            &[
                "<e:a> <e:p> <e:a>",
                "<e:a> <e:p> <e:b>",
                "<e:a> <e:q> <e:a>",
            ],
        )]);
        let p = terms.get(&oxrdf::NamedNode::new_unchecked("e:p").into());
        let mut s = spec(1, 1, R2s::RStream);
        s.pattern = [Slot::Var(0), Slot::Const(p), Slot::Var(0)];
        s.project = vec![("x".into(), Some(0)), ("y".into(), None)];
        assert_eq!(
            lines(&s, &ev, &terms).unwrap(),
            ["{\"time\": 0, \"bindings\": {\"x\": \"<e:a>\"}}"]
        );
        s.pattern[1] = Slot::Const(None);
        assert!(lines(&s, &ev, &terms).unwrap().is_empty());
    }

    #[test]
    fn istream_and_dstream_are_bag_differences() {
        let (ev, terms) = events(&[(0, &["<e:a> <e:p> <e:x>"]), (2, &["<e:b> <e:p> <e:x>"])]);
        let mut s = spec(2, 1, R2s::IStream);
        s.project = vec![("o".into(), Some(2))];
        // closes 0, 1, 2: {a}, {a}, {b}: ?o is <e:x> throughout: one insert, at 0
        assert_eq!(
            lines(&s, &ev, &terms).unwrap(),
            ["{\"time\": 0, \"bindings\": {\"o\": \"<e:x>\"}}"]
        );
        s.r2s = R2s::DStream;
        s.project = vec![("s".into(), Some(0))];
        assert_eq!(
            lines(&s, &ev, &terms).unwrap(),
            ["{\"time\": 2, \"bindings\": {\"s\": \"<e:a>\"}, \"op\": \"delete\"}"]
        );
    }

    #[test]
    fn a_triple_in_two_live_events_is_refused() {
        let (ev, terms) = events(&[(0, &["<e:a> <e:p> <e:x>"]), (1, &["<e:a> <e:p> <e:x>"])]);
        assert!(lines(&spec(5, 1, R2s::RStream), &ev, &terms).is_err());
        // never both live: taken
        assert_eq!(
            lines(&spec(1, 1, R2s::RStream), &ev, &terms).unwrap().len(),
            2
        );
    }

    #[test]
    fn the_locality_check_counts_what_its_looser_pattern_matches() {
        // ?s ?p "x": the check reads the literal as anything, so <e:a> <e:p> <e:a> in two
        // live events is a conflict (rsep's store answers), though it is no solution
        let (ev, terms) = events(&[
            (0, &["<e:a> <e:p> <e:a>"]),
            (0, &["<e:a> <e:p> <e:a>"]),
            (0, &["<e:a> <e:p> \"x\""]),
        ]);
        let x = terms.get(&oxrdf::Literal::new_simple_literal("x").into());
        let mut s = spec(1, 1, R2s::RStream);
        s.pattern = [Slot::Var(0), Slot::Var(1), Slot::Const(x)];
        s.project = vec![("s".into(), Some(0))];
        s.loose = [None, None, Some(x)]; // (were the literal a constant there: no conflict)
        assert_eq!(lines(&s, &ev, &terms).unwrap().len(), 1);
        s.loose = [None, None, None];
        assert!(lines(&s, &ev, &terms).is_err());
    }

    #[test]
    fn tsv_rows_after_one_header() {
        let (ev, terms) = events(&[(0, &["<e:a> <e:p> \"x\""]), (2, &["<e:b> <e:p> <e:c>"])]);
        let mut s = spec(3, 2, R2s::RStream);
        s.tsv = true;
        s.project = vec![("s".into(), Some(0)), ("time".into(), None)];
        assert_eq!(
            lines(&s, &ev, &terms).unwrap(),
            [
                "time\top\t?s\t?time",
                "0\tinsert\t<e:a>\t",
                "2\tinsert\t<e:a>\t",
                "2\tinsert\t<e:b>\t"
            ]
            .map(str::to_owned)
            .map(|l| l.replacen("time\top", "?time\top", 1))
        );
        s.r2s = R2s::DStream;
        assert_eq!(lines(&s, &ev, &terms).unwrap().len(), 0); // (nothing leaves by time 2)
    }

    #[test]
    fn limits_refuse() {
        let (ev, terms) = events(&[(0, &["<e:a> <e:p> <e:x>", "<e:b> <e:p> <e:x>"])]);
        let mut s = spec(5, 1, R2s::RStream);
        s.max_results = 1;
        assert!(lines(&s, &ev, &terms).is_err());
        let mut s = spec(5, 1, R2s::RStream);
        s.max_window_triples = 1;
        assert!(lines(&s, &ev, &terms).is_err());
    }

    #[test]
    fn json_strings_as_python_writes_them() {
        assert_eq!(
            json_string("a\"b\\c\n\u{1}é"),
            b"\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\""
        );
    }
}
