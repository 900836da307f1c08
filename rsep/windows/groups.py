"""The result of a maintained window query from its WHERE clause's solutions: GROUP BY with
its aggregates kept up to date as solutions come and go, then HAVING, ORDER BY, projection,
DISTINCT and LIMIT / OFFSET on the rows (rsep.windows.maintained).

Per group, each aggregate keeps what its value needs: COUNT a number, COUNT(DISTINCT) a
multiset, SUM and AVG over integers and decimals an exact total with the bound that rules
out an overflow on the way (the fold is checked step by step otherwise), MIN and MAX a heap
with lazy deletion (solutions leave a join in any order, not first-in first-out), and those
folded in arrival order (SUM / AVG of floats and doubles, GROUP_CONCAT, SAMPLE, the DISTINCT
ones) the group's live solutions in that order, folded when the group changed. Values are
pyoxigraph's (rsep.sparql.aggregates); what that mirror cannot decide, pyoxigraph computes
for that group at that evaluation over its live values as VALUES, in arrival order, in one
query for all such groups (:class:`Oxigraph`).

Rows come out in a defined order (docs/semantics.md, "Row order of maintained results"):
groups in the order of their earliest live solution, plain rows in arrival order, a stable
sort by the ORDER BY keys when there are some.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from rsep.sparql import aggregates as ag
from rsep.sparql.aggregates import ERROR, Undecided, classify
from rsep.sparql.filters import Fallback
from rsep.sparql.rows import rows_block

Term = Any
Jid = tuple
# A row of the runtime's output: (key for bag comparison, (names, bindings)) (rsep.runtime.r2s)
Row = tuple[Any, Any]


@dataclass(frozen=True)
class Aggregate:
    """One aggregate of the query: ``name`` COUNT | SUM | AVG | MIN | MAX | SAMPLE |
    GROUP_CONCAT over ``var`` (None: ``*``), or over ``STR(var)`` when ``str_arg``; its SPARQL
    text for pyoxigraph."""

    name: str
    var: str | None
    str_arg: bool = False
    distinct: bool = False
    separator: str = " "
    text: str = ""


# ---------------------------------------------------------------- groups


class Group:
    """One group's live solutions (jid -> the aggregates' arguments, in arrival order when
    not ``unsorted``) and its aggregates' states."""

    __slots__ = ("key", "sols", "order", "last", "unsorted", "states", "dirty", "values")
    # (last: the latest jid inserted so far; one below it makes the group unsorted)

    def __init__(self, key: tuple, states: list) -> None:
        self.key = key
        self.sols: dict[Jid, tuple] = {}
        self.order: deque[Jid] = deque()  # jids by insertion; lazily cleared of leavers
        self.last: Jid | None = None
        self.unsorted = False
        self.states = states
        self.dirty = True
        self.values: list[Term] | None = None  # the aggregates' values when not dirty

    def sort(self) -> None:
        if self.unsorted:
            self.sols = dict(sorted(self.sols.items()))
            self.order = deque(self.sols)
            self.unsorted = False

    def first(self) -> Jid:
        """The group's arrival: its earliest live solution."""
        self.sort()
        order, sols = self.order, self.sols
        while order[0] not in sols:
            order.popleft()
        return order[0]

    def args(self, i: int) -> list[Term]:
        """Aggregate i's arguments over the live solutions, in arrival order."""
        self.sort()
        return [a[i] for a in self.sols.values()]


class _State:
    """An aggregate's state in a group: ``add`` takes a solution's argument in (``sign`` 1)
    or out (-1), ``value`` reads the aggregate (Undecided: pyoxigraph decides)."""

    __slots__ = ()

    def add(self, v: Term, jid: Jid, sign: int) -> None:
        raise NotImplementedError

    def value(self, g: Group, i: int) -> Term:
        raise NotImplementedError


class _Count(_State):
    """COUNT(*), COUNT(?v): the number of solutions (an error, from STR of a blank node,
    makes COUNT(STR(?v)) unbound: oxigraph's expression accumulator)."""

    __slots__ = ("err",)

    def __init__(self) -> None:
        self.err = 0

    def add(self, v: Term, jid: Jid, sign: int) -> None:
        if v is ERROR:
            self.err += sign

    def value(self, g: Group, i: int) -> Term:
        return None if self.err else ag.term_of((ag.INT, len(g.sols)))


class _CountDistinct(_State):
    __slots__ = ("seen", "err")

    def __init__(self) -> None:
        self.seen: Counter[Term] = Counter()
        self.err = 0

    def add(self, v: Term, jid: Jid, sign: int) -> None:
        if v is ERROR:
            self.err += sign
            return
        c = self.seen[v] + sign
        if c:
            self.seen[v] = c
        else:
            del self.seen[v]

    def value(self, g: Group, i: int) -> Term:
        return None if self.err else ag.term_of((ag.INT, len(self.seen)))


class _Sum(_State):
    """SUM or AVG: per kind of value a count, the exact totals of the integers and of the
    decimals, and the totals of their magnitudes, which bound every partial sum of any fold
    order: below i64 (integers) and i128 (decimals) no step of oxigraph's fold overflows
    and the total is its result. Floats and doubles are folded in arrival order."""

    __slots__ = ("avg", "kinds", "si", "sd", "ai", "ad", "err")

    def __init__(self, avg: bool) -> None:
        self.avg = avg
        self.kinds = [0] * 8
        self.si = self.sd = self.ai = self.ad = 0
        self.err = 0

    def add(self, v: Term, jid: Jid, sign: int) -> None:
        if v is ERROR:
            self.err += sign
            return
        k, x = _classified(v)
        self.kinds[k] += sign
        if k == ag.INT:
            self.si += sign * x
            self.ai += sign * abs(x)
        elif k == ag.DEC:
            self.sd += sign * x
            self.ad += sign * abs(x)

    def value(self, g: Group, i: int) -> Term:
        if self.err:
            return None
        kinds = self.kinds
        if kinds[ag.OTHER]:
            raise Undecided("a value of a type the mirror does not read")
        if kinds[ag.STR] or kinds[ag.IRI] or kinds[ag.BNODE]:
            return None
        if kinds[ag.FLT] or kinds[ag.DBL] or self.ai > ag.I64_MAX \
                or self.ai * ag.SCALE + self.ad > ag.I128_MAX:
            total = ag.fold_sum([classify(v) for v in g.args(i)])
        elif kinds[ag.DEC]:
            total = (ag.DEC, self.si * ag.SCALE + self.sd)
        else:
            total = (ag.INT, self.si)
        if self.avg:
            total = ag.average(total, len(g.sols))
        return None if total is None else ag.term_of(total)


class _Extreme(_State):
    """MIN or MAX (DISTINCT or not: the first of equal values wins either way): a heap of
    (order key, arrival, push, term) with lazy deletion, valid while the live values are
    ordered exactly (:class:`rsep.sparql.aggregates.Traits`). ``push`` numbers the entries:
    one solution may be pushed again with another term of the same order key (``2`` and
    ``2.0e0``, after it left and came back), and pyoxigraph's terms do not compare, so
    the tuples must differ before the term."""

    __slots__ = ("largest", "heap", "traits", "err", "pushed")

    def __init__(self, largest: bool) -> None:
        self.largest = largest
        self.heap: list[tuple] = []
        self.traits = ag.Traits()
        self.err = 0
        self.pushed = 0

    def add(self, v: Term, jid: Jid, sign: int) -> None:
        if v is ERROR:
            self.err += sign
            return
        info = _INFO.get(v)
        if info is None:
            info = _info(v)
        self.traits.add(info[0], sign)
        if sign > 0:
            k = 2 if self.largest else 1
            key = info[k]
            if key is None:
                key = info[k] = (ag.reverse_key if self.largest else ag.order_key)(info[0])
            self.pushed += 1
            heapq.heappush(self.heap, (key, jid, self.pushed, v))

    def value(self, g: Group, i: int) -> Term:
        if self.err or not self.traits.n:
            return None
        if not self.traits.ordered():
            raise Undecided("values cmp_terms does not order exactly")
        heap, sols = self.heap, g.sols
        if len(heap) > 2 * self.traits.n + 32:  # leavers pile up under a long-lived top
            self.heap = heap = [e for e in heap if (a := sols.get(e[1])) is not None
                                and a[i] == e[3]]
            heapq.heapify(heap)
        while True:
            _, jid, _, v = heap[0]
            a = sols.get(jid)
            if a is not None and a[i] == v:
                return v
            heapq.heappop(heap)


# term -> [classify(term), its heap key for MIN, for MAX (each made when first needed)]: a
# solution's values are read as it enters and as it leaves, and a stream's values repeat
_INFO: dict[Term, list] = {}


def _info(v: Term) -> list:
    got = [classify(v), None, None]
    if len(_INFO) > 100_000:  # distinct values of a long stream: stay bounded
        _INFO.clear()
    _INFO[v] = got
    return got


def _classified(v: Term) -> ag.Value:
    info = _INFO.get(v)
    return (info if info is not None else _info(v))[0]


class _Fold(_State):
    """An aggregate folded over the group's live values in arrival order when it is read:
    SAMPLE, GROUP_CONCAT, and SUM / AVG / GROUP_CONCAT DISTINCT."""

    __slots__ = ("agg",)

    def __init__(self, agg: Aggregate) -> None:
        self.agg = agg

    def add(self, v: Term, jid: Jid, sign: int) -> None:
        """Nothing to keep: :meth:`value` folds the group's live values when read."""

    def value(self, g: Group, i: int) -> Term:
        agg = self.agg
        vals = g.args(i)
        if agg.name == "SAMPLE":
            for v in vals:
                if v is not ERROR:
                    if classify(v)[0] == ag.OTHER:
                        raise Undecided("SAMPLE of a value pyoxigraph gives back in another form")
                    return v
            return None
        for v in vals:
            if v is ERROR:
                return None
        if agg.distinct:
            vals = list(dict.fromkeys(vals))
        if agg.name == "GROUP_CONCAT":
            return ag.group_concat([classify(v) for v in vals], agg.separator)
        total = ag.fold_sum([classify(v) for v in vals])
        if agg.name == "AVG":
            total = ag.average(total, len(vals))
        return None if total is None else ag.term_of(total)


def _state(agg: Aggregate) -> Any:
    if agg.name == "COUNT":
        return _CountDistinct() if agg.distinct else _Count()
    if agg.name in ("MIN", "MAX"):
        return _Extreme(agg.name == "MAX")
    if agg.name in ("SUM", "AVG") and not agg.distinct:
        return _Sum(agg.name == "AVG")
    return _Fold(agg)


def _arg(a: Aggregate, i: int) -> str:
    """Aggregate i's argument over a solution ``mu``, as an expression of the generated code:
    None for ``*``, ERROR (``_E``) when its variable is unbound, else its value (``STR`` of it,
    ``_s``, when ``str_arg``)."""
    if a.var is None:
        return "None"
    return f"(_E if (_t{i} := mu.get({a.var!r})) is None else {'_s(' if a.str_arg else '('}_t{i}))"


class Grouping:
    """Solutions grouped by ``keys`` (none: one group, there even when empty, when the query
    has aggregates), each group's aggregates maintained."""

    def __init__(self, keys: Sequence[str], aggregates: Sequence[Aggregate], implicit: bool) -> None:
        self.keys = tuple(keys)
        self.aggregates = list(aggregates)
        self.implicit = implicit
        self.groups: dict[tuple, Group] = {}
        self._where: dict[Jid, tuple] = {}
        # a solution's group key and aggregate arguments, by generated expressions (a
        # generic loop costs several times more, per solution)
        keys = "".join(f"mu.get({k!r}), " for k in self.keys)
        self._key = eval(f"lambda mu: ({keys})")
        self._args = eval(f"lambda mu: ({''.join(_arg(a, i) + ', ' for i, a in enumerate(self.aggregates))})",
                          {"_E": ERROR, "_s": ag.str_of})
        if implicit:
            self._group(())

    def _group(self, key: tuple) -> Group:
        g = self.groups[key] = Group(key, [_state(a) for a in self.aggregates])
        return g

    def __len__(self) -> int:
        return len(self._where)

    def add(self, jid: Jid, mu: dict) -> None:
        key = self._key(mu)
        g = self.groups.get(key)
        if g is None:
            g = self._group(key)
        args = self._args(mu)
        g.sols[jid] = args
        g.order.append(jid)
        if g.last is not None and jid < g.last:  # (last: the latest arrival so far)
            g.unsorted = True
        else:
            g.last = jid
        states = g.states
        n = len(states)
        for i in range(n):
            st = states[i]
            st.add(args[i], jid, 1)
        g.dirty = True
        self._where[jid] = key

    def remove(self, jid: Jid) -> None:
        key = self._where.pop(jid, None)
        if key is None:
            return
        g = self.groups[key]
        args = g.sols.pop(jid)
        states = g.states
        n = len(states)
        for i in range(n):
            st = states[i]
            st.add(args[i], jid, -1)
        g.dirty = True
        if not g.sols and not self.implicit:
            del self.groups[key]

    def clear(self) -> None:
        self.groups.clear()
        self._where.clear()
        if self.implicit:
            self._group(())

    def rows(self, oxigraph: Oxigraph, mus: Callable[[Jid], dict]) -> list[tuple[Jid | None, dict]]:
        """Each group's row (its keys and aggregates by name, ``__a<i>`` for the i-th), in
        arrival order; what the mirror leaves undecided is asked of pyoxigraph, at once."""
        undecided: list[Group] = []
        for g in self.groups.values():
            if not g.dirty:
                continue
            vals = []
            missing = False
            for i, st in enumerate(g.states):
                try:
                    vals.append(st.value(g, i))
                except Undecided:
                    vals.append(None)
                    missing = True
            g.values = vals
            g.dirty = False
            if missing:
                undecided.append(g)
        if undecided:
            for g in undecided:
                g.sort()
            got = oxigraph.aggregates(self.aggregates, [g.sols for g in undecided], mus)
            for g, vals in zip(undecided, got, strict=True):
                g.values = vals  # (right while the group does not change)
        ordered = sorted(((g.first() if g.sols else None, g) for g in self.groups.values()),
                         key=_arrival)
        out = []
        for first, g in ordered:
            row = dict(zip(self.keys, g.key, strict=True))
            for i, v in enumerate(g.values or ()):
                row[f"__a{i}"] = v
            out.append((first, row))
        return out


def _arrival(item: tuple) -> tuple:
    first = item[0]
    return (0,) if first is None else (1, first)


# ---------------------------------------------------------------- pyoxigraph, batched


class Oxigraph:
    """The queries that decide what the mirrors leave undecided, each over rows given as
    VALUES (a named graph when a row holds a blank node), one per evaluation and kind."""

    def __init__(self, prologue: str) -> None:
        self.prologue = prologue
        self.store = ox.Store()
        self.calls = 0

    def _solutions(self, query: str) -> ox.QuerySolutions:
        self.calls += 1
        res = self.store.query(self.prologue + query)
        assert isinstance(res, ox.QuerySolutions)
        return res

    def accepted(self, conditions: Sequence[str], rows: Sequence[dict]) -> list[bool]:
        """Which rows every condition (a FILTER's constraint text) holds for."""
        names = sorted({n for r in rows for n in r})
        strs = [{n: str(t) for n, t in r.items() if t is not None} for r in rows]
        with rows_block(names, strs, self.store) as block:
            q = "SELECT ?__i WHERE { " + block + "".join(f"\nFILTER ({c})" for c in conditions) + " }"
            ok = {int(sol[0].value) for sol in self._solutions(q)}
        return [i in ok for i in range(len(rows))]

    def aggregates(self, aggs: Sequence[Aggregate], groups: Sequence[Iterable[Jid]],
                   mus: Callable[[Jid], dict]) -> list[list[Term]]:
        """Every aggregate of each group over its solutions (their ids) in arrival order."""
        names = sorted({a.var for a in aggs if a.var is not None})
        rows = []
        for gi, sols in enumerate(groups):
            for jid in sols:
                mu = mus(jid)
                r = {n: str(mu[n]) for n in names if mu.get(n) is not None}
                r["__g"] = f'"{gi}"^^<{ag.INTEGER.value}>'
                rows.append(r)
        sel = " ".join(f"({a.text} AS ?__a{i})" for i, a in enumerate(aggs))
        with rows_block(["__g", *names], rows, self.store) as block:
            q = (f"SELECT ?__g {sel} WHERE {{ {{ SELECT * WHERE {{ {block} }} ORDER BY ?__i }} }} "
                 "GROUP BY ?__g")
            out: list[list[Term]] = [[None] * len(aggs) for _ in groups]
            for sol in self._solutions(q):
                gi = int(sol[0].value)
                out[gi] = [sol[i + 1] for i in range(len(aggs))]
        return out

    def order(self, conditions: Sequence[str], rows: Sequence[dict]) -> list[int]:
        """The rows' indices sorted by the ORDER BY conditions, as pyoxigraph sorts."""
        names = sorted({n for r in rows for n in r})
        strs = [{n: str(t) for n, t in r.items() if t is not None} for r in rows]
        with rows_block(names, strs, self.store) as block:
            q = "SELECT ?__i WHERE { " + block + " } ORDER BY " + " ".join(conditions)
            return [int(sol[0].value) for sol in self._solutions(q)]


# ---------------------------------------------------------------- modifiers


@dataclass(frozen=True)
class Modifiers:
    """What follows the WHERE clause (and the grouping): HAVING conditions (compiled, or
    None: pyoxigraph), ORDER BY keys (a name and descending?), the projection (output
    name, the row's name it reads), DISTINCT, OFFSET and LIMIT."""

    having: tuple[tuple[Callable[[dict], object] | None, str], ...] = ()
    order: tuple[tuple[str, bool], ...] = ()
    project: tuple[tuple[str, str], ...] = ()
    distinct: bool = False
    offset: int = 0
    limit: int | None = None

    def apply(self, rows: list[tuple[Any, dict]], oxigraph: Oxigraph) -> list[Row]:
        """The output rows, from (arrival, row) pairs in arrival order."""
        if self.having:
            rows = self._having(rows, oxigraph)
        if self.order:
            rows = self._sort(rows, oxigraph)
        names = tuple(n for n, _ in self.project)
        out: list[Row] = []
        seen: set = set()
        for _, r in rows:
            terms = [r.get(src) for _, src in self.project]
            values = tuple(None if t is None else str(t) for t in terms)
            if self.distinct:
                if values in seen:
                    continue
                seen.add(values)
            out.append((values, (names, {n: v for n, v in zip(names, values, strict=True)
                                         if v is not None})))
        end = None if self.limit is None else self.offset + self.limit
        return out[self.offset:end] if self.offset or end is not None else out

    def _having(self, rows: list[tuple[Any, dict]], oxigraph: Oxigraph) -> list[tuple[Any, dict]]:
        keep: list[bool | None] = []
        for _, r in rows:
            verdict: bool | None = True
            for fn, _text in self.having:
                if fn is None:
                    verdict = None
                    continue
                try:
                    got = fn(r)
                except Fallback:
                    verdict = None
                    continue
                if got is not True:
                    verdict = False
                    break
            keep.append(verdict)
        todo = [i for i, k in enumerate(keep) if k is None]
        if todo:
            got = oxigraph.accepted([t for _, t in self.having], [rows[i][1] for i in todo])
            for i, ok in zip(todo, got, strict=True):
                keep[i] = ok
        return [r for r, k in zip(rows, keep, strict=True) if k]

    def _sort(self, rows: list[tuple[Any, dict]], oxigraph: Oxigraph) -> list[tuple[Any, dict]]:
        columns = [[classify(r.get(name)) if r.get(name) is not None else None for _, r in rows]
                   for name, _ in self.order]
        for col in columns:
            traits = ag.Traits()
            for c in col:
                if c is not None:
                    traits.add(c)
            if not traits.ordered():
                return self._sort_oxigraph(rows, oxigraph)

        def key(i: int) -> tuple:
            return tuple(_key(col[i], desc) for col, (_, desc) in zip(columns, self.order,
                                                                      strict=True))
        return [rows[i] for i in sorted(range(len(rows)), key=key)]

    def _sort_oxigraph(self, rows: list[tuple[Any, dict]], oxigraph: Oxigraph
                       ) -> list[tuple[Any, dict]]:
        """pyoxigraph's order, equal keys (the same terms) kept in arrival order."""
        conds = [f"DESC(?{n})" if d else f"ASC(?{n})" for n, d in self.order]
        order = oxigraph.order(conds, [{n: r.get(n) for n, _ in self.order} for _, r in rows])
        out: list[tuple[Any, dict]] = []
        run: list[int] = []
        prev: tuple | None = None
        for i in order + [-1]:
            k = None if i < 0 else tuple(rows[i][1].get(n) for n, _ in self.order)
            if run and k != prev:
                out.extend(rows[j] for j in sorted(run))
                run = []
            run.append(i)
            prev = k
        return out


def _key(c: ag.Value | None, desc: bool) -> tuple:
    if c is None:  # unbound first (ascending), last (descending)
        return (1,) if desc else (-1,)
    return ag.reverse_key(c) if desc else ag.order_key(c)

