"""Which runtime runs a query: one per family of query algebra, found by the query's dialect
(rsep.lang.dialect's registry, as sqlglot finds a dialect by name), so that no query object builds its own
runtime and the algebra stays plain data. RSP-QL, C-SPARQL and CQELS queries (one algebra,
:class:`rsep.algebra.query.ContinuousQuery`) run on the engine's own window runtime."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Protocol, cast

from rsep.algebra.output import Output
from rsep.algebra.query import Query
from rsep.lang.dialect import EPSPARQL, SPASEQ, dialect_of, entry

if TYPE_CHECKING:
    from pyoxigraph import Triple

    from rsep.algebra.epsparql import EpSparqlQuery
    from rsep.runtime.engine import Engine
    from rsep.stream.event import Event
    from rsep.stream.time import TimeKind


class Runtime(Protocol):
    """What the engine drives for each registered query: the window runtime
    (:class:`rsep.runtime.engine.QueryRuntime`) and the automata's runtimes below."""

    name: str
    last_tick: int | None  # the last evaluation instant; the engine moves it past quiet ones
    callback: Callable[[Output], None] | None

    @property
    def streams(self) -> Collection[str]:
        """The stream IRIs read (empty: every input event)."""
        ...

    def bind(self, kind: TimeKind, time_unit_ms: int | None, start: int) -> None: ...

    def insert(self, e: Event) -> None: ...

    def next_tick(self, bound: int) -> int | None: ...

    def evaluate(self, tau: int) -> Sequence[Output]: ...

    def graph_changed(self, iri: str, old: frozenset[Triple], new: frozenset[Triple]) -> None:
        """Background graph ``iri`` is ``new`` from now on (rsep.runtime.background), before
        the next evaluation."""
        ...


class Deferring(Runtime, Protocol):
    """A runtime that defers decisions (EP-SPARQL's): the engine evaluates it at the
    instant a deferred decision becomes final."""

    def deadline(self) -> int | None: ...


def _spaseq(query: Query, engine: Engine, name: str,
            callback: Callable[[Output], None] | None) -> Runtime:
    assert isinstance(query, entry("rsep.algebra.spaseq:SpaseqQuery"))  # (the family's algebra)
    rt: Runtime = entry("rsep.spaseq.runtime:SpaseqRuntime")(query, engine, name, callback)
    return rt


def _epsparql(query: Query, engine: Engine, name: str,
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
# runs on the engine's own window runtime (rsep.runtime.engine.QueryRuntime). Each family's
# runtime module is imported (by name, rsep.lang.dialect.entry) when its first query is
# registered: an RSP run never loads the automata.
RUNTIMES: dict[str, Callable[[Query, Engine, str, Callable[[Output], None] | None], Runtime]] = {
    SPASEQ: _spaseq, EPSPARQL: _epsparql}


def runtime_for(query: Query, engine: Engine, name: str,
                callback: Callable[[Output], None] | None) -> Runtime:
    """The runtime the engine drives for a query with an automaton of its own (a
    :class:`Runtime`; a :class:`Deferring` one if it defers decisions), found by its
    dialect's family."""
    d = dialect_of(query)
    if d.family not in RUNTIMES:
        raise TypeError(f"no automaton runtime for a {d.title} query (the engine's window "
                        "runtime runs it)")
    return RUNTIMES[d.family](query, engine, name, callback)
