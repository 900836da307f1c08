"""SPASEQ syntax (002 Sec. 4.2, Appendix A, the authors' test queries) and its errors."""

from __future__ import annotations

import pytest

from rsep import Engine, QueryError, parse_query
from rsep.algebra.spaseq import AtomKind, SpaseqQuery, Strategy
from rsep.cli.main import build_parser
from rsep.lang import DIALECTS
from rsep.testing.snippets import EX, ROOT

Q1 = (ROOT / "tests" / "data" / "spaseq" / "query1.rq").read_text()

# The authors' published test query (spaseq tests-jar/externalknowledgebase/queryKB.q):
# lower-case prefix, PARTITION BY, SEQ before the braces, FILTER without a dot.
AUTHORS = """ prefix pred: <http://example/>
  SELECT ?company ?p1 ?p2 ?p3 ?name ?loc
   WITHIN 10 SECONDS
  Partition by (?company)
  FROM STREAM S1 <http://example.org/main>
  WHERE
   SEQ (A, B, C)
   {
    DEFINE GPM A ON S1 { ?company pred:price ?p1. ?company pred:volume ?vol1. }
    DEFINE GPM B ON S1 { ?company pred:price ?p2. ?company pred:volume ?vol2.
                         Filter (?p2 < ?p1 ). }
    DEFINE GPM C ON S1 { ?company pred:price ?p3. ?company pred:volume ?vol3.
      GRAPH <http://www.example.com/kb> { ?company pred:name ?name. ?company pred:location ?loc. }
      Filter (?p3 < ?p2). }
   }"""


def q(seq: str, defs: dict[str, str] | None = None, head: str = "SELECT *") -> str:
    defs = defs or {n: "{ ?x :p ?" + n.lower() + " }" for n in "ABCDEFGHI" if n in seq}
    body = "\n".join(f"DEFINE GPM {n} ON S1 {p}" for n, p in defs.items())
    return f"PREFIX : <{EX}>\n{head}\nFROM STREAM S1 <{EX}s1>\nWHERE {{\nSEQ ({seq})\n{body}\n}}"


def test_query1_and_the_seq_first_syntax_give_the_same_query():
    a = parse_query(Q1)
    moved = Q1.replace("WHERE {\n\n  SEQ (A; B+, C)\n", "WHERE SEQ (A; B+, C) {\n")
    b = parse_query(moved)
    assert isinstance(a, SpaseqQuery) and isinstance(b, SpaseqQuery)
    for x in (a, b):
        assert x.seq.render() == "A; B+, C"
        assert x.variables == ("house", "fr1", "fr2", "house2", "city", "oname")
        assert x.within is not None and x.within.amount == 30 * 60_000 and x.within.in_ms
        assert x.streams["S2"] == "http://smartgrid.org/weather"
        assert x.background == ["http://smartgrid.org/db"]
    c = a.gpms["C"]
    # C's FILTER reads ?fr1 from A: it is applied to the join, not to the event alone.
    assert c.stateful_filters == ("(?fr2 < ?fr1)",) and "FILTER" not in c.local_pattern
    assert a.gpms["B"].stateful_filters == ()
    assert a.seq.atoms[1].kind is AtomKind.KLEENE
    assert a.seq.atoms[1].local_vars == {"wthr", "lt", "sp"}  # ?l is A's


def test_authors_test_query_syntax():
    x = parse_query(AUTHORS)
    assert x.seq.render() == "A, B, C" and x.partition_by == ("company",)
    assert x.within is not None and x.within.amount == 10_000
    assert x.gpms["B"].stateful_filters == ("(?p2 < ?p1 )",)


def test_every_sequence_operator_parses():
    x = parse_query(q("A; B+: C, (D & E | F), G?, A, H!, I"))
    assert x.seq.render() == "A; B+: C, (D & E | F), G?, A, H!, I"
    assert [a.kind for a in x.seq.atoms] == [
        AtomKind.BOP, AtomKind.KLEENE, AtomKind.BOP, AtomKind.BOP, AtomKind.OPTIONAL,
        AtomKind.BOP, AtomKind.NEGATION, AtomKind.BOP]
    assert x.seq.ops == (Strategy.NEXT, Strategy.ANY, Strategy.STRICT, Strategy.STRICT,
                         Strategy.STRICT, Strategy.STRICT, Strategy.STRICT)
    # '&' binds tighter than '|'
    assert type(x.seq.atoms[3].body).__name__ == "Or"
    assert [type(i).__name__ for i in x.seq.atoms[3].body.items] == ["And", "Leaf"]


@pytest.mark.parametrize("within, amount, in_ms", [
    ("WITHIN 30 MINUTES", 1_800_000, True), ("WITHIN 10 seconds", 10_000, True),
    ("WITHIN 2 HOURS", 7_200_000, True), ("WITHIN 50", 50, False), ("", None, None)])
def test_within_units(within, amount, in_ms):
    x = parse_query(q("A", head=f"SELECT * {within}"))
    if amount is None:
        assert x.within is None
    else:
        assert (x.within.amount, x.within.in_ms) == (amount, in_ms)


def test_spaseq_dialect_is_detected_and_selectable():
    assert isinstance(parse_query(Q1), SpaseqQuery)
    assert isinstance(parse_query(Q1, "spaseq"), SpaseqQuery)
    assert "spaseq" in DIALECTS
    args = build_parser().parse_args(["run", "q.rq", "--dialect", "spaseq"])
    assert args.dialect == "spaseq"


@pytest.mark.parametrize("text, line, column, message", [
    (q("A, B", {"A": "{ ?x :p ?a }"}), 5, 9, "GPM B is used in SEQ but not defined (defined: A)"),
    (q("A").replace("ON S1", "ON S4"), 6, 17,
     "GPM A is defined ON S4, but no FROM STREAM declares S4 (declared: S1)"),
    (q("A, B", {"A": "{ ?x :p ?a FILTER(?b > 1) }", "B": "{ ?x :p ?b }"}), 6, 38,
     "?b is used in a FILTER of GPM A, but neither A nor any GPM before it binds it "
     "(GPM B binds it, but does not come before A)"),
    (q("A, B", {"A": "{ ?x :p ?a }", "B": "{ ?x :p ?b FILTER(?c > ?a) }"}), 7, 38,
     "?c is used in a FILTER of GPM B, but neither B nor any GPM before it binds it"),
    (q("A, B,"), 5, 10, "the sequence ends with ',': an operator needs an element after it"),
    (q("A; (B, C)"), 5, 9, "a sequence cannot be nested in parentheses"),
    (q("(A & B)+"), 5, 13, "'+' applies to one GPM (Definition 4: Atom ::= GPM '+')"),
    (q("(A+ & B)"), 5, 8, "'+' cannot be used inside '&' or '|'"),
    (q("A, B!"), 5, 9, "a negated GPM must stand between two elements of the sequence"),
    (q("A, B!, C?"), 5, 9, "a negated GPM cannot be next to an optional or negated one"),
    (q("A?"), 5, 6, "every element of the sequence is optional"),
    (q("A", {"A": "{ ?x :p ?a }", "B": "{ ?x :p ?b }"}), 7, 12, "GPM B is defined but not used in SEQ"),
    (q("A", head="SELECT ?x ?zz"), 2, 11, "?zz is selected but no GPM binds it"),
    (q("A", {"A": "{ GRAPH ?g { ?x :p ?a } }"}), 6, 28, "GRAPH needs the IRI of a background graph"),
    (q("A, B", {"A": "{ ?x :p ?a }", "B": "{ ?x :p ?b OPTIONAL { ?x :q ?c FILTER(?c > ?a) } }"}),
     7, 51, "a FILTER using variables of earlier GPMs must stand at the top level"),
    (q("A", head="SELECT * WITHIN 0"), 2, 17, "the WITHIN window must be positive"),
    (q("A").replace("?x :p ?a", "?x :p ?a ?b"), 6, 31, "syntax error: unexpected '?b'"),
    (q("A", {"A": "{ ?x :p ?a . BIND(1 AS ?a) }"}), 6, 48, "GPM A: invalid pattern"),
    (q("A, A").replace("DEFINE GPM A ON S1 { ?x :p ?a }",
                       "DEFINE GPM A ON S1 { ?x :p ?a }\nDEFINE GPM A ON S1 { ?x :p ?a }"), 7, 12,
     "GPM A is defined twice"),
])
def test_errors_are_located(text, line, column, message):
    with pytest.raises(QueryError) as exc:
        parse_query(text, source="q.rq")
    e = exc.value
    assert message in e.message, e.message
    assert (e.line, e.column) == (line, column), str(e)
    assert str(e).startswith(f"q.rq:{line}:{column}: ")


def test_query4_as_printed_is_rejected_for_its_trailing_comma():
    text = q("A, B, C,", {n: "{ ?company :price ?p" + n + " }" for n in "ABC"})
    with pytest.raises(QueryError, match="the sequence ends with ','"):
        parse_query(text)


def test_missing_background_graph_is_refused_at_registration():
    with pytest.raises(QueryError, match="<http://smartgrid.org/db> names no graph supplied"):
        Engine().register(Q1)


def test_kleene_partition_by_variables_are_joined_across_iterations():
    x = parse_query(q("A+", {"A": "{ ?c :p ?a }"}, head="SELECT * PARTITION BY (?c)"))
    assert x.seq.atoms[0].local_vars == {"a"}
    with pytest.raises(QueryError, match=r"PARTITION BY \?z: GPM A does not bind \?z"):
        parse_query(q("A", head="SELECT * PARTITION BY (?z)"))


@pytest.mark.parametrize("path", [":p+", ":p*", ":p?", "(:p|:q)+", "^:p/:q"])
def test_property_paths_in_gpms(path):
    x = parse_query(q("A; B?", {"A": f"{{ ?x {path} ?a }}", "B": "{ ?x :p ?b }"}))
    assert path in x.gpms["A"].pattern and x.seq.atoms[1].kind is AtomKind.OPTIONAL
