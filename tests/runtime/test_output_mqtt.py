"""``rsep run --output mqtt://HOST:PORT/TOPIC`` against a real mosquitto: a subscriber gets
exactly the file output's items, one per message (jsonl objects; one RDF Message per
evaluation), also when the run is ended by Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import paho.mqtt.client as paho
import pytest
from mqtt_broker import publish

from rsep.cli.main import main
from rsep.runtime.mqtt_output import delimited_frames
from rsep.stream.messages import MessageLog
from rsep.stream.writer import DELIMITER, HEADER, split_log
from rsep.testing.snippets import ROOT, SRBENCH_HOT_CONSTRUCT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
QUERY = str(ROOT / "examples" / "srbench-hot.rq")
HOT = SRBENCH_HOT_CONSTRUCT


class Subscriber:
    """A QoS 1 subscriber collecting the payloads published on ``topic``."""

    def __init__(self, port: int, topic: str) -> None:
        self.payloads: list[bytes] = []
        ready = threading.Event()
        self.c = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.c.on_connect = lambda c, *a: c.subscribe(topic, qos=1)
        self.c.on_subscribe = lambda *a: ready.set()
        self.c.on_message = lambda c, u, msg: self.payloads.append(msg.payload)
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()
        assert ready.wait(10)

    def wait(self, n: int, timeout: float = 20) -> list[bytes]:
        """The payloads once ``n`` have come (and a moment for any extra one)."""
        deadline = time.monotonic() + timeout
        while len(self.payloads) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        self.c.disconnect()
        self.c.loop_stop()
        return self.payloads


def _run(*args: str) -> int:
    return main(["run", *args, "--stream", f"{SR}={SRBENCH}", "-q"])


def test_jsonl_items_are_the_files_lines(broker, tmp_path):  # noqa: F811
    out = tmp_path / "hot.jsonl"
    assert _run(QUERY, "-o", str(out)) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 35
    sub = Subscriber(broker, "results/hot")
    assert _run(QUERY, "-o", f"mqtt://127.0.0.1:{broker}/results/hot") == 0
    assert [p.decode() for p in sub.wait(len(lines))] == lines


@pytest.mark.parametrize("fmt", ["rdfm-trig", "rdfm-nquads"])
def test_one_rdf_message_per_evaluation(broker, tmp_path, fmt):  # noqa: F811
    q = tmp_path / "hot.rq"
    q.write_text(HOT)
    out = tmp_path / "hot.log"
    assert _run(str(q), "--format", fmt, "-o", str(out)) == 0
    assert out.read_text().startswith(HEADER) and out.read_text().endswith(DELIMITER)
    messages = split_log(out.read_text())
    assert len(messages) >= 3
    sub = Subscriber(broker, "results/hot")
    assert _run(str(q), "--format", fmt, "-o", f"mqtt://127.0.0.1:{broker}/results/hot") == 0
    got = [p.decode() for p in sub.wait(len(messages))]
    assert got == messages
    # each payload is one message: read back as a log, the same events as the file's
    log = tmp_path / ("back.nq" if fmt == "rdfm-nquads" else "back.trig")
    log.write_text(HEADER + "".join(p + DELIMITER for p in got))
    fmt_ = "nquads" if fmt == "rdfm-nquads" else "trig"
    assert [(e.graph, e.start, e.triples) for e in MessageLog(log, "urn:r", fmt=fmt_)] == \
        [(e.graph, e.start, e.triples) for e in MessageLog(out, "urn:r", fmt=fmt_)]


def test_jelly_one_frame_per_message(broker, tmp_path):  # noqa: F811
    q = tmp_path / "hot.rq"
    q.write_text(HOT)
    out = tmp_path / "hot.jelly"
    assert _run(str(q), "--format", "jelly", "-o", str(out)) == 0
    frames = delimited_frames(out.read_bytes())
    assert len(frames) >= 3
    sub = Subscriber(broker, "results/jelly")
    assert _run(str(q), "--format", "jelly", "-o", f"mqtt://127.0.0.1:{broker}/results/jelly") == 0
    assert sub.wait(len(frames)) == frames


def test_formats_without_items_and_bad_urls_are_refused(broker, tmp_path, capsys):  # noqa: F811
    assert _run(QUERY, "--format", "csv", "-o", f"mqtt://127.0.0.1:{broker}/r") == 1
    assert capsys.readouterr().err.strip() == (
        f"rsep: --output mqtt://127.0.0.1:{broker}/r publishes one item per message: give "
        "--format jsonl, rdfm-trig, rdfm-nquads, jelly (not csv: its rows and blocks are not items)")
    assert _run(QUERY, "-o", f"mqtt://127.0.0.1:{broker}/r/#") == 1
    assert capsys.readouterr().err.strip() == \
        "rsep: cannot publish to a topic filter with wildcards: 'r/#'"


def test_ctrl_c_ends_a_live_run_with_every_result_published(broker, tmp_path):  # noqa: F811
    """A run reading MQTT (no end) and publishing to MQTT, stopped by SIGINT: the last
    evaluation's message, held until the run ends, is published too."""
    q = tmp_path / "hot.rq"
    q.write_text(HOT)
    ref = tmp_path / "ref.trig"
    assert _run(str(q), "--format", "rdfm-trig", "-o", str(ref)) == 0
    want = split_log(ref.read_text())
    log = tmp_path / "weather.nq"
    assert main(["convert", str(SRBENCH), "--to", "rdfm-nquads", "-o", str(log), "-q"]) == 0
    payloads = [m.rstrip("\n") for m in split_log(log.read_text()) if m.strip()]
    sub = Subscriber(broker, "results/live")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from rsep.cli.main import main; sys.exit(main())",
         "run", str(q), "--stream", f"{SR}=mqtt://127.0.0.1:{broker}/weather?format=nquads",
         "--stream-format", "rdfm", "--format", "rdfm-trig", "-q",
         "-o", f"mqtt://127.0.0.1:{broker}/results/live"],
        env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)  # the run subscribes first: MQTT delivers what is published after that
        publish(broker, "weather", payloads)
        deadline = time.monotonic() + 20
        while len(sub.payloads) < len(want) - 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(sub.payloads) == len(want) - 1  # the last evaluation's message is held
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 130, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [p.decode() for p in sub.wait(len(want))] == want



def test_a_spark_run_publishes_the_same_items(broker, spark, tmp_path):  # noqa: F811
    # one result writer (rsep.runtime.sinks.open_sink) for both engines
    out = tmp_path / "hot.jsonl"
    assert _run(QUERY, "-o", str(out)) == 0
    lines = out.read_text().splitlines()
    sub = Subscriber(broker, "results/spark")
    assert _run(QUERY, "-o", f"mqtt://127.0.0.1:{broker}/results/spark", "--engine", "spark") == 0
    assert [p.decode() for p in sub.wait(len(lines))] == lines
