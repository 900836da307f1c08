"""The native path of a windowed query (issue 47): read, windowed, matched and written on
integer ids in Rust (rsep._core: native/src/stream.rs and select.rs), terms decoded only
for output.

:func:`native_plan` is its planner: it reads a query's maintained plan (rsep.windows.plan)
and pattern tree, and takes a ``SELECT`` (``*`` or a projection of variables) whose WHERE
clause is one triple pattern inside one ``WINDOW`` of a time window (RANGE / STEP), under
window-close reports (``non-empty`` or not) and any R2S operator, with no background graph
and no FILTER or modifier; for anything else it says why not, and the query runs as
before. :func:`run` then runs such a query over one stream file, or returns why it did not:
the native reader takes only files of the common shape with nothing to reject, and the
operator refuses an input on which rsep's own order of rows or a limit of the run would
come into play (see native/src/select.rs), so what it writes is what today's path writes,
byte for byte; on a refusal nothing is written and the caller runs today's path.
``RSEP_PURE=1`` turns the path off (the pure build runs Python only), and so does
``RSEP_NATIVE=0`` alone (today's path with the compiled build, as measured against it).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import pyoxigraph as ox

from rsep.algebra import pattern as pt
from rsep.algebra.expression import Iri
from rsep.algebra.policy import R2S
from rsep.algebra.query import CSPARQL_TIMESTAMP
from rsep.algebra.window import Boundary, WindowKind
from rsep.sparql.matcher import Canon
from rsep.sparql.pattern import triple_patterns
from rsep.stream.time import TimeError, TimeKind
from rsep.windows.plan import Plan
from rsep.windows.resolved import resolve

if TYPE_CHECKING:
    from rsep.algebra.policy import ReportPolicy
    from rsep.algebra.query import ContinuousQuery

NATIVE = "native"

# The native reader holds the whole file as ids before the operator runs (~6 bytes of
# memory a byte of TriG at 10^6 events), while today's path streams it in memory bounded by
# the windows: a larger file runs on today's path, so a run's memory stays bounded whatever
# the file's size (tests/windows/test_native_window.py pins the refusal).
MAX_FILE_BYTES = 256 * 2**20


def core() -> ModuleType:
    """rsep._core, the extension module. Imported by name: an import statement of it reads
    to import-linter and grimp as one of the package ``rsep`` itself (the extension is no
    module of theirs), which imports the engine lazily, and would make a circle of this."""
    return importlib.import_module("rsep._core")


def available() -> str | None:
    """Why the native core cannot run here, or None."""
    if os.environ.get("RSEP_PURE", "") not in ("", "0"):
        return "RSEP_PURE=1: the pure build runs Python only"
    if os.environ.get("RSEP_NATIVE", "") == "0":
        # (today's path with the compiled build: what the native path is measured against)
        return "RSEP_NATIVE=0: the native path is turned off"
    try:
        c = core()
    except ImportError as e:
        return f"the native core is not built ({e})"
    if not hasattr(c, "select_window"):
        return "the native core was built before its operator (run `make`)"
    return None


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

    def describe(self) -> str:
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
    if query.matches or query.uses_timestamp or CSPARQL_TIMESTAMP in query.sparql:
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
    if len(blocks) != 1 or len(blocks[0].patterns) != 1 or blocks[0].filters \
            or blocks[0].pushed or p.filters:
        return "not one triple pattern without FILTER in the window"
    if p.keys is not None or p.aggregates or p.having or p.order or p.distinct \
            or p.offset or p.limit is not None or p.factors is not None:
        return "GROUP BY, aggregates or solution modifiers"
    block, check = blocks[0], blocks[0].patterns[0]
    if check.tracked:
        return "the locality check counts terms, not whole triples"  # (never for one pattern)
    tree = query.pattern
    if tree is None or not isinstance(tree.pattern, pt.WindowGraph) \
            or not isinstance(tree.pattern.window, Iri) or tree.pattern.window.value != w.iri \
            or not isinstance(tree.pattern.arg, pt.BGP) or tree.pattern.arg.triples != block.triples:
        return "the WHERE clause is not WINDOW <w> { one triple pattern }"
    try:
        (tp,) = triple_patterns(block.triples, dict(tree.prologue.prefixes))
    except Exception as e:  # (NotCompiled, a relative IRI: the maintained planner's refusals)
        return f"a term the native path does not read ({e})"
    numbers: dict[str, int] = {}
    slots: list[tuple[str, int | str]] = []
    for x in tp:
        if isinstance(x, tuple):
            slots.append(("var", numbers.setdefault(x[1], len(numbers))))
        elif isinstance(x, ox.NamedNode):
            slots.append(("term", str(x)))
        elif isinstance(x, ox.Literal) and str(Canon().term(x)) == str(x):
            # (the store compares literals by value: a literal in canonical form is matched
            # by the same term alone, as the stream's literals are all canonical here)
            slots.append(("term", str(x)))
        else:
            return f"a term the native path does not read ({x}: a literal not in canonical form)"
    project = tuple((name, numbers.get(src)) for name, src in p.project)
    loose = tuple(None if c is None else str(c) for c in check.consts)
    return NativePlan(w.iri, w.stream, tuple(slots), loose, project, r2s, report.non_empty)


@dataclass
class Outcome:
    """A native run's end: ``refused`` says why it did not run (nothing to keep)."""

    refused: str = ""
    events: int = 0
    triples: int = 0
    evaluations: int = 0
    rows: int = 0


# The last run's outcome (the CLI's, for tests and --stage-times-like questions): whether
# the native path ran, and if not why
LAST: Outcome | None = None


def run(plan: NativePlan, query: ContinuousQuery, path: str, points: tuple[str, ...],
        max_record: int, time_unit_ms: int | None, max_window_triples: int, max_results: int,
        out_path: str, fmt: str = "jsonl") -> Outcome:
    """Run the query over the stream file at ``path``, writing its results to ``out_path``
    in ``fmt`` (jsonl or tsv, as rsep.runtime.sinks writes them); or say why not (then
    ``out_path`` holds nothing to keep)."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        return Outcome(f"the native reader does not take {path}: {e.strerror}")
    if size > MAX_FILE_BYTES:
        return Outcome(f"the native reader does not take {path}: {size:,} bytes, over its "
                       f"{MAX_FILE_BYTES:,} (it holds a file whole; today's path streams it)")
    ev, why = core().read_stream(path, list(points), max_record)
    if ev is None:
        return Outcome(f"the native reader does not take {path}: {why}")
    # literals whose form pyoxigraph's store may change: taken only if it does not
    unsure = ev.unsure()
    if unsure:
        canon = Canon()
        doc = "".join(f"<urn:rsep:s> <urn:rsep:p> {t} .\n" for t in unsure)
        for q in ox.parse(doc, format=ox.RdfFormat.N_TRIPLES):
            if str(canon.term(q.object)) != str(q.object):
                return Outcome(f"a literal pyoxigraph's store reads back in another form: {q.object}")
    w = query.dataset.windows[0]
    try:
        rw = resolve(w.spec, TimeKind.ABSTRACT, time_unit_ms)
    except TimeError as e:
        return Outcome(f"window {w.spec}: {e}")
    pattern = [("var", v) if kind == "var" else ("id", ev.id(str(v))) for kind, v in plan.pattern]
    loose = [(True, None) if c is None else (False, ev.id(c)) for c in plan.loose]
    refused, evaluations, rows = core().select_window(
        ev, (rw.alpha, rw.beta, rw.offset, rw.origin, rw.boundary is Boundary.RIGHT_CLOSED),
        plan.non_empty, plan.r2s.value, pattern, loose, list(plan.project),
        (max_window_triples, max_results), fmt, out_path)
    if refused:
        return Outcome(refused)
    return Outcome("", len(ev), ev.triples(), evaluations, rows)
