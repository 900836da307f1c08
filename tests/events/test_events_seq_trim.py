"""RSEP-QL's MATCH CHRONOLOGICAL / RECENT { E_1 SEQ E_2 } sets aside what Eq. (10)/(11)
cannot use again (rsep/events/incremental.py): consumed items, and right mappings no
unconsumed left one ends before. The engine against the reference evaluator, on the
benchmark's random walks over landmark windows and on a delayed window that brings a
left mapping in after its right one was set aside."""

from __future__ import annotations

import copy
import random
from collections import Counter

import pytest

from rsep import Engine, parse_query
from rsep.runtime import reference
from rsep.testing.snippets import EX, ev

S = EX + "S"
LANDMARK = """PREFIX : <http://example.org/>
REGISTER ISTREAM :out AS
SELECT ?k ?a ?b
FROM NAMED WINDOW :w1 ON :S [{w1}]
FROM NAMED WINDOW :w2 ON :S [{w2}]
EVENT ON :w1 {{ ?k :a ?a . }} AS E_1
EVENT ON :w2 {{ ?k :b ?b . }} AS E_2
WHERE {{ MATCH {policy} {{ E_1 SEQ E_2 }} {filter} }}"""


def both(text: str, events: list, until: int) -> tuple[Counter, Counter]:
    q = parse_query(text)
    eng = Engine()
    eng.register(copy.deepcopy(q))
    got = list(eng.run(copy.deepcopy(events), until=until))
    want = reference.evaluate(q, events, until=until)

    def key(outs):
        return Counter((o.time, repr(sorted((o.bindings or {}).items()))) for o in outs)
    return key(got), key(want)


@pytest.mark.parametrize("policy", ["CHRONOLOGICAL", "RECENT"])
@pytest.mark.parametrize("flt", ["", "FILTER (?b > ?a + 10)"])
def test_random_walks_over_landmark_windows_equal_the_reference(policy, flt):
    rnd = random.Random(7)
    walk, events = [100, 100, 100], []
    for t in range(150):
        k = rnd.randrange(3)
        walk[k] += rnd.randint(-5, 5)
        events.append(ev(S, t, f":c{k} :{'abx'[rnd.randrange(3)]} {walk[k]} .", graph=f"{S}/g{t}"))
    text = LANDMARK.format(w1="LND 0", w2="LND 0", policy=policy, filter=flt)
    got, want = both(text, events, 152)
    assert got == want and sum(got.values()) >= (1 if flt else 20)


@pytest.mark.parametrize("policy", ["CHRONOLOGICAL", "RECENT"])
def test_a_left_mapping_arriving_late_revives_a_right_one_set_aside(policy):
    """E_1's window shows an item 5 units after it happened: at 3 the right mapping :b 2 has
    no left one and is set aside; at 6 the left one of time 1 enters and they match."""
    events = [ev(S, 1, ":c :a 1 .", graph=f"{S}/g1"), ev(S, 3, ":c :b 2 .", graph=f"{S}/g3"),
              ev(S, 9, ":c :x 0 .", graph=f"{S}/g9")]
    text = LANDMARK.format(w1="FROM NOW-10 TO NOW-5", w2="LND 0", policy=policy, filter="")
    got, want = both(text, events, 12)
    assert got == want and sum(got.values()) == 1


def _store_sizes(text: str, events: list, **limits) -> tuple[list, dict[str, int]]:
    from rsep.runtime.common import Limits
    from rsep.runtime.windowed import QueryRuntime

    eng = Engine(limits=Limits(**limits)) if limits else Engine()
    eng.register(parse_query(text), name="q")
    outs = [(o.time, sorted((o.bindings or {}).items())) for o in eng.run(events, until=40)]
    rt = next(r for r in eng.queries if isinstance(r, QueryRuntime))
    sizes = {g.value: sum(1 for _ in rt.store.store.quads_for_pattern(None, None, None, g))
             for g in rt._named}
    return outs, sizes


def _walk(n: int = 30) -> list:
    return [ev(S, t, f":c{t % 2} :{'ab'[t // 2 % 2]} {t} .", graph=f"{S}/g{t}") for t in range(n)]


def test_a_window_read_only_by_event_declarations_stays_out_of_the_store():
    """The windows reach the MATCH as items; no graph pattern reads them, so the snapshot
    store takes none of their triples (over landmark windows: the whole stream). With a
    GRAPH pattern over one of them, that one is in the store, and the outputs are the same."""
    text = LANDMARK.format(w1="LND 0", w2="LND 0", policy="CHRONOLOGICAL",
                           filter="FILTER (?b > ?a)")
    outs, sizes = _store_sizes(text, _walk())
    assert sizes == {EX + "w1": 0, EX + "w2": 0} and len(outs) > 5
    read = text.replace("FILTER (?b > ?a)", "FILTER (?b > ?a) GRAPH :w2 { ?k :b ?b }")
    outs2, sizes2 = _store_sizes(read, _walk())
    assert sizes2 == {EX + "w1": 0, EX + "w2": 30} and outs2 == outs


def test_the_window_size_limit_holds_for_a_window_the_store_does_not_take():
    from rsep.algebra.output import EngineError

    text = LANDMARK.format(w1="LND 0", w2="LND 0", policy="CHRONOLOGICAL", filter="")
    with pytest.raises(EngineError, match="over the limit of 20"):
        _store_sizes(text, _walk(), max_window_triples=20)


@pytest.mark.parametrize("policy", ["CHRONOLOGICAL", "RECENT"])
@pytest.mark.parametrize("windows", [("LND 0", "LND 0"), ("RANGE 6 STEP 1", "LND 0"),
                                     ("LND 0", "RANGE 9 STEP 3")])
@pytest.mark.parametrize("seed", range(6))
def test_interval_items_and_ties_equal_the_reference(policy, windows, seed):
    """Items that last (the scans for FIRST / LAST stop by the longest one), several at
    one instant (ties in FIRST / LAST, rivals in the selection), and windows other than
    landmark ones (items leave, some after they were forgotten)."""
    rnd = random.Random(seed)
    events, t = [], 0
    for i in range(70):
        t += rnd.choice((0, 0, 1, 2))
        start = t - rnd.choice((0, 0, 0, 1, 3))
        k = rnd.randrange(2)
        events.append(ev(S, (start, t), f":c{k} :{'abx'[rnd.randrange(3)]} {rnd.randrange(4)} .",
                         graph=f"{S}/g{i}"))
    text = LANDMARK.format(w1=windows[0], w2=windows[1], policy=policy, filter="")
    got, want = both(text, events, t + 12)
    assert got == want and sum(got.values()) >= 5


def _state(text: str, events: list) -> tuple[int, dict[str, int]]:
    from rsep.runtime.windowed import QueryRuntime

    eng = Engine()
    eng.register(parse_query(text), name="q")
    n = sum(1 for _ in eng.run(events))
    rt = next(r for r in eng.queries if isinstance(r, QueryRuntime))
    mt = rt._matchers[0]
    return n, {
        "entries": sum(len(x) for x in mt._maps.values()) + sum(len(v) for o in mt._off for v in o.values()),
        "items": sum(len(k) for k in mt._items.values()),
        "consumed": len(rt._consumed),
        "window items": sum(len(bw.op._live) for bw in rt.windows),
    }


@pytest.mark.parametrize("policy", ["CHRONOLOGICAL", "RECENT"])
def test_landmark_windows_keep_only_live_candidates(policy):
    """Over landmark windows what E_1 SEQ E_2 has consumed, and right items with no left
    one before them, can never be used again: after 3,000 events the matcher holds the few
    live candidates, not the stream (each key alternates a, b, b, so every other b is dead
    and every a is consumed)."""
    events = [ev(S, t, f":c{t % 3} :{'abb'[t // 3 % 3]} {t} .", graph=f"{S}/g{t}")
              for t in range(3000)]
    text = LANDMARK.format(w1="LND 0", w2="LND 0", policy=policy, filter="FILTER (?b > ?a)")
    n, state = _state(text, events)
    assert n == 999  # each key: a at 0, 3, ..., 999 (the last with no b after it)
    assert state["window items"] == 0 and state["consumed"] <= 6
    assert state["entries"] <= 6 and state["items"] <= 6, state
