"""EP-SPARQL (003 Sec. 4.2): the operators both evaluators run, the reference and production.

The reference (:mod:`rsep.epsparql.reference`) transcribes Sec. 4.2's ``evaluate`` Eq. by
Eq.; the incremental evaluator (:mod:`rsep.epsparql.delta`, :mod:`rsep.epsparql.plan`) and the
policies' bounded state (:mod:`rsep.epsparql.policy`) derive the same solutions another
way. What they share lives here, so that a bug in it is in both and a bug in either
evaluator's own part shows up in the differential tests that compare them:

* what patterns read (:class:`World`: the occurrences, the background, the consumed
  items, the window of a policy) and the expressions' evaluation (:class:`ExprEvaluator`,
  sigma by pyoxigraph or the compiled FILTER);
* the solution-level operators: LeftJoin-like joins (:func:`left_join`, with
  :func:`no_later`), MINUS (:func:`removes`), property paths (:func:`path_solutions`),
  BIND (:func:`extend_solutions`) and SELECT (:func:`project`), and a solution's
  :data:`interval` for the selection of 000's Eqs. (10) / (11).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TypedDict

import pyoxigraph as ox

from rsep.algebra.epsparql import INF, XSD, Expr, Extend, Path, Project, Unit
from rsep.epsparql.data import OccurrenceData, item_of
from rsep.epsparql.expr import Fallback, Fn, compile_filter, holds
from rsep.epsparql.matcher import OccurrenceStore, Solution, Source, combine, compatible
from rsep.sparql.rows import ROWS, rows_block
from rsep.stream.time import TimeKind, format_datetime_ms

# What EXISTS reads for a solution: the store, its default graphs (the visible items) and
# named graphs (the background).
Scope = tuple[ox.Store, list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph],
              list[ox.NamedNode | ox.BlankNode]]


class Dataset(TypedDict, total=False):
    """The graphs a query runs on: Store.query's keywords."""

    default_graph: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph]
    named_graphs: list[ox.NamedNode | ox.BlankNode]


# ---------------------------------------------------------------- expressions (sigma)


class ExprEvaluator:
    """Evaluates expressions with pyoxigraph, one query per batch of solutions: the
    solutions travel in VALUES, the time functions as ?__s, ?__e, ?__d."""

    def __init__(self, kind: TimeKind | None = None) -> None:
        self.kind = kind
        self.store = ox.Store()
        self.calls = 0
        self._fns: dict[tuple[int, TimeKind | None], tuple[Expr, Fn | None]] = {}
        # EXISTS: the store, default graphs (the visible items) and named graphs (the
        # background) for a solution ending at the given time
        self.scope: Callable[[float], Scope] | None = None

    def _time(self, t: float) -> str:
        if t in (INF, -INF):
            return "UNDEF"
        if self.kind is TimeKind.DATETIME:
            return f'"{format_datetime_ms(int(t))}"^^<{XSD}dateTime>'
        return f'"{int(t)}"^^<{XSD}integer>'

    def _duration(self, d: float) -> str:
        if d in (INF, -INF) or d != d:
            return "UNDEF"
        if self.kind is TimeKind.DATETIME:
            ms = int(d)
            sec = f"{ms // 1000}" + (f".{ms % 1000:03d}" if ms % 1000 else "")
            return f'"PT{sec}S"^^<{XSD}dayTimeDuration>'
        return f'"{int(d)}"^^<{XSD}integer>'

    def _rows(self, e: Expr, rows: list[tuple[Solution, float, float]]) -> tuple[list[str], list[dict[str, str]]]:
        """The expression's variables and, per row, their values with sigma's ?__s ?__e ?__d."""
        names = sorted(v for v in e.variables if not v.startswith("__"))
        out = []
        for s, ta, tw in rows:
            d = dict(s.mu)
            r = {n: d[n] for n in names if n in d}
            for n, v in (("__s", self._time(ta)), ("__e", self._time(tw)), ("__d", self._duration(tw - ta))):
                if v != "UNDEF":
                    r[n] = v
            out.append(r)
        return [*names, "__s", "__e", "__d"], out

    def _compiled(self, e: Expr) -> Fn | None:
        c = e.__dict__.get("_fn")
        if c is None or c[0] is not self.kind or c[2] is not self:
            key = (id(e), self.kind)
            if key not in self._fns:
                self._fns[key] = (e, compile_filter(e.tree if e.tree is not None else e.text,
                                                    e.prologue, self.kind is TimeKind.DATETIME))
            c = (self.kind, self._fns[key][1], self)
            e.__dict__["_fn"] = c  # frozen dataclass: a cache, not part of its value
        return c[1]

    def _fast(self, f: Fn, rows: list[tuple[Solution, float, float]]) -> list[bool]:
        return holds(f, ((s.mu, ta, tw) for s, ta, tw in rows), self.kind is TimeKind.DATETIME)

    def compiled(self, e: Expr) -> Fn | None:
        """e compiled for the stream's kind of time (None: pyoxigraph evaluates it)."""
        return None if e.reads else self._compiled(e)

    def test(self, e: Expr, rows: list[tuple[Solution, float, float]]) -> list[bool]:
        """mu(sigma_{ta,tw}(F)) for each (solution, ta, tw): its effective boolean value."""
        if not rows:
            return []
        f = self.compiled(e)
        if f is not None:
            try:
                return self._fast(f, rows)
            except Fallback:
                pass  # a value the fast path does not mirror: pyoxigraph decides below
        ok = {i for i, _ in self._run(e, rows, f"SELECT ?__i WHERE {{ {{}} FILTER ({e.text}) }}")}
        return [i in ok for i in range(len(rows))]

    def value(self, e: Expr, rows: list[tuple[Solution, float, float]]) -> list[str | None]:
        if not rows:
            return []
        out: list[str | None] = [None] * len(rows)
        for i, r in self._run(e, rows, f"SELECT ?__i ?__r WHERE {{ {{}} BIND (({e.text}) AS ?__r) }}"):
            v = r["__r"]
            if v is not None:
                out[i] = str(v)
        return out

    def _run(self, e: Expr, rows: list[tuple[Solution, float, float]],
             body: str) -> list[tuple[int, ox.QuerySolution]]:
        """Run ``body`` (its ``{}`` standing for the rows, :func:`rsep.sparql.rows.rows_block`)
        once per batch: one batch, or with EXISTS one per end time, over the data visible then."""
        groups: dict[float, list[int]] = {}
        if e.reads and self.scope is not None:
            for i, (_, _, tw) in enumerate(rows):
                groups.setdefault(tw, []).append(i)
        else:
            groups[INF] = list(range(len(rows)))
        out: list[tuple[int, ox.QuerySolution]] = []
        for tw, idx in groups.items():
            names, batch = self._rows(e, [rows[i] for i in idx])
            kw: Dataset
            if e.reads and self.scope is not None:
                store, default, named = self.scope(tw)
                kw = {"default_graph": default, "named_graphs": [*named, ROWS]}
            else:
                store, kw = self.store, {}
            self.calls += 1
            with rows_block(names, batch, store) as block:
                res = store.query(e.prologue + body.replace("{}", block, 1), **kw)
                assert isinstance(res, ox.QuerySolutions)
                out.extend((idx[int(r["__i"].value)], r) for r in res)
        return out

    def order(self, e: Expr, sols: list[Solution]) -> list[Solution]:
        """The solutions sorted as ORDER BY sorts them (pyoxigraph orders the rows)."""
        if len(sols) < 2:
            return sols
        rows = [(s, s.ta, s.tw) for s in sols]
        got = self._run(e, rows, f"SELECT ?__i WHERE {{ {{}} }} ORDER BY {e.text}")
        return [sols[i] for i, _ in got]

    def filter(self, e: Expr | None, sols: list[Solution]) -> list[Solution]:
        if e is None or not sols:
            return sols
        keep = self.test(e, [(s, s.ta, s.tw) for s in sols])
        return [s for s, k in zip(sols, keep, strict=True) if k]



# ---------------------------------------------------------------- what patterns read


@dataclass
class World:
    """What patterns read: stream occurrences, background graphs, consumed items."""

    occ: OccurrenceStore
    background: dict[str, OccurrenceStore]
    exprs: ExprEvaluator
    consumed: set[int] = field(default_factory=set)
    # the window of a chronological / recent query at the current instant: visible
    # occurrences start after lo (at or after, when not strict)
    lo: float = -INF
    lo_strict: bool = False
    # results of evaluate(n, hi, subst) while the above stay fixed (one instant's evaluation)
    memo: dict[tuple, list[Solution]] | None = None
    data: OccurrenceData | None = None  # the items as named graphs, for paths and EXISTS

    def needs_data(self) -> OccurrenceData:
        if self.data is None:
            self.data = OccurrenceData()
            for oc in self.occ.all:
                self.data.add(oc.s, oc.p, oc.o, oc.ta, oc.tw, oc.item)
            self.exprs.scope = self.scope
        return self.data

    def visible(self, ta: float, item: int) -> bool:
        return item not in self.consumed and (ta > self.lo if self.lo_strict else ta >= self.lo)

    def scope(self, t: float) -> Scope:
        """What EXISTS sees for a solution ending at t: the visible items that ended by t
        (as OPTIONAL's operand, 003's LeftJoin), and the background graphs."""
        d = self.needs_data()
        items: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph] = [
            g for i, (ta, tw, g) in d.items.items() if tw <= t and self.visible(ta, i)]
        for iri in getattr(self.background, "graphs", {}):
            if iri not in d.background:
                bg = self.background.get(iri)
                assert bg is not None  # (Graphs.get materialises each graph it has)
                d.load_background(iri, ((o.s, o.p, o.o) for o in bg.all))
        return d.store, items, list(d.background.values())


def background_source(w: World, iri: str) -> Source:
    store = w.background.get(iri, OccurrenceStore())
    return lambda s, p, o: store.candidates(s, p, o)


# ---------------------------------------------------------------- solution-level operators


def no_later(x: Solution, y: Solution) -> bool:
    """LeftJoin's time condition: the optional part ends no later than the mandatory one
    (any part, when the mandatory one is timeless: it is never output alone)."""
    return y.tw <= x.tw or x.tw == -INF


def removes(x: Solution, y: Solution) -> bool:
    """MINUS: y removes x when compatible, sharing a variable, ending no later."""
    if not no_later(x, y) or not compatible(x.mu, y.mu):
        return False
    names = {k for k, _ in x.mu}
    return any(k in names for k, _ in y.mu)


def path_solutions(n: Path, d: OccurrenceData, items: Iterable[int]) -> list[Solution]:
    """The path's solutions inside each of the given items, with the item's interval."""
    graphs: list[ox.NamedNode | ox.BlankNode] = [d.graph(i) for i in items]
    if not graphs:
        return []
    q = f"{n.prologue}SELECT * WHERE {{ GRAPH ?__g {{ {n.text} }} }}"
    out = []
    res = d.store.query(q, named_graphs=graphs)
    assert isinstance(res, ox.QuerySolutions)
    for r in res:
        item = item_of(r["__g"])
        ta, tw, _ = d.items[item]
        mu = tuple(sorted((v, d.own(item, str(t))) for v in n.names
                          if (t := r[v]) is not None))
        out.append(Solution(mu, ta, tw, frozenset((item,))))
    return out


def left_join(mand: list[Solution], opt: list[Solution] | None, cond: Expr | None, ex: ExprEvaluator,
          when: Callable[[Solution, Solution], bool], mandatory_right: bool = False,
          cands: Callable[[Solution], Iterable[Solution]] | None = None) -> list[Solution]:
    """LeftJoin-like: each mandatory solution joined with the optional ones satisfying the
    time condition ``when(mandatory, optional)`` and F (on the combination, sigma with the
    combination's interval), or alone when there is none. ``cands(m)``, when given, narrows
    the optional solutions to look at for m (an index)."""
    if cands is None:
        assert opt is not None
        pairs = [(m, o) for m in mand for o in opt if when(m, o) and compatible(m.mu, o.mu)]
    else:
        pairs = [(m, o) for m in mand for o in cands(m) if when(m, o) and compatible(m.mu, o.mu)]
    combos = [combine(o, m) if mandatory_right else combine(m, o) for m, o in pairs]
    ok = ex.test(cond, [(c, c.ta, c.tw) for c in combos]) if cond is not None else [True] * len(combos)
    out: list[Solution] = []
    joined: set[int] = set()
    for (m, _), c, k in zip(pairs, combos, ok, strict=True):
        if k:
            out.append(c)
            joined.add(id(m))
    out.extend(m for m in mand if id(m) not in joined)
    return out


# A solution's interval (ta, tw), read in C: selection reads it once per candidate.
interval: Callable[[Solution], tuple[float, float]] = attrgetter("ta", "tw")


def extend_solutions(n: Extend, sols: list[Solution], ex: ExprEvaluator) -> list[Solution]:
    vals = ex.value(n.expr, [(s, s.ta, s.tw) for s in sols])
    out = []
    for s, v in zip(sols, vals, strict=True):
        if v is None:
            out.append(s)
        else:
            out.append(Solution(tuple(sorted((*s.mu, (n.var, v)))), s.ta, s.tw, s.just))
    return out


def project(n: Project, sols: list[Solution], ex: ExprEvaluator) -> list[Solution]:
    if n.items is None:
        out = sols
    else:
        cur = sols
        for var, e in n.items:
            if e is not None:
                cur = extend_solutions(Extend(Unit(), var, e), cur, ex)
        keep = {v for v, _ in n.items}
        out = [Solution(tuple(kv for kv in s.mu if kv[0] in keep), s.ta, s.tw, s.just) for s in cur]
    if n.distinct:
        seen: set[tuple] = set()
        uniq = []
        for s in out:
            k = (s.mu, s.ta, s.tw)
            if k not in seen:
                seen.add(k)
                uniq.append(s)
        out = uniq
    return out
