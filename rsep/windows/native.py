"""The native path of a windowed query (issue 47): read, windowed, matched and written on
integer ids in Rust (rsep._core: native/src/stream.rs, select.rs and bgp.rs), terms decoded
only for output.

:func:`native_plan` is its planner: it reads a query's maintained plan (rsep.windows.plan)
and pattern tree, and takes a ``SELECT`` whose WHERE clause is one ``WINDOW`` block of a
time window (RANGE / STEP), under window-close reports (``non-empty`` or not) and any R2S
operator, with no background graph, no FILTER outside the block and no HAVING, ORDER BY,
DISTINCT, LIMIT or OFFSET; the block is up to :data:`MAX_PATTERNS` triple patterns (no blank
node; IRIs, canonical literals and variables) with FILTERs each a comparison (``<, <=, >,
>=, =, !=``) of a variable with an xsd:integer, xsd:decimal or xsd:double literal, or a
conjunction of those; the query selects variables (or ``*``), or groups (GROUP BY variables,
or aggregates alone) with COUNT(*), COUNT(?v), COUNT(DISTINCT ?v), MIN(?v), MAX(?v),
SUM(?v), AVG(?v), SAMPLE(?v) and GROUP_CONCAT(?v; SEPARATOR=...) (or of STR(?v)). One
pattern alone with neither FILTER nor grouping runs on select.rs's operator, the rest on
bgp.rs's. For anything else it says why not, and the query runs as before.

:func:`run` then runs such a query over one stream file, or returns why it did not: the
native reader takes only files of the common shape with nothing to reject, and the
operators refuse an input on which rsep's own order of rows, a comparison they do not
decide exactly, or a limit of the run would come into play (see native/src/select.rs and
bgp.rs: the locality check failing, two solutions of one event for a block of several
patterns, an xsd:float or other number they do not compare exactly, MIN / MAX over mixed
datatypes or equal values of different terms, SUM / AVG / SAMPLE / GROUP_CONCAT of a value
rsep's mirror of pyoxigraph does not read, an xsd:float, an overflow), so what they write is what today's path
writes, byte for byte; on a refusal nothing is written and the caller runs today's path.
Literals pyoxigraph's store reads back in another form (``"100.0"^^xsd:double`` as
``"100"``) refuse a one-pattern run, and are replaced by their stored form for bgp.rs, as
today's path matches and writes them. ``RSEP_PURE=1`` turns the path off (the pure build
runs Python only), and so does ``RSEP_NATIVE=0`` alone (today's path with the compiled
build, as measured against it).
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyoxigraph as ox

from rsep.algebra import pattern as pt
from rsep.algebra.expression import And, Compare, Expression, Iri, Variable, signed_literal
from rsep.algebra.policy import R2S
from rsep.algebra.window import Boundary, WindowKind
from rsep.sparql.matcher import Canon
from rsep.sparql.pattern import triple_patterns
from rsep.stream import native as native_core
from rsep.stream.native import Outcome as Outcome
from rsep.stream.native import core as core
from rsep.stream.time import TimeError, TimeKind
from rsep.windows.plan import Plan
from rsep.windows.resolved import resolve

if TYPE_CHECKING:
    from rsep.algebra.policy import ReportPolicy
    from rsep.algebra.query import ContinuousQuery

NATIVE = "native"

MAX_PATTERNS = 8  # triple patterns of a block (each event's solutions by a nested loop)
# what bgp.rs folds (DISTINCT only for COUNT of a variable; STR(?v) only for GROUP_CONCAT)
NATIVE_AGGREGATES = ("COUNT", "MIN", "MAX", "SUM", "AVG", "SAMPLE", "GROUP_CONCAT")


def available() -> str | None:
    """Why the native core cannot run this path here, or None."""
    return native_core.available("select_window", "operator")


def refusal(queries: Sequence[object], files: Sequence[object]) -> str | None:
    """Why a run of these registered queries (rsep.runtime's) over these stream readers does
    not take the native path, or None (rsep.stream.native.refusal's rules). What ``rsep
    run`` (rsep.cli.run, which refuses options of its own besides) and the bench's rsep
    worker share."""
    return native_core.refusal(queries, files, "not a windowed query", available())


@dataclass(frozen=True)
class Bgp:
    """A window block of triple patterns, FILTERs and GROUP BY, as native/src/bgp.rs runs it."""

    # per pattern, per position: ("var", number) or ("term", the term in N-Triples syntax)
    patterns: tuple[tuple[tuple[str, int | str], ...], ...]
    vars: int
    # per pattern, as rsep's locality check reads it: per position an IRI or None, and the
    # positions whose terms it counts (none: the whole triple)
    checks: tuple[tuple[tuple[str | None, ...], tuple[int, ...]], ...]
    filters: tuple[tuple[int, str, str | None, float | None], ...]  # (_conditions)
    # (key variables, (aggregate, variable or None, DISTINCT, GROUP_CONCAT's separator),
    # implicit), or None: no grouping
    group: tuple[tuple[int, ...], tuple[tuple[str, int | None, bool, str, bool], ...],
                 bool] | None
    columns: tuple[tuple[str, str, int | None], ...]  # (name, "var" | "agg", number)


@dataclass(frozen=True)
class NativePlan:
    """What the native operator runs for a query."""

    window: str  # the window's IRI
    stream: str  # its stream's IRI
    # per position: ("var", number) or ("term", the term in N-Triples syntax)
    pattern: tuple[tuple[str, int | str], ...]
    # the pattern as rsep's locality check reads it (incremental.Pattern.consts): per
    # position an IRI (N-Triples) or None, anything (a variable, and a literal too)
    loose: tuple[str | None, ...]
    project: tuple[tuple[str, int | None], ...]  # (output name, variable number or None)
    r2s: R2S
    non_empty: bool
    # a block of several patterns, or FILTERs, or GROUP BY (native/src/bgp.rs); None: one
    # pattern alone (native/src/select.rs: pattern, loose and project above)
    bgp: Bgp | None = None

    def describe(self) -> str:
        if self.bgp is not None:
            return ("native: read, windowed, joined, filtered, grouped and written on integer "
                    "ids in Rust (rsep._core), terms decoded only for output; a stream file the "
                    "native reader does not take, a join term in two live events, an event with "
                    "two solutions of a block of several patterns, a value a FILTER or MIN / MAX "
                    "does not compare exactly, a value SUM / AVG / SAMPLE / GROUP_CONCAT does not "
                    "fold exactly (an xsd:float, an overflow...) or a limit reached run as "
                    "today's path")
        return ("native: read, windowed, matched and written on integer ids in Rust "
                "(rsep._core), terms decoded only for output; a stream file the native reader "
                "does not take (anything but timestamped graphs with nothing to reject), a "
                "matching triple in two live events or a limit reached run as today's path")


def native_plan(query: ContinuousQuery, maintained: Plan | str, report: ReportPolicy,
                r2s: R2S) -> NativePlan | str:
    """The native plan of a registered query, or why it runs on today's path."""
    if not isinstance(maintained, Plan):
        return f"not on the maintained path ({maintained})"
    p = maintained
    if p.form != "SELECT":
        return f"a {p.form} query (the native path takes SELECT)"
    if query.matches or query.calls_timestamp:
        return "a MATCH or timestamp() (the native path reads windows of triples alone)"
    ds = query.dataset
    if len(ds.windows) != 1 or ds.default_graphs or ds.named_graphs or p.background:
        return "more than one window, or background graphs"
    w = ds.windows[0]
    if w.spec.kind is not WindowKind.TIME or w.in_default:
        return "not a time window (RANGE / STEP) of its own"
    if not (report.window_close and not report.content_change and not report.on_arrival
            and report.periodic is None and not report.at):
        return f"report policy {report} (the native path takes window-close, non-empty)"
    blocks = p.analysis.blocks.get(w.iri, [])
    if len(blocks) != 1:
        return "not one WINDOW block"
    block = blocks[0]
    if block.pushed or p.filters:
        return "a FILTER outside the WINDOW block"
    if p.having or p.order or p.distinct or p.offset or p.limit is not None \
            or p.factors is not None:
        return "HAVING, ORDER BY, DISTINCT, LIMIT or OFFSET"
    tree = query.pattern
    inner = tree.pattern.arg if tree is not None and isinstance(tree.pattern, pt.WindowGraph) \
        else None
    bgp = inner.arg if isinstance(inner, pt.Filter) else inner
    if tree is None or not isinstance(tree.pattern, pt.WindowGraph) \
            or not isinstance(tree.pattern.window, Iri) or tree.pattern.window.value != w.iri \
            or not isinstance(bgp, pt.BGP) or bgp.triples != block.triples \
            or len(block.patterns) != len(block.triples):
        return "the WHERE clause is not WINDOW <w> { triple patterns and FILTERs }"
    if len(block.triples) > MAX_PATTERNS:
        return f"more than {MAX_PATTERNS} triple patterns"
    try:
        tps = triple_patterns(block.triples, dict(tree.prologue.prefixes))
    except Exception as e:  # (NotCompiled, a relative IRI: the maintained planner's refusals)
        return f"a term the native path does not read ({e})"
    numbers: dict[str, int] = {}
    patterns: list[tuple[tuple[str, int | str], ...]] = []
    for tp in tps:
        slots: list[tuple[str, int | str]] = []
        for x in tp:
            if isinstance(x, tuple):
                if x[1].startswith("_:"):
                    return "a blank node in a triple pattern"
                slots.append(("var", numbers.setdefault(x[1], len(numbers))))
            elif isinstance(x, ox.NamedNode):
                slots.append(("term", str(x)))
            elif isinstance(x, ox.Literal) and str(Canon().term(x)) == str(x):
                # (the store compares literals by value: a literal in canonical form is
                # matched by the same term alone, as the stream's literals are all
                # canonical here)
                slots.append(("term", str(x)))
            else:
                return f"a term the native path does not read ({x}: a literal not in canonical form)"
        patterns.append(tuple(slots))
    checks = tuple((tuple(None if c is None else str(c) for c in b.consts), b.tracked)
                   for b in block.patterns)
    filters: list[tuple[int, str, str | None, float | None]] = []
    for c in block.filters:
        got = _conditions(c.expr, numbers)
        if isinstance(got, str):
            return f"FILTER {c.text}: {got}"
        filters += got
    group: tuple[tuple[int, ...], tuple[tuple[str, int | None, bool, str, bool], ...], bool] | None \
        = None
    columns: list[tuple[str, str, int | None]] = []
    if p.keys is not None:
        aggs: list[tuple[str, int | None, bool, str, bool]] = []
        for a in p.aggregates:
            if a.name not in NATIVE_AGGREGATES or a.str_arg and a.name != "GROUP_CONCAT" \
                    or a.distinct and (a.name != "COUNT" or a.var is None):
                return (f"the aggregate {a.text} (the native path takes COUNT, COUNT(DISTINCT ?v), "
                        "MIN, MAX, SUM, AVG, SAMPLE and GROUP_CONCAT of a variable, and "
                        "GROUP_CONCAT(STR(?v)))")
            if a.var is not None and a.var not in numbers:
                return f"{a.text} of a variable the pattern does not bind"
            aggs.append((a.name, None if a.var is None else numbers[a.var], a.distinct,
                         a.separator, a.str_arg))
        if any(k not in numbers for k in p.keys):
            return "GROUP BY a variable the pattern does not bind"
        group = (tuple(numbers[k] for k in p.keys), tuple(aggs), p.implicit)
        for name, src in p.project:
            if src.startswith("__a") and src[3:].isdigit():
                columns.append((name, "agg", int(src[3:])))
            elif src in p.keys:
                columns.append((name, "var", numbers[src]))
            else:
                return f"?{name} is neither grouped nor an aggregate"
    else:
        if p.aggregates:
            return "aggregates without a grouping"
        columns = [(name, "var", numbers.get(src)) for name, src in p.project]
    if len(patterns) == 1 and not filters and group is None:
        # (one pattern alone: the operator of native/src/select.rs, rows from fragments)
        check = block.patterns[0]
        if check.tracked:
            return "the locality check counts terms, not whole triples"  # (never for one)
        return NativePlan(w.iri, w.stream, patterns[0],
                          tuple(None if c is None else str(c) for c in check.consts),
                          tuple((name, n) for name, _, n in columns), r2s, report.non_empty)
    return NativePlan(w.iri, w.stream, (), (), (), r2s, report.non_empty,
                      Bgp(tuple(patterns), len(numbers), checks, tuple(filters), group,
                          tuple(columns)))


XSD = "http://www.w3.org/2001/XMLSchema#"
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


def _conditions(e: Expression, numbers: dict[str, int]
                ) -> list[tuple[int, str, str | None, float | None]] | str:
    """A FILTER as a conjunction of ``?v op number`` (variable number, operator, the
    number's exact value as a decimal's lexical form when it is an integer or a decimal,
    its value as a double when a double holds it exactly), or why the native path does
    not take it."""
    if isinstance(e, And):
        left = _conditions(e.left, numbers)
        right = _conditions(e.right, numbers)
        if isinstance(left, str):
            return left
        return right if isinstance(right, str) else left + right
    if not isinstance(e, Compare) or e.op not in _FLIP:
        return "not a comparison of a variable with a number (or a conjunction of those)"
    op, var, lit = e.op, e.left, signed_literal(e.right)
    if not isinstance(var, Variable):
        op, var, lit = _FLIP[e.op], e.right, signed_literal(e.left)
    if not isinstance(var, Variable) or lit is None or lit.language is not None \
            or not isinstance(lit.datatype, Iri) \
            or lit.datatype.value not in (XSD + "integer", XSD + "decimal", XSD + "double"):
        return "not a comparison of a variable with an xsd:integer, xsd:decimal or xsd:double"
    if var.name not in numbers:
        return f"?{var.name} is not bound by the pattern"
    kind = lit.datatype.value[len(XSD):]
    text = lit.lexical.strip()
    try:
        if kind == "double":
            value = float(text)
            if not math.isfinite(value) or not _DOUBLE.fullmatch(text):
                return f"the double {lit.lexical}"
            return [(numbers[var.name], op, None, value)]
        if not (_INTEGER if kind == "integer" else _DECIMAL).fullmatch(text):
            return f"the {kind} {lit.lexical}"
        exact = decimal.Decimal(text)
    except (ValueError, decimal.InvalidOperation):
        return f"the {kind} {lit.lexical}"
    # (oxsdatatypes' decimal: 18 fractional digits, under 2^127 / 10^18)
    if exact.as_tuple().exponent < -18 or abs(exact) >= 10**20:  # type: ignore[operator]
        return f"the {kind} {lit.lexical}: beyond the decimals the native path compares"
    as_double = float(exact)
    # a double holds it exactly, and oxsdatatypes' conversion (its digits, once trailing
    # zeros are gone, as a double over a power of ten) gives that double: under 2^53
    digits = exact.normalize().as_tuple()
    mantissa = int("".join(map(str, digits.digits)) or "0")
    exact_double = decimal.Decimal(as_double) == exact and mantissa <= 2**53
    return [(numbers[var.name], op, format(exact, "f"), as_double if exact_double else None)]


_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?[0-9]*\.[0-9]+|[+-]?[0-9]+\.[0-9]*")
_DOUBLE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)[eE][+-]?[0-9]+")


# The last run's outcome (the CLI's, for tests and --stage-times-like questions): whether
# the native path ran, and if not why
LAST: Outcome | None = None


def record(outcome: Outcome) -> None:
    """The CLI's run ended so (:data:`LAST`)."""
    global LAST
    LAST = outcome


def run(plan: NativePlan, query: ContinuousQuery, path: str, points: tuple[str, ...],
        max_record: int, time_unit_ms: int | None, max_window_triples: int, max_results: int,
        out_path: str, fmt: str = "jsonl") -> Outcome:
    """Run the query over the stream file at ``path``, writing its results to ``out_path``
    in ``fmt`` (jsonl or tsv, as rsep.runtime.sinks writes them); or say why not (then
    ``out_path`` holds nothing to keep)."""
    ev, why, read_s = native_core.read(path, points, max_record)
    if ev is None:
        return Outcome(why)
    # literals whose form pyoxigraph's store may change: today's path matches, keys and
    # writes a literal as the store gives it back
    changed = native_core.store_forms(ev, Canon().term)
    if changed:
        if plan.bgp is None:
            return Outcome("a literal pyoxigraph's store reads back in another form: "
                           f"{changed[0][0]}")
        ev.restore(changed)
    w = query.dataset.windows[0]
    try:
        rw = resolve(w.spec, TimeKind.ABSTRACT, time_unit_ms)
    except TimeError as e:
        return Outcome(f"window {w.spec}: {e}")
    window = (rw.alpha, rw.beta, rw.offset, rw.origin, rw.boundary is Boundary.RIGHT_CLOSED)
    if plan.bgp is not None:
        b = plan.bgp
        refused, evaluations, rows = core().bgp_window(
            ev, window, plan.non_empty, plan.r2s.value,
            [[("var", v) if kind == "var" else ("id", ev.id(str(v))) for kind, v in tp]
             for tp in b.patterns], b.vars,
            [([(True, None) if c is None else (False, ev.id(c)) for c in consts], list(tracked))
             for consts, tracked in b.checks],
            list(b.filters), None if b.group is None else
            (list(b.group[0]), list(b.group[1]), b.group[2]), list(b.columns),
            (max_window_triples, max_results), fmt, out_path)
        if refused:
            return Outcome(refused)
        return Outcome("", len(ev), ev.triples(), evaluations, rows, read_s)
    pattern = [("var", v) if kind == "var" else ("id", ev.id(str(v))) for kind, v in plan.pattern]
    loose = [(True, None) if c is None else (False, ev.id(c)) for c in plan.loose]
    refused, evaluations, rows = core().select_window(
        ev, window, plan.non_empty, plan.r2s.value, pattern, loose, list(plan.project),
        (max_window_triples, max_results), fmt, out_path)
    if refused:
        return Outcome(refused)
    return Outcome("", len(ev), ev.triples(), evaluations, rows, read_s)
