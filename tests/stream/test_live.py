"""Live sources for rsep run (TCP, MQTT), framed as the Spark sources frame them: the same
results as the same events from a file."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
from mqtt_broker import publish

from rsep.cli.main import main
from rsep.stream.live import LiveStream, mqtt_url, tcp_url
from rsep.stream.messages import MessageLog
from rsep.stream.writer import split_log
from rsep.testing.snippets import ROOT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
QUERY = str(ROOT / "examples" / "srbench-hot.rq")


def _serve(text: str, piece: int = 997) -> int:
    """A TCP server that sends ``text`` in small pieces to its one client, then closes."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def run() -> None:
        conn, _ = srv.accept()
        with conn:
            data = text.encode()
            for i in range(0, len(data), piece):  # pieces cut anywhere, inside characters too
                conn.sendall(data[i:i + piece])
        srv.close()

    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1]


def _run(args: list[str], out: Path) -> tuple[int, list[dict]]:
    code = main(["run", QUERY, *args, "-q", "-o", str(out)])
    return code, [json.loads(line) for line in out.read_text().splitlines()]


def test_url_syntax():
    assert tcp_url("tcp://h:9000") == ("h", 9000)
    assert mqtt_url("mqtt://h:1884/sensors/#") == ("h", 1884, "sensors/#")
    with pytest.raises(ValueError, match="unknown option"):
        LiveStream("tcp://h:1?speed=2", "urn:s")
    with pytest.raises(ValueError, match="format must be"):
        LiveStream("mqtt://h/t?format=turtle", "urn:s")


def test_a_tcp_source_gives_the_files_results(tmp_path):
    _, ref = _run(["--stream", f"{SR}={SRBENCH}"], tmp_path / "ref.jsonl")
    port = _serve(SRBENCH.read_text())
    code, got = _run(["--stream", f"{SR}=tcp://127.0.0.1:{port}"], tmp_path / "tcp.jsonl")
    assert (code, got) == (0, ref)


def test_a_message_log_over_tcp_gives_the_files_results(tmp_path):
    _, ref = _run(["--stream", f"{SR}={SRBENCH}"], tmp_path / "ref.jsonl")
    log = tmp_path / "weather.trig"
    assert main(["convert", str(SRBENCH), "--to", "rdfm-trig", "--split", "resources", "-o", str(log), "-q"]) == 0
    port = _serve(log.read_text())
    code, got = _run(["--stream", f"{SR}=tcp://127.0.0.1:{port}", "--stream-format", "rdfm"],
                     tmp_path / "tcp.jsonl")
    assert (code, got) == (0, ref)


def test_a_source_that_dies_mid_event_reports_the_partial_record(tmp_path):
    text = SRBENCH.read_text()
    cut = text.index("<http://example.org/srbench/event/02> {")
    cut = text.index("\n", cut + 2000)  # inside event 02's graph block
    port = _serve(text[:cut])
    dead = tmp_path / "dead.jsonl"
    code, got = _run(["--stream", f"{SR}=tcp://127.0.0.1:{port}", "--dead-letter", str(dead)],
                     tmp_path / "tcp.jsonl")
    assert code == 3
    partial, orphan = [json.loads(x) for x in dead.read_text().splitlines()]
    # the partial record, located at its frame, and the time triple left without its graph
    assert partial["file"] == orphan["file"] == f"tcp://127.0.0.1:{port}#000003"
    assert partial["record"].startswith("<http://example.org/srbench/event/02> {")
    assert orphan["reason"].startswith("timestamp given for <http://example.org/srbench/event/02>, but")
    assert [r["time"] for r in got] == [0, 0, 0, 0, 0]  # the events before it were evaluated


def test_rdf_messages_over_mqtt_one_broker_message_each(broker, tmp_path):  # noqa: F811
    _, ref = _run(["--stream", f"{SR}={SRBENCH}"], tmp_path / "ref.jsonl")
    log = tmp_path / "weather.nq"
    assert main(["convert", str(SRBENCH), "--to", "rdfm-nquads", "-o", str(log), "-q"]) == 0
    payloads = [m.rstrip("\n") for m in split_log(log.read_text()) if m.strip()]
    assert len(payloads) == 34 == sum(1 for _ in MessageLog(log, SR).messages())
    url = f"mqtt://127.0.0.1:{broker}/weather?format=nquads&idle=4"
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(out=_run(
        ["--stream", f"{SR}={url}", "--stream-format", "rdfm"], tmp_path / "mqtt.jsonl")))
    runner.start()
    time.sleep(1.5)  # the run subscribes first: MQTT delivers what is published after that
    publish(broker, "weather", payloads)
    runner.join(60)
    assert result["out"] == (0, ref)
