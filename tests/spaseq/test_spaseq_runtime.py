"""SPASEQ on the engine: output contract, DISTINCT, blank nodes, the live-run bound."""

from __future__ import annotations

import pytest

from rsep import Engine, parse_query
from rsep.spaseq.matches import SpaseqCutWarning
from rsep.spaseq.reference import ReferenceEvaluator
from rsep.testing.snippets import EX, ev

U1, U2 = EX + "u1", EX + "u2"


def text(seq: str, p1: str, p2: str, head: str = "SELECT *") -> str:
    return (f"PREFIX : <{EX}> {head} FROM STREAM S1 <{U1}> FROM STREAM S2 <{U2}> WHERE {{ "
            f"SEQ ({seq}) DEFINE GPM A ON S1 {p1} DEFINE GPM B ON S2 {p2} }}")


EX6 = [ev(U1, 10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."),
       ev(U1, 15, ":H2 :pow :Pw2 . :H2 :loc :L1 ."),
       ev(U2, 15, ":W1 :value :V11 . :W1 :loc :L2 ."),
       ev(U2, 20, ":W1 :value :V11 . :W1 :loc :L1 ."),
       ev(U2, 25, ":W2 :value :V12 . :W2 :loc :L1 .")]
P1 = "{ ?h :pow ?p . ?h :loc ?l }"
P2 = "{ ?w :value ?v . ?w :loc ?l }"


def run(query: str, events, **options) -> list:
    q = parse_query(query)
    q.options.update(options)
    eng = Engine()
    eng.register(q)
    return list(eng.run(sorted(events, key=lambda e: e.time)))


def test_select_distinct_keeps_one_line_per_time_and_bindings():
    plain = run(text("A: B", P1, P2, "SELECT ?l"), EX6)
    assert [(o.time, o.start) for o in plain] == [(20, 10), (20, 15), (25, 10), (25, 15)]
    distinct = run(text("A: B", P1, P2, "SELECT DISTINCT ?l"), EX6)
    assert [(o.time, o.bindings) for o in distinct] == [
        (20, {"l": f"<{EX}L1>"}), (25, {"l": f"<{EX}L1>"})]


def test_stateful_filter_on_blank_nodes():
    # Blank nodes are scoped to their event: B's ?o2 is never A's ?o, so != holds.
    events = [ev(U1, 1, ":s :p [ :k 1 ] ."), ev(U2, 2, ":s :q [ :k 1 ] .")]
    q = text("A; B", "{ ?s :p ?o }", "{ ?s :q ?o2 FILTER(?o2 != ?o && isBlank(?o)) }",
             "SELECT ?s")
    outs = run(q, events)
    assert [(o.time, o.bindings) for o in outs] == [(2, {"s": f"<{EX}s>"})]
    ref = ReferenceEvaluator(parse_query(q), events)
    assert [m.time for m in ref.evaluate(1, None)] == [2]


def test_live_run_bound_cuts_the_oldest_runs_and_says_so():
    # A+: B without shared runs: every A event starts a run and keeps the earlier ones.
    events = [ev(U1, t, ":H1 :pow :Pw1 . :H1 :loc :L1 .") for t in range(1, 8)]
    events.append(ev(U2, 9, ":W1 :value :V1 . :W1 :loc :L1 ."))
    full = run(text("A+: B", P1, P2), events, engine="no-shared-runs")
    q = parse_query(text("A+: B", P1, P2))
    q.options.update(engine="no-shared-runs", max_runs=5)
    eng = Engine()
    eng.register(q)
    with pytest.warns(SpaseqCutWarning, match="more than 5 partial matches alive at 3"):
        cut = list(eng.run(events))
    stats = eng.queries[0].stats
    assert (stats.runs_cut, stats.max_live, stats.matches) == (18, 9, 4)
    assert len(full) == 28 and {o.start for o in full} == set(range(1, 8))
    # what is left is a part of the full answer: the runs started last
    assert sorted((o.start, len(o.events)) for o in cut) == [(5, 4), (6, 2), (6, 3), (7, 2)]
    assert {(o.start, o.events) for o in cut} <= {(o.start, o.events) for o in full}


def test_registered_after_the_first_events_starts_its_windows_there():
    q = parse_query(text("A; B", P1, P2, "SELECT ?h WITHIN 10"))
    eng = Engine()
    events = sorted(EX6, key=lambda e: e.time)
    eng.push(events[0])  # H1 at 10: before the query exists
    eng.register(q)  # issued at 10: windows [10, 20], [20, 30]
    for e in events[1:]:
        eng.push(e)
    eng.close()
    assert [(o.time, o.bindings["h"]) for o in eng.drain()] == [(20, f"<{EX}H2>")]


def test_explain_shows_epsilon_and_forbidden_edges():
    from rsep.spaseq.explain import explain

    q = parse_query(text("A; B!; A; B?, A", P1, P2))
    out = explain(q)
    assert out.splitlines()[0] == "SEQ (A; B!; A; B?, A)  (no WITHIN: one window)"
    assert "x1 -> x2  ε  ε: without an event" in out
    assert "x1 -> (run deleted)  ({S2}, !, B)  a match ends the run" in out
    assert "x3 -> x4  ({S2}, ?, B)" in out and "x3 -> x3  ({S1, S2}, ;, *)  skip an event" in out
    dot = explain(q, "dot")
    assert 'x1 -> dead1 [label="({S2}, !, B)", color=red];' in dot
    assert 'x3 -> x4 [label="ε", style=dashed];' in dot
    with pytest.raises(ValueError, match="unknown format"):
        explain(q, "svg")


WITHIN_NEG = (f"PREFIX : <{EX}> SELECT ?h ?w WITHIN 10 FROM STREAM S1 <{U1}> FROM STREAM S2 "
              f"<{U2}> WHERE {{ SEQ (A; N!; C) DEFINE GPM A ON S1 {{ ?h :pow ?p }} "
              "DEFINE GPM N ON S2 { ?h :alarm ?x } DEFINE GPM C ON S2 { ?h :ok ?w } }")


@pytest.mark.parametrize("until", [None, 24, 100])
def test_nothing_is_deferred_to_the_end_of_the_input(until):
    """SPASEQ decides each match at its completing event (Def. 16): a negation stands
    between two GPMs, so the event after it settles it, and a WITHIN window only ends runs.
    Tumbling windows [1, 11], [11, 21], [21, 31]: H1's match completes at 4 (H2's alarm
    does not block it), H2's is blocked by its alarm at 13, H3's completes with the last
    event, at 24, and is output then; H4's run is still open when the input ends and has
    nothing to wait for but a later event. --until and the end of the input add nothing
    (issue 21)."""
    events = [ev(U1, 1, ":H1 :pow :Pw1 ."), ev(U2, 2, ":H2 :alarm 1 ."), ev(U2, 4, ":H1 :ok :W1 ."),
              ev(U1, 12, ":H2 :pow :Pw2 ."), ev(U2, 13, ":H2 :alarm 2 ."), ev(U2, 15, ":H2 :ok :W2 ."),
              ev(U1, 21, ":H3 :pow :Pw3 ."), ev(U1, 22, ":H4 :pow :Pw4 ."), ev(U2, 24, ":H3 :ok :W3 .")]
    eng = Engine()
    eng.register(parse_query(WITHIN_NEG))
    got = [(o.time, o.start, o.bindings["h"], o.bindings["w"]) for o in eng.run(events, until=until)]
    assert got == [(4, 1, f"<{EX}H1>", f"<{EX}W1>"), (24, 21, f"<{EX}H3>", f"<{EX}W3>")]
    ref = ReferenceEvaluator(parse_query(WITHIN_NEG), events)
    assert sorted(m.time for m in ref.evaluate(1, 10)) == [4, 24]
