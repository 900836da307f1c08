"""One registered query of ``rsep serve`` (rsep.serve.hub's Hub holds them): its engine,
the inbox its thread drains, and the channel its results reach its subscribers through.

The query's thread takes the inbox's items in order: events, clock moves (POST /clock,
the watermark), background graph changes and trace requests, so each applies between
the same two events it was sent between. pyoxigraph releases the GIL while it
evaluates, so a slow evaluation holds only this query's thread.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from rsep.algebra.epsparql import EpSparqlQuery
from rsep.algebra.output import EngineError, Output
from rsep.algebra.query import Query
from rsep.algebra.spaseq import SpaseqQuery
from rsep.lang import QueryError
from rsep.runtime import trace as tracing
from rsep.runtime.engine import Engine
from rsep.runtime.sinks import read_prefixes
from rsep.runtime.windowed import QueryRuntime
from rsep.serve.publish import MqttPublisher

HISTORY = 1_000  # default: results kept per query for subscribers that connect late


class Item(NamedTuple):
    """What a subscriber receives: ``result`` (``data`` the CLI's jsonl object of ``output``;
    ``last``: the last output of its evaluation, so that an RDF Message of the evaluation
    can be pushed without waiting for the next one), ``error`` (``{"error": message}``,
    the query failed), ``end`` (unregistered)."""

    kind: str
    seq: int
    data: dict[str, Any]
    output: Output | None = None
    last: bool = True


def kind_of(q: Query) -> str:
    """The family of a parsed query: its runtime, and what the console draws."""
    if isinstance(q, SpaseqQuery):
        return "spaseq"
    if isinstance(q, EpSparqlQuery):
        return "epsparql"
    return "rsp"


class Channel:
    """A query's results for its subscribers: the last ``history`` items, then the
    live ones. ``publish`` is called from the query's thread, each subscriber's callback
    hands the item to its own event loop."""

    def __init__(self, history: int = HISTORY) -> None:
        self.lock = threading.Lock()
        self.history: deque[Item] = deque(maxlen=history)
        self.subscribers: list[Callable[[Item], None]] = []
        self.seq = 0
        self.closed = False

    def publish(self, kind: str, data: dict[str, Any], output: Output | None = None,
                last: bool = True) -> None:
        with self.lock:
            self.seq += 1
            item = Item(kind, self.seq, data, output, last)
            self.history.append(item)
            if kind == "end":
                self.closed = True
            subs = list(self.subscribers)
        for deliver in subs:
            deliver(item)

    def subscribe(self, deliver: Callable[[Item], None], since: int = 0) -> list[Item]:
        """Register ``deliver`` for the items after the returned backlog (those after
        ``since`` that were already published)."""
        with self.lock:
            backlog = [it for it in self.history if it[1] > since]
            if not self.closed:
                self.subscribers.append(deliver)
            return backlog

    def unsubscribe(self, deliver: Callable[[Item], None]) -> None:
        with self.lock:
            if deliver in self.subscribers:
                self.subscribers.remove(deliver)


class QueryWorker:
    """One registered query: its engine, its inbox and the thread that drains it."""

    def __init__(self, name: str, text: str, query: Query, engine: Engine,
                 history: int = HISTORY) -> None:
        self.name = name
        self.text = text
        self.query = query
        self.kind = kind_of(query)
        self.engine = engine
        self.runtime = engine.queries[0]
        self.channel = Channel(history)
        self.inbox: queue.SimpleQueue[tuple[str, Any, Any]] = queue.SimpleQueue()
        self.pending = 0  # events queued and not yet taken in
        # events_in counts the events of the streams the query reads (all when it names none):
        # the engine's own count has every stream's
        self.reads = frozenset(self.runtime.streams)
        self.events_in = 0
        self.results = 0
        self.state: int | None = None
        self.latency_ms: float | None = None  # accepted -> taken in, for the last event
        self.error: str | None = None
        self.registered = time.time()
        self.thread = threading.Thread(target=self._run, name=f"rsep-serve-{name}", daemon=True)
        self.output: MqttPublisher | None = None
        # the trace (PUT /queries/N/trace): its tracer stays attached once made (a SPASEQ
        # one from registration, dormant); key and log are set by the query's thread
        self.tracer: Any = None
        self.trace_key: str | None = None
        self.trace_log: tracing.TraceLog | None = None

    @property
    def status(self) -> str:
        return "failed" if self.error else "running"

    def stats(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "status": self.status, "error": self.error,
                "events_in": self.events_in, "results_out": self.results,
                "state_triples": self.state, "pending_events": self.pending,
                "lag_ms": self.latency_ms, "engine_time": self.engine.now,
                "trace": self.trace_key,
                "output": self.output.describe() if self.output else None}

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message
            self.channel.publish("error", {"error": message})

    def _run(self) -> None:
        while True:
            op, arg, extra = self.inbox.get()
            if op == "stop":
                if self.engine.watchdog is not None:
                    self.engine.watchdog.close()  # else its thread outlives the query
                self.channel.publish("end", {})
                return
            if op == "trace":
                try:
                    self._trace(*arg)
                finally:
                    extra.set()
                continue
            if self.error is not None:
                if op == "event":
                    self.pending -= 1
                elif op == "clock":
                    extra.set()
                continue  # failed: nothing more is evaluated, the inbox is only emptied
            try:
                if op == "event":
                    self.pending -= 1
                    self.engine.push(arg)
                    if not self.reads or arg.stream in self.reads:
                        self.events_in += 1
                    self.latency_ms = (time.monotonic() - extra) * 1000
                elif op == "clock":
                    self.engine.close(until=arg)
                elif op == "graph":
                    self.engine.background.change_now(arg)
                self._publish()
            except (EngineError, QueryError, ValueError) as e:
                self.fail(str(e))
            finally:
                if op == "clock":
                    extra.set()  # after the outputs went out: the caller reads them next

    def _trace(self, key: tuple[str, str] | None, text: str | None, limit: int) -> None:
        """(the query's thread, between two events) Follow ``key`` from now on (None: stop)."""
        declared = read_prefixes(self.text)
        if key is not None and self.tracer is None:  # EP-SPARQL: attached on the first trace
            self.tracer = tracing.attach(self.runtime, self.query, None, declared,
                                         sink=self.trace_line)
        if self.tracer is not None:
            tracing.retarget(self.tracer, key, declared)
        self.trace_key = text
        self.trace_log = tracing.TraceLog(limit) if key is not None else None

    def trace_line(self, time: int | str, text: str) -> None:
        if self.trace_log is not None:
            self.trace_log(time, text)

    def _publish(self) -> None:
        outs = list(self.engine.drain())
        for i, o in enumerate(outs):
            self.results += 1
            last = i + 1 == len(outs) or evaluation(outs[i + 1]) != evaluation(o)
            self.channel.publish("result", line(o), o, last)
        if isinstance(self.runtime, QueryRuntime):
            self.state = sum(bw.op.size() for bw in self.runtime.windows)


def evaluation(o: Output) -> tuple[Any, ...]:
    """What the outputs of one evaluation share (one RDF Message each, as rsep run writes)."""
    return (o.query, o.time, o.op, o.kind)


def graph_results(q: Query) -> bool:
    """Whether a query's results are triples (CONSTRUCT, DESCRIBE, EP-SPARQL rules), which
    can be pushed as RDF Messages."""
    if isinstance(q, EpSparqlQuery):
        return q.construct
    if isinstance(q, SpaseqQuery):
        return False
    return q.form in ("CONSTRUCT", "DESCRIBE")


def line(o: Output) -> dict[str, Any]:
    """The CLI's jsonl object for an output of a run with several queries."""
    return {"query": o.query, **o.to_json()}
