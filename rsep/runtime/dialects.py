"""Which runtime runs a query: one per family of query algebra, found by the query's type
(sqlglot finds a dialect in a registry the same way), so that no query object builds its own
runtime and the algebra stays plain data. RSP-QL, C-SPARQL and CQELS queries (one algebra,
:class:`rsep.algebra.query.ContinuousQuery`) run on the engine's own window runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rsep.algebra.epsparql import EpSparqlQuery, EtalisPolicy
from rsep.algebra.output import Output
from rsep.algebra.spaseq import SpaseqQuery
from rsep.cep.epsparql_runtime import EpSparqlRuntime
from rsep.cep.etalis import EtalisRuntime
from rsep.cep.runtime import SpaseqRuntime

if TYPE_CHECKING:
    from rsep.runtime.engine import Engine


def runtime_for(query: Any, engine: Engine, name: str,
                callback: Callable[[Output], None] | None) -> Any:
    """The runtime the engine drives for a query with an automaton of its own. It offers:
    name, streams, last_tick, callback, bind(kind, time_unit_ms, start), insert(event),
    next_tick(bound), evaluate(tau) -> list[Output]; and, if it defers decisions,
    deadline() -> int | None."""
    if isinstance(query, SpaseqQuery):
        return SpaseqRuntime(query, engine, name, callback)
    if isinstance(query, EpSparqlQuery):
        if isinstance(query.policy, EtalisPolicy):  # ETALIS's own step-wise consumption
            return EtalisRuntime(query, engine, name, callback)
        return EpSparqlRuntime(query, engine, name, callback)
    raise TypeError(f"no runtime for a {type(query).__name__}")
