"""An event whose graph is empty (``<g> { }`` in TriG): a heartbeat, an event with no
triples whose time advances the stream."""

from __future__ import annotations

import json

import pytest

from rsep.cli.main import main
from rsep.spark.parse import parse_text
from rsep.stream.event import Event, Rejected
from rsep.stream.files import StreamFile
from rsep.testing.snippets import EX, ev, run

HEAD = f"@prefix : <{EX}> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
S = EX + "s"
TEXT = HEAD + """:g1 prov:generatedAtTime 1 .
:g1 { :a :v "{ }" . }
:g5 prov:generatedAtTime 5 .
:g5 { }
GRAPH :g6 {
  # nothing happened
}
:g6 prov:generatedAtTime 6 .
{ }
:g7 prov:generatedAtTime 7 . :g7 {}
"""


def summary(items):
    return [(i.graph, i.start, i.end, i.origin.rsplit(":", 1)[1], tuple(map(str, i.triples)))
            if isinstance(i, Event) else (i.line, i.reason) for i in items]


EXPECTED = [(EX + "g1", 1, 1, "4", (f'<{EX}a> <{EX}v> "{{ }}"',)),
            (EX + "g5", 5, 5, "6", ()), (EX + "g6", 6, 6, "7", ()), (EX + "g7", 7, 7, "12", ())]


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("chunk_size", [16, 1 << 16])
def test_empty_graphs_are_events_with_no_triples(tmp_path, fast, chunk_size):
    p = tmp_path / "s.trig"
    p.write_text(TEXT)
    sf = StreamFile(p, S, chunk_size=chunk_size)
    sf._fast = fast
    assert summary(sf) == EXPECTED


def test_fast_path_reads_a_chunk_of_heartbeats(tmp_path):
    p = tmp_path / "s.trig"
    p.write_text(HEAD + "".join(f":g{i} prov:generatedAtTime {i} .\n:g{i} {{ }}\n" for i in range(50))
                 + ':g50 prov:generatedAtTime 50 .\n:g50 { :a :v "x" }\n')
    got = summary(StreamFile(p, S))
    assert got[:2] == [(EX + "g0", 0, 0, "4", ()), (EX + "g1", 1, 1, "6", ())]
    assert len(got) == 51 and got[-1][4] == (f'<{EX}a> <{EX}v> "x"',)


def test_an_empty_graph_still_needs_its_time(tmp_path):
    p = tmp_path / "s.trig"
    p.write_text(HEAD + ":g1 { }\n:g2 prov:generatedAtTime 2 .\n")
    assert summary(StreamFile(p, S)) == [
        (3, f"event graph <{EX}g1> has no timestamp (expected <{EX}g1> "
            "<http://www.w3.org/ns/prov#generatedAtTime> T in the default graph)"),
        (4, f"timestamp given for <{EX}g2>, but the file has no graph of that name")]


def test_spark_parse_path_reads_heartbeats():
    got = list(parse_text(TEXT, S, "mqtt://h/t#000001", "trig"))
    assert all(isinstance(i, Event) for i in got)
    assert [(i.graph, i.start, i.triples) for i in got][1:] == [(EX + "g5", 5, ()), (EX + "g6", 6, ()),
                                                                (EX + "g7", 7, ())]
    assert not any(isinstance(i, Rejected) for i in got)


def test_cli_heartbeat_advances_time(tmp_path, capsys):
    s = tmp_path / "s.trig"
    s.write_text(HEAD + ':g1 prov:generatedAtTime 1 . :g1 { :a :v "x" . }\n'
                 ":g5 prov:generatedAtTime 5 . :g5 { }\n")
    q = tmp_path / "q.rq"
    q.write_text(f"PREFIX : <{EX}> SELECT ?x FROM STREAM :s [RANGE 3 STEP 1] WHERE {{ ?x :v ?v }}")
    assert main(["run", str(q), "--stream", f"{S}={s}"]) == 0
    cap = capsys.readouterr()
    # C-SPARQL's [c-3, c): the reading at 1 is in the windows closing at 2, 3, 4; the
    # heartbeat at 5 carries the stream there (without it the run ends at 1)
    assert [json.loads(x) for x in cap.out.splitlines()] == [
        {"time": t, "bindings": {"x": f"<{EX}a>"}} for t in (2, 3, 4)]
    assert cap.err == ""


def test_python_api_heartbeat_makes_no_content():
    # COUNT(*) over windows holding only a heartbeat: C-SPARQL reports non-empty windows
    # only, and a window with no triple is empty
    q = f"PREFIX : <{EX}> SELECT (COUNT(*) AS ?n) FROM STREAM :s [RANGE 2 STEP 1] WHERE {{ ?x ?p ?o }}"
    got = run(q, [ev(S, 1, ":a :v 1 ."), ev(S, 4, "")], until=7)
    n = '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'
    assert got == [{"time": 2, "bindings": {"n": n}}, {"time": 3, "bindings": {"n": n}}]


def test_python_api_heartbeat_fires_cqels_and_rspql():
    # CQELS evaluates on arrival: the heartbeat at 4 is an arrival, over an unchanged window
    q = f"PREFIX : <{EX}> SELECT ?x WHERE {{ STREAM :s [RANGE 5] {{ ?x :v ?v }} }}"
    assert run(q, [ev(S, 1, ":a :v 1 ."), ev(S, 4, "")]) == [{"time": 1, "bindings": {"x": f"<{EX}a>"}}]
    q = (f"PREFIX : <{EX}> REGISTER RSTREAM <o> AS SELECT ?x FROM NAMED WINDOW :w ON :s "
         f"[RANGE 6 STEP 2] WHERE {{ WINDOW :w {{ ?x :v ?v }} }}")
    got = run(q, [ev(S, 1, ":a :v 1 ."), ev(S, 6, "")])
    assert [o["time"] for o in got] == [2, 4, 6]
