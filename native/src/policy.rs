//! 000's selection policies (Sec. 4.3, Table 1) on event mappings of any kind: one
//! implementation, as rsep/algebra/selection.py is on the Python side, for every native
//! evaluator that chooses among candidates by them (RSEP-QL's MATCH, [`crate::rsepql`]).
//!
//! The order on intervals is 000's `precedes`: by end, then start, so a candidate's key is
//! `(t2, t1)` and the order is total on keys. FIRST / LAST (Eqs. 5 / 6) keep every candidate
//! of the least / greatest key, in their order; SEQ^c / SEQ^r (Eqs. 10 / 11) select, of the
//! right operands that have a left one, those no compatible rival precedes / follows, and
//! join each with the FIRST / LAST of its left ones (docs/semantics.md, "RSEP-QL event
//! patterns").
//!
//! Where 000's Table 1 says EP-SPARQL's chronological / recent are RSEP-QL's SEQ^c / SEQ^r +
//! P^c / P^r, both languages' native evaluators select with the code here ([`seq`]:
//! RSEP-QL's MATCH in [`crate::rsepql`], EP-SPARQL's formal policies in [`crate::formal`]).
//! rsep's EP-SPARQL reading differs from RSEP-QL's MATCH in one respect the code here takes
//! as a parameter, [`Consumption`]: the query's FILTER (its duration bound included) is
//! applied to the selected combinations *before* they consume, so a selected one that fails
//! it is not consumed and keeps beating its rivals (docs/semantics.md, "The window of a
//! chronological / recent query"). The other difference, decisions deferred to the instant
//! an occurrence leaves the query's window, is a matter of *when* the selection runs, not of
//! what it selects: the EP-SPARQL driver's ([`crate::formal`]), not this module's.

/// The SEQ variant and consumption a MATCH uses (rsep.algebra.selection.Selection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Unrestricted,
    Naive,
    Chronological,
    Recent,
}

impl Policy {
    pub fn parse(name: &str) -> Option<Policy> {
        Some(match name {
            "UNRESTRICTED" => Policy::Unrestricted,
            "NAIVE" => Policy::Naive,
            "CHRONOLOGICAL" => Policy::Chronological,
            "RECENT" => Policy::Recent,
            _ => return None,
        })
    }
}

pub type Key = (i64, i64);

/// Eq. (5): the candidates of the least key, in their order.
pub fn first<C>(cands: Vec<C>, key: impl Fn(&C) -> Key) -> Vec<C> {
    extreme(cands, key, |a, b| a < b)
}

/// Eq. (6): the candidates of the greatest key, in their order.
pub fn last<C>(cands: Vec<C>, key: impl Fn(&C) -> Key) -> Vec<C> {
    extreme(cands, key, |a, b| a > b)
}

fn extreme<C>(cands: Vec<C>, key: impl Fn(&C) -> Key, better: impl Fn(Key, Key) -> bool) -> Vec<C> {
    if cands.len() < 2 {
        return cands;
    }
    let mut best = key(&cands[0]);
    for c in &cands[1..] {
        let k = key(c);
        if better(k, best) {
            best = k;
        }
    }
    cands.into_iter().filter(|c| key(c) == best).collect()
}

/// The left operands SEQ^c / SEQ^r joins with a selected right one: FIRST under
/// chronological, LAST under recent.
pub fn pick<C>(policy: Policy, cands: Vec<C>, key: impl Fn(&C) -> Key) -> Vec<C> {
    if policy == Policy::Chronological {
        first(cands, key)
    } else {
        last(cands, key)
    }
}

/// Eqs. (10) / (11): of the usable right operands, whether each is selected: no compatible
/// rival precedes it (chronological) or follows it (recent). Two mappings of one event
/// pattern bind the same variables (a BEP all of its pattern's, SEQ the union, FIRST / LAST
/// their operand's), so compatible is equal: `values` gives a candidate's, and the rivals
/// are found by them, not pairwise.
pub fn select<'a, C>(
    policy: Policy,
    usable: &'a [C],
    key: impl Fn(&C) -> Key,
    values: impl Fn(&'a C) -> &'a [u32],
) -> Vec<bool> {
    if usable.len() < 2 {
        return vec![true; usable.len()];
    }
    let chrono = policy == Policy::Chronological;
    let mut best: hashbrown::HashMap<&[u32], Key> = hashbrown::HashMap::new();
    for c in usable {
        let k = key(c);
        best.entry(values(c))
            .and_modify(|b| {
                if (chrono && k < *b) || (!chrono && k > *b) {
                    *b = k;
                }
            })
            .or_insert(k);
    }
    usable.iter().map(|c| best[values(c)] == key(c)).collect()
}

/// Eqs. (10) / (11) at one SEQ^c / SEQ^r: of the right operands (in their order) those
/// with a left one ([`select`]'s usable) and no compatible rival preceding / following,
/// each joined with [`pick`] of its left ones, in the order rights, then lefts. `lefts`
/// gives a right operand's left candidates (the left operand under its mapping, ending
/// before it starts: the caller's evaluation); `values` a right operand's mapping (its
/// rivals are the equal ones).
#[allow(clippy::too_many_arguments)]
pub fn seq<R, L, O>(
    policy: Policy,
    rights: Vec<R>,
    mut lefts: impl FnMut(&R) -> Vec<L>,
    rkey: impl Fn(&R) -> Key,
    lkey: impl Fn(&L) -> Key,
    values: impl for<'a> Fn(&'a R) -> &'a [u32],
    mut join: impl FnMut(&L, &R) -> O,
) -> Vec<O> {
    let mut usable: Vec<(R, Vec<L>)> = Vec::new();
    for m2 in rights {
        let ls = lefts(&m2);
        if !ls.is_empty() {
            usable.push((m2, ls));
        }
    }
    let chosen = select(policy, &usable, |(m, _)| rkey(m), |(m, _)| values(m));
    let mut out = Vec::new();
    for ((m2, ls), c) in usable.into_iter().zip(chosen) {
        if c {
            for m1 in pick(policy, ls, &lkey) {
                out.push(join(&m1, &m2));
            }
        }
    }
    out
}

/// Which of an evaluation's selected combinations consume their justification (Appendix
/// A's P^c / P^r).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumption {
    /// RSEP-QL's MATCH: every combination the event pattern selects, whatever a FILTER after
    /// the MATCH then keeps of it
    Selected,
    /// rsep's reading of EP-SPARQL's formal policies: the combinations the query outputs,
    /// after its FILTER (a selected one the FILTER rejects is not consumed)
    Output,
}

/// The combinations of `found` whose items are consumed, `output` telling which the query
/// outputs (read under [`Consumption::Output`] only).
pub fn consumed<'a, C>(
    when: Consumption,
    found: &'a [C],
    output: &'a [bool],
) -> impl Iterator<Item = &'a C> {
    found
        .iter()
        .enumerate()
        .filter(move |(i, _)| when == Consumption::Selected || output[*i])
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_last_keep_ties_in_order() {
        let c = vec![(1, 3, 'a'), (2, 3, 'b'), (1, 3, 'c'), (0, 5, 'd')];
        let key = |c: &(i64, i64, char)| (c.1, c.0);
        assert_eq!(first(c.clone(), key), vec![(1, 3, 'a'), (1, 3, 'c')]);
        assert_eq!(last(c, key), vec![(0, 5, 'd')]);
    }

    #[test]
    fn select_compares_compatible_rivals_only() {
        // (values, t1, t2): the two of values [1] compete, [2] has no rival
        let c: Vec<(Vec<u32>, i64, i64)> = vec![(vec![1], 4, 4), (vec![2], 9, 9), (vec![1], 2, 2)];
        let key = |c: &(Vec<u32>, i64, i64)| (c.2, c.1);
        fn values(c: &(Vec<u32>, i64, i64)) -> &[u32] {
            &c.0
        }
        assert_eq!(
            select(Policy::Chronological, &c, key, values),
            vec![false, true, true]
        );
        assert_eq!(
            select(Policy::Recent, &c, key, values),
            vec![true, true, false]
        );
    }
}

#[cfg(test)]
mod seq_tests {
    use super::*;

    #[test]
    fn seq_joins_the_selected_rights_with_their_picked_lefts() {
        // rights (mapping, t) and lefts t: right [1]@5 and [1]@7 rival, [2]@6 has none
        let rights: Vec<(Vec<u32>, i64)> = vec![(vec![1], 7), (vec![2], 6), (vec![1], 5)];
        let lefts = [1i64, 1, 3, 6];
        let run = |p: Policy| {
            seq(
                p,
                rights.clone(),
                |r| lefts.iter().copied().filter(|&t| t < r.1).collect(),
                |r| (r.1, r.1),
                |&t| (t, t),
                |r| &r.0[..],
                |&l, r| (l, r.1),
            )
        };
        assert_eq!(
            run(Policy::Chronological),
            vec![(1, 6), (1, 6), (1, 5), (1, 5)]
        );
        assert_eq!(run(Policy::Recent), vec![(6, 7), (3, 6)]);
    }

    #[test]
    fn only_the_output_consumes_under_epsparqls_reading() {
        let found = ['a', 'b', 'c'];
        let out = [false, true, false];
        let all: Vec<_> = consumed(Consumption::Selected, &found, &out).collect();
        let kept: Vec<_> = consumed(Consumption::Output, &found, &out).collect();
        assert_eq!((all, kept), (vec![&'a', &'b', &'c'], vec![&'b']));
    }
}
