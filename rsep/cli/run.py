"""``rsep run``: its options, their check against each query's dialect and engine, and the
in-process run (``--engine spark``'s run is rsep.cli.spark's).

New ``rsep run`` options go in :func:`add_parser`; one whose meaning depends on the query's
language goes in rsep.lang.dialect's OPTIONS too (checked by :func:`check_options`), one that
only an engine takes in ENGINE_ONLY.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from rsep.algebra.output import Output
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import Query
from rsep.lang import DIALECTS, apply_option, bounds, dialect_of, parse_query
from rsep.lang.dialect import OPTIONS, WINDOW_BOUNDS
from rsep.lang.errors import OptionRefused
from rsep.runtime.engine import Engine, EngineError, Limits
from rsep.runtime.sinks import FORMATS, FormatSink, open_sink, read_prefixes
from rsep.runtime.stages import StageClock, table
from rsep.runtime.trace import attach as attach_tracer
from rsep.runtime.trace import parse_key
from rsep.runtime.watchdog import Watchdog
from rsep.stream.event import Event, Rejected
from rsep.stream.files import MAX_RECORD, TimeConfig
from rsep.stream.messages import MAX_MESSAGE
from rsep.stream.readers import STREAM_FORMATS, open_stream
from rsep.stream.source import DeadLetter, OrderingPolicy, merge_streams
from rsep.stream.time import TimeError, parse_datetime_ms, parse_time_unit
from rsep.stream.updates import read_updates

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REJECTED = 0, 1, 2, 3

# The options one engine takes and the other refuses (the others apply to both): the engine,
# and the refusal's message when the plain one says too little
ENGINE_ONLY: dict[str, tuple[str, str | None]] = {
    **{o: ("spark", None) for o in (
        "--master", "--ship", "--spark-conf", "--checkpoint", "--batch", "--sink-dir",
        "--sink-format", "--follow", "--trigger", "--max-files-per-batch",
        "--max-bytes-per-batch")},
    "--graph-updates": ("inprocess", "--graph-updates needs the in-process engine (--engine "
                        "inprocess): a Spark job ships its background graphs to the executors "
                        "once, when it is planned, so they cannot change while it runs"),
    "--stage-times": ("inprocess", "--stage-times times the in-process engine; a Spark job's "
                      "stages are in Spark's own metrics (see docs/benchmarks.md, Spark pipeline)"),
    "--trace": ("inprocess", "--trace follows the runs of the in-process engine; run without "
                "--engine spark to trace a key"),
}


def _pair(text: str, what: str) -> tuple[str, str]:
    iri, sep, path = text.partition("=")
    if not sep or not iri or not path:
        raise argparse.ArgumentTypeError(f"{what} must be IRI=PATH, got {text!r}")
    return iri.strip("<>"), path


def _trace_arg(text: str) -> tuple[str, str]:
    try:
        return parse_key(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _stream_arg(text: str) -> tuple[str, str]:
    return _pair(text, "--stream")


def _graph_arg(text: str) -> tuple[str, str]:
    return _pair(text, "--graph")


def pair_arg(text: str) -> tuple[str, str]:
    return _pair(text, "IRI=PATH")


def add_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="replay recorded streams through continuous queries")
    r.add_argument("queries", nargs="+", metavar="QUERY_FILE")
    r.add_argument("--stream", action="append", type=_stream_arg, default=[], metavar="IRI=PATH",
                   help="a stream file (TriG, N-Quads, JSON lines, an RDF Message Log, Jelly, or an "
                   "RML mapping *.rml.ttl of CSV / JSON-lines rows); '-' for standard input, "
                   "tcp://HOST:PORT, mqtt://HOST:PORT/TOPIC or kafka://HOST:PORT/TOPIC for a live "
                   "source (MQTT: ?idle=SECONDS ends it after so long connected without a "
                   "message; ?reconnect=SECONDS, default 30, is how long a lost broker is waited "
                   "for before the run fails; bytes not UTF-8 are rejected with their offset); "
                   "repeat for several streams")
    r.add_argument("--stream-format", choices=STREAM_FORMATS, default="auto",
                   help="how to read the --stream inputs: timestamped graphs (events), RDF Message "
                   "Logs (rdfm: TriG/Turtle/N-Quads with a -messages version label and MESSAGE "
                   "delimiters, or the December 2025 draft's # @message; jelly); default auto: "
                   "by name and content")
    r.add_argument("--graph", action="append", type=_graph_arg, default=[], metavar="IRI=PATH",
                   help="a background graph; 'default=PATH' for the default graph")
    r.add_argument("--graph-updates", action="append", type=pair_arg, default=[],
                   metavar="IRI=PATH", help="the background graph IRI changes over time "
                   "(000 Def. 2): SPARQL Update records each after a '# @time T' line (*.ru), "
                   "or versions as timestamped named graphs (TriG / N-Quads), applied in event "
                   "time with the streams (docs/semantics.md)")
    r.add_argument("--dialect", choices=sorted(DIALECTS), help="query language (default: detected)")
    r.add_argument("--until", help="keep evaluating time-driven policies up to this time")
    r.add_argument("--format", choices=FORMATS, default="jsonl",
                   help="table: aligned columns, IRIs as prefixed names by the queries' "
                   "PREFIXes (and --prefixes), an event query's matches with their from / to "
                   "/ start")
    r.add_argument("--prefixes", metavar="FILE", help="with --format table: more prefixes "
                   "to write IRIs with, as Turtle (@prefix p: <iri> .) or SPARQL (PREFIX p: "
                   "<iri>) declarations; they win over the queries' own")
    r.add_argument("--output", "-o", help="write results here instead of standard output; "
                   "mqtt://HOST:PORT/TOPIC publishes each result item (a jsonl object, or one "
                   "RDF Message per evaluation with --format rdfm-*|jelly) with QoS 1; "
                   "kafka://HOST:PORT/TOPIC produces each as one Kafka record")
    r.add_argument("--r2s", choices=[x.value for x in R2S], type=str.upper,
                   help="override the query's relation-to-stream operator")
    r.add_argument("--report", help="override the report policy, e.g. window-close,non-empty, "
                   "content-change, on-arrival, periodic:5")
    r.add_argument("--policy", choices=["unrestricted", "chronological", "recent",
                                        "etalis-chronological", "etalis-recent"],
                   help="EP-SPARQL: event selection and consumption (default unrestricted); "
                   "chronological / recent are RSEP-QL's (000), etalis-chronological / "
                   "etalis-recent ETALIS's step-wise ones (docs/semantics.md)")
    r.add_argument("--window-bounds", choices=sorted(WINDOW_BOUNDS), metavar="BOUNDS",
                   help="RSP queries: which end of every time window is closed: right-closed "
                   "(o, c] as RSP-QL and CQELS define it (000 Def. 3), left-closed [o, c) as "
                   "C-SPARQL's engine and RSP4J (YASPER, C-SPARQL 2.0) run it; default: the "
                   "dialect's")
    r.add_argument("--window-origin", metavar="TIME", help="RSP queries: align the time "
                   "windows' closes to TIME + k * STEP instead of k * STEP (000 Def. 3), as an "
                   "engine whose windows start at its own clock does; an integer in the "
                   "stream's time units (milliseconds since 1970 for xsd:dateTime times) or "
                   "an xsd:dateTime")
    r.add_argument("--time-unit", help="length of one abstract time unit (e.g. 1m), so that "
                   "durations with units apply to integer timestamps")
    r.add_argument("--time-predicate", action="append", default=[], metavar="IRI",
                   help="predicate giving an event's time (default prov:generatedAtTime and "
                   "friends); 'arrival': an RDF Message Log's messages take their arrival time")
    r.add_argument("--time-in-graph", action="store_true",
                   help="also read the time from a triple inside the event graph")
    r.add_argument("--allowed-lateness", type=int, default=0, metavar="UNITS",
                   help="accept events this far behind their stream's latest time (reordered); "
                   "later ones are rejected (default 0: reject any backwards timestamp)")
    r.add_argument("--dead-letter", metavar="PATH", help="write rejected records here (JSON lines)")
    # (None when not given: the RSP dialects' limits, refused by the others)
    r.add_argument("--max-window-triples", type=int, default=None,
                   help=f"RSP queries: at most this many triples in a window (default "
                   f"{Limits.max_window_triples:,})")
    r.add_argument("--max-results", type=int, default=None,
                   help=f"RSP queries: at most this many results of one evaluation (default "
                   f"{Limits.max_results:,})")
    r.add_argument("--max-matches", type=_at_least_one, default=None, metavar="N",
                   help=f"SPASEQ queries: at most N matches at one instant (default "
                   f"{Limits.max_matches:,}); more stop the run with an error")
    r.add_argument("--max-derived", type=_at_least_one, default=None, metavar="N",
                   help="EP-SPARQL CONSTRUCT rules: at most N triples derived at one instant "
                   "(default 1,000,000); more stop the run with an error, none derived over N")
    r.add_argument("--max-eval-seconds", type=float, default=None,
                   help="stop the run when the work an event brings (window upkeep and every "
                   "evaluation due before it) or the input's end takes longer than this")
    r.add_argument("--max-query-bytes", type=int, default=bounds.DEFAULT.max_bytes,
                   metavar="N", help="refuse a query text over N bytes (default "
                   f"{bounds.DEFAULT.max_bytes:,})")
    r.add_argument("--max-query-depth", type=int, default=bounds.DEFAULT.max_depth,
                   metavar="N", help="refuse a query nesting '{', '(' or '[' deeper than N "
                   f"(default {bounds.DEFAULT.max_depth})")
    r.add_argument("--max-query-patterns", type=int, default=bounds.DEFAULT.max_patterns,
                   metavar="N", help="refuse a query of more than N triple patterns, UNION "
                   f"branches, BIND, FILTER and operators (default {bounds.DEFAULT.max_patterns:,})")
    r.add_argument("--max-query-triples", type=int, default=bounds.DEFAULT.max_triples,
                   metavar="N", help="refuse a group { } joining more than N triple "
                   f"patterns, OPTIONALs and groups (default {bounds.DEFAULT.max_triples})")
    r.add_argument("--max-record-bytes", type=_size_arg, default=None, metavar="SIZE",
                   help="a TriG / N-Quads record (one graph block) still unfinished after "
                   f"SIZE characters is rejected and its file read no further (default "
                   f"{MAX_RECORD >> 20}M); an RDF Message over SIZE is rejected and the log read "
                   f"on from its delimiter (default {MAX_MESSAGE >> 20}M)")
    r.add_argument("--allow-dereference", action="store_true",
                   help="fetch FROM / FROM NAMED graphs that were not supplied with --graph")
    r.add_argument("--quiet", "-q", action="store_true",
                   help="no progress nor a message per rejected record (the one line that "
                   "counts them stays)")
    r.add_argument("--stage-times", action="store_true",
                   help="print on stderr where the run's time went: parse, match, state, "
                   "output, engine (costs a few per cent)")
    r.add_argument("--trace", metavar="?VAR=VALUE", type=_trace_arg,
                   help="SPASEQ and EP-SPARQL queries: print on stderr, in time order, what became "
                   "of the key (e.g. ?sensor=<http://example.org/s1>): SPASEQ's runs binding "
                   "it started, extended, discarded with the rule that discarded them, "
                   "completed; EP-SPARQL's events mentioning it, its complex events, the "
                   "events consumed and those that left the window")
    add_engine_options(r)


def add_engine_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("--engine", choices=("inprocess", "spark"), default="inprocess",
                   help="run in this process (default) or as a Spark job")
    r.add_argument("--master", default=None,
                   help="Spark master with --engine spark: local[*], local[2], spark://host:7077, "
                   "yarn, ... (default local[*], or spark-submit's when run by spark-submit)")
    r.add_argument("--ship", action="store_true",
                   help="with --engine spark: ship rsep to the executors, a packed virtual "
                   "environment built once per source and cached (`rsep spark package`; "
                   "docs/deploy.md): the workers need only Python at the same path")
    r.add_argument("--spark-conf", action="append", type=_conf_arg, default=[],
                   metavar="KEY=VALUE", help="with --engine spark: a Spark setting, e.g. "
                   "spark.sql.shuffle.partitions=4 (one state partition per executor core "
                   "is best); repeat for several")
    r.add_argument("--checkpoint", metavar="DIR", help="Spark checkpoint directory: a rerun "
                   "with the same directory resumes where the last run stopped")
    r.add_argument("--batch", action="store_true",
                   help="with --engine spark: one Spark batch job instead of a streaming one")
    r.add_argument("--sink-dir", metavar="DIR", help="with --engine spark: also write results "
                   "here, one directory per micro-batch (exactly once)")
    r.add_argument("--sink-format", choices=("jsonl", "parquet"), default=None,
                   help="with --sink-dir: jsonl (default) or parquet")
    r.add_argument("--follow", action="store_true", help="with --engine spark: keep reading "
                   "new files in the stream directories until interrupted")
    r.add_argument("--trigger", type=float, metavar="SECONDS",
                   help="with --engine spark: micro-batch interval (default: as soon as "
                   "the last one ends)")
    r.add_argument("--max-files-per-batch", type=int, metavar="N",
                   help="with --engine spark: at most N new files of each stream per "
                   "micro-batch (a directory's files go in name order, never by modification "
                   "time)")
    r.add_argument("--max-bytes-per-batch", type=_size_arg, metavar="SIZE",
                   help="with --engine spark, streaming: at most SIZE bytes of each stream's "
                   "new files per micro-batch (at least one file), e.g. 16M or 1G; 0: no cap "
                   "(default 64M: a micro-batch's events are in memory at once)")


def _at_least_one(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return int(text)


def _size_arg(text: str) -> int:
    """A size in bytes: an integer with an optional K, M or G suffix (powers of 1024)."""
    t = text.strip().upper().removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    digits = t[:-1] if scale > 1 else t
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(
            f"must be a size such as 65536, 16M or 1G, got {text!r}")
    return int(digits) * scale


def _conf_arg(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--spark-conf must be KEY=VALUE, got {text!r}")
    return key.strip(), value


def _given(args: argparse.Namespace, option: str) -> bool:
    """Whether ``option`` was given (its value is not argparse's default of nothing)."""
    return getattr(args, option[2:].replace("-", "_"), None) not in (None, False, [])


def check_options(args: argparse.Namespace) -> list[Query]:
    """Each query file parsed, with the options given applied: an option its dialect or the
    engine does not take is refused (an OptionRefused naming both: exit status 2), never
    ignored."""
    for o, (engine, message) in ENGINE_ONLY.items():
        if engine != args.engine and _given(args, o):
            raise OptionRefused(message or f"{o} applies to --engine {engine} runs, not "
                                f"--engine {args.engine}")
    if _given(args, "--max-bytes-per-batch"):
        other = next((o for o in ("--max-files-per-batch", "--batch") if _given(args, o)), None)
        if other is not None:
            raise OptionRefused(f"--max-bytes-per-batch caps a streaming run's micro-batches by "
                                f"size; {other} " + ("caps them by files: give one of the two"
                                                     if other != "--batch" else
                                                     "runs one batch job, with no micro-batches"))
    given = [o for o in OPTIONS if o.startswith("--") and _given(args, o)]
    bounds.configure(bounds.QueryBounds(args.max_query_bytes, args.max_query_depth,
                                        args.max_query_patterns, args.max_query_triples))
    out = []
    for qf in args.queries:
        q = parse_query(Path(qf).read_text(encoding="utf-8"), args.dialect, source=qf)
        for o in given:
            dialect_of(q).check(o, qf)
        if args.policy:  # EP-SPARQL's setting (docs/semantics.md)
            q = apply_option(q, "--policy", args.policy, qf)
        for o, v in window_options(args):
            q = apply_option(q, o, v, qf)
        out.append(q)
    return out


def table_prefixes_of(sources: list[str]) -> dict[str, str]:
    """Every query file's PREFIXes (a prefix two files declare: the first one's IRI)."""
    out: dict[str, str] = {}
    for qf in sources:
        for p, iri in read_prefixes(Path(qf).read_text(encoding="utf-8")).items():
            out.setdefault(p, iri)
    return out


def table_prefixes(args: argparse.Namespace) -> dict[str, str]:
    """The prefixes ``--format table`` writes IRIs with: every query's PREFIXes, then the
    ``--prefixes`` file's (which win)."""
    out = table_prefixes_of(args.queries)
    if getattr(args, "prefixes", None):
        try:
            out.update(read_prefixes(Path(args.prefixes).read_text(encoding="utf-8")))
        except OSError as e:
            raise EngineError(f"--prefixes: {e}") from e
    return out


def limits(args: argparse.Namespace) -> Limits:
    d = Limits()
    return Limits(d.max_window_triples if args.max_window_triples is None else args.max_window_triples,
                  d.max_results if args.max_results is None else args.max_results,
                  args.max_eval_seconds,
                  d.max_matches if getattr(args, "max_matches", None) is None else args.max_matches,
                  getattr(args, "max_derived", None))


def time_config(args: argparse.Namespace) -> TimeConfig:
    if args.time_predicate == ["arrival"]:  # message logs' arrival times (rsep.stream.readers)
        return TimeConfig(in_graph=args.time_in_graph)
    if len(args.time_predicate) == 1:
        return TimeConfig.with_predicate(args.time_predicate[0], args.time_in_graph)
    return TimeConfig(point=tuple(args.time_predicate) or TimeConfig().point,
                      in_graph=args.time_in_graph)


def until(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return parse_datetime_ms(text)


def window_options(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The RSP dialects' window readings given (docs/semantics.md, CSRBench), as
    (option, value) for :func:`rsep.lang.apply_option`, the origin as a number."""
    out = []
    if getattr(args, "window_bounds", None):
        out.append(("--window-bounds", args.window_bounds))
    if getattr(args, "window_origin", None) is not None:
        out.append(("--window-origin", str(_origin(args.window_origin))))
    return out


def _origin(text: str) -> int:
    try:
        got = until(text)
    except TimeError:
        raise EngineError(f"--window-origin {text!r}: expected an integer time in the "
                          "stream's units or an xsd:dateTime") from None
    assert got is not None
    return got


class _Progress:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.last = time.monotonic()
        self.t0 = self.last

    def tick(self, events: int, outputs: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last >= 0.5:
            self.last = now
            rate = events / max(now - self.t0, 1e-9)
            print(f"\r{events} events, {outputs} results, {rate:,.0f} events/s", end="",
                  file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled and self.last != self.t0:
            print(file=sys.stderr)


def _overrun(what: str, limit: float, flush: tuple[IO[str], ...]) -> None:
    """The watchdog's thread, while an evaluation overruns: say so, keep what was output
    (the evaluation itself cannot be cancelled), and end the process."""
    print(f"rsep: error: {what} is still running after the limit of {limit} s "
          "(--max-eval-seconds); stopped", file=sys.stderr, flush=True)
    for f in flush:
        try:
            f.flush()
        except (OSError, ValueError):
            pass  # closed or broken output: the process ends anyway
    os._exit(EXIT_ERROR)


def trace(engine: Engine, key: tuple[str, str], queries: list[Query], sources: list[str]) -> None:
    """Trace the registered queries' runs (SPASEQ: rsep.spaseq.why) or events (EP-SPARQL:
    rsep.epsparql.why) of ``key`` (rsep.runtime.trace, which rsep serve shares)."""
    declared = table_prefixes_of(sources)
    several = len(engine.queries) > 1
    for rt, q, qf in zip(engine.queries, queries, sources, strict=True):
        attach_tracer(rt, q, key, declared, out=sys.stderr, name=rt.name if several else "",
                      source=qf)


def native_refusal(args: argparse.Namespace, engine: Engine, files: list, tc: TimeConfig,
                   native: ModuleType) -> str | None:
    """Why this run does not take the native path (rsep.windows.native, or rsep.spaseq.native
    for a SPASEQ chain: the same rules), or None: the run
    has one query the native planner took, over one stream file, written as jsonl or tsv,
    with no option the native path does not keep to (background graphs, --until, traces,
    stage times, the watchdog, lateness, time read otherwise than from point-time triples
    in the default graph). ``native``: the path's module, as the query's runtime gives it."""
    why = native.refusal(engine.queries, files)  # (what the bench's rsep worker refuses too)
    if why is not None:
        return why
    # (a join of windows reads the background graphs the engine was given, as they stand)
    joins = getattr(getattr(engine.queries[0], "native", None), "join", None) is not None
    if args.format not in ("jsonl", "tsv"):
        return f"--format {args.format} (the native path writes jsonl and tsv)"
    if args.output is not None and "://" in args.output:
        return "an output that is not a file"
    for option in ("--graph", "--graph-updates", "--until", "--trace", "--stage-times",
                   "--max-eval-seconds", "--allowed-lateness", "--time-in-graph"):
        if option == "--graph" and joins:
            continue
        if _given(args, option):
            return f"{option} given"
    if args.time_predicate == ["arrival"] or tc.in_graph:
        return "times not read from the default graph's point-time triples"
    return None


def _regular(path: str) -> bool:
    """Whether ``path`` names a regular file itself (not through a symbolic link)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _native_run(args: argparse.Namespace, engine: Engine, files: list, tc: TimeConfig,
                sink: FormatSink, dead: DeadLetter) -> int | None:
    """The run on the native path, its exit status; None when it does not take it (then
    today's path runs, skipping what the native path wrote through before it refused)."""
    # the native path's module, from the query's runtime (rsep.runtime.windowed and
    # rsep.spaseq.runtime import theirs): a SPASEQ run loads none of the window machinery
    native: ModuleType | None = next((rt.native_path for rt in engine.queries
                                      if hasattr(rt, "native_path")), None)
    if native is None:
        return None
    why = native_refusal(args, engine, files, tc, native)
    if why is not None:
        native.record(native.Outcome(why))
        return None
    rt = engine.queries[0]
    plan = rt.native  # type: ignore[attr-defined]
    assert isinstance(plan, native.NativePlan)  # (native_refusal's)
    lim = engine.limits
    target = args.output if args.output is not None else None
    through = _through(sink)
    if through is not None and getattr(plan, "join", None) is None and len(args.stream) == 1:
        return _native_through(args, engine, files, tc, sink, dead, native, plan, through)
    # (the join, several streams, or an output with no file descriptor of its own) the
    # results are written beside the output and renamed onto it, in one step; a device,
    # FIFO or link is written through, from a temporary file of the system's
    beside = target is not None and (_regular(target) or not os.path.lexists(target))
    fd, tmp = tempfile.mkstemp(prefix=".rsep-native-", suffix=".jsonl",
                               dir=os.path.dirname(os.path.abspath(target))
                               if beside and target is not None else None)
    os.close(fd)
    try:
        if getattr(plan, "join", None) is not None:
            got = native.run_join(plan, rt.query, args.stream, engine.graphs, tc.point,  # type: ignore[attr-defined]
                                  files[0].max_record, engine.time_unit_ms,
                                  lim.max_window_triples, lim.max_results, tmp, args.format)
        elif len(args.stream) > 1:
            # (a SPASEQ query over several streams: rsep.spaseq.native's refusal took it)
            got = native.run_streams(plan, rt.query, args.stream, tc.point,  # type: ignore[attr-defined]
                                     files[0].max_record, engine.time_unit_ms,
                                     lim.max_window_triples, lim.max_results, tmp, args.format)
        else:
            got = native.run(plan, rt.query, args.stream[0][1], tc.point, files[0].max_record,  # type: ignore[attr-defined]
                             engine.time_unit_ms, lim.max_window_triples, lim.max_results, tmp,
                             args.format)
        native.record(got)
        if got.refused:
            if got.replay is not None:
                # standard input was read from: today's path reads what the native path
                # read of it first, then on
                files[0].replay = got.replay
            return None
        getattr(args, "started", lambda: None)()
        if beside and target is not None:
            sink.close()  # (the empty file it made is replaced by the results)
            shutil.copymode(target, tmp)  # (its mode: the umask's, or the file's own)
            os.replace(tmp, target)
        else:
            # standard output, or an output that is no regular file (a device, a FIFO, a
            # symbolic link): written through the sink's own open stream, never renamed
            # onto (-o /dev/null once made /dev/null a regular file) nor opened twice (a
            # FIFO's reader would see the first close as the end)
            sink.out.flush()
            with open(tmp, "rb") as f:
                buffer = getattr(sink.out, "buffer", None)
                if buffer is not None:
                    shutil.copyfileobj(f, buffer)
                    buffer.flush()
                else:
                    sink.out.write(f.read().decode("utf-8"))
            sink.close()
        dead.close()
        return EXIT_OK
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _through(sink: FormatSink) -> int | None:
    """The output's file descriptor, to which the native path writes its rows through as it
    reads the stream, as today's path writes them (an endless pipe's rows go out as they
    come, an interrupted run keeps them); None for an output with none (a broker's)."""
    try:
        return sink.out.fileno()
    except (AttributeError, OSError, ValueError):
        return None


class _Skipping:
    """A text output that drops the first ``skip`` bytes written to it: what the native
    path wrote through before it refused, which today's path writes again first."""

    def __init__(self, out: IO[str], skip: int) -> None:
        self.out = out
        self.skip = skip

    def write(self, text: str) -> int:
        if self.skip:
            data = text.encode("utf-8")
            if len(data) <= self.skip:
                self.skip -= len(data)
                return len(text)
            text = data[self.skip:].decode("utf-8")
            self.skip = 0
        return self.out.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.out, name)


def _native_through(args: argparse.Namespace, engine: Engine, files: list, tc: TimeConfig,
                    sink: FormatSink, dead: DeadLetter, native: ModuleType, plan: Any,
                    fd: int) -> int | None:
    """The native run, its rows written through to ``fd`` as the stream is read
    (native/src/py.rs's Through); after a refusal today's path reads the stream again (a
    pipe's from its spool) and skips what went out already."""
    rt = engine.queries[0]
    lim = engine.limits
    sink.out.flush()
    got = native.run(plan, rt.query, args.stream[0][1], tc.point,  # type: ignore[attr-defined]
                     files[0].max_record, engine.time_unit_ms, lim.max_window_triples, lim.max_results, f"fd:{fd}",
                     args.format)
    native.record(got)
    if got.refused:
        if got.replay is not None:
            files[0].replay = got.replay
        if got.sent:
            sink.out = _Skipping(sink.out, got.sent)  # type: ignore[assignment]
        return None
    getattr(args, "started", lambda: None)()
    sink.close()
    dead.close()
    return EXIT_OK


def main(args: argparse.Namespace) -> int:
    """``rsep run`` in this process."""
    queries = check_options(args)
    time_unit = parse_time_unit(args.time_unit) if args.time_unit else None
    engine = Engine(time_unit_ms=time_unit, allow_dereference=args.allow_dereference,
                    limits=limits(args))
    for iri, path in args.graph:
        engine.add_graph(iri, path)
    for iri, _ in args.graph_updates:
        engine.background.add_changes(iri, ())  # (read below, with the dead letter)
    report = ReportPolicy.parse(args.report) if args.report else None
    for qf, q in zip(args.queries, queries, strict=True):
        engine.register(q, source=qf, default_name=Path(qf).stem,
                        r2s=R2S(args.r2s) if args.r2s else None, report=report)
    if args.trace:
        trace(engine, args.trace, queries, args.queries)
    if not args.stream:
        raise EngineError("no input: give at least one --stream IRI=PATH")
    wanted = {s for rt in engine.queries for s in rt.streams}
    given = {iri for iri, _ in args.stream}
    missing = wanted - given
    if missing:
        raise EngineError("the queries read stream(s) with no --stream given: "
                          + ", ".join(f"<{m}>" for m in sorted(missing)))
    tc = time_config(args)
    dead = DeadLetter(args.dead_letter, echo=None if args.quiet else sys.stderr)
    engine.background.reject = dead  # a change that cannot be applied; the run goes on
    for iri, path in args.graph_updates:
        changes = []
        try:
            for it in read_updates(iri, path, time=tc):
                if isinstance(it, Rejected):
                    dead(it)
                else:
                    changes.append(it)
        except FileNotFoundError as e:
            raise EngineError(str(e)) from e
        engine.background.add_changes(iri, changes)
    sink = open_sink(args.output, args.format, with_query=len(engine.queries) > 1,
                     prefixes=table_prefixes(args))
    args.flush = (sink.out,)  # what an interrupt flushes (rsep.cli.main.interruptible)
    if args.max_eval_seconds is not None:
        engine.watchdog = Watchdog(args.max_eval_seconds, lambda what: _overrun(
            engine.doing or what, args.max_eval_seconds, (sink.out,)))
    try:
        files = [open_stream(iri, path, fmt=args.stream_format, time=tc,
                             time_predicates=args.time_predicate, max_record=args.max_record_bytes)
                 for iri, path in args.stream]
    except FileNotFoundError as e:
        raise EngineError(str(e)) from e
    if (done := _native_run(args, engine, files, tc, sink, dead)) is not None:
        return done
    events: Iterable[Event] = merge_streams(files, dead, OrderingPolicy(args.allowed_lateness))
    getattr(args, "started", lambda: None)()
    progress = _Progress(not args.quiet and sys.stderr.isatty())
    clock = None
    write = sink.write
    if args.stage_times:
        clock = StageClock()
        clock.instrument(engine)
        events = clock.iterate("parse", events)
        write = clock.timed("output", write)
    t0 = time.perf_counter()

    def out(o: Output) -> None:
        write(o)
        progress.tick(engine.events, sink.count)

    try:
        # each result written as its evaluation ends (not when the event that brought the
        # evaluations in is taken): a stopped run keeps them, an event far ahead holds none.
        # With write= the run yields nothing; the empty deque only drives it to its end.
        deque(engine.run(events, until=until(args.until), write=out), maxlen=0)
    finally:
        sink.close()
        progress.done()
        dead.close()
    if clock is not None:
        sys.stdout.flush()
        print(table(clock.report(time.perf_counter() - t0), engine.events), file=sys.stderr)
    if dead.count:
        # (even with --quiet: exit status 3 alone does not say what was rejected)
        print(f"rsep: {dead.count} input record(s) rejected"
              + (f" (written to {args.dead_letter})" if args.dead_letter else ""),
              file=sys.stderr)
        return EXIT_REJECTED
    return EXIT_OK
