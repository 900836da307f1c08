"""The production event evaluator equals the reference one, evaluation time by evaluation time,
for every selection policy, on random streams and patterns."""

from __future__ import annotations

import copy
import os
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep import Engine, parse_query
from rsep.runtime import reference
from rsep.stream.event import Event
from rsep.stream.time import TimeKind
from rsep.testing.snippets import triples

POOL = triples(":a :p :b . :b :p :c . :b :q :d . :c :q :e . :a :p :c . :d :q :a . :c :r :a . :b :r :b .")
BEPS = {"A": "{ ?x :p ?y }", "B": "{ ?y :q ?z }", "C": "{ ?z :r ?w }", "D": "{ ?x :p ?y FILTER(?y != :c) }"}
WINDOWS = ["[RANGE 4]", "[RANGE 6 STEP 2]", "[LND 0]", "[ROWS 3]", "[FROM NOW-6 TO NOW-1]"]


@st.composite
def expressions(draw, depth=0):
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(sorted(BEPS)))
    kind = draw(st.sampled_from(["SEQ", "SEQ", "FIRST", "LAST"]))
    if kind == "SEQ":
        return f"({draw(expressions(depth + 1))} SEQ {draw(expressions(depth + 1))})"
    return f"{kind} ({draw(expressions(depth + 1))})"


@st.composite
def streams(draw):
    n = draw(st.integers(1, 9))
    t = 0
    out = []
    for i in range(n):
        t += draw(st.integers(0, 2))
        trs = tuple(draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=3, unique=True)))
        out.append(Event(draw(st.sampled_from(["http://s1", "http://s2"])), f"g{i}", t, t, trs,
                         TimeKind.ABSTRACT, i + 1))
    return out


def by_time(outputs):
    return Counter((o.time, o.op, repr(sorted((o.bindings or {}).items()))) for o in outputs)


@settings(max_examples=int(os.environ.get("RSEP_EXAMPLES", 200)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(expressions(), st.sampled_from(["UNRESTRICTED", "NAIVE", "CHRONOLOGICAL", "RECENT"]),
       st.sampled_from(WINDOWS), st.sampled_from(WINDOWS), st.sampled_from(["RSTREAM", "ISTREAM", "DSTREAM"]),
       streams())
def test_incremental_equals_reference(expr, policy, w1, w2, r2s, events):
    used = sorted(set(c for c in expr if c in BEPS))
    decls = "\n".join(f"EVENT ON :w{1 if n in 'AD' else 2} {BEPS[n]} AS {n}" for n in used)
    text = f"""PREFIX : <http://example.org/>
REGISTER {r2s} :q AS SELECT * FROM NAMED :w1 WIN {w1} AS :w1 FROM NAMED :w2 WIN {w2} AS :w2
FROM NAMED WINDOW :w1 ON <http://s1> {w1} FROM NAMED WINDOW :w2 ON <http://s2> {w2}
{decls}
WHERE {{ MATCH {policy} {{ {expr} }} }}""".replace(
        f"FROM NAMED :w1 WIN {w1} AS :w1 FROM NAMED :w2 WIN {w2} AS :w2\n", "")
    q = parse_query(text)
    until = events[-1].time + 3
    eng = Engine()
    eng.register(copy.deepcopy(q))
    got = list(eng.run(copy.deepcopy(events), until=until))
    want = reference.evaluate(q, events, until=until)
    assert by_time(got) == by_time(want), text
