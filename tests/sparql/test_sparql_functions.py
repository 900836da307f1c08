"""Function calls inside RSP queries: pyoxigraph's own built-ins (the XSD casts) reach it
untouched; a function or aggregate no one implements is refused at registration, located."""

from __future__ import annotations

import json

import pytest

from rsep import Engine, QueryError
from rsep.cli.main import main
from rsep.lang import parse_query
from rsep.lang.common import pyoxigraph_implements
from rsep.testing.snippets import EX, ev, run

XSD = "http://www.w3.org/2001/XMLSchema#"
S = EX + "s"
READINGS = [ev(S, 1, ':a :v "91.5" .'), ev(S, 2, ':b :v "12" .')]
PROLOGUE = f"PREFIX : <{EX}> PREFIX xsd: <{XSD}>\n"


def dbl(v: str) -> str:
    return f'"{v}"^^<{XSD}double>'


def rows(outputs: list[dict]) -> list[tuple]:
    return sorted((o["time"], tuple(sorted(o["bindings"].items()))) for o in outputs)


@pytest.mark.parametrize("iri", ["string", "boolean", "decimal", "integer", "double", "float", "date",
                                 "time", "dateTime", "duration", "dayTimeDuration",
                                 "yearMonthDuration", "gYear", "gYearMonth", "gMonth", "gMonthDay",
                                 "gDay"])
def test_xsd_constructors_are_pyoxigraphs_own(iri):
    assert pyoxigraph_implements(XSD + iri)


@pytest.mark.parametrize("iri", [XSD + "long", XSD + "anyURI", "http://example.org/ext#score",
                                 "http://larkc.eu/csparql/sparql/jena/ext#timestamp"])
def test_other_iris_are_not(iri):
    assert not pyoxigraph_implements(iri)


def test_rspql_casts_in_select_and_filter():
    q = PROLOGUE + """SELECT ?x (xsd:double(?v) AS ?d) FROM NAMED WINDOW :w ON :s [RANGE 10 STEP 1]
WHERE { WINDOW :w { ?x :v ?v FILTER (xsd:decimal(?v) >= 90) } }"""
    a = (("d", dbl("91.5")), ("x", f"<{EX}a>"))
    assert rows(run(q, READINGS, until=3)) == [(1, a), (2, a), (3, a)]


def test_csparql_cast_in_select():
    q = PROLOGUE + "SELECT ?x (xsd:double(?v) AS ?d) FROM STREAM :s [RANGE 10 STEP 1] WHERE { ?x :v ?v }"
    a, b = (("d", dbl("91.5")), ("x", f"<{EX}a>")), (("d", dbl("12")), ("x", f"<{EX}b>"))
    # [c-10, c): the reading at 1 is in the windows closing at 2 and 3, the one at 2 at 3
    assert rows(run(q, READINGS, until=3)) == [(2, a), (3, b), (3, a)]


def test_cqels_cast_in_filter_and_bind():
    q = PROLOGUE + """SELECT ?x ?i WHERE { STREAM :s [RANGE 10] { ?x :v ?v }
FILTER (xsd:double(?v) < 50) BIND (xsd:integer(?v) AS ?i) }"""
    assert rows(run(q, READINGS)) == [(2, (("i", f'"12"^^<{XSD}integer>'), ("x", f"<{EX}b>")))]


def test_csparql_timestamp_stays_rseps_own():
    q = PROLOGUE + """PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>
SELECT ?x ?t FROM STREAM :s [RANGE 10 STEP 1] WHERE { ?x :v ?v BIND (f:timestamp(?x, :v, ?v) AS ?t) }"""
    got = rows(run(q, READINGS[:1], until=2))
    assert got == [(2, (("t", f'"1"^^<{XSD}integer>'), ("x", f"<{EX}a>")))]


def test_unknown_function_refused_at_registration_located():
    q = PROLOGUE + """PREFIX ext: <http://example.org/ext#>
SELECT ?x ?d WHERE { STREAM :s [RANGE 10] { ?x :v ?v }
  BIND (ext:score(?v) AS ?d) }"""
    parse_query(q)  # parsed (explain and compare read it) ...
    with pytest.raises(QueryError) as e:  # ... but never run
        Engine().register(q, source="q.rq")
    assert str(e.value) == ("q.rq:4:9: unknown function <http://example.org/ext#score>: "
                            "neither pyoxigraph nor rsep implements it")
    assert (e.value.line, e.value.column) == (4, 9)


def test_unknown_aggregate_refused_at_registration_located():
    q = PROLOGUE + """SELECT ?x (<http://example.org/agg#median>(DISTINCT ?v) AS ?m)
FROM STREAM :s [RANGE 10 STEP 1] WHERE { ?x :v ?v } GROUP BY ?x"""
    assert parse_query(q).unknown_aggregates == ("http://example.org/agg#median",)
    with pytest.raises(QueryError, match=r"^q\.rq:2:12: unknown aggregate <http://example\.org/agg#median>"):
        Engine().register(q, source="q.rq")


def test_aggregate_query_keeps_its_grouping_checks():
    q = PROLOGUE + """SELECT ?x ?v (<http://example.org/agg#median>(DISTINCT ?v) AS ?m)
FROM STREAM :s [RANGE 10 STEP 1] WHERE { ?x :v ?v } GROUP BY ?x"""
    with pytest.raises(QueryError, match=r"^2:11: invalid query: \?v is neither grouped"):
        parse_query(q)


def test_builtin_with_wrong_arity_located():
    q = PROLOGUE + "SELECT ?d WHERE { STREAM :s [RANGE 10] { ?x :v ?v }\n BIND (xsd:double(?v, 1) AS ?d) }"
    with pytest.raises(QueryError, match=r"^3:8: invalid query: .*requires between 1 and 1 arguments"):
        parse_query(q)


def test_cli_cast_and_refusal(tmp_path, capsys):
    s = tmp_path / "s.trig"
    s.write_text(f"@prefix : <{EX}> . @prefix prov: <http://www.w3.org/ns/prov#> .\n"
                 ':g1 prov:generatedAtTime 1 . :g1 { :a :v "91.5" . }\n'
                 ':g2 prov:generatedAtTime 2 . :g2 { :b :v "12" . }\n')
    q = tmp_path / "q.rq"
    q.write_text(PROLOGUE + """SELECT ?x (xsd:double(?v) AS ?d)
FROM NAMED WINDOW :w ON :s [RANGE 10 STEP 1]
WHERE { WINDOW :w { ?x :v ?v FILTER (xsd:decimal(?v) >= 90) } }""")
    assert main(["run", str(q), "--stream", f"{S}={s}", "--until", "2"]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    a = {"x": f"<{EX}a>", "d": dbl("91.5")}
    assert out == [{"time": 1, "bindings": a}, {"time": 2, "bindings": a}]
    q.write_text(PROLOGUE + "SELECT ?x WHERE { STREAM :s [RANGE 10] { ?x :v ?v FILTER (<http://e/f>(?v)) } }")
    assert main(["run", str(q), "--stream", f"{S}={s}"]) == 1
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.strip() == f"rsep: {q}:2:59: unknown function <http://e/f>: " \
                                                "neither pyoxigraph nor rsep implements it"
