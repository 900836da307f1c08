"""Translations of 001 Sec. 4: window expressions (Table 1), push ▷ and pull ◁
(Prop. 1), and the SPARQL-to-rules translation with input streams (Fig. 2) in its
strategies tau_1 (C-SPARQL, B1) and tau_2 (CQELS, B2).

Readings of a window's interval (docs/semantics.md, "LARS"): ``lars`` is Table 1 as
printed ([RANGE L] -> ⊞^L, the closed [t-L, t]); ``engine`` maps each window onto
the interval the engine uses for its dialect: (t-L, t] (RSP-QL, CQELS) -> ⊞^{L-1},
C-SPARQL's [t-L, t) -> ⊞^{L,1,1} (range L, offset 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

from rsep.algebra.window import Boundary, WindowKind, WindowSpec
from rsep.lars.core import (
    NOW,
    NULL,
    TRUE,
    UNBOUNDED,
    Atom,
    Builtin,
    LarsError,
    Lit,
    Modal,
    Program,
    Rule,
    Stream,
    Term,
    TimeWindow,
    TupleWindow,
    Var,
    Window,
    WindowAtom,
    mod_test,
)
from rsep.lars.rsp import (
    BGP,
    TP,
    Filter,
    Graph,
    Join,
    Minus,
    Optional,
    Pattern,
    RSPQuery,
    StreamPattern,
    Union,
    expr_vars,
    holds,
    maybe_unbound,
    show_expr,
    var_name,
    vars_of,
)
from rsep.lars.rsp import Stream as StreamGP
from rsep.lars.rsp import Term as RTerm
from rsep.stream.event import Event
from rsep.stream.time import Duration, TimeKind

D_CONST = "@D"  # the dataset argument D of ans_i and of the default graph's triple facts
S_CONST = "@S"  # the input streams argument S; triple(s, p, o, S): merged stream triples

TRIPLE = "triple"
STRIPLE = "striple"
TRIGGER = "trigger"


def units_fn(time_unit_ms: int | None = None, kind: TimeKind = TimeKind.ABSTRACT
             ) -> Callable[[Duration], int]:
    return lambda d: d.units(kind, time_unit_ms)


def window_operator(spec: WindowSpec, units: Callable[[Duration], int] | None = None,
                    reading: str = "lars") -> Window:
    """τ(ω) of Table 1; ``reading="engine"`` follows the window's boundary (see above)."""
    units = units or units_fn()
    if spec.kind is WindowKind.NOW:
        return NOW
    if spec.kind is WindowKind.UNBOUNDED:
        return UNBOUNDED
    if spec.kind is WindowKind.COUNT:
        return TupleWindow(int(spec.count or 0))
    if spec.kind is not WindowKind.TIME:
        raise LarsError(f"the window {spec} has no LARS counterpart in Table 1")
    L = units(spec.range) if spec.range is not None else 0
    d = units(spec.step) if spec.step is not None else 1
    off = units(spec.offset) if spec.offset is not None else 0
    if d <= 0:
        raise LarsError(f"the window {spec} has a step of 0 time units")
    if reading == "lars":
        return TimeWindow(L, off, d)
    if spec.boundary is Boundary.LEFT_CLOSED:  # C-SPARQL [t'-L, t')
        return TimeWindow(L, off + 1, d)
    return TimeWindow(max(L - 1, 0), off, d)  # (t'-L, t'-off]


# ---------------------------------------------------------------- push / pull (Sec. 4.1)


def trigger(p: Program) -> list[Rule]:
    """trigger(P): every rule gets the body atom ``trigger`` (facts too, so that
    Prop. 1's "else {D}" also holds for programs with facts)."""
    return [Rule(r.head, r.body + (Lit(Atom(TRIGGER)),), r.label) for r in p]


def extensional_arities(p: Program) -> dict[str, int]:
    heads = p.heads()
    out: dict[str, int] = {}
    for r in p:
        for b in r.body:
            it = b.item
            atoms = [it] if isinstance(it, Atom) else [m.atom for m in getattr(it, "parts", ())]
            if hasattr(it, "atom"):
                atoms.append(it.atom)
            for a in atoms:
                if a.pred not in heads and a.pred not in (TRUE, TRIGGER):
                    out.setdefault(a.pred, len(a.args))
    return out


def push(p: Program, extensional: dict[str, int] | None = None) -> Program:
    """▷(P): trigger ← ⊞NOW ◇p(X) for each input predicate p (001 prints A^I; the
    intent, and Prop. 1, is the extensional predicates of the data stream)."""
    ext = extensional if extensional is not None else extensional_arities(p)
    rules = trigger(p)
    for pred, n in sorted(ext.items()):
        x = tuple(Var(f"X{i + 1}") for i in range(n))
        rules.append(Rule(Atom(TRIGGER), (Lit(WindowAtom(NOW, (Modal("diamond", Atom(pred, x)),))),)))
    return Program(rules)


def pull(p: Program, u: int) -> Program:
    """◁(P, U): trigger ← ⊞NOW @T true, T % U = 0."""
    if u <= 0:
        raise LarsError("the pulling period U must be a positive integer")
    t = Var("T")
    rules = trigger(p)
    rules.append(Rule(Atom(TRIGGER), (Lit(WindowAtom(NOW, (Modal("at", Atom(TRUE), t),))),
                                      Lit(mod_test(t, u)))))
    return Program(rules)


# ---------------------------------------------------------------- built-ins of τ


@dataclass(frozen=True)
class SparqlFilter(Builtin):
    """FILTER R over the variables of ans_2i (null: unbound; errors are false)."""

    expr: tuple
    names: tuple[str, ...]  # SPARQL variables bound in the rule

    @property
    def needs(self) -> frozenset:
        return frozenset(Var(var_name(n)) for n in self.names)

    def apply(self, b: dict) -> Iterator[dict]:
        env = {n: b[Var(var_name(n))] for n in self.names}
        if holds(self.expr, env):
            yield b

    def show(self) -> str:
        return show_expr(self.expr)


@dataclass(frozen=True)
class Merge(Builtin):
    """X = X' ⊔ X'': joining two solutions on a variable either may leave unbound
    (SPARQL's compatible mappings; Polleres' rules assume bound join variables)."""

    out: Var
    a: Var
    b: Var

    @property
    def needs(self) -> frozenset:
        return frozenset((self.a, self.b))

    @property
    def binds(self) -> frozenset:
        return frozenset((self.out,))

    def apply(self, b: dict) -> Iterator[dict]:
        x, y = b[self.a], b[self.b]
        if x == NULL:
            v = y
        elif y == NULL or x == y:
            v = x
        else:
            return
        nb = dict(b)
        nb[self.out] = v
        yield nb

    def show(self) -> str:
        return f"{self.out} = {self.a} ⊔ {self.b}"


@dataclass(frozen=True)
class Overlap(Builtin):
    """MINUS: the two solutions are compatible and share a bound variable."""

    pairs: tuple[tuple[Var, Var], ...]

    @property
    def needs(self) -> frozenset:
        return frozenset(v for p in self.pairs for v in p)

    def apply(self, b: dict) -> Iterator[dict]:
        shared = False
        for x, y in self.pairs:
            vx, vy = b[x], b[y]
            if vx == NULL or vy == NULL:
                continue
            if vx != vy:
                return
            shared = True
        if shared:
            yield b

    def show(self) -> str:
        return "compatible_overlap(" + ", ".join(f"{x}, {y}" for x, y in self.pairs) + ")"


# ---------------------------------------------------------------- τ, τ1, τ2 (Fig. 2)


def const(t: RTerm) -> RTerm:
    return Var(var_name(t.name)) if isinstance(t, Var) else t


@dataclass
class Translation:
    """τ_1 (strategy 1) or τ_2 (strategy 2) of an RSP query."""

    query: RSPQuery
    strategy: int
    windows: list[Window]
    rules: list[Rule] = field(default_factory=list)
    aux: int = 0

    def ans(self, i: int, names: Iterable[str], g: str, rename: dict[str, str] | None = None,
            present: set[str] | None = None) -> Atom:
        args: list[Term] = []
        for n in sorted(names):
            if present is not None and n not in present:
                args.append(NULL)
            else:
                args.append(Var((rename or {}).get(n, var_name(n))))
        return Atom(f"ans_{i}", tuple(args) + (g, S_CONST))

    def add(self, head: Atom, *body: Any) -> None:
        self.rules.append(Rule(head, tuple(b if isinstance(b, Lit) else Lit(b) for b in body)))

    def tr(self, V: set[str], p: Pattern, g: str, i: int) -> None:
        pv = vars_of(p)
        head = self.ans(i, V, g, present=pv)
        if isinstance(p, BGP):
            ts = list(p.triples)
            if not ts:
                self.add(head)
                return
            if len(ts) == 1:
                t = ts[0]
                args = tuple(const(x) for x in t.terms())
                self.add(head, Atom(TRIPLE, args + (g,)))
                if self.strategy == 1 and g == D_CONST and self.query.S:
                    self.add(head, Atom(TRIPLE, args + (S_CONST,)))
                return
            # a BGP is the AND of its triple patterns, nested to the right
            self.tr(V, Join(BGP((ts[0],)), BGP(tuple(ts[1:]))), g, i)
            return
        if isinstance(p, StreamGP):
            if self.strategy != 2:
                raise LarsError("STREAM patterns are translated by tau_2 only")
            s: StreamPattern = self.query.S[p.index]
            parts = tuple(Modal("diamond", Atom(STRIPLE, tuple(const(x) for x in t.terms())
                                                + (f"<{s.stream}>",)))
                          for t in p.bgp.triples)
            self.add(head, WindowAtom(self.windows[p.index], parts))
            return
        if isinstance(p, Join):
            lv, rv = vars_of(p.left), vars_of(p.right)
            self.tr(lv, p.left, g, 2 * i)
            self.tr(rv, p.right, g, 2 * i + 1)
            left, right, merges = self._join_atoms(p, lv, rv, g, i)
            self.add(head, left, right, *merges)
            return
        if isinstance(p, Union):
            lv, rv = vars_of(p.left), vars_of(p.right)
            self.tr(lv, p.left, g, 2 * i)
            self.tr(rv, p.right, g, 2 * i + 1)
            self.add(self.ans(i, V, g, present=lv), self.ans(2 * i, lv, g))
            self.add(self.ans(i, V, g, present=rv), self.ans(2 * i + 1, rv, g))
            return
        if isinstance(p, Optional):
            lv, rv = vars_of(p.left), vars_of(p.right)
            self.tr(lv, p.left, g, 2 * i)
            self.tr(rv, p.right, g, 2 * i + 1)
            left, right, merges = self._join_atoms(p, lv, rv, g, i)
            self.add(head, left, right, *merges)
            opt = Atom(f"ans'_{i}", left.args)
            self.add(opt, left, right, *merges)
            # solutions of P1 without a compatible partner: P2's own variables null
            self.add(self.ans(i, V, g, present=lv), self.ans(2 * i, lv, g),
                     Lit(Atom(f"ans'_{i}", self.ans(2 * i, lv, g).args), negated=True))
            return
        if isinstance(p, Minus):
            lv, rv = vars_of(p.left), vars_of(p.right)
            self.tr(lv, p.left, g, 2 * i)
            self.tr(rv, p.right, g, 2 * i + 1)
            shared = sorted(lv & rv)
            if not shared:
                self.add(head, self.ans(2 * i, lv, g))
                return
            lr = {n: var_name(n) + "'" for n in shared}
            rr = {n: var_name(n) + "''" for n in shared}
            left = self.ans(2 * i, lv, g)
            right = self.ans(2 * i + 1, rv, g, rename=rr)
            minus = Atom(f"ans'_{i}", left.args)
            del lr
            self.add(minus, left, right,
                     Overlap(tuple((Var(var_name(n)), Var(rr[n])) for n in shared)))
            self.add(head, left, Lit(minus, negated=True))
            return
        if isinstance(p, Filter):
            inner = vars_of(p.pattern)
            self.tr(inner, p.pattern, g, 2 * i)
            names = tuple(sorted(expr_vars(p.expr) & inner))
            self.add(self.ans(i, V, g, present=inner), self.ans(2 * i, inner, g),
                     SparqlFilter(p.expr, names))
            return
        if isinstance(p, Graph):
            self.tr(V, p.pattern, p.graph, i)
            self.add(self.ans(i, V, g, present=pv), self.ans(i, pv, p.graph))
            return
        raise LarsError(f"cannot translate {p!r}")

    def _join_atoms(self, p: Join | Optional, lv: set[str], rv: set[str], g: str, i: int
                    ) -> tuple[Atom, Atom, list[Merge]]:
        maybe = maybe_unbound(p.left) | maybe_unbound(p.right)
        renamed = sorted((lv & rv) & maybe)
        lr = {n: var_name(n) + "'" for n in renamed}
        rr = {n: var_name(n) + "''" for n in renamed}
        left = self.ans(2 * i, lv, g, rename=lr)
        right = self.ans(2 * i + 1, rv, g, rename=rr)
        merges = [Merge(Var(var_name(n)), Var(lr[n]), Var(rr[n])) for n in renamed]
        return left, right, merges

    def program(self) -> Program:
        q = self.query
        self.rules = []
        self.tr(set(q.result_vars), q.P, D_CONST, 1)
        if self.strategy == 1:
            # τ'(S): the stream triples in each window are merged into the default graph
            s_, p_, o_ = Var("S"), Var("P"), Var("O")
            for k, sp in enumerate(q.S):
                self.add(Atom(TRIPLE, (s_, p_, o_, S_CONST)),
                         WindowAtom(self.windows[k], (Modal("diamond", Atom(STRIPLE, (
                             s_, p_, o_, f"<{sp.stream}>"))),)))
        return Program(list(self.rules))


def tau(q: RSPQuery, strategy: int, *, reading: str = "lars",
        units: Callable[[Duration], int] | None = None) -> Program:
    windows = [window_operator(s.window, units, reading) for s in q.S]
    return Translation(q, strategy, windows).program()


def tau1(q: RSPQuery, *, reading: str = "lars",
         units: Callable[[Duration], int] | None = None) -> Program:
    """τ_1 (C-SPARQL: stream triples merged into the default graph); apply to cs(Q)."""
    return tau(q, 1, reading=reading, units=units)


def tau2(q: RSPQuery, *, reading: str = "lars",
         units: Callable[[Duration], int] | None = None) -> Program:
    """τ_2 (CQELS: stream graph patterns); apply to a member of cq(Q)."""
    return tau(q, 2, reading=reading, units=units)


# ---------------------------------------------------------------- data


def _nt(term: object) -> str:
    return str(term)


def triple_atom(t: ox.Triple | tuple, graph: str) -> Atom:
    s, p, o = (t.subject, t.predicate, t.object) if isinstance(t, ox.Triple) else t
    return Atom(TRIPLE, (_nt(s), _nt(p), _nt(o), graph))


def striple_atom(t: ox.Triple | tuple, stream: str) -> Atom:
    s, p, o = (t.subject, t.predicate, t.object) if isinstance(t, ox.Triple) else t
    return Atom(STRIPLE, (_nt(s), _nt(p), _nt(o), f"<{stream}>"))


def background(q: RSPQuery, graphs: Mapping[str, Iterable[ox.Triple | tuple]]) -> frozenset[Atom]:
    """B: triple(s, p, o, D) for the default graph (the FROM graphs, else "default"),
    triple(s, p, o, <g>) for the named graphs."""
    out: set[Atom] = set()
    default = list(q.default_graphs) or (["default"] if "default" in graphs else [])
    for g in default:
        out |= {triple_atom(t, D_CONST) for t in graphs.get(g, ())}
    for g in q.named_graphs:
        out |= {triple_atom(t, f"<{g}>") for t in graphs.get(g, ())}
    return frozenset(out)


def data_stream_of(events: Iterable[Event], lo: int = 0, hi: int | None = None) -> Stream:
    """D from rsep events (point events at their time): striple(s, p, o, <stream>)."""
    v: dict[int, set[Atom]] = {}
    for e in events:
        v.setdefault(e.time, set()).update(striple_atom(t, e.stream) for t in e.triples)
    top = hi if hi is not None else max(v, default=lo)
    return Stream(lo, top, {t: frozenset(a) for t, a in v.items()})


def query_input(events: Iterable[Event], q: RSPQuery) -> list[Event]:
    """The events of the streams q reads: D for q. An event of another stream is no input
    of q (CQELS is not triggered by it), so it is no time point of ttp / prev either."""
    streams = {s.stream for s in q.S}
    return [e for e in events if e.stream in streams]


def solutions(atoms: Iterable[Atom], q: RSPQuery, pred: str = "ans_1") -> set[tuple]:
    """ans_1 atoms as solution mappings: sorted (var, term) pairs without nulls."""
    names = sorted(q.result_vars)
    out = set()
    for a in atoms:
        if a.pred == pred:
            out.add(tuple((n, v) for n, v in zip(names, a.args, strict=False) if v != NULL))
    return out


__all__ = ["window_operator", "push", "pull", "trigger", "tau1", "tau2", "tau", "background",
           "data_stream_of", "query_input", "solutions", "TP"]
