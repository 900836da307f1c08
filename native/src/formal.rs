//! EP-SPARQL's formal `chronological` / `recent` policies on ids (issue 50): RSEP-QL's SEQ^c /
//! SEQ^r + P^c / P^r at every SEQ of the query (000 Eqs. (10) / (11), Appendix A; 000 Table 1
//! equates them with EP-SPARQL's settings), as rsep/epsparql/policy.py and seqindex.py
//! evaluate them, for the shape the native EP-SPARQL planner takes: a SEQ of one-pattern
//! operands (left-nested) under one FILTER of numeric comparisons, over a stream file of
//! point events read in parts ([`Feed`]), the dictionary swept between instants.
//!
//! At instant tau the query sees the occurrences that start in its window (the duration
//! bound of its FILTER, ETALIS's window: `ta > tau - h`, or `>=` for a `<=` bound), end by tau
//! and are not consumed by it. What the SEQs select there ([`crate::policy::seq`], the code
//! RSEP-QL's MATCH selects by too) is filtered by the query's FILTER and output, and what is
//! output consumes the events that justify it ([`Consumption::Output`]: a selected
//! combination the FILTER rejects is not consumed, and keeps beating its rivals; that is
//! rsep's EP-SPARQL reading, where RSEP-QL's MATCH consumes before its FILTER). So a
//! decision is deferred while a rejected combination blocks its rivals: the query is
//! evaluated at its events, at the instant after one where it consumed, and at each instant
//! an unconsumed occurrence it holds leaves the window (its deadlines, `PolicyState.deadline`),
//! after the last event too, until none is left; at any other instant what it sees is what it
//! saw last, which gave nothing new.
//!
//! When a variable occurs in every triple pattern (policy.py's `partition_variable`, the
//! least such name: the planner's `part`), every solution, rival and candidate shares its
//! value, so each value's part is evaluated on its own, the parts in the order of their
//! terms' N-Triples text (policy.py's `sorted(dirty)`), only those whose content changed
//! (an occurrence came, left the window or was consumed) re-evaluated. Within a part:
//!
//! * a SEQ of two whose operands share no variable but the part's runs on the part's live
//!   candidates, as seqindex.py's `SeqIndex` does: the lefts in time order, the rights by
//!   mapping (Eq. (10) / (11)'s rivals are the equal mappings), the selected right of a
//!   mapping its earliest (chronological) or latest (recent) usable one, its lefts found by
//!   bisection; a right that no live left ends before is dropped (none ever will: lefts
//!   come later and only leave);
//! * anything else runs reference.py's evaluation as it is written, memoised per
//!   sub-pattern, bound and substitution within an evaluation.

use crate::chain::Format;
use crate::dictionary::TermId;
use crate::epsparql::{let_go, matches, Caches, Cmp, Values, Writer};
use crate::policy::{self, Consumption, Key, Policy};
use crate::select::{Done, Refused, Slot};
use crate::source::Feed;
use hashbrown::{HashMap, HashSet};
use std::collections::VecDeque;
use std::io::Write;

/// What the native path runs for a formal chronological / recent query.
#[derive(Clone, Debug)]
pub struct Spec {
    /// the SEQ's operands, in order
    pub patterns: Vec<[Slot; 3]>,
    /// the FILTER's conjuncts
    pub filter: Vec<Cmp>,
    /// Chronological or Recent
    pub policy: Policy,
    /// the query's window, the duration bound: (h, strict); None: the whole stream
    pub window: Option<(f64, bool)>,
    /// the partition variable (policy.py's `partition_variable`), if any
    pub part: Option<usize>,
    pub vars: usize,
    /// per output column: its name and variable (None: bound by no pattern)
    pub project: Vec<(String, Option<usize>)>,
    pub format: Format,
}

/// An occurrence an operand matched, visible to the query: its mapping (every variable; 0
/// unbound), time, stream item (the event: what consumption removes) and arrival number
/// (the occurrence store's order, which the reference reads in).
#[derive(Clone, Debug)]
struct Leaf {
    mu: Box<[TermId]>,
    t: i64,
    item: u32,
    seq: u64,
}

/// A solution of operands 0..=j: (mu, t_alpha, t_omega) and its justification (items,
/// sorted and distinct).
#[derive(Clone, Debug)]
struct Sol {
    mu: Box<[TermId]>,
    ta: i64,
    tw: i64,
    just: Vec<u32>,
}

impl Sol {
    fn of(l: &Leaf) -> Sol {
        Sol {
            mu: l.mu.clone(),
            ta: l.t,
            tw: l.t,
            just: vec![l.item],
        }
    }
}

/// 000's order on intervals: by end, then start.
fn key(s: &Sol) -> Key {
    (s.tw, s.ta)
}

fn compatible(a: &[TermId], b: &[TermId]) -> bool {
    a.iter().zip(b).all(|(&x, &y)| x == 0 || y == 0 || x == y)
}

fn merge(a: &[TermId], b: &[TermId]) -> Box<[TermId]> {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| if x != 0 { x } else { y })
        .collect()
}

/// (mu, ta, tw) join (mu', ta', tw') (reference.py's `combine`).
fn combine(l: &Sol, r: &Sol) -> Sol {
    let mut just = l.just.clone();
    just.extend_from_slice(&r.just);
    just.sort_unstable();
    just.dedup();
    Sol {
        mu: merge(&l.mu, &r.mu),
        ta: l.ta.min(r.ta),
        tw: l.tw.max(r.tw),
        just,
    }
}

/// One part's visible occurrences.
#[derive(Default)]
struct Part {
    /// per operand, in arrival (so time) order
    ops: Vec<VecDeque<Leaf>>,
    /// the two-operand index's rights by mapping: their arrival numbers, in order (some
    /// may be gone from `ops[1]`: skipped when met)
    groups: HashMap<Box<[TermId]>, VecDeque<u64>>,
    /// the index's mappings whose selected pair may differ from the one last tested
    /// (seqindex.py's `pending`): a pair the FILTER rejected is rejected again, and one it
    /// passed was output and consumed, so only these are tested, unless (chronological) the
    /// left selection changed, when every mapping is
    pending: HashSet<Box<[TermId]>>,
    /// chronological: the lefts last selected (arrival numbers)
    last: Vec<u64>,
    /// recent: each mapping's lefts last paired with it, and each left's mappings
    partner: HashMap<Box<[TermId]>, Vec<u64>>,
    partners: HashMap<u64, Vec<Box<[TermId]>>>,
}

impl Part {
    /// A right of the index let go of: its mapping's selection may change.
    fn right_gone(&mut self, l: &Leaf) {
        if !self.groups.is_empty() {
            self.pending.insert(l.mu.clone());
        }
    }

    /// A left of the index let go of: the mappings paired with it (recent) select anew.
    fn left_gone(&mut self, l: &Leaf) {
        if let Some(ms) = self.partners.remove(&l.seq) {
            self.pending.extend(ms);
        }
    }

    fn find(&self, j: usize, seq: u64) -> Option<usize> {
        self.ops[j].binary_search_by_key(&seq, |l| l.seq).ok()
    }

    fn is_empty(&self) -> bool {
        self.ops.iter().all(|o| o.is_empty())
    }
}

type Memo = HashMap<(usize, i64, Box<[TermId]>), Vec<Sol>>;

struct Engine<'s> {
    spec: &'s Spec,
    n: usize,
    /// the two-operand index runs the parts (the operands share no variable but the part's)
    indexed: bool,
    /// per operand j: whether each variable is bound by operands 0..=j (a memo key keeps
    /// the substitution's values of those only, as reference.py's `evaluate` restricts it)
    scope: Vec<Vec<bool>>,
    parts: HashMap<TermId, Part>,
    /// per held item: where its occurrences are (part, operand, arrival number)
    held: HashMap<u32, Vec<(TermId, u8, u64)>>,
    /// (start, item) of each held item, in the order of their starts (the events' order):
    /// when each leaves the window
    expiry: VecDeque<(i64, u32)>,
    dirty: HashSet<TermId>,
    consumed_since: bool,
    seq: u64,
    /// the parts' N-Triples texts, for their order (made again after a sweep)
    texts: HashMap<TermId, String>,
}

impl<'s> Engine<'s> {
    fn new(spec: &'s Spec) -> Engine<'s> {
        let n = spec.patterns.len();
        let vars_of = |p: &[Slot; 3]| -> Vec<usize> {
            p.iter()
                .filter_map(|s| match s {
                    Slot::Var(v) => Some(*v),
                    Slot::Const(_) => None,
                })
                .collect()
        };
        let mut scope = Vec::new();
        let mut bound = vec![false; spec.vars];
        for p in &spec.patterns {
            for v in vars_of(p) {
                bound[v] = true;
            }
            scope.push(bound.clone());
        }
        let indexed = n == 2 && {
            let (l, r) = (vars_of(&spec.patterns[0]), vars_of(&spec.patterns[1]));
            l.iter()
                .filter(|v| r.contains(v))
                .all(|&v| Some(v) == spec.part)
        };
        Engine {
            spec,
            n,
            indexed,
            scope,
            parts: HashMap::new(),
            held: HashMap::new(),
            expiry: VecDeque::new(),
            dirty: HashSet::new(),
            consumed_since: false,
            seq: 0,
            texts: HashMap::new(),
        }
    }

    /// An occurrence of the instant: each operand's match of it kept in its part.
    fn note(&mut self, t: &[TermId; 3], tau: i64, item: u32, mu: &mut [TermId]) {
        self.seq += 1;
        let seq = self.seq;
        for (j, p) in self.spec.patterns.iter().enumerate() {
            if !matches(p, t, mu) {
                continue;
            }
            let key = self.spec.part.map_or(0, |v| mu[v]);
            let n = self.n;
            let part = self.parts.entry(key).or_insert_with(|| Part {
                ops: (0..n).map(|_| VecDeque::new()).collect(),
                ..Part::default()
            });
            let leaf = Leaf {
                mu: mu.into(),
                t: tau,
                item,
                seq,
            };
            if self.indexed && j == 1 {
                part.pending.insert(leaf.mu.clone());
                match part.groups.get_mut(&leaf.mu) {
                    Some(g) => g.push_back(seq),
                    None => {
                        part.groups.insert(leaf.mu.clone(), VecDeque::from([seq]));
                    }
                }
            }
            part.ops[j].push_back(leaf);
            let held = self.held.entry(item).or_default();
            if held.is_empty() && self.spec.window.is_some() {
                self.expiry.push_back((tau, item));
            }
            held.push((key, j as u8, seq));
            self.dirty.insert(key);
        }
    }

    /// Whether an occurrence starting at `ta` is outside the window at `tau`
    /// (reference.py's `_live`: `ta <= tau - h` for a strict bound, `ta < tau - h` else).
    fn out(&self, ta: i64, tau: i64) -> bool {
        match self.spec.window {
            None => false,
            Some((h, strict)) => {
                let lo = tau as f64 - h;
                if strict {
                    ta as f64 <= lo
                } else {
                    (ta as f64) < lo
                }
            }
        }
    }

    /// The first instant after `after` (the last one evaluated) at which what the query
    /// sees changes with no new event (policy.py's `PolicyState.deadline`): the next one
    /// after a consumption; the one at which a held occurrence leaves the window (the
    /// first integer tau with `ta <= tau - h`, or `<` for a `<=` bound).
    fn deadline(&mut self, after: i64) -> Option<i64> {
        if self.consumed_since {
            return Some(after + 1);
        }
        let (h, strict) = self.spec.window?;
        while let Some(&(ta, item)) = self.expiry.front() {
            if !self.held.contains_key(&item) {
                self.expiry.pop_front();
                continue;
            }
            let x = ta as f64 + h;
            let t = if strict { x.ceil() } else { x.floor() + 1.0 };
            if t > after as f64 {
                return Some(if t >= i64::MAX as f64 {
                    i64::MAX
                } else {
                    t as i64
                });
            }
            // left unseen (policy.py's case of an occurrence derived with a past interval;
            // never here: an evaluation expires what its window passed)
            self.expiry.pop_front();
            if let Some(at) = self.held.remove(&item) {
                self.dirty.extend(at.into_iter().map(|(p, _, _)| p));
            }
        }
        None
    }

    /// The items whose occurrences left the window by `tau`: their parts changed.
    fn expire(&mut self, tau: i64) {
        while let Some(&(ta, item)) = self.expiry.front() {
            if !self.out(ta, tau) {
                break;
            }
            self.expiry.pop_front();
            if let Some(at) = self.held.remove(&item) {
                for (p, _, _) in at {
                    self.dirty.insert(p);
                }
            }
        }
    }

    /// Forget that `leaf` of operand `j` in `part` is held (dropped: no output can use it).
    fn unhold(held: &mut HashMap<u32, Vec<(TermId, u8, u64)>>, part: TermId, j: usize, l: &Leaf) {
        if let Some(at) = held.get_mut(&l.item) {
            at.retain(|&(p, jj, s)| !(p == part && jj as usize == j && s == l.seq));
            if at.is_empty() {
                held.remove(&l.item);
            }
        }
    }

    /// The part's occurrences out of the window let go of, and the rights no live left
    /// ends before (with lefts coming later and only leaving, none ever will).
    fn trim(&mut self, key: TermId, tau: i64) {
        let Some(part) = self.parts.get_mut(&key) else {
            return;
        };
        if let Some((h, strict)) = self.spec.window {
            let lo = tau as f64 - h;
            let gone = |t: i64| {
                if strict {
                    t as f64 <= lo
                } else {
                    (t as f64) < lo
                }
            };
            for j in 0..self.n {
                while part.ops[j].front().is_some_and(|l| gone(l.t)) {
                    // (its item's expiry entry let it go)
                    let l = part.ops[j].pop_front().expect("a front");
                    if self.indexed {
                        if j == 0 {
                            part.left_gone(&l);
                        } else {
                            part.right_gone(&l);
                        }
                    }
                }
            }
        }
        for j in 1..self.n {
            let first = part.ops[j - 1].front().map(|l| l.t);
            while part.ops[j]
                .front()
                .is_some_and(|l| first.is_none_or(|f| l.t <= f))
            {
                let l = part.ops[j].pop_front().expect("a front");
                Self::unhold(&mut self.held, key, j, &l);
                if self.indexed {
                    part.right_gone(&l);
                }
            }
        }
        if part.is_empty() {
            self.parts.remove(&key);
        }
    }

    /// The part's solutions now, in the reference's order, before the FILTER.
    fn evaluate(&mut self, key: TermId, tau: i64) -> Vec<Sol> {
        self.trim(key, tau);
        let Some(part) = self.parts.get_mut(&key) else {
            return Vec::new();
        };
        if self.indexed {
            return Self::indexed(self.spec.policy, part);
        }
        let mut sub = vec![0; self.spec.vars];
        if let Some(v) = self.spec.part {
            sub[v] = key;
        }
        let mut memo = Memo::new();
        reference(
            self.spec.policy,
            &self.scope,
            part,
            self.n - 1,
            tau,
            &sub,
            &mut memo,
        )
    }

    /// `{tp1} SEQ {tp2}` on the part's live candidates: lefts in time order, rights by
    /// mapping. With the dead rights dropped (trim), every live right is usable; of a
    /// mapping's rights Eq. (10) selects the earliest, Eq. (11) the latest (rivals are the
    /// equal mappings; one occurrence a mapping and instant), and pick() takes the FIRST
    /// of all lefts (chronological: those at the earliest time) or the LAST of those ending
    /// before the right starts (recent: those at the latest such time). The pairs come in
    /// the reference's order: by the right's arrival, then the left's.
    fn indexed(policy: Policy, part: &mut Part) -> Vec<Sol> {
        let Part {
            ops,
            groups,
            pending,
            last,
            partner,
            partners,
        } = part;
        let (lefts, rights) = (&ops[0], &ops[1]);
        if lefts.is_empty() {
            groups.clear();
            pending.clear();
            partner.clear();
            partners.clear();
            last.clear();
            return Vec::new();
        }
        let at = |l: &Leaf| (l.t, l.t);
        let find = |seq: u64| rights.binary_search_by_key(&seq, |l| l.seq).ok();
        let chrono = policy == Policy::Chronological;
        let mut first: Vec<&Leaf> = Vec::new();
        let mut every = false;
        if chrono {
            let t0 = lefts[0].t;
            let end = lefts.partition_point(|l| l.t <= t0);
            first = policy::pick(policy, lefts.range(..end).collect(), |l| at(l));
            if first.len() != last.len() || first.iter().zip(last.iter()).any(|(a, &b)| a.seq != b)
            {
                *last = first.iter().map(|l| l.seq).collect();
                every = true;
            }
        }
        let mut pairs: Vec<(u64, u64, Sol)> = Vec::new();
        // a mapping's selected pair, tested: false when the mapping has no right left
        let mut select = |mu: &[TermId], g: &mut VecDeque<u64>| -> bool {
            // (arrival numbers of rights consumed or dropped, at the end the policy reads)
            let r = loop {
                let s = if chrono { g.front() } else { g.back() };
                let Some(&s) = s else { return false };
                match find(s) {
                    Some(i) => break &rights[i],
                    None => {
                        if chrono {
                            g.pop_front();
                        } else {
                            g.pop_back();
                        }
                    }
                }
            };
            let chosen: Vec<&Leaf> = if chrono {
                first.clone()
            } else {
                let j = lefts.partition_point(|l| l.t < r.t);
                if j == 0 {
                    return true; // (not usable; trim drops it)
                }
                let tl = lefts[j - 1].t;
                let i = lefts.partition_point(|l| l.t < tl);
                let chosen = policy::pick(policy, lefts.range(i..j).collect(), |l| at(l));
                let now: Vec<u64> = chosen.iter().map(|l| l.seq).collect();
                if let Some(old) = partner.insert(mu.into(), now.clone()) {
                    for s in old {
                        if let Some(ms) = partners.get_mut(&s) {
                            ms.retain(|m| &m[..] != mu);
                        }
                    }
                }
                for s in now {
                    partners.entry(s).or_default().push(mu.into());
                }
                chosen
            };
            let rs = Sol::of(r);
            for a in chosen {
                pairs.push((r.seq, a.seq, combine(&Sol::of(a), &rs)));
            }
            true
        };
        if every {
            groups.retain(|mu, g| select(mu, g));
        } else {
            for mu in pending.iter() {
                if let Some(g) = groups.get_mut(mu) {
                    if !select(mu, g) {
                        groups.remove(mu);
                    }
                }
            }
        }
        pending.clear();
        pairs.sort_unstable_by_key(|p| (p.0, p.1));
        pairs.into_iter().map(|p| p.2).collect()
    }

    /// The consumption of the items the outputs used: their occurrences are invisible to
    /// every later evaluation (P^c / P^r), their parts changed.
    fn consume(&mut self, items: &[u32]) {
        for item in items {
            let Some(at) = self.held.remove(item) else {
                continue;
            };
            self.consumed_since = true;
            for (key, j, seq) in at {
                self.dirty.insert(key);
                if let Some(part) = self.parts.get_mut(&key) {
                    if let Some(i) = part.find(j as usize, seq) {
                        let l = part.ops[j as usize].remove(i).expect("found");
                        if self.indexed {
                            if j == 0 {
                                part.left_gone(&l);
                            } else {
                                part.right_gone(&l);
                            }
                        }
                    }
                    if part.is_empty() {
                        self.parts.remove(&key);
                    }
                }
            }
        }
    }

    /// The ids the state holds (a sweep keeps them).
    fn mark(&self, held: &mut Vec<TermId>) {
        for (&key, part) in &self.parts {
            held.push(key);
            for l in part.ops.iter().flatten() {
                held.extend_from_slice(&l.mu);
            }
            for g in part.groups.keys() {
                held.extend_from_slice(g);
            }
        }
        held.extend(self.dirty.iter().copied());
    }
}

/// reference.py's `evaluate` of operands 0..=j (SEQs nested to the left) over the part's
/// visible occurrences ending by `hi`, compatible with `sub`: a pattern's matches in arrival
/// order; a SEQ by Eq. (10) / (11) ([`policy::seq`]), each right operand's lefts the left
/// operand under its mapping ending before it starts.
fn reference(
    policy: Policy,
    scope: &[Vec<bool>],
    part: &Part,
    j: usize,
    hi: i64,
    sub: &[TermId],
    memo: &mut Memo,
) -> Vec<Sol> {
    let leaves = |j: usize, sub: &[TermId]| -> Vec<Sol> {
        part.ops[j]
            .iter()
            .filter(|l| l.t <= hi && compatible(&l.mu, sub))
            .map(Sol::of)
            .collect()
    };
    if j == 0 {
        return leaves(0, sub);
    }
    let mkey: Box<[TermId]> = sub
        .iter()
        .zip(&scope[j])
        .map(|(&x, &b)| if b { x } else { 0 })
        .collect();
    if let Some(got) = memo.get(&(j, hi, mkey.clone())) {
        return got.clone();
    }
    let rights = leaves(j, sub);
    let out = policy::seq(
        policy,
        rights,
        |m2| {
            let bound = hi.min(m2.ta - 1);
            reference(policy, scope, part, j - 1, bound, &merge(sub, &m2.mu), memo)
                .into_iter()
                .filter(|m1| m1.tw < m2.ta)
                .collect()
        },
        key,
        key,
        |m: &Sol| &m.mu[..],
        combine,
    );
    memo.insert((j, hi, mkey), out.clone());
    out
}

/// Run the query over the events as the feed gives them, writing its complex events to
/// `out`: Ok(Err) when the native path refuses the input (what was written is to be thrown
/// away).
pub fn run_on(
    spec: &Spec,
    feed: &mut impl Feed,
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
    if spec.patterns.len() < 2 || !matches!(spec.policy, Policy::Chronological | Policy::Recent) {
        return Ok(Err(Refused(
            "not a SEQ under chronological / recent".into(),
        )));
    }
    feed.hold();
    let mut cache = Caches {
        generation: feed.generation(),
        values: Vec::new(),
        writer: Writer::of(spec.format, &spec.project),
    };
    let mut e = Engine::new(spec);
    let mut mu = vec![0; spec.vars];
    let mut fresh: Vec<([TermId; 3], u32)> = Vec::new();
    let mut seen: HashSet<[TermId; 3]> = HashSet::new();
    let mut emitted: HashSet<(Vec<TermId>, i64, i64, Vec<u32>)> = HashSet::new();
    let mut consumed: Vec<u32> = Vec::new();
    let mut held = Vec::new();
    let mut last: Option<i64> = None;
    let mut evaluations = 0;
    let mut k = 0;
    loop {
        let next = if has!(k) { Some(feed.time(k)) } else { None };
        let due = match last {
            Some(after) => e.deadline(after),
            None => None,
        };
        let tau = match (next, due) {
            (Some(a), Some(d)) => a.min(d),
            (Some(a), None) => a,
            (None, Some(d)) => d,
            (None, None) => break,
        };
        e.consumed_since = false;
        // the instant's occurrences, in arrival order: a triple at one time is one
        // occurrence, its item the first event carrying it (the occurrence store's set)
        fresh.clear();
        seen.clear();
        while has!(k) && feed.time(k) == tau {
            for t in feed.triples_of(k) {
                let new = if fresh.len() < 16 {
                    !fresh.iter().any(|(x, _)| x == t)
                } else {
                    if seen.is_empty() {
                        seen.extend(fresh.iter().map(|(x, _)| *x));
                    }
                    seen.insert(*t)
                };
                if new {
                    fresh.push((*t, k as u32));
                }
            }
            k += 1;
        }
        for (t, item) in &fresh {
            e.note(t, tau, *item, &mut mu);
        }
        evaluations += 1;
        cache.fresh(feed.generation());
        if e.texts.len() > 2 * e.parts.len() + 1024 {
            e.texts.clear();
        }
        e.expire(tau);
        let terms = feed.terms();
        let mut parts: Vec<TermId> = e.dirty.drain().collect();
        if parts.len() > 1 {
            for &p in &parts {
                e.texts
                    .entry(p)
                    .or_insert_with(|| terms.term(p).map(|t| t.to_string()).unwrap_or_default());
            }
            let texts = &e.texts;
            parts.sort_unstable_by(|a, b| texts[a].cmp(&texts[b]));
        }
        let mut values = Values::with(terms, std::mem::take(&mut cache.values));
        emitted.clear();
        consumed.clear();
        let mut found: Vec<Sol> = Vec::new();
        for p in parts {
            found.extend(e.evaluate(p, tau));
        }
        let mut output = vec![false; found.len()];
        for (i, s) in found.iter().enumerate() {
            match values.all(&spec.filter, &s.mu, s.ta, s.tw) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(r) => return Ok(Err(r)),
            }
            // (runtime.py's `_emitted`: one output a solution of the instant, as projected)
            let shown: Vec<TermId> = spec
                .project
                .iter()
                .map(|(_, v)| v.map_or(0, |v| s.mu[v]))
                .collect();
            if !emitted.insert((shown, s.ta, s.tw, s.just.clone())) {
                continue;
            }
            output[i] = true;
            cache.writer.row(terms, out, tau, s.ta, s.tw, &s.mu)?;
        }
        for s in policy::consumed(Consumption::Output, &found, &output) {
            consumed.extend_from_slice(&s.just);
        }
        cache.values = values.into_cache();
        e.consume(&consumed);
        last = Some(tau);
        let gen = feed.generation();
        let_go(feed, k, &mut held, |held| e.mark(held));
        if feed.generation() != gen {
            e.texts.clear();
        }
    }
    Ok(Ok(Done {
        evaluations,
        rows: cache.writer.rows,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::Op;
    use crate::chain::Val;
    use crate::dictionary::Terms;
    use crate::epsparql::Num;
    use crate::source::Whole;
    use crate::stream::read_events;

    const EX: &str = "http://example.org/";

    fn stream(items: &[(i64, &str, &str, i64)]) -> String {
        let mut s = String::new();
        for (k, (t, key, kind, v)) in items.iter().enumerate() {
            s += &format!(
                "<{EX}e/{k}> <{PROV}> {t} .\n<{EX}e/{k}> {{ <{EX}{key}> <{EX}{kind}> {v} . }}\n"
            );
        }
        s
    }

    const PROV: &str = "http://www.w3.org/ns/prov#generatedAtTime";

    fn pat(terms: &Terms, kind: &str, v: usize) -> [Slot; 3] {
        let iri = format!("{EX}{kind}");
        let p = terms.get_ref(oxrdf::NamedNodeRef::new_unchecked(&iri).into());
        [Slot::Var(0), Slot::Const(p), Slot::Var(v)]
    }

    fn spec(terms: &Terms, kinds: &[&str], policy: Policy, filter: Vec<Cmp>) -> Spec {
        let vars = kinds.len() + 1;
        let window = duration_window(&filter);
        Spec {
            patterns: kinds
                .iter()
                .enumerate()
                .map(|(i, k)| pat(terms, k, i + 1))
                .collect(),
            filter,
            policy,
            window,
            part: Some(0),
            vars,
            project: (0..vars).map(|v| (format!("v{v}"), Some(v))).collect(),
            format: Format::Jsonl,
        }
    }

    /// The window a test's FILTER bounds: its getDURATION() < c / <= c.
    fn duration_window(filter: &[Cmp]) -> Option<(f64, bool)> {
        filter.iter().find_map(|c| match (&c.left, c.op, &c.right) {
            (Num::Duration, Op::Lt, Num::Const(Val::Int(h))) => Some((*h as f64, true)),
            (Num::Duration, Op::Le, Num::Const(Val::Int(h))) => Some((*h as f64, false)),
            _ => None,
        })
    }

    fn run_spec(doc: &str, make: impl Fn(&Terms) -> Spec) -> String {
        let mut terms = Terms::new();
        let ev =
            read_events(doc.as_bytes(), &mut terms, &[PROV.to_string()], 1 << 20).expect("read");
        let spec = make(&terms);
        let mut out = Vec::new();
        run_on(
            &spec,
            &mut Whole {
                events: &ev,
                terms: &terms,
            },
            &mut out,
        )
        .expect("io")
        .expect("taken");
        String::from_utf8(out).expect("utf-8")
    }

    fn run(doc: &str, policy: Policy, filter: Vec<Cmp>) -> String {
        run_spec(doc, |t| spec(t, &["a", "b"], policy, filter.clone()))
    }

    fn lt(a: usize, b: usize) -> Cmp {
        Cmp {
            left: Num::Var(b),
            op: Op::Lt,
            right: Num::Var(a),
        }
    }

    #[test]
    fn a_rejected_candidate_blocks_until_it_leaves_the_window() {
        // docs/semantics.md's: 70 at 0, 80 at 5, 75 at 10, FILTER (?b < ?a &&
        // getDURATION() < 30): chronological picks 70 at 10 and the drop fails; 70 leaves at
        // 30, and 80 -> 75 is output then
        let doc = stream(&[(0, "c", "a", 70), (5, "c", "a", 80), (10, "c", "b", 75)]);
        let dur = Cmp {
            left: Num::Duration,
            op: Op::Lt,
            right: Num::Const(Val::Int(30)),
        };
        let got = run(&doc, Policy::Chronological, vec![lt(1, 2), dur.clone()]);
        assert!(
            got.starts_with("{\"time\": 30, \"from\": 5, \"to\": 10,"),
            "{got}"
        );
        assert_eq!(got.lines().count(), 1);
        let got = run(&doc, Policy::Recent, vec![lt(1, 2), dur]);
        assert!(
            got.starts_with("{\"time\": 10, \"from\": 5, \"to\": 10,"),
            "{got}"
        );
    }

    #[test]
    fn a_consumption_releases_a_blocked_candidate_at_the_next_instant() {
        // 100 at 0, 120 at 1, then b 110 at 2 and b 50 at 3: at 3 both select 100, 100 -> 50
        // is output and consumes it; at 4, with no event, 110 takes 120
        let doc = stream(&[
            (0, "c", "a", 100),
            (1, "c", "a", 120),
            (2, "c", "b", 110),
            (3, "c", "b", 50),
        ]);
        let got = run(&doc, Policy::Chronological, vec![lt(1, 2)]);
        let times: Vec<&str> = got.lines().map(|l| &l[..24]).collect();
        assert_eq!(
            times,
            [
                "{\"time\": 3, \"from\": 0, \"",
                "{\"time\": 4, \"from\": 1, \""
            ],
            "{got}"
        );
    }
}
