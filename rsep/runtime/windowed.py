"""A windowed query's runtime (RSP-QL, C-SPARQL, CQELS, RSEP-QL MATCH): its windows
(S2R: rsep.windows), the snapshot store or maintained result it evaluates (R2R), its
report policy's ticks (rsep.runtime.ticks) and R2S (rsep.runtime.r2s), driven by
:class:`rsep.runtime.engine.Engine` (a :class:`rsep.algebra.runtime.Runtime`, the engine
seen as a :class:`rsep.algebra.runtime.Host`). A module of its own so that a run with no
windowed query (SPASEQ, EP-SPARQL) does not import the window machinery at start-up.
"""

from __future__ import annotations

import time as _time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

import pyoxigraph as ox

from rsep.algebra.dataset import DEFAULT
from rsep.algebra.events import FROM_VAR, TO_VAR, MatchPattern
from rsep.algebra.output import EngineError, Output
from rsep.algebra.pattern import written
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import CSPARQL_TIMESTAMP, ContinuousQuery
from rsep.algebra.window import WindowKind
from rsep.events import native as events_native
from rsep.events.incremental import IncrementalMatcher
from rsep.events.mappings import EventMapping, justification
from rsep.events.solver import BatchSolver
from rsep.runtime.common import (
    XSD_INTEGER,
    fill_template,
    match_template,
    match_values,
    outputs,
    time_literal,
    unskolemize,
)
from rsep.runtime.r2s import Payload, R2SOperator, Row, Selected
from rsep.runtime.ticks import BoundWindow, Ticks
from rsep.sparql.store import SnapshotStore
from rsep.stream.event import Event
from rsep.stream.time import TimeError, TimeKind, format_time
from rsep.windows import native as native_module
from rsep.windows.incremental import Analysis, LocalWindow, analyse, read_windows
from rsep.windows.maintained import Maintained, MaintainedWindow, Plan, compile_plan
from rsep.windows.native import NativePlan, native_plan
from rsep.windows.operator import WindowOperator
from rsep.windows.plan import EVENT_LOCAL, FACTORISED, MAINTAINED, SNAPSHOT
from rsep.windows.resolved import resolve

if TYPE_CHECKING:
    from rsep.algebra.runtime import Host


# arrivals into an event-local window between two syncs of its store graph (and into a
# maintained result's windows between two advances)
SYNC_BATCH = 16


class Strategy:
    """How a windowed query's windows become its rows: one of the four evaluation paths,
    chosen once, when the query is registered, by what its plan allows (:func:`strategy_for`;
    ``rsep explain`` prints it). This one, the snapshot path, is every query's fallback: the
    windows' triples go into the snapshot store, which pyoxigraph queries at each
    evaluation. The strategies keep no state of their own: the runtime's is theirs."""

    path = SNAPSHOT  # as rsep explain names it (rsep.windows.plan)

    def local(self, rt: QueryRuntime, iri: str, op: WindowOperator) -> LocalWindow | None:
        """The event-local form of the window ``iri`` (its operator ``op``) as ``bind``
        makes it, or None: the store takes the window's triples."""
        return None

    def arrived(self, rt: QueryRuntime) -> bool:
        """An event came into a window: whether the windows advance now (else later)."""
        return True

    def advanced(self, rt: QueryRuntime) -> None:
        """After an arrival's advance: what the store follows of it."""

    def rows(self, rt: QueryRuntime, tau: int, t0: float) -> list[Row] | None:
        """The rows at ``tau`` without pyoxigraph, or None: pyoxigraph runs the query."""
        return None


class EventLocalStore(Strategy):
    """Every window's graph patterns are event-local (rsep.windows.incremental): each
    event's solutions are found on arrival, and only the triples of events with solutions
    enter the store, which pyoxigraph queries at each evaluation."""

    path = EVENT_LOCAL

    def local(self, rt: QueryRuntime, iri: str, op: WindowOperator) -> LocalWindow | None:
        plan = rt.plan
        assert isinstance(plan, Analysis)  # (strategy_for's)
        op.track_items = True
        op.track_triples = False  # the store follows the items (LocalWindow.sync)
        return LocalWindow(plan.prologue, plan.blocks[iri])

    def advanced(self, rt: QueryRuntime) -> None:
        # decided on arrival, so the store follows, in small batches (pyoxigraph's per-call
        # cost), leaving an evaluation little to do
        for bw in rt.windows:
            local = bw.local
            if local is not None and local.unsynced >= SYNC_BATCH:
                rt._sync()
                return


class MaintainedResult(EventLocalStore):
    """The result is maintained from the events' solutions (rsep.windows.maintained: joins
    by index, GROUP BY and aggregates under insertion and expiry); pyoxigraph runs only
    while the locality check fails (a join term in two live events)."""

    path = MAINTAINED

    def local(self, rt: QueryRuntime, iri: str, op: WindowOperator) -> LocalWindow | None:
        plan, maintained = rt.plan, rt.maintained
        assert isinstance(plan, Analysis) and isinstance(maintained, Plan)  # (strategy_for's)
        if rt.result is None:
            rt.result = Maintained(maintained)
            rt.result.set_background(rt._background())
        op.track_items = True
        op.track_triples = False
        return MaintainedWindow(plan.prologue, plan.blocks[iri], rt.result, len(rt.windows))

    def arrived(self, rt: QueryRuntime) -> bool:
        # the result takes its arrivals in small batches (an advance has a cost of its own;
        # an evaluation has at most a batch left to take in)
        rt._arrived += 1
        if rt._arrived < SYNC_BATCH:
            return False
        rt._arrived = 0
        return True

    def rows(self, rt: QueryRuntime, tau: int, t0: float) -> list[Row] | None:
        conflicts = any(bw.local is not None and bw.local.conflicts for bw in rt.windows)
        self._load_windows(rt, conflicts)
        if conflicts:
            return None  # the locality check fails: pyoxigraph, on the live events' triples
        assert rt.result is not None  # (made by local, at bind)
        maintained = rt.result.rows()
        if len(maintained) > rt.engine.limits.max_results:
            rt._too_many(tau)
        rt._took(tau, t0)
        return maintained

    @staticmethod
    def _load_windows(rt: QueryRuntime, load: bool) -> None:
        """While the locality check fails (``load``), the window graphs of the store hold
        every live event's matching triples, as the event-local store path's do; they
        follow the events from then on, and are emptied once it holds again."""
        for bw in rt.windows:
            local = bw.local
            if isinstance(local, MaintainedWindow) and (load or local.loaded):
                added, removed = local.delta(load)
                if added or removed:
                    rt.store.apply(bw.graph, ((t, None) for t in added), ((t, 0) for t in removed))


class FactorisedResult(MaintainedResult):
    """The maintained path whose aggregates are read from per-side summaries (the WHERE
    clause a join of sides that meet only on GROUP BY keys: rsep.windows.plan.Factors), no
    joined solution enumerated; the maintained result builds that form from its plan."""

    path = FACTORISED


STRATEGIES: tuple[type[Strategy], ...] = (Strategy, EventLocalStore, MaintainedResult,
                                          FactorisedResult)


def strategy_for(plan: Analysis | str, maintained: Plan | str) -> type[Strategy]:
    """The strategy a query takes: its event-local analysis (rsep.windows.incremental) and
    its maintained result's plan (rsep.windows.plan), or why it has none."""
    if not isinstance(plan, Analysis):
        return Strategy
    if not isinstance(maintained, Plan):
        return EventLocalStore
    return MaintainedResult if maintained.factors is None else FactorisedResult


def query_strategy(query: ContinuousQuery) -> type[Strategy]:
    """The strategy a query takes when it is registered (``rsep explain``)."""
    plan = analyse(query)
    return strategy_for(plan, compile_plan(query, plan) if isinstance(plan, Analysis) else plan)



@dataclass
class QueryRuntime:
    """A registered query and its state: windows, snapshot store, R2S history; when it is
    evaluated is its :class:`rsep.runtime.ticks.Ticks`' (``ticks``)."""

    # the native path (rsep.windows.native), which rsep run takes when it can (rsep.cli.run):
    # given by the runtime, so that a run with no windowed query never loads it
    native_path: ClassVar[ModuleType] = native_module

    query: ContinuousQuery
    name: str
    engine: Host
    callback: Callable[[Output], None] | None = None
    windows: list[BoundWindow] = field(default_factory=list)
    store: SnapshotStore = field(default_factory=SnapshotStore)
    evaluations: int = 0
    # the ticks' next_tick, bound once (the engine asks once an event: no call of our own)
    next_tick: Callable[[int], int | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.r2s = R2SOperator(self.query.r2s)
        self.report: ReportPolicy = self.query.report
        self.streams = set(self.query.dataset.streams)
        self._named: list[ox.NamedNode | ox.BlankNode] = []
        self._reads: dict[str, list[ox.NamedNode | ox.DefaultGraph]] = {}  # graph -> store graphs
        # rsep's one extension function; every other call is pyoxigraph's own (a custom
        # function would override its built-in of the same IRI), unknown ones are refused.
        self._functions: dict[ox.NamedNode, Callable[..., ox.Literal | ox.NamedNode | ox.BlankNode
                                                     | ox.Triple | None]] = \
            {ox.NamedNode(CSPARQL_TIMESTAMP): self._timestamp}
        self._solver = BatchSolver()
        self._track_time = self.query.calls_timestamp
        self._consumed: set[int] = set()
        # when the matchers forget (bind): what each evaluation consumed, in time order, so
        # an item leaves the set once no item still to come can end before it
        self._consumed_at: deque[tuple[int, set[int]]] = deque()
        self._forget = False
        self._unmatched = False  # a MATCH had no solution at the last evaluation
        self._consumes = any(m.selection.consumes for m in self.query.matches)
        self.ticks = Ticks(self.windows, self.report, self.query.r2s, self._consumes,
                           self._reads, self.engine.next_graph_change)
        self.next_tick = self.ticks.next_tick
        self._matchers = [IncrementalMatcher(m, self._solver) for m in self.query.matches]
        self._tree = match_template(self.query) if self.query.matches else None
        self._text = self._written()
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
        # the native path's plan, or why the query does not take it; a run takes it when its
        # input and options allow too (rsep.cli.run). A MATCH has a native path of its own
        # (rsep.events.native); the window planner's (rsep.windows.native) is the others'.
        self.native: NativePlan | events_native.NativePlan | str
        if self.query.matches:
            self.native = events_native.native_plan(self.query)
            self.native_path = events_native  # type: ignore[misc]
        else:
            self.native = native_plan(self.query, self.maintained, self.report, self.query.r2s)
        self._default: list[str] = []  # the background graphs merged into the default graph
        self._arrived = 0  # arrivals not advanced into a maintained result's windows yet
        # the evaluation path, chosen once, here (the plan says which)
        self.strategy: Strategy = strategy_for(self.plan, self.maintained)()

    @property
    def consumes(self) -> bool:
        """Whether a MATCH of the query consumes the items it matches (its selection's
        consumption policy): what the query outputs then depends on the whole history of
        its stream, not only on what its windows hold (a rebuild from the windows' span,
        rsep.spark.state.horizon, would be wrong)."""
        return self._consumes

    @property
    def last_tick(self) -> int | None:
        """The last evaluation instant (the ticks'; the engine moves it past quiet ones)."""
        return self.ticks.last_tick

    @last_tick.setter
    def last_tick(self, tau: int | None) -> None:
        self.ticks.last_tick = tau

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
            self.ticks.graphs_version += 1
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
        # the windows the store must hold: those the graph patterns read, and every one when
        # timestamp() looks triples' times up in it (only a MATCH's windows may be left out)
        read = (read_windows(self.query) if self.query.matches and not self._track_time
                else {w.iri for w in self.query.dataset.windows})
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
            if op.track_items and w.iri not in read:
                # read by EVENT declarations alone: items reach the MATCH, no triple the
                # store (a landmark window's would be the whole stream's)
                op.track_triples = False
            local = self.strategy.local(self, w.iri, op)
            self.windows.append(BoundWindow(w.iri, w.stream, rw, op, graph, local))
        # E_1 SEQ^c/r E_2 matchers may drop what they can never use again when no item
        # enters a window twice (a count window takes an item in again with fewer triples)
        self._forget = bool(self._matchers) and all(mt.trims for mt in self._matchers) and all(
            bw.window.kind is not WindowKind.COUNT for bw in self.windows if bw.op.track_items)
        for mt in self._matchers:
            mt.forget = self._forget
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
        period = 0
        if self.report.periodic is not None:
            try:
                period = self.report.periodic.units(kind, time_unit_ms)
            except TimeError as e:
                raise EngineError(f"query {self.name}: report period: {e}") from None
        self.ticks.bind(start, period)

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
            t = self.ticks.arrival = e.end  # (e.time, without the property's call)
            if self._stage:
                strategy = self.strategy
                if not strategy.arrived(self):
                    return
                # every evaluation before e.time is done; the next is at the first slide
                # >= e.time, and advancing to it early is what evaluate would do then
                ws = self.windows
                if len(ws) == 1:
                    w = ws[0].window
                    self._advance(w.origin - (-(t - w.origin) // w.beta) * w.beta)
                else:
                    self._advance(min(bw.window.origin - (-(t - bw.window.origin) // bw.window.beta)
                                      * bw.window.beta for bw in ws))
                strategy.advanced(self)

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
                # (a window whose triples the store does not take still counts them)
                grew = bool(added) or not bw.op.track_triples
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
        store = self.store
        for bw in self.windows:
            local = bw.local
            if local is not None:
                self._rebased()
                added, removed = local.sync()
                if added or removed:
                    store.apply(bw.graph, ((t, None) for t in added), ((t, 0) for t in removed))
                    self._rebased()
                # (rows come in the snapshot path's order: the store's quads in its order)
                if local.reorder:
                    store.rebuild(bw.graph, local.order)
                    local.reordered(store.rebuilds)
                    self._rebased()

    def _rebased(self) -> None:
        """After a rebuild of the store (which forgets the removed quads, of every graph
        but the one it put in order), the event-local windows learn what it holds."""
        n = self.store.rebuilds
        for bw in self.windows:
            if bw.local is not None and bw.local.epoch != n:
                bw.local.rebased(n)

    def evaluate(self, tau: int) -> list[Output]:
        self._advance(tau)
        ticks = self.ticks
        ticks.last_tick = tau
        versions = ticks.current_versions()
        seen = ticks.versions
        changed = versions != seen
        # (content change is the windows': a background graph's change is read, not reported)
        if not ticks.due(tau, seen is None or versions[:-1] != seen[:-1]):
            return []
        if self.report.non_empty and all(bw.op.empty for bw in self.windows):
            if not self._delta_r2s:
                # This content is seen (its answer is nothing, never output): without the
                # versions kept, the quiet skip never finds the empty windows unchanged and
                # the ticks step through every empty close up to the next event, however far
                # (an event at 10^29 ran forever). No cache: the next content is run anew.
                ticks.versions, ticks.cache = versions, None
            return []
        if self._delta_r2s:
            self.evaluations += 1
            return self._direct_delta(tau)
        if changed or ticks.cache is None or self._consumes:
            rows = self._run(tau)
            ticks.cache = rows
            ticks.versions = versions
        else:
            rows = ticks.cache
        self.evaluations += 1
        return outputs(self.name, tau, self.engine.kind, self.query.form, self.r2s.apply(rows))

    def _written(self) -> str:
        """What pyoxigraph is given: the query's tree written by to_sparql, once (the
        query's text for a query with no tree, or one to_sparql refuses)."""
        return written(self.query.pattern, self.query.sparql)

    def _match_text(self, tau: int) -> str:
        """The query with each MATCH replaced by its solutions at tau (Eq. 8), as VALUES:
        each MatchSlot of the query's tree filled with a VALUES node and the tree written
        once; for a query with no tree, each slot of the text replaced."""
        changes = {bw.iri: bw.op.take_item_changes() for bw in self.windows}
        text = self.query.sparql
        tree = self._tree
        filled: dict[int, str] = {}
        floor = self._floor() if self._forget else None  # (read only when forgetting)
        self._unmatched = False
        for i, (m, matcher) in enumerate(zip(self.query.matches, self._matchers, strict=True)):
            found = matcher.evaluate(changes, self._consumed, floor)
            if not found:
                self._unmatched = True
            if len(found) > self.engine.limits.max_results:
                self._too_many(tau)
            if tree is None:
                text = text.replace(m.slot, match_values(m, found))
            else:
                filled[i] = match_values(m, found)
            if m.selection.consumes:
                self._consume(tau, found)
        self._solver.clear()  # the matchers keep what they need per item
        self._release(changes, floor)
        return text if tree is None else fill_template(tree, filled)

    def _direct(self, tau: int) -> list[Row]:
        """A MATCH-only SELECT: its rows are the MATCH's solutions, projected (no SPARQL)."""
        m, matcher = self.query.matches[0], self._matchers[0]
        changes = {bw.iri: bw.op.take_item_changes() for bw in self.windows}
        floor = self._floor() if self._forget else None  # (read only when forgetting)
        found = matcher.evaluate(changes, self._consumed, floor)
        self._solver.clear()  # the matcher keeps what it needs per item
        if m.selection.consumes:
            self._consume(tau, found)
            self._release(changes, floor)
        if len(found) > self.engine.limits.max_results:
            self._too_many(tau)
        return [self._row(m, em) for em in found]

    def _consume(self, tau: int, found: list[EventMapping]) -> None:
        """P^c / P^r: what justified this evaluation's output is gone for the next."""
        just = justification(found)
        self._consumed |= just
        if self._forget and just:
            for matcher in self._matchers:
                matcher.consume(just)
            self._consumed_at.append((tau, just))

    def _release(self, changes: dict[str, list[tuple[bool, Event, tuple]]], floor: int | None) -> None:
        """Forget consumed items no later evaluation can meet."""
        if self._forget:
            # consumed at tau: ended by tau, so entered every window it will (none twice)
            q = self._consumed_at
            while q and floor is not None and q[0][0] < floor:
                self._consumed -= q.popleft()[1]
            return
        # only an item that left a window can be forgotten (none leaves a landmark window)
        if any(not c[0] for ch in changes.values() for c in ch):
            live: set[int] = set()
            for matcher in self._matchers:
                live |= matcher.live_items()
            self._consumed &= live

    def _floor(self) -> int | None:
        """No item still to come into a window ends before this: events not taken yet end
        at or after the engine's time, and the waiting ones came in time order."""
        floor = self.engine.now
        for bw in self.windows:
            end = bw.op.waiting_end()
            if end is not None and (floor is None or end < floor):
                floor = end
        return floor

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
        got = self.strategy.rows(self, tau, t0)
        if got is not None:
            return got
        sparql = self._match_text(tau) if self.query.matches else self._text
        self._sync()
        if self._unmatched and self.query.empty_without_match:
            # an empty VALUES joined into the WHERE group: pyoxigraph's answer is no row
            self._took(tau, t0)
            return []
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

    def take(self, strategy: type[Strategy]) -> None:
        """Before ``bind``: take another path than the plan's (a test compares the paths;
        the snapshot path is open to every query, the event-local store to one with an
        event-local analysis)."""
        assert not self.windows, "take is for a runtime not bound yet"
        self.strategy = strategy()

    def idle(self) -> bool:
        return all(bw.op.idle for bw in self.windows)
