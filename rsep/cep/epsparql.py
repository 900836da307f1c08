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

import bisect
import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import pyoxigraph as ox

from rsep.algebra.events import Selection
from rsep.cep.epsparql_data import OccurrenceData, item_of
from rsep.cep.epsparql_expr import Dur, Fallback, Fn, compile_filter, term_value
from rsep.events.semantics import precedes
from rsep.sparql.rows import ROWS, rows_block
from rsep.stream.time import TimeKind, format_datetime_ms

if TYPE_CHECKING:
    pass

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

# ---------------------------------------------------------------- solutions


@dataclass(frozen=True, slots=True)
class Solution:
    """(mu, t_alpha, t_omega), with the occurrences (stream items) that justify it."""

    mu: Mu
    ta: float
    tw: float
    just: frozenset[int] = frozenset()

    def get(self, var: str) -> str | None:
        for k, v in self.mu:
            if k == var:
                return v
        return None

    @property
    def key(self) -> tuple:
        return (self.mu, self.ta, self.tw, self.just)


def compatible(a: Mu, b: Mu) -> bool:
    if not a or not b:
        return True
    db = dict(b)
    for k, v in a:
        w = db.get(k)
        if w is not None and w != v:
            return False
    return True


def combine(a: Solution, b: Solution) -> Solution:
    """(mu, ta, tw) join (mu', ta', tw') = (mu u mu', min(ta, ta'), max(tw, tw'))."""
    d = dict(a.mu)
    d.update(b.mu)
    return Solution(tuple(sorted(d.items())), min(a.ta, b.ta), max(a.tw, b.tw), a.just | b.just)


TIMELESS = Solution((), INF, -INF)


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
                self._fns[key] = (e, compile_filter(e.text, e.prologue, self.kind is TimeKind.DATETIME))
            c = (self.kind, self._fns[key][1], self)
            e.__dict__["_fn"] = c  # frozen dataclass: a cache, not part of its value
        return c[1]

    def _fast(self, f: Fn, names: frozenset[str], rows: list[tuple[Solution, float, float]]) -> list[bool]:
        dt = self.kind is TimeKind.DATETIME
        out = []
        for s, ta, tw in rows:
            vals = {k: term_value(v) for k, v in s.mu if k in names}
            if ta != INF and tw != -INF:
                vals["__d"] = Dur(tw - ta) if dt else int(tw - ta)
                vals["__s"], vals["__e"] = int(ta), int(tw)
            out.append(f(vals.get) is True)
        return out

    def test(self, e: Expr, rows: list[tuple[Solution, float, float]]) -> list[bool]:
        """mu(sigma_{ta,tw}(F)) for each (solution, ta, tw): its effective boolean value."""
        if not rows:
            return []
        f = None if e.reads else self._compiled(e)
        if f is not None:
            try:
                return self._fast(f, e.variables, rows)
            except Fallback:
                pass
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


# ---------------------------------------------------------------- occurrences, RDFS


@dataclass(slots=True)
class Occurrence:
    s: str
    p: str
    o: str
    ta: float  # (+inf, -inf: a background triple's, timeless)
    tw: float
    item: int  # the stream item (event) it came from: what consumption removes


# The occurrences a triple pattern (s, p, o: a term, or None for a variable) may match.
Source = Callable[[str | None, str | None, str | None], Iterable[Occurrence]]
# What EXISTS reads for a solution: the store, its default graphs (the visible items) and
# named graphs (the background).
Scope = tuple[ox.Store, list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph],
              list[ox.NamedNode | ox.BlankNode]]


class Dataset(TypedDict, total=False):
    """The graphs a query runs on: Store.query's keywords."""

    default_graph: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph]
    named_graphs: list[ox.NamedNode | ox.BlankNode]


class Schema:
    """RDFS over the background graphs, computed once: the transitive closures of
    subClassOf and subPropertyOf, and the (closed) classes implied by domain and range."""

    def __init__(self, triples: Iterable[tuple[str, str, str]] = ()) -> None:
        self.sub: dict[str, set[str]] = {}
        self.subp: dict[str, set[str]] = {}
        self.dom: dict[str, set[str]] = {}
        self.rng: dict[str, set[str]] = {}
        for s, p, o in triples:
            if p == SUBCLASS:
                self.sub.setdefault(s, set()).add(o)
            elif p == SUBPROP:
                self.subp.setdefault(s, set()).add(o)
            elif p == DOMAIN:
                self.dom.setdefault(s, set()).add(o)
            elif p == RANGE:
                self.rng.setdefault(s, set()).add(o)
        self._sup: dict[str, frozenset[str]] = {}
        self._supp: dict[str, frozenset[str]] = {}
        self._expand: dict[tuple[str, str], tuple] = {}

    @staticmethod
    def _closure(x: str, edges: dict[str, set[str]], memo: dict[str, frozenset[str]]) -> frozenset[str]:
        if x in memo:
            return memo[x]
        seen = {x}
        stack = [x]
        while stack:
            for y in edges.get(stack.pop(), ()):
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        memo[x] = frozenset(seen)
        return memo[x]

    def superclasses(self, c: str) -> frozenset[str]:
        """c and every class it is a (transitive) subclass of."""
        return self._closure(c, self.sub, self._sup)

    def superproperties(self, p: str) -> frozenset[str]:
        return self._closure(p, self.subp, self._supp)

    @property
    def empty(self) -> bool:
        return not (self.sub or self.subp or self.dom or self.rng)

    def entail(self, s: str, p: str, o: str) -> list[tuple[str, str, str]]:
        """The triple and what RDFS (rdfs2, 3, 5, 7, 9, 11) derives from it with the schema."""
        if self.empty:
            return [(s, p, o)]
        out = {(s, p, o)}
        for q in self.superproperties(p):
            out.add((s, q, o))
            for c in self.dom.get(q, ()):
                out.update((s, RDF_TYPE, d) for d in self.superclasses(c))
            if not o.startswith('"'):
                for c in self.rng.get(q, ()):
                    out.update((o, RDF_TYPE, d) for d in self.superclasses(c))
        for s2, p2, o2 in list(out):
            if p2 == RDF_TYPE:
                out.update((s2, RDF_TYPE, d) for d in self.superclasses(o2))
        return sorted(out)


class Graphs(dict):
    """The background graphs as occurrence stores, each materialised with its RDFS closure
    once, when a GRAPH pattern first reads it (the schema alone serves the stream)."""

    def __init__(self, graphs: dict[str, list[tuple[str, str, str]]], schema: Schema) -> None:
        super().__init__()
        self.graphs = graphs
        self.schema = schema

    def get(self, iri: str, default: Any = None) -> Any:
        if iri not in self and iri in self.graphs:
            st = OccurrenceStore()
            seen: set[tuple[str, str, str]] = set()
            for t in self.graphs[iri]:
                for x in self.schema.entail(*t):
                    if x not in seen:
                        seen.add(x)
                        st.add(Occurrence(*x, ta=INF, tw=-INF, item=0))
            self[iri] = st
        return super().get(iri, default)


class OccurrenceStore:
    """Triple occurrences, indexed by predicate and by (predicate, object)."""

    def __len__(self) -> int:
        return len(self.all)

    def prune(self, keep: Callable[[Occurrence], bool]) -> None:
        """Keep only the occurrences ``keep`` accepts (indexes and keys rebuilt)."""
        old = self.all
        OccurrenceStore.__init__(self)
        for oc in old:
            if keep(oc):
                self.add(oc)

    def __init__(self) -> None:
        self.all: list[Occurrence] = []
        self.by_p: dict[str, list[Occurrence]] = {}
        self.by_po: dict[tuple[str, str], list[Occurrence]] = {}
        self.by_ps: dict[tuple[str, str], list[Occurrence]] = {}
        self.keys: set[tuple] = set()
        self.version = getattr(self, "version", 0)  # counts additions (kept by prune)
        self.fresh: list[Occurrence] = []  # the occurrences ending at fresh_tau, the latest end
        self.fresh_tau: float = -INF

    def add(self, oc: Occurrence) -> bool:
        """Add an occurrence; S is a set (Sec. 4.2): an existing (s, p, o, t, t') is kept once.
        Occurrences come in order of their ends (the stream's time order)."""
        key = (oc.s, oc.p, oc.o, oc.ta, oc.tw)
        if key in self.keys:
            return False
        self.keys.add(key)
        self.version += 1
        if oc.tw > self.fresh_tau:
            self.fresh, self.fresh_tau = [], oc.tw
        if oc.tw == self.fresh_tau:
            self.fresh.append(oc)
        self.all.append(oc)
        self.by_p.setdefault(oc.p, []).append(oc)
        self.by_po.setdefault((oc.p, oc.o), []).append(oc)
        self.by_ps.setdefault((oc.p, oc.s), []).append(oc)
        return True

    def candidates(self, s: str | None, p: str | None, o: str | None) -> list[Occurrence]:
        if p is not None:
            if o is not None:
                return self.by_po.get((p, o), [])
            if s is not None:
                return self.by_ps.get((p, s), [])
            return self.by_p.get(p, [])
        return self.all


def _bind(t: Term, mu: dict[str, str]) -> str | None:
    if isinstance(t, Var):
        return mu.get(t.name)
    return t


def _match(tp: TriplePattern, oc: tuple[str, str, str], mu: dict[str, str]) -> dict[str, str] | None:
    out = mu
    for t, v in zip(tp, oc, strict=True):
        if isinstance(t, Var):
            w = out.get(t.name)
            if w is None:
                if out is mu:
                    out = dict(mu)
                out[t.name] = v
            elif w != v:
                return None
        elif t != v:
            return None
    return out


def match_bgp(patterns: tuple[TriplePattern, ...], sources: Sequence[Source],
              given: dict[str, str] | None = None) -> list[Solution]:
    """BGP(P): one occurrence per triple pattern; t_alpha = min start, t_omega = max end.
    ``sources[i]`` gives the occurrences pattern i may use."""
    results: list[Solution] = []

    def rec(i: int, mu: dict[str, str], ta: float, tw: float, just: frozenset[int]) -> None:
        if i == len(patterns):
            mu_out = tuple(sorted((k, v) for k, v in mu.items() if not k.startswith("_b")))
            results.append(Solution(mu_out, ta, tw, just))
            return
        tp = patterns[i]
        s, p, o = (_bind(t, mu) for t in tp)
        for oc in sources[i](s, p, o):
            m = _match(tp, (oc.s, oc.p, oc.o), mu)
            if m is not None:
                rec(i + 1, m, min(ta, oc.ta), max(tw, oc.tw), just | {oc.item})

    rec(0, given or {}, INF, -INF, frozenset())
    return results


def _match_one(tp: TriplePattern, occs: list[Occurrence]) -> list[Solution]:
    """BGP(P) of one triple pattern over the given occurrences (match_bgp's fast path)."""
    out = []
    for oc in occs:
        m = _match(tp, (oc.s, oc.p, oc.o), {})
        if m is not None:
            mu = tuple(sorted((k, v) for k, v in m.items() if not k.startswith("_b")))
            out.append(Solution(mu, oc.ta, oc.tw, frozenset((oc.item,))))
    return out


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


def _bg(w: World, iri: str) -> Source:
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
        return match_bgp(n.patterns, [_bg(w, n.iri)] * len(n.patterns))
    if isinstance(n, Values):
        return [Solution(row, INF, -INF) for row in n.rows]
    if isinstance(n, Path):
        d = w.needs_data()
        return _path(n, d, [i for i, (ta, tw, _) in d.items.items() if tw <= hi and w.visible(ta, i)])
    if isinstance(n, Filter):
        return ex.filter(n.cond, evaluate(n.arg, w, sel, hi, subst))
    if isinstance(n, Extend):
        return _extend(n, evaluate(n.arg, w, sel, hi), ex)
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
        return _left(a, b, n.cond, ex, _no_later)
    if isinstance(n, Minus):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi)
        return [x for x in a if not any(_removes(x, y) for y in b)]
    if isinstance(n, EqLeftJoin):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi)
        return _left(a, b, n.cond, ex, lambda x, y: x.ta == y.ta and x.tw == y.tw)
    if isinstance(n, SeqRightJoin):
        a = evaluate(n.left, w, sel, hi)
        b = evaluate(n.right, w, sel, hi, subst)
        return _left(b, a, n.cond, ex, lambda x, y: y.tw < x.ta, mandatory_right=True)
    raise TypeError(f"not an EP-SPARQL pattern: {n!r}")


def _no_later(x: Solution, y: Solution) -> bool:
    """LeftJoin's time condition: the optional part ends no later than the mandatory one
    (any part, when the mandatory one is timeless: it is never output alone)."""
    return y.tw <= x.tw or x.tw == -INF


def _removes(x: Solution, y: Solution) -> bool:
    """MINUS: y removes x when compatible, sharing a variable, ending no later."""
    if not _no_later(x, y) or not compatible(x.mu, y.mu):
        return False
    names = {k for k, _ in x.mu}
    return any(k in names for k, _ in y.mu)


def _path(n: Path, d: OccurrenceData, items: Iterable[int]) -> list[Solution]:
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


def _left(mand: list[Solution], opt: list[Solution] | None, cond: Expr | None, ex: ExprEvaluator,
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
    lefts = {}
    for m2 in rights:
        sub = tuple(sorted({**dict(subst), **dict(m2.mu)}.items()))
        lefts[id(m2)] = [m1 for m1 in evaluate(n.left, w, sel, min(hi, m2.ta - 1), sub)
                         if m1.tw < m2.ta]
    usable = [m2 for m2 in rights if lefts[id(m2)]]
    chrono = sel is Selection.CHRONOLOGICAL
    for m2 in usable:
        rivals = [o for o in usable if o is not m2 and compatible(o.mu, m2.mu)]
        if chrono and any(precedes((o.ta, o.tw), (m2.ta, m2.tw)) for o in rivals):
            continue
        if not chrono and any(precedes((m2.ta, m2.tw), (o.ta, o.tw)) for o in rivals):
            continue
        ls = lefts[id(m2)]
        k = (min if chrono else max)((m.tw, m.ta) for m in ls)
        out.extend(combine(m1, m2) for m1 in ls if (m1.tw, m1.ta) == k)
    return out


def _extend(n: Extend, sols: list[Solution], ex: ExprEvaluator) -> list[Solution]:
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
                cur = _extend(Extend(Unit(), var, e), cur, ex)
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


# ---------------------------------------------------------------- time horizons (003 Sec. 5)


_NUM = r"[+]?\d+(?:\.\d+)?|\"[+]?\d+(?:\.\d+)?\"\^\^(?:xsd:(?:integer|decimal|int|long)|<http://www\.w3\.org/2001/XMLSchema#(?:integer|decimal|int|long)>)"
_DUR = r"\"-?P[^\"]*\"\^\^(?:xsd:(?:duration|dayTimeDuration)|<http://www\.w3\.org/2001/XMLSchema#(?:duration|dayTimeDuration)>)"
_SPAN = r"(?:\?__d|\?__e\s*-\s*\?__s|\(\s*\?__e\s*-\s*\?__s\s*\))"
_BOUND_RX = [re.compile(rf"^{_SPAN}\s*(?P<op><=|<)\s*(?P<v>{_NUM}|{_DUR})$"),
             re.compile(rf"^(?P<v>{_NUM}|{_DUR})\s*(?P<op>>=|>)\s*{_SPAN}$")]
_DUR_RX = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def conjuncts(text: str) -> list[str]:
    """The top-level ``&&`` operands of an expression (outer parentheses removed)."""
    text = text.strip()
    while text.startswith("(") and _closing(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    out, depth, quote, start, i = [], 0, False, 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            quote = not quote
        elif not quote and c == "(":
            depth += 1
        elif not quote and c == ")":
            depth -= 1
        elif not quote and depth == 0 and text.startswith("||", i):
            return [text]  # || binds looser than &&: one conjunct
        elif not quote and depth == 0 and text.startswith("&&", i):
            out.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    out.append(text[start:])
    if len(out) == 1:
        return [out[0].strip()]
    return [x for part in out for x in conjuncts(part)]


def _closing(text: str, i: int) -> int:
    depth, quote = 0, False
    for j in range(i, len(text)):
        c = text[j]
        if c == '"':
            quote = not quote
        elif not quote and c == "(":
            depth += 1
        elif not quote and c == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _literal_span(v: str, kind: TimeKind | None) -> float:
    """A bound's value in the stream's time unit (ms for dateTime streams), or +inf when it
    cannot bound a duration on this kind of stream (a number on a dateTime stream, a
    duration with years or months)."""
    if v.startswith('"') and "P" in v.split("^^")[0]:
        if kind is not TimeKind.DATETIME:
            return INF
        m = _DUR_RX.match(v[1:v.index('"', 1)])
        if not m or not any(m.groups()):
            return INF
        d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
        return ((d * 24 + h) * 60 + mi) * 60_000 + s * 1000
    if kind is TimeKind.DATETIME:
        return INF
    return float(v.split("^^")[0].strip('"'))


def bound(e: Expr, kind: TimeKind | None) -> float:
    """H such that every solution satisfying ``e`` has t_omega - t_alpha <= H: from the
    top-level conjuncts ``getDURATION() < / <= c`` and ``getENDTIME() - getSTARTTIME()
    < / <= c`` (or mirrored, ``c > getDURATION()``); +inf when there is none."""
    return bound_exact(e, kind)[0]


def bound_exact(e: Expr, kind: TimeKind | None) -> tuple[float, bool]:
    """(H, strict): every solution satisfying ``e`` has t_omega - t_alpha < H (strict) or
    <= H; (+inf, False) when there is no bound."""
    h, strict = INF, False
    for c in conjuncts(e.text):
        for rx in _BOUND_RX:
            m = rx.match(c)
            if m:
                v = _literal_span(m.group("v"), kind)
                st = m.group("op") in ("<", ">")
                if v < h or (v == h and st):
                    h, strict = v, st
    return h, strict


def window(root: Node, kind: TimeKind | None) -> tuple[float, bool]:
    """The time window of a chronological / recent query: the duration bound of the
    FILTERs over its whole pattern (ETALIS's window; see docs/semantics.md)."""
    h, strict = INF, False
    n = root
    while isinstance(n, (Project, Extend, Filter)):
        if isinstance(n, Filter):
            v, st = bound_exact(n.cond, kind)
            if v < h or (v == h and st):
                h, strict = v, st
        n = n.kids[0]
    return h, strict


def horizons(root: Node, kind: TimeKind | None) -> dict[int, float]:
    """Per node: how far back (before the current instant) a solution of the node may
    start and still be part of a future solution of the root. A bounded Filter bounds its
    operand; the bound goes down through Join, SeqJoin, EqJoin, Union, Project, Extend
    and the mandatory operand of the optional operators, not into their optional operand
    (an optional solution that could no longer join could still suppress the mandatory
    one alone, so forgetting it would change results)."""
    out: dict[int, float] = {}

    def walk(n: Node, h: float) -> None:
        out[id(n)] = max(out.get(id(n), -INF), h)
        if isinstance(n, Filter):
            walk(n.arg, min(h, bound(n.cond, kind)))
        elif isinstance(n, (LeftJoin, EqLeftJoin, Minus)):
            walk(n.left, h)
            walk(n.right, INF)
        elif isinstance(n, SeqRightJoin):
            walk(n.left, INF)
            walk(n.right, h)
        else:
            for k in n.kids:
                walk(k, h)

    walk(root, INF)
    return out


def _timed(n: Node) -> bool:
    """Every solution of n has a finite interval (it reads the stream)."""
    if isinstance(n, (BGP, Path)):
        return True
    if isinstance(n, (Unit, Background, Values)):
        return False
    if isinstance(n, (Filter, Extend, Project, OrderBy)):
        return _timed(n.kids[0])
    if isinstance(n, Union):
        return _timed(n.left) and _timed(n.right)
    if isinstance(n, (LeftJoin, EqLeftJoin, Minus)):
        return _timed(n.left)
    if isinstance(n, SeqRightJoin):
        return _timed(n.right)
    assert isinstance(n, Binary)
    return _timed(n.left) or _timed(n.right)


def _is_bound(c: str) -> bool:
    return any(rx.match(c) for rx in _BOUND_RX)


def push_filters(root: Node) -> Node:
    """An equivalent pattern (for the unrestricted setting) with FILTER conjuncts moved down
    to the operands that bind all their variables, and duration bounds copied down to the
    timed operands, so partial solutions are cut early (003 Sec. 5's binarised conditions).
    A conjunct C of Filter(C && D, P) moves into a mandatory operand P1 of P when its
    variables are all always bound by P1 and it reads no time function: its value on a
    solution of P is its value on the P1 part. ``getDURATION() < c`` also holds for every
    part of a Join / SeqJoin / EqJoin / Union solution and for the mandatory part of the
    optional operators (their intervals contain the part's), so it is copied there. Not for
    the chronological / recent settings: their selection precedes the FILTER."""

    def rebuild(n: Node, pending: list[Expr]) -> Node:
        if isinstance(n, Filter):
            exprs = [Expr(c, frozenset(v for v in re.findall(r"[?$](\w+)", c) if not v.startswith("__")),
                          n.cond.prologue) for c in conjuncts(n.cond.text)]
            return rebuild(n.arg, pending + exprs)
        if isinstance(n, Binary) and not isinstance(n, Union):
            mand = {Join: ("left", "right"), SeqJoin: ("left", "right"), EqJoin: ("left", "right"),
                    LeftJoin: ("left",), EqLeftJoin: ("left",), SeqRightJoin: ("right",),
                    Minus: ("left",)}[type(n)]
            down: dict[str, list[Expr]] = {"left": [], "right": []}
            stay: list[Expr] = []
            for c in pending:
                placed = False
                for side in mand:
                    kid = getattr(n, side)
                    if c.timed:
                        if _is_bound(c.text) and _timed(kid) and not isinstance(kid, BGP):
                            down[side].append(c)
                    elif c.variables <= certain(kid) and not placed:
                        down[side].append(c)
                        placed = True
                if c.timed or not placed:
                    stay.append(c)
            m = type(n)(rebuild(n.left, down["left"]), rebuild(n.right, down["right"]), n.cond)
            return _wrap(m, stay)
        if isinstance(n, Union):
            return _wrap(Union(rebuild(n.left, []), rebuild(n.right, []), n.cond), pending)
        if isinstance(n, Project):
            return _wrap(Project(rebuild(n.arg, []), n.items, n.distinct), pending)
        if isinstance(n, Extend):
            return _wrap(Extend(rebuild(n.arg, []), n.var, n.expr), pending)
        return _wrap(n, pending)

    return rebuild(root, [])


def _wrap(n: Node, conds: list[Expr]) -> Node:
    if not conds:
        return n
    text = " && ".join(f"({c.text})" for c in conds) if len(conds) > 1 else conds[0].text
    return Filter(Expr(text, frozenset().union(*(c.variables for c in conds)), conds[0].prologue), n)


def leaf_horizon(root: Node, hs: dict[int, float]) -> float:
    """The largest horizon of the query's stream BGPs: how long it needs an occurrence."""
    out = -INF

    def walk(n: Node) -> None:
        nonlocal out
        if isinstance(n, BGP):
            out = max(out, hs.get(id(n), INF))
        for k in n.kids:
            walk(k)

    walk(root)
    return out


def occurrence_horizon(root: Node, hs: dict[int, float]) -> float:
    """How long :class:`Delta` needs an occurrence: a one-pattern BGP reads only the
    occurrences of the current instant (its earlier solutions are kept by its parent), a
    larger one also earlier ones, over its horizon."""
    out = 0.0

    def walk(n: Node) -> None:
        nonlocal out
        if isinstance(n, BGP) and len(n.patterns) > 1:
            out = max(out, hs.get(id(n), INF))
        for k in n.kids:
            walk(k)

    walk(root)
    return out


# ---------------------------------------------------------------- incremental evaluator


def certain(n: Node) -> frozenset[str]:
    """The variables every solution of n binds (join keys may use them)."""
    if isinstance(n, (BGP, Background)):
        return frozenset(t.name for tp in n.patterns for t in tp
                         if isinstance(t, Var) and not t.name.startswith("_b"))
    if isinstance(n, (Filter, Extend, OrderBy)):
        return certain(n.kids[0])
    if isinstance(n, Project):
        inner = certain(n.arg)
        return inner if n.items is None else frozenset(v for v, e in n.items if e is None and v in inner)
    if isinstance(n, Union):
        return certain(n.left) & certain(n.right)
    if isinstance(n, (Join, SeqJoin, EqJoin)):
        return certain(n.left) | certain(n.right)
    if isinstance(n, (LeftJoin, EqLeftJoin, Minus)):
        return certain(n.left)
    if isinstance(n, SeqRightJoin):
        return certain(n.right)
    if isinstance(n, Path):
        return frozenset(n.names)
    if isinstance(n, Values):
        return frozenset(v for v in n.names if all(any(k == v for k, _ in r) for r in n.rows))
    return frozenset()


def _tw(s: Solution) -> float:
    return s.tw


class Keyed:
    """A node's earlier solutions, bucketed by the values of its parent's join key (the
    variables both operands always bind); each bucket is in t_omega order (solutions are
    added instant by instant)."""

    def __init__(self, key: tuple[str, ...]) -> None:
        self.key = key
        self.buckets: dict[tuple, list[Solution]] = {}
        self.n = 0
        self.kept = 0

    def of(self, s: Solution) -> tuple:
        if not self.key:
            return ()
        d = dict(s.mu)
        return tuple(d.get(v) for v in self.key)

    def add(self, sols: Iterable[Solution]) -> None:
        for s in sols:
            self.buckets.setdefault(self.of(s), []).append(s)
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
        i = bisect.bisect_left(b, lo, key=_tw) if lo != -INF else 0
        j = bisect.bisect_left(b, t, key=_tw) if t != INF else len(b)
        return [s for s in b[i:j] if s.ta >= lo] if lo != -INF else b[i:j]

    def prune(self, lo: float) -> None:
        if self.n < 2 * self.kept + 64:
            return
        n = 0
        for k in list(self.buckets):
            b = [s for s in self.buckets[k] if s.ta >= lo]
            if b:
                self.buckets[k] = b
                n += len(b)
            else:
                del self.buckets[k]
        self.n = self.kept = n

    def all(self) -> list[Solution]:
        return [s for b in self.buckets.values() for s in b]


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
        self._statics: dict[int, bool] = {}
        for n in nodes(root):
            if isinstance(n, Binary):
                k = tuple(sorted(certain(n.left) & certain(n.right)))
                shared = set(variables(n.left)) & set(variables(n.right))
                self._compat[id(n)] = bool(shared - set(k))
                for kid in n.kids:
                    self.done[id(kid)] = Keyed(k)

    def at(self, tau: int) -> list[Solution]:
        if self._at != (tau, self.w.occ.version):
            self._memo = {}
            self.tau = tau
            self._d(self.root)
            self._at = (tau, self.w.occ.version)
        return self._memo[id(self.root)]

    def commit(self, tau: int) -> None:
        self.at(tau)
        for k, sols in self._memo.items():
            if sols and k in self.done:
                self.done[k].add(sols)
        self._memo = {}
        self._at = None
        self.prune(tau)

    def prune(self, tau: int) -> None:
        """Forget the solutions that start more than the node's horizon before tau: every
        later root solution using one would start before ``tau - H`` and end after tau.
        Amortised: a node's store is filtered once it has doubled since the last time."""
        for k, store in self.done.items():
            h = self.hs.get(k, INF)
            if h != INF:
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
        if k not in self._memo:
            self._memo[k] = self._delta(n)
        return self._memo[k]

    def _delta(self, n: Node) -> list[Solution]:
        tau, ex = self.tau, self.w.exprs
        if self._static(n):
            return []
        if isinstance(n, Path):
            d = self.w.needs_data()
            return _path(n, d, d.by_end.get(tau, ()))
        if isinstance(n, BGP):
            occ = self.w.occ
            fresh = occ.fresh if occ.fresh_tau == tau else []

            def now(s: str | None, p: str | None, o: str | None) -> Iterable[Occurrence]:
                return (x for x in fresh if (p is None or x.p == p) and (o is None or x.o == o)
                        and (s is None or x.s == s))

            m = len(n.patterns)
            if m == 1:
                return _match_one(n.patterns[0], fresh)

            def before(s: str | None, p: str | None, o: str | None) -> Iterable[Occurrence]:
                return (x for x in occ.candidates(s, p, o) if x.tw < tau)

            def upto(s: str | None, p: str | None, o: str | None) -> Iterable[Occurrence]:
                return (x for x in occ.candidates(s, p, o) if x.tw <= tau)

            out: list[Solution] = []
            for i in range(m):  # semi-naive: pattern i at tau, earlier ones before, later ones up to
                out.extend(match_bgp(n.patterns, [before] * i + [now] + [upto] * (m - i - 1)))
            return out
        if isinstance(n, Filter):
            return ex.filter(n.cond, self._d(n.arg))
        if isinstance(n, Extend):
            return _extend(n, self._d(n.arg), ex)
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
            return _left(da, db, n.cond, ex, lambda x, y: x.ta == y.ta and x.tw == y.tw)
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
                    k = oa.of(x)
                    out.extend(combine(x, y) for y in itertools.chain(ob.get(k, lo_b), new_b.get(k, ()))
                               if not chk or compatible(x.mu, y.mu))
                for y in db:
                    out.extend(combine(x, y) for x in oa.get(ob.of(y), lo_a) if not chk or compatible(x.mu, y.mu))
            else:
                for x in da:
                    out.extend(combine(x, y) for y in ob.get(oa.of(x), lo_b) if not chk or compatible(x.mu, y.mu))
            return out
        if isinstance(n, SeqJoin):
            if not db:
                return []
            oa = self._old(n.left)
            out = []
            for y in db:
                out.extend(combine(x, y) for x in oa.before(oa.of(y), y.ta, lo_a)
                           if not chk or compatible(x.mu, y.mu))
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
                return [x for x in da if not any(_removes(x, y) for y in cands(x))]
            return _left(da, None, n.cond, ex, _no_later, cands=cands)
        if isinstance(n, SeqRightJoin):
            if not db:
                return []
            oa = self._old(n.left)
            return _left(db, None, n.cond, ex, lambda x, y: y.tw < x.ta, mandatory_right=True,
                         cands=lambda x: oa.before(oa.of(x), x.ta, lo_a))
        raise TypeError(f"not an EP-SPARQL pattern: {n!r}")
