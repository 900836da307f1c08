//! GROUP BY's groups kept as the window slides: each group's live solutions (their places
//! in the operator's pool of solutions) and, per aggregate, a state that a solution entering
//! or leaving the window updates, so that a close writes from the states, not from the
//! window's solutions again.
//!
//! A close writes what [`super::grouped`] would write from the window's solutions, byte for
//! byte, and refuses where it refuses. The states:
//!
//! - COUNT: the group's count; COUNT(DISTINCT ?v): a count a term;
//! - MIN / MAX: a monotonic deque of the values in arrival order (a value leaves it when a
//!   later one is better), equal entries of one term merged, so the extreme is its front and
//!   a tie of two terms at the extreme (which `grouped` refuses) is its first two entries;
//!   counts of each datatype, NaN and the values it does not order (refused, as there);
//! - SUM / AVG of xsd:integer and xsd:decimal values: the exact sums, with bounds that prove
//!   no prefix of the fold in arrival order overflows (oxigraph's error, refused there);
//!   integers and decimals add exactly, so the sum of the window is the fold's, whatever the
//!   order. Where a live value is an xsd:double, or the bounds do not prove it, the group's
//!   value is folded again from its live solutions in arrival order: a double's sum depends
//!   on the order of addition (subtracting a value that leaves would change its bytes);
//! - SAMPLE: the group's first live solution's value;
//! - GROUP_CONCAT: folded again from the group's live solutions at each close (its text
//!   is the values' in arrival order, as long as the window's anyway).
//!
//! The groups come out in the order of their first live solution, as `grouped` gives them.

use super::{fold, order, refused, value, Acc, Agg, AggKind, Grouping, Key, Spec, Val, Writer};
use super::{Col, Out};
use crate::dictionary::{TermId, Terms};
use crate::select::{Pool, Refused};
use hashbrown::HashMap;
use oxsdatatypes::{Decimal, Integer};
use std::cmp::Ordering;
use std::collections::VecDeque;

/// A MIN / MAX deque's entry: a value, its term, and the group's index of the latest
/// solution of that term merged into it (the entry leaves with that solution).
#[derive(Clone, Copy, Debug)]
struct Entry {
    val: Val,
    id: TermId,
    last: u64,
}

/// The live values of a MIN or MAX, best first (a monotonic deque).
#[derive(Default, Debug)]
pub(crate) struct Extreme {
    deque: VecDeque<Entry>,
}

impl Extreme {
    /// `x` (of term `id`) enters as the group's solution `k`; `max`: MAX, else MIN.
    /// (Values of other datatypes, or NaN, are counted by the caller and refused at the
    /// close: the deque's order is then not read.)
    pub(crate) fn push(&mut self, x: Val, id: TermId, k: u64, max: bool) {
        let worse = |b: Val| {
            order(b, x).is_some_and(|o| {
                if max {
                    o == Ordering::Less
                } else {
                    o == Ordering::Greater
                }
            })
        };
        while self.deque.back().is_some_and(|b| worse(b.val)) {
            self.deque.pop_back();
        }
        match self.deque.back_mut() {
            Some(b) if b.id == id => b.last = k,
            _ => self.deque.push_back(Entry {
                val: x,
                id,
                last: k,
            }),
        }
    }

    /// The group's solutions before `popped` have left.
    pub(crate) fn expire(&mut self, popped: u64) {
        while self.deque.front().is_some_and(|f| f.last < popped) {
            self.deque.pop_front();
        }
    }

    /// The extreme's term, and whether another term has the same value.
    pub(crate) fn best(&self) -> Option<(TermId, bool)> {
        let f = self.deque.front()?;
        let tie = self
            .deque
            .get(1)
            .is_some_and(|s| order(f.val, s.val) == Some(Ordering::Equal));
        Some((f.id, tie))
    }
}

/// Exact sums of xsd:integer and xsd:decimal values, added and taken back.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct Exact {
    /// the integers' sum and the sum of their magnitudes (both exact in i128)
    ints: i128,
    ints_abs: i128,
    /// the decimals' sum in units of 10^-18 (wrapping: exact whenever the bounds hold) and
    /// the sum of the magnitudes of those under 2^96 units; `big`: how many are not
    decs: i128,
    decs_abs: u128,
    big: u64,
    /// how many decimals are live (the sum is an xsd:integer while none is)
    n_decs: u64,
}

const BIG: u128 = 1 << 96;
const UNITS: i128 = 1_000_000_000_000_000_000; // 10^18: a decimal's units in 1

fn units(d: Decimal) -> i128 {
    i128::from_be_bytes(d.to_be_bytes())
}

impl Exact {
    /// `v` (an Int or a Dec) enters (`sign` 1) or leaves (-1).
    pub(crate) fn add(&mut self, v: Val, sign: i128) {
        match v {
            Val::Int(i) => {
                self.ints += sign * i128::from(i);
                self.ints_abs += sign * i128::from(i).abs();
            }
            Val::Dec(d) => {
                let u = units(d);
                self.decs = self.decs.wrapping_add(sign.wrapping_mul(u));
                let m = u.unsigned_abs();
                if m < BIG {
                    self.decs_abs = if sign > 0 {
                        self.decs_abs.wrapping_add(m)
                    } else {
                        self.decs_abs.wrapping_sub(m)
                    };
                } else if sign > 0 {
                    self.big += 1;
                } else {
                    self.big -= 1;
                }
                if sign > 0 {
                    self.n_decs += 1;
                } else {
                    self.n_decs -= 1;
                }
            }
            _ => {}
        }
    }

    /// The sum as the fold gives it, when the bounds prove that no prefix of the fold (in
    /// any order: a prefix's magnitude is at most the sum of the magnitudes) overflows an
    /// xsd:integer (before the first decimal) or an xsd:decimal; None when they do not.
    pub(crate) fn sum(&self, n: u64) -> Option<super::Num> {
        // (under 2^32 values, the sum of the small magnitudes has not wrapped)
        if self.big > 0 || n >= 1 << 32 || self.ints_abs > i128::from(i64::MAX) {
            return None;
        }
        let bound = (self.ints_abs as u128)
            .checked_mul(UNITS as u128)?
            .checked_add(self.decs_abs)?;
        if bound > i128::MAX as u128 {
            return None;
        }
        let ints = i64::try_from(self.ints).ok()?;
        Some(if self.n_decs == 0 {
            super::Num::Int(Integer::from(ints))
        } else {
            let d = Decimal::from_be_bytes(self.decs.to_be_bytes());
            super::Num::Dec(Decimal::from(Integer::from(ints)).checked_add(d)?)
        })
    }
}

/// A SUM / AVG's counts of the values of each kind besides its exact sums.
#[derive(Default, Debug)]
pub(crate) struct Summed {
    exact: Exact,
    dbls: u64,
    /// strings, IRIs, blank nodes: the sum is unbound
    texts: u64,
    /// values rsep's mirror asks pyoxigraph about: refused
    unread: u64,
}

/// An aggregate's state in a group.
#[derive(Debug)]
pub(crate) enum State {
    Count,
    Distinct(HashMap<TermId, u32>),
    Extreme {
        deque: Extreme,
        /// live values of each datatype (integer, decimal, double), NaNs, others
        kinds: [u64; 3],
        nans: u64,
        others: u64,
    },
    Sum(Summed),
    /// SAMPLE: the live values it does not read
    Sample(u64),
    /// GROUP_CONCAT: folded again at each close
    Concat,
}

impl State {
    fn new(kind: AggKind) -> State {
        match kind {
            AggKind::Count => State::Count,
            AggKind::CountDistinct => State::Distinct(HashMap::new()),
            AggKind::Min | AggKind::Max => State::Extreme {
                deque: Extreme::default(),
                kinds: [0; 3],
                nans: 0,
                others: 0,
            },
            AggKind::Sum | AggKind::Avg => State::Sum(Summed::default()),
            AggKind::Sample => State::Sample(0),
            AggKind::GroupConcat | AggKind::GroupConcatStr => State::Concat,
        }
    }

    /// A value `x` of term `id` enters (`sign` 1, the group's solution `k`) or leaves (-1;
    /// `k`: how many of the group's solutions have left).
    fn update(&mut self, kind: AggKind, id: TermId, x: Val, sign: i64, k: u64) {
        let step = |c: &mut u64| {
            if sign > 0 {
                *c += 1
            } else {
                *c -= 1
            }
        };
        match self {
            State::Count | State::Concat => {}
            State::Distinct(seen) => {
                if sign > 0 {
                    *seen.entry(id).or_insert(0) += 1;
                } else if let Some(c) = seen.get_mut(&id) {
                    *c -= 1;
                    if *c == 0 {
                        seen.remove(&id);
                    }
                }
            }
            State::Extreme {
                deque,
                kinds,
                nans,
                others,
            } => {
                match x {
                    Val::Int(_) => step(&mut kinds[0]),
                    Val::Dec(_) => step(&mut kinds[1]),
                    Val::Dbl(d) if d.is_nan() => step(nans),
                    Val::Dbl(_) => step(&mut kinds[2]),
                    _ => step(others),
                }
                if sign > 0 {
                    if matches!(x, Val::Int(_) | Val::Dec(_) | Val::Dbl(_))
                        && !matches!(x, Val::Dbl(d) if d.is_nan())
                    {
                        deque.push(x, id, k, kind == AggKind::Max);
                    }
                } else {
                    deque.expire(k);
                }
            }
            State::Sum(s) => match x {
                Val::Int(_) | Val::Dec(_) => s.exact.add(x, i128::from(sign)),
                Val::Dbl(_) => step(&mut s.dbls),
                Val::Text | Val::Node => step(&mut s.texts),
                Val::Unsure | Val::Other => step(&mut s.unread),
            },
            State::Sample(unread) => {
                if matches!(x, Val::Unsure | Val::Other) {
                    step(unread);
                }
            }
        }
    }
}

/// A group: its key, its live solutions (places in the pool of solutions, in arrival
/// order), how many have left, and its aggregates' states.
#[derive(Debug)]
struct Group {
    key: Box<[TermId]>,
    sols: VecDeque<u64>,
    left: u64,
    states: Vec<State>,
}

/// The groups of the window's solutions, kept as solutions enter and leave.
pub(crate) struct Groups {
    index: HashMap<Box<[TermId]>, u32>,
    slots: Vec<Group>,
    free: Vec<u32>,
    /// the group of each live solution, in arrival order
    owners: VecDeque<u32>,
    key: Vec<TermId>,
}

impl Groups {
    pub(crate) fn new(g: &Grouping) -> Groups {
        let mut groups = Groups {
            index: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            owners: VecDeque::new(),
            key: Vec::new(),
        };
        if g.implicit {
            // (aggregates without GROUP BY: one group, there even when empty)
            groups.make(g, Box::new([]));
        }
        groups
    }

    fn make(&mut self, g: &Grouping, key: Box<[TermId]>) -> u32 {
        let group = Group {
            key: key.clone(),
            sols: VecDeque::new(),
            left: 0,
            states: g.aggs.iter().map(|a| State::new(a.kind)).collect(),
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = group;
                s
            }
            None => {
                self.slots.push(group);
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(key, slot);
        slot
    }

    /// Solution `s`, at place `at` of the pool, enters the window.
    pub(crate) fn enter(
        &mut self,
        g: &Grouping,
        s: &[TermId],
        at: u64,
        val: &mut impl FnMut(TermId) -> Val,
    ) {
        self.key.clear();
        self.key.extend(g.keys.iter().map(|&v| s[v]));
        let slot = match self.index.get(self.key.as_slice()) {
            Some(&slot) => slot,
            None => {
                let key: Box<[TermId]> = self.key.as_slice().into();
                self.make(g, key)
            }
        };
        self.owners.push_back(slot);
        let group = &mut self.slots[slot as usize];
        let k = group.left + group.sols.len() as u64;
        group.sols.push_back(at);
        for (st, a) in group.states.iter_mut().zip(&g.aggs) {
            if let Some(v) = a.var {
                st.update(a.kind, s[v], val(s[v]), 1, k);
            }
        }
    }

    /// The earliest live solution, `s`, leaves the window.
    pub(crate) fn leave(
        &mut self,
        g: &Grouping,
        s: &[TermId],
        val: &mut impl FnMut(TermId) -> Val,
    ) {
        let slot = self.owners.pop_front().expect("a live solution's group");
        let group = &mut self.slots[slot as usize];
        group.sols.pop_front();
        group.left += 1;
        for (st, a) in group.states.iter_mut().zip(&g.aggs) {
            if let Some(v) = a.var {
                st.update(a.kind, s[v], val(s[v]), -1, group.left);
            }
        }
        if group.sols.is_empty() && !g.implicit {
            let key = std::mem::take(&mut group.key);
            self.index.remove(&key);
            group.states.clear();
            self.free.push(slot);
        }
    }

    /// The groups' rows at a close, in the order of their first live solution (`pool`:
    /// the solutions, `w` ids each), as [`super::grouped`] writes them from the window.
    pub(crate) fn rows(
        &self,
        spec: &Spec,
        g: &Grouping,
        pool: &Pool<TermId>,
        val: &mut impl FnMut(TermId) -> Val,
        wr: &mut Writer,
        terms: &Terms,
    ) -> Result<Vec<Key>, Refused> {
        let w = spec.vars.max(1);
        let sol = move |at: u64| {
            let i = at as usize - pool.base;
            &pool.items[i..i + w]
        };
        let mut order: Vec<(u64, u32)> = self
            .index
            .values()
            .map(|&slot| {
                let group = &self.slots[slot as usize];
                (group.sols.front().copied().unwrap_or(0), slot)
            })
            .collect();
        order.sort_unstable();
        let mut rows = Vec::with_capacity(order.len());
        let mut vals: Vec<Option<Out>> = Vec::with_capacity(g.aggs.len());
        for &(_, slot) in &order {
            let group = &self.slots[slot as usize];
            let n = group.sols.len() as u64;
            vals.clear();
            for (st, agg) in group.states.iter().zip(&g.aggs) {
                vals.push(self.value(st, agg, group, n, &sol, val, wr, terms)?);
            }
            let first = group.sols.front().map(|&at| sol(at));
            rows.push(
                spec.project
                    .iter()
                    .map(|(_, col)| match *col {
                        Col::Var(Some(v)) if !g.implicit => first.map(|s| u64::from(s[v])),
                        Col::Var(_) => None,
                        Col::Agg(a) => vals[a],
                    })
                    .collect(),
            );
        }
        Ok(rows)
    }

    /// An aggregate's value in a group from its state, or folded again from the group's
    /// live solutions where the state does not give it byte for byte.
    #[allow(clippy::too_many_arguments)]
    fn value<'p>(
        &self,
        st: &State,
        agg: &Agg,
        group: &Group,
        n: u64,
        sol: &impl Fn(u64) -> &'p [TermId],
        val: &mut impl FnMut(TermId) -> Val,
        wr: &mut Writer,
        terms: &Terms,
    ) -> Result<Option<Out>, Refused> {
        let again = |val: &mut dyn FnMut(TermId) -> Val, wr: &mut Writer| {
            let mut acc = Acc::new(agg.kind);
            let v = agg.var.expect("a fold of a variable");
            for &at in &group.sols {
                let id = sol(at)[v];
                fold(&mut acc, agg.kind, &agg.separator, id, val(id), terms)?;
            }
            value(&acc, agg, n, wr, terms)
        };
        Ok(match st {
            State::Count => Some(wr.count(terms, n)),
            State::Distinct(seen) => Some(wr.count(terms, seen.len() as u64)),
            State::Extreme {
                deque,
                kinds,
                nans,
                others,
            } => {
                if *others > 0 {
                    return refused(
                        "MIN / MAX of a value it does not order as rsep does (not an xsd:integer, \
                         xsd:decimal or xsd:double)",
                    );
                }
                if kinds.iter().filter(|&&c| c > 0).count() > 1 || *nans > 0 && n > 1 {
                    return refused("MIN / MAX over values of mixed datatypes, or NaN");
                }
                if *nans > 0 {
                    // (one solution, its value NaN: that term)
                    group
                        .sols
                        .front()
                        .map(|&at| u64::from(sol(at)[agg.var.expect("a var")]))
                } else {
                    match deque.best() {
                        Some((_, true)) => {
                            return refused("MIN / MAX with equal values of different terms")
                        }
                        Some((id, false)) => Some(u64::from(id)),
                        None => None,
                    }
                }
            }
            State::Sum(s) => {
                if s.unread > 0 {
                    return refused(
                        "SUM / AVG of a value rsep asks pyoxigraph about (an xsd:float, a derived \
                         integer type, an ill-typed number, a boolean, a date...)",
                    );
                }
                match s.exact.sum(n) {
                    // (a string: unbound, no prefix of the fold before it overflowing)
                    Some(_) if s.texts > 0 => None,
                    Some(sum) if s.dbls == 0 => value(&Acc::Sum(Some(sum)), agg, n, wr, terms)?,
                    // (a double: its sum depends on the order of addition)
                    _ => again(val, wr)?,
                }
            }
            State::Sample(unread) => {
                if *unread > 0 {
                    return refused("SAMPLE of a value rsep asks pyoxigraph about");
                }
                let v = agg.var.expect("SAMPLE of a variable");
                group.sols.front().map(|&at| u64::from(sol(at)[v]))
            }
            State::Concat => again(val, wr)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    /// A small deterministic generator (xorshift): the tests' draws.
    struct Draw(u64);

    impl Draw {
        fn next(&mut self, below: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % below
        }
    }

    /// Values of MIN / MAX drawn with a few terms each (id `10 * value + term`, so that
    /// equal values of different terms come up), windows sliding FIFO by drawn amounts:
    /// the deque's extreme and tie are those of the live values, computed plainly.
    #[test]
    fn the_deque_holds_the_extreme_of_the_live_values() {
        let mut d = Draw(0x9e37_79b9_7f4a_7c15);
        for round in 0..2000 {
            let max = round % 2 == 0;
            let kind = d.next(3);
            let span = 1 + d.next(12) as i64;
            let terms = 1 + d.next(3);
            let mut deque = Extreme::default();
            let mut live: VecDeque<(i64, TermId)> = VecDeque::new();
            let (mut pushed, mut left) = (0u64, 0u64);
            let val = |x: i64| match kind {
                0 => Val::Int(x),
                1 => Val::Dec(Decimal::from_str(&format!("{x}.5")).unwrap()),
                _ => Val::Dbl(x as f64 / 4.0),
            };
            for _ in 0..200 {
                for _ in 0..d.next(4) {
                    let x = d.next(span as u64) as i64 - span / 2;
                    let id = (10 * (x + 100) as u64 + d.next(terms)) as TermId;
                    deque.push(val(x), id, pushed, max);
                    live.push_back((x, id));
                    pushed += 1;
                }
                for _ in 0..d.next(4).min(live.len() as u64) {
                    live.pop_front();
                    left += 1;
                    deque.expire(left);
                }
                let best = if max {
                    live.iter().map(|l| l.0).max()
                } else {
                    live.iter().map(|l| l.0).min()
                };
                let want = best.map(|b| {
                    let ids: Vec<TermId> = live.iter().filter(|l| l.0 == b).map(|l| l.1).collect();
                    (ids[0], ids.iter().any(|&i| i != ids[0]))
                });
                let got = deque.best();
                assert_eq!(got.map(|g| g.1), want.map(|w| w.1), "round {round}");
                if let (Some((id, false)), Some((wid, false))) = (got, want) {
                    assert_eq!(id, wid, "round {round}");
                }
                assert!(deque.deque.len() <= live.len());
            }
        }
    }

    /// Integers and decimals drawn (small ones, and some near i64's bounds and decimal's),
    /// windows sliding FIFO: where the exact sums give a value, the fold of the live
    /// values in arrival order (oxigraph's, `Num::add`) gives it too, without an overflow;
    /// and they give one whenever the magnitudes are small.
    #[test]
    fn exact_sums_are_the_folds() {
        let mut d = Draw(0x2545_f491_4f6c_dd1d);
        let mut given = 0;
        for round in 0..3000 {
            let huge = round % 3 == 0;
            let mut ex = Exact::default();
            let mut live: VecDeque<Val> = VecDeque::new();
            for _ in 0..100 {
                for _ in 0..d.next(4) {
                    let v = match d.next(if huge { 6 } else { 4 }) {
                        0 | 1 => Val::Int(d.next(2001) as i64 - 1000),
                        2 | 3 => Val::Dec(
                            Decimal::from_str(&format!(
                                "{}.{:03}",
                                d.next(200) as i64 - 100,
                                d.next(1000)
                            ))
                            .unwrap(),
                        ),
                        4 => Val::Int(i64::MAX - d.next(3) as i64),
                        _ => Val::Dec(
                            Decimal::from_str(&format!("-1{:020}.25", d.next(1000))).unwrap(),
                        ),
                    };
                    ex.add(v, 1);
                    live.push_back(v);
                }
                for _ in 0..d.next(4).min(live.len() as u64) {
                    ex.add(live.pop_front().unwrap(), -1);
                }
                let folded = live
                    .iter()
                    .try_fold(super::super::Num::Int(Integer::from(0)), |s, &v| s.add(v));
                match ex.sum(live.len() as u64) {
                    Some(s) => {
                        given += 1;
                        assert_eq!(Some(s), folded, "round {round}");
                        assert_eq!(s.term(), folded.unwrap().term());
                    }
                    None => assert!(huge, "round {round}: small values not summed"),
                }
            }
        }
        assert!(given > 100_000, "{given}");
    }
}
