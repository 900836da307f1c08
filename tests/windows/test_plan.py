"""The maintained path's plan read from the query's pattern tree (rsep.windows.plan):
what the tree keeps of the text for it, the terms it gives the matcher, and a query with
no tree."""

from __future__ import annotations

import dataclasses

import pytest
from group_reader import GroupReader

from rsep.algebra import pattern as pt
from rsep.algebra.query import ContinuousQuery
from rsep.lang import parse_query
from rsep.sparql.filters import prefixes_of
from rsep.windows.plan import (
    EVENT_LOCAL,
    MAINTAINED,
    SNAPSHOT,
    Plan,
    compile_plan,
    path,
    triple_patterns,
)

P = "PREFIX : <http://example.org/>\n"
HEAD = (P + "REGISTER RSTREAM <http://e/q> AS\nSELECT * FROM NAMED <urn:kb>\n"
        "FROM NAMED WINDOW :w ON :s [RANGE PT10S STEP PT1S]\n")


def rspql(where: str, head: str = HEAD) -> ContinuousQuery:
    q = parse_query(head + "WHERE " + where, "rspql")
    assert isinstance(q, ContinuousQuery) and q.pattern is not None, q
    return q


def test_a_window_and_a_named_graph_plan_from_the_tree() -> None:
    q = rspql("{ WINDOW :w { ?o :by ?s ; :val ?v } GRAPH <urn:kb> { ?s :on ?r } "
              "?r :in \"north\"@en FILTER(?v > 2.5) FILTER(?r != ?s) }")
    p = compile_plan(q)
    assert isinstance(p, Plan), p
    assert p.windows == ["http://example.org/w"]
    assert [g for g, _ in p.background] == [None, "urn:kb"]
    assert [c.text for c in p.filters] == ["(?r != ?s)"]  # (?v > 2.5 is the window's)
    assert path(q)[0] == MAINTAINED


def test_the_tree_keeps_the_elements_as_written_out_of_equality() -> None:
    flat = rspql("{ WINDOW :w { ?o :by ?s } ?s :on ?r . ?r :in ?z }").pattern
    nested = rspql("{ WINDOW :w { ?o :by ?s } ?s :on ?r { ?r :in ?z } }").pattern
    assert flat is not None and nested is not None
    assert flat.elements == ("WINDOW", "triples")
    assert nested.elements == ("WINDOW", "triples", "group")
    assert dataclasses.replace(nested, elements=("x",)) == nested
    short = parse_query(P + "CONSTRUCT WHERE { ?s :on ?r }", "rspql")
    assert isinstance(short, ContinuousQuery) and short.pattern is not None
    assert short.pattern.short_form


@pytest.mark.parametrize(("where", "reason"), [
    ("{ WINDOW :w { ?o :by ?s } { ?s :on ?r } }", "a nested group, UNION or subquery"),
    # the first element written that the plan does not take says why
    ("{ WINDOW :w { ?o :by ?s } FILTER NOT EXISTS { ?s :x ?y } OPTIONAL { ?s :y ?z } }",
     "a FILTER (NOT) EXISTS"),
    ("{ WINDOW :w { ?o :by ?s } OPTIONAL { ?s :y ?z } FILTER NOT EXISTS { ?s :x ?y } }",
     "OPTIONAL"),
    ("{ WINDOW :w { ?o :by ?s } GRAPH <urn:other> { ?s :on ?r } }",
     "GRAPH <urn:other> reads a graph the query does not declare"),
    ("{ WINDOW :w { ?o :by ?s } FILTER(RAND() < 0.5) }",
     "a FILTER calls NOW, RAND, UUID, STRUUID or BNODE"),
    ("{ WINDOW :w { ?o :by ?s } ?s :on <relative> }", "(relative IRI)"),
])
def test_refusals_name_the_first_element_not_taken(where: str, reason: str) -> None:
    kind, why = path(rspql(where))
    assert kind == EVENT_LOCAL and "not maintained: " in why and reason in why, why


def test_terms_are_the_text_readers() -> None:
    """The matcher's form of the tree's triples is what GroupReader reads off the text
    (where GroupReader reads it: a signed number, a long string or a collection it does
    not, the tree does)."""
    body = ('?s a :T ; :p "x" , "y"@en , "3"^^:d , 3 , 2.5 , 1e3 , true ; ?q <http://e/o> . '
            ':a :b ?s')
    q = parse_query(P + "SELECT * WHERE { " + body + " }", "rspql")
    assert isinstance(q, ContinuousQuery) and q.pattern is not None
    bgp = q.pattern.pattern
    assert isinstance(bgp, pt.BGP)
    prefixes = prefixes_of(P)
    assert triple_patterns(bgp.triples, prefixes) == \
        GroupReader("{ " + body + " }", prefixes, lambda t: t).group()


def test_a_query_with_no_tree_is_refused_saying_so() -> None:
    q = rspql("{ WINDOW :w { ?o :by ?s } }")
    bare = dataclasses.replace(q, pattern=None, pattern_refused="why (line 1, column 2)")
    assert compile_plan(bare) == "the query has no pattern tree (why (line 1, column 2))"
    # (the window blocks are read from the tree too: with none, the snapshot path)
    kind, why = path(bare)
    assert (kind, why) == (SNAPSHOT, "the query has no pattern tree (why (line 1, column 2)) "
                                     "(so neither the event-local store nor a maintained result)")


def test_select_star_projects_the_variables_in_scope_by_name() -> None:
    """As pyoxigraph names SELECT *'s columns (tests/algebra/test_pattern.py holds
    projected_names to pyoxigraph on every query of the house and the W3C suite)."""
    q = rspql("{ WINDOW :w { ?z :by ?a ; :val [ :in ?m ] } ?a :on ?b FILTER(?q != ?z) }")
    p = compile_plan(q)
    assert isinstance(p, Plan), p
    assert p.project == [("a", "a"), ("b", "b"), ("m", "m"), ("z", "z")]
