"""Which runtime runs a query: one per family of query algebra, found by the query's dialect
(rsep.lang.dialect's registry, as sqlglot finds a dialect by name), so that no query object builds its own
runtime and the algebra stays plain data. Every family is an entry of :data:`FAMILIES`: the
RSP family (RSP-QL, C-SPARQL, CQELS, RSEP-QL MATCH: one algebra,
:class:`rsep.algebra.query.ContinuousQuery`) runs on the window runtime
(rsep.runtime.windowed.QueryRuntime), SPASEQ and EP-SPARQL on their automata. Each runtime is
a :class:`rsep.algebra.runtime.Runtime` and sees the engine as a
:class:`rsep.algebra.runtime.Host`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from rsep.algebra.output import Output
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import ContinuousQuery, Query
from rsep.algebra.runtime import Host, Runtime
from rsep.lang.dialect import EPSPARQL, RSP, SPASEQ, entry
from rsep.lang.errors import QueryError

if TYPE_CHECKING:
    from rsep.algebra.epsparql import EpSparqlQuery
    from rsep.algebra.spaseq import SpaseqQuery

Callback = Callable[[Output], None] | None


def _no_graphs(query: Query) -> Sequence[str]:
    return ()


@dataclass(frozen=True)
class Family:
    """A family's part of the engine: what registering one of its queries checks and sets
    before the query is named (``prepare``: the query, the engine, the source named in
    errors, the R2S operator and report policy given, each None if not), the background
    graphs it reads (``graphs``: their IRIs, which the engine has, given or fetched, before
    it builds the runtime), and the runtime it builds (``runtime``: the query, the engine,
    its name, its callback)."""

    runtime: Callable[[Query, Host, str, Callback], Runtime]
    prepare: Callable[[Query, Host, str | None, R2S | None, ReportPolicy | None], None] | None = None
    graphs: Callable[[Query], Sequence[str]] = _no_graphs


def _rsp_prepare(query: Query, engine: Host, source: str | None, r2s: R2S | None,
                 report: ReportPolicy | None) -> None:
    assert isinstance(query, ContinuousQuery)  # (the family's algebra)
    if query.service_at is not None:
        line, col = query.service_at
        raise QueryError("SERVICE is refused: a query cannot reach the network", line, col, source)
    if query.unknown_at:
        kind, iri, line, col = query.unknown_at[0]
        raise QueryError(f"unknown {kind} <{iri}>: neither pyoxigraph nor rsep implements it",
                         line, col, source)
    if not query.dataset.windows:
        raise QueryError("the query reads no stream: declare a window (FROM NAMED WINDOW, "
                         "FROM STREAM, or a STREAM pattern)", source=source)
    if r2s is not None:
        query.r2s = r2s
    if report is not None:
        query.report = report


def _rsp_graphs(query: Query) -> Sequence[str]:
    assert isinstance(query, ContinuousQuery)
    return query.dataset.default_graphs + query.dataset.named_graphs  # (FROM, FROM NAMED)


def _rsp(query: Query, engine: Host, name: str, callback: Callback) -> Runtime:
    # the window runtime, with the background graphs as they stand (rsep.runtime.windowed)
    rt = entry("rsep.runtime.windowed:QueryRuntime")(query, name, engine, callback)
    rt.load_background(engine.graphs)
    return cast(Runtime, rt)


def _spaseq(query: Query, engine: Host, name: str, callback: Callback) -> Runtime:
    assert isinstance(query, entry("rsep.algebra.spaseq:SpaseqQuery"))  # (the family's algebra)
    rt: Runtime = entry("rsep.spaseq.runtime:SpaseqRuntime")(query, engine, name, callback)
    return rt


def _automaton_graphs(query: Query) -> Sequence[str]:
    # the GRAPH <iri> patterns' of SPASEQ (its GPMs') and EP-SPARQL (rsep.algebra.spaseq,
    # rsep.algebra.epsparql)
    return cast("SpaseqQuery | EpSparqlQuery", query).background


def _epsparql(query: Query, engine: Host, name: str, callback: Callback) -> Runtime:
    assert isinstance(query, entry("rsep.algebra.epsparql:EpSparqlQuery"))  # (its algebra)
    # ETALIS's policies have their own step-wise consumption
    etalis = isinstance(cast("EpSparqlQuery", query).policy,
                        entry("rsep.algebra.epsparql:EtalisPolicy"))
    runtime = entry("rsep.epsparql.etalis:EtalisRuntime" if etalis
                    else "rsep.epsparql.runtime:EpSparqlRuntime")
    rt: Runtime = runtime(query, engine, name, callback)
    return rt


# Each family's entry (rsep.lang.dialect's families). A family's runtime module is imported
# (by name, rsep.lang.dialect.entry) when its first query is registered: an RSP run never
# loads the automata, a SPASEQ or EP-SPARQL run never loads the window machinery.
FAMILIES: dict[str, Family] = {
    RSP: Family(_rsp, _rsp_prepare, _rsp_graphs), SPASEQ: Family(_spaseq, graphs=_automaton_graphs),
    EPSPARQL: Family(_epsparql, graphs=_automaton_graphs)}
