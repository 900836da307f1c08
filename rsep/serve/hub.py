"""The engine side of ``rsep serve``: registered queries, events in, results out.

Each query runs in an :class:`~rsep.runtime.engine.Engine` of its own, driven by a thread
of its own that takes the events from an inbox (rsep.serve.worker's QueryWorker). pyoxigraph releases the GIL while it
evaluates, so a slow evaluation holds only its own query's thread; the others go on. A
pyoxigraph query cannot be cancelled: when one evaluation overruns the per-query limit
(``--max-eval-seconds``), its watchdog marks the query failed and detaches it from the
streams, so nothing more is queued for it, and its thread ends when pyoxigraph returns.

Every query's engine sees every accepted event in the same order (as the queries of
``rsep run`` do), so a query's results are the CLI's for the same events.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pyoxigraph as ox

from rsep.algebra.spaseq import SpaseqQuery
from rsep.lang import QueryError, parse_query
from rsep.runtime import trace as tracing
from rsep.runtime.engine import Engine, Limits
from rsep.runtime.sinks import read_prefixes
from rsep.runtime.watchdog import Watchdog
from rsep.runtime.watermark import WatermarkPolicy
from rsep.serve.ingest import StreamOrder, read_body, rejected
from rsep.serve.publish import MqttPublisher
from rsep.serve.worker import HISTORY, QueryWorker, graph_results
from rsep.sparql.update import UpdateError, canonical
from rsep.sparql.update import apply as apply_update
from rsep.stream.event import Event, Rejected
from rsep.stream.files import TimeConfig
from rsep.stream.live import Control, LiveStream
from rsep.stream.source import DeadLetter
from rsep.stream.time import TimeKind
from rsep.stream.updates import GraphUpdate, check_update

MAX_PENDING = 10_000  # default: events queued for one query before POST /events gets 429

# a name is a path segment of /queries/NAME: one that needs no escaping, and neither . nor ..
# (which clients resolve away); one with / could be registered and never reached again
NAME = re.compile(r"(?!\.{1,2}$)[A-Za-z0-9._~-]{1,128}")


# how often the watermark policy's thread looks at the wall clock (seconds): an answer due
# comes at most this much after the policy says
WATERMARK_TICK = 0.05


class Busy(Exception):
    """A query's inbox is full: the events are refused whole (429), none taken in."""


class NoTrace(Exception):
    """A query has no trace (404), or cannot have one (a refusal, 400)."""


class DuplicateName(QueryError):
    """A query of that name is registered already (409: the request conflicts with the
    server's state, and the same body under another name would be taken)."""


class Posted(NamedTuple):
    """What became of a body of events: ``records`` read from it, ``accepted`` events
    handed to the queries, ``rejected`` records sent to the dead letter."""

    accepted: int
    rejected: int
    records: int


@dataclass
class Settings:
    """The server's options, as ``rsep serve`` parses them."""

    time_unit_ms: int | None = None
    time: TimeConfig = field(default_factory=TimeConfig)
    allowed_lateness: int = 0
    limits: Limits = field(default_factory=lambda: Limits(max_eval_seconds=10.0))
    allow_dereference: bool = False
    history: int = HISTORY  # results kept per query for late subscribers (bounds memory)
    max_pending: int = MAX_PENDING  # events queued per query (bounds memory; 429 past it)
    # when engine time moves without events (rsep.runtime.watermark; default: only events
    # and POST /clock move it, as in a replay)
    watermark: WatermarkPolicy = field(default_factory=WatermarkPolicy)
    trace_lines: int = tracing.MAX_LINES  # lines kept of a query's trace (bounds memory)


@dataclass(eq=False)
class Source:
    """A live source attached to a stream (``POST /streams``)."""

    iri: str
    url: str
    fmt: str
    control: Control = field(default_factory=Control)
    thread: threading.Thread | None = None
    status: str = "running"  # running | ended (the source closed) | failed | detached
    error: str | None = None
    events: int = 0
    rejected: int = 0

    def describe(self) -> dict[str, Any]:
        return {"iri": self.iri, "url": self.url, "format": self.fmt, "status": self.status,
                "error": self.error, "events": self.events, "rejected": self.rejected}


RATE_WINDOW_S = 10.0  # a stream's rate: the events of its last 10 s of wall clock


@dataclass(eq=False)
class StreamStats:
    """What the console's streams panel shows of one stream (``GET /streams/stats``)."""

    accepted: int = 0
    rejected: int = 0
    last_time: int | None = None  # the latest event time taken in
    last_arrival: float | None = None  # wall clock (time.time) of the last body or event
    arrivals: deque[tuple[float, int]] = field(default_factory=deque)


class Hub:
    """The registered queries, the streams' orderers, the background graphs and the dead
    letter. Its methods are called from the web server's threads; one lock orders them."""

    def __init__(self, settings: Settings, dead: DeadLetter | None = None) -> None:
        self.settings = settings
        self.lock = threading.Lock()
        self.workers: dict[str, QueryWorker] = {}
        self.graphs: dict[str, list[ox.Triple]] = {}
        self.orders: dict[str, StreamOrder] = {}
        self.sources: dict[str, Source] = {}
        self.streams: dict[str, StreamStats] = {}
        self.dead = dead or DeadLetter()
        self.kind: TimeKind | None = None
        self.now: int | None = None  # the latest time handed to the queries
        self.floor: int | None = None  # the latest --until given (advance): no event at or before
        self.start: int | None = None
        self.events = 0
        self.requests = itertools.count(1)
        self.changes = itertools.count(1)  # of the background graphs
        self.started = time.time()
        # what the watermark policy reads (under the lock): the latest event time taken in,
        # when the last event came, the first's (time, arrival), and the arrival the idle
        # policy last moved the time for (once per quiet spell)
        self.latest: int | None = None
        self.last_arrival: float | None = None
        self.first: tuple[int, float] | None = None
        self._moved_for: float | None = None
        self._stop = threading.Event()
        if settings.watermark.moves:
            threading.Thread(target=self._watermark, name="rsep-watermark", daemon=True).start()

    # ------------------------------------------------------------ queries

    def register(self, text: str, *, name: str | None = None, dialect: str | None = None,
                 output: str | None = None, fmt: str = "jsonl",
                 traceable: bool = False) -> QueryWorker:
        """Parse and register a query; a :class:`QueryError` (located in ``name`` or
        "query") if it cannot run. ``output``: an MQTT topic its results are published to,
        in ``fmt`` (ValueError for a bad one, OSError when the broker cannot be reached).
        ``traceable``: a SPASEQ query that a trace may follow later (its runtime then runs
        the general engine with runs unshared from the start)."""
        source = name or "query"
        q = parse_query(text, dialect, source=source)
        pub = None
        if output is not None:
            if fmt != "jsonl" and not graph_results(q):
                raise ValueError(f"{fmt} needs a CONSTRUCT or DESCRIBE query (or an EP-SPARQL "
                                 "CONSTRUCT rule): this query gives bindings, published as jsonl")
            pub = MqttPublisher(output, fmt)
        s = self.settings
        with self.lock:
            n = name or getattr(q, "name", "") or self._fresh_name()
            if not NAME.fullmatch(n):
                if pub is not None:
                    pub.out.close()
                raise ValueError(f"query name {n[:200]!r} cannot be a URL path segment: use "
                                 "1 to 128 letters, digits and . _ ~ - (not . or ..)")
            if n in self.workers:
                if pub is not None:
                    pub.out.close()
                raise DuplicateName(f"a query named {n!r} is already registered", source=source)
            engine = Engine(time_unit_ms=s.time_unit_ms, limits=s.limits,
                            allow_dereference=s.allow_dereference)
            engine.graphs = dict(self.graphs)
            rt = engine.register(q, source=source, default_name=n)
            w = QueryWorker(n, text, q, engine, self.settings.history)
            if traceable and isinstance(q, SpaseqQuery):
                # a trace can start at any instant only on the general engine, with runs
                # unshared, chosen when the runtime binds (rsep.spaseq.why): a dormant tracer
                # is attached before it does. Only when asked: it gives up the chain
                # engine's speed on plain sequences for the query's whole life
                w.tracer = tracing.attach(rt, q, None, read_prefixes(text),
                                          sink=w.trace_line)
            # the query starts at the server's current time, as one registered between two
            # events of `rsep run` would (the engine's clock, Engine.start_at, binds it there)
            if self.kind is not None and self.start is not None:
                engine.start_at(self.kind, self.start, self.now)
            if s.limits.max_eval_seconds is not None:
                limit = s.limits.max_eval_seconds
                engine.watchdog = Watchdog(limit, lambda what: self._overrun(w, what, limit))
            if pub is not None:
                w.output = pub
                w.channel.subscribe(pub)
            self.workers[n] = w
            w.thread.start()
        return w

    def _fresh_name(self) -> str:
        for i in itertools.count(len(self.workers) + 1):
            if f"q{i}" not in self.workers:
                return f"q{i}"
        raise AssertionError("unreachable")

    def _overrun(self, w: QueryWorker, what: str, limit: float) -> None:
        """The watchdog's thread: the evaluation cannot be stopped, so the query is failed
        and detached; the other queries never wait for it."""
        w.fail(f"{what} is still running after the limit of {limit} s (--max-eval-seconds); "
               "the query is stopped")

    def unregister(self, name: str) -> bool:
        with self.lock:
            w = self.workers.pop(name, None)
        if w is None:
            return False
        w.inbox.put(("stop", None, None))
        return True

    def trace(self, name: str, key: str | None, timeout: float = 10.0) -> QueryWorker:
        """Follow the runs (SPASEQ) or events (EP-SPARQL) of ``key`` (``?VAR=VALUE``) of the
        query ``name`` from its next event on, in a new log (None: stop and drop the log).
        NoTrace for no such query; ValueError for a bad key or a query that cannot be
        traced (the message of ``rsep run --trace``)."""
        w = self.workers.get(name)
        if w is None:
            raise NoTrace("no such query")
        parsed = None
        if key is not None:
            parsed = tracing.parse_key(key)
            why = tracing.traceable(w.runtime, w.query)
            if why is None and isinstance(w.query, SpaseqQuery) and w.tracer is None:
                why = (f"query {name} was registered without traceable=true: a SPASEQ query "
                       "is traced on its general engine with runs unshared, chosen when it "
                       "starts (POST /queries?traceable=true)")
            if why is not None:
                raise ValueError(why)
        done = threading.Event()
        w.inbox.put(("trace", (parsed, key, self.settings.trace_lines), done))
        # the inbox keeps the order, so events posted after this are traced whether or not
        # the query's thread has got to it; waiting lets a GET right after see the new log
        deadline = time.monotonic() + timeout
        while not done.wait(0.05) and self.workers.get(name) is w \
                and time.monotonic() < deadline:
            pass  # (an unregistered query's thread never gets to it)
        return w

    def get(self, name: str) -> QueryWorker | None:
        return self.workers.get(name)

    def all(self) -> list[QueryWorker]:
        return list(self.workers.values())

    # ------------------------------------------------------------ graphs

    def put_graph(self, iri: str, body: bytes, media_type: str | None, *,
                  merge: bool = False) -> tuple[int, int | None]:
        """Replace a background graph (``merge``: add the body's triples to it, the Graph
        Store protocol's POST), at the engine's current time: the running queries read it
        from their next evaluation on, those registered afterwards from the start. Returns
        (the graph's size, the time it changed at; None before any event)."""
        fmt = ox.RdfFormat.from_media_type(media_type or "text/turtle") or ox.RdfFormat.TURTLE
        try:
            triples = canonical(q.triple for q in ox.parse(body, format=fmt))
        except (SyntaxError, ValueError) as e:
            raise ValueError(f"graph <{iri}>: {e}") from None
        with self.lock:
            if merge:
                triples |= canonical(self.graphs.get(iri, ()))
            return len(triples), self._change(GraphUpdate(
                iri, self.now or 0, self.kind or TimeKind.ABSTRACT, version=tuple(triples),
                origin=f"graph-change-{next(self.changes)}"), triples)

    def update_graph(self, iri: str, text: str) -> tuple[int, int | None]:
        """Apply a SPARQL 1.1 Update to a background graph (its default graph), at the
        engine's current time, as :meth:`put_graph`; a ValueError, located in the update,
        if it cannot be applied."""
        why = check_update(text)
        if why is not None:
            line, col, reason = why
            raise ValueError(f"update of <{iri}>:{line}:{col}: {reason}")
        with self.lock:
            u = GraphUpdate(iri, self.now or 0, self.kind or TimeKind.ABSTRACT, update=text,
                            origin=f"graph-change-{next(self.changes)}")
            try:
                new = apply_update(canonical(self.graphs.get(iri, ())), u)
            except UpdateError as e:
                raise ValueError(str(e)) from None
            return len(new), self._change(u, new)

    def _change(self, u: GraphUpdate, new: frozenset[ox.Triple]) -> int | None:
        """(under the lock) The graph is ``new`` for later queries; the running ones apply
        ``u`` after the events before it (their inboxes keep the order)."""
        self.graphs[u.graph] = list(new)
        for w in self.workers.values():
            if w.error is None:
                w.inbox.put(("graph", u, None))
        return self.now

    # ------------------------------------------------------------ events

    def post_events(self, stream: str, body: bytes, fmt: str) -> Posted:
        """Take in a body of events for ``stream``."""
        if busy := self.busy():
            raise Busy(f"query {busy.name} has {busy.pending} events still to take in "
                       f"(--max-pending-events {self.settings.max_pending}): none of these "
                       "were taken; send them again later")
        origin = f"request-{next(self.requests)}"
        records = [0]

        def counted(items: Iterable[Event | Rejected]) -> Iterable[Event | Rejected]:
            for it in items:
                records[0] += 1
                yield it

        accepted, rejected_n = self._take(stream, counted(
            read_body(body, stream, fmt, origin, self.settings.time)))
        return Posted(accepted, rejected_n, records[0])

    def busy(self) -> QueryWorker | None:
        """A running query whose inbox is full, if any. Checked before a body is taken in,
        so a query may hold one body's events more than the limit (the body limit bounds it)."""
        for w in list(self.workers.values()):
            if w.error is None and w.pending >= self.settings.max_pending:
                return w
        return None

    def _take(self, stream: str, items: Iterable[Event | Rejected]) -> tuple[int, int]:
        accepted = rejected_n = 0
        with self.lock:
            order = self.orders.setdefault(stream, StreamOrder(self.settings.allowed_lateness))
            for it in items:
                if isinstance(it, Rejected):
                    self._reject(it)
                    rejected_n += 1
                    continue
                released, why = order.offer(it)
                if why is not None:
                    self._reject(why)
                    rejected_n += 1
                else:
                    self._arrived(it)
                for e in released:
                    if self._forward(e):
                        accepted += 1
                    else:
                        rejected_n += 1
            self._count(stream, order, accepted, rejected_n)
        return accepted, rejected_n

    def _count(self, stream: str, order: StreamOrder, accepted: int, rejected_n: int) -> None:
        st = self.streams.setdefault(stream, StreamStats())
        wall = time.time()
        st.accepted += accepted
        st.rejected += rejected_n
        st.last_time = order.max_seen if order.max_seen is not None else order.last_out
        st.last_arrival = wall
        st.arrivals.append((wall, accepted))
        while st.arrivals and st.arrivals[0][0] < wall - RATE_WINDOW_S:
            st.arrivals.popleft()

    def stream_stats(self) -> list[dict[str, Any]]:
        """Per stream: events taken in and rejected, held back (lateness), the latest event
        time, the rate over the last RATE_WINDOW_S seconds, the source attached if any."""
        wall = time.time()
        out = []
        with self.lock:
            for iri, st in self.streams.items():
                recent = sum(n for t, n in st.arrivals if t >= wall - RATE_WINDOW_S)
                src = self.sources.get(iri)
                out.append({"iri": iri, "accepted": st.accepted, "rejected": st.rejected,
                            "held": len(self.orders[iri].held) if iri in self.orders else 0,
                            "last_event_time": st.last_time,
                            "last_arrival_s_ago": None if st.last_arrival is None
                            else round(wall - st.last_arrival, 3),
                            "rate_per_s": round(recent / RATE_WINDOW_S, 3),
                            "allowed_lateness": self.settings.allowed_lateness,
                            "source": src.describe() if src else None})
        return out

    # ------------------------------------------------------------ live sources

    def attach(self, iri: str, url: str, fmt: str = "events", timeout: float = 10.0) -> Source:
        """Read a live source (``tcp://``, ``mqtt://``; rsep.stream.live) into stream
        ``iri`` on a thread of its own, as if its events were POSTed; returns once it is
        connected (MQTT: subscribed). ValueError for a bad URL or format, ConnectionError
        when it cannot connect."""
        if fmt not in ("events", "rdfm", "jelly"):
            raise ValueError(f"unknown source format {fmt!r} (events, rdfm or jelly)")
        with self.lock:
            if iri in self.sources and self.sources[iri].status == "running":
                raise ValueError(f"a source is already attached to <{iri}>; detach it first")
        src = Source(iri, url, fmt)
        if fmt == "jelly":
            url += ("&" if "?" in url else "?") + "format=jelly"
        live = LiveStream(url, iri, messages=fmt == "rdfm", time=self.settings.time,
                          control=src.control)
        src.thread = threading.Thread(target=self._pump, args=(src, live), daemon=True,
                                      name=f"rsep-serve-source-{iri}")
        src.thread.start()
        deadline = time.monotonic() + timeout
        while not src.control.ready.wait(0.05):
            if src.error is not None or time.monotonic() > deadline:
                src.control.stop.set()
                raise ConnectionError(f"{url}: " + (src.error or f"not connected after {timeout} s"))
        with self.lock:
            self.sources[iri] = src
        return src

    def _pump(self, src: Source, live: Iterable[Event | Rejected]) -> None:
        try:
            for it in live:
                # a full inbox holds the source back (its socket fills, the sender waits)
                # instead of refusing events it cannot send again
                while self.busy() and not src.control.stop.is_set():
                    time.sleep(0.01)
                if src.control.stop.is_set():
                    break  # detached: what the source held back is dropped
                a, r = self._take(src.iri, (it,))
                src.events += a
                src.rejected += r
            src.status = "detached" if src.control.stop.is_set() else "ended"
        except (OSError, ValueError) as e:  # the connection, or a message too large
            src.error = str(e)
            src.status = "failed"

    def detach(self, iri: str, wait: float = 5) -> Source | None:
        """Stop reading the source of ``iri`` (within a fraction of a second)."""
        with self.lock:
            src = self.sources.pop(iri, None)
        if src is not None:
            src.control.stop.set()
            if src.thread is not None:
                src.thread.join(wait)
        return src

    def _reject(self, r: Rejected) -> None:
        self.dead(r)

    def _forward(self, e: Event) -> bool:
        """Hand an in-order event to every query (under the lock)."""
        if self.kind is not None and e.kind is not self.kind:
            self._reject(rejected(e, f"<{e.graph}> has a {e.kind.value} timestamp but the "
                                     f"server's earlier events have {self.kind.value} ones"))
            return False
        if self.now is not None and e.time < self.now:
            self._reject(rejected(e, f"timestamp {e.time} of <{e.graph}> is behind the engine's "
                                     f"time {self.now} (another stream is ahead; events of "
                                     "all streams must come in time order)"))
            return False
        if self.floor is not None and e.time <= self.floor:
            self._reject(rejected(e, f"timestamp {e.time} of <{e.graph}> is not after the time "
                                     f"{self.floor} the engine was advanced to"))
            return False
        if self.kind is None:
            self.kind, self.start = e.kind, e.time
        self.now = e.time
        self.events += 1
        t = time.monotonic()
        for w in self.workers.values():
            if w.error is None:
                w.pending += 1
                # a copy per engine: each numbers the events it takes in (Event.seq)
                w.inbox.put(("event", Event(e.stream, e.graph, e.start, e.end, e.triples,
                                            e.kind, 0, e.origin, e.graphs), t))
        return True

    def _arrived(self, e: Event) -> None:
        """An event taken in (held or forwarded): what the watermark policy reads."""
        wall = time.monotonic()
        self.latest = e.time if self.latest is None else max(self.latest, e.time)
        self.last_arrival = wall
        if self.first is None:
            self.first = (e.time, wall)

    def _watermark(self) -> None:
        """The watermark policy's thread: every WATERMARK_TICK seconds, engine time moves to
        where the policy says (as POST /clock moves it), when that is ahead of it."""
        policy = self.settings.watermark
        while not self._stop.wait(WATERMARK_TICK):
            with self.lock:
                due = policy.due(latest=self.latest, last_arrival=self.last_arrival,
                                 first=self.first, wall=time.monotonic(),
                                 lateness=self.settings.allowed_lateness, kind=self.kind,
                                 time_unit_ms=self.settings.time_unit_ms)
                if due is None or (self.floor is not None and due <= self.floor):
                    continue
                if policy.kind == "idle":
                    if self._moved_for == self.last_arrival:
                        continue
                    self._moved_for = self.last_arrival
                elif self.now is not None and due < self.now:
                    continue
            try:
                self.advance(due, timeout=10)
            except ValueError:
                pass  # an event came meanwhile, past ``due``: nothing to move

    def advance(self, until: int, timeout: float | None = None) -> None:
        """Engine time moves to ``until``: held events up to it are released, and every
        query carries out its evaluations due up to it (as ``rsep run --until`` does at
        the end of its input); later events at or before ``until`` are rejected. Returns
        when every query has done so (or ``timeout`` has passed)."""
        with self.lock:
            for order in self.orders.values():
                for e in order.flush(until):
                    self._forward(e)
            if self.now is None:
                return
            if until < self.now:
                raise ValueError(f"the engine is already at time {self.now}, after {until}")
            # an event at `until` after its evaluations would be lost: refuse it from now on
            self.now = until
            self.floor = until
            dones = []
            for w in self.workers.values():
                done = threading.Event()
                w.inbox.put(("clock", until, done))
                dones.append((w, done))
        deadline = None if timeout is None else time.monotonic() + timeout
        for w, d in dones:
            # a query that failed (a runaway evaluation still holding its thread) is not waited for
            while not d.wait(0.05) and w.error is None:
                if deadline is not None and time.monotonic() > deadline:
                    return

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "queries": len(self.workers), "events": self.events,
                "dead_letters": self.dead.count, "engine_time": self.now,
                "uptime_s": round(time.time() - self.started, 3)}

    def dead_letters(self) -> list[dict[str, Any]]:
        # a record is cut here (the --dead-letter file keeps it whole): 10,000 of 16 MiB
        # would make one response of 160 GB
        return [{"stream": r.stream, "origin": r.origin, "line": r.line, "column": r.column,
                 "reason": r.reason, "record": _cut(r.text), "message": _cut(r.message())}
                for r in list(self.dead.items)]

    def close(self) -> None:
        self._stop.set()
        for iri in list(self.sources):
            self.detach(iri, wait=0.2)  # a stopping server does not wait for its sources
        for name in list(self.workers):
            self.unregister(name)
        self.dead.close()


def _cut(text: str, n: int = 4096) -> str:
    return text if len(text) <= n else text[:n] + f"… ({len(text) - n} more characters)"
