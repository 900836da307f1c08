"""The maintained path's plan (rsep.windows.maintained): what a windowed query's
maintained result runs, read from the query's pattern tree (rsep.algebra.pattern,
``ContinuousQuery.pattern``), or why the query cannot take that path, which ``rsep
explain`` prints.

The plan takes a WHERE clause that is a conjunction of triples over the background's
default graph, GRAPH blocks over declared named graphs (triples only), the windows' GRAPH
blocks (rsep.windows.incremental's analysis: one per :class:`~rsep.windows.incremental.Block`)
and FILTERs; GROUP BY variables, the aggregates rsep.windows.groups maintains, HAVING,
ORDER BY variables, projection, DISTINCT and LIMIT / OFFSET. Where the aggregates can be
read from per-side summaries, :func:`factorise` gives their factorised form
(:class:`Factors`).

Triple patterns are given in the matcher's form (rsep.sparql.pattern.triple_patterns'): a
variable ``("var", name)``, a blank node a variable of its own group
(``("var", "_:<group>.<label>")``), a constant its pyoxigraph term.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urljoin

from rsep.algebra import pattern as pt
from rsep.algebra.expression import Aggregate as AggregateNode
from rsep.algebra.expression import (
    Constraint,
    Exists,
    Expression,
    FunctionCall,
    Iri,
    PrefixedName,
    Variable,
)
from rsep.algebra.query import ContinuousQuery
from rsep.sparql.filters import NotCompiled, prefixes_of
from rsep.sparql.pattern import triple_patterns as triple_patterns
from rsep.windows.groups import Aggregate
from rsep.windows.incremental import Analysis, analyse

MAINTAINED = "maintained"
FACTORISED = "maintained (factorised aggregates)"
EVENT_LOCAL = "event-local store"
SNAPSHOT = "snapshot"

AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX", "SAMPLE", "GROUP_CONCAT")
VOLATILE = frozenset({"NOW", "RAND", "UUID", "STRUUID", "BNODE"})
# what the refusal calls a WHERE element the plan does not take (rsep.algebra.pattern's
# Query.elements)
_KINDS = {"group": "a nested group, UNION or subquery"}
_GRAPHS = ("GRAPH", "WINDOW", "STREAM")


# ---------------------------------------------------------------- the plan


@dataclass
class Plan:
    """What the maintained path runs for a query (read once from its pattern tree)."""

    analysis: Analysis
    form: str  # SELECT | ASK | CONSTRUCT
    prologue: str
    windows: list[str]  # the window IRIs, in the dataset's order
    # triple patterns over the background: (graph IRI, None for the default graph; the
    # pattern in the matcher's form)
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
    if query.pattern is None:
        return f"the query has no pattern tree ({query.pattern_refused})"
    try:
        return _Reader(query, query.pattern, a).plan()
    except Refused as e:
        return str(e)
    except (NotCompiled, SyntaxError, ValueError) as e:
        return f"a part the maintained path does not read ({e})"


class Refused(Exception):
    """The query is not one the maintained path takes; the message says why (rsep explain)."""


class _Reader:
    """The plan read off the query's pattern tree."""

    def __init__(self, query: ContinuousQuery, tree: pt.Query, a: Analysis) -> None:
        self.query, self.tree, self.a = query, tree, a
        self.prologue = a.prologue
        self.aggs: list[AggregateNode] = []

    def plan(self) -> Plan:
        tree = self.tree
        if tree.values is not None:
            raise Refused("a VALUES clause after the query")
        if tree.short_form:
            raise Refused("CONSTRUCT WHERE { ... } (the short form)")
        if tree.pattern is None:
            raise Refused("no WHERE clause")
        bg, filters, blocks = self._where(tree.pattern)
        windows = [w.iri for w in self.query.dataset.windows]
        relations = [block_vars(b) for iri in windows for b in blocks.get(iri, [])]
        bound = {v for r in relations for v in r}
        bound |= {x[1] for _, tp in bg for x in tp if isinstance(x, tuple)
                  and not x[1].startswith("_:")}
        keys, having, order, offset, limit = self._modifiers(tree.modifiers)
        form = self.query.form
        project: list[tuple[str, str]] = []
        distinct = False
        template: list[tuple] = []
        if form == "SELECT":
            distinct, items = self._select(tree.modifiers)
        else:
            if form == "CONSTRUCT":
                template = self._template(tree.template)
            if keys is not None or having or order or offset or limit is not None:
                raise Refused(f"solution modifiers on a {form} query")
            items = []
        aggregates = [self._aggregate(n, bound) for n in self.aggs]
        grouped = keys is not None or bool(aggregates)
        if grouped:
            keys = keys or []
            if form != "SELECT":
                raise Refused(f"GROUP BY or aggregates in a {form} query")
            for k in keys:
                if k not in bound:
                    raise Refused(f"?{k} of GROUP BY is not bound by the WHERE clause")
        aliases: dict[str, str] = {}
        for name, src in items:
            if src is None:
                if grouped and name not in (keys or ()):
                    raise Refused(f"?{name} is selected but not grouped")
                project.append((name, name))
            else:
                aliases[name] = src
                project.append((name, src))
        if form == "SELECT" and not items:  # SELECT *: the variables in scope, by name
            project = [(n, n) for n in pt.projected_names(tree)]
        order = [(aliases.get(n, n), d) for n, d in order]
        for e in having:
            for n in e.variables():
                if not n.startswith("__a") and n not in (keys or ()):
                    raise Refused(f"HAVING reads ?{n}, neither grouped nor an aggregate")
        if grouped:
            for n, _ in order:
                if not n.startswith("__a") and n not in (keys or ()):
                    raise Refused(f"ORDER BY reads ?{n}, neither grouped nor an aggregate")
        plan = Plan(self.a, form, self.prologue, windows, bg, filters,
                    tuple(keys) if grouped and keys is not None else None, aggregates,
                    grouped and not keys, having, order, project, distinct, offset, limit,
                    template)
        got = factorise(plan, relations, [[x[1] for x in tp if isinstance(x, tuple)]
                                          for _, tp in bg])
        if isinstance(got, str):
            plan.unfactored = got
        else:
            plan.factors = got
        return plan

    # ------------------------------------------------------------ WHERE

    def _where(self, where: pt.Pattern) -> tuple[list[tuple[str | None, tuple]],
                                                  list[Constraint], dict[str, list[pt.Pattern]]]:
        """The background's patterns, the top-level FILTERs no block decides alone, and
        each window's blocks (their patterns, in the order written)."""
        if isinstance(where, pt.SubSelect) and not self.tree.elements:
            raise Refused("the WHERE clause is a subquery")
        conditions = iter(where.conditions if isinstance(where, pt.Filter) else ())
        flat = list(_conjuncts(where.arg if isinstance(where, pt.Filter) else where))
        graphs = iter([p for p in flat if isinstance(p, (pt.Graph, pt.WindowGraph))])
        triples = [t for p in flat if isinstance(p, pt.BGP) for t in p.triples]
        named: list[tuple[str | None, tuple[pt.Triple, ...]]] = []
        blocks: dict[str, list[pt.Pattern]] = {}
        filters: list[Constraint] = []
        pushed = {c.expr.to_sparql() for bs in self.a.blocks.values() for b in bs
                  for c in b.filters[len(b.filters) - b.pushed:]}
        for kind in self.tree.elements:
            if kind == "triples":
                continue
            if kind in _GRAPHS:
                g = next(graphs)
                iri = self._graph_iri(g.name if isinstance(g, pt.Graph) else g.window)
                if iri in self.a.blocks:
                    blocks.setdefault(iri, []).append(g.arg)
                    continue
                if iri not in self.query.dataset.named_graphs:
                    raise Refused(f"GRAPH <{iri}> reads a graph the query does not declare "
                                  "(FROM NAMED): an event's own named graph, perhaps")
                if not isinstance(g.arg, pt.BGP) or not g.arg.triples:
                    raise Refused(f"GRAPH <{iri}> holds more than triples")
                named.append((iri, g.arg.triples))
            elif kind == "FILTER":
                e = next(conditions)
                if e.to_sparql() in pushed:
                    continue
                if any(isinstance(x, Exists) for x in _walk(e)):
                    raise Refused("a FILTER (NOT) EXISTS")
                if any(isinstance(x, FunctionCall) and x.function in VOLATILE for x in _walk(e)):
                    raise Refused("a FILTER calls NOW, RAND, UUID, STRUUID or BNODE")
                filters.append(Constraint(e, constraint_text(e), self.prologue))
            else:
                raise Refused("the WHERE clause is more than triples, GRAPH blocks and "
                              f"FILTERs: {_KINDS.get(kind, kind)}")
        if sum(len(bs) for bs in blocks.values()) != sum(len(bs) for bs in self.a.blocks.values()):
            raise Refused("a window's GRAPH block is nested in another pattern")
        bg: list[tuple[str | None, tuple]] = []
        prefixes = prefixes_of(self.prologue)
        groups: list[tuple[str | None, tuple[pt.Triple, ...]]] = \
            [(None, tuple(triples))] if triples else []
        groups += named
        for k, (graph, ts) in enumerate(groups):
            for tp in triple_patterns(ts, prefixes):
                # a blank node is a variable of its own group only
                bg.append((graph, tuple(("var", f"_:{k}.{x[1][2:]}") if isinstance(x, tuple)
                                      and x[1].startswith("_:") else x for x in tp)))
        return bg, filters, blocks

    def _graph_iri(self, name: Variable | Iri | PrefixedName) -> str:
        if isinstance(name, Variable):
            raise Refused("GRAPH ?var reads every named graph, the windows' included")
        if isinstance(name, PrefixedName):
            prefixes = dict(self.tree.prologue.prefixes)
            if name.prefix not in prefixes:
                raise NotCompiled("prefixed name")
            return prefixes[name.prefix] + name.local
        base = self.tree.prologue.base
        return name.value if ":" in name.value or base is None else urljoin(base, name.value)

    # ------------------------------------------------------------ modifiers

    def _modifiers(self, m: pt.Modifiers) -> tuple[list[str] | None, list[Expression],
                                                   list[tuple[str, bool]], int, int | None]:
        keys: list[str] | None = None
        if m.group_by:
            keys = []
            for k in m.group_by:
                if k.var is not None or not isinstance(k.expr, Variable):
                    raise Refused("GROUP BY an expression")
                keys.append(k.expr.name)
        having = [self._hide(h) for h in m.having]
        order = [self._order(o) for o in m.order_by]
        return keys, having, order, m.offset or 0, m.limit

    def _order(self, o: pt.OrderKey) -> tuple[str, bool]:
        e = self._hide(o.expr)
        if not isinstance(e, Variable):
            raise Refused("ORDER BY an expression")
        return e.name, o.descending

    def _select(self, m: pt.Modifiers) -> tuple[bool, list[tuple[str, str | None]]]:
        if m.reduced:
            raise Refused("SELECT REDUCED")
        items: list[tuple[str, str | None]] = []
        for p in m.projection or ():
            if p.expr is None:
                items.append((p.var, None))
                continue
            e = self._hide(p.expr)
            if not isinstance(e, Variable) or not e.name.startswith("__a"):
                raise Refused(f"(... AS ?{p.var}) computes more than one aggregate")
            items.append((p.var, e.name))
        return m.distinct, items

    def _template(self, template: tuple[pt.Triple, ...]) -> list[tuple]:
        tps = triple_patterns(template, prefixes_of(self.prologue))
        if any(isinstance(x, tuple) and x[1].startswith("_:") for tp in tps for x in tp):
            raise Refused("a blank node in the CONSTRUCT template (a new one per solution)")
        return tps

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
        if n.name not in AGGREGATES:
            raise Refused(f"the aggregate {n.name}")
        arg = n.arg
        str_arg = False
        if isinstance(arg, FunctionCall) and arg.function == "STR" and len(arg.args) == 1:
            arg, str_arg = arg.args[0], True
        if arg is None:
            if n.distinct:
                raise Refused("COUNT(DISTINCT *)")
            var = None
        elif isinstance(arg, Variable):
            var = arg.name
            if var not in bound:
                raise Refused(f"{n.name}(?{var}): ?{var} is not bound by the WHERE clause")
        else:
            raise Refused(f"{n.name} of an expression")
        return Aggregate(n.name, var, str_arg, n.distinct,
                         " " if n.separator is None else n.separator, n.to_sparql())


def factorise(plan: Plan, windows: list[list[str]], background: list[list[str]]
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


# ---------------------------------------------------------------- the tree's parts


def _conjuncts(p: pt.Pattern) -> Iterator[pt.Pattern]:
    """A group's patterns in the order written, as far as the group is a join: an
    OPTIONAL, MINUS or BIND after the patterns it applies to (the plan refuses it)."""
    if isinstance(p, pt.Join):
        yield from _conjuncts(p.left)
        yield from _conjuncts(p.right)
    elif isinstance(p, (pt.LeftJoin, pt.Minus)):
        yield from _conjuncts(p.left)
        yield p
    elif isinstance(p, pt.Extend):
        yield from _conjuncts(p.arg)
        yield p
    elif not isinstance(p, pt.BGP) or p.triples:
        yield p


def _walk(e: Expression) -> Iterator[Expression]:
    yield e
    for c in e.children():
        yield from _walk(c)


def block_vars(p: pt.Pattern) -> list[str]:
    """The variables of a window block's triple patterns (blank nodes not), in order."""
    return [x.name for n in pt.nodes(p) if isinstance(n, pt.BGP) for t in n.triples
            for x in (t.subject, t.predicate, t.object) if isinstance(x, Variable)]


def constraint_text(e: Expression) -> str:
    """A FILTER's constraint as SPARQL text: a call, or an expression in brackets."""
    text = e.to_sparql()
    if isinstance(e, FunctionCall) or text.startswith("(") and text.endswith(")"):
        return text
    return f"({text})"
