"""RSP-QL continuous semantics: report policy, R2S operators, aggregates, several windows."""

from __future__ import annotations

import pytest

from rsep import QueryError
from rsep.testing.snippets import EX, ev, run, table

S = EX + "S"


def q(r2s: str, window: str = "[RANGE 3 STEP 1]", body: str = "?x :p ?y") -> str:
    return f"""PREFIX : <{EX}>
REGISTER {r2s} :out AS
SELECT ?x ?y FROM NAMED WINDOW :w ON :S {window}
WHERE {{ WINDOW :w {{ {body} }} }}"""


def test_rstream_every_tick(figure1):
    got = table(run(q("RSTREAM"), figure1, until=11))
    a1, a2, a3 = ({"x": f":a{i}", "y": f":b{i}"} for i in (1, 2, 3))
    assert got == [(2, a1), (3, a1), (4, a1), (4, a2), (5, a2), (6, a2),
                   (8, a3), (9, a3), (10, a3)]


def test_istream_outputs_only_new_answers(figure1):
    got = table(run(q("ISTREAM"), figure1, until=12))
    assert got == [(2, {"x": ":a1", "y": ":b1"}), (4, {"x": ":a2", "y": ":b2"}),
                   (8, {"x": ":a3", "y": ":b3"})]


def test_dstream_outputs_what_left(figure1):
    got = table(run(q("DSTREAM"), figure1, until=12))
    assert got == [(5, "delete", {"x": ":a1", "y": ":b1"}), (7, "delete", {"x": ":a2", "y": ":b2"}),
                   (11, "delete", {"x": ":a3", "y": ":b3"})]


def test_without_until_the_run_ends_with_the_input(figure1):
    got = table(run(q("DSTREAM"), figure1))
    assert [t for t, *_ in got] == [5, 7]


def test_count_in_window_uses_set_union_of_graphs(figure1):
    query = f"""PREFIX : <{EX}>
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :S [RANGE 4 STEP 2]
WHERE {{ WINDOW :w {{ ?s ?p ?o }} }}"""
    got = [(o["time"], o["bindings"]["n"].split('"')[1]) for o in run(query, figure1)]
    # at 8: G3 and G4 both hold :b2 :q :c2, counted once (the snapshot is a graph)
    assert got == [(2, "1"), (4, "2"), (6, "3"), (8, "3"), (10, "3")]


def test_group_by_having_order_limit(figure1):
    query = f"""PREFIX : <{EX}>
SELECT ?p (COUNT(?s) AS ?n) FROM NAMED WINDOW :w ON :S [RANGE 100 STEP 10]
WHERE {{ WINDOW :w {{ ?s ?p ?o }} }} GROUP BY ?p HAVING (COUNT(?s) > 0) ORDER BY DESC(?n) LIMIT 1"""
    # p: a1, a2, a3; q: b1-c1 and b2-c2 (each twice in the stream, once in the snapshot)
    assert table(run(query, figure1)) == [(10, {"n": "3", "p": ":p"})]


def test_two_windows_and_a_background_graph(figure1):
    query = f"""PREFIX : <{EX}>
SELECT ?x ?z ?label
FROM <http://bg>
FROM NAMED WINDOW :long ON :S [RANGE 10 STEP 2]
FROM NAMED WINDOW :short ON :S [RANGE 2 STEP 2]
WHERE {{ WINDOW :long {{ ?x :p ?y }} WINDOW :short {{ ?y :q ?z }} ?x :label ?label }}"""
    got = table(run(query, figure1, graphs={"http://bg": ':a1 :label "one" . :a2 :label "two" .'}))
    assert got == [
        (6, {"label": '"one"', "x": ":a1", "z": ":c1"}),
        (6, {"label": '"two"', "x": ":a2", "z": ":c2"}),
        (8, {"label": '"two"', "x": ":a2", "z": ":c2"}),
        (10, {"label": '"one"', "x": ":a1", "z": ":c1"}),
    ]


def test_count_based_window_reports_on_arrival(figure1):
    got = table(run(q("RSTREAM", "[ROWS 1]"), figure1))
    assert got == [(2, {"x": ":a1", "y": ":b1"}), (4, {"x": ":a2", "y": ":b2"}),
                   (8, {"x": ":a3", "y": ":b3"})]


def test_landmark_window_keeps_everything_from_t0(figure1):
    got = table(run(q("ISTREAM", "[LANDMARK 3]"), figure1))
    assert got == [(4, {"x": ":a2", "y": ":b2"}), (8, {"x": ":a3", "y": ":b3"})]


def test_from_now_to_now_offset_window(figure1):
    # [FROM NOW-6 TO NOW-2 STEP 2] at t holds (t-6, t-2]
    got = table(run(q("RSTREAM", "[FROM NOW-6 TO NOW-2 STEP 2]"), figure1))
    assert got == [(4, {"x": ":a1", "y": ":b1"}), (6, {"x": ":a1", "y": ":b1"}),
                   (6, {"x": ":a2", "y": ":b2"}), (8, {"x": ":a2", "y": ":b2"}),
                   (10, {"x": ":a3", "y": ":b3"})]


def test_construct_and_ask(figure1):
    query = f"""PREFIX : <{EX}>
CONSTRUCT {{ ?y :seenWith ?x }} FROM NAMED WINDOW :w ON :S [RANGE 2 STEP 2]
WHERE {{ WINDOW :w {{ ?x :p ?y }} }}"""
    out = run(query, figure1)
    assert [(o["time"], o["triple"]) for o in out] == [
        (2, f"<{EX}b1> <{EX}seenWith> <{EX}a1>"), (4, f"<{EX}b2> <{EX}seenWith> <{EX}a2>"),
        (8, f"<{EX}b3> <{EX}seenWith> <{EX}a3>")]
    ask = f"PREFIX : <{EX}> ASK FROM NAMED WINDOW :w ON :S [RANGE 2 STEP 2] WHERE {{ WINDOW :w {{ ?x :q ?y }} }}"
    assert [(o["time"], o["boolean"]) for o in run(ask, figure1)] == [
        (2, False), (4, False), (6, True), (8, True), (10, True)]


def test_unknown_window_and_unsupplied_graph_are_rejected(figure1):
    with pytest.raises(QueryError, match=r"WINDOW <http://example.org/nope>: no window"):
        run(f"PREFIX : <{EX}> SELECT * FROM NAMED WINDOW :w ON :S [RANGE 2] WHERE {{ WINDOW :nope {{ ?s ?p ?o }} }}", figure1)
    with pytest.raises(QueryError, match="names no graph supplied"):
        run(f"PREFIX : <{EX}> SELECT * FROM <http://missing> FROM NAMED WINDOW :w ON :S [RANGE 2] WHERE {{ WINDOW :w {{ ?s ?p ?o }} }}", figure1)


def test_service_is_refused_at_registration(figure1):
    with pytest.raises(QueryError, match="SERVICE is refused") as e:
        run(f"PREFIX : <{EX}> SELECT * FROM NAMED WINDOW :w ON :S [RANGE 2]\nWHERE {{ WINDOW :w {{ ?s ?p ?o }}\n SERVICE <http://example.org/sparql> {{ ?s ?p ?o }} }}", figure1)
    assert e.value.line == 3


def test_result_limit_stops_a_runaway_query(figure1):
    from rsep import Engine, EngineError, Limits

    eng = Engine(limits=Limits(max_results=3))
    eng.register(f"PREFIX : <{EX}> SELECT * FROM NAMED WINDOW :w ON :S [RANGE 100 STEP 1] WHERE {{ WINDOW :w {{ ?a ?b ?c . ?d ?e ?f }} }}")
    with pytest.raises(EngineError, match="more than 3 results"):
        list(eng.run(figure1))


def test_interval_events_in_windows():
    s = EX + "S"
    events = [ev(s, (1, 5), ":a :p :b ."), ev(s, (6, 7), ":c :p :d .")]
    got = table(run(q("RSTREAM", "[RANGE 2 STEP 1]"), events))
    # [1,5] is known at 5 and meets (3,5], (4,6]; [6,7] meets (5,7]
    assert got == [(5, {"x": ":a", "y": ":b"}), (6, {"x": ":a", "y": ":b"}), (7, {"x": ":c", "y": ":d"})]


def test_unknown_extension_function_is_refused_at_registration(figure1):
    query = f"""PREFIX : <{EX}> PREFIX ext: <http://example.org/ext#>
SELECT ?x ?v FROM NAMED WINDOW :w ON :S [RANGE 2 STEP 2]
WHERE {{ WINDOW :w {{ ?x :p ?y }} BIND (ext:score(?y) AS ?v) }}"""
    # no one implements ext:score: refused where it is called, never a silently unbound ?v
    with pytest.raises(QueryError, match=r"^q\.rq:3:38: unknown function <http://example\.org/ext#score>"):
        run(query, figure1, source="q.rq")
