"""``rsep run --trace ?VAR=VALUE``: what happened to the runs of one key, in time order.

The answer to "why is my match missing": for the runs of a SPASEQ query whose mappings bind
``?VAR`` to ``VALUE``, each run started, extended (a step to the next state, a Kleene+
iteration, a copy under skip-till-any), each discarded with the rule that discarded it
(skip-till-next or strict contiguity taking an event for other values, strict contiguity
broken, a negated GPM matched, the WITHIN window closed, the max-runs bound), each event
of the key a run skipped because its GPM's FILTER on earlier variables failed, and each
match completed.

It is built on the NFA_scep engine's own trace (:mod:`rsep.spaseq.nfa` logs its runs'
steps when given a trace list): a traced query runs on that engine (never the chain
engine, whose runs are not kept, and without shared runs, which merge runs of several
histories into one), so the trace speaks of the runs the answers come from; the property
tests hold that engine equal to Definitions 7-16 (:mod:`rsep.spaseq.reference`). Without
``--trace`` nothing here is imported and the engines run as they always do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

from rsep.algebra.spaseq import AtomKind, Leaf, Omega, Strategy, compatible
from rsep.spaseq.streamset import Match, SEvent
from rsep.stream.time import TimeKind, format_time

_RULE = {Strategy.NEXT: "skip-till-next (';')", Strategy.STRICT: "strict contiguity (',')",
         Strategy.ANY: "skip-till-any (':')"}


def _same(term: Any, value: str) -> bool:
    # <iri> and "lexical"^^<type> as N-Triples writes them, or an IRI or lexical form bare
    s = str(term)
    return s == value or getattr(term, "value", None) == value.strip("<>").strip('"')


class Tracer:
    """The trace list an :class:`~rsep.spaseq.nfa.NFAEngine` logs into, and the printer of
    what its entries mean for one key."""

    def __init__(self, var: str | None, value: str, out: IO[str] | None, query_name: str = "",
                 show: Callable[[str], str] = str,
                 sink: Callable[[int | str, str], None] | None = None) -> None:
        self.var = var  # None: attached but following no key (rsep serve, between traces)
        self.value = value
        self.out = out
        self.sink = sink  # (time, text) of each line, instead of printing them on ``out``
        self.prefix = f"{query_name}: " if query_name else ""
        self.show = show  # a term's N-Triples for people (the CLI's: prefixed, numbers bare)
        self.shown: list[str] | None = None  # the selected variables, in order (None: all)
        self.entries: list[tuple] = []
        self.kind: TimeKind | None = None
        self.shown_all: list[str] = []

    # the engine's trace protocol: a list it appends entries to
    def append(self, entry: tuple) -> None:
        if self.var is not None:
            self.entries.append(entry)

    def retarget(self, var: str | None, value: str = "") -> None:
        """Follow another key (None: none) from the next instant on: the runs live then are
        read as they are, their past is not told."""
        self.var, self.value = var, value
        self.shown = [v for v in self.shown_all if v != var] or None
        self.entries.clear()

    def attach(self, rt: Any) -> None:
        """Trace a :class:`~rsep.spaseq.runtime.SpaseqRuntime` (before the engine binds it)."""
        rt.query.options["trace"] = self
        rt.options.shared_runs = False
        self.shown_all = list(rt.variables)
        self.shown = [v for v in rt.variables if v != self.var] or None
        bind = rt.bind

        def bound(kind: TimeKind, *a: Any, **k: Any) -> None:
            bind(kind, *a, **k)
            self.kind = kind
            rt.machine = _Traced(rt.machine, self)

        rt.bind = bound

    # ------------------------------------------------------------ reading the entries

    def _mine(self, om: Omega) -> list[tuple]:
        """The run's mappings of the key."""
        return [mu for mu in om if any(k == self.var and _same(v, self.value) for k, v in mu)]

    def _say(self, t: int, text: str) -> None:
        if self.sink is not None:
            self.sink(format_time(t, self.kind), text)
        else:
            print(f"{self.prefix}{format_time(t, self.kind)}  {text}", file=self.out)

    def _bindings(self, mus: list[tuple]) -> str:
        shown = []
        for mu in mus[:3]:
            b = dict(mu)
            names = self.shown if self.shown is not None else [
                k for k in b if k != self.var and not k.startswith("_")]
            shown.append(" ".join(f"?{k}={self.show(str(b[k]))}" for k in names if k in b)
                         or "(no other variable)")
        more = f" and {len(mus) - 3} more" if len(mus) > 3 else ""
        return "; ".join(shown) + more

    def instant(self, m: Any, t: int, sevs: list[SEvent], before: dict[int, tuple],
                matches: list[Match]) -> None:
        """Print what the instant ``t`` did to the key's runs (``before``: their state)."""
        states = m.nfa.states
        gpm_of = {lf.key: lf.gpm.name for lf in m.nfa.query.seq.leaves()}
        after = m.runs
        touched: set[int] = set()
        completed: set[int] = set()  # runs that completed a match of the key now
        carried: set[int] = set()  # runs of which a successor still holds the key
        dropped: list[int] = []  # runs whose successors hold the key no more
        found = iter(matches)

        def took(rid: int) -> str:
            r = after.get(rid)
            if r is None or not r.arrivals:
                return ""
            return ", ".join(f"{gpm_of[k]}@{format_time(tt, self.kind)}"
                             for tt, k, _ in r.arrivals[-1].steps)

        streams = {ev.stream for ev in sevs}

        def took_at(rid: int, t: int) -> str:
            atom = states[before[rid][0]].atom
            names = [lf.gpm.name for lf in atom.body.leaves() if lf.stream in streams] \
                if atom is not None else []
            return f"{'/'.join(names) or 'an event'}@{format_time(t, self.kind)}"

        for e in self.entries:
            what = e[0]
            if what == "match":
                mt = next(found)
                mine = self._mine(mt.omega)
                if mine:
                    touched.add(e[1])
                    completed.add(e[1])
                    path = " ".join(f"{gpm_of[k]}@{format_time(tt, self.kind)}"
                                    for tt, k in mt.steps)
                    who = f"run {e[1]}" if e[1] else "a new run"
                    on = " (skip-till-any: it waits on)" if e[1] in after else ""
                    self._say(t, f"{who} completed a match: {path} ({self._bindings(mine)})"
                              + on)
            elif what == "new":
                r = after.get(e[1])
                if r is not None and (mine := self._mine(r.omega)):
                    others = len(r.omega) - len(mine)
                    self._say(t, f"run {e[1]} started by {took(e[1])}, waits in {e[2]}: "
                              f"{self._bindings(mine)}" + (
                                  f" (and {others} mapping(s) of other values of ?{self.var}: "
                                  "the event carried several)" if others else ""))
            elif what in ("move", "stay") and e[1] in before:
                rid = e[1]
                touched.add(rid)
                r = after.get(rid)
                src = e[2]
                if r is not None and self._mine(r.omega):
                    carried.add(rid)
                    self._say(t, f"run {rid} extended by {took(rid)}: " + (
                        f"another iteration in {src}" if what == "stay"
                        else f"{src} -> {e[3]}"))
                else:
                    dropped.append(rid)
            elif what == "clone" and e[1] in before:
                touched.add(e[1])
                r = after.get(e[2])
                if r is not None and self._mine(r.omega):
                    carried.add(e[1])
                    atom = states[before[e[1]][0]].atom
                    why = (f"Kleene+ {atom.render()}: run {e[1]} stays for another iteration"
                           if atom is not None and atom.kind is AtomKind.KLEENE
                           else f"skip-till-any (':'): run {e[1]} waits on")
                    self._say(t, f"run {e[2]} copied from run {e[1]} and extended by "
                              f"{took(e[2])}, waits in {e[3]} ({why})")
            elif what == "delete" and e[1] in before:
                rid, why = e[1], e[2]
                touched.add(rid)
                if why == "done":
                    dropped.append(rid)  # (said below unless it completed a match of the key)
                    continue
                if why == "negation":
                    self._say(t, f"run {rid} discarded: a negated GPM matched an event at "
                              f"{format_time(t, self.kind)} (!, Appendix B)")
                else:
                    self._say(t, f"run {rid} discarded: strict contiguity (',') needs its "
                              "next event at the streamset's next instant, and no event of "
                              "this instant joined it")
            elif what == "expire" and e[1] in before:
                touched.add(e[1])
                end = m.window_end(before[e[1]][3])
                start = end - m.window
                self._say(t, f"run {e[1]} discarded: its WITHIN window "
                          f"[{format_time(start, self.kind)}, {format_time(end, self.kind)}] "
                          "closed (windows tumble from the query's start, Def. 16)")
            elif what == "cut" and e[1] in before:
                touched.add(e[1])
                self._say(t, f"run {e[1]} discarded at the bound on live runs "
                          "(RSEP_SPASEQ_OPTIONS max-runs): its matches are missing")
        for rid in dropped:
            if rid not in completed and rid not in carried:
                # the run took an event that joined only mappings of other values
                self._say(t, f"run {rid} discarded for ?{self.var}={self.show(self.value)} "
                          f"({self._bindings(self._mine(before[rid][1]))}): "
                          f"{_RULE[before[rid][2]]} takes the run's next event that joins any "
                          f"of its mappings, and {took_at(rid, t)} joined only other values "
                          f"of ?{self.var}")
        self.entries.clear()
        self._filtered(m, t, sevs, {rid: b for rid, b in before.items() if rid not in touched})

    def _filtered(self, m: Any, t: int, sevs: list[SEvent], waiting: dict[int, tuple]) -> None:
        """The key's events that a waiting run did not take because the FILTER of its GPM on
        earlier GPMs' variables failed (the event matched the GPM's own pattern)."""
        if not waiting:
            return
        streams = {e.stream for e in sevs}
        gpm = m.gpm
        gpm.begin(sevs)
        try:
            def before_op(rid: int) -> Strategy:
                op: Strategy = waiting[rid][2]
                return op

            for rid, (state, omega, _, _) in sorted(waiting.items()):
                atom = m.nfa.states[state].atom
                if atom is None or atom.kind is AtomKind.NEGATION:
                    continue
                for lf in atom.body.leaves():
                    assert isinstance(lf, Leaf)
                    g = lf.gpm
                    if not g.stateful_filters or lf.stream not in streams:
                        continue
                    local = self._mine(gpm.local(g, lf.stream))
                    runs = self._mine(omega)
                    pairs = [(a, b) for a in runs for b in local if compatible(a, b)]
                    if pairs and not gpm.extend(g, frozenset(runs), frozenset(local)):
                        a, b = pairs[0]
                        self._say(t, f"run {rid} did not take {g.name}@"
                                  f"{format_time(t, self.kind)}: FILTER "
                                  f"{' && '.join(g.stateful_filters)} is false for "
                                  f"{self._bindings([a])} and {self._bindings([b])}"
                                  + (" (it waits on)" if before_op(rid) is not Strategy.STRICT
                                     else ""))
        finally:
            gpm.end()


class _Traced:
    """An NFA engine whose instants are reported to a :class:`Tracer`."""

    def __init__(self, machine: Any, tracer: Tracer) -> None:
        self.machine = machine
        self.tracer = tracer
        self.process: Callable[[int, list[SEvent]], list[Match]] = self._process

    def __getattr__(self, name: str) -> Any:
        return getattr(self.machine, name)

    def _process(self, t: int, sevs: list[SEvent]) -> list[Match]:
        m = self.machine
        if self.tracer.var is None:
            untraced: list[Match] = m.process(t, sevs)
            return untraced
        mine = self.tracer._mine
        before = {rid: (r.state, r.omega, r.op, r.window) for rid, r in m.runs.items()
                  if mine(r.omega)}
        matches: list[Match] = m.process(t, sevs)
        self.tracer.instant(m, t, sevs, before, list(matches))
        return matches
