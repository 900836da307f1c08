"""How events travel from the parse stage to the stateful stage: packed rows, N-Triples
texts, and their decoding back into the events the in-process engine reads."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from test_spark_pipeline import SR, SRBENCH, assert_same, inprocess, on_spark

from rsep.spark import parse
from rsep.spark.state import event_of, event_text, events_of
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

EX = "http://example.org/"


def _event(i: int, triples: tuple, graphs: tuple = ()) -> Event:
    return Event(stream=EX + "s", graph=f"{EX}g{i}", start=i, end=i + 1, triples=triples,
                 kind=TimeKind.ABSTRACT, origin=f"f.trig:{i}", graphs=graphs)


def _row(e: Event, pos: int) -> tuple:
    return (e.end, 0, "f.trig", pos, e.stream, e.graph, e.start, e.end, e.kind.value,
            event_text(e))


P = ox.NamedNode(EX + "p")
SHARED = ox.BlankNode("shared")  # one blank node in two events' graphs (one TriG document)
ODD = [
    (ox.Triple(SHARED, P, ox.Literal("line\nbreak \"quoted\" \\ \r\u2028", language="en")),),
    (),  # an event with no triples
    (ox.Triple(ox.NamedNode(EX + "a"), P, SHARED),
     ox.Triple(ox.NamedNode(EX + "a"), P, ox.Literal("1.50", datatype=ox.NamedNode(
         "http://www.w3.org/2001/XMLSchema#decimal")))),
    (ox.Triple(ox.NamedNode(EX + "b"), P, ox.Triple(ox.NamedNode(EX + "a"), P, ox.Literal("é"))),),
]


def test_events_of_decodes_what_event_of_decodes():
    rows = [_row(_event(i, ts), i) for i, ts in enumerate(ODD * 700)]
    got = events_of(rows)
    assert got == [event_of(r) for r in rows]
    assert [e.triples for e in got] == list(ODD * 700)
    assert got[0].triples[0].subject == got[2].triples[0].object == SHARED


def test_events_of_keeps_an_event_s_other_named_graphs():
    kept = ((EX + "k", (ox.Triple(ox.NamedNode(EX + "a"), P, ox.Literal("k")),)),)
    rows = [_row(_event(0, ODD[0]), 0), _row(_event(1, ODD[2], kept), 1)]
    got = events_of(rows)
    assert got == [event_of(r) for r in rows]
    assert got[1].graphs == kept and got[0].graphs == ()


QUERY = """PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
REGISTER RSTREAM <http://example.org/out> AS
SELECT ?sensor (COUNT(?obs) AS ?n) (MAX(?v) AS ?max)
FROM NAMED WINDOW <http://example.org/w> ON <http://example.org/srbench> [RANGE 3000 STEP 1000]
WHERE { WINDOW <http://example.org/w> {
  ?obs om-owl:procedure ?sensor ; om-owl:result ?r . ?r om-owl:floatValue ?v } }
GROUP BY ?sensor
"""


@pytest.mark.parametrize("pack_bytes", [1, 250_000])
def test_packed_rows_of_any_size_give_the_in_process_results(spark, tmp_path, monkeypatch,
                                                             pack_bytes):
    # 1: every event in a row of its own; 250,000 characters: the SRBench stream's one text
    # (34 events of ~100 kB) cut into packed rows of 3 events
    monkeypatch.setattr(parse, "PACK_BYTES", pack_bytes)
    monkeypatch.setattr(parse, "WHOLE_TEXTS", False)  # (a one-key query: else no pack)
    queries = [(QUERY, "w.rq")]
    ref = inprocess(queries, [(SR, str(SRBENCH))])
    assert len(ref["http://example.org/out"]) > 1000
    got, rejected, _ = on_spark(spark, tmp_path, queries, [(SR, str(SRBENCH))], batch=True)
    assert rejected == []
    assert_same(got, ref)
