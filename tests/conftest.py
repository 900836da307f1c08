"""Helpers shared by the tests: events from Turtle snippets, running queries."""

from __future__ import annotations

import os
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import settings

from rsep import Engine, Event
from rsep.stream.time import TimeKind

# CI (CI=true) runs the property tests on a fixed sequence of examples, so a green main
# stays green; runs elsewhere draw new examples each time and keep searching for bugs.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
EX = "http://example.org/"
PREFIXES = f"@prefix : <{EX}> .\n"


def triples(ttl: str) -> tuple[ox.Triple, ...]:
    return tuple(q.triple for q in ox.parse(PREFIXES + ttl, format=ox.RdfFormat.TURTLE))


def ev(stream: str, t: int | tuple[int, int], ttl: str, graph: str | None = None) -> Event:
    start, end = (t, t) if isinstance(t, int) else t
    return Event(stream=stream, graph=graph or f"{stream}/g{start}_{end}", start=start, end=end,
                 triples=triples(ttl), kind=TimeKind.ABSTRACT, origin="test:0")


def run(query: str, events: list[Event], *, graphs: dict[str, str] | None = None,
        until: int | None = None, **register) -> list[dict]:
    """Run one query; outputs as the CLI's jsonl objects."""
    eng = Engine(time_unit_ms=register.pop("time_unit_ms", None))
    for iri, ttl in (graphs or {}).items():
        eng.add_graph(iri, triples(ttl))
    eng.register(query, **register)
    return [o.to_json() for o in eng.run(events, until=until)]


def short(term: str) -> str:
    """Compact N-Triples for readable expectations: <http://example.org/a> -> :a, "25"^^xsd:integer -> 25."""
    if term.startswith(f"<{EX}"):
        return ":" + term[len(EX) + 1 : -1]
    if term.endswith("^^<http://www.w3.org/2001/XMLSchema#integer>"):
        return term.split('"')[1]
    return term


def table(outputs: list[dict]) -> list[tuple]:
    """(time, {var: short term}) rows, with 'delete' marked; rows of one time sorted
    (SPARQL gives no order without ORDER BY)."""
    rows = []
    for o in outputs:
        b = {k: short(v) for k, v in sorted(o.get("bindings", {}).items())}
        rows.append((o["time"], b) if o.get("op") != "delete" else (o["time"], "delete", b))
    return sorted(rows, key=lambda r: (r[0], repr(r[1:])))


@pytest.fixture
def figure1() -> list[Event]:
    """The stream of RSEP-QL (000) Figure 1 / Example 1: (G1,2) ... (G5,10)."""
    s = EX + "S"
    return [
        ev(s, 2, ":a1 :p :b1 .", EX + "G1"),
        ev(s, 4, ":a2 :p :b2 .", EX + "G2"),
        ev(s, 6, ":b1 :q :c1 . :b2 :q :c2 .", EX + "G3"),
        ev(s, 8, ":a3 :p :b3 . :b2 :q :c2 .", EX + "G4"),
        ev(s, 10, ":b1 :q :c1 .", EX + "G5"),
    ]


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the whole run (local[2], one shuffle partition): starting
    Spark costs seconds, so every Spark test shares it."""
    from rsep.spark.session import get_session

    session = get_session("local[2]", app="rsep-tests", shuffle_partitions=1)
    yield session
    session.stop()
