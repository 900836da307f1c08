"""NFA_scep runs for chain sequences: plain GPMs under ``,`` and ``;`` only (Queries 2-4's shape).

Such a sequence compiles to a straight line of states (Def. 17) whose runs never clone
and never wait under skip-till-any, so a run is one path: its mappings and the steps
that built them. :class:`ChainEngine` keeps those runs in per-state buckets keyed by
partition value (the variable every GPM binds, e.g. ?company) and, when a state's
stateful FILTER starts with a comparison ``?event_var OP ?run_var`` over numbers, sorted
by the run's value, so an event only meets runs it can extend. This is the general
engine's run index (Sec. 7.2.2, refined by partition and pushed FILTER) without its
machinery for cloning, shared histories and negation, which such a query never uses.

Semantics are :class:`rsep.cep.nfa.NFAEngine`'s (Algorithms 2 and 4, Defs. 11-12):
per instant, runs of closed windows are dropped; a run at state x_i whose GPM matches
the instant's event moves to x_(i+1) (skip-till-next: the first match only; it leaves
x_i); a run under strict contiguity that does not move dies; the events start new runs
at x_1; a run entering x_f is a match. The property tests hold the two engines and the
reference evaluator equal.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from typing import Any

from rsep.algebra.spaseq import UNIT, AtomKind, Leaf, Omega, Strategy
from rsep.cep.events import Match, SEvent
from rsep.cep.gpm import GPMEvaluator
from rsep.cep.nfa import (
    NFA,
    NFAOptions,
    Stats,
    _get,
    _number,
    range_filter,
    warn_cut,
)

# A bucket's runs whose pushed FILTER cannot be looked up by value, and the others as
# (value, run id, run) sorted by value.
_PLAIN, _RANGED = 0, 1
# The partition value of a run whose mappings disagree on it (any event may extend it).
_MIXED = object()


def chain_eligible(nfa: NFA, gpm: GPMEvaluator, options: NFAOptions,
                   trace: list | None) -> bool:
    """Whether :class:`ChainEngine` runs the query: every atom a plain GPM, every operator
    ``,`` or ``;``, every GPM compiled (a FILTER per run in SPARQL would be slower than the
    general engine's batched one), no trace and no per-group match limit (both speak of
    the general engine's runs)."""
    q = nfa.query
    return (options.chain and trace is None and options.max_matches is None
            and all(a.kind is AtomKind.BOP and isinstance(a.body, Leaf) for a in q.seq.atoms)
            and all(op in (Strategy.STRICT, Strategy.NEXT) for op in q.seq.ops)
            and len(gpm.compiled) == len(gpm.gpms))


class _Run:
    __slots__ = ("id", "omega", "trail", "window")

    def __init__(self, rid: int, omega: Omega, trail: tuple, window: int) -> None:
        self.id = rid
        self.omega = omega
        self.trail = trail  # ((time, leaf key, mappings after the step), ...)
        self.window = window


class ChainEngine:
    """Runs a chain NFA over instants pushed in time order (the NFAEngine interface)."""

    def __init__(self, nfa: NFA, gpm: GPMEvaluator, *, t0: int = 0, window: int | None = None,
                 options: NFAOptions | None = None) -> None:
        self.gpm = gpm
        self.t0 = t0
        self.window = window
        self.options = opts = options or NFAOptions()
        gpm.shared = True
        self.stats = Stats()
        q = nfa.query
        atoms = q.seq.atoms
        self.n = len(atoms)
        self.pvar = nfa.partition_key[0] if nfa.partition_key and opts.partition_index else None
        # Per state x_i: (stream, GPM, leaf key, strict, pushed range | None).
        self._state: list[tuple[str, Any, int, bool, tuple[str, str, str] | None]] = []
        for i, a in enumerate(atoms):
            lf = a.leaf
            rng = range_filter(lf.gpm) if opts.predicate_pushing else None
            self._state.append((lf.stream, lf.gpm, lf.key,
                                i > 0 and q.seq.ops[i - 1] is Strategy.STRICT, rng))
        self._strict = [i for i in range(1, self.n) if self._state[i][3]]
        # Per state x_i (i >= 1): partition value -> [plain runs, ranged runs].
        self.buckets: list[dict[Any, list[list]]] = [{} for _ in range(self.n)]
        self.live = 0
        self._next_id = 0
        self._oldest = 0  # the oldest window that may still hold runs

    # ------------------------------------------------------------ one instant

    def process(self, t: int, events: list[SEvent]) -> list[Match]:
        evs = {e.stream: e for e in events}
        gpm = self.gpm
        gpm.begin(events)
        try:
            return self._process(t, evs)
        finally:
            gpm.end()

    def _process(self, t: int, evs: dict[str, SEvent]) -> list[Match]:
        stats = self.stats
        if self.window is not None:
            self._expire(t)
        matches: list[Match] = []
        born: list[tuple[int, _Run]] = []
        gpm = self.gpm
        local_of = gpm.local
        extend = gpm.extend
        pvar = self.pvar
        n = self.n
        for i in range(n - 1, 0, -1):
            stream, g, key, strict, rng = self._state[i]
            if stream not in evs:
                continue
            buckets = self.buckets[i]
            if not buckets:
                continue
            local = local_of(g, stream)
            if not local:
                continue
            for bkey, group in _groups(local, pvar):
                bk = buckets.get(bkey)
                if bk is None:
                    continue
                plain, ranged = bk
                lo, hi = 0, len(ranged)
                if ranged and rng is not None and group is not None and len(group) == 1:
                    lo, hi = _bounds(ranged, rng[1], _number(_get(group[0], rng[0])))
                if lo < hi:
                    cands = [e[2] for e in ranged[lo:hi]]
                    if plain:
                        cands = plain + cands
                elif plain:
                    cands = plain
                else:
                    continue
                stats.runs_touched += len(cands)
                took = None
                for r in cands:
                    om = extend(g, r.omega, local)
                    if not om:
                        continue
                    trail = (*r.trail, (t, key, om))
                    if took is None:
                        took = {r.id}
                    else:
                        took.add(r.id)
                    if i + 1 == n:
                        matches.append(_match(t, om, trail))
                        stats.runs_deleted += 1
                    else:
                        # SETACTIVESTATE: the run goes on, one state further
                        born.append((i + 1, _Run(r.id, om, trail, r.window)))
                if took:
                    self.live -= len(took)
                    if plain:
                        bk[_PLAIN] = plain = [r for r in plain if r.id not in took]
                    if lo < hi:
                        if len(took) == len(cands) or all(e[1] in took for e in ranged[lo:hi]):
                            del ranged[lo:hi]
                        else:
                            ranged[lo:hi] = [e for e in ranged[lo:hi] if e[1] not in took]
                    if not plain and not ranged:
                        del buckets[bkey]
        # Strict contiguity: a run that took no event of this instant is over.
        for i in self._strict:
            buckets = self.buckets[i]
            if buckets:
                left = sum(len(b[_PLAIN]) + len(b[_RANGED]) for b in buckets.values())
                stats.runs_deleted += left
                self.live -= left
                self.buckets[i] = {}
        self._start(t, evs, born, matches)
        for i, r in born:
            self._add(i, r)
        stats.runs_created += len(born)
        live = self.live
        if live > stats.max_live:
            stats.max_live = live
        if live > self.options.max_runs:
            self._cut(live - self.options.max_runs, t)
        stats.matches += len(matches)
        stats.gpm_evaluations = gpm.evaluations + gpm.compiled_evaluations
        stats.gpm_fallbacks = gpm.fallbacks
        return matches

    def _start(self, t: int, evs: dict[str, SEvent], born: list, matches: list[Match]) -> None:
        """Algorithm 2 lines 17-22: the instant's events start runs at x_0."""
        if t < self.t0:
            return
        stream, g, key, _, _ = self._state[0]
        if stream not in evs:
            return
        local = self.gpm.local(g, stream)
        if not local:
            return
        om = self.gpm.extend(g, UNIT, local)
        if not om:
            return
        trail = ((t, key, om),)
        if self.n == 1:
            matches.append(_match(t, om, trail))
            return
        self._next_id += 1
        k = 0 if self.window is None else (t - self.t0) // self.window
        born.append((1, _Run(self._next_id, om, trail, k)))

    def _add(self, i: int, r: _Run) -> None:
        pvar = self.pvar
        om = r.omega
        if pvar is None:
            v: Any = None
        elif len(om) == 1:
            for mu in om:
                v = _get(mu, pvar)
        else:
            vals = {_get(mu, pvar) for mu in om}
            v = vals.pop() if len(vals) == 1 else _MIXED
        if v is None and pvar is not None:
            v = _MIXED
        b = self.buckets[i].get(v)
        if b is None:
            b = self.buckets[i][v] = [[], []]
        rng = self._state[i][4]
        y = None
        if rng is not None and len(om) == 1:
            for mu in om:
                y = _number(_get(mu, rng[2]))
        if y is None:
            b[_PLAIN].append(r)
        else:
            insort(b[_RANGED], (y, r.id, r))
        self.live += 1

    def _runs(self) -> list[_Run]:
        return [r for buckets in self.buckets for b in buckets.values()
                for r in [*b[_PLAIN], *(e[2] for e in b[_RANGED])]]

    def _drop(self, doomed: set[int]) -> int:
        gone = 0
        for buckets in self.buckets:
            for v in list(buckets):
                b = buckets[v]
                before = len(b[_PLAIN]) + len(b[_RANGED])
                b[_PLAIN] = [r for r in b[_PLAIN] if r.id not in doomed]
                b[_RANGED] = [e for e in b[_RANGED] if e[1] not in doomed]
                after = len(b[_PLAIN]) + len(b[_RANGED])
                gone += before - after
                if not after:
                    del buckets[v]
        self.live -= gone
        return gone

    def _expire(self, t: int) -> None:
        """Window pushing (Sec. 7.2.1): runs of windows that ended before t go first."""
        assert self.window is not None
        # window k is [t0 + k*w, t0 + (k+1)*w]: every k <= last has ended before t
        last = (t - self.t0 - 1) // self.window - 1
        if last < self._oldest:
            return
        self._oldest = last + 1
        if self.live:
            doomed = {r.id for r in self._runs() if r.window <= last}
            if doomed:
                self.stats.runs_expired += self._drop(doomed)

    def _cut(self, n: int, t: int) -> None:
        """The safety net, as NFAEngine's: drop the n oldest runs and say so."""
        doomed = set(sorted(r.id for r in self._runs())[:n])
        self._drop(doomed)
        if not self.stats.runs_cut:
            warn_cut(self.options.max_runs, t)
        self.stats.runs_cut += n


def _groups(local: Omega, pvar: str | None) -> list[tuple[Any, Any]]:
    """The buckets an event's mappings can reach, each with the mappings of its partition
    value (None for the mixed bucket, which any of them may extend)."""
    if pvar is None:
        return [(None, list(local))]
    if len(local) == 1:
        for mu in local:
            return [(_get(mu, pvar), (mu,)), (_MIXED, None)]
    out: dict[Any, Any] = {}
    for mu in local:
        out.setdefault(_get(mu, pvar), []).append(mu)
    out[_MIXED] = None
    return list(out.items())


_TOP = float("inf")


def _bounds(lst: list[tuple], op: str, ev: Any) -> tuple[int, int]:
    """The slice of runs (sorted by their value y) for which ``ev op y`` can hold."""
    if ev is None:
        return 0, len(lst)
    if op == ">":
        return 0, bisect_left(lst, (ev,))
    if op == ">=":
        return 0, bisect_right(lst, (ev, _TOP))
    if op == "<":
        return bisect_right(lst, (ev, _TOP)), len(lst)
    if op == "<=":
        return bisect_left(lst, (ev,)), len(lst)
    return bisect_left(lst, (ev,)), bisect_right(lst, (ev, _TOP))


def _match(t: int, omega: Omega, trail: tuple) -> Match:
    return Match(t, omega, tuple(sorted((s[0], s[1]) for s in trail)), trail)
