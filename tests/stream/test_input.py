"""Stream input: TriG / N-Quads files, timestamps, bad records, ordering policies."""

from __future__ import annotations

import json

import pyoxigraph as ox
import pytest

from rsep.stream import assembly
from rsep.stream.event import Event, Rejected
from rsep.stream.files import StreamFile, TimeConfig
from rsep.stream.framing import iter_records
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


# ---------------------------------------------------------------- the chunked reader (issue #8)

MIXED = HEAD + """# a comment { with a brace }
:g0 prov:generatedAtTime 0 .
:g0 { :a :p "text with { and } and . inside" . }
:g1 { :a :p _:x . _:x :q 1 . }
:g1 prov:generatedAtTime 1 .
@prefix ex: <http://other.example/> .
GRAPH ex:g2
{
  ex:s ex:p \"\"\"a long
string } over lines . \"\"\" .
}
ex:g2 prov:startedAtTime 2 ; prov:endedAtTime 4 .
PREFIX b: <http://b.example/>
b:g3 prov:generatedAtTime "1970-01-01T00:00:05Z"^^xsd:dateTime .
b:g3 { b:s b:p b:o . b:s b:p 1.5 . }
_:bg prov:generatedAtTime 6 .
_:bg { :c :p :d . }
"""


def summary(items):
    return [(type(i).__name__, i.graph, i.start, i.end, i.kind, i.origin.rsplit(":", 1)[1],
             tuple(map(str, i.triples))) if isinstance(i, Event) else
            (type(i).__name__, i.line, i.column, i.reason, i.text) for i in items]


@pytest.mark.parametrize("chunk_size", [1, 16, 64, 200, 1 << 16])
def test_chunked_reader_agrees_with_the_record_reader(tmp_path, chunk_size):
    p = tmp_path / "s.trig"
    p.write_text(MIXED * 3)
    slow = StreamFile(p, "http://s")
    slow._fast = False
    fast = summary(StreamFile(p, "http://s", chunk_size=chunk_size))
    assert fast == summary(slow)
    events = [i for i in fast if i[0] == "Event"]
    # each event is located at its graph block (the name's line), in each copy of the text
    n = MIXED.count("\n")
    assert [int(e[5]) for e in events] == [
        line + k * n for k in range(3) for line in (6, 7, 10, 18, 20)]
    assert [e[2:4] for e in events[:5]] == [(0, 0), (1, 1), (2, 4), (5000, 5000), (6, 6)]
    # blank nodes stay scoped to their event whichever path read them
    assert events[1][6][0] != events[6][6][0]


def many_events(n, bad=None):
    out = [HEAD]
    for i in range(n):
        body = ":a :p ." if i == bad else f':a :p "v{i}" .'
        out.append(f":g{i} prov:generatedAtTime {i} .\n:g{i} {{\n  {body}\n}}\n")
    return "".join(out)


@pytest.mark.parametrize("chunk_size", [64, 1000, 1 << 16])
def test_malformed_record_in_a_large_file_keeps_every_good_record(tmp_path, chunk_size):
    text = many_events(500, bad=317)
    events, rejected = read(tmp_path, text, chunk_size=chunk_size)
    assert [e.start for e in events] == [i for i in range(500) if i != 317]
    bad_line = 3 + 4 * 317 + 3  # HEAD, four lines per event, the body line
    assert [(r.line, r.column) for r in rejected if r.column] == [(bad_line, 9)]  # the "."
    assert "object" in rejected[0].reason.lower()
    # the time of the rejected graph is reported as orphaned, on its own line
    assert [(r.line, r.text) for r in rejected if not r.column] == [(bad_line - 2, "http://example.org/g317")]
    assert [int(e.origin.rsplit(":", 1)[1]) for e in events[:2]] == [5, 9]


@pytest.mark.parametrize("chunk_size", [100, 1 << 16])
def test_nquads_chunks_lines_and_a_bad_line(tmp_path, chunk_size):
    T = '"{}"^^<http://www.w3.org/2001/XMLSchema#integer>'
    lines = []
    for i in range(300):
        lines.append(f"<http://e/g{i}> <http://www.w3.org/ns/prov#generatedAtTime> {T.format(i)} .")
        if i % 50 == 7:
            lines.append("# a comment line")
            lines.append("")
        lines.append(f"<http://e/a> <http://e/p> <http://e/b{i}> <http://e/g{i}> ." if i != 123
                     else f"<http://e/a> <http://e/p> <http://e/b{i} <http://e/g{i}> .")
        lines.append(f"_:x <http://e/p> <http://e/c> <http://e/g{i}> .")
    events, rejected = read(tmp_path, "\n".join(lines) + "\n", name="s.nq", chunk_size=chunk_size)
    # the bad line is rejected; the rest of its graph is still an event
    assert [e.start for e in events] == list(range(300))
    assert [e.start for e in events if len(e.triples) != 2] == [123]
    bad = lines.index("<http://e/a> <http://e/p> <http://e/b123 <http://e/g123> .") + 1
    assert [(r.line, r.column) for r in rejected] == [(bad, 27)]
    # an event is located at its first quad; its blank nodes are its own
    first = {e.start: int(e.origin.rsplit(":", 1)[1]) for e in events}
    assert first[0] == 2 and first[8] == lines.index("<http://e/a> <http://e/p> <http://e/b8> <http://e/g8> .") + 1
    assert events[0].triples[1].subject != events[1].triples[1].subject


def test_graph_split_over_lines_of_other_graphs_is_one_event_per_run(tmp_path):
    # A run of quads of one graph is one event; time triples in between do not end it.
    text = HEAD + ":g1 { :a :p 1 . }\n:g1 prov:generatedAtTime 1 .\n:g1 { :a :p 2 . }\n:g2 prov:generatedAtTime 2 .\n:g2 { :a :p 3 . }\n"
    for chunk_size in (1, 1 << 16):
        events, rejected = read(tmp_path, text, chunk_size=chunk_size)
        assert rejected == [] and [(e.graph[-2:], len(e.triples)) for e in events] == [("g1", 2), ("g2", 1)]


def test_nquads_lone_cr_line_ends_count_as_lines(tmp_path):
    t = '"{}"^^<http://www.w3.org/2001/XMLSchema#integer>'
    rows = [f"<http://e/g{i}> <http://www.w3.org/ns/prov#generatedAtTime> {t.format(i)} .\r"
            f"<http://e/a> <http://e/p> <http://e/b{i}> <http://e/g{i}> .\r" for i in range(40)]
    p = tmp_path / "s.nq"
    p.write_bytes(("".join(rows) + "<http://e/a> <http://e/p> .\r").encode())
    items = list(StreamFile(p, "http://s", chunk_size=300))
    assert [i.start for i in items if isinstance(i, Event)] == list(range(40))
    assert [(i.line, i.column) for i in items if isinstance(i, Rejected)] == [(81, 27)]


def shaped_events(n, malformed=True):
    """Events of the common shape (one integer time triple, then the graph); one in 25 is
    something the bulk assembly must leave to the run-by-run path."""
    out = [HEAD]
    for i in range(n):
        t, g = f":g{i} prov:generatedAtTime {i} .\n", f":g{i} {{ :a :p \"v{i}\" . :a :q :b{i % 7} . }}\n"
        odd = (i // 25) % 8 * 2 + 3 if i % 25 == 12 else 0
        if odd == 3:
            out.append(g + t)  # time after its graph
        elif odd == 5:
            out.append(f':g{i} prov:generatedAtTime "2024-01-01T00:00:0{i % 10}Z"^^xsd:dateTime .\n' + g)
        elif odd == 7:
            out.append(t + g + f":g{i - 1} {{ :a :p :again . }}\n")  # a graph seen before
        elif odd == 9:
            out.append(t + g.replace(":a :p", "_:x :p"))  # a blank node
        elif odd == 11:
            out.append(g)  # no time
        elif odd == 13:
            out.append(t + g.replace(" {", "\n{"))  # the name above its brace
        elif odd == 15:
            out.append(f":g{i} prov:startedAtTime {i} .\n:g{i} prov:endedAtTime {i + 2} .\n" + g)
        elif odd == 17 and malformed:
            out.append(t + f':g{i} {{ :a :p "v{i}" . :a :q . }}\n')
        else:
            out.append(t + g)
    return "".join(out)


@pytest.mark.parametrize("chunk_size", [100, 2000, 1 << 16])
@pytest.mark.parametrize("max_pending", [2, 10_000])
def test_bulk_assembly_agrees_with_run_by_run(tmp_path, monkeypatch, chunk_size, max_pending):
    trig = tmp_path / "s.trig"
    trig.write_text(shaped_events(400))
    nq = tmp_path / "s.nq"
    quads = [f"{q} .\n" for q in ox.parse(shaped_events(400, malformed=False), format=ox.RdfFormat.TRIG)]
    quads.insert(1000, "<http://example.org/a> <http://example.org/p> .\n")
    # times of graphs that never come
    waiting = "".join(f'<http://example.org/x{i}> <http://www.w3.org/ns/prov#generatedAtTime> "{i}"'
                      "^^<http://www.w3.org/2001/XMLSchema#integer> .\n" for i in range(3))
    nq.write_text(waiting + "".join(quads))
    points = assembly.Assembly.points
    used = []
    monkeypatch.setattr(assembly.Assembly, "points", lambda self, *a: used.append(points(self, *a)) or used[-1])
    for p in (trig, nq):
        bulk = summary(StreamFile(p, "http://s", chunk_size=chunk_size, max_pending=max_pending))
        with monkeypatch.context() as m:
            m.setattr(assembly.Assembly, "points", lambda self, *a: False)
            assert summary(StreamFile(p, "http://s", chunk_size=chunk_size, max_pending=max_pending)) == bulk
        assert any(i[0] == "Rejected" for i in bulk)
    assert True in used or chunk_size == 1 << 16  # the bulk path ran (not on a whole file with odd events)


def test_bulk_assembly_leaves_an_overflow_to_the_runs(tmp_path, monkeypatch):
    # Lines of 150 characters and chunks of 1500 make each chunk 11 lines: the first ends
    # with the time of a graph that never comes, beyond max_pending once the next chunk's
    # first graph is read; its rejection comes there, as the run-by-run path gives it.
    time = '<http://e/{}> <http://www.w3.org/ns/prov#generatedAtTime> "{}"^^<http://www.w3.org/2001/XMLSchema#integer>'
    lines = []
    for i in range(30):
        lines += [time.format(f"g{i}", i), f"<http://e/a> <http://e/p> <http://e/b{i}> <http://e/g{i}>"]
        if i == 4:
            lines.append(time.format("never", 4))
    p = tmp_path / "s.nq"
    p.write_text("".join(f"{q:<148}.\n" for q in lines))
    bulk = summary(StreamFile(p, "http://s", chunk_size=1500, max_pending=1))
    assert [k for k, i in enumerate(bulk) if i[0] == "Rejected"] == [5] and "never" in bulk[5][4]
    monkeypatch.setattr(assembly.Assembly, "points", lambda self, *a: False)
    assert summary(StreamFile(p, "http://s", chunk_size=1500, max_pending=1)) == bulk
