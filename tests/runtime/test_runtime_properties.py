"""The incremental runtime equals the reference evaluator, evaluation time by evaluation time."""

from __future__ import annotations

import copy
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep import Engine
from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.policy import R2S
from rsep.algebra.query import CSPARQL_TIMESTAMP, ContinuousQuery
from rsep.algebra.window import NamedWindow
from rsep.lang.pattern import with_text_pattern
from rsep.runtime import reference
from rsep.stream.event import Event
from rsep.stream.time import TimeKind
from rsep.testing.snippets import triples
from rsep.testing.strategies import policies, specs

P = "http://example.org/"
POOL = triples(":a :p :b . :b :p :c . :b :q :d . :c :q :e . :a :p :c . :d :q :a .")


BODIES = [
    "SELECT ?s ?o WHERE { GRAPH <urn:w1> { ?s <http://example.org/p> ?o } }",
    "SELECT ?s ?z WHERE { GRAPH <urn:w1> { ?s <http://example.org/p> ?o } GRAPH <urn:w2> { ?o <http://example.org/q> ?z } }",
    "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:w1> { ?s ?p ?o } }",
    "SELECT ?s ?o WHERE { ?s <http://example.org/p> ?o OPTIONAL { ?o <http://example.org/q> ?z } }",
    f"SELECT ?s ?o WHERE {{ ?s <http://example.org/p> ?o . ?o <http://example.org/q> ?z "
    f"FILTER(<{CSPARQL_TIMESTAMP}>(?s, <http://example.org/p>, ?o) <= <{CSPARQL_TIMESTAMP}>(?o, <http://example.org/q>, ?z)) }}",
    "CONSTRUCT { ?o <http://example.org/r> ?s } WHERE { GRAPH <urn:w1> { ?s ?p ?o } }",
    "ASK { GRAPH <urn:w2> { ?s <http://example.org/q> ?o } }",
]


@st.composite
def streams(draw):
    n = draw(st.integers(1, 10))
    t = draw(st.integers(0, 3))
    out = []
    for i in range(n):
        t += draw(st.integers(0, 3))
        trs = tuple(draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=3, unique=True)))
        s = draw(st.sampled_from(["http://s1", "http://s2"]))
        out.append(Event(s, f"g{i}", t, t, trs, TimeKind.ABSTRACT, i + 1))
    return out


def by_time(outputs):
    c: Counter = Counter()
    for o in outputs:
        c[(o.time, o.op, repr(sorted((o.bindings or {}).items())), o.triple, o.boolean)] += 1
    return c


@settings(max_examples=int(__import__("os").environ.get("RSEP_EXAMPLES", 250)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs, specs, policies, st.sampled_from(list(R2S)), st.integers(0, len(BODIES) - 1),
       st.booleans(), streams(), st.integers(0, 8))
def test_runtime_equals_reference(spec1, spec2, policy, r2s, body, merged, events, extra):
    text = BODIES[body]
    in_default = merged or body in (3, 4)
    ds = StreamingDataset(windows=[
        NamedWindow("urn:w1", "http://s1", spec1, in_default=in_default),
        NamedWindow("urn:w2", "http://s2", spec2, in_default=in_default)])
    form = text.split()[0]
    q = with_text_pattern(ContinuousQuery("q", "rspql", form, ds, text, r2s, policy))
    until = events[-1].time + extra
    eng = Engine()
    eng.register(copy.deepcopy(q), name="q")
    got = list(eng.run(events, until=until))
    want = reference.evaluate(q, events, until=until)
    assert by_time(got) == by_time(want)
    # ... and in the same order of evaluation times
    assert [o.time for o in got] == [o.time for o in want]
