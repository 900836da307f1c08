"""The runtime: report policies (their ticks: rsep.runtime.ticks), window maintenance, SPARQL evaluation, R2S.

Events are pushed in time order (the merge layer guarantees it). Before an
event at time t is taken in, every evaluation due before t is carried out, so
an evaluation at time tau sees exactly the items with time <= tau (Def. 3's
"t_i <= t'"), and simultaneous events are all in before anything at their time
is evaluated.
"""

from __future__ import annotations

import time as _time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pyoxigraph as ox

from rsep.algebra.dataset import DEFAULT
from rsep.algebra.events import FROM_VAR, TO_VAR, MatchPattern
from rsep.algebra.output import EngineError, Output
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import CSPARQL_TIMESTAMP, ContinuousQuery, Query
from rsep.algebra.window import WindowKind
from rsep.events import reference as events_reference
from rsep.events.incremental import IncrementalMatcher
from rsep.events.reference import EventMapping
from rsep.events.solver import BatchSolver
from rsep.lang import QueryError, dialect_of, parse_query
from rsep.runtime.background import Background
from rsep.runtime.common import (
    XSD_INTEGER,
    Limits,
    match_values,
    outputs,
    relaxed_collector,
    time_literal,
    unskolemize,
)
from rsep.runtime.dialects import Deferring, Runtime, runtime_for
from rsep.runtime.r2s import Payload, R2SOperator, Row, Selected
from rsep.runtime.ticks import BoundWindow, Ticks
from rsep.runtime.watchdog import Watchdog
from rsep.sparql.store import SnapshotStore
from rsep.stream.event import Event
from rsep.stream.time import TimeError, TimeKind, format_time
from rsep.windows.incremental import Analysis, LocalWindow, analyse
from rsep.windows.maintained import Maintained, MaintainedWindow, Plan, compile_plan
from rsep.windows.operator import WindowOperator
from rsep.windows.resolved import resolve

if TYPE_CHECKING:
    from rsep.epsparql.runtime import EpContext

# arrivals into an event-local window between two syncs of its store graph (and into a
# maintained result's windows between two advances)
SYNC_BATCH = 16


@dataclass
class QueryRuntime(Ticks):
    """A registered query and its state: windows, snapshot store, R2S history."""

    query: ContinuousQuery
    name: str
    engine: Engine
    callback: Callable[[Output], None] | None = None
    windows: list[BoundWindow] = field(default_factory=list)
    store: SnapshotStore = field(default_factory=SnapshotStore)
    evaluations: int = 0
    last_tick: int | None = None
    arrival: int | None = None
    start: int | None = None
    _versions: tuple[int, ...] | None = None
    _cache: list[Row] | None = None

    def __post_init__(self) -> None:
        self.r2s = R2SOperator(self.query.r2s)
        self.report: ReportPolicy = self.query.report
        self.streams = set(self.query.dataset.streams)
        self._named: list[ox.NamedNode | ox.BlankNode] = []
        self._reads: dict[str, list[ox.NamedNode | ox.DefaultGraph]] = {}  # graph -> store graphs
        self._graphs_version = 0
        # rsep's one extension function; every other call is pyoxigraph's own (a custom
        # function would override its built-in of the same IRI), unknown ones are refused.
        self._functions: dict[ox.NamedNode, Callable[..., ox.Literal | ox.NamedNode | ox.BlankNode
                                                     | ox.Triple | None]] = \
            {ox.NamedNode(CSPARQL_TIMESTAMP): self._timestamp}
        self._solver = BatchSolver()
        self._track_time = self.query.uses_timestamp or CSPARQL_TIMESTAMP in self.query.sparql
        self._consumed: set[int] = set()
        self._consumes = any(m.selection.consumes for m in self.query.matches)
        self._matchers = [IncrementalMatcher(m, self._solver) for m in self.query.matches]
        self._projection: tuple[str, ...] = ()
        self._delta_r2s = False
        self._stage = False
        if self.query.match_projection is not None:
            m = self.query.matches[0]
            self._projection = self.query.match_projection or (
                tuple(m.expr.variables) + ((FROM_VAR, TO_VAR) if m.expose_interval else ()))
            self._delta_r2s = self._matchers[0].delta and self.query.r2s is not R2S.RSTREAM
        self.plan = analyse(self.query)
        # the maintained result's plan (rsep.windows.maintained), or why there is none
        self.maintained: Plan | str = compile_plan(self.query, self.plan) \
            if isinstance(self.plan, Analysis) else self.plan
        self.result: Maintained | None = None
        self._default: list[str] = []  # the background graphs merged into the default graph
        self._arrived = 0  # arrivals not advanced into a maintained result's windows yet

    # ------------------------------------------------------------ setup

    def load_background(self, graphs: dict[str, list[ox.Triple]]) -> None:
        ds = self.query.dataset
        sources = ds.default_graphs or ([DEFAULT] if DEFAULT in graphs else [])
        named = ds.named_graphs
        if not ds.default_graphs and not ds.named_graphs:
            named = [g for g in graphs if g != DEFAULT and not ds.window(g)]
        self._default = list(sources)
        for g, name in [(g, ox.DefaultGraph()) for g in sources] + [(g, ox.NamedNode(g)) for g in named]:
            self.store.load(name, dict.fromkeys(graphs[g]))  # a set: changes are differences
            self._reads.setdefault(g, []).append(name)
            if isinstance(name, ox.NamedNode):
                self._named.append(name)

    def graph_changed(self, iri: str, old: frozenset[ox.Triple], new: frozenset[ox.Triple]) -> None:
        """A background graph changed (rsep.runtime.background): the store follows."""
        for name in self._reads.get(iri, ()):
            # removals first: a literal in another form than the store's (the first change
            # puts a graph in the store's forms) is the same quad in the store
            self.store.apply(name, (), [(t, 0) for t in old - new])
            self.store.apply(name, [(t, None) for t in new - old], ())
        if iri in self._reads:
            self._graphs_version += 1
        if self.result is not None and (iri in self._default or iri in self._reads):
            self.result.set_background(self._background())

    def _background(self) -> dict[str | None, list[ox.Triple]]:
        """The background graphs as the maintained result reads them: the default graph
        (None) and the named graphs of the query's dataset."""
        graphs = self.engine.graphs
        out: dict[str | None, list[ox.Triple]] = {
            None: [t for g in self._default for t in graphs.get(g, ())]}
        for g, names in self._reads.items():
            if any(isinstance(n, ox.NamedNode) for n in names):
                out[g] = list(graphs.get(g, ()))
        return out

    def bind(self, kind: TimeKind, time_unit_ms: int | None, start: int) -> None:
        """Resolve window parameters once the stream's kind of time is known."""
        self.start = start
        for w in self.query.dataset.windows:
            try:
                rw = resolve(w.spec, kind, time_unit_ms)
            except TimeError as e:
                raise EngineError(f"query {self.name}: window {w.spec}: {e}") from None
            graph: ox.NamedNode | ox.DefaultGraph
            if w.in_default:
                graph = ox.DefaultGraph()
            else:
                graph = ox.NamedNode(w.iri)
                self._named.append(graph)
            op = WindowOperator(rw)
            op.track_items = any(b.window == w.iri for m in self.query.matches for b in m.expr.beps())
            local: LocalWindow | None = None
            if isinstance(self.plan, Analysis) and isinstance(self.maintained, Plan):
                if self.result is None:
                    self.result = Maintained(self.maintained)
                    self.result.set_background(self._background())
                local = MaintainedWindow(self.plan.prologue, self.plan.blocks[w.iri], self.result,
                                         len(self.windows))
                op.track_items = True
                op.track_triples = False
            elif isinstance(self.plan, Analysis):
                local = LocalWindow(self.plan.prologue, self.plan.blocks[w.iri])
                op.track_items = True
                op.track_triples = False  # the store follows the items (LocalWindow.sync)
            self.windows.append(BoundWindow(w.iri, w.stream, rw, op, graph, local))
        rp = self.report
        # Window-close reports over time windows are the one case where the next
        # evaluation instant is known on arrival (the next slide), so the store can
        # follow each arrival and an evaluation only has to run the query.
        # (the event-local plan must decide events on arrival: else in batches, at evaluations)
        self._stage = (bool(self.windows) and rp.window_close and rp.periodic is None
                       and all(bw.local is None or bw.local.on_arrival for bw in self.windows)
                       and not (rp.content_change or rp.on_arrival or rp.at)
                       and not self.query.matches
                       and all(bw.window.kind is WindowKind.TIME for bw in self.windows))
        if self.report.periodic is not None:
            try:
                self._period = self.report.periodic.units(kind, time_unit_ms)
            except TimeError as e:
                raise EngineError(f"query {self.name}: report period: {e}") from None

    # ------------------------------------------------------------ input

    def insert(self, e: Event) -> None:
        hit = False
        for bw in self.windows:
            if bw.stream == e.stream:
                bw.op.insert(e)
                if bw.local is not None:
                    bw.local.arrive(e)
                hit = True
        if hit:
            self.arrival = e.time
            if self._stage:
                # a maintained result takes its arrivals in small batches (an advance has a
                # cost of its own; an evaluation has at most a batch left to take in)
                if self.result is not None:
                    self._arrived += 1
                    if self._arrived < SYNC_BATCH:
                        return
                    self._arrived = 0
                # every evaluation before e.time is done; the next is at the first slide
                # >= e.time, and advancing to it early is what evaluate would do then
                ws = self.windows
                self._advance(-(-e.time // ws[0].window.beta) * ws[0].window.beta if len(ws) == 1
                              else min(-(-e.time // bw.window.beta) * bw.window.beta for bw in ws))
                # event-local windows: decided on arrival, so the store follows, in small
                # batches (pyoxigraph's per-call cost), leaving an evaluation little to do
                if any(bw.local is not None and bw.local.unsynced >= SYNC_BATCH
                       for bw in self.windows):
                    self._sync()

    def _advance(self, tau: int) -> None:
        """Bring the windows and the snapshot store to their content at tau."""
        lim = self.engine.limits
        for bw in self.windows:
            added, removed = bw.op.advance(tau)
            if kept := bw.op.take_graph_changes():  # RDF Messages' other named graphs
                self.store.apply_graphs(kept, track_time=self._track_time)
            if bw.local is not None:
                changes = bw.op.take_item_changes()
                bw.local.change(changes)
                grew = bool(changes)
            else:
                grew = bool(added)
                if added or removed:
                    # Occurrence times are only read by C-SPARQL's timestamp().
                    self.store.apply(bw.graph, added, removed, track_time=self._track_time)
            if grew and bw.op.size() > lim.max_window_triples:
                raise EngineError(
                    f"query {self.name}: window <{bw.iri}> holds {bw.op.size()} triples at "
                    f"{format_time(tau, self.engine.kind)}, over the limit of "
                    f"{lim.max_window_triples} (--max-window-triples)")

    def flush(self) -> None:
        """The input has ended: the store holds what the windows hold (as if synced)."""
        self._sync()

    def _sync(self) -> None:
        """The store graphs of the event-local windows brought to their events (LocalWindow.sync)."""
        for bw in self.windows:
            if bw.local is not None:
                added, removed = bw.local.sync()
                if added or removed:
                    self.store.apply(bw.graph, ((t, None) for t in added), ((t, 0) for t in removed))

    def evaluate(self, tau: int) -> list[Output]:
        self._advance(tau)
        self.last_tick = tau
        versions = self._current_versions()
        changed = versions != self._versions
        # (content change is the windows': a background graph's change is read, not reported)
        if not self._due(tau, self._versions is None or versions[:-1] != self._versions[:-1]):
            return []
        if self.report.non_empty and all(bw.op.empty for bw in self.windows):
            return []
        if self._delta_r2s:
            self.evaluations += 1
            return self._direct_delta(tau)
        if changed or self._cache is None or self._consumes:
            rows = self._run(tau)
            self._cache = rows
            self._versions = versions
        else:
            rows = self._cache
        self.evaluations += 1
        return outputs(self.name, tau, self.engine.kind, self.query.form, self.r2s.apply(rows))

    def _match_text(self, tau: int) -> str:
        """The query with each MATCH replaced by its solutions at tau (Eq. 8), as VALUES."""
        changes = {bw.iri: bw.op.take_item_changes() for bw in self.windows}
        text = self.query.sparql
        for m, matcher in zip(self.query.matches, self._matchers, strict=True):
            found = matcher.evaluate(changes, self._consumed)
            if len(found) > self.engine.limits.max_results:
                self._too_many(tau)
            text = text.replace(m.slot, match_values(m, found))
            if m.selection.consumes:
                # P^c / P^r: what justified this evaluation's output is gone for the next.
                self._consumed |= events_reference.justification(found)
        # only an item that left a window can be forgotten (none leaves a landmark window)
        if any(not c[0] for ch in changes.values() for c in ch):
            live = set()
            for matcher in self._matchers:
                live |= matcher.live_items()
            self._solver.retain(live)
            self._consumed &= live
        return text

    def _direct(self, tau: int) -> list[Row]:
        """A MATCH-only SELECT: its rows are the MATCH's solutions, projected (no SPARQL)."""
        m, matcher = self.query.matches[0], self._matchers[0]
        changes = {bw.iri: bw.op.take_item_changes() for bw in self.windows}
        found = matcher.evaluate(changes, self._consumed)
        self._solver.clear()  # the matcher keeps what it needs per item
        if m.selection.consumes:
            self._consumed |= events_reference.justification(found)
            if any(not c[0] for ch in changes.values() for c in ch):
                self._consumed &= matcher.live_items()
        if len(found) > self.engine.limits.max_results:
            self._too_many(tau)
        return [self._row(m, em) for em in found]

    def _row(self, m: MatchPattern, em: EventMapping) -> tuple[tuple[str | None, ...], Selected]:
        names = self._projection
        d = em.as_dict()
        if m.expose_interval:
            d[FROM_VAR] = time_literal(em.t1)
            d[TO_VAR] = time_literal(em.t2)
        values = tuple(d.get(n) for n in names)
        return values, (names, {n: v for n, v in zip(names, values, strict=True) if v is not None})

    def _direct_delta(self, tau: int) -> list[Output]:
        """ISTREAM / DSTREAM of a MATCH-only SELECT over an unrestricted sequence: the bag
        R(t) is kept up to date from the matches that came and went, so the cost follows
        the change (the result equals the bag differences of CQL's operators)."""
        m, matcher = self.query.matches[0], self._matchers[0]
        changes = {bw.iri: bw.op.take_item_changes() for bw in self.windows}
        matcher.evaluate(changes)
        self._solver.clear()
        net: dict[tuple[str | None, ...], int] = {}
        rows: dict[tuple[str | None, ...], Selected] = {}
        for em in matcher.added:
            key, payload = self._row(m, em)
            net[key] = net.get(key, 0) + 1
            rows.setdefault(key, payload)
        for em in matcher.removed:
            key, payload = self._row(m, em)
            net[key] = net.get(key, 0) - 1
            rows.setdefault(key, payload)
        emitted: list[tuple[str, Payload]] = []
        istream = self.r2s.op is R2S.ISTREAM
        for key, n in net.items():
            if n and (n > 0) == istream:
                emitted.extend([("insert" if istream else "delete", rows[key])] * abs(n))
        return outputs(self.name, tau, self.engine.kind, "SELECT", emitted)

    def _run(self, tau: int) -> list[Row]:
        if self.query.match_projection is not None:
            return self._direct(tau)
        lim = self.engine.limits
        t0 = _time.perf_counter()
        if self.result is not None:
            conflicts = any(bw.local is not None and bw.local.conflicts for bw in self.windows)
            self._load_windows(conflicts)
            if not conflicts:
                maintained = self.result.rows()
                if len(maintained) > lim.max_results:
                    self._too_many(tau)
                self._took(tau, t0)
                return maintained
            # the locality check fails: pyoxigraph, on the live events' matching triples
        sparql = self._match_text(tau) if self.query.matches else self.query.sparql
        self._sync()
        try:
            res = self.store.store.query(
                sparql, default_graph=ox.DefaultGraph(),
                named_graphs=self._named + self.store.kept if self.store.kept else self._named,
                custom_functions=self._functions)
        except (SyntaxError, RuntimeError, OSError) as e:
            raise EngineError(f"query {self.name} failed at {format_time(tau, self.engine.kind)}: {e}") from None
        rows: list[Row] = []
        if isinstance(res, ox.QueryBoolean):
            rows = [(bool(res), bool(res))]
        elif isinstance(res, ox.QuerySolutions):
            names = tuple(v.value for v in res.variables)
            for sol in res:
                values = tuple(None if (t := sol[i]) is None else unskolemize(str(t))
                               for i in range(len(names)))
                rows.append((values, (names, {n: v for n, v in zip(names, values, strict=True)
                                              if v is not None})))
                if len(rows) > lim.max_results:
                    self._too_many(tau)
        else:
            seen = set()
            for tr in res:
                s = str(tr)
                if s not in seen:
                    seen.add(s)
                    rows.append((s, s))
                    if len(rows) > lim.max_results:
                        self._too_many(tau)
        self._took(tau, t0)
        return rows

    def _took(self, tau: int, t0: float) -> None:
        lim = self.engine.limits
        took = _time.perf_counter() - t0
        if lim.max_eval_seconds is not None and took > lim.max_eval_seconds:
            raise EngineError(
                f"query {self.name}: evaluation at {format_time(tau, self.engine.kind)} took "
                f"{took:.2f} s, over the limit of {lim.max_eval_seconds} s (--max-eval-seconds)")

    def _load_windows(self, load: bool) -> None:
        """While the locality check fails (``load``), the window graphs of the store hold
        every live event's matching triples, as the event-local store path's do; they
        follow the events from then on, and are emptied once it holds again."""
        for bw in self.windows:
            local = bw.local
            if isinstance(local, MaintainedWindow) and (load or local.loaded):
                added, removed = local.delta(load)
                if added or removed:
                    self.store.apply(bw.graph, ((t, None) for t in added), ((t, 0) for t in removed))

    def _too_many(self, tau: int) -> None:
        raise EngineError(
            f"query {self.name}: more than {self.engine.limits.max_results} results at "
            f"{format_time(tau, self.engine.kind)} (--max-results)")

    def _timestamp(self, s: object, p: object, o: object) -> ox.Literal | None:
        if not isinstance(s, (ox.NamedNode, ox.BlankNode)) or not isinstance(p, ox.NamedNode) \
                or not isinstance(o, (ox.NamedNode, ox.BlankNode, ox.Literal)):
            return None
        t = self.store.latest_time(ox.Triple(s, p, o))
        return None if t is None else ox.Literal(str(t), datatype=XSD_INTEGER)

    def idle(self) -> bool:
        return all(bw.op.idle for bw in self.windows)


class Engine:
    """Registers continuous queries and runs them over pushed events.

    >>> eng = Engine()
    >>> eng.register("SELECT ...")            # doctest: +SKIP
    >>> for out in eng.run(events): ...       # doctest: +SKIP
    """

    # the context the EP-SPARQL queries share, set by the first (EpContext.of)
    _epsparql: EpContext

    def __init__(self, *, time_unit_ms: int | None = None, limits: Limits | None = None,
                 allow_dereference: bool = False) -> None:
        self.time_unit_ms = time_unit_ms
        self.limits = limits or Limits()
        self.allow_dereference = allow_dereference
        # --max-eval-seconds while an evaluation runs (the CLI sets one; rsep.runtime.watchdog)
        self.watchdog: Watchdog | None = None
        self.graphs: dict[str, list[ox.Triple]] = {}  # each as it stands at the engine's time
        self.background = Background(self)
        self.queries: list[Runtime] = []
        self.kind: TimeKind | None = None
        self.now: int | None = None
        self.start: int | None = None
        self.events = 0
        self._out: deque[Output] = deque()
        self._deferring: set[int] = set()  # ids of the runtimes that announce deadlines

    # ------------------------------------------------------------ set-up

    def add_graph(self, iri: str, data: str | Path | Iterable[ox.Triple], *,
                  fmt: ox.RdfFormat | None = None) -> None:
        """A background graph: ``iri`` names it ("default" for the default graph). Its
        changes over time: ``self.background.add_changes``."""
        self.background.load(iri, data, fmt)

    def register(self, query: str | Query, *, dialect: str | None = None,
                 name: str | None = None, r2s: R2S | None = None,
                 report: ReportPolicy | None = None,
                 callback: Callable[[Output], None] | None = None,
                 source: str | None = None, default_name: str | None = None) -> Runtime:
        """Register a query (text in any dialect, or algebra); errors are raised before it runs."""
        q = parse_query(query, dialect, source=source) if isinstance(query, str) else query
        if not isinstance(q, ContinuousQuery):
            # A query kind with a runtime of its own (an automaton): rsep.runtime.dialects
            # R2S and report policies are RSP-QL's (000 Def. 5): its dialect refuses them
            for opt, given in (("--r2s", r2s), ("--report", report)):
                if given is not None:
                    dialect_of(q).check(opt, source)
            n = name or getattr(q, "name", "") or default_name or f"q{len(self.queries) + 1}"
            if any(rt.name == n for rt in self.queries):
                raise QueryError(f"a query named {n!r} is already registered", source=source)
            rt = runtime_for(q, self, n, callback)
            if self.kind is not None:
                rt.bind(self.kind, self.time_unit_ms, self.now if self.now is not None else 0)
            self.queries.append(rt)
            if callable(getattr(rt, "deadline", None)):
                self._deferring.add(id(rt))
            return rt
        if q.service_at is not None:
            line, col = q.service_at
            raise QueryError("SERVICE is refused: a query cannot reach the network", line, col, source)
        if q.unknown_at:
            kind, iri, line, col = q.unknown_at[0]
            raise QueryError(f"unknown {kind} <{iri}>: neither pyoxigraph nor rsep implements it",
                             line, col, source)
        if not q.dataset.windows:
            raise QueryError("the query reads no stream: declare a window (FROM NAMED WINDOW, "
                             "FROM STREAM, or a STREAM pattern)", source=source)
        for g in q.dataset.default_graphs + q.dataset.named_graphs:
            self.need_graph(g, source)
        if r2s is not None:
            q.r2s = r2s
        if report is not None:
            q.report = report
        n = name or q.name or default_name or f"q{len(self.queries) + 1}"
        if any(rt.name == n for rt in self.queries):
            raise QueryError(f"a query named {n!r} is already registered", source=source)
        rt = QueryRuntime(q, n, self, callback)
        rt.load_background(self.graphs)
        if self.kind is not None:
            rt.bind(self.kind, self.time_unit_ms, self.now if self.now is not None else 0)
        self.queries.append(rt)
        return rt

    def need_graph(self, g: str, source: str | None) -> None:
        """A background graph a query reads: given with add_graph, or fetched from its IRI
        when the engine allows dereferencing (--allow-dereference); a QueryError otherwise."""
        if g not in self.graphs:
            self.background.fetch(g, source)

    # ------------------------------------------------------------ running

    def push(self, e: Event) -> None:
        """Take in one event; evaluations due before its time happen first."""
        self._reach(e)
        self._take(e)

    def _reach(self, e: Event) -> None:
        """The evaluations due before e's time (their outputs can go out before e is taken)."""
        if self.kind is None:
            self.kind = e.kind
            self.start = e.time
            for rt in self.queries:
                rt.bind(e.kind, self.time_unit_ms, e.time)
        elif e.kind is not self.kind:
            raise EngineError(f"{e.origin}: <{e.graph}> has a {e.kind.value} timestamp, "
                              f"earlier events had {self.kind.value} ones")
        if self.now is not None:
            if e.time < self.now:
                raise EngineError(f"{e.origin}: events must come in time order "
                                  f"({e.time} after {self.now})")
            if e.time > self.now:
                self._settle(e.time)

    def _take(self, e: Event) -> None:
        self.events += 1
        e.seq = self.events  # the item's identity for windows and consumption
        for rt in self.queries:
            rt.insert(e)
        self.now = e.time

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
            while (t := self._when(rt, bound)) is not None:
                for o in self._evaluate(rt, t):
                    self._emit(rt, o)
            return
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
        wd.begin(f"query {rt.name}: evaluation at {format_time(t, self.kind)}")
        try:
            return rt.evaluate(t)
        finally:
            wd.end()

    def _settle(self, bound: int) -> None:
        """Evaluate everything due before ``bound``; the instants skipped as quiet stay
        skipped, so no later arrival can reach back into them."""
        self._fire(bound)
        for rt in self.queries:
            if rt.last_tick is None or rt.last_tick < bound - 1:
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
            if isinstance(rt, QueryRuntime):
                rt.flush()
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

    def run(self, events: Iterable[Event], until: int | None = None) -> Iterator[Output]:
        """Push every event, yielding outputs as soon as they are produced."""
        with relaxed_collector():
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
