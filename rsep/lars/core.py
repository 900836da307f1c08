"""LARS (001 Sec. 2.3-2.4): streams, window functions and operators, modalities, rules,
programs: their safety and stratification.

Terms are constants (str or int) or :class:`Var`. Programs outside the fragment
(unsafe rules, negation through recursion) are refused with :class:`LarsError`;
:mod:`rsep.lars.answer` computes their answer streams.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

TRUE = "true"  # the logical constant true: holds at every time point of a timeline
NULL = "null"  # an unbound SPARQL variable, as in Polleres' translation


class LarsError(ValueError):
    """A program or stream LARS cannot evaluate (outside the supported fragment)."""


@dataclass(frozen=True, order=True)
class Var:
    name: str

    def __str__(self) -> str:
        return self.name


Term = str | int | Var


@dataclass(frozen=True, order=True)
class Atom:
    pred: str
    args: tuple = ()

    @property
    def ground(self) -> bool:
        return not any(isinstance(a, Var) for a in self.args)

    def vars(self) -> set[Var]:
        return {a for a in self.args if isinstance(a, Var)}

    def subst(self, b: dict) -> Atom:
        return Atom(self.pred, tuple(b.get(a, a) if isinstance(a, Var) else a for a in self.args))

    def __str__(self) -> str:
        if not self.args:
            return self.pred
        return f"{self.pred}({', '.join(show_term(a) for a in self.args)})"


def show_term(a: Term) -> str:
    """Readable terms, as 001 prints them: IRIs by their local name in quotes, numbers bare."""
    if isinstance(a, Var):
        return a.name
    if a == "@D":
        return "D"
    if a == "@S":
        return "S"
    if isinstance(a, str):
        m = re.match(r'^"(.*)"\^\^<http://www.w3.org/2001/XMLSchema#(integer|decimal|double)>$', a)
        if m:
            return m.group(1)
        if a.startswith("<") and a.endswith(">"):
            local = re.split(r"[/#]", a[1:-1].rstrip("/#"))[-1]
            return f'"{local}"' if local else a
    return str(a)


# ---------------------------------------------------------------- streams


@dataclass(frozen=True)
class Stream:
    """S = (T, v) (Def. 1): a timeline T = [lo, hi] and an evaluation function v."""

    lo: int
    hi: int
    v: dict = field(default_factory=dict)  # int -> frozenset[Atom]; absent: empty

    def at(self, t: int) -> frozenset:
        return self.v.get(t, frozenset()) if self.lo <= t <= self.hi else frozenset()

    def times(self) -> list[int]:
        return sorted(t for t, a in self.v.items() if a and self.lo <= t <= self.hi)

    def ats(self) -> frozenset:
        """Ats(S): every atom at some time point of the timeline."""
        out: set = set()
        for t in self.times():
            out |= self.v[t]
        return frozenset(out)

    def project(self, preds: Iterable[str]) -> Stream:
        ps = set(preds)
        return Stream(self.lo, self.hi, {t: frozenset(a for a in s if a.pred in ps)
                                         for t, s in self.v.items()})

    def window(self, lo: int, hi: int) -> Stream:
        lo, hi = max(lo, self.lo), min(hi, self.hi)
        return Stream(lo, hi, {t: s for t, s in self.v.items() if lo <= t <= hi and s})

    def with_atoms(self, t: int, atoms: Iterable[Atom]) -> Stream:
        v = dict(self.v)
        v[t] = frozenset(v.get(t, frozenset()) | set(atoms))
        return Stream(self.lo, self.hi, v)

    def difference(self, other: Stream) -> Stream:
        """S1 \\ S2 pointwise (Sec. 5.1)."""
        return Stream(self.lo, self.hi, {t: s - other.at(t) for t, s in self.v.items()})

    def union(self, other: Stream) -> Stream:
        v = dict(self.v)
        for t, s in other.v.items():
            v[t] = frozenset(v.get(t, frozenset()) | s)
        return Stream(min(self.lo, other.lo), max(self.hi, other.hi), v)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stream):
            return NotImplemented
        return (self.lo, self.hi) == (other.lo, other.hi) and \
            {t: s for t, s in self.v.items() if s} == {t: s for t, s in other.v.items() if s}

    def __hash__(self) -> int:
        return hash((self.lo, self.hi))


def data_stream(lo: int, hi: int, items: dict[int, Iterable[Atom]]) -> Stream:
    return Stream(lo, hi, {t: frozenset(a) for t, a in items.items()})


# ---------------------------------------------------------------- window functions


class Window:
    """A window function w (Def. 2) behind a window operator."""

    def apply(self, s: Stream, t: int) -> Stream:  # pragma: no cover - interface
        raise NotImplementedError

    def show(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class TimeWindow(Window):
    """Time-based window ⊞_τ^{range, offset, step}: with t' = floor(t/step)*step, the
    substream on [t' - range, t' - offset] (LARS' ⊞^{l,0,d} is offset 0). range may be
    math.inf (⊞^∞, unbounded); range 0 is ⊞_NOW."""

    range: float
    offset: int = 0
    step: int = 1

    def bounds(self, s: Stream, t: int) -> tuple[int, int]:
        tp = (t // self.step) * self.step
        lo = s.lo if self.range == math.inf else tp - int(self.range)
        return lo, tp - self.offset

    def apply(self, s: Stream, t: int) -> Stream:
        lo, hi = self.bounds(s, t)
        return s.window(lo, hi)

    def show(self) -> str:
        if self.range == 0 and self.offset == 0 and self.step == 1:
            return "⊞NOW"
        r = "∞" if self.range == math.inf else str(int(self.range))
        if self.offset == 0 and self.step == 1:
            return f"⊞^{r}"
        return f"⊞^{{{r},{self.offset},{self.step}}}"


NOW = TimeWindow(0)
UNBOUNDED = TimeWindow(math.inf)


@dataclass(frozen=True)
class TupleWindow(Window):
    """Tuple-based window ⊞_#^n: the shortest interval [t', t] holding the latest n atoms;
    at t' only as many atoms as are still needed, taken in descending atom order (a
    deterministic tie-break: LARS leaves the choice open)."""

    n: int

    def apply(self, s: Stream, t: int) -> Stream:
        v: dict = {}
        need = self.n
        lo = t
        for u in sorted((u for u in s.times() if u <= t), reverse=True):
            if need <= 0:
                break
            atoms = sorted(s.v[u], reverse=True)
            take = atoms[:need]
            v[u] = frozenset(take)
            need -= len(take)
            lo = u
        return Stream(max(lo, s.lo) if v else t, min(t, s.hi), v)

    def show(self) -> str:
        return f"⊞#^{self.n}"


# ---------------------------------------------------------------- formulas


@dataclass(frozen=True)
class Modal:
    """◇a, □a or @_T a inside a window operator."""

    op: str  # "diamond" | "box" | "at"
    atom: Atom
    time: Term | None = None  # for "at"

    def show(self) -> str:
        if self.op == "diamond":
            return f"◇{self.atom}"
        if self.op == "box":
            return f"□{self.atom}"
        assert self.time is not None  # (an "at" has its time)
        return f"@{show_term(self.time)} {self.atom}"

    def vars(self) -> set[Var]:
        return self.atom.vars() | ({self.time} if isinstance(self.time, Var) else set())


@dataclass(frozen=True)
class WindowAtom:
    """⊞ ⋆a, or ⊞(⋆a ∧ ⋆b ∧ ...) (τ2's stream graph pattern): a window operator over a
    conjunction of modal atoms, all evaluated on the same window."""

    window: Window
    parts: tuple[Modal, ...]

    def show(self) -> str:
        inner = " ∧ ".join(p.show() for p in self.parts)
        return f"{self.window.show()} {inner}" if len(self.parts) == 1 else \
            f"{self.window.show()}({inner})"

    def vars(self) -> set[Var]:
        return set().union(*(p.vars() for p in self.parts))

    def preds(self) -> set[str]:
        return {p.atom.pred for p in self.parts}


@dataclass(frozen=True)
class AtAtom:
    """@_T a without a window: a holds at T (T in the timeline)."""

    time: Term
    atom: Atom

    def show(self) -> str:
        return f"@{show_term(self.time)} {self.atom}"

    def vars(self) -> set[Var]:
        return self.atom.vars() | ({self.time} if isinstance(self.time, Var) else set())

    def preds(self) -> set[str]:
        return {self.atom.pred}


class Builtin:
    """A built-in body element: needs ``needs`` bound, may bind ``binds``; ``apply``
    gives the extended bindings (none: the element is false)."""

    @property
    def needs(self) -> frozenset:
        return frozenset()

    @property
    def binds(self) -> frozenset:
        return frozenset()

    def apply(self, b: dict) -> Iterator[dict]:  # pragma: no cover - interface
        raise NotImplementedError

    def show(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Test(Builtin):
    """A condition on bound variables: ``fn(*values)`` must be true."""

    args: tuple
    fn: Callable[..., bool] = field(compare=False)
    text: str = ""

    @property
    def needs(self) -> frozenset:
        return frozenset(a for a in self.args if isinstance(a, Var))

    def apply(self, b: dict) -> Iterator[dict]:
        if self.fn(*(b[a] if isinstance(a, Var) else a for a in self.args)):
            yield b

    def show(self) -> str:
        return self.text


def cmp_test(left: Term, op: str, right: Term) -> Test:
    """``left op right`` on integers (op in =, !=, <, <=, >, >=), and ``X % U = 0``."""
    ops = {"=": lambda x, y: x == y, "!=": lambda x, y: x != y, "<": lambda x, y: x < y,
           "<=": lambda x, y: x <= y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}
    f = ops[op]
    return Test((left, right), f, f"{show_term(left)} {op} {show_term(right)}")


def mod_test(x: Term, u: int) -> Test:
    return Test((x,), lambda v: isinstance(v, int) and v % u == 0, f"{show_term(x)} % {u} = 0")


@dataclass(frozen=True)
class Lit:
    """A body element, possibly under ``not``: an atom, a window atom, @_T a or a built-in."""

    item: Any  # Atom | WindowAtom | AtAtom | Builtin
    negated: bool = False

    def show(self) -> str:
        s = self.item.show() if not isinstance(self.item, Atom) else str(self.item)
        return f"not {s}" if self.negated else s

    def vars(self) -> set[Var]:
        it = self.item
        if isinstance(it, Builtin):
            return set(it.needs) | set(it.binds)
        return it.vars()

    def preds(self) -> set[str]:
        it = self.item
        if isinstance(it, Atom):
            return {it.pred}
        if isinstance(it, Builtin):
            return set()
        return it.preds()


@dataclass(frozen=True)
class Rule:
    head: Atom
    body: tuple[Lit, ...] = ()
    label: str = ""

    def show(self) -> str:
        if not self.body:
            return f"{self.head}."
        return f"{self.head} ← {', '.join(b.show() for b in self.body)}."

    def __str__(self) -> str:
        return self.show()


@dataclass
class Program:
    rules: list[Rule] = field(default_factory=list)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def heads(self) -> set[str]:
        return {r.head.pred for r in self.rules}

    def body_preds(self) -> set[str]:
        return set().union(*(b.preds() for r in self.rules for b in r.body)) if self.rules else set()

    @property
    def positive(self) -> bool:
        return not any(b.negated for r in self.rules for b in r.body)

    def show(self) -> str:
        return "\n".join(r.show() for r in self.rules)

    def strata(self) -> list[list[Rule]]:
        """Rules grouped by stratum, lowest first; LarsError if not stratified."""
        return _stratify(self)


# ---------------------------------------------------------------- safety and stratification


def check_safe(r: Rule) -> list[Lit]:
    """Order the body for evaluation (positive atoms in order, built-ins as soon as their
    inputs are bound, negation last) and check that every variable gets bound."""
    pos = [x for x in r.body if not x.negated and not isinstance(x.item, Builtin)]
    builtins = [x for x in r.body if isinstance(x.item, Builtin)]
    negs = [x for x in r.body if x.negated and not isinstance(x.item, Builtin)]
    order: list[Lit] = []
    bound: set = set()

    def flush() -> None:
        changed = True
        while changed:
            changed = False
            for x in list(builtins):
                if set(x.item.needs) <= bound and (not x.negated or set(x.item.binds) <= bound):
                    order.append(x)
                    builtins.remove(x)
                    if not x.negated:
                        bound.update(x.item.binds)
                    changed = True

    flush()
    for x in pos:
        order.append(x)
        bound |= x.vars()
        flush()
    if builtins:
        raise LarsError(f"unsafe rule (a built-in's variables are never bound): {r}")
    for x in negs:
        if not x.vars() <= bound:
            raise LarsError(f"unsafe rule (variables of a negated atom not bound): {r}")
        order.append(x)
    missing = r.head.vars() - bound
    if missing:
        raise LarsError(f"unsafe rule (head variables {sorted(v.name for v in missing)} not bound "
                        f"by the body): {r}")
    return order


def _stratify(p: Program) -> list[list[Rule]]:
    heads = p.heads()
    edges: dict[str, set[tuple[str, bool]]] = {h: set() for h in heads}
    for r in p.rules:
        for b in r.body:
            for q in b.preds():
                if q in heads:
                    edges[r.head.pred].add((q, b.negated))
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _ in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    for v in sorted(heads):
        if v not in index:
            visit(v)
    comp_of = {v: i for i, c in enumerate(comps) for v in c}
    for v, es in edges.items():
        for w, neg in es:
            if neg and comp_of[v] == comp_of[w]:
                raise LarsError(f"the program is not stratified: {v} depends negatively on {w} "
                                "within a cycle (outside the supported fragment: positive and "
                                "stratified programs)")
    # Tarjan yields components in reverse topological order: dependencies first
    level = {p_: i for i, c in enumerate(comps) for p_ in c}
    out: list[list[Rule]] = [[] for _ in comps]
    for r in p.rules:
        out[level[r.head.pred]].append(r)
    return [s for s in out if s]
