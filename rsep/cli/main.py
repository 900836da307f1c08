"""The ``rsep`` command.

Exit status: 0 success; 1 error (one line on stderr says why); 2 bad usage;
3 the run completed but input records were rejected (see the messages on
stderr and the dead-letter file).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from rsep import __version__
from rsep.algebra.epsparql import EpSparqlQuery
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import Query
from rsep.lang import DIALECTS, QueryError, parse_query
from rsep.runtime.engine import Engine, EngineError, Limits
from rsep.runtime.sinks import FORMATS, Sink
from rsep.runtime.watchdog import Watchdog
from rsep.stream.event import Event
from rsep.stream.files import TimeConfig
from rsep.stream.readers import STREAM_FORMATS, open_stream
from rsep.stream.source import DeadLetter, OrderingPolicy, merge_streams
from rsep.stream.time import TimeError, parse_datetime_ms, parse_time_unit

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REJECTED = 0, 1, 2, 3


def _pair(text: str, what: str) -> tuple[str, str]:
    iri, sep, path = text.partition("=")
    if not sep or not iri or not path:
        raise argparse.ArgumentTypeError(f"{what} must be IRI=PATH, got {text!r}")
    return iri.strip("<>"), path


def _stream_arg(text: str) -> tuple[str, str]:
    return _pair(text, "--stream")


def _graph_arg(text: str) -> tuple[str, str]:
    return _pair(text, "--graph")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rsep", description="RDF stream processing: continuous "
                                "RSP-QL, C-SPARQL and CQELS queries over RDF graph streams.")
    p.add_argument("--version", action="version", version=f"rsep {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="replay recorded streams through continuous queries")
    r.add_argument("queries", nargs="+", metavar="QUERY_FILE")
    r.add_argument("--stream", action="append", type=_stream_arg, default=[], metavar="IRI=PATH",
                   help="a stream file (TriG or N-Quads; an RDF Message Log; Jelly; JSON lines), "
                   "'-' for standard input; repeat for several streams")
    r.add_argument("--stream-format", choices=STREAM_FORMATS, default="auto",
                   help="how to read the --stream inputs: timestamped graphs (events), RDF Message "
                   "Logs (rdfm: TriG/Turtle/N-Quads with @message delimiters; jelly); default auto: "
                   "by name and content")
    r.add_argument("--graph", action="append", type=_graph_arg, default=[], metavar="IRI=PATH",
                   help="a background graph; 'default=PATH' for the default graph")
    r.add_argument("--dialect", choices=sorted(DIALECTS), help="query language (default: detected)")
    r.add_argument("--until", help="keep evaluating time-driven policies up to this time")
    r.add_argument("--format", choices=FORMATS, default="jsonl")
    r.add_argument("--output", "-o", help="write results here instead of standard output")
    r.add_argument("--r2s", choices=[x.value for x in R2S], type=str.upper,
                   help="override the query's relation-to-stream operator")
    r.add_argument("--report", help="override the report policy, e.g. window-close,non-empty, "
                   "content-change, on-arrival, periodic:5")
    r.add_argument("--policy", choices=["unrestricted", "chronological", "recent",
                                        "etalis-chronological", "etalis-recent"],
                   help="EP-SPARQL: event selection and consumption (default unrestricted); "
                   "chronological / recent are RSEP-QL's (000), etalis-chronological / "
                   "etalis-recent ETALIS's step-wise ones (docs/semantics.md)")
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
    r.add_argument("--max-window-triples", type=int, default=Limits.max_window_triples)
    r.add_argument("--max-results", type=int, default=Limits.max_results)
    r.add_argument("--max-eval-seconds", type=float, default=None)
    r.add_argument("--allow-dereference", action="store_true",
                   help="fetch FROM / FROM NAMED graphs that were not supplied with --graph")
    r.add_argument("--quiet", "-q", action="store_true", help="no progress or rejection messages")
    r.add_argument("--stage-times", action="store_true",
                   help="print on stderr where the run's time went: parse, match, state, "
                   "output, engine (costs a few per cent)")
    from rsep.spark.cli import add_options
    from rsep.spark.cli import add_parser as add_spark

    add_options(r)
    from rsep.cli.compare import add_parsers

    add_parsers(sub, _pair_arg)
    from rsep.bench.cli import add_parser as add_bench

    add_bench(sub)
    add_spark(sub)
    from rsep.cli.convert import add_parser as add_convert

    add_convert(sub)
    return p


def _pair_arg(text: str) -> tuple[str, str]:
    return _pair(text, "IRI=PATH")


def _until(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return parse_datetime_ms(text)


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
            pass
    os._exit(EXIT_ERROR)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "engine", "inprocess") == "spark":
        from rsep.spark.cli import run as spark_run

        return spark_run(args)
    time_unit = parse_time_unit(args.time_unit) if args.time_unit else None
    engine = Engine(time_unit_ms=time_unit, allow_dereference=args.allow_dereference,
                    limits=Limits(args.max_window_triples, args.max_results, args.max_eval_seconds))
    for iri, path in args.graph:
        engine.add_graph(iri, path)
    report = ReportPolicy.parse(args.report) if args.report else None
    for qf in args.queries:
        text = Path(qf).read_text(encoding="utf-8")
        query: str | Query = text
        if getattr(args, "policy", None):  # EP-SPARQL's setting (docs/semantics.md)
            parsed = parse_query(text, args.dialect, source=qf)
            if not isinstance(parsed, EpSparqlQuery):  # (the one query with policies)
                raise QueryError(f"--policy applies to EP-SPARQL queries; {qf} is not one",
                                 source=qf)
            query = parsed.with_policy(args.policy)
        engine.register(query, dialect=args.dialect, source=qf, default_name=Path(qf).stem,
                        r2s=R2S(args.r2s) if args.r2s else None, report=report)
    if not args.stream:
        raise EngineError("no input: give at least one --stream IRI=PATH")
    wanted = {s for rt in engine.queries for s in rt.streams}
    given = {iri for iri, _ in args.stream}
    missing = wanted - given
    if missing:
        raise EngineError("the queries read stream(s) with no --stream given: "
                          + ", ".join(f"<{m}>" for m in sorted(missing)))
    tc = TimeConfig(in_graph=args.time_in_graph) if args.time_predicate == ["arrival"] else \
        TimeConfig.with_predicate(args.time_predicate[0], args.time_in_graph) \
        if len(args.time_predicate) == 1 else TimeConfig(
            point=tuple(args.time_predicate) or TimeConfig().point, in_graph=args.time_in_graph)
    dead = DeadLetter(args.dead_letter, echo=None if args.quiet else sys.stderr)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    if args.max_eval_seconds is not None:
        engine.watchdog = Watchdog(args.max_eval_seconds, lambda what: _overrun(
            what, args.max_eval_seconds, (out,)))
    try:
        files = [open_stream(iri, path, fmt=args.stream_format, time=tc,
                             time_predicates=args.time_predicate) for iri, path in args.stream]
    except FileNotFoundError as e:
        raise EngineError(str(e)) from e
    events: Iterable[Event] = merge_streams(files, dead, OrderingPolicy(args.allowed_lateness))
    sink = Sink(out, args.format, with_query=len(engine.queries) > 1)
    progress = _Progress(not args.quiet and sys.stderr.isatty())
    clock = None
    write = sink.write
    if args.stage_times:
        from rsep.runtime.stages import StageClock

        clock = StageClock()
        clock.instrument(engine)
        events = clock.iterate("parse", events)
        write = clock.timed("output", write)
    t0 = time.perf_counter()
    try:
        for o in engine.run(events, until=_until(args.until)):
            write(o)
            progress.tick(engine.events, sink.count)
    finally:
        sink.close()
        progress.done()
        dead.close()
        if args.output:
            out.close()
    if clock is not None:
        from rsep.runtime.stages import table

        sys.stdout.flush()
        print(table(clock.report(time.perf_counter() - t0), engine.events), file=sys.stderr)
    if dead.count:
        if not args.quiet:
            print(f"rsep: {dead.count} input record(s) rejected"
                  + (f" (written to {args.dead_letter})" if args.dead_letter else ""),
                  file=sys.stderr)
        return EXIT_REJECTED
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return run(args)
        if args.command in ("explain", "compare"):
            from rsep.cli.compare import main as lars_main

            return lars_main(args)
        if args.command == "bench":
            from rsep.bench.cli import main as bench_main

            return bench_main(args)
        if args.command == "spark":
            from rsep.spark.cli import main as spark_main

            return spark_main(args)
        if args.command == "convert":
            from rsep.cli.convert import main as convert_main

            return convert_main(args)
    except QueryError as e:
        print(f"rsep: {e}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_OK
    except (EngineError, TimeError, ValueError, OSError) as e:
        print(f"rsep: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
