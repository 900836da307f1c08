"""rsep queries as Spark jobs: sources -> parse (executors) -> engine per key -> sinks.

>>> p = SparkPipeline(spark, ["q.rq"], streams=[("http://ex/s", "dir/")])   # doctest: +SKIP
>>> p.run_to_files("out/", checkpoint="ck/")                                 # doctest: +SKIP
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pyoxigraph as ox
from pyspark.sql import functions as F

from rsep.algebra.policy import R2S, ReportPolicy
from rsep.runtime.engine import Engine, Limits, Output
from rsep.spark.parse import END_OF_INPUT, events_from_records
from rsep.spark.plan import QueryPlan, key_labels, partitioning
from rsep.spark.staging import Staging, origin_column
from rsep.spark.state import OUTPUT_SCHEMA, EngineProcessor, PipelineConfig, output_of
from rsep.stream.files import TimeConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

ORDER = ("time", "qrank", "key", "idx")
# A streaming run's default cap on the text a stream's file source gives one micro-batch.
# A key holds its micro-batch's events in memory at once (~13x their text, measured on
# the SRBench-style sensors stream), so without a cap a run over a large directory
# would hold all of it; each further micro-batch costs ~0.5-1 s of planning.
BATCH_BYTES = 64 << 20


class SparkPipeline:
    """Registered queries over streams, run as one Spark job (streaming or batch).

    ``queries``: (text, source) pairs or paths to query files. ``streams``: (IRI, path)
    pairs, a path being a stream file or a directory of them (a directory may grow
    while a streaming job runs). ``buckets``: state keys per partitionable query
    (default: the session's shuffle partitions).
    """

    def __init__(self, spark: SparkSession, queries: Iterable[str | Path | tuple[str, str]], *,
                 streams: Iterable[tuple[str, str]] = (),
                 graphs: Iterable[tuple[str, str | Path]] = (),
                 dialect: str | None = None, r2s: str | None = None, report: str | None = None,
                 policy: str | None = None, options: Iterable[tuple[str, str]] = (),
                 time: TimeConfig | None = None, time_unit_ms: int | None = None, limits: Limits | None = None,
                 allowed_lateness: int = 0, until: int | None = None,
                 buckets: int | None = None, allow_dereference: bool = False) -> None:
        self.spark = spark
        self.streams = list(streams)
        shuffle = spark.conf.get("spark.sql.shuffle.partitions")
        assert shuffle is not None  # (a SQL setting with a default: always set)
        partitions = int(shuffle)
        buckets = buckets or partitions
        # The driver registers every query once: errors surface before any job starts,
        # and names are resolved as the CLI resolves them.
        eng = Engine(time_unit_ms=time_unit_ms, limits=limits,
                     allow_dereference=allow_dereference)
        for iri, path in graphs:
            eng.add_graph(iri, path)
        plans: list[QueryPlan] = []
        for q in queries:
            text, source = (q if isinstance(q, tuple) else
                            (Path(q).read_text(encoding="utf-8"), str(q)))
            qp = QueryPlan("", text, dialect, source, r2s, report, policy, tuple(options))
            parsed = qp.parse()
            default = Path(source).stem if source else None
            rt = eng.register(parsed, source=source, default_name=default,
                              r2s=R2S(r2s) if r2s else None,
                              report=ReportPolicy.parse(report) if report else None)
            qp.name = rt.name
            qp.streams = tuple(sorted(rt.streams))
            qp.partitioning = partitioning(parsed)
            qp.buckets = buckets if qp.partitioning.key else 1
            plans.append(qp)
        labels = iter(key_labels([(qp.name, b) for qp in plans for b in range(qp.buckets)],
                                 partitions))
        for qp in plans:
            qp.keys = tuple(next(labels) for _ in range(qp.buckets))
        self.engine = eng  # for the caller's checks (streams read, names)
        # (without an output, serialize returns the bytes: the stub says bytes | None)
        nt = {iri: ox.serialize(ts, format=ox.RdfFormat.N_TRIPLES).decode()  # type: ignore[union-attr]
              for iri, ts in eng.graphs.items()}
        self.config = PipelineConfig(
            plans, tuple(iri for iri, _ in self.streams), nt, time or TimeConfig(),
            time_unit_ms, limits or Limits(), allowed_lateness, until, uuid.uuid4().hex,
            with_query=len(plans) > 1)

    # ------------------------------------------------------------ sources

    def file_records(self, *, streaming: bool = True, max_files_per_trigger: int | None = None,
                     control: str | None = None,
                     max_bytes_per_trigger: int | None = None,
                     staged: Staging | None = None) -> DataFrame:
        """Raw records of the stream files: one row per file (``wholetext``; a ``.jelly``
        file's bytes in base64). Streaming, each stream's source takes at most
        ``max_files_per_trigger`` files or else ``max_bytes_per_trigger`` bytes of them (at
        least one file) per micro-batch; a directory in ``staged`` is read from its staging
        directory, which its caller fills a micro-batch at a time (rsep.spark.staging)."""
        dfs = []
        for iri, path in self.streams:
            if path.startswith(("kafka://", "mqtt://")):
                continue  # a topic, not files: rsep.spark.kafka's or rsep.spark.mqtt's source
            p = Path(path)
            # Jelly is binary: its bytes travel base64-encoded in the text column
            # (rsep.spark.parse decodes a ``.jelly`` origin's text).
            jelly = p.suffix.lower() == ".jelly"
            reader = self.spark.readStream if streaming else self.spark.read
            reader = reader.format("binaryFile").schema(
                "path string, modificationTime timestamp, length long, content binary") if jelly \
                else reader.format("text").option("wholetext", "true")
            stage = staged.dirs.get(iri) if staged is not None and streaming else None
            if stage is not None:
                pass  # (its micro-batches are staged whole: Spark takes all it sees)
            elif max_files_per_trigger and streaming:
                reader = reader.option("maxFilesPerTrigger", max_files_per_trigger)
            elif max_bytes_per_trigger and streaming:  # (Spark refuses both at once)
                reader = reader.option("maxBytesPerTrigger", max_bytes_per_trigger)
            where = _file_glob(p) if p.is_file() and streaming else str(p.resolve())
            df = reader.load(str(stage.staged) if stage is not None else where)
            dfs.append(df.select(F.lit(iri).alias("stream"),
                                 (F.col("_metadata.file_path") if stage is None
                                  else origin_column(self.spark, stage)).alias("origin"),
                                 F.base64("content").alias("text") if jelly else F.col("value").alias("text"),
                                 F.col("_metadata.file_modification_time").alias("arrival")))
        if control is not None:
            reader = (self.spark.readStream if streaming else self.spark.read)
            df = reader.format("text").option("wholetext", "true").load(control)
            dfs.append(df.select(F.lit(END_OF_INPUT).alias("stream"),
                                 F.col("_metadata.file_path").alias("origin"),
                                 F.lit("").alias("text"),
                                 F.col("_metadata.file_modification_time").alias("arrival")))
        out = dfs[0]
        for d in dfs[1:]:
            out = out.unionByName(d)
        return out

    def end_of_input(self) -> DataFrame:
        """A one-row static DataFrame that closes every query (for batch replays)."""
        return self.spark.range(1).select(F.lit(END_OF_INPUT).alias("stream"),
                                          F.lit("").alias("origin"), F.lit("").alias("text"),
                                          F.current_timestamp().alias("arrival"))

    # ------------------------------------------------------------ the job

    def outputs(self, records: DataFrame) -> DataFrame:
        """Results and rejected records (``rtype`` o / r) of raw records, any source."""
        ev = events_from_records(records, self.config)
        out = ev.groupBy("key").transformWithStateInPandas(
            statefulProcessor=EngineProcessor(self.config), outputStructType=OUTPUT_SCHEMA,
            outputMode="Append", timeMode="None")
        rank = {qp.name: i for i, qp in enumerate(self.config.queries)}
        expr = F.lit(0)
        for name, i in rank.items():
            expr = F.when(F.col("query") == name, F.lit(i)).otherwise(expr)
        return out.withColumn("qrank", expr)

    def start(self, records: DataFrame, on_batch: Callable[[DataFrame, int], None], *,
              checkpoint: str | None = None, trigger: dict | None = None) -> StreamingQuery:
        """Start a streaming job; ``on_batch(df, batch_id)`` gets each micro-batch's outputs
        (persisted; ``batch_id`` lets writes be idempotent)."""
        def each(df: DataFrame, batch_id: int) -> None:
            df = df.persist()
            try:
                on_batch(df, batch_id)
            finally:
                df.unpersist()

        w = self.outputs(records).writeStream.foreachBatch(each)
        if checkpoint:
            w = w.option("checkpointLocation", checkpoint)
        if trigger:
            w = w.trigger(**trigger)
        return w.start()


def ordered(df: DataFrame) -> DataFrame:
    return df.orderBy(*ORDER)


def collect_outputs(df: DataFrame) -> list[Output]:
    """A batch's results on the driver, in output order (console and callback sinks)."""
    rows = ordered(df.filter("rtype = 'o'")).select("payload").collect()
    return [output_of(r.payload) for r in rows]


def collect_rejected(df: DataFrame) -> list[str]:
    return [r.json for r in df.filter("rtype = 'r'").select("json").collect()]


def _file_glob(p: Path) -> str:
    """A glob matching exactly one file. A streaming file source needs a pattern (a plain
    file path is refused), and a pattern, unlike a directory with ``pathGlobFilter``, never
    scans the folders beside the file (a sink's ``batch=N`` partitions there conflict)."""
    special = set("{}[]*?\\")

    def esc(text: str) -> str:
        return "".join("\\" + c if c in special else c for c in text)

    parent, name = str(p.resolve().parent), p.name
    last = esc(name[-1]) if name[-1] in special else f"[{name[-1]}]"
    return f"{esc(parent)}/{esc(name[:-1])}{last}"


def stream_bytes(path: str | Path) -> int | None:
    """The size of a stream's files now: a file's, or that of every file under a directory
    (at least what Spark's file source reads there); None when the path is not local."""
    p = Path(path)
    if p.is_file():
        return p.stat().st_size
    if not p.is_dir():
        return None
    return sum(f.stat().st_size for f in p.rglob("*")
               if f.is_file() and not f.name.startswith((".", "_")))


def run_files(pipe: SparkPipeline, on_batch: Callable[[DataFrame, int], None], *,
              checkpoint: str | None = None, batch: bool = False,
              max_files_per_trigger: int | None = None,
              max_bytes_per_trigger: int | None = BATCH_BYTES, follow: bool = False,
              trigger_seconds: float | None = None,
              progress: Callable[[str], None] | None = None,
              on_query: Callable[[StreamingQuery], None] | None = None) -> None:
    """Run over the stream files as they are now, to the end of the input.

    Streaming (default): a checkpointed job reads the files, then an end-of-input marker
    file closes every query. ``follow``: keep reading files as they appear in the stream
    directories until the job is stopped (no end of input). ``batch``: the same plan as
    one Spark batch job (which holds the whole input in each query's key at once).
    Streaming, a micro-batch takes at most ``max_files_per_trigger`` files of each stream,
    or else at most ``max_bytes_per_trigger`` bytes of them (None or 0: no cap), so that
    memory stays bounded by the cap, not the input. ``on_query`` gets the streaming query
    before it is stopped (its ``recentProgress``: per-micro-batch durations, for benchmarks).
    """
    if batch:
        df = pipe.outputs(pipe.file_records(streaming=False).unionByName(pipe.end_of_input()))
        df = df.persist()
        try:
            on_batch(df, 0)
        finally:
            df.unpersist()
        return
    ck = Path(checkpoint) if checkpoint else Path(tempfile.mkdtemp(prefix="rsep-spark-"))
    control = ck / "control"
    control.mkdir(parents=True, exist_ok=True)
    trigger = {"processingTime": f"{trigger_seconds} seconds"} if trigger_seconds else None
    cap = None if max_files_per_trigger else (max_bytes_per_trigger or None)
    early = not follow and not max_files_per_trigger and (cap is None or all(
        (n := stream_bytes(path)) is not None and n <= cap for _, path in pipe.streams))
    # directories go to Spark in name order, never by modification time (rsep.spark.staging)
    staging = Staging(pipe.streams, ck / "staged")
    staging.stage(*((None, None) if early else (max_files_per_trigger, cap)))
    if early and not (control / "end").exists():
        # Every file is already there and the first micro-batch takes them all: the end
        # marker can ride in it, saving a micro-batch (~0.5-1 s of planning, tasks and
        # state-store commits). With a per-batch limit the data needs, the marker (its own
        # source, unlimited) would overtake the data, so it is written after it.
        (control / "end").write_text("end of input\n", encoding="utf-8")
    q = pipe.start(pipe.file_records(control=str(control),
                                     max_files_per_trigger=max_files_per_trigger,
                                     max_bytes_per_trigger=cap, staged=staging),
                   on_batch, checkpoint=str(ck / "checkpoint"), trigger=trigger)
    try:
        if follow and not staging.dirs:
            q.awaitTermination()
            return
        while follow:  # new files, in name order, a micro-batch at a time
            q.processAllAvailable()
            while not staging.stage(max_files_per_trigger, cap):
                if q.awaitTermination(max(1, int(trigger_seconds or 1))):
                    return
        q.processAllAvailable()
        while staging.stage(max_files_per_trigger, cap):
            q.processAllAvailable()
        if not (control / "end").exists():
            (control / "end").write_text("end of input\n", encoding="utf-8")
        q.processAllAvailable()
        if progress is not None and q.lastProgress:
            progress(f"{q.lastProgress.get('batchId')} micro-batches")
        if on_query is not None:
            on_query(q)
    finally:
        q.stop()


def write_batch(df: DataFrame, directory: str | Path, batch_id: int, fmt: str = "jsonl") -> None:
    """The file sink: a batch's results (and rejected records) under a directory named by
    the batch id, overwritten when a batch is replayed, so each result is there once."""
    base = str(directory).rstrip("/")
    name = f"batch={batch_id:010d}"
    res = ordered(df.filter("rtype = 'o'")).coalesce(1)
    rej = df.filter("rtype = 'r'").select("json").coalesce(1)
    if fmt == "parquet":
        res.select("query", "time", "json").write.mode("overwrite").parquet(
            f"{base}/results/{name}")
    else:
        res.select("json").write.mode("overwrite").text(f"{base}/results/{name}")
    rej.write.mode("overwrite").text(f"{base}/rejected/{name}")


def read_sink(directory: str | Path, what: str = "results") -> list[str]:
    """The JSON lines of a jsonl file sink, in batch order (no Spark needed)."""
    lines: list[str] = []
    root = Path(directory) / what
    if not root.is_dir():
        return lines
    for d in sorted(root.glob("batch=*")):
        if not (d / "_SUCCESS").exists():
            continue
        for f in sorted(d.glob("part-*")):
            lines.extend(x for x in f.read_text(encoding="utf-8").splitlines() if x)
    return lines
