"""EP-SPARQL (003): the Section 4.2 semantics over interval-timestamped triples, push-based.

A solution is ``(mu, t_alpha, t_omega)``; every triple of an rsep :class:`Event`
is a triple occurrence with the event's ``[start, end]``. Two evaluators:

* :func:`evaluate` transcribes Section 4.2 over a set of occurrences (the
  reference; it also runs the ETALIS chronological / recent settings, with the
  selection of RSEP-QL's Eq. (10) / (11) at every SeqJoin);
* :class:`Delta` is the incremental evaluator the runtime uses in the
  unrestricted setting: at instant tau it derives exactly the solutions with
  ``t_omega == tau`` from the children's earlier solutions (kept per node) and
  their solutions at tau. Every operator's result ends at the end of one of its
  operands and its negative conditions (LeftJoin, SeqRightJoin, EqLeftJoin)
  only look at solutions ending no later, so a solution is final when its end
  is reached: results are output then and never retracted (timewise
  monotonicity).

Readings of the damaged/ambiguous formulas are listed in docs/semantics.md
("EP-SPARQL").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TypedDict

import pyoxigraph as ox

from rsep.algebra import selection
from rsep.algebra.epsparql import (  # noqa: F401 - the algebra, read with its evaluator
    BGP,
    DOMAIN,
    INF,
    POLICIES,
    RANGE,
    RDF_TYPE,
    RDFS,
    SUBCLASS,
    SUBPROP,
    XSD,
    Background,
    Binary,
    EpSparqlQuery,
    EqJoin,
    EqLeftJoin,
    EtalisPolicy,
    Expr,
    Extend,
    Filter,
    Join,
    LeftJoin,
    Minus,
    Mu,
    Node,
    OrderBy,
    Path,
    Project,
    SeqJoin,
    SeqRightJoin,
    Term,
    TriplePattern,
    Union,
    Unit,
    Values,
    Var,
    nodes,
    parse_policy,
    reads_history,
    static,
    variables,
)
from rsep.algebra.events import Selection
from rsep.epsparql.data import OccurrenceData, item_of
from rsep.epsparql.expr import Fallback, Fn, compile_filter, holds
from rsep.epsparql.matcher import (
    TIMELESS,
    Occurrence,
    OccurrenceStore,
    Solution,
    Source,
    combine,
    compatible,
    match_bgp,
)
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


# ---------------------------------------------------------------- reference evaluator


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


def _live(w: World, hi: float) -> Source:
    def src(s: str | None, p: str | None, o: str | None) -> Iterable[Occurrence]:
        lo, consumed = w.lo, w.consumed
        if w.lo_strict:
            return (oc for oc in w.occ.candidates(s, p, o) if oc.tw <= hi and oc.ta > lo
                    and oc.item not in consumed)
        return (oc for oc in w.occ.candidates(s, p, o) if oc.tw <= hi and oc.ta >= lo
                and oc.item not in consumed)
    return src


def background_source(w: World, iri: str) -> Source:
    store = w.background.get(iri, OccurrenceStore())
    return lambda s, p, o: store.candidates(s, p, o)


def evaluate(n: Node, w: World, sel: Selection = Selection.UNRESTRICTED, hi: float = INF,
             subst: Mu = ()) -> list[Solution]:
    """The solutions of n over the live occurrences ending at or before ``hi``, compatible
    with ``subst`` (Sec. 4.2; SeqJoin with Eq. (10)/(11) of 000 under a policy)."""
    if subst:  # only n's variables matter (its solutions bind no others)
        vs = n.__dict__.get("_vars")
        if vs is None:
            vs = n.__dict__["_vars"] = frozenset(variables(n))
        subst = tuple(kv for kv in subst if kv[0] in vs)
    memo, key = w.memo, (id(n), sel, hi, subst)
    if memo is not None and key in memo:
        return memo[key]
    out = _eval(n, w, sel, hi, subst)
    out = [s for s in out if compatible(s.mu, subst)] if subst else out
    if memo is not None:
        memo[key] = out
    return out


def _eval(n: Node, w: World, sel: Selection, hi: float, subst: Mu) -> list[Solution]:
    ex = w.exprs
    if isinstance(n, Unit):
        return [TIMELESS]
    if isinstance(n, BGP):
        names = {t.name for tp in n.patterns for t in tp if isinstance(t, Var)}
        given = {k: v for k, v in subst if k in names}  # the BGP under mu2 (000 Eq. (7))
        return match_bgp(n.patterns, [_live(w, hi)] * len(n.patterns), given)
    if isinstance(n, Background):
        return match_bgp(n.patterns, [background_source(w, n.iri)] * len(n.patterns))
    if isinstance(n, Values):
        return [Solution(row, INF, -INF) for row in n.rows]
    if isinstance(n, Path):
        d = w.needs_data()
        return path_solutions(n, d, [i for i, (ta, tw, _) in d.items.items() if tw <= hi and w.visible(ta, i)])
    if isinstance(n, Filter):
        return ex.filter(n.cond, evaluate(n.arg, w, sel, hi, subst))
    if isinstance(n, Extend):
        return extend_solutions(n, evaluate(n.arg, w, sel, hi), ex)
    if isinstance(n, OrderBy):
        return ex.order(n.keys, evaluate(n.arg, w, sel, hi, subst))
    if isinstance(n, Project):
        return project(n, evaluate(n.arg, w, sel, hi), ex)
    assert isinstance(n, Binary)
    if isinstance(n, Union):
        return evaluate(n.left, w, sel, hi, subst) + evaluate(n.right, w, sel, hi, subst)
    if isinstance(n, Join):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi, subst)
        return [combine(x, y) for x in a for y in b if compatible(x.mu, y.mu)]
    if isinstance(n, EqJoin):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi, subst)
        return [combine(x, y) for x in a for y in b
                if x.ta == y.ta and x.tw == y.tw and compatible(x.mu, y.mu)]
    if isinstance(n, SeqJoin):
        return _seq(n, w, sel, hi, subst)
    if isinstance(n, LeftJoin):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi)
        return left_join(a, b, n.cond, ex, no_later)
    if isinstance(n, Minus):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi)
        return [x for x in a if not any(removes(x, y) for y in b)]
    if isinstance(n, EqLeftJoin):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi)
        return left_join(a, b, n.cond, ex, lambda x, y: x.ta == y.ta and x.tw == y.tw)
    if isinstance(n, SeqRightJoin):
        a = evaluate(n.left, w, sel, hi)
        b = evaluate(n.right, w, sel, hi, subst)
        return left_join(b, a, n.cond, ex, lambda x, y: y.tw < x.ta, mandatory_right=True)
    raise TypeError(f"not an EP-SPARQL pattern: {n!r}")


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


def _seq(n: SeqJoin, w: World, sel: Selection, hi: float, subst: Mu) -> list[Solution]:
    rights = evaluate(n.right, w, sel, hi, subst)
    out: list[Solution] = []
    if sel is Selection.UNRESTRICTED:
        lefts_all = evaluate(n.left, w, sel, hi, subst)
        for m2 in rights:
            out.extend(combine(m1, m2) for m1 in lefts_all
                       if m1.tw < m2.ta and compatible(m1.mu, m2.mu))
        return out
    # 000 Eq. (10) / (11), with the readings of docs/semantics.md (RSEP-QL event patterns)
    lefts = (_lefts_indexed(n, w, sel, hi, subst, rights) if INDEXED_LEFTS and
             _per_solution(n.left) else _lefts(n, w, sel, hi, subst, rights))
    usable = [m2 for m2 in rights if lefts[id(m2)]]
    for m2 in selection.select(sel, usable, interval, _compatible):
        out.extend(combine(m1, m2) for m1 in selection.pick(sel, lefts[id(m2)], interval))
    return out


def _lefts(n: SeqJoin, w: World, sel: Selection, hi: float, subst: Mu,
           rights: list[Solution]) -> dict[int, list[Solution]]:
    """Each right operand's left candidates, as Eq. (10) / (11) write them: the left side
    under mu2, over what ended before m2 started."""
    lefts = {}
    for m2 in rights:
        sub = tuple(sorted({**dict(subst), **dict(m2.mu)}.items()))
        lefts[id(m2)] = [m1 for m1 in evaluate(n.left, w, sel, min(hi, m2.ta - 1), sub)
                         if m1.tw < m2.ta]
    return lefts


# _lefts_indexed in place of _lefts where _per_solution allows (a switch for the test that
# keeps the two equal)
INDEXED_LEFTS = True


def _per_solution(n: Node) -> bool:
    """Whether n's solutions under a substitution, up to hi, are its solutions up to any
    later hi compatible with the substitution and ending by hi, in the same order: a BGP
    (one occurrence per pattern, each ending by the solution's end; a bound variable only
    narrows the occurrences each pattern reads, in the order they were added), and FILTERs
    over one (each solution tested on its own: EXISTS reads what ended by the solution's
    end). Not so under a nested SEQ of a policy, whose selection depends on the rivals."""
    while isinstance(n, Filter):
        n = n.arg
    return isinstance(n, BGP)


def _lefts_indexed(n: SeqJoin, w: World, sel: Selection, hi: float, subst: Mu,
                   rights: list[Solution]) -> dict[int, list[Solution]]:
    """:func:`_lefts` with the left side evaluated once, its solutions grouped by the
    variables it shares with the right side: one evaluation per instant instead of one
    per right operand (SRBench's events hold hundreds of readings each)."""
    if not rights:
        return {}
    top = min(hi, max(m2.ta for m2 in rights) - 1)
    all_lefts = evaluate(n.left, w, sel, top, subst)
    shared = sorted(frozenset(variables(n.left)) & frozenset(variables(n.right)))
    groups: dict[tuple, list[Solution]] = {}
    for m1 in all_lefts:
        mu = dict(m1.mu)
        groups.setdefault(tuple(mu.get(v) for v in shared), []).append(m1)
    lefts = {}
    for m2 in rights:
        mu2 = dict(m2.mu)
        if all(v in mu2 for v in shared):
            cands = groups.get(tuple(mu2[v] for v in shared), [])
        else:  # an unbound shared variable (OPTIONAL on the right): compatibility decides
            cands = [m1 for m1 in all_lefts if compatible(m1.mu, m2.mu)]
        bound = min(hi, m2.ta - 1)  # (so m1.tw < m2.ta)
        lefts[id(m2)] = [m1 for m1 in cands if m1.tw <= bound]
    return lefts


# A solution's interval (ta, tw), read in C: selection reads it once per candidate.
interval: Callable[[Solution], tuple[float, float]] = attrgetter("ta", "tw")


def _compatible(a: Solution, b: Solution) -> bool:
    return compatible(a.mu, b.mu)


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
