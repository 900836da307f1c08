"""Maintained window results: a windowed query answered from a result kept up to date as
events enter and leave its windows, with no pyoxigraph call per evaluation.

For a query whose window blocks are event-local (rsep.windows.incremental's analysis and
its per-evaluation locality check), the window's solutions are the union of each live
event's own solutions. So each event's solutions of each window block are computed once,
on arrival, by the compiled matcher (rsep.sparql.matcher, proven equal to pyoxigraph; a
BGP over a graph is a set, so an event's solutions are de-duplicated); the WHERE clause's
solutions are maintained from them (rsep.windows.joins: joins with the background's
default graph by index, between windows and blocks by a symmetric hash join, top-level
FILTERs by the FILTER compiler); GROUP BY and the aggregates are maintained from those
under insertion and retraction, and HAVING, ORDER BY, projection, DISTINCT and LIMIT /
OFFSET apply to the few rows (rsep.windows.groups). RStream, IStream and DStream read the
rows as they read pyoxigraph's.

pyoxigraph still decides, batched, what the Python mirrors cannot: a FILTER the compiler
does not take or cannot decide for a row, an aggregate over values the numeric mirror does
not cover (rsep.sparql.aggregates), an ORDER BY over such values. When the locality check
fails (a join term in two live events) the evaluation is pyoxigraph's over a store of the
live events' matching triples, as the event-local store path's; the maintained state is
kept all the while, for when the check holds again.

Rows come out in a defined order where SPARQL leaves it open (docs/semantics.md, "Row
order of maintained results").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import pyoxigraph as ox
from lark import Token, Tree

from rsep.algebra.expression import (
    Aggregate as AggregateNode,
)
from rsep.algebra.expression import (
    Constraint,
    Expression,
    FunctionCall,
    Variable,
)
from rsep.algebra.query import ContinuousQuery
from rsep.lang.errors import QueryError
from rsep.lang.expression import RSP_EXTENSIONS, ExpressionReader
from rsep.lang.parser import parse_tree
from rsep.lang.syntax import Syntax, end_of, nodes_in, start_of
from rsep.sparql import aggregates as ag
from rsep.sparql.aggregates import Undecided
from rsep.sparql.filters import Fallback, NotCompiled, compile_expression, prefixes_of
from rsep.sparql.matcher import Canon, Indexed, compile_bgp, match_plan
from rsep.sparql.pattern import GroupReader
from rsep.stream.event import Event
from rsep.windows.groups import Aggregate, Group, Grouping, Modifiers, Oxigraph, Row
from rsep.windows.incremental import (
    _EARLY_MAX,
    _VOLATILE,
    Analysis,
    Block,
    LocalWindow,
    _Entry,
    analyse,
)
from rsep.windows.joins import Join, Relation, background_relation

MAINTAINED = "maintained"
FACTORISED = "maintained (factorised aggregates)"
EVENT_LOCAL = "event-local store"
SNAPSHOT = "snapshot"

_AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX", "SAMPLE", "GROUP_CONCAT")
_KINDS = {"group_or_union_graph_pattern": "a nested group, UNION or subquery",
          "optional_graph_pattern": "OPTIONAL", "minus_graph_pattern": "MINUS", "bind": "BIND",
          "inline_data": "VALUES", "service_graph_pattern": "SERVICE"}


# ---------------------------------------------------------------- the plan


@dataclass
class Plan:
    """What the maintained path runs for a query (read once from its text)."""

    analysis: Analysis
    form: str  # SELECT | ASK | CONSTRUCT
    prologue: str
    windows: list[str]  # the window IRIs, in the dataset's order
    # triple patterns over the background: (graph IRI, None for the default graph; the
    # pattern in GroupReader's form)
    background: list[tuple[str | None, tuple]]
    filters: list[Constraint]  # top-level FILTERs no block decides alone
    keys: tuple[str, ...] | None  # GROUP BY variables; None: no grouping
    aggregates: list[Aggregate]
    implicit: bool  # aggregates without GROUP BY: one group, even empty
    having: list[Expression]  # over the keys and ``__a<i>`` (the i-th aggregate)
    order: list[tuple[str, bool]]  # (name, descending)
    project: list[tuple[str, str]]  # (output name, name read)
    distinct: bool = False
    offset: int = 0
    limit: int | None = None
    template: list[tuple] = field(default_factory=list)  # CONSTRUCT's triple patterns
    factors: Factors | None = None  # the aggregates' factorised form, if the query has one
    unfactored: str = ""  # else why not (rsep explain)


@dataclass(frozen=True)
class Factors:
    """A grouped query whose WHERE clause is a join of *sides* that meet only on GROUP BY
    keys (each side binds every key), and whose aggregates a side's per-key summary gives
    exactly: per group, the joined solutions are the cross product of each side's, so
    COUNT(*) is the product of the sides' counts, COUNT(?v) that unless ?v's side counts an
    error, MIN / MAX of a side's variable that side's extreme. Relations are numbered as
    Maintained numbers them (window blocks in the dataset's order, then background
    patterns)."""

    sides: tuple[tuple[int, ...], ...]  # each side's relations, ascending
    filters: tuple[int, ...]  # per top-level FILTER (Plan.filters), the side that decides it
    reads: tuple[int, ...]  # per aggregate, the side whose summary gives it (-1: COUNT(*))


def path(query: ContinuousQuery) -> tuple[str, str]:
    """Which path the runtime takes for the query, and why (``rsep explain``)."""
    a = analyse(query)
    if isinstance(a, str):
        return SNAPSHOT, a + " (so neither the event-local store nor a maintained result)"
    p = compile_plan(query, a)
    if isinstance(p, str):
        return EVENT_LOCAL, (
            "every window's graph patterns are basic graph patterns connected by their "
            "variables: only the triples of events with solutions enter the snapshot store, "
            "which pyoxigraph queries at each evaluation; not maintained: " + p)
    why = ("every window's graph patterns are event-local: each event's solutions are computed "
           "once, on arrival, by the compiled matcher, and the result is maintained from them "
           "(joins by index, GROUP BY and aggregates under insertion and expiry); pyoxigraph "
           "runs only for what the Python mirrors cannot decide and while the locality check "
           "fails (a join term in two live events)")
    if p.factors is None:
        return MAINTAINED, why + "; aggregates not factorised: " + p.unfactored
    return FACTORISED, why + (
        f"; the WHERE clause is a join of {len(p.factors.sides)} sides that meet only on "
        "GROUP BY keys: each side's solutions are summarised per key (count, MIN / MAX) and "
        "the groups are read from the summaries, no joined solution enumerated")


def compile_plan(query: ContinuousQuery, a: Analysis | None = None) -> Plan | str:
    """The maintained path's plan, or why the query cannot take it."""
    if a is None:
        got = analyse(query)
        if isinstance(got, str):
            return got
        a = got
    if query.form not in ("SELECT", "ASK", "CONSTRUCT"):
        return f"a {query.form} query"
    try:
        tree = parse_tree(query.sparql)
        syn = Syntax.of(query.sparql, tree)
        return _Reader(query, a, tree, syn).plan()
    except _Refused as e:
        return str(e)
    except (QueryError, NotCompiled, SyntaxError, ValueError) as e:
        return f"a part the maintained path does not read ({e})"


class _Refused(Exception):
    """The query is not one the maintained path takes; the message says why (rsep explain)."""


class _Reader:
    """The plan read off the query's parse tree."""

    def __init__(self, query: ContinuousQuery, a: Analysis, tree: Tree, syn: Syntax) -> None:
        self.query, self.a, self.tree, self.syn = query, a, tree, syn
        self.prologue = syn.prologue_text()
        self.reader = ExpressionReader(syn.text, RSP_EXTENSIONS)
        self.aggs: list[AggregateNode] = []

    def plan(self) -> Plan:
        body = next(c for c in self.tree.children[1].children if isinstance(c, Tree))
        values = self.tree.children[1].children[-1]
        if isinstance(values, Tree) and values.children:
            raise _Refused("a VALUES clause after the query")
        holder = next((c for c in body.children if isinstance(c, Tree)
                       and c.data == "construct_construct_template"), body)
        where = next((c for c in holder.children if isinstance(c, Tree)
                      and c.data == "where_clause"), None)
        if where is None:
            raise _Refused("CONSTRUCT WHERE { ... } (the short form)")
        bg, filters = self._where(where)
        windows = [w.iri for w in self.query.dataset.windows]
        bound = {v for bs in self.a.blocks.values() for b in bs for v in _block_vars(b, self)}
        bound |= {x[1] for _, tp in bg for x in tp if isinstance(x, tuple)
                  and not x[1].startswith("_:")}
        mods = next(c for c in holder.children if isinstance(c, Tree)
                    and c.data == "solution_modifier")
        keys, having, order, offset, limit = self._modifiers(mods)
        form = self.query.form
        project: list[tuple[str, str]] = []
        distinct = False
        template: list[tuple] = []
        if form == "SELECT":
            distinct, items = self._select(next(c for c in body.children if isinstance(c, Tree)
                                                and c.data == "select_clause"))
        else:
            if form == "CONSTRUCT":
                template = self._template(body)
            if keys is not None or having or order or offset or limit is not None:
                raise _Refused(f"solution modifiers on a {form} query")
            items = []
        aggregates = [self._aggregate(n, bound) for n in self.aggs]
        grouped = keys is not None or bool(aggregates)
        if grouped:
            keys = keys or []
            if form != "SELECT":
                raise _Refused(f"GROUP BY or aggregates in a {form} query")
            for k in keys:
                if k not in bound:
                    raise _Refused(f"?{k} of GROUP BY is not bound by the WHERE clause")
        aliases: dict[str, str] = {}
        for name, src in items:
            if src is None:
                if grouped and name not in (keys or ()):
                    raise _Refused(f"?{name} is selected but not grouped")
                project.append((name, name))
            else:
                aliases[name] = src
                project.append((name, src))
        if form == "SELECT":
            names = _names(self.query.sparql)
            if not items:  # SELECT *
                project = [(n, n) for n in names]
            if [n for n, _ in project] != names:
                raise _Refused("a projection pyoxigraph names otherwise")
        order = [(aliases.get(n, n), d) for n, d in order]
        for e in having:
            for n in e.variables():
                if not n.startswith("__a") and n not in (keys or ()):
                    raise _Refused(f"HAVING reads ?{n}, neither grouped nor an aggregate")
        if grouped:
            for n, _ in order:
                if not n.startswith("__a") and n not in (keys or ()):
                    raise _Refused(f"ORDER BY reads ?{n}, neither grouped nor an aggregate")
        plan = Plan(self.a, form, self.prologue, windows, bg, filters,
                    tuple(keys) if grouped and keys is not None else None, aggregates,
                    grouped and not keys, having, order, project, distinct, offset, limit,
                    template)
        relations = [_block_vars(b, self) for iri in windows for b in self.a.blocks.get(iri, [])]
        got = _factorise(plan, relations, [[x[1] for x in tp if isinstance(x, tuple)]
                                           for _, tp in bg])
        if isinstance(got, str):
            plan.unfactored = got
        else:
            plan.factors = got
        return plan

    # ------------------------------------------------------------ WHERE

    def _where(self, where: Tree) -> tuple[list[tuple[str | None, tuple]], list[Constraint]]:
        group = where.children[-1]
        sub = group.children[0]
        if not isinstance(sub, Tree) or sub.data != "group_graph_pattern_sub":
            raise _Refused("the WHERE clause is a subquery")
        triples: list[str] = []
        named: list[tuple[str | None, str]] = []  # (graph, its group's text)
        filters: list[Constraint] = []
        pushed = {t for bs in self.a.blocks.values() for b in bs for t in b.pushed}
        graphs = 0
        for c in sub.children:
            if not isinstance(c, Tree):
                continue
            parts = [c] if c.data == "triples_block" else [d for d in c.children
                                                         if isinstance(d, Tree)]
            for d in parts:
                if d.data == "triples_block":
                    triples.append(self.syn.text[start_of(d):end_of(d)].rstrip().rstrip("."))
                    continue
                kind = d.children[0]
                if kind.data == "graph_graph_pattern":
                    iri = self.syn.iri(kind.children[1])
                    if iri in self.a.blocks:
                        graphs += 1
                        continue
                    if iri not in self.query.dataset.named_graphs:
                        raise _Refused(f"GRAPH <{iri}> reads a graph the query does not declare "
                                       "(FROM NAMED): an event's own named graph, perhaps")
                    inner = kind.children[2]
                    if nodes_in(inner, "filter") or not nodes_in(inner, "triples_block") or \
                            any(n.data != "triples_block" for n in inner.children[0].children
                                if isinstance(n, Tree)):
                        raise _Refused(f"GRAPH <{iri}> holds more than triples")
                    named.append((iri, self.syn.text[start_of(inner):end_of(inner)]))
                elif kind.data == "filter":
                    text = self.syn.text[start_of(kind):end_of(kind)]
                    if text in pushed:
                        continue
                    if nodes_in(kind, "exists_func") or nodes_in(kind, "not_exists_func"):
                        raise _Refused("a FILTER (NOT) EXISTS")
                    if _VOLATILE.search(text):
                        raise _Refused("a FILTER calls NOW, RAND, UUID, STRUUID or BNODE")
                    filters.append(self.reader.constraint(kind, self.prologue))
                else:
                    raise _Refused("the WHERE clause is more than triples, GRAPH blocks and "
                                   f"FILTERs: {_KINDS.get(kind.data, kind.data)}")
        if graphs != sum(len(bs) for bs in self.a.blocks.values()):
            raise _Refused("a window's GRAPH block is nested in another pattern")
        bg: list[tuple[str | None, tuple]] = []
        prefixes = prefixes_of(self.prologue)
        groups: list[tuple[str | None, str]] = \
            [(None, "{ " + " .\n".join(triples) + " }")] if triples else []
        groups += named
        for k, (graph, text) in enumerate(groups):
            for tp in GroupReader(text, prefixes, lambda t: t).group():
                # a blank node is a variable of its own group only
                bg.append((graph, tuple(("var", f"_:{k}.{x[1][2:]}") if isinstance(x, tuple)
                                      and x[1].startswith("_:") else x for x in tp)))
        return bg, filters

    # ------------------------------------------------------------ modifiers

    def _modifiers(self, mods: Tree) -> tuple[list[str] | None, list[Expression],
                                              list[tuple[str, bool]], int, int | None]:
        keys: list[str] | None = None
        having: list[Expression] = []
        order: list[tuple[str, bool]] = []
        offset, limit = 0, None
        for c in mods.children:
            if not isinstance(c, Tree):
                continue
            if c.data == "group_clause":
                keys = []
                for g in c.children:
                    if isinstance(g, Tree):
                        v = g.children[0]
                        if len(g.children) != 1 or not isinstance(v, Tree) or v.data != "var":
                            raise _Refused("GROUP BY an expression")
                        keys.append(self._var(v))
            elif c.data == "having_clause":
                for h in c.children:
                    if isinstance(h, Tree):
                        having.append(self._hide(self.reader.expression(h.children[0])))
            elif c.data == "order_clause":
                for o in c.children:
                    if isinstance(o, Tree):
                        order.append(self._order(o))
            elif c.data == "limit_offset_clauses":
                for lo in c.children:
                    n = int(str(lo.children[-1]))
                    if lo.data == "limit_clause":
                        limit = n
                    else:
                        offset = n
        return keys, having, order, offset, limit

    def _order(self, o: Tree) -> tuple[str, bool]:
        head = o.children[0]
        desc = isinstance(head, Token) and str(head).upper() == "DESC"
        node = o.children[-1]
        e = self._hide(self.reader.expression(node))
        if not isinstance(e, Variable):
            raise _Refused("ORDER BY an expression")
        return e.name, desc

    def _select(self, sc: Tree) -> tuple[bool, list[tuple[str, str | None]]]:
        distinct = False
        items: list[tuple[str, str | None]] = []
        for c in sc.children:
            if isinstance(c, Token):
                word = str(c).upper()
                if word == "REDUCED":
                    raise _Refused("SELECT REDUCED")
                distinct = distinct or word == "DISTINCT"
                continue
            v = c.children[0]
            if v.data == "var":
                items.append((self._var(v), None))
                continue
            e = self._hide(self.reader.expression(v.children[0]))
            name = self._var(v.children[-1])
            if not isinstance(e, Variable) or not e.name.startswith("__a"):
                raise _Refused(f"(... AS ?{name}) computes more than one aggregate")
            items.append((name, e.name))
        return distinct, items

    def _template(self, body: Tree) -> list[tuple]:
        t = next(c for c in walk_tree(body) if c.data == "construct_template")
        text = self.syn.text[start_of(t):end_of(t)]
        tps = GroupReader(text, prefixes_of(self.prologue), lambda x: x).group()
        if any(isinstance(x, tuple) and x[1].startswith("_:") for tp in tps for x in tp):
            raise _Refused("a blank node in the CONSTRUCT template (a new one per solution)")
        return tps

    def _var(self, v: Tree) -> str:
        return str(v.children[0])[1:]

    def _hide(self, e: Expression) -> Expression:
        """``e`` with each aggregate replaced by ``?__a<i>`` (the i-th distinct one)."""
        if isinstance(e, AggregateNode):
            text = e.to_sparql()
            for i, a in enumerate(self.aggs):
                if a.to_sparql() == text:
                    return Variable(f"__a{i}")
            self.aggs.append(e)
            return Variable(f"__a{len(self.aggs) - 1}")
        if not e.children():
            return e
        changes: dict[str, object] = {}
        for f in dataclasses.fields(e):  # type: ignore[arg-type]
            v = getattr(e, f.name)
            if isinstance(v, Expression):
                changes[f.name] = self._hide(v)
            elif isinstance(v, tuple) and v and all(isinstance(x, Expression) for x in v):
                changes[f.name] = tuple(self._hide(x) for x in v)
        return dataclasses.replace(e, **changes)  # type: ignore[type-var]

    def _aggregate(self, n: AggregateNode, bound: set[str]) -> Aggregate:
        if n.name not in _AGGREGATES:
            raise _Refused(f"the aggregate {n.name}")
        arg = n.arg
        str_arg = False
        if isinstance(arg, FunctionCall) and arg.function == "STR" and len(arg.args) == 1:
            arg, str_arg = arg.args[0], True
        if arg is None:
            if n.distinct:
                raise _Refused("COUNT(DISTINCT *)")
            var = None
        elif isinstance(arg, Variable):
            var = arg.name
            if var not in bound:
                raise _Refused(f"{n.name}(?{var}): ?{var} is not bound by the WHERE clause")
        else:
            raise _Refused(f"{n.name} of an expression")
        return Aggregate(n.name, var, str_arg, n.distinct,
                         " " if n.separator is None else n.separator, n.to_sparql())


def _factorise(plan: Plan, windows: list[list[str]], background: list[list[str]]
               ) -> Factors | str:
    """The plan's factorised form (:class:`Factors`), or why it has none."""
    if not plan.keys:
        return "no GROUP BY" if plan.keys is None else "aggregates without GROUP BY"
    keys = set(plan.keys)
    reads: list[int | None] = []
    for a in plan.aggregates:
        if a.distinct and a.name == "COUNT" or a.name not in ("COUNT", "MIN", "MAX"):
            return f"{a.text}: only COUNT, MIN and MAX are exact from per-side summaries"
        reads.append(-1 if a.var is None else None)
    rels = [set(v) for v in windows + background]
    # sides: the relations connected by variables other than the keys
    side = list(range(len(rels)))

    def root(i: int) -> int:
        while side[i] != i:
            i = side[i]
        return i
    for i in range(len(rels)):
        for j in range(i):
            if (rels[i] & rels[j]) - keys:
                side[root(i)] = root(j)
    sides: dict[int, list[int]] = {}
    for i in range(len(rels)):
        sides.setdefault(root(i), []).append(i)
    parts = sorted(sides.values())
    if len(parts) < 2:
        return "the WHERE clause's relations meet on variables other than the GROUP BY keys"
    bound = [set().union(*(rels[i] for i in p)) for p in parts]
    for p, b in zip(parts, bound, strict=True):
        if not any(i < len(windows) for i in p):
            return "a part of the WHERE clause that meets the rest only on GROUP BY keys reads " \
                   "no window"
        if not keys <= b:
            return "a side of the join does not bind every GROUP BY key"
    filters = []
    for f in plan.filters:
        at = next((k for k, b in enumerate(bound) if f.variables() <= b), None)
        if at is None:
            return f"FILTER {f.text} reads more than one side of the join"
        filters.append(at)
    for n, a in enumerate(plan.aggregates):
        if reads[n] is None:
            reads[n] = next(k for k, b in enumerate(bound) if a.var in b)
    return Factors(tuple(tuple(p) for p in parts), tuple(filters),
                   tuple(r for r in reads if r is not None))


def walk_tree(t: Tree) -> Iterable[Tree]:
    """The subtrees of t, parents first (t's own query before a nested one's)."""
    yield t
    for c in t.children:
        if isinstance(c, Tree):
            yield from walk_tree(c)


def _block_vars(b: Block, r: _Reader) -> list[str]:
    names = []
    for tp in GroupReader("{ " + b.text + " }", prefixes_of(r.prologue), lambda x: x).group():
        for x in tp:
            if isinstance(x, tuple) and not x[1].startswith("_:"):
                names.append(x[1])
    return names


def _names(sparql: str) -> list[str]:
    """The variables pyoxigraph's answers to the query have, in its order."""
    res = ox.Store().query(sparql)
    assert isinstance(res, ox.QuerySolutions)
    return [v.value for v in res.variables]


# ---------------------------------------------------------------- FILTERs


class Filters:
    """A conjunction of FILTERs over solutions: compiled (rsep.sparql.filters) where the
    compiler takes them, their verdicts memoised by the values they read; the rest, and a
    row the compiled form cannot decide, decided by pyoxigraph in a batch."""

    MEMO = 65_536

    def __init__(self, prologue: str, constraints: Sequence[Constraint], canon: Canon) -> None:
        prefixes = prefixes_of(prologue)
        self.texts = [c.text for c in constraints]
        self.fns: list[Any] = []
        self.opaque = False  # some FILTER is not compiled: pyoxigraph decides every row
        for c in constraints:
            try:
                self.fns.append(compile_expression(c.expr, prefixes, canon.term))
            except (NotCompiled, Fallback):
                self.opaque = True
        self.vars = tuple(sorted(set().union(*(c.variables() for c in constraints))))
        self._key = eval("lambda mu: (" + "".join(f"mu.get({v!r}), " for v in self.vars) + ")")
        self.memo: dict[tuple, bool] = {}

    def __bool__(self) -> bool:
        return bool(self.texts)

    def verdict(self, mu: dict) -> bool | None:
        """True, False, or None: pyoxigraph decides (:meth:`decide`)."""
        key = self._key(mu)
        got = self.memo.get(key)
        if got is not None:
            return got
        undecided = self.opaque
        for f in self.fns:
            try:
                r = f(mu)
            except Fallback:
                undecided = True
                continue
            if r is not True:
                self._remember(key, False)
                return False
        if undecided:
            return None
        self._remember(key, True)
        return True

    def _remember(self, key: tuple, ok: bool) -> None:
        if len(self.memo) >= self.MEMO:
            self.memo.clear()
        self.memo[key] = ok

    def decide(self, mus: Sequence[dict], oxigraph: Oxigraph) -> list[bool]:
        rows = [{v: mu.get(v) for v in self.vars} for mu in mus]
        got = oxigraph.accepted(self.texts, rows)
        for mu, ok in zip(mus, got, strict=True):
            self._remember(self._key(mu), ok)
        return got


# ---------------------------------------------------------------- the runtime


class _Solver:
    """One window block's solutions over an event (relation ``r``)."""

    def __init__(self, prologue: str, block: Block, canon: Canon, r: int) -> None:
        gpm = compile_bgp(prologue, "{ " + block.text + " }", canon)
        if gpm is None:
            raise NotCompiled("a window block the compiled matcher does not take")
        self.r = r
        self.plan = gpm.plan
        keep = [i for i, n in enumerate(gpm.names) if not n.startswith("_:")]
        self.vars = tuple(gpm.names[i] for i in keep)
        # a solution's mapping by one generated expression (names come in through env)
        env = {f"_n{k}": n for k, n in enumerate(self.vars)}
        self._build = eval("lambda v: {" + "".join(f"_n{k}: v[{i}], " for k, i in enumerate(keep))
                           + "}", env)
        self.filters = Filters(prologue, block.filters, canon)

    def solutions(self, ev: Indexed) -> list[tuple[dict, bool | None]]:
        """The block's solutions over one event, in the matcher's order, de-duplicated (a
        solution differing only in a blank node's binding is another solution), each
        with its FILTERs' verdict (None: pyoxigraph decides at the next evaluation)."""
        sols = match_plan(self.plan, ev)
        if not sols:
            return []
        if len(sols) > 1:
            sols = list(dict.fromkeys(sols))
        out: list[tuple[dict, bool | None]] = []
        build, filters = self._build, self.filters
        for vals in sols:
            mu = build(vals)
            if filters:
                ok = filters.verdict(mu)
                if ok is False:
                    continue
                out.append((mu, ok))
            else:
                out.append((mu, True))
        return out


Solutions = Sequence[tuple[int, int, dict, bool | None]]  # (relation, index in the event, mu, verdict)


def _solve(solvers: list[_Solver], canon: Canon, rows: list[tuple[object, object, object]]
           ) -> list[tuple[int, int, dict, bool | None]]:
    """An event's solutions of a window's blocks (:meth:`Maintained.solve`)."""
    ev = Indexed([(x, p, canon.term(o)) for x, p, o in rows])
    out: list[tuple[int, int, dict, bool | None]] = []
    for s in solvers:
        i = 0
        for mu, ok in s.solutions(ev):
            out.append((s.r, i, mu, ok))
            i += 1
    return out


class Maintained:
    """A query's maintained result (see the module's text). Plain data but for the
    compiled functions of its plan."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.canon = Canon()
        self.oxigraph = Oxigraph(plan.prologue)
        self.solvers: list[list[_Solver]] = []
        relations: list[Relation] = []
        for iri in plan.windows:
            solvers = []
            for b in plan.analysis.blocks.get(iri, []):
                s = _Solver(plan.prologue, b, self.canon, len(relations))
                solvers.append(s)
                relations.append(Relation(s.vars, window=True))
            self.solvers.append(solvers)
        self._bg_first = len(relations)
        self._patterns = [(g, tuple(self.canon.term(x) if not isinstance(x, tuple) else x
                                    for x in tp)) for g, tp in plan.background]
        relations += [background_relation(tp, (), self._bg_first + j)
                      for j, (_, tp) in enumerate(self._patterns)]
        # the factorised form (each side's join and summaries) or the whole join
        self.factorised = Factorised(plan, plan.factors, relations, self.canon) \
            if plan.factors is not None else None
        self.join = Join([] if self.factorised is not None else relations)
        self.filters = Filters(plan.prologue, plan.filters if self.factorised is None else [],
                               self.canon)
        self.grouping = Grouping(plan.keys or (), plan.aggregates, plan.implicit) \
            if plan.keys is not None and self.factorised is None else None
        self.rows_in: dict[tuple, dict] = {}  # plain rows (no grouping): jid -> mapping
        self._unsorted = False
        self._last: tuple | None = None
        prefixes = prefixes_of(plan.prologue)
        self.modifiers = Modifiers(
            tuple((_having(e, prefixes, self.canon), e.to_sparql()) for e in plan.having),
            tuple(plan.order), tuple(plan.project), plan.distinct, plan.offset, plan.limit)
        self._pending_block: dict[tuple, tuple[int, dict]] = {}
        self._pending_top: dict[tuple, dict] = {}
        self._template = [tuple(self.canon.term(x) if not isinstance(x, tuple) else x for x in tp)
                          for tp in plan.template]

    # ------------------------------------------------------------ events

    def solve(self, w: int, rows: list[tuple[object, object, object]]) -> Solutions:
        """An event's solutions of window w's blocks, from its matching triples' terms."""
        solvers = self.solvers[w]
        if not solvers:
            return []
        return _solve(solvers, self.canon, rows)

    def enter(self, seq: int, sols: Solutions) -> None:
        for r, i, mu, ok in sols:
            c = (seq, r, i)
            if ok:
                self._add(r, c, mu)
            else:
                self._pending_block[c] = (r, mu)

    def leave(self, seq: int, sols: Solutions) -> None:
        pending = self._pending_block
        factorised = self.factorised
        for r, i, _, ok in sols:
            c = (seq, r, i)
            if not ok and pending.pop(c, None) is not None:
                continue
            if factorised is not None:
                factorised.remove(r, c)
                continue
            for jid in self.join.remove(r, c):
                if self._pending_top.pop(jid, None) is None:
                    self._out_remove(jid)

    def _add(self, r: int, c: tuple, mu: dict) -> None:
        if self.factorised is not None:
            self.factorised.add(r, c, mu)
            return
        for jid, m in self.join.add(r, c, mu):
            self._joined(jid, m)

    def _joined(self, jid: tuple, m: dict) -> None:
        if self.filters:
            ok = self.filters.verdict(m)
            if ok is None:
                self._pending_top[jid] = m
                return
            if not ok:
                return
        self._out_add(jid, m)

    def _out_add(self, jid: tuple, m: dict) -> None:
        if self.grouping is not None:
            self.grouping.add(jid, m)
            return
        self.rows_in[jid] = m
        if self._last is not None and jid < self._last:
            self._unsorted = True
        else:
            self._last = jid

    def _out_remove(self, jid: tuple) -> None:
        if self.grouping is not None:
            self.grouping.remove(jid)
        else:
            self.rows_in.pop(jid, None)

    # ------------------------------------------------------------ background

    @property
    def graphs(self) -> set[str | None]:
        """The background graphs the result reads (None: the default graph)."""
        return {g for g, _ in self._patterns}

    def set_background(self, graphs: Mapping[str | None, Iterable[ox.Triple]]) -> None:
        """The background graphs (each a set; None the default graph) as they now stand:
        their patterns' relations rebuilt, and with them every joined solution."""
        if not self._patterns:
            return
        term = self.canon.term
        rows: dict[str | None, list[tuple[object, object, object]]] = {}
        for g in self.graphs:
            preds = {tp[1] for h, tp in self._patterns if h == g}
            anyp = any(isinstance(p, tuple) for p in preds)
            rows[g] = [(t.subject, t.predicate, term(t.object))
                       for t in dict.fromkeys(graphs.get(g, ())) if anyp or t.predicate in preds]
        if self.factorised is not None:
            self.factorised.set_background(
                {self._bg_first + j: background_relation(tp, rows[g], self._bg_first + j)
                 for j, (g, tp) in enumerate(self._patterns)})
            return
        for j, (g, tp) in enumerate(self._patterns):
            self.join.replace(self._bg_first + j,
                              background_relation(tp, rows[g], self._bg_first + j))
        self._pending_top.clear()
        if self.grouping is not None:
            self.grouping.clear()
        self.rows_in.clear()
        self._last, self._unsorted = None, False
        for jid, m in self.join.rebuild():
            self._joined(jid, m)

    # ------------------------------------------------------------ evaluation

    def rows(self) -> list[Row]:
        """The result's rows now, as QueryRuntime._run gives them."""
        self._decide()
        form = self.plan.form
        if self.factorised is not None:
            return self.modifiers.apply(self.factorised.rows(self.oxigraph), self.oxigraph)
        if form == "ASK":
            found = bool(self.grouping if self.grouping is not None else self.rows_in)
            return [(found, found)]
        if self.grouping is not None:
            got = self.grouping.rows(self.oxigraph, self.join.solutions.__getitem__)
            return self.modifiers.apply(got, self.oxigraph)
        if self._unsorted:
            self.rows_in = dict(sorted(self.rows_in.items()))
            self._unsorted = False
        if form == "CONSTRUCT":
            return self._construct()
        return self.modifiers.apply(list(self.rows_in.items()), self.oxigraph)

    def _decide(self) -> None:
        """Verdicts pyoxigraph gives: FILTERs the compiled forms left open, one query per
        FILTER set; the solutions they accept join in arrival order."""
        if self._pending_block:
            pending, self._pending_block = self._pending_block, {}
            by_rel: dict[int, list[tuple[tuple, dict]]] = {}
            for c, (r, mu) in sorted(pending.items()):
                by_rel.setdefault(r, []).append((c, mu))
            for r, items in by_rel.items():
                solver = next(s for ss in self.solvers for s in ss if s.r == r)
                for c, mu in accepted(solver.filters, items, self.oxigraph):
                    self._add(r, c, mu)
        if self.factorised is not None:
            self.factorised.decide(self.oxigraph)
        if self._pending_top:
            pending_top, self._pending_top = self._pending_top, {}
            for jid, m in accepted(self.filters, sorted(pending_top.items()), self.oxigraph):
                self._out_add(jid, m)

    def live(self) -> list[dict]:
        """The WHERE clause's live solutions (FILTERs decided) in arrival order, enumerated
        in the factorised form too (for tests: the maintained result's input)."""
        self._decide()
        if self.factorised is not None:
            return [m for _, m in self.factorised.joined(self.factorised.groups())]
        if self.grouping is not None:
            jids = sorted(j for g in self.grouping.groups.values() for j in g.sols)
        else:
            jids = sorted(self.rows_in)
        return [self.join.solutions[j] for j in jids]

    def _construct(self) -> list[Row]:
        out: list[Row] = []
        seen: set[str] = set()
        for m in self.rows_in.values():
            for tp in self._template:
                terms = [m.get(x[1]) if isinstance(x, tuple) else x for x in tp]
                s, p, o = terms
                if s is None or p is None or o is None or isinstance(s, ox.Literal) \
                        or not isinstance(p, ox.NamedNode):
                    continue
                text = str(ox.Triple(s, p, o))  # type: ignore[arg-type]
                if text not in seen:
                    seen.add(text)
                    out.append((text, text))
        return out


def accepted(filters: Filters, items: list[tuple[tuple, dict]], oxigraph: Oxigraph
             ) -> list[tuple[tuple, dict]]:
    """The items whose solution the FILTERs accept (pyoxigraph asked, once, for those the
    compiled forms leave open), in their order."""
    verdicts = [filters.verdict(mu) for _, mu in items]
    todo = [i for i, ok in enumerate(verdicts) if ok is None]
    if todo:
        got = filters.decide([items[i][1] for i in todo], oxigraph)
        for i, ok in zip(todo, got, strict=True):
            verdicts[i] = ok
    return [item for item, ok in zip(items, verdicts, strict=True) if ok]


# ---------------------------------------------------------------- factorised aggregates


class _Side:
    """One side of a factorised query (:class:`Factors`): its relations' join (relations
    numbered locally, components globally), its FILTERs, and its solutions grouped by the
    keys with the states of the aggregates it gives (rsep.windows.groups)."""

    __slots__ = ("local", "join", "windows", "background", "filters", "grouping", "pending")

    def __init__(self, rels: Sequence[int], relations: Sequence[Relation], keys: Sequence[str],
                 aggregates: Sequence[Aggregate], filters: Filters) -> None:
        self.local = {r: k for k, r in enumerate(rels)}  # (window relations come first)
        self.join = Join([relations[r] for r in rels])
        self.windows = self.join.windows  # a side solution's id: its window components first
        self.background = len(rels) > self.windows
        self.filters = filters
        self.grouping = Grouping(keys, aggregates, False)
        self.pending: dict[tuple, dict] = {}  # solutions whose FILTERs pyoxigraph decides

    def joined(self, sid: tuple, m: dict) -> None:
        ok = self.filters.verdict(m) if self.filters else True
        if ok:
            self.grouping.add(sid, m)
        elif ok is None:
            self.pending[sid] = m


class Factorised:
    """A grouped result from per-side summaries (:class:`Factors`; docs/semantics.md,
    "Maintained window results"). A group is there when every side has a live solution
    with its key. Its arrival (the earliest joined solution) is the merge of each side's
    earliest: a joined solution's id is its window components latest first, then its
    background components, and the sides' components are disjoint, so comparing two ids
    that differ in one side's solution compares that side's ids (largest window component
    in the difference, then smallest background one): the minimum over the cross product
    is at each side's minimum. For the same reason a MIN / MAX tie between equal values of
    different terms goes to the same term as over the joined solutions."""

    def __init__(self, plan: Plan, factors: Factors, relations: Sequence[Relation],
                 canon: Canon) -> None:
        self.keys = plan.keys or ()
        self.aggregates = plan.aggregates
        self.of: dict[int, _Side] = {}
        self.sides: list[_Side] = []
        # per aggregate: (side, its index among that side's aggregates), side -1: COUNT(*)
        self.reads: list[tuple[int, int, bool]] = []
        mine: list[list[Aggregate]] = [[] for _ in factors.sides]
        for a, k in zip(plan.aggregates, factors.reads, strict=True):
            if k < 0:
                self.reads.append((-1, 0, True))
            else:
                self.reads.append((k, len(mine[k]), a.name == "COUNT"))
                mine[k].append(a)
        for k, rels in enumerate(factors.sides):
            conds = [c for c, at in zip(plan.filters, factors.filters, strict=True) if at == k]
            side = _Side(rels, relations, self.keys, mine[k],
                         Filters(plan.prologue, conds, canon))
            self.sides.append(side)
            for r in rels:
                self.of[r] = side
        # group key -> (its sides' groups, the aggregates' values) while none of them changed
        self._values: dict[tuple, tuple[list[Group], list]] = {}

    def add(self, r: int, c: tuple, mu: dict) -> None:
        side = self.of[r]
        for sid, m in side.join.add(side.local[r], c, mu):
            side.joined(sid, m)

    def remove(self, r: int, c: tuple) -> None:
        side = self.of[r]
        for sid in side.join.remove(side.local[r], c):
            if side.pending.pop(sid, None) is None:
                side.grouping.remove(sid)

    def set_background(self, relations: Mapping[int, Relation]) -> None:
        """Background relations anew: the sides that read them rebuilt."""
        for r, rel in relations.items():
            side = self.of[r]
            side.join.replace(side.local[r], rel)
        for side in self.sides:
            if side.background:  # (a side of one window relation keeps no relation contents)
                side.pending.clear()
                side.grouping.clear()
                for sid, m in side.join.rebuild():
                    side.joined(sid, m)

    def decide(self, oxigraph: Oxigraph) -> None:
        for side in self.sides:
            if side.pending:
                pending, side.pending = side.pending, {}
                for sid, m in accepted(side.filters, sorted(pending.items()), oxigraph):
                    side.grouping.add(sid, m)

    def groups(self) -> list[tuple[tuple, list[Group]]]:
        """The groups there now: each key with its sides' groups."""
        first, rest = self.sides[0].grouping.groups, [s.grouping.groups for s in self.sides[1:]]
        out = []
        for key, g in first.items():
            gs = [g]
            for other in rest:
                h = other.get(key)
                if h is None:
                    break
                gs.append(h)
            else:
                out.append((key, gs))
        return out

    def _arrival(self, ids: Sequence[tuple]) -> tuple:
        """The id of the joined solution made of these side solutions."""
        win: list = []
        bg: list = []
        for side, sid in zip(self.sides, ids, strict=True):
            w = side.windows
            win.extend(sid[:w])
            bg.extend(sid[w:])
        win.sort(reverse=True)
        bg.sort()
        return (*win, *bg)

    def joined(self, groups: Sequence[tuple[tuple, list[Group]]]) -> list[tuple[tuple, dict]]:
        """The groups' joined solutions (id, mapping) in arrival order: their cross products."""
        out: list[tuple[tuple, dict]] = []
        for _, gs in groups:
            combos: list[tuple[list[tuple], dict]] = [([], {})]
            for side, g in zip(self.sides, gs, strict=True):
                sols = side.join.solutions
                combos = [([*ids, sid], {**m, **sols[sid]}) for ids, m in combos for sid in g.sols]
            out.extend((self._arrival(ids), m) for ids, m in combos)
        out.sort(key=itemgetter(0))
        return out

    def rows(self, oxigraph: Oxigraph) -> list[tuple[tuple, dict]]:
        """Each group's row, as :meth:`Grouping.rows` gives it over the joined solutions."""
        cache = self._values
        live = self.groups()
        undecided: list[tuple[tuple, list[Group]]] = []
        for key, gs in live:
            got = cache.get(key)
            if got is not None and all(a is b and not a.dirty
                                       for a, b in zip(gs, got[0], strict=True)):
                continue
            vals = self._values_of(gs)
            for g in gs:
                g.dirty = False
            if vals is None:
                undecided.append((key, gs))
            else:
                cache[key] = (gs, vals)
        if undecided:  # pyoxigraph, over the joined solutions of those groups, at once
            sols = [dict(self.joined([item])) for item in undecided]
            every = {jid: m for d in sols for jid, m in d.items()}
            got_all = oxigraph.aggregates(self.aggregates, sols, every.__getitem__)
            for (key, gs), vals in zip(undecided, got_all, strict=True):
                cache[key] = (gs, vals)  # (right while the groups do not change)
        if len(cache) > 2 * len(live) + 32:
            keep = {key for key, _ in live}
            self._values = cache = {k: v for k, v in cache.items() if k in keep}
        out: list[tuple[tuple, dict]] = []
        for key, gs in live:
            row = dict(zip(self.keys, key, strict=True))
            for i, v in enumerate(cache[key][1]):
                row[f"__a{i}"] = v
            out.append((self._arrival([g.first() for g in gs]), row))
        out.sort(key=itemgetter(0))
        return out

    def _values_of(self, gs: list[Group]) -> list | None:
        """The aggregates' values from the sides' summaries; None: the mirror cannot decide."""
        n = 1
        for g in gs:
            n *= len(g.sols)
        vals: list[Any] = []
        for k, j, count in self.reads:
            if k < 0:
                vals.append(ag.term_of((ag.INT, n)))
                continue
            g = gs[k]
            st = g.states[j]
            if count:
                vals.append(None if st.err else ag.term_of((ag.INT, n)))
                continue
            try:
                vals.append(st.value(g, j))
            except Undecided:
                return None
        return vals


def _having(e: Expression, prefixes: dict[str, str], canon: Canon) -> Any:
    try:
        return compile_expression(e, prefixes, canon.term)
    except (NotCompiled, Fallback):
        return None


# ---------------------------------------------------------------- a window


class MaintainedWindow(LocalWindow):
    """A window of a maintained query: the event-local plan's entries and locality check
    (LocalWindow), and each event's solutions, computed on arrival and fed to the result
    as the event enters and leaves. Nothing goes to a store while the check holds; while
    it fails, the store graph follows the live events' matching triples (:meth:`delta`)."""

    def __init__(self, prologue: str, blocks: Sequence[Block], result: Maintained, w: int) -> None:
        super().__init__(prologue, blocks)
        self.result = result
        self.w = w
        self.loaded = False  # the store graph holds the live matching triples
        self._moves: list[tuple[bool, tuple[ox.Triple, ...]]] = []  # since, while loaded

    @property
    def on_arrival(self) -> bool:
        return True

    @property
    def unsynced(self) -> int:
        return 0

    def _solved(self, triples: tuple[ox.Triple, ...]) -> _Entry:
        """An event's entry, with its solutions of the window's blocks."""
        entry, rows = self._entry(triples, True)
        entry.sols = [] if entry.relevant is False else self.result.solve(self.w, rows)
        return entry

    def arrive(self, e: Event) -> None:
        early = self._early
        if len(early) > _EARLY_MAX:  # events that never entered: a cache, so clear it
            early.clear()
        early[e.seq] = (e.triples, self._solved(e.triples))

    def _enter(self, seq: int, triples: tuple[ox.Triple, ...]) -> None:
        early = self._early.pop(seq, None)
        entry = early[1] if early is not None and early[0] is triples else self._solved(triples)
        if seq in self.live:
            self._leave(seq)
        self._count_in(entry)
        self.live[seq] = entry
        if self.loaded and entry.matching:
            self._moves.append((True, entry.matching))
        self.result.enter(seq, entry.sols)

    def _leave(self, seq: int) -> None:
        self._early.pop(seq, None)
        entry = self.live.pop(seq, None)
        if entry is None:
            return
        self._count_out(entry)
        if self.loaded and entry.matching:
            self._moves.append((False, entry.matching))
        self.result.leave(seq, entry.sols)

    def sync(self) -> tuple[list[ox.Triple], list[ox.Triple]]:
        return [], []

    def delta(self, load: bool) -> tuple[list[ox.Triple], list[ox.Triple]]:
        """What the store graph gains and loses (a multiset: the snapshot store counts) so
        that it holds the live events' matching triples (``load``), or nothing."""
        if load and not self.loaded:
            self.loaded = True
            return [t for e in self.live.values() for t in e.matching], []
        moves, self._moves = self._moves, []
        added: list[ox.Triple] = []
        removed: list[ox.Triple] = []
        for entered, ts in moves:
            (added if entered else removed).extend(ts)
        if not load and self.loaded:  # the moves since the last load, then every live one
            self.loaded = False
            removed.extend(t for e in self.live.values() for t in e.matching)
        return added, removed
