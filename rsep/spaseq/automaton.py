"""NFA_scep's compilation (002 Sec. 6.2, Def. 17): a SPASEQ sequence expression as an automaton.

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

:mod:`rsep.spaseq.nfa` runs the automaton; :mod:`rsep.spaseq.explain` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rsep.algebra.spaseq import And, Atom, AtomKind, Leaf, SpaseqQuery, Strategy
from rsep.spaseq.partition import common_variables

OP_SYMBOL = {Strategy.STRICT: "∅", Strategy.NEXT: ";", Strategy.ANY: ":"}


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


def future_variables(nfa: NFA) -> list[frozenset[str]]:
    """Per state, the variables a run's future can read: those of the GPMs from that state
    on, and of every negated GPM (a run carries them past their state)."""
    atoms = nfa.query.seq.atoms
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


def start_states(nfa: NFA) -> list[int]:
    """States a run with no event yet is in: x_0, and past optional atoms (ε edges)."""
    out = []
    i = 0
    states = nfa.states
    while states[i].kind != "final":
        out.append(i)
        a = states[i].atom
        if a is None or a.kind is not AtomKind.OPTIONAL:
            break
        i += 1
    return out
