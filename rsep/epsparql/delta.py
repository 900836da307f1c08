"""The incremental evaluator of EP-SPARQL's unrestricted setting: at each instant, each node's
solutions ending then, from its operands' earlier solutions and theirs at the instant."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import cast

from rsep.algebra.epsparql import (
    BGP,
    INF,
    Background,
    Binary,
    EqJoin,
    EqLeftJoin,
    Expr,
    Extend,
    Filter,
    Join,
    LeftJoin,
    Minus,
    Node,
    OrderBy,
    Path,
    Project,
    SeqJoin,
    SeqRightJoin,
    Union,
    nodes,
    static,
    variables,
)
from rsep.epsparql.expr import Fallback, Fn, holds
from rsep.epsparql.matcher import (
    Occurrence,
    OnePattern,
    Solution,
    Source,
    _bind,
    _join_order,
    _match,
    combine,
    compatible,
    match_bgp,
)
from rsep.epsparql.reference import (
    ExprEvaluator,
    World,
    evaluate,
    extend_solutions,
    left_join,
    no_later,
    path_solutions,
    project,
    removes,
)
from rsep.epsparql.rewrites import certain
from rsep.stream.time import TimeKind


def _tw(s: Solution) -> float:
    return s.tw


_ONE, _FILTER, _PROJECT, _SEQ, _OTHER = range(5)


def _kind(n: Node) -> int:
    if isinstance(n, BGP) and len(n.patterns) == 1:
        return _ONE
    if isinstance(n, SeqJoin):
        return _SEQ
    if isinstance(n, Filter):
        return _FILTER
    if isinstance(n, Project):
        return _PROJECT
    return _OTHER


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


class _Step:
    """One node of a compiled plan (:meth:`Delta._compile`): its operator, its operands'
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
        self.fn_for: object = _Step  # the kind of time fn is for (none yet)
        self.keep: frozenset[str] | None = None  # SELECT: the variables kept (None: project())
        self.same = False  # SELECT: keeps every variable its operand binds (mu as it is)
        self.old: Keyed | None = None  # SEQ: its left operand's earlier solutions
        self.chk = False  # SEQ: a compatibility check beyond the join key needed
        self.left = 0  # SEQ: id of the left operand (its horizon's key)
        self.store: Keyed | None = None  # where commit keeps the step's solutions, if anywhere


def run(plan: list[_Step], fresh: list[Occurrence], hit: int, tau: int, hs: dict[int, float],
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
            if kind == _ONE:
                one = st.one
                assert one is not None
                out = one.match(fresh)
            elif kind == _SEQ:
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
                    out = _step(st, got, ex)
        vals.append(out)
    return vals


def _step(st: _Step, got: list[Solution], ex: ExprEvaluator) -> list[Solution]:
    """A FILTER or SELECT step of a plan over its operand's solutions ``got`` (not empty)."""
    if st.kind == _FILTER:
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


# each(): how many solutions the operators above the root's producer read at a time, and
# how many of a reordered semi-naive term's solutions are sorted in memory (more: the term
# is enumerated again in pattern order, which gives the sorted order as it goes)
_BATCH = 4096
_SORTED = 1 << 16


def _bgp_solutions(patterns: tuple, sources: Sequence[Source], order: list[int], seqs: list[int]) -> Iterator[Solution]:
    """match_bgp's solutions as they are found (in ``order``), for each(); ``seqs`` holds the
    current solution's occurrences, in pattern order."""
    m = len(patterns)

    def rec(k: int, mu: dict[str, str], ta: float, tw: float, just: frozenset[int]) -> Iterator[Solution]:
        if k == m:
            yield Solution(tuple(sorted((x, v) for x, v in mu.items() if not x.startswith("_b"))), ta, tw, just)
            return
        i = order[k]
        tp = patterns[i]
        s, p, o = (_bind(t, mu) for t in tp)
        for oc in sources[i](s, p, o):
            mm = _match(tp, (oc.s, oc.p, oc.o), mu)
            if mm is not None:
                seqs[i] = oc.seq
                yield from rec(k + 1, mm, min(ta, oc.ta), max(tw, oc.tw), just | {oc.item})

    return rec(0, {}, INF, -INF, frozenset())


def _bgp_term(patterns: tuple, sources: Sequence[Source], first: int) -> Iterator[Solution]:
    """match_bgp(patterns, sources, first=first), lazily and in the same order: a term whose
    join order is not the patterns' is sorted when small, else enumerated in pattern order
    (every source lists occurrences in the order they were added, as match_bgp relies on)."""
    m = len(patterns)
    seqs = [0] * m
    order = _join_order(patterns, first)
    if order == list(range(m)):
        yield from _bgp_solutions(patterns, sources, order, seqs)
        return
    buf: list[tuple[tuple[int, ...], Solution]] = []
    for sol in _bgp_solutions(patterns, sources, order, seqs):
        buf.append((tuple(seqs), sol))
        if len(buf) > _SORTED:
            break
    else:
        buf.sort(key=lambda x: x[0])
        for _, sol in buf:
            yield sol
        return
    del buf
    yield from _bgp_solutions(patterns, sources, list(range(m)), seqs)


def _chain(root: Node, statics: dict[int, bool]) -> tuple[list[Node], Node] | None:
    """The operators from the root down to the node producing its solutions, when each() can
    produce them lazily: FILTER, BIND and SELECT without DISTINCT (each reads a solution
    alone) over a join, a SEQ or a BGP of several patterns (None: anything else)."""
    chain: list[Node] = []
    n = root
    while isinstance(n, (Filter, Extend)) or (isinstance(n, Project) and not n.distinct):
        chain.append(n)
        n = n.arg
    if statics[id(n)] or not (isinstance(n, (Join, SeqJoin)) or (isinstance(n, BGP) and len(n.patterns) > 1)):
        return None
    return chain, n


class Delta:
    """Unrestricted setting, push-based: ``at(tau)`` gives the solutions of each node with
    t_omega == tau, from the node's solutions before tau (kept per operand, bucketed by
    the join key, EDBC's goals) and its children's.

    Call ``at(tau)`` as often as the occurrences at tau change (rule rounds), then
    ``commit(tau)`` once tau is complete.
    """

    def __init__(self, root: Node, world: World, hs: dict[int, float] | None = None) -> None:
        self.root = root
        self.w = world
        self.hs = hs or {}  # per node: its horizon (see :func:`horizons`); none: keep all
        self._memo: dict[int, list[Solution]] = {}
        self._at: tuple[int, int] | None = None  # (tau, store version) the memo is for
        self.done: dict[int, Keyed] = {}  # only the operands of binary operators read theirs
        self._bg: dict[int, Keyed] = {}
        self._compat: dict[int, bool] = {}  # per binary node: a check beyond the key needed
        self._statics: dict[int, bool] = {id(n): static(n) for n in nodes(root)}
        # per node: its operator, as a small int (_delta's dispatch, no isinstance chain)
        self._kind: dict[int, int] = {id(n): _kind(n) for n in nodes(root)}
        self._one: dict[int, OnePattern] = {id(n): OnePattern(n.patterns[0]) for n in nodes(root)
                                            if isinstance(n, BGP) and len(n.patterns) == 1}
        # per node: the one-pattern BGPs under it when every other leaf under it is timeless
        # (None otherwise); a node none of whose leaves matches an occurrence of the instant
        # has no solutions ending then (no operator makes some from none), so it is not
        # evaluated: with one-pattern leaves an event reaches only the nodes above its own
        self._leaves: dict[int, frozenset[int] | None] = {}
        self._by_pred: dict[str, list[int]] = {}  # constant predicate -> its leaves
        self._any_pred: list[int] = []  # leaves with a variable predicate
        self._leaves_of(root)
        self._hit: set[int] = set()
        for n in nodes(root):
            if isinstance(n, Binary):
                k = tuple(sorted(certain(n.left) & certain(n.right)))
                shared = set(variables(n.left)) & set(variables(n.right))
                self._compat[id(n)] = bool(shared - set(k))
                for kid in n.kids:
                    self.done[id(kid)] = Keyed(k)
        self._plan = self._compile()
        self._vals: list[list[Solution]] = []  # the plan's: per step, its solutions at tau
        # each(): the operators above the root's producer, root first, and the producer
        # (None: each() reads at()); neither is read by another node, so commit keeps none
        # of their solutions and each() need not list them
        self._lazy = _chain(root, self._statics)
        self._bits = 0  # the plan's leaves matching an occurrence at the instant evaluated
        # the plan's stores for the horizons hs: (hs, [(step, store, horizon)])
        self._kept: tuple[dict[int, float], list[tuple[int, Keyed, float]]] | None = None
        self._pruned: tuple[dict[int, float], list[tuple[Keyed, float]]] | None = None

    def _compile(self) -> list[_Step] | None:
        """The tree as steps in post-order, each reading its operands' results by position,
        when it is made of one-pattern BGPs, SEQ, FILTER and SELECT only (EP-SPARQL's event
        patterns; anything else, or more leaves than a mask holds: the generic _d below)."""
        steps: list[_Step] = []
        at: dict[int, int] = {}  # a node met twice (a shared subtree) is one step
        masks: dict[int, tuple[int, object]] = {}  # leaf -> its bit, its predicate
        # the stores a step reads: a SEQ's left operand's (a right operand's solutions are
        # read at their instant only, so they are not kept)
        read = {id(n.left) for n in nodes(self.root) if isinstance(n, SeqJoin)}

        def walk(n: Node) -> int | None:
            k = id(n)
            if k in at:
                return at[k]
            kind = self._kind[k]
            if self._statics[k] or kind == _OTHER or len(steps) >= _MAX_STEPS:
                return None
            st = _Step(kind, n)
            if kind == _ONE:
                st.one = self._one[k]
                st.mask = _bit(len(masks))
                masks[k] = (st.mask, cast(BGP, n).patterns[0][1])
            else:
                kids = [walk(x) for x in n.kids]
                if any(i is None for i in kids):
                    return None
                st.a = cast(int, kids[0])
                st.mask = steps[st.a].mask
                if kind == _SEQ:
                    st.b = cast(int, kids[1])
                    st.mask |= steps[st.b].mask
                    st.old = self.done[id(cast(SeqJoin, n).left)]
                    st.chk = self._compat[k]
                    st.left = id(cast(SeqJoin, n).left)
                elif kind == _FILTER:
                    st.cond = cast(Filter, n).cond
                else:
                    pr = cast(Project, n)
                    # SELECT of variables only: the mu restricted to them, here
                    st.keep = None if pr.items is None or pr.distinct or any(
                        e is not None for _, e in pr.items) else frozenset(v for v, _ in pr.items)
                    # ... and nothing to restrict when they include every variable below
                    st.same = st.keep is not None and st.keep.issuperset(variables(pr.arg))
            st.store = self.done.get(k) if k in read else None
            at[k] = len(steps)
            steps.append(st)
            return at[k]

        if walk(self.root) is None:
            return None
        self._pmask: dict[str, int] = {}
        self._anymask = 0
        for m, p in masks.values():
            if isinstance(p, str):
                self._pmask[p] = self._pmask.get(p, 0) | m
            else:
                self._anymask |= m
        return steps

    def _leaves_of(self, n: Node) -> frozenset[int] | None:
        k = id(n)
        if k in self._leaves:
            return self._leaves[k]
        got: frozenset[int] | None = frozenset()  # a static node has no leaf of its own
        if not self._statics[k]:
            if self._kind[k] == _ONE:
                got = frozenset((k,))
                p = cast(BGP, n).patterns[0][1]
                if isinstance(p, str):
                    self._by_pred.setdefault(p, []).append(k)
                else:
                    self._any_pred.append(k)
            elif not n.kids:  # a path, a BGP of several patterns: evaluated at every instant
                got = None
        for kid in n.kids:  # every node of the tree gets its entry
            sub = self._leaves_of(kid)
            got = None if got is None or sub is None else got | sub
        self._leaves[k] = got
        return got

    def at(self, tau: int) -> list[Solution]:
        if self._plan is not None:
            self._run(tau, len(self._plan))
            return self._vals[-1]
        self._prepare(tau)
        return self._d(self.root)

    def _run(self, tau: int, upto: int) -> None:
        """The plan's first ``upto`` steps evaluated at tau (unless they are already)."""
        assert self._plan is not None
        occ = self.w.occ
        if self._at != (tau, occ.version) or len(self._vals) < upto:
            fresh = occ.fresh if occ.fresh_tau == tau else []
            bits = self._anymask
            pmask = self._pmask
            for oc in fresh:
                bits |= pmask.get(oc.p, 0)
            plan = self._plan
            self._vals = run(plan if upto == len(plan) else plan[:upto], fresh, bits, tau, self.hs,
                             self.w.exprs)
            self._bits = bits
            self._at = (tau, occ.version)

    def _prepare(self, tau: int) -> None:
        """The memo emptied when the instant or the occurrences changed (generic evaluator)."""
        if self._at != (tau, self.w.occ.version):
            self._memo = {}
            self.tau = tau
            occ = self.w.occ
            hit = self._hit = set()
            if occ.fresh_tau == tau and occ.fresh:
                for oc in occ.fresh:
                    got = self._by_pred.get(oc.p)
                    if got:
                        hit.update(got)
                hit.update(self._any_pred)
            self._at = (tau, self.w.occ.version)

    def each(self, tau: int) -> Iterator[Solution]:
        """at(tau)'s solutions, in its order, made as they are read where the root allows it
        (:func:`_chain`): a rule's round stops at the cap on derived triples before a cross
        product of its solutions is ever a list (issue 52). The occurrences must not change
        until the iterator is done."""
        lazy = self._lazy
        if lazy is None:
            yield from self.at(tau)
            return
        chain, bottom = lazy
        ex = self.w.exprs
        if self._plan is not None:
            plan = self._plan
            b = len(plan) - len(chain) - 1  # post-order: the chain's steps come last
            self._run(tau, b)
            st = plan[b]
            if not st.mask & self._bits:
                return
            assert st.old is not None
            gen = self._seq_each(tau, self._vals[st.b], st.old, st.chk, st.left)
            steps = plan[b + 1:]
        else:
            self._prepare(tau)
            for kid in bottom.kids:  # (what commit keeps)
                self._d(kid)
            lv = self._leaves[id(bottom)]
            if lv is not None and lv.isdisjoint(self._hit):
                return
            if isinstance(bottom, BGP):
                gen = self._bgp_each(bottom)
            elif isinstance(bottom, SeqJoin):
                oa = self._old(bottom.left)
                gen = self._seq_each(tau, self._d(bottom.right), oa, self._compat[id(bottom)], id(bottom.left))
            else:
                gen = self._join_each(cast(Join, bottom))
        while True:
            batch = list(itertools.islice(gen, _BATCH))
            if not batch:
                return
            if self._plan is not None:
                for st in steps:
                    if batch:
                        batch = _step(st, batch, ex)
            else:
                for n in reversed(chain):
                    if batch:
                        if isinstance(n, Filter):
                            batch = ex.filter(n.cond, batch)
                        elif isinstance(n, Extend):
                            batch = extend_solutions(n, batch, ex)
                        else:
                            batch = project(cast(Project, n), batch, ex)
            yield from batch

    def _seq_each(self, tau: int, db: list[Solution], oa: Keyed, chk: bool, left: int) -> Iterator[Solution]:
        """_seq and run()'s SEQ, lazily (``left``: the id of the left operand)."""
        if not db:
            return
        lo = tau - self.hs.get(left, INF)
        for y in db:
            for x in oa.before(oa.of(y), y.ta, lo):
                if not chk or compatible(x.mu, y.mu):
                    yield combine(x, y)

    def _bgp_sources(self) -> tuple[Source, Source, Source]:
        """A BGP's semi-naive sources at self.tau: the occurrences at tau (now), before it,
        and up to it."""
        tau = self.tau
        occ = self.w.occ
        fresh = occ.fresh if occ.fresh_tau == tau else []

        def now(s: str | None, p: str | None, o: str | None) -> Iterable[Occurrence]:
            return (x for x in fresh if (p is None or x.p == p) and (o is None or x.o == o)
                    and (s is None or x.s == s))

        def before(s: str | None, p: str | None, o: str | None) -> Iterable[Occurrence]:
            return (x for x in occ.candidates(s, p, o) if x.tw < tau)

        def upto(s: str | None, p: str | None, o: str | None) -> Iterable[Occurrence]:
            return (x for x in occ.candidates(s, p, o) if x.tw <= tau)

        return now, before, upto

    def _bgp_each(self, n: BGP) -> Iterator[Solution]:
        """_delta's semi-naive terms of a BGP, lazily."""
        now, before, upto = self._bgp_sources()
        m = len(n.patterns)
        for i in range(m):
            yield from _bgp_term(n.patterns, [before] * i + [now] + [upto] * (m - i - 1), i)

    def _join_each(self, n: Join) -> Iterator[Solution]:
        """_delta's Join, lazily."""
        da, db = self._d(n.left), self._d(n.right)
        if not da and not db:
            return
        chk = self._compat[id(n)]
        tau = self.tau
        lo_a, lo_b = tau - self.hs.get(id(n.left), INF), tau - self.hs.get(id(n.right), INF)
        oa, ob = self._old(n.left), self._old(n.right)
        if db:
            new_b: dict[tuple, list[Solution]] = {}
            for y in db:
                new_b.setdefault(ob.of(y), []).append(y)
            for x in da:
                kx = oa.of(x)
                for y in itertools.chain(ob.get(kx, lo_b), new_b.get(kx, ())):
                    if not chk or compatible(x.mu, y.mu):
                        yield combine(x, y)
            for y in db:
                for x in oa.get(ob.of(y), lo_a):
                    if not chk or compatible(x.mu, y.mu):
                        yield combine(x, y)
        else:
            for x in da:
                for y in ob.get(oa.of(x), lo_b):
                    if not chk or compatible(x.mu, y.mu):
                        yield combine(x, y)

    def commit(self, tau: int) -> None:
        # what the stores keep: the nodes below the root's producer when each() may have
        # been read instead of at() (their solutions, never the root's)
        lazy = self._lazy
        if self._plan is not None:
            self._run(tau, len(self._plan) if lazy is None else len(self._plan) - len(lazy[0]) - 1)
        elif lazy is None:
            self.at(tau)
        else:
            self._prepare(tau)
            for kid in lazy[1].kids:
                self._d(kid)
        if self._plan is not None:
            if self._kept is None or self._kept[0] is not self.hs:  # (bind sets hs)
                self._kept = (self.hs, [(i, st.store, self.hs.get(id(st.node), INF))
                                        for i, st in enumerate(self._plan) if st.store is not None])
            vals = self._vals
            # a store is pruned only when it grew: prune's test on its size changes then only
            for i, store, h in self._kept[1]:
                sols = vals[i]
                if sols:
                    store.add(sols)
                    if h != INF:
                        store.prune(tau - h)
            self._vals = []
            self._at = None
            return
        for k, sols in self._memo.items():
            if sols and k in self.done:
                self.done[k].add(sols)
        self._memo = {}
        self._at = None
        self.prune(tau)

    def rebase(self) -> None:
        """The background changed before the coming instant: every solution output from now
        on reads it as it is now (000 Def. 2), so the timeless parts are evaluated again and
        the kept solutions of the parts that joined them recomputed over the occurrences
        kept (those the horizons dropped can be in no later solution)."""
        self._bg.clear()
        self._memo = {}
        self._at = None
        for n in nodes(self.root):
            k = id(n)
            if k in self.done and not self._static(n) \
                    and any(isinstance(x, Background) for x in nodes(n)):
                kd = Keyed(self.done[k].key)
                kd.add(sorted(evaluate(n, self.w), key=_tw))
                self.done[k] = kd
        self._plan = self._compile()  # (its steps hold the stores)
        self._pruned = None
        self._kept = None

    def prune(self, tau: int) -> None:
        """Forget the solutions that start more than the node's horizon before tau: every
        later root solution using one would start before ``tau - H`` and end after tau.
        Amortised: a node's store is filtered once it has doubled since the last time."""
        if self._pruned is None or self._pruned[0] is not self.hs:  # (bind sets hs)
            self._pruned = (self.hs, [(store, h) for k, store in self.done.items()
                                      if (h := self.hs.get(k, INF)) != INF])
        for store, h in self._pruned[1]:
            store.prune(tau - h)

    def stored(self) -> int:
        return sum(v.n for v in self.done.values())

    def _old(self, n: Node) -> Keyed:
        if self._static(n):
            if id(n) not in self._bg:
                kd = Keyed(self.done[id(n)].key)
                kd.add(evaluate(n, self.w))
                self._bg[id(n)] = kd
            return self._bg[id(n)]
        return self.done[id(n)]

    def _static(self, n: Node) -> bool:
        got = self._statics.get(id(n))
        if got is None:
            got = self._statics[id(n)] = static(n)
        return got

    def _d(self, n: Node) -> list[Solution]:
        k = id(n)
        got = self._memo.get(k)
        if got is None:
            lv = self._leaves[k]
            got = self._memo[k] = [] if lv is not None and lv.isdisjoint(self._hit) else self._delta(n)
        return got

    def _seq(self, n: SeqJoin) -> list[Solution]:
        self._d(n.left)  # (its solutions at tau are kept by commit, for later instants)
        db = self._d(n.right)
        if not db:
            return []
        lo_a = self.tau - self.hs.get(id(n.left), INF)
        chk = self._compat[id(n)]
        oa = self._old(n.left)
        out = []
        for y in db:
            for x in oa.before(oa.of(y), y.ta, lo_a):
                if not chk or compatible(x.mu, y.mu):
                    out.append(combine(x, y))
        return out

    def _delta(self, n: Node) -> list[Solution]:
        tau, ex = self.tau, self.w.exprs
        k = id(n)
        if self._statics[k]:
            return []
        kind = self._kind[k]
        if kind == _ONE:  # one triple pattern: the occurrences at tau it matches
            occ = self.w.occ
            return self._one[k].match(occ.fresh) if occ.fresh_tau == tau else []
        if kind == _FILTER:
            got = self._d(cast(Filter, n).arg)
            return ex.filter(cast(Filter, n).cond, got) if got else got
        if kind == _PROJECT:
            got = self._d(cast(Project, n).arg)
            return project(cast(Project, n), got, ex) if got else got
        if kind == _SEQ:
            return self._seq(cast(SeqJoin, n))
        if isinstance(n, Path):
            d = self.w.needs_data()
            return path_solutions(n, d, d.by_end.get(tau, ()))
        if isinstance(n, BGP):
            now, before, upto = self._bgp_sources()
            m = len(n.patterns)  # (one pattern: _ONE above)
            out: list[Solution] = []
            for i in range(m):  # semi-naive: pattern i at tau, earlier ones before, later ones up to
                out.extend(match_bgp(n.patterns, [before] * i + [now] + [upto] * (m - i - 1), first=i))
            return out
        if isinstance(n, Filter):
            return ex.filter(n.cond, self._d(n.arg))
        if isinstance(n, Extend):
            return extend_solutions(n, self._d(n.arg), ex)
        if isinstance(n, OrderBy):
            return ex.order(n.keys, self._d(n.arg))
        if isinstance(n, Project):
            return project(n, self._d(n.arg), ex)
        assert isinstance(n, Binary)
        da, db = self._d(n.left), self._d(n.right)
        if isinstance(n, Union):
            return da + db
        if isinstance(n, EqJoin):
            return [combine(x, y) for x in da for y in db
                    if x.ta == y.ta and x.tw == y.tw and compatible(x.mu, y.mu)]
        if isinstance(n, EqLeftJoin):
            return left_join(da, db, n.cond, ex, lambda x, y: x.ta == y.ta and x.tw == y.tw)
        chk = self._compat[id(n)]
        lo_a, lo_b = tau - self.hs.get(id(n.left), INF), tau - self.hs.get(id(n.right), INF)
        if isinstance(n, Join):
            if not da and not db:
                return []
            oa, ob = self._old(n.left), self._old(n.right)
            out = []
            if db:
                new_b: dict[tuple, list[Solution]] = {}
                for y in db:
                    new_b.setdefault(ob.of(y), []).append(y)
                for x in da:
                    kx = oa.of(x)
                    out.extend(combine(x, y) for y in itertools.chain(ob.get(kx, lo_b), new_b.get(kx, ()))
                               if not chk or compatible(x.mu, y.mu))
                for y in db:
                    out.extend(combine(x, y) for x in oa.get(ob.of(y), lo_a) if not chk or compatible(x.mu, y.mu))
            else:
                for x in da:
                    out.extend(combine(x, y) for y in ob.get(oa.of(x), lo_b) if not chk or compatible(x.mu, y.mu))
            return out
        if isinstance(n, LeftJoin) and self._static(n.left):
            # a timeless mandatory part is never output alone: only its joins, as they come
            oa = self._old(n.left)
            combos = [combine(x, y) for y in db for x in oa.get(oa.of(y)) if compatible(x.mu, y.mu)]
            if n.cond is not None:
                combos = [c for c, k in zip(combos, ex.test(n.cond, [(c, c.ta, c.tw) for c in combos]),
                                            strict=True) if k]
            return combos
        if isinstance(n, (LeftJoin, Minus)):
            if not da:
                return []
            ob = self._old(n.right)
            new_b = {}
            for y in db:
                new_b.setdefault(ob.of(y), []).append(y)

            def cands(x: Solution) -> Iterable[Solution]:
                return itertools.chain(ob.get(ob.of(x), lo_b), new_b.get(ob.of(x), ()))
            if isinstance(n, Minus):
                return [x for x in da if not any(removes(x, y) for y in cands(x))]
            return left_join(da, None, n.cond, ex, no_later, cands=cands)
        if isinstance(n, SeqRightJoin):
            if not db:
                return []
            oa = self._old(n.left)
            return left_join(db, None, n.cond, ex, lambda x, y: y.tw < x.ta, mandatory_right=True,
                         cands=lambda x: oa.before(oa.of(x), x.ta, lo_a))
        raise TypeError(f"not an EP-SPARQL pattern: {n!r}")
