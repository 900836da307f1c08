//! A windowed `SELECT` over several windows (each of one block of triple patterns and
//! FILTERs) joined with each other and with triple patterns over a background graph,
//! optionally grouped; evaluated on ids, the streams' and the background's terms in one
//! dictionary.
//!
//! It computes what rsep's maintained path (rsep/windows/maintained.py and joins.py, or its
//! factorised form, which gives the same rows) outputs for such a query under window-close
//! reports, while rsep's locality check holds in every window. The streams are merged as
//! rsep.stream.source's merge_streams merges them: by time, then by the stream's place
//! among the streams given, each stream's events in its own order, numbered 1, 2, ... in
//! that order (an event's *seq*). Each window reads its own stream's events; its content at
//! a close is the live events' solutions of its block (as native/src/bgp.rs computes them,
//! each event's once). The background's patterns match the graph's triples (de-duplicated,
//! in the order rsep reads them), each triple at its position.
//!
//! At every close the joined solutions are recomputed: one solution of every relation
//! (the windows' blocks in the dataset's order, then the background patterns), compatible
//! on their shared variables, by hash joins in a fixed order (each relation looked up by
//! the variables it shares with what is bound before it); each joined solution's identity
//! is rsep's (rsep.windows.joins): its window components `(seq, relation, index of the
//! solution in its event)` from the latest to the earliest, then its background components
//! `(relation, position)` in ascending order, and the joined solutions are taken in that
//! order (*arrival*). Top-level FILTERs then apply; rows are the solutions in arrival
//! order, or the groups in the order of their earliest solution, folded by bgp.rs's
//! aggregates in arrival order (SPARQL's exact numeric typing); R2S as bgp.rs.
//!
//! The streams are read as a [`Streams`] feed gives their merge ([`crate::source::Merged`]:
//! the files read in parts), each event's solutions made once it is read and the event let
//! go of then; the dictionary is swept between closes keeping what the windows, the
//! background's index and the last evaluation's rows hold, so memory is bounded by the
//! windows, not the files.
//!
//! Recomputing is proven equal by construction rather than maintained incrementally: the
//! solutions and their order are a function of the live content alone, as in rsep, whose
//! maintained join only caches them. It refuses what bgp.rs refuses, in any window (the
//! locality check failing, an event with two solutions of a block of several patterns, a
//! value a FILTER does not compare exactly, an aggregate's refusals, a limit crossed), and
//! a top-level FILTER it does not decide.

use crate::bgp::{self, compare, grouped, report, value_of, Check, Col, Cond, Grouping, Val};
use crate::bgp::{Key, Writer};
use crate::dictionary::{TermId, Terms};
use crate::select::{Done, Holders, Pool, R2s, Refused, Slot};
use crate::source::{Streams, WholeMerge};
use crate::stream::Events;
use hashbrown::{HashMap, HashSet};
use std::collections::VecDeque;
use std::io::{self, Write};

/// One window: its extent, its stream (an index into the streams given to [`run`]) and its
/// block, its variables numbered as the query's.
#[derive(Clone, Debug)]
pub struct Window {
    pub range: i64,
    pub offset: i64,
    pub right_closed: bool,
    pub stream: usize,
    pub patterns: Vec<[Slot; 3]>,
    pub checks: Vec<Check>,
    pub filters: Vec<Cond>,
}

#[derive(Clone, Debug)]
pub struct Spec {
    /// the windows' common slide and grid origin (every close is each window's)
    pub step: i64,
    pub origin: i64,
    pub non_empty: bool,
    pub r2s: R2s,
    pub windows: Vec<Window>,
    /// triple patterns over the background graph
    pub background: Vec<[Slot; 3]>,
    pub vars: usize,
    /// top-level FILTERs (each over the joined solutions)
    pub filters: Vec<Cond>,
    pub group: Option<Grouping>,
    pub project: Vec<(String, Col)>,
    pub max_window_triples: u64,
    pub max_results: u64,
    pub tsv: bool,
}

impl Spec {
    fn next_close(&self, after: i64) -> i64 {
        self.origin + ((after - self.origin).div_euclid(self.step) + 1) * self.step
    }

    /// bgp.rs's spec of window `w`'s block (its solutions, its FILTERs, its locality check).
    fn block(&self, w: &Window) -> bgp::Spec {
        bgp::Spec {
            range: w.range,
            step: self.step,
            offset: w.offset,
            origin: self.origin,
            right_closed: w.right_closed,
            non_empty: self.non_empty,
            r2s: self.r2s,
            patterns: w.patterns.clone(),
            vars: self.vars,
            checks: w.checks.clone(),
            filters: w.filters.clone(),
            group: None,
            project: Vec::new(),
            max_window_triples: self.max_window_triples,
            max_results: self.max_results,
            tsv: self.tsv,
        }
    }

    /// bgp.rs's spec of the grouping and the output (its writer's and `grouped`'s).
    fn output(&self) -> bgp::Spec {
        bgp::Spec {
            range: 1,
            step: self.step,
            offset: 0,
            origin: self.origin,
            right_closed: true,
            non_empty: self.non_empty,
            r2s: self.r2s,
            patterns: Vec::new(),
            vars: self.vars,
            checks: Vec::new(),
            filters: Vec::new(),
            group: self.group.clone(),
            project: self.project.clone(),
            max_window_triples: self.max_window_triples,
            max_results: self.max_results,
            tsv: self.tsv,
        }
    }
}

/// Times t inside window `w` at close c: floor <= t < ceil (bgp.rs's).
fn limits(spec: &Spec, w: &Window, c: i64) -> (i64, i64) {
    let aligned = spec.origin + (c - spec.origin).div_euclid(spec.step) * spec.step;
    let (lo, hi) = (aligned - w.range, aligned - w.offset);
    if w.right_closed {
        (lo + 1, hi + 1)
    } else {
        (lo, hi)
    }
}

/// A window's events (its stream's, in order, from the first still in it or to come), each
/// one's solutions of its block (the FILTERs' verdict taken) made as it was read, and its
/// state as closes pass: the events before `entered` came into it (inside it, or passed by
/// below its floor), the others are read but not yet before its ceiling.
#[derive(Default)]
struct Live {
    evs: VecDeque<Ev>,
    entered: usize,
    sols: Pool<TermId>,
    checked: Pool<(u8, [TermId; 3])>,
    holders: Holders<(u8, [TermId; 3])>,
    triples: u64,
}

/// An event of a window's stream: its number in the merge, its time, where its solutions
/// (`sols` ids) and the terms its locality check counts (`checked`) are in the window's
/// pools (from the pools' starts, dropped items included), whether one of its solutions is
/// not ordered or filtered as rsep does, its triples' count, whether it was inside.
struct Ev {
    seq: u64,
    time: i64,
    sol_at: usize,
    sols: u32,
    undecided: bool,
    chk_at: usize,
    checked: u32,
    size: u64,
    inside: bool,
}

impl Live {
    fn sols_of(&self, e: &Ev) -> &[TermId] {
        let from = e.sol_at - self.sols.base;
        &self.sols.items[from..from + e.sols as usize]
    }

    /// The window brought to its content at close `c`.
    fn advance(&mut self, (floor, ceil): (i64, i64)) {
        while self.entered < self.evs.len() && self.evs[self.entered].time < ceil {
            let e = &self.evs[self.entered];
            if e.time >= floor {
                // (an event below the floor passes by without being inside)
                let (from, n) = (e.chk_at - self.checked.base, e.checked as usize);
                self.holders.enter(&self.checked.items[from..from + n]);
                self.triples += e.size;
                self.evs[self.entered].inside = true;
            }
            self.entered += 1;
        }
        while self.entered > 0 && self.evs[0].time < floor {
            let e = self.evs.pop_front().expect("an event");
            if e.inside {
                let from = e.chk_at - self.checked.base;
                self.holders
                    .leave(&self.checked.items[from..from + e.checked as usize]);
                self.triples -= e.size;
            }
            self.sols.pop_front(e.sols as usize);
            self.checked.pop_front(e.checked as usize);
            self.entered -= 1;
        }
    }

    /// The events inside the window.
    fn inside(&self) -> impl Iterator<Item = &Ev> {
        self.evs.iter().take(self.entered).filter(|e| e.inside)
    }
}

/// Event `k`'s solutions of a block (bgp.rs's `run`, per event): flattened, `w` ids each,
/// and whether it holds one the operator does not order or filter as rsep does.
fn event_solutions(
    block: &bgp::Spec,
    triples: &[[TermId; 3]],
    val: &mut impl FnMut(TermId) -> Val,
    scratch: &mut Vec<Vec<TermId>>,
    sols: &mut Vec<TermId>,
) -> bool {
    scratch.clear();
    block.solutions(triples, scratch);
    let mut unsure = false;
    let mut kept = 0;
    'sol: for s in scratch.iter() {
        for f in &block.filters {
            match compare(val(s[f.var]), f.op, &f.constant) {
                Some(true) => {}
                Some(false) => continue 'sol,
                None => {
                    unsure = true;
                    continue 'sol;
                }
            }
        }
        kept += 1;
        if block.vars == 0 {
            sols.push(0);
        } else {
            sols.extend_from_slice(s);
        }
    }
    unsure || kept > 1 && block.patterns.len() > 1
}

/// The variables a pattern binds, once each, ascending.
fn pattern_vars(p: &[Slot; 3]) -> Vec<usize> {
    let mut vs: Vec<usize> = p
        .iter()
        .filter_map(|s| match s {
            Slot::Var(v) => Some(*v),
            Slot::Const(_) => None,
        })
        .collect();
    vs.sort_unstable();
    vs.dedup();
    vs
}

/// A background pattern's matches in the graph: (position, a binding of every variable,
/// 0 for those it does not bind), as rsep.windows.joins.background_relation matches.
fn background_matches(
    p: &[Slot; 3],
    graph: &[[TermId; 3]],
    vars: usize,
) -> Vec<(u64, Vec<TermId>)> {
    let mut out = Vec::new();
    'next: for (pos, t) in graph.iter().enumerate() {
        let mut b = vec![0; vars.max(1)];
        for (slot, &x) in p.iter().zip(t) {
            match *slot {
                Slot::Const(c) => {
                    if c != Some(x) {
                        continue 'next;
                    }
                }
                Slot::Var(v) => {
                    if b[v] != 0 && b[v] != x {
                        continue 'next;
                    }
                    b[v] = x;
                }
            }
        }
        out.push((pos as u64, b));
    }
    out
}

/// A partial joined solution: its binding (0: unbound), its window components (seq,
/// relation, index) and its background components (relation, position).
struct Partial {
    binding: Vec<TermId>,
    wins: Vec<[u64; 3]>,
    bgs: Vec<[u64; 2]>,
}

impl Partial {
    /// rsep's identity of the joined solution, which orders it: window components latest
    /// first, then background components ascending (all of one shape, so the flattened
    /// sequences compare as rsep's tuples do).
    fn arrival(&self) -> Vec<u64> {
        let mut wins = self.wins.clone();
        wins.sort_unstable_by(|a, b| b.cmp(a));
        let mut bgs = self.bgs.clone();
        bgs.sort_unstable();
        let mut id = Vec::with_capacity(wins.len() * 3 + bgs.len() * 2);
        for w in wins {
            id.extend_from_slice(&w);
        }
        for b in bgs {
            id.extend_from_slice(&b);
        }
        id
    }
}

/// Run the query over the streams' events (`streams[i]`: the i-th stream given, all read
/// into `terms`) and the background graph's triples (`graph`, de-duplicated, in rsep's
/// order, of `terms`' ids), writing its rows to `out`.
pub fn run(
    spec: &Spec,
    streams: &[&Events],
    graph: &[[TermId; 3]],
    terms: &Terms,
    out: &mut impl Write,
) -> Result<Result<Done, Refused>, io::Error> {
    run_on(
        spec,
        &mut WholeMerge::new(streams.to_vec(), terms),
        graph,
        out,
    )
}

/// [`run`] over the merged streams as a [`Streams`] feed gives them (`graph`: of the
/// feed's ids, which it keeps, pinned or held): each event's solutions made once it is
/// read, then the event let go of; the dictionary swept (when due) between closes, keeping
/// the ids of the windows' solutions and counted terms, the background's and the last
/// evaluation's rows'.
pub fn run_on(
    spec: &Spec,
    feed: &mut impl Streams,
    graph: &[[TermId; 3]],
    out: &mut impl Write,
) -> Result<Result<Done, Refused>, io::Error> {
    let mut done = Done::default();
    let refuse = |why: &str| Ok(Err(Refused(why.to_owned())));
    macro_rules! has {
        ($k:expr) => {
            match feed.has($k) {
                Ok(b) => b,
                Err(r) => return Ok(Err(r)),
            }
        };
    }
    if spec.step <= 0 {
        return refuse("a step that is not positive");
    }
    if spec.windows.is_empty() || spec.windows.iter().any(|w| w.stream >= feed.count()) {
        return refuse("a window without its stream");
    }
    if !has!(0) {
        return Ok(Ok(done));
    }
    // (the ids the windows keep past their events: the sweeps are this operator's)
    feed.hold();
    let mut vals: HashMap<TermId, Val> = HashMap::new();
    let mut generation = feed.generation();
    fn val_of(vals: &mut HashMap<TermId, Val>, terms: &Terms, id: TermId) -> Val {
        *vals.entry(id).or_insert_with(|| value_of(terms.term(id)))
    }
    let w = spec.vars.max(1);
    let blocks: Vec<bgp::Spec> = spec.windows.iter().map(|win| spec.block(win)).collect();
    let mut live: Vec<Live> = spec.windows.iter().map(|_| Live::default()).collect();
    let mut scratch = Vec::new();
    let mut set = HashSet::new();
    // the relations: the windows' blocks, then the background patterns; each one's variables
    let nw = spec.windows.len();
    let mut rel_vars: Vec<Vec<usize>> = spec
        .windows
        .iter()
        .map(|win| {
            let mut vs: Vec<usize> = win.patterns.iter().flat_map(pattern_vars).collect();
            vs.sort_unstable();
            vs.dedup();
            vs
        })
        .collect();
    rel_vars.extend(spec.background.iter().map(pattern_vars));
    let bg: Vec<Vec<(u64, Vec<TermId>)>> = spec
        .background
        .iter()
        .map(|p| background_matches(p, graph, spec.vars))
        .collect();
    // the join's order from relation 0: next the relation sharing most variables with what
    // is bound (a background one first, then the lowest), looked up by those variables
    let mut steps: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut bound: HashSet<usize> = rel_vars[0].iter().copied().collect();
    let mut todo: Vec<usize> = (1..rel_vars.len()).collect();
    while !todo.is_empty() {
        let (at, &r) = todo
            .iter()
            .enumerate()
            .max_by_key(|&(_, &r)| {
                let shared = rel_vars[r].iter().filter(|v| bound.contains(*v)).count();
                (shared, r >= nw, std::cmp::Reverse(r))
            })
            .expect("a relation");
        todo.remove(at);
        let keys: Vec<usize> = rel_vars[r]
            .iter()
            .copied()
            .filter(|v| bound.contains(v))
            .collect();
        bound.extend(rel_vars[r].iter().copied());
        steps.push((r, keys));
    }
    // the background relations' indexes, made once: key values -> their matches
    let bg_index: Vec<Option<HashMap<Vec<TermId>, Vec<usize>>>> = steps
        .iter()
        .map(|(r, keys)| {
            (*r >= nw).then(|| {
                let mut idx: HashMap<Vec<TermId>, Vec<usize>> = HashMap::new();
                for (i, (_, b)) in bg[r - nw].iter().enumerate() {
                    idx.entry(keys.iter().map(|&v| b[v]).collect())
                        .or_default()
                        .push(i);
                }
                idx
            })
        })
        .collect();
    let out_spec = spec.output();
    let mut wr = Writer::new(&out_spec, feed.whole());
    let mut previous: Vec<Key> = Vec::new();
    // the merged events read into the windows (`next` of them), the last one's time
    let (mut next, mut latest) = (0usize, feed.time(0));
    let mut held: Vec<TermId> = Vec::new();
    let mut c = spec.next_close(feed.time(0) - 1);
    loop {
        // every event before the latest ceiling of the windows at c, into its windows
        let need = spec
            .windows
            .iter()
            .map(|win| limits(spec, win, c).1)
            .max()
            .expect("a window");
        while has!(next) && feed.time(next) < need {
            if feed.generation() != generation {
                generation = feed.generation();
                vals.clear();
                wr.fresh();
            }
            let (terms, triples, time) = (feed.terms(), feed.triples_of(next), feed.time(next));
            let stream = feed.stream(next);
            for ((l, win), block) in live.iter_mut().zip(&spec.windows).zip(&blocks) {
                if win.stream != stream {
                    continue;
                }
                let sol_at = l.sols.base + l.sols.items.len();
                let undecided = event_solutions(
                    block,
                    triples,
                    &mut |id| val_of(&mut vals, terms, id),
                    &mut scratch,
                    &mut l.sols.items,
                );
                set.clear();
                block.check_terms(triples, &mut set);
                let chk_at = l.checked.base + l.checked.items.len();
                l.checked.items.extend(set.iter().copied());
                l.evs.push_back(Ev {
                    seq: next as u64 + 1,
                    time,
                    sol_at,
                    sols: (l.sols.base + l.sols.items.len() - sol_at) as u32,
                    undecided,
                    chk_at,
                    checked: (l.checked.base + l.checked.items.len() - chk_at) as u32,
                    size: triples.len() as u64,
                    inside: false,
                });
            }
            latest = time;
            next += 1;
            feed.release(next);
        }
        // the last event's time, unless an event at c or later says it is c or later
        let mut j = next;
        while has!(j) && feed.time(j) < c {
            j += 1;
        }
        let last = if has!(j) {
            None
        } else if j > next {
            Some(feed.time(j - 1))
        } else {
            Some(latest)
        };
        if last.is_some_and(|last| c > spec.next_close(last - 1)) {
            break;
        }
        for (l, win) in live.iter_mut().zip(&spec.windows) {
            l.advance(limits(spec, win, c));
            if l.triples > spec.max_window_triples {
                return refuse("a window's triples go over the limit");
            }
        }
        if last.is_some_and(|last| c > last) {
            break;
        }
        if !(spec.non_empty && live.iter().all(|l| l.triples == 0)) {
            if live.iter().any(|l| l.holders.conflicts > 0) {
                return refuse(
                    "a join term is in two live events (rsep answers from its store then)",
                );
            }
            if live.iter().any(|l| l.inside().any(|e| e.undecided)) {
                return refuse(
                    "a live event whose solutions it does not order or filter as rsep does \
                     (two solutions of a block of several patterns, or a value its FILTER does \
                     not compare exactly)",
                );
            }
            if feed.generation() != generation {
                generation = feed.generation();
                vals.clear();
                wr.fresh();
            }
            let terms = feed.terms();
            // each window's live solutions, with their components
            let window_sols = |r: usize| -> Vec<([u64; 3], &[TermId])> {
                let l = &live[r];
                let mut got = Vec::new();
                for e in l.inside() {
                    for (i, s) in l.sols_of(e).chunks_exact(w).enumerate() {
                        got.push(([e.seq, r as u64, i as u64], s));
                    }
                }
                got
            };
            let mut partial: Vec<Partial> = window_sols(0)
                .into_iter()
                .map(|(comp, s)| Partial {
                    binding: s.to_vec(),
                    wins: vec![comp],
                    bgs: Vec::new(),
                })
                .collect();
            for (step, (r, keys)) in steps.iter().enumerate() {
                if partial.is_empty() {
                    break;
                }
                let mut next = Vec::new();
                let key_of = |b: &[TermId]| -> Vec<TermId> { keys.iter().map(|&v| b[v]).collect() };
                let merge = |p: &Partial, s: &[TermId]| -> Vec<TermId> {
                    p.binding
                        .iter()
                        .zip(s)
                        .map(|(&a, &b)| if a != 0 { a } else { b })
                        .collect()
                };
                if *r < nw {
                    let sols = window_sols(*r);
                    let mut idx: HashMap<Vec<TermId>, Vec<usize>> = HashMap::new();
                    for (i, (_, s)) in sols.iter().enumerate() {
                        idx.entry(key_of(s)).or_default().push(i);
                    }
                    for p in &partial {
                        for &i in idx.get(&key_of(&p.binding)).into_iter().flatten() {
                            let (comp, s) = sols[i];
                            let mut wins = p.wins.clone();
                            wins.push(comp);
                            next.push(Partial {
                                binding: merge(p, s),
                                wins,
                                bgs: p.bgs.clone(),
                            });
                        }
                    }
                } else {
                    let idx = bg_index[step].as_ref().expect("a background index");
                    let matches = &bg[r - nw];
                    for p in &partial {
                        for &i in idx.get(&key_of(&p.binding)).into_iter().flatten() {
                            let (pos, s) = &matches[i];
                            let mut bgs = p.bgs.clone();
                            bgs.push([*r as u64, *pos]);
                            next.push(Partial {
                                binding: merge(p, s),
                                wins: p.wins.clone(),
                                bgs,
                            });
                        }
                    }
                }
                if next.len() as u64 > spec.max_results {
                    return refuse("an evaluation's joined solutions go over the limit");
                }
                partial = next;
            }
            // top-level FILTERs, then arrival order
            let mut joined: Vec<(Vec<u64>, Vec<TermId>)> = Vec::with_capacity(partial.len());
            'sol: for p in partial {
                for f in &spec.filters {
                    match compare(
                        val_of(&mut vals, terms, p.binding[f.var]),
                        f.op,
                        &f.constant,
                    ) {
                        Some(true) => {}
                        Some(false) => continue 'sol,
                        None => {
                            return refuse("a value a top-level FILTER does not compare exactly")
                        }
                    }
                }
                joined.push((p.arrival(), p.binding));
            }
            joined.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            if joined.len() as u64 > spec.max_results {
                return refuse("an evaluation's rows go over the limit");
            }
            done.evaluations += 1;
            let current: Vec<Key> = match &spec.group {
                None => joined
                    .iter()
                    .map(|(_, s)| {
                        spec.project
                            .iter()
                            .map(|(_, col)| match col {
                                Col::Var(Some(v)) if s[*v] != 0 => Some(u64::from(s[*v])),
                                _ => None,
                            })
                            .collect()
                    })
                    .collect(),
                Some(g) => match grouped(
                    &out_spec,
                    g,
                    joined.iter().map(|(_, s)| s.as_slice()),
                    &mut |id| val_of(&mut vals, terms, id),
                    &mut wr,
                    terms,
                ) {
                    Ok(rows) => rows,
                    Err(why) => return Ok(Err(why)),
                },
            };
            done.rows += report(spec.r2s, c, &current, &previous, &mut wr, terms, out)?;
            if spec.r2s != R2s::RStream {
                previous = current;
            }
            wr.compact(&mut previous);
        }
        if feed.due() {
            // what outlives the events let go of: the windows' solutions and counted
            // terms, the background's triples, the rows the next evaluation is compared with
            held.clear();
            for l in &live {
                held.extend_from_slice(l.sols.front(l.sols.len()));
                for (_, t) in l.checked.front(l.checked.len()) {
                    held.extend_from_slice(t);
                }
            }
            held.extend(graph.iter().flatten());
            for k in &previous {
                held.extend(k.iter().flatten().filter_map(|&o| TermId::try_from(o).ok()));
            }
            feed.sweep_holding(&held);
        }
        c = spec.next_close(c);
    }
    Ok(Ok(done))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::{Agg, AggKind};
    use crate::stream::read_events;

    const T: &str = "<http://www.w3.org/ns/prov#generatedAtTime>";

    fn events(name: &str, spec: &[(i64, &str)], terms: &mut Terms) -> Events {
        let mut doc = String::new();
        for (i, (t, body)) in spec.iter().enumerate() {
            doc += &format!("<g:{name}{i}> {T} {t} .\n<g:{name}{i}> {{ {body} }}\n");
        }
        let points = ["http://www.w3.org/ns/prov#generatedAtTime".to_owned()];
        read_events(doc.as_bytes(), terms, &points, 1 << 26).unwrap()
    }

    fn iri(terms: &mut Terms, s: &str) -> TermId {
        terms.intern(oxrdf::NamedNode::new_unchecked(s).into())
    }

    #[test]
    fn two_windows_through_the_background_grouped_in_arrival_order() {
        // ?o1 e:by ?s1 (w1) . ?o2 e:by ?s2 (w2) . ?s1 e:on ?r . ?s2 e:on ?r, GROUP BY ?r
        // COUNT(*); variables ?o1 0, ?s1 1, ?o2 2, ?s2 3, ?r 4
        let mut terms = Terms::new();
        let a = events(
            "a",
            &[(1, "<e:a0> <e:by> <e:x> ."), (3, "<e:a1> <e:by> <e:y> .")],
            &mut terms,
        );
        let b = events(
            "b",
            &[(1, "<e:b0> <e:by> <e:y> ."), (2, "<e:b1> <e:by> <e:x> .")],
            &mut terms,
        );
        let (by, on) = (iri(&mut terms, "e:by"), iri(&mut terms, "e:on"));
        let (x, y) = (iri(&mut terms, "e:x"), iri(&mut terms, "e:y"));
        let (r0, r1) = (iri(&mut terms, "e:r0"), iri(&mut terms, "e:r1"));
        let window = |stream: usize, o: usize, s: usize| Window {
            range: 4,
            offset: 0,
            right_closed: true,
            stream,
            patterns: vec![[Slot::Var(o), Slot::Const(Some(by)), Slot::Var(s)]],
            checks: vec![Check {
                consts: [None, Some(Some(by)), None],
                tracked: vec![],
            }],
            filters: vec![],
        };
        let spec = Spec {
            step: 2,
            origin: 0,
            non_empty: false,
            r2s: R2s::RStream,
            windows: vec![window(0, 0, 1), window(1, 2, 3)],
            background: vec![
                [Slot::Var(1), Slot::Const(Some(on)), Slot::Var(4)],
                [Slot::Var(3), Slot::Const(Some(on)), Slot::Var(4)],
            ],
            vars: 5,
            filters: vec![],
            group: Some(Grouping {
                keys: vec![4],
                aggs: vec![Agg {
                    kind: AggKind::Count,
                    var: None,
                    separator: String::new(),
                }],
                implicit: false,
            }),
            project: vec![("r".into(), Col::Var(Some(4))), ("n".into(), Col::Agg(0))],
            max_window_triples: 1000,
            max_results: 1000,
            tsv: true,
        };
        let graph = [[x, on, r0], [y, on, r1]];
        let mut out = Vec::new();
        let done = run(&spec, &[&a, &b], &graph, &terms, &mut out).unwrap();
        assert_eq!(
            done,
            Ok(Done {
                evaluations: 1,
                rows: 1
            })
        );
        // close 2 only (the last event is at 3): seqs a0 1, b0 2, b1 3: r0's pair (a0, b1)
        // arrives with b1 (3); r1 has no pair (a1 comes at 3)
        let int = "<http://www.w3.org/2001/XMLSchema#integer>";
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("time\top\t?r\t?n\n2\tinsert\t<e:r0>\t\"1\"^^{int}\n")
        );
    }

    #[test]
    fn read_in_parts_and_swept_it_writes_what_the_whole_files_give() {
        use crate::source::{Feed, Merged, Options};
        // two streams of observations of sensors (a new value term each), equal times across
        // them; the sensors on roads in the background; ?o1 e:by ?s1 . ?o1 e:v ?v1 (w1) .
        // ?o2 e:by ?s2 (w2) . ?s1 e:on ?r . ?s2 e:on ?r, GROUP BY ?r COUNT(*) and MAX(?v1)
        let doc = |name: &str, n: usize, every: usize| {
            let mut d = String::new();
            for k in 0..n {
                d += &format!(
                    "<g:{name}{k}> {T} {} .\n<g:{name}{k}> {{ <e:{name}{k}> <e:by> <e:x{}> . \
                     <e:{name}{k}> <e:v> {k} }}\n",
                    k / every,
                    k % 3
                );
            }
            d
        };
        let docs = [doc("a", 300, 2), doc("b", 200, 3)];
        let paths: Vec<String> = (0..2)
            .map(|i| {
                std::env::temp_dir()
                    .join(format!("rsep-join-{}-{i}.trig", std::process::id()))
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        for (p, d) in paths.iter().zip(&docs) {
            std::fs::write(p, d).unwrap();
        }
        let named = |s: &str| oxrdf::Term::from(oxrdf::NamedNode::new_unchecked(s));
        let spec_of = |by: TermId, v: TermId, on: TermId, r2s: R2s| {
            let check = Check {
                consts: [None, None, None],
                tracked: vec![],
            };
            let window = |stream: usize, patterns: Vec<[Slot; 3]>| Window {
                range: 6,
                offset: 0,
                right_closed: true,
                stream,
                patterns,
                checks: vec![check.clone()],
                filters: vec![],
            };
            Spec {
                step: 2,
                origin: 0,
                non_empty: false,
                r2s,
                windows: vec![
                    window(
                        0,
                        vec![
                            [Slot::Var(0), Slot::Const(Some(by)), Slot::Var(1)],
                            [Slot::Var(0), Slot::Const(Some(v)), Slot::Var(5)],
                        ],
                    ),
                    window(1, vec![[Slot::Var(2), Slot::Const(Some(by)), Slot::Var(3)]]),
                ],
                background: vec![
                    [Slot::Var(1), Slot::Const(Some(on)), Slot::Var(4)],
                    [Slot::Var(3), Slot::Const(Some(on)), Slot::Var(4)],
                ],
                vars: 6,
                filters: vec![],
                group: Some(Grouping {
                    keys: vec![4],
                    aggs: vec![
                        Agg {
                            kind: AggKind::Count,
                            var: None,
                            separator: String::new(),
                        },
                        Agg {
                            kind: AggKind::Max,
                            var: Some(5),
                            separator: String::new(),
                        },
                    ],
                    implicit: false,
                }),
                project: vec![
                    ("r".into(), Col::Var(Some(4))),
                    ("n".into(), Col::Agg(0)),
                    ("m".into(), Col::Agg(1)),
                ],
                max_window_triples: 1 << 20,
                max_results: 1 << 20,
                tsv: false,
            }
        };
        let sensors = ["e:x0", "e:x1", "e:x2"];
        let roads = ["e:r0", "e:r1", "e:r0"];
        for r2s in [R2s::RStream, R2s::IStream, R2s::DStream] {
            let mut terms = Terms::new();
            let points = ["http://www.w3.org/ns/prov#generatedAtTime".to_owned()];
            let evs: Vec<Events> = docs
                .iter()
                .map(|d| read_events(d.as_bytes(), &mut terms, &points, 1 << 26).unwrap())
                .collect();
            let (by, v, on) = (
                iri(&mut terms, "e:by"),
                iri(&mut terms, "e:v"),
                iri(&mut terms, "e:on"),
            );
            let graph: Vec<[TermId; 3]> = sensors
                .iter()
                .zip(roads)
                .map(|(x, r)| [iri(&mut terms, x), on, iri(&mut terms, r)])
                .collect();
            let mut want = Vec::new();
            let done = run(
                &spec_of(by, v, on, r2s),
                &[&evs[0], &evs[1]],
                &graph,
                &terms,
                &mut want,
            )
            .unwrap()
            .unwrap();
            assert!(done.rows > 20, "{done:?}");
            for chunk in [1, 7, 300] {
                let opts = Options {
                    chunk,
                    sweep: 0,
                    fast: true,
                    ..Options::default()
                };
                let formats = vec![crate::reader::Format::TriG; paths.len()];
                let mut src =
                    Merged::open(&paths, &formats, points.to_vec(), 1 << 26, opts).unwrap();
                let (by, v, on) = (
                    src.pin(named("e:by").as_ref()),
                    src.pin(named("e:v").as_ref()),
                    src.pin(named("e:on").as_ref()),
                );
                let graph: Vec<[TermId; 3]> = sensors
                    .iter()
                    .zip(roads)
                    .map(|(x, r)| [src.pin(named(x).as_ref()), on, src.pin(named(r).as_ref())])
                    .collect();
                let mut got = Vec::new();
                let again = run_on(&spec_of(by, v, on, r2s), &mut src, &graph, &mut got)
                    .unwrap()
                    .unwrap();
                assert_eq!(again, done);
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    String::from_utf8(want.clone()).unwrap()
                );
                // swept at every close: the terms held are the windows', not the files'
                let (sweeps, _, _) = src.stats();
                assert!(sweeps > 50, "{sweeps}");
                assert!(src.terms().len() < 200, "{}", src.terms().len());
            }
        }
        for p in &paths {
            let _ = std::fs::remove_file(p);
        }
    }
}
