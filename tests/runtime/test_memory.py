"""Memory stays bounded on a long stream: the snapshot store holds the window, not the stream.

100,000 events, 10 per time unit, go through a [RANGE 100 STEP 20] window, so
the window holds 1,000 events. The store's live quads must stay at the window's
contents at every evaluation. pyoxigraph's store must have been rebuilt, since
its in-memory store never frees removed quads and without rebuilds the garbage
would grow with the stream. A COUNT(*) query must give exactly the count worked
out by hand at each of its 500 evaluations. The test is not timed. Sharing
time units between events and sliding by 20 keeps it quick: about 5.5 s of CPU,
against about 10 s for one event per time unit in [RANGE 1000 STEP 100].
"""

from __future__ import annotations

import pyoxigraph as ox

from rsep import Engine
from rsep.runtime.windowed import EventLocalStore
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

EX = "http://example.org/mem/"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
STREAM = EX + "S"
EVENTS = 100_000
PER_TICK = 10  # events per time unit
RANGE = 100  # time units: 1,000 events
STEP = 20
TIMES = EVENTS // PER_TICK  # time units 0 .. TIMES-1
SENSORS = 10  # every event also holds "<sensor> a :Sensor", shared with other events
DISTINCT_PER_EVENT = 1
WINDOW_QUADS = DISTINCT_PER_EVENT * RANGE * PER_TICK + SENSORS  # most live quads in a window
# SnapshotStore rebuilds once removals exceed max(50,000, live quads) (its default
# min_garbage); checked after each batch of removals, so this is never exceeded.
GARBAGE_BOUND = 50_000 + WINDOW_QUADS

QUERY = f"""PREFIX : <{EX}>
REGISTER RSTREAM :out AS
SELECT (COUNT(*) AS ?n)
FROM NAMED WINDOW :w ON :S [RANGE {RANGE} STEP {STEP}]
WHERE {{ WINDOW :w {{ ?s ?p ?o }} }}"""


def events(n: int):
    """Event i at time i // PER_TICK: a triple of its own, and one that every 10th event
    also holds."""
    value = ox.NamedNode(EX + "value")
    xsd_integer = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
    rdf_type, sensor_cls = ox.NamedNode(RDF_TYPE), ox.NamedNode(EX + "Sensor")
    shared = [ox.Triple(ox.NamedNode(f"{EX}sensor{k}"), rdf_type, sensor_cls) for k in range(SENSORS)]
    for i in range(n):
        own = ox.Triple(ox.NamedNode(f"{EX}obs{i}"), value, ox.Literal(str(i), datatype=xsd_integer))
        triples = (own, shared[i % SENSORS])
        t = i // PER_TICK
        yield Event(stream=STREAM, graph=f"{EX}g{i}", start=t, end=t, triples=triples,
                    kind=TimeKind.ABSTRACT, seq=i + 1, origin="test:0")


def expected_count(tau: int) -> int:
    """COUNT(*) of the window (tau - RANGE, tau] over the events at times 0 .. TIMES-1."""
    n = PER_TICK * (min(tau, TIMES - 1) - max(tau - RANGE + 1, 0) + 1)  # events inside
    return DISTINCT_PER_EVENT * n + min(n, SENSORS)  # the sensor triples count once each


def test_long_stream_keeps_store_bounded_and_counts_exact():
    """On the event-local store path (the query would take the maintained path: see the
    next test): the store itself is what must stay bounded."""
    engine = Engine()
    seen: list[tuple[int, int, int, int]] = []  # (time, count, live quads, garbage)

    def check(o):
        st = rt.store
        seen.append((o.time, int(o.bindings["n"].split('"')[1]), len(st), st.garbage))

    rt = engine.register(QUERY, callback=check)
    rt.take(EventLocalStore)  # (the test reads the event-local store path's store)
    peak_live = peak_garbage = 0
    for i, e in enumerate(events(EVENTS)):
        engine.push(e)
        if i % 997 == 0:  # checkpoints between evaluations, too
            peak_live = max(peak_live, len(rt.store))
            peak_garbage = max(peak_garbage, rt.store.garbage)
            assert len(rt.store) <= WINDOW_QUADS, i
            assert rt.store.garbage <= GARBAGE_BOUND, i
            for _ in engine.drain():
                pass
    engine.close()
    list(engine.drain())

    # exact results: one evaluation every STEP units, from the first event to the last
    taus = list(range(0, TIMES, STEP))
    assert [t for t, *_ in seen] == taus
    assert [c for _, c, *_ in seen] == [expected_count(t) for t in taus]
    assert seen[-1][1] == WINDOW_QUADS

    # at every evaluation the store holds exactly the window's triples (the query counts
    # every triple of the window graph, and there is no background data) ...
    for t, count, live, garbage in seen:
        assert live == count, t
        assert live <= WINDOW_QUADS, t
        assert garbage <= GARBAGE_BOUND, t
    # ... and the removed quads did not pile up in pyoxigraph's store: it was rebuilt.
    removed = DISTINCT_PER_EVENT * PER_TICK * (taus[-1] - RANGE + 1)  # events that left
    assert removed > GARBAGE_BOUND  # without rebuilds the garbage would pass the bound
    assert rt.store.rebuilds > 0
    assert rt.store.rebuilds >= removed // GARBAGE_BOUND
    assert max(g for *_, g in seen) <= GARBAGE_BOUND
    assert peak_live <= WINDOW_QUADS and peak_garbage <= GARBAGE_BOUND
    # the pyoxigraph store holds the live quads (and only those after the last rebuild):
    # the last arrivals already brought it to the next slide's window, at TIMES
    assert len(rt.store.store) == len(rt.store) == expected_count(TIMES) < WINDOW_QUADS


def test_the_maintained_path_stays_bounded_and_counts_exact():
    """The maintained path (rsep.windows.maintained): the shared sensor triples make the
    locality check fail at most evaluations, which pyoxigraph answers over the matching
    triples the store then follows; the maintained state holds the window's solutions,
    and the store at most the window."""
    engine = Engine()
    seen: list[tuple[int, int, int, int]] = []  # (time, count, solutions, live quads)

    def check(o):
        seen.append((o.time, int(o.bindings["n"].split('"')[1]), len(rt.result.join.solutions),
                     len(rt.store)))

    rt = engine.register(QUERY, callback=check)
    peak = 0
    for e in events(EVENTS):
        engine.push(e)
        if e.seq % 997 == 0:
            peak = max(peak, len(rt.result.join.solutions), len(rt.store))
            list(engine.drain())
    engine.close()
    list(engine.drain())
    taus = list(range(0, TIMES, STEP))
    assert [(t, c) for t, c, *_ in seen] == [(t, expected_count(t)) for t in taus]
    # a solution per triple of each live event, two per event: bounded by the window
    assert max(n for *_, n, _ in seen) <= 2 * RANGE * PER_TICK
    assert peak <= 2 * RANGE * PER_TICK
    assert max(q for *_, q in seen) <= WINDOW_QUADS
    assert rt.store.garbage <= GARBAGE_BOUND
