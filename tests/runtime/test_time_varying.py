"""Time-varying background graphs (000 Def. 2 and 4; docs/semantics.md, "Time-varying
background graphs"): an evaluation at t reads G(t), the graph after the changes stamped
<= t, on every path (snapshot, event-local, SPASEQ's GPMs, EP-SPARQL's Delta), as the
reference evaluator computes it from the definition."""

from __future__ import annotations

import json

import pytest

from rsep.algebra.dataset import TimeVaryingGraph
from rsep.algebra.query import ContinuousQuery
from rsep.cli.main import main
from rsep.lang import parse_query
from rsep.runtime import reference
from rsep.runtime.engine import Engine
from rsep.runtime.windowed import QueryRuntime
from rsep.sparql.update import graph_at
from rsep.stream.files import StreamFile
from rsep.stream.time import TimeKind
from rsep.stream.updates import GraphUpdate, read_updates
from rsep.testing.snippets import EX, ROOT, ev, short, table, triples
from rsep.windows.incremental import INCREMENTAL, SNAPSHOT, plan

D = ROOT / "docs" / "examples" / "rooms"
ROOMS = f"{EX}rooms"
READINGS = f"{EX}readings"
# the evaluation at 5 reads the graph before the change at 7 (s1 in the kitchen), the one
# at 10 the graph after it: r1, in both windows, is in the kitchen at 5 and in the office at 10
BEFORE = [(5, {"room": ":hall", "t": "18"}), (5, {"room": ":kitchen", "t": "20"})]
AFTER = [(10, {"room": ":hall", "t": "18"}), (10, {"room": ":hall", "t": "19"}),
         (10, {"room": ":office", "t": "20"}), (10, {"room": ":office", "t": "21"}),
         (15, {"room": ":hall", "t": "19"}), (15, {"room": ":office", "t": "21"}),
         (15, {"room": ":office", "t": "22"})]


def cli(capsys, query: str, updates: str, *extra: str) -> tuple[int, list[dict], str]:
    code = main(["run", str(D / query), "--stream", f"{READINGS}={D / 'readings.trig'}",
                 "--graph", f"{ROOMS}={D / 'rooms.ttl'}", "--graph-updates",
                 f"{ROOMS}={D / updates}", "--until", "15", *extra])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


@pytest.mark.parametrize("query, path", [("rooms.rq", INCREMENTAL), ("rooms-csparql.rq", SNAPSHOT)])
@pytest.mark.parametrize("updates", ["rooms.ru", "rooms-versions.trig"])
def test_a_windowed_join_reads_the_graph_as_it_is_at_each_evaluation(capsys, query, path,
                                                                     updates):
    q = parse_query((D / query).read_text())
    assert isinstance(q, ContinuousQuery) and plan(q)[0] == path
    code, out, err = cli(capsys, query, updates)
    assert (code, err) == (0, "")
    assert table(out) == BEFORE + AFTER


def test_without_the_updates_the_answer_stays_the_first_graphs(capsys):
    code = main(["run", str(D / "rooms.rq"), "--stream", f"{READINGS}={D / 'readings.trig'}",
                 "--graph", f"{ROOMS}={D / 'rooms.ttl'}", "--until", "10"])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert table(out)[2:] == [(10, {"room": ":hall", "t": "18"}), (10, {"room": ":hall", "t": "19"}),
                              (10, {"room": ":kitchen", "t": "20"}),
                              (10, {"room": ":kitchen", "t": "21"})]


@pytest.mark.parametrize("query", ["rooms.rq", "rooms-csparql.rq"])
def test_the_reference_evaluator_agrees(query):
    q = parse_query((D / query).read_text())
    assert isinstance(q, ContinuousQuery)
    events = [e for e in StreamFile(D / "readings.trig", READINGS) if not hasattr(e, "reason")]
    initial = triples((D / "rooms.ttl").read_text().split("\n", 1)[1])
    g = TimeVaryingGraph(ROOMS, initial)
    for u in read_updates(ROOMS, D / "rooms.ru"):
        assert isinstance(u, GraphUpdate)
        g.add(u)
    assert {short(str(t.object)) for t in graph_at(g, 6)} == {":kitchen", ":hall"}
    assert {short(str(t.object)) for t in graph_at(g, 7)} == {":office", ":hall"}
    ref = reference.evaluate(q, events, varying=[g], until=15)
    assert table([o.to_json() for o in ref]) == BEFORE + AFTER


def test_a_replay_gives_the_same_output_every_time(capsys):
    runs = [cli(capsys, "rooms.rq", "rooms.ru") for _ in range(2)]
    assert runs[0] == runs[1] and runs[0][0] == 0


def test_a_malformed_update_goes_to_the_dead_letter_and_the_run_goes_on(capsys, tmp_path):
    dl = tmp_path / "dead.jsonl"
    code, out, err = cli(capsys, "rooms.rq", "rooms-bad.ru", "--dead-letter", str(dl))
    assert code == 3  # (EXIT_REJECTED)
    assert table(out) == BEFORE + AFTER
    [rec] = [json.loads(line) for line in dl.read_text().splitlines()]
    assert (rec["stream"], rec["file"], rec["line"], rec["column"], rec["record"]) == \
        (ROOMS, str(D / "rooms-bad.ru"), 4, 23, "INSERT DATA { :s2 :in }")
    assert rec["reason"].startswith("the update does not parse: expected one of")
    assert "rooms-bad.ru:4:23: the update does not parse" in err


def test_an_update_that_writes_another_graph_is_rejected_when_applied(capsys, tmp_path):
    bad = tmp_path / "other.ru"
    bad.write_text(f"PREFIX : <{EX}>\n# @time 2\nINSERT DATA {{ GRAPH :x {{ :s1 :in :attic }} }}\n"
                   "# @time 7\nDELETE DATA { :s1 :in :kitchen } ;\nINSERT DATA { :s1 :in :office }\n")
    dl = tmp_path / "dead.jsonl"
    code, out, err = cli(capsys, "rooms.rq", str(bad), "--dead-letter", str(dl))
    assert code == 3 and table(out) == BEFORE + AFTER
    [rec] = [json.loads(line) for line in dl.read_text().splitlines()]
    assert (rec["file"], rec["line"], rec["reason"]) == (
        str(bad), 2, f"the update writes <{EX}x>: an update of <{ROOMS}> may change that graph "
                     "only (its default graph)")


@pytest.mark.parametrize("other", [(), (8, 20)])
def test_a_change_between_two_quiet_evaluations_is_read_by_the_next(other):
    """ISTREAM over a window whose content does not change from 5 to 10: the evaluation
    at 10 is not skipped as quiet, since the graph changed at 7 (also when events of
    another stream take the engine's time past 7 first)."""
    q = f"""PREFIX : <{EX}>
REGISTER ISTREAM :rooms AS SELECT ?room ?t
FROM NAMED WINDOW :w ON :readings [RANGE 10 STEP 5] FROM NAMED :rooms
WHERE {{ WINDOW :w {{ ?r :by ?s ; :temp ?t . }} GRAPH :rooms {{ ?s :in ?room . }} }}"""
    eng = Engine()
    eng.add_graph(ROOMS, triples(":s1 :in :kitchen . :s2 :in :hall ."))
    eng.background.add_changes(ROOMS, [GraphUpdate(
        ROOMS, 7, TimeKind.ABSTRACT, update=f"PREFIX : <{EX}> DELETE DATA {{ :s1 :in :kitchen }}; "
                                            "INSERT DATA { :s1 :in :office }", origin="t:1")])
    rt = eng.register(q)
    assert isinstance(rt, QueryRuntime)
    events = [ev(READINGS, 1, ":r1 :by :s1 ; :temp 20 ."), ev(READINGS, 3, ":r2 :by :s2 ; :temp 18 .")]
    events += [ev(f"{EX}other", t, ":x :y :z .") for t in other]
    out = table([o.to_json() for o in eng.run(events, until=12)])
    assert out == [(5, {"room": ":hall", "t": "18"}), (5, {"room": ":kitchen", "t": "20"}),
                   (10, {"room": ":office", "t": "20"})]
    # (with the other stream's events, at 15 too: r1 and r2 have left the window)
    assert rt.evaluations == 2 + bool(other) and eng.background.applied == 1


def test_changes_given_after_registration_replace_a_graph_given_twice():
    """A graph loaded with a triple twice and a literal in another form than the store's
    (1.0 for 1): the change at 7 leaves no trace of the kitchen."""
    q = f"""PREFIX : <{EX}>
REGISTER RSTREAM :rooms AS SELECT ?r ?room ?w
FROM NAMED WINDOW :w ON :readings [RANGE 10 STEP 5] FROM NAMED :rooms
WHERE {{ WINDOW :w {{ ?r :by ?s }} GRAPH :rooms {{ ?s :in ?room ; :w ?w }} }}"""
    eng = Engine()
    for _ in range(2):
        eng.add_graph(ROOMS, triples(":s1 :in :kitchen ; :w 1.0 ."))
    eng.register(q)
    eng.background.add_changes(ROOMS, [GraphUpdate(
        ROOMS, 7, TimeKind.ABSTRACT, update=f"PREFIX : <{EX}> DELETE DATA {{ :s1 :in :kitchen }}; "
                                            "INSERT DATA { :s1 :in :office }", origin="t:1")])
    out = [(o.time, {k: short(v) for k, v in (o.bindings or {}).items()})
           for o in eng.run([ev(READINGS, 1, ":r1 :by :s1 .")], until=10)]
    w = '"1"^^<http://www.w3.org/2001/XMLSchema#decimal>'
    assert out == [(5, {"r": ":r1", "room": ":kitchen", "w": w}),
                   (10, {"r": ":r1", "room": ":office", "w": w})]


SPASEQ = f"""PREFIX : <{EX}>
SELECT ?r1 ?room1 ?r2 ?room2
FROM STREAM S1 <{READINGS}>
WHERE {{
  SEQ (A, B)
  DEFINE GPM A ON S1 {{ ?r1 :by ?s . GRAPH <{ROOMS}> {{ ?s :in ?room1 . }} }}
  DEFINE GPM B ON S1 {{ ?r2 :by ?s . GRAPH <{ROOMS}> {{ ?s :in ?room2 . }} }}
}}"""


def test_spaseq_matches_each_gpm_against_the_graph_at_its_event():
    eng = Engine()
    eng.add_graph(ROOMS, triples(":s1 :in :kitchen ."))
    eng.background.add_changes(ROOMS, [GraphUpdate(ROOMS, 5, TimeKind.ABSTRACT,
                                                   version=triples(":s1 :in :office ."))])
    eng.register(SPASEQ)
    out = [o.to_json() for o in eng.run([ev(READINGS, 1, ":r1 :by :s1 ."),
                                         ev(READINGS, 6, ":r2 :by :s1 .")])]
    # A matched r1 at 1 (kitchen), B r2 at 6 (office): a run keeps what each step read
    assert [(o["time"], {k: short(v) for k, v in o["bindings"].items()}) for o in out] == [
        (6, {"r1": ":r1", "room1": ":kitchen", "r2": ":r2", "room2": ":office"})]


EPSPARQL = f"""PREFIX : <{EX}>
SELECT ?r1 ?r2 ?room WHERE {{ {{ ?r1 :by ?s . GRAPH <{ROOMS}> {{ ?s :in ?room }} }} SEQ {{ ?r2 :by ?s }} }}"""


@pytest.mark.parametrize("policy", [None, "chronological"])
def test_epsparql_detects_at_t_with_the_graph_at_t(policy):
    """The complex event completed at 6 joins the graph as it is at 6, its first part
    included (Delta's kept solutions are recomputed when the graph changes)."""
    from rsep.lang.epsparql import parse_epsparql

    eng = Engine()
    eng.add_graph(ROOMS, triples(":s1 :in :kitchen ."))
    eng.background.add_changes(ROOMS, [GraphUpdate(ROOMS, 5, TimeKind.ABSTRACT,
                                                   version=triples(":s1 :in :office ."))])
    eng.register(parse_epsparql(EPSPARQL, policy=policy))
    out = [o.to_json() for o in eng.run([ev(READINGS, 1, ":r1 :by :s1 ."),
                                         ev(READINGS, 3, ":r0 :by :s1 ."),
                                         ev(READINGS, 4, ":r3 :by :s1 ."),
                                         ev(READINGS, 6, ":r2 :by :s1 .")])]
    got = sorted((o["time"], o["from"], {k: short(v) for k, v in o["bindings"].items()})
                 for o in out)

    def match(t, t1, r1, r2, room):
        return (t, t1, {"r1": r1, "r2": r2, "room": room})
    if policy is None:
        want = [match(3, 1, ":r1", ":r0", ":kitchen"), match(4, 1, ":r1", ":r3", ":kitchen"),
                match(4, 3, ":r0", ":r3", ":kitchen"), match(6, 1, ":r1", ":r2", ":office"),
                match(6, 3, ":r0", ":r2", ":office"), match(6, 4, ":r3", ":r2", ":office")]
    else:  # r1 and r0 consumed at 3: r3 then r2
        want = [match(3, 1, ":r1", ":r0", ":kitchen"), match(6, 4, ":r3", ":r2", ":office")]
    assert got == want


def test_graph_updates_are_refused_by_the_spark_engine(capsys):
    code = main(["run", str(D / "rooms.rq"), "--engine", "spark", "--stream",
                 f"{READINGS}={D / 'readings.trig'}", "--graph-updates", f"{ROOMS}={D / 'rooms.ru'}"])
    assert code == 2  # usage: an option the engine does not take
    assert capsys.readouterr().err == (
        "rsep: --graph-updates needs the in-process engine (--engine inprocess): a Spark job "
        "ships its background graphs to the executors once, when it is planned, so they "
        "cannot change while it runs\n")
