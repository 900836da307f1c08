"""A SPASEQ GPM compiled from its local pattern's tree (GPM.local_tree, read once by
rsep.lang; rsep.sparql.matcher.compile_gpm) against the compiled matcher's reading of its
text (tests/group_reader.py: the GroupReader rsep.sparql.pattern held before): where the
text reader reads a GPM, the tree gives the same triple patterns, variables and FILTERs, on
every GPM of the house's queries and on shapes the house has few of; and a GPM the tree
alone compiles matches an event as pyoxigraph does."""

from __future__ import annotations

import warnings

import pyoxigraph as ox
import pytest
from group_reader import assert_compiled_alike, compiled_from_text
from query_corpus import house

from rsep.algebra.spaseq import GPM, SpaseqQuery
from rsep.lang import QueryError, parse_query
from rsep.sparql.matcher import Canon, Indexed, compile_gpm

EX = "http://example.org/"


def _gpms(text: str) -> list[GPM]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = parse_query(text)
    except (QueryError, ValueError):
        return []
    return list(q.gpms.values()) if isinstance(q, SpaseqQuery) else []


def same(g: GPM) -> bool:
    """Whether the text reader compiles ``g``; when it does, the tree's compiled form is
    the same."""
    was = None if g.background else compiled_from_text(g.prologue, g.local_pattern, Canon(),
                                                          g.local_filters, g.stateful)
    got = compile_gpm(g, Canon())
    if was is None:
        return False
    assert_compiled_alike(got, was, g.local_pattern)
    return True


def test_the_house_gpms_compile_as_their_text_did() -> None:
    seen = compiled = 0
    for where, text in house():
        for g in _gpms(text):
            seen += 1
            try:
                compiled += same(g)
            except AssertionError as e:
                raise AssertionError(f"{where}: {e}") from None
    # (at this writing: 39 GPMs, 33 of which the text reader compiles)
    assert seen >= 35 and compiled >= 30, (seen, compiled)


HEAD = ("PREFIX : <" + EX + ">\nSELECT * FROM STREAM S <" + EX + "s> WHERE {{ SEQ (Z; A) "
        "DEFINE GPM Z ON S {{ ?e :z ?z }} DEFINE GPM A ON S {} }}")

SHAPES = [
    "{ ?e :p ?o ; :q [ :r ?x ] . ?x a :T }",
    "{ ?e :p ?o , 3 . FILTER (?o != 3) }",
    '{ ?e :q "x"@en ; :p 2.5 . FILTER (?z < 4) }',
    "{ [ :p ?e ] :q ?o . }",
    "{ ?e :p true ; :q ?o FILTER (?o = :T) FILTER (?z != ?o) }",
]


@pytest.mark.parametrize("group", SHAPES)
def test_shapes_compile_as_their_text_did(group: str) -> None:
    (_, g) = _gpms(HEAD.format(group))
    assert same(g)


@pytest.mark.parametrize("group", ["{ ?e :p -2 }", "{ ?e :p ( 1 ) }",
                                   "{ _:a :p ?o . _:a :q ?o }"])
def test_a_gpm_only_the_tree_compiles_answers_as_pyoxigraph(group: str) -> None:
    """A signed number, a collection, a labelled blank node: the text reader left those
    to pyoxigraph; the tree compiles them, and the matcher answers as pyoxigraph."""
    (_, g) = _gpms(HEAD.format(group))
    assert compiled_from_text(g.prologue, g.local_pattern, Canon(), g.local_filters) is None
    c = compile_gpm(g, Canon())
    assert c is not None
    item = ox.parse(f"@prefix : <{EX}> . :a :p :o , 3 , -2 , 2.5 , _:n . _:n :q :o . "
                    ":c :p ( 1 ) . :c :q :o . :a :q :o .", format=ox.RdfFormat.TURTLE)
    triples = tuple(q.triple for q in item)
    store = ox.Store()
    store.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in triples)
    res = store.query(f"{g.prologue}SELECT * WHERE {g.local_pattern}")
    assert isinstance(res, ox.QuerySolutions)
    names = [v.value for v in res.variables]
    want = sorted(set(tuple(str(r[n]) for n in names) for r in res))
    ev = Canon().indexed(triples)
    got = sorted({tuple(str(dict(m)[n]) for n in names)
                  for m in c.match(Indexed(list(dict.fromkeys(ev.triples))))})
    assert got == want and want, (got, want)
