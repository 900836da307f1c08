"""The Spark plan of a query: its partition key, with the reason, and how events are routed.

The stateful stage is keyed by ``query#bucket``; an event goes to the buckets of its
partition-key values (a hash of the values modulo the number of buckets), and each
bucket runs the in-process engine over the events of all the key values it holds.
A query is split only when the union of the buckets' outputs is provably the
unpartitioned run's output; otherwise it runs on one key, and ``rsep explain`` says
why (docs/semantics.md, "Spark").
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

from rsep.stream.event import Event

SINGLE = ()


@dataclass(frozen=True)
class Partitioning:
    key: tuple[str, ...]  # variables; () = one key for the whole query
    reason: str

    def describe(self) -> str:
        if self.key:
            return "partition key: " + " ".join("?" + v for v in self.key) + f" ({self.reason})"
        return f"partition key: none, one key ({self.reason})"


def partitioning(q: Any) -> Partitioning:
    """The partition key of a parsed query (any dialect), with the reason."""
    from rsep.algebra.query import ContinuousQuery

    if isinstance(q, ContinuousQuery):
        return Partitioning(SINGLE, "an evaluation joins and aggregates the triples of every "
                            "event in its windows, and an event may carry several values of "
                            "any variable, so no split of the events is provably exact")
    from rsep.algebra.spaseq import SpaseqQuery
    if isinstance(q, SpaseqQuery):
        from rsep.cep.partition import partition_key

        var, why = partition_key(q)
        return Partitioning((var,) if var else SINGLE, why)
    return Partitioning(SINGLE, f"{type(q).__name__}: its operators combine events without "
                        "a shared key, so it runs unsplit")


def bucket_of(values: tuple[str, ...], buckets: int) -> int:
    """Stable across processes and runs (Python's hash() is salted per process)."""
    return zlib.crc32("\x1f".join(values).encode()) % buckets


@dataclass
class QueryPlan:
    """One registered query, as shipped to the executors (text, not parsed objects)."""

    name: str
    text: str
    dialect: str | None = None
    source: str | None = None
    r2s: str | None = None
    report: str | None = None
    policy: str | None = None
    streams: tuple[str, ...] = ()
    partitioning: Partitioning = field(default_factory=lambda: Partitioning(SINGLE, ""))
    buckets: int = 1

    def parse(self) -> Any:
        from rsep.lang import QueryError, parse_query

        q = parse_query(self.text, self.dialect, source=self.source)
        if self.policy:
            if not hasattr(q, "with_policy"):
                raise QueryError(f"--policy applies to EP-SPARQL queries; {self.source} is not one",
                                 source=self.source)
            q = q.with_policy(self.policy)
        return q


class Router:
    """Which buckets of a query an event goes to (runs on the executors)."""

    def __init__(self, qp: QueryPlan, graphs: dict[str, list[ox.Triple]]) -> None:
        self.qp = qp
        self.streams = set(qp.streams)
        self._eval = None
        if qp.partitioning.key and qp.buckets > 1:
            from rsep.cep.gpm import GPMEvaluator

            q = qp.parse()
            self._gpms = [(g, g.stream) for g in q.gpms.values()]
            self._eval = GPMEvaluator(q.gpms.values(), graphs)

    def buckets(self, e: Event) -> list[int]:
        if self.streams and e.stream not in self.streams:
            return []  # (a runtime reading no declared stream, EP-SPARQL's, takes every event)
        if self._eval is None:
            return [0]
        from rsep.cep.events import SEvent

        key = self.qp.partitioning.key
        n = self.qp.buckets
        out: set[int] = set()
        ev = self._eval
        ev.begin([SEvent(e.stream, e.time, e.triples)])
        try:
            for g, stream in self._gpms:
                if stream != e.stream:
                    continue
                for m in ev.local(g, stream):
                    d = dict(m)
                    vals = tuple(str(d[v]) if v in d else "" for v in key)
                    if "" in vals:
                        return list(range(n))  # a match that binds no key value: every run may take it
                    out.add(bucket_of(vals, n))
        finally:
            ev.end()
        return sorted(out)
