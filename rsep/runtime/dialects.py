"""Which runtime runs a query: one per family of query algebra, found by the query's dialect
(rsep.lang.dialect's registry, as sqlglot finds a dialect by name), so that no query object builds its own
runtime and the algebra stays plain data. RSP-QL, C-SPARQL and CQELS queries (one algebra,
:class:`rsep.algebra.query.ContinuousQuery`) run on the engine's own window runtime. Each
runtime is a :class:`rsep.algebra.runtime.Runtime` and sees the engine as a
:class:`rsep.algebra.runtime.Host`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from rsep.algebra.output import Output
from rsep.algebra.query import Query
from rsep.algebra.runtime import Host, Runtime
from rsep.lang.dialect import EPSPARQL, SPASEQ, dialect_of, entry

if TYPE_CHECKING:
    from rsep.algebra.epsparql import EpSparqlQuery


def _spaseq(query: Query, engine: Host, name: str,
            callback: Callable[[Output], None] | None) -> Runtime:
    assert isinstance(query, entry("rsep.algebra.spaseq:SpaseqQuery"))  # (the family's algebra)
    rt: Runtime = entry("rsep.spaseq.runtime:SpaseqRuntime")(query, engine, name, callback)
    return rt


def _epsparql(query: Query, engine: Host, name: str,
              callback: Callable[[Output], None] | None) -> Runtime:
    assert isinstance(query, entry("rsep.algebra.epsparql:EpSparqlQuery"))  # (its algebra)
    # ETALIS's policies have their own step-wise consumption
    etalis = isinstance(cast("EpSparqlQuery", query).policy,
                        entry("rsep.algebra.epsparql:EtalisPolicy"))
    runtime = entry("rsep.epsparql.etalis:EtalisRuntime" if etalis
                    else "rsep.epsparql.runtime:EpSparqlRuntime")
    rt: Runtime = runtime(query, engine, name, callback)
    return rt


# The runtime of each family with an automaton of its own (rsep.lang.dialect); the RSP family
# runs on the engine's own window runtime (rsep.runtime.windowed.QueryRuntime). Each family's
# runtime module is imported (by name, rsep.lang.dialect.entry) when its first query is
# registered: an RSP run never loads the automata.
RUNTIMES: dict[str, Callable[[Query, Host, str, Callable[[Output], None] | None], Runtime]] = {
    SPASEQ: _spaseq, EPSPARQL: _epsparql}


def runtime_for(query: Query, engine: Host, name: str,
                callback: Callable[[Output], None] | None) -> Runtime:
    """The runtime the engine drives for a query with an automaton of its own (a
    :class:`Runtime`; a :class:`rsep.algebra.runtime.Deferring` one if it defers
    decisions), found by its dialect's family."""
    d = dialect_of(query)
    if d.family not in RUNTIMES:
        raise TypeError(f"no automaton runtime for a {d.title} query (the engine's window "
                        "runtime runs it)")
    return RUNTIMES[d.family](query, engine, name, callback)
