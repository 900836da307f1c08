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
engine equal to :mod:`rsep.cep.spaseq_reference`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from rsep.algebra.spaseq import (
    UNIT,
    And,
    Atom,
    AtomKind,
    BopNode,
    Leaf,
    Omega,
    Or,
    SpaseqQuery,
    Strategy,
    drop,
)
from rsep.cep.events import Match, SEvent, Step, steps_of
from rsep.cep.gpm import GPMEvaluator

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
    return NFA(q, states, partition_key(q))


def partition_key(q: SpaseqQuery) -> tuple[str, ...]:
    """Variables every matching GPM binds, so runs (and streams) can be split by their value.

    The declared PARTITION BY wins; otherwise the variables bound by every
    non-negated GPM, except for a leading Kleene+ (its iterations are joined on
    nothing but PARTITION BY variables, so its matches can mix values).
    """
    if q.partition_by:
        return q.partition_by
    atoms = [a for a in q.seq.atoms if a.kind is not AtomKind.NEGATION]
    if atoms and atoms[0].kind is AtomKind.KLEENE:
        return ()
    common: set[str] | None = None
    for a in atoms:
        for lf in a.body.leaves():
            vs = set(lf.gpm.required_variables)
            common = vs if common is None else common & vs
    return tuple(sorted(common or ()))


# ---------------------------------------------------------------- runs and the history H


@dataclass(slots=True, eq=False)
class HNode:
    """One entry of the history cache H (Sec. 6.1): the event a run took on an edge, with the
    run's mappings after it. Clones share their common past, so cloning is O(1)."""

    parent: HNode | None
    leaf: int
    time: int
    omega: Omega


def history(h: HNode | None) -> Iterator[HNode]:
    while h is not None:
        yield h
        h = h.parent


@dataclass(slots=True, eq=False)
class Run:
    id: int
    state: int
    omega: Omega
    hist: HNode | None
    first: int
    last: int
    window: int
    op: Strategy  # the contiguity of the run's next step
    iterations: int = 0  # Kleene+ iterations taken at the current state
    standalone: bool = False  # a Kleene+ that nothing precedes: iterations skip-till-next
    negs: tuple[tuple[Leaf, Omega], ...] = ()  # forbidden GPMs and the mappings they join

    def steps(self) -> tuple[Step, ...]:
        return steps_of((h.time, h.leaf) for h in history(self.hist))


@dataclass
class Stats:
    runs_created: int = 0
    runs_deleted: int = 0
    runs_expired: int = 0
    matches: int = 0
    max_live: int = 0


class NFAEngine:
    """Runs an NFA_scep over instants pushed in time order (Algorithm 1)."""

    def __init__(self, nfa: NFA, gpm: GPMEvaluator, *, t0: int = 0, window: int | None = None,
                 max_runs: int = 1_000_000, trace: list[tuple] | None = None) -> None:
        self.nfa = nfa
        self.gpm = gpm
        self.t0 = t0
        self.window = window
        self.max_runs = max_runs
        self.trace = trace
        self.runs: dict[int, Run] = {}
        self.by_stream: dict[str, set[int]] = {}  # Sec. 7.2.2: runs by their state's streams
        self.by_window: dict[int, set[int]] = {}
        self.strict: set[int] = set()  # runs whose next step is strictly contiguous
        self.prev: int | None = None  # the previous instant of the streamset
        # Algorithm 5's D: (run, state, edge) -> timestamp of the conjunction edges matched.
        # All events of a timestamp are evaluated together, so it lives for one instant.
        self.D: dict[tuple[int, int, int], int] = {}
        self.stats = Stats()
        self._next_id = 0
        self._starts = self._closure_from_start()

    # ------------------------------------------------------------ bookkeeping

    def _log(self, *entry: object) -> None:
        if self.trace is not None:
            self.trace.append(entry)

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _keys(self, r: Run) -> set[str]:
        keys = set(self.nfa.states[r.state].streams)
        keys.update(leaf.stream for leaf, _ in r.negs)
        return keys

    def _add(self, r: Run) -> None:
        assert r.id and r.id not in self.runs
        self.runs[r.id] = r
        for s in self._keys(r):
            self.by_stream.setdefault(s, set()).add(r.id)
        self.by_window.setdefault(r.window, set()).add(r.id)
        if r.op is Strategy.STRICT:
            self.strict.add(r.id)
        self.stats.runs_created += 1

    def _remove(self, rid: int) -> Run | None:
        r = self.runs.pop(rid, None)
        if r is None:
            return None
        for s in self._keys(r):
            self.by_stream.get(s, set()).discard(rid)
        self.by_window.get(r.window, set()).discard(rid)
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
        evs = {e.stream: e for e in events}
        self.gpm.begin(events)
        try:
            return self._process(t, evs)
        finally:
            self.gpm.end()
            self.D.clear()
            self.prev = t

    def _process(self, t: int, evs: dict[str, SEvent]) -> list[Match]:
        self._expire(t)
        matches: list[Match] = []
        born: list[Run] = []
        # Strict runs cannot wait past this instant: they take an event now or die.
        dying = {rid: "contiguity" for rid in self.strict}
        touched: set[int] = set()
        for s in evs:
            touched |= self.by_stream.get(s, set())
        self._prefetch(touched, evs)
        for rid in sorted(touched):
            r = self.runs[rid]
            if r.op is Strategy.STRICT and r.last != self.prev:
                continue  # an instant passed without it: contiguity is already broken
            before = len(matches)
            took, successors = self._step(r, t, evs, matches)
            for m in matches[before:]:
                self._log("match", rid, m.steps)
            killed = self._forbidden(r, evs)
            keep = not killed and (r.op is Strategy.ANY or (r.op is Strategy.NEXT and not took))
            if keep:
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
        self.stats.max_live = max(self.stats.max_live, live)
        if live > self.max_runs:
            raise NFALimitError(
                f"{live} partial matches alive at {t}, over the bound of {self.max_runs}: "
                "skip-till-any with Kleene+ or long windows multiply runs")
        self.stats.matches += len(matches)
        return matches

    def _prefetch(self, touched: set[int], evs: dict[str, SEvent]) -> None:
        """The stateful FILTERs of all runs to be matched now, one query per GPM."""
        wanted: dict[int, tuple[Leaf, list[Omega]]] = {}
        for rid in touched:
            r = self.runs[rid]
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
        self._log("clone", parent.id, child.id, self.nfa.states[child.state].name)

    def _expire(self, t: int) -> None:
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
            virtual = Run(0, i, UNIT, None, t, t, k, Strategy.ANY, standalone=True)
            before = len(matches)
            _, successors = self._step(virtual, t, evs, matches)
            for m in matches[before:]:
                self._log("match", 0, m.steps)
            for s in successors:
                s.id = self._new_id()
                self._log("new", s.id, self.nfa.states[s.state].name, t)
                born.append(s)

    # ------------------------------------------------------------ operators

    def _step(self, r: Run, t: int, evs: dict[str, SEvent],
              matches: list[Match]) -> tuple[bool, list[Run]]:
        """Whether r takes an event of this instant, and the runs it then becomes (completed
        matches go to ``matches`` instead)."""
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
            out.extend(self._enter(self._successor(r, om, steps), r.state + 1, None, matches))
        return bool(cands), out

    def _leaf(self, leaf: Leaf, x: Omega, t: int, evs: dict[str, SEvent]) -> list[tuple[Omega, list[Step]]]:
        """EVENTSELECTION's test (Algorithm 4 line 3): ``u in U and GPM(G_e, P, H)``."""
        if leaf.stream not in evs:
            return []
        om = self.gpm.match(leaf.gpm, leaf.stream, x)
        return [(om, [(t, leaf.key)])] if om else []

    def _bop(self, r: Run, st: State, node: BopNode, x: Omega, t: int,
             evs: dict[str, SEvent]) -> list[tuple[Omega, list[Step]]]:
        """CONJUNCTION / DISJUNCTION (Algorithms 5, 6) over the instant's events."""
        if isinstance(node, Leaf):
            got = self._leaf(node, x, t, evs)
            if got:
                self.D[(r.id, st.index, node.key)] = t
            return got
        if isinstance(node, And):
            # Lazy evaluation (Algorithm 10): no GPM is evaluated until every conjunct's
            # stream has an event with this timestamp.
            if any(lf.stream not in evs for lf in node.leaves()):
                return []
            acc: list[tuple[Omega, list[Step]]] = [(x, [])]
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
            stay = self._successor(r, om, steps)
            stay.state = r.state
            stay.iterations = r.iterations + 1
            stay.standalone = r.standalone if r.iterations else r.hist is None
            stay.op = Strategy.NEXT if stay.standalone else Strategy.STRICT
            out.append(stay)
            moving = self._successor(r, om, steps)
            moving.iterations = stay.iterations
            out.extend(self._enter(moving, r.state + 1, None, matches))
        return bool(cands), out

    def _forbidden(self, r: Run, evs: dict[str, SEvent]) -> bool:
        """NEGATION (Algorithm 9): a forbidden GPM matched an event after the run's last one."""
        return any(leaf.stream in evs and self.gpm.match(leaf.gpm, leaf.stream, x)
                   for leaf, x in r.negs)

    def _successor(self, r: Run, om: Omega, steps: list[Step]) -> Run:
        h = r.hist
        for time, key in sorted(steps):
            h = HNode(h, key, time, om)
        t = steps[-1][0] if steps else r.last
        first = r.first if r.hist is not None else min(s[0] for s in steps)
        return Run(0, r.state, om, h, first, t, r.window, r.op, r.iterations, r.standalone)

    def _enter(self, r: Run, i: int, override: Strategy | None, matches: list[Match],
               negs: tuple[tuple[Leaf, Omega], ...] = ()) -> list[Run]:
        """Put a run in state x_i, following ε edges (optional, negation); x_f is a match."""
        st = self.nfa.states[i]
        if st.kind == "final":
            trail = tuple((h.time, h.leaf, h.omega) for h in reversed(list(history(r.hist))))
            matches.append(Match(r.last, r.omega, r.steps(), trail))
            return []
        atom = st.atom
        assert atom is not None and st.op_in is not None
        op = st.op_in if override is None else Strategy.weaker(override, st.op_in)
        r.state, r.op, r.iterations, r.negs, r.standalone = i, op, 0, negs, False
        if atom.kind is AtomKind.NEGATION:
            # The forbidden GPM joins the mappings the run has now (Appendix B: no B between).
            return self._enter(r, i + 1, op, matches, negs + ((atom.leaf, r.omega),))
        out = [r]
        if atom.kind is AtomKind.OPTIONAL:
            skip = Run(0, i, r.omega, r.hist, r.first, r.last, r.window, op)
            out.extend(self._enter(skip, i + 1, op, matches, negs))
        return out
