"""SPARQL 1.1 inside SPASEQ: any group graph pattern as a GPM body, SELECT (expr AS ?v) over
a match's bindings (docs/semantics.md, "SPARQL 1.1 inside a GPM")."""

from __future__ import annotations

import pytest

from rsep import Engine, QueryError, parse_query
from rsep.testing.snippets import EX, ev

U = EX + "s"
XSD = "http://www.w3.org/2001/XMLSchema#"


def text(head: str, a: str, b: str) -> str:
    return (f"PREFIX : <{EX}> PREFIX xsd: <{XSD}> {head} FROM STREAM S1 <{U}> WHERE {{ "
            f"SEQ (A; B) DEFINE GPM A ON S1 {a} DEFINE GPM B ON S1 {b} }}")


DEC = f"<{XSD}decimal>"
STREAM = [ev(U, 1, f':s1 :temp "20"^^{DEC} ; :unit "C" .'),
          ev(U, 2, f':s1 :temp "25.5"^^{DEC} ; :unit "C" .'),
          ev(U, 3, ':s2 :temp 7 .')]


def run(query: str) -> list[tuple]:
    eng = Engine()
    eng.register(parse_query(query))
    return [(o.time, o.bindings) for o in eng.run(STREAM)]


def test_select_expressions_over_a_match():
    q = text("SELECT ?s (?t2 - ?t1 AS ?rise) (xsd:double(?rise) * 2 AS ?twice) (UCASE(?u) AS ?U)",
             "{ ?s :temp ?t1 ; :unit ?u }", "{ ?s :temp ?t2 FILTER (?t2 > ?t1) }")
    assert run(q) == [(2, {"s": f"<{EX}s1>", "rise": f'"5.5"^^<{XSD}decimal>',
                           "twice": f'"11"^^<{XSD}double>', "U": '"C"'})]


def test_an_expression_error_leaves_its_variable_unbound():
    q = text("SELECT ?s (?t1 / 0 AS ?bad)", "{ ?s :temp ?t1 }", "{ ?s :temp ?t2 FILTER (?t2 > ?t1) }")
    assert run(q) == [(2, {"s": f"<{EX}s1>"})]


def test_a_gpm_body_may_be_a_sub_select():
    q = text("SELECT ?s ?f", "{ SELECT ?s (?t * 9 / 5 + 32 AS ?f) WHERE { ?s :temp ?t } }",
             "{ ?s :unit ?u }")
    assert run(q) == [(2, {"s": f"<{EX}s1>", "f": f'"68"^^<{XSD}decimal>'})]


def test_a_gpm_body_with_a_property_path_and_optional():
    q = text("SELECT ?s ?u", "{ ?s :temp ?t OPTIONAL { ?s :unit ?u } }", "{ ?s :temp|:unit ?x }")
    # B's two solutions at 2 (its :temp and its :unit) project to one row: Omega is a set
    assert run(q) == [(2, {"s": f"<{EX}s1>", "u": '"C"'})]


@pytest.mark.parametrize("head, message", [
    ("SELECT (?t1 + 1 AS ?t2)", "?t2 is bound by a GPM"),
    ("SELECT (COUNT(?t1) AS ?n)", "aggregates need the end of the stream"),
    ("SELECT (?t1 +  AS ?n)", "syntax error"),
    ("SELECT (:nope(?t1) AS ?n)", "unknown function <http://example.org/nope>"),
])
def test_select_expression_errors_are_located(head, message):
    with pytest.raises(QueryError) as e:
        parse_query(text(head, "{ ?s :temp ?t1 }", "{ ?s :temp ?t2 }"), source="q.rq")
    assert message in str(e.value)
    assert e.value.line == 1 and e.value.column is not None


def test_a_blank_node_reaches_an_expression_as_a_blank_node():
    eng = Engine()
    eng.register(parse_query(text("SELECT ?s (isBlank(?s) AS ?b) (STR(?v) AS ?sv)", "{ ?s :temp ?v }",
                                  "{ ?s :unit ?u }")))
    out = [(o.time, o.bindings) for o in eng.run([ev(U, 1, "_:n :temp 3 ; :unit 4 ."),
                                                  ev(U, 2, "_:n :unit 5 .")])]
    assert out == [(2, {"s": "_:n", "b": f'"true"^^<{XSD}boolean>', "sv": '"3"'})]
