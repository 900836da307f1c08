"""Stream input: TriG / N-Quads files, timestamps, bad records, ordering policies."""

from __future__ import annotations

import json

import pytest

from rsep.stream.event import Event, Rejected
from rsep.stream.files import StreamFile, TimeConfig, iter_records
from rsep.stream.source import DeadLetter, OrderingPolicy, merge_streams
from rsep.stream.time import TimeKind

HEAD = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""


def read(tmp_path, text, name="s.trig", **kw):
    p = tmp_path / name
    p.write_text(text)
    items = list(StreamFile(p, "http://s", **kw))
    return [i for i in items if isinstance(i, Event)], [i for i in items if isinstance(i, Rejected)]


def test_malformed_record_is_rejected_and_the_rest_goes_on(tmp_path):
    text = HEAD + """:g1 prov:generatedAtTime 1 .
:g1 { :a :p :b . }
:g2 prov:generatedAtTime 2 .
:g2 { :a :p . }
:g3 prov:generatedAtTime 3 .
:g3 { :c :p "x" . }
"""
    events, rejected = read(tmp_path, text)
    assert [e.graph.rsplit("/", 1)[1] for e in events] == ["g1", "g3"]
    bad = [r for r in rejected if r.line == 7]
    assert len(bad) == 1 and bad[0].column == 13
    assert "object" in bad[0].reason.lower()
    # ... and the time given for the rejected graph is reported as orphaned, not lost
    assert any("no graph of that name" in r.reason and r.line == 6 for r in rejected)


def test_event_without_timestamp(tmp_path):
    events, rejected = read(tmp_path, HEAD + ":g1 { :a :p :b . }\n:g2 prov:generatedAtTime 5 .\n:g2 { :a :p :c . }\n")
    assert [e.start for e in events] == [5]
    assert [(r.line, r.reason) for r in rejected] == [
        (4, "event graph <http://example.org/g1> has no timestamp (expected <http://example.org/g1> "
            "<http://www.w3.org/ns/prov#generatedAtTime> T in the default graph)")]


def test_bad_timestamp_literal(tmp_path):
    events, rejected = read(tmp_path, HEAD + ':g1 prov:generatedAtTime "soon" .\n:g1 { :a :p :b . }\n')
    assert events == [] and "neither an xsd:integer nor an xsd:dateTime" in rejected[0].reason


def test_time_after_the_graph_and_datetimes(tmp_path):
    events, rejected = read(tmp_path, HEAD + ':g1 { :a :p :b . }\n:g1 prov:generatedAtTime "2024-05-01T10:00:01Z"^^xsd:dateTime .\n')
    assert rejected == []
    assert (events[0].kind, events[0].start) == (TimeKind.DATETIME, 1714557601000)


def test_interval_timestamps(tmp_path):
    events, _ = read(tmp_path, HEAD + ":g1 prov:startedAtTime 3 ; prov:endedAtTime 9 .\n:g1 { :a :p :b . }\n")
    assert (events[0].start, events[0].end) == (3, 9)


def test_time_inside_the_event_graph(tmp_path):
    text = HEAD + ":g1 { <http://example.org/g1#event> :at 7 . :a :p :b . }\n"
    events, rejected = read(tmp_path, text, time=TimeConfig.with_predicate("http://example.org/at", True))
    assert rejected == [] and events[0].start == 7 and len(events[0].triples) == 2


def test_blank_nodes_are_scoped_to_their_event(tmp_path):
    text = HEAD + ":g1 prov:generatedAtTime 1 .\n:g1 { _:x :p 1 . }\n:g2 prov:generatedAtTime 2 .\n:g2 { _:x :p 2 . }\n"
    events, _ = read(tmp_path, text)
    assert events[0].triples[0].subject != events[1].triples[0].subject


def test_nquads(tmp_path):
    text = """<http://e/g1> <http://www.w3.org/ns/prov#generatedAtTime> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://e/a> <http://e/p> <http://e/b> <http://e/g1> .
<http://e/a> <http://e/p> <http://e/c> <http://e/g1> .
<http://e/a> <http://e/p> "unterminated <http://e/g2> .
<http://e/g2> <http://www.w3.org/ns/prov#generatedAtTime> "2"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://e/a> <http://e/p> <http://e/d> <http://e/g2> .
"""
    events, rejected = read(tmp_path, text, name="s.nq")
    assert [(e.graph, len(e.triples)) for e in events] == [("http://e/g1", 2), ("http://e/g2", 1)]
    assert [(r.line, r.column) for r in rejected] == [(4, 27)]  # the opening quote


def test_records_survive_chunk_boundaries(tmp_path):
    long = "x" * 50 + "\n" + "{ } . # not a boundary\n" * 30
    body = "".join(f':g{i} prov:generatedAtTime {i} .\n:g{i} {{ :a :p """{long}""" . }}\n' for i in range(40))
    p = tmp_path / "s.trig"
    p.write_text(HEAD + body)
    recs = list(iter_records(p, chunk_size=97))
    assert len(recs) == 3 + 80
    assert recs[4].line == 5
    events = [e for e in StreamFile(p, "http://s") if isinstance(e, Event)]
    assert len(events) == 40 and events[-1].triples[0].object.value.endswith("boundary\n")


def ordered(items, lateness=0):
    dead = DeadLetter()
    return [e.start for e in merge_streams([items], dead, OrderingPolicy(lateness))], dead


def mk(t, name):
    return Event("http://s", name, t, t, (), TimeKind.ABSTRACT, origin=f"f.trig:{t}")


def test_backwards_timestamp_is_rejected_with_a_message():
    out, dead = ordered([mk(1, "a"), mk(5, "b"), mk(3, "c"), mk(6, "d")])
    assert out == [1, 5, 6]
    assert dead.count == 1
    assert dead.items[0].reason == ("timestamp 3 of <c> goes backwards: the stream is already at 5 "
                                    "(accept late events with --allowed-lateness)")


def test_allowed_lateness_reorders_and_rejects_only_later_events():
    out, dead = ordered([mk(1, "a"), mk(5, "b"), mk(3, "c"), mk(9, "d"), mk(4, "e")], lateness=3)
    assert out == [1, 3, 5, 9]
    assert [r.text for r in dead.items] == ["e"]


def test_merge_is_by_time_then_stream_order():
    a = [mk(1, "a1"), mk(3, "a3")]
    b = [Event("http://t", "b1", 1, 1, (), TimeKind.ABSTRACT), Event("http://t", "b2", 2, 2, (), TimeKind.ABSTRACT)]
    dead = DeadLetter()
    assert [e.graph for e in merge_streams([b, a], dead)] == ["b1", "a1", "b2", "a3"]


def test_dead_letter_file(tmp_path):
    dl = tmp_path / "dead.jsonl"
    dead = DeadLetter(dl)
    dead(Rejected("http://s", "f.trig", 3, 4, "bad", "text"))
    dead.close()
    assert json.loads(dl.read_text()) == {"stream": "http://s", "file": "f.trig", "line": 3, "column": 4,
                                          "reason": "bad", "record": "text"}


@pytest.mark.parametrize("ttl", [":g1 { :a :p :b . ", ':g1 { :a :p """unterminated . }'])
def test_unterminated_record_at_end_of_file(tmp_path, ttl):
    events, rejected = read(tmp_path, HEAD + ttl)
    assert events == [] and rejected and rejected[0].line == 4
