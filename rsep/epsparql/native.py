"""The native path of an EP-SPARQL SEQ (issue 50): read, matched and written on integer ids
in Rust (rsep._core: native/src/source.rs and epsparql.rs), terms decoded only for output;
the stream file is read in parts as the engine goes, each instant's events let go of once
evaluated and the term dictionary swept between instants (the ids the kept solutions and
goals hold kept), so a run's memory is bounded by the engine's state, not by the file.

:func:`native_plan` is its planner. It takes a SELECT of variables (no DISTINCT, no
expression) over a SEQ of one-pattern BGPs (003 Sec. 4.2's SeqJoin, as the parser nests
it: ``P1 SEQ P2 SEQ P3`` is ``(P1 SEQ P2) SEQ P3``; a triple pattern of variables and IRIs,
no blank node), under at most one FILTER that is a conjunction (``&&``) of comparisons
(``<, <=, >, >=, =, !=``) of variables, xsd:integer, xsd:decimal or xsd:double literals,
``getDURATION()`` and ``+``, ``-``, ``*`` of those, over one stream, under:

* ``unrestricted``: every combination, as rsep.epsparql.delta's plan evaluates it (the
  k-th pattern's matches at an instant joined with the kept solutions of the operands
  before it);
* ``etalis-chronological`` / ``etalis-recent``: rsep.epsparql.etalis's ``Machine`` on the
  query's binarised ETALIS rules (seq, where and event rules; a duration bound is the rule
  window, any other FILTER a where rule), step by step, goals and labels as it keeps them;
* RSEP-QL's formal ``chronological`` / ``recent`` (native/src/formal.rs): as
  rsep.epsparql.policy's ``PolicyState`` evaluates them (seqindex.py's indexes, the
  reference evaluator for other shapes), RSEP-QL's Eq. (10) / (11) at every SEQ over the
  window's unconsumed occurrences, the FILTER applied before consumption, decisions
  deferred to the instant an occurrence leaves the window, part by part when a variable
  occurs in every pattern (the parts in the order of their terms' text), selecting by
  native/src/policy.rs, which RSEP-QL's MATCH on ids selects by too.

For anything else it says why not, and the query runs as before: CONSTRUCT rules and ASK,
background graphs, a BGP of
several patterns, any other operator (AND, OPTIONAL, UNION, EQUALS, OPTIONALSEQ, a SEQ with
a condition), a FILTER inside an operand or of anything else (getSTARTTIME(),
getENDTIME(), functions, division, a duration literal), a literal or blank node in a
triple pattern, an ETALIS program with other rules (``and`` of a group's patterns,
``equals``) or a where rule reading getDURATION().

:func:`run` then runs such a query over one stream file, or returns why it did not: the
native reader takes only files of the common shape with integer point times
(native/src/stream.rs: the abstract time today's path reads there; a refusal of the reader
found late, after rows were written, leaves nothing to keep), and the engine refuses
an input on which it would not write what today's path writes, byte for byte: a comparison
of values rsep/sparql/filters.py does not decide itself or of anything but those numbers,
arithmetic on anything but integers, an integer overflow. Terms are compared and written as
the stream file gives them (today's EP-SPARQL path reads each triple's terms in N-Triples
form, not through a store). ``RSEP_PURE=1`` turns the path off (the pure build runs Python
only), and so does ``RSEP_NATIVE=0`` alone (today's path with the compiled build).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rsep.algebra.epsparql import (
    BGP,
    EpSparqlQuery,
    EtalisPolicy,
    Expr,
    Filter,
    Node,
    Project,
    SeqJoin,
    Var,
)
from rsep.algebra.events import FROM_VAR, TO_VAR, Selection
from rsep.algebra.expression import Expression, Variable
from rsep.epsparql.etalis_rules import Atom, Temp, Unsupported, binarise, compile_query, tr_clauses
from rsep.epsparql.policy import partition_variable
from rsep.epsparql.rewrites import mismatched_bounds
from rsep.epsparql.rewrites import window as query_window
from rsep.sparql.numeric import Cmp, Operand, numeric_conjunction
from rsep.stream import native as native_core
from rsep.stream.native import Outcome as Outcome
from rsep.stream.native import core as core
from rsep.stream.time import TimeKind

NATIVE = "native"
# RSEP-QL's formal policies (000 Eqs. (10) / (11), Appendix A): native/src/formal.rs's modes
_FORMAL = {Selection.CHRONOLOGICAL: "chronological", Selection.RECENT: "recent"}

MAX_PATTERNS = 8  # the SEQ's operands
_DURATION = "__d"  # getDURATION() (the substitution sigma of 003 Sec. 4.2)

# per position: ("var", number) or ("term", the IRI in N-Triples syntax)
Slots = tuple[tuple[str, int | str], ...]


def available() -> str | None:
    """Why the native core cannot run this path here, or None."""
    return native_core.available("epsparql_stream", "EP-SPARQL engine")


def refusal(queries: Sequence[object], files: Sequence[object]) -> str | None:
    """Why a run of these registered queries over these stream readers does not take the
    native path, or None (rsep.stream.native.refusal's rules)."""
    return native_core.refusal(queries, files, "not an EP-SPARQL query", available())


@dataclass(frozen=True)
class NativePlan:
    """What native/src/epsparql.rs runs for a query."""

    mode: str  # unrestricted, etalis-chronological or etalis-recent
    vars: int
    patterns: tuple[Slots, ...]  # unrestricted: the SEQ's operands, in order
    filter: tuple[Cmp, ...]  # unrestricted: the FILTER's conjuncts
    # ETALIS: per rule (op, head's number, where conditions, shared variables); per
    # clause (its atom's slots or None, its intermediate event's number or None, action,
    # rule index)
    rules: tuple[tuple[str, int, tuple[Cmp, ...], tuple[int, ...]], ...]
    clauses: tuple[tuple[Slots | None, int | None, str, int], ...]
    project: tuple[tuple[str, int | None], ...]  # (output name, variable number or None)
    # chronological / recent: policy.py's partition variable's number, or None
    part: int | None = None

    def describe(self) -> str:
        if self.mode == "unrestricted":
            how = "every combination, as the incremental evaluator's plan"
        elif self.mode in _FORMAL.values():
            how = ("RSEP-QL's Eq. (10) / (11) at every SEQ over the window's unconsumed "
                   "occurrences, consumption on output, decisions deferred to the instant an "
                   "occurrence leaves the window, as rsep.epsparql.policy's PolicyState"
                   + (" part by part" if self.part is not None else ""))
        else:
            how = "ETALIS's binarised rules step by step, as rsep.epsparql.etalis's Machine"
        return (f"native ({self.mode}: {how}): read, matched and written on integer ids in Rust "
                "(rsep._core), terms decoded only for output; a stream file the native reader "
                "does not take or a value a FILTER does not compare exactly run as today's path")


def native_plan(query: EpSparqlQuery) -> NativePlan | str:
    """The native plan of a registered EP-SPARQL query, or why it runs on today's path."""
    if query.construct:
        return "a CONSTRUCT rule (its results re-enter the stream)"
    if query.ask:
        return "ASK"
    if query.background:
        return "background graphs"
    if isinstance(query.policy, Selection) and query.policy is not Selection.UNRESTRICTED \
            and query.policy not in _FORMAL:
        return f"the {query.policy.name.lower()} policy"
    top = query.pattern
    if not isinstance(top, Project):
        return "not a SELECT"
    if top.distinct:
        return "SELECT DISTINCT"
    if top.items is None or any(e is not None for _, e in top.items):
        return "SELECT * or SELECT expressions"
    names = [v for v, _ in top.items]
    if tuple(names) != tuple(query.select):
        return "a SELECT clause other than the query's output variables"
    if len(set(names)) != len(names):
        return "a variable selected twice"
    if FROM_VAR in names or TO_VAR in names:
        return f"a variable named ?{FROM_VAR} or ?{TO_VAR}"
    cond: Expr | None = None
    n: Node = top.arg
    if isinstance(n, Filter):
        cond, n = n.cond, n.arg
    leaves: list[tuple] = []
    while isinstance(n, SeqJoin):
        if n.cond is not None:
            return "a SEQ with a condition"
        right = n.right
        if not isinstance(right, BGP) or len(right.patterns) != 1:
            return "a SEQ operand other than one triple pattern"
        leaves.append(right.patterns[0])
        n = n.left
    if not isinstance(n, BGP) or len(n.patterns) != 1:
        return "not a SEQ of one-triple-pattern operands (under at most one FILTER)"
    leaves.append(n.patterns[0])
    leaves.reverse()
    if len(leaves) < 2:
        return "no SEQ"
    if len(leaves) > MAX_PATTERNS:
        return f"a SEQ of more than {MAX_PATTERNS} patterns"
    numbers: dict[str, int] = {}
    patterns: list[Slots] = []
    for tp in leaves:
        slots: list[tuple[str, int | str]] = []
        for x in tp:
            if isinstance(x, Var):
                if x.name.startswith("_"):
                    return f"a blank node or internal variable in a triple pattern (?{x.name})"
                slots.append(("var", numbers.setdefault(x.name, len(numbers))))
            elif isinstance(x, str) and x.startswith("<") and x.endswith(">"):
                slots.append(("term", x))
            else:
                return f"a term other than a variable or an IRI in a triple pattern ({x})"
        patterns.append(tuple(slots))
    project = tuple((v, numbers.get(v)) for v in names)
    if isinstance(query.policy, EtalisPolicy):
        return _etalis_plan(query, numbers, patterns, project)
    conj: list[Cmp] = []
    if cond is not None:
        if cond.tree is None:
            return "a FILTER given as text alone"
        got = _conjunction(cond.tree, numbers, duration=True)
        if isinstance(got, str):
            return f"FILTER {cond.text}: {got}"
        conj = got
    if query.policy in _FORMAL:
        # policy.py's parts: the least variable of every triple pattern, its values' order
        part = partition_variable(query.pattern)
        return NativePlan(_FORMAL[query.policy], len(numbers), tuple(patterns), tuple(conj), (),
                          (), project, numbers[part] if part is not None else None)
    return NativePlan("unrestricted", len(numbers), tuple(patterns), tuple(conj), (), (), project)


def _etalis_plan(query: EpSparqlQuery, numbers: dict[str, int], patterns: list[Slots],
                 project: tuple[tuple[str, int | None], ...]) -> NativePlan | str:
    assert isinstance(query.policy, EtalisPolicy)
    try:
        program = compile_query(query)
    except Unsupported as e:
        return f"not an ETALIS rule: {e}"
    rules = binarise(program)
    index = {id(r): k for k, r in enumerate(rules)}
    by_head = {r.head: r for r in rules}

    def variables(ref: object) -> set[str]:
        if isinstance(ref, Atom):
            return {t.name for t in ref.pattern if isinstance(t, Var)}
        assert isinstance(ref, Temp)
        r = by_head[ref]
        return variables(r.left) | (variables(r.right) if r.right is not None else set())

    out_rules: list[tuple[str, int, tuple[Cmp, ...], tuple[int, ...]]] = []
    for r in rules:
        if r.op not in ("seq", "where", "event"):
            return f"an ETALIS {r.op} rule (the native path runs seq, where and event rules)"
        conds: list[Cmp] = []
        for c in r.conds:
            if c.tree is None:
                return "a where condition given as text alone"
            got = _conjunction(c.tree, numbers, duration=False)
            if isinstance(got, str):
                return f"where ({c.text}): {got}"
            conds += got
        shared: tuple[int, ...] = ()
        if r.op == "seq":
            assert r.right is not None
            both = variables(r.left) & variables(r.right)
            if not both <= numbers.keys():
                return "a seq rule over variables not in the patterns"
            shared = tuple(numbers[v] for v in sorted(both))
        out_rules.append((r.op, r.head.n, tuple(conds), shared))
    clauses: list[tuple[Slots | None, int | None, str, int]] = []
    for cl in tr_clauses(rules):
        if cl.action not in ("insert", "check", "where", "event"):
            return f"an ETALIS clause {cl.action} (the native path runs seq, where and event rules)"
        trig = cl.trigger
        if isinstance(trig, Atom):
            slots: list[tuple[str, int | str]] = []
            for x in trig.pattern:
                if isinstance(x, Var):
                    if x.name not in numbers:
                        return f"an atom's variable ?{x.name} not in the patterns"
                    slots.append(("var", numbers[x.name]))
                elif isinstance(x, str) and x.startswith("<") and x.endswith(">"):
                    slots.append(("term", x))
                else:
                    return f"an atom's term {x}"
            clauses.append((tuple(slots), None, cl.action, index[id(cl.rule)]))
        else:
            clauses.append((None, trig.n, cl.action, index[id(cl.rule)]))
    return NativePlan(query.policy.value, len(numbers), tuple(patterns), (), tuple(out_rules),
                      tuple(clauses), project)


def _conjunction(e: Expression, numbers: dict[str, int], duration: bool) -> list[Cmp] | str:
    """A FILTER as a conjunction of comparisons of numeric expressions of the patterns'
    variables and (``duration``) getDURATION(), or why the native path does not take it."""
    def variable(v: Variable) -> Operand | str:
        if v.name == _DURATION:
            if not duration:
                return "getDURATION() in an ETALIS where condition"
            return ("d",)
        if v.name not in numbers:
            return f"?{v.name} is bound by no triple pattern (or is getSTARTTIME() / getENDTIME())"
        return (f"v{numbers[v.name]}",)

    return numeric_conjunction(
        e, variable, not_comparison="not a comparison of numbers (or a conjunction of those)",
        other_term="not a comparison of variables, getDURATION() and xsd:integer, xsd:decimal "
                   "or xsd:double literals (with + - *)")


# The last run's outcome (the CLI's, for tests): whether the native path ran, and if not why
LAST: Outcome | None = None


def record(outcome: Outcome) -> None:
    """The CLI's run ended so (:data:`LAST`)."""
    global LAST
    LAST = outcome


def run(plan: NativePlan, query: EpSparqlQuery, path: str, points: tuple[str, ...],
        max_record: int, time_unit_ms: int | None, max_window_triples: int, max_results: int,
        out_path: str, fmt: str = "jsonl") -> Outcome:
    """Run the query over the stream file at ``path``, writing its complex events to
    ``out_path`` in ``fmt`` (jsonl or tsv, as rsep.runtime.sinks writes them, or ``values``:
    each one's values and interval, as rsep bench's worker writes them); or say why not
    (then ``out_path`` holds nothing to keep). The signature is rsep.windows.native.run's,
    which rsep.cli.run calls alike; the window limits do not bound an EP-SPARQL run."""
    if fmt == "tsv" and {"time", "op"} & {name for name, _ in plan.project}:
        return Outcome("a column named time or op in --format tsv")
    # the native reader's times are integers: the abstract time of today's path
    why = mismatched_bounds(query.pattern, TimeKind.ABSTRACT, time_unit_ms)
    if why:
        return Outcome(f"the time bound: {why} (today's path reports it)")
    window: tuple[float, bool] | None = None
    if plan.mode in _FORMAL.values():
        # the query's window (rewrites.window: the duration bound of its FILTERs), which
        # PolicyState applies as ETALIS's window
        h, strict = query_window(query.pattern, TimeKind.ABSTRACT)
        window = None if h == float("inf") else (float(h), strict)
    elif plan.mode != "unrestricted":
        try:
            h, strict = compile_query(query).window(TimeKind.ABSTRACT)
        except Unsupported as e:
            return Outcome(f"the rule window: {e} (today's path reports it)")
        window = None if h == float("inf") else (float(h), strict)
    # read in parts as the engine goes (native/src/source.rs), every term as the file
    # gives it
    src, why = native_core.open_stream(path, points, max_record, None, False)
    if src is None:
        return Outcome(why)

    def slots(tp: Slots) -> list[tuple[str, int | None]]:
        return [("var", int(v)) if kind == "var" else ("id", src.id(str(v))) for kind, v in tp]

    def cmps(cs: tuple[Cmp, ...]) -> list[tuple[list[str], str, list[str]]]:
        return [(list(a), op, list(b)) for a, op, b in cs]

    if plan.mode in _FORMAL.values():
        refused, instants, rows = core().epsparql_formal_stream(
            src, plan.mode.upper(), plan.vars, [slots(p) for p in plan.patterns],
            cmps(plan.filter), window, plan.part, list(plan.project), fmt, out_path)
        return native_core.finished(src, refused, instants, rows)
    refused, instants, rows = core().epsparql_stream(
        src, plan.mode, plan.vars, [slots(p) for p in plan.patterns], cmps(plan.filter),
        [(op, head, cmps(conds), list(shared)) for op, head, conds, shared in plan.rules],
        [(slots(a) if a is not None else None, t, action, r) for a, t, action, r in plan.clauses],
        window, list(plan.project), fmt, out_path)
    return native_core.finished(src, refused, instants, rows)
