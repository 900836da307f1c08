"""Cross-check: LARS tau_1(cs(Q)) equals the engine's C-SPARQL execution and tau_2(cq(Q))
its CQELS execution, at every time point, on random small streams (docs/semantics.md, LARS)."""

from __future__ import annotations

import pyoxigraph as ox
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep.lang import parse_query
from rsep.lars.agreement import Evaluator, ttp
from rsep.lars.compare import engine_runs
from rsep.lars.rsp import continuous, cq, cs, from_query
from rsep.lars.translate import (
    Translation,
    background,
    data_stream_of,
    query_input,
    solutions,
    window_operator,
)
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

EX = "http://example.org/"
S1, S2 = "http://s1", "http://s2"
UNTIL = 10

TEMPLATES = [
    "{{ STREAM <{s1}> [RANGE {a}] {{ ?x :p ?y }} STREAM <{s2}> [RANGE {b}] {{ ?y :q ?z }} }}",
    "{{ STREAM <{s1}> [RANGE {a}] {{ ?x :p ?y }} OPTIONAL {{ STREAM <{s2}> [RANGE {b}] {{ ?y :q ?z }} }} }}",
    "{{ {{ STREAM <{s1}> [RANGE {a}] {{ ?x :p ?y }} }} UNION {{ STREAM <{s2}> [RANGE {b}] {{ ?x :q ?y }} }} }}",
    "{{ STREAM <{s1}> [RANGE {a}] {{ ?x :p ?y }} FILTER(?y > 1 || ?x = :a) }}",
    "{{ STREAM <{s1}> [RANGE {a}] {{ ?x :p ?y }} MINUS {{ STREAM <{s2}> [RANGE {b}] {{ ?x :q ?z }} }} }}",
    "{{ STREAM <{s1}> [RANGE {a}] {{ ?x :p ?y . ?y :q ?z }} ?z :r ?w }}",
    "{{ STREAM <{s1}> [RANGE {a}] {{ ?x :p ?y }} ?x :r ?w FILTER(!bound(?w) || ?w != 2) }}",
]
TERMS = [":a", ":b", ":c", "1", "2"]
BACKGROUND = ":a :r 2 . :b :r :c . :c :r 1 . :c :r :a ."

triple_st = st.tuples(st.sampled_from([":a", ":b", ":c"]), st.sampled_from([":p", ":q"]),
                      st.sampled_from(TERMS))
event_st = st.tuples(st.integers(0, 8), st.sampled_from([S1, S2]), st.lists(triple_st, min_size=1, max_size=3))


def _events(raw):
    out = []
    for i, (t, s, ts) in enumerate(sorted(raw, key=lambda x: x[0])):
        ttl = f"@prefix : <{EX}> .\n" + "\n".join(" ".join(x) + " ." for x in ts)
        trs = tuple(q.triple for q in ox.parse(ttl, format=ox.RdfFormat.TURTLE))
        out.append(Event(stream=s, graph=f"{s}/g{i}", start=t, end=t, triples=trs,
                         kind=TimeKind.ABSTRACT, origin="test"))
    return out


def _graphs():
    ttl = f"@prefix : <{EX}> .\n" + BACKGROUND
    return {"default": [q.triple for q in ox.parse(ttl, format=ox.RdfFormat.TURTLE)]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TEMPLATES), st.integers(1, 4), st.integers(1, 4), st.lists(event_st, min_size=1, max_size=6))
def test_lars_translations_match_the_engine(template, a, b, raw):
    text = f"PREFIX : <{EX}> SELECT * WHERE " + template.format(s1=S1, s2=S2, a=a, b=b)
    q = from_query(parse_query(text))
    events = _events(raw)
    graphs = _graphs()
    d = data_stream_of(query_input(events, q), 0, UNTIL)  # s2 events are no input of s1-only Qs
    bg = background(q, graphs)
    q_cs, q_cq = cs(q), cq(q)

    # C-SPARQL: [t-a, t) windows merged into the default graph, RStream at every close
    pulled = engine_runs(continuous(q_cs, "csparql"), events, graphs, None, UNTIL)
    p1 = Translation(q_cs, 1, [window_operator(w.spec, reading="engine")
                               for w in continuous(q_cs, "csparql").dataset.windows]).program()
    e1 = Evaluator(p1, d, bg)
    # CQELS: (t-a, t] windows per stream pattern, IStream on every arrival
    pushed = engine_runs(continuous(q_cq, "cqels"), events, graphs, None, UNTIL)
    p2 = Translation(q_cq, 2, [window_operator(w.spec, reading="engine")
                               for w in continuous(q_cq, "cqels").dataset.windows]).program()
    e2 = Evaluator(p2, d, bg)
    triggers = set(ttp(-1, UNTIL, d))
    for t in range(0, UNTIL + 1):
        assert pulled.get(t, set()) == solutions(e1.ats(t), q), (t, "C-SPARQL")
        want = solutions(e2.inc(t), q) if t in triggers else set()
        assert pushed.get(t, set()) == want, (t, "CQELS")
