"""A rule's solutions read as they are made (Delta.each, issue 52) are at()'s, in at()'s
order: each rule shape each() makes lazily, over random streams, with batches and the
sorted terms made tiny so every lazy path is taken, against each() reading at()."""

from __future__ import annotations

import random

import pytest

from rsep import Engine
from rsep.epsparql import delta
from rsep.epsparql.rewrites import push_filters
from rsep.lang.epsparql import parse_epsparql
from rsep.testing.snippets import EX, ev

P = "PREFIX : <http://example.org/>\n"
S = EX + "S"
SEL = P + "SELECT ?c ?d WHERE { ?c :r ?d }"
RULES = [
    # a BGP of several patterns (its later semi-naive terms are reordered)
    "CONSTRUCT { ?c :r ?y } WHERE { ?c :alarm ?x . ?c :reading ?y . ?d :note ?x }",
    "CONSTRUCT { ?c :r ?d } WHERE { ?c :alarm ?x . ?d :reading ?y BIND (?x + ?y AS ?z) "
    "FILTER (?z > 2) }",
    # a join, a SEQ (the compiled plan), a SEQ under SELECT with a filter, recursion
    "CONSTRUCT { ?c :r ?d } WHERE { { ?c :alarm ?x } { ?d :reading ?y } FILTER(?x != ?y) }",
    "CONSTRUCT { ?c :r ?y } WHERE { { ?c :alarm ?x } SEQ { ?d :reading ?y } }",
    "CONSTRUCT { ?c :r ?z } WHERE { SELECT ?c ?z WHERE { { ?c :alarm ?x } SEQ { ?c :reading ?z } "
    "FILTER(?z > 1) } }",
    "CONSTRUCT { ?c :r ?d } WHERE { { ?c :r ?x } SEQ { ?x :r ?d } }",
    "CONSTRUCT { ?c :r ?d } WHERE { ?c :reading ?x . ?d :r ?x }",
]


def stream(seed: int, n: int = 16) -> list:
    rnd = random.Random(seed)
    out, t = [], 0
    for i in range(n):
        t += rnd.choice([0, 1, 1, 2])
        c = rnd.choice([":c1", ":c2", ":c3"])
        p = rnd.choice([":alarm", ":reading", ":note", ":r"])
        o = rnd.choice(["1", "2", "3", ":c1", ":c2"])
        out.append(ev(S, (t - rnd.choice([0, 0, 1]), t), f"{c} {p} {o} ."))
        out[-1].seq = i + 1
    return out


def outputs(rule: str, events: list) -> list[dict]:
    eng = Engine()
    eng.register(parse_epsparql(P + rule), name="rule")
    eng.register(parse_epsparql(SEL), name="sel")
    return [o.to_json() | {"query": o.query} for o in eng.run(events)]


@pytest.mark.parametrize("rule", RULES)
def test_lazy_rule_solutions_are_the_listed_ones_in_order(rule, monkeypatch):
    for seed in range(8):
        events = stream(seed)
        with monkeypatch.context() as m:
            m.setattr(delta, "_chain", lambda root, statics: None)
            want = outputs(rule, events)
        with monkeypatch.context() as m:
            m.setattr(delta, "_BATCH", 2)
            m.setattr(delta, "_SORTED", 1)
            got = outputs(rule, events)
        assert got == want, (rule, seed)
        assert got == outputs(rule, events)  # (the defaults)


def test_the_shapes_above_are_made_lazily():
    for rule in RULES:
        q = parse_epsparql(P + rule)
        d = delta.Delta(push_filters(q.pattern), None)  # type: ignore[arg-type]
        assert d._lazy is not None, rule
