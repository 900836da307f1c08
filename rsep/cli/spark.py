"""``rsep run --engine spark``: the CLI's run on a Spark job, same outputs and exit codes;
and ``rsep spark package``."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

from pyspark.sql import DataFrame, SparkSession

from rsep.cli.run import (
    EXIT_OK,
    EXIT_REJECTED,
    check_options,
    limits,
    table_prefixes,
    time_config,
    until,
    window_options,
)
from rsep.runtime.engine import EngineError
from rsep.runtime.sinks import open_sink
from rsep.spark.kafka import KafkaSink, check_url, packages_conf, run_live, uses_kafka
from rsep.spark.mqtt import check_stream
from rsep.spark.package import (
    ALIAS,
    EXECUTOR_PYTHON,
    ExecutorError,
    PackageError,
    check_executors,
    ensure_archive,
    explain_failure,
)
from rsep.spark.pipeline import BATCH_BYTES, SparkPipeline, collect_outputs, run_files, write_batch
from rsep.spark.session import get_session, shipped_session
from rsep.stream.kafka import is_kafka
from rsep.stream.readers import RML_SUFFIXES
from rsep.stream.time import parse_time_unit


def add_parser(sub: argparse._SubParsersAction) -> None:
    """``rsep spark package``: the archive ``--ship`` passes to a job, for spark-submit."""
    s = sub.add_parser("spark", help="Spark deployment helpers (docs/deploy.md)")
    ssub = s.add_subparsers(dest="spark_command", required=True)
    p = ssub.add_parser("package", help="build (or find in the cache) the archive that ships "
                        "rsep to Spark executors, and print how to pass it to spark-submit")
    p.add_argument("--output", "-o", metavar="PATH",
                   help="also copy the archive here (e.g. to put it on shared storage)")
    p.add_argument("--force", action="store_true", help="rebuild even if cached")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the archive's path")


SUBMIT_LAUNCHER = """\
# rsep's entry point for spark-submit (written by `rsep spark package`):
#   spark-submit [options] rsep-submit.py run QUERY_FILE ... --engine spark
import sys

from rsep.cli.main import main

sys.exit(main(sys.argv[1:]))
"""


def main(args: argparse.Namespace) -> int:
    """``rsep spark package``, or ``rsep run --engine spark``."""
    if args.command == "run":
        return run(args)
    try:
        a = ensure_archive(force=args.force,
                           log=None if args.quiet else lambda s: print(s, file=sys.stderr))
    except PackageError as e:
        raise EngineError(str(e)) from None
    path = a.path
    if args.output:
        out = Path(args.output)
        if out.is_dir():
            out = out / a.path.name
        shutil.copyfile(a.path, out)
        path = out.resolve()
    launcher = path.parent / "rsep-submit.py"
    launcher.write_text(SUBMIT_LAUNCHER, encoding="utf-8")
    if args.quiet:
        print(path)
        return 0
    print(f"{path}\n  {a.size / 2**20:.0f} MiB, {'built' if a.built else 'cached'} "
          f"({a.seconds:.1f} s); compiled modules: {len(a.compiled)}; every worker needs "
          f"Python at {a.python}\n"
          f"rsep run ... --engine spark --master spark://HOST:7077 --ship   (builds or finds "
          f"it itself)\n"
          f"PYSPARK_DRIVER_PYTHON={sys.executable} PYSPARK_PYTHON={EXECUTOR_PYTHON} \\\n"
          f"  spark-submit --master ... --archives {path}#{ALIAS} \\\n"
          f"  {launcher} run QUERY ... --engine spark\n"
          f"  (client mode: the driver's directory needs ./{ALIAS} too, e.g. "
          f"ln -s {sys.prefix} {ALIAS}; docs/deploy.md)")
    return 0


class _Quiet:
    """Spark's JVM and Python workers write to the process's descriptors 1 and 2: while
    Spark runs those go to a log file, and rsep's results and messages to copies of the
    original descriptors."""

    def __init__(self, log: str) -> None:
        self.log = log
        self.saved: list[tuple[int, int, TextIO]] = []

    def __enter__(self) -> TextIO:
        for fd, name in ((1, "stdout"), (2, "stderr")):
            stream = getattr(sys, name)
            try:
                if stream.fileno() != fd:
                    continue
            except (AttributeError, OSError, ValueError):
                continue  # already captured (e.g. by a test runner)
            stream.flush()
            keep = os.dup(fd)
            target = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(target, fd)
            os.close(target)
            setattr(sys, name, os.fdopen(os.dup(keep), "w", encoding="utf-8"))
            self.saved.append((fd, keep, stream))
        return sys.stdout

    def __exit__(self, *exc: object) -> None:
        for fd, keep, stream in reversed(self.saved):
            name = "stdout" if fd == 1 else "stderr"
            getattr(sys, name).flush()
            getattr(sys, name).close()
            setattr(sys, name, stream)
            os.dup2(keep, fd)
            os.close(keep)


class _StageProgress:
    """A batch replay's progress on stderr: tasks done per running Spark stage."""

    def __init__(self, spark: SparkSession, out: TextIO) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.out = out
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        t0 = time.monotonic()
        while not self.done.wait(0.5):
            parts = []
            for sid in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(sid)
                if info is not None:
                    parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks")
            if parts:
                # \x1b[K: a shorter line must not leave the end of the longer one behind
                print(f"\r{', '.join(parts)}, {time.monotonic() - t0:.0f} s\x1b[K", end="",
                      file=self.out, flush=True)

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def _absolute(path: str | None) -> str | None:
    """A local path made absolute; a URI (hdfs://, s3a://, file:/...) as given."""
    if path is None or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", path):
        return path
    return os.path.abspath(path)


def run(args: argparse.Namespace) -> int:
    check_options(args)  # before Spark starts: a refused option costs no session
    if not args.stream:
        raise EngineError("no input: give at least one --stream IRI=PATH")
    kafka = uses_kafka(args.stream, args.output)
    for _, path in args.stream:
        # a topic, read by Spark's Kafka source (rsep.spark.kafka) or rsep.spark.mqtt's
        live = (("a Kafka topic", check_url) if is_kafka(path) else
                ("an MQTT topic", check_stream) if path.startswith("mqtt://") else None)
        if live is not None:
            what, check = live
            try:
                check(path, stream_format=args.stream_format)
            except ValueError as e:
                raise EngineError(str(e)) from None
            if args.batch:
                raise EngineError(f"--batch replays files; {what} is read by a streaming job "
                                  "(give ?idle=SECONDS to end it)")
            continue
        if path == "-" or path.startswith("tcp://"):
            # A Spark job replays files (its socket source is rsep.spark.socket's API).
            raise EngineError(f"--engine spark reads stream files and directories (TriG, N-Quads, "
                              f"RDF Message Logs, Jelly files, JSON lines), Kafka and MQTT "
                              f"topics, not {path}: use the in-process engine (without "
                              "--engine spark)")
        if not Path(path).exists():
            raise EngineError(f"stream file not found: {path}")
        if path.lower().endswith(RML_SUFFIXES):
            # the Spark sources split raw RDF records; a mapping's rows are not RDF yet
            raise EngineError(f"{path}: an RML-mapped stream runs in-process (rsep run without "
                              "--engine spark); for Spark, map it to an RDF Message Log first: "
                              f"rsep convert {path} --to rdfm-trig -o STREAM.trig")
    if getattr(args, "time_predicate", None) == ["arrival"]:
        raise EngineError("--time-predicate arrival is read by the in-process engine only "
                          "(a Spark job replays its files: their time must be in the data)")
    tty = sys.stderr.isatty() and not args.quiet
    # The driver JVM may run in another directory (--ship): Spark gets absolute paths.
    if args.checkpoint and _absolute(args.checkpoint) == args.checkpoint and \
            not args.checkpoint.startswith("/"):
        raise EngineError(f"--checkpoint {args.checkpoint}: a URI is not supported; give a "
                          "directory of a filesystem mounted at the same path on the driver "
                          "and every worker (docs/deploy.md)")
    checkpoint = _absolute(args.checkpoint)
    sink_dir = _absolute(args.sink_dir)
    master = args.master
    if master is None and not os.environ.get("PYSPARK_GATEWAY_PORT"):  # not spark-submit's
        master = "local[*]"
    log = os.path.join(tempfile.gettempdir(), f"rsep-spark-{os.getpid()}.log")
    existing = SparkSession.getActiveSession()
    archive = None
    conf = dict(args.spark_conf)
    if kafka:
        if args.output and is_kafka(args.output) and args.format != "jsonl":
            raise EngineError(f"--output {args.output} on Spark writes one jsonl object per "
                              f"record (--format jsonl, not {args.format})")
        conf = packages_conf(conf)  # Spark's Kafka connector is not in the wheel
    if args.ship:
        if existing is not None:
            raise EngineError("--ship needs a Spark session of its own: this process "
                              "already runs one")
        if os.environ.get("PYSPARK_GATEWAY_PORT"):
            raise EngineError("--ship starts the driver itself; under spark-submit pass the "
                              "archive with --archives (`rsep spark package` prints the "
                              "line; docs/deploy.md)")
        try:
            archive = ensure_archive(log=None if args.quiet else
                                     lambda s: print(s, file=sys.stderr, flush=True))
        except PackageError as e:
            raise EngineError(str(e)) from None
    with _Quiet(log) as stdout:
        if existing is not None:
            spark = existing
        elif archive is not None:
            spark = shipped_session(master, archive, conf=conf)
        else:
            spark = get_session(master, conf=conf)
        try:
            remote = not str(spark.sparkContext.master).startswith("local")
            if remote:
                # before the job: a worker that cannot run rsep says so in one line
                check_executors(spark, shipped=archive)
                if checkpoint is None and not args.quiet and not args.batch:
                    print("rsep: note: without --checkpoint the job's checkpoint (state "
                          "store, end-of-input marker) is in a temporary directory of the "
                          "driver's machine; on a cluster of several machines give "
                          "--checkpoint on storage every worker shares (docs/deploy.md)",
                          file=sys.stderr, flush=True)
            return _run_job(args, spark, stdout, tty, checkpoint, sink_dir)
        except ExecutorError as e:
            raise EngineError(str(e)) from None
        except Exception as e:
            python = (EXECUTOR_PYTHON if archive is not None
                      else os.environ.get("PYSPARK_PYTHON", sys.executable))
            why = explain_failure(str(e), python, archive is not None)
            if why is None:
                raise
            raise EngineError(why) from None
        finally:
            if existing is None:
                spark.stop()


def _run_job(args: argparse.Namespace, spark: SparkSession, stdout: TextIO, tty: bool,
             checkpoint: str | None, sink_dir: str | None) -> int:
    tc = time_config(args)
    pipe = SparkPipeline(
        spark, args.queries, streams=args.stream, graphs=args.graph, dialect=args.dialect,
        r2s=args.r2s, report=args.report, policy=getattr(args, "policy", None),
        options=window_options(args), time=tc,
        time_unit_ms=parse_time_unit(args.time_unit) if args.time_unit else None,
        limits=limits(args), allowed_lateness=args.allowed_lateness, until=until(args.until),
        allow_dereference=args.allow_dereference)
    wanted = {s for qp in pipe.config.queries for s in qp.streams}
    missing = wanted - {iri for iri, _ in args.stream}
    if missing:
        raise EngineError("the queries read stream(s) with no --stream given: "
                          + ", ".join(f"<{m}>" for m in sorted(missing)))
    ksink = KafkaSink(args.output, state_dir=checkpoint) \
        if args.output and is_kafka(args.output) else None
    sink = None if ksink else open_sink(args.output, args.format,
                                        with_query=len(pipe.config.queries) > 1, stdout=stdout,
                                        prefixes=table_prefixes(args))
    dead = open(args.dead_letter, "w", encoding="utf-8") if args.dead_letter else None
    rejected = 0
    seen: set[int] = set()
    t0 = time.monotonic()

    def on_batch(df: DataFrame, batch_id: int) -> None:
        nonlocal rejected
        if sink_dir:
            write_batch(df, sink_dir, batch_id, args.sink_format or "jsonl")
        if batch_id in seen:  # a replayed batch: already written
            return
        seen.add(batch_id)
        if ksink is not None:
            ksink(df, batch_id)
        else:
            assert sink is not None
            for o in collect_outputs(df):
                sink.write(o)
            sink.flush()
        for r in df.filter("rtype = 'r'").select("json").collect():
            rejected += 1
            if dead:
                dead.write(r.json + "\n")
            if not args.quiet and rejected <= 20:
                d = json.loads(r.json)
                loc = f"{d['file']}:{d['line']}" + (f":{d['column']}" if d["column"] else "")
                print(f"rejected: {loc}: {d['reason']}", file=sys.stderr)
        if tty:
            n = ksink.written if ksink is not None else sink.count if sink is not None else 0
            print(f"\r\x1b[Kbatch {batch_id}: {n} results, "
                  f"{time.monotonic() - t0:.1f} s", end="", file=sys.stderr, flush=True)

    ticker = _StageProgress(spark, sys.stderr) if tty and args.batch else None
    try:
        if any(is_kafka(path) or path.startswith("mqtt://") for _, path in args.stream):
            run_live(pipe, on_batch, checkpoint=checkpoint, stream_format=args.stream_format,
                     trigger_seconds=args.trigger, max_files_per_trigger=args.max_files_per_batch,
                     max_bytes_per_trigger=BATCH_BYTES if args.max_bytes_per_batch is None
                     else args.max_bytes_per_batch)
        else:
            run_files(pipe, on_batch, checkpoint=checkpoint, batch=args.batch,
                      follow=args.follow, trigger_seconds=args.trigger,
                      max_files_per_trigger=args.max_files_per_batch,
                      max_bytes_per_trigger=BATCH_BYTES if args.max_bytes_per_batch is None
                      else args.max_bytes_per_batch)
    finally:
        if ticker is not None:
            ticker.stop()
        if sink is not None:
            sink.close()
        if tty:
            print(file=sys.stderr)
        if dead:
            dead.close()
    if rejected:
        # (even with --quiet: exit status 3 alone does not say what was rejected)
        print(f"rsep: {rejected} input record(s) rejected"
              + (f" (written to {args.dead_letter})" if args.dead_letter else ""),
              file=sys.stderr)
        return EXIT_REJECTED
    return EXIT_OK
