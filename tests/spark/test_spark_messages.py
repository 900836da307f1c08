"""The Spark engine reads RDF Message Logs from files as the in-process engine does."""

from __future__ import annotations

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


def test_spark_refuses_an_rml_mapping_and_says_how_to_convert_it(capsys):
    query = str(ROOT / "examples" / "citybench" / "q1.rq")
    mapping = str(ROOT / "examples" / "citybench" / "traffic-182955.rml.ttl")
    assert main(["run", query, "--stream", f"{SR}={mapping}", "--engine", "spark"]) == 1
    assert capsys.readouterr().err == (
        f"rsep: {mapping}: an RML-mapped stream runs in-process (rsep run without "
        "--engine spark); for Spark, map it to an RDF Message Log first: "
        f"rsep convert {mapping} --to rdfm-trig -o STREAM.trig\n")
