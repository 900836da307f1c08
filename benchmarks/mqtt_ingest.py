"""MQTT source ingest rate: broker -> spool (synced, acknowledged), without Spark.

    .venv/bin/python benchmarks/mqtt_ingest.py [--runs 3]

Starts its own mosquitto, then for each message size publishes N messages at QoS 1
from a paho client and times until the source's reader reports them all durable
(``latestOffset``), i.e. fsynced in the spool and PUBACKed. Publisher and reader run
in this one Python process, so paho's per-message cost is counted on both sides.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import paho.mqtt.client as paho
from pyspark.sql.streaming.datasource import ReadAllAvailable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rsep.spark.mqtt import MqttStreamReader  # noqa: E402
from rsep.spark.spool import Spool  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ingest(n: int, size: int, port: int, d: Path) -> float:
    r = MqttStreamReader({"host": "127.0.0.1", "port": str(port), "topic": "bench/in",
                          "spooldir": str(d / f"spool-{time.time_ns()}")})
    start = r.initialOffset()
    c = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    c.max_inflight_messages_set(1000)
    c.connect("127.0.0.1", port)
    c.loop_start()
    payload = b"x" * size
    t0 = time.perf_counter()
    for _ in range(n):
        c.publish("bench/in", payload, qos=1)
    while r.latestOffset(start, ReadAllAvailable())["seq"] < n:
        time.sleep(0.002)
    dt = time.perf_counter() - t0
    c.disconnect()
    c.loop_stop()
    r.stop()
    return n / dt


def spool_rate(n: int, size: int, d: Path) -> tuple[float, float]:
    s = Spool(d / f"raw-{time.time_ns()}")
    p = b"x" * size
    t0 = time.perf_counter()
    for i in range(n):
        s.append("bench/in", p, i)
    s.sync()
    w = n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    sum(1 for _ in s.read(0, n))
    rd = n / (time.perf_counter() - t0)
    s.close()
    return w, rd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mosquitto", default="/usr/sbin/mosquitto")
    a = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="rsep-mqtt-bench-"))
    port = free_port()
    (d / "m.conf").write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n"
                              "persistence false\nmax_queued_messages 0\n")
    broker = subprocess.Popen([a.mosquitto, "-c", str(d / "m.conf")], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        w, rd = zip(*(spool_rate(100_000, 300, d) for _ in range(a.runs)), strict=True)
        print(f"spool alone, 300 B records: append+fsync {statistics.median(w):,.0f}/s, "
              f"read {statistics.median(rd):,.0f}/s")
        for n, size in ((20_000, 300), (2_000, 100_000)):
            rates = [ingest(n, size, port, d) for _ in range(a.runs)]
            print(f"MQTT -> spool, {n} messages of {size} B: median "
                  f"{statistics.median(rates):,.0f} msg/s "
                  f"(runs {', '.join(f'{x:,.0f}' for x in rates)})")
    finally:
        broker.terminate()
        broker.wait(10)


if __name__ == "__main__":
    main()
