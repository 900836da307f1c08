"""The chronological / recent SEQ of three and more triple patterns on the chain index
(rsep/epsparql/seqindex.py, ChainIndex) against the reference evaluator: the same outputs,
in the same order, at the same instants, with the same intervals, on random streams (points
and intervals, simultaneous items, an item of two triples), under windows and without; and
its cost along a stream (issue 51)."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep import Engine
from rsep.epsparql import runtime as epr
from rsep.epsparql.seqindex import ChainIndex, chain_of
from rsep.lang.epsparql import parse_epsparql
from rsep.testing.snippets import EX, ev

S = EX + "S"
P = "PREFIX : <http://example.org/>\n"
THREE = P + "SELECT ?k ?a ?b ?c WHERE {{ {{?k :a ?a}} SEQ {{?k :b ?b}} SEQ {{?k :c ?c}} FILTER ({f}) }}"
QUERIES = {
    "three": THREE,
    # one predicate at two places: an occurrence is two operands' candidate
    "again": P + "SELECT * WHERE {{ {{?k :a ?a}} SEQ {{?k :b ?b}} SEQ {{?k :a ?c}} FILTER ({f}) }}",
    "four": P + ("SELECT ?k ?a ?d WHERE {{ {{?k :a ?a}} SEQ {{?k :b ?b}} SEQ {{?k :c ?c}} "
                 "SEQ {{?k :a ?d}} FILTER ({f}) }}"),
    # FILTERs at two levels of the group, and a projected expression
    "nested": P + ("SELECT ?k (?c - ?a AS ?rise) WHERE {{ {{ {{?k :a ?a}} SEQ {{?k :b ?b}} "
                   "SEQ {{?k :c ?c}} FILTER ({f}) }} FILTER (?a > 1) }}"),
}
FILTERS = [
    "getDURATION() <= 10", "getDURATION() <= 3", "getDURATION() < 4", "getDURATION() <= 0",
    "?c > ?a", "?c > ?a + 2 && getDURATION() <= 6", "?b != ?a", "true",
]
VALUES = ["1", "2", "3", "4", "5", "6", "1", "2", "3", "9", "2.5", '"x"', "-3"]


def _triple(k: int, kind: str, v: str) -> str:
    return f":c{k} :{kind} {v} ."


events_st = st.lists(
    st.tuples(st.integers(0, 2),  # time step (0: another event at the same instant)
              st.integers(0, 6),  # the event's length (mostly points)
              st.lists(st.tuples(st.sampled_from([1, 1, 1, 2]), st.sampled_from("aabbccx"),
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
    if prune_each:  # the store forgets what the query cannot use at every instant
        ctx.PRUNE_FACTOR = ctx.PRUNE_SLACK = 0
    for rt in ctx.runtimes:
        if mode == "reference":
            rt.policy_state.index = None
        else:
            assert isinstance(rt.policy_state.index, ChainIndex)
    return [(o.time, o.start, o.end, tuple(sorted(o.bindings.items()))) for o in eng.run(events)]


@settings(max_examples=int(os.environ.get("RSEP_EXAMPLES", 300)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=events_st, shape=st.sampled_from(sorted(QUERIES)), f=st.sampled_from(FILTERS),
       policy=st.sampled_from(["chronological", "recent"]), intervals=st.booleans(),
       prune_each=st.booleans())
def test_chain_index_equals_the_reference(spec, shape, f, policy, intervals, prune_each):
    q = QUERIES[shape].format(f=f)
    events = build(spec, intervals)
    assert rows(q, events, policy, "index", prune_each) == rows(q, events, policy, "reference")


@pytest.mark.parametrize("policy", ["chronological", "recent"])
@pytest.mark.parametrize("seed", range(3))
def test_the_benchmark_stream_equals_the_reference(policy, seed):
    """rsep bench epsparql-etalis's stream (per-key random walks, kinds a / b / c) under its
    pattern (c), long enough for every rule of the selection to be met."""
    rnd = random.Random(seed)
    walk, events = [100, 100, 100], []
    for t in range(500):
        k = rnd.randrange(3)
        walk[k] += rnd.randint(-5, 5)
        events.append(ev(S, t, _triple(k, "abc"[rnd.randrange(3)], str(walk[k]))))
    q = THREE.format(f="getDURATION() <= 10")
    got = rows(q, events, policy, "index")
    assert got == rows(q, events, policy, "reference") and len(got) > 20
    assert rows(q, events, policy, "index", prune_each=True) == got


def test_chains_read():
    def chain(text: str):
        q = parse_epsparql(text, policy="chronological")
        return chain_of(q.pattern, "k")

    c = chain(THREE.format(f="getDURATION() <= 10"))
    assert c is not None and len(c.patterns) == 3 and len(c.conds) == 1
    assert chain(P + "SELECT * WHERE { {?k :a ?a} SEQ {?k :b ?b} }") is None  # two: SeqIndex's
    # another variable shared by two operands: rivals are not equal mappings
    assert chain(P + "SELECT * WHERE { {?k :a ?a} SEQ {?k :b ?a} SEQ {?k :c ?c} }") is None
    assert chain(P + "SELECT * WHERE { {?k :a ?a} SEQ {?k :b ?b . ?k :x ?y} SEQ {?k :c ?c} }") is None
    assert chain(P + "SELECT DISTINCT ?k WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} }") is None


@pytest.mark.parametrize("policy", ["chronological", "recent"])
def test_held_solutions_do_not_grow_with_the_stream(policy):
    """Under a window a part holds what is in it: the live solutions stay bounded along the
    stream (the window's 10 units hold 10 events)."""
    rnd = random.Random(7)
    eng = Engine()
    eng.register(parse_epsparql(THREE.format(f="getDURATION() <= 10"), policy=policy), name="q")
    index = epr.EpContext.of(eng).runtimes[0].policy_state.index
    assert isinstance(index, ChainIndex)
    peak = 0
    events = (ev(S, t, _triple(rnd.randrange(5), "abc"[rnd.randrange(3)], str(rnd.randrange(9))))
              for t in range(6000))
    for n, _ in enumerate(eng.run(events)):
        if n % 50 == 0:
            peak = max(peak, index.live(), len(index.by_item))
    assert index.live() <= 30 and peak <= 40
