//! RSEP-QL's MATCH on ids (issue 50): a MATCH-only `SELECT` (or the MATCH under FILTERs
//! comparing numbers, decided as [`crate::epsparql`] decides them, on the MATCH's solutions
//! as pyoxigraph filters their VALUES) over landmark windows of one stream (read in parts:
//! [`crate::source`]), its event pattern (EVENT, SEQ, FIRST, LAST) under one of 000's selection
//! policies, evaluated at every arrival instant as rsep/runtime/windowed.py does, rows
//! written as rsep/runtime/sinks.py writes them.
//!
//! Each basic event pattern is one triple pattern; its mappings are computed once per stream
//! item as the item enters the BEP's window (Eq. 4), kept in arrival order with indexes by
//! the values of the variables a lookup binds. At each evaluation instant (each distinct
//! event time: the query reports on arrival) the pattern is evaluated as
//! rsep/events/incremental.py's `IncrementalMatcher` evaluates it, so the rows come in its
//! order:
//!
//! * an UNRESTRICTED pure sequence (SEQs of BEPs, no FIRST / LAST): its delta mode, each new
//!   match found once from its first new mapping and kept, the matches listed in the order
//!   they were found ([`Delta`]);
//! * anything else: rsep/events/reference.py's equations (Eqs. 5-11), over the live
//!   mappings, with consumption (Appendix A's P^c / P^r: the items that justify an output
//!   are invisible to every later evaluation) applied by the lookups ([`Reference`]); the
//!   choice among candidates is [`crate::policy`]'s, 000's one policy implementation.
//!
//! It *refuses* (the caller runs today's path) what it cannot be sure to write as today's
//! path does: an item with two solutions of one BEP (rsep asks pyoxigraph, whose order the
//! rows show), an evaluation with more rows than the run's limit, a window over its triples.

use crate::dictionary::{TermId, Terms};
use crate::epsparql::{Cmp, Values};
use crate::policy::{self, Consumption, Policy};
use crate::select::{json_string, Done, R2s, Refused, Slot};
use crate::source::{Feed, Source};
use hashbrown::HashMap;
use std::io::Write;

/// An event pattern over the BEPs (by number).
#[derive(Clone, Debug)]
pub enum Expr {
    Bep(usize),
    First(Box<Expr>),
    Last(Box<Expr>),
    Seq(Box<Expr>, Box<Expr>),
}

impl Expr {
    /// The BEPs at the leaves, left to right (rsep.algebra.events.EventPattern.beps).
    fn leaves(&self, out: &mut Vec<usize>) {
        match self {
            Expr::Bep(b) => out.push(*b),
            Expr::First(e) | Expr::Last(e) => e.leaves(out),
            Expr::Seq(a, b) => {
                a.leaves(out);
                b.leaves(out);
            }
        }
    }

    fn pure_sequence(&self) -> bool {
        match self {
            Expr::Bep(_) => true,
            Expr::First(_) | Expr::Last(_) => false,
            Expr::Seq(a, b) => a.pure_sequence() && b.pure_sequence(),
        }
    }

    /// Leaves in order and, per SEQ node, (a, m, b): leaves a..m end before leaf m starts
    /// (incremental.py's `_constraints`).
    fn constraints(&self, start: usize, out: &mut Vec<(usize, usize)>) -> usize {
        match self {
            Expr::Seq(l, r) => {
                let nl = l.constraints(start, out);
                let nr = r.constraints(start + nl, out);
                out.push((start, start + nl));
                nl + nr
            }
            Expr::First(e) | Expr::Last(e) => e.constraints(start, out),
            Expr::Bep(_) => 1,
        }
    }
}

/// A basic event pattern: one triple pattern, over a landmark window from `t0`.
#[derive(Clone, Debug)]
pub struct Bep {
    pub pattern: [Slot; 3],
    pub t0: i64,
}

/// An output column: a variable's value (None: never bound), or the match's interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    Var(Option<usize>),
    From,
    To,
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub beps: Vec<Bep>,
    pub expr: Expr,
    pub policy: Policy,
    pub vars: usize,
    /// per output column, in the projection's order: its name and what it reads
    pub project: Vec<(String, Col)>,
    /// the FILTER of the MATCH's group (a conjunction; empty: none), on its solutions as
    /// pyoxigraph evaluates it over their VALUES
    pub filter: Vec<Cmp>,
    pub r2s: R2s,
    pub max_window_triples: u64,
    pub max_results: u64,
    pub tsv: bool,
}

/// A BEP's mapping on one item: its values (every variable; 0 unbound), the item's time
/// (point events: t1 = t2) and number.
struct Leaf {
    mu: Box<[TermId]>,
    t: i64,
    item: u32,
}

/// An event mapping (mu, t1, t2) with its justification (the items, Appendix A).
#[derive(Clone, Debug)]
pub struct Em {
    pub mu: Box<[TermId]>,
    pub t1: i64,
    pub t2: i64,
    pub just: Vec<u32>,
}

fn merge(a: &[TermId], b: &[TermId]) -> Box<[TermId]> {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| if x != 0 { x } else { y })
        .collect()
}

/// Mappings (their numbers) by the values of some variables.
type Buckets = HashMap<Box<[TermId]>, Vec<u32>>;

/// A BEP's mappings, in arrival order, and its indexes by the values of a set of its
/// variables (one per set a lookup asked for, built on first use, then maintained).
struct Store {
    vars: Vec<usize>,
    maps: Vec<Leaf>,
    index: HashMap<Vec<usize>, Buckets>,
}

impl Store {
    fn key(names: &[usize], mu: &[TermId]) -> Box<[TermId]> {
        names.iter().map(|&v| mu[v]).collect()
    }

    fn push(&mut self, m: Leaf) {
        let k = self.maps.len() as u32;
        for (names, index) in self.index.iter_mut() {
            index.entry(Self::key(names, &m.mu)).or_default().push(k);
        }
        self.maps.push(m);
    }

    /// The mappings (their numbers, in arrival order) whose values agree with `subst` on
    /// the variables both bind.
    fn lookup(&mut self, subst: &[TermId]) -> Option<&[u32]> {
        let names: Vec<usize> = self
            .vars
            .iter()
            .copied()
            .filter(|&v| subst[v] != 0)
            .collect();
        if names.is_empty() {
            return None;
        }
        let maps = &self.maps;
        let index = self.index.entry(names.clone()).or_insert_with(|| {
            let mut ix: Buckets = HashMap::new();
            for (k, m) in maps.iter().enumerate() {
                ix.entry(Self::key(&names, &m.mu))
                    .or_default()
                    .push(k as u32);
            }
            ix
        });
        Some(
            index
                .get(&Self::key(&names, subst))
                .map_or(&[][..], |v| v.as_slice()),
        )
    }
}

/// The pattern's solutions on an item's (distinct) triples, or Err: two of them.
fn solve(p: &[Slot; 3], triples: &[[TermId; 3]], vars: usize) -> Result<Option<Box<[TermId]>>, ()> {
    let mut found: Option<([TermId; 3], Box<[TermId]>)> = None;
    let mut mu = vec![0; vars];
    'next: for t in triples {
        mu.fill(0);
        for k in 0..3 {
            match p[k] {
                Slot::Const(c) => {
                    if c != Some(t[k]) {
                        continue 'next;
                    }
                }
                Slot::Var(v) => {
                    if mu[v] == 0 {
                        mu[v] = t[k];
                    } else if mu[v] != t[k] {
                        continue 'next;
                    }
                }
            }
        }
        match &found {
            // (an item is a set: a repeated triple is one solution)
            Some((seen, _)) if seen == t => {}
            Some(_) => return Err(()),
            None => found = Some((*t, mu.clone().into_boxed_slice())),
        }
    }
    Ok(found.map(|(_, mu)| mu))
}

/// The generic evaluator: rsep/events/reference.py's `evaluate` over the stores.
struct Reference<'a> {
    stores: &'a mut [Store],
    consumed: &'a [bool],
    policy: Policy,
}

fn key(m: &Em) -> (i64, i64) {
    (m.t2, m.t1)
}

impl Reference<'_> {
    /// <<E>>^t_W with W = W^[0, hi] (None: W^id), under the substitution `subst`.
    fn eval(&mut self, e: &Expr, hi: Option<i64>, subst: &[TermId]) -> Vec<Em> {
        match e {
            Expr::Bep(b) => {
                let consumed = self.consumed;
                let store = &mut self.stores[*b];
                let mut out = Vec::new();
                let mut take = |m: &Leaf| {
                    if hi.is_none_or(|h| m.t <= h) && m.t >= 0 && !consumed[m.item as usize] {
                        out.push(Em {
                            mu: m.mu.clone(),
                            t1: m.t,
                            t2: m.t,
                            just: vec![m.item],
                        });
                    }
                };
                match store.lookup(subst) {
                    Some(ks) => {
                        let ks = ks.to_vec();
                        for k in ks {
                            take(&store.maps[k as usize]);
                        }
                    }
                    None => store.maps.iter().for_each(&mut take),
                }
                out
            }
            Expr::First(x) => policy::first(self.eval(x, hi, subst), key),
            Expr::Last(x) => policy::last(self.eval(x, hi, subst), key),
            Expr::Seq(l, r) => self.seq(l, r, hi, subst),
        }
    }

    fn seq(&mut self, l: &Expr, r: &Expr, hi: Option<i64>, subst: &[TermId]) -> Vec<Em> {
        let before = |t3: i64| Some(hi.map_or(t3 - 1, |h| h.min(t3 - 1)));
        let join = |m1: &Em, m2: &Em| {
            let mut just = m1.just.clone();
            just.extend_from_slice(&m2.just);
            Em {
                mu: merge(&m1.mu, &m2.mu),
                t1: m1.t1,
                t2: m2.t2,
                just,
            }
        };
        let rights = self.eval(r, hi, subst);
        let mut out = Vec::new();
        match self.policy {
            Policy::Unrestricted => {
                // Eq. (7)
                for m2 in &rights {
                    for m1 in self.eval(l, before(m2.t1), &merge(subst, &m2.mu)) {
                        out.push(join(&m1, m2));
                    }
                }
            }
            Policy::Naive => {
                // Eq. (9)
                for m2 in policy::last(rights, key) {
                    let lefts = self.eval(l, hi, &merge(subst, &m2.mu));
                    for m1 in policy::last(lefts, key) {
                        if key(&m1) < key(&m2) {
                            out.push(join(&m1, &m2));
                        }
                    }
                }
            }
            Policy::Chronological | Policy::Recent => {
                // Eqs. (10) / (11): the one implementation EP-SPARQL's formal policies
                // select by too (crate::formal)
                let p = self.policy;
                out = policy::seq(
                    p,
                    rights,
                    |m2| self.eval(l, before(m2.t1), &merge(subst, &m2.mu)),
                    key,
                    key,
                    |m| &m.mu[..],
                    join,
                );
            }
        }
        out
    }
}

/// An UNRESTRICTED pure sequence's delta mode (incremental.py's `evaluate` with `delta`):
/// the matches kept, each new one found once, from its first new mapping.
struct Delta {
    /// per leaf, its BEP
    leaves: Vec<usize>,
    /// per leaf, the leaves that end before it starts
    before: Vec<Vec<usize>>,
    results: Vec<Em>,
}

impl Delta {
    #[allow(clippy::too_many_arguments)]
    fn extend(
        &mut self,
        stores: &mut [Store],
        old: &[usize],
        j: usize,
        fixed: usize,
        fixed_k: u32,
        chosen: &mut Vec<u32>,
        vars: usize,
    ) {
        let n = self.leaves.len();
        if j == n {
            let mut mu = vec![0; vars].into_boxed_slice();
            let mut just = Vec::with_capacity(n);
            for (i, &k) in chosen.iter().enumerate() {
                let m = &stores[self.leaves[i]].maps[k as usize];
                mu = merge(&mu, &m.mu);
                just.push(m.item);
            }
            let first = &stores[self.leaves[0]].maps[chosen[0] as usize];
            let last = &stores[self.leaves[n - 1]].maps[chosen[n - 1] as usize];
            let em = Em {
                mu,
                t1: first.t,
                t2: last.t,
                just,
            };
            self.results.push(em);
            return;
        }
        let b = self.leaves[j];
        if j == fixed {
            chosen.push(fixed_k);
            self.extend(stores, old, j + 1, fixed, fixed_k, chosen, vars);
            chosen.pop();
            return;
        }
        // the values bound so far: the fixed mapping's and the chosen ones'
        let mut acc = stores[self.leaves[fixed]].maps[fixed_k as usize].mu.clone();
        for (i, &k) in chosen.iter().enumerate() {
            acc = merge(&acc, &stores[self.leaves[i]].maps[k as usize].mu);
        }
        let bound = self.before[j]
            .iter()
            .map(|&i| stores[self.leaves[i]].maps[chosen[i] as usize].t)
            .max();
        let cands: Vec<u32> = match stores[b].lookup(&acc) {
            Some(ks) => ks.to_vec(),
            None => (0..stores[b].maps.len() as u32).collect(),
        };
        for k in cands {
            // (leaves before the fixed one take old mappings only)
            if j < fixed && k as usize >= old[b] {
                continue;
            }
            if bound.is_some_and(|bd| stores[b].maps[k as usize].t <= bd) {
                continue;
            }
            chosen.push(k);
            self.extend(stores, old, j + 1, fixed, fixed_k, chosen, vars);
            chosen.pop();
        }
    }
}

/// E_1 SEQ^c / SEQ^r E_2 of two BEPs (incremental.py's `_trim` and `_pair`): Eq. (10) /
/// (11) over the live candidates only. A consumed item is gone for good (an item enters a
/// landmark window once and never leaves it), and so is a right mapping that no unconsumed
/// left one ends before: items come in time order, so every left mapping still to come
/// ends at or after the instant of this evaluation, where the right one started.
struct Pair {
    /// the variables both BEPs bind (the left mappings' buckets)
    shared: Vec<usize>,
    lefts: Vec<Leaf>,
    buckets: Buckets,
    /// the right mappings still usable, in arrival order
    rights: Vec<Leaf>,
}

impl Pair {
    fn add_left(&mut self, m: Leaf) {
        let k = self.lefts.len() as u32;
        self.buckets
            .entry(Store::key(&self.shared, &m.mu))
            .or_default()
            .push(k);
        self.lefts.push(m);
    }

    /// pick(FIRST / LAST) of the unconsumed left mappings that end before `t1`, from the
    /// bucket of `mu`'s shared values (in arrival order, so in time order), consumed
    /// entries at the scanned end let go of.
    fn pick(&mut self, policy: Policy, mu: &[TermId], t1: i64, consumed: &[bool]) -> Vec<u32> {
        let Some(bucket) = self.buckets.get_mut(&Store::key(&self.shared, mu)) else {
            return Vec::new();
        };
        let lefts = &self.lefts;
        let gone = |k: &u32| consumed[lefts[*k as usize].item as usize];
        let mut out = Vec::new();
        if policy == Policy::Chronological {
            let lead = bucket.iter().take_while(|k| gone(k)).count();
            bucket.drain(..lead);
            let mut best = None;
            for &k in bucket.iter() {
                let t = lefts[k as usize].t;
                if t >= t1 || best.is_some_and(|b| t > b) {
                    break;
                }
                if !gone(&k) {
                    best = Some(t);
                    out.push(k);
                }
            }
        } else {
            while bucket.last().is_some_and(&gone) {
                bucket.pop();
            }
            let mut best = None;
            let end = bucket.partition_point(|&k| lefts[k as usize].t < t1);
            for &k in bucket[..end].iter().rev() {
                let t = lefts[k as usize].t;
                if best.is_some_and(|b| t < b) {
                    break;
                }
                if !gone(&k) {
                    best = Some(t);
                    out.push(k);
                }
            }
            out.reverse(); // (ties in the order of the entries, as last() keeps them)
        }
        out
    }

    fn eval(&mut self, policy: Policy, consumed: &[bool]) -> Vec<Em> {
        let mut rights = std::mem::take(&mut self.rights);
        rights.retain(|m| !consumed[m.item as usize]);
        let mut usable: Vec<(Leaf, Vec<u32>)> = Vec::with_capacity(rights.len());
        for m2 in rights {
            let picked = self.pick(policy, &m2.mu, m2.t, consumed);
            if !picked.is_empty() {
                usable.push((m2, picked));
            }
        }
        let chosen = policy::select(policy, &usable, |(m, _)| (m.t, m.t), |(m, _)| &m.mu[..]);
        let mut out = Vec::new();
        for ((m2, picked), &c) in usable.iter().zip(&chosen) {
            if c {
                for &k in picked {
                    let m1 = &self.lefts[k as usize];
                    out.push(Em {
                        mu: merge(&m1.mu, &m2.mu),
                        t1: m1.t,
                        t2: m2.t,
                        just: vec![m1.item, m2.item],
                    });
                }
            }
        }
        self.rights = usable.into_iter().map(|(m, _)| m).collect();
        out
    }
}

/// Writes rows as rsep/runtime/sinks.py's jsonl or tsv writes a MATCH's outputs (the terms
/// it writes are held: their ids and text never change).
struct Writer {
    cache: HashMap<TermId, Box<[u8]>>,
    names: Vec<Vec<u8>>,
    header: Option<Vec<u8>>,
    line: Vec<u8>,
    rows: u64,
}

type Row = Vec<Option<Value>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Value {
    Term(TermId),
    Time(i64),
}

impl Writer {
    fn text(&mut self, terms: &Terms, id: TermId, tsv: bool) -> &[u8] {
        self.cache.entry(id).or_insert_with(|| {
            let t = terms.term(id).map(|t| t.to_string()).unwrap_or_default();
            if tsv {
                t.into_bytes().into()
            } else {
                json_string(&t).into()
            }
        })
    }

    fn row(
        &mut self,
        spec: &Spec,
        out: &mut dyn Write,
        tau: i64,
        row: &Row,
        delete: bool,
        terms: &Terms,
    ) -> std::io::Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        if spec.tsv {
            if let Some(h) = self.header.take() {
                line.extend_from_slice(&h);
            }
            write!(line, "{tau}\t{}", if delete { "delete" } else { "insert" })?;
            for v in row {
                line.push(b'\t');
                match v {
                    Some(Value::Term(id)) => {
                        let t = self.text(terms, *id, true).to_vec();
                        line.extend_from_slice(&t);
                    }
                    Some(Value::Time(t)) => {
                        write!(line, "\"{t}\"^^<http://www.w3.org/2001/XMLSchema#integer>")?
                    }
                    None => {}
                }
            }
        } else {
            write!(line, "{{\"time\": {tau}")?;
            for (k, (_, col)) in spec.project.iter().enumerate() {
                if let (Col::From, Some(Value::Time(t))) = (col, row[k]) {
                    write!(line, ", \"from\": {t}")?;
                }
            }
            for (k, (_, col)) in spec.project.iter().enumerate() {
                if let (Col::To, Some(Value::Time(t))) = (col, row[k]) {
                    write!(line, ", \"to\": {t}")?;
                }
            }
            line.extend_from_slice(b", \"bindings\": {");
            let mut sep = false;
            for (k, v) in row.iter().enumerate() {
                if let Some(Value::Term(id)) = v {
                    if sep {
                        line.extend_from_slice(b", ");
                    }
                    sep = true;
                    let name = self.names[k].clone();
                    line.extend_from_slice(&name);
                    let t = self.text(terms, *id, false).to_vec();
                    line.extend_from_slice(&t);
                }
            }
            line.extend_from_slice(if delete {
                b"}, \"op\": \"delete\"}"
            } else {
                b"}}"
            });
        }
        line.push(b'\n');
        let done = out.write_all(&line);
        self.line = line;
        self.rows += 1;
        done
    }
}

/// A bag's counts, keys in the order of their first occurrence.
fn counts(rows: &[Row]) -> (HashMap<&Row, i64>, Vec<&Row>) {
    let mut c: HashMap<&Row, i64> = HashMap::new();
    let mut order = Vec::new();
    for r in rows {
        let n = c.entry(r).or_insert(0);
        if *n == 0 {
            order.push(r);
        }
        *n += 1;
    }
    (c, order)
}

/// An input the matcher reads events from: a [`Feed`] whose terms the matcher can hold (a
/// term of a kept mapping keeps its id through the dictionary's sweeps).
pub trait Input: Feed {
    fn keep(&mut self, id: TermId);
}

impl Input for Source {
    fn keep(&mut self, id: TermId) {
        if let Some(t) = self.terms().term(id).map(|t| t.into_owned()) {
            self.pin(t.as_ref());
        }
    }
}

/// Run the query over the events as an [`Input`] gives them (a stream file read in parts:
/// each event let go of once its mappings are made, the terms of the mappings kept held),
/// writing its rows to `out`: Ok(Err) when the native path refuses the input (what was
/// written is to be thrown away).
pub fn run_on(
    spec: &Spec,
    feed: &mut impl Input,
    out: &mut dyn Write,
) -> std::io::Result<Result<Done, Refused>> {
    macro_rules! has {
        ($k:expr) => {
            match feed.has($k) {
                Ok(b) => b,
                Err(r) => return Ok(Err(r)),
            }
        };
    }
    let vars = spec.vars;
    let mut leaves = Vec::new();
    spec.expr.leaves(&mut leaves);
    let mut stores: Vec<Store> = spec
        .beps
        .iter()
        .map(|b| {
            let mut vs: Vec<usize> = b
                .pattern
                .iter()
                .filter_map(|s| match s {
                    Slot::Var(v) => Some(*v),
                    Slot::Const(_) => None,
                })
                .collect();
            vs.sort_unstable();
            vs.dedup();
            Store {
                vars: vs,
                maps: Vec::new(),
                index: HashMap::new(),
            }
        })
        .collect();
    let delta = spec.policy == Policy::Unrestricted && spec.expr.pure_sequence();
    let mut pair = match &spec.expr {
        Expr::Seq(l, r) if matches!(spec.policy, Policy::Chronological | Policy::Recent) => {
            match (&**l, &**r) {
                (Expr::Bep(a), Expr::Bep(b)) if a != b => {
                    let shared: Vec<usize> = stores[*a]
                        .vars
                        .iter()
                        .copied()
                        .filter(|v| stores[*b].vars.contains(v))
                        .collect();
                    Some((
                        *a,
                        *b,
                        Pair {
                            shared,
                            lefts: Vec::new(),
                            buckets: HashMap::new(),
                            rights: Vec::new(),
                        },
                    ))
                }
                _ => None,
            }
        }
        _ => None,
    };
    let mut dm = Delta {
        before: {
            let mut cons = Vec::new();
            spec.expr.constraints(0, &mut cons);
            let mut before = vec![Vec::new(); leaves.len()];
            for (a, m) in cons {
                before[m].extend(a..m);
            }
            before
        },
        leaves: leaves.clone(),
        results: Vec::new(),
    };
    let mut consumed: Vec<bool> = Vec::new();
    let mut held: Vec<bool> = Vec::new(); // by id: held already
    let mut cache = Vec::new(); // the FILTER's values, by id
    let mut window_triples = vec![0u64; spec.beps.len()];
    let mut writer = Writer {
        cache: HashMap::new(),
        names: spec
            .project
            .iter()
            .map(|(n, _)| {
                let mut b = json_string(n);
                b.extend_from_slice(b": ");
                b
            })
            .collect(),
        header: spec.tsv.then(|| {
            let cols: Vec<&str> = spec.project.iter().map(|(n, _)| n.as_str()).collect();
            let mark = |c: &str| {
                if cols.contains(&c) {
                    format!("?{c}")
                } else {
                    c.to_owned()
                }
            };
            let mut row = vec![mark("time"), mark("op")];
            row.extend(cols.iter().map(|c| format!("?{c}")));
            let mut b = row.join("\t").into_bytes();
            b.push(b'\n');
            b
        }),
        line: Vec::new(),
        rows: 0,
    };
    let mut previous: Vec<Row> = Vec::new();
    let mut done = Done::default();
    let mut distinct: Vec<[TermId; 3]> = Vec::new();
    let mut k = 0;
    while has!(k) {
        let tau = feed.time(k);
        // the instant's items enter their windows; each BEP's mappings on them
        let old: Vec<usize> = stores.iter().map(|s| s.maps.len()).collect();
        while has!(k) && feed.time(k) == tau {
            let triples = feed.triples_of(k);
            let count = triples.len() as u64;
            consumed.push(false);
            distinct.clear();
            for t in triples {
                if !distinct.contains(t) {
                    distinct.push(*t);
                }
            }
            for (b, bep) in spec.beps.iter().enumerate() {
                if tau < bep.t0 {
                    continue; // (never inside a landmark window from t0)
                }
                window_triples[b] += count;
                if window_triples[b] > spec.max_window_triples {
                    return Ok(Err(Refused("a window's triples go over the limit".into())));
                }
                match solve(&bep.pattern, &distinct, vars) {
                    Err(()) => {
                        return Ok(Err(Refused(
                            "an item with two solutions of a BEP (rsep asks pyoxigraph, whose \
                             order the rows show)"
                                .into(),
                        )))
                    }
                    Ok(Some(mu)) => {
                        for &id in mu.iter() {
                            let i = id as usize;
                            if id != 0 && held.get(i) != Some(&true) {
                                if i >= held.len() {
                                    held.resize(i + 1, false);
                                }
                                held[i] = true;
                                feed.keep(id);
                            }
                        }
                        let m = Leaf {
                            mu,
                            t: tau,
                            item: k as u32,
                        };
                        match &mut pair {
                            Some((l, _, p)) if *l == b => p.add_left(m),
                            Some((_, r, p)) if *r == b => p.rights.push(m),
                            _ => stores[b].push(m),
                        }
                    }
                    Ok(None) => {}
                }
            }
            k += 1;
            feed.release(k);
        }
        // the evaluation at tau
        let found: Vec<Em> = if let Some((_, _, p)) = &mut pair {
            p.eval(spec.policy, &consumed)
        } else if delta {
            let n = leaves.len();
            for (i, &b) in leaves.iter().enumerate() {
                for fk in old[b]..stores[b].maps.len() {
                    let mut chosen = Vec::with_capacity(n);
                    dm.extend(&mut stores, &old, 0, i, fk as u32, &mut chosen, vars);
                }
            }
            dm.results.clone()
        } else {
            let mut r = Reference {
                stores: &mut stores,
                consumed: &consumed,
                policy: spec.policy,
            };
            r.eval(&spec.expr, None, &vec![0; vars])
        };
        if found.len() as u64 > spec.max_results {
            return Ok(Err(Refused(
                "an evaluation's rows go over the limit".into(),
            )));
        }
        if matches!(spec.policy, Policy::Chronological | Policy::Recent) {
            // (MATCH consumes what it selects; a FILTER after it reads that afterwards)
            for m in policy::consumed(Consumption::Selected, &found, &[]) {
                for &i in &m.just {
                    consumed[i as usize] = true;
                }
            }
        }
        done.evaluations += 1;
        let terms = feed.terms();
        // (the FILTER reads the kept mappings' terms alone, which are held: their values
        // stay valid from one evaluation to the next)
        let mut values = Values::with(terms, std::mem::take(&mut cache));
        let mut kept = Vec::with_capacity(found.len());
        for m in &found {
            match values.all(&spec.filter, &m.mu, m.t1, m.t2) {
                Ok(true) => kept.push(m),
                Ok(false) => {}
                Err(r) => return Ok(Err(r)),
            }
        }
        cache = values.into_cache();
        let rows: Vec<Row> = kept
            .into_iter()
            .map(|m| {
                spec.project
                    .iter()
                    .map(|(_, c)| match c {
                        Col::Var(v) => v.and_then(|v| match m.mu[v] {
                            0 => None,
                            id => Some(Value::Term(id)),
                        }),
                        Col::From => Some(Value::Time(m.t1)),
                        Col::To => Some(Value::Time(m.t2)),
                    })
                    .collect()
            })
            .collect();
        match spec.r2s {
            R2s::RStream => {
                for r in &rows {
                    writer.row(spec, out, tau, r, false, terms)?;
                }
            }
            R2s::IStream => {
                // R(t) - R(t'), bags, in R(t)'s order
                let (mut budget, _) = counts(&rows);
                let (prev, _) = counts(&previous);
                for (r, n) in prev {
                    if let Some(b) = budget.get_mut(r) {
                        *b -= n;
                    }
                }
                for r in &rows {
                    let b = budget.get_mut(r).expect("counted");
                    if *b > 0 {
                        *b -= 1;
                        writer.row(spec, out, tau, r, false, terms)?;
                    }
                }
            }
            R2s::DStream => {
                // R(t') - R(t): Counter subtraction keeps R(t')'s first-occurrence order
                let (now, _) = counts(&rows);
                let (prev, order) = counts(&previous);
                for r in order {
                    let gone = prev[r] - now.get(r).copied().unwrap_or(0);
                    for _ in 0..gone.max(0) {
                        writer.row(spec, out, tau, r, true, terms)?;
                    }
                }
            }
        }
        if spec.r2s != R2s::RStream {
            previous = rows;
        }
    }
    done.rows = writer.rows;
    Ok(Ok(done))
}
