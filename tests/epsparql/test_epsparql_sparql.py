"""SPARQL 1.1 inside EP-SPARQL: downward compatibility (003 Sec. 4.2) beyond SPARQL 1.0.

Over one instant, an EP-SPARQL query means what its SPARQL does: random group patterns
(OPTIONAL, UNION, MINUS, FILTER with EXISTS, BIND, VALUES, property paths) over random
small graphs give pyoxigraph's solutions, and the per-occurrence BGP matcher gives
pyoxigraph's BGP solutions. Over a stream, the readings of docs/semantics.md ("SPARQL 1.1
inside EP-SPARQL") hold: a path is matched inside one event, MINUS / EXISTS see what ended
no later (as OPTIONAL does), VALUES and BIND-only groups are timeless, ORDER BY orders one
instant's complex events.
"""

from __future__ import annotations

import collections
import random
import re

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsep import Engine, Event, QueryError
from rsep.epsparql import reference as ep
from rsep.lang.epsparql import parse_epsparql
from rsep.testing.snippets import EX

P = f"PREFIX : <{EX}>\n"
NODES = [":a", ":b", ":c", ":d"]
PREDS = [":p", ":q", ":r"]
LITS = ["1", "2", '"x"', "2.0"]


def graph(rnd: random.Random) -> list[ox.Triple]:
    nodes = NODES + ["_:n"]  # a blank node: rows holding one leave VALUES for a graph
    ttl = " ".join(f"{rnd.choice(nodes)} {rnd.choice(PREDS)} {rnd.choice(nodes + LITS)} ."
                   for _ in range(rnd.randint(0, 9)))
    return [q.triple for q in ox.parse(f"@prefix : <{EX}> .\n{ttl}", format=ox.RdfFormat.TURTLE)]


def term(rnd: random.Random, pos: str) -> str:
    r = rnd.random()
    if r < 0.6:
        return "?" + rnd.choice("xyzw")
    if r < 0.7 and pos != "p":
        return "[]"
    return rnd.choice(PREDS if pos == "p" else NODES)


def triple(rnd: random.Random) -> str:
    p = term(rnd, "p")
    if rnd.random() < 0.25:
        p = rnd.choice([":p/:q", ":p+", ":q*", "^:p", ":p|:r", "!:p", ":r?"])
    return f"{term(rnd, 's')} {p} {term(rnd, 'o')} ."


def group(rnd: random.Random, depth: int = 0) -> str:
    parts = [triple(rnd)]
    for _ in range(rnd.randint(0, 2)):
        k = rnd.random()
        if depth < 2 and k < 0.15:
            parts.append(f"OPTIONAL {{ {group(rnd, depth + 1)} }}")
        elif depth < 2 and k < 0.3:
            parts.append(f"{{ {group(rnd, depth + 1)} }} UNION {{ {group(rnd, depth + 1)} }}")
        elif depth < 2 and k < 0.4:
            parts.append(f"MINUS {{ {group(rnd, depth + 1)} }}")
        elif k < 0.5:
            parts.append(f"FILTER ({rnd.choice(['', '!'])}BOUND(?{rnd.choice('xyzw')}))")
        elif depth < 2 and k < 0.6:
            parts.append(f"FILTER {rnd.choice(['', 'NOT '])}EXISTS {{ {triple(rnd)} }}")
        elif k < 0.7:
            parts.append(f"VALUES ?{rnd.choice('xyzw')} {{ {rnd.choice(NODES)} {rnd.choice(LITS)} }}")
        elif k < 0.8:
            parts.append(f"BIND (COALESCE(?{rnd.choice('xyzw')}, 0) + 1 AS ?v{depth}{len(parts)})")
        else:
            parts.append(triple(rnd))
    return " ".join(parts)


def sparql_bag(query: str, triples: list[ox.Triple]) -> collections.Counter:
    st_ = ox.Store()
    st_.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in triples)
    res = st_.query(query)
    names = [v.value for v in res.variables]  # type: ignore[union-attr]
    return collections.Counter(tuple(sorted((n, _norm(str(s[n]))) for n in names if s[n] is not None))
                               for s in res)  # type: ignore[union-attr]


_NUM = re.compile(r'^"([^"]*)"\^\^<http://www.w3.org/2001/XMLSchema#(?:integer|decimal|double|float)>$')


def _norm(v: str) -> str:
    """Blank nodes as wildcards; numbers by value (pyoxigraph's store canonicalises them)."""
    if v.startswith("_:"):
        return "_:"
    m = _NUM.match(v)
    return f"number {float(m.group(1))}" if m else v


def ep_bag(query: str, triples: list[ox.Triple], at: int = 0) -> collections.Counter:
    eng = Engine()
    eng.register(parse_epsparql(query))
    ev = Event(EX + "s", EX + "g", at, at, tuple(triples), seq=1)
    return collections.Counter(tuple(sorted((k, _norm(v)) for k, v in o.bindings.items()))
                               for o in eng.run(iter([ev])))


@settings(max_examples=200, deadline=None)
@given(rnd=st.randoms(use_true_random=False))
def test_one_instant_means_what_sparql_means(rnd):
    """003's downward compatibility: the data as one event, the query's SPARQL answers."""
    body = group(rnd)
    query = f"{P}SELECT * WHERE {{ {body} }}"
    try:
        q = parse_epsparql(query)
    except QueryError as e:  # a pattern pyoxigraph also rejects (scoping), or one of no stream
        assert "reads no stream triple" in str(e) or "invalid" in str(e), (query, e)
        return
    assert q is not None
    triples = graph(rnd)
    assert ep_bag(query, triples) == sparql_bag(query, triples), query


@settings(max_examples=200, deadline=None)
@given(rnd=st.randoms(use_true_random=False))
def test_occurrence_bgp_matcher_equals_pyoxigraph(rnd):
    """match_bgp, the per-occurrence matcher of stream BGPs, against pyoxigraph's BGPs."""
    pats = [f"{term(rnd, 's')} {term(rnd, 'p')} {term(rnd, 'o')} ." for _ in range(rnd.randint(1, 3))]
    query = f"{P}SELECT * WHERE {{ {' '.join(pats)} }}"
    q = parse_epsparql(query)
    bgp = q.pattern.arg
    assert isinstance(bgp, ep.BGP)
    triples = graph(rnd)
    store = ep.OccurrenceStore()
    for i, t in enumerate(triples):
        store.add(ep.Occurrence(str(t.subject), str(t.predicate), str(t.object), 0, 0, i))
    got = ep.match_bgp(bgp.patterns, [store.candidates] * len(bgp.patterns))
    mine = collections.Counter(tuple(sorted((k, _norm(v)) for k, v in s.mu)) for s in got)
    assert mine == sparql_bag(query, triples), query


# ---------------------------------------------------------------- over a stream


def ev(t: int, ttl: str, seq: int) -> Event:
    trs = tuple(q.triple for q in ox.parse(f"@prefix : <{EX}> .\n{ttl}", format=ox.RdfFormat.TURTLE))
    return Event(EX + "s", f"{EX}g{seq}", t, t, trs, seq=seq)


def run(query: str, events: list[Event], policy: str | None = None) -> list[tuple]:
    eng = Engine()
    eng.register(parse_epsparql(query, policy=policy))
    out = []
    for o in eng.run(iter(events)):
        j = o.to_json()
        b = j.get("bindings")
        out.append((j["time"], j["from"], j["to"],
                    tuple(sorted((k, v.replace(f"<{EX}", ":").rstrip(">")) for k, v in b.items()))
                    if b is not None else j.get("boolean")))
    return out


STREAM = [ev(1, ":a :p :b . :b :q :c .", 1), ev(2, ":c :p :d .", 2), ev(3, ":d :q :e .", 3)]


def test_a_property_path_is_matched_inside_one_event():
    # :a :p/:q :c inside event 1; :c :p :d (2) and :d :q :e (3) are in two events
    assert run(P + "SELECT ?x ?y WHERE { ?x :p/:q ?y }", STREAM) == [
        (1, 1, 1, (("x", ":a"), ("y", ":c")))]
    # the same join written as a BGP spans events, with the interval of both
    assert run(P + "SELECT ?x ?y WHERE { ?x :p ?m . ?m :q ?y }", STREAM) == [
        (1, 1, 1, (("x", ":a"), ("y", ":c"))), (3, 2, 3, (("x", ":c"), ("y", ":e")))]


def test_a_path_in_a_sequence():
    q = P + "SELECT ?x ?z WHERE { { ?x :p+ ?y } SEQ { ?y :q ?z } }"
    assert run(q, STREAM) == [(3, 2, 3, (("x", ":c"), ("z", ":e")))]


MINUS_STREAM = [ev(1, ":a :q 1 .", 1), ev(2, ":a :p 1 .", 2), ev(3, ":b :p 2 .", 3),
                ev(4, ":b :q 2 .", 4)]


def test_minus_removes_what_ended_no_later():
    # :a :q 1 ended before :a :p 1, so it removes it; :b :q 2 comes after :b :p 2 was output
    q = P + "SELECT ?x ?y WHERE { ?x :p ?y MINUS { ?x :q ?y } }"
    assert run(q, MINUS_STREAM) == [(3, 3, 3, (("x", ":b"), ("y", '"2"^^<http://www.w3.org/2001/XMLSchema#integer')))]


def test_not_exists_sees_what_ended_no_later():
    q = P + "SELECT ?x WHERE { ?x :p ?y FILTER NOT EXISTS { ?x :q ?z } }"
    assert run(q, MINUS_STREAM) == [(3, 3, 3, (("x", ":b"),))]
    q = P + "SELECT ?x WHERE { ?x :p ?y FILTER EXISTS { ?x :q ?z } }"
    assert run(q, MINUS_STREAM) == [(2, 2, 2, (("x", ":a"),))]


def test_values_and_bind_only_groups_are_timeless():
    q = P + "SELECT ?x ?z WHERE { VALUES ?x { :c :d } BIND (4 AS ?z) ?x ?p ?o }"
    assert run(q, STREAM) == [(2, 2, 2, (("x", ":c"), ("z", '"4"^^<http://www.w3.org/2001/XMLSchema#integer'))),
                              (3, 3, 3, (("x", ":d"), ("z", '"4"^^<http://www.w3.org/2001/XMLSchema#integer')))]
    q = P + "SELECT ?x ?y WHERE { ?x :p ?y } VALUES ?y { :d }"
    assert run(q, STREAM) == [(2, 2, 2, (("x", ":c"), ("y", ":d")))]


def test_optional_with_an_empty_mandatory_part_outputs_its_matches():
    q = P + "SELECT ?x WHERE { OPTIONAL { ?x :q ?y } }"
    assert run(q, STREAM) == [(1, 1, 1, (("x", ":b"),)), (3, 3, 3, (("x", ":d"),))]


def test_order_by_orders_one_instant():
    events = [ev(1, ":a :p 1 .", 1), ev(1, ":b :p 3 .", 2), ev(1, ":c :p 2 .", 3), ev(2, ":d :p 9 .", 4)]
    q = P + "SELECT ?x WHERE { ?x :p ?v } ORDER BY DESC(?v)"
    assert [r[3] for r in run(q, events)] == [(("x", ":b"),), (("x", ":c"),), (("x", ":a"),),
                                              (("x", ":d"),)]


def test_ask_reports_each_complex_event():
    q = P + "ASK { { ?x :p ?y } SEQ { ?u :q ?v } }"
    assert sorted(run(q, STREAM)) == [(3, 1, 3, True), (3, 2, 3, True)]


def test_blank_nodes_reach_expressions_as_blank_nodes():
    data = [ev(1, "_:b :p 1 . :a :p 2 .", 1)]
    assert run(P + "SELECT ?x WHERE { ?x :p ?y FILTER (isBlank(?x)) }", data) == [(1, 1, 1, (("x", "_:b"),))]
    assert run(P + "SELECT ?y WHERE { ?x :p ?y FILTER EXISTS { ?x :p 1 } }", data) == [
        (1, 1, 1, (("y", '"1"^^<http://www.w3.org/2001/XMLSchema#integer'),))]


@pytest.mark.parametrize("text, message", [
    ("SELECT (COUNT(*) AS ?n) WHERE { ?x :p ?y }", "aggregates"),
    ("SELECT ?x WHERE { ?x :p ?y } LIMIT 2", "LIMIT"),
    ("SELECT ?x WHERE { VALUES ?x { :a } }", "reads no stream triple"),
    ("SELECT ?x WHERE { ?x :p ?y FILTER (:nope(?y)) }", "unknown function <http://example.org/nope>"),
])
def test_what_needs_the_end_of_the_stream_is_refused(text, message):
    with pytest.raises(QueryError) as e:
        parse_epsparql(P + text)
    assert message in str(e.value)
    assert e.value.line is not None
