"""The engine's public surface (rsep.algebra.runtime's protocol): the clock that rsep serve
and the Spark stage set (start_at, advance_to), what a runtime tells about itself, the slot
the runtimes of a family share (shared), and no import circle between engine and runtimes."""

from __future__ import annotations

import grimp
import pytest

from rsep.algebra.output import EngineError
from rsep.epsparql.runtime import EpContext
from rsep.runtime.engine import Engine
from rsep.stream.time import TimeKind
from rsep.testing.snippets import EX, table

S = EX + "S"
RSTREAM = f"""PREFIX : <{EX}>
REGISTER RSTREAM :out AS
SELECT ?x ?y FROM NAMED WINDOW :w ON :S [RANGE 3 STEP 1]
WHERE {{ WINDOW :w {{ ?x :p ?y }} }}"""
# tests/events/test_events.py's Example 4 (RSEP-QL 000), its MATCH's selection given
EVENTS = f"""PREFIX : <{EX}>
REGISTER RSTREAM :out AS
SELECT ?x ?y ?z
FROM NAMED :S WIN [LND 1] AS :w_1
FROM NAMED :S WIN [RANGE 5] AS :w_2
EVENT ON :w_1 {{{{ ?x :p ?y . }}}} AS E_1
EVENT ON :w_2 {{{{ ?y :q ?z . }}}} AS E_2
WHERE {{{{ MATCH {{policy}} {{{{ E_1 SEQ E_2 }}}} }}}}"""


def outs(eng: Engine) -> list[tuple]:
    return table([o.to_json() for o in eng.drain()])


def test_start_at_is_the_clock_a_first_event_would_start(figure1):
    # an engine started at 0 and one whose first event (at 2) starts it: the same outputs
    # from 2 on (the window's grid begins at the start)
    plain = Engine()
    plain.register(RSTREAM)
    want = table([o.to_json() for o in plain.run(figure1, until=11)])
    started = Engine()
    started.register(RSTREAM)
    started.start_at(TimeKind.ABSTRACT, 2)
    assert (started.kind, started.start, started.now) == (TimeKind.ABSTRACT, 2, 2)
    assert table([o.to_json() for o in started.run(figure1, until=11)]) == want


def test_a_query_registered_after_start_at_is_bound_at_now(figure1):
    eng = Engine()
    eng.start_at(TimeKind.ABSTRACT, 0, now=5)
    rt = eng.register(RSTREAM)
    assert rt.ticks.start == 5 and eng.now == 5  # (where its grids count from)
    got = table([o.to_json() for o in eng.run(figure1[3:], until=11)])
    assert [t for t, *_ in got] == [8, 9, 10]


def test_advance_to_makes_the_evaluations_before_it_final(figure1):
    eng = Engine()
    eng.register(RSTREAM)
    for e in figure1[:2]:  # events at 2 and 4
        eng.push(e)
    assert outs(eng) == [(2, {"x": ":a1", "y": ":b1"}), (3, {"x": ":a1", "y": ":b1"})]
    eng.advance_to(7)  # 4, 5, 6 evaluated now; the engine's time stays its last event's
    assert [t for t, *_ in outs(eng)] == [4, 4, 5, 6]
    assert eng.now == 4
    eng.advance_to(7)  # (once only)
    eng.advance_to(3)  # (behind the engine's time: nothing to do)
    assert outs(eng) == []
    eng.push(figure1[3])  # the event at 8 (at 7 the window was empty)
    assert outs(eng) == []
    eng.advance_to(10)
    assert [t for t, *_ in outs(eng)] == [8, 9]


def test_advance_to_before_the_clock_starts_is_refused():
    eng = Engine()
    eng.register(RSTREAM)
    with pytest.raises(EngineError, match="clock has not started"):
        eng.advance_to(3)


def test_consumes_says_whether_a_match_consumes_its_items():
    def runtime(policy: str):
        eng = Engine()
        return eng.register(EVENTS.format(policy=policy))

    assert Engine().register(RSTREAM).consumes is False  # type: ignore[attr-defined]
    assert runtime("UNRESTRICTED").consumes is False  # type: ignore[attr-defined]
    assert runtime("CHRONOLOGICAL").consumes is True  # type: ignore[attr-defined]


def test_shared_is_one_object_per_key_and_engine():
    eng, other = Engine(), Engine()
    made: list[int] = []

    def factory() -> list[int]:
        made.append(1)
        return []

    a = eng.shared("k", factory)
    assert eng.shared("k", factory) is a and len(made) == 1
    assert eng.shared("j", factory) is not a and other.shared("k", factory) is not a
    assert len(made) == 3


def test_the_epsparql_queries_of_an_engine_share_one_context():
    q = f"PREFIX : <{EX}> SELECT ?a ?b WHERE {{ {{ ?a :p ?b }} SEQ {{ ?b :q ?c }} }}"
    eng = Engine()
    one, two = eng.register(q, dialect="epsparql"), eng.register(q, dialect="epsparql")
    ctx = EpContext.of(eng)
    assert ctx.runtimes == [one, two] and EpContext.of(Engine()) is not ctx


def test_no_module_the_engine_imports_imports_it_back():
    """The runtimes see the engine through rsep.algebra.runtime.Host: no module the engine
    imports, even for its types only, imports rsep.runtime.engine (the circle of issue 46)."""
    g = grimp.build_graph("rsep", exclude_type_checking_imports=False)
    engine = "rsep.runtime.engine"
    imported, importers = g.find_upstream_modules(engine), g.find_downstream_modules(engine)
    assert "rsep.runtime.dialects" in imported and "rsep.serve.hub" in importers
    assert sorted(imported & importers) == []
    # every family's runtime is imported by name, by its registry entry (rsep.runtime.dialects),
    # the RSP family's window runtime too: none of them imports the engine either
    assert _under(imported, ("rsep.runtime.windowed", "rsep.spaseq", "rsep.epsparql")) == []
    for runtime in ("rsep.runtime.windowed", "rsep.spaseq.runtime", "rsep.epsparql.runtime",
                    "rsep.epsparql.etalis"):
        assert engine not in g.find_upstream_modules(runtime), runtime
    assert engine not in g.find_upstream_modules("rsep.algebra.runtime")


def _under(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == r or m.startswith(r + ".") for r in roots))
