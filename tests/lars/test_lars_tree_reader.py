"""The RSP query model (rsep.lars.rsp.from_query), an aggregate query's reading
(rsep.lars.aggregates.find_aggregate, aggregate_pattern) and ``rsep explain``'s clauses as
written (rsep.lars.explain.as_written) from the pattern tree, held to the
readers of the rewritten text they replaced, kept here as the reference (as they stood
before issue 46's step 3): on every query of the house (tests/query_corpus.py) and on
shapes the house has few of, both give the same model and aggregate, or refuse with the
same message (the first construct outside the fragment in the order written)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from lark import Token, Tree
from query_corpus import house, parsed_query

from rsep.algebra import pattern as pt
from rsep.algebra.expression import Aggregate as AggregateNode
from rsep.algebra.expression import Constant, Literal, Variable
from rsep.algebra.query import ContinuousQuery
from rsep.lang.expression import RSP_EXTENSIONS, ExpressionReader
from rsep.lang.parser import parse_tree
from rsep.lang.pattern import with_text_pattern
from rsep.lang.syntax import Syntax, end_of, start_of
from rsep.lars.aggregates import (
    AGREEABLE,
    NOT_RECURSIVE,
    Aggregate,
    NoAgreementNotion,
    aggregate_pattern,
    find_aggregate,
)
from rsep.lars.core import LarsError, Var
from rsep.lars.explain import as_written
from rsep.lars.expr import XSD, from_tree, literal
from rsep.lars.rsp import (
    BGP,
    TP,
    Filter,
    Graph,
    Join,
    Minus,
    Optional,
    Pattern,
    RSPQuery,
    StreamPattern,
    Term,
    Union,
    continuous,
    cq,
    cs,
    from_query,
    select_tree,
    to_sparql,
)

# ---------------------------------------------------------------- the text reader (before)


class _TextReader:
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

def _old_bgps(p: Pattern) -> list[BGP]:
    if isinstance(p, BGP):
        return [p]
    if isinstance(p, (Join, Union, Optional, Minus)):
        return _old_bgps(p.left) + _old_bgps(p.right)
    if isinstance(p, (Filter, Graph)):
        return _old_bgps(p.pattern)
    return []


def _unquote(s: str) -> str:
    if s[:3] in ('"""', "'''"):
        s = s[3:-3]
    else:
        s = s[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), s)


def old_from_query(q: ContinuousQuery) -> RSPQuery:
    """The model as the text reader read it."""
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
    r = _TextReader(syn, windows)
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
    for b in _old_bgps(P):
        if b.stream is not None:
            g.setdefault(b.stream, []).extend(t for t in b.triples if t not in g.get(b.stream, []))
    S = tuple(dataclasses.replace(s, g=tuple(g.get(i, ()))) for i, s in enumerate(S))
    return RSPQuery(V, P, tuple(ds.default_graphs), tuple(ds.named_graphs), S, q.name,
                    frozenset(r.uses))




def _old_bgps(p: Pattern) -> list[BGP]:
    if isinstance(p, BGP):
        return [p]
    if isinstance(p, (Join, Union, Optional, Minus)):
        return _old_bgps(p.left) + _old_bgps(p.right)
    if isinstance(p, (Filter, Graph)):
        return _old_bgps(p.pattern)
    return []


def _unquote(s: str) -> str:
    if s[:3] in ('"""', "'''"):
        s = s[3:-3]
    else:
        s = s[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), s)


# ---------------------------------------------------------------- the aggregates (before)


def _old_refuse(func: str) -> NoAgreementNotion:
    if func in NOT_RECURSIVE:
        return NoAgreementNotion(
            f"{func} has no push-pull agreement notion (001 Sec. 6): it is not recursively "
            f"definable, so the {func} C-SPARQL pulls at t2 cannot be recomputed from the values "
            "CQELS pushes during the interval; only COUNT (sum of the pushed counts), MAX and "
            "MIN (max/min of the pushed values) are compared")
    return NoAgreementNotion(
        f"{func} has no push-pull agreement notion: 001 Sec. 6 defines one only for COUNT (sum "
        "of the pushed counts), MAX and MIN (max/min of the pushed values)")


def _old_only_child(node: Tree | Token | None, stop: str) -> Tree | None:
    """Descend single-child trees down to a ``stop`` node (None if the chain branches)."""
    while isinstance(node, Tree):
        if node.data == stop:
            return node
        kids = [c for c in node.children if not (isinstance(c, Token) and c.type in ("LPAR", "RPAR"))]
        if len(kids) != 1:
            return None
        node = kids[0]
    return None


def _old_var(node: Tree | Token | None) -> str | None:
    v = _old_only_child(node, "var")
    return str(v.children[0])[1:] if v is not None else None


def _old_has(node: Tree | Token | None, data: str) -> bool:
    return isinstance(node, Tree) and any(isinstance(x, Tree) and x.data == data
                                          for x in node.iter_subtrees())


def _old_extension_name(node: Tree, syn: Syntax, known: tuple[str, ...]) -> str | None:
    """An extension aggregate in the projection: a call iri(...) whose IRI the query uses
    as an aggregate (called with DISTINCT) or whose local name is MEDIAN or AVG (SPARQL
    has no MEDIAN: engines offer it as an extension)."""
    for sub in node.iter_subtrees_topdown():
        if sub.data not in ("iri_or_function", "function_call") or len(sub.children) < 2:
            continue
        iri = syn.iri(sub.children[0])
        local = re.split(r"[/#:]", iri.rstrip("/#"))[-1].upper()
        if iri in known or local in NOT_RECURSIVE:
            return local
    return None


def old_find_aggregate(q: ContinuousQuery) -> tuple[Aggregate, ContinuousQuery] | None:
    """The aggregate of an aggregate query and its pattern as a ``SELECT *`` query, or
    None when the query neither aggregates nor groups. Raises NoAgreementNotion (or
    LarsError) for aggregates and projections without an agreement notion."""
    if q.form != "SELECT":
        return None
    tree = parse_tree(q.sparql)
    body = tree.children[1]
    sel = next((c for c in body.children if isinstance(c, Tree) and c.data == "select_query"), None)
    if sel is None:
        return None
    clause = sel.children[0]
    mods = [c for c in sel.children if isinstance(c, Tree) and c.data == "solution_modifier"]
    group_clause = [g for m in mods for g in m.children if isinstance(g, Tree) and g.data == "group_clause"]
    ext = _old_extension_name(clause, Syntax.of(q.sparql, tree), q.unknown_aggregates)
    if not _old_has(clause, "aggregate") and not group_clause and ext is None:
        return None
    if ext is not None:
        raise _old_refuse(ext)
    for m in mods:
        for c in m.children:
            if isinstance(c, Tree) and c.data != "group_clause":
                raise LarsError(f"{c.data.replace('_', ' ')} is outside the aggregate comparison "
                                "(a single COUNT/MAX/MIN, optionally with GROUP BY ?vars)")
    group: list[str] = []
    for g in group_clause:
        for cond in g.children:
            if isinstance(cond, Tree):
                v = _old_var(cond)
                if v is None:
                    raise LarsError("only GROUP BY ?var is supported by the aggregate comparison")
                group.append(v)
    plain: list[str] = []
    aggs: list[Aggregate] = []
    for c in clause.children:
        if isinstance(c, Token):
            if c.type in ("DISTINCT", "REDUCED"):
                continue
            if str(c) == "*":
                raise LarsError("SELECT * with GROUP BY: project the group variables and one "
                                "COUNT/MAX/MIN")
            continue
        x = c.children[0]
        if x.data == "var":
            plain.append(str(x.children[0])[1:])
            continue
        expr, alias = x.children[0], str(x.children[-1].children[0])[1:]
        agg = _old_only_child(expr, "aggregate")
        if agg is None:
            for sub in expr.iter_subtrees():
                if sub.data == "aggregate":
                    raise _old_refuse(str(sub.children[0]).upper()) \
                        if str(sub.children[0]).upper() not in AGREEABLE else \
                        LarsError(f"?{alias}: only a bare COUNT/MAX/MIN(...) AS ?v has an "
                                  "agreement notion, not an expression over it")
            raise LarsError(f"?{alias}: SELECT expressions other than one COUNT/MAX/MIN are "
                            "outside the aggregate comparison")
        toks = [t for t in agg.children if isinstance(t, Token)]
        func = str(toks[0]).upper()
        if func not in AGREEABLE:
            raise _old_refuse(func)
        distinct = any(t.type == "DISTINCT" or str(t).upper() == "DISTINCT" for t in toks)
        if func == "COUNT" and distinct:
            raise NoAgreementNotion(
                "COUNT(DISTINCT ...) has no push-pull agreement notion: the sum of the distinct "
                "counts pushed at the trigger points is not the distinct count of their union "
                "(001 Sec. 6's sum-of-counts notion needs a recursively definable aggregate)")
        args = [t for t in agg.children if isinstance(t, Tree)]
        arg = None
        if args:
            arg = _old_var(args[0])
            if arg is None:
                raise LarsError(f"{func}: only a variable (or *) argument is supported")
        aggs.append(Aggregate(func, arg, distinct, alias, tuple(group)))
    if len(aggs) != 1:
        raise LarsError(f"the aggregate comparison needs exactly one COUNT/MAX/MIN in the "
                        f"projection (found {len(aggs)})")
    for v in plain:
        if v not in group:
            raise LarsError(f"?{v} is projected but not grouped")
    return aggs[0], _old_pattern_query(q, sel)


def _old_pattern_query(q: ContinuousQuery, sel: Tree) -> ContinuousQuery:
    """``SELECT * WHERE P``: the aggregate query's pattern, with its dataset and windows."""
    where = next(c for c in sel.children if isinstance(c, Tree) and c.data == "where_clause")
    text = q.sparql[:sel.meta.start_pos] + "SELECT * " + q.sparql[where.meta.start_pos:where.meta.end_pos]
    return with_text_pattern(dataclasses.replace(q, sparql=text, text=text, variables=[]))


def old_aggregate_pattern(q: ContinuousQuery) -> ContinuousQuery | None:
    """The pattern of a query that aggregates or groups, as ``SELECT *`` (None otherwise),
    whether or not its aggregate has an agreement notion."""
    if q.form != "SELECT":
        return None
    tree = parse_tree(q.sparql)
    sel = next((c for c in tree.children[1].children
                if isinstance(c, Tree) and c.data == "select_query"), None)
    if sel is None:
        return None
    clause = sel.children[0]
    grouped = any(isinstance(g, Tree) and g.data == "group_clause"
                  for m in sel.children if isinstance(m, Tree) and m.data == "solution_modifier"
                  for g in m.children)
    if not grouped and not _old_has(clause, "aggregate") and \
            _old_extension_name(clause, Syntax.of(q.sparql, tree), q.unknown_aggregates) is None:
        return None
    return _old_pattern_query(q, sel)


# ---------------------------------------------------------------- explain's lines (before)


def old_as_written(cq_: ContinuousQuery) -> list[str]:
    """A SELECT query's projection (V), GROUP BY, HAVING and aggregates as its text has
    them (001's V of an aggregate query's pattern is that pattern's, not the query's:
    ``SELECT *``); nothing for the other forms."""
    if cq_.form != "SELECT":
        return []
    text = cq_.sparql
    tree = parse_tree(text)
    sel = next((c for c in tree.children[1].children
                if isinstance(c, Tree) and c.data == "select_query"), None)
    if sel is None:
        return []

    def src(n: Tree | Token) -> str:
        return " ".join(text[start_of(n):end_of(n)].split())

    clause = sel.children[0]
    words = [str(c).upper() for c in clause.children
             if isinstance(c, Token) and str(c).upper() in ("DISTINCT", "REDUCED")]
    items = [src(c) for c in clause.children if isinstance(c, Tree)]
    lines = ["V: " + " ".join(words + (items or ["*"]))]
    aggregates = [src(a) for a in clause.iter_subtrees_topdown() if a.data == "aggregate"]
    for m in sel.children:
        if not (isinstance(m, Tree) and m.data == "solution_modifier"):
            continue
        for g in m.children:
            if isinstance(g, Tree) and g.data == "group_clause":
                lines.append("GROUP BY " + " ".join(src(c) for c in g.children
                                                     if isinstance(c, Tree)))
            elif isinstance(g, Tree) and g.data == "having_clause":
                lines.append("HAVING " + " ".join(src(c) for c in g.children
                                                  if isinstance(c, Tree)))
                aggregates += [src(a) for a in g.iter_subtrees_topdown()
                               if a.data == "aggregate"]
    if aggregates:
        lines.append("aggregates: " + ", ".join(dict.fromkeys(aggregates)))
    return lines


# ---------------------------------------------------------------- the comparison


def _model(f, q: ContinuousQuery) -> RSPQuery | str:
    try:
        return f(q)
    except LarsError as e:
        return f"LarsError: {e}"


def _aggregate(find, model, q: ContinuousQuery) -> object:
    """The aggregate found and the model of its pattern query, or the refusal."""
    try:
        got = find(q)
    except LarsError as e:
        return f"{type(e).__name__}: {e}"
    return None if got is None else (got[0], _model(model, got[1]))


def same(q: ContinuousQuery) -> None:
    assert _model(from_query, q) == _model(old_from_query, q)
    assert as_written(q) == old_as_written(q)
    assert _aggregate(find_aggregate, from_query, q) == \
        _aggregate(old_find_aggregate, old_from_query, q)
    new, was = aggregate_pattern(q), old_aggregate_pattern(q)
    assert (new is None) == (was is None)
    if new is not None and was is not None:
        assert _model(from_query, new) == _model(old_from_query, was)


def test_the_house_queries_read_as_their_text_was() -> None:
    done = translated = 0
    for where, text in house():
        q = parsed_query(text)
        if q is None:
            continue
        try:
            same(q)
        except AssertionError as e:
            raise AssertionError(f"{where}: {e}") from None
        done += 1
        translated += not isinstance(_model(from_query, q), str)
    # (at this writing: 135 RSP queries, 34 in the fragment)
    assert done >= 120 and translated >= 30, (done, translated)


P = "PREFIX : <http://example.org/>\nSELECT * FROM NAMED WINDOW :w ON :s [RANGE PT10S STEP PT1S]\nWHERE "


@pytest.mark.parametrize("where", [
    # triples blocks that FILTERs separate, FILTERs in several places
    "{ WINDOW :w { ?s :p ?o } ?o :q ?z FILTER(?z > 1) ?z :r ?y . ?y :t 3 FILTER(!bound(?s)) }",
    # an OPTIONAL's FILTERs, and a nested group's
    "{ WINDOW :w { ?s :p ?o } OPTIONAL { ?o :q ?z FILTER(?z > 1) FILTER(?z < 5) } "
    "{ ?s :k ?k FILTER(?k = :a || ?k = :b) } }",
    "{ { ?s :p ?o } UNION { ?s :q ?o } UNION { WINDOW :w { ?s :r ?o } } MINUS { ?s :x ?o } }",
    "{ OPTIONAL { ?s :p ?o } ?s :q 2.5 , -2 , +3 , 1e3 , true , \"x\"@en , \"y\"^^:d }",
    "{ WINDOW :w { ?s :p [] ; :q _:b . [] :r ?s } }",
    "{ WINDOW :w { ?s :p [ :q ?o ] } }",
    "{ WINDOW :w { ?s :p ( 1 2 ) } }",
    "{ WINDOW :w { ?s :p/:q ?o } }",
    "{ WINDOW :w { ?s :p ?o FILTER(?o > 1) } }",
    "{ GRAPH <urn:g> { ?s :p ?o } WINDOW :w { ?s :q ?o } }",
    "{ GRAPH ?g { ?s :p ?o } }",
    # two constructs outside the fragment: the message names the first written
    "{ ?s :p ?o FILTER(regex(?o, \"a\")) BIND(1 AS ?z) }",
    "{ ?s :p ?o BIND(1 AS ?z) FILTER(regex(?o, \"a\")) }",
    "{ VALUES ?x { :a } BIND(2 AS ?z) ?x :p ?o }",
    "{ { ?s :p ?o OPTIONAL { ?o :q ?z } } FILTER(STR(?o) = \"\") ?s :r [ :t ?u ] }",
    "{ ?s :p ?o { SELECT ?s WHERE { ?s :q ?z } } }",
    "{ }",
])
def test_the_shapes_the_house_has_few_of(where: str) -> None:
    q = parsed_query(P + where)
    assert q is not None
    same(q)


A = ("PREFIX : <http://example.org/>\nSELECT {} FROM NAMED WINDOW :w ON :s [RANGE 10 STEP 1]\n"
     "WHERE {{ WINDOW :w {{ ?s :p ?o ; :q ?v }} ?s :on ?r }} {}")


@pytest.mark.parametrize(("select", "tail"), [
    ("?s (COUNT(?o) AS ?n)", "GROUP BY ?s"),
    ("(MAX(DISTINCT ?v) AS ?m)", ""),
    ("?r (MIN(?v) AS ?m)", "GROUP BY ?r HAVING (MIN(?v) > 1)"),
    ("?r (COUNT(*) AS ?n)", "GROUP BY ?r ORDER BY ?r"),
    ("?r (COUNT(*) AS ?n)", "GROUP BY ?r LIMIT 3"),
    ("(COUNT(DISTINCT ?v) AS ?n)", ""),
    ("(AVG(?v) AS ?a)", ""),
    ("(<http://e/median>(?v) AS ?a)", ""),
    ("(COUNT(?v) + 1 AS ?a)", ""),
    ("(SUM(?v) * 2 AS ?a)", ""),
    ("(STR(?v) AS ?a)", "GROUP BY ?v"),
    ("(COUNT(?v) AS ?a) (MAX(?v) AS ?b)", ""),
    ("(COUNT(?v) AS ?a)", "GROUP BY (STR(?r))"),
    ("(MAX(STR(?v)) AS ?a)", ""),
    ("?s ?v", ""),
    ("DISTINCT ?r  (COUNT( * )   AS ?n)", "GROUP BY ?r\nHAVING ( COUNT(*)>1 ) (SUM(?v) < 9)"),
    ("REDUCED ?r", ""),
])
def test_aggregate_queries(select: str, tail: str) -> None:
    q = parsed_query(A.format(select, tail))
    assert q is not None
    same(q)


def test_a_dialect_rewriting_the_projection() -> None:
    """C-SPARQL's timestamp() in the projection: the clauses as the rewritten text has them."""
    q = parsed_query("REGISTER QUERY q AS PREFIX : <http://example.org/>\n"
               "SELECT ?x (MAX(timestamp(?x, :v, ?v)) AS ?t) FROM STREAM :s [RANGE 10 STEP 1] "
               "WHERE { ?x :v ?v } GROUP BY ?x HAVING (MAX(timestamp(?x, :v, ?v)) > 1)")
    assert q is not None and q.dialect == "csparql"
    assert "ext#timestamp" in as_written(q)[0]
    same(q)


def test_a_query_with_no_tree_is_refused_saying_so() -> None:
    q = parsed_query(P + "{ WINDOW :w { ?s :p ?o } }")
    assert q is not None
    bare = dataclasses.replace(q, pattern=None, pattern_refused="why")
    with pytest.raises(LarsError, match=r"^the query has no pattern tree \(why\)$"):
        from_query(bare)


# ---------------------------------------------------------------- the engine's queries


def _as_parsed(q: ContinuousQuery) -> ContinuousQuery:
    """The query with the tree its text gives when parsed again (as before step 3)."""
    return with_text_pattern(dataclasses.replace(q, pattern=None, pattern_refused=None))


def _same_tree(q: ContinuousQuery) -> None:
    # repr: the facts of the text kept out of equality (elements, blocks, after, written)
    # must be the parse's too
    assert repr(q.pattern) == repr(_as_parsed(q).pattern), q.sparql


def _pull_text(q: RSPQuery, agg: Aggregate) -> ContinuousQuery:
    """The aggregate pulled by C-SPARQL, as compare_aggregate builds it."""
    pull = continuous(cs(q), "csparql")
    iris = {i: w.iri for i, w in enumerate(pull.dataset.windows)}
    group = " ".join(f"?{v}" for v in agg.group)
    text = (f"SELECT {group} {agg.sparql()} WHERE {to_sparql(cs(q).P, iris)}"
            + (f" GROUP BY {group}" if group else ""))
    projection = (*(pt.Projected(g) for g in agg.group),
                  pt.Projected(agg.alias, AggregateNode(
                      agg.func, None if agg.arg is None else Variable(agg.arg), agg.distinct)))
    return dataclasses.replace(pull, sparql=text, text=text,
                               pattern=select_tree(cs(q).P, iris, projection, group=agg.group))


def _engine_queries(q: RSPQuery) -> list[ContinuousQuery]:
    every = frozenset(range(len(q.S)))
    return [continuous(cs(q), "csparql"), continuous(cq(q), "cqels"),
            continuous(cq(q, every), "cqels")]


def test_the_engine_queries_of_the_house_have_their_texts_trees() -> None:
    done = 0
    for where, text in house():
        q = parsed_query(text)
        if q is None:
            continue
        try:
            model = from_query(q)
        except LarsError:
            continue
        for e in _engine_queries(model):
            try:
                _same_tree(e)
            except AssertionError as x:
                raise AssertionError(f"{where}: {x}") from None
        done += 1
    assert done >= 30, done


@pytest.mark.parametrize("where", [
    "{ WINDOW :w { ?s :p ?o } FILTER(?o + 1 * ?o - 2 / ?o >= 3 && !(?o = 4) || bound(?z)) }",
    "{ WINDOW :w { ?s :p ?o } FILTER(-?o < 2) FILTER(?o != \"a\\\"b\\nc\"@en-GB) }",
    "{ WINDOW :w { ?s :p ?o } OPTIONAL { ?o :q ?z FILTER(?z > 1) FILTER(?z < 5) } }",
    "{ { WINDOW :w { ?s :p ?o } } UNION { ?s :q \"x\"^^:d } MINUS { ?s :r 2.5 } }",
    "{ GRAPH <urn:g> { ?s :p ?o } WINDOW :w { ?s :q ?o } OPTIONAL { } }",
    "{ OPTIONAL { WINDOW :w { ?s :p ?o } } }",
])
def test_the_engine_queries_of_shapes_the_house_has_few_of(where: str) -> None:
    q = parsed_query(P + where)
    assert q is not None
    for e in _engine_queries(from_query(q)):
        _same_tree(e)


@pytest.mark.parametrize(("select", "tail"), [
    ("?s (COUNT(?o) AS ?n)", "GROUP BY ?s"),
    ("(MAX(DISTINCT ?v) AS ?m)", ""),
    ("?r ?s (COUNT(*) AS ?n)", "GROUP BY ?r ?s"),
])
def test_the_pulled_aggregate_has_its_texts_tree(select: str, tail: str) -> None:
    q = parsed_query(A.format(select, tail))
    assert q is not None
    found = find_aggregate(q)
    assert found is not None
    _same_tree(_pull_text(from_query(found[1]), found[0]))
