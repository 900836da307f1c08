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
use oxrdf::TermRef;
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

    /// The event's solutions, each a matched triple, once each, in the event's order,
    /// appended to `out`.
    fn solutions(&self, triples: &[[TermId; 3]], out: &mut Vec<[TermId; 3]>) {
        let from = out.len();
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
                !out[from..].contains(t)
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
/// escapes with ensure_ascii=False), made once per term and kept in one buffer (an entry
/// an id: where its text is), not an allocation a term: most of a stream's terms are new.
struct Encoded {
    /// by id: (start in `text`, length), `NOT_MADE` for a term not made yet
    spans: Vec<(usize, usize)>,
    text: Vec<u8>,
    tsv: bool, // the N-Triples form as it is, not a JSON string
    /// the feed's generation the cache is of (ids given to other terms since: made again)
    generation: u64,
    /// a term's N-Triples form, before its JSON escaping
    scratch: Vec<u8>,
}

const NOT_MADE: (usize, usize) = (usize::MAX, 0);

impl Encoded {
    fn new(tsv: bool, generation: u64) -> Self {
        Self {
            spans: Vec::new(),
            text: Vec::new(),
            tsv,
            generation,
            scratch: Vec::new(),
        }
    }

    fn fresh(&mut self, generation: u64) {
        if generation != self.generation {
            self.spans.clear();
            self.text.clear();
            self.generation = generation;
        }
    }

    fn get(&mut self, terms: &Terms, id: TermId) -> &[u8] {
        let i = id as usize;
        if i >= self.spans.len() {
            self.spans.resize(i + 1, NOT_MADE);
        }
        if self.spans[i] == NOT_MADE {
            let start = self.text.len();
            if let Some(t) = terms.term(id) {
                term_text(t, self.tsv, &mut self.scratch, &mut self.text);
            } else if !self.tsv {
                self.text.extend_from_slice(b"\"\"");
            }
            self.spans[i] = (start, self.text.len() - start);
        }
        let (start, len) = self.spans[i];
        &self.text[start..start + len]
    }

    /// A row's bindings appended to `out`: JSON members (`"name": "term", ...`), or with
    /// `tsv` each column's term after a tab (nothing for an unbound one).
    fn members(
        &mut self,
        terms: &Terms,
        names: &[Vec<u8>],
        key: impl Iterator<Item = Option<TermId>>,
        out: &mut Vec<u8>,
    ) {
        if self.tsv {
            for v in key {
                out.push(b'\t');
                if let Some(id) = v {
                    out.extend_from_slice(self.get(terms, id));
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
                out.extend_from_slice(self.get(terms, id));
            }
        }
    }
}

/// Bytes N-Triples escapes in a literal's value (as oxrdf's `print_quoted_str`: the ASCII
/// controls, DEL, `"` and `\`; U+FFFE and U+FFFF are found by their lead byte 0xEF), and
/// bytes JSON escapes (`"`, `\`, the controls).
const NT_ESCAPED: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b < 0x20 || b == 0x7f || b == b'"' as usize || b == b'\\' as usize || b == 0xef;
        b += 1;
    }
    t
};
const JSON_ESCAPED: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b < 0x20 || b == b'"' as usize || b == b'\\' as usize;
        b += 1;
    }
    t
};

/// `term`'s N-Triples form (oxrdf's `Display`) appended to `out`, as a JSON string
/// ([`json_string`] of it) unless `tsv`; `scratch` holds the form before its escaping.
/// Written byte by byte, where `to_string` then `json_string` went by `fmt` a character.
pub fn term_text(term: TermRef<'_>, tsv: bool, scratch: &mut Vec<u8>, out: &mut Vec<u8>) {
    let nt = if tsv { &mut *out } else { &mut *scratch };
    if !tsv {
        nt.clear();
    }
    match term {
        TermRef::NamedNode(n) => {
            nt.push(b'<');
            nt.extend_from_slice(n.as_str().as_bytes());
            nt.push(b'>');
        }
        TermRef::BlankNode(b) => {
            nt.extend_from_slice(b"_:");
            nt.extend_from_slice(b.as_str().as_bytes());
        }
        TermRef::Literal(l) => {
            nt_quoted(l.value().as_bytes(), nt);
            if let Some(lang) = l.language() {
                nt.push(b'@');
                nt.extend_from_slice(lang.as_bytes());
            } else if l.datatype() != oxrdf::vocab::xsd::STRING {
                nt.extend_from_slice(b"^^<");
                nt.extend_from_slice(l.datatype().as_str().as_bytes());
                nt.push(b'>');
            }
        }
        #[allow(unreachable_patterns)]
        _ => nt.extend_from_slice(term.to_string().as_bytes()),
    }
    if !tsv {
        json_bytes(scratch, out);
    }
}

/// `v` quoted as oxrdf's `print_quoted_str` quotes a literal's value.
fn nt_quoted(v: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let mut run = 0;
    let mut i = 0;
    while i < v.len() {
        let b = v[i];
        if !NT_ESCAPED[b as usize] {
            i += 1;
            continue;
        }
        let esc: &[u8] = match b {
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0xef if v.get(i + 1) == Some(&0xbf) && matches!(v.get(i + 2), Some(0xbe | 0xbf)) => {
                if v[i + 2] == 0xbe {
                    b"\\uFFFE"
                } else {
                    b"\\uFFFF"
                }
            }
            0xef => {
                i += 1;
                continue;
            }
            _ => {
                out.extend_from_slice(&v[run..i]);
                out.extend_from_slice(format!("\\u{:04X}", b).as_bytes());
                i += 1;
                run = i;
                continue;
            }
        };
        out.extend_from_slice(&v[run..i]);
        out.extend_from_slice(esc);
        i += if b == 0xef { 3 } else { 1 };
        run = i;
    }
    out.extend_from_slice(&v[run..]);
    out.push(b'"');
}

/// `s` (UTF-8) as a JSON string literal appended to `out`, as [`json_string`] writes it.
fn json_bytes(s: &[u8], out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut run = 0;
    for (i, &b) in s.iter().enumerate() {
        if !JSON_ESCAPED[b as usize] {
            continue;
        }
        out.extend_from_slice(&s[run..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(format!("\\u{:04x}", b).as_bytes()),
        }
        run = i + 1;
    }
    out.extend_from_slice(&s[run..]);
    out.push(b'"');
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
    // its rows' members (written at every close it is live at: RANGE / STEP times). The
    // events' solutions, counted triples and rows are in pools of all the live events' (an
    // event's are the next `n` from where the one before it ended), not vectors of their own
    struct Live {
        sols: u32,
        loose: u32,
        triples: u64,
        inside: bool,
        rows: u32,
    }
    let mut live: VecDeque<Live> = VecDeque::new();
    let mut sols: Pool<[TermId; 3]> = Pool::default();
    let mut loose: Pool<[TermId; 3]> = Pool::default();
    // the rows' text, and each row's end in it
    let mut frag: Pool<u8> = Pool::default();
    let mut ends: Pool<usize> = Pool::default();
    let mut seen: hashbrown::HashSet<[TermId; 3]> = hashbrown::HashSet::new();
    let loose_of = |triples: &[[TermId; 3]],
                    seen: &mut hashbrown::HashSet<[TermId; 3]>,
                    loose: &mut Pool<[TermId; 3]>|
     -> u32 {
        let from = loose.items.len();
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
                    !loose.items[from..].contains(t)
                }
            {
                loose.items.push(*t);
            }
        }
        (loose.items.len() - from) as u32
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
    let mut enc = Encoded::new(spec.tsv, feed.generation());
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
    let values = |t: &[TermId; 3]| {
        let t = *t;
        spec.project
            .iter()
            .map(move |(_, v)| v.and_then(|v| spec.value(&t, v)))
    };
    let key = |t: &[TermId; 3]| -> Key { values(t).collect() };
    // the live events are lo..hi; how many live events hold each matching triple
    let (mut lo, mut hi) = (0usize, 0usize);
    let mut holders: Holders<[TermId; 3]> = Holders::default();
    let mut live_triples = 0u64;
    let mut previous: Vec<Key> = Vec::new();
    // the first live event at the evaluation `previous` is of (its rows refer to its terms)
    let mut previous_lo = 0usize;
    let mut line: Vec<u8> = Vec::with_capacity(256);
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
            let from = sols.items.len();
            spec.solutions(triples, &mut sols.items);
            let mut l = Live {
                sols: (sols.items.len() - from) as u32,
                loose: loose_of(triples, &mut seen, &mut loose),
                triples: triples.len() as u64,
                inside,
                rows: 0,
            };
            let n = loose.items.len();
            if inside {
                holders.enter(&loose.items[n - l.loose as usize..]);
                live_triples += l.triples;
            }
            if spec.r2s == R2s::RStream && inside {
                enc.fresh(feed.generation());
                for t in &sols.items[from..] {
                    enc.members(feed.terms(), &names, values(t), &mut frag.items);
                    ends.items.push(frag.base + frag.items.len());
                }
                l.rows = l.sols;
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
                holders.leave(loose.front(l.loose as usize));
                live_triples -= l.triples;
            }
            loose.pop_front(l.loose as usize);
            sols.pop_front(l.sols as usize);
            if l.rows > 0 {
                let end = ends.front(l.rows as usize)[l.rows as usize - 1];
                ends.pop_front(l.rows as usize);
                frag.pop_front(end - frag.base - frag.front);
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
            // (ISTREAM and DSTREAM compare the next evaluation with `previous`: the events
            // its rows are of are held, else a sweep may give their ids to other terms)
            feed.release(if spec.r2s == R2s::RStream {
                lo
            } else {
                previous_lo
            });
            continue;
        }
        if holders.conflicts > 0 {
            return Ok(Err(Refused(
                "a matching triple is in two live events (rsep answers from its store then)".into(),
            )));
        }
        let rows = sols.len() as u64;
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
                enc.members(terms, &names, key.iter().copied(), line);
                line.push(b'\n');
            } else {
                line.extend_from_slice(b"{\"time\": ");
                line.extend_from_slice(c.to_string().as_bytes());
                line.extend_from_slice(b", \"bindings\": {");
                enc.members(terms, &names, key.iter().copied(), line);
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
                // the rows into one buffer, the file written a buffer's worth at a time
                line.clear();
                let mut head = Vec::with_capacity(48);
                if spec.tsv {
                    head.extend_from_slice(itoa(c, &mut [0; 20]));
                    head.extend_from_slice(b"\tinsert");
                } else {
                    head.extend_from_slice(b"{\"time\": ");
                    head.extend_from_slice(itoa(c, &mut [0; 20]));
                    head.extend_from_slice(b", \"bindings\": {");
                }
                let tail: &[u8] = if spec.tsv { b"\n" } else { b"}}\n" };
                let text = frag.front(frag.len());
                let mut at = 0;
                // (an event outside the window at its entry has no rows in the pool)
                for &end in ends.front(ends.len()) {
                    let end = end - frag.base - frag.front;
                    if let Some(h) = header.take() {
                        line.extend_from_slice(&h);
                    }
                    line.extend_from_slice(&head);
                    line.extend_from_slice(&text[at..end]);
                    line.extend_from_slice(tail);
                    at = end;
                    if line.len() >= 1 << 16 {
                        out.write_all(&line)?;
                        line.clear();
                    }
                }
                out.write_all(&line)?;
                done.rows += ends.len() as u64;
            }
            R2s::IStream | R2s::DStream => {
                let current: Vec<Key> = sols.front(sols.len()).iter().map(key).collect();
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
        previous_lo = lo;
        feed.release(lo);
        c = spec.next_close(c);
    }
    Ok(Ok(done))
}

/// Items of the live events, in their order, an event's after the one's before it: pushed
/// at the end, let go of at the front; the room of the ones let go of is taken back when
/// they are half the pool (so each item is moved once at most, on average).
pub(crate) struct Pool<T> {
    pub(crate) items: Vec<T>,
    /// items before `front` are let go of; `base`: how many were dropped before `items[0]`
    pub(crate) front: usize,
    pub(crate) base: usize,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            front: 0,
            base: 0,
        }
    }
}

impl<T> Pool<T> {
    /// The items held.
    pub(crate) fn len(&self) -> usize {
        self.items.len() - self.front
    }

    /// The first `n` items held.
    pub(crate) fn front(&self, n: usize) -> &[T] {
        &self.items[self.front..self.front + n]
    }

    /// Let go of the first `n` items held.
    pub(crate) fn pop_front(&mut self, n: usize) {
        self.front += n;
        debug_assert!(self.front <= self.items.len());
        if self.front >= 4096 && 2 * self.front >= self.items.len() {
            self.items.drain(..self.front);
            self.base += self.front;
            self.front = 0;
        }
    }
}

/// `n`'s decimal digits, in `buf`.
pub(crate) fn itoa(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut v = n.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
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
    fn terms_written_byte_by_byte_as_their_display_then_json_string() {
        use oxrdf::{BlankNodeRef, LiteralRef, NamedNodeRef};
        let pieces = [
            "a", "\"", "\\", "\n", "\r", "\t", "\u{8}", "\u{c}", "\u{0}", "\u{1f}", "\u{7f}",
            "\u{fffe}", "\u{ffff}", "\u{fffd}", "\u{efbf}", "é", "😀", " ", "'", "/", "\u{80}",
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let (mut scratch, mut got) = (Vec::new(), Vec::new());
        for _ in 0..20_000 {
            let mut v = String::new();
            for _ in 0..x % 7 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v.push_str(pieces[(x % pieces.len() as u64) as usize]);
            }
            let dt = NamedNodeRef::new_unchecked("http://e/d\u{e9}t");
            let terms: [TermRef<'_>; 6] = [
                LiteralRef::new_simple_literal(&v).into(),
                LiteralRef::new_language_tagged_literal_unchecked(&v, "en-gb").into(),
                LiteralRef::new_typed_literal(&v, dt).into(),
                LiteralRef::new_typed_literal(&v, oxrdf::vocab::xsd::STRING).into(),
                NamedNodeRef::new_unchecked("http://e/x\u{e9}?a=1#f").into(),
                BlankNodeRef::new_unchecked("b0").into(),
            ];
            for t in terms {
                for tsv in [false, true] {
                    got.clear();
                    term_text(t, tsv, &mut scratch, &mut got);
                    let want = if tsv {
                        t.to_string().into_bytes()
                    } else {
                        json_string(&t.to_string())
                    };
                    assert_eq!(got, want, "{t:?}");
                }
            }
        }
        assert_eq!(itoa(0, &mut [0; 20]), b"0");
        assert_eq!(itoa(-1205, &mut [0; 20]), b"-1205");
        assert_eq!(
            itoa(i64::MIN, &mut [0; 20]),
            i64::MIN.to_string().as_bytes()
        );
    }

    #[test]
    fn json_strings_as_python_writes_them() {
        assert_eq!(
            json_string("a\"b\\c\n\u{1}é"),
            b"\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\""
        );
    }
}
