"""The native path of RSEP-QL's MATCH (issue 50): read, matched and written on integer ids in
Rust (rsep._core: native/src/stream.rs, rsepql.rs and policy.rs), terms decoded only for
output.

:func:`native_plan` is its planner. It takes a MATCH-only ``SELECT`` (the MATCH alone in the
WHERE clause, its variables or ``?_from`` / ``?_to`` selected: the query's rows are the
MATCH's solutions, with no SPARQL), or a ``SELECT`` of variables whose group is the MATCH
and FILTERs that are conjunctions of comparisons (``<, <=, >, >=, =, !=``) of the BEPs'
variables, xsd:integer, xsd:decimal and xsd:double literals and ``+ - *`` of those (the
MATCH's solutions filtered as pyoxigraph filters their VALUES, in their order: the
comparisons decided as rsep/sparql/filters.py decides them, native/src/epsparql.rs's),
under the report a MATCH query has (on arrival) and any R2S operator, over landmark windows (``[LND t0]``, no STEP) of one stream, whose event
pattern is EVENT, SEQ, FIRST and LAST over BEPs of one triple pattern each (variables, IRIs
and literals in canonical form; no FILTER, no blank node), under any of 000's selection
policies (UNRESTRICTED, NAIVE, CHRONOLOGICAL, RECENT: Table 1's rows, consumption per
Appendix A). It evaluates what rsep.events.incremental's matcher evaluates, in its order:
an UNRESTRICTED pure sequence by its delta mode (each match found once and kept), anything
else by rsep.events.reference's equations over the BEPs' mappings (native/src/policy.rs:
the selection's one implementation). An ISTREAM / DSTREAM of an UNRESTRICTED pure sequence
is not taken (today's path keeps its bag from the matches that came and went, in an order
of its own). For anything else it says why not, and the query runs as before: MATCH inside
a larger WHERE clause (pyoxigraph joins its VALUES), another FILTER, time or count windows, a BEP of several
triple patterns or with FILTER, timestamp(), other report policies.

:func:`run` then runs such a query over one stream file, read in parts as the matcher goes
(native/src/source.rs: an item let go of once its BEPs' mappings are made, the terms of the
mappings kept held through the dictionary's sweeps), or returns why it did not: the
native reader takes only files of the common shape with integer point times, and the
operator refuses an input on which it would not write what today's path writes, byte for
byte: an item with two solutions of one BEP (rsep asks pyoxigraph then, whose order of an
item's solutions shows in the rows), a FILTER's value it does not decide exactly (anything
but those numbers, an integer overflow), an evaluation over ``--max-results``, a window over
``--max-window-triples``. Literals pyoxigraph's store gives back in another form are read
in that form, as today's path matches and writes them. ``RSEP_PURE=1`` turns the path off
(the pure build runs Python only), and so does ``RSEP_NATIVE=0`` alone (today's path with
the compiled build).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyoxigraph as ox

from rsep.algebra import pattern as pt
from rsep.algebra.events import (
    FROM_VAR,
    TO_VAR,
    BasicEventPattern,
    EventPattern,
    First,
    Last,
    Seq,
)
from rsep.algebra.expression import Variable
from rsep.algebra.pattern import BGP
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.selection import Selection
from rsep.algebra.window import WindowKind
from rsep.sparql.matcher import Canon
from rsep.sparql.numeric import Cmp, numeric_conjunction
from rsep.sparql.pattern import triple_patterns
from rsep.stream import native as native_core
from rsep.stream.native import Outcome as Outcome
from rsep.stream.native import core as core

if TYPE_CHECKING:
    from rsep.algebra.query import ContinuousQuery

NATIVE = "native"

MAX_BEPS = 8  # leaves of the event pattern

# per position: ("var", number) or ("term", the term in N-Triples syntax)
Slots = tuple[tuple[str, int | str], ...]


def available() -> str | None:
    """Why the native core cannot run this path here, or None."""
    return native_core.available("match_stream", "RSEP-QL MATCH engine")


def refusal(queries: Sequence[object], files: Sequence[object]) -> str | None:
    """Why a run of these registered queries over these stream readers does not take the
    native path, or None (rsep.stream.native.refusal's rules)."""
    return native_core.refusal(queries, files, "not an RSEP-QL MATCH query", available())


@dataclass(frozen=True)
class NativePlan:
    """What native/src/rsepql.rs runs for a query."""

    beps: tuple[tuple[Slots, int], ...]  # per BEP: its triple pattern, its window's t0
    expr: tuple[str, ...]  # the event pattern in postfix: b<n>, first, last, seq
    policy: Selection
    vars: int
    project: tuple[tuple[str, str, int | None], ...]  # (name, var | from | to, variable)
    r2s: R2S
    delta: bool  # an UNRESTRICTED pure sequence: the delta mode's order
    filter: tuple[Cmp, ...] = ()  # the FILTER of the MATCH's group: its comparisons
    join = None  # (rsep.cli.run asks: no join of windows here)

    def describe(self) -> str:
        how = ("each new match found once and kept, as the incremental matcher's delta mode"
               if self.delta else
               f"000's equations under {self.policy.name} over the BEPs' indexed mappings")
        return (f"native ({how}): each BEP's mappings on ids as its item enters the window, "
                "matched, selected and written in Rust (rsep._core), terms decoded only for "
                "output; a stream file the native reader does not take, an item with two "
                "solutions of a BEP, a value the FILTER does not compare exactly or a limit "
                "reached run as today's path")


def _postfix(e: EventPattern, numbers: dict[int, int], out: list[str]) -> None:
    if isinstance(e, BasicEventPattern):
        out.append(f"b{numbers[id(e)]}")
    elif isinstance(e, (First, Last)):
        _postfix(e.expr, numbers, out)
        out.append("first" if isinstance(e, First) else "last")
    elif isinstance(e, Seq):
        _postfix(e.left, numbers, out)
        _postfix(e.right, numbers, out)
        out.append("seq")
    else:
        raise TypeError(f"not an event pattern: {e!r}")


def _pure_sequence(e: EventPattern) -> bool:
    if isinstance(e, Seq):
        return _pure_sequence(e.left) and _pure_sequence(e.right)
    return isinstance(e, BasicEventPattern)


def native_plan(query: ContinuousQuery) -> NativePlan | str:
    """The native plan of a registered RSEP-QL query with MATCH, or why it runs on today's
    path."""
    if not query.matches:
        return "no MATCH"
    if len(query.matches) != 1 or query.form != "SELECT":
        return "not a MATCH-only SELECT (the MATCH joined with other patterns by pyoxigraph)"
    if query.calls_timestamp:
        return "timestamp()"
    if query.report != ReportPolicy(on_arrival=True):
        return f"report policy {query.report} (the native path takes a MATCH's, on arrival)"
    m = query.matches[0]
    ds = query.dataset
    if len({w.stream for w in ds.windows}) != 1:
        return "windows on more than one stream"
    t0s: dict[str, int] = {}
    for w in ds.windows:
        s = w.spec
        if s.kind is not WindowKind.LANDMARK or s.step is not None \
                or not isinstance(s.landmark, int) or isinstance(s.landmark, bool) \
                or s.landmark < 0:
            return f"the window {s.text} (the native path takes landmark windows [LND t0], t0 >= 0)"
        t0s[w.iri] = s.landmark
    tree = query.pattern
    if tree is None:
        return "a query with no pattern tree"
    prefixes = dict(tree.prologue.prefixes)
    leaves = m.expr.beps()
    if len(leaves) > MAX_BEPS:
        return f"more than {MAX_BEPS} BEPs"
    numbers: dict[int, int] = {}  # BEP (by identity) -> its number
    variables: dict[str, int] = {}
    beps: list[tuple[Slots, int]] = []
    canon = Canon()
    for b in leaves:
        if id(b) in numbers:
            continue
        if b.window not in t0s:
            return f"the BEP {b.name} reads no declared window"
        if b.filters is None or b.filters or not isinstance(b.tree, BGP) or len(b.tree.triples) != 1:
            return f"the BEP {b.name} is not one triple pattern (without FILTER)"
        try:
            (tp,) = triple_patterns(b.tree.triples, prefixes)
        except Exception as e:  # (NotCompiled: a path, a relative IRI; the matcher's refusals)
            return f"a term the native path does not read ({e})"
        slots: list[tuple[str, int | str]] = []
        for x in tp:
            if isinstance(x, tuple):
                if x[1].startswith("_:"):
                    return "a blank node in a triple pattern"
                if x[1] in (FROM_VAR, TO_VAR):
                    return f"a variable named ?{x[1]}"
                slots.append(("var", variables.setdefault(x[1], len(variables))))
            elif isinstance(x, ox.NamedNode):
                slots.append(("term", str(x)))
            elif isinstance(x, ox.Literal) and str(canon.term(x)) == str(x):
                slots.append(("term", str(x)))
            else:
                return f"a term the native path does not read ({x}: not in canonical form)"
        numbers[id(b)] = len(beps)
        beps.append((tuple(slots), t0s[b.window]))
    expr: list[str] = []
    _postfix(m.expr, numbers, expr)
    filters: list[Cmp] = []
    if query.match_projection is not None:
        names = query.match_projection or (
            tuple(m.expr.variables) + ((FROM_VAR, TO_VAR) if m.expose_interval else ()))
    else:
        got = _filtered(query, variables)
        if isinstance(got, str):
            return got
        names, filters = got
    project: list[tuple[str, str, int | None]] = []
    for name in names:
        if m.expose_interval and name == FROM_VAR:
            project.append((name, "from", None))
        elif m.expose_interval and name == TO_VAR:
            project.append((name, "to", None))
        else:
            project.append((name, "var", variables.get(name)))
    delta = m.selection is Selection.UNRESTRICTED and _pure_sequence(m.expr)
    if delta and query.r2s is not R2S.RSTREAM:
        return (f"{query.r2s.value} of an UNRESTRICTED sequence (today's path keeps its bag from "
                "the matches that came and went)")
    return NativePlan(tuple(beps), tuple(expr), m.selection, len(variables), tuple(project),
                      query.r2s, delta, tuple(filters))


def _filtered(query: ContinuousQuery, numbers: dict[str, int]
              ) -> tuple[tuple[str, ...], list[Cmp]] | str:
    """``SELECT ?v ... WHERE { MATCH ... FILTER (...) }``: the MATCH's solutions filtered, as
    pyoxigraph evaluates the FILTER over their VALUES, in their order; the projection and
    the FILTER's comparisons (a conjunction of comparisons of numeric expressions: the
    variables the BEPs bind, xsd:integer, xsd:decimal and xsd:double literals, ``+ - *``),
    or why the native path does not take it."""
    tree = query.pattern
    assert tree is not None  # (native_plan's)
    mods = tree.modifiers
    if not isinstance(tree.pattern, pt.Filter) or not isinstance(tree.pattern.arg, pt.MatchSlot) \
            or tree.values is not None:
        return "not a MATCH-only SELECT (the MATCH joined with other patterns by pyoxigraph)"
    if mods.distinct or mods.reduced or mods.group_by or mods.having or mods.order_by \
            or mods.limit is not None or mods.offset is not None:
        return "DISTINCT, REDUCED, GROUP BY, HAVING, ORDER BY, LIMIT or OFFSET"
    if not mods.projection or any(p.expr is not None for p in mods.projection):
        return "SELECT * or SELECT expressions over a FILTER"
    def variable(v: Variable) -> tuple[str, ...] | str:
        if v.name not in numbers:
            return f"?{v.name} in the FILTER is bound by no BEP"
        return (f"v{numbers[v.name]}",)

    out: list[Cmp] = []
    for cond in tree.pattern.conditions:
        got = numeric_conjunction(
            cond, variable,
            not_comparison="a FILTER that is not a comparison of numbers (or a conjunction of "
                           "those)",
            other_term="a FILTER of other terms than variables and xsd:integer, xsd:decimal "
                       "or xsd:double literals (with + - *)")
        if isinstance(got, str):
            return got
        out += got
    return tuple(p.var for p in mods.projection), out


# The last run's outcome (the CLI's, for tests): whether the native path ran, and if not why
LAST: Outcome | None = None


def record(outcome: Outcome) -> None:
    """The CLI's run ended so (:data:`LAST`)."""
    global LAST
    LAST = outcome


def run(plan: NativePlan, query: ContinuousQuery, path: str, points: tuple[str, ...],
        max_record: int, time_unit_ms: int | None, max_window_triples: int, max_results: int,
        out_path: str, fmt: str = "jsonl") -> Outcome:
    """Run the query over the stream file at ``path``, writing its rows to ``out_path`` in
    ``fmt`` (jsonl or tsv, as rsep.runtime.sinks writes them); or say why not (then
    ``out_path`` holds nothing to keep). The signature is rsep.windows.native.run's, which
    rsep.cli.run calls alike."""
    # literals whose form pyoxigraph's store changes are read as the store gives them back:
    # today's path matches and writes a literal so
    src, why = native_core.open_stream(path, points, max_record, Canon().term, False)
    if src is None:
        return Outcome(why)
    beps = [([("var", int(v)) if kind == "var" else ("id", src.id(str(v))) for kind, v in tp], t0)
            for tp, t0 in plan.beps]
    refused, evaluations, rows = core().match_stream(
        src, beps, list(plan.expr), plan.policy.value, plan.vars, list(plan.project),
        [(list(a), op, list(b)) for a, op, b in plan.filter], plan.r2s.value, (max_window_triples, max_results), fmt, out_path)
    if refused:
        return Outcome(refused)
    return Outcome("", len(src), src.triples(), evaluations, rows, src.stats()[2])
