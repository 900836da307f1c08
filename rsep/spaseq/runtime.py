"""SPASEQ queries on the engine: the runtime object :meth:`Engine.register` drives.

Push-based (Def. 16): the engine hands over the events of an instant, the
NFA_scep engine processes them, and every match completed by them is output
at once, at the time of its completing event, one output per solution of
``pi_V(Omega)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar, NoReturn

import pyoxigraph as ox

from rsep.algebra.output import EngineError, Output
from rsep.algebra.spaseq import AtomKind, SpaseqQuery, compatible
from rsep.lang.errors import QueryError
from rsep.sparql.rows import rows_block
from rsep.spaseq import native as native_module
from rsep.spaseq.automaton import NFA, compile_query
from rsep.spaseq.chain import ChainEngine, chain_eligible
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.matches import MatchLimitError
from rsep.spaseq.nfa import NFAEngine, NFALimitError
from rsep.spaseq.options import NFAOptions
from rsep.spaseq.runs import Stats
from rsep.spaseq.streamset import Match, SEvent, merge_events
from rsep.stream.event import Event
from rsep.stream.time import TimeError, TimeKind, format_time

_STEPS = attrgetter("steps")

if TYPE_CHECKING:
    from rsep.algebra.runtime import Host


@dataclass(slots=True)
class MatchOutput(Output):
    """One solution of a SPASEQ match: ``time`` is the completing event's, ``start`` the first's.

    ``events`` lists (GPM, stream IRI, time) of the matched events in time order;
    ``iterations`` gives, per Kleene+ GPM whose own variables are selected, each
    iteration's bindings in order (``bindings`` holds the last iteration's).
    """

    start: int = 0
    events: tuple[tuple[str, str, int], ...] = ()
    iterations: dict[str, list[list[dict[str, str]]]] | None = None

    def to_json(self) -> dict:
        d = Output.to_json(self)
        first = format_time(self.start, self.kind)
        # the match's interval as every dialect writes a complex event's: from its first event
        # to the one completing it; "start" is the same as "from" (kept for one release)
        t = d.pop("time")
        out: dict[str, object] = {"time": t, "from": first, "to": t, "start": first}
        out.update(d)
        if self.iterations:
            out["iterations"] = self.iterations
        return out


def engine_options(query: SpaseqQuery) -> NFAOptions:
    """The engine options of a query: ``query.options["engine"]`` (an :class:`NFAOptions` or its
    text form), else the environment's ``RSEP_SPASEQ_OPTIONS`` (how the CLI sets them, e.g.
    ``RSEP_SPASEQ_OPTIONS=no-partition-index,max-matches=100 rsep run ...``); ``max_runs`` and
    ``max_matches`` in ``query.options`` override."""
    given = query.options.get("engine")
    try:
        if isinstance(given, NFAOptions):
            opts = NFAOptions(**{k: getattr(given, k) for k in given.__dataclass_fields__})
        else:
            opts = NFAOptions.parse(given if isinstance(given, str)
                                    else os.environ.get("RSEP_SPASEQ_OPTIONS", ""))
    except ValueError as e:
        raise QueryError(str(e), source=query.source) from None
    for k in ("max_runs", "max_matches"):
        if query.options.get(k) is not None:
            setattr(opts, k, int(query.options[k]))
    return opts


class SpaseqRuntime:
    """A registered SPASEQ query: its NFA_scep, the events of the current instant, its outputs."""

    # the native path (rsep.spaseq.native), which rsep run takes when it can (rsep.cli.run
    # finds it here, as on a windowed query's runtime)
    native_path: ClassVar[ModuleType] = native_module

    def __init__(self, query: SpaseqQuery, engine: Host, name: str,
                 callback: Callable[[Output], None] | None = None) -> None:
        self.query = query
        self.engine = engine
        self.name = name
        self.callback = callback
        self.streams: set[str] = set(query.streams.values())
        self.last_tick: int | None = None
        self.variables = query.variables
        self.nfa: NFA = compile_query(query)
        self.options = engine_options(query)
        self.options.max_instant = engine.limits.max_matches
        # query.options["partition"]: (key variable, owns) when this runtime is one of several
        # over a split streamset (rsep.spark.state), answering for the values owns takes only
        self.gpm = GPMEvaluator(query.gpms.values(), engine.graphs,
                                compiled=self.options.compiled_gpm,
                                partition=query.options.get("partition"))
        self.machine: NFAEngine | ChainEngine | None = None
        self.kind: TimeKind | None = None
        self._pending: dict[int, list[Event]] = {}
        self._leaves = {lf.key: lf for lf in query.seq.leaves()}
        self._leaf_names = {lf.key: (lf.gpm.name, lf.stream) for lf in query.seq.leaves()}
        self._exprs = query.expressions
        aliases = {v for v, _, _ in self._exprs}
        # an expression reads its variables from the match, selected or not
        self._keep = frozenset(self.variables).union(*(vs for _, _, vs in self._exprs)) - aliases
        # bindings keep the selection's order; a row's own order is the same when sorted
        self._sorted_vars = list(self.variables) == sorted(self.variables)
        self._kleene = [(a.leaf.key, a.leaf.gpm.name, a.local_vars & set(self.variables))
                        for a in query.seq.atoms if a.kind is AtomKind.KLEENE]
        # the native path's plan, or why the query does not take it
        self.native: native_module.NativePlan | str = native_module.native_plan(
            query, self.gpm, self.options, query.options.get("trace"))

    def bind(self, kind: TimeKind, time_unit_ms: int | None, start: int) -> None:
        self.kind = kind
        window = None
        if self.query.within is not None:
            try:
                window = self.query.within.units(kind, time_unit_ms)
            except TimeError as e:
                raise EngineError(f"query {self.name}: {e}") from None
        t0 = self.query.issued_at if self.query.issued_at is not None else start
        trace = self.query.options.get("trace")
        if chain_eligible(self.nfa, self.gpm, self.options, trace):
            self.machine = ChainEngine(self.nfa, self.gpm, t0=t0, window=window,
                                       options=self.options)
        else:
            self.machine = NFAEngine(self.nfa, self.gpm, t0=t0, window=window, trace=trace,
                                     options=self.options)

    @property
    def stats(self) -> Stats | None:
        """Runs created, merged, expired, cut at the bound; matches, and those cut per group."""
        return self.machine.stats if self.machine is not None else None

    def insert(self, e: Event) -> None:
        if e.stream in self.streams:
            self._pending.setdefault(e.time, []).append(e)

    def graph_changed(self, iri: str, old: frozenset[ox.Triple], new: frozenset[ox.Triple]) -> None:
        # each GPM is matched when its event is processed, against the graph then (Def. 16)
        self.gpm.graph_changed(iri, old, new)

    def next_tick(self, bound: int) -> int | None:
        after = self.last_tick
        pending = self._pending
        if len(pending) <= 1:
            # the usual case, asked several times per event: one instant waiting, or none
            for t in pending:
                return t if (after is None or t > after) and t < bound else None
            return None
        cands = [t for t in self._pending if (after is None or t > after) and t < bound]
        return min(cands) if cands else None

    def evaluate(self, tau: int) -> list[MatchOutput]:
        events = self._pending.pop(tau, [])
        self.last_tick = tau
        if not events:
            return []
        assert self.machine is not None, "bind() comes first"
        try:
            if len(events) == 1:
                # One input event is one SPASEQ event. Its triples are not de-duplicated here
                # (hashing each costs more than the rest of this): both matchers read them
                # as a set (the store, Canon.indexed).
                e = events[0]
                sevs = [SEvent(e.stream, e.time, e.triples, (e.graph,))]
            else:
                sevs = merge_events(events)
            matches = self.machine.process(tau, sevs)
        except NFALimitError as e:
            raise EngineError(f"query {self.name}: {e}") from None
        except MatchLimitError:
            self._too_many(tau)
        if not matches:
            return []
        if len(matches) > (self.options.max_instant or len(matches)):
            self._too_many(tau)  # (the chain engine's: one match per run, runs are bounded)
        if len(matches) > 1:
            # one order whatever the engine or its options: by the events matched
            matches.sort(key=_STEPS)
        outs: list[MatchOutput] = []
        seen: set[tuple] = set()
        for m in matches:
            outs.extend(self._outputs(m, seen))
        if self._exprs:
            outs = self._extend(outs)
        return outs

    def _too_many(self, tau: int) -> NoReturn:
        raise EngineError(f"query {self.name}: more than {self.options.max_instant:,} matches "
                          f"at {format_time(tau, self.kind)} (--max-matches); stopped at the "
                          "bound, before enumerating the rest")

    def _extend(self, outs: list[MatchOutput]) -> list[MatchOutput]:
        """SELECT (expr AS ?v): the instant's rows in one VALUES block, the expressions bound
        in order (a later one may read an earlier one), pyoxigraph evaluating them."""
        names = sorted(self._keep)
        binds = " ".join(f"BIND (({text}) AS ?{v})" for v, text, _ in self._exprs)
        store = self.gpm.store
        try:
            with rows_block(names, [o.bindings or {} for o in outs], store) as block:
                res = store.query(f"{self.query.prologue}SELECT * WHERE {{ {block} {binds} }}")
                assert isinstance(res, ox.QuerySolutions)
                rows = list(res)
        except (SyntaxError, RuntimeError, OSError) as e:
            raise EngineError(f"query {self.name}: SELECT expression failed: {e}") from None
        values: dict[int, dict[str, str]] = {}
        for r in rows:
            values[int(r["__i"].value)] = {v: str(t) for v, _, _ in self._exprs
                                           if (t := r[v]) is not None}
        out: list[MatchOutput] = []
        seen: set[tuple] = set()
        for i, o in enumerate(outs):
            b = {**(o.bindings or {}), **values.get(i, {})}
            o.bindings = {k: b[k] for k in self.variables if k in b}
            if self.query.distinct:
                key = (o.time, tuple(sorted(o.bindings.items())))
                if key in seen:
                    continue
                seen.add(key)
            out.append(o)
        return out

    def _outputs(self, m: Match, seen: set[tuple]) -> list[MatchOutput]:
        named = self._leaf_names
        events = tuple([(*named[k], t) for t, k in m.steps])
        out: list[MatchOutput] = []
        keep = self._keep
        # pi_V(Omega): a list, made a set only when there are several rows to deduplicate
        rows = [tuple([kv for kv in mu if kv[0] in keep]) for mu in m.omega]
        if len(rows) > 1:
            rows = sorted(set(rows), key=lambda r: [(k, str(v)) for k, v in r])
        variables = self.variables
        for row in rows:
            # a row is sorted by variable and holds only selected ones: no lookup needed
            # when the selection is in that order too
            if self._exprs:  # projected once the expressions are bound (_extend)
                bindings = {k: str(v) for k, v in row}
            else:
                bindings = {k: str(v) for k, v in row} if self._sorted_vars else \
                    {k: str(d[k]) for d in (dict(row),) for k in variables if k in d}
            if self.query.distinct and not self._exprs:
                key = (m.time, tuple(sorted(bindings.items())))
                if key in seen:
                    continue
                seen.add(key)
            out.append(MatchOutput(self.name, m.time, self.kind, bindings=bindings,
                                   variables=self.variables, start=m.first, events=events,
                                   iterations=(self._iterations(m, row) or None)
                                   if self._kleene else None))
        return out

    def _iterations(self, m: Match, row: tuple) -> dict[str, list[list[dict[str, str]]]]:
        out: dict[str, list[list[dict[str, str]]]] = {}
        for key, name, own in self._kleene:
            if not own:
                continue
            base = tuple(kv for kv in row if kv[0] not in own)
            its = []
            for _t, k, om in m.trail:
                if k != key:
                    continue
                sols = {tuple(kv for kv in mu if kv[0] in own) for mu in om if compatible(mu, base)}
                its.append([{v: str(x) for v, x in s} for s in sorted(sols, key=str)])
            if its:
                out[name] = its
        return out
