"""NFA_scep runs for chain sequences: plain GPMs under ``,`` and ``;`` only (Queries 2-4's shape).

Such a sequence compiles to a straight line of states (Def. 17) whose runs never clone
and never wait under skip-till-any, so a run is one path: its mappings and the steps
that built them. :class:`ChainEngine` keeps those runs in per-state buckets keyed by
partition value (the variable every GPM binds, e.g. ?company) and, when a state's
stateful FILTER starts with a comparison ``?event_var OP ?run_var`` over numbers, sorted
by the run's value, so an event only meets runs it can extend. This is the general
engine's run index (Sec. 7.2.2, refined by partition and pushed FILTER) without its
machinery for cloning, shared histories and negation, which such a query never uses.

Semantics are :class:`rsep.spaseq.nfa.NFAEngine`'s (Algorithms 2 and 4, Defs. 11-12):
per instant, runs of closed windows are dropped; a run at state x_i whose GPM matches
the instant's event moves to x_(i+1) (skip-till-next: the first match only; it leaves
x_i); a run under strict contiguity that does not move dies; the events start new runs
at x_1; a run entering x_f is a match. The property tests hold the two engines and the
reference evaluator equal.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from rsep.algebra.spaseq import AtomKind, Leaf, Strategy
from rsep.sparql.matcher import CompiledGPM
from rsep.spaseq.automaton import NFA
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.matches import warn_cut
from rsep.spaseq.options import NFAOptions
from rsep.spaseq.ranges import number, range_filter, range_is_whole
from rsep.spaseq.runs import Stats
from rsep.spaseq.streamset import Match, SEvent

# A bucket's runs whose pushed FILTER cannot be looked up by value; the others sorted by
# their value, and those values (bisected as plain numbers).
_PLAIN, _RANGED, _YS = 0, 1, 2
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
    """A partial match: its mappings (one dict each, usually one), the (time, leaf key) of
    the events it took, in time order, and the window it started in."""

    __slots__ = ("id", "envs", "steps", "window")

    def __init__(self, rid: int, envs: list[dict], steps: tuple, window: int) -> None:
        self.id = rid
        self.envs = envs
        self.steps = steps
        self.window = window


class _State:
    """What taking an event at state x_i needs, fixed when the query compiles: a chain's
    runs at x_i have bound exactly the variables of the GPMs before it, so the join with
    an event's solution is a few position-to-variable comparisons, not a mapping merge."""

    __slots__ = ("stream", "gpm", "key", "strict", "rng", "shared", "new", "stateful",
                 "pidx", "ridx", "exact", "index", "slot")

    def __init__(self, index: int, leaf: Leaf, compiled: CompiledGPM, before: set[str],
                 strict: bool, rng: tuple[str, str, str] | None, pvar: str | None) -> None:
        self.index = index
        self.stream = leaf.stream
        self.gpm = leaf.gpm
        self.key = leaf.key
        self.strict = strict
        names = compiled.bound
        self.shared = tuple((i, n) for i, n in enumerate(names) if n in before)
        self.new = tuple((i, n) for i, n in enumerate(names) if n not in before)
        self.stateful = bool(compiled.stateful)
        self.pidx = names.index(pvar) if pvar is not None else None
        # the pushed range (event variable, op, run variable), with the event side's position
        self.rng = rng if rng is not None and rng[0] in names else None
        self.ridx = names.index(self.rng[0]) if self.rng is not None else None
        self.exact = self.rng is not None and range_is_whole(leaf.gpm)
        self.slot = 0  # which of the instant's row lists is this state's (see ChainEngine)


class ChainEngine:
    """Runs a chain NFA over instants pushed in time order (the NFAEngine interface).

    Matches carry no trail: it serves Kleene+ iterations and traces, which a chain never has.
    """

    def __init__(self, nfa: NFA, gpm: GPMEvaluator, *, t0: int = 0, window: int | None = None,
                 options: NFAOptions | None = None) -> None:
        self.gpm = gpm
        self.t0 = t0
        self.window = window
        self.options = opts = options or NFAOptions()
        gpm.shared = True
        self._stats = Stats()
        q = nfa.query
        atoms = q.seq.atoms
        self.n = len(atoms)
        self.pvar = nfa.partition_key[0] if nfa.partition_key and opts.partition_index else None
        self._state: list[_State] = []
        before: set[str] = set()
        slots: dict[object, int] = {}
        for i, a in enumerate(atoms):
            lf = a.leaf
            c = gpm.compiled[lf.gpm.name]
            rng = range_filter(lf.gpm) if opts.predicate_pushing else None
            strict = i > 0 and q.seq.ops[i - 1] is Strategy.STRICT
            st = _State(i, lf, c, before, strict, rng, self.pvar)
            # States whose GPMs give the same rows on every event (one GPM twice, or GPMs of
            # one shape) share one row list per instant.
            key = (lf.stream, c.row_key if c.row_key is not None else lf.gpm.name)
            st.slot = slots.setdefault(key, len(slots))
            self._state.append(st)
            before |= set(c.bound)
        self._slots = len(slots)
        # A run at x_f has bound every variable of the chain: its mappings as sorted
        # (variable, value) tuples come from one generated expression, not a sort per match.
        names = sorted(before)
        body = "".join(f"(_n{k}, d[_n{k}]), " for k in range(len(names)))
        self._mapping = eval(f"lambda d: ({body})", {f"_n{k}": v for k, v in enumerate(names)})
        # Per state x_i (i >= 1): partition value -> [plain runs, ranged runs, their values].
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
        stats = self._stats
        if self.window is not None:
            self._expire(t)
        matches: list[Match] = []
        rows: list = [None] * self._slots
        n = self.n
        for i in range(n - 1, 0, -1):
            st = self._state[i]
            if st.stream in evs and self.buckets[i]:
                got = self._rows(st, rows)
                if got:
                    self._step(i, st, t, got, matches)
            if st.strict and self.buckets[i]:
                # Strict contiguity: a run at x_i that took no event of this instant is
                # over; cleared before x_(i-1)'s runs move in.
                left = sum(len(b[_PLAIN]) + len(b[_RANGED]) for b in self.buckets[i].values())
                stats.runs_deleted += left
                self.live -= left
                self.buckets[i] = {}
        self._start(t, evs, matches, rows)
        live = self.live
        if live > stats.max_live:
            stats.max_live = live
        if live > self.options.max_runs:
            self._cut(live - self.options.max_runs, t)
        stats.matches += len(matches)
        return matches

    def _rows(self, st: _State, cache: list) -> list[tuple]:
        """The instant's solutions of x_i's GPM, once per slot (states of one shape share)."""
        got = cache[st.slot]
        if got is None:
            got = cache[st.slot] = self.gpm.rows(st.gpm, st.stream)
        return got

    @property
    def stats(self) -> Stats:
        """Runs and matches so far; the GPM counters read off the evaluator when asked."""
        st = self._stats
        gpm = self.gpm
        st.gpm_evaluations = gpm.evaluations + gpm.compiled_evaluations
        st.gpm_fallbacks = gpm.fallbacks
        return st

    def _step(self, i: int, st: _State, t: int, rows: list[tuple], matches: list[Match]) -> None:
        """The instant's event meets the runs at x_i it can reach (Algorithm 2's loop body)."""
        buckets = self.buckets[i]
        rng = st.rng
        last = i + 1 == self.n
        stats = self._stats
        for bkey, group in _groups(rows, st.pidx, _MIXED in buckets):
            bk = buckets.get(bkey)
            if bk is None:
                continue
            plain, ranged, ys = bk
            lo, hi = 0, len(ranged)
            # Runs found by value pass a whole-FILTER range without testing it again.
            sure = False
            if ranged and rng is not None and len(group) == 1:
                ev = number(group[0][st.ridx])
                lo, hi = _bounds(ys, rng[1], ev)
                sure = st.exact and ev is not None
            took = 0
            if plain:
                stats.runs_touched += len(plain)
                took, bk[_PLAIN], _ = self._meet(plain, None, st, group, True, t, last, matches)
                plain = bk[_PLAIN]
            if lo < hi:
                stats.runs_touched += hi - lo
                n, ranged[lo:hi], stay_ys = self._meet(ranged[lo:hi], ys[lo:hi], st, group,
                                                       not sure, t, last, matches)
                assert stay_ys is not None  # (ranged runs have values)
                ys[lo:hi] = stay_ys
                took += n
            if took:
                self.live -= took
                if not plain and not ranged:
                    del buckets[bkey]

    def _meet(self, runs: list[_Run], ys: list | None, st: _State, group: list[tuple],
              test: bool, t: int, last: bool, matches: list[Match]
              ) -> tuple[int, list[_Run], list | None]:
        """Runs (with their values ``ys``, if ranged) meet the event: how many took it, and
        those that stay (and their values)."""
        took = 0
        stay = []
        stay_ys: list | None = None if ys is None else []
        for j in range(len(runs)):
            r = runs[j]
            envs = self._extend(st, r.envs, group, test)
            if envs:
                took += 1
                self._took(r, envs, t, st, last, matches)
            else:
                stay.append(r)
                if ys is not None:
                    assert stay_ys is not None  # (it is when ys is)
                    stay_ys.append(ys[j])
        return took, stay, stay_ys

    def _took(self, r: _Run, envs: list[dict], t: int, st: _State, last: bool,
              matches: list[Match]) -> None:
        # in time order, as a Match's steps are: a run takes one event per instant
        steps = (*r.steps, (t, st.key))
        if last:
            matches.append(self._match(t, envs, steps))
            self._stats.runs_deleted += 1
        else:
            # SETACTIVESTATE: the run goes on, one state further. States are visited from
            # the last down, so x_(i+1) has had its turn: the run cannot move twice.
            r.envs = envs
            r.steps = steps
            self._add(st.index + 1, r)

    def _match(self, t: int, envs: list[dict], steps: tuple) -> Match:
        return Match(t, frozenset(map(self._mapping, envs)), steps)

    def _extend(self, st: _State, envs: list[dict], rows: list[tuple],
                test: bool = True) -> list[dict]:
        """The run's mappings joined with the event's solutions, the stateful FILTERs applied
        (Def. 11's join of Omega_x with [[P]]_G)."""
        shared = st.shared
        new = st.new
        out = []
        for env in envs:
            for vals in rows:
                for pos, var in shared:
                    if env[var] != vals[pos]:
                        break
                else:
                    d = env.copy()
                    for pos, var in new:
                        d[var] = vals[pos]
                    if test and st.stateful and not self.gpm.holds(st.gpm, d):
                        continue
                    out.append(d)
        return out

    def _start(self, t: int, evs: dict[str, SEvent], matches: list[Match], cache: list) -> None:
        """Algorithm 2 lines 17-22: the instant's events start runs at x_0."""
        if t < self.t0:
            return
        st = self._state[0]
        if st.stream not in evs:
            return
        envs = self._extend(st, [{}], self._rows(st, cache))
        if not envs:
            return
        steps = ((t, st.key),)
        if self.n == 1:
            matches.append(self._match(t, envs, steps))
            return
        self._next_id += 1
        k = 0 if self.window is None else (t - self.t0) // self.window
        self._add(1, _Run(self._next_id, envs, steps, k))
        self._stats.runs_created += 1

    def _add(self, i: int, r: _Run) -> None:
        pvar = self.pvar
        envs = r.envs
        one = len(envs) == 1
        if pvar is None:
            v: Any = None
        elif one:
            v = envs[0][pvar]
        else:
            vals = {env[pvar] for env in envs}
            v = vals.pop() if len(vals) == 1 else _MIXED
        buckets = self.buckets[i]
        b = buckets.get(v)
        if b is None:
            b = buckets[v] = [[], [], []]
        rng = self._state[i].rng
        y = number(envs[0].get(rng[2])) if one and rng is not None else None
        if y is None:
            b[_PLAIN].append(r)
        else:
            ys = b[_YS]
            if not ys or ys[-1] <= y:
                ys.append(y)
                b[_RANGED].append(r)
            else:
                k = bisect_right(ys, y)
                ys.insert(k, y)
                b[_RANGED].insert(k, r)
        self.live += 1

    def _runs(self) -> list[_Run]:
        return [r for buckets in self.buckets for b in buckets.values()
                for r in [*b[_PLAIN], *b[_RANGED]]]

    def _drop(self, doomed: set[int]) -> int:
        gone = 0
        for buckets in self.buckets:
            for v in list(buckets):
                b = buckets[v]
                before = len(b[_PLAIN]) + len(b[_RANGED])
                b[_PLAIN] = [r for r in b[_PLAIN] if r.id not in doomed]
                kept = [k for k, r in enumerate(b[_RANGED]) if r.id not in doomed]
                b[_RANGED] = [b[_RANGED][k] for k in kept]
                b[_YS] = [b[_YS][k] for k in kept]
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
                self._stats.runs_expired += self._drop(doomed)

    def _cut(self, n: int, t: int) -> None:
        """The safety net, as NFAEngine's: drop the n oldest runs and say so."""
        doomed = set(sorted(r.id for r in self._runs())[:n])
        self._drop(doomed)
        if not self._stats.runs_cut:
            warn_cut(self.options.max_runs, t)
        self._stats.runs_cut += n


def _groups(rows: list[tuple], pidx: int | None, mixed: bool) -> Any:
    """The buckets an event's solutions can reach, each with the solutions that can extend
    its runs: per partition value its own, for the mixed bucket (if it has runs) all."""
    if pidx is None:
        return ((None, rows),)
    if len(rows) == 1:
        return ((rows[0][pidx], rows), (_MIXED, rows)) if mixed else ((rows[0][pidx], rows),)
    out: dict[Any, list[tuple]] = {}
    for vals in rows:
        out.setdefault(vals[pidx], []).append(vals)
    if mixed:
        out[_MIXED] = rows
    return out.items()


def _bounds(ys: list, op: str, ev: Any) -> tuple[int, int]:
    """The slice of runs (sorted by their values ``ys``) for which ``ev op y`` can hold."""
    if ev is None:
        return 0, len(ys)
    if op == ">":
        return 0, bisect_left(ys, ev)
    if op == ">=":
        return 0, bisect_right(ys, ev)
    if op == "<":
        return bisect_right(ys, ev), len(ys)
    if op == "<=":
        return bisect_left(ys, ev), len(ys)
    return bisect_left(ys, ev), bisect_right(ys, ev)

