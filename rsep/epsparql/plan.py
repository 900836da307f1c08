"""The unrestricted evaluator's stores and its compiled plan (rsep.epsparql.delta's Delta).

:class:`Keyed` keeps a node's earlier solutions, bucketed by its parent's join key (EDBC's
goals). A tree made of one-pattern BGPs, SEQ, FILTER and SELECT only (EP-SPARQL's event
patterns) is compiled once (:func:`compile_plan`) into steps (:class:`Step`) in post-order, each
reading its operands' solutions by position; :func:`run` evaluates them at an instant,
skipping every step none of whose leaves matches an occurrence of the instant."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import cast

from rsep.algebra.epsparql import BGP, INF, Expr, Filter, Node, Project, SeqJoin, nodes, variables
from rsep.epsparql.expr import Fallback, Fn, holds
from rsep.epsparql.matcher import Occurrence, OnePattern, Solution, combine, compatible
from rsep.epsparql.operators import ExprEvaluator, project
from rsep.stream.time import TimeKind

# a node's operator, as a small int (a plan's dispatch, and Delta._delta's: no isinstance
# chain): one triple pattern, FILTER, SELECT, SEQ, anything else
ONE, FILTER, PROJECT, SEQ, OTHER = range(5)


def kind_of(n: Node) -> int:
    if isinstance(n, BGP) and len(n.patterns) == 1:
        return ONE
    if isinstance(n, SeqJoin):
        return SEQ
    if isinstance(n, Filter):
        return FILTER
    if isinstance(n, Project):
        return PROJECT
    return OTHER


class Keyed:
    """A node's earlier solutions, bucketed by the values of its parent's join key (the
    variables both operands always bind); each bucket is in t_omega order (solutions are
    added instant by instant), with its t_omegas beside it for bisection."""

    def __init__(self, key: tuple[str, ...]) -> None:
        self.key = key
        self.buckets: dict[tuple, list[Solution]] = {}
        self.ends: dict[tuple, list[float]] = {}  # per bucket: its solutions' t_omega
        self.n = 0
        self.kept = 0

    def of(self, s: Solution) -> tuple:
        key = self.key
        if not key:
            return ()
        if len(key) == 1:  # the common case: no dict of mu
            v = key[0]
            for k, x in s.mu:
                if k == v:
                    return (x,)
            return (None,)
        d = dict(s.mu)
        return tuple([d.get(v) for v in key])

    def add(self, sols: Iterable[Solution]) -> None:
        for s in sols:
            k = self.of(s)
            b = self.buckets.get(k)
            if b is None:
                b = self.buckets[k] = []
                self.ends[k] = []
            b.append(s)
            self.ends[k].append(s.tw)
            self.n += 1

    def get(self, k: tuple, lo: float = -INF) -> list[Solution]:
        """The bucket's solutions starting at or after lo."""
        return self.before(k, INF, lo)

    def before(self, k: tuple, t: float, lo: float = -INF) -> list[Solution]:
        """The bucket's solutions ending before t and starting at or after lo (older ones
        wait for the amortised pruning; they could not be part of a future solution)."""
        b = self.buckets.get(k)
        if not b:
            return []
        e = self.ends[k]
        i = bisect.bisect_left(e, lo) if lo != -INF else 0
        j = bisect.bisect_left(e, t) if t != INF else len(b)
        return [s for s in b[i:j] if s.ta >= lo] if lo != -INF else b[i:j]

    def prune(self, lo: float) -> None:
        if self.n < 2 * self.kept + 64:
            return
        n = 0
        for k in list(self.buckets):
            b = [s for s in self.buckets[k] if s.ta >= lo]
            if b:
                self.buckets[k] = b
                self.ends[k] = [s.tw for s in b]
                n += len(b)
            else:
                del self.buckets[k]
                del self.ends[k]
        self.n = self.kept = n

    def all(self) -> list[Solution]:
        return [s for b in self.buckets.values() for s in b]


_MAX_STEPS = 62  # a plan's leaves are bits of one mask


def _bit(k: object) -> int:
    """``1 << k`` as a Python int: compiled, ``1 << len(...)`` is C's shift of an ``int``,
    which wraps from the 32nd leaf on (the mask itself is 64 bits wide)."""
    one: object = 1
    return cast(int, one) << cast(int, k)


class Step:
    """One node of a compiled plan (:func:`compile_plan`): its operator, its operands'
    positions in the plan, the leaves under it (a bit mask) and what its operator reads."""

    __slots__ = ("kind", "node", "a", "b", "mask", "one", "cond", "fn", "fn_for", "keep", "same", "old",
                 "chk", "left", "store")

    def __init__(self, kind: int, node: Node) -> None:
        self.kind = kind
        self.node = node
        self.a = self.b = -1
        self.mask = 0
        self.one: OnePattern | None = None
        self.cond: Expr | None = None
        self.fn: Fn | None = None  # FILTER: cond compiled (None: ExprEvaluator.filter decides)
        self.fn_for: object = Step  # the kind of time fn is for (none yet)
        self.keep: frozenset[str] | None = None  # SELECT: the variables kept (None: project())
        self.same = False  # SELECT: keeps every variable its operand binds (mu as it is)
        self.old: Keyed | None = None  # SEQ: its left operand's earlier solutions
        self.chk = False  # SEQ: a compatibility check beyond the join key needed
        self.left = 0  # SEQ: id of the left operand (its horizon's key)
        self.store: Keyed | None = None  # where commit keeps the step's solutions, if anywhere


def run(plan: list[Step], fresh: list[Occurrence], hit: int, tau: int, hs: dict[int, float],
        ex: ExprEvaluator) -> list[list[Solution]]:
    """Each step's solutions ending at tau, in plan order (operands first): Delta._d's
    operators for the plan's fragment, without its memo (a step reads its operands by
    position) and with no step evaluated none of whose leaves matches an occurrence
    of the instant (``hit``: the leaves' bits that do)."""
    vals: list[list[Solution]] = []
    for st in plan:
        out: list[Solution] = []
        if st.mask & hit:
            kind = st.kind
            # (asserts, not typing.cast: compiled, a cast is still a Python call per event)
            if kind == ONE:
                one = st.one
                assert one is not None
                out = one.match(fresh)
            elif kind == SEQ:
                db = vals[st.b]
                if db:
                    lo = tau - hs.get(st.left, INF)
                    oa = st.old
                    assert oa is not None
                    chk = st.chk
                    for y in db:
                        for x in oa.before(oa.of(y), y.ta, lo):
                            if not chk or compatible(x.mu, y.mu):
                                out.append(combine(x, y))
            else:
                got = vals[st.a]
                if got:
                    out = run_step(st, got, ex)
        vals.append(out)
    return vals


def run_step(st: Step, got: list[Solution], ex: ExprEvaluator) -> list[Solution]:
    """A FILTER or SELECT step of a plan over its operand's solutions ``got`` (not empty)."""
    if st.kind == FILTER:
        cond = st.cond
        assert cond is not None
        if st.fn_for is not ex.kind:
            st.fn = ex.compiled(cond)
            st.fn_for = ex.kind
        return _filtered(st.fn, cond, got, ex)
    if st.same:
        return got
    if st.keep is not None:
        keep = st.keep
        return [Solution(tuple([kv for kv in y.mu if kv[0] in keep]), y.ta, y.tw, y.just) for y in got]
    return project(cast(Project, st.node), got, ex)


def _filtered(f: Fn | None, e: Expr, sols: list[Solution], ex: ExprEvaluator) -> list[Solution]:
    """ex.filter(e, sols), with e compiled beforehand (``f``; None: not compiled)."""
    if f is not None:
        try:
            keep = holds(f, [(s.mu, s.ta, s.tw) for s in sols], ex.kind is TimeKind.DATETIME)
        except Fallback:
            return ex.filter(e, sols)
        return [s for s, k in zip(sols, keep, strict=True) if k]
    return ex.filter(e, sols)


def compile_plan(root: Node, kinds: dict[int, int], statics: dict[int, bool],
                 ones: dict[int, OnePattern], done: dict[int, Keyed],
                 compat: dict[int, bool]) -> tuple[list[Step], dict[str, int], int] | None:
    """``root``'s tree as steps in post-order, each reading its operands' results by
    position, when it is made of one-pattern BGPs, SEQ, FILTER and SELECT only (EP-SPARQL's
    event patterns; anything else, or more leaves than a mask holds: None, and Delta's
    generic evaluator runs it), with the leaves' bits of each constant predicate and those
    of the leaves with a variable one. ``kinds``, ``statics``, ``ones``, ``done`` and
    ``compat`` are the evaluator's, per node id: its kind, whether it is timeless, its
    one pattern, the store of its solutions and whether its join needs a check beyond
    the key."""
    steps: list[Step] = []
    at: dict[int, int] = {}  # a node met twice (a shared subtree) is one step
    masks: dict[int, tuple[int, object]] = {}  # leaf -> its bit, its predicate
    # the stores a step reads: a SEQ's left operand's (a right operand's solutions are
    # read at their instant only, so they are not kept)
    read = {id(n.left) for n in nodes(root) if isinstance(n, SeqJoin)}

    def walk(n: Node) -> int | None:
        k = id(n)
        if k in at:
            return at[k]
        kind = kinds[k]
        if statics[k] or kind == OTHER or len(steps) >= _MAX_STEPS:
            return None
        st = Step(kind, n)
        if kind == ONE:
            st.one = ones[k]
            st.mask = _bit(len(masks))
            masks[k] = (st.mask, cast(BGP, n).patterns[0][1])
        else:
            kids = [walk(x) for x in n.kids]
            if any(i is None for i in kids):
                return None
            st.a = cast(int, kids[0])
            st.mask = steps[st.a].mask
            if kind == SEQ:
                st.b = cast(int, kids[1])
                st.mask |= steps[st.b].mask
                st.old = done[id(cast(SeqJoin, n).left)]
                st.chk = compat[k]
                st.left = id(cast(SeqJoin, n).left)
            elif kind == FILTER:
                st.cond = cast(Filter, n).cond
            else:
                pr = cast(Project, n)
                # SELECT of variables only: the mu restricted to them, here
                st.keep = None if pr.items is None or pr.distinct or any(
                    e is not None for _, e in pr.items) else frozenset(v for v, _ in pr.items)
                # ... and nothing to restrict when they include every variable below
                st.same = st.keep is not None and st.keep.issuperset(variables(pr.arg))
        st.store = done.get(k) if k in read else None
        at[k] = len(steps)
        steps.append(st)
        return at[k]

    if walk(root) is None:
        return None
    pmask: dict[str, int] = {}
    anymask = 0
    for m, p in masks.values():
        if isinstance(p, str):
            pmask[p] = pmask.get(p, 0) | m
        else:
            anymask |= m
    return steps, pmask, anymask
