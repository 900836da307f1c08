"""EP-SPARQL on the engine: the queries of one engine share one stream and its Q-closure
(CONSTRUCT rules feeding back, RDFS), evaluated push-based instant by instant (``Delta``
unrestricted, ``PolicyState`` chronological / recent); outputs carry the complex event's
interval."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyoxigraph as ox

from rsep.algebra.epsparql import INF, EpSparqlQuery, Path, Var, nodes, reads_history
from rsep.algebra.events import Selection
from rsep.algebra.output import EngineError, Output
from rsep.epsparql import native as native_module
from rsep.epsparql.delta import Delta
from rsep.epsparql.matcher import Occurrence, OccurrenceStore, Solution, strings
from rsep.epsparql.operators import ExprEvaluator, World
from rsep.epsparql.policy import PolicyState
from rsep.epsparql.rdfs import Graphs, Schema
from rsep.epsparql.rewrites import (
    horizons,
    mismatched_bounds,
    occurrence_horizon,
    push_filters,
    window,
)
from rsep.epsparql.seqindex import CandidateIndex
from rsep.stream.event import Event
from rsep.stream.time import TimeKind, format_time

if TYPE_CHECKING:
    from rsep.algebra.runtime import Host


@dataclass(slots=True, init=False)
class EpOutput(Output):
    """A complex event over [``start``, ``end``] (t_alpha, t_omega), output at ``time``:
    t_omega, or later under chronological / recent when a blocking candidate was consumed or
    left the window (at the deadline the query announced)."""

    start: int = 0
    end: int | None = None  # None: ``time``

    # written out: the generated __init__ is interpreted even in the compiled build (~1.2 us
    # a result, one per complex event)
    def __init__(self, query: str, time: int, kind: TimeKind | None, op: str = "insert",
                 bindings: dict[str, str] | None = None, triple: str | None = None,
                 boolean: bool | None = None, variables: tuple[str, ...] = (), start: int = 0,
                 end: int | None = None) -> None:
        self.query = query
        self.time = time
        self.kind = kind
        self.op = op
        self.bindings = bindings
        self.triple = triple
        self.boolean = boolean
        self.variables = variables
        self.start = start
        self.end = end

    def to_json(self) -> dict:
        d = Output.to_json(self)
        end = self.time if self.end is None else self.end
        out: dict[str, object] = {"time": d.pop("time"), "from": format_time(self.start, self.kind),
                               "to": format_time(end, self.kind)}
        out.update(d)
        return out


class RuleLoopError(EngineError):
    """CONSTRUCT rules that keep deriving new triple occurrences at one instant."""


_TIMELESS = -INF  # the t_omega of a solution from the background alone
# what a context's CONSTRUCT rules may do at one instant: rounds, and triples derived
# (RuleLoopError before the first triple over the cap is added)
MAX_ROUNDS = 1000
MAX_DERIVED = 1_000_000


class EpContext:
    """The EP-SPARQL queries of one engine share one stream and its Q-closure: the
    occurrences (input and derived), the RDFS schema and background graphs."""

    # forget() runs once the store holds PRUNE_FACTOR x what it kept last time + PRUNE_SLACK
    PRUNE_FACTOR = 2
    PRUNE_SLACK = 64

    def __init__(self, engine: Host) -> None:
        self.engine = engine
        self.runtimes: list[EpSparqlRuntime] = []
        graphs = {iri: [(str(t.subject), str(t.predicate), str(t.object)) for t in ts]
                  for iri, ts in engine.graphs.items()}
        self.schema = Schema(itertools.chain.from_iterable(graphs.values()))
        self.background = Graphs(graphs, self.schema)  # the world's, typed as what it is
        self.world = World(OccurrenceStore(), self.background, ExprEvaluator())
        self.pending: dict[int, dict[int, Event]] = {}  # per end: the events, by item
        self.last: int | None = None  # the last instant processed (instants come in order)
        self._derived = 0
        self.prune = True  # False: keep every occurrence and solution (the unpruned evaluator)
        self._kept = 0
        self._prune_at = self.PRUNE_SLACK  # the store's size at which forget() runs next
        self.occ = self.world.occ  # (the world's, never replaced: read once an event)
        # (PolicyState, window) of each chronological / recent query, for noting each new
        # occurrence; None once a query is registered or bound, until the next instant
        self._noting: list[tuple[PolicyState, float]] | None = None
        self.policies = False  # a chronological / recent query registered (deadlines)
        self._rules: list[EpSparqlRuntime] = []  # the CONSTRUCT rules of runtimes
        self._queries: list[EpSparqlRuntime] = []  # the others
        # deadline()'s answer until the next instant is processed (it reads only what
        # process changes)
        self._dl: int | None = None
        self._dl_valid = False

    def stored(self) -> int:
        """Occurrences and partial solutions held: what pruning bounds."""
        return len(self.world.occ) + sum(rt.delta.stored() for rt in self.runtimes)

    def forget(self, tau: int) -> None:
        """Drop the occurrences no registered query can use again: an unrestricted query
        needs an occurrence while it starts within its stream BGPs' horizon before tau; a
        chronological / recent one while it is unconsumed (by that query) and starts within
        its window (with none: while its SeqIndex can still use it, when it has one and no
        CONSTRUCT rule can derive an occurrence out of time order; else every unconsumed
        one). Amortised: done once the store has doubled since the last time."""
        if self.prune and len(self.occ.all) >= self._prune_at:
            self._forget(tau)

    def _forget(self, tau: int) -> None:
        # (apart from forget: compiled, a function with a closure makes its scope at every call)
        occ = self.occ
        h = -INF
        # (window start, consumed, the index whose needs() decides, if it may)
        policies: list[tuple[float, set[int], CandidateIndex | None]] = []
        in_order = not any(rt.query.construct for rt in self.runtimes)
        for rt in self.runtimes:
            if rt.query.policy is Selection.UNRESTRICTED:
                h = max(h, rt.leaf_horizon)
            else:
                index = rt.policy_state.index
                policies.append((tau - rt.window[0], rt.policy_state.consumed,
                                 index if in_order else None))
        lo = tau - h

        def keep(oc: Occurrence) -> bool:
            return oc.ta >= lo or any(oc.ta >= lo_p and oc.item not in c and (ix is None or ix.needs(oc))
                                      for lo_p, c, ix in policies)
        if len(policies) == 1 and h == -INF:
            self._prune_one(*policies[0])
        elif policies:
            occ.prune(keep)
        elif h < INF:
            occ.prune_before(lo)
        # (only a chronological / recent query's state and the history data hold items)
        if self.policies or self.world.data is not None:
            items = {oc.item for oc in occ.all}
            for rt in self.runtimes:
                rt.policy_state.keep_items(items)
            if self.world.data is not None:
                self.world.data.keep(items)
        self._kept = len(occ)
        self._prune_at = self.PRUNE_FACTOR * self._kept + self.PRUNE_SLACK

    def _prune_one(self, lo: float, consumed: set[int], index: CandidateIndex | None) -> None:
        # the one chronological / recent query alone (the common case), _forget's test
        # spelt out: the closure and its generator cost ~1.5 k instructions an event, and
        # here the index's needs() is a C call in the compiled build
        occ = self.occ
        kept = []
        for oc in occ.all:
            if oc.ta >= lo and oc.item not in consumed and (index is None or index.needs(oc)):
                kept.append(oc)
        occ.prune_kept(kept)

    def deadline(self) -> int | None:
        """The first instant after the last one processed at which a chronological / recent
        query's deferred decision becomes final (:meth:`PolicyState.deadline`): the queries
        of the context are evaluated then, as at an event."""
        if self.last is None or not self.policies:
            return None
        if self._dl_valid:  # (the engine asks twice an instant; nothing it reads changed)
            return self._dl
        best = None
        last = self.last
        for rt in self.runtimes:
            if not rt.unrestricted:
                ps = rt.policy_state
                d = ps.deadline(last, rt.window)
                if d is not None and (best is None or d < best):
                    best = d
        self._dl = best
        self._dl_valid = True
        return self._dl

    @staticmethod
    def of(engine: Host) -> EpContext:
        """The engine's one context, made for its first EP-SPARQL query (Engine.shared)."""
        return engine.shared(EpContext, lambda: EpContext(engine))

    def graph_changed(self, iri: str, new: frozenset[ox.Triple]) -> None:
        """A background graph changed before the coming instant: GRAPH patterns, EXISTS and
        the schema read it as it is now; occurrences that came earlier keep the RDFS
        consequences they had when they occurred (docs/semantics.md)."""
        graphs = self.background.graphs
        graphs[iri] = [(str(t.subject), str(t.predicate), str(t.object)) for t in new]
        self.schema = Schema(itertools.chain.from_iterable(graphs.values()))
        self.background = self.world.background = Graphs(graphs, self.schema)
        if self.world.data is not None:
            self.world.data.drop_background()
        for rt in self.runtimes:
            if rt.query.policy is Selection.UNRESTRICTED:
                rt.delta.rebase()

    def insert(self, e: Event) -> None:
        # every runtime passes each event on: kept once
        self.pending.setdefault(e.end, {}).setdefault(e.seq or id(e), e)

    def _alone(self) -> bool:
        """An occurrence is the triple alone: no RDFS consequences, no history data, no
        chronological / recent query to note it."""
        return self.world.data is None and not self.policies and self.schema.empty

    def _add(self, s: str, p: str, o: str, ta: int, tw: int, item: int) -> int:
        """The occurrence and its RDFS consequences; how many were new."""
        data = self.world.data
        if self._alone():
            return int(self.world.occ.add(Occurrence(s, p, o, ta, tw, item)))
        n = 0
        for x in self.schema.entail(s, p, o):
            oc = Occurrence(*x, ta=ta, tw=tw, item=item)
            if self.world.occ.add(oc):
                n += 1
                if data is not None:
                    data.add(*x, ta, tw, item)
                if self.policies:
                    for rt in self.runtimes:
                        if rt.query.policy is not Selection.UNRESTRICTED:
                            rt.policy_state.note(oc, rt.window[0])
        return n

    def process(self, tau: int) -> None:
        if self.last is not None and tau <= self.last:
            return
        self.last = tau
        self._dl_valid = False
        got = self.pending.pop(tau, None)
        if got is not None:
            occ = self.occ
            if self._alone():  # _add's first case, spelt out: this runs per triple
                for e in got.values():
                    start, end, item = e.start, e.end, e.seq
                    for t in e.triples:
                        a, b, c = strings(t)
                        occ.add(Occurrence(a, b, c, start, end, item))
            elif self.world.data is None and self.schema.empty:
                # _add with no RDFS consequences and no history data, spelt out: each new
                # occurrence noted by the chronological / recent queries
                noting = self._noting
                if noting is None:
                    noting = self._noting = [(rt.policy_state, rt.window[0]) for rt in self.runtimes
                                             if not rt.unrestricted]
                for e in got.values():
                    start, end, item = e.start, e.end, e.seq
                    for t in e.triples:
                        a, b, c = strings(t)
                        oc = Occurrence(a, b, c, start, end, item)
                        if occ.add(oc):
                            for ps, h in noting:
                                ps.note(oc, h)
            else:
                for e in got.values():
                    for t in e.triples:
                        self._add(*strings(t), e.start, e.end, e.seq)
        if self._rules:
            self._rounds(tau)
        for rt in self._queries:
            sols = rt.solutions(tau)
            if sols:
                box = rt.outbox.setdefault(tau, [])
                for s in sols:
                    box.extend(rt.outputs(s, tau))
        for rt in self.runtimes:
            rt.finish(tau)
        self.forget(tau)
        self._dl_valid = False

    def _rounds(self, tau: int) -> None:
        """The CONSTRUCT rules' rounds at tau, until they derive nothing new."""
        rules = self._rules
        seen: dict[int, set[tuple]] = {id(rt): set() for rt in rules}
        # The cap counts this instant's derivations and is checked before each one, so a
        # round that would derive millions stops at the cap, not after the round (which
        # overshot to 2.4 x 10^6 triples and 2 GB: issue 52).
        cap = self.engine.limits.max_derived or MAX_DERIVED
        derived = 0
        for rnd in itertools.count():
            if rnd > MAX_ROUNDS:
                self._loop(tau, f"do not terminate at time {{}}: still deriving new triples "
                           f"after {rnd} rounds ({derived} derived triples)")
            fresh = 0
            for rt in rules:
                # The rule's solutions are read as they are made (a cross product is never a
                # list: issue 52), so its triples wait until they are all read: the store
                # they join must not change under the reading (at most the cap of them).
                new: list[tuple[tuple[str, str, str], int, int, int]] = []
                for s in rt.each(tau):
                    if s.key in seen[id(rt)]:
                        continue
                    seen[id(rt)].add(s.key)
                    trs = rt.instantiate(s)
                    if derived + len(trs) > cap:
                        self._loop(tau, f"derive more than {cap:,} triples at time {{}} "
                                   f"(round {rnd + 1}); stopped at the cap, before the first "
                                   "over it (--max-derived)")
                    for tr in trs:
                        derived += 1
                        self._derived += 1
                        new.append((tr, int(s.ta), int(s.tw), -self._derived))
                    rt.outbox.setdefault(tau, []).extend(rt.outputs(s, tau, trs))
                for tr, ta, tw, item in new:
                    fresh += bool(self._add(*tr, ta=ta, tw=tw, item=item))
            if not fresh:
                break

    def _loop(self, tau: int, what: str) -> None:
        names = ", ".join(rt.name for rt in self._rules)
        raise RuleLoopError(f"the CONSTRUCT rules ({names}) "
                            + what.format(format_time(tau, self.world.exprs.kind)))


class EpSparqlRuntime:
    """A registered EP-SPARQL query or rule, driven by :class:`Engine`."""

    def __init__(self, query: EpSparqlQuery, engine: Host, name: str,
                 callback: Callable[[Output], None] | None = None) -> None:

        self.query = query
        self.engine = engine
        self.name = name
        self.callback = callback
        self.streams: set[str] = set()  # EP-SPARQL reads one stream: every input event
        self.last_tick: int | None = None
        self.kind: TimeKind | None = None
        # the native path (rsep.epsparql.native), which rsep run takes when it can (rsep.cli.run
        # reads the runtime's), and its plan, or why the query does not take it
        self.native_path = native_module
        self.native: native_module.NativePlan | str = native_module.native_plan(query)
        self.ctx = EpContext.of(engine)
        graphs = self.ctx.background.graphs
        for iri in query.background:  # (the engine's, given or fetched after the context was made)
            if iri not in graphs:
                graphs[iri] = [(str(t.subject), str(t.predicate), str(t.object)) for t in engine.graphs[iri]]
        self.ctx.runtimes.append(self)
        self.ctx._dl_valid = False
        self.ctx._noting = None
        (self.ctx._rules if query.construct else self.ctx._queries).append(self)
        self.unrestricted = query.policy is Selection.UNRESTRICTED
        if not self.unrestricted:
            self.ctx.policies = True
        if any(isinstance(n, Path) for n in nodes(query.pattern)) or reads_history(query.pattern):
            self.ctx.world.needs_data()
        self.plan = push_filters(query.pattern)  # what Delta runs (unrestricted)
        self.delta = Delta(self.plan, self.ctx.world)
        self.leaf_horizon = INF  # set by bind, once the kind of time is known
        self.window: tuple[float, bool] = (INF, False)  # chronological / recent: see :func:`window`
        # (ETALIS's policies have a runtime of their own: rsep.runtime.dialects.FAMILIES)
        assert isinstance(query.policy, Selection)
        self.policy_state = PolicyState(query.pattern, query.policy)  # chronological / recent
        self.outbox: dict[int, list[Output]] = {}
        self._ticks: set[int] = set()
        self._bn = itertools.count(1)
        self._emitted: set[tuple] = set()

    # engine protocol
    def bind(self, kind: TimeKind, time_unit_ms: int | None, start: int) -> None:
        why = mismatched_bounds(self.query.pattern, kind, time_unit_ms)
        if why:  # known once the first event tells the kind of time
            raise EngineError(f"query {self.name}: {why}")
        self.kind = kind
        self.ctx.world.exprs.kind = kind
        hs = horizons(self.plan, kind)
        # EXISTS sees every earlier occurrence; a path, those of the current instant
        self.leaf_horizon = INF if reads_history(self.plan) else occurrence_horizon(self.plan, hs)
        self.window = window(self.query.pattern, kind)
        self.ctx._noting = None
        if self.ctx.prune:
            self.delta.hs = hs

    def insert(self, e: Event) -> None:
        self._ticks.add(e.end)
        self.ctx.insert(e)

    def graph_changed(self, iri: str, old: frozenset[ox.Triple], new: frozenset[ox.Triple]) -> None:
        if self.ctx.runtimes[0] is self:  # (the context's queries share it: once)
            self.ctx.graph_changed(iri, new)

    def next_tick(self, bound: int) -> int | None:
        lt, best = self.last_tick, None
        for t in self._ticks:
            if (lt is None or t > lt) and t < bound and (best is None or t < best):
                best = t
        return best

    def deadline(self) -> int | None:
        """When a decision deferred by a query of this context becomes final (the engine
        evaluates there even if no event comes, up to --until or the end of the input)."""
        ctx = self.ctx
        return ctx.deadline() if ctx.policies else None  # (asked twice an event)

    def evaluate(self, tau: int) -> Sequence[Output]:
        ticks = self._ticks
        ticks.discard(tau)
        if ticks and min(ticks) < tau:
            self._ticks = {t for t in ticks if t > tau}
        self.last_tick = tau
        self.ctx.process(tau)
        return self.outbox.pop(tau, ())

    # evaluation
    def solutions(self, tau: int) -> list[Solution]:
        """The query's new solutions at tau (its complex events detected at tau)."""
        if self.unrestricted:
            got = self.delta.at(tau)
            return [s for s in got if s.tw != _TIMELESS] if got else got
        sols = self.policy_state.evaluate(self.ctx.world, tau, self.window)
        out = []
        for s in sols:
            if s.key in self._emitted or s.tw == _TIMELESS:
                continue
            self._emitted.add(s.key)
            out.append(s)
        return out

    def each(self, tau: int) -> Iterator[Solution]:
        """solutions(tau), made as they are read when the query is unrestricted
        (:meth:`Delta.each`): the occurrences must not change until it is done."""
        if not self.unrestricted:
            yield from self.solutions(tau)
            return
        for s in self.delta.each(tau):
            if s.tw != _TIMELESS:
                yield s

    def finish(self, tau: int) -> None:
        if self.unrestricted:
            self.delta.commit(tau)
        elif self.ctx.prune:
            # every emitted solution consumed its items, so evaluate cannot find it again
            self._emitted.clear()

    def instantiate(self, s: Solution) -> list[tuple[str, str, str]]:
        assert self.query.template is not None
        mu = dict(s.mu)
        fresh: dict[str, str] = {}
        out = []
        for tp in self.query.template:
            tr: list[str | None] = []
            for t in tp:
                if isinstance(t, Var):
                    if t.name.startswith("_b"):
                        if t.name not in fresh:
                            fresh[t.name] = f"_:ep{self.name}x{next(self._bn)}"
                        tr.append(fresh[t.name])
                    else:
                        tr.append(mu.get(t.name))
                else:
                    tr.append(t)
            s_, p_, o_ = tr
            # Sec. 4.2: only solutions binding every variable of the triple; no literal subject
            if s_ is None or p_ is None or o_ is None or s_.startswith('"') or not p_.startswith("<"):
                continue
            out.append((s_, p_, o_))
        return out

    def outputs(self, s: Solution, tau: int, triples: list[tuple[str, str, str]] | None = None) -> list[Output]:
        if not self.unrestricted:
            self.policy_state.consume(s.just)
        ta, tw = int(s.ta), int(s.tw)
        q = self.query
        if q.construct:
            return [EpOutput(self.name, tau, self.kind, triple=f"{a} {b} {c}", start=ta, end=tw)
                    for a, b, c in (triples if triples is not None else self.instantiate(s))]
        if q.ask:
            return [EpOutput(self.name, tau, self.kind, boolean=True, start=ta, end=tw)]
        d = dict(s.mu)
        b = {v: d[v] for v in q.select if v in d}
        return [EpOutput(self.name, tau, self.kind, bindings=b, variables=q.select, start=ta, end=tw)]

    def idle(self) -> bool:
        return not self._ticks and self.ctx.deadline() is None
