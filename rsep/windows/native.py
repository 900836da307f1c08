"""The native path of a windowed query (issue 47): read, windowed, matched and written on
integer ids in Rust (rsep._core: native/src/source.rs, select.rs and bgp.rs), terms decoded
only for output; the stream file is read in parts as the windows go, the term dictionary
swept as they move, so a run's memory is bounded by its windows, not by the file.

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
bgp.rs's. Several windows (each of one such block, time windows on one slide, each on its
own stream or not), with triple patterns over the default graph (the query's FROM graphs)
and top-level FILTERs of the same kind, run on join.rs's operator (:class:`Join`; a FILTER
that reads one block's variables alone is that block's, as rsep pushes it there): the
windows' solutions joined with each other and the background's at every close, grouped
and ordered as rsep's maintained (or factorised) path does; no named background graph. For
anything else it says why not, and the query runs as before.

:func:`run` then runs such a query over one stream file (:func:`run_join` a join over one
file per stream, in the order given, and the engine's background graphs), or returns why
it did not: the
native reader takes only files of the common shape with nothing to reject, and the
operators refuse an input on which rsep's own order of rows, a comparison they do not
decide exactly, or a limit of the run would come into play (see native/src/select.rs and
bgp.rs: the locality check failing, two solutions of one event for a block of several
patterns, an xsd:float or other number they do not compare exactly, MIN / MAX over mixed
datatypes or equal values of different terms, SUM / AVG / SAMPLE / GROUP_CONCAT of a value
rsep's mirror of pyoxigraph does not read, an xsd:float, an overflow), so what they write is what today's path
writes, byte for byte; on a refusal (found as the file is read: possibly after rows were
written) what was written is thrown away and the caller runs today's path.
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyoxigraph as ox

from rsep.algebra import pattern as pt
from rsep.algebra.dataset import DEFAULT
from rsep.algebra.expression import And, Compare, Expression, Iri, Variable, signed_literal
from rsep.algebra.policy import R2S
from rsep.algebra.window import Boundary, WindowKind
from rsep.sparql.matcher import Canon
from rsep.sparql.pattern import triple_patterns
from rsep.stream import native as native_core
from rsep.stream.files import StreamFile
from rsep.stream.native import Outcome as Outcome
from rsep.stream.native import core as core
from rsep.stream.time import TimeError, TimeKind
from rsep.windows.incremental import Block
from rsep.windows.plan import Plan
from rsep.windows.resolved import resolve

if TYPE_CHECKING:
    from rsep.algebra.policy import ReportPolicy
    from rsep.algebra.query import ContinuousQuery

NATIVE = "native"

MAX_PATTERNS = 8  # triple patterns of a block (each event's solutions by a nested loop)
# what bgp.rs folds (DISTINCT only for COUNT of a variable; STR(?v) only for GROUP_CONCAT)
NATIVE_AGGREGATES = ("COUNT", "MIN", "MAX", "SUM", "AVG", "SAMPLE", "GROUP_CONCAT")

# a triple pattern: per position ("var", number) or ("term", the term in N-Triples syntax)
Slots = tuple[tuple[str, int | str], ...]
# GROUP BY as bgp.rs folds it: (key variables, (aggregate, variable or None, DISTINCT,
# GROUP_CONCAT's separator, of STR), implicit)
Grouping = tuple[tuple[int, ...], tuple[tuple[str, int | None, bool, str, bool], ...], bool]


def available() -> str | None:
    """Why the native core cannot run this path here, or None."""
    return native_core.available("bgp_stream", "operator")


def refusal(queries: Sequence[object], files: Sequence[object]) -> str | None:
    """Why a run of these registered queries (rsep.runtime's) over these stream readers does
    not take the native path, or None (rsep.stream.native.refusal's rules). What ``rsep
    run`` (rsep.cli.run, which refuses options of its own besides) and the bench's rsep
    worker share."""
    plan = getattr(queries[0], "native", None) if len(queries) == 1 else None
    if isinstance(plan, NativePlan) and plan.join is not None:
        return _join_refusal(plan.join, files)
    return native_core.refusal(queries, files, "not a windowed query", available())


def _join_refusal(join: Join, files: Sequence[object]) -> str | None:
    """rsep.stream.native.refusal's rules for a join of windows: one TriG or N-Quads stream
    file read as a file (in the syntax its name gives) for each stream its windows read, and
    no other."""
    missing = available()
    if missing is not None:
        return missing
    if any(type(f) is not StreamFile or f.text is not None
           or f.fmt != native_core.file_format(f.path) for f in files):
        return "a stream that is not a TriG or N-Quads file read in the syntax its name gives"
    if any(str(f.path) == "/dev/stdin" for f in files if isinstance(f, StreamFile)):
        # (a late refusal must run today's path over what was read: the join's merge keeps
        # no spool of standard input)
        return "standard input (the join reads regular files)"
    streams = [f.stream for f in files if isinstance(f, StreamFile)]
    if len(set(streams)) != len(streams) or set(streams) != {w.stream for w in join.windows}:
        return "not one stream file for each stream the windows read, and no other"
    if any(f.time.in_graph for f in files if isinstance(f, StreamFile)):
        return "times not read from the default graph's point-time triples"
    return None


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
class JoinWindow:
    """One window of a join (native/src/join.rs): its block, as bgp.rs reads one."""

    iri: str
    stream: str
    patterns: tuple[Slots, ...]
    checks: tuple[tuple[tuple[str | None, ...], tuple[int, ...]], ...]
    filters: tuple[tuple[int, str, str | None, float | None], ...]


@dataclass(frozen=True)
class Join:
    """Several windows joined with each other and with triple patterns over the default
    graph, as native/src/join.rs runs them (variables numbered across all of them)."""

    windows: tuple[JoinWindow, ...]
    background: tuple[Slots, ...]  # over the default graph (the query's FROM graphs)
    vars: int
    filters: tuple[tuple[int, str, str | None, float | None], ...]  # top-level
    group: Grouping | None
    columns: tuple[tuple[str, str, int | None], ...]


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
    # several windows, or background patterns (native/src/join.rs): window and stream above
    # are its first window's
    join: Join | None = None

    def describe(self) -> str:
        if self.join is not None:
            return ("native: the windows' stream files read in parts, merged by time into one "
                    "dictionary of integer ids swept as the windows go, the "
                    "background graph's triples interned in it and indexed, the windows' "
                    "solutions joined with each other and the background by hash joins at each "
                    "close, filtered, grouped and written in Rust (rsep._core), terms decoded "
                    "only for output; a stream file the native reader does not take, windows "
                    "of different slides, a join term in two live events, an event with two "
                    "solutions of a block of several patterns, a value a FILTER or MIN / MAX "
                    "does not compare exactly, a value SUM / AVG / SAMPLE / GROUP_CONCAT does "
                    "not fold exactly or a limit reached run as today's path")
        if self.bgp is not None:
            return ("native: read, windowed, joined, filtered, grouped and written on integer "
                    "ids in Rust (rsep._core), terms decoded only for output; groups kept as "
                    "solutions enter and leave the window (COUNT, COUNT DISTINCT, MIN / MAX by "
                    "monotonic deques, SUM / AVG of integers and decimals exactly, SAMPLE), a "
                    "group's SUM / AVG of a double and GROUP_CONCAT folded again at each close "
                    "in arrival order (their bytes depend on it); a stream file the "
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
    if not (report.window_close and not report.content_change and not report.on_arrival
            and report.periodic is None and not report.at):
        return f"report policy {report} (the native path takes window-close, non-empty)"
    if len(ds.windows) != 1 or ds.default_graphs or ds.named_graphs or p.background:
        return _join_plan(query, p, report, r2s)
    w = ds.windows[0]
    if w.spec.kind is not WindowKind.TIME or w.in_default:
        return "not a time window (RANGE / STEP) of its own"
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
    patterns = _slots(tps, numbers)
    if isinstance(patterns, str):
        return patterns
    checks = _checks(block)
    filters = _block_filters(block, numbers)
    if isinstance(filters, str):
        return filters
    got = _grouping(p, numbers)
    if isinstance(got, str):
        return got
    group, columns = got
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


def _join_plan(query: ContinuousQuery, p: Plan, report: ReportPolicy, r2s: R2S
               ) -> NativePlan | str:
    """The native plan of a query joining windows with each other and the background
    (native/src/join.rs), or why it runs on today's path."""
    ds = query.dataset
    if ds.named_graphs or any(g is not None for g, _ in p.background):
        return "a named background graph (the native path reads the default graph alone)"
    if p.having or p.order or p.distinct or p.offset or p.limit is not None:
        return "HAVING, ORDER BY, DISTINCT, LIMIT or OFFSET"
    tree = query.pattern
    if tree is None:
        return "no pattern tree"
    prefixes = dict(tree.prologue.prefixes)
    # every window's graph pattern is one block of triple patterns and FILTERs, wherever it
    # stands (the maintained plan took the WHERE clause: triples, windows' blocks, FILTERs)
    graphs = [n for n in pt.every_pattern(tree) if isinstance(n, (pt.Graph, pt.WindowGraph))]
    numbers: dict[str, int] = {}
    windows: list[JoinWindow] = []
    for w in ds.windows:
        if w.spec.kind is not WindowKind.TIME or w.in_default:
            return f"<{w.iri}> is not a time window (RANGE / STEP) of its own"
        blocks = p.analysis.blocks.get(w.iri, [])
        if len(blocks) != 1:
            return f"not one WINDOW block of <{w.iri}>"
        block = blocks[0]
        if len(block.triples) > MAX_PATTERNS:
            return f"more than {MAX_PATTERNS} triple patterns in a block"
        if len(block.patterns) != len(block.triples):
            return "a block the locality check reads otherwise"
        try:
            tps = triple_patterns(block.triples, prefixes)
        except Exception as e:  # (NotCompiled, a relative IRI: the maintained planner's refusals)
            return f"a term the native path does not read ({e})"
        patterns = _slots(tps, numbers)
        if isinstance(patterns, str):
            return patterns
        mine = {x[1] for tp in tps for x in tp if isinstance(x, tuple)}
        filters = _block_filters(block, {n: numbers[n] for n in mine})
        if isinstance(filters, str):
            return filters
        windows.append(JoinWindow(w.iri, w.stream, tuple(patterns), _checks(block),
                                  tuple(filters)))
    for g in graphs:
        arg = g.arg.arg if isinstance(g.arg, pt.Filter) else g.arg
        if not isinstance(arg, pt.BGP) or not any(arg.triples == b.triples for bs in
                                                   p.analysis.blocks.values() for b in bs):
            return "a window's graph pattern is not WINDOW <w> { triple patterns and FILTERs }"
    background = _slots([tp for _, tp in p.background], numbers, stored=True)
    if isinstance(background, str):
        return f"{background} (of the background)"
    top: list[tuple[int, str, str | None, float | None]] = []
    for c in p.filters:
        got = _conditions(c.expr, numbers)
        if isinstance(got, str):
            return f"FILTER {c.text}: {got}"
        top += got
    grouping = _grouping(p, numbers)
    if isinstance(grouping, str):
        return grouping
    group, columns = grouping
    if not numbers:
        return "no variable"
    first = windows[0]
    return NativePlan(first.iri, first.stream, (), (), (), r2s, report.non_empty, None,
                      Join(tuple(windows), tuple(background), len(numbers), tuple(top), group,
                           tuple(columns)))



def _slots(tps: Sequence[tuple], numbers: dict[str, int], stored: bool = False
           ) -> list[Slots] | str:
    """Triple patterns (the matcher's form) as the native operators read them, their
    variables numbered in ``numbers`` (new ones added), or why not. A window's literal is
    taken in canonical form only (the store compares literals by value: a literal in
    canonical form is matched by the same term alone, as the stream's literals are all
    canonical here); ``stored``: a background pattern's, whose literal is matched in the
    form pyoxigraph's store gives it, as today's path matches the background's."""
    patterns: list[Slots] = []
    for tp in tps:
        slots: list[tuple[str, int | str]] = []
        for x in tp:
            if isinstance(x, tuple):
                if x[1].startswith("_:"):
                    return "a blank node in a triple pattern"
                slots.append(("var", numbers.setdefault(x[1], len(numbers))))
            elif isinstance(x, ox.NamedNode):
                slots.append(("term", str(x)))
            elif isinstance(x, ox.Literal) and stored:
                slots.append(("term", str(Canon().term(x))))
            elif isinstance(x, ox.Literal) and str(Canon().term(x)) == str(x):
                slots.append(("term", str(x)))
            else:
                return f"a term the native path does not read ({x}: a literal not in canonical form)"
        patterns.append(tuple(slots))
    return patterns


def _checks(block: Block) -> tuple[tuple[tuple[str | None, ...], tuple[int, ...]], ...]:
    """The block's patterns as rsep's locality check reads them (Bgp.checks)."""
    return tuple((tuple(None if c is None else str(c) for c in b.consts), b.tracked)
                 for b in block.patterns)


def _block_filters(block: Block, numbers: dict[str, int]
                   ) -> list[tuple[int, str, str | None, float | None]] | str:
    """The block's FILTERs (its own and those pushed into it) as bgp.rs reads them."""
    filters: list[tuple[int, str, str | None, float | None]] = []
    for c in block.filters:
        got = _conditions(c.expr, numbers)
        if isinstance(got, str):
            return f"FILTER {c.text}: {got}"
        filters += got
    return filters



def _grouping(p: Plan, numbers: dict[str, int]
              ) -> tuple[Grouping | None, list[tuple[str, str, int | None]]] | str:
    """The query's GROUP BY and aggregates as bgp.rs folds them (None: no grouping) and its
    output columns, or why the native path does not take them."""
    group: Grouping | None = None
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
    return group, columns


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
    w = query.dataset.windows[0]
    try:
        rw = resolve(w.spec, TimeKind.ABSTRACT, time_unit_ms)
    except TimeError as e:
        return Outcome(f"window {w.spec}: {e}")
    window = (rw.alpha, rw.beta, rw.offset, rw.origin, rw.boundary is Boundary.RIGHT_CLOSED)
    if plan.bgp is None:
        return _select(plan, path, points, max_record, window, max_window_triples,
                       max_results, out_path, fmt)
    # literals whose form pyoxigraph's store may change: today's path matches, keys and
    # writes a literal as the store gives it back, and so does this operator
    src, why = native_core.open_stream(path, points, max_record, Canon().term, False)
    if src is None:
        return Outcome(why)
    b = plan.bgp
    refused, evaluations, rows = core().bgp_stream(
        src, window, plan.non_empty, plan.r2s.value,
        [[("var", v) if kind == "var" else ("id", src.id(str(v))) for kind, v in tp]
         for tp in b.patterns], b.vars,
        [([(True, None) if c is None else (False, src.id(c)) for c in consts], list(tracked))
         for consts, tracked in b.checks],
        list(b.filters), None if b.group is None else
        (list(b.group[0]), list(b.group[1]), b.group[2]), list(b.columns),
        (max_window_triples, max_results), fmt, out_path)
    return native_core.finished(src, refused, evaluations, rows)


def run_join(plan: NativePlan, query: ContinuousQuery, paths: Sequence[tuple[str, str]],
             graphs: Mapping[str, Sequence[ox.Triple]], points: tuple[str, ...],
             max_record: int, time_unit_ms: int | None, max_window_triples: int,
             max_results: int, out_path: str, fmt: str = "jsonl") -> Outcome:
    """Run a join of windows (``plan.join``) over the stream files ``paths`` ((stream IRI,
    path), in the order given: merged in that order on equal times, as today's path merges
    them) and the background ``graphs`` (the engine's, by IRI), writing its results to
    ``out_path`` in ``fmt``; or say why not (then ``out_path`` holds nothing to keep)."""
    j = plan.join
    assert j is not None  # (a join's plan)
    # read in parts as the windows go (memory bounded by the windows, not the files); a
    # literal whose form pyoxigraph's store changes is read as the store gives it back
    try:
        ev = core().open_streams([path for _, path in paths], list(points), max_record,
                                 native_core.STREAM_CHUNK, native_core.SWEEP_TERMS,
                                 formats=[native_core.file_format(path) for _, path in paths])
    except ValueError as e:
        return Outcome(f"the native reader does not take {e}")
    canon = Canon()
    ev.set_forms(lambda unsure: native_core.forms(unsure, canon.term), False)
    order = [iri for iri, _ in paths]
    spec: dict[str, tuple[int, int, bool]] = {}
    grids = set()
    for w in query.dataset.windows:
        try:
            rw = resolve(w.spec, TimeKind.ABSTRACT, time_unit_ms)
        except TimeError as e:
            return Outcome(f"window {w.spec}: {e}")
        spec[w.iri] = (rw.alpha, rw.offset, rw.boundary is Boundary.RIGHT_CLOSED)
        grids.add((rw.beta, rw.origin))
    if len(grids) != 1:
        # (today's path evaluates at every window's closes, each window at its own)
        return Outcome("windows of different slides or grid origins")
    grid = grids.pop()
    # the default graph as today's path reads it (rsep.runtime.windowed: the FROM graphs, or
    # the engine's default one), de-duplicated, the triples of the patterns' predicates,
    # each object in the form pyoxigraph's store gives it
    ds = query.dataset
    sources = ds.default_graphs or ([DEFAULT] if DEFAULT in graphs else [])
    preds = {tp[1] for tp in j.background}
    anyp = any(p[0] == "var" for p in preds)
    names = {v for kind, v in preds if kind == "term"}
    rows = [(str(t.subject), str(t.predicate), str(canon.term(t.object)))
            for t in dict.fromkeys(t for g in sources for t in graphs.get(g, ()))
            if anyp or str(t.predicate) in names]
    try:
        ev.set_graph(rows)
    except ValueError as e:  # (a term oxrdf's N-Triples syntax does not read: a quoted triple)
        return Outcome(f"a background term the native path does not read ({e})")

    def slots(tp: Slots) -> list[tuple[str, int | None]]:
        return [("var", int(v)) if kind == "var" else ("id", ev.intern(str(v))) for kind, v in tp]
    windows = []
    for jw in j.windows:
        alpha, offset, right = spec[jw.iri]
        windows.append(((alpha, offset, right), order.index(jw.stream),
                        [slots(tp) for tp in jw.patterns],
                        [([(True, None) if c is None else (False, ev.intern(c)) for c in consts],
                          list(tracked)) for consts, tracked in jw.checks],
                        list(jw.filters)))
    refused, evaluations, rows_out = core().join_window(
        ev, grid, plan.non_empty, plan.r2s.value, windows, [slots(tp) for tp in j.background],
        j.vars, list(j.filters), None if j.group is None else
        (list(j.group[0]), list(j.group[1]), j.group[2]), list(j.columns),
        (max_window_triples, max_results), fmt, out_path)
    if refused:
        return Outcome(refused)
    return Outcome("", len(ev), ev.triples(), evaluations, rows_out, ev.stats()[2])


def _select(plan: NativePlan, path: str, points: tuple[str, ...], max_record: int,
            window: tuple[int, int, int, int, bool], max_window_triples: int, max_results: int,
            out_path: str, fmt: str) -> Outcome:
    """A SELECT of one triple pattern (native/src/select.rs), over the file read in parts
    as the windows go (native/src/source.rs): memory bounded by the windows, not the file.
    A refusal found late (a record to reject, a literal the store reads back in another
    form) comes after rows were written, which the caller throws away as any refusal's."""
    # literals whose form pyoxigraph's store changes: today's path matches, keys and writes
    # a literal as the store gives it back, which this operator does not (it refuses)
    src, why = native_core.open_stream(path, points, max_record, Canon().term, True)
    if src is None:
        return Outcome(why)
    pattern = [("var", v) if kind == "var" else ("id", src.id(str(v))) for kind, v in plan.pattern]
    loose = [(True, None) if c is None else (False, src.id(c)) for c in plan.loose]
    refused, evaluations, rows = core().select_stream(
        src, window, plan.non_empty, plan.r2s.value, pattern, loose, list(plan.project),
        (max_window_triples, max_results), fmt, out_path)
    return native_core.finished(src, refused, evaluations, rows)
