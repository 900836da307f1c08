"""Hostile input and faults in live sources (issue 52, finding 6): ``rsep run`` over MQTT
across a broker restart loses nothing or says so, a lost broker is an error (never an end
of stream), and bytes that are not UTF-8 are rejected with their byte offset. Each test
drives the real CLI against a mosquitto it starts, kills and restarts itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mqtt_broker import MOSQUITTO, free_port, publish
from pyspark.sql.streaming.datasource import ReadAllAvailable

from rsep.spark.mqtt import MqttStreamReader
from rsep.spark.spool import SpoolError
from rsep.testing.snippets import ROOT

HEAD = "@prefix : <http://e/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
RSP = """PREFIX : <http://e/>
SELECT ?o FROM NAMED WINDOW :w ON <http://s> [RANGE 1 STEP 1]
WHERE { WINDOW :w { ?s ?p ?o } }
"""
INT = "^^<http://www.w3.org/2001/XMLSchema#integer>"


def event(t: int) -> str:
    return HEAD + f":g{t} prov:generatedAtTime {t} .\n:g{t} {{ :a :p {t} . }}\n"


def lines(err: str) -> list[str]:
    """stderr without the warnings a stale compiled build gives (tests may run pure)."""
    return [x for x in err.splitlines() if "UserWarning" not in x and not x.startswith("  ")]


class Broker:
    """A mosquitto on a fixed port that the test stops and starts again; ``persistent``:
    it saves its sessions and queues on shutdown and loads them at start."""

    def __init__(self, d: Path, persistent: bool) -> None:
        if not os.access(MOSQUITTO, os.X_OK):
            pytest.skip(f"mosquitto broker binary not found at {MOSQUITTO} (make test installs it)")
        self.port = free_port()
        self.conf = d / "mosquitto.conf"
        self.conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
                             + (f"persistence true\npersistence_location {d}/\n" if persistent
                                else "persistence false\n")
                             + "max_queued_messages 100000\n"
                             # (started as root, it would save as user mosquitto, who cannot
                             # reach pytest's 0700 directories)
                             + ("user root\n" if os.geteuid() == 0 else ""))
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen([MOSQUITTO, "-c", str(self.conf)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert self.proc.poll() is None and time.monotonic() < deadline, \
                    self.proc.stderr.read().decode() if self.proc.stderr else ""
                time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # (SIGTERM: a persistent broker saves its state)
            self.proc.wait(10)
        self.proc = None


@pytest.fixture
def brokers(tmp_path):
    made: list[Broker] = []

    def make(persistent: bool) -> Broker:
        d = tmp_path / f"broker{len(made)}"
        d.mkdir()
        made.append(Broker(d, persistent))
        return made[-1]

    yield make
    for b in made:
        b.stop()


def run_live(tmp_path: Path, url: str) -> subprocess.Popen[str]:
    q = tmp_path / "q.rq"
    q.write_text(RSP)
    return subprocess.Popen([sys.executable, "-m", "rsep.cli.main", "run", str(q), "--stream",
                             f"http://s={url}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)


def times(out: str) -> list[int]:
    return sorted({json.loads(x)["time"] for x in out.splitlines()})


def test_mqtt_across_a_broker_restart_loses_nothing(brokers, tmp_path):
    # before: a clean session, resubscribed a second or more after the broker was back:
    # the events published meanwhile were lost, rc 0, nothing on stderr
    b = brokers(persistent=True)
    p = run_live(tmp_path, f"mqtt://127.0.0.1:{b.port}/t?idle=3")
    try:
        time.sleep(1.5)  # subscribed (MQTT delivers what is published after that)
        publish(b.port, "t", [event(t) for t in range(1, 6)])
        time.sleep(0.5)
        b.stop()
        time.sleep(1.0)  # an outage: no idle time (?idle=3 is not an outage's length)
        b.start()
        publish(b.port, "t", [event(t) for t in range(6, 11)])  # at once: before rsep is back
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 0, err[-800:]
    assert times(out) == list(range(1, 11)), lines(err)


def test_mqtt_broker_back_without_the_session_is_a_located_error(brokers, tmp_path):
    # before: the broker's queue for the session was gone, the run went on and ended rc 0
    b = brokers(persistent=False)
    url = f"mqtt://127.0.0.1:{b.port}/t"
    p = run_live(tmp_path, url + "?idle=5")
    try:
        time.sleep(1.5)
        publish(b.port, "t", [event(t) for t in range(1, 4)])
        time.sleep(0.5)
        b.stop()
        b.start()
        publish(b.port, "t", [event(t) for t in range(4, 6)])
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 1
    assert lines(err) == [f"rsep: {url}: the broker came back without this client's session "
                          "(it restarted without persistence?): the messages published while "
                          "the source was disconnected are lost"]
    # what came before is evaluated and output (the evaluation at 3 waits for a later
    # event: there is none, and the source's end is an error, not the input's end)
    assert times(out) == [1, 2]


def test_a_lost_broker_is_an_error_after_the_reconnect_period_not_an_idle_end(brokers, tmp_path):
    # before: an outage longer than ?idle ended the run as if the stream had finished (rc 0)
    b = brokers(persistent=False)
    url = f"mqtt://127.0.0.1:{b.port}/t"
    p = run_live(tmp_path, url + "?idle=2&reconnect=3")
    try:
        time.sleep(1.5)
        publish(b.port, "t", [event(t) for t in range(1, 3)])
        time.sleep(0.3)
        t0 = time.monotonic()
        b.stop()
        out, err = p.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        p.kill()
    assert p.returncode == 1
    assert lines(err) == [f"rsep: {url}: the broker has been unreachable for 3 s "
                          "(?reconnect=SECONDS): the stream did not end, it was cut"]
    assert 3 <= took < 3 + 5
    assert times(out) == [1]


def test_spark_mqtt_source_fails_on_a_broker_lost_or_back_without_its_session(brokers, tmp_path):
    """Spark's rsep-mqtt reader, as the driver calls it: a broker back without the session
    fails the next trigger; one gone past reconnectTimeout too (before: the query went on,
    its session of 0 s expiry gone at the first disconnection, silently)."""
    b = brokers(persistent=False)
    r = MqttStreamReader({"host": "127.0.0.1", "port": str(b.port), "topic": "t",
                          "reconnecttimeout": "2"})
    try:
        start = r.initialOffset()
        b.stop()
        b.start()
        deadline = time.monotonic() + 10
        with pytest.raises(SpoolError, match="the broker came back without this source's session"):
            while time.monotonic() < deadline:
                r.latestOffset(start, ReadAllAvailable())
                time.sleep(0.05)
    finally:
        r.stop()
    r = MqttStreamReader({"host": "127.0.0.1", "port": str(b.port), "topic": "t",
                          "reconnecttimeout": "2"})
    try:
        start = r.initialOffset()
        b.stop()
        t0 = time.monotonic()
        with pytest.raises(SpoolError, match=r"unreachable for 2 s \(reconnectTimeout\)"):
            while time.monotonic() - t0 < 10:
                r.latestOffset(start, ReadAllAvailable())
                time.sleep(0.05)
        assert time.monotonic() - t0 < 4
    finally:
        r.stop()


def test_spark_mqtt_source_across_a_broker_restart_loses_nothing(brokers, tmp_path):
    b = brokers(persistent=True)
    # (a spool's records get acked after its fsync: the broker resends what it has no
    # PUBACK for when it stops, and the reader must spool those once)
    r = MqttStreamReader({"host": "127.0.0.1", "port": str(b.port), "topic": "t",
                          "format": "jsonl"})
    try:
        start = r.initialOffset()
        publish(b.port, "t", ["1", "2"])
        b.stop()
        b.start()
        publish(b.port, "t", ["3", "4"])  # queued for the session, before the reader is back
        deadline = time.monotonic() + 10
        while r.latestOffset(start, ReadAllAvailable())["seq"] < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        end = r.latestOffset(start, ReadAllAvailable())
        texts = [row[2] for p in r.partitions(start, end) for row in r.read(p)]
    finally:
        r.stop()
    assert texts == ["1", "2", "3", "4"]


# ------------------------------------------------------------------ bytes not UTF-8


def _serve_once(data: bytes) -> int:
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def serve() -> None:
        conn, _ = srv.accept()
        # in two pieces, cut inside the bad record: offsets count across reads
        conn.sendall(data[:len(data) // 2])
        time.sleep(0.1)
        conn.sendall(data[len(data) // 2:])
        conn.close()
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return port


BAD = (HEAD + ":g1 prov:generatedAtTime 1 .\n:g1 { :a :p 1 . }\n").encode() + \
    b':g2 prov:generatedAtTime 2 .\n:g2 { :a :p "\xc3\xa9t\xff\xfe" . }\n' + \
    b':g3 prov:generatedAtTime 3 .\n:g3 { :a :p 3 . }\n'


def test_invalid_utf8_in_live_sources_is_a_dead_letter_with_its_byte_offset(brokers, tmp_path):
    # before: read as U+FFFD, rc 0, nothing said (tcp://, mqtt://)
    q = tmp_path / "q.rq"
    q.write_text(RSP)
    at = BAD.index(b"\xff")
    port = _serve_once(BAD)
    dead = tmp_path / "dead.jsonl"
    p = subprocess.run([sys.executable, "-m", "rsep.cli.main", "run", str(q), "--stream",
                        f"http://s=tcp://127.0.0.1:{port}", "--dead-letter", str(dead)],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 3, p.stderr[-800:]
    assert "\ufffd" not in p.stdout
    assert times(p.stdout) == [1, 3]
    recs = [json.loads(x) for x in dead.read_text().splitlines()]
    assert recs[0]["reason"] == (f"invalid UTF-8: byte 0xFF at byte {at} of the connection (a "
                                 "record holding it is not read, not even in part)")
    assert recs[0]["file"].startswith(f"tcp://127.0.0.1:{port}#")

    b = brokers(persistent=False)
    url = f"mqtt://127.0.0.1:{b.port}/t"
    pr = run_live(tmp_path, url + "?idle=2")
    try:
        time.sleep(1.5)
        msgs = [event(1).encode(), HEAD.encode() + b':g2 prov:generatedAtTime 2 .\n'
                b':g2 { :a :p "\xc3\xa9t\xff" . }\n', event(3).encode()]
        publish(b.port, "t", msgs)  # (paho sends bytes as they are)
        out, err = pr.communicate(timeout=30)
    finally:
        pr.kill()
    assert pr.returncode == 3, err[-800:]
    assert times(out) == [1, 3]
    at = msgs[1].index(b"\xff")
    assert lines(err)[0] == (f"rejected: {url}#000002:4:16: invalid UTF-8: byte 0xFF at byte "
                             f"{at} of the message (a record holding it is not read, not even "
                             "in part)")

    # stdin (a pipe) is read as a file is: rejected at its line and column
    p = subprocess.run([sys.executable, "-m", "rsep.cli.main", "run", str(q), "--stream",
                        "http://s=-"], input=BAD, capture_output=True, cwd=ROOT, timeout=60)
    assert p.returncode == 3
    assert lines(p.stderr.decode())[0] == ("rejected: /dev/stdin:6:16: invalid UTF-8: byte 0xFF "
                                           "(a record holding it is not read, not even in part)")
