"""EP-SPARQL (003 Sec. 4.1): text -> :class:`rsep.algebra.epsparql.EpSparqlQuery`.

The grammar is sparqlib's SPARQL 1.1 grammar plus ``epsparql.lark`` (LALR). The
translation to the algebra follows SPARQL's (18.2.2) extended as Sec. 4.2 says:
seq -> SeqJoin, equals -> EqJoin, optionalseq -> SeqRightJoin, equalsoptional ->
EqLeftJoin. The condition F of SeqRightJoin / EqLeftJoin is, as for OPTIONAL,
the FILTERs at the top level of the optional operand (the left one of
OPTIONALSEQ, the right one of EQUALSOPTIONAL). Triple patterns are read by
substituting IRIs for the variables and parsing the block as Turtle; blank
nodes become non-distinguished variables (003 footnote 4).
"""

from __future__ import annotations

import functools
import re

import pyoxigraph as ox
from lark import Lark, Token, Tree

from rsep.algebra.epsparql import (
    BGP,
    Background,
    EpSparqlQuery,
    EqJoin,
    EqLeftJoin,
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
    conjoin,
    parse_policy,
    static,
    variables,
)
from rsep.lang.common import refuse_unknown_calls
from rsep.lang.errors import QueryError, position
from rsep.lang.expression import ExpressionReader, variable_extension
from rsep.lang.parser import READABLE, grammar_beside, parse_with, sparql_lalr
from rsep.lang.syntax import Terms, token
from rsep.lang.syntax import end_of as _end
from rsep.lang.syntax import start_of as _start

_VAR_IRI = "urn:rsep:epsparql:var:"
_WORDS = {**READABLE, "KW_SEQ": "SEQ", "KW_EQUALS": "EQUALS", "KW_OPTIONALSEQ": "OPTIONALSEQ",
          "KW_EQUALSOPTIONAL": "EQUALSOPTIONAL", "KW_UNION": "UNION"}
# Sec. 4.2's sigma: the time functions read as the variables the evaluators bind
_EXTENSIONS = {"get_duration": variable_extension("__d"), "get_starttime": variable_extension("__s"),
               "get_endtime": variable_extension("__e")}
_TIME_FUNCS = [(re.compile(r"getDURATION\s*\(\s*\)", re.I), "?__d"),
               (re.compile(r"getSTARTTIME\s*\(\s*\)", re.I), "?__s"),
               (re.compile(r"getENDTIME\s*\(\s*\)", re.I), "?__e")]


@functools.cache
def parser() -> Lark:
    return sparql_lalr(grammar_beside(__file__, "epsparql.lark"), "epsparql_unit")


def _parse(text: str, source: str | None) -> Tree:
    return parse_with(parser(), text, source, _WORDS)



def _vars(n: Tree | Token) -> list[Token]:
    if isinstance(n, Token):
        return [n] if n.type in ("VAR1", "VAR2") else []
    return [t for t in n.scan_values(lambda v: isinstance(v, Token) and v.type in ("VAR1", "VAR2"))]


class _Builder(Terms):
    def __init__(self, text: str, source: str | None) -> None:
        self.text = text
        self.source = source
        self.prefixes: dict[str, str] = {}
        self.base: str | None = None
        self.background: list[str] = []
        self._bn = 0
        self.reader = ExpressionReader(text, _EXTENSIONS)

    def iri(self, node: Tree | Token) -> str:
        if isinstance(node, Tree):
            return self.iri(node.children[0])
        if node.type == "IRIREF":
            return self._iriref(node)
        return self._pname(node)

    @property
    def prologue(self) -> str:
        return self.prologue_text()

    # ------------------------------------------------------------ query

    def build(self, tree: Tree) -> EpSparqlQuery:
        prologue, query = tree.children
        for d in prologue.children:
            if d.data == "prefix_decl":
                self.prefixes[str(d.children[1].children[0])[:-1]] = self._iriref(token(d.children[2]))
            elif d.data == "base_decl":
                self.base = self._iriref(token(d.children[1]))
        refuse_unknown_calls(tree, self.iri, self.error)
        form = query.children[0]
        values = query.children[1] if len(query.children) > 1 else None
        for n in form.iter_subtrees_topdown():
            if n.data == "dataset_clause":
                raise self.error("EP-SPARQL queries read the one input stream: FROM is not "
                                 "supported (background graphs are read with GRAPH <iri>)", n)
        if form.data in ("select_query", "ask_query"):
            where, mods = form.children[-2], form.children[-1]
            order = self._modifiers(mods)
            pattern = self._trailing(self.where(where), values)
            self._reads_stream(pattern, where)
            pattern = self._ordered(pattern, order)
            if form.data == "ask_query":
                return EpSparqlQuery(Project(pattern, (), False), (), None, ask=True,
                                     background=tuple(self.background), text=self.text,
                                     source=self.source)
            items, distinct = self.select_items(form.children[0])
            proj = Project(pattern, items, distinct)
            names = tuple(v for v, _ in items) if items is not None else tuple(variables(pattern))
            return EpSparqlQuery(proj, names, None, background=tuple(self.background),
                                 text=self.text, source=self.source)
        inner = form.children[1]
        if inner.data != "construct_construct_template":
            # CONSTRUCT WHERE { triples }: the template is the pattern (SPARQL 1.1, 16.2.4)
            body, mods = inner.children[-2], inner.children[-1]
            self._modifiers(mods)
            template = tuple(self.triples(body)) if body.data == "triples_template" else ()
            if not template:
                raise self.error("CONSTRUCT WHERE { } reads no stream triple", inner)
            pattern = self._trailing(BGP(template), values)
            return EpSparqlQuery(pattern, (), template, background=tuple(self.background),
                                 text=self.text, source=self.source)
        tmpl, where, mods = inner.children[0], inner.children[-2], inner.children[-1]
        order = self._modifiers(mods)
        pattern = self._ordered(self._trailing(self.where(where), values), order)
        self._reads_stream(pattern, where)
        patterns = self.triples(tmpl, allow_literal_subject=True) if tmpl.children else ()
        return EpSparqlQuery(pattern, (), tuple(patterns), background=tuple(self.background),
                             text=self.text, source=self.source)

    def _trailing(self, pattern: Node, values: Tree | None) -> Node:
        """A trailing VALUES block joins the WHERE pattern (SPARQL 1.1, 18.2.4.3)."""
        if values is None or not values.children:
            return pattern
        return Join(pattern, self.values(values))

    def _reads_stream(self, pattern: Node, where: Tree) -> None:
        if static(pattern):
            raise self.error("the WHERE pattern reads no stream triple (only VALUES, BIND or "
                             "GRAPH <background>), so it can detect no event: EP-SPARQL's "
                             "solutions are timed by the triples they match", where)

    def values(self, node: Tree) -> Values:
        """VALUES rows, each term as written (pyoxigraph checks the block; the terms are read
        as Turtle, so a number keeps its lexical form, as the stream's triples do)."""
        text = self.text[_start(node):_end(node)]
        try:
            ox.Store().query(f"{self.prologue}SELECT * WHERE {{ {text} }}")
        except SyntaxError as e:
            raise self.error(f"invalid VALUES block: {e}", node) from None
        block = next(node.find_pred(lambda t: t.data in ("inline_data_one_var", "inline_data_full")))
        names = tuple(str(v.children[0])[1:] for v in block.children
                      if isinstance(v, Tree) and v.data == "var")
        if block.data == "inline_data_one_var":
            groups = [[v] for v in block.children if isinstance(v, Tree) and v.data == "data_block_value"]
        else:
            groups = [[v for v in g.children if isinstance(v, Tree)] for g in block.children
                      if isinstance(g, Tree) and g.data == "data_block_value_group"]
        rows: list[Mu] = []
        for g in groups:
            row: dict[str, str] = {}
            for n, v in zip(names, g, strict=True):
                if isinstance(v.children[0], Token) and v.children[0].type == "UNDEF":
                    continue
                term = self._turtle(f"<urn:s> <urn:p> {self.text[_start(v):_end(v)]}", v)[0][2]
                assert isinstance(term, str)  # (VALUES holds no variable and no blank node)
                row[n] = term
            rows.append(tuple(sorted(row.items())))
        return Values(names, tuple(rows))

    def _modifiers(self, mods: Tree) -> Expr | None:
        """ORDER BY orders the solutions detected at one instant; the modifiers that need
        the end of the stream are refused."""
        order = None
        for m in mods.children:
            if not isinstance(m, Tree):
                continue
            if m.data != "order_clause":
                raise self.error("GROUP BY, HAVING, LIMIT and OFFSET need the end of the stream, "
                                 "which an event stream does not have (results are output as "
                                 "they are detected): aggregate with CONSTRUCT rules (003 query "
                                 "(5)), and cut the output downstream", m)
            conds = [c for c in m.children if isinstance(c, Tree)]
            text = self.text[_start(conds[0]):_end(conds[-1])]
            for rx, var in _TIME_FUNCS:
                text = rx.sub(var, text)
            order = Expr(text, frozenset(str(t)[1:] for t in _vars(m)), self.prologue)
            self._check_order(order, m)
        return order

    def _check_order(self, e: Expr, node: Tree) -> None:
        try:
            ox.Store().query(f"{e.prologue}SELECT * WHERE {{ }} ORDER BY {e.text}")
        except SyntaxError as err:
            raise self.error(f"invalid ORDER BY: {err}", node) from None

    def _ordered(self, pattern: Node, order: Expr | None) -> Node:
        return pattern if order is None else OrderBy(pattern, order)

    def select_items(self, sel: Tree) -> tuple[tuple[tuple[str, Expr | None], ...] | None, bool]:
        distinct = False
        items: list[tuple[str, Expr | None]] = []
        star = False
        for c in sel.children:
            if isinstance(c, Token):
                if c.type == "ASTERIX":
                    star = True
                elif str(c).upper() == "DISTINCT":
                    distinct = True
                continue
            inner = c.children[0]
            if inner.data == "var":
                items.append((str(inner.children[0])[1:], None))
            else:
                expr, var = inner.children[0], inner.children[-1]
                if any(n.data == "aggregate" for n in expr.iter_subtrees()):
                    raise self.error("aggregates are not supported in EP-SPARQL (003 Sec. 4.1 "
                                     "aggregates with CONSTRUCT rules, query (5))", expr)
                items.append((str(var.children[0])[1:], self.expr(expr)))
        return (None if star else tuple(items)), distinct

    def expr(self, node: Tree) -> Expr:
        for n in node.iter_subtrees():
            if n.data in ("exists_func", "not_exists_func") and _MARKER_IN.search(
                    self.text[_start(n):_end(n)]):
                raise self.error("an EXISTS pattern is plain SPARQL: SEQ, EQUALS, OPTIONALSEQ, "
                                 "EQUALSOPTIONAL and the time functions are not allowed in it", n)
        text = self.text[_start(node):_end(node)]
        for rx, var in _TIME_FUNCS:
            text = rx.sub(var, text)
        names = frozenset(str(t)[1:] for t in _vars(node))
        e = Expr(text, names, self.prologue, self.reader.expression(node))
        self._check_expr(e, node)
        return e

    def _check_expr(self, e: Expr, node: Tree) -> None:
        q = f"{e.prologue}SELECT * WHERE {{ BIND (({e.text}) AS ?__r) }}"
        try:
            ox.Store().query(q)
        except SyntaxError as err:
            raise self.error(f"invalid expression: {err}", node) from None

    # ------------------------------------------------------------ patterns

    def where(self, node: Tree) -> Node:
        if node.data == "where_braceless":
            parts = node.children[1:]
            groups = [p for p in parts if isinstance(p, Tree) and p.data == "group_graph_pattern"]
            ops = [p for p in parts if isinstance(p, Tree) and p.data == "ep_op"]
            filters = [p for p in parts if isinstance(p, Tree) and p.data == "filter"]
            pat = self.combine(groups, ops)
            conds = [self.expr(f.children[1]) for f in filters]
            return Filter(self._and(conds), pat) if conds else pat
        return self.group(node.children[-1])

    def _and(self, conds: list[Expr]) -> Expr:
        return conjoin(conds)

    def combine(self, groups: list[Tree], ops: list[Tree]) -> Node:
        return self._ops(groups, ops)

    def _split(self, g: Tree) -> tuple[Node, Expr | None]:
        """An optional operand: its group without its top-level FILTERs, and those as F."""
        filters = self._top_filters(g)
        node = self.group(g, skip_filters=True)
        return node, (self._and([self.expr(f.children[1]) for f in filters]) if filters else None)

    @staticmethod
    def _top_filters(g: Tree) -> list[Tree]:
        inner = g.children[-1]
        if inner.data != "group_graph_pattern_sub":
            return []
        out = []
        for o in inner.children:
            if isinstance(o, Tree) and o.data == "group_graph_pattern_sub_other":
                gp = o.children[0]
                if isinstance(gp.children[0], Tree) and gp.children[0].data == "filter":
                    out.append(gp.children[0])
        return out

    def group(self, node: Tree, skip_filters: bool = False) -> Node:
        inner = node.children[-1]
        if inner.data == "sub_select":
            sel, where, mods = inner.children[0], inner.children[1], inner.children[2]
            order = self._modifiers(mods)
            items, distinct = self.select_items(sel)
            vals = inner.children[3] if len(inner.children) > 3 else None
            return Project(self._ordered(self._trailing(self.where(where), vals), order), items, distinct)
        cur: Node = Unit()
        filters = []

        def join(a: Node, b: Node) -> Node:
            return b if isinstance(a, Unit) else Join(a, b)

        for c in inner.children:
            if not isinstance(c, Tree):
                continue
            if c.data == "triples_block":
                cur = join(cur, self.block(c))
                continue
            for cc in c.children:
                if not isinstance(cc, Tree):
                    continue
                if cc.data == "triples_block":
                    cur = join(cur, self.block(cc))
                    continue
                g = cc.children[0]
                kind = g.data
                if kind == "group_or_union_graph_pattern":
                    groups = [x for x in g.children if isinstance(x, Tree) and x.data == "group_graph_pattern"]
                    ops = [x for x in g.children if isinstance(x, Tree) and x.data == "ep_op"]
                    cur = join(cur, self._ops(groups, ops))
                elif kind == "optional_graph_pattern":
                    opt, cond = self._split(g.children[1])
                    cur = LeftJoin(cur, opt, cond)
                elif kind == "filter":
                    if not skip_filters:
                        filters.append(self.expr(g.children[1]))
                elif kind == "bind":
                    cur = Extend(cur, str(g.children[-1].children[0])[1:], self.expr(g.children[1]))
                elif kind == "graph_graph_pattern":
                    cur = join(cur, self._graph(g))
                elif kind == "service_graph_pattern":
                    raise self.error("SERVICE is refused: a query cannot reach the network", g)
                elif kind == "minus_graph_pattern":
                    cur = Minus(cur, self.group(g.children[1]))
                elif kind == "inline_data":
                    cur = join(cur, self.values(g))
                else:
                    raise self.error(f"{kind} is not supported in EP-SPARQL", g)
        if filters:
            cur = Filter(self._and(filters), cur)
        return cur

    def _ops(self, groups: list[Tree], ops: list[Tree]) -> Node:
        cur = self.group(groups[0])
        for k, (op, g) in enumerate(zip(ops, groups[1:], strict=True)):
            word = str(op.children[0]).upper()
            if word == "OPTIONALSEQ":
                # the left operand is optional: F is its top-level FILTERs when it is one
                # group; a longer left operand (a SEQ b OPTIONALSEQ c) brings none
                opt, cond = self._split(groups[0]) if k == 0 else (cur, None)
                cur = SeqRightJoin(opt, self.group(g), cond)
            elif word == "EQUALSOPTIONAL":
                opt, cond = self._split(g)
                cur = EqLeftJoin(cur, opt, cond)
            else:
                cls = {"UNION": Union, "SEQ": SeqJoin, "EQUALS": EqJoin}[word]
                cur = cls(cur, self.group(g))
        return cur

    def _graph(self, g: Tree) -> Background:
        target = g.children[1]
        if isinstance(target.children[0], Tree) and target.children[0].data == "var":
            raise self.error("GRAPH needs the IRI of a background graph, not a variable", target)
        iri = self.iri(target.children[0])
        body = g.children[2].children[-1]
        if body.data != "group_graph_pattern_sub" or any(
                isinstance(c, Tree) and c.data != "triples_block" for c in body.children):
            raise self.error("GRAPH <iri> { ... } may only hold triple patterns in EP-SPARQL", g)
        pats: list[TriplePattern] = []
        for c in body.children:
            pats.extend(self.triples(c))
        if iri not in self.background:
            self.background.append(iri)
        return Background(iri, tuple(pats))

    def block(self, node: Tree) -> Node:
        """A triples block: one BGP of its plain triple patterns, joined with a Path for
        each property path (with what its object nests), in order."""
        if not any(_is_path(v, self.text) for v in node.find_data("verb_path")):
            return BGP(tuple(self.triples(node)))
        parts: list[Node] = []  # BGP patterns and Paths, in order
        for same in _own(node, "triples_same_subject_path"):
            subject, plist = same.children[0], same.children[1]
            if subject.data != "var_or_term":  # [ ... ] as subject: one path pattern in all
                text = self.text[_start(same):_end(same)]
                self._check_path(text, node)
                names = sorted({str(t)[1:] for t in _vars(same)})
                parts.append(Path(text, tuple(names), self.prologue))
                continue
            subj = self.text[_start(subject):_end(subject)]
            for verb, objs in _properties(plist):
                text = f"{subj} {self.text[_start(verb):_end(objs)]}"
                if _is_path(verb, self.text):
                    for t in verb.scan_values(lambda v: isinstance(v, Token) and v.type == "PNAME_LN"):
                        self.iri(t)
                    names = sorted({str(t)[1:] for t in [*_vars(subject), *_vars(verb), *_vars(objs)]})
                    self._check_path(text, node)
                    parts.append(Path(text, tuple(names), self.prologue))
                else:
                    turtle = (self._with_var_iris(_start(subject), _end(subject), subject) + " "
                              + self._with_var_iris(_start(verb), _end(objs), plist))
                    parts.append(BGP(tuple(self._turtle(turtle, node))))
        cur = parts[0]
        for p in parts[1:]:
            if isinstance(cur, BGP) and isinstance(p, BGP):
                cur = BGP(cur.patterns + p.patterns)
            elif isinstance(cur, Join) and isinstance(cur.right, BGP) and isinstance(p, BGP):
                cur = Join(cur.left, BGP(cur.right.patterns + p.patterns))
            else:
                cur = Join(cur, p)
        return cur

    def _check_path(self, text: str, node: Tree) -> None:
        try:
            ox.Store().query(f"{self.prologue}SELECT * WHERE {{ {text} }}")
        except SyntaxError as e:
            raise self.error(f"invalid triple pattern: {e}", node) from None

    def triples(self, node: Tree, allow_literal_subject: bool = False) -> list[TriplePattern]:
        """Triple patterns of a block: variables become IRIs, the block is parsed as Turtle."""
        for t in node.scan_values(lambda v: isinstance(v, Token) and v.type == "PNAME_LN"):
            self.iri(t)  # an undeclared prefix is reported where it is used
        inner = node.children[0] if node.data == "construct_template" and node.children else node
        text = self._with_var_iris(_start(node), _end(node), inner)
        if node.data == "construct_template":
            text = text.strip()[1:-1]
        return self._turtle(text, node)

    def _with_var_iris(self, a: int, b: int, inner: Tree | Token) -> str:
        """The text from a to b with the variables of ``inner`` written as IRIs (Turtle)."""
        text = self.text[a:b]
        for t in sorted(_vars(inner), key=_start, reverse=True):
            if a <= _start(t) < b:
                i, j = _start(t) - a, _end(t) - a
                text = text[:i] + f"<{_VAR_IRI}{str(t)[1:]}>" + text[j:]
        return text

    def _turtle(self, text: str, node: Tree) -> list[TriplePattern]:
        text = text.rstrip().rstrip(".")
        turtle = self.prologue + text + " .\n"
        try:
            quads = list(ox.parse(turtle, format=ox.RdfFormat.TURTLE))
        except SyntaxError as e:
            raise self.error(f"invalid triple pattern: {e}", node) from None
        bnodes: dict[str, str] = {}

        def term(x: ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple) -> Term:
            if isinstance(x, ox.NamedNode) and x.value.startswith(_VAR_IRI):
                return Var(x.value[len(_VAR_IRI):])
            if isinstance(x, ox.BlankNode):
                if x.value not in bnodes:
                    self._bn += 1
                    bnodes[x.value] = f"_b{self._bn}"
                return Var(bnodes[x.value])
            return str(x)

        return [(term(q.subject), term(q.predicate), term(q.object)) for q in quads]


_SIMPLE_VERB = re.compile(r"^(?:<[^>]*>|[A-Za-z_]?[\w.-]*:[\w.\-%:\\]*|a|[?$]\w+)$")
_MARKER_IN = re.compile(r"\b(OPTIONALSEQ|EQUALSOPTIONAL|EQUALS|SEQ)\s*\{|\bget(DURATION|STARTTIME|ENDTIME)\s*\(",
                        re.I)


def _is_path(verb: Tree, text: str) -> bool:
    """A verb that is a property path, not one IRI or variable."""
    return verb.data == "verb_path" and not _SIMPLE_VERB.match(text[_start(verb):_end(verb)].strip())


def _properties(plist: Tree) -> list[tuple[Tree, Tree]]:
    """The (verb, object list) pairs of a property list, in order."""
    out: list[tuple[Tree, Tree]] = []
    verb = None
    for n in plist.iter_subtrees_topdown():
        if n.data in ("verb_path", "verb_simple", "verb"):
            verb = n
        elif n.data in ("object_list_path", "object_list") and verb is not None:
            out.append((verb, n))
            verb = None
    # nested blank-node property lists come after their own verb: keep the outer pairs only
    outer = []
    end = -1
    for v, o in out:
        if _start(v) >= end:
            outer.append((v, o))
            end = _end(o)
    return outer


def _own(node: Tree, data: str) -> list[Tree]:
    """The subtrees named ``data`` in this chain of triples blocks, not inside one another."""
    out = []
    for c in node.children:
        if isinstance(c, Tree):
            if c.data == data:
                out.append(c)
            else:
                out.extend(_own(c, data))
    return out


def parse_epsparql(text: str, *, source: str | None = None,
                   policy: str | None = None) -> EpSparqlQuery:
    """Parse an EP-SPARQL SELECT or CONSTRUCT query (policy: unrestricted, chronological, recent)."""
    m = re.search(r"\bSEQOPTIONAL\b", text, re.I)
    if m:
        line, col = position(text, m.start())
        raise QueryError("SEQOPTIONAL is not part of EP-SPARQL: a mandatory pattern followed by "
                         "an optional one would break timewise monotonicity (003 Sec. 4.2, "
                         "query (7)); OPTIONALSEQ puts the optional pattern first", line, col, source)
    q = _Builder(text, source).build(_parse(text, source))
    if policy is not None:
        try:
            q.policy = parse_policy(policy)
        except ValueError as e:
            raise QueryError(str(e), source=source) from None
    return q



__all__ = ["parse_epsparql", "parser"]
