"""``--stream IRI=kafka://HOST:PORT/TOPIC``: a Kafka topic read by the in-process engine.

Each Kafka record is read as an MQTT message is (rsep.stream.live): complete events of one
syntax (TriG by default), or with ``--stream-format rdfm`` one RDF Message, or with
``?format=jelly`` one Jelly ``RdfStreamFrame`` (as Jelly travels over Kafka). A malformed
record goes to the dead letter located at its partition and offset
(``kafka://HOST:PORT/TOPIC#P-OFFSET``); the run goes on.

Options (``?key=value``, rsep's, not the broker's): ``format`` (trig, nquads, jsonl, jelly),
``idle=SECONDS`` (end when no record came for that long, the broker being reachable;
without it the source reads until Ctrl-C), ``offset=earliest|latest`` (where a topic is
read from, default earliest: a topic is a log, replayed as a file is), ``group=NAME`` (read
as a consumer group, committing offsets: a rerun with the same group goes on after the
records an earlier run took; without it no offsets are committed) and ``timeout=SECONDS``
(default 10: how long the broker may be unreachable, at the start or mid-stream, before the
run fails with an error naming the topic and the last offset read; never a clean end).

Records of one partition are read in order; a topic of several partitions is merged in the
order the records arrive (the engine's ``--allowed-lateness`` then bounds their disorder).
The client is confluent-kafka (librdkafka, shipped in its wheel).
"""

from __future__ import annotations

import time as _time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

from rsep.stream.event import Event, Rejected
from rsep.stream.files import StreamFile
from rsep.stream.jsonl import parse_lines
from rsep.stream.live import with_byte_offset
from rsep.stream.messages import MessageLog, messages_mode, payload_messages
from rsep.stream.time import TimeConfig

SCHEME = "kafka://"
SYNTAXES = ("trig", "nquads", "jsonl", "jelly")
OPTIONS = ("format", "idle", "offset", "group", "timeout")
DEFAULT_PORT = 9092
POLL_S = 0.2


@dataclass(frozen=True)
class KafkaUrl:
    """``kafka://host[:port][,host:port...]/topic[?options]``, parsed."""

    servers: str  # librdkafka's bootstrap.servers: host:port[,host:port]
    topic: str
    options: dict[str, str]

    @property
    def base(self) -> str:
        return f"{SCHEME}{self.servers}/{self.topic}"


def kafka_url(url: str, *, allowed: tuple[str, ...] = OPTIONS) -> KafkaUrl:
    """Parse a Kafka URL; errors name what is wrong in it."""
    if not url.startswith(SCHEME):
        raise ValueError(f"not a Kafka URL (kafka://host:port/topic): {url!r}")
    rest, sep, query = url[len(SCHEME):].partition("?")
    hosts, slash, topic = rest.partition("/")
    topic = unquote(topic)
    if not slash or not topic:
        raise ValueError(f"Kafka URL without a topic (kafka://host:port/topic): {url!r}")
    if "/" in topic or not all(c.isalnum() or c in "._-" for c in topic):
        # Kafka's own rule for topic names
        raise ValueError(f"Kafka topic names are letters, digits, '.', '_' and '-': {topic!r} in {url!r}")
    servers = []
    for hp in hosts.split(","):
        host, colon, port = hp.rpartition(":") if ":" in hp else (hp, "", str(DEFAULT_PORT))
        if not host:
            raise ValueError(f"Kafka URL without a host: {url!r}")
        if not port.isdigit():
            raise ValueError(f"Kafka URL with a bad port {port!r}: {url!r}")
        servers.append(f"{host}:{int(port)}")
    opts = {k: v[-1] for k, v in parse_qs(query).items()} if sep else {}
    unknown = set(opts) - set(allowed)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))} in {url!r} "
                         f"({', '.join(allowed)})")
    if opts.get("format", "trig") not in SYNTAXES:
        raise ValueError(f"format must be {', '.join(SYNTAXES)} in {url!r}")
    if opts.get("offset", "earliest") not in ("earliest", "latest"):
        raise ValueError(f"offset must be earliest or latest in {url!r}")
    for k in ("idle", "timeout"):
        if k in opts:
            try:
                if float(opts[k]) <= 0:
                    raise ValueError
            except ValueError:
                raise ValueError(f"{k} must be a number of seconds > 0 in {url!r}") from None
    return KafkaUrl(",".join(servers), topic, opts)


def is_kafka(path: str) -> bool:
    return path.startswith(SCHEME)


class KafkaRecords:
    """The records of a topic as (partition, offset, value), in arrival order, until
    ``idle`` seconds pass without one while the broker answers (never, without ``idle``).

    The broker unreachable for ``timeout`` seconds raises :class:`ConnectionError`, at the
    start or mid-stream: a lost broker is never taken for the end of the stream."""

    def __init__(self, url: KafkaUrl, *, control=None) -> None:
        self.url = url
        self.control = control  # rsep.stream.live.Control (rsep serve), or None
        self.idle = float(url.options["idle"]) if "idle" in url.options else None
        self.timeout = float(url.options.get("timeout", "10"))
        self.count = 0
        self.last: tuple[int, int] | None = None

    def _where(self) -> str:
        at = (f"after {self.count} record(s), the last at partition {self.last[0]} offset "
              f"{self.last[1]}" if self.last else "before any record")
        return f"{self.url.base}: {at}"

    def __iter__(self) -> Iterator[tuple[int, int, bytes]]:
        # start-up: a run that reads no Kafka loads no client
        from confluent_kafka import (
            OFFSET_BEGINNING,
            OFFSET_END,
            Consumer,
            KafkaException,
            TopicPartition,
        )

        group = self.url.options.get("group")
        errors: list[str] = []
        conf = {
            "bootstrap.servers": self.url.servers,
            # without a group of the user's, a group of its own that commits nothing
            "group.id": group or f"rsep-{uuid.uuid4().hex}",
            "enable.auto.commit": group is not None,
            "auto.offset.reset": self.url.options.get("offset", "earliest"),
            "enable.partition.eof": False,
            "error_cb": lambda err: errors.append(str(err)),
            "socket.connection.setup.timeout.ms": int(self.timeout * 1000),
            # a topic created after the start is seen within a second
            "topic.metadata.refresh.interval.ms": 1000,
            "log_level": 0,  # its errors come through error_cb, as located errors
        }
        consumer = Consumer(conf)
        try:
            partitions = self._partitions(consumer, KafkaException)
            ready = group is None
            if group is not None:
                # idle counts from when the group's partitions have positions (joined, and
                # its committed offsets fetched): a slow join is not an empty topic
                consumer.subscribe([self.url.topic])
            else:
                start = OFFSET_BEGINNING if conf["auto.offset.reset"] == "earliest" else OFFSET_END
                consumer.assign([TopicPartition(self.url.topic, p, start) for p in partitions])
            if self.control is not None:
                self.control.ready.set()
            last = _time.monotonic()
            down_since: float | None = None
            while self.control is None or not self.control.stop.is_set():
                msg = consumer.poll(POLL_S)
                now = _time.monotonic()
                if msg is None:
                    if errors:
                        errors.clear()
                        # librdkafka retries on its own; a metadata request tells whether
                        # the broker is back
                        if down_since is None:
                            down_since = now
                    if down_since is not None:
                        if self._reachable(consumer, KafkaException):
                            down_since = None
                            last = now  # idle counts from when the broker answered again
                        elif now - down_since >= self.timeout:
                            raise ConnectionError(f"{self._where()}; the broker has been "
                                                  f"unreachable for {self.timeout:g} s")
                        continue
                    if not ready:
                        parts = consumer.assignment()
                        if parts and self._committed(consumer, parts, KafkaException):
                            ready, last = True, now
                        elif now - last >= self.timeout:
                            raise ConnectionError(f"{self.url.base}: the consumer group "
                                                  f"{group!r} was assigned no partition in "
                                                  f"{self.timeout:g} s")
                        continue
                    if self.idle is not None and now - last >= self.idle:
                        return
                    continue
                err = msg.error()
                if err is not None:
                    # librdkafka's own conditions (negative codes) are retried by it;
                    # the broker's refusals (positive, not retriable) end the run
                    if err.fatal() or (not err.retriable() and err.code() > 0):
                        raise ConnectionError(f"{self._where()}: {err.str()}")
                    if down_since is None:
                        down_since = now
                    continue
                down_since = None
                errors.clear()
                ready = True
                last = now
                p, o = msg.partition(), msg.offset()
                assert p is not None and o is not None  # (a record's, not an event's)
                self.count += 1
                self.last = (p, o)
                yield p, o, msg.value() or b""
        finally:
            consumer.close()

    def _partitions(self, consumer, KafkaException) -> list[int]:
        """The topic's partitions, waiting for the topic to exist (as an MQTT subscription
        waits for publishers); the broker unreachable for ``timeout`` is an error."""
        deadline = _time.monotonic() + self.timeout
        while True:
            try:
                md = consumer.list_topics(self.url.topic, timeout=max(0.5, min(self.timeout, 5.0)))
            except KafkaException as e:
                if _time.monotonic() >= deadline:
                    raise ConnectionError(f"{self.url.base}: cannot reach the broker in "
                                          f"{self.timeout:g} s: {e.args[0].str()}") from None
                continue
            t = md.topics.get(self.url.topic)
            if t is not None and t.error is None and t.partitions:
                return sorted(t.partitions)
            if self.control is not None and self.control.stop.is_set():
                return []
            _time.sleep(POLL_S)

    def _committed(self, consumer, parts, KafkaException) -> bool:
        """Whether the group's coordinator answers for its offsets (a new broker creates
        its offsets topic at the first group's join, which takes seconds)."""
        try:
            consumer.committed(parts, timeout=POLL_S * 5)
            return True
        except KafkaException:
            return False

    def _reachable(self, consumer, KafkaException) -> bool:
        try:
            consumer.list_topics(self.url.topic, timeout=POLL_S * 5)
            return True
        except KafkaException:
            return False


class KafkaStream:
    """Events (and rejected records) from a Kafka topic, as they arrive."""

    def __init__(self, url: str, stream: str, *, messages: bool = False,
                 time: TimeConfig | None = None, arrival: bool = False, control=None) -> None:
        self.parsed = kafka_url(url)  # errors now, not when the run reaches the source
        self.url = self.parsed.base
        self.stream = stream
        self.control = control
        self.syntax = self.parsed.options.get("format", "trig")
        self.messages = messages_mode(self.syntax, messages, url)
        self.time = time or TimeConfig()
        self.arrival = arrival
        self.records = KafkaRecords(self.parsed, control=control)

    def __iter__(self) -> Iterator[Event | Rejected]:
        if self.syntax == "jelly":
            yield from MessageLog(self.url, self.stream, time=self.time, fmt="jelly",
                                  arrival=self.arrival, delimited=False,
                                  source=(v for _, _, v in self.records))
            return
        # Bytes that are not UTF-8 are kept as lone surrogates (surrogateescape), as the MQTT
        # and file readers keep them, so the record holding one is rejected with its offset,
        # never read with U+FFFD in its place (issue 52: no silent loss).
        if self.messages:  # each record one RDF Message, as each MQTT message is
            yield from payload_messages(self.url, self.stream,
                                        (v.decode("utf-8", errors="surrogateescape")
                                         for _, _, v in self.records),
                                        fmt=self.syntax, time=self.time, arrival=self.arrival)
            return
        for p, o, value in self.records:
            yield from self._record(value.decode("utf-8", errors="surrogateescape"),
                                    f"{self.url}#{p}-{o:012d}")

    def _record(self, text: str, origin: str) -> Iterator[Event | Rejected]:
        if self.syntax == "jsonl":
            yield from parse_lines(text.splitlines(), self.stream, origin)
            return
        for it in StreamFile("record", self.stream, time=self.time, fmt=self.syntax, text=text):
            if isinstance(it, Event):
                it.origin = origin + it.origin[len("record"):]
            else:
                it.origin = origin
                it.reason = with_byte_offset(it.reason, text, it.line, it.column, "record")
            yield it
