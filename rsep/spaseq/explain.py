"""The compiled NFA_scep of a SPASEQ query, as text or Graphviz DOT (002 Figure 3 for any query)."""

from __future__ import annotations

import re

from rsep.algebra.spaseq import SpaseqQuery, Strategy
from rsep.spaseq.automaton import NFA, Edge, compile_query
from rsep.spaseq.chain import chain_eligible
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.native import available, native_plan
from rsep.spaseq.partition import partition_key
from rsep.spaseq.runtime import engine_options

_ROLE = {
    "proceed": "",
    "take": "take (stay for one more iteration)",
    "ignore": "skip an event",
    "epsilon": "ε: without an event",
    "forbid": "a match ends the run",
}

_STRATEGY = {Strategy.STRICT: "strict contiguity", Strategy.NEXT: "skip-till-next",
             Strategy.ANY: "skip-till-any"}


def _nfa(q: SpaseqQuery | NFA) -> NFA:
    return q if isinstance(q, NFA) else compile_query(q)


def _names(nfa: NFA) -> dict[str, str]:
    return {iri: name for name, iri in nfa.query.streams.items()}


def _label(nfa: NFA, e: Edge) -> str:
    return "ε" if e.theta is None else e.theta.render(_names(nfa))


def _target(nfa: NFA, e: Edge) -> str:
    return "(run deleted)" if e.dst is None else nfa.states[e.dst].name


def _engine(nfa: NFA) -> str:
    q = nfa.query
    # (a traced query, as rsep serve's, runs on the general engine: the runtime's choice)
    if chain_eligible(nfa, GPMEvaluator(q.gpms.values(), {}), engine_options(q),
                      q.options.get("trace")):
        return "chain (plain GPMs under , and ;: each run is one path)"
    return "NFA_scep (Algorithms 1-9)"


def _native(nfa: NFA) -> str:
    """Whether ``rsep run`` takes the native path (rsep.spaseq.native), and why, as
    rsep.cli.explain says it of a windowed query."""
    q = nfa.query
    plan = native_plan(q, GPMEvaluator(q.gpms.values(), {}), engine_options(q),
                       q.options.get("trace"))
    if isinstance(plan, str):
        return f"native: not taken: {plan}"
    missing = available()
    if missing is not None:
        return f"native: not taken: {missing}"
    return ("native: taken by `rsep run` over one stream file with --format jsonl or tsv and "
            f"no --graph, --until, --trace or time option: {plan.describe()}")


def _projection(q: SpaseqQuery) -> str:
    """The SELECT clause as the query has it (V, Def. 16), expressions written back."""
    head = "SELECT DISTINCT" if q.distinct else "SELECT"
    if q.select is None:
        return f"{head} * (every variable of the GPMs: " + \
            " ".join("?" + v for v in q.variables) + ")"
    exprs = {v: text for v, text, _ in q.expressions}
    return head + " " + " ".join(f"({exprs[v]} AS ?{v})" if v in exprs else f"?{v}"
                                 for v in q.select)


def to_text(q: SpaseqQuery | NFA) -> str:
    """States, edges with their predicates (U, op, P), stream names and the GPMs."""
    nfa = _nfa(q)
    query = nfa.query
    lines = [f"SEQ ({query.seq.render()})"
             + (f"  WITHIN {query.within.text}" if query.within else "  (no WITHIN: one window)")]
    lines.append(_projection(query))
    lines.append("streams: " + ", ".join(f"{n} = <{iri}>" for n, iri in query.streams.items()))
    if nfa.partition_key:
        lines.append("run index by value of: " + " ".join("?" + v for v in nfa.partition_key))
    key, why = partition_key(query)
    lines.append(f"partition key: ?{key} ({why})" if key else f"partition key: none ({why})")
    lines.append("engine: " + _engine(nfa))
    lines.append(_native(nfa))
    for st in nfa.states:
        head = f"{st.name} ({st.kind})"
        if st.atom is not None:
            head += f"  waits for {st.atom.render()}"
            if st.op_in is not None:
                head += f" after {_STRATEGY[st.op_in]}"
        lines.append(head)
        for e in st.edges:
            role = _ROLE[e.role]
            lines.append(f"  {st.name} -> {_target(nfa, e)}  {_label(nfa, e)}"
                         + (f"  {role}" if role else ""))
    lines.append("GPMs:")
    for g in query.gpms.values():
        lines.append(f"  {g.name} ON {g.stream_name}: {' '.join(g.pattern.split())}")
        if g.stateful_filters:
            lines.append("    FILTERs on earlier GPMs' variables (joined first): "
                         + ", ".join(g.stateful_filters))
        if g.background:
            lines.append("    background graphs: " + ", ".join(f"<{b}>" for b in g.background))
    return "\n".join(lines) + "\n"


def _dot_string(s: str) -> str:
    return '"' + re.sub(r'(["\\])', r"\\\1", s) + '"'


def to_dot(q: SpaseqQuery | NFA, name: str = "nfa_scep") -> str:
    """Graphviz DOT: states as circles (x_f doubled), edges labelled with their predicates."""
    nfa = _nfa(q)
    out = [f"digraph {_dot_string(name)} {{", "  rankdir=LR;", '  node [shape=circle];',
           '  start [shape=point];', f"  start -> {nfa.initial.name};"]
    for st in nfa.states:
        shape = "doublecircle" if st.kind == "final" else "circle"
        out.append(f"  {st.name} [shape={shape}];")
    dead = 0
    for st in nfa.states:
        for e in st.edges:
            attrs = [f"label={_dot_string(_label(nfa, e))}"]
            if e.role in ("epsilon", "ignore"):
                attrs.append("style=dashed")
            if e.dst is None:
                dead += 1
                out.append(f"  dead{dead} [shape=point];")
                attrs.append("color=red")
                target = f"dead{dead}"
            else:
                target = nfa.states[e.dst].name
            out.append(f"  {st.name} -> {target} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def explain(q: SpaseqQuery | NFA, fmt: str = "text") -> str:
    """``rsep explain``'s output for a SPASEQ query: ``fmt`` is "text" or "dot"."""
    if fmt == "dot":
        return to_dot(q)
    if fmt == "text":
        return to_text(q)
    raise ValueError(f"unknown format {fmt!r} (text or dot)")
