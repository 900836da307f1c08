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
//! Recomputing is proven equal by construction rather than maintained incrementally: the
//! solutions and their order are a function of the live content alone, as in rsep, whose
//! maintained join only caches them. It refuses what bgp.rs refuses, in any window (the
//! locality check failing, an event with two solutions of a block of several patterns, a
//! value a FILTER does not compare exactly, an aggregate's refusals, a limit crossed), and
//! a top-level FILTER it does not decide.

use crate::bgp::{self, compare, grouped, report, value_of, Check, Col, Cond, Grouping, Val};
use crate::bgp::{Key, Writer};
use crate::dictionary::{TermId, Terms};
use crate::select::{Done, Holders, R2s, Refused, Slot};
use crate::stream::Events;
use hashbrown::{HashMap, HashSet};
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

/// A window's events (its stream's, in order), each one's solutions of its block (the
/// FILTERs' verdict taken), and its state as closes pass.
struct Live<'a> {
    times: &'a [i64],
    seqs: Vec<u64>,
    sol_off: Vec<u32>,
    sols: Vec<TermId>,
    undecided: Vec<bool>,
    check_off: Vec<u32>,
    checked: Vec<(u8, [TermId; 3])>,
    sizes: Vec<u64>,
    inside: Vec<bool>,
    lo: usize,
    hi: usize,
    holders: Holders<(u8, [TermId; 3])>,
    triples: u64,
}

impl Live<'_> {
    fn sols_of(&self, k: usize, w: usize) -> &[TermId] {
        &self.sols[self.sol_off[k] as usize * w..self.sol_off[k + 1] as usize * w]
    }

    /// The window brought to its content at close `c`.
    fn advance(&mut self, (floor, ceil): (i64, i64)) {
        let n = self.times.len();
        while self.hi < n && self.times[self.hi] < ceil {
            let k = self.hi;
            if self.times[k] >= floor {
                // (an event below the floor passes by without being inside)
                self.inside[k] = true;
                let (from, to) = (self.check_off[k] as usize, self.check_off[k + 1] as usize);
                self.holders.enter(&self.checked[from..to]);
                self.triples += self.sizes[k];
            }
            self.hi += 1;
        }
        while self.lo < self.hi && self.times[self.lo] < floor {
            let k = self.lo;
            if self.inside[k] {
                let (from, to) = (self.check_off[k] as usize, self.check_off[k + 1] as usize);
                self.holders.leave(&self.checked[from..to]);
                self.triples -= self.sizes[k];
            }
            self.lo += 1;
        }
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
    let mut done = Done::default();
    let refuse = |why: &str| Ok(Err(Refused(why.to_owned())));
    if spec.step <= 0 {
        return refuse("a step that is not positive");
    }
    if spec.windows.is_empty() || spec.windows.iter().any(|w| w.stream >= streams.len()) {
        return refuse("a window without its stream");
    }
    // the merge: by (time, stream's place), each stream in its own (non-decreasing) order
    let mut merged: Vec<(i64, usize, usize)> = Vec::new();
    for (i, ev) in streams.iter().enumerate() {
        for (k, &t) in ev.times.iter().enumerate() {
            merged.push((t, i, k));
        }
    }
    if merged.is_empty() {
        return Ok(Ok(done));
    }
    merged.sort_unstable();
    let mut seqs: Vec<Vec<u64>> = streams.iter().map(|ev| vec![0; ev.len()]).collect();
    for (n, &(_, i, k)) in merged.iter().enumerate() {
        seqs[i][k] = n as u64 + 1;
    }
    let (first, last) = (
        merged[0].0,
        merged.iter().map(|m| m.0).max().expect("an event"),
    );
    let mut vals: HashMap<TermId, Val> = HashMap::new();
    let mut val =
        |id: TermId| -> Val { *vals.entry(id).or_insert_with(|| value_of(terms.term(id))) };
    let w = spec.vars.max(1);
    let mut live: Vec<Live<'_>> = Vec::new();
    let mut scratch = Vec::new();
    for win in &spec.windows {
        let block = spec.block(win);
        let ev = streams[win.stream];
        let n = ev.len();
        let mut l = Live {
            times: &ev.times,
            seqs: seqs[win.stream].clone(),
            sol_off: Vec::with_capacity(n + 1),
            sols: Vec::new(),
            undecided: vec![false; n],
            check_off: Vec::with_capacity(n + 1),
            checked: Vec::new(),
            sizes: (0..n).map(|k| ev.triples_of(k).len() as u64).collect(),
            inside: vec![false; n],
            lo: 0,
            hi: 0,
            holders: Holders::default(),
            triples: 0,
        };
        l.sol_off.push(0);
        l.check_off.push(0);
        let mut set = HashSet::new();
        for k in 0..n {
            l.undecided[k] = event_solutions(
                &block,
                ev.triples_of(k),
                &mut val,
                &mut scratch,
                &mut l.sols,
            );
            l.sol_off.push((l.sols.len() / w) as u32);
            set.clear();
            block.check_terms(ev.triples_of(k), &mut set);
            l.checked.extend(set.iter().copied());
            l.check_off.push(l.checked.len() as u32);
        }
        live.push(l);
    }
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
    // (the dictionary holds every term of the streams and the background: read whole)
    let mut wr = Writer::new(&out_spec, true);
    let mut previous: Vec<Key> = Vec::new();
    let mut c = spec.next_close(first - 1);
    let beyond = spec.next_close(last - 1);
    while c <= beyond {
        for (l, win) in live.iter_mut().zip(&spec.windows) {
            l.advance(limits(spec, win, c));
            if l.triples > spec.max_window_triples {
                return refuse("a window's triples go over the limit");
            }
        }
        if c > last {
            break;
        }
        if spec.non_empty && live.iter().all(|l| l.triples == 0) {
            c = spec.next_close(c);
            continue;
        }
        if live.iter().any(|l| l.holders.conflicts > 0) {
            return refuse("a join term is in two live events (rsep answers from its store then)");
        }
        if live
            .iter()
            .any(|l| (l.lo..l.hi).any(|k| l.inside[k] && l.undecided[k]))
        {
            return refuse(
                "a live event whose solutions it does not order or filter as rsep does \
                 (two solutions of a block of several patterns, or a value its FILTER does not \
                 compare exactly)",
            );
        }
        // each window's live solutions, with their components
        let window_sols = |r: usize| -> Vec<([u64; 3], &[TermId])> {
            let l = &live[r];
            let mut got = Vec::new();
            for k in (l.lo..l.hi).filter(|&k| l.inside[k]) {
                for (i, s) in l.sols_of(k, w).chunks_exact(w).enumerate() {
                    got.push(([l.seqs[k], r as u64, i as u64], s));
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
                match compare(val(p.binding[f.var]), f.op, &f.constant) {
                    Some(true) => {}
                    Some(false) => continue 'sol,
                    None => return refuse("a value a top-level FILTER does not compare exactly"),
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
                &mut val,
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
}
