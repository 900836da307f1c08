"""Kafka in and out of rsep's Spark pipeline, through Spark's own Kafka connector
(``spark-sql-kafka-0-10``, which the session takes by ``spark.jars.packages``: it is not in
the pyspark wheel).

Source: Spark's ``kafka`` streaming source, one raw record (rsep.spark.parse's contract) per
Kafka record, its origin ``kafka://HOST:PORT/TOPIC#PARTITION-OFFSET`` (the zero-padded offset
orders simultaneous events of a partition as they arrived). The offsets a micro-batch read
are in the query's checkpoint, and its state (RocksDB) commits with them: a query restarted
from its checkpoint goes on from the first record of the first uncommitted batch, and reads
every record exactly once into its state (the records must still be in the topic:
``failOnDataLoss``, so a topic's retention having deleted unread records fails the query
instead of skipping them).

Sink: :class:`KafkaSink`, a ``foreachBatch`` writer through Spark's ``kafka`` batch sink:
a micro-batch's results, in output order, each as the CLI's jsonl object, to the topic, and
its rejected records to ``TOPIC-dead-letter``; every record has the headers ``rsep-batch``
and ``rsep-seq``. Spark's Kafka sink is at-least-once; with the checkpoint directory as
``state_dir`` the last batch written whole is recorded, so that a batch Spark replays after a
restart is not written again; a failure between the write and that record re-sends the batch
with the same headers, for consumers to drop (batch, seq) pairs already seen.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from rsep.spark.pipeline import SparkPipeline, ordered
from rsep.stream.kafka import KafkaUrl, is_kafka, kafka_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

# The connector at the newest Spark release Maven Central serves; Spark's data source API is
# stable across its 4.x minors, and the connector's own dependencies (kafka-clients, Hadoop's
# client 3.5.0, lz4, snappy) are the wheel's versions or absent from it. `make kafka-deps`
# puts it in Spark's Ivy cache.
CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
# the options of a Kafka URL that the Spark source reads (group: Spark keeps its offsets in
# the checkpoint, not in a consumer group)
SPARK_OPTIONS = ("format", "idle", "offset", "timeout")
DEAD_LETTER = "-dead-letter"


def packages_conf(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with the connector in ``spark.jars.packages`` (unless a connector of the
    user's is there already)."""
    have = conf.get("spark.jars.packages", "")
    if "spark-sql-kafka-0-10" in have:
        return conf
    return {**conf, "spark.jars.packages": ",".join(p for p in (have, CONNECTOR) if p)}


def uses_kafka(streams: list[tuple[str, str]], output: str | None) -> bool:
    return any(is_kafka(p) for _, p in streams) or bool(output and is_kafka(output))


def check_url(url: str, *, stream_format: str = "auto") -> KafkaUrl:
    """A ``--stream`` Kafka URL the Spark source can read; errors before a session starts."""
    u = kafka_url(url, allowed=SPARK_OPTIONS)
    if u.options.get("format") == "jelly" or stream_format == "jelly":
        raise ValueError(f"{url}: Jelly records are read by the in-process engine (rsep run "
                         "without --engine spark); on Spark give TriG, N-Quads or JSON lines")
    return u


def kafka_records(spark: SparkSession, stream: str, url: str, *,
                  stream_format: str = "auto") -> DataFrame:
    """The raw-records streaming DataFrame (stream, origin, text, arrival, format) of a topic."""
    u = check_url(url, stream_format=stream_format)
    timeout_ms = str(int(float(u.options.get("timeout", "10")) * 1000))
    df = (spark.readStream.format("kafka")
          .option("kafka.bootstrap.servers", u.servers)
          .option("subscribe", u.topic)
          .option("startingOffsets", u.options.get("offset", "earliest"))
          .option("failOnDataLoss", "true")
          .option("kafka.request.timeout.ms", timeout_ms)
          .option("kafka.default.api.timeout.ms", timeout_ms)
          .load())
    fmt = u.options.get("format")
    text = F.col("value").cast("string")
    if stream_format == "rdfm":
        # a record is one RDF Message: the parser finds its end at the delimiter
        text = F.concat(text, F.lit("\n# @message\n"))
        fmt = "rdfm"
    origin = F.concat(F.lit(u.base + "#"), F.col("partition").cast("string"), F.lit("-"),
                      F.lpad(F.col("offset").cast("string"), 12, "0"))
    return df.select(F.lit(stream).alias("stream"), origin.alias("origin"),
                     F.coalesce(text, F.lit("")).alias("text"),
                     F.col("timestamp").alias("arrival"),
                     F.lit(fmt).cast("string").alias("format"))


def run_live(pipe: SparkPipeline, on_batch: Callable[[DataFrame, int], None], *,
             checkpoint: str | None = None, stream_format: str = "auto",
             trigger_seconds: float | None = None, max_files_per_trigger: int | None = None,
             max_bytes_per_trigger: int | None = None,
             on_query: Callable[[StreamingQuery], None] | None = None) -> None:
    """A streaming job over the pipeline's streams, some of them Kafka topics: until Ctrl-C
    or, when every topic has ``?idle=SECONDS``, until no record came for the longest of them
    (the files being read whole); then the end of input closes every query, as a replay of
    files ends."""
    import tempfile

    kafka = [(iri, url) for iri, url in pipe.streams if is_kafka(url)]
    idles = [kafka_url(url, allowed=SPARK_OPTIONS).options.get("idle") for _, url in kafka]
    idle = None if None in idles else max(float(i) for i in idles if i is not None)
    ck = Path(checkpoint) if checkpoint else Path(tempfile.mkdtemp(prefix="rsep-spark-"))
    control = ck / "control"
    control.mkdir(parents=True, exist_ok=True)
    records = pipe.file_records(control=str(control), max_files_per_trigger=max_files_per_trigger,
                                max_bytes_per_trigger=None if max_files_per_trigger
                                else max_bytes_per_trigger)
    for iri, url in kafka:
        records = records.unionByName(kafka_records(pipe.spark, iri, url,
                                                    stream_format=stream_format),
                                      allowMissingColumns=True)
    trigger = {"processingTime": f"{trigger_seconds} seconds"} if trigger_seconds else None
    q = pipe.start(records, on_batch, checkpoint=str(ck / "checkpoint"), trigger=trigger)
    try:
        if idle is None:
            q.awaitTermination()
            return
        seen, last = -1, time.monotonic()
        while True:
            q.processAllAvailable()
            rows = sum(p.get("numInputRows", 0) for p in q.recentProgress)
            if rows != seen:
                seen, last = rows, time.monotonic()
            elif time.monotonic() - last >= idle:
                break
            if q.exception() is not None:
                raise q.exception()  # type: ignore[misc]
            time.sleep(min(idle / 4, 0.5))
        if not (control / "end").exists():
            (control / "end").write_text("end of input\n", encoding="utf-8")
        q.processAllAvailable()
        if on_query is not None:
            on_query(q)
    finally:
        q.stop()


class KafkaSink:
    """``foreachBatch`` writer of a SparkPipeline's outputs (columns ``rtype``, ``json``)
    to ``url``'s topic through Spark's Kafka sink (see the module's text)."""

    def __init__(self, url: str, *, state_dir: str | Path | None = None) -> None:
        u = kafka_url(url, allowed=("timeout",))
        self.url = u.base
        self.servers, self.topic = u.servers, u.topic
        self.dead_letter = u.topic + DEAD_LETTER
        self.timeout_ms = str(int(float(u.options.get("timeout", "10")) * 1000))
        self.state = Path(state_dir) / "kafka-sink.json" if state_dir is not None else None
        self.written = 0

    def _done(self) -> int:
        if self.state is None or not self.state.exists():
            return -1
        return int(json.loads(self.state.read_text())["batch"])

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        if batch_id <= self._done():
            return
        results = ordered(batch.filter("rtype = 'o'")).select("json")
        self.written += self._write(results, batch_id, self.topic)
        self._write(batch.filter("rtype = 'r'").select("json"), batch_id, self.dead_letter)
        if self.state is not None:
            self.state.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.state.with_suffix(".tmp")
            tmp.write_text(json.dumps({"batch": batch_id}))
            tmp.replace(self.state)

    def _write(self, df: DataFrame, batch_id: int, topic: str) -> int:
        # one partition: the records go out in output order (and monotonically_increasing_id
        # numbers them 0, 1, ... in it)
        df = df.coalesce(1).withColumn("seq", F.monotonically_increasing_id()).persist()
        try:
            n = df.count()
            if n == 0:
                return 0
            headers = F.array(
                F.struct(F.lit("rsep-batch").alias("key"),
                         F.lit(str(batch_id)).cast("binary").alias("value")),
                F.struct(F.lit("rsep-seq").alias("key"),
                         F.col("seq").cast("string").cast("binary").alias("value")))
            (df.select(F.col("json").alias("value"), headers.alias("headers"))
             .write.format("kafka")
             .option("kafka.bootstrap.servers", self.servers)
             .option("topic", topic)
             .option("includeHeaders", "true")
             .option("kafka.acks", "all")
             .option("kafka.enable.idempotence", "true")
             .option("kafka.delivery.timeout.ms", self.timeout_ms)
             # (the producer wants delivery.timeout.ms >= linger.ms + request.timeout.ms)
             .option("kafka.request.timeout.ms", str(int(self.timeout_ms) // 2))
             .save())
            return n
        finally:
            df.unpersist()


def connector_cached() -> bool:
    """Whether the connector is in Spark's default Ivy cache (``~/.ivy2.5.2``)."""
    group, artifact, version = CONNECTOR.split(":")
    return (Path.home() / ".ivy2.5.2" / "jars" / f"{group}_{artifact}-{version}.jar").is_file()


def fetch() -> None:
    """Resolve the connector and its dependencies into Spark's Ivy cache once (make
    kafka-deps), so that a run or a test starts without downloading them."""
    if connector_cached():
        return
    from rsep.spark.session import get_session

    get_session("local[1]", conf=packages_conf({})).stop()
    if not connector_cached():
        raise SystemExit(f"{CONNECTOR} was not resolved into ~/.ivy2.5.2")


if __name__ == "__main__":
    fetch()
