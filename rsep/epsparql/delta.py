"""The incremental evaluator of EP-SPARQL's unrestricted setting: at each instant, each node's
solutions ending then, from its operands' earlier solutions and theirs at the instant.

Here are the semi-naive operators of every node (:meth:`Delta._delta`) and their lazy forms
(:meth:`Delta.each`); the stores of earlier solutions (``Keyed``) and the plan an event
pattern is compiled to are rsep.epsparql.plan's."""

from __future__ import annotations

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
from rsep.epsparql.matcher import (
    Occurrence,
    OnePattern,
    Solution,
    Source,
    bind_term,
    combine,
    compatible,
    join_order,
    match_bgp,
    match_pattern,
)
from rsep.epsparql.operators import (
    World,
    extend_solutions,
    left_join,
    no_later,
    path_solutions,
    project,
    removes,
)
from rsep.epsparql.plan import (
    FILTER,
    ONE,
    PROJECT,
    SEQ,
    Keyed,
    Step,
    compile_plan,
    kind_of,
    run,
    run_step,
)

# The reference's evaluate is Delta's general evaluator of what it does not derive
# incrementally: the static parts (reading no stream: the background, VALUES), evaluated
# whole once, and the kept solutions of the parts that read the background, recomputed
# when it changes. The differential tests compare Delta, those parts included, with the
# reference over whole streams.
from rsep.epsparql.reference import evaluate
from rsep.epsparql.rewrites import certain


def _tw(s: Solution) -> float:
    return s.tw


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
        s, p, o = (bind_term(t, mu) for t in tp)
        for oc in sources[i](s, p, o):
            mm = match_pattern(tp, (oc.s, oc.p, oc.o), mu)
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
    order = join_order(patterns, first)
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
        self._kind: dict[int, int] = {id(n): kind_of(n) for n in nodes(root)}
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

    def _compile(self) -> list[Step] | None:
        """The plan of the tree (rsep.epsparql.plan.compile_plan), with the leaves' bits
        _run reads the occurrences of an instant with (None: the generic _d below)."""
        got = compile_plan(self.root, self._kind, self._statics, self._one, self.done, self._compat)
        if got is None:
            return None
        steps, self._pmask, self._anymask = got
        return steps

    def _leaves_of(self, n: Node) -> frozenset[int] | None:
        k = id(n)
        if k in self._leaves:
            return self._leaves[k]
        got: frozenset[int] | None = frozenset()  # a static node has no leaf of its own
        if not self._statics[k]:
            if self._kind[k] == ONE:
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
                        batch = run_step(st, batch, ex)
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
        if kind == ONE:  # one triple pattern: the occurrences at tau it matches
            occ = self.w.occ
            return self._one[k].match(occ.fresh) if occ.fresh_tau == tau else []
        if kind == FILTER:
            got = self._d(cast(Filter, n).arg)
            return ex.filter(cast(Filter, n).cond, got) if got else got
        if kind == PROJECT:
            got = self._d(cast(Project, n).arg)
            return project(cast(Project, n), got, ex) if got else got
        if kind == SEQ:
            return self._seq(cast(SeqJoin, n))
        if isinstance(n, Path):
            d = self.w.needs_data()
            return path_solutions(n, d, d.by_end.get(tau, ()))
        if isinstance(n, BGP):
            now, before, upto = self._bgp_sources()
            m = len(n.patterns)  # (one pattern: ONE above)
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
