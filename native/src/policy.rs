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

type Key = (i64, i64);

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
