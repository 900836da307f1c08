"""What Spark itself costs a windowed query whose state is one key (issue 19's Spark target).

``rsep bench sweep-spark-window`` runs sensors-window's query on the Spark pipeline (batch
replay of 2000-event files) against the in-process engine. The target asks local[2] for
1.5x of the in-process rate per core, i.e. 2/1.5 = 1.33x the in-process rate in all: the
job must take at most 0.75 of the in-process run. This script times, in one Spark session
and alternately, the pipeline as it is and three cut-down jobs over the same plan:

- ``pipeline``: rsep.spark as ``rsep run --engine spark --batch`` runs it (a one-key query:
  each file goes to the key unparsed, and the key reads it);
- ``no-engine``: the parse stage that parses on the executors (every file parsed, each
  event routed and packed as N-Triples: the pipeline's way for partitioned queries), the
  same shuffle and ``transformWithStateInPandas``, but a stateful processor that only reads
  its rows: what a design that parses in parallel and keeps the window's state in one key
  pays before its key does anything;
- ``no-parse``: the files' text handed to the same shuffle and stateful stage as one packed
  row per file, unparsed: Spark's own floor for moving the stream through this plan;
- ``solutions``: the files parsed and each event solved on the executors (the in-process
  maintained path's entry and solutions), each key (``--keys``, the window's state split by
  GROUP BY values) sent every event's time and join terms and its own groups' solutions,
  unpickled there and dropped: a lower bound of shipping solutions instead of events;

and the in-process engine (``rsep run``'s path: StreamFile and Engine) on the whole file.

    .venv/bin/python benchmarks/spark_floor.py OUT/runs/sweep-spark-window-local[2]/rsep/spec.json \\
        --master 'local[2]' --rounds 3 [--jobs solutions,no-parse] [--keys 2]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
from pyspark.sql.streaming.stateful_processor import StatefulProcessor  # noqa: E402

from rsep.bench.workers.rsep_worker import _cut  # noqa: E402
from rsep.lang import parse_query  # noqa: E402
from rsep.runtime.engine import Engine  # noqa: E402
from rsep.spark import parse as spark_parse  # noqa: E402
from rsep.spark.parse import (  # noqa: E402
    EVENTS_SCHEMA,
    _arrow_schema,
    events_from_records,
    record_batch,
)
from rsep.spark.pipeline import SparkPipeline, collect_outputs, run_files  # noqa: E402
from rsep.spark.plan import bucket_of, key_labels  # noqa: E402
from rsep.spark.session import get_session  # noqa: E402
from rsep.spark.state import OUTPUT_SCHEMA  # noqa: E402
from rsep.stream.event import Event  # noqa: E402
from rsep.stream.files import StreamFile  # noqa: E402
from rsep.stream.source import DeadLetter, merge_streams  # noqa: E402
from rsep.stream.time import TimeKind  # noqa: E402


class Reader(StatefulProcessor):
    """A stateful processor that hands each row's ``column`` to Python (as the engine's key
    reads its rows), decodes it with ``decode`` if given, and outputs nothing."""

    def __init__(self, column: str = "nt", decode: Callable[[Any], object] | None = None) -> None:
        self.column, self.decode = column, decode

    def init(self, handle) -> None:
        """No state: the floor is Spark's transport (and the decoding), not its state store."""

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues
                        ) -> Iterator[pd.DataFrame]:
        for pdf in rows:
            values = pdf[self.column].tolist()
            if self.decode is not None:
                for v in values:
                    self.decode(v)
        return iter(())

    def close(self) -> None:
        """Nothing to release."""


def unparsed(key: str):
    """mapInArrow: each file's text as one packed row for ``key``, unparsed."""
    def run(batches):
        schema = _arrow_schema()
        for batch in batches:
            d = batch.to_pydict()
            rows = [(key, "b", s, 0, o or "", 0, "", 0, 0, "", t or "", 0, "[]")
                    for s, o, t in zip(d["stream"], d["origin"], d["text"], strict=True)]
            if rows:
                yield record_batch(rows, schema)
    return run


def _window(query: str) -> tuple:
    """The query's first window as the in-process maintained path keeps it, and the GROUP BY
    variables (built by each task: a script's functions travel by value, not by name)."""
    eng = Engine()
    eng.register(parse_query(query))
    rt = eng.queries[0]
    rt.bind(TimeKind.ABSTRACT, None, 0)
    return rt.windows[0].local, rt.result.plan.keys


def solved(query: str, keys: list[str]):
    """mapInArrow: each file read and each event solved on the executors as the in-process
    maintained path solves it (``MaintainedWindow._solved``: the event's entry, with its
    join terms for the locality check, and the window blocks' solutions). Every key gets
    every event's time and join terms (the locality check is over the whole window) and
    the solutions of its own GROUP BY values, pickled a file at a time: a lower bound of a
    design that ships solutions and splits the window's state by GROUP BY keys (the key
    here only unpickles; the fallback, an event's triples when the check fails, is left out)."""
    from rsep.spark.texts import read_text

    def run(batches):
        schema = _arrow_schema()
        out = pa.schema([*schema, pa.field("sols", pa.binary())])
        mw, group = _window(query)
        n = len(keys)
        for batch in batches:
            d = batch.to_pydict()
            rows = []
            for s, o, t in zip(d["stream"], d["origin"], d["text"], strict=True):
                parts: list[list] = [[] for _ in keys]
                for e in read_text(t, s, o or "", None):
                    if not isinstance(e, Event):
                        continue
                    entry = mw._solved(e.triples)
                    mine: list[list] = [[] for _ in keys]
                    for sol in entry.sols:
                        mu = sol[2]
                        b = bucket_of(tuple(str(mu.get(v, "")) for v in group), n)
                        mine[b].append(sol)
                    for b in range(n):
                        parts[b].append((e.start, entry.terms, mine[b]))
                for k, part in zip(keys, parts, strict=True):
                    rows.append((k, "b", s, 0, o or "", 0, "", 0, 0, "", "", 0, "[]",
                                 pickle.dumps(part)))
            if rows:
                yield record_batch(rows, out)
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="the spec.json rsep bench wrote for a sweep-spark-window run")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--per-file", type=int, default=2000)
    ap.add_argument("--jobs", default="", help="comma-separated jobs to time (default: all)")
    ap.add_argument("--keys", type=int, default=2, help="solutions: state keys (GROUP BY split)")
    args = ap.parse_args()
    spec = json.loads(Path(args.spec).read_text(encoding="utf-8"))
    (iri, path), = spec["streams"]
    query = spec["query"]
    with tempfile.TemporaryDirectory() as d:
        events = _cut(path, d, args.per_file)
        spark = get_session(args.master, conf={"spark.driver.memory": "4g"})

        def pipeline() -> int:
            pipe = SparkPipeline(spark, [(query, "bench.rq")], streams=[(iri, d)])
            got: list = []
            run_files(pipe, lambda df, _: got.extend(collect_outputs(df)), batch=True)
            return len(got)

        def cut_down(parse: bool) -> int:
            pipe = SparkPipeline(spark, [(query, "bench.rq")], streams=[(iri, d)])
            records = pipe.file_records(streaming=False)
            key = pipe.config.queries[0].keys[0]
            if parse:  # (the parse stage's packed rows, not whole texts)
                spark_parse.WHOLE_TEXTS = False
                try:
                    ev = events_from_records(records, pipe.config)
                finally:
                    spark_parse.WHOLE_TEXTS = True
            else:
                ev = records.select("stream", "origin", "text").mapInArrow(unparsed(key),
                                                                           EVENTS_SCHEMA)
            out = ev.groupBy("key").transformWithStateInPandas(
                statefulProcessor=Reader(), outputStructType=OUTPUT_SCHEMA,
                outputMode="Append", timeMode="None")
            return out.count()

        def solutions() -> int:
            pipe = SparkPipeline(spark, [(query, "bench.rq")], streams=[(iri, d)])
            records = pipe.file_records(streaming=False)
            keys = key_labels([("q", i) for i in range(args.keys)],
                              int(spark.conf.get("spark.sql.shuffle.partitions")))
            schema = EVENTS_SCHEMA + ", sols binary"
            ev = records.select("stream", "origin", "text").mapInArrow(solved(query, keys), schema)
            out = ev.groupBy("key").transformWithStateInPandas(
                statefulProcessor=Reader("sols", pickle.loads), outputStructType=OUTPUT_SCHEMA,
                outputMode="Append", timeMode="None")
            return out.count()

        def in_process() -> int:
            eng = Engine()
            eng.register(parse_query(query))
            n = 0
            for _ in eng.run(merge_streams([StreamFile(path, iri)], DeadLetter(None))):
                n += 1
            return n

        jobs = {"in-process": in_process, "pipeline": pipeline,
                "no-engine": lambda: cut_down(True), "no-parse": lambda: cut_down(False), "solutions": solutions}
        if args.jobs:
            jobs = {k: jobs[k] for k in ["in-process", *args.jobs.split(",")] if k in jobs}
        for fn in jobs.values():  # warm-up: JVM, Python workers, planning
            fn()
        times: dict[str, list[float]] = {k: [] for k in jobs}
        try:
            for _ in range(args.rounds):
                for name, fn in jobs.items():
                    t0 = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - t0)
        finally:
            spark.stop()
    base = statistics.median(times["in-process"])
    print(f"{events} events, {args.master}, {args.per_file}-event files, "
          f"{args.rounds} rounds (median s; of in-process; load {os.getloadavg()[0]:.1f})")
    print("| job | s (median) | runs | of in-process |")
    print("|---|---:|---|---:|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m:.2f} | {', '.join(f'{t:.2f}' for t in ts)} | {m / base:.2f} |")
    print(f"target (local[2] at 1.5x of the in-process rate per core): <= {0.75 * base:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
