"""A windowed query's evaluation path is a strategy object (rsep.runtime.windowed: the
snapshot store, the event-local store, the maintained result, its factorised form), chosen
once when the query is registered, from its plan; ``rsep explain`` prints it (issue 46)."""

from __future__ import annotations

from functools import cache

import pytest
from query_corpus import house, parsed_query

from rsep.algebra.query import ContinuousQuery
from rsep.cli.main import main
from rsep.runtime.engine import Engine
from rsep.runtime.windowed import (
    STRATEGIES,
    EventLocalStore,
    FactorisedResult,
    MaintainedResult,
    QueryRuntime,
    Strategy,
    query_strategy,
)
from rsep.stream.time import TimeKind
from rsep.windows.plan import EVENT_LOCAL, FACTORISED, MAINTAINED, SNAPSHOT, path

# citybench-join's query (rsep.bench): its aggregates factorised, the one path no other
# query of the house takes (a string of a test module is one of the house's queries)
CITYBENCH_JOIN = """PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#>
PREFIX sao: <http://purl.oclc.org/NET/sao/ssn#>
PREFIX ct: <http://www.insight-centre.org/citytraffic#>
REGISTER RSTREAM <http://example.org/bench/out> AS
SELECT ?road (COUNT(*) AS ?pairs) (MIN(?speed) AS ?slowest) (MAX(?count) AS ?busiest)
FROM <http://example.org/citybench/sensors>
FROM NAMED WINDOW <http://example.org/bench/w1> ON <http://example.org/speed> [RANGE 50 STEP 10]
FROM NAMED WINDOW <http://example.org/bench/w2> ON <http://example.org/count> [RANGE 50 STEP 10]
WHERE {
  WINDOW <http://example.org/bench/w1> { ?o1 ssn:observedProperty ct:AverageSpeed ;
                                         ssn:observedBy ?s1 ; sao:hasValue ?speed . }
  WINDOW <http://example.org/bench/w2> { ?o2 ssn:observedProperty ct:VehicleCount ;
                                         ssn:observedBy ?s2 ; sao:hasValue ?count . }
  ?s1 ct:onRoad ?road . ?s2 ct:onRoad ?road . FILTER (?speed < 30)
}
GROUP BY ?road
"""


@cache
def corpus() -> list[tuple[str, str, ContinuousQuery]]:
    """(where, text, query) of the house's RSP queries."""
    return [(where, text, q) for where, text in house() if (q := parsed_query(text)) is not None]


def test_the_four_paths_are_four_strategies():
    assert [(s.__name__, s.path) for s in STRATEGIES] == [
        ("Strategy", SNAPSHOT), ("EventLocalStore", EVENT_LOCAL),
        ("MaintainedResult", MAINTAINED), ("FactorisedResult", FACTORISED)]


def test_every_house_query_s_runtime_takes_the_strategy_its_plan_says():
    seen: dict[type[Strategy], int] = {}
    for where, _, q in corpus():
        rt = QueryRuntime(q, "q", Engine())
        kind = type(rt.strategy)
        assert kind is query_strategy(q), where
        assert kind.path == path(q)[0], where  # what rsep explain says, why included
        seen[kind] = seen.get(kind, 0) + 1
    # every path is taken by some query of the house
    assert sorted(s.__name__ for s in seen) == sorted(s.__name__ for s in STRATEGIES), seen


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.__name__)
def test_explain_prints_the_strategy_a_query_takes(strategy, tmp_path, capsys):
    text = next(text for _, text, q in corpus() if query_strategy(q) is strategy)
    (tmp_path / "q.rq").write_text(text, encoding="utf-8")
    assert main(["explain", str(tmp_path / "q.rq")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [x for x in lines if x.startswith(("evaluation: ", "strategy: "))] == [
        next(x for x in lines if x.startswith(f"evaluation: {strategy.path}: ")),
        f"strategy: {strategy.__name__} (rsep.runtime.windowed)"]


def test_the_strategy_is_chosen_at_registration_and_kept():
    q = next(q for _, _, q in corpus() if query_strategy(q) is FactorisedResult)
    rt = QueryRuntime(q, "q", Engine())
    chosen = rt.strategy
    assert type(chosen) is FactorisedResult and isinstance(chosen, MaintainedResult)
    rt.take(EventLocalStore)  # before bind, another path may be taken (the tests compare them)
    assert type(rt.strategy) is EventLocalStore
    rt.bind(TimeKind.ABSTRACT, None, 0)
    assert type(rt.strategy) is EventLocalStore and rt.result is None
    assert all(type(bw.local).__name__ == "LocalWindow" for bw in rt.windows)
    with pytest.raises(AssertionError, match="not bound yet"):
        rt.take(Strategy)
