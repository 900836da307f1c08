"""An RDF Message's named graphs are kept: read, queried with GRAPH, written back (issue 24)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyoxigraph as ox
import pytest

from rsep.cli.main import main
from rsep.stream.messages import MessageLog
from rsep.stream.time import TimeConfig

EX = "http://example.org/"
PROV = "http://www.w3.org/ns/prov#"

# Message 1: a default graph (the event's, timed by its subject) and two named graphs;
# message 2: a named graph beside default-graph content; message 3: the common shape, one
# named graph timed in the default graph (the event's graph, as before).
LOG = """PREFIX ex: <http://example.org/>
PREFIX prov: <http://www.w3.org/ns/prov#>
ex:m1 prov:generatedAtTime 1 ; ex:site ex:s1 .
ex:temp { ex:a ex:value 1 . }
ex:hum { ex:a ex:value 10 . _:x ex:from ex:a . }
# @message
ex:m2 prov:generatedAtTime 3 ; ex:site ex:s2 .
ex:temp { ex:b ex:value 2 . }
# @message
ex:g3 prov:generatedAtTime 4 .
ex:g3 { ex:c ex:value 3 . }
# @message
"""

QUERY = """PREFIX ex: <http://example.org/>
SELECT ?g ?s ?v
FROM NAMED WINDOW ex:w ON ex:str [RANGE 2 STEP 1]
WHERE { WINDOW ex:w { GRAPH ?g { ?s ex:value ?v } } }
"""


def _t(s: str, p: str, o: str | int) -> ox.Triple:
    obj = ox.Literal(str(o), datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")) \
        if isinstance(o, int) else ox.NamedNode(EX + o)
    return ox.Triple(ox.NamedNode(EX + s), ox.NamedNode(p if p.startswith("http") else EX + p), obj)


def _graphs(e) -> dict[str, set[str]]:
    # blank nodes by role: a log read again scopes them to its messages again
    return {g: {re.sub(r"_:\w+", "_:b", str(t)) for t in ts} for g, ts in e.graphs}


def test_a_messages_named_graphs_are_kept_apart_from_its_event_graph(tmp_path):
    p = tmp_path / "log.trig"
    p.write_text(LOG)
    e1, e2, e3 = MessageLog(p, EX + "str")
    assert (e1.graph, e1.start, set(e1.triples)) == \
        (EX + "m1", 1, {_t("m1", PROV + "generatedAtTime", 1), _t("m1", "site", "s1")})
    assert [g for g, _ in e1.graphs] == [EX + "temp", EX + "hum"]  # in the message's order
    hum = dict(e1.graphs)[EX + "hum"]
    assert hum[0] == _t("a", "value", 10)
    assert str(hum[1].subject) == "_:x_m1"  # blank nodes scoped to the message
    assert _graphs(e2) == {EX + "temp": {str(_t("b", "value", 2))}}
    assert (e2.graph, len(e2.triples)) == (EX + "m2", 2)
    # one named graph and nothing else but its time: that graph is the event's, as before
    assert (e3.graph, e3.triples, e3.graphs) == (EX + "g3", (_t("c", "value", 3),), ())


def _run(args: list[str], out: Path) -> list[tuple[int, str, str, str]]:
    assert main(["run", *args, "-q", "-o", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    return [(r["time"], r["bindings"]["g"], r["bindings"]["s"], r["bindings"]["v"].split('"')[1])
            for r in rows]


# (time, graph, subject, value): each message's graphs are in the window while it is, the
# event's graph is the window's (000: WINDOW w P is GRAPH w P, so GRAPH ?g binds <w> too).
EXPECTED = [
    (1, f"<{EX}temp>", f"<{EX}a>", "1"), (1, f"<{EX}hum>", f"<{EX}a>", "10"),
    (2, f"<{EX}temp>", f"<{EX}a>", "1"), (2, f"<{EX}hum>", f"<{EX}a>", "10"),
    (3, f"<{EX}temp>", f"<{EX}b>", "2"),
    (4, f"<{EX}w>", f"<{EX}c>", "3"), (4, f"<{EX}temp>", f"<{EX}b>", "2"),
    (5, f"<{EX}w>", f"<{EX}c>", "3"),
]


def test_graph_sees_the_named_graphs_of_the_messages_in_the_window(tmp_path):
    p = tmp_path / "log.trig"
    p.write_text(LOG)
    q = tmp_path / "q.rq"
    q.write_text(QUERY)
    got = _run([str(q), "--stream", f"{EX}str={p}", "--until", "6"], tmp_path / "out.jsonl")
    assert sorted(got) == sorted(EXPECTED)


@pytest.mark.parametrize("fmt", ["rdfm-trig", "rdfm-nquads", "jelly"])
def test_writing_the_events_back_reproduces_their_named_graphs(tmp_path, fmt):
    p = tmp_path / "log.trig"
    p.write_text(LOG)
    log = tmp_path / f"back.{ {'rdfm-trig': 'trig', 'rdfm-nquads': 'nq', 'jelly': 'jelly'}[fmt]}"
    assert main(["convert", str(p), "--to", fmt, "-o", str(log), "-q"]) == 0
    before = list(MessageLog(p, EX + "str"))
    after = list(MessageLog(log, EX + "str"))
    assert [(e.graph, e.start, set(e.triples), _graphs(e)) for e in after] == \
        [(e.graph, e.start, set(e.triples), _graphs(e)) for e in before]
    q = tmp_path / "q.rq"
    q.write_text(QUERY)
    assert sorted(_run([str(q), "--stream", f"{EX}str={log}", "--until", "6"], tmp_path / "o.jsonl")) == \
        sorted(EXPECTED)


def test_split_resources_dead_letters_an_event_with_other_graphs(tmp_path, capsys):
    p = tmp_path / "log.trig"
    p.write_text(LOG)
    out = tmp_path / "res.trig"
    assert main(["convert", str(p), "--to", "rdfm-trig", "-o", str(out), "--split", "resources"]) == 3
    err = capsys.readouterr().err
    assert f"log.trig:3: <{EX}m1> comes with 2 other named graph(s)" in err
    assert f"log.trig:7: <{EX}m2> comes with 1 other named graph(s)" in err
    (e,) = MessageLog(out, EX + "str", time=TimeConfig())
    assert (e.graph, e.start) == (EX + "c", 4)
