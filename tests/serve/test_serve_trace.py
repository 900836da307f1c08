"""``/queries/N/trace`` on a real ``rsep serve`` (issue 53, point 5): the lines of
``rsep run --trace`` for the same query, key and events, as JSON (time, text), bounded;
refusals with the CLI's message."""

from __future__ import annotations

from serve_server import SPARQL, TRIG, serve

from rsep.testing.snippets import ROOT

WARMING = ROOT / "docs" / "examples" / "warming"
STATION = "http://example.org/station"

# tests/cli/test_trace_cli.py reads these from docs/semantics.md ("Why is a match missing")
SPASEQ_LINES = [
    (1, "run 1 started by A@1, waits in x1: ?before=20 (and 1 mapping(s) of other values of "
        "?sensor: the event carried several)"),
    (2, "run 1 discarded for ?sensor=:s1 (?before=20): skip-till-next (';') takes the run's "
        "next event that joins any of its mappings, and B@2 joined only other values of ?sensor"),
    (3, "run 3 started by A@3, waits in x1: ?before=21"),
    (4, "run 3 completed a match: A@3 B@4 (?before=21 ?after=24)"),
    (4, "run 4 started by A@4, waits in x1: ?before=24"),
    (5, "run 5 started by A@5, waits in x1: ?before=22"),
    (5, "run 4 did not take B@5: FILTER (?after >= ?before + 2) is false for ?before=24 and "
        "?after=22 (it waits on)"),
    (12, "run 4 discarded: its WITHIN window [1, 11] closed (windows tumble from the query's "
         "start, Def. 16)"),
    (12, "run 5 discarded: its WITHIN window [1, 11] closed (windows tumble from the query's "
         "start, Def. 16)"),
    (12, "run 6 started by A@12, waits in x1: ?before=30"),
]


def _lines(client, name: str, since: int = 0) -> list[tuple[int, str]]:
    r = client.get(f"/queries/{name}/trace", params={"since": since})
    assert r.status_code == 200, r.text
    return [(ln["time"], ln["text"]) for ln in r.json()["lines"]]


def _post_readings(client) -> None:
    r = client.post("/events", params={"stream": STATION}, headers=TRIG,
                    content=(WARMING / "readings.trig").read_bytes())
    assert r.status_code == 202 and r.json()["rejected"] == 0, r.text
    assert client.post("/clock", json={"until": 13}).status_code == 200


def test_trace_of_the_warming_example_is_the_clis():
    with serve() as client:
        r = client.post("/queries", headers=SPARQL, params={"name": "warming"},
                        content=(WARMING / "warming.rq").read_text())
        assert r.status_code == 201, r.text
        assert client.get("/queries/warming/trace").status_code == 404
        r = client.put("/queries/warming/trace", json={"key": "?sensor=:s1"})
        assert r.status_code == 200, r.text
        assert r.json() == {"key": "?sensor=:s1", "limit": 1000, "dropped": 0, "lines": []}
        _post_readings(client)
        assert _lines(client, "warming") == SPASEQ_LINES
        seqs = [ln["seq"] for ln in client.get("/queries/warming/trace").json()["lines"]]
        assert seqs == list(range(1, 11))
        assert _lines(client, "warming", since=8) == SPASEQ_LINES[8:]
        assert client.delete("/queries/warming/trace").status_code == 204
        assert client.get("/queries/warming/trace").status_code == 404
        assert client.delete("/queries/warming/trace").status_code == 404


def test_trace_of_an_epsparql_query_starts_when_asked():
    with serve() as client:
        r = client.post("/queries", headers=SPARQL, params={"name": "ep"},
                        content=(WARMING / "warming-ep.rq").read_text())
        assert r.status_code == 201, r.text
        r = client.put("/queries/ep/trace", json={"key": "?sensor=<http://example.org/s1>"})
        assert r.status_code == 200, r.text
        _post_readings(client)
        got = _lines(client, "ep")
        assert got[:5] == [
            (1, "event :g1 at 1 mentions :s1"),
            (3, "event :g3 at 3 mentions :s1"),
            (4, "event :g4 at 4 mentions :s1"),
            (4, "complex event [1, 4] detected from the events at 1, 4 (?before=20 ?after=24)"),
            (4, "complex event [3, 4] detected from the events at 3, 4 (?before=21 ?after=24)"),
        ]
        assert got[-1] == (12, "the event at 1 left the window [1, 11] (getDURATION() <= 10): "
                               "no complex event can start there any more")


def test_trace_refusals_are_the_clis():
    with serve("--trace-lines", "2") as client:
        rsp = (ROOT / "docs" / "examples" / "cqels.rq").read_text()
        assert client.post("/queries", headers=SPARQL, params={"name": "rsp", "dialect": "cqels"},
                           content=rsp).status_code == 201, rsp
        r = client.put("/queries/rsp/trace", json={"key": "?sensor=:s1"})
        assert (r.status_code, r.json()["error"]) == (400, (
            "--trace follows the runs of a SPASEQ query and the events of an EP-SPARQL one "
            "(unrestricted, chronological or recent); CQELS has neither (rsep explain shows how "
            "it runs)"))
        assert client.post("/queries", headers=SPARQL, params={"name": "w"},
                           content=(WARMING / "warming.rq").read_text()).status_code == 201
        r = client.put("/queries/w/trace", json={"key": "sensor"})
        assert r.status_code == 400 and r.json()["error"].startswith("--trace must be ?VAR=VALUE")
        assert client.put("/queries/w/trace", json={}).status_code == 400
        assert client.put("/queries/w/trace", content=b'{"key": "?a=b"}',
                          headers={"Content-Type": "text/plain"}).status_code == 415
        assert client.put("/queries/nope/trace", json={"key": "?a=b"}).status_code == 404
        # bounded: the newest --trace-lines lines, the others counted
        assert client.put("/queries/w/trace", json={"key": "?sensor=:s1"}).status_code == 200
        _post_readings(client)
        d = client.get("/queries/w/trace").json()
        assert (d["limit"], d["dropped"]) == (2, 8)
        assert [(ln["time"], ln["text"]) for ln in d["lines"]] == SPASEQ_LINES[-2:]
