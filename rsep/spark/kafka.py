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
its rejected records to ``TOPIC-dead-letter``. Spark's Kafka sink alone is at-least-once (a
batch replayed after a failure is written again); rsep's headers on every record
(``rsep-run``, ``rsep-batch``, ``rsep-seq``, ``rsep-of``) let the sink, restarted from the
checkpoint, find in the topic what the batch it replays already wrote, and write only what
is missing: each result once, for an output topic of one partition (several partitions
keep no order between records, and the sink then finds its place in the last record of
each).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from rsep.spark.mqtt import mqtt_stream
from rsep.spark.pipeline import SparkPipeline, ordered
from rsep.spark.session import get_session
from rsep.spark.spool import SpoolError
from rsep.stream.kafka import KafkaUrl, is_kafka, kafka_url
from rsep.stream.messages import messages_mode

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import Column, DataFrame, SparkSession
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
    messages_mode(u.options.get("format", "trig"), stream_format == "rdfm", url)
    return u


def record_format(u: KafkaUrl, stream_format: str = "auto") -> str | None:
    """The raw-record ``format`` of a topic's records (None: detected per record)."""
    fmt = u.options.get("format")
    if stream_format == "rdfm":
        # a record is one RDF Message in the topic's syntax (rsep.spark.texts.PAYLOAD_FORMATS)
        return "rdfm-" + (fmt or "trig")
    return fmt


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
    fmt = record_format(u, stream_format)
    text = F.col("value").cast("string")
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
    """A streaming job over the pipeline's streams, some of them Kafka topics or MQTT topics
    (rsep.spark.mqtt): until Ctrl-C or, when every one has ``?idle=SECONDS``, until no record
    came for the longest of them (the files being read whole); then the end of input closes
    every query, as a replay of files ends."""
    import tempfile

    ck = Path(checkpoint) if checkpoint else Path(tempfile.mkdtemp(prefix="rsep-spark-"))
    control = ck / "control"
    control.mkdir(parents=True, exist_ok=True)
    records = pipe.file_records(control=str(control), max_files_per_trigger=max_files_per_trigger,
                                max_bytes_per_trigger=None if max_files_per_trigger
                                else max_bytes_per_trigger)
    idles: list[float | None] = []
    for iri, url in pipe.streams:
        if is_kafka(url):
            live = kafka_records(pipe.spark, iri, url, stream_format=stream_format)
            given = kafka_url(url, allowed=SPARK_OPTIONS).options.get("idle")
            idles.append(None if given is None else float(given))
        elif url.startswith("mqtt://"):
            # (no checkpoint: a temporary spool and a session that ends with the run)
            live, mqtt_idle = mqtt_stream(pipe.spark, iri, url, stream_format=stream_format,
                                          checkpoint=checkpoint)
            idles.append(mqtt_idle)
        else:
            continue
        records = records.unionByName(live, allowMissingColumns=True)
    idle = None if None in idles else max(i for i in idles if i is not None)
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
    to ``url``'s topic through Spark's Kafka sink (see the module's text).

    Each record carries the headers ``rsep-run`` (an id kept in ``state_dir``, the query's
    checkpoint directory, so that it survives restarts and a fresh checkpoint starts a new
    run), ``rsep-batch``, ``rsep-seq`` and ``rsep-of`` (the batch's record count). At its
    first batch the sink reads the last record of this run in the topic: a batch Spark
    replays after a restart is skipped if the topic holds it whole, and only its missing
    tail is written if a failure cut it short, so that each result is in the topic once."""

    def __init__(self, url: str, *, state_dir: str | Path | None = None) -> None:
        u = kafka_url(url, allowed=("timeout",))
        self.url = u.base
        self.servers, self.topic = u.servers, u.topic
        self.dead_letter = u.topic + DEAD_LETTER
        self.timeout = float(u.options.get("timeout", "10"))
        self.run = uuid.uuid4().hex
        if state_dir is not None:
            f = Path(state_dir) / "kafka-sink-run"
            if f.exists():
                self.run = f.read_text().strip()
            else:
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(self.run)
        self.tails: dict[str, tuple[int, int, int] | None] = {}
        self.written = 0

    def _tail(self, topic: str) -> tuple[int, int, int] | None:
        """(batch, seq, of) of the last record this run wrote to ``topic``, if any."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        c = Consumer({"bootstrap.servers": self.servers, "group.id": f"rsep-{uuid.uuid4().hex}",
                      "enable.auto.commit": False, "log_level": 0})
        try:
            md = c.list_topics(topic, timeout=self.timeout).topics.get(topic)
            if md is None or md.error is not None or not md.partitions:
                return None
            best = None
            for p in sorted(md.partitions):
                lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=self.timeout)
                if hi <= lo:
                    continue
                c.assign([TopicPartition(topic, p, hi - 1)])
                deadline = time.monotonic() + self.timeout
                while (m := c.poll(0.2)) is None or m.error() is not None:
                    if time.monotonic() > deadline:
                        raise SpoolError(f"{self.url}: cannot read the topic's last record "
                                         f"(partition {p}) in {self.timeout:g} s")
                h = {str(k): v.decode() if isinstance(v, bytes) else str(v)
                     for k, v in _headers(m)}
                if h.get("rsep-run") != self.run:
                    continue
                t = (int(h["rsep-batch"]), int(h["rsep-seq"]), int(h["rsep-of"]))
                best = t if best is None or t > best else best
            return best
        except KafkaException as e:
            raise SpoolError(f"{self.url}: {e.args[0].str()}") from None
        finally:
            c.close()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        results = ordered(batch.filter("rtype = 'o'")).select("json")
        self.written += self._write(results, batch_id, self.topic)
        self._write(batch.filter("rtype = 'r'").select("json"), batch_id, self.dead_letter)

    def _write(self, df: DataFrame, batch_id: int, topic: str) -> int:
        if topic not in self.tails:
            self.tails[topic] = self._tail(topic)
        tail = self.tails[topic]
        skip = 0
        if tail is not None:
            if batch_id < tail[0] or (batch_id == tail[0] and tail[1] + 1 >= tail[2]):
                return 0  # written whole before the restart
            if batch_id == tail[0]:
                skip = tail[1] + 1  # cut short: its tail only
        # one partition: the records go out in output order (and monotonically_increasing_id
        # numbers them 0, 1, ... in it)
        df = df.coalesce(1).withColumn("seq", F.monotonically_increasing_id()).persist()
        try:
            n = df.count()
            if n <= skip:
                return 0

            def header(key: str, value) -> Column:
                return F.struct(F.lit(key).alias("key"), value.cast("string").cast("binary")
                                .alias("value"))

            headers = F.array(header("rsep-run", F.lit(self.run)),
                              header("rsep-batch", F.lit(batch_id)),
                              header("rsep-seq", F.col("seq")), header("rsep-of", F.lit(n)))
            timeout_ms = str(int(self.timeout * 1000))
            (df.filter(F.col("seq") >= skip)
             .select(F.col("json").alias("value"), headers.alias("headers"))
             .write.format("kafka")
             .option("kafka.bootstrap.servers", self.servers)
             .option("topic", topic)
             .option("includeHeaders", "true")
             .option("kafka.acks", "all")
             .option("kafka.enable.idempotence", "true")
             .option("kafka.delivery.timeout.ms", timeout_ms)
             # (the producer wants delivery.timeout.ms >= linger.ms + request.timeout.ms)
             .option("kafka.request.timeout.ms", str(int(timeout_ms) // 2))
             .save())
            return n - skip
        finally:
            df.unpersist()


def _headers(msg) -> list[tuple[str, bytes | str]]:
    return list(msg.headers() or [])


def connector_cached() -> bool:
    """Whether the connector is in Spark's default Ivy cache (``~/.ivy2.5.2``)."""
    group, artifact, version = CONNECTOR.split(":")
    return (Path.home() / ".ivy2.5.2" / "jars" / f"{group}_{artifact}-{version}.jar").is_file()


def fetch() -> None:
    """Resolve the connector and its dependencies into Spark's Ivy cache once (make
    kafka-deps), so that a run or a test starts without downloading them."""
    if connector_cached():
        return
    get_session("local[1]", conf=packages_conf({})).stop()
    if not connector_cached():
        raise SystemExit(f"{CONNECTOR} was not resolved into ~/.ivy2.5.2")


if __name__ == "__main__":
    fetch()
