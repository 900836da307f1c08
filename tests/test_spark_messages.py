"""The Spark engine reads RDF Message Logs from files as the in-process engine does."""

from __future__ import annotations

from conftest import ROOT

from rsep.cli.main import main

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"


def test_the_weather_stream_as_a_message_log_on_spark(spark, tmp_path, capsys):
    log = tmp_path / "weather.trig"
    assert main(["convert", str(SRBENCH), "--to", "rdfm-trig", "--split", "resources",
                 "-o", str(log), "-q"]) == 0
    query = str(ROOT / "examples" / "srbench-hot.rq")
    assert main(["run", query, "--stream", f"{SR}={SRBENCH}", "-q"]) == 0
    ref = capsys.readouterr().out
    assert ref.count("\n") > 20
    assert main(["run", query, "--stream", f"{SR}={log}", "-q", "--engine", "spark"]) == 0
    assert capsys.readouterr().out == ref


def test_spark_refuses_jelly_and_standard_input_with_the_reason(tmp_path, capsys):
    query = str(ROOT / "examples" / "srbench-hot.rq")
    for path in ("-", str(tmp_path / "w.jelly")):
        assert main(["run", query, "--stream", f"{SR}={path}", "--engine", "spark"]) == 1
        assert "--engine spark reads stream files" in capsys.readouterr().err
