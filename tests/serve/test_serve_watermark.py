"""Event time on quiet streams (issue 53, point 1), over HTTP: with a watermark policy an
answer due at t comes without a later event or POST /clock; without one (the default, a
replay's semantics) it waits for them."""

from __future__ import annotations

import json
import time

from serve_server import COUPON, NDJSON, SPARQL, TRIG, Reader, serve

PRODUCTS = f"http://products={COUPON / 'products.ttl'}"
RAYBAN = {"shop": "<http://example.org/b>", "product": "<http://example.org/rayban>",
          "percent": '"25"^^<http://www.w3.org/2001/XMLSchema#integer>'}


def coupon_run(client) -> Reader:
    """The README's CQELS coupon query registered, its SSE stream read, its events posted:
    the answer is due at 18, the time of the last event (locations.trig's)."""
    r = client.post("/queries", headers=SPARQL, params={"name": "q2"},
                    content=(COUPON / "q2-cqels.rq").read_text())
    assert r.status_code == 201, r.text
    reader = Reader(client, "q2")
    reader.start()
    assert reader.ready.wait(10)
    time.sleep(0.2)  # (subscribed just after the connection is up)
    for stream, name in (("http://coupons", "coupons.trig"), ("http://locations", "locations.trig")):
        r = client.post("/events", headers=TRIG, params={"stream": stream},
                        content=(COUPON / name).read_bytes())
        assert r.status_code == 202, r.text
    return reader


def results_within(reader: Reader, seconds: float) -> list[dict]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not reader.items:
        time.sleep(0.02)
    return [d for k, d in reader.items if k == "result"]


def test_without_a_policy_the_answer_due_at_18_waits_for_the_clock():
    with serve("--time-unit", "1m", "--graph", PRODUCTS) as client:
        reader = coupon_run(client)
        assert results_within(reader, 1.5) == []
        assert client.get("/health").json()["engine_time"] == 18
        client.post("/clock", json={"until": 18})
        assert results_within(reader, 10) == [{"query": "q2", "time": 18, "bindings": RAYBAN}]
        client.delete("/queries/q2")
        assert reader.results() == [{"query": "q2", "time": 18, "bindings": RAYBAN}]


def test_idle_policy_moves_engine_time_after_the_quiet_spell_and_late_events_are_refused():
    with serve("--time-unit", "1m", "--graph", PRODUCTS, "--watermark", "idle:0.5") as client:
        t0 = time.monotonic()
        reader = coupon_run(client)
        got = results_within(reader, 10)
        waited = time.monotonic() - t0
        assert got == [{"query": "q2", "time": 18, "bindings": RAYBAN}]
        assert 0.5 <= waited < 5  # after the idle timeout, not at once
        # engine time moved to 18: an event at 18 now is late; one at 19 is taken
        late = json.dumps({"graph": "http://example.org/g9", "time": 18, "triples": ""}) + "\n"
        r = client.post("/events", headers=NDJSON, params={"stream": "http://locations"},
                        content=late)
        assert r.status_code == 422
        dead = client.get("/deadletters").json()
        assert dead[-1]["reason"] == ("timestamp 18 of <http://example.org/g9> is not after the "
                                      "time 18 the engine was advanced to")
        client.delete("/queries/q2")
        assert reader.results() == [{"query": "q2", "time": 18, "bindings": RAYBAN}]


def test_idle_policy_with_lateness_moves_to_the_last_time_plus_the_lateness():
    with serve("--time-unit", "1m", "--graph", PRODUCTS, "--watermark", "idle:0.3",
               "--allowed-lateness", "2") as client:
        reader = coupon_run(client)
        # the events are held for reordering until the time passes them by 2; the quiet
        # spell releases them and moves the time to 18 + 2
        assert results_within(reader, 10) == [{"query": "q2", "time": 18, "bindings": RAYBAN}]
        deadline = time.monotonic() + 5
        while client.get("/health").json()["engine_time"] != 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.get("/health").json()["engine_time"] == 20
        client.delete("/queries/q2")


def test_processing_time_evaluates_as_the_wall_clock_passes_and_refuses_what_it_passed():
    query = ("PREFIX : <http://example.org/>\nSELECT ?s ?v\n"
             "WHERE { STREAM <http://s> [RANGE 100000] { ?s :v ?v } }\n")
    with serve("--time-unit", "1ms", "--watermark", "processing") as client:
        assert client.post("/queries", headers=SPARQL, params={"name": "p"},
                           content=query).status_code == 201
        reader = Reader(client, "p")
        reader.start()
        assert reader.ready.wait(10)
        time.sleep(0.2)
        one = {"graph": "http://example.org/e1", "time": 1000,
               "triples": "<http://example.org/a> <http://example.org/v> 1 ."}
        r = client.post("/events", headers=NDJSON, params={"stream": "http://s"},
                        content=json.dumps(one) + "\n")
        assert (r.status_code, r.json()) == (202, {"accepted": 1, "rejected": 0})
        assert results_within(reader, 5) == [{"query": "p", "time": 1000, "bindings": {
            "s": "<http://example.org/a>", "v": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'}}]
        time.sleep(0.3)
        # 300 ms of wall time later, engine time is past 1001: an event stamped 1001 is late
        two = {**one, "graph": "http://example.org/e2", "time": 1001}
        r = client.post("/events", headers=NDJSON, params={"stream": "http://s"},
                        content=json.dumps(two) + "\n")
        assert r.status_code == 422
        assert client.get("/health").json()["engine_time"] > 1200
        client.delete("/queries/p")
        assert len(reader.results()) == 1


def test_a_bad_policy_is_bad_usage():
    import subprocess
    import sys

    from rsep.testing.snippets import ROOT

    r = subprocess.run([sys.executable, "-W", "ignore", "-m", "rsep.cli.main", "serve",
                        "--watermark", "idle:soon"], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == (
        "rsep serve: error: argument --watermark: watermark policy 'idle:soon': use events, "
        "idle:SECONDS (e.g. idle:2) or processing")
