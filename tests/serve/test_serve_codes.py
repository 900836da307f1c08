"""rsep serve's status codes that tell a client what happened without reading the body
(issue 53, point 7): 409 for a name taken, 422 for a body of which nothing was taken in, and
a one-line hint when the port is in use."""

from __future__ import annotations

import socket
import subprocess
import sys

from serve_server import COUPON, NDJSON, SPARQL, TRIG, serve

from rsep.testing.snippets import ROOT

PRODUCTS = f"http://products={COUPON / 'products.ttl'}"


def test_a_duplicate_query_name_is_409_and_the_first_query_stays():
    with serve("--time-unit", "1m", "--graph", PRODUCTS) as client:
        q2 = (COUPON / "q2-cqels.rq").read_text()
        r = client.post("/queries", headers=SPARQL, params={"name": "q"}, content=q2)
        assert r.status_code == 201
        r = client.post("/queries", json={"query": q2, "name": "q"})
        assert (r.status_code, r.json()) == (409, {"error": "q: a query named 'q' is already registered"})
        assert [d["name"] for d in client.get("/queries").json()] == ["q"]
        # a bad query under a taken name is still a 400 for the query (it fails first)
        r = client.post("/queries", headers=SPARQL, params={"name": "q"}, content="SELECT")
        assert r.status_code == 400


def test_a_body_whose_every_record_is_rejected_is_422_a_partly_taken_one_202():
    with serve("--time-unit", "1m", "--graph", PRODUCTS) as client:
        client.post("/queries", headers=SPARQL, params={"name": "q"},
                    content=(COUPON / "q2-cqels.rq").read_text())
        bad = '{"graph": "http://example.org/g1"}\n{"graph": "http://example.org/g2", "time": "x"}\n'
        r = client.post("/events", headers=NDJSON, params={"stream": "http://locations"}, content=bad)
        assert (r.status_code, r.json()) == (422, {"error": (
            "all 2 record(s) of the body were rejected (their reasons: GET /deadletters); "
            "none was taken in")})
        assert len(client.get("/deadletters").json()) == 2
        good = (COUPON / "coupons.trig").read_bytes()
        r = client.post("/events", headers=TRIG, params={"stream": "http://coupons"}, content=good)
        assert (r.status_code, r.json()) == (202, {"accepted": 2, "rejected": 0})
        # an event behind the stream's time (the coupons' last is at 15) is rejected too
        late = '{"graph": "http://example.org/g0", "time": 3, "triples": ""}\n'
        r = client.post("/events", headers=NDJSON, params={"stream": "http://coupons"}, content=late)
        assert (r.status_code, r.json()["error"]) == (422, (
            "all 1 record(s) of the body were rejected (their reasons: GET /deadletters); "
            "none was taken in"))
        mixed = bad + '{"graph": "http://example.org/g9", "time": 40, "triples": ""}\n'
        r = client.post("/events", headers=NDJSON, params={"stream": "http://locations"}, content=mixed)
        assert (r.status_code, r.json()) == (202, {"accepted": 1, "rejected": 2})
        # an empty body rejects nothing
        r = client.post("/events", headers=NDJSON, params={"stream": "http://locations"}, content=b"")
        assert (r.status_code, r.json()) == (202, {"accepted": 0, "rejected": 0})


def test_a_port_in_use_is_a_one_line_hint_and_exit_1():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([sys.executable, "-W", "ignore", "-m", "rsep.cli.main", "serve",
                            "--port", str(port)], capture_output=True, text=True, cwd=ROOT,
                           timeout=60)
    assert r.returncode == 1
    assert r.stderr == (f"rsep serve: port {port} on 127.0.0.1 is in use (another rsep serve?): "
                        "stop that server, or give another --port (--port 0 takes a free one)\n")
