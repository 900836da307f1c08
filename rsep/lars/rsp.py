"""The RSP query model Q = (V, P, D, S) of 001 Sec. 3, built from a parsed rsep query.

P is a graph pattern of the fragment BGP / AND / UNION / OPTIONAL / FILTER (simple
comparisons, &&, ||, !, bound: rsep.lars.expr) / MINUS / GRAPH <iri>; the triples of P that an input
stream pattern (s, ω, g) owns are the BGPs tagged with its index. cs(Q) drops the
tags (C-SPARQL merges the windows into the default graph); cq(Q) turns each tagged
BGP into STREAM s ω g (brave) or (STREAM s ω g) UNION g (cautious).

The model is read from the query's pattern tree (``ContinuousQuery.pattern``, which
rsep.lang reads once); a window's pattern (RSP-QL's WINDOW, a CQELS ``STREAM``) gives a
tagged BGP, a C-SPARQL ``FROM STREAM`` a stream pattern whose g is found in the data
(:func:`assign_streams`) or left empty.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import pyoxigraph as ox

from rsep.algebra import pattern as pt
from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.expression import Aggregate as AggregateNode
from rsep.algebra.expression import (
    And,
    Arithmetic,
    Bound,
    Compare,
    Constant,
    Expression,
    Iri,
    Literal,
    Not,
    Or,
    PrefixedName,
    Variable,
    conjunction,
)
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import ContinuousQuery
from rsep.algebra.window import Boundary, NamedWindow, WindowSpec
from rsep.lars.core import LarsError, Var
from rsep.lars.expr import XSD, from_tree, literal

# re-exported: the translation and explain read the expressions through the query model
from rsep.lars.expr import expr_vars as expr_vars
from rsep.lars.expr import holds as holds
from rsep.lars.expr import show_expr as show_expr
from rsep.lars.expr import var_name as var_name

# ---------------------------------------------------------------- patterns


Term = Var | str  # a variable, or a constant in N-Triples form


@dataclass(frozen=True)
class TP:
    """A triple pattern; terms are Var or N-Triples constants."""

    s: Term
    p: Term
    o: Term

    def terms(self) -> tuple[Term, Term, Term]:
        return (self.s, self.p, self.o)

    def vars(self) -> set[str]:
        return {t.name for t in self.terms() if isinstance(t, Var)}

    def __str__(self) -> str:
        return " ".join(f"?{t.name}" if isinstance(t, Var) else str(t) for t in self.terms())


@dataclass(frozen=True)
class BGP:
    triples: tuple[TP, ...]
    stream: int | None = None  # index into S when an input stream pattern owns these triples


@dataclass(frozen=True)
class Join:
    left: Pattern
    right: Pattern


@dataclass(frozen=True)
class Union:
    left: Pattern
    right: Pattern


@dataclass(frozen=True)
class Optional:
    left: Pattern
    right: Pattern


@dataclass(frozen=True)
class Minus:
    left: Pattern
    right: Pattern


@dataclass(frozen=True)
class Filter:
    pattern: Pattern
    expr: tuple


@dataclass(frozen=True)
class Graph:
    graph: str  # an IRI, N-Triples form
    pattern: Pattern


@dataclass(frozen=True)
class Stream:
    """STREAM s ω g (CQELS' stream graph pattern), for S[index]."""

    index: int
    bgp: BGP


# A graph pattern of P (the operands of the binary ones, and what a Filter or Graph holds,
# are patterns too)
Pattern = BGP | Join | Union | Optional | Minus | Filter | Graph | Stream


@dataclass(frozen=True)
class StreamPattern:
    stream: str  # IRI
    window: WindowSpec
    g: tuple[TP, ...] = ()


@dataclass(frozen=True)
class RSPQuery:
    V: tuple[str, ...] | None  # None: SELECT *
    P: Pattern
    default_graphs: tuple[str, ...] = ()
    named_graphs: tuple[str, ...] = ()
    S: tuple[StreamPattern, ...] = ()
    name: str = ""
    uses: frozenset = field(default_factory=frozenset)  # "minus", "not_exists", "optional", ...

    @property
    def result_vars(self) -> tuple[str, ...]:
        return tuple(sorted(vars_of(self.P))) if self.V is None else self.V


def vars_of(p: Pattern) -> set[str]:
    if isinstance(p, BGP):
        return set().union(*(t.vars() for t in p.triples)) if p.triples else set()
    if isinstance(p, Stream):
        return vars_of(p.bgp)
    if isinstance(p, (Join, Union, Optional)):
        return vars_of(p.left) | vars_of(p.right)
    if isinstance(p, Minus):
        return vars_of(p.left)
    if isinstance(p, (Filter, Graph)):
        return vars_of(p.pattern)
    raise LarsError(f"unknown pattern {p!r}")


def maybe_unbound(p: Pattern) -> set[str]:
    """Variables that may be unbound (null) in a solution of p."""
    if isinstance(p, (BGP, Stream)):
        return set()
    if isinstance(p, Join):
        return maybe_unbound(p.left) | maybe_unbound(p.right)
    if isinstance(p, Union):
        return (vars_of(p.left) ^ vars_of(p.right)) | maybe_unbound(p.left) | maybe_unbound(p.right)
    if isinstance(p, Optional):
        return (vars_of(p.right) - vars_of(p.left)) | maybe_unbound(p.left) | maybe_unbound(p.right)
    if isinstance(p, Minus):
        return maybe_unbound(p.left)
    return maybe_unbound(p.pattern)


def triple_patterns(p: Pattern) -> list[TP]:
    """trp(P), in order."""
    if isinstance(p, BGP):
        return list(p.triples)
    if isinstance(p, Stream):
        return list(p.bgp.triples)
    if isinstance(p, (Join, Union, Optional, Minus)):
        return triple_patterns(p.left) + triple_patterns(p.right)
    return triple_patterns(p.pattern)


def _map(p: Pattern, f: Callable[[BGP], Pattern]) -> Pattern:
    """Rebuild p bottom-up with f applied to every BGP."""
    if isinstance(p, BGP):
        return f(p)
    if isinstance(p, Stream):
        return p
    if isinstance(p, (Join, Union, Optional, Minus)):
        return type(p)(_map(p.left, f), _map(p.right, f))
    if isinstance(p, Filter):
        return Filter(_map(p.pattern, f), p.expr)
    return Graph(p.graph, _map(p.pattern, f))


def cs(q: RSPQuery) -> RSPQuery:
    """cs(Q): the stream patterns' graph patterns set to ∅ (merged into the default graph)."""
    p = _map(q.P, lambda b: BGP(b.triples))
    return dataclasses.replace(q, P=p, S=tuple(StreamPattern(s.stream, s.window) for s in q.S))


def cq(q: RSPQuery, cautious: frozenset[int] = frozenset()) -> RSPQuery:
    """A member of cq(Q): brave for the stream patterns not in ``cautious``."""
    def f(b: BGP) -> Pattern:
        if b.stream is None:
            return b
        st = Stream(b.stream, BGP(b.triples))
        return Union(st, BGP(b.triples)) if b.stream in cautious else st
    return dataclasses.replace(q, P=_map(q.P, f))


def sub_matches(triple: tuple, tp: TP) -> bool:
    """sm: the triple matches the triple pattern (blank nodes in patterns are variables)."""
    b: dict = {}
    for x, y in zip(tp.terms(), triple, strict=True):
        if isinstance(x, Var):
            if b.setdefault(x, y) != y:
                return False
        elif x != y:
            return False
    return True


def assign_streams(q: RSPQuery, stream_triples: dict[str, set[tuple]]) -> RSPQuery:
    """For a query whose stream patterns have no g (C-SPARQL): a triple pattern of P
    belongs to the first stream of S that has a triple matching it, else to the
    static data. BGPs are split accordingly (joins of the parts, in order)."""
    if any(s.g for s in q.S):
        return q
    owners: dict[TP, int] = {}
    for tp in triple_patterns(q.P):
        for i, s in enumerate(q.S):
            if any(sub_matches(t, tp) for t in stream_triples.get(s.stream, ())):
                owners[tp] = i
                break

    def f(b: BGP) -> Pattern:
        if b.stream is not None:
            return b
        groups: list[tuple[int | None, list[TP]]] = []
        for tp in b.triples:
            o = owners.get(tp)
            for grp in groups:
                if grp[0] == o:
                    grp[1].append(tp)
                    break
            else:
                groups.append((o, [tp]))
        parts = [BGP(tuple(ts), o) for o, ts in groups]
        if not parts:
            return b
        out: Pattern = parts[-1]
        for part in reversed(parts[:-1]):
            out = Join(part, out)
        return out

    p = _map(q.P, f)
    g: dict[int, list[TP]] = {}
    for tp, i in owners.items():
        g.setdefault(i, []).append(tp)
    return dataclasses.replace(q, P=p, S=tuple(dataclasses.replace(s, g=tuple(g.get(i, ())))
                                               for i, s in enumerate(q.S)))


# ---------------------------------------------------------------- from the pattern tree


_FRAGMENT = "(BGP, AND, UNION, OPTIONAL, FILTER, MINUS, GRAPH <iri>)"
_RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_NUMERIC = {XSD + "integer", XSD + "decimal", XSD + "double"}


class _Reader:
    """The model's pattern read off the query's pattern tree (rsep.algebra.pattern), with
    the facts of the text the tree keeps for it: the triples blocks as written
    (``BGP.blocks``), an OPTIONAL's FILTERs (``LeftJoin.filters``) and which blank nodes
    are ``[]`` (``BlankNode.made``)."""

    def __init__(self, tree: pt.Query, windows: dict[str, int]) -> None:
        self.tree = tree
        self.windows = windows  # window IRI -> index into S (stream patterns)
        self.uses: set[str] = set()  # what the query uses outside the fragment (for the message)
        self.anon: dict[str, Var] = {}  # a ``[]``'s label -> its variable, by first use

    def fail(self, what: str) -> LarsError:
        return LarsError(f"{what} is outside the LARS translation's fragment {_FRAGMENT}")

    def iri(self, e: Iri | PrefixedName) -> str:
        return pt.absolute(e, self.tree.prologue)

    # -- terms
    def term(self, t: pt.Term | pt.Path) -> Term:
        if isinstance(t, Variable):
            return Var(t.name)
        if isinstance(t, (Iri, PrefixedName)):
            return f"<{self.iri(t)}>"
        if isinstance(t, pt.BlankNode):
            if t.made == "list":
                raise self.fail("a blank node property list or collection")
            if t.made == "anon":
                return self.anon.setdefault(t.label, Var(f"_anon{len(self.anon) + 1}"))
            return Var("_" + t.label)
        if isinstance(t, Literal):
            if t.language is not None:
                return literal(t.lexical, lang=t.language)
            if t.datatype is None:
                return literal(t.lexical)
            dt = self.iri(t.datatype)
            # a number written bare keeps its lexical form but its sign "+"
            lex = t.lexical.lstrip("+") if dt in _NUMERIC else t.lexical
            return literal(lex, datatype=dt)
        raise self.fail("a property path")

    def constant(self, c: Constant) -> str:
        """A constant of a FILTER's tree in N-Triples form."""
        if isinstance(c, Literal):
            if c.language is not None:
                return literal(c.lexical, lang=c.language)
            return literal(c.lexical, datatype=None if c.datatype is None
                           else self.iri(c.datatype))
        return f"<{self.iri(c)}>"

    def triple(self, t: pt.Triple) -> TP:
        s = self.term(t.subject)
        if isinstance(t.predicate, (Variable, Iri, PrefixedName)):
            p = self.term(t.predicate)
        else:
            raise self.fail("a property path")
        return TP(s, p, self.term(t.object))

    # -- patterns
    def group(self, p: pt.Pattern) -> Pattern:
        """A group's pattern, its elements read in the order written (so that the first
        one outside the fragment is the one the message names), its FILTERs last."""
        conds = p.conditions if isinstance(p, pt.Filter) else ()
        after = p.after if isinstance(p, pt.Filter) and p.after else (-1,) * len(conds)
        us = pt.units(p.arg if isinstance(p, pt.Filter) else p)
        filters: list[tuple] = []
        cur: Pattern | None = None
        pending = list(zip(after, conds, strict=True))
        for k, u in enumerate([*us, None]):
            while pending and (pending[0][0] == -1 and u is None or 0 <= pending[0][0] <= k):
                filters.append(from_tree(pending.pop(0)[1], self.constant, self.fail, self.uses))
            if u is not None:
                cur = self.unit(u, cur)
        if cur is None:
            cur = BGP(())
        for f in filters:
            cur = Filter(cur, f)
        return cur

    def unit(self, u: pt.Unit, cur: Pattern | None) -> Pattern:
        """``cur`` with the next element of its group."""
        if isinstance(u, tuple):
            return self._join(cur, BGP(tuple(self.triple(t) for t in pt.block(u))))
        if isinstance(u, pt.LeftJoin):
            self.uses.add("optional")
            right = u.group if u.group is not None else u.right if u.condition is None \
                else pt.Filter((u.condition,), u.right)
            return Optional(cur if cur is not None else BGP(()), self.group(right))
        if isinstance(u, pt.Minus):
            self.uses.add("minus")
            return Minus(cur if cur is not None else BGP(()), self.group(u.right))
        if isinstance(u, pt.Union):
            left = self.group(u.left)
            self.uses.add("union")
            return self._join(cur, Union(left, self.group(u.right)))
        if isinstance(u, (pt.Graph, pt.WindowGraph)):
            name = u.name if isinstance(u, pt.Graph) else u.window
            if isinstance(name, Variable):
                raise self.fail("GRAPH ?var")
            iri = self.iri(name)
            inner = self.group(u.arg)
            if iri in self.windows:
                if not isinstance(inner, BGP):
                    raise self.fail("a stream graph pattern that is not a basic graph pattern")
                return self._join(cur, BGP(inner.triples, self.windows[iri]))
            return self._join(cur, Graph(f"<{iri}>", inner))
        if isinstance(u, pt.SubSelect):
            raise self.fail("a sub-select")
        what = {pt.Extend: "bind", pt.Values: "inline data", pt.Service: "service graph pattern",
                pt.MatchSlot: "match pattern"}
        if type(u) in what:
            raise self.fail(what[type(u)])
        return self._join(cur, self.group(u))  # a nested group

    @staticmethod
    def _join(cur: Pattern | None, p: Pattern) -> Pattern:
        return p if cur is None else Join(cur, p)


def from_query(q: ContinuousQuery) -> RSPQuery:
    """The RSP query (V, P, D, S) of a parsed SELECT query."""
    if q.form != "SELECT":
        raise LarsError(f"only SELECT queries are translated (this one is {q.form})")
    if q.matches:
        raise LarsError("event patterns (MATCH) are outside the LARS translation's fragment")
    tree = q.pattern
    if tree is None or tree.pattern is None:
        raise LarsError(f"the query has no pattern tree ({q.pattern_refused})")
    ds = q.dataset
    stream_windows = [w for w in ds.windows]
    S = tuple(StreamPattern(w.stream, w.spec) for w in stream_windows)
    windows = {w.iri: i for i, w in enumerate(stream_windows) if not w.in_default}
    r = _Reader(tree, windows)
    m = tree.modifiers
    V: tuple[str, ...] | None = None
    if m.projection:
        if any(x.expr is not None for x in m.projection):
            raise LarsError("SELECT expressions are outside the LARS translation's fragment")
        V = tuple(x.var for x in m.projection)
    if m.group_by or m.having or m.order_by or m.limit is not None or m.offset is not None:
        raise LarsError("solution modifiers (GROUP BY, ORDER BY, LIMIT) are outside the "
                        "LARS translation's fragment")
    P = r.group(tree.pattern)
    g: dict[int, list[TP]] = {}
    for b in _bgps(P):
        if b.stream is not None:
            g.setdefault(b.stream, []).extend(t for t in b.triples if t not in g.get(b.stream, []))
    S = tuple(dataclasses.replace(s, g=tuple(g.get(i, ()))) for i, s in enumerate(S))
    return RSPQuery(V, P, tuple(ds.default_graphs), tuple(ds.named_graphs), S, q.name,
                    frozenset(r.uses))


def _bgps(p: Pattern) -> list[BGP]:
    if isinstance(p, BGP):
        return [p]
    if isinstance(p, Stream):
        return []
    if isinstance(p, (Join, Union, Optional, Minus)):
        return _bgps(p.left) + _bgps(p.right)
    return _bgps(p.pattern)


# ---------------------------------------------------------------- back to SPARQL


def _sparql_term(t: Term) -> str:
    return f"?{t.name}" if isinstance(t, Var) else str(t)


def to_sparql(p: Pattern, window_iri: dict[int, str]) -> str:
    """A group graph pattern for p; Stream(i) becomes GRAPH <window_iri[i]>."""
    if isinstance(p, BGP):
        return "{ " + " ".join(" ".join(_sparql_term(x) for x in t.terms()) + " ." for t in p.triples) + " }"
    if isinstance(p, Stream):
        return "{ GRAPH <" + window_iri[p.index] + "> " + to_sparql(p.bgp, window_iri) + " }"
    if isinstance(p, Join):
        return "{ " + to_sparql(p.left, window_iri) + " " + to_sparql(p.right, window_iri) + " }"
    if isinstance(p, Union):
        return "{ " + to_sparql(p.left, window_iri) + " UNION " + to_sparql(p.right, window_iri) + " }"
    if isinstance(p, Optional):
        return "{ " + to_sparql(p.left, window_iri) + " OPTIONAL " + to_sparql(p.right, window_iri) + " }"
    if isinstance(p, Minus):
        return "{ " + to_sparql(p.left, window_iri) + " MINUS " + to_sparql(p.right, window_iri) + " }"
    if isinstance(p, Filter):
        return "{ " + to_sparql(p.pattern, window_iri) + " FILTER(" + show_expr(p.expr, True) + ") }"
    return "{ GRAPH " + p.graph + " " + to_sparql(p.pattern, window_iri) + " }"


# ---------------------------------------------------------------- its pattern tree


# The tree of the text to_sparql writes for a pattern, built as rsep.lang.pattern reads that
# text (so that the engine's readers see what they saw when the text was parsed again):
# every operator a group of its own, the comparisons and arithmetic of a FILTER read back
# by SPARQL's precedence (show_expr writes them without brackets), a constant from its
# N-Triples form. tests/lars/test_lars_tree_reader.py holds it to the parse of the text.

_NT = re.compile(r'^"(.*)"(?:@([^"]*)|\^\^<([^>]*)>)?$', re.S)
_COMPARISONS = ("=", "!=", "<", ">", "<=", ">=")


def _constant(term: str) -> Iri | Literal:
    if term.startswith("<"):
        return Iri(term[1:-1])
    m = _NT.match(term)
    if m is None:
        raise LarsError(f"not an N-Triples constant: {term}")
    lit = next(iter(ox.parse(f"<urn:s> <urn:p> {term} .", format=ox.RdfFormat.N_TRIPLES))).object
    assert isinstance(lit, ox.Literal)
    return Literal(lit.value, None if m.group(3) is None else Iri(m.group(3)), m.group(2))


def _term(t: Term) -> pt.Term:
    return Variable(t.name) if isinstance(t, Var) else _constant(t)


def _expression(e: tuple) -> Expression:
    k = e[0]
    if k == "var":
        return Variable(e[1])
    if k == "const":
        return _constant(e[1])
    if k == "bound":
        return Bound(Variable(e[1]))
    if k == "not":
        return Not(_expression(e[1]))
    if k in ("and", "or"):
        return (And if k == "and" else Or)(_expression(e[1]), _expression(e[2]))
    if k in ("cmp", "arith"):
        return _chain(_flat(e))
    raise LarsError(f"not an expression of the fragment: {e!r}")


def _flat(e: tuple) -> list:
    """A comparison or arithmetic as show_expr writes it: operands and operators, flat."""
    if e[0] in ("cmp", "arith"):
        return [*_flat(e[2]), e[1], *_flat(e[3])]
    return [e]


def _chain(items: list) -> Expression:
    """Operands and operators read by SPARQL's precedence: one comparison, then + and -,
    then * and /, each to the left."""
    at = [i for i in range(1, len(items), 2) if items[i] in _COMPARISONS]
    if len(at) > 1:
        raise LarsError("a FILTER compares a comparison: its SPARQL text does not parse")
    if at:
        i = at[0]
        return Compare(items[i], _chain(items[:i]), _chain(items[i + 1:]))
    for ops in (("+", "-"), ("*", "/")):
        cut = [i for i in range(1, len(items), 2) if items[i] in ops]
        if cut:
            i = cut[-1]
            return Arithmetic(items[i], _chain(items[:i]), _chain(items[i + 1:]))
    assert len(items) == 1
    return _expression(items[0])


def _group(p: Pattern, window_iri: dict[int, str]) -> pt.Pattern:
    """The tree of ``to_sparql(p, window_iri)``."""
    if isinstance(p, BGP):
        ts = tuple(pt.Triple(_term(t.s), _term(t.p), _term(t.o)) for t in p.triples)
        return pt.BGP(ts, (len(ts),)) if ts else pt.BGP()
    if isinstance(p, Stream):
        return pt.Graph(Iri(window_iri[p.index]), _group(p.bgp, window_iri))
    if isinstance(p, Graph):
        return pt.Graph(Iri(p.graph[1:-1]), _group(p.pattern, window_iri))
    if isinstance(p, Union):
        return pt.Union(_group(p.left, window_iri), _group(p.right, window_iri))
    left = _group(p.left if isinstance(p, (Join, Optional, Minus)) else p.pattern, window_iri)
    if isinstance(p, Join):
        right = _group(p.right, window_iri)
        return right if _empty(left) else pt.Join(left, right)
    if isinstance(p, Optional):
        right = _group(p.right, window_iri)
        if isinstance(right, pt.Filter):
            return pt.LeftJoin(left, right.arg, conjunction(list(right.conditions)), right)
        return pt.LeftJoin(left, right)
    if isinstance(p, Minus):
        return pt.Minus(left, _group(p.right, window_iri))
    assert isinstance(p, Filter)
    return pt.Filter((_expression(p.expr),), left, (len(pt.units(left)),))


def _empty(p: pt.Pattern) -> bool:
    return isinstance(p, pt.BGP) and not p.triples


def _elements(p: Pattern) -> tuple[str, ...]:
    """The kinds of the elements of ``to_sparql(p)``'s group (Query.elements)."""
    if isinstance(p, BGP):
        return ("triples",) if p.triples else ()
    if isinstance(p, (Stream, Graph)):
        return ("GRAPH",)
    return {Join: ("group", "group"), Union: ("group",), Optional: ("group", "OPTIONAL"),
            Minus: ("group", "MINUS"), Filter: ("group", "FILTER")}[type(p)]


def select_tree(p: Pattern, window_iri: dict[int, str], projection: tuple[pt.Projected, ...] | None,
                distinct: bool = False, group: tuple[str, ...] = ()) -> pt.Query:
    """The tree of ``SELECT [DISTINCT] projection WHERE to_sparql(p) [GROUP BY group]``,
    its clauses as written (``Query.written``) those of that text."""
    items = () if projection is None else tuple(
        "?" + x.var if x.expr is None else f"({x.expr.to_sparql()} AS ?{x.var})"
        for x in projection)
    aggregates = tuple(x.expr.to_sparql() for x in projection or ()
                       if isinstance(x.expr, AggregateNode))
    keys = tuple(pt.GroupKey(Variable(g)) for g in group)
    return pt.Query("SELECT", _group(p, window_iri),
                    pt.Modifiers(projection, distinct, group_by=keys),
                    elements=_elements(p),
                    written=pt.Written(items, tuple("?" + g for g in group) if group else None,
                                       None, aggregates))


def continuous(q: RSPQuery, dialect: str, report: ReportPolicy | None = None,
               r2s: R2S | None = None) -> ContinuousQuery:
    """The engine's query for cs(Q) (dialect "csparql": windows merged into the default
    graph, [o, c) windows, RStream) or a cq(Q) member ("cqels": a window per stream
    pattern, (o, c] windows, IStream, push)."""
    ds = StreamingDataset(default_graphs=list(q.default_graphs), named_graphs=list(q.named_graphs))
    iris: dict[int, str] = {}
    for i, s in enumerate(q.S):
        iris[i] = f"urn:rsep:lars:window:{i + 1}"
        if dialect == "csparql":
            spec = dataclasses.replace(s.window, boundary=Boundary.LEFT_CLOSED)
            ds.windows.append(NamedWindow(iris[i], s.stream, spec, in_default=True))
        else:
            spec = dataclasses.replace(s.window, boundary=Boundary.RIGHT_CLOSED)
            ds.windows.append(NamedWindow(iris[i], s.stream, spec))
    # DISTINCT: LARS answers are sets; IStream over a bag would re-emit a duplicated row
    head = "SELECT DISTINCT " + (" ".join(f"?{v}" for v in q.V) if q.V else "*")
    text = f"{head} WHERE {to_sparql(q.P, iris)}"
    if dialect == "csparql":
        rep = report or ReportPolicy(window_close=True, non_empty=True)
        out = r2s or R2S.RSTREAM
    else:
        rep = report or ReportPolicy(on_arrival=True)
        out = r2s or R2S.ISTREAM
    projection = None if not q.V else tuple(pt.Projected(v) for v in q.V)
    return ContinuousQuery(
        name=q.name or dialect, dialect=dialect, form="SELECT", dataset=ds, sparql=text, r2s=out,
        report=rep, text=text, variables=list(q.V or ()),
        pattern=select_tree(q.P, iris, projection, distinct=True))
