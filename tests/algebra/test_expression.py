"""The one FILTER-expression tree (rsep.algebra.expression), read from text by rsep.lang:
its shape for representative expressions, what every dialect's algebra holds, and
``to_sparql()``: read back, it is the same tree, and pyoxigraph gives the same value for it
as for the text it was read from (Hypothesis-generated expressions)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsep import parse_query
from rsep.algebra.epsparql import Filter
from rsep.algebra.expression import (
    XSD,
    Aggregate,
    And,
    Arithmetic,
    Bound,
    Compare,
    Constraint,
    Exists,
    FunctionCall,
    In,
    Iri,
    Literal,
    Not,
    Or,
    PrefixedName,
    UnaryMinus,
    UnaryPlus,
    Variable,
    conjuncts,
    signed_literal,
)
from rsep.lang.epsparql import parse_epsparql
from rsep.lang.expression import group_filters, parse_expression
from rsep.lang.spaseq import parse_spaseq
from rsep.testing.snippets import EX

PRO = f"PREFIX xsd: <{XSD}>\nPREFIX : <{EX}>\n"
A, B, C = Variable("a"), Variable("b"), Variable("c")


def num(n: str, t: str = "integer") -> Literal:
    return Literal(n, Iri(XSD + t))


@pytest.mark.parametrize("text, tree", [
    # '!' applies to a primary expression: (!?a) < 3, a boolean compared
    ("!?a < 3", Compare("<", Not(A), num("3"))),
    ("!(?a < 3)", Not(Compare("<", A, num("3")))),
    ("?a - -?b", Arithmetic("-", A, UnaryMinus(B))),
    # a signed number is the unary operator on the unsigned one, as pyoxigraph reads it
    ("?a - -2", Arithmetic("-", A, UnaryMinus(num("2")))),
    ("-9223372036854775808", UnaryMinus(num("9223372036854775808"))),
    ("+1.5", UnaryPlus(num("1.5", "decimal"))),
    # an additive operand written as a signed number: its sign is the operator
    ("?a -3 * 2", Arithmetic("-", A, Arithmetic("*", num("3"), num("2")))),
    ("1 - 2 - 3", Arithmetic("-", Arithmetic("-", num("1"), num("2")), num("3"))),
    ("?a + ?b * ?c", Arithmetic("+", A, Arithmetic("*", B, C))),
    ("?a || ?b && ?c", Or(A, And(B, C))),
    ("?a && ?b && ?c", And(And(A, B), C)),
    ("?a IN (1, ?b)", In(A, (num("1"), B))),
    ("?a NOT IN ()", In(A, (), True)),
    ("BOUND(?a) && !BOUND(?b)", And(Bound(A), Not(Bound(B)))),
    ('regex(?a, "x", "i")', FunctionCall("REGEX", (A, Literal("x"), Literal("i")))),
    ("xsd:integer(?a) >= 1.5e0", Compare(">=", FunctionCall(PrefixedName("xsd", "integer"), (A,)),
                                         num("1.5e0", "double"))),
    ("<http://f/g>(DISTINCT ?a)", FunctionCall(Iri("http://f/g"), (A,), True)),
    ("IF(?a, 1, ?b)", FunctionCall("IF", (A, num("1"), B))),
    ("COALESCE(?a, ?b)", FunctionCall("COALESCE", (A, B))),
    ("EXISTS { ?a :p ?b }", Exists("{ ?a :p ?b }", False, frozenset("ab"))),
    ("NOT EXISTS {?a :p 1}", Exists("{?a :p 1}", True, frozenset("a"))),
    ('"a\\"b"@en = """x\ny"""^^xsd:string',
     Compare("=", Literal('a"b', language="en"), Literal("x\ny", PrefixedName("xsd", "string")))),
    ('"\\u0041" != <http://x/\\u0042>', Compare("!=", Literal("A"), Iri("http://x/B"))),
    ("true || false", Or(Literal("true", Iri(XSD + "boolean")), Literal("false", Iri(XSD + "boolean")))),
    ("?__d < 5", Compare("<", Variable("__d"), num("5"))),
])
def test_tree_shape(text, tree):
    assert parse_expression(text, PRO) == tree


def test_aggregates_and_extensions():
    assert parse_expression("COUNT(*) > 1") == Compare(">", Aggregate("COUNT", None), num("1"))
    assert parse_expression("GROUP_CONCAT(DISTINCT ?o ; separator = '|')") == \
        Aggregate("GROUP_CONCAT", Variable("o"), True, "|")
    # C-SPARQL's timestamp() is a call like any other
    assert parse_expression("timestamp(?s, ?p, ?o) > 3") == Compare(
        ">", FunctionCall("TIMESTAMP", (Variable("s"), Variable("p"), Variable("o"))), num("3"))


def test_variables_conjuncts_and_signed_literals():
    e = parse_expression("(?a < 3 && BOUND(?b)) && (?c || NOT EXISTS { ?d :p ?a })", PRO)
    assert e.variables() == frozenset("abcd")
    assert conjuncts(e) == [Compare("<", A, num("3")), Bound(B),
                            Or(C, Exists("{ ?d :p ?a }", True, frozenset("da")))]
    assert conjuncts(A) == [A]
    assert signed_literal(parse_expression("-2.5")) == Literal("-2.5", Iri(XSD + "decimal"))
    assert signed_literal(parse_expression("+3")) == num("+3")
    assert signed_literal(A) is None
    assert signed_literal(parse_expression('-"3"')) is None  # a string: not a number


def test_every_dialect_holds_trees():
    """EP-SPARQL's FILTERs (sigma: the time functions read as ?__d, ?__s, ?__e), SPASEQ's
    stateful and local FILTERs, RSEP-QL's event FILTERs: trees, with their text as written."""
    ep = parse_epsparql(f"{PRO}SELECT ?a WHERE {{ ?x :p ?a }} SEQ {{ ?x :q ?b }} "
                        "FILTER (getDURATION() < 5 && ?b > ?a)")
    f = ep.pattern.kids[0]
    assert isinstance(f, Filter)
    assert f.cond.tree == And(Compare("<", Variable("__d"), num("5")), Compare(">", B, A))
    assert f.cond.timed and not f.cond.reads

    sq = parse_spaseq(f"{PRO}SELECT * FROM STREAM S <{EX}s> WHERE {{ SEQ (A; B) "
                      f"DEFINE GPM A ON S {{ ?e :v ?v1 }} "
                      f"DEFINE GPM B ON S {{ ?e :v ?v2 FILTER(?v2 > 3) FILTER (?v2 < ?v1 ) }} }}")
    g = sq.gpms["B"]
    assert g.stateful == (Constraint(Compare("<", Variable("v2"), Variable("v1")), "(?v2 < ?v1 )",
                                     sq.prologue),)
    assert g.stateful_filters == ("(?v2 < ?v1 )",)
    assert g.local_filters == (Constraint(Compare(">", Variable("v2"), num("3")), "(?v2 > 3)",
                                          sq.prologue),)

    rq = parse_query(f"PREFIX : <{EX}> REGISTER ISTREAM :out AS SELECT ?x "
                     "FROM NAMED :S WIN [LND 0] AS :w "
                     "EVENT ON :w { ?x :v ?v FILTER (?v > 2) FILTER regex(str(?x), 'a') } AS E "
                     "WHERE { MATCH { E } }")
    (bep,) = rq.matches[0].expr.beps()
    assert bep.filters is not None
    assert [c.expr for c in bep.filters] == [
        Compare(">", Variable("v"), num("2")),
        FunctionCall("REGEX", (FunctionCall("STR", (Variable("x"),)), Literal("a")))]
    assert [c.text for c in bep.filters] == ["(?v > 2)", "regex(str(?x), 'a')"]
    assert group_filters(bep.pattern, bep.prologue) == bep.filters


# ---------------------------------------------------------------- to_sparql, against pyoxigraph

# Expressions as (text, precedence): 1 ||, 2 &&, 3 comparisons, 4 + -, 5 * /, 6 unary, 7 primary
ATOMS = ["?a", "?b", "?c", "0", "7", "9223372036854775807", "2.50", ".5", "1e1", "1.5E-3",
         '"abc"', '"a\\"b\\\\c\\nd"', "'é\\t'", '"x"@en', '"7"^^xsd:int', '"+3"^^xsd:integer',
         '"1.0"^^<http://www.w3.org/2001/XMLSchema#decimal>', '"""lo"ng"""', '"\\u00e9"',
         ":i", "<http://example.org/j>", "true", "false", "xsd:integer"]


def _wrap(e: tuple[str, int], at_least: int) -> str:
    return e[0] if e[1] >= at_least else f"({e[0]})"


@st.composite
def expressions(draw, depth: int = 0) -> tuple[str, int]:
    kinds = ["or", "and", "cmp", "add", "mul", "unary", "in", "call", "bound", "exists",
             "paren", "signed"]
    kind = "atom" if depth > 3 else draw(st.sampled_from(kinds + ["atom"] * (2 if depth else 0)))
    if kind == "atom":
        return draw(st.sampled_from(ATOMS)), 7
    sub = expressions(depth + 1)
    if kind in ("or", "and", "add", "mul"):
        level, op = {"or": (1, "||"), "and": (2, "&&"), "add": (4, draw(st.sampled_from("+-"))),
                     "mul": (5, draw(st.sampled_from("*/")))}[kind]
        # left-associative: the right operand binds tighter
        return f"{_wrap(draw(sub), level)} {op} {_wrap(draw(sub), level + 1)}", level
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "!=", "<", ">", "<=", ">="]))
        return f"{_wrap(draw(sub), 4)} {op} {_wrap(draw(sub), 4)}", 3
    if kind == "unary":
        return f"{draw(st.sampled_from('!-+'))}{_wrap(draw(sub), 7)}", 6
    if kind == "in":
        items = ", ".join(e for e, _ in draw(st.lists(sub, max_size=3)))
        return f"{_wrap(draw(sub), 4)} {draw(st.sampled_from(['IN', 'NOT IN']))} ({items})", 3
    if kind == "call":
        name, n = draw(st.sampled_from([("STR", 1), ("STRLEN", 1), ("ABS", 1), ("CONCAT", 2),
                                        ("IF", 3), ("COALESCE", 2), ("REGEX", 2), ("DATATYPE", 1),
                                        ("xsd:integer", 1), ("xsd:double", 1), ("sameTerm", 2),
                                        ("isNUMERIC", 1), ("LANG", 1)]))
        return f"{name}({', '.join(draw(sub)[0] for _ in range(n))})", 7
    if kind == "bound":
        return f"BOUND(?{draw(st.sampled_from('abcd'))})", 7
    if kind == "exists":
        return f"{draw(st.sampled_from(['', 'NOT ']))}EXISTS {{ ?a :p ?x }}", 7
    if kind == "signed":  # an additive operand written as a signed number
        return f"{_wrap(draw(sub), 4)} {draw(st.sampled_from(['-3', '+2.5', '-1e0']))} * 2", 4
    return f"({draw(sub)[0]})", 7


VALUES = ["1", "-7", "2.5", "1e0", '"abc"', '"x"@en', ":i", '"7"^^xsd:int', "true", "UNDEF"]
_STORE = ox.Store()
_STORE.add(ox.Quad(ox.NamedNode(EX + "i"), ox.NamedNode(EX + "p"), ox.Literal("1"),
                   ox.DefaultGraph()))


def _values(text: str, row: tuple[str, ...]) -> list[str | None]:
    """pyoxigraph's value of the expression for the row (None: an error)."""
    q = (f"{PRO}SELECT ?r WHERE {{ VALUES (?a ?b ?c) {{ ({' '.join(row)}) }} "
         f"BIND (({text}) AS ?r) }}")
    res = _STORE.query(q)
    assert isinstance(res, ox.QuerySolutions)
    return [None if s["r"] is None else str(s["r"]) for s in res]


@settings(max_examples=300, deadline=None)
@given(e=expressions(), rows=st.lists(st.tuples(*[st.sampled_from(VALUES)] * 3), min_size=1,
                                      max_size=3))
def test_to_sparql_round_trip(e, rows):
    text = e[0]
    tree = parse_expression(text, PRO)
    again = tree.to_sparql()
    assert parse_expression(again, PRO) == tree, (text, again)
    for row in rows:
        assert _values(again, row) == _values(text, row), (text, again, row)
