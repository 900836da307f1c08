"""NFA_scep's evaluation (002 Sec. 6.3, Appendix C): a compiled automaton run over a streamset.

The automaton is :mod:`rsep.spaseq.automaton`'s (Sec. 6.2), runs and their history
:mod:`rsep.spaseq.runs`'s, the engine's switches :mod:`rsep.spaseq.options`'s, the range
index of pushed FILTERs :mod:`rsep.spaseq.ranges`'s, output enumeration
:mod:`rsep.spaseq.matches`'s; nfa.pxd types the compiled build. Events are taken one
*instant* at a time (every event of the query's streams with that timestamp): Definition
12's contiguity and Definition 11's "first match" are about timestamps, and Definition 8's
conjunction pairs events of one timestamp. Per instant:

1. runs whose window has closed are dropped before any matching (window
   pushing, Sec. 7.2.1; Algorithm 2 lines 3-5);
2. each run waiting for a stream that has an event now (runs are indexed by
   the stream names of their active state, Sec. 7.2.2) is matched against it
   by its state's operator: event selection (Algorithm 4), Kleene+ with
   cloning (Algorithm 3), conjunction with the edge-timestamp map D and lazy
   evaluation (Algorithms 5, 10), disjunction (Algorithm 6), and the
   negation constraints it carries (Algorithm 9);
3. runs under strict contiguity that were not matched die; so do
   skip-till-next runs that were (their successors carry on);
4. the events start new runs from ``x_0`` (Algorithm 2 lines 17-22), and
   from the states ε-reachable from it (an optional first atom).

A run entering an optional or negated state follows its ε edge at once
(Algorithms 7-9's PROCEEDINGSTATE look-ahead, done as ε-closure); a run
entering ``x_f`` is a match, reported at once (push-based output, Def. 16).

Where Appendix C's algorithms and Definitions 7-16 disagree, the definitions
win, as docs/semantics.md ("SPASEQ") records; the property tests hold this
engine equal to :mod:`rsep.spaseq.reference`.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from operator import itemgetter
from typing import Any, cast

from rsep.algebra.spaseq import (
    GPM,
    UNIT,
    And,
    Atom,
    AtomKind,
    BopNode,
    Leaf,
    Omega,
    Or,
    Strategy,
    drop,
)
from rsep.spaseq.automaton import NFA, State, future_variables, start_states
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.matches import Enumerator, warn_cut
from rsep.spaseq.options import NFAOptions
from rsep.spaseq.ranges import ANY, binding, number, range_filter, select
from rsep.spaseq.runs import Arrival, LStep, Run, Stats
from rsep.spaseq.streamset import Match, SEvent

_TIME_LEAF = itemgetter(0, 1)  # a step's (time, leaf key): the order of an instant's steps
# (module constants: an Enum member read through its class costs an attribute lookup)
_STRICT, _NEXT, _ANY = Strategy.STRICT, Strategy.NEXT, Strategy.ANY


class NFALimitError(RuntimeError):
    """More partial matches alive than the configured bound."""


class NFAEngine:
    """Runs an NFA_scep over instants pushed in time order (Algorithm 1)."""

    def __init__(self, nfa: NFA, gpm: GPMEvaluator, *, t0: int = 0, window: int | None = None,
                 max_runs: int | None = None, trace: list[tuple] | None = None,
                 options: NFAOptions | None = None) -> None:
        self.nfa = nfa
        self.gpm = gpm
        self.t0 = t0
        self.window = window
        self.options = opts = options or NFAOptions()
        if max_runs is not None:
            opts.max_runs = max_runs
        self.trace = trace
        gpm.shared = opts.predicate_pushing
        self.runs: dict[int, Run] = {}
        self.index: dict[tuple[int, Any], set[int]] = {}  # (leaf key, value | ANY) -> runs
        self.by_window: dict[int, set[int]] = {}
        self.strict: set[int] = set()  # runs whose next step is strictly contiguous
        self.classes: dict[tuple, int] = {}  # shared runs: key -> run id
        self._per_leaf: dict[int, int] = {}  # index entries per GPM occurrence
        # Pushed stateful FILTERs: leaf key -> (event variable, op, run variable), and the
        # runs waiting for such a leaf, sorted by their run variable's number.
        self.ranges: dict[tuple[int, Any], list[tuple[Any, int]]] = {}
        self.prev: int | None = None  # the previous instant of the streamset
        self.instants = 0
        # Algorithm 5's D: (run, state, edge) -> timestamp of the conjunction edges matched.
        # All events of a timestamp are evaluated together, so it lives for one instant.
        self.D: dict[tuple[int, int, int], int] = {}
        self.stats = Stats()
        self._next_id = 0
        self._starts = start_states(nfa)
        q = nfa.query
        self._emit = Enumerator(q, gpm, opts, self.stats).emit
        self._by_stream: dict[str, list[Leaf]] = {}
        for lf in q.seq.leaves():
            self._by_stream.setdefault(lf.stream, []).append(lf)
        # Conjunct leaves: (the streams all conjuncts need) for lazy evaluation.
        self._conj: dict[int, frozenset[str]] = {}
        for a in q.seq.atoms:
            if isinstance(a.body, And):
                ss = frozenset(lf.stream for lf in a.body.leaves())
                for lf in a.body.leaves():
                    self._conj[lf.key] = ss
        self.pvar = nfa.partition_key[0] if nfa.partition_key and opts.partition_index else None
        self._range: dict[int, tuple[str, str, str]] = {}
        if opts.predicate_pushing and opts.stream_index:
            for lf in q.seq.leaves():
                if lf.gpm.name in gpm.compiled:
                    rng = range_filter(lf.gpm)
                    if rng is not None:
                        self._range[lf.key] = rng
        self._future = future_variables(nfa)
        # Per stream, the GPMs read there (negated ones included): an instant none of them
        # matches changes nothing but time (_idle). Off where expiry or GPM results are
        # per instant's own work (no window pushing, no shared evaluation) or traced.
        quiet: dict[str, list[GPM]] = {}
        for lf in q.seq.leaves():
            got = quiet.setdefault(lf.stream, [])
            if lf.gpm not in got:
                got.append(lf.gpm)
        self._quiet = quiet if opts.window_pushing and opts.predicate_pushing \
            and trace is None else None
        # _touched's per-leaf constants, by stream.
        self._touch_info: dict[str, list[tuple]] = {
            st: [(lf.gpm, lf.key, self._conj.get(lf.key), (lf.key, ANY), self._range.get(lf.key),
                  self.pvar is not None and self.pvar in lf.gpm.required_variables)
                 for lf in lfs]
            for st, lfs in self._by_stream.items()}
        # _index_keys's per-state constants: (variables a Kleene+ drops | None, per leaf
        # (key, partitioned by pvar, pushed range)); None for x_f and negations.
        self._ikey_info: list[tuple | None] = [
            None if st.atom is None or st.atom.kind is AtomKind.NEGATION else (
                st.atom.local_vars if st.atom.kind is AtomKind.KLEENE else None,
                tuple((lf.key, self.pvar is not None and self.pvar in lf.gpm.required_variables,
                       self._range.get(lf.key)) for lf in st.atom.body.leaves()))
            for st in nfa.states]
        # Per state: (stream, GPM, leaf key) when it waits for one plain GPM (no Kleene+,
        # ?, ! or &/|): the common case, stepped without the general operators' dispatch.
        self._plain: list[tuple[str, GPM, int] | None] = [
            (st.atom.leaf.stream, st.atom.leaf.gpm, st.atom.leaf.key)
            if st.atom is not None and st.atom.kind is AtomKind.BOP
            and isinstance(st.atom.body, Leaf) else None
            for st in nfa.states]
        # The streams each start state's GPMs read (an instant without them starts nothing).
        # (start states are before x_f: each waits for an atom)
        self._start_streams = {i: frozenset(lf.stream
                                            for lf in cast(Atom, nfa.states[i].atom).body.leaves())
                               for i in self._starts}

    # ------------------------------------------------------------ bookkeeping

    def _log(self, *entry: object) -> None:
        if self.trace is not None:
            self.trace.append(entry)

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _index_keys(self, r: Run) -> tuple:
        """The run's index entries: (leaf key, partition value | ANY) for the GPMs its state
        waits for and the negated GPMs it carries; and, where a GPM's stateful FILTER
        starts with ``?event_var OP ?run_var`` over numbers, (leaf key, value, number)
        entries of the range index instead."""
        info = self._ikey_info[r.state]
        keys: list[tuple] = []
        if info is not None:
            dropped, leaves = info
            x = drop(r.omega, dropped) if dropped is not None else r.omega
            pv = self.pvar
            for key, keyed, rng in leaves:
                bound = keyed and bool(x)
                if rng is not None and x:
                    entries = []
                    for mu in x:
                        v = binding(mu, pv) if bound else ANY
                        y = number(binding(mu, rng[2]))
                        if v is None or y is None:
                            break
                        entries.append(("R", key, v, y))
                    else:
                        keys.extend(entries)
                        continue
                vals: set[object] | None = None
                if bound:
                    vals = set()
                    for mu in x:
                        v = binding(mu, pv)
                        if v is None:
                            vals = None
                            break
                        vals.add(v)
                if vals is None:
                    keys.append((key, ANY))
                else:
                    keys.extend((key, v) for v in vals)
        keys.extend((leaf.key, ANY) for leaf, _ in r.negs)
        return tuple(keys)

    def _add(self, r: Run) -> None:
        assert r.id and r.id not in self.runs
        if self.options.shared_runs:
            negs = r.negs
            ckey = (r.state, r.omega, r.window, r.op, r.last if r.op is _STRICT else None,
                    r.iterations > 0, r.standalone,
                    tuple([(lf.key, om) for lf, om in negs]) if negs else ())
            into = self.classes.get(ckey)
            if into is not None:
                self.runs[into].arrivals.extend(r.arrivals)
                self.stats.runs_merged += 1
                self._log("merge", r.id, into)
                return
            self.classes[ckey] = r.id
            r.ckey = ckey
        self.runs[r.id] = r
        r.keys = keys = self._index_keys(r)
        per_leaf = self._per_leaf
        rid = r.id
        for k in keys:
            if k[0] == "R":
                insort(self.ranges.setdefault((k[1], k[2]), []), (k[3], rid))
                per_leaf[k[1]] = per_leaf.get(k[1], 0) + 1
                continue
            got = self.index.get(k)
            if got is None:
                self.index[k] = {rid}
            else:
                got.add(rid)
            per_leaf[k[0]] = per_leaf.get(k[0], 0) + 1
        self.by_window.setdefault(r.window, set()).add(r.id)
        if r.op is _STRICT:
            self.strict.add(r.id)
        self.stats.runs_created += 1

    def _remove(self, rid: int) -> Run | None:
        r = self.runs.pop(rid, None)
        if r is None:
            return None
        if r.ckey is not None and self.classes.get(r.ckey) == rid:
            del self.classes[r.ckey]
        for k in r.keys:
            if k[0] == "R":
                lst = self.ranges[(k[1], k[2])]
                i = bisect_left(lst, (k[3], rid))
                if i < len(lst) and lst[i] == (k[3], rid):
                    del lst[i]
                if not lst:
                    del self.ranges[(k[1], k[2])]
                self._per_leaf[k[1]] -= 1
                continue
            got = self.index.get(k)
            if got is not None:
                got.discard(rid)
                if not got:
                    del self.index[k]
            self._per_leaf[k[0]] -= 1
        w = self.by_window.get(r.window)
        if w is not None:
            w.discard(rid)
        self.strict.discard(rid)
        return r

    def window_of(self, t: int) -> int | None:
        """The latest window [t0 + k*w, t0 + (k+1)*w] containing t (None before t0)."""
        if t < self.t0:
            return None
        return 0 if self.window is None else (t - self.t0) // self.window

    def window_end(self, k: int) -> int | None:
        return None if self.window is None else self.t0 + (k + 1) * self.window

    # ------------------------------------------------------------ one instant

    def process(self, t: int, events: list[SEvent]) -> list[Match]:
        """PROCESSEVENT (Algorithm 2) for every event of the instant t."""
        if len(events) == 1:
            e = events[0]
            evs = {e.stream: e}
        else:
            evs = {e.stream: e for e in events}
        self.gpm.begin(events)
        try:
            if self._quiet is not None and not self.strict and self._idle(evs):
                return []
            return self._process(t, evs)
        finally:
            self.gpm.end()
            if self.D:
                self.D.clear()
            self.prev = t
            self.instants += 1

    def _idle(self, evs: dict[str, SEvent]) -> bool:
        """Whether the instant's events match no GPM of the query: then no run takes, starts
        or is killed by one, and (no run waiting under strict contiguity) none dies either;
        only time passes, and the runs whose window has closed go at the next busy instant
        (window pushing: before anything is matched there). The GPMs' results are kept for
        the instant, so a busy instant evaluates none twice."""
        quiet = self._quiet
        assert quiet is not None  # (process asks only then)
        local = self.gpm.local
        for s in evs:
            for g in quiet.get(s, ()):
                if local(g, s):
                    return False
        return True

    def _touched(self, evs: dict[str, SEvent]) -> set[int]:
        """The runs an instant's events can affect (Sec. 7.2.2's index, refined by partition
        value and by the range of a pushed stateful FILTER)."""
        if not self.options.stream_index:
            return set(self.runs)
        touched: set[int] = set()
        index = self.index
        ranges = self.ranges
        pv = self.pvar
        lazy = self.options.lazy_conjunction
        per_leaf = self._per_leaf
        local_of = self.gpm.local
        for s in evs:
            for g, key, conj, anyk, rng, keyed in self._touch_info.get(s, ()):
                if conj is not None and lazy and not conj <= evs.keys():
                    continue
                if not per_leaf.get(key):
                    continue
                if not keyed and rng is None:
                    got = index.get(anyk)
                    if got:
                        touched |= got
                    continue
                local = local_of(g, s)
                if not local:
                    continue
                got = index.get(anyk)
                if got:
                    touched |= got
                for mu in local:
                    v = binding(mu, pv) if keyed else ANY
                    if keyed:
                        got = index.get((key, v))
                        if got:
                            touched |= got
                    if rng is not None:
                        lst = ranges.get((key, v))
                        if lst:
                            touched.update([rid for _, rid in select(lst, rng[1],
                                                                     number(binding(mu, rng[0])))])
        return touched

    def _process(self, t: int, evs: dict[str, SEvent]) -> list[Match]:
        opts = self.options
        if opts.window_pushing or self.instants % 1024 == 0:
            self._expire(t)
        matches: list[Match] = []
        born: list[Run] = []
        # Strict runs cannot wait past this instant: they take an event now or die.
        dying = dict.fromkeys(self.strict, "contiguity")
        tracing = self.trace is not None
        touched = self._touched(evs)
        self.stats.runs_touched += len(touched)
        if touched and len(touched) > 1:
            self._prefetch(touched, evs)
        for rid in sorted(touched):
            r = self.runs.get(rid)
            if r is None:
                continue
            if not opts.window_pushing and (end := self.window_end(r.window)) is not None \
                    and end < t:
                self._remove(rid)
                dying.pop(rid, None)
                self._log("expire", rid, t)
                self.stats.runs_expired += 1
                continue
            if r.op is _STRICT and r.last != self.prev:
                continue  # an instant passed without it: contiguity is already broken
            before = len(matches)
            took, successors = self._step(r, t, evs, matches)
            for m in matches[before:] if tracing else ():
                self._log("match", rid, m.steps)
            killed = bool(r.negs) and self._forbidden(r, evs)
            keep = not killed and (r.op is _ANY or (r.op is _NEXT and not took))
            if keep:
                if successors:
                    for s in successors:
                        self._clone_log(r, s)
                    born.extend(successors)
                continue
            dying[rid] = "negation" if killed else ("done" if took else "contiguity")
            if successors:
                # The run itself goes on as its first successor (SETACTIVESTATE); the rest are clones.
                heir = successors[0]
                del dying[rid]
                self._remove(rid)
                if tracing:
                    src, dst = self.nfa.states[r.state].name, self.nfa.states[heir.state].name
                    self._log(*(("stay", rid, src, t) if heir.state == r.state
                                else ("move", rid, src, dst, t)))
                heir.id = rid
                for s in successors[1:]:
                    self._clone_log(r, s)
                born.extend(successors)
        for rid, why in dying.items():
            if self._remove(rid) is not None:
                self._log("delete", rid, why, t)
                self.stats.runs_deleted += 1
        self._start(t, evs, born, matches)
        for s in born:
            self._add(s)
        live = len(self.runs)
        if live > self.stats.max_live:
            self.stats.max_live = live
        if live > opts.max_runs:
            self._cut(live - opts.max_runs, t)
        self.stats.matches += len(matches)
        self.stats.gpm_evaluations = self.gpm.evaluations + self.gpm.compiled_evaluations
        self.stats.gpm_fallbacks = self.gpm.fallbacks
        return matches

    def _cut(self, n: int, t: int) -> None:
        """The safety net: drop the n oldest runs (their matches will be missing), and say so."""
        for rid in sorted(self.runs)[:n]:
            self._remove(rid)
            self._log("cut", rid, t)
        if not self.stats.runs_cut:
            warn_cut(self.options.max_runs, t)
        self.stats.runs_cut += n

    def _prefetch(self, touched: set[int], evs: dict[str, SEvent]) -> None:
        """The stateful FILTERs of all runs to be matched now, one query per GPM."""
        if len(self.gpm.compiled) == len(self.gpm.gpms):
            return
        wanted: dict[int, tuple[Leaf, list[Omega]]] = {}
        for rid in touched:
            r = self.runs.get(rid)
            if r is None:
                continue
            atom = self.nfa.states[r.state].atom
            if atom is not None and isinstance(atom.body, Leaf) and atom.leaf.stream in evs:
                x = drop(r.omega, atom.local_vars) if atom.kind is AtomKind.KLEENE else r.omega
                wanted.setdefault(atom.leaf.key, (atom.leaf, []))[1].append(x)
            for leaf, x in r.negs:
                if leaf.stream in evs:
                    wanted.setdefault(leaf.key, (leaf, []))[1].append(x)
        for leaf, xs in wanted.values():
            self.gpm.prefetch(leaf.gpm, leaf.stream, xs)

    def _clone_log(self, parent: Run, child: Run) -> None:
        child.id = self._new_id()
        if self.trace is not None:
            self._log("clone", parent.id, child.id, self.nfa.states[child.state].name)

    def _expire(self, t: int) -> None:
        w = self.window
        if w is None or not self.by_window:
            return
        # window k ends at t0 + (k + 1) * w, before t for every k up to this one
        last = (t - self.t0 - 1) // w - 1
        for k in [k for k in self.by_window if k <= last]:
            for rid in list(self.by_window.pop(k)):
                if self._remove(rid) is not None:
                    self._log("expire", rid, t)
                    self.stats.runs_expired += 1

    def _start(self, t: int, evs: dict[str, SEvent], born: list[Run], matches: list[Match]) -> None:
        k = self.window_of(t)
        if k is None:
            return
        for i in self._starts:
            if self._start_streams[i].isdisjoint(evs):
                continue
            plain = self._plain[i]
            if plain is not None and not self.gpm.local(plain[1], plain[0]):
                continue  # the event matches no start GPM: no run to make (most events)
            virtual = Run(0, i, UNIT, [], t, k, _ANY, standalone=True)
            before = len(matches)
            _, successors = self._step(virtual, t, evs, matches)
            tracing = self.trace is not None
            for m in matches[before:] if tracing else ():
                self._log("match", 0, m.steps)
            for s in successors:
                s.id = self._new_id()
                if tracing:
                    self._log("new", s.id, self.nfa.states[s.state].name, t)
            born.extend(successors)

    # ------------------------------------------------------------ operators

    def _step(self, r: Run, t: int, evs: dict[str, SEvent],
              matches: list[Match]) -> tuple[bool, list[Run]]:
        """Whether r takes an event of this instant, and the runs it then becomes (completed
        matches go to ``matches`` instead)."""
        plain = self._plain[r.state]
        if plain is not None:
            # _leaf, _successor and _enter for one plain GPM, inlined
            stream, g, key = plain
            if stream not in evs:
                return False, []
            gpm = self.gpm
            local = gpm.local(g, stream)
            if not local:
                return False, []
            om = gpm.extend(g, r.omega, local)
            if not om:
                return False, []
            arr = Arrival(t, r if r.arrivals else None, ((t, key, local),))
            succ = Run(0, r.state, om, [arr], t, r.window, r.op, r.iterations, r.standalone)
            return True, self._enter(succ, r.state + 1, None, matches)
        st = self.nfa.states[r.state]
        atom = st.atom
        assert atom is not None
        if atom.kind is AtomKind.KLEENE:
            return self._kleene(r, st, t, evs, matches)
        if isinstance(atom.body, Leaf):
            cands = self._leaf(atom.body, r.omega, t, evs)
        else:
            cands = self._bop(r, st, atom.body, r.omega, t, evs)
        out: list[Run] = []
        for om, steps in cands:
            out.extend(self._enter(self._successor(r, om, steps, t), r.state + 1, None, matches))
        return bool(cands), out

    def _leaf(self, leaf: Leaf, x: Omega, t: int,
              evs: dict[str, SEvent]) -> list[tuple[Omega, list[LStep]]]:
        """EVENTSELECTION's test (Algorithm 4 line 3): ``u in U and GPM(G_e, P, H)``."""
        if leaf.stream not in evs:
            return []
        local = self.gpm.local(leaf.gpm, leaf.stream)
        if not local:
            return []
        om = self.gpm.extend(leaf.gpm, x, local)
        return [(om, [(t, leaf.key, local)])] if om else []

    def _bop(self, r: Run, st: State, node: BopNode, x: Omega, t: int,
             evs: dict[str, SEvent]) -> list[tuple[Omega, list[LStep]]]:
        """CONJUNCTION / DISJUNCTION (Algorithms 5, 6) over the instant's events."""
        if isinstance(node, Leaf):
            got = self._leaf(node, x, t, evs)
            if got:
                self.D[(r.id, st.index, node.key)] = t
            return got
        if isinstance(node, And):
            if any(lf.stream not in evs for lf in node.leaves()):
                if not self.options.lazy_conjunction:
                    # Eager evaluation: the conjuncts that have an event are evaluated anyway.
                    for lf in node.leaves():
                        if lf.stream in evs:
                            self.gpm.local(lf.gpm, lf.stream)
                return []
            acc: list[tuple[Omega, list[LStep]]] = [(x, [])]
            for item in node.items:
                acc = [(om2, steps + st2) for om, steps in acc
                       for om2, st2 in self._bop(r, st, item, om, t, evs)]
                if not acc:
                    break
            return acc
        assert isinstance(node, Or)
        return [c for item in node.items for c in self._bop(r, st, item, x, t, evs)]

    def _kleene(self, r: Run, st: State, t: int, evs: dict[str, SEvent],
                matches: list[Match]) -> tuple[bool, list[Run]]:
        """KLEENEPLUS (Algorithm 3): on a match the run stays (self-loop, one more iteration)
        and a clone moves on (the edge to x_(i+1))."""
        atom = st.atom
        assert atom is not None
        x = drop(r.omega, atom.local_vars)
        out: list[Run] = []
        cands = self._leaf(atom.leaf, x, t, evs)
        for om, steps in cands:
            stay = self._successor(r, om, steps, t)
            stay.state = r.state
            stay.iterations = r.iterations + 1
            stay.standalone = r.standalone if r.iterations else not r.arrivals
            stay.op = _NEXT if stay.standalone else _STRICT
            stay.omega = self._project(om, r.state)
            out.append(stay)
            moving = self._successor(r, om, steps, t)
            moving.iterations = stay.iterations
            out.extend(self._enter(moving, r.state + 1, None, matches))
        return bool(cands), out

    def _forbidden(self, r: Run, evs: dict[str, SEvent]) -> bool:
        """NEGATION (Algorithm 9): a forbidden GPM matched an event after the run's last one."""
        return any(leaf.stream in evs and self.gpm.match(leaf.gpm, leaf.stream, x)
                   for leaf, x in r.negs)

    def _project(self, om: Omega, state: int) -> Omega:
        if not self.options.shared_runs:
            return om
        keep = self._future[state]
        if len(om) == 1:
            for mu in om:
                kept = tuple([kv for kv in mu if kv[0] in keep])
            # Unchanged mappings keep their set: its hash is cached for the run-class key.
            return om if len(kept) == len(mu) else frozenset((kept,))
        return frozenset(tuple([kv for kv in mu if kv[0] in keep]) for mu in om)

    def _successor(self, r: Run, om: Omega, steps: list[LStep], t: int) -> Run:
        arr = Arrival(t, r if r.arrivals else None,
                      tuple(steps) if len(steps) == 1 else tuple(sorted(steps, key=_TIME_LEAF)))
        return Run(0, r.state, om, [arr], t, r.window, r.op, r.iterations, r.standalone)

    def _enter(self, r: Run, i: int, override: Strategy | None, matches: list[Match],
               negs: tuple[tuple[Leaf, Omega], ...] = ()) -> list[Run]:
        """Put a run in state x_i, following ε edges (optional, negation); x_f is a match."""
        st = self.nfa.states[i]
        if st.kind == "final":
            self._emit(r, matches)
            return []
        atom = st.atom
        assert atom is not None and st.op_in is not None
        op = st.op_in if override is None else Strategy.weaker(override, st.op_in)
        r.omega = self._project(r.omega, i)
        r.state, r.op, r.iterations, r.negs, r.standalone = i, op, 0, negs, False
        if atom.kind is AtomKind.BOP:
            return [r]
        if atom.kind is AtomKind.NEGATION:
            # The forbidden GPM joins the mappings the run has now (Appendix B: no B between).
            return self._enter(r, i + 1, op, matches, negs + ((atom.leaf, r.omega),))
        out = [r]
        if atom.kind is AtomKind.OPTIONAL:
            skip = Run(0, i, r.omega, list(r.arrivals), r.last, r.window, op)
            out.extend(self._enter(skip, i + 1, op, matches, negs))
        return out
