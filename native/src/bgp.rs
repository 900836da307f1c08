//! A windowed `SELECT` whose WHERE clause is one window block: a basic graph pattern of one
//! or more triple patterns joined on shared variables, FILTERs comparing a variable with a
//! number, and optionally GROUP BY with COUNT, COUNT(DISTINCT), MIN, MAX, SUM, AVG, SAMPLE
//! and GROUP_CONCAT; evaluated on ids.
//!
//! It computes what rsep's maintained path (rsep/windows/maintained.py) outputs for such a
//! query while rsep's locality check holds (no join term of the block in two live events,
//! rsep/windows/incremental.py): the window's solutions are then the union of each live
//! event's own solutions (the BGP over the event's triples, once each), in arrival order;
//! groups come out in the order of their earliest live solution (rsep/windows/groups.py).
//! The operator evaluates the BGP of each event once, and per evaluation reads the live
//! events' solutions again (no incremental maintenance).
//!
//! It *refuses* (the caller runs today's path) whatever it cannot promise to write as rsep
//! does: the locality check failing (rsep answers from pyoxigraph's store then), a limit of
//! the run crossed, an event with two solutions of a block of several patterns (their order
//! is the compiled matcher's), a value a FILTER or MIN / MAX reads whose comparison it does
//! not decide exactly (xsd:float, derived integer types, ill-typed numbers, a decimal
//! against a double, `!=` against a non-number), MIN / MAX over values of mixed datatypes,
//! NaN, or equal values of different terms, and a SUM / AVG / SAMPLE / GROUP_CONCAT
//! reading a value rsep's mirror of pyoxigraph does not read either (rsep.sparql.aggregates:
//! it asks pyoxigraph then), an xsd:float, or an overflow. SUM and AVG fold as oxigraph's
//! accumulators do, with oxsdatatypes' own arithmetic, in arrival order (today's path folds
//! a group's values in that order); SAMPLE is the group's first value in arrival order, as
//! today's path takes it.

use crate::dictionary::{TermId, Terms};
use crate::select::{json_string, Done, Holders, Pool, R2s, Refused, Slot};
use crate::source::{Feed, Whole};
use crate::stream::Events;
use hashbrown::{HashMap, HashSet};
use oxrdf::vocab::xsd;
use oxrdf::{Literal, LiteralRef, Term, TermRef};
use oxsdatatypes::{Decimal, Double, Integer};
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::io::{self, Write};
use std::str::FromStr;

// (a child of this module, where the Makefile's list of sources sees it)
#[path = "groups.rs"]
mod groups;

/// A pattern as rsep's locality check reads it (incremental.Pattern): per position an IRI
/// that must be there (`Some`; `Some(None)`: one the stream does not have) or anything, and
/// the positions whose terms it counts (none: the whole triple).
#[derive(Clone, Debug)]
pub struct Check {
    pub consts: [Option<Option<TermId>>; 3],
    pub tracked: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Op {
    pub fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "=" => Op::Eq,
            "!=" => Op::Ne,
            _ => return None,
        })
    }

    /// Whether the comparison holds of two values ordered so (`None`: unordered).
    pub fn holds(self, o: Option<Ordering>) -> bool {
        match (self, o) {
            (Op::Ne, None) => true, // (NaN: `!=` is not `=`)
            (_, None) => false,
            (Op::Lt, Some(o)) => o == Ordering::Less,
            (Op::Le, Some(o)) => o != Ordering::Greater,
            (Op::Gt, Some(o)) => o == Ordering::Greater,
            (Op::Ge, Some(o)) => o != Ordering::Less,
            (Op::Eq, Some(o)) => o == Ordering::Equal,
            (Op::Ne, Some(o)) => o != Ordering::Equal,
        }
    }
}

/// A FILTER's numeric constant: its exact value when it is an xsd:integer or xsd:decimal,
/// and its value as a double when that is exact (an xsd:double, or an integer or decimal a
/// double holds exactly: SPARQL promotes it to a double against a double).
#[derive(Clone, Copy, Debug)]
pub struct Constant {
    pub exact: Option<Decimal>,
    pub double: Option<f64>,
}

/// `?var op constant`.
#[derive(Clone, Copy, Debug)]
pub struct Cond {
    pub var: usize,
    pub op: Op,
    pub constant: Constant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggKind {
    Count,
    CountDistinct,
    Min,
    Max,
    Sum,
    Avg,
    Sample,
    GroupConcat,
    /// GROUP_CONCAT(STR(?v)): IRIs' and literals' text, whatever their datatype
    GroupConcatStr,
}

#[derive(Clone, Debug)]
pub struct Agg {
    pub kind: AggKind,
    pub var: Option<usize>, // None: COUNT(*)
    pub separator: String,  // GROUP_CONCAT's
}

/// GROUP BY: the key variables (none and `implicit`: aggregates without GROUP BY, one
/// group even when empty) and the aggregates.
#[derive(Clone, Debug)]
pub struct Grouping {
    pub keys: Vec<usize>,
    pub aggs: Vec<Agg>,
    pub implicit: bool,
}

/// An output column: a variable (None: never bound) or an aggregate.
#[derive(Clone, Copy, Debug)]
pub enum Col {
    Var(Option<usize>),
    Agg(usize),
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub range: i64,
    pub step: i64,
    pub offset: i64,
    pub origin: i64,
    pub right_closed: bool,
    pub non_empty: bool,
    pub r2s: R2s,
    pub patterns: Vec<[Slot; 3]>,
    pub vars: usize,
    pub checks: Vec<Check>,
    pub filters: Vec<Cond>,
    pub group: Option<Grouping>,
    pub project: Vec<(String, Col)>,
    pub max_window_triples: u64,
    pub max_results: u64,
    pub tsv: bool,
}

/// A term's value as a FILTER or MIN / MAX reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Val {
    Int(i64),
    Dec(Decimal),
    Dbl(f64),
    /// a number whose comparisons this operator does not decide exactly
    Unsure,
    /// a string: an xsd:string or a language-tagged string
    Text,
    /// an IRI or a blank node
    Node,
    /// no number: a boolean, a date...
    Other,
}

const TWO_53: i64 = 1 << 53;

pub(crate) fn value_of(t: Option<TermRef<'_>>) -> Val {
    let Some(TermRef::Literal(l)) = t else {
        return Val::Node;
    };
    literal_value(l)
}

fn literal_value(l: LiteralRef<'_>) -> Val {
    let (dt, v) = (l.datatype(), l.value());
    if dt == xsd::INTEGER {
        Integer::from_str(v).map_or(Val::Unsure, |i| Val::Int(i64::from(i)))
    } else if dt == xsd::DECIMAL {
        Decimal::from_str(v).map_or(Val::Unsure, Val::Dec)
    } else if dt == xsd::DOUBLE {
        Double::from_str(v).map_or(Val::Unsure, |d| Val::Dbl(f64::from(d)))
    } else if dt == xsd::FLOAT
        || dt.as_str().starts_with("http://www.w3.org/2001/XMLSchema#")
            && is_derived_number(dt.as_str())
    {
        Val::Unsure
    } else if dt == xsd::STRING || l.language().is_some() {
        Val::Text
    } else if dt.as_str().starts_with("http://www.w3.org/2001/XMLSchema#") {
        Val::Other
    } else {
        // a datatype of its own: an error against a number either way, but not proven
        Val::Unsure
    }
}

fn is_derived_number(dt: &str) -> bool {
    let local = &dt["http://www.w3.org/2001/XMLSchema#".len()..];
    matches!(
        local,
        "long"
            | "int"
            | "short"
            | "byte"
            | "nonNegativeInteger"
            | "nonPositiveInteger"
            | "negativeInteger"
            | "positiveInteger"
            | "unsignedLong"
            | "unsignedInt"
            | "unsignedShort"
            | "unsignedByte"
    )
}

/// `value op constant`: Some(verdict), or None when not decided exactly here.
pub(crate) fn compare(v: Val, op: Op, c: &Constant) -> Option<bool> {
    let ord = match v {
        Val::Other | Val::Text | Val::Node => return if op == Op::Ne { None } else { Some(false) },
        Val::Unsure => return None,
        Val::Dbl(x) => x.partial_cmp(&c.double?),
        Val::Int(i) => match c.exact {
            Some(e) => Some(Decimal::from(i).cmp(&e)),
            None if (-TWO_53..=TWO_53).contains(&i) => (i as f64).partial_cmp(&c.double?),
            None => return None,
        },
        Val::Dec(d) => Some(d.cmp(&c.exact?)),
    };
    Some(op.holds(ord))
}

/// The order of two values of MIN / MAX, None when not decided here (other datatypes).
fn order(a: Val, b: Val) -> Option<Ordering> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(&y)),
        (Val::Dec(x), Val::Dec(y)) => Some(x.cmp(&y)),
        (Val::Dbl(x), Val::Dbl(y)) => x.partial_cmp(&y),
        _ => None,
    }
}

/// An output term: a term's id, or an aggregate's value not among the stream's terms
/// (`NEW_BASE + its index` among the writer's `made`).
type Out = u64;
const NEW_BASE: u64 = 1 << 32;
pub(crate) type Key = Vec<Option<Out>>;
/// The fewest aggregate values a writer holds before it drops those no row needs: as
/// many as the dictionary's sweep waits for (rsep/stream/native.py's `SWEEP_TERMS`).
const COMPACT_MIN: usize = 65_536;

pub(crate) struct Writer {
    /// the dictionary holds every term of the stream (read whole): an aggregate's value
    /// is the stream's own term when it has one; read in parts, the dictionary holds some
    /// of them for a while, so an aggregate's value is always a term of the writer's own,
    /// the same term the same `Out` in every evaluation
    lookup: bool,
    cache: HashMap<Out, Box<[u8]>>,
    counts: HashMap<u64, Out>,
    made: Vec<Term>,
    made_ids: HashMap<Term, Out>,
    /// `made`'s length at which [`Writer::compact`] next drops the values no kept row holds
    compact_at: usize,
    tsv: bool,
    names: Vec<Vec<u8>>,
    header: Option<Vec<u8>>,
}

impl Writer {
    /// The writer of a query's rows: its columns' names, and TSV's header before the first
    /// row; `lookup` when the dictionary holds every term of the stream (see `lookup`).
    pub(crate) fn new(spec: &Spec, lookup: bool) -> Writer {
        let names: Vec<Vec<u8>> = spec
            .project
            .iter()
            .map(|(name, _)| {
                let mut b = json_string(name);
                b.extend_from_slice(b": ");
                b
            })
            .collect();
        let header = spec.tsv.then(|| {
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
        Writer {
            lookup,
            cache: HashMap::new(),
            counts: HashMap::new(),
            made: Vec::new(),
            made_ids: HashMap::new(),
            compact_at: COMPACT_MIN,
            tsv: spec.tsv,
            names,
            header,
        }
    }

    /// Ids given to other terms since (a sweep): the terms' forms made again.
    /// The made values are dropped at the next [`Writer::compact`] too, with the
    /// dictionary's sweep (which the tests make constant).
    pub(crate) fn fresh(&mut self) {
        self.cache.retain(|&o, _| o >= NEW_BASE);
        self.compact_at = 0;
    }

    /// Drops the aggregate values that none of `keep` (the rows the next evaluation is
    /// compared with) holds, once `made` has doubled since the last time or the dictionary
    /// was swept, and renumbers
    /// `keep`'s. Without it a run over an unbounded stream of distinct sums would keep
    /// every value it ever wrote; with it the writer holds about twice the values of one
    /// evaluation. The same term keeps getting one `Out` (`made_ids` is rebuilt from the
    /// kept values), which IStream and DStream's comparison of rows relies on.
    pub(crate) fn compact(&mut self, keep: &mut [Key]) {
        if self.made.len() < self.compact_at {
            return;
        }
        let mut renumbered: HashMap<Out, Out> = HashMap::new();
        let mut made: Vec<Term> = Vec::new();
        for o in keep.iter_mut().flat_map(|k| k.iter_mut()).flatten() {
            if *o < NEW_BASE {
                continue;
            }
            *o = *renumbered.entry(*o).or_insert_with(|| {
                made.push(self.made[(*o - NEW_BASE) as usize].clone());
                NEW_BASE + (made.len() - 1) as u64
            });
        }
        self.counts.retain(|_, o| {
            if *o < NEW_BASE {
                return true;
            }
            match renumbered.get(o) {
                Some(&n) => {
                    *o = n;
                    true
                }
                None => false,
            }
        });
        // the dropped values' texts, and the kept ones' under their old numbers
        self.cache.retain(|&o, _| o < NEW_BASE);
        self.made_ids = made
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), NEW_BASE + i as u64))
            .collect();
        self.made = made;
        self.compact_at = (2 * self.made.len()).max(COMPACT_MIN);
    }

    /// COUNT's value (cached: every group of every evaluation has one).
    fn count(&mut self, terms: &Terms, n: u64) -> Out {
        if let Some(&o) = self.counts.get(&n) {
            return o;
        }
        let o = self.intern(
            terms,
            Literal::new_typed_literal(n.to_string(), xsd::INTEGER).into(),
        );
        self.counts.insert(n, o);
        o
    }

    /// An aggregate's value: the stream's own term when it has it (so that rows compare as
    /// their terms do, for IStream and DStream), else a term of its own.
    fn intern(&mut self, terms: &Terms, t: Term) -> Out {
        if let Some(id) = terms.get(&t).filter(|_| self.lookup) {
            return u64::from(id);
        }
        if let Some(&o) = self.made_ids.get(&t) {
            return o;
        }
        let o = NEW_BASE + self.made.len() as u64;
        self.made.push(t.clone());
        self.made_ids.insert(t, o);
        o
    }

    fn get(&mut self, terms: &Terms, o: Out) -> &[u8] {
        let (tsv, made) = (self.tsv, &self.made);
        self.cache.entry(o).or_insert_with(|| {
            let text = if o >= NEW_BASE {
                made[(o - NEW_BASE) as usize].to_string()
            } else {
                terms
                    .term(o as TermId)
                    .map(|t| t.to_string())
                    .unwrap_or_default()
            };
            if tsv {
                text.into_bytes().into_boxed_slice()
            } else {
                json_string(&text).into_boxed_slice()
            }
        })
    }

    fn row(
        &mut self,
        terms: &Terms,
        c: i64,
        key: &Key,
        delete: bool,
        out: &mut impl Write,
    ) -> io::Result<()> {
        let mut line = Vec::with_capacity(128);
        if let Some(h) = self.header.take() {
            line.extend_from_slice(&h);
        }
        if self.tsv {
            line.extend_from_slice(c.to_string().as_bytes());
            line.extend_from_slice(if delete { b"\tdelete" } else { b"\tinsert" });
            for v in key {
                line.push(b'\t');
                if let Some(o) = v {
                    let b = self.get(terms, *o).to_vec();
                    line.extend_from_slice(&b);
                }
            }
            line.push(b'\n');
        } else {
            line.extend_from_slice(b"{\"time\": ");
            line.extend_from_slice(c.to_string().as_bytes());
            line.extend_from_slice(b", \"bindings\": {");
            let mut first = true;
            for (i, v) in key.iter().enumerate() {
                if let Some(o) = v {
                    if !first {
                        line.extend_from_slice(b", ");
                    }
                    first = false;
                    line.extend_from_slice(&self.names[i]);
                    let b = self.get(terms, *o).to_vec();
                    line.extend_from_slice(&b);
                }
            }
            line.extend_from_slice(if delete {
                b"}, \"op\": \"delete\"}\n".as_slice()
            } else {
                b"}}\n".as_slice()
            });
        }
        out.write_all(&line)
    }
}

impl Spec {
    fn next_close(&self, after: i64) -> i64 {
        self.origin + ((after - self.origin).div_euclid(self.step) + 1) * self.step
    }

    fn limits(&self, c: i64) -> (i64, i64) {
        let aligned = self.origin + (c - self.origin).div_euclid(self.step) * self.step;
        let (lo, hi) = (aligned - self.range, aligned - self.offset);
        if self.right_closed {
            (lo + 1, hi + 1)
        } else {
            (lo, hi)
        }
    }

    /// The BGP's solutions over one event's triples (each a binding of every variable),
    /// distinct, in the order of a nested loop over the patterns in the event's order.
    pub(crate) fn solutions(&self, triples: &[[TermId; 3]], out: &mut Vec<Vec<TermId>>) {
        let mut flat = Vec::new();
        let n = self.solutions_into(triples, &mut Scratch::default(), &mut flat);
        let w = self.vars;
        out.extend((0..n).map(|i| flat[i * w..(i + 1) * w].to_vec()));
    }

    /// [`Spec::solutions`] appended to `out` flat (`vars` ids a solution), with `sc`'s
    /// buffers (kept from event to event: no allocation an event); how many.
    pub(crate) fn solutions_into(
        &self,
        triples: &[[TermId; 3]],
        sc: &mut Scratch,
        out: &mut Vec<TermId>,
    ) -> usize {
        sc.distinct.clear();
        // (a large event's by a set: a scan of what it found would be quadratic)
        if triples.len() > 16 {
            sc.seen.clear();
            for t in triples {
                if sc.seen.insert(*t) {
                    sc.distinct.push(*t);
                }
            }
        } else {
            for t in triples {
                if !sc.distinct.contains(t) {
                    sc.distinct.push(*t);
                }
            }
        }
        sc.binding.clear();
        sc.binding.resize(self.vars, None);
        sc.found.clear();
        let distinct = std::mem::take(&mut sc.distinct);
        let mut found = Found {
            from: out.len(),
            n: 0,
            set: &mut sc.found,
        };
        self.extend(0, &distinct, &mut sc.binding, &mut found, out);
        let n = found.n;
        sc.distinct = distinct;
        n
    }

    fn extend(
        &self,
        p: usize,
        triples: &[[TermId; 3]],
        binding: &mut Vec<Option<TermId>>,
        found: &mut Found<'_>,
        out: &mut Vec<TermId>,
    ) {
        if p == self.patterns.len() {
            let w = self.vars;
            let at = out.len();
            out.extend(binding.iter().map(|b| b.unwrap_or(0)));
            let sol = &out[at..];
            // distinct: by a scan of the event's solutions while few, then by a set
            let new = if found.n < 16 {
                !out[found.from..at].chunks_exact(w.max(1)).any(|s| s == sol)
                    && (w > 0 || found.n == 0)
            } else {
                if found.set.is_empty() {
                    for s in out[found.from..at].chunks_exact(w.max(1)) {
                        found.set.insert(s.to_vec());
                    }
                }
                found.set.insert(sol.to_vec())
            };
            if new {
                found.n += 1;
            } else {
                out.truncate(at);
            }
            return;
        }
        let pattern = &self.patterns[p];
        'next: for t in triples {
            let mut set: [Option<usize>; 3] = [None; 3];
            for (i, slot) in pattern.iter().enumerate() {
                match *slot {
                    Slot::Const(c) => {
                        if c != Some(t[i]) {
                            for v in set.iter().flatten() {
                                binding[*v] = None;
                            }
                            continue 'next;
                        }
                    }
                    Slot::Var(v) => match binding[v] {
                        Some(b) if b != t[i] => {
                            for v in set.iter().flatten() {
                                binding[*v] = None;
                            }
                            continue 'next;
                        }
                        Some(_) => {}
                        None => {
                            binding[v] = Some(t[i]);
                            set[i] = Some(v);
                        }
                    },
                }
            }
            self.extend(p + 1, triples, binding, found, out);
            for v in set.iter().flatten() {
                binding[*v] = None;
            }
        }
    }

    /// The terms of an event the locality check counts, once each: (0, a term) or (1, a
    /// whole triple).
    pub(crate) fn check_terms(
        &self,
        triples: &[[TermId; 3]],
        out: &mut HashSet<(u8, [TermId; 3])>,
    ) {
        for t in triples {
            for ch in &self.checks {
                if !ch
                    .consts
                    .iter()
                    .zip(t)
                    .all(|(c, x)| c.is_none_or(|c| c == Some(*x)))
                {
                    continue;
                }
                if ch.tracked.is_empty() {
                    out.insert((1, *t));
                }
                for &pos in &ch.tracked {
                    out.insert((0, [t[pos], 0, 0]));
                }
            }
        }
    }
}

/// Buffers of [`Spec::solutions_into`], kept from one event to the next.
#[derive(Default)]
pub(crate) struct Scratch {
    distinct: Vec<[TermId; 3]>,
    seen: HashSet<[TermId; 3]>,
    binding: Vec<Option<TermId>>,
    found: HashSet<Vec<TermId>>,
}

/// An event's solutions found so far: from `from` in the output, `n` of them (in `set`
/// too once over 16).
struct Found<'a> {
    from: usize,
    n: usize,
    set: &'a mut HashSet<Vec<TermId>>,
}

/// Run the query over the events, writing its rows to `out`.
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
    let refuse = |why: &str| Ok(Err(Refused(why.to_owned())));
    // each term's value, by id, while the ids keep their terms
    let mut vals: HashMap<TermId, Val> = HashMap::new();
    let mut generation = feed.generation();
    fn val_of(vals: &mut HashMap<TermId, Val>, terms: &Terms, id: TermId) -> Val {
        *vals.entry(id).or_insert_with(|| value_of(terms.term(id)))
    }
    let w = spec.vars.max(1);
    // per event from lo, made as it enters: the solutions the FILTERs keep, flattened,
    // whether one is not decided here (a FILTER's value, two solutions of several
    // patterns), the terms the locality check counts, its triples' count, whether it was
    // inside a window
    // (the solutions and the terms counted are in pools of all the live events', an
    // event's the next `sols` and `checked` from where the one before it ended)
    struct Live {
        sols: u32,
        undecided: bool,
        checked: u32,
        triples: u64,
        inside: bool,
    }
    let mut live: VecDeque<Live> = VecDeque::new();
    let mut sols: Pool<TermId> = Pool::default();
    let mut checked: Pool<(u8, [TermId; 3])> = Pool::default();
    let mut scratch = Vec::new();
    let mut sc = Scratch::default();
    let mut set = HashSet::new();
    let mut wr = Writer::new(spec, feed.whole());
    let (mut lo, mut hi) = (0usize, 0usize);
    // GROUP BY's groups, kept as solutions enter and leave the window (groups.rs): the
    // inside events before `added` have entered them, their solutions before `add_at` (a
    // place in `sols`). An event enters them at the close it is first inside, after that
    // close's expiry, so that the groups at every close are the window's and nothing else.
    let mut groups = spec.group.as_ref().map(groups::Groups::new);
    let (mut added, mut add_at) = (0usize, 0u64);
    // the inside events undecided, and the inside solutions (a check of every live event at
    // each close would cost what the window holds)
    let (mut undecided, mut inside_sols) = (0usize, 0u64);
    let mut holders: Holders<(u8, [TermId; 3])> = Holders::default();
    let mut live_triples = 0u64;
    let mut previous: Vec<Key> = Vec::new();
    // the first live event at the evaluation `previous` is of (its rows refer to its terms)
    let mut previous_lo = 0usize;
    // RSEP_NATIVE_EVAL_TIMES=FILE: each evaluation's time written to FILE (nanoseconds of
    // the wall clock and of this thread's CPU, a line each), from its window's events all
    // read to its rows written: the latency an evaluation adds once its last event came
    // (the events' reading is not in it); the CPU time leaves out the waits of a machine
    // shared with other work
    let timed = std::env::var_os("RSEP_NATIVE_EVAL_TIMES");
    let mut times: Vec<(u128, u64)> = Vec::new();
    let mut t0 = None;
    let mut c = spec.next_close(feed.time(0) - 1);
    loop {
        let (floor, ceil) = spec.limits(c);
        while has!(hi) && feed.time(hi) < ceil {
            if feed.generation() != generation {
                generation = feed.generation();
                vals.clear();
                wr.fresh();
            }
            let (terms, triples) = (feed.terms(), feed.triples_of(hi));
            scratch.clear();
            let found = spec.solutions_into(triples, &mut sc, &mut scratch);
            let from = sols.items.len();
            let mut l = Live {
                sols: 0,
                undecided: false,
                checked: 0,
                triples: triples.len() as u64,
                inside: feed.time(hi) >= floor,
            };
            let mut kept = 0;
            'sol: for i in 0..found {
                let s = &scratch[i * spec.vars..(i + 1) * spec.vars];
                for f in &spec.filters {
                    match compare(val_of(&mut vals, terms, s[f.var]), f.op, &f.constant) {
                        Some(true) => {}
                        Some(false) => continue 'sol,
                        None => {
                            l.undecided = true;
                            continue 'sol;
                        }
                    }
                }
                kept += 1;
                if spec.vars == 0 {
                    sols.items.push(0);
                } else {
                    sols.items.extend_from_slice(s);
                }
            }
            l.sols = (sols.items.len() - from) as u32;
            if kept > 1 && spec.patterns.len() > 1 {
                l.undecided = true; // (two solutions: their order is the compiled matcher's)
            }
            set.clear();
            spec.check_terms(triples, &mut set);
            let from = checked.items.len();
            checked.items.extend(set.iter().copied());
            l.checked = (checked.items.len() - from) as u32;
            if l.inside {
                holders.enter(&checked.items[from..]);
                live_triples += l.triples;
                undecided += usize::from(l.undecided);
                inside_sols += u64::from(l.sols) / w as u64;
            }
            live.push_back(l);
            hi += 1;
        }
        // the last event's time, unless an event at c or later says it is c or later
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
        if timed.is_some() {
            t0 = Some((std::time::Instant::now(), thread_cpu_ns()));
        }
        if feed.generation() != generation {
            generation = feed.generation();
            vals.clear();
            wr.fresh();
        }
        while lo < hi && feed.time(lo) < floor {
            let l = live.pop_front().expect("a live event");
            if l.inside {
                holders.leave(checked.front(l.checked as usize));
                live_triples -= l.triples;
                undecided -= usize::from(l.undecided);
                inside_sols -= u64::from(l.sols) / w as u64;
            }
            if let (Some(gs), Some(g)) = (groups.as_mut(), spec.group.as_ref()) {
                if lo < added {
                    if l.inside {
                        let terms = feed.terms();
                        for s in sols.front(l.sols as usize).chunks_exact(w) {
                            gs.leave(g, s, &mut |id| val_of(&mut vals, terms, id));
                        }
                    }
                } else {
                    // (never inside a window: it never entered the groups)
                    added = lo + 1;
                    add_at += u64::from(l.sols);
                }
            }
            checked.pop_front(l.checked as usize);
            sols.pop_front(l.sols as usize);
            lo += 1;
        }
        if live_triples > spec.max_window_triples {
            return refuse("the window's triples go over the limit");
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
            return refuse("a join term is in two live events (rsep answers from its store then)");
        }
        // each inside event's solutions
        let pool = sols.front(sols.len());
        let inside = || {
            live.iter()
                .scan(0usize, |at, l| {
                    let from = *at;
                    *at += l.sols as usize;
                    Some((from, l))
                })
                .filter(|(_, l)| l.inside)
                .map(|(from, l)| (l, &pool[from..from + l.sols as usize]))
        };
        debug_assert_eq!(undecided, inside().filter(|(l, _)| l.undecided).count());
        if undecided > 0 {
            return refuse(
                "a live event whose solutions it does not order or filter as rsep does \
                 (two solutions of a block of several patterns, or a value its FILTER does not \
                 compare exactly)",
            );
        }
        let count = inside_sols;
        debug_assert_eq!(
            count,
            inside().map(|(_, s)| (s.len() / w) as u64).sum::<u64>()
        );
        if count > spec.max_results {
            return refuse("an evaluation's rows go over the limit");
        }
        done.evaluations += 1;
        if feed.generation() != generation {
            generation = feed.generation();
            vals.clear();
            wr.fresh();
        }
        let terms = feed.terms();
        let current: Vec<Key> = match &spec.group {
            None => {
                let mut rows = Vec::with_capacity(count as usize);
                for (_, l) in inside() {
                    for s in l.chunks_exact(w) {
                        rows.push(
                            spec.project
                                .iter()
                                .map(|(_, col)| match col {
                                    Col::Var(Some(v)) => Some(u64::from(s[*v])),
                                    _ => None,
                                })
                                .collect(),
                        );
                    }
                }
                rows
            }
            Some(g) => {
                let gs = groups.as_mut().expect("the groups of a grouping");
                let val = &mut |id| val_of(&mut vals, terms, id);
                while added < hi {
                    let l = &live[added - lo];
                    if l.inside {
                        for i in 0..l.sols as usize / w {
                            let at = add_at + (i * w) as u64;
                            let from = at as usize - sols.base;
                            gs.enter(g, &sols.items[from..from + w], at, val);
                        }
                    }
                    add_at += u64::from(l.sols);
                    added += 1;
                }
                match gs.rows(spec, g, &sols, val, &mut wr, terms) {
                    Ok(rows) => rows,
                    Err(why) => return Ok(Err(why)),
                }
            }
        };
        done.rows += report(spec.r2s, c, &current, &previous, &mut wr, terms, out)?;
        if let Some((wall, cpu)) = t0.take() {
            times.push((wall.elapsed().as_nanos(), thread_cpu_ns() - cpu));
        }
        if spec.r2s != R2s::RStream {
            previous = current;
        }
        wr.compact(&mut previous);
        // the previous window's keys are of events from lo on
        previous_lo = lo;
        feed.release(lo);
        c = spec.next_close(c);
    }
    if let Some(path) = timed {
        let text: String = times.iter().map(|(w, c)| format!("{w} {c}\n")).collect();
        std::fs::write(path, text)?;
    }
    Ok(Ok(done))
}

/// This thread's CPU time in nanoseconds (0 where the clock is not known).
fn thread_cpu_ns() -> u64 {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct Timespec {
            sec: i64,
            nsec: i64,
        }
        extern "C" {
            fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
        }
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut ts = Timespec { sec: 0, nsec: 0 };
        // SAFETY: clock_gettime writes one timespec (two longs on 64-bit Linux) into `ts`
        if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return ts.sec as u64 * 1_000_000_000 + ts.nsec as u64;
        }
    }
    0
}

/// An evaluation's rows at close `c` written as the R2S operator gives them (RSTREAM: all;
/// ISTREAM / DSTREAM: the bag differences with the previous evaluation's): how many.
pub(crate) fn report(
    r2s: R2s,
    c: i64,
    current: &[Key],
    previous: &[Key],
    wr: &mut Writer,
    terms: &Terms,
    out: &mut impl Write,
) -> io::Result<u64> {
    let mut rows = 0;
    match r2s {
        R2s::RStream => {
            for k in current {
                wr.row(terms, c, k, false, out)?;
                rows += 1;
            }
        }
        R2s::IStream => {
            let mut budget = counts(current);
            for (k, m) in counts(previous) {
                if let Some(b) = budget.get_mut(&k) {
                    *b -= m;
                }
            }
            for k in current {
                let b = budget.get_mut(k).expect("counted");
                if *b > 0 {
                    *b -= 1;
                    wr.row(terms, c, k, false, out)?;
                    rows += 1;
                }
            }
        }
        R2s::DStream => {
            let now = counts(current);
            let mut order: Vec<&Key> = Vec::new();
            let mut had: HashMap<&Key, i64> = HashMap::new();
            for k in previous {
                let e = had.entry(k).or_insert(0);
                if *e == 0 {
                    order.push(k);
                }
                *e += 1;
            }
            for k in order {
                let gone = had[k] - now.get(k).copied().unwrap_or(0);
                for _ in 0..gone.max(0) {
                    wr.row(terms, c, k, true, out)?;
                    rows += 1;
                }
            }
        }
    }
    Ok(rows)
}

/// A number SUM / AVG has folded so far, in oxsdatatypes' types (oxigraph's accumulators').
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(Integer),
    Dec(Decimal),
    Dbl(Double),
}

impl Num {
    /// `self + v` as oxigraph's `SumAccumulator` adds (both in their common type), None on
    /// an overflow (oxigraph's error, which leaves the sum unbound: refused here, as the
    /// mirror's fold order is not proven then).
    fn add(self, v: Val) -> Option<Num> {
        let v = match v {
            Val::Int(i) => Num::Int(Integer::from(i)),
            Val::Dec(d) => Num::Dec(d),
            Val::Dbl(d) => Num::Dbl(Double::from(d)),
            _ => return None,
        };
        Some(match (self, v) {
            (Num::Int(a), Num::Int(b)) => Num::Int(a.checked_add(b)?),
            (Num::Int(a), Num::Dec(b)) => Num::Dec(Decimal::from(a).checked_add(b)?),
            (Num::Dec(a), Num::Int(b)) => Num::Dec(a.checked_add(Decimal::from(b))?),
            (Num::Dec(a), Num::Dec(b)) => Num::Dec(a.checked_add(b)?),
            (Num::Dbl(a), Num::Dbl(b)) => Num::Dbl(a + b),
            (Num::Dbl(a), Num::Int(b)) => Num::Dbl(a + Double::from(b)),
            (Num::Dbl(a), Num::Dec(b)) => Num::Dbl(a + Double::from(b)),
            (Num::Int(a), Num::Dbl(b)) => Num::Dbl(Double::from(a) + b),
            (Num::Dec(a), Num::Dbl(b)) => Num::Dbl(Double::from(a) + b),
        })
    }

    /// `AvgAccumulator::finish`: the sum over the count, integers giving a decimal; None when
    /// the division fails (unbound in oxigraph: refused here).
    fn avg(self, n: u64) -> Option<Num> {
        if n == 0 {
            return Some(Num::Int(Integer::from(0)));
        }
        let count = Integer::from(i64::try_from(n).ok()?);
        Some(match self {
            Num::Int(s) => Num::Dec(Decimal::from(s).checked_div(count)?),
            Num::Dec(s) => Num::Dec(s.checked_div(count)?),
            Num::Dbl(s) => Num::Dbl(s / Double::from(count)),
        })
    }

    fn term(self) -> Term {
        let (lex, dt) = match self {
            Num::Int(i) => (i.to_string(), xsd::INTEGER),
            Num::Dec(d) => (d.to_string(), xsd::DECIMAL),
            Num::Dbl(d) => (d.to_string(), xsd::DOUBLE),
        };
        Literal::new_typed_literal(lex, dt).into()
    }
}

/// An aggregate's state in a group.
enum Acc {
    Count,
    Distinct(HashSet<TermId>),
    Best(Option<(TermId, Val)>), // MIN / MAX so far
    /// SUM / AVG: the fold so far, None once a value is no number (the sum is unbound then)
    Sum(Option<Num>),
    Sample(Option<TermId>),
    /// GROUP_CONCAT: the text so far, the language all values share so far ("" when they do
    /// not, None before the first), or None once a value is no string (unbound then)
    Concat(Option<(String, Option<String>)>),
}

impl Acc {
    fn new(kind: AggKind) -> Acc {
        match kind {
            AggKind::Count => Acc::Count,
            AggKind::CountDistinct => Acc::Distinct(HashSet::new()),
            AggKind::Min | AggKind::Max => Acc::Best(None),
            AggKind::Sum | AggKind::Avg => Acc::Sum(Some(Num::Int(Integer::from(0)))),
            AggKind::Sample => Acc::Sample(None),
            AggKind::GroupConcat | AggKind::GroupConcatStr => {
                Acc::Concat(Some((String::new(), None)))
            }
        }
    }
}

struct State {
    rep: Vec<TermId>, // the group's first solution (its keys' values)
    n: u64,
    accs: Vec<Acc>,
}

fn refused<T>(why: &str) -> Result<T, Refused> {
    Err(Refused(why.to_owned()))
}

/// Fold one solution's value `id` (read as `x`) into an aggregate's state.
fn fold(
    acc: &mut Acc,
    kind: AggKind,
    sep: &str,
    id: TermId,
    x: Val,
    terms: &Terms,
) -> Result<(), Refused> {
    // (what rsep's mirror does not read, it asks pyoxigraph: refused here, whatever the
    // other values; SAMPLE's IRIs and strings it gives back as they are)
    let unread = matches!(x, Val::Unsure | Val::Other);
    match acc {
        Acc::Count => {}
        Acc::Distinct(seen) => {
            seen.insert(id);
        }
        Acc::Best(best) => {
            if !matches!(x, Val::Int(_) | Val::Dec(_) | Val::Dbl(_)) {
                return refused(
                    "MIN / MAX of a value it does not order as rsep does (not an xsd:integer, \
                     xsd:decimal or xsd:double)",
                );
            }
            match *best {
                None => *best = Some((id, x)),
                Some((bid, b)) => {
                    let Some(o) = order(x, b) else {
                        return refused("MIN / MAX over values of mixed datatypes, or NaN");
                    };
                    if o == Ordering::Equal && bid != id {
                        return refused("MIN / MAX with equal values of different terms");
                    }
                    let better = if kind == AggKind::Max {
                        o == Ordering::Greater
                    } else {
                        o == Ordering::Less
                    };
                    if better {
                        *best = Some((id, x));
                    }
                }
            }
        }
        Acc::Sum(sum) => {
            if unread {
                return refused(
                    "SUM / AVG of a value rsep asks pyoxigraph about (an xsd:float, a derived \
                     integer type, an ill-typed number, a boolean, a date...)",
                );
            }
            if let Some(s) = *sum {
                *sum = match x {
                    Val::Text | Val::Node => None,
                    _ => Some(s.add(x).ok_or_else(|| {
                        Refused("SUM / AVG overflowing an xsd:integer or xsd:decimal".into())
                    })?),
                };
            }
        }
        Acc::Sample(first) => {
            if unread {
                return refused("SAMPLE of a value rsep asks pyoxigraph about");
            }
            first.get_or_insert(id);
        }
        Acc::Concat(state) if kind == AggKind::GroupConcatStr => {
            let Some((text, lang)) = state else {
                return Ok(());
            };
            // (STR of a blank node is an error, which leaves GROUP_CONCAT unbound)
            let piece = match terms.term(id) {
                Some(TermRef::NamedNode(n)) => n.as_str(),
                Some(TermRef::Literal(l)) => l.value(),
                _ => {
                    *state = None;
                    return Ok(());
                }
            };
            if lang.is_some() {
                text.push_str(sep);
            } else {
                *lang = Some(String::new()); // (STR's values are simple literals)
            }
            text.push_str(piece);
        }
        Acc::Concat(state) => {
            if unread {
                return refused("GROUP_CONCAT of a value rsep asks pyoxigraph about");
            }
            let Some((text, lang)) = state else {
                return Ok(());
            };
            let Some(TermRef::Literal(l)) = terms.term(id).filter(|_| matches!(x, Val::Text))
            else {
                *state = None; // (no string: GROUP_CONCAT is unbound)
                return Ok(());
            };
            let tag = l.language().unwrap_or("");
            match lang {
                None => {
                    *lang = Some(tag.to_owned());
                }
                Some(shared) => {
                    if shared != tag {
                        shared.clear();
                    }
                    text.push_str(sep);
                }
            }
            text.push_str(l.value());
        }
    }
    Ok(())
}

/// The groups' rows, in the order of their first solution (`sols` in arrival order).
pub(crate) fn grouped<'s>(
    spec: &Spec,
    g: &Grouping,
    sols: impl Iterator<Item = &'s [TermId]>,
    val: &mut impl FnMut(TermId) -> Val,
    wr: &mut Writer,
    terms: &Terms,
) -> Result<Vec<Key>, Refused> {
    let mut index: HashMap<Vec<TermId>, usize> = HashMap::new();
    let mut groups: Vec<State> = Vec::new();
    let fresh = |rep: Vec<TermId>| State {
        rep,
        n: 0,
        accs: g.aggs.iter().map(|a| Acc::new(a.kind)).collect(),
    };
    if g.implicit {
        groups.push(fresh(vec![0; spec.vars]));
        index.insert(Vec::new(), 0);
    }
    for s in sols {
        let key: Vec<TermId> = g.keys.iter().map(|&v| s[v]).collect();
        let gi = *index.entry(key).or_insert_with(|| {
            groups.push(fresh(s.to_vec()));
            groups.len() - 1
        });
        let st = &mut groups[gi];
        st.n += 1;
        for (acc, agg) in st.accs.iter_mut().zip(&g.aggs) {
            let (Some(v), false) = (agg.var, matches!(acc, Acc::Count)) else {
                continue;
            };
            let id = s[v];
            fold(acc, agg.kind, &agg.separator, id, val(id), terms)?;
        }
    }
    let mut rows = Vec::with_capacity(groups.len());
    for st in &groups {
        let mut vals: Vec<Option<Out>> = Vec::with_capacity(g.aggs.len());
        for (acc, agg) in st.accs.iter().zip(&g.aggs) {
            vals.push(value(acc, agg, st.n, wr, terms)?);
        }
        rows.push(
            spec.project
                .iter()
                .map(|(_, col)| match *col {
                    Col::Var(Some(v)) if !g.implicit => Some(u64::from(st.rep[v])),
                    Col::Var(_) => None,
                    Col::Agg(a) => vals[a],
                })
                .collect(),
        );
    }
    Ok(rows)
}

/// An aggregate's value from its state after the group's `n` solutions were folded.
fn value(
    acc: &Acc,
    agg: &Agg,
    n: u64,
    wr: &mut Writer,
    terms: &Terms,
) -> Result<Option<Out>, Refused> {
    Ok(match acc {
        Acc::Count => Some(wr.count(terms, n)),
        Acc::Distinct(seen) => Some(wr.count(terms, seen.len() as u64)),
        Acc::Best(best) => best.map(|(id, _)| u64::from(id)),
        Acc::Sample(first) => first.map(u64::from),
        Acc::Sum(None) | Acc::Concat(None) => None,
        Acc::Sum(Some(s)) => {
            let v = if agg.kind == AggKind::Avg {
                s.avg(n)
                    .ok_or_else(|| Refused("AVG's division failing (unbound in oxigraph)".into()))?
            } else {
                *s
            };
            Some(wr.intern(terms, v.term()))
        }
        Acc::Concat(Some((text, lang))) => {
            let l = match lang.as_deref() {
                Some(tag) if !tag.is_empty() => {
                    Literal::new_language_tagged_literal_unchecked(text.as_str(), tag)
                }
                _ => Literal::new_simple_literal(text.as_str()),
            };
            Some(wr.intern(terms, l.into()))
        }
    })
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

    fn events(spec: &[(i64, &str)]) -> (Events, Terms) {
        let mut doc = String::new();
        for (i, (t, body)) in spec.iter().enumerate() {
            doc += &format!("<http://g/{i}> {T} {t} .\n<http://g/{i}> {{ {body} }}\n");
        }
        let mut terms = Terms::new();
        let points = ["http://www.w3.org/ns/prov#generatedAtTime".to_owned()];
        let ev = read_events(doc.as_bytes(), &mut terms, &points, 1 << 26).unwrap();
        (ev, terms)
    }

    fn id(terms: &Terms, iri: &str) -> Option<TermId> {
        terms.get(&oxrdf::NamedNode::new_unchecked(iri).into())
    }

    /// `?o <e:by> ?s . ?o <e:v> ?v` (?o, ?s, ?v: variables 0, 1, 2) over `[RANGE 10 STEP
    /// step]`, RSTREAM, written as TSV, no FILTER, no grouping, nothing projected.
    fn by_and_v(by: Option<TermId>, v: Option<TermId>, step: i64) -> Spec {
        Spec {
            range: 10,
            step,
            offset: 0,
            origin: 0,
            right_closed: true,
            non_empty: false,
            r2s: R2s::RStream,
            patterns: vec![
                [Slot::Var(0), Slot::Const(by), Slot::Var(1)],
                [Slot::Var(0), Slot::Const(v), Slot::Var(2)],
            ],
            vars: 3,
            checks: vec![
                Check {
                    consts: [None, Some(by), None],
                    tracked: vec![0],
                },
                Check {
                    consts: [None, Some(v), None],
                    tracked: vec![0],
                },
            ],
            filters: vec![],
            group: None,
            project: vec![],
            max_window_triples: 1000,
            max_results: 1000,
            tsv: true,
        }
    }

    #[test]
    fn compaction_keeps_what_the_kept_rows_hold() {
        let terms = Terms::new();
        let mut wr = Writer::new(&by_and_v(None, None, 1), false);
        let dec =
            |i: i32| -> Term { Literal::new_typed_literal(i.to_string(), xsd::DECIMAL).into() };
        let outs: Vec<Out> = (0..10).map(|i| wr.intern(&terms, dec(i))).collect();
        let seven = wr.count(&terms, 7);
        let mut keep: Vec<Key> = vec![vec![Some(outs[3]), None], vec![Some(seven), Some(outs[8])]];
        let text = |wr: &mut Writer, keep: &[Key]| -> Vec<Vec<u8>> {
            keep.iter()
                .flatten()
                .flatten()
                .map(|&o| wr.get(&terms, o).to_vec())
                .collect()
        };
        let before = text(&mut wr, &keep);
        wr.compact(&mut keep); // (under COMPACT_MIN values: nothing dropped)
        assert_eq!(wr.made.len(), 11);
        assert_eq!(keep[0][0], Some(outs[3]));
        wr.fresh(); // (a sweep: the next compaction drops)
        wr.compact(&mut keep);
        assert_eq!(wr.made.len(), 3);
        assert_eq!(text(&mut wr, &keep), before);
        // a kept term keeps its new number; a dropped one is made again after them
        assert_eq!(Some(wr.intern(&terms, dec(3))), keep[0][0]);
        assert_eq!(Some(wr.count(&terms, 7)), keep[1][0]);
        assert_eq!(wr.intern(&terms, dec(5)), NEW_BASE + 3);
        assert_eq!(wr.count(&terms, 2), NEW_BASE + 4);
        assert_eq!(wr.compact_at, COMPACT_MIN);
    }

    #[test]
    fn a_join_a_filter_and_groups() {
        // ?o <e:by> ?s . ?o <e:v> ?v . FILTER (?v > 10) GROUP BY ?s: MAX(?v), COUNT(*)
        let (ev, terms) = events(&[
            (0, "<e:o1> <e:by> <e:a> . <e:o1> <e:v> 12 ."),
            (1, "<e:o2> <e:by> <e:b> . <e:o2> <e:v> 5 ."),
            (1, "<e:o3> <e:by> <e:a> . <e:o3> <e:v> 30 ."),
        ]);
        let (by, v) = (id(&terms, "e:by"), id(&terms, "e:v"));
        let spec = Spec {
            filters: vec![Cond {
                var: 2,
                op: Op::Gt,
                constant: Constant {
                    exact: Some(Decimal::from(10)),
                    double: Some(10.0),
                },
            }],
            group: Some(Grouping {
                keys: vec![1],
                aggs: vec![
                    Agg {
                        kind: AggKind::Max,
                        var: Some(2),
                        separator: String::new(),
                    },
                    Agg {
                        kind: AggKind::Count,
                        var: None,
                        separator: String::new(),
                    },
                ],
                implicit: false,
            }),
            project: vec![
                ("s".into(), Col::Var(Some(1))),
                ("m".into(), Col::Agg(0)),
                ("n".into(), Col::Agg(1)),
            ],
            ..by_and_v(by, v, 1)
        };
        let mut out = Vec::new();
        assert_eq!(
            run(&spec, &ev, &terms, &mut out).unwrap(),
            Ok(Done {
                evaluations: 2,
                rows: 2
            })
        );
        let int = "<http://www.w3.org/2001/XMLSchema#integer>";
        assert_eq!(
            String::from_utf8(out).unwrap(),
            // closes 0 and 1: (-10, 0] holds event 0, (-9, 1] all (o2's 5 is filtered out)
            format!(
                "time\top\t?s\t?m\t?n\n0\tinsert\t<e:a>\t\"12\"^^{int}\t\"1\"^^{int}\n\
                 1\tinsert\t<e:a>\t\"30\"^^{int}\t\"2\"^^{int}\n"
            )
        );
    }

    #[test]
    fn comparisons_are_exact_or_undecided() {
        let dec = |s: &str| Decimal::from_str(s).unwrap();
        let c = Constant {
            exact: Some(dec("100.1")),
            double: None,
        };
        assert_eq!(compare(Val::Dec(dec("100.1")), Op::Eq, &c), Some(true));
        assert_eq!(compare(Val::Int(101), Op::Gt, &c), Some(true));
        assert_eq!(compare(Val::Dbl(100.1), Op::Gt, &c), None); // (100.1 is no double)
        let c = Constant {
            exact: Some(dec("100")),
            double: Some(100.0),
        };
        assert_eq!(compare(Val::Dbl(100.5), Op::Gt, &c), Some(true));
        assert_eq!(compare(Val::Dbl(f64::NAN), Op::Ne, &c), Some(true));
        assert_eq!(compare(Val::Dbl(f64::NAN), Op::Le, &c), Some(false));
        assert_eq!(compare(Val::Other, Op::Lt, &c), Some(false));
        assert_eq!(compare(Val::Other, Op::Ne, &c), None);
        assert_eq!(compare(Val::Unsure, Op::Eq, &c), None);
        let l = |v: &str, dt| literal_value(Literal::new_typed_literal(v, dt).as_ref());
        assert!(matches!(l("1.5", xsd::FLOAT), Val::Unsure));
        assert!(matches!(l("1", xsd::INT), Val::Unsure));
        assert!(matches!(l("x", xsd::INTEGER), Val::Unsure));
        assert!(matches!(l("true", xsd::BOOLEAN), Val::Other));
        assert!(matches!(l("1e1", xsd::DOUBLE), Val::Dbl(x) if x == 10.0));
    }
    /// SUM / AVG over literals (`1`, `0.5`, `1e0`: Turtle's shorthands) folded in order,
    /// with the term written; the expected forms are what pyoxigraph 0.5.13 gives for
    /// `SELECT (SUM(?x) AS ?a) WHERE { VALUES ?x { ... } }`.
    fn folded(values: &[&str], avg: bool) -> Option<String> {
        let mut sum = Num::Int(Integer::from(0));
        for v in values {
            let dt = if v.contains('e') {
                xsd::DOUBLE
            } else if v.contains('.') {
                xsd::DECIMAL
            } else {
                xsd::INTEGER
            };
            sum = sum.add(literal_value(Literal::new_typed_literal(*v, dt).as_ref()))?;
        }
        let got = if avg {
            sum.avg(values.len() as u64)?
        } else {
            sum
        };
        Some(got.term().to_string())
    }

    #[test]
    fn sums_and_averages_are_pyoxigraphs() {
        let x = |lex: &str, dt: &str| format!("\"{lex}\"^^<http://www.w3.org/2001/XMLSchema#{dt}>");
        let cases: &[(&[&str], bool, &str)] = &[
            (&["1", "2"], false, &x("3", "integer")),
            (&["1", "0.1", "0.2"], false, &x("1.3", "decimal")),
            (&["0.1", "1e0", "2"], false, &x("3.1", "double")),
            (&["1e20", "1"], false, &x("100000000000000000000", "double")),
            (
                &["101.3e0", "99.5e0", "-3.5e0"],
                false,
                &x("197.3", "double"),
            ),
            (&[], false, &x("0", "integer")),
            (&["1", "2"], true, &x("1.5", "decimal")),
            (
                &["1", "2", "2"],
                true,
                &x("1.666666666666666666", "decimal"),
            ),
            (&["1", "0.5"], true, &x("0.75", "decimal")),
            (
                &["-1", "-1", "1"],
                true,
                &x("-0.333333333333333333", "decimal"),
            ),
            (
                &["1", "0", "0"],
                true,
                &x("0.333333333333333333", "decimal"),
            ),
            (
                &["2.5", "100.25", "7"],
                true,
                &x("36.583333333333333333", "decimal"),
            ),
            (
                &["1e0", "2e0", "2e0"],
                true,
                &x("1.6666666666666667", "double"),
            ),
            (
                &["101.3e0", "99.5e0", "1e0"],
                true,
                &x("67.26666666666667", "double"),
            ),
            (&[], true, &x("0", "integer")),
        ];
        for (values, avg, want) in cases {
            assert_eq!(
                folded(values, *avg).as_deref(),
                Some(*want),
                "{values:?} {avg}"
            );
        }
        // (oxigraph's error, an unbound SUM: refused by the operator)
        assert_eq!(folded(&["9223372036854775807", "1"], false), None);
    }

    #[test]
    fn group_concat_sample_and_count_distinct() {
        // ?o e:by ?s . ?o e:v ?v, aggregates alone: pyoxigraph's forms for
        // GROUP_CONCAT(?v; SEPARATOR="|") over "a"@en "b"@en is "a|b"@en, over "a"@en "b" is
        // "a|b", over nothing ""; a number among them makes it unbound
        let run_on =
            |bodies: &[&str], kind: AggKind, var: usize| -> (Result<Done, Refused>, String) {
                let spec_events: Vec<(i64, &str)> = bodies.iter().map(|b| (0, *b)).collect();
                let (ev, terms) = events(&spec_events);
                let (by, v) = (id(&terms, "e:by"), id(&terms, "e:v"));
                let spec = Spec {
                    group: Some(Grouping {
                        keys: vec![],
                        aggs: vec![Agg {
                            kind,
                            var: Some(var),
                            separator: "|".into(),
                        }],
                        implicit: true,
                    }),
                    project: vec![("a".into(), Col::Agg(0))],
                    ..by_and_v(by, v, 10)
                };
                let mut out = Vec::new();
                let done = run(&spec, &ev, &terms, &mut out).unwrap();
                (done, String::from_utf8(out).unwrap())
            };
        let o =
            |i: usize, s: &str, v: &str| format!("<e:o{i}> <e:by> <e:{s}> . <e:o{i}> <e:v> {v} .");
        let (a, b, c) = (
            o(0, "x", "\"a\"@en"),
            o(1, "y", "\"b\"@en"),
            o(2, "x", "\"b\""),
        );
        let tsv = |v: &str| format!("time\top\t?a\n0\tinsert\t{v}\n");
        let (_, got) = run_on(&[&a, &b], AggKind::GroupConcat, 2);
        assert_eq!(got, tsv("\"a|b\"@en"));
        let (_, got) = run_on(&[&a, &c], AggKind::GroupConcat, 2);
        assert_eq!(got, tsv("\"a|b\""));
        let (_, got) = run_on(&[&a, &o(3, "x", "3")], AggKind::GroupConcat, 2);
        assert_eq!(got, tsv(""));
        // GROUP_CONCAT(STR(?v)): simple literals of each value's text
        let (_, got) = run_on(&[&a, &o(3, "x", "3")], AggKind::GroupConcatStr, 2);
        assert_eq!(got, tsv("\"a|3\""));
        let (_, got) = run_on(&[&a, &c], AggKind::GroupConcatStr, 1);
        assert_eq!(got, tsv("\"e:x|e:x\""));
        let (_, got) = run_on(&[&a, &c, &o(3, "y", "\"a\"@en")], AggKind::CountDistinct, 2);
        let int = "^^<http://www.w3.org/2001/XMLSchema#integer>";
        assert_eq!(got, tsv(&format!("\"2\"{int}")));
        let (_, got) = run_on(&[&a, &c, &o(3, "x", "\"a\"@en")], AggKind::CountDistinct, 1);
        assert_eq!(got, tsv(&format!("\"1\"{int}")));
        let (_, got) = run_on(&[&c, &a], AggKind::Sample, 2);
        assert_eq!(got, tsv("\"b\""));
        let (done, _) = run_on(&[&c, &o(3, "x", "true")], AggKind::Sample, 2);
        assert!(done.is_err());
        let (done, _) = run_on(
            &[&o(
                3,
                "x",
                "\"1.5\"^^<http://www.w3.org/2001/XMLSchema#float>",
            )],
            AggKind::Sum,
            2,
        );
        assert!(done.is_err());
        // a string among the values: SUM is unbound
        let (_, got) = run_on(&[&o(3, "x", "2"), &c], AggKind::Sum, 2);
        assert_eq!(got, tsv(""));
    }
}
