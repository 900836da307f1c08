//! EP-SPARQL's SEQ on ids (issue 50): a SEQ of one-pattern BGPs (003 Sec. 4.2's SeqJoin,
//! left-nested) under one FILTER of comparisons, over a stream file of point events of ids
//! as a [`Feed`] gives them (read in parts, [`crate::source`]), writing its complex events
//! as rsep's sink does. An instant's (an event's, in ETALIS's modes) events are let go of
//! once it was evaluated; the dictionary is swept between them keeping every id the kept
//! solutions, the goals and their stores' keys hold.
//!
//! Two evaluators, each the one today's path runs for its policy:
//!
//! * [`SeqJoin`], the unrestricted setting: rsep/epsparql/delta.py's plan (plan.py's `run`)
//!   on this shape. At each instant, the solutions of the SEQ's k-th operand ending then are
//!   the k-th pattern's matches among the instant's occurrences, each joined with the earlier
//!   solutions of the operands before it (kept per value of the variables both sides bind, in
//!   t_omega order; those whose start the FILTER's duration bound already rules out are
//!   skipped and pruned), t_omega(left) < t_alpha(right); the last operand's solutions are
//!   filtered and written in that order (right solution outer, kept left ones inner).
//! * [`Machine`], the ETALIS-compatible modes (`etalis-chronological`, `etalis-recent`):
//!   rsep/epsparql/etalis.py's `Machine` on the binarised rules of the query (seq, where and
//!   event rules: etalis_rules.py), step by step: labels (second, counter), a goal store per
//!   seq rule bucketed by the shared variables, the first goal an event matches taken and
//!   consumed, put back (front under recent, end under chronological) when `less` fails, the
//!   window tested at each firing, the same amortised forgetting of goals and counters.
//!
//! It *refuses* (the caller runs today's path) any comparison or arithmetic whose operands
//! it does not decide exactly as rsep/sparql/filters.py does: anything but the numbers
//! [`crate::chain::value_of`] reads, arithmetic on anything but integers (and an integer
//! overflow).

use crate::bgp::Op;
use crate::chain::{compare, value_of, Format, Val};
use crate::dictionary::{TermId, Terms};
use crate::select::{json_string, Done, Refused, Slot};
use crate::source::{Feed, Whole};
use crate::stream::Events;
use hashbrown::HashMap;
use std::collections::VecDeque;
use std::io::Write;

/// An arithmetic operator of a FILTER.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
}

/// A numeric expression of a FILTER: a variable, getDURATION() (t_omega - t_alpha of the
/// solution tested), a number, or arithmetic on two.
#[derive(Clone, Debug)]
pub enum Num {
    Var(usize),
    Duration,
    Const(Val),
    Arith(Box<Num>, Arith, Box<Num>),
}

/// `left op right`; a FILTER is a conjunction of these.
#[derive(Clone, Debug)]
pub struct Cmp {
    pub left: Num,
    pub op: Op,
    pub right: Num,
}

/// What the native path runs for a query.
#[derive(Clone, Debug)]
pub enum Mode {
    /// the unrestricted setting: the SEQ's patterns, in order, and the FILTER
    Unrestricted {
        patterns: Vec<[Slot; 3]>,
        filter: Vec<Cmp>,
    },
    /// an ETALIS mode: the binarised rules and their clauses, in etalis_rules.py's order
    Etalis {
        rules: Vec<Rule>,
        clauses: Vec<Clause>,
        recent: bool,
        /// the rule window (event_rule_window): (h, strict); None: none
        window: Option<(f64, bool)>,
    },
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub mode: Mode,
    pub vars: usize,
    /// per output column: its name and variable (None: bound by no pattern)
    pub project: Vec<(String, Option<usize>)>,
    pub format: Format,
}

/// A binary rule's operator, as etalis_rules.py's `Rule.op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleOp {
    Seq,
    Where,
    Event,
}

#[derive(Clone, Debug)]
pub struct Rule {
    pub op: RuleOp,
    /// the intermediate event the rule fires (0: the query's head)
    pub head: u32,
    /// a where rule's conditions
    pub conds: Vec<Cmp>,
    /// a seq rule's: the variables both operands bind (its goals' bucket)
    pub shared: Vec<usize>,
}

/// What triggers a clause: a triple matching an atom, or an intermediate event.
#[derive(Clone, Copy, Debug)]
pub enum Trigger {
    Atom([Slot; 3]),
    Temp(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Insert,
    Check,
    Where,
    Event,
}

#[derive(Clone, Copy, Debug)]
pub struct Clause {
    pub trigger: Trigger,
    pub action: Action,
    pub rule: usize,
}

/// The terms' values, decoded once per id when an expression first reads it (RSEP-QL's
/// MATCH reads its FILTER's through it too: crate::rsepql).
pub struct Values<'a> {
    terms: &'a Terms,
    cache: Vec<Option<Val>>,
}

fn unsure() -> Refused {
    Refused("a FILTER reads a value the native path does not decide exactly".into())
}

impl Values<'_> {
    pub fn new(terms: &Terms) -> Values<'_> {
        Values::with(terms, Vec::new())
    }

    /// With the values of an earlier one ([`Values::into_cache`]: valid while the ids it
    /// read name the same terms).
    pub fn with(terms: &Terms, cache: Vec<Option<Val>>) -> Values<'_> {
        Values { terms, cache }
    }

    pub fn into_cache(self) -> Vec<Option<Val>> {
        self.cache
    }

    fn get(&mut self, id: TermId) -> Val {
        let k = id as usize;
        if k >= self.cache.len() {
            self.cache.resize(k + 1, None);
        }
        *self.cache[k].get_or_insert_with(|| value_of(self.terms.term(id)))
    }

    fn num(&mut self, n: &Num, mu: &[TermId], ta: i64, tw: i64) -> Result<Val, Refused> {
        Ok(match n {
            Num::Const(v) => *v,
            Num::Duration => Val::Int(tw.checked_sub(ta).ok_or_else(unsure)?),
            Num::Var(v) => match mu[*v] {
                0 => return Err(unsure()), // (never: the planner's)
                id => match self.get(id) {
                    Val::Unsure => return Err(unsure()),
                    v => v,
                },
            },
            Num::Arith(a, op, b) => {
                let (x, y) = (self.num(a, mu, ta, tw)?, self.num(b, mu, ta, tw)?);
                arith(x, *op, y).ok_or_else(unsure)?
            }
        })
    }

    /// Whether every comparison holds of the solution; Err when one is not decided here.
    pub fn all(&mut self, cmps: &[Cmp], mu: &[TermId], ta: i64, tw: i64) -> Result<bool, Refused> {
        for c in cmps {
            let a = self.num(&c.left, mu, ta, tw)?;
            let b = self.num(&c.right, mu, ta, tw)?;
            match compare(a, c.op, b) {
                Some(true) => {}
                Some(false) => return Ok(false),
                None => return Err(unsure()),
            }
        }
        Ok(true)
    }
}

const SCALE: i128 = 1_000_000_000_000_000_000;
const DEC_MAX: i128 = 100_000_000_000_000_000 * SCALE; // 10^17

/// An xsd:decimal of `m` / 10^18 as filters.py's `_decimal` holds it (below 10^17), with
/// the nearest double to it (float(Decimal), which Rust's parser rounds alike).
fn decimal(m: i128) -> Option<Val> {
    if m.unsigned_abs() >= DEC_MAX.unsigned_abs() {
        return None;
    }
    let a = m.unsigned_abs();
    let sign = if m < 0 { "-" } else { "" };
    let text = format!("{sign}{}.{:018}", a / SCALE as u128, a % SCALE as u128);
    Some(Val::Dec(m, text.parse::<f64>().ok()?))
}

fn scaled(v: Val) -> Option<i128> {
    match v {
        Val::Int(x) => i128::from(x).checked_mul(SCALE),
        Val::Dec(m, _) => Some(m),
        _ => None,
    }
}

/// `x op y` as filters.py's `_arith` computes it: integers in 64 bits, an integer or a
/// decimal with a decimal exactly (a product with at most 18 fractional digits), anything
/// with a double as doubles; None where filters.py falls back to pyoxigraph (an overflow,
/// a decimal out of its range or precision) or the operands are no numbers.
pub fn arith(x: Val, op: Arith, y: Val) -> Option<Val> {
    match (x, y) {
        (Val::Unsure, _) | (_, Val::Unsure) => None,
        (Val::Int(a), Val::Int(b)) => Some(Val::Int(match op {
            Arith::Add => a.checked_add(b)?,
            Arith::Sub => a.checked_sub(b)?,
            Arith::Mul => a.checked_mul(b)?,
        })),
        (Val::Dbl(_), _) | (_, Val::Dbl(_)) => {
            let (a, b) = (double(x), double(y));
            Some(Val::Dbl(match op {
                Arith::Add => a + b,
                Arith::Sub => a - b,
                Arith::Mul => a * b,
            }))
        }
        _ => {
            let (a, b) = (scaled(x)?, scaled(y)?);
            match op {
                Arith::Add => decimal(a.checked_add(b)?),
                Arith::Sub => decimal(a.checked_sub(b)?),
                Arith::Mul => {
                    // (an integer operand's scale is exact: its product needs no division)
                    let p = match (x, y) {
                        (Val::Int(i), _) => i128::from(i).checked_mul(b)?,
                        (_, Val::Int(i)) => a.checked_mul(i128::from(i))?,
                        _ => {
                            let p = a.checked_mul(b)?;
                            if p % SCALE != 0 {
                                return None;
                            }
                            p / SCALE
                        }
                    };
                    decimal(p)
                }
            }
        }
    }
}

fn double(v: Val) -> f64 {
    match v {
        Val::Int(i) => i as f64,
        Val::Dec(_, d) | Val::Dbl(d) => d,
        Val::Unsure => f64::NAN,
    }
}

/// A triple's match of a pattern into `mu` (cleared first): false when it does not match.
pub(crate) fn matches(p: &[Slot; 3], t: &[TermId; 3], mu: &mut [TermId]) -> bool {
    mu.fill(0);
    for k in 0..3 {
        match p[k] {
            Slot::Const(c) => {
                if c != Some(t[k]) {
                    return false;
                }
            }
            Slot::Var(v) => {
                if mu[v] == 0 {
                    mu[v] = t[k];
                } else if mu[v] != t[k] {
                    return false;
                }
            }
        }
    }
    true
}

fn compatible(a: &[TermId], b: &[TermId]) -> bool {
    a.iter().zip(b).all(|(&x, &y)| x == 0 || y == 0 || x == y)
}

/// The duration bound a FILTER's conjunct `getDURATION() <= c` (or `< c`) sets: a kept
/// solution that started longer ago can be part of no output.
fn duration_bound(filter: &[Cmp]) -> Option<(i64, bool)> {
    let mut best: Option<(i64, bool)> = None;
    for c in filter {
        let got = match (&c.left, c.op, &c.right) {
            (Num::Duration, Op::Le, Num::Const(Val::Int(h))) => (*h, false),
            (Num::Duration, Op::Lt, Num::Const(Val::Int(h))) => (*h, true),
            (Num::Const(Val::Int(h)), Op::Ge, Num::Duration) => (*h, false),
            (Num::Const(Val::Int(h)), Op::Gt, Num::Duration) => (*h, true),
            _ => continue,
        };
        if best.is_none_or(|b| got.0 < b.0 || (got.0 == b.0 && got.1)) {
            best = Some(got);
        }
    }
    best
}

/// An output row's writer: rsep/runtime/sinks.py's jsonl or tsv of an EpOutput, or the
/// bench worker's `values` (`Format::Events`: `{"values": [...], "from": a, "to": w}`,
/// integers by value).
pub(crate) struct Writer {
    cache: HashMap<TermId, Box<[u8]>>,
    values: HashMap<TermId, Box<[u8]>>,
    format: Format,
    project: Vec<(Vec<u8>, Option<usize>)>,
    header: Option<Vec<u8>>,
    line: Vec<u8>,
    pub(crate) rows: u64,
}

const INTEGER: &str = "http://www.w3.org/2001/XMLSchema#integer";

impl Writer {
    fn new(spec: &Spec) -> Writer {
        Writer::of(spec.format, &spec.project)
    }

    /// The writer of rows of these columns in this format (the formal policies' too:
    /// crate::formal).
    pub(crate) fn of(format: Format, columns: &[(String, Option<usize>)]) -> Writer {
        Writer {
            cache: HashMap::new(),
            values: HashMap::new(),
            format,
            project: columns
                .iter()
                .map(|(name, v)| {
                    let mut b = json_string(name);
                    b.extend_from_slice(b": ");
                    (b, *v)
                })
                .collect(),
            header: (format == Format::Tsv).then(|| {
                let mut h = b"time\top".to_vec();
                for (name, _) in columns {
                    h.extend_from_slice(format!("\t?{name}").as_bytes());
                }
                h.push(b'\n');
                h
            }),
            line: Vec::new(),
            rows: 0,
        }
    }

    fn text(terms: &Terms, id: TermId) -> String {
        terms.term(id).map(|t| t.to_string()).unwrap_or_default()
    }

    /// Ids given to other terms since (a sweep): their texts made again.
    fn fresh(&mut self) {
        self.cache.clear();
        self.values.clear();
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn row(
        &mut self,
        terms: &Terms,
        out: &mut dyn Write,
        t: i64,
        from: i64,
        to: i64,
        mu: &[TermId],
    ) -> std::io::Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        match self.format {
            Format::Jsonl => {
                write!(
                    line,
                    "{{\"time\": {t}, \"from\": {from}, \"to\": {to}, \"bindings\": {{"
                )?;
                let mut sep = false;
                for (name, v) in &self.project {
                    let Some(id) = v.map(|v| mu[v]).filter(|&id| id != 0) else {
                        continue;
                    };
                    if sep {
                        line.extend_from_slice(b", ");
                    }
                    sep = true;
                    line.extend_from_slice(name);
                    let text = self
                        .cache
                        .entry(id)
                        .or_insert_with(|| json_string(&Self::text(terms, id)).into());
                    line.extend_from_slice(text);
                }
                line.extend_from_slice(b"}}");
            }
            Format::Tsv => {
                if let Some(h) = self.header.take() {
                    out.write_all(&h)?;
                }
                write!(line, "{t}\tinsert")?;
                for (_, v) in &self.project {
                    line.push(b'\t');
                    if let Some(id) = v.map(|v| mu[v]).filter(|&id| id != 0) {
                        let text = self
                            .cache
                            .entry(id)
                            .or_insert_with(|| Self::text(terms, id).into_bytes().into());
                        line.extend_from_slice(text);
                    }
                }
            }
            Format::Events => {
                line.extend_from_slice(b"{\"values\": [");
                for (k, (_, v)) in self.project.iter().enumerate() {
                    if k > 0 {
                        line.extend_from_slice(b", ");
                    }
                    match v.map(|v| mu[v]).filter(|&id| id != 0) {
                        None => line.extend_from_slice(b"null"),
                        Some(id) => {
                            let text = self
                                .values
                                .entry(id)
                                .or_insert_with(|| value_text(terms, id));
                            line.extend_from_slice(text);
                        }
                    }
                }
                write!(line, "], \"from\": {from}, \"to\": {to}}}")?;
            }
        }
        line.push(b'\n');
        let done = out.write_all(&line);
        self.line = line;
        self.rows += 1;
        done
    }
}

/// A bound term as the bench's worker writes it: an xsd:integer written in digits by its
/// value, anything else as its text (a JSON string).
fn value_text(terms: &Terms, id: TermId) -> Box<[u8]> {
    if let Some(oxrdf::TermRef::Literal(l)) = terms.term(id) {
        let v = l.value();
        let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
        if l.datatype().as_str() == INTEGER
            && l.language().is_none()
            && !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
        {
            let neg = v.starts_with('-');
            let d = digits.trim_start_matches('0');
            let d = if d.is_empty() { "0" } else { d };
            let mut s = String::new();
            if neg && d != "0" {
                s.push('-');
            }
            s.push_str(d);
            return s.into_bytes().into();
        }
    }
    json_string(&Writer::text(terms, id)).into()
}

/// Run the query over the events, writing its complex events to `out`: Ok(Err) when the
/// native path refuses the input (what was written is to be thrown away).
pub fn run(
    spec: &Spec,
    ev: &Events,
    terms: &Terms,
    out: &mut dyn Write,
) -> std::io::Result<Result<Done, Refused>> {
    run_on(spec, &mut Whole { events: ev, terms }, out)
}

/// [`run`] over events as a [`Feed`] gives them.
pub fn run_on(
    spec: &Spec,
    feed: &mut impl Feed,
    out: &mut dyn Write,
) -> std::io::Result<Result<Done, Refused>> {
    feed.hold();
    let mut cache = Caches {
        generation: feed.generation(),
        values: Vec::new(),
        writer: Writer::new(spec),
    };
    let got = match &spec.mode {
        Mode::Unrestricted { patterns, filter } => {
            if patterns.is_empty() {
                return Ok(Err(Refused("a SEQ of no pattern".into())));
            }
            let mut seq = SeqJoin::new(patterns, filter, spec.vars);
            seq.run(feed, &mut cache, out)?
        }
        Mode::Etalis {
            rules,
            clauses,
            recent,
            window,
        } => {
            let mut m = Machine::new(rules, clauses, *recent, *window, spec.vars);
            m.run(feed, &mut cache, out)?
        }
    };
    Ok(got.map(|instants| Done {
        evaluations: instants,
        rows: cache.writer.rows,
    }))
}

/// What an evaluator keeps of the feed's ids across its instants: the values decoded, the
/// writer's texts; made again once the feed's generation changes (a sweep).
pub(crate) struct Caches {
    pub(crate) generation: u64,
    pub(crate) values: Vec<Option<Val>>,
    pub(crate) writer: Writer,
}

impl Caches {
    pub(crate) fn fresh(&mut self, generation: u64) {
        if generation != self.generation {
            self.generation = generation;
            self.values.clear();
            self.writer.fresh();
        }
    }
}

/// Let the feed go of the events before `below`, and sweep its dictionary if it is due,
/// keeping the ids `held` gives.
pub(crate) fn let_go(
    feed: &mut impl Feed,
    below: usize,
    held: &mut Vec<TermId>,
    mark: impl Fn(&mut Vec<TermId>),
) {
    feed.release(below);
    if feed.due() {
        held.clear();
        mark(held);
        feed.sweep_holding(held);
    }
}

// ---------------------------------------------------------------- unrestricted

/// A kept solution of an operand: its values (every variable; 0 unbound) and interval.
struct Sol {
    mu: Box<[TermId]>,
    ta: i64,
    tw: i64,
}

/// The SEQ of patterns, left-nested, with its stores of the earlier solutions of each
/// operand that is some SEQ's left one (Delta's `Keyed`).
struct SeqJoin<'s> {
    patterns: &'s [[Slot; 3]],
    filter: &'s [Cmp],
    vars: usize,
    /// per SEQ k (joining operands 0..=k-1 with pattern k), k >= 1: the variables both bind
    keys: Vec<Vec<usize>>,
    /// per SEQ k >= 1: its left operand's earlier solutions by their key's values
    stores: Vec<HashMap<Box<[TermId]>, Vec<Sol>>>,
    bound: Option<(i64, bool)>,
    kept: usize,
    stored: usize,
}

impl<'s> SeqJoin<'s> {
    fn new(patterns: &'s [[Slot; 3]], filter: &'s [Cmp], vars: usize) -> Self {
        let bound_by = |p: &[Slot; 3]| -> Vec<usize> {
            p.iter()
                .filter_map(|s| match s {
                    Slot::Var(v) => Some(*v),
                    Slot::Const(_) => None,
                })
                .collect()
        };
        let mut left: Vec<usize> = Vec::new();
        let mut keys = vec![Vec::new()];
        for (k, p) in patterns.iter().enumerate() {
            let own = bound_by(p);
            if k > 0 {
                let mut key: Vec<usize> =
                    own.iter().copied().filter(|v| left.contains(v)).collect();
                key.sort_unstable();
                key.dedup();
                keys.push(key);
            }
            left.extend(own);
        }
        SeqJoin {
            patterns,
            filter,
            vars,
            keys,
            stores: (0..patterns.len()).map(|_| HashMap::new()).collect(),
            bound: duration_bound(filter),
            kept: 0,
            stored: 0,
        }
    }

    /// Whether a solution starting at `ta` can still be part of an output at `tau` or later.
    fn live(&self, ta: i64, tau: i64) -> bool {
        match self.bound {
            None => true,
            Some((h, strict)) => {
                let d = tau.saturating_sub(ta);
                !(d > h || (strict && d >= h))
            }
        }
    }

    fn run(
        &mut self,
        feed: &mut impl Feed,
        cache: &mut Caches,
        out: &mut dyn Write,
    ) -> std::io::Result<Result<u64, Refused>> {
        macro_rules! has {
            ($k:expr) => {
                match feed.has($k) {
                    Ok(b) => b,
                    Err(r) => return Ok(Err(r)),
                }
            };
        }
        let n = self.patterns.len();
        let vars = self.vars;
        let mut mu = vec![0; vars];
        let mut key: Vec<TermId> = Vec::new();
        // per operand: the instant's solutions (rows of every variable) and their starts
        let mut now: Vec<(Vec<TermId>, Vec<i64>)> = vec![(Vec::new(), Vec::new()); n];
        let mut fresh: Vec<[TermId; 3]> = Vec::new();
        let mut seen: hashbrown::HashSet<[TermId; 3]> = hashbrown::HashSet::new();
        let mut instants = 0;
        let mut k = 0;
        let mut held = Vec::new();
        while has!(k) {
            let tau = feed.time(k);
            // the instant's occurrences, in arrival order: a triple at one interval is one
            // occurrence, whichever items carry it (the occurrence store's set)
            fresh.clear();
            seen.clear();
            while has!(k) && feed.time(k) == tau {
                for t in feed.triples_of(k) {
                    let new = if fresh.len() < 16 {
                        !fresh.contains(t)
                    } else {
                        if seen.is_empty() {
                            seen.extend(fresh.iter().copied());
                        }
                        seen.insert(*t)
                    };
                    if new {
                        fresh.push(*t);
                    }
                }
                k += 1;
            }
            instants += 1;
            cache.fresh(feed.generation());
            let terms = feed.terms();
            let mut values = Values {
                terms,
                cache: std::mem::take(&mut cache.values),
            };
            let writer = &mut cache.writer;
            for (i, p) in self.patterns.iter().enumerate() {
                let (mut rows, mut starts) = std::mem::take(&mut now[i]);
                rows.clear();
                starts.clear();
                for t in &fresh {
                    if !matches(p, t, &mut mu) {
                        continue;
                    }
                    if i == 0 {
                        rows.extend_from_slice(&mu);
                        starts.push(tau);
                        continue;
                    }
                    key.clear();
                    key.extend(self.keys[i].iter().map(|&v| mu[v]));
                    if let Some(b) = self.stores[i].get(key.as_slice()) {
                        for x in b {
                            // t_omega(left) < t_alpha(right), and a start the duration
                            // bound still allows
                            if x.tw < tau && self.live(x.ta, tau) && compatible(&x.mu, &mu) {
                                let at = rows.len();
                                rows.extend_from_slice(&x.mu);
                                for (v, &y) in mu.iter().enumerate() {
                                    if y != 0 {
                                        rows[at + v] = y;
                                    }
                                }
                                starts.push(x.ta);
                            }
                        }
                    }
                }
                now[i] = (rows, starts);
            }
            // the last operand's solutions: filtered, written in order
            let (rows, starts) = &now[n - 1];
            for (row, &ta) in rows.chunks_exact(vars).zip(starts) {
                match values.all(self.filter, row, ta, tau) {
                    Ok(true) => writer.row(terms, out, tau, ta, tau, row)?,
                    Ok(false) => {}
                    Err(r) => return Ok(Err(r)),
                }
            }
            // the others kept for the later instants, by the next SEQ's key
            for (i, (rows, starts)) in now.iter().enumerate().take(n - 1) {
                for (row, &ta) in rows.chunks_exact(vars).zip(starts) {
                    if !self.live(ta, tau) {
                        continue;
                    }
                    key.clear();
                    key.extend(self.keys[i + 1].iter().map(|&v| row[v]));
                    let b = match self.stores[i + 1].get_mut(key.as_slice()) {
                        Some(b) => b,
                        None => self.stores[i + 1]
                            .entry(key.clone().into_boxed_slice())
                            .or_default(),
                    };
                    b.push(Sol {
                        mu: row.into(),
                        ta,
                        tw: tau,
                    });
                    self.stored += 1;
                }
            }
            self.prune(tau);
            cache.values = values.cache;
            // the instant's events are evaluated: the kept solutions hold their ids
            let stores = &self.stores;
            let_go(feed, k, &mut held, |held| {
                for (key, b) in stores.iter().flat_map(|s| s.iter()) {
                    held.extend_from_slice(key);
                    for x in b {
                        held.extend_from_slice(&x.mu);
                    }
                }
            });
        }
        Ok(Ok(instants))
    }

    /// Drop the kept solutions the duration bound rules out from now on; amortised (done
    /// once the stores have doubled since the last time).
    fn prune(&mut self, tau: i64) {
        if self.bound.is_none() || self.stored < 2 * self.kept + 64 {
            return;
        }
        let mut n = 0;
        let bound = self.bound;
        let live = |ta: i64| {
            let (h, strict) = bound.expect("a bound");
            let d = tau.saturating_sub(ta);
            !(d > h || (strict && d >= h))
        };
        for s in &mut self.stores {
            s.retain(|_, b| {
                b.retain(|x| live(x.ta));
                n += b.len();
                !b.is_empty()
            });
        }
        self.stored = n;
        self.kept = n;
    }
}

// ---------------------------------------------------------------- ETALIS's modes

/// datime: (time, counter); less_datime compares both.
type Stamp = (i64, i64);

/// etr_db(T2, T1, B, A, C): B occurred at [T1, T2] and waits for the rule's other operand.
struct Goal {
    /// the event's content (its triples' ids, in the order of the nested contents: what
    /// etr_insf's retractall compares)
    content: Box<[TermId]>,
    mu: Box<[TermId]>,
    t1: Stamp,
    t2: Stamp,
}

/// An event: an atom's triple or an intermediate event, with its values and interval.
struct Occurred<'e> {
    content: &'e [TermId],
    mu: &'e [TermId],
    t1: Stamp,
    t2: Stamp,
}

/// etalis.py's `Machine` on ids.
struct Machine<'s> {
    rules: &'s [Rule],
    clauses: &'s [Clause],
    recent: bool,
    window: Option<(f64, bool)>,
    vars: usize,
    /// per rule: its goals (a seq rule's), by the shared variables' values, in store order;
    /// each an index into `goals`
    stores: Vec<HashMap<Box<[TermId]>, VecDeque<u32>>>,
    goals: Vec<Option<Goal>>,
    free: Vec<u32>,
    by_temp: HashMap<u32, Vec<usize>>,
    atom_clauses: Vec<usize>,
    counters: HashMap<i64, i64>,
    counted: usize,
    span: i64,
    size: i64,
    kept: i64,
    fired: Vec<(Box<[TermId]>, Stamp, Stamp)>,
    err: Option<Refused>,
    key: Vec<TermId>,
}

impl<'s> Machine<'s> {
    fn new(
        rules: &'s [Rule],
        clauses: &'s [Clause],
        recent: bool,
        window: Option<(f64, bool)>,
        vars: usize,
    ) -> Self {
        let mut by_temp: HashMap<u32, Vec<usize>> = HashMap::new();
        let mut atom_clauses = Vec::new();
        for (i, c) in clauses.iter().enumerate() {
            match c.trigger {
                Trigger::Temp(n) => by_temp.entry(n).or_default().push(i),
                Trigger::Atom(_) => atom_clauses.push(i),
            }
        }
        Machine {
            rules,
            clauses,
            recent,
            window,
            vars,
            stores: rules.iter().map(|_| HashMap::new()).collect(),
            goals: Vec::new(),
            free: Vec::new(),
            by_temp,
            atom_clauses,
            counters: HashMap::new(),
            counted: 0,
            span: 0,
            size: 0,
            kept: 0,
            fired: Vec::new(),
            err: None,
            key: Vec::new(),
        }
    }

    fn run(
        &mut self,
        feed: &mut impl Feed,
        cache: &mut Caches,
        out: &mut dyn Write,
    ) -> std::io::Result<Result<u64, Refused>> {
        let mut instants = 0;
        let mut last = None;
        let mut mu = vec![0; self.vars];
        let mut found: Vec<(usize, Box<[TermId]>)> = Vec::new();
        let mut held = Vec::new();
        let mut k = 0;
        loop {
            match feed.has(k) {
                Ok(true) => {}
                Ok(false) => break,
                Err(r) => return Ok(Err(r)),
            }
            let t = feed.time(k);
            cache.fresh(feed.generation());
            let terms = feed.terms();
            let mut values = Values {
                terms,
                cache: std::mem::take(&mut cache.values),
            };
            if last != Some(t) {
                instants += 1;
                last = Some(t);
            }
            // item(): a point's one label, then each triple an rdf/3 event with it
            let c = self.counters.entry(t).or_insert(0);
            *c += 1;
            let stamp = (t, *c);
            self.fired.clear();
            for tr in feed.triples_of(k) {
                // event_trigger of the triple: every clause it matches found first, then
                // each fired in clause order
                found.clear();
                for &ci in &self.atom_clauses {
                    let Trigger::Atom(p) = self.clauses[ci].trigger else {
                        continue;
                    };
                    if matches(&p, tr, &mut mu) {
                        found.push((ci, mu.as_slice().into()));
                    }
                }
                for (ci, m) in &found {
                    let e = Occurred {
                        content: tr,
                        mu: m,
                        t1: stamp,
                        t2: stamp,
                    };
                    self.act(*ci, &e, &mut values);
                }
            }
            if let Some(r) = self.err.take() {
                return Ok(Err(r));
            }
            for (m, t1, t2) in &self.fired {
                cache.writer.row(terms, out, t, t1.0, t2.0, m)?;
            }
            cache.values = values.cache;
            if self.window.is_some() {
                self.forget(t);
            }
            if self.counters.len() >= 2 * self.counted + 64 {
                self.forget_counters(t);
            }
            // the event is taken: the goals hold its ids
            k += 1;
            let (stores, goals) = (&self.stores, &self.goals);
            let_go(feed, k, &mut held, |held| {
                for key in stores.iter().flat_map(|s| s.keys()) {
                    held.extend_from_slice(key);
                }
                for g in goals.iter().flatten() {
                    held.extend_from_slice(&g.content);
                    held.extend_from_slice(&g.mu);
                }
            });
        }
        Ok(Ok(instants))
    }

    fn act(&mut self, ci: usize, e: &Occurred<'_>, values: &mut Values<'_>) {
        if self.err.is_some() {
            return;
        }
        let c = self.clauses[ci];
        match c.action {
            Action::Insert => self.insert(c.rule, e),
            Action::Check => self.check(c.rule, e, values),
            Action::Where => {
                let r = &self.rules[c.rule];
                match values.all(&r.conds, e.mu, e.t1.0, e.t2.0) {
                    Ok(true) => {
                        self.fire(c.rule, e.content, e.mu, e.t1, e.t2, values);
                    }
                    Ok(false) => {}
                    Err(r) => self.err = Some(r),
                }
            }
            Action::Event => {
                self.fire(c.rule, e.content, e.mu, e.t1, e.t2, values);
            }
        }
    }

    /// The goals' bucket of a rule for these values.
    fn bucket_key(&mut self, rule: usize, mu: &[TermId]) {
        self.key.clear();
        let shared = &self.rules[rule].shared;
        self.key.extend(shared.iter().map(|&v| mu[v]));
    }

    /// etr_insf: nothing if the very goal is stored; else the goals of the same content go
    /// (retractall) and it is stored, first (recent) or last (chronological).
    fn insert(&mut self, rule: usize, e: &Occurred<'_>) {
        self.bucket_key(rule, e.mu);
        let goals = &mut self.goals;
        let b = match self.stores[rule].get_mut(self.key.as_slice()) {
            Some(b) => b,
            None => self.stores[rule]
                .entry(self.key.clone().into_boxed_slice())
                .or_default(),
        };
        let mut same = false;
        for &g in b.iter() {
            let g = goals[g as usize].as_ref().expect("a stored goal");
            if *g.content == *e.content {
                if g.t1 == e.t1 && g.t2 == e.t2 {
                    return;
                }
                same = true;
            }
        }
        if same {
            let free = &mut self.free;
            b.retain(|&g| {
                let keep =
                    *goals[g as usize].as_ref().expect("a stored goal").content != *e.content;
                if !keep {
                    goals[g as usize] = None;
                    free.push(g);
                }
                keep
            });
        }
        let goal = Goal {
            content: e.content.into(),
            mu: e.mu.into(),
            t1: e.t1,
            t2: e.t2,
        };
        let id = match self.free.pop() {
            Some(id) => {
                goals[id as usize] = Some(goal);
                id
            }
            None => {
                goals.push(Some(goal));
                (goals.len() - 1) as u32
            }
        };
        if self.recent {
            b.push_front(id);
        } else {
            b.push_back(id);
        }
        self.size += 1;
    }

    /// The checking clause of a seq rule: the stored goals compatible with the event (the
    /// store as it was when called), each deleted (etr_delf), then less(T2, T3) and the
    /// window; the first that passes fires the head. A goal failing `less` is put back
    /// (front under recent, end under chronological); one failing the window stays deleted.
    fn check(&mut self, rule: usize, e: &Occurred<'_>, values: &mut Values<'_>) {
        self.bucket_key(rule, e.mu);
        let Some(b) = self.stores[rule].get(self.key.as_slice()) else {
            return;
        };
        let snapshot: Vec<u32> = b.iter().copied().collect();
        let key: Box<[TermId]> = self.key.as_slice().into();
        let mut content: Vec<TermId> = Vec::new();
        let mut mu: Vec<TermId> = Vec::new();
        for g in snapshot {
            let (t1, t2, ok) = {
                let goal = self.goals[g as usize].as_ref().expect("a stored goal");
                if !compatible(&goal.mu, e.mu) {
                    continue;
                }
                content.clear();
                content.extend_from_slice(&goal.content);
                content.extend_from_slice(e.content);
                mu.clear();
                mu.extend_from_slice(&goal.mu);
                for (v, &y) in e.mu.iter().enumerate() {
                    if y != 0 {
                        mu[v] = y;
                    }
                }
                (goal.t1, e.t2, goal.t2 < e.t1)
            };
            let b = self.stores[rule].get_mut(&key).expect("the bucket");
            if let Some(i) = b.iter().position(|&x| x == g) {
                b.remove(i);
            }
            self.size -= 1;
            if ok {
                if self.fire(rule, &content, &mu, t1, t2, values) {
                    self.drop_goal(g);
                    return;
                }
                // the window failed on the goal's own start: it fails for every later
                // event too (as etalis.py, which does not put it back)
                self.drop_goal(g);
                continue;
            }
            let b = self.stores[rule].get_mut(&key).expect("the bucket");
            if self.recent {
                b.push_front(g);
            } else {
                b.push_back(g);
            }
            self.size += 1;
        }
    }

    fn drop_goal(&mut self, g: u32) {
        self.goals[g as usize] = None;
        self.free.push(g);
    }

    /// check_event_rule_conditions (the window), then the head event; whether it fired.
    fn fire(
        &mut self,
        rule: usize,
        content: &[TermId],
        mu: &[TermId],
        t1: Stamp,
        t2: Stamp,
        values: &mut Values<'_>,
    ) -> bool {
        if let Some((h, strict)) = self.window {
            let d = (t2.0 - t1.0) as f64;
            if d > h || (strict && d >= h) {
                return false;
            }
        }
        let head = self.rules[rule].head;
        match self.by_temp.get(&head) {
            None => {
                if head == 0 {
                    self.fired.push((mu.into(), t1, t2));
                }
            }
            Some(cs) => {
                let cs = cs.clone();
                let e = Occurred {
                    content,
                    mu,
                    t1,
                    t2,
                };
                for ci in cs {
                    self.act(ci, &e, values);
                }
            }
        }
        true
    }

    /// Drop the goals no later event can use (every step that could take one would fail
    /// the window); amortised, as etalis.py's `_forget`.
    fn forget(&mut self, now: i64) {
        if self.size < 2 * self.kept + 64 {
            return;
        }
        let (h, strict) = self.window.expect("a window");
        let goals = &mut self.goals;
        let free = &mut self.free;
        let mut n = 0;
        for s in &mut self.stores {
            s.retain(|_, b| {
                b.retain(|&g| {
                    let t = goals[g as usize].as_ref().expect("a stored goal").t1.0;
                    let d = (now - t) as f64;
                    let keep = !(d > h || (strict && d >= h));
                    if !keep {
                        goals[g as usize] = None;
                        free.push(g);
                    }
                    keep
                });
                n += b.len() as i64;
                !b.is_empty()
            });
        }
        self.size = n;
        self.kept = n;
    }

    /// etalis.py's `_forget_counters`: a second's counter kept while a goal holds a label
    /// of it or a later item could start there.
    fn forget_counters(&mut self, now: i64) {
        let mut held: hashbrown::HashSet<i64> = hashbrown::HashSet::new();
        held.insert(now);
        for b in self.stores.iter().flat_map(|s| s.values()) {
            for &g in b {
                let g = self.goals[g as usize].as_ref().expect("a stored goal");
                held.insert(g.t1.0);
                held.insert(g.t2.0);
            }
        }
        let low = now - self.span;
        self.counters.retain(|t, _| *t >= low || held.contains(t));
        self.counted = self.counters.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_events;

    const EX: &str = "http://example.org/";

    fn stream(items: &[(i64, &str, &str, i64)]) -> String {
        let mut s = String::new();
        for (k, (t, key, kind, v)) in items.iter().enumerate() {
            s += &format!(
                "<{EX}e/{k}> <http://www.w3.org/ns/prov#generatedAtTime> {t} .\n\
                 <{EX}e/{k}> {{ <{EX}{key}> <{EX}{kind}> {v} . }}\n"
            );
        }
        s
    }

    fn run_on(doc: &str, mode: impl Fn(&Terms) -> Mode, vars: usize) -> String {
        let points = vec!["http://www.w3.org/ns/prov#generatedAtTime".to_string()];
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &points, 1 << 20).expect("read");
        let spec = Spec {
            mode: mode(&terms),
            vars,
            project: vec![
                ("k".into(), Some(0)),
                ("a".into(), Some(1)),
                ("b".into(), Some(2)),
            ],
            format: Format::Jsonl,
        };
        let mut out = Vec::new();
        run(&spec, &ev, &terms, &mut out).expect("io").expect("ran");
        String::from_utf8(out).expect("utf-8")
    }

    fn pat(terms: &Terms, kind: &str, v: usize) -> [Slot; 3] {
        let iri = format!("{EX}{kind}");
        let p = terms.get_ref(oxrdf::NamedNodeRef::new_unchecked(&iri).into());
        [Slot::Var(0), Slot::Const(p), Slot::Var(v)]
    }

    fn int(v: i64) -> Num {
        Num::Const(Val::Int(v))
    }

    #[test]
    fn unrestricted_takes_every_earlier_left_in_order() {
        let doc = stream(&[
            (1, "c0", "a", 5),
            (2, "c0", "a", 20),
            (3, "c1", "a", 1),
            (4, "c0", "b", 30),
        ]);
        let got = run_on(
            &doc,
            |t| Mode::Unrestricted {
                patterns: vec![pat(t, "a", 1), pat(t, "b", 2)],
                filter: vec![Cmp {
                    left: Num::Var(2),
                    op: Op::Gt,
                    right: Num::Arith(Box::new(Num::Var(1)), Arith::Add, Box::new(int(10))),
                }],
            },
            3,
        );
        let x = "\"^^<http://www.w3.org/2001/XMLSchema#integer>";
        assert_eq!(
            got,
            format!(
                "{{\"time\": 4, \"from\": 1, \"to\": 4, \"bindings\": {{\"k\": \"<{EX}c0>\", \"a\": \"\\\"5\\{x}\", \"b\": \"\\\"30\\{x}\"}}}}\n"
            )
        );
    }

    #[test]
    fn unrestricted_duration_bounds_the_kept_solutions() {
        let doc = stream(&[(1, "c0", "a", 1), (5, "c0", "a", 2), (12, "c0", "b", 3)]);
        let got = run_on(
            &doc,
            |t| Mode::Unrestricted {
                patterns: vec![pat(t, "a", 1), pat(t, "b", 2)],
                filter: vec![Cmp {
                    left: Num::Duration,
                    op: Op::Le,
                    right: int(10),
                }],
            },
            3,
        );
        assert_eq!(got.lines().count(), 1);
        assert!(
            got.starts_with("{\"time\": 12, \"from\": 5, \"to\": 12"),
            "{got}"
        );
    }

    fn etalis(t: &Terms, recent: bool) -> Mode {
        Mode::Etalis {
            rules: vec![Rule {
                op: RuleOp::Seq,
                head: 0,
                conds: vec![],
                shared: vec![0],
            }],
            clauses: vec![
                Clause {
                    trigger: Trigger::Atom(pat(t, "b", 2)),
                    action: Action::Check,
                    rule: 0,
                },
                Clause {
                    trigger: Trigger::Atom(pat(t, "a", 1)),
                    action: Action::Insert,
                    rule: 0,
                },
            ],
            recent,
            window: Some((10.0, false)),
        }
    }

    #[test]
    fn etalis_modes_take_the_oldest_or_newest_goal_and_consume_it() {
        let doc = stream(&[
            (1, "c0", "a", 1),
            (2, "c0", "a", 2),
            (3, "c0", "b", 3),
            (4, "c0", "b", 4),
        ]);
        let chrono = run_on(&doc, |t| etalis(t, false), 3);
        let recent = run_on(&doc, |t| etalis(t, true), 3);
        let froms = |s: &str| -> Vec<String> {
            s.lines()
                .map(|l| l.split(", \"to\"").next().unwrap_or("").to_string())
                .collect()
        };
        assert_eq!(
            froms(&chrono),
            ["{\"time\": 3, \"from\": 1", "{\"time\": 4, \"from\": 2"]
        );
        assert_eq!(
            froms(&recent),
            ["{\"time\": 3, \"from\": 2", "{\"time\": 4, \"from\": 1"]
        );
    }

    #[test]
    fn a_value_not_decided_here_refuses() {
        let doc = stream(&[(1, "c0", "a", 1), (2, "c0", "b", 3)]).replace(" 3 .", " \"x\" .");
        let points = vec!["http://www.w3.org/ns/prov#generatedAtTime".to_string()];
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &points, 1 << 20).expect("read");
        let spec = Spec {
            mode: Mode::Unrestricted {
                patterns: vec![pat(&terms, "a", 1), pat(&terms, "b", 2)],
                filter: vec![Cmp {
                    left: Num::Var(2),
                    op: Op::Gt,
                    right: Num::Var(1),
                }],
            },
            vars: 3,
            project: vec![],
            format: Format::Jsonl,
        };
        let mut out = Vec::new();
        assert!(run(&spec, &ev, &terms, &mut out).expect("io").is_err());
    }
}
