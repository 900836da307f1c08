"""A real MQTT broker for the tests (Debian's mosquitto, which make test installs), and a
publisher: shared by the Spark MQTT source's tests and rsep run's live MQTT source's."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import paho.mqtt.client as paho
import pytest

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker(tmp_path_factory):  # conftest.py makes it the `broker` fixture
    if not os.access(MOSQUITTO, os.X_OK):
        pytest.skip(f"mosquitto broker binary not found at {MOSQUITTO} (make test installs it)")
    d = tmp_path_factory.mktemp("mosquitto")
    port = free_port()
    conf = d / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                    "max_queued_messages 100000\nmax_inflight_messages 0\n")
    proc = subprocess.Popen([MOSQUITTO, "-c", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"mosquitto did not start: {proc.stderr.read().decode()}") from None
            time.sleep(0.05)
    yield port
    proc.terminate()
    proc.wait(10)


def publish(port: int, topic: str, payloads: list[str]) -> None:
    c = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    c.connect("127.0.0.1", port)
    c.loop_start()
    infos = [c.publish(topic, p, qos=1) for p in payloads]
    for i in infos:
        i.wait_for_publish(10)
        assert i.is_published()
    c.disconnect()
    c.loop_stop()
