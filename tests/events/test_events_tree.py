"""An RSEP-QL basic event pattern compiled from its pattern tree (BasicEventPattern.tree,
read by rsep.lang; rsep.events.solver.compile_bep) against the compiled matcher's reading
of its text (tests/group_reader.py: rsep.sparql.pattern's GroupReader, what it replaced): where the text reader
reads a BEP, the tree gives the same triple patterns and FILTERs, on every BEP of the
house's queries (tests/query_corpus.py) and on shapes the house has few of; and the
compiled BEP answers as pyoxigraph does on an item."""

from __future__ import annotations

import warnings

import pyoxigraph as ox
import pytest
from group_reader import assert_compiled_alike, compiled_from_text
from query_corpus import house

from rsep.algebra.events import BasicEventPattern
from rsep.algebra.query import ContinuousQuery
from rsep.events.solver import compile_bep
from rsep.lang import QueryError, parse_query
from rsep.sparql.matcher import Canon, Indexed


def _beps(text: str) -> list[BasicEventPattern]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = parse_query(text)
    except (QueryError, ValueError):
        return []
    if not isinstance(q, ContinuousQuery):
        return []
    return [b for m in q.matches for b in m.expr.beps()]


def same(b: BasicEventPattern) -> bool:
    """Whether the text reader compiles ``b``; when it does, the tree's compiled form is
    the same."""
    assert b.tree is not None and b.filters is not None
    was = compiled_from_text(b.prologue, b.pattern, Canon(), b.filters)
    got = compile_bep(b, Canon(), b.filters)
    if was is None:
        return False
    assert_compiled_alike(got, was, b.pattern)
    return True


def test_the_house_beps_compile_as_their_text_did() -> None:
    seen = compiled = 0
    for where, text in house():
        for b in _beps(text):
            seen += 1
            try:
                compiled += same(b)
            except AssertionError as e:
                raise AssertionError(f"{where}: {e}") from None
    # (at this writing: 7 BEPs, 6 of which the text reader compiles)
    assert seen >= 6 and compiled >= 5, (seen, compiled)


HEAD = ("PREFIX : <http://example.org/>\nREGISTER ISTREAM :out AS SELECT *\n"
        "FROM NAMED :S WIN [RANGE 5] AS :w\nEVENT ON :w {} AS E\nWHERE {{ MATCH {{ E }} }}")

SHAPES = [
    "{ ?s :p ?o ; :q [ :r ?x ] . ?x a :T }",
    "{ ?s :p ?o FILTER(?o != :z) ?o :q \"x\"@en , 3 , 2.5 , true FILTER(?s != :b) }",
    "{ ?s :p [] . [] :q ?s }",
    "{ ?s :p \"3\"^^<http://www.w3.org/2001/XMLSchema#integer> }",
]


@pytest.mark.parametrize("group", SHAPES)
def test_the_shapes_the_house_has_few_of(group: str) -> None:
    (b,) = _beps(HEAD.format(group))
    assert same(b)


@pytest.mark.parametrize("group", [*SHAPES, "{ ?s :p -2 }", "{ ?s :p ( 1 ) }",
                                   "{ _:a :p ?o . _:a :q ?o }"])
def test_a_compiled_bep_answers_as_pyoxigraph(group: str) -> None:
    """Also where only the tree compiles (a signed number, a collection, a labelled blank
    node: GroupReader leaves those to pyoxigraph)."""
    (b,) = _beps(HEAD.format(group))
    c = compile_bep(b, Canon(), b.filters or ())
    assert c is not None
    item = ox.parse("@prefix : <http://example.org/> . "
                    ":a :p :o , 3 , -2 , \"x\"@en , 2.5 , true , _:n . _:n :q :a . "
                    ":a :q :T , \"x\"@en , 3 , 2.5 , true , [ :r :z ] . :z a :T . :o :q \"x\"@en , 3 , 2.5 , true . "
                    ":c :p ( 1 ) . :c :q :o . _:m :q :a .", format=ox.RdfFormat.TURTLE)
    triples = tuple(q.triple for q in item)
    store = ox.Store()
    store.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in triples)
    res = store.query(f"{b.prologue}SELECT * WHERE {b.pattern}")
    assert isinstance(res, ox.QuerySolutions)
    names = [v.value for v in res.variables]
    want = sorted(tuple(str(r[n]) for n in names) for r in res)
    canon = Canon()
    ev = canon.indexed(triples)
    got = sorted({tuple(str(dict(m)[n]) for n in names) for m in c.match(Indexed(list(dict.fromkeys(ev.triples))))})
    assert got == sorted(set(want)) and want, (got, want)
