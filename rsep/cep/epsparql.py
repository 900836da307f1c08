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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from rsep.algebra.events import Selection
from rsep.cep.epsparql_data import OccurrenceData, item_of
from rsep.cep.epsparql_expr import Dur, Fallback, Fn, compile_filter, term_value
from rsep.cep.epsparql_policy import PolicyState
from rsep.events.semantics import precedes
from rsep.runtime.engine import EngineError, Output
from rsep.sparql.rows import ROWS, rows_block
from rsep.stream.event import Event
from rsep.stream.time import TimeKind, format_datetime_ms, format_time

if TYPE_CHECKING:
    from rsep.runtime.engine import Engine

INF = float("inf")
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SUBCLASS, SUBPROP = f"<{RDFS}subClassOf>", f"<{RDFS}subPropertyOf>"
DOMAIN, RANGE = f"<{RDFS}domain>", f"<{RDFS}range>"
XSD = "http://www.w3.org/2001/XMLSchema#"

Mu = tuple[tuple[str, str], ...]  # sorted (variable, N-Triples term)


# ---------------------------------------------------------------- algebra


@dataclass(frozen=True, slots=True)
class Var:
    name: str


Term = Var | str  # a variable or an N-Triples term
TriplePattern = tuple[Term, Term, Term]


@dataclass(frozen=True, eq=False)
class Expr:
    """A SPARQL expression (text), getDURATION()/getSTARTTIME()/getENDTIME() replaced by
    the variables ?__d, ?__s, ?__e (the substitution sigma of Sec. 4.2)."""

    text: str
    variables: frozenset[str]
    prologue: str = ""

    @property
    def timed(self) -> bool:
        return bool(re.search(r"\?__[dse]\b", self.text))

    @property
    def reads(self) -> bool:
        """It holds EXISTS / NOT EXISTS: its value depends on the data, not only on mu."""
        return bool(_EXISTS.search(self.text))


_EXISTS = re.compile(r"\bEXISTS\s*\{", re.I)


class Node:
    """An algebra expression; operands in ``kids``."""

    kids: tuple[Node, ...] = ()


@dataclass(eq=False)
class Unit(Node):
    """The empty group: the one solution ({}, +inf, -inf), neutral for min/max."""


@dataclass(eq=False)
class BGP(Node):
    patterns: tuple[TriplePattern, ...]


@dataclass(eq=False)
class Background(Node):
    """GRAPH <iri> { triples }: matched against a background graph (with its RDFS
    closure); its solutions are timeless, (+inf, -inf)."""

    iri: str
    patterns: tuple[TriplePattern, ...]


@dataclass(eq=False)
class Binary(Node):
    left: Node
    right: Node
    cond: Expr | None = None

    @property
    def kids(self) -> tuple[Node, ...]:  # type: ignore[override]
        return (self.left, self.right)


class Join(Binary):
    """P1 AND P2: compatible solutions, interval [min start, max end]."""


class Union(Binary):
    """P1 UNION P2."""


class LeftJoin(Binary):
    """P1 OPTIONAL P2: the optional part joins only if it ends no later than P1."""


class SeqJoin(Binary):
    """P1 SEQ P2: P1 ends before P2 starts (t_omega < t'_alpha)."""


class SeqRightJoin(Binary):
    """P1 OPTIONALSEQ P2: P2, preceded by P1 when there is such a P1."""


class EqJoin(Binary):
    """P1 EQUALS P2: both span the same interval."""


class EqLeftJoin(Binary):
    """P1 EQUALSOPTIONAL P2: P1, with P2 over the same interval when there is one."""


class Minus(Binary):
    """P1 MINUS P2: the P1 solutions with no compatible P2 solution that shares a variable
    with it and ends no later (LeftJoin's time condition)."""


@dataclass(eq=False)
class Path(Node):
    """A triple pattern whose predicate is a property path (with what its object nests):
    evaluated by pyoxigraph inside one stream item, whose interval its solutions carry."""

    text: str
    names: tuple[str, ...]
    prologue: str = ""


@dataclass(eq=False)
class OrderBy(Node):
    """ORDER BY: the solutions detected at one instant, in the order of the conditions."""

    arg: Node
    keys: Expr  # the order conditions, as written

    @property
    def kids(self) -> tuple[Node, ...]:  # type: ignore[override]
        return (self.arg,)


@dataclass(eq=False)
class Values(Node):
    """VALUES (inline or trailing): timeless solutions, like the empty group's."""

    names: tuple[str, ...]
    rows: tuple[Mu, ...]


@dataclass(eq=False)
class Filter(Node):
    cond: Expr
    arg: Node

    @property
    def kids(self) -> tuple[Node, ...]:  # type: ignore[override]
        return (self.arg,)


@dataclass(eq=False)
class Extend(Node):
    arg: Node
    var: str
    expr: Expr

    @property
    def kids(self) -> tuple[Node, ...]:  # type: ignore[override]
        return (self.arg,)


@dataclass(eq=False)
class Project(Node):
    """SELECT (of a sub-query or of the query): variables and (expr AS ?v), in order."""

    arg: Node
    items: tuple[tuple[str, Expr | None], ...] | None  # None: SELECT *
    distinct: bool = False

    @property
    def kids(self) -> tuple[Node, ...]:  # type: ignore[override]
        return (self.arg,)


def variables(n: Node) -> list[str]:
    """In-scope variables of a pattern, in order of appearance."""
    out: list[str] = []

    def add(v: str) -> None:
        if v not in out and not v.startswith("_b"):
            out.append(v)

    def walk(x: Node) -> None:
        if isinstance(x, (BGP, Background)):
            for tp in x.patterns:
                for t in tp:
                    if isinstance(t, Var):
                        add(t.name)
        elif isinstance(x, (Path, Values)):
            for v in x.names:
                add(v)
        elif isinstance(x, Minus):
            walk(x.left)
        elif isinstance(x, Project):
            if x.items is None:
                walk(x.arg)
            else:
                for v, _ in x.items:
                    add(v)
        elif isinstance(x, Extend):
            walk(x.arg)
            add(x.var)
        else:
            for k in x.kids:
                walk(k)

    walk(n)
    return out


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
        self.scope: Callable[[float], tuple[ox.Store, list[Any], list[Any]]] | None = None

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
            v = r["__r"]  # type: ignore[index]
            if v is not None:
                out[i] = str(v)
        return out

    def _run(self, e: Expr, rows: list[tuple[Solution, float, float]], body: str) -> list[tuple[int, Any]]:
        """Run ``body`` (its ``{}`` standing for the rows, :func:`rsep.sparql.rows.rows_block`)
        once per batch: one batch, or with EXISTS one per end time, over the data visible then."""
        groups: dict[float, list[int]] = {}
        if e.reads and self.scope is not None:
            for i, (_, _, tw) in enumerate(rows):
                groups.setdefault(tw, []).append(i)
        else:
            groups[INF] = list(range(len(rows)))
        out = []
        for tw, idx in groups.items():
            names, batch = self._rows(e, [rows[i] for i in idx])
            if e.reads and self.scope is not None:
                store, default, named = self.scope(tw)
                kw = {"default_graph": default, "named_graphs": [*named, ROWS]}
            else:
                store, kw = self.store, {}
            self.calls += 1
            with rows_block(names, batch, store) as block:
                res = store.query(e.prologue + body.replace("{}", block, 1), **kw)
                out.extend((idx[int(r["__i"].value)], r) for r in res)  # type: ignore[union-attr,index]
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
    ta: int
    tw: int
    item: int  # the stream item (event) it came from: what consumption removes


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

    def get(self, iri: str, default: Any = None) -> Any:  # type: ignore[override]
        if iri not in self and iri in self.graphs:
            st = OccurrenceStore()
            seen: set[tuple[str, str, str]] = set()
            for t in self.graphs[iri]:
                for x in self.schema.entail(*t):
                    if x not in seen:
                        seen.add(x)
                        st.add(Occurrence(*x, ta=INF, tw=-INF, item=0))  # type: ignore[arg-type]
            self[iri] = st
        return super().get(iri, default)


class OccurrenceStore:
    """Triple occurrences, indexed by predicate and by (predicate, object)."""

    def __len__(self) -> int:
        return len(self.all)

    def prune(self, keep: Callable[[Occurrence], bool]) -> None:
        """Keep only the occurrences ``keep`` accepts (indexes and keys rebuilt)."""
        old = self.all
        self.__init__()  # type: ignore[misc]
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


def match_bgp(patterns: tuple[TriplePattern, ...], sources: list[Callable[[str | None, str | None, str | None], Iterable[Occurrence]]],
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

    def scope(self, t: float) -> tuple[ox.Store, list[Any], list[Any]]:
        """What EXISTS sees for a solution ending at t: the visible items that ended by t
        (as OPTIONAL's operand, 003's LeftJoin), and the background graphs."""
        d = self.needs_data()
        items = [g for i, (ta, tw, g) in d.items.items() if tw <= t and self.visible(ta, i)]
        for iri in getattr(self.background, "graphs", {}):
            if iri not in d.background:
                d.load_background(iri, ((o.s, o.p, o.o) for o in self.background.get(iri).all))
        return d.store, items, list(d.background.values())


def _live(w: World, hi: float) -> Callable[[str | None, str | None, str | None], Iterable[Occurrence]]:
    def src(s: str | None, p: str | None, o: str | None) -> Iterable[Occurrence]:
        lo, consumed = w.lo, w.consumed
        if w.lo_strict:
            return (oc for oc in w.occ.candidates(s, p, o) if oc.tw <= hi and oc.ta > lo
                    and oc.item not in consumed)
        return (oc for oc in w.occ.candidates(s, p, o) if oc.tw <= hi and oc.ta >= lo
                and oc.item not in consumed)
    return src


def _bg(w: World, iri: str) -> Callable[[str | None, str | None, str | None], Iterable[Occurrence]]:
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
        return _project(n, evaluate(n.arg, w, sel, hi), ex)
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
    graphs = [d.graph(i) for i in items]
    if not graphs:
        return []
    q = f"{n.prologue}SELECT * WHERE {{ GRAPH ?__g {{ {n.text} }} }}"
    out = []
    for r in d.store.query(q, named_graphs=graphs):  # type: ignore[union-attr]
        item = item_of(r["__g"])  # type: ignore[index]
        ta, tw, _ = d.items[item]
        mu = tuple(sorted((v, d.own(item, str(t))) for v in n.names  # type: ignore[index]
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


def _project(n: Project, sols: list[Solution], ex: ExprEvaluator) -> list[Solution]:
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


def _conjuncts(text: str) -> list[str]:
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
    return [x for part in out for x in _conjuncts(part)]


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
    for c in _conjuncts(e.text):
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
                          n.cond.prologue) for c in _conjuncts(n.cond.text)]
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


def _nodes(n: Node) -> Iterable[Node]:
    yield n
    for k in n.kids:
        yield from _nodes(k)


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


def static(n: Node) -> bool:
    """n reads no stream: its solutions are timeless and never change."""
    if isinstance(n, (Unit, Background, Values)):
        return True
    if isinstance(n, (BGP, Path)):
        return False
    return all(static(k) for k in n.kids)


def reads_history(n: Node) -> bool:
    """n holds an EXISTS, which sees every visible occurrence that ended by then."""
    return any(isinstance(x, (Filter, Extend)) and (x.cond if isinstance(x, Filter) else x.expr).reads
               or isinstance(x, Project) and any(e is not None and e.reads for _, e in x.items or ())
               or isinstance(x, Binary) and x.cond is not None and x.cond.reads
               for x in _nodes(n))


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
        for n in _nodes(root):
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
            return _project(n, self._d(n.arg), ex)
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


# ---------------------------------------------------------------- queries and runtime


@dataclass(eq=False)
class EpSparqlQuery:
    """A parsed EP-SPARQL query: SELECT (``template`` None) or CONSTRUCT (a rule)."""

    pattern: Node  # the WHERE pattern, Project included for SELECT
    select: tuple[str, ...]  # output variables (SELECT)
    template: tuple[TriplePattern, ...] | None = None
    policy: Selection = Selection.UNRESTRICTED
    background: tuple[str, ...] = ()
    text: str = ""
    source: str | None = None
    name: str = ""
    ask: bool = False  # ASK: true at each complex event detected

    @property
    def construct(self) -> bool:
        return self.template is not None

    def with_policy(self, policy: str | Selection) -> EpSparqlQuery:
        self.policy = parse_policy(policy)
        return self

    def runtime(self, engine: Engine, name: str, callback: Callable[[Output], None] | None) -> Any:
        from rsep.cep.etalis import EtalisPolicy, EtalisRuntime

        if isinstance(self.policy, EtalisPolicy):  # ETALIS's own step-wise consumption
            return EtalisRuntime(self, engine, name, callback)
        return EpSparqlRuntime(self, engine, name, callback)


POLICIES = ("unrestricted", "chronological", "recent", "etalis-chronological", "etalis-recent")


def parse_policy(p: Any) -> Any:
    """A Selection (000's policies), or an :class:`rsep.cep.etalis.EtalisPolicy`."""
    from rsep.cep import etalis

    if isinstance(p, etalis.EtalisPolicy):
        return p
    if isinstance(p, Selection):
        if p is Selection.NAIVE:
            raise ValueError("EP-SPARQL has the unrestricted, chronological and recent settings")
        return p
    if p.lower() in etalis.POLICIES:
        return etalis.parse(p)
    if p.lower() not in POLICIES:
        raise ValueError(f"unknown EP-SPARQL policy {p!r} (known: {', '.join(POLICIES)})")
    return Selection[p.upper()]


@dataclass(slots=True)
class EpOutput(Output):
    """A complex event over [``start``, ``end``] (t_alpha, t_omega), output at ``time``:
    t_omega, or later under chronological / recent when a blocking candidate was consumed or
    left the window (at the deadline the query announced)."""

    start: int = 0
    end: int | None = None  # None: ``time``

    def to_json(self) -> dict:
        d = Output.to_json(self)
        end = self.time if self.end is None else self.end
        out: dict[str, Any] = {"time": d.pop("time"), "from": format_time(self.start, self.kind),
                               "to": format_time(end, self.kind)}
        out.update(d)
        return out


class RuleLoopError(EngineError):
    """CONSTRUCT rules that keep deriving new triple occurrences at one instant."""


class EpContext:
    """The EP-SPARQL queries of one engine share one stream and its Q-closure: the
    occurrences (input and derived), the RDFS schema and background graphs."""

    MAX_ROUNDS = 1000
    MAX_DERIVED = 1_000_000

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.runtimes: list[EpSparqlRuntime] = []
        graphs = {iri: [(str(t.subject), str(t.predicate), str(t.object)) for t in ts]
                  for iri, ts in engine.graphs.items()}
        self.schema = Schema(itertools.chain.from_iterable(graphs.values()))
        self.world = World(OccurrenceStore(), Graphs(graphs, self.schema), ExprEvaluator())
        self.pending: dict[int, dict[int, Event]] = {}  # per end: the events, by item
        self.last: int | None = None  # the last instant processed (instants come in order)
        self._derived = 0
        self.prune = True  # False: keep every occurrence and solution (the unpruned evaluator)
        self._kept = 0

    def stored(self) -> int:
        """Occurrences and partial solutions held: what pruning bounds."""
        return len(self.world.occ) + sum(rt.delta.stored() for rt in self.runtimes)

    def forget(self, tau: int) -> None:
        """Drop the occurrences no registered query can use again: an unrestricted query
        needs an occurrence while it starts within its stream BGPs' horizon before tau; a
        chronological / recent one while it is unconsumed (by that query) and starts within
        its window (all unconsumed ones when it has none). Amortised: done once the store
        has doubled since the last time."""
        occ = self.world.occ
        if not self.prune or len(occ) < 2 * self._kept + 64:
            return
        h = -INF
        policies: list[tuple[float, set[int]]] = []
        for rt in self.runtimes:
            if rt.query.policy is Selection.UNRESTRICTED:
                h = max(h, rt.leaf_horizon)
            else:
                policies.append((tau - rt.window[0], rt.policy_state.consumed))
        lo = tau - h

        def keep(oc: Occurrence) -> bool:
            return oc.ta >= lo or any(oc.ta >= lo_p and oc.item not in c for lo_p, c in policies)
        if h < INF or policies:
            occ.prune(keep)
        items = {oc.item for oc in occ.all}
        for rt in self.runtimes:
            rt.policy_state.keep_items(items)
        if self.world.data is not None:
            self.world.data.keep(items)
        self._kept = len(occ)

    def deadline(self) -> int | None:
        """The first instant after the last one processed at which a chronological / recent
        query's deferred decision becomes final (:meth:`PolicyState.deadline`): the queries
        of the context are evaluated then, as at an event."""
        if self.last is None:
            return None
        ds = [d for rt in self.runtimes if rt.query.policy is not Selection.UNRESTRICTED
              and (d := rt.policy_state.deadline(self.last, rt.window)) is not None]
        return min(ds) if ds else None

    @staticmethod
    def of(engine: Engine) -> EpContext:
        ctx = getattr(engine, "_epsparql", None)
        if ctx is None:
            ctx = EpContext(engine)
            engine._epsparql = ctx  # type: ignore[attr-defined]
        return ctx

    def insert(self, e: Event) -> None:
        # every runtime passes each event on: kept once
        self.pending.setdefault(e.end, {}).setdefault(e.seq or id(e), e)

    def _add(self, s: str, p: str, o: str, ta: int, tw: int, item: int) -> int:
        """The occurrence and its RDFS consequences; how many were new."""
        n = 0
        data = self.world.data
        for x in self.schema.entail(s, p, o):
            oc = Occurrence(*x, ta=ta, tw=tw, item=item)
            if self.world.occ.add(oc):
                n += 1
                if data is not None:
                    data.add(*x, ta, tw, item)
                for rt in self.runtimes:
                    if rt.query.policy is not Selection.UNRESTRICTED:
                        rt.policy_state.note(oc, rt.window[0])
        return n

    def process(self, tau: int) -> None:
        if self.last is not None and tau <= self.last:
            return
        self.last = tau
        for e in self.pending.pop(tau, {}).values():
            for t in e.triples:
                self._add(str(t.subject), str(t.predicate), str(t.object), e.start, e.end, e.seq)
        rules = [rt for rt in self.runtimes if rt.query.construct]
        seen: dict[int, set[tuple]] = {id(rt): set() for rt in rules}
        for rnd in itertools.count():
            fresh = 0
            for rt in rules:
                for s in rt.solutions(tau):
                    if s.key in seen[id(rt)]:
                        continue
                    seen[id(rt)].add(s.key)
                    trs = rt.instantiate(s)
                    for tr in trs:
                        self._derived += 1
                        fresh += bool(self._add(*tr, ta=int(s.ta), tw=int(s.tw), item=-self._derived))
                    rt.outbox.setdefault(tau, []).extend(rt.outputs(s, tau, trs))
            if not fresh:
                break
            if rnd >= self.MAX_ROUNDS or self._derived > self.MAX_DERIVED:
                names = ", ".join(rt.name for rt in rules)
                raise RuleLoopError(
                    f"the CONSTRUCT rules ({names}) do not terminate at time "
                    f"{format_time(tau, self.world.exprs.kind)}: still deriving new triples after "
                    f"{rnd + 1} rounds ({self._derived} derived triples)")
        for rt in self.runtimes:
            if not rt.query.construct:
                for s in rt.solutions(tau):
                    rt.outbox.setdefault(tau, []).extend(rt.outputs(s, tau))
        for rt in self.runtimes:
            rt.finish(tau)
        self.forget(tau)


class EpSparqlRuntime:
    """A registered EP-SPARQL query or rule, driven by :class:`Engine`."""

    def __init__(self, query: EpSparqlQuery, engine: Engine, name: str,
                 callback: Callable[[Output], None] | None = None) -> None:
        from rsep.lang.errors import QueryError

        self.query = query
        self.engine = engine
        self.name = name
        self.callback = callback
        self.streams: set[str] = set()  # EP-SPARQL reads one stream: every input event
        self.last_tick: int | None = None
        self.kind: TimeKind | None = None
        for iri in query.background:
            if iri not in engine.graphs:
                raise QueryError(f"<{iri}> names no graph supplied to the engine "
                                 f"(use --graph {iri}=PATH)", source=query.source)
        self.ctx = EpContext.of(engine)
        self.ctx.runtimes.append(self)
        if any(isinstance(n, Path) for n in _nodes(query.pattern)) or reads_history(query.pattern):
            self.ctx.world.needs_data()
        self.plan = push_filters(query.pattern)  # what Delta runs (unrestricted)
        self.delta = Delta(self.plan, self.ctx.world)
        self.leaf_horizon = INF  # set by bind, once the kind of time is known
        self.window: tuple[float, bool] = (INF, False)  # chronological / recent: see :func:`window`
        self.policy_state = PolicyState(query.pattern, query.policy)  # chronological / recent
        self.outbox: dict[int, list[Output]] = {}
        self._ticks: set[int] = set()
        self._bn = itertools.count(1)
        self._emitted: set[tuple] = set()

    # engine protocol
    def bind(self, kind: TimeKind, time_unit_ms: int | None, start: int) -> None:
        self.kind = kind
        self.ctx.world.exprs.kind = kind
        hs = horizons(self.plan, kind)
        # EXISTS sees every earlier occurrence; a path, those of the current instant
        self.leaf_horizon = INF if reads_history(self.plan) else occurrence_horizon(self.plan, hs)
        self.window = window(self.query.pattern, kind)
        if self.ctx.prune:
            self.delta.hs = hs

    def insert(self, e: Event) -> None:
        self._ticks.add(e.end)
        self.ctx.insert(e)

    def next_tick(self, bound: int) -> int | None:
        c = [t for t in self._ticks if (self.last_tick is None or t > self.last_tick) and t < bound]
        return min(c) if c else None

    def deadline(self) -> int | None:
        """When a decision deferred by a query of this context becomes final (the engine
        evaluates there even if no event comes, up to --until or the end of the input)."""
        return self.ctx.deadline()

    def evaluate(self, tau: int) -> list[Output]:
        self._ticks = {t for t in self._ticks if t > tau}
        self.last_tick = tau
        self.ctx.process(tau)
        return self.outbox.pop(tau, [])

    # evaluation
    def solutions(self, tau: int) -> list[Solution]:
        """The query's new solutions at tau (its complex events detected at tau)."""
        if self.query.policy is Selection.UNRESTRICTED:
            return [s for s in self.delta.at(tau) if s.tw != -INF]
        sols = self.policy_state.evaluate(self.ctx.world, tau, self.window)
        out = []
        for s in sols:
            if s.key in self._emitted or s.tw == -INF:
                continue
            self._emitted.add(s.key)
            out.append(s)
        return out

    def finish(self, tau: int) -> None:
        if self.query.policy is Selection.UNRESTRICTED:
            self.delta.commit(tau)
        elif self.ctx.prune:
            # every emitted solution consumed its items, so evaluate cannot find it again
            self._emitted.clear()

    def consume(self, s: Solution) -> None:
        if self.query.policy is not Selection.UNRESTRICTED:
            self.policy_state.consume(s.just)

    def instantiate(self, s: Solution) -> list[tuple[str, str, str]]:
        assert self.query.template is not None
        mu = dict(s.mu)
        fresh: dict[str, str] = {}
        out = []
        for tp in self.query.template:
            tr = []
            for t in tp:
                if isinstance(t, Var):
                    if t.name.startswith("_b"):
                        if t.name not in fresh:
                            fresh[t.name] = f"_:ep{self.name}x{next(self._bn)}"
                        tr.append(fresh[t.name])
                    else:
                        tr.append(mu.get(t.name))  # type: ignore[arg-type]
                else:
                    tr.append(t)
            s_, p_, o_ = tr
            # Sec. 4.2: only solutions binding every variable of the triple; no literal subject
            if None in tr or s_.startswith('"') or not p_.startswith("<"):
                continue
            out.append((s_, p_, o_))
        return out

    def outputs(self, s: Solution, tau: int, triples: list[tuple[str, str, str]] | None = None) -> list[Output]:
        self.consume(s)
        ta, tw = int(s.ta), int(s.tw)
        if self.query.construct:
            return [EpOutput(self.name, tau, self.kind, triple=f"{a} {b} {c}", start=ta, end=tw)
                    for a, b, c in (triples if triples is not None else self.instantiate(s))]
        if self.query.ask:
            return [EpOutput(self.name, tau, self.kind, boolean=True, start=ta, end=tw)]
        d = dict(s.mu)
        b = {v: d[v] for v in self.query.select if v in d}
        return [EpOutput(self.name, tau, self.kind, bindings=b, variables=self.query.select, start=ta, end=tw)]

    def idle(self) -> bool:
        return not self._ticks and self.ctx.deadline() is None
