"""``rsep serve``'s background graphs change under running queries (000 Def. 2): a SPARQL
Update POSTed, or a graph PUT, applies at the engine's current time, so a registered query's
next evaluations read it; over real HTTP, the results are ``rsep run``'s with the same
change in an update file."""

from __future__ import annotations

import json

from serve_server import TRIG, readers, serve

from rsep.cli.main import main
from rsep.testing.snippets import EX, ROOT, short

D = ROOT / "docs" / "examples" / "rooms"
ROOMS, READINGS = f"{EX}rooms", f"{EX}readings"
HEAD = f"@prefix : <{EX}> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
MOVE = f"PREFIX : <{EX}>\nDELETE DATA {{ :s1 :in :kitchen }} ;\nINSERT DATA {{ :s1 :in :office }}"


def event(t: int, body: str) -> str:
    return HEAD + f":g{t} prov:generatedAtTime {t} .\n:g{t} {{ {body} }}\n"


def rows(results: list[dict]) -> list[tuple]:
    return [(d["time"], short(d["bindings"]["room"]), short(d["bindings"]["t"])) for d in results]


def test_an_update_and_a_put_change_a_registered_querys_answer(tmp_path, capsys):
    # the CLI, with the update at 6 (the engine's time when the server gets it below)
    ru = tmp_path / "rooms.ru"
    ru.write_text(MOVE.replace("\nDELETE", "\n# @time 6\nDELETE"))
    assert main(["run", str(D / "rooms.rq"), "--stream", f"{READINGS}={D / 'readings.trig'}",
                 "--graph", f"{ROOMS}={D / 'rooms.ttl'}", "--graph-updates", f"{ROOMS}={ru}",
                 "--until", "15"]) == 0
    want = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    with serve("--graph", f"{ROOMS}={D / 'rooms.ttl'}") as client:
        name = "rooms"
        r = client.post("/queries", json={"query": (D / "rooms.rq").read_text(), "name": name})
        assert r.status_code == 201
        [sse, ws] = readers(client, name)[name]
        for t, body in ((1, ":r1 :by :s1 ; :temp 20 ."), (3, ":r2 :by :s2 ; :temp 18 ."),
                        (6, ":r3 :by :s1 ; :temp 21 .")):
            assert client.post("/events", headers=TRIG, params={"stream": READINGS},
                               content=event(t, body)).json()["accepted"] == 1
        # a malformed update (no prefix :, so no triple): 400, located; nothing changes
        r = client.post("/graphs", params={"iri": ROOMS}, content="INSERT DATA { :a :b }",
                        headers={"Content-Type": "application/sparql-update"})
        assert r.status_code == 400
        assert r.json()["error"] == \
            f"update of <{ROOMS}>:1:20: the update does not parse: expected GRAPH"
        r = client.post("/graphs", params={"iri": ROOMS}, content=MOVE,
                        headers={"Content-Type": "application/sparql-update"})
        assert r.json() == {"graph": ROOMS, "triples": 2, "time": 6}
        for t, body in ((8, ":r4 :by :s2 ; :temp 19 ."), (11, ":r5 :by :s1 ; :temp 22 .")):
            client.post("/events", headers=TRIG, params={"stream": READINGS}, content=event(t, body))
        client.post("/clock", json={"until": 15})
        # a new version of the graph at 15, read by the evaluation at 20
        r = client.put("/graphs", params={"iri": ROOMS}, headers={"Content-Type": "text/turtle"},
                       content=f"@prefix : <{EX}> . :s1 :in :attic . :s2 :in :hall .")
        assert r.json() == {"graph": ROOMS, "triples": 2, "time": 15}
        client.post("/clock", json={"until": 20})
        client.delete(f"/queries/{name}")
        # (each line names its query, as rsep run's do with several)
        assert [d.pop("query") for d in sse.results() + ws.results()] == [ROOMS] * 20
        assert sse.results() == ws.results() == want + [
            {"time": 20, "bindings": {"room": f"<{EX}attic>",
                                      "t": '"22"^^<http://www.w3.org/2001/XMLSchema#integer>'}}]
    assert rows(want) == [(5, ":hall", "18"), (5, ":kitchen", "20"), (10, ":hall", "18"),
                          (10, ":hall", "19"), (10, ":office", "20"), (10, ":office", "21"),
                          (15, ":hall", "19"), (15, ":office", "21"), (15, ":office", "22")]
