"""The Spark engine reads RDF Message Logs from files as the in-process engine does."""

from __future__ import annotations

import json

from rsep.cli.main import main
from rsep.testing.snippets import ROOT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"


def test_the_weather_stream_as_a_message_log_on_spark(spark, tmp_path, capsys):
    query = str(ROOT / "examples" / "srbench-hot.rq")
    assert main(["run", query, "--stream", f"{SR}={SRBENCH}", "-q"]) == 0
    ref = capsys.readouterr().out
    assert ref.count("\n") > 20
    for fmt, name in (("rdfm-trig", "weather.trig"), ("jelly", "weather.jelly")):
        log = tmp_path / name
        assert main(["convert", str(SRBENCH), "--to", fmt, "--split", "resources",
                     "-o", str(log), "-q"]) == 0
        capsys.readouterr()
        assert main(["run", query, "--stream", f"{SR}={log}", "-q", "--engine", "spark"]) == 0
        assert capsys.readouterr().out == ref, fmt


def test_spark_refuses_standard_input_and_live_sources_with_the_reason(capsys):
    query = str(ROOT / "examples" / "srbench-hot.rq")
    for path in ("-", "tcp://localhost:9"):
        assert main(["run", query, "--stream", f"{SR}={path}", "--engine", "spark"]) == 1
        assert "--engine spark reads stream files" in capsys.readouterr().err


def test_spark_refuses_what_its_mqtt_source_does_not_read_before_a_session(capsys):
    query = str(ROOT / "examples" / "srbench-hot.rq")
    for url, args, why in [
            ("mqtt://127.0.0.1:9/t?format=jelly", [], "Jelly over MQTT is read by the in-process"),
            ("mqtt://127.0.0.1:9/t?format=jsonl", ["--stream-format", "rdfm"],
             "an RDF Message Log is TriG or N-Quads, not JSON lines"),
            ("mqtt://127.0.0.1:9/t?window=1", [], "unknown option(s) window"),
            ("mqtt://127.0.0.1:9/t", ["--batch"], "--batch replays files; an MQTT topic")]:
        assert main(["run", query, "--stream", f"{SR}={url}", "--engine", "spark", *args]) == 1
        assert why in capsys.readouterr().err, url


def test_spark_refuses_an_rml_mapping_and_says_how_to_convert_it(capsys):
    query = str(ROOT / "examples" / "citybench" / "q1.rq")
    mapping = str(ROOT / "examples" / "citybench" / "traffic-182955.rml.ttl")
    assert main(["run", query, "--stream", f"{SR}={mapping}", "--engine", "spark"]) == 1
    assert capsys.readouterr().err == (
        f"rsep: {mapping}: an RML-mapped stream runs in-process (rsep run without "
        "--engine spark); for Spark, map it to an RDF Message Log first: "
        f"rsep convert {mapping} --to rdfm-trig -o STREAM.trig\n")


def test_a_messages_named_graphs_are_kept_on_spark(spark, tmp_path, capsys):
    # a message with two named graphs beside its default graph (tests/stream/test_message_graphs.py)
    log, q = tmp_path / "log.trig", tmp_path / "q.rq"
    log.write_text("PREFIX ex: <http://example.org/>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"
                   "ex:m1 prov:generatedAtTime 1 ; ex:site ex:s1 .\n"
                   "ex:temp { ex:a ex:value 1 . }\nex:hum { ex:a ex:value 10 . }\n# @message\n"
                   "ex:m2 prov:generatedAtTime 3 ; ex:site ex:s2 .\nex:temp { ex:b ex:value 2 . }\n")
    q.write_text("PREFIX ex: <http://example.org/>\nSELECT ?g ?s ?v\n"
                 "FROM NAMED WINDOW ex:w ON ex:str [RANGE 2 STEP 1]\n"
                 "WHERE { WINDOW ex:w { GRAPH ?g { ?s ex:value ?v } } }")
    args = ["run", str(q), "--stream", f"http://example.org/str={log}", "-q"]
    assert main(args) == 0
    ref = capsys.readouterr().out
    ex = "http://example.org/"
    assert sorted((r["time"], r["bindings"]["g"], r["bindings"]["v"].split('"')[1])
                  for r in map(json.loads, ref.splitlines())) == [
        (1, f"<{ex}hum>", "10"), (1, f"<{ex}temp>", "1"), (2, f"<{ex}hum>", "10"),
        (2, f"<{ex}temp>", "1"), (3, f"<{ex}temp>", "2")]
    assert main([*args, "--engine", "spark"]) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == sorted(ref.splitlines())
