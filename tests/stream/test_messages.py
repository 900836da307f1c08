"""RDF Message Logs (W3C RSP CG, spec/messages.bs) read as streams and written as results."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pyoxigraph as ox
import pytest

from rsep.cli.main import main
from rsep.stream.framing import find_delimiters
from rsep.stream.messages import Message, MessageLog
from rsep.stream.time import TimeConfig, TimeKind, parse_datetime_ms
from rsep.testing.snippets import ROOT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
SOSA = "http://www.w3.org/ns/sosa/"
EX = "http://example.org/"

# The spec's message-log example, verbatim (its tab included) after the prefixes it uses
# but does not declare: directives before the first delimiter apply to every message.
SPEC_LOG = """PREFIX ex: <http://example.org/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX sosa: <http://www.w3.org/ns/sosa/>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
# a message defining the context
ex:Stream1 a ex:Dataset;
    rdfs:comment "A log of messages that appeared on a stream" .
# @message a next message is an observation in the stream
ex:Observation1
    a sosa:Observation ;
    sosa:resultTime "2026-01-01T00:00:00Z"^^xsd:dateTime ;
    sosa:hasSimpleResult "..." .
# @message an empty message
# @message another observation
ex:Observation2
    a sosa:Observation ;
    sosa:resultTime "2026-01-01T00:10:00Z"^^xsd:dateTime ;
    sosa:hasSimpleResult "..." .\t
"""

# The spec's officegraph measurement (RiverBench), one message.
OFFICEGRAPH = """PREFIX ic:    <https://interconnectproject.eu/example/>
PREFIX om:    <http://www.wurvoc.org/vocabularies/om-1.8/>
PREFIX saref: <https://saref.etsi.org/core/>
PREFIX xsd:   <http://www.w3.org/2001/XMLSchema#>

ic:property_R5_56__co2_
        a       ic:CO2Level .

ic:measurement_R5_56__co2__0
        a                        saref:Measurement;
        saref:hasTimestamp       "2022-02-28T23:59:00"^^xsd:dateTime;
        saref:hasValue           "504"^^xsd:float;
        saref:isMeasuredIn       om:partsPerMillion;
        saref:relatesToProperty  ic:property_R5_56__co2_ .
"""


def _subjects(m: Message) -> list[str]:
    return sorted({q.subject.value for q in m.quads})


@pytest.mark.parametrize("chunk", [1 << 20, 7])
def test_the_specs_message_log_example_parses_into_its_four_messages(tmp_path, chunk):
    p = tmp_path / "log.trig"
    p.write_text(SPEC_LOG)
    msgs = list(MessageLog(p, "urn:s", chunk_size=chunk).messages())
    assert [(m.number, m.line, len(m.quads)) for m in msgs] == [(1, 6, 2), (2, 9, 3), (3, 14, 0), (4, 15, 3)]
    assert _subjects(msgs[0]) == [EX + "Stream1"]
    assert _subjects(msgs[1]) == [EX + "Observation1"]
    assert _subjects(msgs[3]) == [EX + "Observation2"]


def test_the_specs_example_as_events_with_sosa_result_time(tmp_path):
    p = tmp_path / "log.trig"
    p.write_text(SPEC_LOG)
    items = list(MessageLog(p, "urn:s", time=TimeConfig.with_predicate(SOSA + "resultTime")))
    rej, obs1, empty, obs2 = items
    # the context message carries no time: dead-lettered with the reason, the rest goes on
    assert rej.line == 6 and rej.reason.startswith(f"message 1 has no time (expected a triple with <{SOSA}resultTime>")
    t1, t2 = parse_datetime_ms("2026-01-01T00:00:00Z"), parse_datetime_ms("2026-01-01T00:10:00Z")
    assert (obs1.graph, obs1.start, obs1.end, obs1.kind, len(obs1.triples)) == \
        (EX + "Observation1", t1, t1, TimeKind.DATETIME, 3)
    # the empty message is a heartbeat at its stream's time
    assert (empty.graph, empty.start, empty.triples, empty.origin) == ("urn:s/message/3", t1, (), f"{p}:14")
    assert (obs2.graph, obs2.start, len(obs2.triples)) == (EX + "Observation2", t2, 3)


def test_the_officegraph_measurement_is_one_message_timed_by_saref(tmp_path):
    p = tmp_path / "office.ttl"
    p.write_text(OFFICEGRAPH)
    (m,) = MessageLog(p, "urn:s").messages()
    assert len(m.quads) == 6
    (e,) = MessageLog(p, "urn:s", time=TimeConfig.with_predicate("https://saref.etsi.org/core/hasTimestamp"))
    assert e.graph == "https://interconnectproject.eu/example/measurement_R5_56__co2__0"
    assert (e.start, e.kind) == (parse_datetime_ms("2022-02-28T23:59:00Z"), TimeKind.DATETIME)
    assert len(e.triples) == 6


def test_a_malformed_message_is_dead_lettered_with_its_position_and_the_log_goes_on(tmp_path):
    p = tmp_path / "bad.trig"
    p.write_text("@prefix ex: <http://example.org/> .\n"
                 "ex:a ex:t 1 .\n"
                 "# @message\n"
                 "ex:b ex:t 2 ;\n"
                 "   ex:p \"unclosed .\n"
                 "# @message\n"
                 "ex:c ex:t 3 .\n")
    items = list(MessageLog(p, "urn:s", time=TimeConfig.with_predicate(EX + "t")))
    assert [type(i).__name__ for i in items] == ["Event", "Rejected", "Event"]
    a, bad, c = items
    assert (a.graph, a.start, c.graph, c.start) == (EX + "a", 1, EX + "c", 3)
    assert (bad.origin, bad.line, bad.column) == (str(p), 5, 9)  # the unclosed string's quote
    assert bad.reason.startswith("message 2: ")


def test_directives_apply_onwards_and_blank_nodes_are_scoped_to_their_message(tmp_path):
    p = tmp_path / "log.trig"
    p.write_text("PREFIX ex: <http://one.example/>\n"
                 "_:x ex:t 1 .\n"
                 "# @message\n"
                 "PREFIX ex: <http://two.example/>\n"
                 "_:x ex:t 1 .\n")
    one, two = MessageLog(p, "urn:s").messages()
    assert one.quads[0].predicate.value == "http://one.example/t"
    assert two.quads[0].predicate.value == "http://two.example/t"
    e1, e2 = MessageLog(p, "urn:s", time=TimeConfig(point=("http://one.example/t", "http://two.example/t")))
    assert e1.triples[0].subject != e2.triples[0].subject


def test_delimiters_are_comments_not_text_in_strings(tmp_path):
    text = ('<urn:a> <urn:p> """x\n# @message inside a long string\n""" .\n'
            '<urn:a> <urn:q> "# @message" . # @message trailing comment\n'
            '<urn:b> <urn:p> <urn:c> .\n')
    assert [text[s:e] for s, e in find_delimiters(text, final=True)[0]] == ["# @message trailing comment"]
    p = tmp_path / "log.ttl"
    p.write_text(text)
    assert [len(m.quads) for m in MessageLog(p, "urn:s").messages()] == [2, 1]


def test_arrival_time_for_messages_without_one(tmp_path):
    p = tmp_path / "log.nt"
    p.write_text("<urn:a> <urn:p> <urn:b> .\n# @message\n# @message\n<urn:c> <urn:p> <urn:d> .\n")
    before = int(time.time() * 1000)
    events = list(MessageLog(p, "urn:s", arrival=True))
    assert [len(e.triples) for e in events] == [1, 0, 1]
    assert all(e.kind is TimeKind.DATETIME and before <= e.start <= time.time() * 1000 for e in events)


def _run(args: list[str], out: Path) -> list[dict]:
    assert main(["run", *args, "-q", "-o", str(out)]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def _convert(src: Path, fmt: str, dst: Path, split: str) -> None:
    assert main(["convert", str(src), "--to", fmt, "-o", str(dst), "--split", split, "-q"]) == 0


@pytest.mark.parametrize("split", ["events", "resources"])
def test_the_weather_stream_as_message_logs_gives_the_stream_files_results(tmp_path, split):
    query = str(ROOT / "examples" / "srbench-hot.rq")
    ref = _run([query, "--stream", f"{SR}={SRBENCH}"], tmp_path / "ref.jsonl")
    assert len(ref) > 20
    for fmt, suffix in (("rdfm-trig", "trig"), ("rdfm-nquads", "nq"), ("jelly", "jelly")):
        log = tmp_path / f"weather.{suffix}"
        _convert(SRBENCH, fmt, log, split)
        got = _run([query, "--stream", f"{SR}={log}"], tmp_path / f"{suffix}.jsonl")
        assert got == ref, (fmt, split)
    messages = list(MessageLog(tmp_path / "weather.trig", SR).messages())
    # one message per event, or per observation (with its result) of each event
    assert len(messages) == (34 if split == "events" else 1890)


def test_a_message_log_on_standard_input(tmp_path, monkeypatch):
    query = str(ROOT / "examples" / "srbench-hot.rq")
    ref = _run([query, "--stream", f"{SR}={SRBENCH}"], tmp_path / "ref.jsonl")
    log = tmp_path / "weather.trig"
    _convert(SRBENCH, "rdfm-trig", log, "resources")
    monkeypatch.setattr(sys, "stdin", io.StringIO(log.read_text()))
    assert _run([query, "--stream", f"{SR}=-", "--stream-format", "rdfm"], tmp_path / "in.jsonl") == ref


HOT = """PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
PREFIX weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#>
PREFIX ex: <http://example.org/>
REGISTER RSTREAM <http://example.org/hot> AS
CONSTRUCT { ?sensor ex:reads ?value }
FROM NAMED WINDOW <http://example.org/w> ON <http://example.org/srbench> [RANGE 5000 STEP 5000]
WHERE {
  WINDOW <http://example.org/w> {
    ?obs om-owl:observedProperty weather:_AirTemperature ; om-owl:procedure ?sensor ;
         om-owl:result [ om-owl:floatValue ?value ] .
    FILTER (?value > 70)
  }
}
"""


@pytest.mark.parametrize("fmt", ["rdfm-trig", "rdfm-nquads", "jelly"])
def test_results_written_as_a_message_log_read_back_as_the_same_stream(tmp_path, fmt):
    q = tmp_path / "hot.rq"
    q.write_text(HOT)
    rows = _run([str(q), "--stream", f"{SR}={SRBENCH}"], tmp_path / "hot.jsonl")
    expected: dict[int, set[str]] = {}
    for r in rows:
        expected.setdefault(r["time"], set()).add(r["triple"])
    assert len(expected) >= 3
    log = tmp_path / f"hot.{ {'rdfm-trig': 'trig', 'rdfm-nquads': 'nq', 'jelly': 'jelly'}[fmt]}"
    assert main(["run", str(q), "--stream", f"{SR}={SRBENCH}", "-q", "--format", fmt, "-o", str(log)]) == 0
    events = list(MessageLog(log, "urn:results"))
    assert [(e.graph, e.start, e.end) for e in events] == \
        [(f"urn:rsep:result:http://example.org/hot:{t}", t, t) for t in expected]
    assert [{str(t) for t in e.triples} for e in events] == list(expected.values())
    # and through rsep run again: a query over the results stream sees the same triples
    again = tmp_path / "again.rq"
    again.write_text("REGISTER RSTREAM <urn:again> AS CONSTRUCT { ?s ?p ?o } "
                     "FROM NAMED WINDOW <urn:w> ON <urn:results> [RANGE 1 STEP 1] "
                     "WHERE { WINDOW <urn:w> { ?s ?p ?o } }")
    back = _run([str(again), "--stream", f"urn:results={log}"], tmp_path / "back.jsonl")
    got: dict[int, set[str]] = {}
    for r in back:
        got.setdefault(r["time"], set()).add(r["triple"])
    assert {t: v for t, v in got.items() if t in expected} == expected


def test_a_select_query_refuses_message_formats(tmp_path, capsys):
    out = tmp_path / "x.trig"
    assert main(["run", str(ROOT / "examples" / "srbench-hot.rq"), "--stream", f"{SR}={SRBENCH}",
                 "-q", "--format", "rdfm-trig", "-o", str(out)]) == 1
    assert "--format rdfm-trig needs a CONSTRUCT or DESCRIBE query" in capsys.readouterr().err


def test_a_jelly_frame_that_does_not_decode_is_rejected(tmp_path):
    p = tmp_path / "bad.jelly"
    p.write_bytes(b"\x05garbage")
    (r,) = MessageLog(p, "urn:s")
    assert r.line == 1 and r.reason.startswith("frame 1: not a Jelly stream")


def test_jelly_keeps_literals_languages_and_blank_nodes(tmp_path):
    from rsep.stream.writer import MessageWriter

    p = tmp_path / "x.jelly"
    with open(p, "wb") as f:
        w = MessageWriter(f, "jelly")
        w.write("urn:g", 5, 9, TimeKind.ABSTRACT,
                ['_:b <urn:p> "a\\"b"@en', '_:b <urn:q> "1.50"^^<http://www.w3.org/2001/XMLSchema#decimal>'])
        w.close()
    (e,) = MessageLog(p, "urn:s")
    assert (e.graph, e.start, e.end) == ("urn:g", 5, 9)
    objs = sorted(str(t.object) for t in e.triples)
    assert objs == ['"1.50"^^<http://www.w3.org/2001/XMLSchema#decimal>', '"a\\"b"@en']
    assert isinstance(e.triples[0].subject, ox.BlankNode) and e.triples[0].subject == e.triples[1].subject


def test_the_documented_example(capsys):
    # README "RDF Message Logs": the spec's log, timed by sosa:resultTime
    ex = ROOT / "docs" / "examples"
    args = ["run", str(ex / "observations.rq"), "--stream", f"http://example.org/obs={ex / 'observations.trig'}",
            "--time-predicate", SOSA + "resultTime"]
    assert main(args) == 3  # the context message has no time: dead-lettered
    out, err = capsys.readouterr()
    assert [(o["time"], o["triple"].split()[0]) for o in map(json.loads, out.splitlines())] == [
        ("2026-01-01T00:00:00Z", "<http://example.org/Observation1>"),
        # the triples of one evaluation in the order their solutions arrived
        ("2026-01-01T00:10:00Z", "<http://example.org/Observation1>"),
        ("2026-01-01T00:10:00Z", "<http://example.org/Observation2>")]
    assert "observations.trig:9: message 1 has no time" in err


def test_a_delimiter_inside_a_graph_block_rejects_its_message_and_the_log_goes_on(tmp_path):
    # the draft's comment as the current text's MESSAGE: inside a block it cuts nothing (a
    # block split across two messages would be two broken halves), its message is rejected
    p = tmp_path / "block.trig"
    p.write_text("<urn:g> <urn:t> 1 .\n<urn:g> {\n <urn:a> <urn:b> <urn:c> .\n# @message\n"
                 " <urn:d> <urn:e> <urn:f> .\n}\n# @message\n<urn:h> <urn:t> 2 .\n")
    first, event = MessageLog(p, "urn:s", time=TimeConfig.with_predicate("urn:t"))
    assert (first.line, first.column, first.reason) == (
        4, 1, "message 1: a message delimiter inside a graph block")
    assert (event.graph, event.start) == ("urn:h", 2)


def test_a_live_log_gives_each_message_once_its_delimiter_line_is_whole():
    pieces = ["<urn:a> <urn:t> 1 .\n# @mess", "age a comment", "\n", "<urn:b> <urn:t> 2 .\n"]
    read: list[str] = []

    def source():
        for p in pieces:
            read.append(p)
            yield p

    got = [(e.graph, e.start, len(read))
           for e in MessageLog("tcp://h:1", "urn:s", time=TimeConfig.with_predicate("urn:t"), source=source())]
    assert got == [("urn:a", 1, 3), ("urn:b", 2, 4)]
