"""The RSP query model Q = (V, P, D, S) of 001 Sec. 3, built from a parsed rsep query.

P is a graph pattern of the fragment BGP / AND / UNION / OPTIONAL / FILTER (simple
comparisons, &&, ||, !, bound: rsep.lars.expr) / MINUS / GRAPH <iri>; the triples of P that an input
stream pattern (s, ω, g) owns are the BGPs tagged with its index. cs(Q) drops the
tags (C-SPARQL merges the windows into the default graph); cq(Q) turns each tagged
BGP into STREAM s ω g (brave) or (STREAM s ω g) UNION g (cautious).

The model is read from the query's rewritten SPARQL (``ContinuousQuery.sparql``)
with the shared grammar; a CQELS ``STREAM`` pattern (GRAPH <window> there) gives a
tagged BGP, a C-SPARQL ``FROM STREAM`` a stream pattern whose g is found in the data
(:func:`assign_streams`) or left empty.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from lark import Token, Tree

from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.expression import Constant, Literal
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import ContinuousQuery
from rsep.algebra.window import Boundary, NamedWindow, WindowSpec
from rsep.lang.expression import RSP_EXTENSIONS, ExpressionReader
from rsep.lang.parser import parse_tree
from rsep.lang.pattern import with_text_pattern
from rsep.lang.syntax import Syntax
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


# ---------------------------------------------------------------- from the parse tree


class _Reader:
    def __init__(self, syn: Syntax, windows: dict[str, int]) -> None:
        self.syn = syn
        self.windows = windows  # window IRI -> index into S (stream patterns)
        self.uses: set[str] = set()  # what the query uses outside the fragment (for the message)
        self.bnodes = 0
        self.expressions = ExpressionReader(syn.text, RSP_EXTENSIONS)

    def fail(self, what: str, node: Tree | Token | None = None) -> LarsError:
        return LarsError(f"{what} is outside the LARS translation's fragment "
                         "(BGP, AND, UNION, OPTIONAL, FILTER, MINUS, GRAPH <iri>)")

    # -- terms
    def term(self, node: Tree | Token) -> Term:
        if isinstance(node, Token):
            if node.type in ("VAR1", "VAR2"):
                return Var(str(node)[1:])
            if node.type in ("IRIREF", "PNAME_LN", "PNAME_NS"):
                return f"<{self.syn.iri(node)}>"
            if node.type == "A":
                return "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
            if node.type == "BLANK_NODE_LABEL":
                return Var("_" + str(node)[2:])
            if node.type == "ANON":
                self.bnodes += 1
                return Var(f"_anon{self.bnodes}")
            raise self.fail(f"the term {node}", node)
        d = node.data
        if d in ("var_or_term", "graph_term", "graph_node_path", "graph_node", "object_path",
                 "object", "var", "var_or_iri", "blank_node", "prefixed_name"):
            if d == "var":
                return Var(str(node.children[0])[1:])
            if d in ("graph_node_path", "graph_node") and isinstance(node.children[0], Tree) \
                    and node.children[0].data.startswith("triples_node"):
                raise self.fail("a blank node property list or collection", node)
            return self.term(node.children[0])
        if d == "iri":
            return f"<{self.syn.iri(node)}>"
        if d == "rdf_literal":
            s = node.children[0]
            lex = _unquote(str(s.children[0]))
            if len(node.children) > 1:
                x = node.children[1]
                if x.data == "langtag":
                    return literal(lex, lang=str(x.children[0])[1:])
                return literal(lex, datatype=self.syn.iri(x.children[0]))
            return literal(lex)
        if d == "numeric_literal":
            return self.term(node.children[0])
        if d.startswith("numeric_literal_"):
            tok = str(node.children[0])
            dt = "integer" if re.fullmatch(r"[+-]?\d+", tok) else (
                "decimal" if "e" not in tok.lower() else "double")
            return literal(tok.lstrip("+"), datatype=XSD + dt)
        if d == "boolean_literal":
            return literal(node.children[0].data, datatype=XSD + "boolean")
        raise self.fail(f"the term {d}", node)

    def constant(self, c: Constant) -> str:
        """A constant of a FILTER's tree in N-Triples form."""
        if isinstance(c, Literal):
            if c.language is not None:
                return literal(c.lexical, lang=c.language)
            return literal(c.lexical, datatype=None if c.datatype is None
                           else self.syn.resolve(c.datatype))
        return f"<{self.syn.resolve(c)}>"

    def verb(self, node: Tree) -> Term:
        if node.data == "verb_simple":
            return self.term(node.children[0])
        if node.data == "verb":
            c = node.children[0]
            return self.term(c)
        # verb_path -> path -> path_alternative -> path_sequence -> path_elt_or_inverse
        # -> path_elt -> path_primary -> iri | A: only plain predicates
        cur = node
        while isinstance(cur, Tree) and len(cur.children) == 1 and cur.data != "iri":
            cur = cur.children[0]
        if isinstance(cur, Tree) and cur.data == "iri":
            return self.term(cur)
        if isinstance(cur, Token) and cur.type == "A":
            return self.term(cur)
        raise self.fail("a property path", node)

    # -- triples
    def triples_block(self, node: Tree) -> list[TP]:
        out: list[TP] = []
        for c in node.children:
            if isinstance(c, Tree) and c.data == "triples_same_subject_path":
                out += self.same_subject(c)
            elif isinstance(c, Tree) and c.data == "triples_block":
                out += self.triples_block(c)
        return out

    def same_subject(self, node: Tree) -> list[TP]:
        subj_node, plist = node.children[0], node.children[1]
        if not (isinstance(subj_node, Tree) and subj_node.data == "var_or_term"):
            raise self.fail("a blank node property list or collection", node)
        s = self.term(subj_node)
        out: list[TP] = []
        verb: Term | None = None
        for c in plist.children:
            if not isinstance(c, Tree):
                continue
            if c.data in ("verb_path", "verb_simple", "verb"):
                verb = self.verb(c)
            elif c.data in ("object_list_path", "object_list"):
                assert verb is not None  # (the grammar puts the verb first)
                out += [TP(s, verb, self.term(o)) for o in self._objects(c)]
            elif c.data == "property_list_path_not_empty_other":
                for r in c.children:
                    if isinstance(r, Tree) and r.data == "property_list_path_not_empty_rest":
                        v: Term | None = None
                        for x in r.children:
                            if isinstance(x, Tree) and x.data in ("verb_path", "verb_simple", "verb"):
                                v = self.verb(x)
                            elif isinstance(x, Tree) and x.data in ("object_list", "object_list_path"):
                                assert v is not None
                                out += [TP(s, v, self.term(o)) for o in self._objects(x)]
        return out

    def _objects(self, node: Tree) -> list[Tree]:
        out: list[Tree] = []
        for c in node.children:
            if isinstance(c, Tree) and c.data in ("object_path", "object"):
                out.append(c)
            elif isinstance(c, Tree) and c.data in ("object_list_path_other",):
                out += self._objects(c)
        return out

    # -- patterns
    def group(self, node: Tree) -> Pattern:
        """group_graph_pattern."""
        sub = node.children[0]
        if sub.data == "sub_select":
            raise self.fail("a sub-select", sub)
        cur: Pattern | None = None
        filters: list[tuple] = []

        def join(p: Pattern) -> None:
            nonlocal cur
            cur = p if cur is None else Join(cur, p)

        def walk(n: Tree) -> None:
            nonlocal cur
            for c in n.children:
                if not isinstance(c, Tree):
                    continue
                if c.data == "triples_block":
                    ts = self.triples_block(c)
                    if ts:
                        join(BGP(tuple(ts)))
                elif c.data == "group_graph_pattern_sub_other":
                    walk(c)
                elif c.data == "graph_pattern_not_triples":
                    x = c.children[0]
                    if x.data == "filter":
                        filters.append(from_tree(self.expressions.constraint(x).expr,
                                                 self.constant, self.fail, self.uses))
                    elif x.data == "optional_graph_pattern":
                        self.uses.add("optional")
                        cur = Optional(cur if cur is not None else BGP(()), self.group(x.children[1]))
                    elif x.data == "minus_graph_pattern":
                        self.uses.add("minus")
                        cur = Minus(cur if cur is not None else BGP(()), self.group(x.children[1]))
                    elif x.data == "group_or_union_graph_pattern":
                        gs = [self.group(g) for g in x.children if isinstance(g, Tree)]
                        u = gs[0]
                        for g in gs[1:]:
                            self.uses.add("union")
                            u = Union(u, g)
                        join(u)
                    elif x.data == "graph_graph_pattern":
                        target = x.children[1]
                        if self.syn.is_var(target):
                            raise self.fail("GRAPH ?var", x)
                        iri = self.syn.iri(target)
                        inner = self.group(x.children[2])
                        if iri in self.windows:
                            if not isinstance(inner, BGP):
                                raise self.fail("a stream graph pattern that is not a basic "
                                                "graph pattern", x)
                            join(BGP(inner.triples, self.windows[iri]))
                        else:
                            join(Graph(f"<{iri}>", inner))
                    else:
                        raise self.fail(x.data.replace("_", " "), x)

        walk(sub)
        if cur is None:
            cur = BGP(())
        for f in filters:
            cur = Filter(cur, f)
        return cur

def _unquote(s: str) -> str:
    if s[:3] in ('"""', "'''"):
        s = s[3:-3]
    else:
        s = s[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), s)


def from_query(q: ContinuousQuery) -> RSPQuery:
    """The RSP query (V, P, D, S) of a parsed SELECT query."""
    if q.form != "SELECT":
        raise LarsError(f"only SELECT queries are translated (this one is {q.form})")
    if q.matches:
        raise LarsError("event patterns (MATCH) are outside the LARS translation's fragment")
    ds = q.dataset
    stream_windows = [w for w in ds.windows]
    S = tuple(StreamPattern(w.stream, w.spec) for w in stream_windows)
    windows = {w.iri: i for i, w in enumerate(stream_windows) if not w.in_default}
    tree = parse_tree(q.sparql)
    syn = Syntax.of(q.sparql, tree)
    r = _Reader(syn, windows)
    body = tree.children[1]
    sel = next(c for c in body.children if isinstance(c, Tree) and c.data == "select_query")
    clause = sel.children[0]
    V: tuple[str, ...] | None = None
    names = []
    for c in clause.children:
        if isinstance(c, Tree) and c.data == "select_clause_var_or_expression":
            x = c.children[0]
            if x.data != "var":
                raise LarsError("SELECT expressions are outside the LARS translation's fragment")
            names.append(str(x.children[0])[1:])
    if names:
        V = tuple(names)
    for c in sel.children[2:]:
        if isinstance(c, Tree) and c.data == "solution_modifier" and c.children:
            raise LarsError("solution modifiers (GROUP BY, ORDER BY, LIMIT) are outside the "
                            "LARS translation's fragment")
    where = next(c for c in sel.children if isinstance(c, Tree) and c.data == "where_clause")
    P = r.group(next(c for c in where.children if isinstance(c, Tree)))
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
    return with_text_pattern(ContinuousQuery(
        name=q.name or dialect, dialect=dialect, form="SELECT", dataset=ds, sparql=text, r2s=out,
        report=rep, text=text, variables=list(q.V or ())))
