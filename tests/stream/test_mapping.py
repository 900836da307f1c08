"""RML-mapped streams: CityBench's Aarhus feeds as the observation graphs CityBench publishes."""

from __future__ import annotations

import json
import os
import shutil
from itertools import islice
from pathlib import Path

import pyoxigraph as ox
import pytest

from rsep.cli.main import main
from rsep.stream.event import Event, Rejected
from rsep.stream.mapping import MappedStreamFile, MappingError, load_mapping
from rsep.stream.time import TimeKind
from rsep.testing.snippets import ROOT

EXAMPLES = ROOT / "examples" / "citybench"
CITYBENCH = Path(os.environ.get("RSEP_CITYBENCH_DATA", ROOT.parent / "shared/data/citybench"))
STREAMS = CITYBENCH / "streams"
needs_data = pytest.mark.skipif(not STREAMS.is_dir(), reason="CityBench data not present "
                                "(../shared/data/citybench or $RSEP_CITYBENCH_DATA)")

SES = "http://www.insight-centre.org/dataset/SampleEventService#"
SSN = "http://purl.oclc.org/NET/ssnx/ssn#"
HAS_VALUE = ox.NamedNode("http://purl.oclc.org/NET/sao/hasValue")
TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
DOUBLE = ox.NamedNode("http://www.w3.org/2001/XMLSchema#double")


def observation(obs: str, sensor: str, prop: str, value: str | None) -> set[ox.Triple]:
    s = ox.NamedNode(SES + obs)
    out = {ox.Triple(s, TYPE, ox.NamedNode(SSN + "Observation")),
           ox.Triple(s, ox.NamedNode(SSN + "observedBy"), ox.NamedNode(SES + sensor)),
           ox.Triple(s, ox.NamedNode(SSN + "observedProperty"), ox.NamedNode(SES + prop))}
    if value is not None:
        out.add(ox.Triple(s, HAS_VALUE, ox.Literal(value, datatype=DOUBLE)))
    return out


def first(mapping: str, feed: str, n: int = 1) -> list[Event | Rejected]:
    return list(islice(MappedStreamFile(EXAMPLES / mapping, "http://s",
                                        source=STREAMS / feed), n))


@needs_data
def test_traffic_first_rows_are_citybench_observations():
    e1, e2 = first("traffic-182955.rml.ttl", "AarhusTrafficData182955.stream", 2)
    assert isinstance(e1, Event) and isinstance(e2, Event)
    # row 1: OK,34,54,887,34,2014-08-01T08:00:00,11,20746942,182955 (Aarhus local time, CEST)
    sensor = "AarhusTrafficData182955"
    expected = (
        observation("AarhusTrafficObservation-20746942-AvgSpeed", sensor,
                    "Property-a6cd03be-ae1f-47d0-b24f-83f82ef93c4d", "54")
        | observation("AarhusTrafficObservation-20746942-VehicleCount", sensor,
                      "Property-c9f858eb-4a62-404d-be7c-0626219ec324", "11")
        | observation("AarhusTrafficObservation-20746942-MeasureTime", sensor,
                      "Property-8421b8b3-72c0-4517-87af-f1cc22d29895", None)
        | observation("AarhusTrafficObservation-20746942-EstimatedTime", sensor,
                      "Property-78652e9a-9ef7-49c6-858d-e3f0eb4f142d", repr(511 / 54))
        | observation("AarhusTrafficObservation-20746942-CongestionLevel", sensor,
                      "Property-11d60592-7d15-4934-9e23-f1b38df90fd5", repr(11 / 511))
    )
    assert set(e1.triples) == expected and len(e1.triples) == 19
    assert (e1.start, e1.end, e1.kind) == (1406872800000, 1406872800000, TimeKind.DATETIME)
    assert e1.start == 1406872800000  # 2014-08-01T06:00:00Z
    path = STREAMS / "AarhusTrafficData182955.stream"
    assert e1.graph == path.resolve().as_uri() + "#row=2"
    assert e1.origin == f"{path}:2"
    # row 2: ...,2014-08-01T08:05:00,13,20747391,...
    assert e2.start == 1406872800000 + 300_000 and e2.graph.endswith("#row=3")
    assert ox.Triple(ox.NamedNode(SES + "AarhusTrafficObservation-20747391-CongestionLevel"),
                     HAS_VALUE, ox.Literal(repr(13 / 511), datatype=DOUBLE)) in e2.triples


@needs_data
def test_pollution_first_row():
    (e,) = first("pollution-182955.rml.ttl", "AarhusPollutionData182955.stream")
    assert isinstance(e, Event)
    # the first row's readings and time, from the file itself
    header, row = (STREAMS / "AarhusPollutionData182955.stream").read_text().splitlines()[:2]
    r = dict(zip(header.split(","), row.split(","), strict=True))
    assert r["timestamp"] == "2014-08-01 00:05:00"
    api = max(float(r[c]) for c in ("ozone", "particullate_matter", "carbon_monoxide",
                                     "sulfure_dioxide", "nitrogen_dioxide"))
    assert set(e.triples) == observation(
        "AarhusPollutionObservation-182955-2014-08-01%2000%3A05%3A00",
        "AarhusPollutionData182955", "Property-c779fccb-2989-4e3e-ac14-d88b2a35c7d2", repr(api))
    assert api == 99.0
    assert e.start == 1406844300000  # 2014-07-31T22:05:00Z


@needs_data
def test_parking_first_row():
    (e,) = first("parking-KALKVAERKSVEJ.rml.ttl", "AarhusParkingDataKALKVAERKSVEJ.stream")
    assert isinstance(e, Event)
    # 115,2014-05-22 09:09:04.145,7,210,KALKVAERKSVEJ,...: 210 - 115 = 95 spaces free
    assert set(e.triples) == observation("AarhusParkingObservation-7",
                                         "AarhusParkingDataKALKVAERKSVEJ", "parkingproperty-8",
                                         "95.0")
    assert e.start == 1400742544145  # 2014-05-22T07:09:04.145Z


def test_malformed_rows_are_rejected_with_line_and_reason(tmp_path):
    csv = tmp_path / "feed.csv"
    csv.write_text(
        "status,avgMeasuredTime,avgSpeed,extID,medianMeasuredTime,TIMESTAMP,vehicleCount,_id,REPORT_ID\n"
        "OK,34,54,887,34,2014-08-01T08:00:00,11,1,182955\n"
        "OK,34,fast,887,34,2014-08-01T08:05:00,13,2,182955\n"
        "OK,34,54,887,34,2014-08-01T08:10:00,,3,182955\n"
        "OK,34,54,887,34,yesterday,9,4,182955\n"
        "OK,34,54\n"
        "OK,33,55,887,33,2014-08-01T08:20:00,9,5,182955\n")
    items = list(MappedStreamFile(EXAMPLES / "traffic-182955.rml.ttl", "http://s", source=csv))
    got = [(i.line, i.reason) if isinstance(i, Rejected) else i.origin for i in items]
    assert got == [
        f"{csv}:2",
        (3, "'fast' is not an xsd:double"),
        (4, "column 'vehicleCount' is empty"),
        (5, "time column 'TIMESTAMP': 'yesterday' is neither an integer nor a date-time"),
        (6, "3 fields where the header has 9"),
        f"{csv}:7",
    ]
    assert all(r.origin == str(csv) for r in items if isinstance(r, Rejected))


def test_header_without_a_referenced_column(tmp_path):
    csv = tmp_path / "feed.csv"
    csv.write_text("TIMESTAMP,_id\n2014-08-01T08:00:00,1\n")
    with pytest.raises(MappingError, match=r"feed.csv:1: the header has no column\(s\) avgSpeed, "
                                           r"vehicleCount that .*traffic-182955.rml.ttl"):
        list(MappedStreamFile(EXAMPLES / "traffic-182955.rml.ttl", "http://s", source=csv))


def test_rml_that_rsep_does_not_run_is_refused(tmp_path):
    m = tmp_path / "join.rml.ttl"
    m.write_text("""
@prefix rr: <http://www.w3.org/ns/r2rml#> . @prefix rml: <http://semweb.mmlab.be/ns/rml#> .
@prefix rsepml: <http://rsep.invalid/rml#> .
<#a> rml:logicalSource [ rml:source "a.csv" ; rsepml:eventTime "t" ] ;
  rr:subjectMap [ rr:template "http://x/{id}" ] ;
  rr:predicateObjectMap [ rr:predicate <http://x/p> ;
    rr:objectMap [ rr:parentTriplesMap <#a> ; rr:joinCondition [ rr:child "id" ; rr:parent "id" ] ] ] .
""")
    with pytest.raises(MappingError, match=r"join.rml.ttl: .*parentTriplesMap> is RML that rsep "
                                           r"does not run"):
        load_mapping(m)
    m.write_text(m.read_text().replace('rsepml:eventTime "t"', ""))
    with pytest.raises(MappingError, match=r"no <http://rsep.invalid/rml#eventTime>"):
        load_mapping(m)


def test_jsonl_rows(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"t": 5, "id": "a", "v": 1.5}\n[1]\n{"t": 7, "id": "b", "v": 2}\n')
    m = tmp_path / "rows.rml.ttl"
    m.write_text("""
@prefix rr: <http://www.w3.org/ns/r2rml#> . @prefix rml: <http://semweb.mmlab.be/ns/rml#> .
@prefix ql: <http://semweb.mmlab.be/ns/ql#> . @prefix rsepml: <http://rsep.invalid/rml#> .
<#a> rml:logicalSource [ rml:source "rows.jsonl" ; rml:referenceFormulation ql:JSONPath ;
    rml:iterator "$" ; rsepml:eventTime "t" ] ;
  rr:subjectMap [ rr:template "http://x/{id}" ] ;
  rr:predicateObjectMap [ rr:predicate <http://x/v> ; rr:objectMap [ rml:reference "v" ;
    rr:datatype <http://www.w3.org/2001/XMLSchema#decimal> ] ] .
""")
    items = list(MappedStreamFile(m, "http://s"))
    dec = ox.NamedNode("http://www.w3.org/2001/XMLSchema#decimal")
    assert [(i.start, i.kind, i.triples) for i in items if isinstance(i, Event)] == [
        (5, TimeKind.ABSTRACT, (ox.Triple(ox.NamedNode("http://x/a"), ox.NamedNode("http://x/v"),
                                          ox.Literal("1.5", datatype=dec)),)),
        (7, TimeKind.ABSTRACT, (ox.Triple(ox.NamedNode("http://x/b"), ox.NamedNode("http://x/v"),
                                          ox.Literal("2", datatype=dec)),)),
    ]
    assert [(r.line, r.reason) for r in items if isinstance(r, Rejected)] == [
        (2, "a line must be a JSON object")]


@needs_data
def test_citybench_q1_demo_prints_its_first_results(tmp_path, capsys, monkeypatch):
    # the shipped mappings name their feeds relative to themselves (../../../shared/data/...):
    # lay out a checkout beside the data, with the real feeds' first rows (the whole months
    # take minutes: `make citybench-q1` prints the first results of the full run)
    data = tmp_path / "shared/data/citybench"
    (data / "streams").mkdir(parents=True)
    (data / "SensorRepository.n3").symlink_to((CITYBENCH / "SensorRepository.n3").resolve())
    for feed, rows in (("182955", 2), ("158505", 4)):  # up to 08:05 local time in both
        name = f"AarhusTrafficData{feed}.stream"
        head = (STREAMS / name).read_text().splitlines(keepends=True)[: rows + 1]
        (data / "streams" / name).write_text("".join(head))
    shutil.copytree(EXAMPLES, tmp_path / "p/examples/citybench")
    monkeypatch.chdir(tmp_path / "p")
    args = ["run", "examples/citybench/q1.rq",
            "--stream", f"{SES}AarhusTrafficData182955=examples/citybench/traffic-182955.rml.ttl",
            "--stream", f"{SES}AarhusTrafficData158505=examples/citybench/traffic-158505.rml.ttl",
            "--graph", "http://127.0.0.1:9000/WebGlCity/RDF/SensorRepository.rdf="
                       "../shared/data/citybench/SensorRepository.n3",
            "--until", "2014-08-01T06:05:03Z"]  # the window's steps after the last row
    assert main(args) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]

    def row(t: str, o1: str, o2: str, v1: float, v2: float) -> dict:
        return {"time": t, "bindings": {
            "obId1": f"<{SES}AarhusTrafficObservation-{o1}-CongestionLevel>",
            "obId2": f"<{SES}AarhusTrafficObservation-{o2}-CongestionLevel>",
            "v1": f'"{v1!r}"^^<{DOUBLE.value}>', "v2": f'"{v2!r}"^^<{DOUBLE.value}>'}}

    # 08:00 local: 182955 counts 11 vehicles on 511 m, 158505 one on 2065 m; the 3 s window
    # stepping each second holds both for three steps; then the 08:05 pair likewise
    first = row("2014-08-01T06:00:01Z", "20746942", "20746671", 11 / 511, 1 / 2065)
    second = row("2014-08-01T06:05:01Z", "20747391", "20747120", 13 / 511, 1 / 2065)
    assert out == [first,
                   {**first, "time": "2014-08-01T06:00:02Z"},
                   {**first, "time": "2014-08-01T06:00:03Z"},
                   second, {**second, "time": "2014-08-01T06:05:02Z"},
                   {**second, "time": "2014-08-01T06:05:03Z"}]
