"""``rsep serve`` and the rest of issue 24: Jelly POSTed as events, results pushed as Jelly
over WebSocket (refused on SSE), results published to MQTT as RDF Messages, and a message's
named graphs kept through the service."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from serve_server import SPARQL, TRIG, readers, serve
from websockets.sync.client import connect

from rsep.cli.main import main
from rsep.runtime.mqtt_output import delimited_frames
from rsep.stream.writer import split_log
from rsep.testing.snippets import ROOT, SRBENCH_HOT_CONSTRUCT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
SELECT_HOT = ROOT / "examples" / "srbench-hot.rq"
UNTIL = "40000"
HOT = SRBENCH_HOT_CONSTRUCT
GARBAGE = b"\x07garbage"  # a delimited frame whose bytes are no Protobuf message


def _cli(query: Path, out: Path, *args: str) -> bytes:
    assert main(["run", str(query), "--stream", f"{SR}={SRBENCH}", "-q", "--until", UNTIL,
                 "-o", str(out), *args]) == 0
    return out.read_bytes()


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


class Subscriber:
    """The payloads published on an MQTT topic while it is subscribed."""

    def __init__(self, port: int, topic: str) -> None:
        self.payloads: list[bytes] = []
        ready = threading.Event()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.on_connect = lambda c, u, f, r, p: c.subscribe(topic, qos=1)
        self.client.on_subscribe = lambda c, u, m, r, p: ready.set()
        self.client.on_message = lambda c, u, msg: self.payloads.append(msg.payload)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        assert ready.wait(10)

    def wait(self, n: int, timeout: float = 30) -> list[bytes]:
        deadline = time.monotonic() + timeout
        while len(self.payloads) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # nothing more comes
        self.client.disconnect()
        self.client.loop_stop()
        return self.payloads


@pytest.mark.parametrize("how", [{"headers": {"Content-Type": "application/x-jelly-rdf"}},
                                 {"params": {"format": "jelly"},
                                  "headers": {"Content-Type": "application/octet-stream"}}])
def test_jelly_posted_as_events_gives_the_files_results_and_a_bad_frame_is_dead_lettered(tmp_path, how):
    want = [{"query": "http://example.org/hot", **json.loads(x)}
            for x in _cli(SELECT_HOT, tmp_path / "ref.jsonl").decode().splitlines()]
    assert len(want) == 40
    log = tmp_path / "weather.jelly"
    assert main(["convert", str(SRBENCH), "--to", "jelly", "-o", str(log), "-q"]) == 0
    frames = delimited_frames(log.read_bytes())
    head = b"".join(_varint(len(f)) + f for f in frames[:3])
    body = head + GARBAGE + b"".join(_varint(len(f)) + f for f in frames[3:])
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "hot"}, content=SELECT_HOT.read_text()).status_code == 201
        (sse, ws), = readers(client, "hot").values()
        r = client.post("/events", params={"stream": SR, **how.get("params", {})}, content=body,
                        headers=how.get("headers", {}))
        assert (r.status_code, r.json()) == (202, {"accepted": 34, "rejected": 1})
        (d,) = client.get("/deadletters").json()
        assert (d["origin"], d["line"]) == ("request-1", 4)
        assert d["reason"].startswith(f"frame 4 (byte {len(head)}): not a Jelly frame")
        assert client.post("/clock", json={"until": int(UNTIL)}).status_code == 200
        client.delete("/queries/hot")
        assert sse.results() == want
        assert ws.results() == want


def test_jelly_results_over_websocket_are_the_clis_frames_and_sse_refuses_them(tmp_path):
    q = tmp_path / "hot.rq"
    q.write_text(HOT)
    frames = delimited_frames(_cli(q, tmp_path / "hot.jelly", "--format", "jelly"))
    assert len(frames) == 8
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "hot"}, content=HOT).status_code == 201
        r = client.get("/queries/hot/results", params={"format": "jelly"})
        assert r.status_code == 406
        assert r.json()["error"].startswith("Jelly is binary and Server-Sent Events carry text")
        r = client.get("/queries/hot/results", headers={"Accept": "application/x-jelly-rdf"})
        assert r.status_code == 406
        got: dict[str, list] = {}
        base = str(client.base_url).rstrip("/").replace("http", "ws", 1) + "/queries/hot/ws"

        def read(key: str, url: str, headers: dict[str, str]) -> None:
            with connect(url, additional_headers=headers) as ws:
                ready.set()
                got[key] = list(ws)

        for key, url, headers in (("format", base + "?format=jelly", {}),
                                  ("accept", base, {"Accept": "application/x-jelly-rdf"})):
            ready = threading.Event()
            threading.Thread(target=read, args=(key, url, headers), daemon=True).start()
            assert ready.wait(10)
        time.sleep(0.2)
        r = client.post("/events", headers=TRIG, params={"stream": SR}, content=SRBENCH.read_bytes())
        assert r.status_code == 202
        assert client.post("/clock", json={"until": int(UNTIL)}).status_code == 200
        client.delete("/queries/hot")
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        # one binary message per RDF Message: the frames rsep run writes, byte for byte
        assert got["format"] == got["accept"] == frames


@pytest.mark.parametrize("fmt", ["rdfm-trig", "rdfm-nquads", "jelly", "jsonl"])
def test_a_query_with_an_mqtt_output_publishes_each_item_as_one_message(broker, tmp_path, fmt):
    q = tmp_path / "hot.rq"
    q.write_text(HOT)
    cli = _cli(q, tmp_path / f"hot.{fmt}", "--format", fmt)
    if fmt == "jelly":
        want = delimited_frames(cli)
    elif fmt == "jsonl":
        want = [json.dumps({"query": "http://example.org/hot", **json.loads(x)}, ensure_ascii=False).encode()
                for x in cli.decode().splitlines()]
    else:
        want = [m.encode() for m in split_log(cli.decode())]
    assert len(want) == (125 if fmt == "jsonl" else 8)
    topic = f"results/{fmt}"
    sub = Subscriber(broker, topic)
    with serve() as client:
        output = f"mqtt://127.0.0.1:{broker}/{topic}"
        r = client.post("/queries", json={"query": HOT, "name": "hot", "output": output, "format": fmt})
        assert r.status_code == 201, r.text
        assert r.json()["output"] == {"url": output, "format": fmt, "published": 0, "error": None}
        assert client.post("/events", headers=TRIG, params={"stream": SR}, content=SRBENCH.read_bytes()).status_code == 202
        assert client.post("/clock", json={"until": int(UNTIL)}).status_code == 200
        assert sub.wait(len(want)) == want
        assert client.get("/queries/hot").json()["output"]["published"] == len(want)


def test_bad_outputs_are_refused_with_the_reason(broker):
    with serve() as client:
        r = client.post("/queries", headers=SPARQL, params={"output": f"mqtt://127.0.0.1:{broker}/t", "format": "rdfm-trig"},
                        content=SELECT_HOT.read_text())
        assert r.status_code == 400
        assert r.json()["error"].startswith("rdfm-trig needs a CONSTRUCT or DESCRIBE query")
        r = client.post("/queries", headers=SPARQL, params={"output": "http://example.org/"}, content=HOT)
        assert (r.status_code, r.json()["error"]) == (
            400, "an output is an MQTT topic (mqtt://HOST:PORT/TOPIC), not 'http://example.org/'")
        r = client.post("/queries", headers=SPARQL, params={"output": f"mqtt://127.0.0.1:{broker}/t", "format": "csv"},
                        content=HOT)
        assert (r.status_code, r.json()["error"]) == (
            400, "unknown output format 'csv': use jsonl, rdfm-trig, rdfm-nquads, jelly")
        r = client.post("/queries", headers=SPARQL, params={"output": "mqtt://127.0.0.1:1/t"}, content=HOT)  # no broker
        assert r.status_code == 502
        assert r.json()["error"].startswith("--output mqtt://127.0.0.1:1/t: cannot connect to the broker")
        assert client.get("/queries").json() == []


def test_a_posted_messages_named_graphs_are_kept():
    log = ("PREFIX ex: <http://example.org/>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"
           "ex:m1 prov:generatedAtTime 1 ; ex:site ex:s1 .\n"
           "ex:temp { ex:a ex:value 1 . }\nex:hum { ex:a ex:value 10 . }\n# @message\n"
           "ex:m2 prov:generatedAtTime 3 ; ex:site ex:s2 .\nex:temp { ex:b ex:value 2 . }\n")
    query = ("PREFIX ex: <http://example.org/>\nSELECT ?g ?s ?v\n"
             "FROM NAMED WINDOW ex:w ON ex:str [RANGE 2 STEP 1]\n"
             "WHERE { WINDOW ex:w { GRAPH ?g { ?s ex:value ?v } } }")
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "g"}, content=query).status_code == 201
        (sse, _), = readers(client, "g").values()
        r = client.post("/events", headers=TRIG, params={"stream": "http://example.org/str", "format": "rdfm"}, content=log)
        assert r.json() == {"accepted": 2, "rejected": 0}
        assert client.post("/clock", json={"until": 5}).status_code == 200
        client.delete("/queries/g")
        got = sorted((d["time"], d["bindings"]["g"], d["bindings"]["s"], d["bindings"]["v"].split('"')[1])
                     for d in sse.results())
    ex = "http://example.org/"
    assert got == [(1, f"<{ex}hum>", f"<{ex}a>", "10"), (1, f"<{ex}temp>", f"<{ex}a>", "1"),
                   (2, f"<{ex}hum>", f"<{ex}a>", "10"), (2, f"<{ex}temp>", f"<{ex}a>", "1"),
                   (3, f"<{ex}temp>", f"<{ex}b>", "2"), (4, f"<{ex}temp>", f"<{ex}b>", "2")]
