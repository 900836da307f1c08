"""``rsep serve`` and RDF Messages: CONSTRUCT results pushed as one RDF Message per
evaluation (SSE and WebSocket, by ``?format=`` or ``Accept``), exactly the messages of
``rsep run --format rdfm-*``; SELECT queries refuse them with 406; RDF Message Logs POSTed
as events give the results of the original stream file."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from serve_server import NQUADS, SPARQL, TRIG, readers, serve
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from rsep.cli.main import main
from rsep.stream.writer import split_log
from rsep.testing.snippets import ROOT, SRBENCH_HOT_CONSTRUCT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
SELECT_HOT = ROOT / "examples" / "srbench-hot.rq"
HOT = SRBENCH_HOT_CONSTRUCT
UNTIL = "40000"


class RawReader(threading.Thread):
    """A result stream's items as pushed: (SSE event, its data lines joined) or WebSocket texts."""

    def __init__(self, url: str, *, ws: bool = False, headers: dict[str, str] | None = None) -> None:
        super().__init__(daemon=True)
        self.url, self.ws, self.headers = url, ws, headers or {}
        self.items: list[tuple[str, str]] = []
        self.ready = threading.Event()

    def run(self) -> None:
        if self.ws:
            with connect(self.url.replace("http", "ws", 1), additional_headers=self.headers) as ws:
                self.ready.set()
                self.items = [("result", str(m)) for m in ws]
            return
        with httpx.stream("GET", self.url, headers=self.headers, timeout=60) as r:
            assert r.status_code == 200
            self.ready.set()
            kind, data = "", []
            for line in r.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and kind:
                    self.items.append((kind, "\n".join(data)))
                    if kind == "end":
                        return
                    kind, data = "", []

    def results(self, kind: str = "result") -> list[str]:
        self.join(30)
        assert not self.is_alive()
        return [d for k, d in self.items if k == kind]


def _cli(query: Path, out: Path, *args: str, stream: Path = SRBENCH) -> str:
    assert main(["run", str(query), "--stream", f"{SR}={stream}", "-q", "--until", UNTIL,
                 "-o", str(out), *args]) == 0
    return out.read_text()


def _post_and_close(client: httpx.Client, body: bytes, **kw) -> None:
    r = client.post("/events", params={"stream": SR, **kw.pop("params", {})}, content=body,
                    headers=kw.pop("headers", TRIG), **kw)
    assert r.status_code == 202, r.text
    assert r.json()["rejected"] == 0
    assert client.post("/clock", json={"until": int(UNTIL)}).status_code == 200


def test_construct_results_are_pushed_as_the_clis_rdf_messages(tmp_path):
    q = tmp_path / "hot.rq"
    q.write_text(HOT)
    # a WebSocket message is the message's text; SSE data cannot end with a line break
    messages = {fmt: split_log(_cli(q, tmp_path / f"hot.{fmt}", "--format", fmt))
                for fmt in ("rdfm-trig", "rdfm-nquads")}
    sse = {fmt: [m.rstrip("\n") for m in ms] for fmt, ms in messages.items()}
    assert len(messages["rdfm-trig"]) == 8
    assert messages["rdfm-trig"][0].startswith(
        "<urn:rsep:result:http://example.org/hot:0> <http://www.w3.org/ns/prov#generatedAtTime> "
        '"0"^^<http://www.w3.org/2001/XMLSchema#integer> .\n<urn:rsep:result:http://example.org/hot:0> {')
    jsonl = [json.loads(x) for x in _cli(q, tmp_path / "hot.jsonl").splitlines()]
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "hot"}, content=HOT).status_code == 201
        base = str(client.base_url).rstrip("/") + "/queries/hot"
        rs = {"sse-format": RawReader(f"{base}/results?format=rdfm-trig"),
              "sse-accept": RawReader(f"{base}/results",
                                      headers={"Accept": "application/n-quads; messages=rdfm"}),
              "ws-format": RawReader(f"{base}/ws?format=rdfm-nquads", ws=True),
              "ws-accept": RawReader(f"{base}/ws", ws=True,
                                     headers={"Accept": "application/trig; messages=rdfm"}),
              "sse-jsonl": RawReader(f"{base}/results")}
        for r in rs.values():
            r.start()
            assert r.ready.wait(10)
        time.sleep(0.2)
        _post_and_close(client, SRBENCH.read_bytes())
        client.delete("/queries/hot")
        # (an RDF Message is an rdf-message event, as the spec's discovery tests frame it)
        assert rs["sse-format"].results("rdf-message") == sse["rdfm-trig"]
        assert rs["ws-accept"].results() == messages["rdfm-trig"]
        assert rs["sse-accept"].results("rdf-message") == sse["rdfm-nquads"]
        assert rs["ws-format"].results() == messages["rdfm-nquads"]
        assert [json.loads(d) for d in rs["sse-jsonl"].results()] == \
            [{"query": "http://example.org/hot", **d} for d in jsonl]


def test_select_refuses_rdf_message_formats_with_406():
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "hot"},
                           content=SELECT_HOT.read_text()).status_code == 201
        reason = ("query hot gives bindings, not triples: its results are pushed as jsonl "
                  "objects; rdfm-trig needs a CONSTRUCT or DESCRIBE query (or an EP-SPARQL "
                  "CONSTRUCT rule)")
        r = client.get("/queries/hot/results", params={"format": "rdfm-trig"})
        assert (r.status_code, r.json()) == (406, {"error": reason})
        r = client.get("/queries/hot/results", headers={"Accept": "application/trig"})
        assert (r.status_code, r.json()) == (406, {"error": reason})
        r = client.get("/queries/hot/results", params={"format": "turtle"})
        assert r.status_code == 406
        assert r.json() == {"error": "unknown result format 'turtle': use jsonl, rdfm-trig, rdfm-nquads"}
        url = str(client.base_url).rstrip("/").replace("http", "ws", 1) + "/queries/hot/ws?format=rdfm-trig"
        with pytest.raises(InvalidStatus) as e:
            connect(url)  # the handshake itself is refused
        assert e.value.response.status_code == 406
        assert json.loads(e.value.response.body) == {"error": reason}


@pytest.mark.parametrize(("fmt", "how"), [
    ("rdfm-trig", {"headers": {"Content-Type": "application/trig; version=1.2; messages=rdfm"}}),
    ("rdfm-nquads", {"params": {"format": "rdfm-nquads"}, "headers": NQUADS}),
    ("rdfm-trig", {"params": {"format": "rdfm"}, "headers": TRIG}),
])
def test_rdf_message_logs_posted_as_events_give_the_files_results(tmp_path, capsys, fmt, how):
    want = [json.loads(x) for x in _cli(SELECT_HOT, tmp_path / "ref.jsonl").splitlines()]
    assert len(want) == 40
    log = tmp_path / ("weather.nq" if fmt == "rdfm-nquads" else "weather.trig")
    assert main(["convert", str(SRBENCH), "--to", fmt, "--split", "resources", "-o", str(log),
                 "-q"]) == 0
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "hot"},
                           content=SELECT_HOT.read_text()).status_code == 201
        (sse, ws), = readers(client, "hot").values()
        _post_and_close(client, log.read_bytes(), **how)
        client.delete("/queries/hot")
        want = [{"query": "http://example.org/hot", **d} for d in want]
        assert sse.results() == want
        assert ws.results() == want


def test_a_malformed_message_is_dead_lettered_and_the_log_goes_on(tmp_path):
    log = ("@prefix prov: <http://www.w3.org/ns/prov#> .\n"
           "<urn:e1> prov:generatedAtTime 1 .\n<urn:e1> { <urn:a> <urn:p> 1 . }\n# @message\n"
           "<urn:e2> prov:generatedAtTime 2 .\n<urn:e2> { <urn:a> <urn:p> . }\n# @message\n"
           "<urn:e3> { <urn:a> <urn:p> 3 . }\n# @message\n"
           "<urn:e4> prov:generatedAtTime 4 .\n<urn:e4> { <urn:a> <urn:p> 4 . }\n")
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "all"}, content=(
            "SELECT ?o WHERE { STREAM <urn:s> [RANGE 10] { ?s ?p ?o } }")).status_code == 201
        r = client.post("/events", headers=TRIG, params={"stream": "urn:s", "format": "rdfm"}, content=log)
        assert r.json() == {"accepted": 2, "rejected": 2}
        dead = client.get("/deadletters").json()
        assert [(d["origin"], d["line"], d["reason"]) for d in dead] == [
            ("request-1", 6, "message 2: . is not a valid RDF object"),
            ("request-1", 8, "message 3 has no time (expected a triple with "
                             "<http://www.w3.org/ns/prov#generatedAtTime>, "
                             "<http://streamreasoning.org/timeVocab#startsAtTime>; or read the log with "
                             "--time-predicate arrival)")]
        stats = client.get("/queries/all").json()
        assert stats["events_in"] == 2


def test_sse_and_websocket_frame_rdf_messages_as_the_discovery_tests_do(tmp_path):
    """The spec's discovery tests (messages-tests, "Message Stream Discovery Tests") over the
    real server: SSE says the messages' media type in RDF-Message-Content-Type and sends each
    as an ``rdf-message`` event; a WebSocket client offering ``rdfm.*`` subprotocols gets the
    first one rsep pushes, answered in the handshake, and the messages in that syntax; one
    offering none rsep pushes, or not the one ?format= names, is refused with the reason."""
    from websockets.sync.client import connect as ws_connect

    q = tmp_path / "hot.rq"
    q.write_text(HOT)
    messages = {fmt: split_log(_cli(q, tmp_path / f"hot.{fmt}", "--format", fmt))
                for fmt in ("rdfm-trig", "rdfm-nquads")}
    with serve() as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "hot"}, content=HOT).status_code == 201
        base = str(client.base_url).rstrip("/") + "/queries/hot"
        ws_base = base.replace("http", "ws", 1)
        with httpx.stream("GET", f"{base}/results?format=rdfm-nquads", timeout=30) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            assert r.headers["rdf-message-content-type"] == "application/n-quads"
        with httpx.stream("GET", f"{base}/results", timeout=30) as r:  # jsonl: no RDF Messages
            assert "rdf-message-content-type" not in r.headers
        for offered, why in [
                (["rdfm.ld-json", "rdfm.n-triples"], "none of the offered subprotocols "
                 "(rdfm.ld-json, rdfm.n-triples) is pushed here: rsep pushes a query's RDF "
                 "Messages as rdfm.trig, rdfm.n-quads, rdfm.x-jelly-rdf"),
                (["rdfm.n-quads"], "?format=rdfm-trig is not among the offered subprotocols")]:
            url = f"{ws_base}/ws" + ("?format=rdfm-trig" if len(offered) == 1 else "")
            with pytest.raises(InvalidStatus) as e:
                ws_connect(url, subprotocols=offered)  # type: ignore[arg-type]
            assert e.value.response.status_code == 406
            assert json.loads(e.value.response.body)["error"].startswith(why)
        got: dict[str, list[str]] = {}
        chosen: dict[str, str | None] = {}
        ready = threading.Barrier(3)

        def read_ws(offered: list[str]) -> None:
            with ws_connect(f"{ws_base}/ws", subprotocols=offered) as ws:  # type: ignore[arg-type]
                chosen[offered[-1]] = ws.subprotocol
                ready.wait(10)
                got[offered[-1]] = [str(m) for m in ws]

        sse = RawReader(f"{base}/results?format=rdfm-trig")
        threads = [threading.Thread(target=read_ws, args=(o,), daemon=True)
                   for o in (["rdfm.ld-json", "rdfm.n-quads"], ["chat", "rdfm.trig"])]
        for t in threads:
            t.start()
        sse.start()
        assert sse.ready.wait(10)
        ready.wait(10)
        time.sleep(0.2)
        _post_and_close(client, SRBENCH.read_bytes())
        client.delete("/queries/hot")
        for t in threads:
            t.join(30)
    assert chosen == {"rdfm.n-quads": "rdfm.n-quads", "rdfm.trig": "rdfm.trig"}
    assert got == {"rdfm.n-quads": messages["rdfm-nquads"], "rdfm.trig": messages["rdfm-trig"]}
    assert sse.results("rdf-message") == [m.rstrip("\n") for m in messages["rdfm-trig"]]
    assert sse.results() == []  # no "result" events
