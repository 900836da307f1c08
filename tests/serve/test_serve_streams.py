"""Live sources attached to ``rsep serve`` (POST /streams, DELETE /streams): an MQTT or TCP
source gives the results of POSTing the same events (= ``rsep run``'s); a detached source
is no longer read; bad URLs and unreachable sources are refused with the reason."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
from mqtt_broker import free_port, publish
from serve_server import SPARQL, readers, serve

from rsep.cli.main import main
from rsep.stream.writer import split_log
from rsep.testing.snippets import ROOT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
HOT = ROOT / "examples" / "srbench-hot.rq"
UNTIL = 40000


def _want(tmp_path) -> list[dict]:
    out = tmp_path / "ref.jsonl"
    assert main(["run", str(HOT), "--stream", f"{SR}={SRBENCH}", "-q", "--until", str(UNTIL),
                 "-o", str(out)]) == 0
    rows = [{"query": "http://example.org/hot", **json.loads(x)} for x in out.read_text().splitlines()]
    assert len(rows) == 40
    return rows


def _wait_events(client: httpx.Client, n: int, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        (src,) = client.get("/streams").json()
        if src["events"] + src["rejected"] >= n or time.monotonic() > deadline:
            return src
        time.sleep(0.1)


def test_rdf_messages_over_mqtt_give_the_results_of_posting_them(broker, tmp_path):  # noqa: F811
    want = _want(tmp_path)
    log = tmp_path / "weather.nq"
    assert main(["convert", str(SRBENCH), "--to", "rdfm-nquads", "-o", str(log), "-q"]) == 0
    payloads = [m for m in split_log(log.read_text()) if m.strip()]
    assert len(payloads) == 34
    url = f"mqtt://127.0.0.1:{broker}/weather?format=nquads"
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "hot"}, content=HOT.read_text()).status_code == 201
        (sse, ws), = readers(client, "hot").values()
        r = client.post("/streams", json={"iri": SR, "url": url, "format": "rdfm"})
        assert r.status_code == 201
        assert r.json() == {"iri": SR, "url": url, "format": "rdfm", "status": "running",
                            "error": None, "events": 0, "rejected": 0}
        publish(broker, "weather", payloads)  # subscribed when the POST returned
        assert _wait_events(client, 34)["events"] == 34
        client.post("/clock", json={"until": UNTIL})
        r = client.delete("/streams", params={"iri": SR})
        assert r.json()["status"] == "detached" and r.json()["events"] == 34
        publish(broker, "weather", payloads[:1])  # no longer read
        time.sleep(0.5)
        assert client.get("/health").json()["events"] == 34
        assert client.get("/streams").json() == []
        client.delete("/queries/hot")
        assert sse.results() == want
        assert ws.results() == want


def test_a_tcp_source_of_timestamped_graphs_gives_the_files_results(tmp_path):
    want = _want(tmp_path)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    text = SRBENCH.read_bytes()

    def send() -> None:
        conn, _ = srv.accept()
        with conn:
            for i in range(0, len(text), 4093):  # pieces cut anywhere
                conn.sendall(text[i:i + 4093])
        srv.close()

    threading.Thread(target=send, daemon=True).start()
    url = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "hot"}, content=HOT.read_text()).status_code == 201
        (sse, ws), = readers(client, "hot").values()
        assert client.post("/streams", json={"iri": SR, "url": url}).status_code == 201
        src = _wait_events(client, 34)
        deadline = time.monotonic() + 10
        while src["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
            (src,) = client.get("/streams").json()
        assert (src["status"], src["events"], src["rejected"]) == ("ended", 34, 0)
        client.post("/clock", json={"until": UNTIL})
        client.delete("/queries/hot")
        assert sse.results() == want
        assert ws.results() == want


def test_bad_sources_are_refused_with_the_reason(broker):  # noqa: F811
    port = free_port()  # nothing listens there
    with serve() as client:
        r = client.post("/streams", json={"iri": SR, "url": "mqtt://127.0.0.1/"})
        assert (r.status_code, r.json()["error"]) == (
            400, "MQTT URL without a topic (mqtt://host:port/topic): 'mqtt://127.0.0.1/'")
        r = client.post("/streams", json={"iri": SR, "url": f"tcp://127.0.0.1:{port}"})
        assert r.status_code == 502
        assert r.json()["error"] == f"tcp://127.0.0.1:{port}: [Errno 111] Connection refused"
        r = client.post("/streams", json={"iri": SR})
        assert r.status_code == 400 and r.json()["error"].startswith('the body must be {"iri"')
        url = f"mqtt://127.0.0.1:{broker}/w"
        assert client.post("/streams", json={"iri": SR, "url": url}).status_code == 201
        r = client.post("/streams", json={"iri": SR, "url": url})
        assert (r.status_code, r.json()["error"]) == (
            400, f"a source is already attached to <{SR}>; detach it first")
        assert client.delete("/streams", params={"iri": "urn:none"}).status_code == 404
        assert client.delete("/streams", params={"iri": SR}).json()["status"] == "detached"
