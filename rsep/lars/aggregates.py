"""Push-pull agreement for aggregate queries (001 Sec. 6).

001 Sec. 6: "for COUNT, we can say that CQELS agrees with C-SPARQL in an interval
(t1, t2] iff the sum of output values produced by the former during the interval equal
to the output value returned by the latter at t2. Similar extension can be done for MAX,
MIN. However, with MEDIAN or AVG, one cannot reproduce the result from CQELS' output to
match that from C-SPARQL. In general, we can only give agreement notion for aggregates
that can be recursively defined."

Supported: a SELECT whose projection is one bare ``COUNT(*)``, ``COUNT(?x)``,
``MAX([DISTINCT] ?x)`` or ``MIN([DISTINCT] ?x)`` AS ?v, optionally with
``GROUP BY ?g1 ... ?gk`` and the group variables projected. Readings (docs/semantics.md):

- *pushed values*: at each trigger point t of (t1, t2], CQELS pushes (IStream) the new
  mappings of the query's pattern, inc(P, t); the pushed value at t is the aggregate of
  those mappings (per group). Def. 4's "holds at every point of the interval" term
  (mappings pushed before t1 that still hold throughout) is one more pushed value,
  ``carried``. The engine is not asked to push COUNT rows itself: IStream over a windowed
  COUNT re-emits the running total of the window, whose sum counts a mapping once per
  trigger point it stays in the window.
- *pulled value*: the aggregate query itself, run by the engine as C-SPARQL (pull at t2).
- COUNT agrees iff sum(pushed counts) = pulled count; MAX (MIN) iff the max (min) of the
  pushed values equals the pulled max (min); per group, a missing group is count 0 /
  no value.
- AVG, MEDIAN (extension aggregates named ``...median``), SUM, SAMPLE, GROUP_CONCAT,
  ``COUNT(DISTINCT ...)`` (a sum of distinct counts is not the distinct count of the
  union) and any other projection: :class:`NoAgreementNotion` (``rsep compare`` exit 2).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import IO, Any

import pyoxigraph as ox

from rsep.algebra import pattern as pt
from rsep.algebra.expression import Aggregate as AggregateNode
from rsep.algebra.expression import Expression, FunctionCall, Variable, walk
from rsep.algebra.policy import ReportPolicy
from rsep.algebra.query import ContinuousQuery
from rsep.lars.compare import compare, engine_runs
from rsep.lars.core import LarsError, show_term
from rsep.lars.rsp import assign_streams, continuous, cs, from_query, select_tree
from rsep.stream.event import Event

AGREEABLE = ("COUNT", "MAX", "MIN")
NOT_RECURSIVE = ("AVG", "MEDIAN")
_NUMERIC = re.compile(r'^"([^"]*)"\^\^<http://www\.w3\.org/2001/XMLSchema#'
                      r'(integer|decimal|double|float|long|int|short|byte|nonNegativeInteger|'
                      r'positiveInteger|negativeInteger|nonPositiveInteger|unsignedLong|'
                      r'unsignedInt|unsignedShort|unsignedByte)>$')


class NoAgreementNotion(LarsError):
    """The query aggregates with a function 001 Sec. 6 gives no agreement notion for."""


@dataclass(frozen=True)
class Aggregate:
    func: str  # COUNT | MAX | MIN
    arg: str | None  # variable name; None for COUNT(*)
    distinct: bool
    alias: str
    group: tuple[str, ...] = ()

    def show(self) -> str:
        inner = ("DISTINCT " if self.distinct else "") + (f"?{self.arg}" if self.arg else "*")
        g = (" GROUP BY " + " ".join(f"?{v}" for v in self.group)) if self.group else ""
        return f"({self.func}({inner}) AS ?{self.alias}){g}"

    def sparql(self) -> str:
        inner = ("DISTINCT " if self.distinct else "") + (f"?{self.arg}" if self.arg else "*")
        return f"({self.func}({inner}) AS ?{self.alias})"


def _refuse(func: str) -> NoAgreementNotion:
    if func in NOT_RECURSIVE:
        return NoAgreementNotion(
            f"{func} has no push-pull agreement notion (001 Sec. 6): it is not recursively "
            f"definable, so the {func} C-SPARQL pulls at t2 cannot be recomputed from the values "
            "CQELS pushes during the interval; only COUNT (sum of the pushed counts), MAX and "
            "MIN (max/min of the pushed values) are compared")
    return NoAgreementNotion(
        f"{func} has no push-pull agreement notion: 001 Sec. 6 defines one only for COUNT (sum "
        "of the pushed counts), MAX and MIN (max/min of the pushed values)")


def _tree(q: ContinuousQuery) -> pt.Query:
    if q.pattern is None:
        raise LarsError(f"the query has no pattern tree ({q.pattern_refused})")
    return q.pattern


def _projected(m: pt.Modifiers) -> list[Expression]:
    return [x.expr for x in m.projection or () if x.expr is not None]


def _has_aggregate(es: list[Expression]) -> bool:
    return any(isinstance(x, AggregateNode) for e in es for x in walk(e))


def _extension_name(es: list[Expression], tree: pt.Query, known: tuple[str, ...]) -> str | None:
    """An extension aggregate in the projection: a call iri(...) whose IRI the query uses
    as an aggregate (called with DISTINCT) or whose local name is MEDIAN or AVG (SPARQL
    has no MEDIAN: engines offer it as an extension)."""
    for e in es:
        for x in walk(e):
            if not isinstance(x, FunctionCall) or isinstance(x.function, str):
                continue
            iri = pt.absolute(x.function, tree.prologue)
            local = re.split(r"[/#:]", iri.rstrip("/#"))[-1].upper()
            if iri in known or local in NOT_RECURSIVE:
                return local
    return None


def find_aggregate(q: ContinuousQuery) -> tuple[Aggregate, ContinuousQuery] | None:
    """The aggregate of an aggregate query and its pattern as a ``SELECT *`` query, or
    None when the query neither aggregates nor groups. Raises NoAgreementNotion (or
    LarsError) for aggregates and projections without an agreement notion."""
    if q.form != "SELECT":
        return None
    tree = _tree(q)
    m = tree.modifiers
    ext = _extension_name(_projected(m), tree, q.unknown_aggregates)
    if not _has_aggregate(_projected(m)) and not m.group_by and ext is None:
        return None
    if ext is not None:
        raise _refuse(ext)
    # the solution modifiers after GROUP BY, in the order the grammar has them
    other = [name for name, there in (("having clause", m.having), ("order clause", m.order_by),
                                      ("limit offset clauses", m.limit is not None
                                       or m.offset is not None)) if there]
    if other:
        raise LarsError(f"{other[0]} is outside the aggregate comparison "
                        "(a single COUNT/MAX/MIN, optionally with GROUP BY ?vars)")
    group: list[str] = []
    for k in m.group_by:
        if k.var is not None or not isinstance(k.expr, Variable):
            raise LarsError("only GROUP BY ?var is supported by the aggregate comparison")
        group.append(k.expr.name)
    if m.projection is None:
        raise LarsError("SELECT * with GROUP BY: project the group variables and one "
                        "COUNT/MAX/MIN")
    plain: list[str] = []
    aggs: list[Aggregate] = []
    for item in m.projection:
        if item.expr is None:
            plain.append(item.var)
            continue
        alias, agg = item.var, item.expr
        if not isinstance(agg, AggregateNode):
            for sub in walk(agg):
                if isinstance(sub, AggregateNode):
                    raise _refuse(sub.name) if sub.name not in AGREEABLE else \
                        LarsError(f"?{alias}: only a bare COUNT/MAX/MIN(...) AS ?v has an "
                                  "agreement notion, not an expression over it")
            raise LarsError(f"?{alias}: SELECT expressions other than one COUNT/MAX/MIN are "
                            "outside the aggregate comparison")
        func = agg.name
        if func not in AGREEABLE:
            raise _refuse(func)
        if func == "COUNT" and agg.distinct:
            raise NoAgreementNotion(
                "COUNT(DISTINCT ...) has no push-pull agreement notion: the sum of the distinct "
                "counts pushed at the trigger points is not the distinct count of their union "
                "(001 Sec. 6's sum-of-counts notion needs a recursively definable aggregate)")
        arg = None
        if agg.arg is not None:
            if not isinstance(agg.arg, Variable):
                raise LarsError(f"{func}: only a variable (or *) argument is supported")
            arg = agg.arg.name
        aggs.append(Aggregate(func, arg, agg.distinct, alias, tuple(group)))
    if len(aggs) != 1:
        raise LarsError(f"the aggregate comparison needs exactly one COUNT/MAX/MIN in the "
                        f"projection (found {len(aggs)})")
    for v in plain:
        if v not in group:
            raise LarsError(f"?{v} is projected but not grouped")
    return aggs[0], _pattern_query(q, tree)


def _pattern_query(q: ContinuousQuery, tree: pt.Query) -> ContinuousQuery:
    """``SELECT * WHERE P``: the aggregate query's pattern, with its dataset and windows (its
    tree that of the WHERE clause alone; its text, which only rsep.lars's model reads
    through the tree, empty when to_sparql refuses what P holds: SERVICE, which the model
    refuses too)."""
    inner = dataclasses.replace(tree, modifiers=pt.Modifiers(), values=None)
    try:
        text = pt.to_sparql(inner)
    except pt.PatternRefused:
        text = ""
    return dataclasses.replace(q, sparql=text, text=text, variables=[], pattern=inner,
                               pattern_refused=None)


def aggregate_pattern(q: ContinuousQuery) -> ContinuousQuery | None:
    """The pattern of a query that aggregates or groups, as ``SELECT *`` (None otherwise),
    whether or not its aggregate has an agreement notion."""
    if q.form != "SELECT":
        return None
    tree = _tree(q)
    m = tree.modifiers
    if not m.group_by and not _has_aggregate(_projected(m)) and \
            _extension_name(_projected(m), tree, q.unknown_aggregates) is None:
        return None
    return _pattern_query(q, tree)


# ---------------------------------------------------------------- values


def term_key(term: str) -> tuple:
    """SPARQL-ish order for MAX/MIN: numeric literals by value, before everything else."""
    m = _NUMERIC.match(term)
    if m:
        try:
            return (0, Decimal(m.group(1)), "")
        except InvalidOperation:
            pass
    return (1, Decimal(0), term)


def count_of(term: str | None) -> int:
    m = _NUMERIC.match(term or "")
    if not m:
        raise LarsError(f"COUNT returned {term!r}, not an integer")
    return int(Decimal(m.group(1)))


def aggregate(agg: Aggregate, mappings: Any) -> dict[tuple, Any]:
    """The aggregate of a set of solution mappings, per group: COUNT an int, MAX/MIN a
    term (groups without a value are left out)."""
    out: dict[tuple, Any] = {}
    for m in mappings:
        b = dict(m)
        g = tuple(b.get(v) for v in agg.group)
        if agg.func == "COUNT":
            out[g] = out.get(g, 0) + (1 if agg.arg is None or agg.arg in b else 0)
            continue
        if agg.arg not in b:
            continue
        out[g] = _pick(agg.func, out.get(g), b[agg.arg])
    return {g: v for g, v in out.items() if not (agg.func == "COUNT" and v == 0)}


def _pick(func: str, a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return a if b is None else b
    if func == "MAX":
        return a if term_key(a) >= term_key(b) else b
    return a if term_key(a) <= term_key(b) else b


def combine(agg: Aggregate, values: list[dict[tuple, Any]]) -> dict[tuple, Any]:
    """COUNT: the sum of the pushed counts; MAX/MIN: the max/min of the pushed values."""
    out: dict[tuple, Any] = {}
    for v in values:
        for g, x in v.items():
            out[g] = out.get(g, 0) + x if agg.func == "COUNT" else _pick(agg.func, out.get(g), x)
    return {g: x for g, x in out.items() if not (agg.func == "COUNT" and x == 0)}


def pulled_values(agg: Aggregate, rows: set[tuple]) -> dict[tuple, Any]:
    """The rows the engine's C-SPARQL run of the aggregate query gave at t2."""
    out: dict[tuple, Any] = {}
    for r in rows:
        b = dict(r)
        g = tuple(b.get(v) for v in agg.group)
        if agg.func == "COUNT":
            n = count_of(b.get(agg.alias))
            if n:
                out[g] = n
        elif agg.alias in b:
            out[g] = b[agg.alias]
    return out


def _same(agg: Aggregate, a: dict[tuple, Any], b: dict[tuple, Any]) -> bool:
    if agg.func == "COUNT":
        return a == b
    return a.keys() == b.keys() and all(term_key(a[g]) == term_key(b[g]) for g in a)


# ---------------------------------------------------------------- comparison


@dataclass
class AggRow:
    t1: int
    t2: int
    agg: Aggregate
    pushed: list  # [(trigger time or "carried", {group: value})]
    push: dict  # combined pushed values
    pull: dict  # the engine's C-SPARQL aggregate at t2
    lars_push: dict
    lars_pull: dict
    pull_of_mappings: dict  # the aggregate of the engine's pulled mappings (cross-check)
    conditions: list = field(default_factory=list)
    # mappings CQELS pushed at more than one trigger point of the interval (they left the
    # window and came back): each push counts, so COUNT can disagree although the pushed
    # and pulled mappings agree as sets and every condition of Theorem 4 holds
    repushed: list = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return _same(self.agg, self.push, self.pull)

    @property
    def consistent(self) -> bool:
        return (_same(self.agg, self.lars_push, self.push) and _same(self.agg, self.lars_pull, self.pull)
                and _same(self.agg, self.pull_of_mappings, self.pull))

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.conditions if not c.holds]

    def to_json(self) -> dict:
        return {"interval": [self.t1, self.t2], "aggregate": self.agg.func, "agree": self.agree,
                "pushed": [{"time": t, "values": _vals(self.agg, v)} for t, v in self.pushed],
                "push": _vals(self.agg, self.push), "pull": _vals(self.agg, self.pull),
                "lars_push": _vals(self.agg, self.lars_push),
                "lars_pull": _vals(self.agg, self.lars_pull),
                "lars_matches_engine": self.consistent,
                "conditions": [c.to_json() for c in self.conditions], "failed": self.failed,
                "repushed": [{"mapping": dict(m), "times": ts} for m, ts in self.repushed]}


def _vals(agg: Aggregate, v: dict[tuple, Any]) -> list[dict]:
    return [{**{k: x for k, x in zip(agg.group, g, strict=True) if x is not None}, agg.alias: val}
            for g, val in sorted(v.items(), key=lambda kv: tuple(str(x) for x in kv[0]))]


@dataclass
class AggComparison:
    agg: Aggregate
    rows: list[AggRow]
    period: int
    until: int

    @property
    def agree(self) -> bool:
        return all(r.agree for r in self.rows)


def compare_aggregate(cq_: ContinuousQuery, events: list[Event], graphs: dict[str, list[ox.Triple]],
                      period: int, until: int | None = None, time_unit_ms: int | None = None,
                      found: tuple[Aggregate, ContinuousQuery] | None = None) -> AggComparison:
    """001 Sec. 6 on an aggregate query: its pattern compared push vs pull (engine and
    LARS, as ``compare``), then the pushed values combined (sum / max / min) against the
    aggregate C-SPARQL pulls at the end of each interval."""
    found = found or find_aggregate(cq_)
    if found is None:
        raise LarsError("the query has no aggregate")
    agg, inner = found
    base = compare(inner, events, graphs, period, until, time_unit_ms)
    # the aggregate query itself, as C-SPARQL pulling every U (the model of `compare`)
    q = from_query(inner)
    stream_triples: dict[str, set[tuple]] = {}
    for e in events:
        stream_triples.setdefault(e.stream, set()).update(
            (str(t.subject), str(t.predicate), str(t.object)) for t in e.triples)
    q_cs = cs(assign_streams(q, stream_triples))
    pull_q = continuous(q_cs, "csparql", report=ReportPolicy.parse(f"periodic:{period}"))
    iris = {i: w.iri for i, w in enumerate(pull_q.dataset.windows)}
    projection = (*(pt.Projected(g) for g in agg.group),
                  pt.Projected(agg.alias, AggregateNode(
                      agg.func, None if agg.arg is None else Variable(agg.arg), agg.distinct)))
    # the query is its tree; its text is the tree's, written by to_sparql
    tree = select_tree(q_cs.P, iris, projection, group=agg.group)
    text = pt.to_sparql(tree)
    pull_q = dataclasses.replace(pull_q, sparql=text, text=text,
                                 variables=[*agg.group, agg.alias], pattern=tree)
    pulled = engine_runs(pull_q, events, graphs, time_unit_ms, base.until)
    rows = []
    for r in base.rows:
        pushed = [(t, aggregate(agg, s)) for t, s in sorted(r.pushes.items())]
        if r.carried:
            pushed.append(("carried", aggregate(agg, r.carried)))
        lars = [aggregate(agg, s) for s in r.lars_pushes.values()] + [aggregate(agg, r.lars_carried)]
        times: dict[tuple, list[int]] = {}
        for t, s in sorted(r.pushes.items()):
            for m in s:
                times.setdefault(m, []).append(t)
        again = sorted((m, ts) for m, ts in times.items() if len(ts) > 1)
        rows.append(AggRow(r.t1, r.t2, agg, pushed, combine(agg, [v for _, v in pushed]),
                           pulled_values(agg, pulled.get(r.t2, set())), combine(agg, lars),
                           aggregate(agg, r.lars_pull), aggregate(agg, r.pull), r.conditions,
                           again))
    return AggComparison(agg, rows, period, base.until)


def _show(agg: Aggregate, v: dict[tuple, Any]) -> str:
    if not v:
        return "-"
    parts = []
    for g, x in sorted(v.items(), key=lambda kv: tuple(str(y) for y in kv[0])):
        val = str(x) if agg.func == "COUNT" else show_term(x)
        key = ",".join(show_term(y) if y is not None else "unbound" for y in g)
        parts.append(f"{key}:{val}" if agg.group else val)
    return " ".join(parts)


def _show_sol(m: tuple) -> str:
    return "(" + ", ".join(f"{k}={show_term(v)}" for k, v in m) + ")"


def write_aggregate_comparison(c: AggComparison, out: IO[str], fmt: str = "table") -> None:
    if fmt == "jsonl":
        for r in c.rows:
            out.write(json.dumps(r.to_json()) + "\n")
        return
    how = {"COUNT": "sum of the pushed counts", "MAX": "max of the pushed values",
           "MIN": "min of the pushed values"}[c.agg.func]
    out.write(f"aggregate {c.agg.show()}: CQELS agrees with C-SPARQL on (t1, t2] iff the {how} "
              f"equals the value pulled at t2 (001 Sec. 6)\n")
    out.write(f"{'interval':<14} {'agree':<6} {'pushed (CQELS)':<30} {'combined':<14} "
              f"{'pulled (C-SPARQL)':<18} failed conditions\n")
    for r in c.rows:
        pushed = " ".join(f"{t}:[{_show(c.agg, v)}]" for t, v in r.pushed) or "-"
        out.write(f"({r.t1}, {r.t2}]".ljust(14) + f" {'yes' if r.agree else 'NO':<6} {pushed:<30} "
                  f"{_show(c.agg, r.push):<14} {_show(c.agg, r.pull):<18} "
                  f"{', '.join(r.failed) or 'none'}\n")
        if not r.agree:
            for cnd in r.conditions:
                if not cnd.holds:
                    out.write(f"    {cnd.name} fails: {cnd.detail}\n")
            for m, ts in r.repushed:
                out.write(f"    pushed again: {_show_sol(m)} at {', '.join(map(str, ts))}\n")
            if not r.failed and not r.repushed:
                out.write("    (every condition of Theorem 4 holds and no mapping was pushed twice)\n")
        if not r.consistent:
            out.write(f"    warning: LARS gives push {_show(c.agg, r.lars_push)}, pull "
                      f"{_show(c.agg, r.lars_pull)}; the engine's pulled mappings give "
                      f"{_show(c.agg, r.pull_of_mappings)}\n")
    n = sum(not r.agree for r in c.rows)
    out.write(f"{'agree everywhere' if n == 0 else f'disagree in {n} of {len(c.rows)} intervals'} "
              f"(period {c.period}, up to {c.until})\n")
