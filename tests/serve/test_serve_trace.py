"""``/queries/N/trace`` on a real ``rsep serve`` (issue 53, point 5): the lines of
``rsep run --trace`` for the same query, key and events, as JSON (time, text), bounded;
refusals with the CLI's message."""

from __future__ import annotations

from serve_server import SPARQL, TRIG, serve

from rsep.testing.snippets import ROOT

WARMING = ROOT / "docs" / "examples" / "warming"
STATION = "http://example.org/station"


def _semantics_block(heading: str) -> list[str]:
    """The stderr block of docs/semantics.md's example under ``heading``: the lines
    tests/cli/test_trace_cli.py asserts ``rsep run --trace`` prints."""
    lines = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8").splitlines()
    below = lines[lines.index(heading):]
    i = below.index("and on stderr:")
    start = next(j for j in range(i, len(below)) if below[j].startswith("```")) + 1
    end = next(j for j in range(start, len(below)) if below[j].startswith("```"))
    return below[start:end]


# "TIME  TEXT" as the CLI prints them
SPASEQ_LINES = [(int(t), text) for t, text in (
    ln.split("  ", 1) for ln in _semantics_block("### Why is a match missing (`rsep run --trace`)"))]


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
        r = client.post("/queries", headers=SPARQL, params={"name": "warming", "traceable": "true"},
                        content=(WARMING / "warming.rq").read_text())
        assert r.status_code == 201, r.text
        assert client.get("/queries/warming/trace").status_code == 404
        r = client.put("/queries/warming/trace", json={"key": "?sensor=:s1"})
        assert r.status_code == 200, r.text
        assert r.json() == {"key": "?sensor=:s1", "limit": 1000, "dropped": 0, "lines": []}
        assert client.get("/queries/warming").json()["trace"] == "?sensor=:s1"
        _post_readings(client)
        assert len(SPASEQ_LINES) == 10
        assert _lines(client, "warming") == SPASEQ_LINES
        seqs = [ln["seq"] for ln in client.get("/queries/warming/trace").json()["lines"]]
        assert seqs == list(range(1, 11))
        assert _lines(client, "warming", since=8) == SPASEQ_LINES[8:]
        assert client.delete("/queries/warming/trace").status_code == 204
        assert client.get("/queries/warming/trace").status_code == 404
        assert client.get("/queries/warming").json()["trace"] is None
        assert client.delete("/queries/warming/trace").status_code == 404


def test_trace_of_an_epsparql_query_starts_when_asked():
    with serve() as client:
        r = client.post("/queries", headers=SPARQL, params={"name": "ep"},
                        content=(WARMING / "warming-ep.rq").read_text())
        assert r.status_code == 201, r.text
        r = client.put("/queries/ep/trace", json={"key": "?sensor=<http://example.org/s1>"})
        assert r.status_code == 200, r.text
        _post_readings(client)
        # tests/cli/test_trace_cli.py's lines for rsep run --trace on the same
        assert _lines(client, "ep") == [
            (1, "event :g1 at 1 mentions :s1"),
            (3, "event :g3 at 3 mentions :s1"),
            (4, "event :g4 at 4 mentions :s1"),
            (4, "complex event [1, 4] detected from the events at 1, 4 (?before=20 ?after=24)"),
            (4, "complex event [3, 4] detected from the events at 3, 4 (?before=21 ?after=24)"),
            (5, "event :g5 at 5 mentions :s1"),
            (5, "complex event [1, 5] detected from the events at 1, 5 (?before=20 ?after=22)"),
            (12, "event :g6 at 12 mentions :s1"),
            (12, "complex event [3, 12] detected from the events at 3, 12 (?before=21 ?after=30)"),
            (12, "complex event [4, 12] detected from the events at 4, 12 (?before=24 ?after=30)"),
            (12, "complex event [5, 12] detected from the events at 5, 12 (?before=22 ?after=30)"),
            (12, "the event at 1 left the window [1, 11] (getDURATION() <= 10): no complex event "
                 "can start there any more"),
        ]


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
        # a SPASEQ query is traced only if registered so: it then runs the general engine
        assert client.post("/queries", headers=SPARQL, params={"name": "plain"},
                           content=(WARMING / "warming.rq").read_text()).status_code == 201
        r = client.put("/queries/plain/trace", json={"key": "?sensor=:s1"})
        assert (r.status_code, r.json()["error"]) == (400, (
            "query plain was registered without traceable=true: a SPASEQ query is traced on "
            "its general engine with runs unshared, chosen when it starts (POST "
            "/queries?traceable=true)"))
        assert client.post("/queries", headers=SPARQL, params={"name": "x", "traceable": "yes"},
                           content=(WARMING / "warming.rq").read_text()).status_code == 400
        assert client.post("/queries", headers=SPARQL, params={"name": "w", "traceable": "true"},
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
