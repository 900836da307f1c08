"""The event-local window plan (rsep.windows.incremental) gives the snapshot path's outputs,
in the same order, and the reference evaluator's, for every query shape it accepts.

Most of these shapes now take the maintained path (rsep.windows.maintained, held equal by
tests/windows/test_maintained.py); the event-local store path stays for the queries it
refuses, so these tests force it (:func:`event_local`)."""

from __future__ import annotations

import copy
from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rsep import Engine
from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import ContinuousQuery
from rsep.algebra.window import NamedWindow, WindowKind, WindowSpec
from rsep.lang import parse_query
from rsep.lang.pattern import with_text_pattern
from rsep.runtime import reference
from rsep.runtime.windowed import SYNC_BATCH, EventLocalStore, QueryRuntime, Strategy
from rsep.stream.event import Event
from rsep.stream.time import TimeKind
from rsep.testing.snippets import triples
from rsep.testing.strategies import d, observations, policies, specs
from rsep.windows.incremental import INCREMENTAL, SNAPSHOT, plan

P = "PREFIX : <http://example.org/> "
KB = triples(":s0 :on :r0 . :s1 :on :r0 . :s2 :on :r1 . :s3 :on :r2 .")

# Each accepted shape: aggregates (numeric promotion, errors, DISTINCT, SAMPLE, GROUP_CONCAT),
# HAVING, ORDER BY / LIMIT, joins with the background and between windows, a FILTER pushed
# into a window, one-pattern blocks (duplicates across events), CONSTRUCT, ASK, a subquery.
BODIES = [
    "SELECT ?sensor (COUNT(?obs) AS ?n) (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MIN(?v) AS ?min) "
    "(MAX(?v) AS ?max) (COUNT(DISTINCT ?v) AS ?d) WHERE { GRAPH <urn:w1> { ?obs :by ?sensor ; "
    ":val ?v } } GROUP BY ?sensor",
    "SELECT ?sensor (GROUP_CONCAT(STR(?v); separator=\"|\") AS ?g) (SAMPLE(?v) AS ?one) WHERE { "
    "GRAPH <urn:w1> { ?obs :by ?sensor ; :val ?v FILTER(isLiteral(?v)) } } GROUP BY ?sensor "
    "HAVING (COUNT(*) > 1) ORDER BY ?sensor",
    "SELECT ?road (COUNT(*) AS ?pairs) (MIN(?v) AS ?lo) (MAX(?c) AS ?hi) WHERE { "
    "GRAPH <urn:w1> { ?o1 :by ?s1 ; :val ?v } GRAPH <urn:w2> { ?o2 :by ?s2 ; :val ?c } "
    "?s1 :on ?road . ?s2 :on ?road . FILTER(?v < 3) } GROUP BY ?road ORDER BY DESC(?pairs) LIMIT 2",
    "SELECT ?obs ?v WHERE { GRAPH <urn:w1> { ?obs :val ?v } }",
    "CONSTRUCT { ?sensor :saw ?v } WHERE { GRAPH <urn:w1> { ?obs :by ?sensor ; :val ?v } }",
    "ASK { GRAPH <urn:w2> { ?obs a :Obs ; :val ?v FILTER(?v > 2) } }",
    "SELECT (?n * 2 AS ?m) ?r WHERE { { SELECT ?r (COUNT(*) AS ?n) WHERE { GRAPH <urn:w1> "
    "{ ?obs :by ?s } ?s :on ?r } GROUP BY ?r } } ORDER BY ?r",
    "SELECT ?sensor ?v WHERE { GRAPH <urn:w1> { ?obs :by ?sensor ; :val ?v } "
    "GRAPH <urn:w2> { ?o2 :by ?sensor } FILTER(?v != 1) } ORDER BY ?sensor ?v",
    # FILTERs the compiled matcher decides on arrival over mixed numeric types, language
    # strings and IRIs (a type error rejects the solution; a FILTER beyond it falls back)
    "SELECT ?sensor (MAX(?v) AS ?max) (COUNT(?obs) AS ?n) WHERE { GRAPH <urn:w1> { "
    "?obs :by ?sensor ; :val ?v FILTER(?v * 2 >= 4 || ?v = \"abc\") } } GROUP BY ?sensor",
    "SELECT ?road (SUM(?v) AS ?s) (AVG(?c) AS ?a) WHERE { GRAPH <urn:w1> { ?o1 :by ?s1 ; :val ?v } "
    "GRAPH <urn:w2> { ?o2 :by ?s2 ; :val ?c FILTER(?c != 2.0 && ?c > 1) } ?s1 :on ?road . "
    "?s2 :on ?road . FILTER(?v <= 2.5) } GROUP BY ?road ORDER BY ?road",
]
# the shapes whose blocks the compiled matcher takes (events decided on arrival)
ON_ARRIVAL = {0, 2, 3, 4, 5, 6, 7, 8, 9}

X = "http://www.w3.org/2001/XMLSchema#"
VALUES = ['1', '2', f'"2.0"^^<{X}decimal>', f'"2.5"^^<{X}double>', '"abc"', '3', '"x"@en', ':iri']



def streams():
    return observations(st.sampled_from(VALUES))


def query(body: int, spec1: WindowSpec, spec2: WindowSpec, policy: ReportPolicy,
          r2s: R2S) -> ContinuousQuery:
    text = P + BODIES[body]
    ds = StreamingDataset(windows=[NamedWindow("urn:w1", "http://s1", spec1),
                                   NamedWindow("urn:w2", "http://s2", spec2)])
    form = BODIES[body].split()[0]
    return with_text_pattern(ContinuousQuery("q", "rspql", form, ds, text, r2s, policy))


def event_local(rt: QueryRuntime) -> QueryRuntime:
    """The runtime takes the event-local store path (not the maintained one), before bind."""
    rt.take(EventLocalStore)
    return rt


def run(q: ContinuousQuery, events: list[Event], until: int, snapshot: bool) -> list[tuple]:
    eng = Engine()
    eng.add_graph("default", KB)
    rt = eng.register(copy.deepcopy(q), name="q")
    assert isinstance(rt, QueryRuntime)
    event_local(rt)
    if snapshot:
        rt.take(Strategy)  # the snapshot path
    out = list(eng.run(events, until=until))
    return [(o.time, o.op, o.variables, o.bindings, o.triple, o.boolean) for o in out]


def by_time(rows):
    return Counter((t, op, repr(sorted((b or {}).items())), tr, bo) for t, op, _, b, tr, bo in rows)


@pytest.mark.parametrize("body", range(len(BODIES)))
def test_every_shape_takes_the_incremental_path(body):
    q = query(body, WindowSpec(WindowKind.COUNT, count=2), WindowSpec(WindowKind.COUNT, count=2),
              ReportPolicy(window_close=True), R2S.RSTREAM)
    assert plan(q)[0] == INCREMENTAL


@pytest.mark.parametrize("body", range(len(BODIES)))
def test_events_are_decided_on_arrival_where_compiled(body):
    q = query(body, WindowSpec(WindowKind.TIME, range=d(4), step=d(2)),
              WindowSpec(WindowKind.TIME, range=d(4), step=d(2)), ReportPolicy(window_close=True),
              R2S.RSTREAM)
    rt = Engine().register(q, name="q")
    assert isinstance(rt, QueryRuntime)
    event_local(rt).bind(TimeKind.ABSTRACT, None, 0)
    locals_ = [bw.local for bw in rt.windows if bw.local is not None and bw.local.blocks]
    assert all(lw.on_arrival for lw in locals_) == (body in ON_ARRIVAL)


time_specs = st.builds(lambda a, b, off: WindowSpec(
    WindowKind.TIME, range=d(a + off), step=d(b), offset=d(off) if off else None),
    st.integers(1, 6), st.integers(1, 4), st.integers(0, 2))


def obs(t: int, ttl: str, seq: int, graph: str | None = None) -> Event:
    return Event("http://s1", graph or f"g{seq}", t, t, triples(ttl), TimeKind.ABSTRACT, seq)


# :o0's triples in two events: the second makes the locality check fail, and the first,
# stored only then, after :o1's, must still come first in the store graph (row order)
SPLIT = [obs(0, ":o0 :by :s1 .", 1), obs(0, ":o1 :by :s2 . :o1 :val 1 .", 2),
         obs(1, ":o0 :val 1 .", 3)]


@settings(max_examples=int(__import__("os").environ.get("RSEP_EXAMPLES", 250)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(time_specs, time_specs, st.sampled_from(list(R2S)), st.integers(0, len(BODIES) - 1),
       streams(), st.integers(0, 6))
@example(WindowSpec(WindowKind.TIME, range=d(2), step=d(1)),
         WindowSpec(WindowKind.TIME, range=d(1), step=d(1)), R2S.RSTREAM, 0, SPLIT, 0)
def test_on_arrival_window_close_equals_snapshot_and_reference(spec1, spec2, r2s, body, events,
                                                               extra):
    """Time windows reported at window close: events are decided and enter the window as
    they arrive (the advance-on-arrival shortcut), the evaluation only runs the query."""
    q = query(body, spec1, spec2, ReportPolicy(window_close=True), r2s)
    until = events[-1].time + extra
    got = run(q, events, until, snapshot=False)
    assert got == run(q, events, until, snapshot=True)
    want = reference.evaluate(q, events, graphs={"default": list(KB)}, until=until)
    assert by_time(got) == by_time([(o.time, o.op, o.variables, o.bindings, o.triple, o.boolean)
                                    for o in want])


@settings(max_examples=int(__import__("os").environ.get("RSEP_EXAMPLES", 250)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(specs, specs, policies, st.sampled_from(list(R2S)), st.integers(0, len(BODIES) - 1),
       streams(), st.integers(0, 6))
def test_incremental_equals_snapshot_and_reference(spec1, spec2, policy, r2s, body, events, extra):
    q = query(body, spec1, spec2, policy, r2s)
    until = events[-1].time + extra
    got = run(q, events, until, snapshot=False)
    assert got == run(q, events, until, snapshot=True)
    want = reference.evaluate(q, events, graphs={"default": list(KB)}, until=until)
    assert by_time(got) == by_time([(o.time, o.op, o.variables, o.bindings, o.triple, o.boolean)
                                    for o in want])


def sensors(rows: list[tuple]) -> list[tuple[int, str]]:
    return [(t, b["sensor"].rsplit("/", 1)[1][:-1]) for t, _, _, b, _, _ in rows]


def test_rows_come_in_the_snapshot_stores_order():
    """pyoxigraph's GROUP BY order follows the order its store created the quads in (a
    removed quad keeps its place): the event-local store graph creates them in the
    snapshot store's order, by the entry of the first event that brought each triple in,
    also for an event stored late (the locality check failed) and for a triple of an
    event that had no solution, back in a later one."""
    q = query(0, WindowSpec(WindowKind.TIME, range=d(2), step=d(1)),
              WindowSpec(WindowKind.TIME, range=d(1), step=d(1)),
              ReportPolicy(window_close=True), R2S.RSTREAM)
    got = run(q, SPLIT, 1, snapshot=False)
    assert got == run(q, SPLIT, 1, snapshot=True)
    assert sensors(got) == [(0, "s2"), (1, "s1"), (1, "s2")]
    # :o0 :by :s1 first comes in an event with no solution, then again (after it left) in
    # one with: the snapshot store had it first, so :s1's group comes first
    q = query(0, WindowSpec(WindowKind.TIME, range=d(1), step=d(1)),
              WindowSpec(WindowKind.TIME, range=d(1), step=d(1)),
              ReportPolicy(window_close=True), R2S.RSTREAM)
    back = [obs(0, ":o0 :by :s1 .", 1), obs(1, ":o1 :by :s2 . :o1 :val 1 .", 2),
            obs(1, ":o0 :by :s1 . :o0 :val 1 .", 3)]
    got = run(q, back, 1, snapshot=False)
    assert got == run(q, back, 1, snapshot=True)
    assert sensors(got) == [(1, "s1"), (1, "s2")]


def test_shared_terms_fall_back_and_recover():
    """Two live events share an observation: the window holds every matching triple (a
    solution across the two events is found), and only relevant ones once it is gone."""
    q = query(0, WindowSpec(WindowKind.COUNT, count=2), WindowSpec(WindowKind.COUNT, count=1),
              ReportPolicy(on_arrival=True), R2S.RSTREAM)
    events = [Event("http://s1", f"g{i}", i, i, triples(ttl), TimeKind.ABSTRACT, i + 1)
              for i, ttl in enumerate([":o1 :by :s1 .", ":o1 :val 5 .", ":o2 :val 7 .",
                                       ":o3 :by :s2 ; :val 1 ."])]
    rows = run(q, events, 3, snapshot=False)
    assert rows == run(q, events, 3, snapshot=True)
    got = [(t, b) for t, _, _, b, _, _ in rows]
    assert got == [
        (1, {"sensor": "<http://example.org/s1>", "n": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
             "sum": '"5"^^<http://www.w3.org/2001/XMLSchema#integer>',
             "avg": '"5"^^<http://www.w3.org/2001/XMLSchema#decimal>',
             "min": '"5"^^<http://www.w3.org/2001/XMLSchema#integer>',
             "max": '"5"^^<http://www.w3.org/2001/XMLSchema#integer>',
             "d": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'}),
        (3, {"sensor": "<http://example.org/s2>", "n": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
             "sum": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
             "avg": '"1"^^<http://www.w3.org/2001/XMLSchema#decimal>',
             "min": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
             "max": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
             "d": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'})]


@pytest.mark.parametrize(("text", "reason"), [
    ("SELECT * WHERE { GRAPH <urn:w1> { ?s :p ?o OPTIONAL { ?o :q ?z } } }", "more than triples"),
    ("SELECT * WHERE { GRAPH <urn:w1> { ?s :p ?o . ?a :q ?b } }", "not connected"),
    ("SELECT * WHERE { GRAPH <urn:w1> { ?s :p/:q ?o } }", "property path"),
    ("SELECT * WHERE { GRAPH ?g { ?s :p ?o } }", "GRAPH ?var"),
    ("SELECT * WHERE { GRAPH <urn:w1> { ?s :p ?o FILTER(?o < NOW()) } }", "NOW"),
    ("SELECT * WHERE { GRAPH <urn:w1> { ?s :p ?o FILTER NOT EXISTS { ?o :q ?s } } }", "EXISTS"),
    ("DESCRIBE ?s WHERE { GRAPH <urn:w1> { ?s :p ?o } }", "DESCRIBE"),
])
def test_the_snapshot_path_says_why(text, reason):
    form = text.split()[0]
    ds = StreamingDataset(windows=[NamedWindow("urn:w1", "http://s1",
                                               WindowSpec(WindowKind.COUNT, count=2))])
    q = with_text_pattern(ContinuousQuery("q", "rspql", form, ds, P + text, R2S.RSTREAM,
                                          ReportPolicy(window_close=True)))
    path, why = plan(q)
    assert path == SNAPSHOT
    assert reason in why


def test_csparql_merged_windows_take_the_snapshot_path():
    q = parse_query("REGISTER QUERY q AS SELECT ?s FROM STREAM <http://s1> [RANGE 10s STEP 1s] "
                    "WHERE { ?s ?p ?o }", "csparql")
    assert isinstance(q, ContinuousQuery)
    assert plan(q) == (SNAPSHOT, "a window is merged into the default graph (FROM STREAM): "
                                 "its patterns are not isolated")


def test_arrivals_are_decided_and_stored_before_the_evaluation():
    """Window close over a time window: each arrival is decided by the compiled matcher (no
    pyoxigraph batch), and the store graph follows the arrivals in batches of SYNC_BATCH,
    holding only the triples of events with a solution; the evaluation gives the rows."""
    q = query(0, WindowSpec(WindowKind.TIME, range=d(100), step=d(100)),
              WindowSpec(WindowKind.TIME, range=d(100), step=d(100)),
              ReportPolicy(window_close=True), R2S.RSTREAM)
    eng = Engine()
    eng.add_graph("default", KB)
    rt = eng.register(q, name="q")
    assert isinstance(rt, QueryRuntime)
    event_local(rt)
    # event i: an observation with a value (a solution) when i is even, without one when odd
    events = [Event("http://s1", f"g{i}", i + 1, i + 1,
                    triples(f":o{i} :by :s{i % 2}" + (f" ; :val {i} ." if i % 2 == 0 else " .")),
                    TimeKind.ABSTRACT, i + 1) for i in range(SYNC_BATCH)]
    for e in events:
        eng.push(e)
    lw = rt.windows[0].local
    assert lw is not None and lw.batches == 0 and lw.unsynced == 0
    assert len(rt.store) == len(KB) + SYNC_BATCH  # 2 triples of each of the 8 even events
    eng.close(until=100)
    rows = [o.bindings for o in eng.drain()]
    assert [r["sensor"] for r in rows] == ["<http://example.org/s0>"]
    assert rows[0]["n"] == f'"{SYNC_BATCH // 2}"^^<{X}integer>'
    assert rows[0]["max"] == f'"{SYNC_BATCH - 2}"^^<{X}integer>'
    assert lw.batches == 0


def test_row_order_holds_over_a_long_stream_with_rebuilds():
    """Observations split over two events now and then (the locality check fails, and
    holds again) in a stream long enough for both stores to rebuild and the window to
    forget gone triples' places: every evaluation's rows in the snapshot path's order, and
    the places kept bounded."""
    events = []  # two a time unit: a split's first half is stored after the next event
    for i in range(2_400):
        ttl = f":o{i} :by :s{i % 3} ." + ("" if i % 7 == 0 else f" :o{i} :val {i % 5} .")
        if i % 7 == 2:
            ttl += f" :o{i - 2} :val 9 ."
        events.append(obs(i // 2, ttl, i + 1))
    # plain rows: their order is the join's, over the store's order
    ds = StreamingDataset(windows=[NamedWindow("urn:w1", "http://s1", WindowSpec(
        WindowKind.TIME, range=d(3), step=d(1)))])
    q = with_text_pattern(ContinuousQuery(
        "q", "rspql", "SELECT", ds, P + "SELECT ?obs ?sensor ?v WHERE { GRAPH <urn:w1> { ?obs :by "
        "?sensor ; :val ?v } }", R2S.RSTREAM, ReportPolicy(window_close=True)))
    eng = Engine()
    eng.add_graph("default", KB)
    rt = eng.register(copy.deepcopy(q), name="q")
    assert isinstance(rt, QueryRuntime)
    event_local(rt)
    got = [(o.time, o.bindings) for o in eng.run(events, until=events[-1].time)]
    assert got == [(t, b) for t, _, _, b, _, _ in run(q, events, events[-1].time, snapshot=True)]
    assert len(got) == 6_851
    lw = rt.windows[0].local
    assert lw is not None
    assert rt.store.rebuilds > 100  # put in order at most splits, once for garbage
    assert len(lw._born) <= 4_096  # the places of live and stored triples, gone ones forgotten


def test_locality_keys_tell_terms_of_every_kind_apart():
    from rsep.windows.incremental import _key

    terms = [ox.NamedNode("a:b"), ox.BlankNode("a:b"), ox.Literal("a:b"), ox.Literal("_:a:b"),
             ox.NamedNode("http://e/x"), ox.BlankNode("b1"), ox.Literal("b1"),
             ox.Literal("1", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")),
             ox.Literal("a:b", language="en"),
             ox.Triple(ox.NamedNode("a:b"), ox.NamedNode("a:b"), ox.NamedNode("a:b"))]
    assert len({_key(t) for t in terms}) == len(terms)
    # the same term read twice is one key (numbers by their stored form, as the store keeps them)
    assert _key(ox.Literal("01", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))) \
        == _key(ox.Literal("1", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")))


XI = f"^^<{X}integer>"


def test_group_concat_folds_a_triple_that_came_back_in_its_first_place():
    """:o0 :val 1 enters at 0 (no solution: :o0 has no sensor yet), leaves, and comes back at
    1 after :o0 :val 2. pyoxigraph's store kept its place, older than :o0 :val 2's, and reads
    newest first: GROUP_CONCAT is "2|1" and SAMPLE 2 on every path, the reference evaluator
    included (a store made afresh at 1 gave "1|2" and 1; docs/semantics.md, "Row order of the
    store paths")."""
    spec = WindowSpec(WindowKind.TIME, range=d(1), step=d(1))
    q = query(1, spec, spec, ReportPolicy(window_close=True), R2S.RSTREAM)
    events = ([obs(0, ":o0 :val 1 .", 1)] + [obs(0, f":o{i} :by :s0 .", i + 1) for i in range(1, 8)]
              + [obs(1, ":o0 :by :s0 . :o0 :val 2 .", 9), obs(1, ":o9 :by :s0 .", 10),
                 obs(1, ":o0 :val 1 .", 11)])
    row = {"sensor": "<http://example.org/s0>", "g": '"2|1"', "one": f'"2"{XI}'}
    expected = [(1, "insert", ("sensor", "g", "one"), row, None, None)]
    assert run(q, events, 1, snapshot=False) == expected
    assert run(q, events, 1, snapshot=True) == expected
    want = reference.evaluate(q, events, graphs={"default": list(KB)}, until=1)
    assert [(o.time, o.op, o.variables, o.bindings, o.triple, o.boolean) for o in want] == expected


def test_group_concat_folds_a_triple_whose_first_event_left_in_its_first_place():
    """:o0 :val 1 is in the events at 0 and at 1 (the third); at 2 the first has left and the
    third holds it still: it keeps the place the first gave it, older than :o0 :val 2's
    (the second event's), so GROUP_CONCAT stays "2|1" at 2, on every path."""
    spec = WindowSpec(WindowKind.TIME, range=d(2), step=d(1))
    q = query(1, spec, spec, ReportPolicy(window_close=True), R2S.RSTREAM)
    events = [obs(0, ":o0 :val 1 .", 1), obs(1, ":o0 :by :s0 . :o0 :val 2 .", 2),
              obs(1, ":o0 :val 1 .", 3), obs(2, ":o5 :by :s1 .", 4)]
    row = {"sensor": "<http://example.org/s0>", "g": '"2|1"', "one": f'"2"{XI}'}
    expected = [(t, "insert", ("sensor", "g", "one"), row, None, None) for t in (1, 2)]
    assert run(q, events, 2, snapshot=False) == expected
    assert run(q, events, 2, snapshot=True) == expected
    want = reference.evaluate(q, events, graphs={"default": list(KB)}, until=2)
    assert [(o.time, o.op, o.variables, o.bindings, o.triple, o.boolean) for o in want] == expected
