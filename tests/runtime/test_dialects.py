"""C-SPARQL and CQELS as their engines run them: 001's coupon scenario and where they differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsep import QueryError, parse_query
from rsep.stream.files import StreamFile
from rsep.testing.snippets import EX, ROOT, ev, run, table

COUPON = ROOT / "examples" / "coupon"
PRODUCTS = ":mbt :g_classify 1 . :rayban :g_classify 0 ."
B = {"percent": "25", "product": ":rayban", "shop": ":b"}


def coupon_events():
    events = []
    for name, iri in (("coupons", "http://coupons"), ("locations", "http://locations")):
        events += [e for e in StreamFile(COUPON / f"{name}.trig", iri)]
    return sorted(events, key=lambda e: e.time)


def coupon_query(name: str, **replace: str) -> str:
    text = (COUPON / name).read_text()
    for a, b in replace.items():
        text = text.replace(a, b)
    return text


def test_q2_cqels_reports_once_at_18():
    out = run(coupon_query("q2-cqels.rq"), coupon_events(), graphs={"http://products": PRODUCTS},
              until=60, time_unit_ms=60_000)
    assert table(out) == [(18, B)]


def test_q1_csparql_reports_at_every_close_while_both_windows_hold_the_events():
    out = run(coupon_query("q1-csparql.rq"), coupon_events(), graphs={"http://products": PRODUCTS},
              until=60, time_unit_ms=60_000)
    # windows are [c-30, c) and [c-5, c): the location at 18 is inside for c = 19..23
    assert table(out) == [(t, B) for t in range(19, 24)]


def test_step_greater_than_one_csparql_sees_the_answer_later():
    q1 = coupon_query("q1-csparql.rq", **{"[RANGE 30m]": "[RANGE 30m STEP 5m]",
                                          "[RANGE 5m]": "[RANGE 5m STEP 5m]"})
    out = run(q1, coupon_events(), graphs={"http://products": PRODUCTS}, until=60, time_unit_ms=60_000)
    assert table(out) == [(20, B)]


def test_background_triple_matching_a_stream_pattern():
    # Claire's position is also in the background: C-SPARQL merges it with the stream
    # windows and answers as soon as the coupon is in; CQELS' stream pattern never sees it.
    graphs = {"http://products": PRODUCTS + " :claire :isNear :b ."}
    coupons_only = [e for e in coupon_events() if e.stream == "http://coupons"]
    cs = run(coupon_query("q1-csparql.rq"), coupons_only, graphs=graphs, until=60, time_unit_ms=60_000)
    cq = run(coupon_query("q2-cqels.rq"), coupons_only, graphs=graphs, until=60, time_unit_ms=60_000)
    assert table(cs) == [(t, B) for t in range(16, 46)]
    assert cq == []


def test_units_need_a_time_unit_for_integer_streams():
    from rsep import EngineError

    with pytest.raises(EngineError, match="30m has a unit, but the stream uses abstract integer"):
        run(coupon_query("q2-cqels.rq"), coupon_events(), graphs={"http://products": PRODUCTS})


def test_csparql_timestamp_function():
    s = EX + "S"
    events = [ev(s, 2, ":a1 :p :b1 ."), ev(s, 6, ":b1 :q :c1 ."),
              ev(s, 12, ":b4 :q :c4 ."), ev(s, 14, ":a4 :p :b4 .")]
    query = f"""REGISTER QUERY seq AS
PREFIX : <{EX}>
SELECT ?x ?z ?t1 ?t2 FROM STREAM <{s}> [RANGE 20 STEP 4]
WHERE {{ ?x :p ?y . ?y :q ?z .
  BIND (timestamp(?x, :p, ?y) AS ?t1) BIND (timestamp(?y, :q, ?z) AS ?t2)
  FILTER (timestamp(?x, :p, ?y) < timestamp(?y, :q, ?z)) }}"""
    got = table(run(query, events, until=16))
    # c4 arrived before a4: no sequence; b1/c1 after a1: every close from 8 on
    assert got == [(t, {"t1": "2", "t2": "6", "x": ":a1", "z": ":c1"}) for t in (8, 12, 16)]


def test_csparql_prefixed_timestamp_and_tumbling():
    q = parse_query("""REGISTER QUERY q AS PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>
SELECT ?s FROM STREAM <http://s> [RANGE 10 TUMBLING] WHERE { ?s ?p ?o FILTER(f:timestamp(?s,?p,?o) > 3) }""")
    assert q.dialect == "csparql" and q.uses_timestamp
    w = q.dataset.windows[0]
    assert (w.spec.range.amount, w.spec.step.amount, w.in_default) == (10, 10, True)


TS = "http://larkc.eu/csparql/sparql/jena/ext#timestamp"


@pytest.mark.parametrize(("select", "where", "calls"), [
    ("(timestamp(?s, :p, ?o) AS ?t)", "", True),
    ("", "FILTER(f:timestamp(?s, :p, ?o) > 3)", True),
    ("", "BIND(f:timestamp(?s, :p, ?o) AS ?t)", True),
    ("", f"FILTER EXISTS {{ ?s :q ?x FILTER(<{TS}>(?s, :q, ?x) > 1) }}", True),
    ("", f'FILTER(?o != "{TS}")', False),
    ("", f"# <{TS}>(?s, :p, ?o)\n", False),
])
def test_timestamp_calls_are_read_from_the_tree(select: str, where: str, calls: bool) -> None:
    """Whether a query calls timestamp() (the runtime then keeps every triple's time, and
    the native path refuses it) is read from the call nodes of its tree, not from its text,
    which can name the IRI in a string or a comment where nothing calls it."""
    q = parse_query("REGISTER QUERY q AS PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>\n"
                    f"PREFIX : <{EX}>\nSELECT ?s {select} FROM STREAM <http://s> [RANGE 10 TUMBLING]\n"
                    f"WHERE {{ ?s :p ?o {where} }}")
    assert q.pattern is not None and q.calls_timestamp is calls
    assert q.uses_timestamp  # (the dialect's flag, read from the text, says yes to all)


def test_cqels_triples_now_and_all_windows():
    s = EX + "S"
    events = [ev(s, 1, ":a :p 1 . :a :p 2 ."), ev(s, 2, ":a :p 3 ."), ev(s, 3, ":b :p 4 .")]
    base = f"PREFIX : <{EX}> SELECT ?o WHERE {{ STREAM <{s}> %s {{ ?s :p ?o }} }}"
    assert [(t, b["o"]) for t, b in table(run(base % "[TRIPLES 2]", events))] == [
        (1, "1"), (1, "2"), (2, "3"), (3, "4")]
    assert [(t, b["o"]) for t, b in table(run(base % "[NOW]", events))] == [
        (1, "1"), (1, "2"), (2, "3"), (3, "4")]
    assert len(run(base % "[ALL]", events)) == 4


@pytest.mark.parametrize("text, dialect", [
    ("REGISTER QUERY q AS SELECT * FROM STREAM <http://s> [RANGE 5 STEP 1] WHERE { ?s ?p ?o }", "csparql"),
    ("SELECT * WHERE { STREAM <http://s> [RANGE 5] { ?s ?p ?o } }", "cqels"),
    ("REGISTER ISTREAM <http://q> AS SELECT * FROM NAMED WINDOW <http://w> ON <http://s> [RANGE 5] WHERE { WINDOW <http://w> { ?s ?p ?o } }", "rspql"),
])
def test_dialect_is_detected(text, dialect):
    assert parse_query(text).dialect == dialect


def test_mixed_dialects_are_rejected_with_both_constructs_named():
    with pytest.raises(QueryError, match=r"mixes dialects: FROM STREAM \(line 1\) is C-SPARQL, "
                                         r"STREAM graph pattern in WHERE \(line 2\) is CQELS"):
        parse_query("SELECT * FROM STREAM <http://s> [RANGE 5 STEP 1]\nWHERE { STREAM <http://s> [NOW] { ?s ?p ?o } }")
    with pytest.raises(QueryError, match="is C-SPARQL syntax, but the query is read as CQELS"):
        parse_query("SELECT * FROM STREAM <http://s> [RANGE 5 STEP 1] WHERE { ?s ?p ?o }", "cqels")


@pytest.mark.parametrize("dialect, text, line, col, words", [
    ("rspql", "REGISTER RSTREAM <q> AS\nSELECT * FROM NAMED WINDOW <w> ON <s> [RANGE]\nWHERE { WINDOW <w> { ?s ?p ?o } }",
     2, 45, "unexpected ']'"),
    # a query that ends inside a group: located at the group's '{' (issue 53)
    ("csparql", "REGISTER QUERY q AS\nSELECT * FROM STREAM <s> [RANGE 5 STEP 1]\nWHERE { ?s ?p ?o", 3, 7,
     "unclosed '{': the query ends (line 3) before its '}'"),
    ("cqels", "SELECT ?s\nWHERE { STREAM <s> [RANGE 5s] { ?s ?p ?o . ?o } }", 2, 47, "unexpected '}'"),
])
def test_syntax_errors_are_located(dialect, text, line, col, words):
    with pytest.raises(QueryError) as e:
        parse_query(text, dialect)
    assert (e.value.line, e.value.column) == (line, col)
    assert words in e.value.message


def test_examples_in_docs_parse():
    for f in sorted((ROOT / "docs" / "examples").glob("*.rq")) + sorted(Path(COUPON).glob("*.rq")):
        parse_query(f.read_text(), source=str(f))


SPASEQ_Q = (f"PREFIX : <{EX}> SELECT ?x FROM STREAM S1 <{EX}s> WHERE {{ SEQ (A) "
            "DEFINE GPM A ON S1 { ?x :p ?y } }")
EPSPARQL_Q = f"PREFIX : <{EX}> SELECT ?x WHERE {{ {{ ?x :p ?y }} SEQ {{ ?x :q ?z }} }}"


@pytest.mark.parametrize("text", [SPASEQ_Q, EPSPARQL_Q])
@pytest.mark.parametrize("option", ["--r2s", "--report"])
def test_rsp_options_are_refused_for_event_queries(tmp_path, capsys, text, option):
    """R2S and report policies are RSP-QL's: an event query refuses them, never ignores them."""
    from rsep.cli.main import main

    q = tmp_path / "q.rq"
    q.write_text(text)
    s = tmp_path / "s.trig"
    s.write_text(f"<{EX}g> <http://www.w3.org/ns/prov#generatedAtTime> 1 . <{EX}g> {{ <{EX}a> <{EX}p> 1 }}\n")
    value = "istream" if option == "--r2s" else "on-arrival"
    assert main(["run", str(q), "--stream", f"{EX}s={s}", option, value]) == 2
    err = capsys.readouterr().err
    assert f"{option} / {option[2:]} applies to RSP-QL, C-SPARQL and CQELS queries" in err


def test_an_epsparql_graph_iri_is_fetched_only_with_allow_dereference():
    from rsep import Engine

    q = parse_query(f"PREFIX : <{EX}> SELECT ?x WHERE {{ {{ ?x :p ?y }} SEQ {{ ?x :q ?z "
                    f"GRAPH <{EX}kb> {{ ?x :in ?c }} }} }}", "epsparql")
    with pytest.raises(QueryError, match="graph IRIs are not dereferenced unless --allow-dereference"):
        Engine().register(q)


def test_compare_refuses_an_event_query_with_a_message(capsys):
    from rsep.cli.main import main

    code = main(["compare", str(ROOT / "docs" / "examples" / "spaseq.rq"), "--stream",
                 f"http://example.org/srbench={ROOT / 'examples' / 'coupon' / 'coupons.trig'}",
                 "--period", "10"])
    assert code == 2
    assert "rsep compare: rsep compare runs a query as C-SPARQL and as CQELS (001): it takes " \
           "RSP queries (RSP-QL, C-SPARQL, CQELS), not SPASEQ" in capsys.readouterr().err
