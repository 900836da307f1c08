"""A query's parse tree (the shared grammar's, rsep_ext.lark over sparqlib's) read once into
rsep.algebra.pattern's tree, as SPARQL 1.1 Sec. 18.2.2 translates a query.

The dialects' own constructs come in as the rewritten text has them: RSP-QL's WINDOW and a
CQELS stream pattern as :class:`WindowGraph` (the window the dialect named for it), a MATCH
as :class:`MatchSlot`; the dataset clauses and REGISTER are not part of the tree (the
dialect reads them into the query), C-SPARQL's ``timestamp(...)`` is a call of its IRI.
A construct the reader has no node for is a located :class:`PatternRefused`.
"""

from __future__ import annotations

from collections.abc import Mapping

from lark import Token, Tree

from rsep.algebra.events import FROM_VAR, TO_VAR, MatchPattern
from rsep.algebra.expression import (
    Expression,
    FunctionCall,
    Iri,
    Literal,
    PrefixedName,
    Variable,
    conjunction,
    signed_literal,
)
from rsep.algebra.pattern import (
    BGP,
    DEFAULT_BASE,
    RDF,
    Alternative,
    BlankNode,
    Extend,
    Filter,
    Graph,
    GroupKey,
    Inverse,
    Join,
    LeftJoin,
    MatchSlot,
    Minus,
    Modifiers,
    NegatedSet,
    OrderKey,
    Path,
    Pattern,
    PatternRefused,
    Projected,
    Prologue,
    Query,
    Repeat,
    Sequence,
    Service,
    SubSelect,
    Term,
    Triple,
    Union,
    Values,
    WindowGraph,
    Written,
    exists,
    units,
)
from rsep.algebra.query import CSPARQL_TIMESTAMP, ContinuousQuery
from rsep.lang.errors import position
from rsep.lang.expression import ExpressionReader
from rsep.lang.parser import parse_tree
from rsep.lang.syntax import FORMS, Syntax, end_of, start_of

RDF_TYPE = Iri(RDF + "type")
_FIRST, _REST, _NIL = Iri(RDF + "first"), Iri(RDF + "rest"), Iri(RDF + "nil")
_VERBS = ("verb_path", "verb_simple", "verb")
_OBJECTS = ("object_list_path", "object_list")


def _trees(node: Tree) -> list[Tree]:
    return [c for c in node.children if isinstance(c, Tree)]


def _tokens(node: Tree) -> list[Token]:
    return [c for c in node.children if isinstance(c, Token)]


def _word(node: Tree, word: str) -> bool:
    return any(str(t).upper() == word for t in _tokens(node))


class _Expressions(ExpressionReader):
    """rsep.lang.expression's reader, with EXISTS read into a tree (so that a WINDOW or a
    MATCH inside it is read as the dialect reads it) and C-SPARQL's timestamp() as a call
    of its IRI (what the rewritten text calls)."""

    def __init__(self, reader: PatternReader) -> None:
        super().__init__(reader.syn.text, {"timestamp_call": _timestamp})
        self.patterns = reader

    def expression(self, node: Tree) -> Expression:
        if node.data in ("exists_func", "not_exists_func"):
            g = _trees(node)[-1]
            names = frozenset(str(t)[1:] for t in g.scan_values(
                lambda v: isinstance(v, Token) and v.type in ("VAR1", "VAR2")))
            return exists(self.patterns.group(g), node.data == "not_exists_func", names)
        return super().expression(node)


def _timestamp(reader: ExpressionReader, node: Tree) -> Expression:
    return FunctionCall(Iri(CSPARQL_TIMESTAMP), tuple(reader.expression(c) for c in _trees(node)))


class PatternReader:
    """Reads one query's parse tree. ``streams``: the window each CQELS stream pattern
    reads (by the node's id); ``slots``: each MATCH's slot (by the node's id)."""

    def __init__(self, syn: Syntax, streams: Mapping[int, str] | None = None,
                 slots: Mapping[int, MatchSlot] | None = None) -> None:
        self.syn = syn
        self.streams = dict(streams or {})
        self.slots = dict(slots or {})
        self.exprs = _Expressions(self)
        labels = {str(t)[2:] for t in syn.tree.scan_values(
            lambda v: isinstance(v, Token) and v.type == "BLANK_NODE_LABEL")}
        self._fresh_prefix = "rsep"
        while any(x.startswith(self._fresh_prefix) for x in labels):
            self._fresh_prefix += "_"
        self._fresh = 0

    def refuse(self, what: str, node: Tree | Token) -> PatternRefused:
        line, col = position(self.syn.text, start_of(node))
        return PatternRefused(what, line, col)

    def fresh(self, made: str = "list") -> BlankNode:
        self._fresh += 1
        return BlankNode(f"{self._fresh_prefix}{self._fresh}", made)

    # ------------------------------------------------------------ the query

    def query(self) -> Query:
        syn = self.syn
        body = syn.tree.children[1]
        q = next(c for c in _trees(body) if c.data in FORMS)
        values = self._values_clause(_trees(body)[-1])
        kids = _trees(q)
        where = next((c for c in kids if c.data == "where_clause"), None)
        mods = next((c for c in kids if c.data == "solution_modifier"), None)
        pattern = None if where is None else self.group(_trees(where)[-1])
        elements = () if where is None else _kinds(_trees(where)[-1])
        template: tuple[Triple, ...] = ()
        describe = None
        short = False
        if q.data == "construct_query":
            inner = kids[0]
            kids = _trees(inner)
            mods = next(c for c in kids if c.data == "solution_modifier")
            if inner.data == "construct_construct_template":
                template = tuple(self._triples(kids[0]))
                where = next(c for c in kids if c.data == "where_clause")
                pattern = self.group(_trees(where)[-1])
                elements = _kinds(_trees(where)[-1])
            else:  # CONSTRUCT WHERE { template }: the template is the pattern
                tt = next((c for c in kids if c.data == "triples_template"), None)
                template = () if tt is None else tuple(self._triples(tt))
                pattern = BGP(template)
                elements, short = ("triples",) if template else (), True
        elif q.data == "describe_query":
            targets = [c for c in kids if c.data == "var_or_iri"]
            describe = None if any(t.type == "ASTERIX" for t in _tokens(q)) \
                else tuple(self._var_or_iri(t) for t in targets)
        select = next((c for c in kids if c.data == "select_clause"), None)
        modifiers = self._modifiers(select, mods)
        written = None if select is None else self._written(select, mods)
        return Query(syn.form, pattern, modifiers, self._prologue(), template, describe, values,
                     elements, short, written)

    def _text(self, node: Tree) -> str:
        """A node's text as the rewritten query has it (the dialect's edits inside it
        applied), every run of white space one space."""
        s, e = start_of(node), end_of(node)
        out = self.syn.text[s:e]
        inside = [(a, b, t) for a, b, t in self.syn.all_edits()
                  if s <= a and b <= e and not (a == b and a in (s, e))]
        for a, b, t in sorted(inside, key=lambda x: (x[0], x[1]), reverse=True):
            out = out[:a - s] + t + out[b - s:]
        return " ".join(out.split())

    def _written(self, select: Tree, mods: Tree | None) -> Written:
        items = tuple(self._text(c) for c in _trees(select))
        aggregates = [self._text(a) for a in select.iter_subtrees_topdown()
                      if a.data == "aggregate"]
        group_by = having = None
        for clause in _trees(mods) if mods is not None else ():
            if clause.data == "group_clause":
                group_by = tuple(self._text(c) for c in _trees(clause))
            elif clause.data == "having_clause":
                having = tuple(self._text(c) for c in _trees(clause))
                aggregates += [self._text(a) for a in clause.iter_subtrees_topdown()
                               if a.data == "aggregate"]
        return Written(items, group_by, having, tuple(aggregates))

    def _prologue(self) -> Prologue:
        syn = self.syn
        base = syn.base
        if base is None and (0, 0, f"BASE <{DEFAULT_BASE}> ") in syn.all_edits():
            base = DEFAULT_BASE
        return Prologue(base, tuple(syn.prefixes.items()))

    def _modifiers(self, select: Tree | None, mods: Tree | None) -> Modifiers:
        projection: tuple[Projected, ...] | None = None
        distinct = reduced = False
        if select is not None:
            distinct, reduced = _word(select, "DISTINCT"), _word(select, "REDUCED")
            if not any(t.type == "ASTERIX" for t in _tokens(select)):
                items = []
                for item in _trees(select):
                    inner = item.children[0]
                    assert isinstance(inner, Tree)
                    if inner.data == "var":
                        items.append(Projected(self._var(inner).name))
                    else:  # (expression AS ?var)
                        e, v = _trees(inner)
                        items.append(Projected(self._var(v).name, self.exprs.expression(e)))
                projection = tuple(items)
        group_by: list[GroupKey] = []
        having: list[Expression] = []
        order_by: list[OrderKey] = []
        limit = offset = None
        for clause in _trees(mods) if mods is not None else ():
            if clause.data == "group_clause":
                for cond in _trees(clause):
                    inner = _trees(cond)[0]
                    if inner.data == "group_condition_expression_as_var":
                        e, *named = _trees(inner)
                        group_by.append(GroupKey(self.exprs.expression(e),
                                                 self._var(named[0]).name if named else None))
                    else:
                        group_by.append(GroupKey(self.exprs.expression(inner)))
            elif clause.data == "having_clause":
                having.extend(self.exprs.expression(_trees(c)[0]) for c in _trees(clause))
            elif clause.data == "order_clause":
                for cond in _trees(clause):
                    order_by.append(OrderKey(self.exprs.expression(_trees(cond)[0]),
                                             _word(cond, "DESC")))
            elif clause.data == "limit_offset_clauses":
                for c in _trees(clause):
                    n = int(str(_tokens(c)[-1]))
                    if c.data == "limit_clause":
                        limit = n
                    else:
                        offset = n
        return Modifiers(projection, distinct, reduced, tuple(group_by), tuple(having),
                         tuple(order_by), limit, offset)

    # ------------------------------------------------------------ group graph patterns

    def group(self, node: Tree) -> Pattern:
        """A ``group_graph_pattern`` (Sec. 18.2.2.6)."""
        inner = _trees(node)[0] if _trees(node) else None
        if inner is None:
            return BGP()
        if inner.data == "sub_select":
            select, where, mods, values = _trees(inner)
            return SubSelect(self.group(_trees(where)[-1]), self._modifiers(select, mods),
                             self._values_clause(values))
        g: Pattern = BGP()
        filters: list[Expression] = []
        pending: list[Triple] = []
        blocks: list[int] = []
        after: list[int] = []  # per FILTER, the elements (units) written before it

        def flush() -> None:
            nonlocal g
            if pending:
                g = _join(g, BGP(tuple(pending), tuple(blocks)))
                pending.clear()
                blocks.clear()

        for element in _elements(inner):
            if element.data == "triples_block":
                got = self._triples(element)
                pending.extend(got)
                blocks.append(len(got))
                continue
            if element.data == "filter":
                filters.append(self.exprs.expression(_trees(element)[0]))
                after.append(len(units(g)) + len(blocks))
                continue
            flush()
            d = element.data
            if d == "optional_graph_pattern":
                right = self.group(_trees(element)[0])
                if isinstance(right, Filter):
                    g = LeftJoin(g, right.arg, conjunction(list(right.conditions)), right)
                else:
                    g = LeftJoin(g, right)
            elif d == "minus_graph_pattern":
                g = Minus(g, self.group(_trees(element)[0]))
            elif d == "bind":
                e, v = _trees(element)
                g = Extend(g, self._var(v), self.exprs.expression(e))
            else:
                g = _join(g, self._not_triples(element))
        flush()
        return Filter(tuple(filters), g, tuple(after)) if filters else g

    def _not_triples(self, node: Tree) -> Pattern:
        d = node.data
        kids = _trees(node)
        if d == "group_or_union_graph_pattern":
            out = self.group(kids[0])
            for k in kids[1:]:
                out = Union(out, self.group(k))
            # a lone group inside a group is a join with it: kept as a group of its own, not
            # flattened (its FILTERs are its own)
            return out
        if d == "graph_graph_pattern":
            return Graph(self._var_or_iri(kids[0]), self.group(kids[1]))
        if d == "window_graph_pattern":
            target = kids[0]
            w = self._var(target.children[0]) if self.syn.is_var(target) \
                else Iri(self.syn.iri(target))
            return WindowGraph(w, self.group(kids[1]))
        if d == "stream_graph_pattern":
            if id(node) not in self.streams:
                raise self.refuse("a STREAM pattern outside a CQELS query", node)
            return WindowGraph(Iri(self.streams[id(node)]), self.group(kids[-1]))
        if d == "match_pattern":
            if id(node) not in self.slots:
                raise self.refuse("a MATCH outside an RSEP-QL query", node)
            return self.slots[id(node)]
        if d == "inline_data":
            return self._data_block(kids[0])
        if d == "service_graph_pattern":
            return Service(self._var_or_iri(kids[0]), self.group(kids[1]), _word(node, "SILENT"),
                           position(self.syn.text, start_of(node)))
        raise self.refuse(f"{d}: no node of the pattern tree holds it", node)

    # ------------------------------------------------------------ VALUES

    def _values_clause(self, node: Tree) -> Values | None:
        kids = _trees(node)
        return self._data_block(kids[0]) if kids else None

    def _data_block(self, node: Tree) -> Values:
        block = _trees(node)[0]
        if block.data == "inline_data_one_var":
            var, *cells = _trees(block)
            return Values((self._var(var).name,), tuple((self._cell(c),) for c in cells))
        names = tuple(self._var(v).name for v in _trees(block) if v.data == "var")
        rows = tuple(tuple(self._cell(c) for c in _trees(r))
                     for r in _trees(block) if r.data == "data_block_value_group")
        return Values(names, rows)

    def _cell(self, node: Tree) -> Iri | PrefixedName | Literal | None:
        if not _trees(node):  # UNDEF
            return None
        t = self._constant(_trees(node)[0])
        assert isinstance(t, (Iri, PrefixedName, Literal))  # (the grammar has no other)
        return t

    # ------------------------------------------------------------ triples

    def _triples(self, node: Tree) -> list[Triple]:
        """A triples block, template or ``construct_triples``, expanded (Sec. 18.2.2.4)."""
        out: list[Triple] = []
        for same in node.iter_subtrees_topdown():
            if same.data in ("triples_same_subject_path", "triples_same_subject"):
                subject, props = _trees(same)
                s = self._node(subject, out)
                self._properties(s, props, out)
        return out

    def _properties(self, s: Term, node: Tree, out: list[Triple]) -> None:
        """A property list: each verb with its objects."""
        verb: Term | Path | None = None
        for c in _trees(node):
            if c.data in _VERBS:
                verb = self._verb(c)
            elif c.data in _OBJECTS:
                assert verb is not None
                for obj in _objects(c):
                    out.append(Triple(s, verb, self._node(obj, out)))
            else:  # property_list(_path)(_not_empty)(_other)(_rest), verb_object_list
                self._properties(s, c, out)

    def _verb(self, node: Tree) -> Term | Path:
        if node.data == "verb_simple":
            return self._var(_trees(node)[0])
        if node.data == "verb":
            inner = node.children[0]
            return RDF_TYPE if isinstance(inner, Token) else self._var_or_iri(inner)
        return self._path(_trees(node)[0])

    def _node(self, node: Tree, out: list[Triple]) -> Term:
        """A graph node: its term, the triples of a collection or ``[ ... ]`` added."""
        d = node.data
        if d in ("graph_node_path", "graph_node", "triples_node_path", "triples_node",
                 "object_path", "object"):
            return self._node(_trees(node)[0], out)
        if d == "var_or_term":
            inner = node.children[0]
            assert isinstance(inner, Tree)
            return self._var(inner) if inner.data == "var" else self._constant(inner)
        if d in ("collection_path", "collection"):
            items = [self._node(k, out) for k in _trees(node)]
            head = cell = self.fresh()
            for i, item in enumerate(items):
                out.append(Triple(cell, _FIRST, item))
                nxt: Term = self.fresh() if i + 1 < len(items) else _NIL
                out.append(Triple(cell, _REST, nxt))
                if isinstance(nxt, BlankNode):
                    cell = nxt
            return head
        if d in ("blank_node_property_list_path", "blank_node_property_list"):
            b = self.fresh()
            self._properties(b, _trees(node)[0], out)
            return b
        raise self.refuse(f"{d}: not a graph node", node)

    def _constant(self, node: Tree) -> Term:
        """A ``graph_term`` (or what it holds): an IRI, a literal, a blank node, ``()``."""
        if node.data == "graph_term":
            inner = node.children[0]
            if isinstance(inner, Token):  # NIL
                return _NIL
            return self._constant(inner)
        if node.data == "blank_node":
            tok = node.children[0]
            assert isinstance(tok, Token)
            return self.fresh("anon") if tok.type == "ANON" else BlankNode(str(tok)[2:])
        e = self.exprs.expression(node)
        lit = signed_literal(e)
        if lit is not None:
            return lit
        if isinstance(e, (Iri, PrefixedName)):
            return e
        raise self.refuse(f"{node.data}: not an RDF term", node)

    def _var(self, node: Tree | Token) -> Variable:
        assert isinstance(node, Tree) and node.data == "var"
        return Variable(str(node.children[0])[1:])

    def _var_or_iri(self, node: Tree) -> Variable | Iri | PrefixedName:
        inner = node.children[0]
        assert isinstance(inner, Tree)
        if inner.data == "var":
            return self._var(inner)
        e = self.exprs.expression(inner)
        assert isinstance(e, (Iri, PrefixedName))
        return e

    # ------------------------------------------------------------ paths

    def _path(self, node: Tree) -> Path:
        d = node.data
        kids = _trees(node)
        if d == "path":
            return self._path(kids[0])
        if d in ("path_alternative", "path_sequence"):
            parts = tuple(self._path(k) for k in kids)
            if len(parts) == 1:
                return parts[0]
            return Alternative(parts) if d == "path_alternative" else Sequence(parts)
        if d == "path_elt_or_inverse":
            p = self._path(kids[0])
            return Inverse(p) if _tokens(node) else p
        if d == "path_elt":
            p = self._path(kids[0])
            if len(kids) > 1:
                return Repeat(p, str(kids[1].children[0]))
            return p
        if d == "path_primary":
            if not kids:  # a
                return RDF_TYPE
            inner = kids[0]
            if inner.data == "iri":
                return self._iri(inner)
            if inner.data == "path_negated_property_set":
                forward: list[Iri | PrefixedName] = []
                inverse: list[Iri | PrefixedName] = []
                for one in _trees(inner):
                    iris = _trees(one)
                    i = self._iri(iris[0]) if iris else RDF_TYPE
                    (inverse if any(t.type == "CARET" for t in _tokens(one)) else forward).append(i)
                return NegatedSet(tuple(forward), tuple(inverse))
            return self._path(inner)
        raise self.refuse(f"{d}: not a property path", node)

    def _iri(self, node: Tree) -> Iri | PrefixedName:
        e = self.exprs.expression(node)
        assert isinstance(e, (Iri, PrefixedName))
        return e


def _elements(sub: Tree) -> list[Tree]:
    """A ``group_graph_pattern_sub``'s elements in order: triples blocks and what
    ``graph_pattern_not_triples`` holds."""
    out: list[Tree] = []
    for c in _trees(sub):
        if c.data == "triples_block":
            out.append(c)
        elif c.data == "group_graph_pattern_sub_other":
            for k in _trees(c):
                out.append(_trees(k)[0] if k.data == "graph_pattern_not_triples" else k)
    return out


_KINDS = {"triples_block": "triples", "filter": "FILTER", "graph_graph_pattern": "GRAPH",
          "window_graph_pattern": "WINDOW", "stream_graph_pattern": "STREAM",
          "group_or_union_graph_pattern": "group", "optional_graph_pattern": "OPTIONAL",
          "minus_graph_pattern": "MINUS", "bind": "BIND", "inline_data": "VALUES",
          "service_graph_pattern": "SERVICE", "match_pattern": "MATCH"}


def _kinds(node: Tree) -> tuple[str, ...]:
    """The kinds of a ``group_graph_pattern``'s elements in order (rsep.algebra.pattern's
    ``Query.elements``); none for a sub-select."""
    inner = _trees(node)[0] if _trees(node) else None
    if inner is None or inner.data == "sub_select":
        return ()
    return tuple(_KINDS.get(e.data, e.data) for e in _elements(inner))


def _objects(node: Tree) -> list[Tree]:
    """An object list's own objects (not those of a ``[ ... ]`` among them)."""
    out: list[Tree] = []
    for c in _trees(node):
        if c.data in ("object_path", "object"):
            out.append(c)
        elif c.data == "object_list_path_other":
            out.extend(_trees(c))
    return out


def _join(g: Pattern, p: Pattern) -> Pattern:
    """Join(g, p), the empty group left out (Sec. 18.2.2.8)."""
    if isinstance(g, BGP) and not g.triples:
        return p
    return Join(g, p)


def read_query(syn: Syntax, streams: Mapping[int, str] | None = None,
               slots: Mapping[int, MatchSlot] | None = None) -> Query:
    """The query's tree (after its dialect has read its own constructs: see
    :class:`PatternReader`)."""
    return PatternReader(syn, streams, slots).query()


def with_pattern(q: ContinuousQuery, syn: Syntax, streams: Mapping[int, str] | None = None,
                 slots: Mapping[int, MatchSlot] | None = None) -> ContinuousQuery:
    """``q`` with its tree, or with why there is none (the text still runs: nothing reads
    the tree yet that the text does not also say)."""
    try:
        q.pattern = read_query(syn, streams, slots)
    except PatternRefused as e:
        q.pattern_refused = str(e)
    except RecursionError:
        # (EXISTS writes its group's text as it is read: a chain of many hundred operators
        # there recurses deeper than the text's checks, rsep.lang.bounds, allow for)
        q.pattern_refused = "a pattern nested too deeply for the pattern tree's reader"
    return q


def match_slots(syn: Syntax, matches: list[MatchPattern]) -> dict[int, MatchSlot]:
    """Each MATCH node's slot, as rsep.lang.rspql.events.matches wrote it into the text."""
    out = {}
    for i, (node, m) in enumerate(zip(syn.nodes("match_pattern"), matches, strict=True)):
        names = tuple(m.expr.variables) + ((FROM_VAR, TO_VAR) if m.expose_interval else ())
        out[id(node)] = MatchSlot(i, names)
    return out


def with_text_pattern(q: ContinuousQuery) -> ContinuousQuery:
    """``q``, built with its SPARQL text only (no dialect read it: rsep.lars's queries, the
    tests'), with the tree of that text (its windows' ``GRAPH <w>`` blocks as
    :class:`Graph`)."""
    return with_pattern(q, Syntax.of(q.sparql, parse_tree(q.sparql)))


def group_pattern(pattern: str, prologue: str = "") -> Pattern:
    """A group graph pattern given as text (``{ ... }``, with the prologue its names need)
    as a tree, read once: a SPASEQ GPM's local pattern, an RSEP-QL BEP made by hand.
    PatternRefused where the tree does not hold it."""
    text = f"{prologue}\nSELECT * WHERE {pattern}"
    got = read_query(Syntax.of(text, parse_tree(text))).pattern
    assert got is not None  # (a SELECT with its WHERE)
    return got
