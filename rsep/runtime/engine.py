"""The runtime: report policies (their ticks: rsep.runtime.ticks), window maintenance, SPARQL evaluation, R2S.

Events are pushed in time order (the merge layer guarantees it). Before an
event at time t is taken in, every evaluation due before t is carried out, so
an evaluation at time tau sees exactly the items with time <= tau (Def. 3's
"t_i <= t'"), and simultaneous events are all in before anything at their time
is evaluated.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar, cast

import pyoxigraph as ox

from rsep.algebra.output import EngineError, Output
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import Query
from rsep.algebra.runtime import Deferring, Flushing, Runtime
from rsep.lang import QueryError, dialect_of, parse_query
from rsep.runtime.background import Background
from rsep.runtime.common import (
    Limits,
    relaxed_collector,
)
from rsep.runtime.dialects import FAMILIES
from rsep.runtime.watchdog import Watchdog
from rsep.stream.event import Event
from rsep.stream.time import TimeKind, format_time

T = TypeVar("T")


class Engine:
    """Registers continuous queries and runs them over pushed events: the
    :class:`rsep.algebra.runtime.Host` of their runtimes.

    >>> eng = Engine()
    >>> eng.register("SELECT ...")            # doctest: +SKIP
    >>> for out in eng.run(events): ...       # doctest: +SKIP
    """

    def __init__(self, *, time_unit_ms: int | None = None, limits: Limits | None = None,
                 allow_dereference: bool = False) -> None:
        self.time_unit_ms = time_unit_ms
        self.limits = limits or Limits()
        self.allow_dereference = allow_dereference
        # --max-eval-seconds while an evaluation runs (the CLI sets one; rsep.runtime.watchdog)
        self.watchdog: Watchdog | None = None
        self.graphs: dict[str, list[ox.Triple]] = {}  # each as it stands at the engine's time
        # the time-varying graphs' changes: each new content comes back to _graph_changed
        self.background = Background(self._graph_changed, self._graph, self._clock)
        self.queries: list[Runtime] = []
        self.kind: TimeKind | None = None
        self.now: int | None = None
        self.start: int | None = None
        self.events = 0
        self._out: deque[Output] = deque()
        self._deferring: set[int] = set()  # ids of the runtimes that announce deadlines
        self._shared: dict[Hashable, object] = {}  # (shared())
        # run() watches each event's whole work, not one evaluation (_evaluate then leaves
        # the watchdog alone): a runaway may be many evaluations, or none (window upkeep)
        self._watched = False
        self.doing: str | None = None  # the evaluation running under it, to name an overrun

    # ------------------------------------------------------------ set-up

    def add_graph(self, iri: str, data: str | Path | Iterable[ox.Triple], *,
                  fmt: ox.RdfFormat | None = None) -> None:
        """A background graph: ``iri`` names it ("default" for the default graph). Its
        changes over time: ``self.background.add_changes``."""
        self.graphs.setdefault(iri, []).extend(self.background.load(iri, data, fmt))

    def _graph(self, iri: str) -> Sequence[ox.Triple]:
        """(the background's) Graph ``iri`` as it stands, empty if there is none."""
        return self.graphs.get(iri, ())

    def _clock(self) -> tuple[TimeKind | None, int | None]:
        """(the background's) The kind of the events' times and the engine's time."""
        return self.kind, self.now

    def _graph_changed(self, iri: str, old: frozenset[ox.Triple], new: frozenset[ox.Triple]) -> None:
        """(the background's callback) Graph ``iri`` is ``new`` from now on: the engine keeps
        it, and tells every runtime if its content changed (Runtime.graph_changed)."""
        self.graphs[iri] = list(new)
        if old != new:
            for rt in self.queries:
                rt.graph_changed(iri, old, new)

    def register(self, query: str | Query, *, dialect: str | None = None,
                 name: str | None = None, r2s: R2S | None = None,
                 report: ReportPolicy | None = None,
                 callback: Callable[[Output], None] | None = None,
                 source: str | None = None, default_name: str | None = None) -> Runtime:
        """Register a query (text in any dialect, or algebra); errors are raised before it runs."""
        q = parse_query(query, dialect, source=source) if isinstance(query, str) else query
        d = dialect_of(q)
        # R2S and report policies are RSP-QL's (000 Def. 5): the other dialects refuse them
        for opt, given in (("--r2s", r2s), ("--report", report)):
            if given is not None:
                d.check(opt, source)
        # the query's family builds its runtime (rsep.runtime.dialects' registry)
        family = FAMILIES[d.family]
        if family.prepare is not None:
            family.prepare(q, self, source, r2s, report)
        # the background graphs the query reads are here before its runtime is built (their
        # errors name the source given, else the query's own)
        for g in family.graphs(q):
            self.need_graph(g, source if source is not None else getattr(q, "source", None))
        n = name or getattr(q, "name", "") or default_name or f"q{len(self.queries) + 1}"
        if any(rt.name == n for rt in self.queries):
            raise QueryError(f"a query named {n!r} is already registered", source=source)
        rt = family.runtime(q, self, n, callback)
        if self.kind is not None:
            rt.bind(self.kind, self.time_unit_ms, self.now if self.now is not None else 0)
        self.queries.append(rt)
        if callable(getattr(rt, "deadline", None)):
            self._deferring.add(id(rt))
        return rt

    def shared(self, key: Hashable, factory: Callable[[], T]) -> T:
        """The engine's one object for ``key``, made by ``factory()`` the first time it is
        asked for: the state the runtimes of one family share on one engine (EP-SPARQL's
        context, rsep.epsparql.runtime.EpContext.of), which the engine itself never reads."""
        got = self._shared.get(key, self._shared)
        if got is self._shared:
            got = self._shared[key] = factory()
        return cast(T, got)

    def next_graph_change(self, after: int, iris: Iterable[str]) -> int | None:
        """The first instant after ``after`` at which one of the background graphs
        ``iris`` changes, or None (rsep.algebra.runtime.Host)."""
        bg = self.background
        return bg.next_change(after, iris) if bg.varying else None

    def need_graph(self, g: str, source: str | None) -> None:
        """A background graph a query reads: given with add_graph, or fetched from its IRI
        when the engine allows dereferencing (--allow-dereference); a QueryError otherwise."""
        if g not in self.graphs:
            self.graphs[g] = self.background.fetch(g, source, self.allow_dereference)

    # ------------------------------------------------------------ running

    def push(self, e: Event) -> None:
        """Take in one event; evaluations due before its time happen first."""
        self._reach(e)
        self._take(e)

    def _reach(self, e: Event) -> None:
        """The evaluations due before e's time (their outputs can go out before e is taken)."""
        # e.end, not the property e.time that is it (an interpreted call, six of them an event)
        if self.kind is None:
            self.kind = e.kind
            self.start = e.end
            for rt in self.queries:
                rt.bind(e.kind, self.time_unit_ms, e.end)
        elif e.kind is not self.kind:
            raise EngineError(f"{e.origin}: <{e.graph}> has a {e.kind.value} timestamp, "
                              f"earlier events had {self.kind.value} ones")
        now = self.now
        if now is not None:
            t = e.end
            if t < now:
                raise EngineError(f"{e.origin}: events must come in time order "
                                  f"({t} after {now})")
            if t > now:
                self._settle(t)

    def _take(self, e: Event) -> None:
        self.events += 1
        e.seq = self.events  # the item's identity for windows and consumption
        for rt in self.queries:
            rt.insert(e)
        self.now = e.end

    def _when(self, rt: Runtime, bound: int) -> int | None:
        """A runtime's next evaluation strictly before ``bound``: its next tick, or the
        deadline it announces, whichever comes first. A deadline is the instant at which a
        decision the runtime deferred becomes final (an EP-SPARQL candidate blocked by an
        older one that leaves the window then): it is evaluated there whatever brings the
        engine's time past it, an event, ``--until`` or the end of the input (:meth:`close`),
        or the Spark stage's frontier."""
        t = rt.next_tick(bound)
        if self._deferring and id(rt) in self._deferring:
            d = cast(Deferring, rt).deadline()
            if d is not None and d < bound and (t is None or d < t):
                return d
        return t

    def _fire(self, bound: int) -> None:
        """Carry out every evaluation due strictly before ``bound``, in time order."""
        if len(self.queries) == 1:
            # One query: its next evaluation before the bound is the one due (what the loop
            # below finds asking it twice).
            rt = self.queries[0]
            # (_when and _emit spelt out: this runs once an event)
            deferring = id(rt) in self._deferring
            out, callback = self._out, rt.callback
            while True:
                t = rt.next_tick(bound)
                if deferring:  # _when's
                    d = rt.deadline()  # type: ignore[attr-defined]
                    if d is not None and d < bound and (t is None or d < t):
                        t = d
                if t is None:
                    return
                got = self._evaluate(rt, t)
                if not got:
                    continue
                if callback is None:
                    out.extend(got)
                else:
                    for o in got:
                        callback(o)
                        out.append(o)
        while True:
            best: int | None = None
            for rt in self.queries:
                t = self._when(rt, bound)
                if t is not None and (best is None or t < best):
                    best = t
            if best is None:
                return
            t = best
            for rt in self.queries:
                if self._when(rt, t + 1) == t:
                    for o in self._evaluate(rt, t):
                        self._emit(rt, o)

    def _evaluate(self, rt: Runtime, t: int) -> Sequence[Output]:
        due = self.background.due
        if due is not None and due <= t:  # G(t) for every evaluation at t (000 Def. 2)
            self.background.advance(t)
        wd = self.watchdog
        if wd is None:
            return rt.evaluate(t)
        if self._watched:  # (the limit's clock runs from the event; an overrun names this)
            self.doing = f"query {rt.name}: evaluation at {format_time(t, self.kind)}"
            try:
                return rt.evaluate(t)
            finally:
                self.doing = None
        wd.begin(f"query {rt.name}: evaluation at {format_time(t, self.kind)}")
        try:
            return rt.evaluate(t)
        finally:
            wd.end()

    # ------------------------------------------------------------ the clock

    def start_at(self, kind: TimeKind, start: int, now: int | None = None) -> None:
        """Start the engine's clock without an event, before any is pushed: its events'
        time kind, its start ``start`` (where the report policies' grids begin, as at a
        first event at ``start``) and its time ``now`` (``start`` if not given), as if
        the events up to ``now`` had been taken in. Every registered query is bound there,
        and one registered later is bound at ``now``. What ``rsep serve`` does for a
        query registered while the server runs, and the Spark stage for a bucket whose
        first event is later than the whole input's."""
        self.kind, self.start = kind, start
        self.now = start if now is None else now
        for rt in self.queries:
            rt.bind(kind, self.time_unit_ms, self.now)

    def advance_to(self, t: int) -> None:
        """The evaluations due before ``t`` are final: each is carried out now (its
        outputs in :meth:`drain`), and the instants before ``t`` skipped as quiet stay
        skipped. The caller promises that no event before ``t`` comes any more (the Spark
        stage's frontier); the engine's time (``now``) stays that of its last event. At
        or before that time there is nothing to do; before the clock starts (an event,
        or :meth:`start_at`), an EngineError."""
        if self.kind is None:
            raise EngineError("the engine's clock has not started: no event was pushed "
                              "and start_at was not called")
        if self.now is not None and t <= self.now:
            return
        self._settle(t)

    def _settle(self, bound: int) -> None:
        """Evaluate everything due before ``bound``; the instants skipped as quiet stay
        skipped, so no later arrival can reach back into them."""
        self._fire(bound)
        for rt in self.queries:
            lt = rt.last_tick  # (read once: the window runtime's is its ticks', a property)
            if lt is None or lt < bound - 1:
                rt.last_tick = bound - 1

    def _emit(self, rt: Runtime, o: Output) -> None:
        if rt.callback is not None:
            rt.callback(o)
        self._out.append(o)

    def close(self, until: int | None = None) -> None:
        """The input has ended: finish the evaluations due up to its last time, then those
        up to ``until``; without ``until``, the decisions deferred past the last event are
        taken at their deadlines (no event can come any more to change them), while the
        time-driven report policies stop with the input."""
        if self.now is None:
            return
        self._settle(self.now + 1)
        for rt in self.queries:
            if callable(getattr(rt, "flush", None)):  # (rsep.algebra.runtime.Flushing)
                cast(Flushing, rt).flush()
        if until is not None:
            if until > self.now:
                self._fire(until + 1)
                self.now = until
            return
        while self._deferring:
            best: int | None = None
            for rt in self.queries:
                if id(rt) in self._deferring:
                    d = cast(Deferring, rt).deadline()
                    if d is not None and (best is None or d < best):
                        best = d
            if best is None:
                return
            for rt in self.queries:
                if id(rt) in self._deferring and cast(Deferring, rt).deadline() == best:
                    for o in self._evaluate(rt, best):
                        self._emit(rt, o)
            self.now = best

    def drain(self) -> Iterator[Output]:
        while self._out:
            yield self._out.popleft()

    def run(self, events: Iterable[Event], until: int | None = None, *,
            write: Callable[[Output], None] | None = None) -> Iterator[Output]:
        """Push every event, yielding outputs as soon as they are produced. With ``write``,
        each output is handed to it the moment its evaluation ends and nothing is yielded:
        the evaluations an event far ahead brings out (one a window close, up to it) are
        never all held, and what a run that is stopped had produced is out."""
        if write is not None:
            self._out = cast("deque[Output]", _Through(write))  # (the calls it takes)
        with relaxed_collector():
            if self.watchdog is not None:
                yield from self._run_watched(events, until)
                return
            out = self._out
            for e in events:
                # outputs leave before the event's own window work, so their latency is the
                # evaluation's
                self._reach(e)
                while out:  # drain(), without a generator per event
                    yield out.popleft()
                self._take(e)
                while out:
                    yield out.popleft()
            self.close(until)
            yield from self.drain()

    def _run_watched(self, events: Iterable[Event], until: int | None) -> Iterator[Output]:
        """run() under --max-eval-seconds: the limit holds for all the work an event brings
        (its window upkeep and every evaluation due before it), and for the end's."""
        wd = self.watchdog
        assert wd is not None
        out = self._out
        self._watched = True
        try:
            for e in events:
                wd.begin(f"the work due at {format_time(e.end, e.kind)} (an event's arrival)")
                try:
                    self._reach(e)
                    self._take(e)
                finally:
                    wd.end()
                while out:
                    yield out.popleft()
            wd.begin("the evaluations at the end of the input")
            try:
                self.close(until)
            finally:
                wd.end()
            yield from self.drain()
        finally:
            self._watched = False


class _Through:
    """The engine's queue of outputs, as :meth:`Engine.run` with ``write`` has it: each
    output put in goes out at once, and it is always empty."""

    __slots__ = ("write",)

    def __init__(self, write: Callable[[Output], None]) -> None:
        self.write = write

    def append(self, o: Output) -> None:
        self.write(o)

    def extend(self, outs: Iterable[Output]) -> None:
        for o in outs:
            self.write(o)

    def __bool__(self) -> bool:
        return False

    def __len__(self) -> int:
        return 0

    def popleft(self) -> Output:
        raise IndexError("nothing is held")
