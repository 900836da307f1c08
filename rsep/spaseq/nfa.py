"""NFA_scep (002 Sec. 6, Appendix C): SPASEQ sequence expressions as automata, run over a streamset.

**Compilation** (Sec. 6.2, Def. 17). A sequence ``a_0 op_1 a_1 ... a_(n-1)``
becomes states ``x_0 ... x_(n-1)`` and a final state ``x_f``; state ``x_i``
waits for atom ``a_i`` and its edges carry state-transition predicates
``theta = (U, op, P)``:

- a GPM: one edge to ``x_(i+1)`` (op ``∅`` after ``,`` or at ``x_0``, else ``;`` / ``:``),
  plus, after ``;`` or ``:``, a self-loop matching any event (Figure 7);
- ``P+``: two ``+`` edges on P, a self-loop (take) and one to ``x_(i+1)`` (Figure 5);
- ``P & Q`` / ``P | Q``: one ``&`` / ``|`` edge per GPM, all to ``x_(i+1)`` (Figures 8, 9);
- ``P?``: a ``?`` edge and an ε edge to ``x_(i+1)`` (Figure 24);
- ``P!``: an ε edge to ``x_(i+1)`` and a ``!`` edge that ends the run (Figure 25).

**Evaluation** (Sec. 6.3, Algorithms 1-9). Events are taken one *instant* at
a time (every event of the query's streams with that timestamp): Definition
12's contiguity and Definition 11's "first match" are about timestamps, and
Definition 8's conjunction pairs events of one timestamp. Per instant:

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

import re
import warnings
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import pyoxigraph as ox

from rsep.algebra.spaseq import (
    GPM,
    UNIT,
    And,
    Atom,
    AtomKind,
    BopNode,
    Leaf,
    Mapping,
    Omega,
    Or,
    SpaseqQuery,
    Strategy,
    drop,
)
from rsep.sparql.matcher import Fallback, value_of
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.partition import common_variables
from rsep.spaseq.streamset import Match, SEvent

OP_SYMBOL = {Strategy.STRICT: "∅", Strategy.NEXT: ";", Strategy.ANY: ":"}


class NFALimitError(RuntimeError):
    """More partial matches alive than the configured bound."""


# ---------------------------------------------------------------- the automaton (Def. 17)


@dataclass(frozen=True)
class Predicate:
    """A state-transition predicate ``theta = (U, op, P)``; P is None for "any event"."""

    streams: frozenset[str]
    op: str
    leaf: Leaf | None = None

    def render(self, names: dict[str, str]) -> str:
        u = "{" + ", ".join(sorted(names.get(s, s) for s in self.streams)) + "}" \
            if self.streams else "*"
        return f"({u}, {self.op}, {self.leaf.gpm.name if self.leaf else '*'})"


@dataclass
class Edge:
    src: int
    dst: int | None  # None: the run is deleted (a negation's forbidden edge)
    theta: Predicate | None  # None: an ε transition
    role: str  # proceed | take | ignore | epsilon | forbid


@dataclass
class State:
    index: int
    name: str
    kind: str  # initial | ordinary | final
    atom: Atom | None
    op_in: Strategy | None  # the selection strategy before the state's atom (None at x_0)
    op_out: Strategy | None  # ... and after it
    edges: list[Edge] = field(default_factory=list)

    @property
    def streams(self) -> frozenset[str]:
        """The stream names the state's non-trivial edges wait for (its run index keys)."""
        return frozenset(s for e in self.edges if e.theta is not None and e.theta.leaf is not None
                         and e.role != "forbid" for s in e.theta.streams)


@dataclass
class NFA:
    query: SpaseqQuery
    states: list[State]
    partition_key: tuple[str, ...]

    @property
    def initial(self) -> State:
        return self.states[0]

    @property
    def final(self) -> State:
        return self.states[-1]


def _edges_for(i: int, atom: Atom, op_in: Strategy | None, all_streams: frozenset[str]) -> list[Edge]:
    sym = OP_SYMBOL[op_in] if op_in is not None else "∅"
    out: list[Edge] = []
    if op_in in (Strategy.NEXT, Strategy.ANY) or (atom.kind is AtomKind.KLEENE and i == 0):
        out.append(Edge(i, i, Predicate(all_streams, sym if op_in else ";"), "ignore"))
    if atom.kind is AtomKind.KLEENE:
        th = Predicate(frozenset({atom.leaf.stream}), "+", atom.leaf)
        out += [Edge(i, i, th, "take"), Edge(i, i + 1, th, "proceed")]
    elif atom.kind is AtomKind.OPTIONAL:
        out += [Edge(i, i + 1, Predicate(frozenset({atom.leaf.stream}), "?", atom.leaf), "proceed"),
                Edge(i, i + 1, None, "epsilon")]
    elif atom.kind is AtomKind.NEGATION:
        out += [Edge(i, i + 1, None, "epsilon"),
                Edge(i, None, Predicate(frozenset({atom.leaf.stream}), "!", atom.leaf), "forbid")]
    else:
        body = atom.body
        if isinstance(body, Leaf):
            out.append(Edge(i, i + 1, Predicate(frozenset({body.stream}), sym, body), "proceed"))
        else:
            op = "&" if isinstance(body, And) else "|"
            for lf in body.leaves():
                out.append(Edge(i, i + 1, Predicate(frozenset({lf.stream}), op, lf), "proceed"))
    return out


def compile_query(q: SpaseqQuery) -> NFA:
    """The NFA_scep of a query's sequence expression (Sec. 6.2)."""
    atoms = q.seq.atoms
    all_streams = frozenset(q.streams.values())
    states: list[State] = []
    for i, a in enumerate(atoms):
        op_in = q.seq.ops[i - 1] if i else None
        op_out = q.seq.ops[i] if i < len(q.seq.ops) else None
        st = State(i, f"x{i}", "initial" if i == 0 else "ordinary", a, op_in, op_out)
        st.edges = _edges_for(i, a, op_in, all_streams)
        states.append(st)
    states.append(State(len(atoms), "xf", "final", None, q.seq.ops[-1] if q.seq.ops else None, None))
    return NFA(q, states, index_variables(q))


def index_variables(q: SpaseqQuery) -> tuple[str, ...]:
    """Variables every GPM binds: the engine indexes runs by their value (the stream-level
    partition key, which also needs the strategies' consent, is rsep.spaseq.partition's)."""
    common = common_variables(q, negated=False)
    return tuple(v for v in q.partition_by if v in common) or tuple(common)


# ---------------------------------------------------------------- options


@dataclass
class NFAOptions:
    """The engine's optimisations, each switchable for benchmarks; results never depend on them.

    ``stream_index`` (Sec. 7.2.2): runs are found by the GPM occurrences their state waits
    for; off, every live run is tried at every instant. ``partition_index``: within that,
    by the value of a variable every such GPM binds (e.g. ?company), so an event touches
    only the runs of its value. ``window_pushing`` (Sec. 7.2.1): runs of closed windows are
    dropped before matching; off, when next touched (and by a sweep every 1024 instants).
    ``predicate_pushing`` (Sec. 7.2.1): a GPM's event-local part is evaluated once per event
    for all runs; off, each run evaluates the GPM itself. ``lazy_conjunction`` (Sec. 7.3):
    no conjunct is evaluated before every conjunct's stream has an event at the timestamp.
    ``compiled_gpm``: simple GPMs matched in Python (rsep.sparql.matcher). ``shared_runs``:
    runs that can only go on alike (same state, window, contiguity and mappings restricted
    to the variables later GPMs read) are one run whose history is a DAG; matches are
    enumerated from it when output, at most ``max_matches`` per match group (a run reaching
    x_f at one instant), the rest counted in ``Stats.matches_cut``. ``max_runs`` bounds live
    runs: beyond it the oldest are dropped and counted in ``Stats.runs_cut``. ``chain``: a
    sequence of plain GPMs under ``,`` and ``;`` runs on rsep.spaseq.chain's per-partition run
    buckets instead of this engine (then only ``partition_index`` and ``predicate_pushing``
    apply to it).
    """

    stream_index: bool = True
    partition_index: bool = True
    window_pushing: bool = True
    predicate_pushing: bool = True
    lazy_conjunction: bool = True
    compiled_gpm: bool = True
    shared_runs: bool = True
    chain: bool = True
    max_runs: int = 1_000_000
    max_matches: int | None = None

    SWITCHES = ("stream_index", "partition_index", "window_pushing", "predicate_pushing",
                "lazy_conjunction", "compiled_gpm", "shared_runs", "chain")

    @classmethod
    def all_off(cls, **kw: Any) -> NFAOptions:
        return cls(**{**{k: False for k in cls.SWITCHES}, **kw})

    @classmethod
    def parse(cls, spec: str) -> NFAOptions:
        """``"no-stream-index,max-runs=1000,max-matches=10"``; ``"all-off"`` turns every switch off."""
        opts = cls()
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, _, value = part.partition("=")
            key = name.replace("-", "_")
            if key == "all_off":
                opts = cls.all_off(max_runs=opts.max_runs, max_matches=opts.max_matches)
            elif key.startswith("no_") and key[3:] in cls.SWITCHES:
                setattr(opts, key[3:], False)
            elif key in cls.SWITCHES:
                setattr(opts, key, True)
            elif key in ("max_runs", "max_matches") and value.isdigit():
                setattr(opts, key, int(value))
            else:
                raise ValueError(f"unknown SPASEQ engine option {part!r} (switches: "
                                 + ", ".join(s.replace("_", "-") for s in cls.SWITCHES)
                                 + "; no-SWITCH, all-off, max-runs=N, max-matches=N)")
        return opts


# ---------------------------------------------------------------- runs and their history


# One instant's step of a run: (time, leaf key, the event's local mappings for that GPM).
LStep = tuple[int, int, Omega]


@dataclass(slots=True, eq=False)
class Arrival:
    """How a run came to be: its parent's paths (those before ``time``) and this instant's steps.

    Without shared runs every run has one arrival (a chain, clones sharing their past);
    with them a run merges the arrivals of runs that can only go on alike, and its paths
    are all the matches it stands for."""

    time: int
    parent: Run | None
    steps: tuple[LStep, ...]


@dataclass(slots=True, eq=False)
class Run:
    id: int
    state: int
    omega: Omega  # the mappings so far (shared runs: restricted to the variables still read)
    arrivals: list[Arrival]
    last: int
    window: int
    op: Strategy  # the contiguity of the run's next step
    iterations: int = 0  # Kleene+ iterations taken at the current state
    standalone: bool = False  # a Kleene+ that nothing precedes: iterations skip-till-next
    negs: tuple[tuple[Leaf, Omega], ...] = ()  # forbidden GPMs and the mappings they join
    keys: tuple = ()  # its entries in the run index
    ckey: tuple | None = None  # shared runs: what it is equivalent by

    def paths(self, before: int | None = None) -> Iterator[tuple[LStep, ...]]:
        """Every event path the run stands for, ending before ``before``. Iterative, with the
        suffix as a linked list: a Kleene+ run can be thousands of steps deep."""
        stack: list[tuple[list[Arrival], int, int | None, tuple | None]] = [
            (self.arrivals, 0, before, None)]
        while stack:
            arrs, i, lim, suffix = stack.pop()
            while i < len(arrs):
                a = arrs[i]
                if lim is not None and a.time >= lim:
                    break  # arrivals are in time order
                i += 1
                cell = (a.steps, suffix)
                if a.parent is None:
                    out: list[LStep] = []
                    c: tuple | None = cell
                    while c is not None:
                        out.extend(c[0])
                        c = c[1]
                    yield tuple(out)
                else:
                    stack.append((arrs, i, lim, suffix))
                    stack.append((a.parent.arrivals, 0, a.time, cell))
                    break


@dataclass
class Stats:
    runs_created: int = 0
    runs_deleted: int = 0
    runs_expired: int = 0
    runs_merged: int = 0  # runs folded into an equivalent one (shared_runs)
    runs_cut: int = 0  # live runs dropped at the max_runs bound: matches may be missing
    matches: int = 0
    matches_cut: int = 0  # matches not enumerated past max_matches per group
    max_live: int = 0
    runs_touched: int = 0  # runs matched against an instant's events, summed
    gpm_evaluations: int = 0
    gpm_fallbacks: int = 0


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
        self._starts = self._closure_from_start()
        q = nfa.query
        self._leaves = {lf.key: lf for lf in q.seq.leaves()}
        self._leaf_gpm = {lf.key: lf.gpm for lf in q.seq.leaves()}
        self._kleene_leaf = {a.leaf.key: a for a in q.seq.atoms if a.kind is AtomKind.KLEENE}
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
        self._future = self._future_variables()
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

    def _future_variables(self) -> list[frozenset[str]]:
        """Per state, the variables a run's future can read: those of the GPMs from that state
        on, and of every negated GPM (a run carries them past their state)."""
        atoms = self.nfa.query.seq.atoms
        negv = {v for a in atoms if a.kind is AtomKind.NEGATION
                for lf in a.body.leaves() for v in lf.gpm.variables | lf.gpm.filter_variables}
        out: list[frozenset[str]] = []
        acc: set[str] = set(negv)
        for a in reversed(atoms):
            for lf in a.body.leaves():
                acc |= lf.gpm.variables | lf.gpm.filter_variables
            out.append(frozenset(acc))
        out.reverse()
        out.append(frozenset())  # x_f
        return out

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
                        v = _get(mu, pv) if bound else ANY
                        y = _number(_get(mu, rng[2]))
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
                        v = _get(mu, pv)
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
            ckey = (r.state, r.omega, r.window, r.op, r.last if r.op is Strategy.STRICT else None,
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
        if r.op is Strategy.STRICT:
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

    def _closure_from_start(self) -> list[int]:
        """States a run with no event yet is in: x_0, and past optional atoms (ε edges)."""
        out = []
        i = 0
        states = self.nfa.states
        while states[i].kind != "final":
            out.append(i)
            a = states[i].atom
            if a is None or a.kind is not AtomKind.OPTIONAL:
                break
            i += 1
        return out

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
            return self._process(t, evs)
        finally:
            self.gpm.end()
            if self.D:
                self.D.clear()
            self.prev = t
            self.instants += 1

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
                    v = _get(mu, pv) if keyed else ANY
                    if keyed:
                        got = index.get((key, v))
                        if got:
                            touched |= got
                    if rng is not None:
                        lst = ranges.get((key, v))
                        if lst:
                            touched.update([rid for _, rid in _select(lst, rng[1],
                                                                      _number(_get(mu, rng[0])))])
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
            if r.op is Strategy.STRICT and r.last != self.prev:
                continue  # an instant passed without it: contiguity is already broken
            before = len(matches)
            took, successors = self._step(r, t, evs, matches)
            if tracing:
                for m in matches[before:]:
                    self._log("match", rid, m.steps)
            killed = bool(r.negs) and self._forbidden(r, evs)
            keep = not killed and (r.op is Strategy.ANY or (r.op is Strategy.NEXT and not took))
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
                    if heir.state == r.state:
                        self._log("stay", rid, self.nfa.states[r.state].name, t)
                    else:
                        self._log("move", rid, self.nfa.states[r.state].name,
                                  self.nfa.states[heir.state].name, t)
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
        if self.window is None:
            return
        for k in [k for k in self.by_window if (end := self.window_end(k)) is not None and end < t]:
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
            virtual = Run(0, i, UNIT, [], t, k, Strategy.ANY, standalone=True)
            before = len(matches)
            _, successors = self._step(virtual, t, evs, matches)
            tracing = self.trace is not None
            if tracing:
                for m in matches[before:]:
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
            stay.op = Strategy.NEXT if stay.standalone else Strategy.STRICT
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
                      tuple(steps) if len(steps) == 1 else tuple(sorted(steps, key=lambda s: s[:2])))
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

    # ------------------------------------------------------------ matches

    def _emit(self, r: Run, matches: list[Match]) -> None:
        """Enumerate the matches a run reaching x_f stands for (one group), up to the limit;
        the rest are counted (a sum over the history DAG), not enumerated."""
        limit = self.options.max_matches
        n = 0
        for path in r.paths():
            if limit is not None and n >= limit:
                cut = _count_paths(r) - n
                if not self.stats.matches_cut:
                    warnings.warn(SpaseqCutWarning(
                        f"SPASEQ: a match group at {r.last} has {n + cut} matches; "
                        f"{cut} beyond max-matches={limit} are not output"), stacklevel=2)
                self.stats.matches_cut += cut
                return
            m = self._fold(path, r.last)
            if m is not None:
                matches.append(m)
                n += 1

    def _fold(self, path: tuple[LStep, ...], time: int) -> Match | None:
        """A path's mappings, rebuilt step by step as the run computed them."""
        omega: Omega = UNIT
        trail = []
        kleene = self._kleene_leaf
        if kleene:
            gpms = self._leaf_gpm
            extend = self.gpm.extend
            for step in path:
                t, key, local = step
                ka = kleene.get(key)
                x = drop(omega, ka.local_vars) if ka is not None else omega
                omega = extend(gpms[key], x, local)
                if not omega:
                    return None
                trail.append((t, key, omega))
            return _match(time, omega, path, trail)
        # Without Kleene+ (whose iterations drop variables) a path is rebuilt by rejoin;
        # while every step has one mapping, by one dict carried along the path.
        d: dict = {}
        for step in path:
            t, key, local = step
            if len(local) != 1:
                break
            (b,) = local
            if not d:
                # the first step's mappings are the event's own (b is sorted already)
                d.update(b)
                trail.append((t, key, local))
                omega = local
                continue
            for k, v in b:
                w = d.get(k)
                if w is None:
                    d[k] = v
                elif w != v:
                    return None
            omega = frozenset((tuple(sorted(d.items())),))
            trail.append((t, key, omega))
        else:
            return _match(time, omega, path, trail)
        omega = UNIT
        trail = []
        gpms = self._leaf_gpm
        rejoin = self.gpm.rejoin
        for step in path:
            t, key, local = step
            omega = rejoin(gpms[key], omega, local)
            if not omega:
                return None
            trail.append((t, key, omega))
        return _match(time, omega, path, trail)


def _match(time: int, omega: Omega, path: tuple[LStep, ...], trail: list) -> Match:
    return Match(time, omega, tuple(sorted((t, k) for t, k, _ in path)), tuple(trail))


class SpaseqCutWarning(RuntimeWarning):
    """Live partial matches were dropped at the engine's bound: some matches are missing."""


def warn_cut(max_runs: int, t: int) -> None:
    warnings.warn(SpaseqCutWarning(
        f"SPASEQ: more than {max_runs} partial matches alive at {t}; the oldest are dropped "
        "and their matches lost (raise max-runs, or shorten the window)"), stacklevel=3)


class _Any:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()


_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "="}
_CMP = re.compile(r"\s*\(?\s*\?(\w+)\s*(<=|>=|<|>|=)\s*\?(\w+)\s*(?:\)\s*)?(?:&&|\Z)")


def range_filter(g: GPM) -> tuple[str, str, str] | None:
    """``(event variable, op, run variable)`` if a stateful FILTER of g is, or begins a
    ``&&`` chain with, a comparison of a variable g binds with one an earlier GPM binds: a
    run can only match events for which that comparison holds."""
    for f in g.stateful_filters:
        text = _unwrapped(f)
        if text is None:
            continue
        m = _CMP.match(text)
        if m is None or "(" in text[:m.end()].lstrip().lstrip("("):
            continue
        a, op, b = m.groups()
        if a in g.required_variables and b not in g.variables:
            return a, op, b
        if b in g.required_variables and a not in g.variables:
            return b, _FLIP[op], a
    return None


def range_is_whole(g: GPM) -> bool:
    """Whether :func:`range_filter`'s comparison is all of g's stateful FILTERs: then a run
    found by its value (both numbers) passes them, and they need not be tested again."""
    if len(g.stateful_filters) != 1:
        return False
    text = _unwrapped(g.stateful_filters[0])
    return text is not None and "&&" not in text and _CMP.match(text) is not None


def _unwrapped(f: str) -> str | None:
    """A FILTER's text without its outer parentheses; None if it has ``||`` or unbalanced ones."""
    text = f.strip()
    if "||" in text or text.count("(") != text.count(")"):
        return None
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return text


_NUMBERS: dict[object, Any] = {}


def _number(t: object) -> Any:
    """An integer or decimal literal's value (exact, comparable across both), else None."""
    if type(t) is not ox.Literal:
        return None
    got = _NUMBERS.get(t, _NUMBERS)  # the dict itself marks "not cached" (None is a value)
    if got is not _NUMBERS:
        return got
    try:
        k, v = value_of(t)  # not _value: its cache is for FILTERs, this one is their own
        got = v if k in ("n", "d") else None
    except Fallback:
        got = None
    if len(_NUMBERS) > 100_000:  # distinct values of a long stream: stay bounded
        _NUMBERS.clear()
    _NUMBERS[t] = got
    return got


_TOP = float("inf")


def _select(lst: list[tuple[Any, int]], op: str, ev: Any) -> list[tuple[Any, int]]:
    """The runs (sorted by run value y) for which ``ev op y`` can hold."""
    if ev is None:
        return lst
    if op == ">":
        return lst[:bisect_left(lst, (ev,))]
    if op == ">=":
        return lst[:bisect_right(lst, (ev, _TOP))]
    if op == "<":
        return lst[bisect_right(lst, (ev, _TOP)):]
    if op == "<=":
        return lst[bisect_left(lst, (ev,)):]
    return lst[bisect_left(lst, (ev,)):bisect_right(lst, (ev, _TOP))]


def _count_paths(r: Run) -> int:
    """How many paths ``r.paths()`` yields, by dynamic programming over (run, time limit)."""
    memo: dict[tuple[int, int | None], int] = {}

    def count(run: Run, before: int | None) -> int:
        key = (id(run), before)
        got = memo.get(key)
        if got is None:
            got = 0
            for a in run.arrivals:
                if before is not None and a.time >= before:
                    break
                got += 1 if a.parent is None else count(a.parent, a.time)
            memo[key] = got
        return got

    return count(r, None)


def _get(mu: Mapping, var: str | None) -> object:
    for k, v in mu:
        if k == var:
            return v
    return None
