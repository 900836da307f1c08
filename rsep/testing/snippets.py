"""Helpers the tests share: events from Turtle snippets, running one query, compact terms.

Importable (``from rsep.testing.snippets import ev, run``) so that tests in every package
folder of ``tests/`` use the same ones."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox

from rsep.runtime.engine import Engine
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

ROOT = Path(__file__).resolve().parents[2]  # the source checkout: tests/, docs/, examples/
EX = "http://example.org/"
PREFIXES = f"@prefix : <{EX}> .\n"
# examples/srbench-hot.rq as a CONSTRUCT: results that RDF Message formats can carry
SRBENCH_HOT_CONSTRUCT = """PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
PREFIX weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#>
REGISTER RSTREAM <http://example.org/hot> AS
CONSTRUCT { ?sensor <http://example.org/hot> ?value }
FROM NAMED WINDOW <http://example.org/w> ON <http://example.org/srbench> [RANGE 5000 STEP 5000]
WHERE {
  WINDOW <http://example.org/w> {
    ?obs om-owl:observedProperty weather:_AirTemperature ; om-owl:procedure ?sensor ;
         om-owl:result [ om-owl:floatValue ?value ] .
    FILTER (?value > 70)
  }
}
"""


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
