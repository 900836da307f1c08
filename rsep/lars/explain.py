"""`rsep explain --lars`: a query as the algebra of 001 and its LARS program (tau_1 for
C-SPARQL, tau_2 for CQELS), an aggregate on top of its pattern with 001 Sec. 6's agreement
notion for it."""

from __future__ import annotations

import json

from rsep.algebra.query import ContinuousQuery
from rsep.lars.aggregates import NoAgreementNotion, aggregate_pattern, find_aggregate
from rsep.lars.core import LarsError, Program, show_term
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
    Union,
    cq,
    cs,
    from_query,
    show_expr,
)
from rsep.lars.rsp import Stream as StreamGP
from rsep.lars.translate import (
    tau1,
    tau2,
    units_fn,
    window_operator,
)


def _tp(t: TP) -> str:
    return " ".join(f"?{x.name}" if hasattr(x, "name") else show_term(x) for x in t.terms())


def algebra_lines(p: Pattern, q: RSPQuery, depth: int = 0) -> list[str]:
    pad = "  " * depth
    if isinstance(p, BGP):
        tag = f"  [stream pattern g_{p.stream + 1} of <{q.S[p.stream].stream}>]" if p.stream is not None else ""
        return [f"{pad}BGP{tag}"] + [f"{pad}  {_tp(t)}" for t in p.triples]
    if isinstance(p, StreamGP):
        s = q.S[p.index]
        return [f"{pad}STREAM <{s.stream}> {s.window}"] + [f"{pad}  {_tp(t)}" for t in p.bgp.triples]
    names = {Join: "AND", Union: "UNION", Optional: "OPTIONAL", Minus: "MINUS"}
    if isinstance(p, (Join, Union, Optional, Minus)):
        return [f"{pad}{names[type(p)]}"] + algebra_lines(p.left, q, depth + 1) + \
            algebra_lines(p.right, q, depth + 1)
    if isinstance(p, Filter):
        return [f"{pad}FILTER {show_expr(p.expr, True)}"] + algebra_lines(p.pattern, q, depth + 1)
    if isinstance(p, Graph):
        return [f"{pad}GRAPH {p.graph}"] + algebra_lines(p.pattern, q, depth + 1)
    return [f"{pad}{p!r}"]


def lars_program(cq_: ContinuousQuery, time_unit_ms: int | None = None) -> tuple[str, Program]:
    """The LARS program of a query by its dialect: tau_1(cs(Q)) for C-SPARQL, tau_2 else."""
    q = from_query(cq_)
    units = units_fn(time_unit_ms)
    if cq_.dialect == "csparql":
        return "tau_1(cs(Q))", tau1(cs(q), units=units)
    return "tau_2(Q)", tau2(cq(q), units=units)


def _aggregate(cq_: ContinuousQuery) -> tuple[ContinuousQuery, list[str]]:
    """An aggregate query's pattern (its LARS translation has no aggregate: Fig. 2) and
    the lines that say what is aggregated on top and how 001 Sec. 6 compares it."""
    inner = aggregate_pattern(cq_)
    if inner is None:
        return cq_, []
    try:
        found = find_aggregate(cq_)
    except NoAgreementNotion as e:
        return inner, ["aggregate on top of P (not translated: Fig. 2 has none):",
                       f"  push-pull agreement: none. {e}"]
    except LarsError as e:
        return inner, ["aggregate on top of P (not translated: Fig. 2 has none):",
                       f"  outside rsep compare's aggregate comparison: {e}"]
    assert found is not None
    agg = found[0]
    notion = {"COUNT": "the sum of the counts pushed in (t1, t2] equals the count pulled at t2",
              "MAX": "the max of the values pushed in (t1, t2] equals the max pulled at t2",
              "MIN": "the min of the values pushed in (t1, t2] equals the min pulled at t2"}
    return inner, ["aggregate on top of P (not translated: Fig. 2 has none):",
                   f"  {agg.show()}",
                   f"  push-pull agreement (001 Sec. 6), per group: {notion[agg.func]}"]


def as_written(cq_: ContinuousQuery) -> list[str]:
    """A SELECT query's projection (V), GROUP BY, HAVING and aggregates as its text has
    them (001's V of an aggregate query's pattern is that pattern's, not the query's:
    ``SELECT *``), as the pattern tree keeps them (rsep.algebra.pattern.Written); nothing
    for the other forms."""
    tree = cq_.pattern
    if cq_.form != "SELECT" or tree is None or tree.written is None:
        return []
    w, m = tree.written, tree.modifiers
    words = ["DISTINCT"] if m.distinct else ["REDUCED"] if m.reduced else []
    lines = ["V: " + " ".join(words + (list(w.items) or ["*"]))]
    if w.group_by is not None:
        lines.append("GROUP BY " + " ".join(w.group_by))
    if w.having is not None:
        lines.append("HAVING " + " ".join(w.having))
    if w.aggregates:
        lines.append("aggregates: " + ", ".join(dict.fromkeys(w.aggregates)))
    return lines


def explain_text(cq_: ContinuousQuery, with_lars: bool, time_unit_ms: int | None = None) -> str:
    head = [f"query: {cq_.name or '(unnamed)'}  dialect: {cq_.dialect}  form: {cq_.form}",
            f"report: {cq_.report}  r2s: {cq_.r2s.value}"]
    written = as_written(cq_)
    try:
        cq_, agg_lines = _aggregate(cq_)
        q = from_query(cq_)
    except LarsError as e:
        if with_lars:
            raise
        # 001's model (V, P, D, S) covers a fragment; the query still runs, so explain the rest
        windows = [f"  <{w.stream}> {w.spec.text} -> "
                   + ("merged into the default graph" if w.in_default else f"window <{w.iri}>")
                   for w in cq_.dataset.windows]
        return "\n".join(head + written + ["windows:", *windows,
                                          f"001's model (V, P, D, S): not shown: {e}"]) + "\n"
    lines = [*head,
             *(written or ["V: " + (" ".join(f"?{v}" for v in q.V) if q.V else "*")]),
             "D: default graph " + (", ".join(f"<{g}>" for g in q.default_graphs) or "(supplied)")
             + ("; named " + ", ".join(f"<{g}>" for g in q.named_graphs) if q.named_graphs else ""),
             "S:"]
    for i, (s, w) in enumerate(zip(q.S, cq_.dataset.windows, strict=True)):
        where = "merged into the default graph" if w.in_default else f"window <{w.iri}>"
        g = ", ".join(_tp(t) for t in s.g) or "∅"
        op = _operator(s, time_unit_ms)
        lines.append(f"  s_{i + 1} = <{s.stream}> {s.window} {s.window.boundary.value} "
                     f"-> {op}; {where}; g_{i + 1} = {{{g}}}")
    lines.append("P:")
    lines += ["  " + x for x in algebra_lines(q.P, q)]
    lines += agg_lines
    if with_lars:
        name, prog = lars_program(cq_, time_unit_ms)
        lines.append(f"LARS program {name} ({len(prog)} rules, "
                     f"{'positive' if prog.positive else 'stratified'}):")
        lines += ["  " + r.show() for r in prog]
    return "\n".join(lines) + "\n"


def _operator(s: StreamPattern, time_unit_ms: int | None) -> str:
    try:
        return window_operator(s.window, units_fn(time_unit_ms)).show()
    except LarsError as e:
        return f"? ({e})"
    except ValueError:
        return "? (give --time-unit for durations with units)"


def explain_dot(cq_: ContinuousQuery, with_lars: bool, time_unit_ms: int | None = None) -> str:
    cq_, agg_lines = _aggregate(cq_)
    q = from_query(cq_)
    out = ["digraph query {", "  node [shape=box, fontname=monospace];"]
    counter = [0]

    def node(label: str) -> str:
        counter[0] += 1
        n = f"n{counter[0]}"
        out.append(f"  {n} [label={json.dumps(label)}];")
        return n

    def walk(p: Pattern) -> str:
        lines = algebra_lines(p, q)
        if isinstance(p, (BGP, StreamGP)):
            return node("\n".join(x.strip() for x in lines))
        n = node(lines[0].strip())
        for attr in ("left", "right", "pattern"):
            if hasattr(p, attr):
                out.append(f"  {n} -> {walk(getattr(p, attr))};")
        return n

    root = walk(q.P)
    if agg_lines:
        out.append(f"  {node(chr(10).join(x.strip() for x in agg_lines))} -> {root};")
    for i, s in enumerate(q.S):
        sn = node(f"s_{i + 1} <{s.stream}> {s.window}")
        out.append(f"  {sn} -> {root} [style=dashed];")
    if with_lars:
        name, prog = lars_program(cq_, time_unit_ms)
        ids = {}
        for r in prog:
            if r.head.pred not in ids:
                ids[r.head.pred] = node(r.head.pred)
        for r in prog:
            for b in r.body:
                for pr in b.preds():
                    if pr in ids:
                        style = " [style=dotted]" if b.negated else ""
                        out.append(f"  {ids[pr]} -> {ids[r.head.pred]}{style};")
    out.append("}")
    return "\n".join(out) + "\n"


