"""``rsep explain``: what the engine will run, for a query of any dialect.

RSP queries (RSP-QL, C-SPARQL, CQELS, RSEP-QL) print their RSP model (V, P, D, S) and,
with ``--lars``, their LARS program (001); SPASEQ queries print their compiled NFA
(002 Sec. 6); EP-SPARQL queries print their operator tree (003 Sec. 4.2).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rsep.algebra.epsparql import EpSparqlQuery, EtalisPolicy, Expr, Node
from rsep.algebra.query import ContinuousQuery, Query
from rsep.algebra.spaseq import SpaseqQuery
from rsep.epsparql import native as ep_native
from rsep.events import native as match_native
from rsep.lang import dialect_of
from rsep.lang.dialect import EPSPARQL, RSP, SPASEQ
from rsep.lars import explain as lars_explain
from rsep.lars.core import LarsError
from rsep.runtime.windowed import query_strategy
from rsep.spaseq.explain import explain as nfa_explain
from rsep.windows.maintained import compile_plan, path
from rsep.windows.native import available, native_plan


def explain(q: Query, *, lars: bool = False, fmt: str = "text",
            time_unit_ms: int | None = None) -> str:
    """The explanation of a parsed query as text or Graphviz DOT (``fmt``), by its
    dialect's family (``EXPLAIN``)."""
    d = dialect_of(q)
    why = d.refusal("--lars") if lars else None
    if why:
        raise LarsError(why)
    return EXPLAIN[d.family](q, lars, fmt, time_unit_ms)


# the units a unit is chosen from when the query's durations have units and no --time-unit
# is given: the largest that divides every duration (so each is a whole number of them)
_UNITS = ((86_400_000, "1d"), (3_600_000, "1h"), (60_000, "1m"), (1000, "1s"), (1, "1ms"))


def implied_unit(q: ContinuousQuery) -> tuple[int, str] | None:
    """The time unit an explanation reads integer timestamps in when the query's window
    durations have units (``[RANGE 30m]``) and none was given: the largest of a day, hour,
    minute, second and millisecond that divides them all; None when no duration has a unit.
    (A run still needs --time-unit: there the stream's timestamps, not the query, say
    what a unit is.)"""
    ms = [d.amount for w in q.dataset.windows for d in (w.spec.range, w.spec.step, w.spec.offset)
          if d is not None and d.in_ms]
    if not ms:
        return None
    return next((u, name) for u, name in _UNITS if all(m % u == 0 for m in ms))


def _rsp(q: Query, lars: bool, fmt: str, time_unit_ms: int | None) -> str:
    # an RSP query's explanation: its model (V, P, D, S), and its LARS program with --lars.
    assert isinstance(q, ContinuousQuery)  # (the family's algebra)
    note = ""
    if time_unit_ms is None and (implied := implied_unit(q)) is not None:
        time_unit_ms = implied[0]
        note = (f"time unit: {implied[1]}, from the query's durations (an integer timestamp "
                "counts these; --time-unit gives another)\n")
    if fmt == "dot":
        return lars_explain.explain_dot(q, lars, time_unit_ms)
    # which evaluation path the runtime's strategy takes (rsep.runtime.windowed), and why
    # (rsep.windows.plan)
    strategy = query_strategy(q)
    kind, why = path(q)
    assert kind == strategy.path, (kind, strategy)  # (one choice, read twice)
    return (lars_explain.explain_text(q, lars, time_unit_ms) + note
            + f"\nevaluation: {kind}: {why}\n"
            + f"strategy: {strategy.__name__} (rsep.runtime.windowed)\n" + native_line(q))


def native_line(q: ContinuousQuery) -> str:
    """Whether the query takes the native path (rsep.windows.native, or rsep.events.native
    for a MATCH), and why."""
    if q.matches:
        got = match_native.native_plan(q)
        if isinstance(got, str):
            return f"native: not taken: {got}\n"
        if (missing := match_native.available()) is not None:
            return f"native: not taken: {missing}\n"
        return ("native: taken by `rsep run` over one stream file with --format jsonl or tsv "
                f"and no --graph, --until, --trace or time option: {got.describe()}\n")
    plan = native_plan(q, compile_plan(q), q.report, q.r2s)
    if isinstance(plan, str):
        return f"native: not taken: {plan}\n"
    missing = available()
    if missing is not None:
        return f"native: not taken: {missing}\n"
    if plan.join is not None:
        return ("native: taken by `rsep run` over one stream file for each stream its windows "
                "read (and --graph for the background) with --format jsonl or tsv and no "
                f"--graph-updates, --until, --trace or time option: {plan.describe()}\n")
    return (f"native: taken by `rsep run` over one stream file with --format jsonl or tsv and "
            f"no --graph, --until, --trace or time option: {plan.describe()}\n")


def _spaseq(q: Query, lars: bool, fmt: str, time_unit_ms: int | None) -> str:
    assert isinstance(q, SpaseqQuery)  # (the family's algebra)
    return nfa_explain(q, fmt)


def _epsparql(q: Query, lars: bool, fmt: str, time_unit_ms: int | None) -> str:
    assert isinstance(q, EpSparqlQuery)  # (the family's algebra)
    return _ep_dot(q) if fmt == "dot" else _ep_text(q)


# Each family's explanation (rsep.lang.dialect): (query, lars, fmt, time_unit_ms) -> text
EXPLAIN: dict[str, Callable[[Query, bool, str, int | None], str]] = {
    RSP: _rsp, SPASEQ: _spaseq, EPSPARQL: _epsparql}


# ---------------------------------------------------------------- EP-SPARQL

# 003 Sec. 4.2's operator for each algebra class, by the keyword a user wrote
_EP_KEYWORD = {"Join": "AND (Join)", "Union": "UNION", "LeftJoin": "OPTIONAL (LeftJoin)",
               "SeqJoin": "SEQ (SeqJoin)", "SeqRightJoin": "OPTIONALSEQ (SeqRightJoin)",
               "EqJoin": "EQUALS (EqJoin)", "EqLeftJoin": "EQUALSOPTIONAL (EqLeftJoin)"}


def _ep_term(t: Any) -> str:
    return f"?{t.name}" if hasattr(t, "name") else str(t)


def _ep_expr(e: Expr) -> str:
    # sigma's variables back to the functions the user wrote
    return (e.text.replace("?__d", "getDURATION()").replace("?__s", "getSTARTTIME()")
            .replace("?__e", "getENDTIME()"))


def _ep_label(n: Any) -> tuple[str, list[str]]:
    """The operator's line and its leaf lines (triple patterns)."""
    kind = type(n).__name__
    if kind == "BGP":
        return "BGP", [" ".join(_ep_term(x) for x in tp) for tp in n.patterns]
    if kind == "Background":
        return (f"GRAPH <{n.iri}> (background, RDFS closure)",
                [" ".join(_ep_term(x) for x in tp) for tp in n.patterns])
    if kind == "Unit":
        return "{} (the empty group)", []
    if kind in _EP_KEYWORD:
        cond = getattr(n, "cond", None)
        return _EP_KEYWORD[kind] + (f" ON {_ep_expr(cond)}" if cond is not None else ""), []
    if kind == "Filter":
        return f"FILTER {_ep_expr(n.cond)}", []
    if kind == "Extend":
        return f"BIND ({_ep_expr(n.expr)} AS ?{n.var})", []
    if kind == "Project":
        if n.items is None:
            items = "*"
        else:
            items = " ".join(f"?{v}" if e is None else f"({_ep_expr(e)} AS ?{v})"
                             for v, e in n.items)
        return ("SELECT DISTINCT " if n.distinct else "SELECT ") + items, []
    return kind, []


def _ep_native(q: EpSparqlQuery) -> str:
    """Whether ``rsep run`` takes the native path (rsep.epsparql.native) under the query's
    policy, and why, as rsep.cli.explain says it of a windowed query."""
    plan = ep_native.native_plan(q)
    if isinstance(plan, str):
        return f"native: not taken: {plan}"
    missing = ep_native.available()
    if missing is not None:
        return f"native: not taken: {missing}"
    return ("native: taken by `rsep run` over one stream file with --format jsonl or tsv and "
            f"no --graph, --until, --trace or time option: {plan.describe()}")


def _ep_text(q: EpSparqlQuery) -> str:
    policy = q.policy.value if isinstance(q.policy, EtalisPolicy) else q.policy.name.lower()
    lines = [f"query: {q.name or '(unnamed)'}  dialect: epsparql  form: "
             f"{'CONSTRUCT (a rule: its results re-enter the stream)' if q.construct else 'SELECT'}",
             f"policy: {policy}",
             "background: " + (", ".join(f"<{g}>" for g in q.background) or "(none)"),
             _ep_native(q)]
    if q.template is not None:  # (q.construct)
        lines.append("template:")
        lines += ["  " + " ".join(_ep_term(x) for x in tp) for tp in q.template]
    lines.append("pattern (solutions (mu, t_alpha, t_omega), 003 Sec. 4.2):")

    def walk(n: Node, depth: int) -> None:
        head, leaves = _ep_label(n)
        pad = "  " * depth
        lines.append(pad + head)
        lines.extend(pad + "  " + x for x in leaves)
        for k in n.kids:
            walk(k, depth + 1)

    walk(q.pattern, 1)
    return "\n".join(lines) + "\n"


def _ep_dot(q: EpSparqlQuery) -> str:
    out = ["digraph epsparql {", "  node [shape=box, fontname=monospace];"]
    count = [0]

    def walk(n: Node) -> str:
        count[0] += 1
        me = f"n{count[0]}"
        head, leaves = _ep_label(n)
        out.append(f"  {me} [label={json.dumps(chr(10).join([head, *leaves]))}];")
        for k in n.kids:
            out.append(f"  {me} -> {walk(k)};")
        return me

    walk(q.pattern)
    out.append("}")
    return "\n".join(out) + "\n"
