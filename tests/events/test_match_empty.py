"""A query whose MATCH has no solution at an evaluation has none at all when the MATCH is
an element of the WHERE clause's own group and nothing aggregates (rsep.lang.rspql.events.
empty_without_match): the runtime then skips pyoxigraph. The shapes it takes and refuses,
each checked against pyoxigraph on the text with the MATCH's empty VALUES, and the
engine's outputs the same with the shortcut off."""

from __future__ import annotations

import copy
import random

import pyoxigraph as ox
import pytest

from rsep import Engine, parse_query
from rsep.testing.snippets import EX, ev

S = EX + "S"
HEAD = """PREFIX : <http://example.org/>
REGISTER ISTREAM :out AS
{select}
FROM NAMED WINDOW :w1 ON :S [LND 0]
FROM NAMED WINDOW :w2 ON :S [LND 0]
FROM NAMED :kb
EVENT ON :w1 {{ ?k :a ?a . }} AS E_1
EVENT ON :w2 {{ ?k :b ?b . }} AS E_2
WHERE {{ {where} }}{tail}"""
MATCH = "MATCH CHRONOLOGICAL { E_1 SEQ E_2 }"

SHAPES = [  # (SELECT clause, WHERE body, after WHERE, taken?, pyoxigraph answers?)
    ("SELECT ?k ?a ?b", f"{MATCH} FILTER (?b > ?a + 10)", "", True, False),
    ("SELECT DISTINCT ?k (?b - ?a AS ?d)", f"GRAPH :kb {{ ?k :p ?o }} {MATCH} BIND (1 AS ?one)",
     " ORDER BY ?k LIMIT 5", True, False),
    ("SELECT *", f"{MATCH} FILTER NOT EXISTS {{ GRAPH :kb {{ ?k :p ?o }} }}", "", True, False),
    ("SELECT ?k ?o", f"GRAPH :kb {{ ?k :p ?o }} OPTIONAL {{ {MATCH} }}", "", False, True),
    ("SELECT ?k ?o", f"{{ GRAPH :kb {{ ?k :p ?o }} }} UNION {{ {MATCH} }}", "", False, True),
    ("SELECT ?k ?o", f"GRAPH :kb {{ ?k :p ?o }} MINUS {{ {MATCH} }}", "", False, True),
    ("SELECT (COUNT(*) AS ?n)", MATCH, "", False, True),
    ("ASK", MATCH, "", False, True),
    # refused though empty: the rule does not look into sub-groups or aggregating sub-queries
    ("SELECT ?k ?n", f"{MATCH} {{ SELECT ?k (COUNT(*) AS ?n) WHERE {{ GRAPH :kb {{ ?k :p ?o }} }} "
     "GROUP BY ?k }", "", False, False),
    ("SELECT ?k", f"{{ {MATCH} }}", "", False, False),
]


def _query(select: str, where: str, tail: str):
    return parse_query(HEAD.format(select=select, where=where, tail=tail))


@pytest.mark.parametrize(("select", "where", "tail", "taken", "answers"), SHAPES)
def test_the_shapes_taken_are_ones_pyoxigraph_answers_with_nothing(select, where, tail, taken,
                                                                    answers):
    q = _query(select, where, tail)
    assert q.empty_without_match is taken
    store = ox.Store()
    store.add(ox.Quad(ox.NamedNode(EX + "c1"), ox.NamedNode(EX + "p"), ox.Literal("1"),
                      ox.NamedNode(EX + "kb")))
    res = store.query(q.sparql, named_graphs=[ox.NamedNode(EX + "kb")])
    # (ASK always answers: false is a result, one row the R2S operator reads)
    answered = isinstance(res, ox.QueryBoolean) or any(True for _ in res)
    assert answered is answers and not (taken and answers)


def _walk(seed: int) -> list:
    rnd = random.Random(seed)
    walk, events = [100, 100], []
    for t in range(200):
        k = rnd.randrange(2)
        walk[k] += rnd.randint(-9, 9)
        events.append(ev(S, t, f":c{k} :{'abx'[rnd.randrange(3)]} {walk[k]} .", graph=f"{S}/g{t}"))
    return events


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[3]])
@pytest.mark.parametrize("seed", range(3))
def test_the_outputs_are_the_same_with_the_shortcut_off(shape, seed):
    select, where, tail, *_ = shape
    events = _walk(seed)
    outs = []
    for shortcut in (True, False):
        q = _query(select, where, tail)
        q.empty_without_match = shortcut
        eng = Engine()
        eng.add_graph(EX + "kb", [ox.Triple(ox.NamedNode(EX + "c1"), ox.NamedNode(EX + "p"),
                                            ox.Literal("1"))])
        eng.register(q)
        outs.append([o.to_json() for o in eng.run(copy.deepcopy(events), until=205)])
    assert outs[0] == outs[1] and len(outs[0]) >= 3
