"""Compiled GPMs (rsep.sparql.matcher) give exactly pyoxigraph's solutions.

Random BGPs with random FILTERs (comparisons, arithmetic, && || !) over events
whose values mix integers, decimals, doubles, floats, strings, language
strings, IRIs, booleans and non-canonical or ill-typed lexical forms: the
compiled evaluator (falling back to pyoxigraph row by row where it must) and
pyoxigraph alone return the same mappings, local and stateful FILTERs alike.
"""

from __future__ import annotations

import random

import pyoxigraph as ox
from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.algebra.spaseq import UNIT
from rsep.events.solver import BatchSolver, solve_item
from rsep.lang.rspql.events import event_pattern
from rsep.lang.spaseq import parse_spaseq
from rsep.sparql.matcher import Canon, compile_gpm
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.streamset import SEvent
from rsep.stream.event import Event
from rsep.stream.time import TimeKind
from rsep.testing.snippets import EX

U = EX + "s"
XSD = "http://www.w3.org/2001/XMLSchema#"
VALUES = ['1', '01', '-3', '2.50', '2.5', '"7"^^xsd:int', '1e1', '"1.0"^^xsd:float', '"abc"',
          '"abc"@en', ':iri', ':other', 'true', '"x1"^^xsd:integer', '"+4"^^xsd:integer',
          '9223372036854775807', '0.1', '"b"']


def expr(rnd: random.Random, depth: int = 0) -> str:
    if depth < 2 and rnd.random() < 0.4:
        op = rnd.choice(["&&", "||"])
        return f"({expr(rnd, depth + 1)} {op} {expr(rnd, depth + 1)})"
    if depth < 2 and rnd.random() < 0.1:
        return f"!({expr(rnd, depth + 1)})"
    return f"{operand(rnd)} {rnd.choice(['=', '!=', '<', '>', '<=', '>='])} {operand(rnd)}"


def operand(rnd: random.Random) -> str:
    r = rnd.random()
    if r < 0.5:
        return rnd.choice(["?a", "?b", "?c"])
    if r < 0.7:
        return f"({rnd.choice(['?a', '?b', '2'])} {rnd.choice(['+', '-', '*'])} " \
               f"{rnd.choice(['?a', '?c', '1.5', '3'])})"
    return rnd.choice(["2", "2.0", "1e0", '"abc"', ":iri", "-1"])


@settings(max_examples=300, deadline=None)
@given(rnd=st.randoms(use_true_random=False))
def test_compiled_gpm_equals_pyoxigraph(rnd):
    local = expr(rnd)
    stateful = expr(rnd).replace("?c", "?z")
    text = (f"PREFIX : <{EX}> PREFIX xsd: <{XSD}> SELECT * FROM STREAM S <{U}> WHERE {{ "
            f"SEQ (Z; A) DEFINE GPM Z ON S {{ ?e :z ?z }} "
            f"DEFINE GPM A ON S {{ ?e :a ?a ; :b ?b . ?e :c ?c FILTER({local}) "
            f"FILTER({stateful}) }} }}")
    q = parse_spaseq(text)
    gpm = q.gpms["A"]
    assert compile_gpm(gpm, Canon()) is not None, text
    ttl = " ".join(f":e :{p} {rnd.choice(VALUES)}, {rnd.choice(VALUES)} ." for p in "abc")
    prefixes = f"@prefix : <{EX}> . @prefix xsd: <{XSD}> .\n"
    triples = tuple(qd.triple for qd in ox.parse(prefixes + ttl, format=ox.RdfFormat.TURTLE))
    event = SEvent(U, 1, triples)
    xs = frozenset({(("z", ox.Literal(rnd.choice(["1", "5"]), datatype=ox.NamedNode(
        XSD + rnd.choice(["integer", "decimal", "double"])))),)})
    got = []
    for compiled in (True, False):
        ev = GPMEvaluator([gpm], {}, compiled=compiled)
        ev.begin([event])
        got.append((ev.local(gpm, U), ev.match(gpm, U, xs), ev.match(gpm, U, UNIT)))
        ev.end()
    assert got[0] == got[1], text + "\n" + ttl
    assert got[1][0] == _text_local(gpm, triples), text + "\n" + ttl


@settings(max_examples=100, deadline=None)
@given(rnd=st.randoms(use_true_random=False))
def test_memoised_filter_verdicts_equal_pyoxigraph_across_events(rnd):
    """One compiled GPM over many events: its local FILTERs' verdicts, memoised by the
    values the FILTERs read, are pyoxigraph's on every event."""
    text = (f"PREFIX : <{EX}> PREFIX xsd: <{XSD}> SELECT * FROM STREAM S <{U}> WHERE {{ "
            f"SEQ (A) DEFINE GPM A ON S {{ ?e :a ?a ; :b ?b . ?e :c ?c FILTER({expr(rnd)}) }} }}")
    gpm = parse_spaseq(text).gpms["A"]
    prefixes = f"@prefix : <{EX}> . @prefix xsd: <{XSD}> .\n"
    compiled = GPMEvaluator([gpm], {}, compiled=True)
    for _ in range(8):
        ttl = " ".join(f":{rnd.choice('ef')} :{p} {rnd.choice(VALUES[:6])} ." for p in "abc")
        triples = tuple(qd.triple for qd in ox.parse(prefixes + ttl, format=ox.RdfFormat.TURTLE))
        event = SEvent(U, 1, triples)
        got = []
        for ev in (compiled, GPMEvaluator([gpm], {}, compiled=False)):
            ev.begin([event])
            got.append(ev.local(gpm, U))
            ev.end()
        assert got[0] == got[1], text + "\n" + ttl


def test_filter_verdicts_memoised_by_the_variables_read():
    """The memo is keyed by the values of the variables the FILTERs read (?v, not ?s):
    two subjects with one value share a verdict; a value not seen is evaluated."""
    q = parse_spaseq(f"PREFIX : <{EX}> SELECT * FROM STREAM S <{U}> WHERE {{ SEQ (A) "
                     f"DEFINE GPM A ON S {{ ?s :v ?v FILTER(?v > 2) }} }}")
    gpm = q.gpms["A"]
    c = compile_gpm(gpm, Canon())
    assert c is not None
    v3, v1 = ox.Literal("3", datatype=ox.NamedNode(XSD + "integer")), \
        ox.Literal("1", datatype=ox.NamedNode(XSD + "integer"))
    s1, s2, p = ox.NamedNode(EX + "s1"), ox.NamedNode(EX + "s2"), ox.NamedNode(EX + "v")
    canon = Canon()
    assert c.match(canon.indexed((ox.Triple(s1, p, v3),))) == [(("s", s1), ("v", v3))]
    assert c.match(canon.indexed((ox.Triple(s2, p, v3),))) == [(("s", s2), ("v", v3))]
    assert c.match(canon.indexed((ox.Triple(s2, p, v1),))) == []
    assert c.verdicts == {v3: True, v1: False}


@settings(max_examples=300, deadline=None)
@given(rnd=st.randoms(use_true_random=False))
def test_planned_bgp_matcher_equals_generic(rnd):
    """The planned BGP matcher (bound positions fixed per pattern, joins on a bound term
    by index or by scan) gives the generic one's solutions, in the same order, for random
    shapes with repeated and constant terms."""
    from rsep.sparql.matcher import Indexed, _match_shape, _match_shape_generic

    nodes = [ox.NamedNode(EX + n) for n in "abcd"]
    preds = [ox.NamedNode(EX + p) for p in "pq"]
    lits = [ox.Literal(str(i), datatype=ox.NamedNode(XSD + "integer")) for i in range(3)]
    triples = list(dict.fromkeys(
        (rnd.choice(nodes), rnd.choice(preds), rnd.choice(nodes + lits))
        for _ in range(rnd.randint(0, 8))))
    ev = Indexed(triples)
    nv = rnd.randint(1, 4)
    shape = []
    for _ in range(rnd.randint(1, 3)):
        shape.append((rnd.choice([*range(nv), nodes[0]]),
                      rnd.choice([*range(nv), *preds]),
                      rnd.choice([*range(nv), nodes[1], lits[0]])))
    used = sorted({x for tp in shape for x in tp if type(x) is int})
    # variables numbered by first occurrence, as CompiledGPM numbers them
    ren = {v: i for i, v in enumerate(dict.fromkeys(x for tp in shape for x in tp
                                                    if type(x) is int))}
    shape = tuple(tuple(ren[x] if type(x) is int else x for x in tp) for tp in shape)
    assert len(ren) == len(used)
    import rsep.sparql.matcher as compiled

    want = _match_shape_generic(shape, ev)
    assert _match_shape(shape, ev) == want
    saved = compiled.INDEX_MIN
    compiled.INDEX_MIN = 0  # the term-index join on these small events too
    try:
        assert _match_shape(shape, Indexed(triples)) == want
    finally:
        compiled.INDEX_MIN = saved


NESTED = [
    "?e :a ?a ; :r [ :c ?c ] FILTER({f})",
    "[ :a ?a ; :r ?x ] . ?x :c ?c ; :b ?b FILTER({f})",
    "?e :r [ :c ?c ; :b ?b ], [ :b ?a ] FILTER({f})",
    "[] :a ?a . ?e :r [] ; :a ?b FILTER({f})",
]


@settings(max_examples=150, deadline=None)
@given(rnd=st.randoms(use_true_random=False))
def test_compiled_blank_node_patterns_equal_pyoxigraph(rnd):
    """``[ p o ; ... ]`` in a GPM (SRBench's observation shape) is matched in Python with
    pyoxigraph's solutions: the blank node joins like a variable and is bound in none."""
    pattern = rnd.choice(NESTED)
    f = expr(rnd)
    for var in ("?b", "?c"):
        if var not in pattern:
            f = f.replace(var, "?a")  # a variable the pattern binds
    pattern = pattern.format(f=f)
    text = (f"PREFIX : <{EX}> PREFIX xsd: <{XSD}> SELECT * FROM STREAM S <{U}> WHERE {{ "
            f"SEQ (A) DEFINE GPM A ON S {{ {pattern} }} }}")
    q = parse_spaseq(text)
    gpm = q.gpms["A"]
    assert compile_gpm(gpm, Canon()) is not None, text
    v = lambda: rnd.choice(VALUES)  # noqa: E731
    ttl = (f":e :a {v()}, {v()} ; :r [ :c {v()} ; :b {v()} ], [ :c {v()} ; :b {v()} ] . "
           f":f :a {v()} .")
    prefixes = f"@prefix : <{EX}> . @prefix xsd: <{XSD}> .\n"
    triples = tuple(qd.triple for qd in ox.parse(prefixes + ttl, format=ox.RdfFormat.TURTLE))
    event = SEvent(U, 1, triples)
    got = []
    for compiled in (True, False):
        ev = GPMEvaluator([gpm], {}, compiled=compiled)
        ev.begin([event])
        got.append(ev.local(gpm, U))
        ev.end()
    assert got[0] == got[1], text + "\n" + ttl
    assert got[1] == _text_local(gpm, triples), text + "\n" + ttl


def _text_local(gpm, triples) -> frozenset:
    """The GPM's local solutions on an event by pyoxigraph given its local pattern's text
    (what it was given before the tree), as GPMEvaluator's pyoxigraph path reads them."""
    store = ox.Store()
    store.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in triples)
    res = store.query(gpm.prologue + "SELECT * WHERE " + gpm.local_pattern)
    assert isinstance(res, ox.QuerySolutions)
    names = [v.value for v in res.variables]
    return frozenset(tuple(sorted((n, sol[n]) for n in names if sol[n] is not None))
                     for sol in res)


@given(st.text(alphabet="-+0123456789٣ .e", max_size=6))
def test_integer_tests_are_the_lexical_rules(v):
    import re

    from rsep.sparql.filters import canonical_int as _canonical_int
    from rsep.sparql.filters import lexical_int as _lexical_int

    assert _canonical_int(v) == (re.fullmatch(r"0|-?[1-9][0-9]*", v) is not None)
    assert _lexical_int(v) == (re.fullmatch(r"[+-]?[0-9]+", v) is not None)


BEP_PATTERNS = [
    "{{ ?e :a ?a ; :b ?b . ?e :c ?c FILTER({f}) }}",
    "{{ ?e :a ?a . ?x :b ?b ; :c ?c FILTER({f}) }}",
    "{{ ?e :r [ :c ?c ; :b ?b ], [ :b ?a ] FILTER({f}) }}",
    "{{ ?e ?p ?a . ?e :b ?b . ?e :c ?c FILTER({f}) }}",
    "{{ ?e :a ?a OPTIONAL {{ ?e :b ?b }} ?e :c ?c FILTER({f}) }}",  # pyoxigraph's
]


@settings(max_examples=200, deadline=None)
@given(rnd=st.randoms(use_true_random=False))
def test_bep_matching_equals_pyoxigraph(rnd):
    """RSEP-QL's BEPs go through the GPMs' per-item matcher (BatchSolver): on random items
    (repeated and non-canonical values, blank nodes) each item's mappings are pyoxigraph's
    bag (in its order, one item at a time), one item at a time and batched, compiled or not;
    and pyoxigraph, given the BEP's tree written by to_sparql, answers in the order it
    answers the pattern's text in."""
    pattern = rnd.choice(BEP_PATTERNS).format(f=expr(rnd))
    bep = event_pattern("E", EX + "w", pattern, ("e", "a", "b", "c"),
                        f"PREFIX : <{EX}> PREFIX xsd: <{XSD}> ")
    assert bep.tree is not None and bep.sparql != pattern
    v = lambda: rnd.choice(VALUES)  # noqa: E731
    prefixes = f"@prefix : <{EX}> . @prefix xsd: <{XSD}> .\n"
    items = []
    for i in range(rnd.randint(1, 4)):
        ttl = (f":e :a {v()}, {v()} ; :b {v()}, {v()} ; :c {v()} ; "
               f":r [ :c {v()} ; :b {v()} ], [ :c {v()} ; :b {v()} ] . :f :b {v()} ; :c {v()} .")
        trs = tuple(qd.triple for qd in ox.parse(prefixes + ttl, format=ox.RdfFormat.TURTLE))
        items.append((Event(U, f"{EX}g{i}", i, i, trs, TimeKind.ABSTRACT, i + 1), trs))
    want = [solve_item(bep, trs) for _, trs in items]
    assert [_text_solutions(bep, trs) for _, trs in items] == want, (pattern, bep.sparql)
    for compiled in (True, False):
        one, batch = BatchSolver(compiled), BatchSolver(compiled)
        batch.prepare(bep, items)
        assert [one(bep, e, trs) for e, trs in items] == want, pattern
        assert [sorted(batch(bep, e, trs)) for e, trs in items] == [sorted(w) for w in want], \
            pattern
    assert (BatchSolver().matcher(bep) is None) == ("OPTIONAL" in pattern)


def _text_solutions(bep, triples) -> list:
    """An item's mappings by pyoxigraph given the BEP's source text (what it was given
    before the tree), in its order."""
    store = ox.Store()
    store.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in triples)
    res = store.query(f"{bep.prologue}SELECT * WHERE {bep.pattern}")
    assert isinstance(res, ox.QuerySolutions)
    names = [v.value for v in res.variables]
    return [tuple(sorted((n, str(sol[n])) for n in names if sol[n] is not None)) for sol in res]
