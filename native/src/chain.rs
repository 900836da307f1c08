//! SPASEQ's chain engine on ids (issue 50, first to fourth stages): a SEQ of GPMs, each
//! plain, under Kleene+, negated or in a conjunction or disjunction, under `,` (strict
//! contiguity), `;` (skip-till-next) and `:` (skip-till-any), WITHIN tumbling windows, over
//! a stream file's events of ids as a [`Feed`] gives them (read in parts,
//! [`crate::source`]), writing its matches as rsep's sink does.
//!
//! The semantics are rsep/spaseq/chain.py's `ChainEngine` (NFA_scep's Algorithms 2 and 4 on
//! a straight line of states) and, for `:`, rsep/spaseq/nfa.py's `NFAEngine`: per instant,
//! runs of windows that ended before it go; from the last state down, a run at x_i whose
//! GPM matches the instant's event takes it (skip-till-next: the first match only, it
//! leaves x_i; skip-till-any: it stays at x_i and a copy goes on to x_(i+1)), a run under
//! strict contiguity that took nothing dies; then the event starts a run at x_1 when the
//! first GPM matches it; a run taking the last GPM is a match. At a Kleene+ state
//! (`NFAEngine._kleene`, Algorithm 3 with Defs. 13-14) a run that takes an event becomes two:
//! one iterating there (its next iteration strictly contiguous, or skip-till-next when the
//! Kleene+ leads; the GPM's own variables dropped before each iteration joins) and a copy
//! entering x_(i+1); the run that entered the state stays only under `:`. A negated GPM
//! before x_i (`A; B!; C`, Algorithm 9) is no state: a run that entered x_i dies at an event
//! it matches joined with the run's mappings, once x_i's own event has been taken (a copy
//! that took it goes on). A state may be a conjunction or disjunction of GPMs (002 Defs. 8, 9,
//! `NFAEngine._bop`): its alternatives, each a conjunction joined in order on the instant's
//! one event; a run takes the state by each alternative whose join is not empty (a copy each,
//! one step per conjunct). Today's engine shares the
//! runs of `:` that can only go on alike (one run whose history is a DAG of their paths,
//! enumerated when one completes); this one keeps each path as its own run, so it writes
//! the same matches (one per path) and has at least as many live runs as today's. An instant's matches are written ordered by the events they took, a
//! match's rows (a run holds every mapping its events' solutions joined into) by their
//! terms' text, as rsep/spaseq/runtime.py orders them.
//!
//! It *refuses* (and the caller runs today's path) any comparison whose operands it does not
//! decide exactly as rsep/sparql/filters.py does (anything but xsd:integer and its derived
//! types, xsd:decimal and xsd:double in the lexical forms that module reads itself), and
//! whatever would make today's path stop or warn (more live runs than `max_runs`, more
//! matches at one instant than `max_instant`). Its own count of live runs bounds today's
//! from above, so it refuses wherever today's path would drop runs, and sometimes where
//! today's shared runs would not: then today's path runs the query, as it would have.

use crate::bgp::Op;
use crate::dictionary::{TermId, Terms};
use crate::epsparql::{arith, Arith};
use crate::select::{json_string, Done, Refused, Slot};
use crate::source::{Streams, Whole};
use crate::stream::Events;
use hashbrown::{HashMap, HashSet};
use oxrdf::{LiteralRef, TermRef};
use std::cmp::Ordering;
use std::io::Write;

/// A number as rsep/sparql/filters.py's compiled comparisons read it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    Int(i64),
    /// an xsd:decimal: its value times 10^18 (below 10^17, at most 18 fractional digits,
    /// as filters.py's `_decimal` takes them), and the nearest double to it
    Dec(i128, f64),
    Dbl(f64),
    /// anything filters.py leaves to pyoxigraph, or that this engine does not decide
    Unsure,
}

const SCALE: i128 = 1_000_000_000_000_000_000;
const DEC_MAX: i128 = 100_000_000_000_000_000 * SCALE; // 10^17

const INTEGER_TYPES: [&str; 13] = [
    "integer",
    "int",
    "long",
    "short",
    "byte",
    "nonNegativeInteger",
    "positiveInteger",
    "negativeInteger",
    "nonPositiveInteger",
    "unsignedLong",
    "unsignedInt",
    "unsignedShort",
    "unsignedByte",
];

/// A term's value as a comparison operand.
pub fn value_of(t: Option<TermRef<'_>>) -> Val {
    match t {
        Some(TermRef::Literal(l)) => literal_value(l),
        _ => Val::Unsure,
    }
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn unsigned(s: &str) -> &str {
    s.strip_prefix(['+', '-']).unwrap_or(s)
}

/// `[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)`: filters.py's decimal (and a double's mantissa).
fn decimal_form(s: &str) -> bool {
    match unsigned(s).split_once('.') {
        None => digits(unsigned(s)),
        Some((i, f)) => (digits(i) && (f.is_empty() || digits(f))) || (i.is_empty() && digits(f)),
    }
}

fn literal_value(l: LiteralRef<'_>) -> Val {
    if l.language().is_some() {
        return Val::Unsure;
    }
    let v = l.value();
    let Some(local) = l
        .datatype()
        .as_str()
        .strip_prefix("http://www.w3.org/2001/XMLSchema#")
    else {
        return Val::Unsure;
    };
    if INTEGER_TYPES.contains(&local) {
        // lexical_int, then the 64 bits filters.py reads as an integer
        if !digits(unsigned(v)) {
            return Val::Unsure;
        }
        return v.parse::<i64>().map_or(Val::Unsure, Val::Int);
    }
    if local == "decimal" && decimal_form(v) {
        return decimal(v);
    }
    if local == "double" {
        let (mantissa, exp) = match v.find(['e', 'E']) {
            Some(k) => (&v[..k], Some(&v[k + 1..])),
            None => (v, None),
        };
        if decimal_form(mantissa) && exp.is_none_or(|e| digits(unsigned(e))) {
            return v.parse::<f64>().map_or(Val::Unsure, Val::Dbl);
        }
    }
    Val::Unsure
}

fn decimal(v: &str) -> Val {
    let neg = v.starts_with('-');
    let (int, frac) = unsigned(v).split_once('.').unwrap_or((unsigned(v), ""));
    let frac = frac.trim_end_matches('0');
    let int = int.trim_start_matches('0');
    if frac.len() > 18 || int.len() > 17 {
        return Val::Unsure;
    }
    let mut m: i128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        m = m * 10 + i128::from(b - b'0');
    }
    for _ in frac.len()..18 {
        m *= 10;
    }
    if m >= DEC_MAX {
        return Val::Unsure;
    }
    // (Rust's parser rounds to the nearest double, as Python's float(Decimal) does)
    let Ok(d) = v.parse::<f64>() else {
        return Val::Unsure;
    };
    Val::Dec(if neg { -m } else { m }, d)
}

/// `a op b` as filters.py's `_compare` decides it, or None where this engine does not.
pub fn compare(a: Val, op: Op, b: Val) -> Option<bool> {
    let ord = match (a, b) {
        (Val::Unsure, _) | (_, Val::Unsure) => return None,
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(&y)),
        (Val::Int(x), Val::Dec(y, _)) => Some((i128::from(x) * SCALE).cmp(&y)),
        (Val::Dec(x, _), Val::Int(y)) => Some(x.cmp(&(i128::from(y) * SCALE))),
        (Val::Dec(x, _), Val::Dec(y, _)) => Some(x.cmp(&y)),
        // a double against any number: both as doubles (SPARQL's promotion)
        (x, y) => double(x).partial_cmp(&double(y)),
    };
    Some(op.holds(ord))
}

fn double(v: Val) -> f64 {
    match v {
        Val::Int(i) => i as f64,
        Val::Dec(_, d) | Val::Dbl(d) => d,
        Val::Unsure => f64::NAN,
    }
}

/// A comparison's operand: a variable (its number), a constant number, or `+ - *` of two
/// (`?after >= ?before + 2`), computed as rsep/sparql/filters.py computes it
/// ([`crate::epsparql::arith`]).
#[derive(Clone, Debug)]
pub enum Operand {
    Var(usize),
    Const(Val),
    Arith(Box<Operand>, Arith, Box<Operand>),
}

/// `left op right`; a FILTER is a conjunction of these.
#[derive(Clone, Debug)]
pub struct Cmp {
    pub left: Operand,
    pub op: Op,
    pub right: Operand,
}

/// One state's GPM: its triple patterns over the event's graph, the variables it binds,
/// the FILTERs on those alone (`local`) and those reading earlier GPMs' (`stateful`).
#[derive(Clone, Debug)]
pub struct Gpm {
    /// the stream whose events it matches (its place among the feed's streams)
    pub stream: usize,
    pub patterns: Vec<[Slot; 3]>,
    pub binds: Vec<usize>,
    pub local: Vec<Cmp>,
    pub stateful: Vec<Cmp>,
}

#[derive(Clone, Debug)]
pub struct Spec {
    /// per state x_0 .. x_(n-1), in sequence order
    pub gpms: Vec<Gpm>,
    /// per state: the event selection before it (`First` for x_0 alone)
    pub ops: Vec<Select>,
    pub vars: usize,
    /// a variable every GPM binds: runs are kept by its value
    pub partition: Option<usize>,
    /// WITHIN, in the stream's time units; None: one unbounded window
    pub window: Option<i64>,
    /// the query's issue time; None: the first event's
    pub t0: Option<i64>,
    /// per output column: its name and variable (None: bound by no GPM)
    pub project: Vec<(String, Option<usize>)>,
    pub distinct: bool,
    pub max_runs: u64,
    pub max_instant: Option<u64>,
    /// today's engine keeps closed windows' runs it does not touch until every 1024th
    /// instant (NFAEngine without window pushing, Sec. 7.2.1): they count against
    /// `max_runs` until then
    pub lazy_expiry: bool,
    pub format: Format,
    /// per state: its atom's kind and what a match writes of it; empty: every atom a plain
    /// GPM, its leaf key its position
    pub atoms: Vec<Atom>,
    /// the negated GPMs (`!B`, Appendix B.0.1), which the states' `forbid` name
    pub negs: Vec<Gpm>,
}

/// A state's atom beyond its GPM: a plain one, or a Kleene+ (002 Defs. 13, 14) with what
/// each iteration binds afresh and what the output shows of its iterations.
#[derive(Clone, Debug, Default)]
pub struct Atom {
    pub kleene: bool,
    /// the GPM occurrence's leaf key: the order of a match's events of one time
    pub key: u64,
    /// Kleene+: the GPM's own variables (no earlier GPM binds them), dropped from the run
    /// before each iteration joins (the last iteration's are the visible ones)
    pub drop: Vec<usize>,
    /// Kleene+: the selected ones of those, in name order, each iteration's written in the
    /// match's `"iterations"` under the GPM's name
    pub shown: Vec<(String, usize)>,
    pub name: String,
    /// the negated GPMs (in `Spec::negs`) just before this state: a run that entered it
    /// dies at an event one of them matches joined with the run's mappings
    pub forbid: Vec<usize>,
    /// a conjunction or disjunction of GPMs (002 Defs. 8, 9) at this state, which then
    /// takes no other: its alternatives (one for `A & B`, one a GPM each for `A | B`),
    /// each a conjunction of GPMs with their leaf keys, joined in this order (a conjunct's
    /// stateful FILTERs may read the earlier ones'); empty: the state's GPM is
    /// `Spec::gpms`'s
    pub alts: Vec<Vec<(u64, Gpm)>>,
    /// an optional atom (`B?`, Appendix B.0.2): a run entering this state also goes on to
    /// the next at once (an ε edge), waiting there with the weaker of the two selections
    pub optional: bool,
}

/// A step's code in `Run::at`: the state in the low 16 bits, above them which of the
/// state's GPM occurrences took the event (0: its own, k: the k-th conjunct of its
/// alternatives, counted across them in order)
const STATE_BITS: u32 = 16;

fn state_of(code: u32) -> usize {
    (code & ((1 << STATE_BITS) - 1)) as usize
}

/// The operator between two GPMs of the SEQ: how a run at the later one's state takes
/// events (002 Def. 12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    /// x_0: no run waits there
    First,
    /// `,`: the very next instant, or the run dies
    Strict,
    /// `;`: the first event that extends the run, which then leaves the state
    Next,
    /// `:`: every event that extends the run, which stays for the later ones
    Any,
}

/// The less demanding of two selections (`Strategy.weaker`: `,` < `;` < `:`), what joins
/// the neighbours of a skipped atom.
fn weaker(a: Select, b: Select) -> Select {
    let rank = |s: Select| match s {
        Select::First | Select::Strict => 0,
        Select::Next => 1,
        Select::Any => 2,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

impl Select {
    pub fn parse(s: &str) -> Option<Select> {
        match s {
            "" => Some(Select::First),
            "," => Some(Select::Strict),
            ";" => Some(Select::Next),
            ":" => Some(Select::Any),
            _ => None,
        }
    }
}

/// How matches are written: rsep/runtime/sinks.py's jsonl or tsv, or `events`, what rsep
/// bench's worker writes for the harness (each match's events' times, `{"events": [...]}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Tsv,
    Events,
}

/// A partial match: its mappings (each a row of every variable, one after the other: most
/// often one), the times of the events it took, and the window it started in; with a
/// Kleene+ atom, also the state that took each event and each iteration's shown values;
/// and the event selection it waits with (its state's, or after skipping an optional atom
/// the weaker of that and the skipped one's: NFAEngine._enter).
#[derive(Clone)]
struct Run {
    vals: Vec<TermId>,
    times: Vec<i64>,
    at: Vec<u32>,
    iters: Vec<TermId>,
    window: i64,
    op: Select,
}

impl Run {
    /// The ids it holds, into `out`: its mappings' and its iterations' shown values (laid
    /// out as [`Run::took`] keeps them).
    fn ids(&self, spec: &Spec, out: &mut Vec<TermId>) {
        out.extend_from_slice(&self.vals);
        if self.iters.is_empty() {
            return;
        }
        let width = spec.project.len();
        let mut at = 0;
        for &s in &self.at {
            if spec.atoms[state_of(s)].shown.is_empty() {
                continue;
            }
            let m = self.iters[at] as usize;
            out.extend_from_slice(&self.iters[at + 1..at + 1 + m * width]);
            at += 1 + m * width;
        }
    }

    /// The run having taken the event at `t` in state `i`, with mappings `vals`; a Kleene+
    /// step whose values show keeps its mappings' selected values (their count, then each
    /// one's per output column), from which the match's iterations are written.
    fn took(&self, t: i64, i: usize, vals: &[TermId], spec: &Spec) -> Run {
        let mut times = Vec::with_capacity(self.times.len() + 1);
        times.extend_from_slice(&self.times);
        times.push(t);
        let (mut at, mut iters) = (Vec::new(), Vec::new());
        if !spec.atoms.is_empty() {
            at.reserve(self.at.len() + 1);
            at.extend_from_slice(&self.at);
            at.push(i as u32);
            let shows = !spec.atoms[i].shown.is_empty();
            if !self.iters.is_empty() || shows {
                iters.extend_from_slice(&self.iters);
            }
            if shows {
                let m = vals.len() / spec.vars;
                iters.reserve(1 + m * spec.project.len());
                iters.push(m as TermId);
                for env in vals.chunks_exact(spec.vars) {
                    iters.extend(spec.project.iter().map(|(_, v)| v.map_or(0, |v| env[v])));
                }
            }
        }
        Run {
            vals: vals.to_vec(),
            times,
            at,
            iters,
            window: self.window,
            op: spec.ops.get(i + 1).copied().unwrap_or(Select::First),
        }
    }

    /// The run having taken the instant's event at `t` by an alternative of a conjunction
    /// or disjunction, one step per GPM of it (`codes`, in leaf key order, as today's path
    /// sorts a match's steps), with mappings `vals` (a state that shows no iteration).
    fn took_all(&self, t: i64, codes: &[u32], vals: Vec<TermId>, op: Select) -> Run {
        let mut times = Vec::with_capacity(self.times.len() + codes.len());
        times.extend_from_slice(&self.times);
        times.extend(codes.iter().map(|_| t));
        let mut at = Vec::with_capacity(self.at.len() + codes.len());
        at.extend_from_slice(&self.at);
        at.extend_from_slice(codes);
        Run {
            vals,
            times,
            at,
            iters: self.iters.clone(),
            window: self.window,
            op,
        }
    }
}

/// The terms' values, decoded once per id when a comparison first reads it.
struct Values<'a> {
    terms: &'a Terms,
    cache: Vec<Option<Val>>,
}

impl Values<'_> {
    fn get(&mut self, id: TermId) -> Val {
        let k = id as usize;
        if k >= self.cache.len() {
            self.cache.resize(k + 1, None);
        }
        *self.cache[k].get_or_insert_with(|| value_of(self.terms.term(id)))
    }

    /// A variable's value: the run's when it has one, else the event's solution's (a run
    /// and a solution it joins agree where both bind).
    /// An arithmetic operand's value (filters.py's), Unsure where that module would leave
    /// it to pyoxigraph (an overflow, a decimal beyond its range) or an operand is unsure.
    fn operand(&mut self, o: &Operand, run: &[TermId], sol: &[TermId]) -> Val {
        match o {
            Operand::Const(v) => *v,
            Operand::Var(v) => match if run[*v] != 0 { run[*v] } else { sol[*v] } {
                0 => Val::Unsure, // (never: the planner's)
                id => self.get(id),
            },
            Operand::Arith(a, op, b) => self.arith(a, *op, b, run, sol),
        }
    }

    // (out of line: `operand` stays small enough to inline where no arithmetic is)
    #[inline(never)]
    fn arith(
        &mut self,
        a: &Operand,
        op: Arith,
        b: &Operand,
        run: &[TermId],
        sol: &[TermId],
    ) -> Val {
        let (x, y) = (self.operand(a, run, sol), self.operand(b, run, sol));
        arith(x, op, y).unwrap_or(Val::Unsure)
    }

    /// Whether every comparison holds over the run's values joined with the solution's;
    /// Err when one is not decided here.
    fn all(&mut self, cmps: &[Cmp], run: &[TermId], sol: &[TermId]) -> Result<bool, Refused> {
        for c in cmps {
            let a = self.operand(&c.left, run, sol);
            let b = self.operand(&c.right, run, sol);
            match compare(a, c.op, b) {
                Some(true) => {}
                Some(false) => return Ok(false),
                None => {
                    return Err(Refused(
                        "a FILTER compares a value the native path does not decide exactly".into(),
                    ))
                }
            }
        }
        Ok(true)
    }
}

/// The BGP's solutions over the triples (variables bound in `vals`, 0 for unbound), each
/// given to `found`.
fn solve(
    patterns: &[[Slot; 3]],
    triples: &[[TermId; 3]],
    vals: &mut [TermId],
    found: &mut dyn FnMut(&[TermId]),
) {
    let Some((first, rest)) = patterns.split_first() else {
        found(vals);
        return;
    };
    for t in triples {
        // the variables this triple binds, unbound again before the next one is tried
        let mut set: [usize; 3] = [usize::MAX; 3];
        let mut ok = true;
        for k in 0..3 {
            match first[k] {
                Slot::Const(c) => ok = c == Some(t[k]),
                Slot::Var(v) if vals[v] == 0 => {
                    vals[v] = t[k];
                    set[k] = v;
                }
                Slot::Var(v) => ok = vals[v] == t[k],
            }
            if !ok {
                break;
            }
        }
        if ok {
            solve(rest, triples, vals, found);
        }
        for &s in set.iter().filter(|&&s| s != usize::MAX) {
            vals[s] = 0;
        }
    }
}

/// The instant's distinct solutions of a GPM into `out`, one after the other (each a row
/// of every variable, the GPM's bound); Err for a FILTER not decided here. `scratch` and
/// `found` are buffers kept across instants.
// (inlined: out of line, the call costs some 5% of the engine's instructions an event)
#[inline(always)]
fn solutions(
    g: &Gpm,
    triples: &[[TermId; 3]],
    vars: usize,
    values: &mut Values<'_>,
    scratch: &mut Vec<TermId>,
    found: &mut Vec<TermId>,
    out: &mut Vec<TermId>,
) -> Result<(), Refused> {
    scratch.clear();
    scratch.resize(vars, 0);
    found.clear();
    solve(&g.patterns, triples, scratch, &mut |v| {
        // (distinct: a triple repeated in the event repeats its solutions)
        if !found.chunks_exact(vars).any(|s| s == v) {
            found.extend_from_slice(v);
        }
    });
    out.clear();
    for s in found.chunks_exact(vars) {
        if values.all(&g.local, s, s)? {
            out.extend_from_slice(s);
        }
    }
    Ok(())
}

/// A run's mappings joined with the solutions (Def. 11's join), the stateful FILTERs
/// applied, into `out` (cleared first); Err for a FILTER not decided here.
fn extend(
    g: &Gpm,
    run: &[TermId],
    sols: &[TermId],
    vars: usize,
    values: &mut Values<'_>,
    out: &mut Vec<TermId>,
) -> Result<(), Refused> {
    out.clear();
    for env in run.chunks_exact(vars) {
        for sol in sols.chunks_exact(vars) {
            if g.binds.iter().all(|&v| env[v] == 0 || env[v] == sol[v])
                && values.all(&g.stateful, env, sol)?
            {
                let at = out.len();
                out.extend_from_slice(env);
                for &v in &g.binds {
                    out[at + v] = sol[v];
                }
            }
        }
    }
    Ok(())
}

/// A conjunction's or disjunction's GPMs solved over the instant's event into `out` (per
/// alternative, per conjunct): an alternative's conjuncts after one without a solution are
/// not solved (Sec. 7.3's lazy evaluation: it cannot be taken) and left empty.
#[allow(clippy::too_many_arguments)]
fn solve_alts(
    alts: &[Vec<(u64, Gpm)>],
    triples: &[Vec<[TermId; 3]>],
    vars: usize,
    values: &mut Values<'_>,
    scratch: &mut Vec<TermId>,
    found: &mut Vec<TermId>,
    out: &mut [Vec<Vec<TermId>>],
) -> Result<(), Refused> {
    for (alt, out) in alts.iter().zip(out.iter_mut()) {
        let mut dead = false;
        for ((_, g), sols) in alt.iter().zip(out.iter_mut()) {
            if dead {
                sols.clear();
                continue;
            }
            solutions(g, &triples[g.stream], vars, values, scratch, found, sols)?;
            dead = sols.is_empty();
        }
    }
    Ok(())
}

/// A run's mappings joined with an alternative's conjuncts in order (`first`: the first
/// one's solutions the run can reach, `sols`: each one's), their stateful FILTERs applied
/// (NFAEngine._bop's And), into `out`; Err for a FILTER not decided here.
#[allow(clippy::too_many_arguments)]
fn extend_all(
    alt: &[(u64, Gpm)],
    run: &[TermId],
    first: &[TermId],
    sols: &[Vec<TermId>],
    vars: usize,
    values: &mut Values<'_>,
    out: &mut Vec<TermId>,
    spare: &mut Vec<TermId>,
) -> Result<(), Refused> {
    extend(&alt[0].1, run, first, vars, values, out)?;
    for ((_, g), sols) in alt.iter().zip(sols).skip(1) {
        if out.is_empty() {
            break;
        }
        extend(g, out, sols, vars, values, spare)?;
        std::mem::swap(out, spare);
    }
    Ok(())
}

struct Writer<'a> {
    terms: &'a Terms,
    cache: HashMap<TermId, Box<[u8]>>,
    format: Format,
    names: Vec<Vec<u8>>,
    header: Option<Vec<u8>>,
    line: Vec<u8>,
}

impl Writer<'_> {
    fn term(&mut self, id: TermId) -> &[u8] {
        let (terms, tsv) = (self.terms, self.format == Format::Tsv);
        self.cache.entry(id).or_insert_with(|| {
            let text = terms.term(id).map(|t| t.to_string()).unwrap_or_default();
            if tsv {
                text.into_bytes().into()
            } else {
                json_string(&text).into()
            }
        })
    }

    fn row(
        &mut self,
        out: &mut dyn Write,
        t: i64,
        times: &[i64],
        row: &[Option<TermId>],
        extra: &[u8],
    ) -> std::io::Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let first = times[0];
        if self.format == Format::Events {
            line.extend_from_slice(b"{\"events\": [");
            for (k, e) in times.iter().enumerate() {
                if k > 0 {
                    line.extend_from_slice(b", ");
                }
                write!(line, "{e}")?;
            }
            line.extend_from_slice(b"]}");
        } else if self.format == Format::Tsv {
            if let Some(h) = self.header.take() {
                out.write_all(&h)?;
            }
            write!(line, "{t}\tinsert")?;
            for v in row {
                line.push(b'\t');
                if let Some(id) = v {
                    line.extend_from_slice(self.term(*id));
                }
            }
        } else {
            write!(
                line,
                "{{\"time\": {t}, \"from\": {first}, \"to\": {t}, \"start\": {first}, \"bindings\": {{"
            )?;
            let mut sep = false;
            for (k, v) in row.iter().enumerate() {
                if let Some(id) = v {
                    if sep {
                        line.extend_from_slice(b", ");
                    }
                    sep = true;
                    let name = std::mem::take(&mut self.names[k]);
                    line.extend_from_slice(&name);
                    line.extend_from_slice(self.term(*id));
                    self.names[k] = name;
                }
            }
            line.push(b'}');
            line.extend_from_slice(extra);
            line.push(b'}');
        }
        line.push(b'\n');
        let done = out.write_all(&line);
        self.line = line;
        done
    }
}

/// `repr()` of the pyoxigraph object of a term, as Python's `str()` of a tuple holding it
/// writes it; None for a term this engine does not write so.
fn python_repr(t: Option<TermRef<'_>>) -> Option<String> {
    Some(match t? {
        TermRef::NamedNode(n) => format!("<NamedNode value={}>", n.as_str()),
        TermRef::BlankNode(b) => format!("<BlankNode value={}>", b.as_str()),
        TermRef::Literal(l) => match l.language() {
            Some(lang) => format!("<Literal value={} language={lang}>", l.value()),
            None => format!(
                "<Literal value={} datatype=<NamedNode value={}>>",
                l.value(),
                l.datatype().as_str()
            ),
        },
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

/// The iterations of a match's Kleene+ atoms for one of its rows, as today's path writes
/// them after the bindings (runtime.py's `_iterations`): `, "iterations": {"B": [[{"p":
/// ...}], ...]}`, per iteration the distinct values of the GPM's own selected variables in
/// the step's mappings that agree with the row on the others; nothing when no atom shows a
/// value. Several are ordered as today's path orders them, by Python's text of pyoxigraph's
/// objects (`python_repr`); Err for a term without one here.
fn iterations(
    writer: &mut Writer<'_>,
    spec: &Spec,
    r: &Run,
    row: &[Option<TermId>],
    out: &mut Vec<u8>,
) -> std::io::Result<Result<(), Refused>> {
    out.clear();
    if r.iters.is_empty() {
        return Ok(Ok(()));
    }
    let width = spec.project.len();
    let mut sols: Vec<&[TermId]> = Vec::new();
    out.extend_from_slice(b", \"iterations\": {");
    let mut first_atom = true;
    for (i, a) in spec.atoms.iter().enumerate() {
        if !a.kleene || a.shown.is_empty() {
            continue;
        }
        // the output columns of its own selected variables; the row's others must agree
        let own: Vec<usize> = a
            .shown
            .iter()
            .filter_map(|&(_, v)| spec.project.iter().position(|(_, p)| *p == Some(v)))
            .collect();
        if own.len() != a.shown.len() {
            return Ok(Err(Refused(
                "a Kleene+ variable shown but not selected".into(),
            )));
        }
        if !first_atom {
            out.extend_from_slice(b", ");
        }
        first_atom = false;
        out.extend_from_slice(&json_string(&a.name));
        out.extend_from_slice(b": [");
        let (mut at, mut first) = (0, true);
        for &s in &r.at {
            let s = state_of(s);
            if spec.atoms[s].shown.is_empty() {
                continue;
            }
            let m = r.iters[at] as usize;
            let envs = &r.iters[at + 1..at + 1 + m * width];
            at += 1 + m * width;
            if s != i {
                continue;
            }
            sols.clear();
            for env in envs.chunks_exact(width) {
                let agrees = (0..width)
                    .all(|c| own.contains(&c) || env[c] == 0 || row[c].is_none_or(|x| x == env[c]));
                if agrees && !sols.iter().any(|s| own.iter().all(|&c| s[c] == env[c])) {
                    sols.push(env);
                }
            }
            if sols.len() > 1 {
                // runtime.py sorts them by str() of their (name, term) tuples: Python's text
                // of pyoxigraph's term objects
                let mut keyed = Vec::with_capacity(sols.len());
                for env in &sols {
                    let mut key = String::from("(");
                    for (k, (name, _)) in a.shown.iter().enumerate() {
                        if k > 0 {
                            key.push_str(", ");
                        }
                        let Some(t) = python_repr(writer.terms.term(env[own[k]])) else {
                            return Ok(Err(Refused(
                                "a Kleene+ iteration's term without a Python text here".into(),
                            )));
                        };
                        key.push_str(&format!("('{name}', {t})"));
                    }
                    key.push_str(if a.shown.len() == 1 { ",)" } else { ")" });
                    keyed.push((key, *env));
                }
                keyed.sort_by(|x, y| x.0.cmp(&y.0));
                sols.clear();
                sols.extend(keyed.into_iter().map(|(_, env)| env));
            }
            out.extend_from_slice(if first { b"[" } else { b", [" });
            first = false;
            for (j, env) in sols.iter().enumerate() {
                if j > 0 {
                    out.extend_from_slice(b", ");
                }
                out.push(b'{');
                for (k, (name, _)) in a.shown.iter().enumerate() {
                    if k > 0 {
                        out.extend_from_slice(b", ");
                    }
                    out.extend_from_slice(&json_string(name));
                    out.extend_from_slice(b": ");
                    out.extend_from_slice(writer.term(env[own[k]]));
                }
                out.push(b'}');
            }
            out.push(b']');
        }
        out.push(b']');
    }
    out.push(b'}');
    Ok(Ok(()))
}

/// Run the chain over the events, writing each match's rows to `out`: Ok(Err) when the
/// native path refuses the input (what was written is to be thrown away).
pub fn run(
    spec: &Spec,
    ev: &Events,
    terms: &Terms,
    out: &mut dyn Write,
) -> std::io::Result<Result<Done, Refused>> {
    run_on(spec, &mut Whole { events: ev, terms }, out)
}

/// [`run`] over events as a [`Feed`] gives them: each instant's events let go of once it
/// was matched (a run keeps its events' ids and times, never the events), the dictionary
/// swept between instants keeping every id a live run or a partition key holds; the
/// writer's and the comparisons' per-id caches made again after a sweep.
pub fn run_on(
    spec: &Spec,
    feed: &mut impl Streams,
    out: &mut dyn Write,
) -> std::io::Result<Result<Done, Refused>> {
    let n = spec.gpms.len();
    let gpm_streams = spec.gpms.iter().chain(&spec.negs).chain(
        spec.atoms
            .iter()
            .flat_map(|a| a.alts.iter().flatten().map(|(_, g)| g)),
    );
    if gpm_streams.map(|g| g.stream).any(|s| s >= feed.count()) {
        return Ok(Err(Refused("a GPM without its stream".into())));
    }
    if n == 0
        || spec.vars == 0
        || spec.ops.len() != n
        || spec.ops[0] != Select::First
        || spec.ops[1..].contains(&Select::First)
        || spec.window.is_some_and(|w| w <= 0)
        || !(spec.atoms.is_empty() || spec.atoms.len() == n)
        || n >= 1 << STATE_BITS
        || spec.atoms.iter().any(|a| {
            (a.kleene && !a.alts.is_empty())
                || a.alts.iter().any(|alt| alt.is_empty())
                || (a.optional && (a.kleene || !a.alts.is_empty()))
        })
        || (!spec.atoms.is_empty() && spec.atoms.iter().all(|a| a.optional))
        // a state reached past optional ones at the start: one plain GPM (it starts runs as
        // x_0 does)
        || (1..spec.atoms.len())
            .take_while(|&s| spec.atoms[s - 1].optional)
            .any(|s| spec.atoms[s].kleene || !spec.atoms[s].alts.is_empty())
    {
        return Ok(Err(Refused("not a chain the native path runs".into())));
    }
    macro_rules! has {
        ($k:expr) => {
            match feed.has($k) {
                Ok(b) => b,
                Err(r) => return Ok(Err(r)),
            }
        };
    }
    feed.hold();
    let atoms = &spec.atoms[..];
    let kleene = |i: usize| atoms.get(i).is_some_and(|a| a.kleene);
    let alts_of = |i: usize| atoms.get(i).map_or(&[][..], |a| &a.alts[..]);
    let optional = atoms.iter().any(|a| a.optional);
    // per state, the leaf keys of its GPM occurrences by a step's code (`STATE_BITS`), and
    // per alternative the codes of its steps in leaf key order (the order of a match's
    // steps of one time in today's path)
    let mut step_keys: Vec<Vec<u64>> = Vec::with_capacity(n);
    let mut codes: Vec<Vec<Vec<u32>>> = Vec::with_capacity(n);
    for (i, a) in atoms.iter().enumerate() {
        let mut ks = vec![a.key];
        let mut per_alt = Vec::new();
        for alt in &a.alts {
            let mut cs: Vec<(u64, u32)> = Vec::new();
            for (key, _) in alt {
                cs.push((*key, (i as u32) | ((ks.len() as u32) << STATE_BITS)));
                ks.push(*key);
            }
            cs.sort_unstable();
            per_alt.push(cs.into_iter().map(|(_, c)| c).collect());
        }
        step_keys.push(ks);
        codes.push(per_alt);
    }
    let step_key = |code: u32| step_keys[state_of(code)][(code >> STATE_BITS) as usize];
    // the per-id caches, kept across instants while the feed's generation stays (the
    // comparisons' values, the writer's texts of terms, the rows' texts for ordering)
    let mut generation = feed.generation();
    let mut value_cache: Vec<Option<Val>> = Vec::new();
    let mut writer_cache: HashMap<TermId, Box<[u8]>> = HashMap::new();
    let mut names: Vec<Vec<u8>> = spec
        .project
        .iter()
        .map(|(name, _)| {
            let mut b = json_string(name);
            b.extend_from_slice(b": ");
            b
        })
        .collect();
    let mut header = (spec.format == Format::Tsv).then(|| {
        let mut h = b"time\top".to_vec();
        for (name, _) in &spec.project {
            h.extend_from_slice(format!("\t?{name}").as_bytes());
        }
        h.push(b'\n');
        h
    });
    let mut line_buf: Vec<u8> = Vec::new();
    if !has!(0) {
        return Ok(Ok(Done::default()));
    }
    let t0 = spec.t0.unwrap_or_else(|| feed.time(0));
    // per state x_1 .. x_(n-1) (index 0 unused): the runs that entered it, by partition
    // value; and per Kleene+ state (x_0 too), the runs iterating there (`loops`)
    let mut buckets: Vec<HashMap<TermId, Vec<Run>>> = (0..n).map(|_| HashMap::new()).collect();
    let mut loops: Vec<HashMap<TermId, Vec<Run>>> = (0..n).map(|_| HashMap::new()).collect();
    let mut live: u64 = 0;
    // the runs of closed windows dropped here that today's engine may still hold
    let mut stale: u64 = 0;
    let mut oldest = i64::MIN;
    let mut done = Done::default();
    let mut triples: Vec<Vec<[TermId; 3]>> = vec![Vec::new(); feed.count()];
    // per GPM: the instant's solutions (rows of every variable, one after the other),
    // buffers kept across instants
    let vars = spec.vars;
    let mut sols: Vec<Vec<TermId>> = vec![Vec::new(); n];
    let mut neg_sols: Vec<Vec<TermId>> = vec![Vec::new(); spec.negs.len()];
    let (mut scratch, mut found, mut joined) = (Vec::new(), Vec::new(), Vec::new());
    // a conjunction's or disjunction's state: per alternative, each conjunct's solutions of
    // the instant (those after an empty one left empty: lazy, Sec. 7.3), and per
    // alternative its first conjunct's of one bucket; the joins of a run, and what it took
    let mut alt_sols: Vec<Vec<Vec<Vec<TermId>>>> = (0..n)
        .map(|i| {
            alts_of(i)
                .iter()
                .map(|a| vec![Vec::new(); a.len()])
                .collect()
        })
        .collect();
    let mut groups: Vec<Vec<TermId>> = Vec::new();
    let mut joined2: Vec<TermId> = Vec::new();
    let mut outs: Vec<(usize, Vec<TermId>)> = Vec::new();
    let (mut group, mut keys, mut dropped) = (Vec::new(), Vec::new(), Vec::new());
    let mut stays: Vec<Run> = Vec::new();
    let mut matches: Vec<Run> = Vec::new();
    let mut seen: HashSet<Vec<Option<TermId>>> = HashSet::new();
    let mut extra: Vec<u8> = Vec::new();
    // a run's bucket: its mappings' value of the partition variable, or MIXED when they
    // disagree (any event's solutions may extend it: chain.py's _MIXED)
    const MIXED: TermId = 0;
    let key = |vals: &[TermId]| match spec.partition {
        None => MIXED,
        Some(p) => {
            let first = vals[p];
            if vals.chunks_exact(vars).all(|e| e[p] == first) {
                first
            } else {
                MIXED
            }
        }
    };
    // an iterating run's bucket: its value of the partition variable unless each
    // iteration binds it afresh (a leading Kleene+: any event's solutions may extend it)
    let loop_key = |i: usize, vals: &[TermId]| match spec.partition {
        Some(p) if atoms[i].drop.contains(&p) => MIXED,
        _ => key(vals),
    };
    // the match's rows compared as today's path sorts several (by their terms' text, the
    // variables in name order)
    let mut by_name: Vec<usize> = (0..spec.project.len()).collect();
    by_name.sort_by(|&a, &b| spec.project[a].0.cmp(&spec.project[b].0));
    let mut text: HashMap<TermId, String> = HashMap::new();
    let mut k = 0;
    let mut held: Vec<TermId> = Vec::new();
    while has!(k) {
        // an instant: each stream's events of one time are one SPASEQ event
        // (streamset.merge_events), each GPM matched on its stream's
        let t = feed.time(k);
        for ts in &mut triples {
            ts.clear();
        }
        while has!(k) && feed.time(k) == t {
            triples[feed.stream(k)].extend_from_slice(feed.triples_of(k));
            k += 1;
        }
        if feed.generation() != generation {
            // ids given to other terms since: what was made of them goes
            generation = feed.generation();
            value_cache.clear();
            writer_cache.clear();
            text.clear();
        }
        let terms = feed.terms();
        let mut values = Values {
            terms,
            cache: std::mem::take(&mut value_cache),
        };
        let mut writer = Writer {
            terms,
            cache: std::mem::take(&mut writer_cache),
            format: spec.format,
            names: std::mem::take(&mut names),
            header: header.take(),
            line: std::mem::take(&mut line_buf),
        };
        done.evaluations += 1;
        if spec.lazy_expiry && (done.evaluations - 1) % 1024 == 0 {
            // (NFAEngine._process: the instants before this one a multiple of 1024, it
            // drops every closed window's runs first)
            stale = 0;
        }
        if let Some(w) = spec.window {
            // window j is [t0 + j w, t0 + (j + 1) w]: those up to `last` ended before t
            let last = (t - t0 - 1).div_euclid(w) - 1;
            if last >= oldest {
                oldest = last + 1;
                for b in buckets.iter_mut().chain(loops.iter_mut()) {
                    b.retain(|_, runs| {
                        let before = runs.len();
                        runs.retain(|r| r.window > last);
                        live -= (before - runs.len()) as u64;
                        if spec.lazy_expiry {
                            stale += (before - runs.len()) as u64;
                        }
                        !runs.is_empty()
                    });
                }
            }
        }
        for (k, (g, out)) in spec
            .gpms
            .iter()
            .chain(&spec.negs)
            .zip(sols.iter_mut().chain(neg_sols.iter_mut()))
            .enumerate()
        {
            if k < n && !alts_of(k).is_empty() {
                // (a conjunction's or disjunction's GPMs are solved at its state, if a run
                // waits there)
                out.clear();
                continue;
            }
            let got = solutions(
                g,
                &triples[g.stream],
                vars,
                &mut values,
                &mut scratch,
                &mut found,
                out,
            );
            if let Err(r) = got {
                return Ok(Err(r));
            }
        }
        matches.clear();
        for i in (0..n).rev() {
            let g = &spec.gpms[i];
            let last = i + 1 == n;
            let iterate = kleene(i);
            let alts = alts_of(i);
            if !alts.is_empty() {
                if i > 0 && !buckets[i].is_empty() {
                    let got = solve_alts(
                        alts,
                        &triples,
                        vars,
                        &mut values,
                        &mut scratch,
                        &mut found,
                        &mut alt_sols[i],
                    );
                    if let Err(why) = got {
                        return Ok(Err(why));
                    }
                    let state_sols = &alt_sols[i];
                    let alive = |x: usize| state_sols[x].iter().all(|s| !s.is_empty());
                    keys.clear();
                    if let Some(p) = spec.partition {
                        for x in (0..alts.len()).filter(|&x| alive(x)) {
                            for s in state_sols[x][0].chunks_exact(vars) {
                                if !keys.contains(&s[p]) {
                                    keys.push(s[p]);
                                }
                            }
                        }
                    }
                    if (0..alts.len()).any(alive) {
                        keys.push(MIXED);
                    }
                    groups.resize(alts.len(), Vec::new());
                    for &bk in &keys {
                        let (before, after) = buckets.split_at_mut(i + 1);
                        let Some(runs) = before[i].get_mut(&bk) else {
                            continue;
                        };
                        for (x, group) in groups.iter_mut().enumerate() {
                            group.clear();
                            if !alive(x) {
                                continue;
                            }
                            for s in state_sols[x][0].chunks_exact(vars) {
                                if bk == MIXED || spec.partition.is_some_and(|p| s[p] == bk) {
                                    group.extend_from_slice(s);
                                }
                            }
                        }
                        let mut j = 0;
                        while j < runs.len() {
                            // Def. 8's join of the conjuncts of one alternative; Def. 9: a
                            // run for each alternative taken
                            outs.clear();
                            for (x, alt) in alts.iter().enumerate() {
                                if groups[x].is_empty() {
                                    continue;
                                }
                                let got = extend_all(
                                    alt,
                                    &runs[j].vals,
                                    &groups[x],
                                    &state_sols[x],
                                    vars,
                                    &mut values,
                                    &mut joined,
                                    &mut joined2,
                                );
                                if let Err(why) = got {
                                    return Ok(Err(why));
                                }
                                if !joined.is_empty() {
                                    outs.push((x, joined.clone()));
                                }
                            }
                            if outs.is_empty() {
                                j += 1;
                                continue;
                            }
                            for (x, vals) in outs.drain(..) {
                                let op = spec.ops.get(i + 1).copied().unwrap_or(Select::First);
                                let took = runs[j].took_all(t, &codes[i][x], vals, op);
                                if last {
                                    matches.push(took);
                                } else {
                                    live += 1;
                                    after[0].entry(key(&took.vals)).or_default().push(took);
                                }
                            }
                            // skip-till-any: the run stays for later events; else it has
                            // left the state (its copies took the event)
                            if runs[j].op == Select::Any {
                                j += 1;
                            } else {
                                runs.swap_remove(j);
                                live -= 1;
                            }
                        }
                        if runs.is_empty() {
                            before[i].remove(&bk);
                        }
                    }
                }
            } else if !sols[i].is_empty() && (!buckets[i].is_empty() || !loops[i].is_empty()) {
                // the buckets the solutions can reach: each of their partition values', with
                // those solutions, and the mixed one with all of them
                keys.clear();
                if let Some(p) = spec.partition {
                    for s in sols[i].chunks_exact(vars) {
                        if !keys.contains(&s[p]) {
                            keys.push(s[p]);
                        }
                    }
                }
                keys.push(MIXED);
                for &bk in &keys {
                    group.clear();
                    for s in sols[i].chunks_exact(vars) {
                        if bk == MIXED || spec.partition.is_some_and(|p| s[p] == bk) {
                            group.extend_from_slice(s);
                        }
                    }
                    let (before, after) = buckets.split_at_mut(i + 1);
                    // (the order of a bucket's runs is no part of the result: an instant's
                    // matches are sorted before they are written)
                    if let Some(runs) = before[i].get_mut(&bk) {
                        let mut j = 0;
                        while j < runs.len() {
                            let got =
                                extend(g, &runs[j].vals, &group, vars, &mut values, &mut joined);
                            if let Err(why) = got {
                                return Ok(Err(why));
                            }
                            if joined.is_empty() {
                                j += 1;
                                continue;
                            }
                            let any = runs[j].op == Select::Any;
                            if iterate {
                                // Kleene+ (Algorithm 3): a run iterating here goes on from
                                // this event, and a copy goes on to x_(i+1); under ':' the run
                                // itself stays for later events, else it is over
                                let r = &runs[j];
                                let took = r.took(t, i, &joined, spec);
                                if last {
                                    matches.push(took.clone());
                                } else {
                                    live += 1;
                                    after[0]
                                        .entry(key(&took.vals))
                                        .or_default()
                                        .push(took.clone());
                                }
                                live += 1;
                                stays.push(took);
                                if any {
                                    j += 1;
                                } else {
                                    runs.swap_remove(j);
                                    live -= 1;
                                }
                                continue;
                            }
                            if any {
                                // skip-till-any: the run stays for later events, a copy takes
                                // this one
                                let took = runs[j].took(t, i, &joined, spec);
                                j += 1;
                                if last {
                                    matches.push(took);
                                } else {
                                    live += 1;
                                    after[0].entry(key(&took.vals)).or_default().push(took);
                                }
                                continue;
                            }
                            let mut r = runs.swap_remove(j);
                            std::mem::swap(&mut r.vals, &mut joined);
                            r.times.push(t);
                            r.op = spec.ops.get(i + 1).copied().unwrap_or(Select::First);
                            if !atoms.is_empty() {
                                r.at.push(i as u32);
                            }
                            if last {
                                live -= 1;
                                matches.push(r);
                            } else {
                                after[0].entry(key(&r.vals)).or_default().push(r);
                            }
                        }
                        if runs.is_empty() {
                            before[i].remove(&bk);
                        }
                    }
                    if !iterate {
                        continue;
                    }
                    let Some(runs) = loops[i].get_mut(&bk) else {
                        continue;
                    };
                    // the runs iterating at x_i: each iteration binds the GPM's own variables
                    // afresh, joined on the others
                    let mut j = 0;
                    while j < runs.len() {
                        // (mappings alike but for those are one: drop's set)
                        dropped.clear();
                        for env in runs[j].vals.chunks_exact(vars) {
                            let at = dropped.len();
                            dropped.extend_from_slice(env);
                            for &v in &atoms[i].drop {
                                dropped[at + v] = 0;
                            }
                            if dropped[..at]
                                .chunks_exact(vars)
                                .any(|e| *e == dropped[at..])
                            {
                                dropped.truncate(at);
                            }
                        }
                        let got = extend(g, &dropped, &group, vars, &mut values, &mut joined);
                        if let Err(why) = got {
                            return Ok(Err(why));
                        }
                        if joined.is_empty() {
                            j += 1;
                            continue;
                        }
                        let r = runs.swap_remove(j);
                        let took = r.took(t, i, &joined, spec);
                        if last {
                            matches.push(took.clone());
                        } else {
                            live += 1;
                            buckets[i + 1]
                                .entry(key(&took.vals))
                                .or_default()
                                .push(took.clone());
                        }
                        stays.push(took);
                    }
                    if runs.is_empty() {
                        loops[i].remove(&bk);
                    }
                }
            }
            for &f in atoms.get(i).map_or(&[][..], |a| &a.forbid[..]) {
                if neg_sols[f].is_empty() || buckets[i].is_empty() {
                    continue;
                }
                // negation (Algorithm 9): a run that entered x_i dies at an event matching a
                // forbidden GPM joined with its mappings (after taking this instant's event,
                // if it did: that copy goes on; an event of its entering instant was not
                // between), whatever its partition value
                let mut err = None;
                for runs in buckets[i].values_mut() {
                    let before = runs.len();
                    runs.retain(|r| {
                        if err.is_some() {
                            return true;
                        }
                        match extend(
                            &spec.negs[f],
                            &r.vals,
                            &neg_sols[f],
                            vars,
                            &mut values,
                            &mut joined,
                        ) {
                            Ok(()) => joined.is_empty(),
                            Err(why) => {
                                err = Some(why);
                                true
                            }
                        }
                    });
                    live -= (before - runs.len()) as u64;
                }
                if let Some(why) = err {
                    return Ok(Err(why));
                }
                buckets[i].retain(|_, runs| !runs.is_empty());
            }
            if spec.ops[i] == Select::Strict && !optional && !buckets[i].is_empty() {
                // a run at x_i that took no event of this instant is over (before x_(i-1)'s
                // runs move in)
                live -= buckets[i].values().map(|r| r.len() as u64).sum::<u64>();
                buckets[i].clear();
            } else if optional && !buckets[i].is_empty() {
                // (runs that skipped an optional atom may wait with another selection than
                // the state's)
                buckets[i].retain(|_, runs| {
                    let before = runs.len();
                    runs.retain(|r| r.op != Select::Strict);
                    live -= (before - runs.len()) as u64;
                    !runs.is_empty()
                });
            }
            if iterate && i > 0 && !loops[i].is_empty() {
                // after another atom, iterations are strictly contiguous (Def. 14): a run
                // that took no event of this instant has ended its iterations
                live -= loops[i].values().map(|r| r.len() as u64).sum::<u64>();
                loops[i].clear();
            }
            for r in stays.drain(..) {
                loops[i].entry(loop_key(i, &r.vals)).or_default().push(r);
            }
        }
        if t >= t0 && !alts_of(0).is_empty() {
            // a conjunction or disjunction at x_0: a run for each alternative taken
            let alts = alts_of(0);
            let got = solve_alts(
                alts,
                &triples,
                vars,
                &mut values,
                &mut scratch,
                &mut found,
                &mut alt_sols[0],
            );
            if let Err(why) = got {
                return Ok(Err(why));
            }
            let start = Run {
                vals: Vec::new(),
                times: Vec::new(),
                at: Vec::new(),
                iters: Vec::new(),
                window: spec.window.map_or(0, |w| (t - t0).div_euclid(w)),
                op: Select::First,
            };
            for (x, alt) in alts.iter().enumerate() {
                let sols_x = &alt_sols[0][x];
                if sols_x.iter().any(|s| s.is_empty()) {
                    continue;
                }
                // (the first conjunct's solutions are the run's first mappings)
                joined.clear();
                joined.extend_from_slice(&sols_x[0]);
                for ((_, g), sols) in alt.iter().zip(sols_x).skip(1) {
                    if joined.is_empty() {
                        break;
                    }
                    if let Err(why) = extend(g, &joined, sols, vars, &mut values, &mut joined2) {
                        return Ok(Err(why));
                    }
                    std::mem::swap(&mut joined, &mut joined2);
                }
                if joined.is_empty() {
                    continue;
                }
                let op = spec.ops.get(1).copied().unwrap_or(Select::First);
                let r = start.took_all(t, &codes[0][x], joined.clone(), op);
                if n == 1 {
                    matches.push(r);
                } else {
                    live += 1;
                    buckets[1].entry(key(&r.vals)).or_default().push(r);
                }
            }
        } else if t >= t0 && !sols[0].is_empty() {
            let window = spec.window.map_or(0, |w| (t - t0).div_euclid(w));
            let start = Run {
                vals: Vec::new(),
                times: Vec::new(),
                at: Vec::new(),
                iters: Vec::new(),
                window,
                op: Select::First,
            };
            let r = start.took(t, 0, &sols[0], spec);
            if kleene(0) {
                // a leading Kleene+: its iterations skip till the next match (Def. 13)
                live += 1;
                loops[0]
                    .entry(loop_key(0, &r.vals))
                    .or_default()
                    .push(r.clone());
            }
            if n == 1 {
                matches.push(r);
            } else {
                live += 1;
                buckets[1].entry(key(&r.vals)).or_default().push(r);
            }
        }
        if optional && t >= t0 {
            // the states past optional ones at the start start runs too (the ε edges from
            // x_0: nfa.start_states), a run that took x_s's event entering x_(s+1)
            let window = spec.window.map_or(0, |w| (t - t0).div_euclid(w));
            let start = Run {
                vals: Vec::new(),
                times: Vec::new(),
                at: Vec::new(),
                iters: Vec::new(),
                window,
                op: Select::First,
            };
            for s in (1..n).take_while(|&s| atoms[s - 1].optional) {
                // (a stateful FILTER there reads the skipped atoms' variables, unbound in
                // such a run: an error in SPARQL, so false, and nothing starts)
                if sols[s].is_empty() || !spec.gpms[s].stateful.is_empty() {
                    continue;
                }
                let r = start.took(t, s, &sols[s], spec);
                if s + 1 == n {
                    matches.push(r);
                } else {
                    live += 1;
                    buckets[s + 1].entry(key(&r.vals)).or_default().push(r);
                }
            }
        }
        if optional {
            // a run that entered an optional state at this instant (its last event is this
            // one) goes on to the next state too, with the weaker selection (NFAEngine._enter's
            // ε edge); in state order, so past several optional ones in a row
            for s in 1..n {
                if !atoms[s].optional || buckets[s].is_empty() {
                    continue;
                }
                let next = spec.ops.get(s + 1).copied();
                let mut copies: Vec<Run> = Vec::new();
                for runs in buckets[s].values() {
                    for r in runs.iter().filter(|r| r.times.last() == Some(&t)) {
                        let mut c = r.clone();
                        c.op = next.map_or(Select::First, |o| weaker(r.op, o));
                        copies.push(c);
                    }
                }
                for c in copies {
                    if s + 1 == n {
                        matches.push(c);
                    } else {
                        live += 1;
                        buckets[s + 1].entry(key(&c.vals)).or_default().push(c);
                    }
                }
            }
        }
        // (with lazy expiry, today's live runs are at most this engine's and those it
        // dropped since today's last full expiry: each of today's runs stands for one or
        // more of this engine's, and it drops a closed window's run at the latest then)
        if live + stale > spec.max_runs {
            return Ok(Err(Refused(format!(
                "more than {} live runs (today's path drops the oldest and warns past its \
                 bound, which under ':' it may not reach, sharing runs)",
                spec.max_runs
            ))));
        }
        if spec.max_instant.is_some_and(|m| matches.len() as u64 > m) {
            return Ok(Err(Refused(
                "more matches at one instant than --max-matches".into(),
            )));
        }
        // one order whatever the engine: by the events matched, (time, leaf key) each
        // (runtime.py's sort by steps)
        if atoms.is_empty() {
            matches.sort_by(|a, b| a.times.cmp(&b.times));
        } else {
            let step = |r: &Run, k: usize| (r.times[k], step_key(r.at[k]));
            matches.sort_by(|a, b| {
                (0..a.times.len().min(b.times.len()))
                    .map(|k| step(a, k).cmp(&step(b, k)))
                    .find(|o| o.is_ne())
                    .unwrap_or_else(|| a.times.len().cmp(&b.times.len()))
            });
        }
        seen.clear();
        let mut rows: Vec<Vec<Option<TermId>>> = Vec::new();
        for m in &matches {
            rows.clear();
            for env in m.vals.chunks_exact(vars) {
                let row: Vec<Option<TermId>> = spec
                    .project
                    .iter()
                    .map(|(_, v)| v.map(|v| env[v]).filter(|&id| id != 0))
                    .collect();
                if !rows.contains(&row) {
                    rows.push(row);
                }
            }
            if rows.len() > 1 {
                for row in &rows {
                    for id in row.iter().flatten() {
                        text.entry(*id).or_insert_with(|| {
                            terms.term(*id).map(|t| t.to_string()).unwrap_or_default()
                        });
                    }
                }
                let show = |id: &Option<TermId>| id.map_or("", |id| text[&id].as_str());
                rows.sort_by(|a, b| {
                    by_name
                        .iter()
                        .map(|&c| show(&a[c]).cmp(show(&b[c])))
                        .find(|o| o.is_ne())
                        .unwrap_or(Ordering::Equal)
                });
            }
            for row in &rows {
                if spec.distinct && !seen.insert(row.clone()) {
                    continue;
                }
                if spec.format == Format::Jsonl {
                    if let Err(why) = iterations(&mut writer, spec, m, row, &mut extra)? {
                        return Ok(Err(why));
                    }
                }
                writer.row(out, t, &m.times, row, &extra)?;
                done.rows += 1;
            }
        }
        (value_cache, writer_cache) = (values.cache, writer.cache);
        (names, header, line_buf) = (writer.names, writer.header, writer.line);
        // the instant's events are matched: a run holds their ids, not them
        feed.release(k);
        if feed.due() {
            held.clear();
            for b in buckets.iter().chain(loops.iter()) {
                for (&key, runs) in b {
                    held.push(key);
                    for r in runs {
                        r.ids(spec, &mut held);
                    }
                }
            }
            feed.sweep_holding(&held);
        }
    }
    Ok(Ok(done))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_events;

    const PROV: &str = "http://www.w3.org/ns/prov#generatedAtTime";
    const INT: &str = "http://www.w3.org/2001/XMLSchema#integer";

    fn lit(v: &str, dt: &str) -> Val {
        value_of(Some(
            LiteralRef::new_typed_literal(v, oxrdf::NamedNodeRef::new_unchecked(dt)).into(),
        ))
    }

    #[test]
    fn values_as_filters_py_reads_them() {
        let x = "http://www.w3.org/2001/XMLSchema#";
        assert_eq!(lit("42", INT), Val::Int(42));
        assert_eq!(lit("+7", &format!("{x}byte")), Val::Int(7));
        assert_eq!(lit("9223372036854775808", INT), Val::Unsure);
        assert_eq!(
            lit("1.50", &format!("{x}decimal")),
            Val::Dec(15 * SCALE / 10, 1.5)
        );
        assert_eq!(lit(".5", &format!("{x}decimal")), Val::Dec(SCALE / 2, 0.5));
        assert_eq!(lit("1e2", &format!("{x}decimal")), Val::Unsure);
        assert_eq!(
            lit("0.0000000000000000001", &format!("{x}decimal")),
            Val::Unsure
        );
        assert_eq!(lit("1e3", &format!("{x}double")), Val::Dbl(1000.0));
        assert_eq!(lit("INF", &format!("{x}double")), Val::Unsure);
        assert_eq!(lit("NaN", &format!("{x}double")), Val::Unsure);
        assert_eq!(lit("1", &format!("{x}float")), Val::Unsure);
        assert_eq!(lit("1", &format!("{x}string")), Val::Unsure);
        assert_eq!(value_of(None), Val::Unsure);
    }

    #[test]
    fn comparisons_as_sparql_means_them() {
        let dec = |s: &str| decimal(s);
        assert_eq!(compare(Val::Int(2), Op::Gt, Val::Int(1)), Some(true));
        assert_eq!(compare(Val::Int(1), Op::Eq, dec("1.0")), Some(true));
        assert_eq!(compare(dec("0.1"), Op::Lt, Val::Int(1)), Some(true));
        // exact between integers and decimals, but doubles promote: 2^53 + 1 = 2^53 then
        let big = (1i64 << 53) + 1;
        assert_eq!(
            compare(Val::Int(big), Op::Gt, Val::Int(big - 1)),
            Some(true)
        );
        assert_eq!(
            compare(Val::Int(big), Op::Gt, Val::Dbl((big - 1) as f64)),
            Some(false)
        );
        assert_eq!(compare(dec("0.1"), Op::Eq, Val::Dbl(0.1)), Some(true));
        assert_eq!(compare(Val::Unsure, Op::Ne, Val::Int(1)), None);
    }

    fn stream(prices: &[(i64, &str, i64)]) -> String {
        let mut s = String::new();
        for (t, c, p) in prices {
            s += &format!(
                "<http://g/{t}> <{PROV}> {t} .\n<http://g/{t}> {{ <http://c/{c}> <http://p/price> {p} }}\n"
            );
        }
        s
    }

    /// SEQ (A ; B) or (A , B): A and B `?c <price> ?pN`, B's FILTER ?p2 > ?p1, WITHIN w.
    fn rise(doc: &str, strict: bool, window: Option<i64>) -> (String, Done) {
        let op = if strict { Select::Strict } else { Select::Next };
        rise_as(doc, &[op], window, Format::Tsv)
    }

    /// SEQ (A op B op C ...): one more GPM per operator, each `?c <price> ?pN` with the
    /// FILTER ?pN > ?p(N-1).
    fn rise_as(doc: &str, ops: &[Select], window: Option<i64>, format: Format) -> (String, Done) {
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &[PROV.to_owned()], 1 << 26).unwrap();
        let price = terms.get(&oxrdf::NamedNode::new_unchecked("http://p/price").into());
        let gpm = |p: usize| Gpm {
            stream: 0,
            patterns: vec![[Slot::Var(0), Slot::Const(price), Slot::Var(p)]],
            binds: vec![0, p],
            local: vec![],
            stateful: if p >= 2 {
                vec![Cmp {
                    left: Operand::Var(p),
                    op: Op::Gt,
                    right: Operand::Var(p - 1),
                }]
            } else {
                vec![]
            },
        };
        let n = ops.len() + 1;
        let spec = Spec {
            gpms: (1..=n).map(gpm).collect(),
            ops: [Select::First].iter().chain(ops).copied().collect(),
            vars: n + 1,
            partition: Some(0),
            window,
            t0: None,
            project: vec![("c".into(), Some(0)), ("p2".into(), Some(2))],
            distinct: false,
            max_runs: 1000,
            max_instant: None,
            lazy_expiry: false,
            format,
            atoms: vec![],
            negs: vec![],
        };
        let mut out = Vec::new();
        let done = run(&spec, &ev, &terms, &mut out).unwrap().unwrap();
        (String::from_utf8(out).unwrap(), done)
    }

    #[test]
    fn skip_till_next_takes_the_first_match_of_each_run() {
        let doc = stream(&[
            (0, "a", 5),
            (1, "b", 9),
            (2, "a", 4),
            (3, "a", 6),
            (4, "a", 7),
        ]);
        let (out, done) = rise(&doc, false, None);
        // a@0 (5) takes a@3 (6); a@2 (4) takes a@3 too; a@3 (6) takes a@4 (7)
        assert_eq!(
            out,
            "time\top\t?c\t?p2\n\
             3\tinsert\t<http://c/a>\t\"6\"^^<http://www.w3.org/2001/XMLSchema#integer>\n\
             3\tinsert\t<http://c/a>\t\"6\"^^<http://www.w3.org/2001/XMLSchema#integer>\n\
             4\tinsert\t<http://c/a>\t\"7\"^^<http://www.w3.org/2001/XMLSchema#integer>\n"
        );
        assert_eq!(done.rows, 3);
    }

    #[test]
    fn events_as_the_bench_harness_reads_them() {
        let doc = stream(&[(0, "a", 5), (2, "a", 4), (3, "a", 6)]);
        let (out, _) = rise_as(&doc, &[Select::Next], None, Format::Events);
        assert_eq!(out, "{\"events\": [0, 3]}\n{\"events\": [2, 3]}\n");
        let (out, _) = rise_as(&doc, &[Select::Next], None, Format::Jsonl);
        assert!(out.starts_with("{\"time\": 3, \"from\": 0, \"to\": 3, \"start\": 0, \"bindings\": {\"c\": \"<http://c/a>\", \"p2\": "), "{out}");
    }

    fn events(doc: &str, ops: &[Select], window: Option<i64>) -> String {
        rise_as(doc, ops, window, Format::Events).0
    }

    #[test]
    fn skip_till_any_takes_every_later_match_and_stays() {
        let doc = stream(&[
            (0, "a", 5),
            (1, "a", 6),
            (2, "b", 1),
            (3, "a", 7),
            (4, "a", 2),
        ]);
        // a@0 (5) takes 6 and 7; a@1 (6) takes 7; skip-till-next would leave a@0 at 6
        assert_eq!(
            events(&doc, &[Select::Any], None),
            "{\"events\": [0, 1]}\n{\"events\": [0, 3]}\n{\"events\": [1, 3]}\n"
        );
        assert_eq!(
            events(&doc, &[Select::Next], None),
            "{\"events\": [0, 1]}\n{\"events\": [1, 3]}\n"
        );
        // A : B : C rising: (5, 6, 7) only; A ; B : C: a@0 moves at 6, then waits for 7 too
        assert_eq!(
            events(&doc, &[Select::Any, Select::Any], None),
            "{\"events\": [0, 1, 3]}\n"
        );
        assert_eq!(
            events(&doc, &[Select::Next, Select::Any], None),
            "{\"events\": [0, 1, 3]}\n"
        );
        // a copy at x_1 under `,` must take the very next instant: 6 at 1 then b at 2 ends it
        assert_eq!(events(&doc, &[Select::Any, Select::Strict], None), "");
        // window 2 ([0, 2], [2, 4]): a@0 reaches 6 but not 7; a@3 starts a run 2 does not rise
        assert_eq!(
            events(&doc, &[Select::Any], Some(2)),
            "{\"events\": [0, 1]}\n"
        );
    }

    #[test]
    fn skip_till_any_matches_of_one_instant_in_event_order() {
        // three rising prices, then one above all: every pair, the latest three at 3
        let doc = stream(&[(0, "a", 1), (1, "a", 2), (2, "a", 3), (3, "a", 9)]);
        let out = events(&doc, &[Select::Any], None);
        assert_eq!(
            out.lines().skip(3).collect::<Vec<_>>(),
            [
                "{\"events\": [0, 3]}",
                "{\"events\": [1, 3]}",
                "{\"events\": [2, 3]}"
            ],
            "{out}"
        );
        assert_eq!(out.lines().count(), 6);
    }

    /// SEQ (A op B op C ...) as `rise_as`, the states in `plus` under Kleene+ (each
    /// iteration binding its price afresh, shown in "iterations"), in jsonl.
    fn kleene(doc: &str, ops: &[Select], plus: &[usize]) -> String {
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &[PROV.to_owned()], 1 << 26).unwrap();
        let price = terms.get(&oxrdf::NamedNode::new_unchecked("http://p/price").into());
        let n = ops.len() + 1;
        let gpm = |p: usize| Gpm {
            stream: 0,
            patterns: vec![[Slot::Var(0), Slot::Const(price), Slot::Var(p)]],
            binds: vec![0, p],
            local: vec![],
            stateful: if p >= 2 {
                vec![Cmp {
                    left: Operand::Var(p),
                    op: Op::Gt,
                    right: Operand::Var(p - 1),
                }]
            } else {
                vec![]
            },
        };
        let atoms = (0..n)
            .map(|i| Atom {
                kleene: plus.contains(&i),
                key: i as u64,
                // (a leading Kleene+ binds ?c afresh too)
                drop: if !plus.contains(&i) {
                    vec![]
                } else if i == 0 {
                    vec![0, 1]
                } else {
                    vec![i + 1]
                },
                shown: if plus.contains(&i) {
                    vec![(format!("p{}", i + 1), i + 1)]
                } else {
                    vec![]
                },
                name: ["A", "B", "C", "D"][i].into(),
                forbid: vec![],
                alts: vec![],
                optional: false,
            })
            .collect();
        let spec = Spec {
            gpms: (1..=n).map(gpm).collect(),
            ops: [Select::First].iter().chain(ops).copied().collect(),
            vars: n + 1,
            partition: Some(0),
            window: None,
            t0: None,
            project: (1..=n).map(|p| (format!("p{p}"), Some(p))).collect(),
            distinct: false,
            max_runs: 1000,
            max_instant: None,
            lazy_expiry: false,
            format: Format::Jsonl,
            atoms,
            negs: vec![],
        };
        let mut out = Vec::new();
        run(&spec, &ev, &terms, &mut out).unwrap().unwrap();
        // (the lines without the terms' datatypes, for reading)
        String::from_utf8(out)
            .unwrap()
            .replace("\\\"^^<http://www.w3.org/2001/XMLSchema#integer>", "")
            .replace("\\\"", "")
    }

    #[test]
    fn kleene_plus_iterates_on_contiguous_events_and_a_copy_goes_on() {
        // a rises 1, 2, 3; b at 3 breaks contiguity; a's 4 then 2
        let doc = stream(&[
            (0, "a", 1),
            (1, "a", 2),
            (2, "a", 3),
            (3, "b", 5),
            (4, "a", 4),
            (5, "a", 2),
        ]);
        // (the lines today's path writes, `rsep run` with RSEP_NATIVE=0)
        let line = |t: i64, from: i64, ps: &[&str], its: &[&str]| {
            let bindings: Vec<String> = ps
                .iter()
                .enumerate()
                .map(|(k, p)| format!("\"p{}\": \"{p}\"", k + 1))
                .collect();
            let its: Vec<String> = its
                .iter()
                .map(|p| format!("[{{\"p2\": \"{p}\"}}]"))
                .collect();
            format!(
                "{{\"time\": {t}, \"from\": {from}, \"to\": {t}, \"start\": {from}, \"bindings\": \
                 {{{}}}, \"iterations\": {{\"B\": [{}]}}}}\n",
                bindings.join(", "),
                its.join(", ")
            )
        };
        // SEQ (A: B+: C), C above the last iteration: the iterations end at b's 5 (they are
        // strictly contiguous), while a copy of each iteration waits for C
        assert_eq!(
            kleene(&doc, &[Select::Any, Select::Any], &[1]),
            [
                line(2, 0, &["1", "2", "3"], &["2"]),
                line(4, 0, &["1", "3", "4"], &["2", "3"]),
                line(4, 0, &["1", "2", "4"], &["2"]),
                line(4, 0, &["1", "3", "4"], &["3"]),
                line(4, 1, &["2", "3", "4"], &["3"]),
            ]
            .concat()
        );
        // SEQ (A; B+): A's run leaves at its first B; 4 then 2 (both above 1) iterate
        assert_eq!(
            kleene(&doc, &[Select::Next], &[1]),
            [
                line(1, 0, &["1", "2"], &["2"]),
                line(2, 0, &["1", "3"], &["2", "3"]),
                line(2, 1, &["2", "3"], &["3"]),
                line(4, 2, &["3", "4"], &["4"]),
            ]
            .concat()
        );
        // SEQ (A: B+): every A stays, so 0's run starts iterations at 4 and at 5 again
        let out = kleene(&doc, &[Select::Any], &[1]);
        assert_eq!(out.lines().count(), 9, "{out}");
        assert_eq!(
            out.lines().skip(7).collect::<Vec<_>>(),
            [
                line(5, 0, &["1", "2"], &["4", "2"]).trim_end(),
                line(5, 0, &["1", "2"], &["2"]).trim_end()
            ]
        );
    }

    #[test]
    fn a_leading_kleene_plus_skips_till_its_next_iteration() {
        // SEQ (A+): each event starts iterations, the next event of any company goes on
        let doc = stream(&[(0, "a", 1), (1, "b", 2), (3, "a", 3)]);
        let out = kleene(&doc, &[], &[0]);
        let its: Vec<&str> = out
            .lines()
            .map(|l| &l[l.find("\"iterations\"").unwrap()..])
            .collect();
        let p = |ps: &[&str]| {
            let v: Vec<String> = ps
                .iter()
                .map(|p| format!("[{{\"p1\": \"{p}\"}}]"))
                .collect();
            format!("\"iterations\": {{\"A\": [{}]}}}}", v.join(", "))
        };
        assert_eq!(
            its,
            [
                p(&["1"]),
                p(&["1", "2"]),
                p(&["2"]),
                p(&["1", "2", "3"]),
                p(&["2", "3"]),
                p(&["3"])
            ]
        );
    }

    #[test]
    fn a_negated_gpm_ends_the_runs_it_matches_between_two_states() {
        // SEQ (A; N!; B): A ?p1, N a price below ?p1, B a price above it
        let doc = stream(&[
            (0, "a", 5),
            (1, "a", 3),
            (2, "a", 6),
            (3, "a", 4),
            (4, "a", 7),
        ]);
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &[PROV.to_owned()], 1 << 26).unwrap();
        let price = terms.get(&oxrdf::NamedNode::new_unchecked("http://p/price").into());
        let g = |p: usize, op: Op| Gpm {
            stream: 0,
            patterns: vec![[Slot::Var(0), Slot::Const(price), Slot::Var(p)]],
            binds: vec![0, p],
            local: vec![],
            stateful: if p > 1 {
                vec![Cmp {
                    left: Operand::Var(p),
                    op,
                    right: Operand::Var(1),
                }]
            } else {
                vec![]
            },
        };
        let spec = |forbid: Vec<usize>| Spec {
            gpms: vec![g(1, Op::Gt), g(2, Op::Gt)],
            ops: vec![Select::First, Select::Next],
            vars: 4,
            partition: Some(0),
            window: None,
            t0: None,
            project: vec![("c".into(), Some(0))],
            distinct: false,
            max_runs: 1000,
            max_instant: None,
            lazy_expiry: false,
            format: Format::Events,
            atoms: (0..2)
                .map(|i| Atom {
                    key: i,
                    forbid: if i == 1 { forbid.clone() } else { vec![] },
                    ..Atom::default()
                })
                .collect(),
            negs: vec![g(3, Op::Lt)],
        };
        let mut out = Vec::new();
        run(&spec(vec![0]), &ev, &terms, &mut out).unwrap().unwrap();
        // 5's run dies at 3, 6's at 4: only 3 -> 6 and 4 -> 7
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"events\": [1, 2]}\n{\"events\": [3, 4]}\n"
        );
        let mut out = Vec::new();
        run(&spec(vec![]), &ev, &terms, &mut out).unwrap().unwrap();
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 4);
    }

    #[test]
    fn a_conjunction_joins_its_gpms_on_one_event_and_a_disjunction_runs_each() {
        // SEQ (A op (B & C)) and SEQ (A op (B | C)): A ?p1, B a price above it, C a price
        // above it (&) or below it (|), all on the instant's one event
        let doc = stream(&[(0, "a", 5), (1, "a", 6), (2, "a", 4)]);
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &[PROV.to_owned()], 1 << 26).unwrap();
        let price = terms.get(&oxrdf::NamedNode::new_unchecked("http://p/price").into());
        let g = |p: usize, op: Op| Gpm {
            stream: 0,
            patterns: vec![[Slot::Var(0), Slot::Const(price), Slot::Var(p)]],
            binds: vec![0, p],
            local: vec![],
            stateful: if p > 1 {
                vec![Cmp {
                    left: Operand::Var(p),
                    op,
                    right: Operand::Var(1),
                }]
            } else {
                vec![]
            },
        };
        let spec = |op: Select, alts: Vec<Vec<(u64, Gpm)>>| Spec {
            gpms: vec![g(1, Op::Gt), g(2, Op::Gt)],
            ops: vec![Select::First, op],
            vars: 4,
            partition: Some(0),
            window: None,
            t0: None,
            project: vec![("c".into(), Some(0))],
            distinct: false,
            max_runs: 1000,
            max_instant: None,
            lazy_expiry: false,
            format: Format::Events,
            atoms: vec![
                Atom {
                    key: 1,
                    ..Atom::default()
                },
                Atom {
                    key: 2,
                    alts,
                    ..Atom::default()
                },
            ],
            negs: vec![],
        };
        let both = vec![vec![(2, g(2, Op::Gt)), (3, g(3, Op::Gt))]];
        let either = vec![vec![(2, g(2, Op::Gt))], vec![(3, g(3, Op::Lt))]];
        let text = |spec: Spec| {
            let mut out = Vec::new();
            run(&spec, &ev, &terms, &mut out).unwrap().unwrap();
            String::from_utf8(out).unwrap()
        };
        // one step per conjunct, of one time: 5 then 6 above it twice; 6's run waits
        assert_eq!(
            text(spec(Select::Next, both.clone())),
            "{\"events\": [0, 1, 1]}\n"
        );
        // under ',' 6's run dies at 4
        assert_eq!(
            text(spec(Select::Strict, both)),
            "{\"events\": [0, 1, 1]}\n"
        );
        // 5 -> 6 by B, 6 -> 4 by C; under ':' 5's run stays and takes 4 by C too
        assert_eq!(
            text(spec(Select::Next, either.clone())),
            "{\"events\": [0, 1]}\n{\"events\": [1, 2]}\n"
        );
        assert_eq!(
            text(spec(Select::Any, either)),
            "{\"events\": [0, 1]}\n{\"events\": [0, 2]}\n{\"events\": [1, 2]}\n"
        );
    }

    #[test]
    fn terms_as_python_writes_pyoxigraphs_objects() {
        let iri = oxrdf::NamedNodeRef::new_unchecked("http://e/a");
        assert_eq!(
            python_repr(Some(iri.into())).unwrap(),
            "<NamedNode value=http://e/a>"
        );
        let int = LiteralRef::new_typed_literal("10", oxrdf::NamedNodeRef::new_unchecked(INT));
        assert_eq!(
            python_repr(Some(int.into())).unwrap(),
            format!("<Literal value=10 datatype=<NamedNode value={INT}>>")
        );
        let en = LiteralRef::new_language_tagged_literal_unchecked("a\"b", "en");
        assert_eq!(
            python_repr(Some(en.into())).unwrap(),
            "<Literal value=a\"b language=en>"
        );
        assert_eq!(python_repr(None), None);
    }

    #[test]
    fn copies_count_against_the_bound_of_live_runs() {
        let doc = stream(&[(0, "a", 1), (1, "a", 2), (2, "a", 3)]);
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &[PROV.to_owned()], 1 << 26).unwrap();
        let price = terms.get(&oxrdf::NamedNode::new_unchecked("http://p/price").into());
        let g = |p: usize| Gpm {
            stream: 0,
            patterns: vec![[Slot::Var(0), Slot::Const(price), Slot::Var(p)]],
            binds: vec![0, p],
            local: vec![],
            stateful: vec![],
        };
        let spec = |max_runs: u64| Spec {
            gpms: vec![g(1), g(2), g(3)],
            ops: vec![Select::First, Select::Any, Select::Any],
            vars: 4,
            partition: Some(0),
            window: None,
            t0: None,
            project: vec![("c".into(), Some(0))],
            distinct: false,
            max_runs,
            max_instant: None,
            lazy_expiry: false,
            format: Format::Events,
            atoms: vec![],
            negs: vec![],
        };
        // after 2: three runs at x_1 (0, 1, 2) and three at x_2 ((0, 1), (0, 2), (1, 2))
        let mut out = Vec::new();
        assert!(run(&spec(6), &ev, &terms, &mut out).unwrap().is_ok());
        let got = run(&spec(5), &ev, &terms, &mut out).unwrap();
        assert!(got.is_err_and(|r| r.0.contains("more than 5 live runs")));
    }

    #[test]
    fn strict_contiguity_and_windows_end_runs() {
        let doc = stream(&[(0, "a", 5), (1, "b", 9), (2, "a", 6), (3, "a", 7)]);
        // strict: a@0's run dies at b@1; a@2 then a@3 is a match
        let (out, _) = rise(&doc, true, None);
        assert_eq!(out.lines().count(), 2, "{out}");
        // window 2: [0, 2], [2, 4]: a@0 would reach a@3 only across windows
        let doc = stream(&[(0, "a", 5), (3, "a", 6)]);
        assert_eq!(rise(&doc, false, Some(2)).1.rows, 0);
        assert_eq!(rise(&doc, false, Some(4)).1.rows, 1);
    }

    #[test]
    fn a_triple_that_fails_late_binds_nothing() {
        let doc = format!(
            "<http://g/0> <{PROV}> 0 .\n<http://g/0> {{ <http://c/a> <http://p/volume> 1 . <http://c/b> <http://p/price> 2 }}\n"
        );
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &[PROV.to_owned()], 1 << 26).unwrap();
        let price = terms.get(&oxrdf::NamedNode::new_unchecked("http://p/price").into());
        let mut vals = vec![0; 2];
        let mut got = Vec::new();
        solve(
            &[[Slot::Var(0), Slot::Const(price), Slot::Var(1)]],
            ev.triples_of(0),
            &mut vals,
            &mut |v| got.push(v.to_vec()),
        );
        assert_eq!(got.len(), 1);
        assert_eq!(vals, [0, 0]);
    }

    #[test]
    fn an_events_solutions_are_distinct_and_filtered() {
        let doc = format!(
            "<http://g/0> <{PROV}> 0 .\n<http://g/0> {{ <http://c/a> <http://p/price> 1, 2 . <http://c/a> <http://p/price> 2 }}\n"
        );
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &[PROV.to_owned()], 1 << 26).unwrap();
        let g = Gpm {
            stream: 0,
            patterns: vec![[Slot::Var(0), Slot::Var(1), Slot::Var(2)]],
            binds: vec![0, 1, 2],
            local: vec![],
            stateful: vec![],
        };
        let mut values = Values {
            terms: &terms,
            cache: Vec::new(),
        };
        let (mut scratch, mut found, mut out) = (Vec::new(), Vec::new(), Vec::new());
        let mut all = |g: &Gpm, values: &mut Values<'_>, out: &mut Vec<TermId>| {
            solutions(
                g,
                ev.triples_of(0),
                3,
                values,
                &mut scratch,
                &mut found,
                out,
            )
            .unwrap()
        };
        all(&g, &mut values, &mut out);
        assert_eq!(out.len(), 6); // 1 and 2, the repeated triple once
        let g = Gpm {
            stream: 0,
            local: vec![Cmp {
                left: Operand::Var(2),
                op: Op::Gt,
                right: Operand::Const(Val::Int(1)),
            }],
            ..g
        };
        all(&g, &mut values, &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(values.get(out[2]), Val::Int(2));
    }

    #[test]
    fn a_match_of_several_mappings_writes_its_rows_sorted() {
        // a@0 has prices 5 and 3; b... at 1 a's price 4: 3 < 4 joins, 5 < 4 does not
        let doc = format!(
            "<http://g/0> <{PROV}> 0 .\n<http://g/0> {{ <http://c/a> <http://p/price> 5, 3 }}\n\
             <http://g/1> <{PROV}> 1 .\n<http://g/1> {{ <http://c/a> <http://p/price> 4, 6 }}\n"
        );
        let (out, done) = rise(&doc, false, None);
        // 3 < 4, 3 < 6, 5 < 6: one match, rows by ?c then ?p2's text
        assert_eq!(done.rows, 2, "{out}");
        let rows: Vec<&str> = out.lines().skip(1).collect();
        assert!(
            rows[0].ends_with("\"4\"^^<http://www.w3.org/2001/XMLSchema#integer>"),
            "{out}"
        );
        assert!(
            rows[1].ends_with("\"6\"^^<http://www.w3.org/2001/XMLSchema#integer>"),
            "{out}"
        );
    }
}
