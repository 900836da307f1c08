"""The indexed chronological / recent SEQ (rsep/epsparql/seqindex.py) against the reference
evaluator: same outputs, same order, same instants, on random streams, for every FILTER
shape the index reads and some it does not; and its cost along a stream."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep import Engine
from rsep.algebra.events import Selection
from rsep.epsparql import runtime as epr
from rsep.epsparql.policy import PolicyState
from rsep.epsparql.seqindex import shape_of
from rsep.lang.epsparql import parse_epsparql
from rsep.testing.snippets import EX, ev

S = EX + "S"
P = "PREFIX : <http://example.org/>\n"
SEQ = P + "SELECT ?k ?a ?b WHERE {{ {{?k :a ?a}} SEQ {{?k :b ?b}} FILTER ({f}) }}"
FILTERS = [
    "?b > ?a + 10", "?b > ?a + 2", "?b >= ?a - 1", "?b < ?a - 2", "?b <= ?a",
    "?a > ?b + 1", "?a + 1 <= ?b", "?b - 3 > ?a", "?b > ?a + 1 && ?b < 9",
    "?b > ?a + 1 && getDURATION() > 2", "?b != ?a", "?b > ?a + 0.5", "?b > ?a",
    # a duration bound: a window, which the index applies as the reference does (issue 51)
    "getDURATION() <= 3", "getDURATION() < 4", "?b > ?a && getDURATION() <= 2",
    "getDURATION() <= 0", "?b > ?a + 1 && getDURATION() < 6",
]
# the same predicate on both sides (query (1)): one occurrence a left and a right candidate
SAME = P + "SELECT ?k ?a ?b WHERE { {?k :a ?a} SEQ {?k :a ?b} FILTER (?b < ?a - 1) }"
NESTED = P + ("SELECT ?k ?a ?b WHERE { { {?k :a ?a} SEQ {?k :b ?b} FILTER (?b > ?a + 1) } "
              "FILTER (?a > 2) }")
# SELECT lists that are not the solution itself (one variable dropped, one renamed) and
# ones that are (every variable, *): the index's path skips the projection for the latter
SUBSET = P + "SELECT ?k ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (?b > ?a) }"
RENAMED = P + "SELECT ?k (?b AS ?c) WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (?b > ?a) }"
STAR = P + "SELECT * WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (getDURATION() <= 3) }"
QUERIES = {"SAME": SAME, "NESTED": NESTED, "SUBSET": SUBSET, "RENAMED": RENAMED, "STAR": STAR}
VALUES = ["1", "2", "3", "4", "5", "6", "1", "2", "3", "4", "5", "6", "9", "12", "2.5", '"x"',
          "1e1", "-3"]


def _triple(k: int, kind: str, v: str) -> str:
    return f":c{k} :{kind} {v} ."


events_st = st.lists(
    st.tuples(st.integers(0, 2),  # time step (0: another event at the same instant)
              st.integers(0, 6),  # the event's length (mostly points)
              st.lists(st.tuples(st.sampled_from([1, 1, 1, 2]), st.sampled_from("aaabbbx"),
                                 st.sampled_from(VALUES)), min_size=1, max_size=2)),
    max_size=40)


def build(spec: list, intervals: bool) -> list:
    out, t = [], 0
    for n, (dt, length, trs) in enumerate(spec):
        t += dt
        start = t - length if intervals and length > 4 else t
        out.append(ev(S, (start, t), " ".join(_triple(*x) for x in trs), graph=f"{S}/g{n}"))
    return out


def rows(query: str, events: list, policy: str, mode: str, prune_each: bool = False) -> list:
    eng = Engine()
    eng.register(parse_epsparql(query, policy=policy), name="q")
    ctx = epr.EpContext.of(eng)
    if prune_each:  # the store forgets what the index does not hold at every instant
        ctx.PRUNE_FACTOR = ctx.PRUNE_SLACK = 0
    for rt in ctx.runtimes:
        if mode == "reference":
            rt.policy_state.index = None
        else:
            assert rt.policy_state.index is not None
    return [(o.time, o.start, o.end, tuple(sorted(o.bindings.items()))) for o in eng.run(events)]


@settings(max_examples=int(os.environ.get("RSEP_EXAMPLES", 300)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=events_st, f=st.sampled_from(FILTERS + sorted(QUERIES)),
       policy=st.sampled_from(["chronological", "recent"]), intervals=st.booleans(),
       prune_each=st.booleans())
def test_indexed_selection_equals_the_reference(spec, f, policy, intervals, prune_each):
    """Outputs, their order, instants and intervals are the reference evaluator's (the
    partitioned one; it equals the full re-evaluation, test_epsparql_policies), also when
    the store keeps only what the index holds from each instant on (``prune_each``; parts
    the reference takes over, for an interval, keep every unconsumed occurrence)."""
    q = QUERIES.get(f) or SEQ.format(f=f)
    events = build(spec, intervals)
    assert rows(q, events, policy, "index", prune_each) == rows(q, events, policy, "reference")


@pytest.mark.parametrize("f", ["?b > ?a + 10", "getDURATION() <= 10"])
@pytest.mark.parametrize("policy", ["chronological", "recent"])
@pytest.mark.parametrize("seed", range(3))
def test_long_random_walks_equal_the_reference(policy, seed, f):
    """The benchmark's stream (per-key random walks), long enough for candidates to pile up;
    with no window and with the bench's pattern (b)'s duration bound."""
    rnd = random.Random(seed)
    walk, events = [100, 100, 100], []
    for t in range(400):
        k = rnd.randrange(3)
        walk[k] += rnd.randint(-5, 5)
        events.append(ev(S, t, _triple(k, "ab"[rnd.randrange(2)], str(walk[k]))))
    q = SEQ.format(f=f)
    got = rows(q, events, policy, "index")
    assert got == rows(q, events, policy, "reference") and got
    assert rows(q, events, policy, "index", prune_each=True) == got


def test_the_select_is_skipped_only_where_it_changes_nothing():
    def select(q: str) -> bool:
        return PolicyState(parse_epsparql(q).pattern, Selection.CHRONOLOGICAL).select is not None
    assert not select(SEQ.format(f="?b > ?a")) and not select(STAR)
    assert select(SUBSET) and select(RENAMED)
    assert select(P + "SELECT DISTINCT ?k ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} }")


def test_shapes_read():
    def shape(q: str):
        return shape_of(parse_epsparql(q).pattern, "k")

    assert shape(SEQ.format(f="?b > ?a + 10")).cmp == ("b", ">", "a", 10.0)
    assert shape(SEQ.format(f="?a > ?b + 1")).cmp == ("b", "<", "a", -1.0)
    assert shape(SEQ.format(f="?a + 1 <= ?b")).cmp == ("b", ">=", "a", 1.0)
    assert shape(SEQ.format(f="?b != ?a")).cmp is None  # indexed, every group a candidate
    assert shape(NESTED).conds[0].text.startswith("(?b > ?a + 1")
    # not read: a blank node, a BGP of two patterns, DISTINCT
    assert shape(P + "SELECT ?k WHERE { {?k :a []} SEQ {?k :b ?b} }") is None
    assert shape(P + "SELECT ?k WHERE { {?k :a ?a . ?k :x ?x} SEQ {?k :b ?b} }") is None
    assert shape(P + "SELECT DISTINCT ?k ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} }") is None


@pytest.mark.parametrize("policy", ["chronological", "recent"])
def test_pairs_tested_do_not_grow_with_the_stream(policy):
    """The work of an event depends on its key's live candidates, not on history: the pairs
    the FILTER is tested on per event stay flat from 2,000 to 8,000 events."""
    per_event = []
    for n in (2000, 8000):
        rnd = random.Random(25)
        walk = [100] * 5
        eng = Engine()
        eng.register(parse_epsparql(SEQ.format(f="?b > ?a + 10"), policy=policy), name="q")
        events = []
        for t in range(n):
            k = rnd.randrange(5)
            walk[k] += rnd.randint(-5, 5)
            events.append(ev(S, t, _triple(k, "abc"[rnd.randrange(3)], str(walk[k]))))
        eng.run(events)
        index = epr.EpContext.of(eng).runtimes[0].policy_state.index
        assert index is not None and not index.slow
        per_event.append(index.tested / n)
    assert per_event[1] < 2 * per_event[0] + 0.5


@pytest.mark.parametrize("policy", ["chronological", "recent"])
def test_the_store_keeps_only_the_live_candidates(policy):
    """With no window the store used to keep every unconsumed occurrence, :c ones and right
    candidates no live left one precedes included; now, once pruned, it holds exactly the
    occurrences of the index's live candidates (the memory of (a) is proportional to them)."""
    rnd = random.Random(7)
    walk = [100] * 3
    eng = Engine()
    eng.register(parse_epsparql(SEQ.format(f="?b > ?a + 10"), policy=policy), name="q")
    events = []
    for t in range(3000):
        k = rnd.randrange(3)
        walk[k] += rnd.randint(-5, 5)
        events.append(ev(S, t, _triple(k, "abc"[rnd.randrange(3)], str(walk[k]))))
    eng.run(events)
    ctx = epr.EpContext.of(eng)
    ps = ctx.runtimes[0].policy_state
    index = ps.index
    assert index is not None and not index.slow
    unconsumed = sum(1 for e in events if e.seq not in ps.consumed)
    ctx._forget(2999)  # now, not once the store has doubled
    held = {oc.item for oc in ctx.world.occ.all}
    assert held == set(index.by_item) and len(held) == index.live()
    assert all(oc.p != EX + "c" for oc in ctx.world.occ.all)
    assert index.live() < unconsumed / 2
