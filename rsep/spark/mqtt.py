"""MQTT in and out of rsep's Spark pipeline.

Source (format ``rsep-mqtt``): a Python Data Source whose stream reader, in the
driver-side Python process, subscribes with QoS 1 on a persistent MQTT 5 session
and appends each message to a local :class:`~rsep.spark.spool.Spool` *before*
acknowledging it (manual PUBACK after fsync). Spark's offsets are sequence
numbers in the spool, so a query restarted from its checkpoint re-reads every
message of an uncommitted batch, and messages published while it was down are
queued by the broker for the persistent session (within the broker's limits,
e.g. mosquitto's ``max_queued_messages``) and delivered at reconnection.

Delivery: at-least-once from broker to spool (a crash between the spool write
and the PUBACK makes the broker redeliver: one duplicate row), exactly-once from
spool to Spark. A broker restart or a lost connection is waited out for
``reconnectTimeout`` seconds on the same session, whose resends (flagged dup) of what
the spool already holds are acknowledged, not spooled again; a broker back without the
session, or not back in time, fails the query (the next trigger raises). QoS 0 subscriptions are at-most-once. Retained messages are not
read (they predate the subscription).

Sink: :class:`MqttSink`, a ``foreachBatch`` writer publishing each output row as
the CLI's jsonl object, QoS 1, waiting for every PUBACK before the batch counts
as done.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource

from rsep.spark.pipeline import collect_outputs, collect_rejected
from rsep.spark.spool import SCHEMA, SpooledStreamReader, SpoolError, now_us
from rsep.stream.live import live_options, mqtt_url
from rsep.stream.messages import messages_mode

parse_url = mqtt_url  # one URL syntax for rsep run's live sources and Spark's

FORMAT = "rsep-mqtt"


class MqttDataSource(DataSource):
    """Options: ``host`` (localhost), ``port`` (1883), ``topic`` (comma-separated topic
    filters), ``stream`` (one stream IRI for every topic) or ``streams`` (JSON object
    topic filter -> IRI; default: ``mqtt://host:port/<topic>``), ``qos`` (1), ``clientId``
    (default derived from the spool, stable across restarts), ``spoolDir`` (no spoolDir: a
    temporary spool, nothing survives a restart), ``sessionExpiry`` (seconds the broker
    keeps the session while the query is down: 86400 with a spoolDir, else 0, so runs
    without one leave no session queueing behind), ``connectTimeout`` (10),
    ``maxRecordsPerBatch``, ``recordsPerPartition`` (2000), ``startingOffsets``
    (earliest|latest in the spool), ``fsync`` (true), ``reconnectTimeout`` (30: seconds
    the source waits for a lost broker, reconnecting on its session, before the query
    fails; a broker back without the session fails it at once), ``username``, ``password``,
    ``format`` (trig|nquads|jsonl; default: detected per message; rdfm-trig|rdfm-nquads: each
    message one RDF Message in that syntax). Each message must hold complete events (an
    event's time triple with its graph, prefixes included)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema) -> MqttStreamReader:
        return MqttStreamReader({k.lower(): v for k, v in self.options.items()})


class MqttStreamReader(SpooledStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        # Spark hands options over case-insensitively; a caller's plain dict ("spoolDir")
        # must not lose an option silently either
        options = {str(k).lower(): v for k, v in options.items()}
        self.host = options.get("host", "localhost")
        self.port = int(options.get("port", "1883"))
        self.topics = [t.strip() for t in options.get("topic", "").split(",") if t.strip()]
        if not self.topics:
            raise ValueError("rsep-mqtt needs option topic (one or more comma-separated filters)")
        self.qos = int(options.get("qos", "1"))
        if self.qos not in (0, 1, 2):
            raise ValueError(f"qos must be 0, 1 or 2, not {self.qos}")
        if "stream" in options and "streams" in options:
            raise ValueError("give either option stream or option streams, not both")
        self.streams: list[tuple[str, str]] = []
        if "streams" in options:
            try:
                self.streams = list(json.loads(options["streams"]).items())
            except (ValueError, AttributeError) as e:
                raise ValueError(f"option streams must be a JSON object topic -> IRI: {e}") from None
        self.stream = options.get("stream")
        self.reconnect = float(options.get("reconnecttimeout", "30"))
        if not self.reconnect > 0:
            raise ValueError(f"reconnectTimeout must be a positive number of seconds, not "
                             f"{options['reconnecttimeout']!r}")
        # Without a spoolDir nothing survives the query, but the session must survive a
        # broker outage the source waits out, or what the broker queued meanwhile is lost.
        self.session_expiry = int(options.get("sessionexpiry", "86400")
                                  if options.get("spooldir")
                                  else options.get("sessionexpiry", str(int(self.reconnect) + 10)))
        self.timeout = float(options.get("connecttimeout", "10"))
        super().__init__(options)
        # Only picklable state here: Spark ships planning readers to its workers.
        self.client: paho.Client | None = None

    def _start(self) -> None:
        options = self.options
        self._cache: dict[str, tuple[str, str]] = {}
        self._pending: list[tuple[int, int]] = []  # (mid, qos) spooled, not yet acknowledged
        self._plock = threading.Lock()
        self._ready = threading.Event()
        self._refused: str | None = None
        self._stop_sync = threading.Event()
        client_id = options.get("clientid") or f"rsep-{self.spool.id[:20]}"
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id,
                                  protocol=paho.MQTTv5, manual_ack=True)
        if options.get("username"):
            self.client.username_pw_set(options["username"], options.get("password"))
        self._connects = 0
        self._seen: set[int] = set()  # packet ids spooled on this connection (QoS > 0)
        self._resent: set[int] = set()  # and on the one before, for the broker's resends
        self._down: float | None = None  # monotonic time the broker was lost
        # (paho sleeps these as floats; its annotation says int)
        self.client.reconnect_delay_set(min_delay=0.1, max_delay=1.0)  # type: ignore[arg-type]
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = self.session_expiry
        # Acks wait for fsync: allow enough messages in flight to keep the link busy.
        props.ReceiveMaximum = 1000
        try:
            self.client.connect(self.host, self.port, keepalive=30, clean_start=False,
                                properties=props)
        except OSError as e:
            raise SpoolError(f"cannot connect to MQTT broker {self.host}:{self.port}: {e}") from None
        self.client.loop_start()
        if not self._ready.wait(self.timeout) or self._refused:
            why = self._refused or f"no subscription acknowledged within {self.timeout} s"
            raise SpoolError(f"{self.describe()}: {why}")
        # Acknowledge promptly between triggers too, or the broker stops sending.
        self._syncer = threading.Thread(target=self._sync_loop, daemon=True, name="rsep-mqtt-sync")
        self._syncer.start()

    def describe(self) -> str:
        return f"MQTT source mqtt://{self.host}:{self.port}/{','.join(self.topics)}"

    def _on_connect(self, client, userdata, flags, reason, properties) -> None:
        if reason.is_failure:
            if not self._ready.is_set():
                self._refused = f"broker refused the connection: {reason}"
                self._ready.set()
            return
        self._connects += 1
        if self._connects > 1 and not flags.session_present:
            # A broker restarted without persistence (or past sessionExpiry): what it had
            # queued for us is gone, and a run that went on would have lost it silently.
            self.failure = SpoolError(
                "the broker came back without this source's session (restarted without "
                "persistence, or down longer than sessionExpiry): the messages published "
                "while the source was disconnected are lost")
            return
        if self._connects > 1:
            # The session resumed: the broker sends again, flagged dup, what it saw no
            # PUBACK for. Those spooled already are acknowledged again, not spooled twice
            # (acks pending for the old connection are void: their resends take them).
            with self._plock:
                self._resent = self._seen | {mid for mid, _ in self._pending}
                self._seen, self._pending = set(), []
        self._down = None
        client.subscribe([(t, SubscribeOptions(qos=self.qos, retainHandling=2)) for t in self.topics])

    def _on_disconnect(self, client, userdata, flags, reason, properties) -> None:
        if self._down is None:
            self._down = time.monotonic()

    def _on_subscribe(self, client, userdata, mid, reasons, properties) -> None:
        bad = [f"{t}: {r}" for t, r in zip(self.topics, reasons, strict=False) if r.is_failure]
        if bad:
            self._refused = "subscription refused: " + "; ".join(bad)
        self._ready.set()

    def _on_message(self, client, userdata, msg) -> None:
        if msg.qos > 0 and msg.dup and msg.mid in self._resent:
            with self._plock:
                self._resent.discard(msg.mid)
                self._pending.append((msg.mid, msg.qos))  # spooled on the old connection
            return
        try:
            self.spool.append(msg.topic, msg.payload, now_us())
        except BaseException as e:  # never acknowledged: the broker keeps it
            self.failure = e
            return
        if msg.qos > 0:
            with self._plock:
                self._pending.append((msg.mid, msg.qos))
                self._seen.add(msg.mid)

    def _sync(self) -> int:
        # Take the mids first: each was appended before it was listed, so this sync covers it.
        with self._plock:
            mids, self._pending = self._pending, []
        durable = self.spool.sync()
        for mid, qos in mids:
            assert self.client is not None  # (the messages came through it)
            self.client.ack(mid, qos)
        return durable

    def _sync_loop(self) -> None:
        while not self._stop_sync.wait(0.02):
            down = self._down
            if down is not None and time.monotonic() - down >= self.reconnect \
                    and self.failure is None:
                self.failure = SpoolError(
                    f"the broker has been unreachable for {self.reconnect:g} s "
                    "(reconnectTimeout): the stream did not end, it was cut")
            try:
                if self._pending:
                    self._sync()
            except BaseException as e:
                self.failure = e
                return

    def row(self, seq: int, key: str, payload: bytes) -> tuple[str, str, str]:
        sm = self._cache.get(key)
        if sm is None:
            url = f"mqtt://{self.host}:{self.port}/{key}"
            stream = self.stream or next(
                (iri for f, iri in self.streams if paho.topic_matches_sub(f, key)), url)
            sm = self._cache[key] = (stream, url)
        # The zero-padded spool number orders simultaneous events by arrival (parse.py).
        return sm[0], f"{sm[1]}#{seq:012d}", payload.decode("utf-8", errors="replace")

    def stop(self) -> None:
        if not self._started:
            return
        self._stop_sync.set()
        try:
            if self.client is not None:
                self._sync()
        finally:
            if self.client is not None:
                self.client.disconnect()
                self.client.loop_stop()
            self.spool.close()


def register(spark: SparkSession) -> None:
    spark.dataSource.register(MqttDataSource)


def mqtt_records(spark: SparkSession, url_or_options: str | Mapping[str, str], *,
                 stream: str | None = None, spool_dir: str | Path | None = None,
                 **options: str) -> DataFrame:
    """The raw-records streaming DataFrame (stream, origin, text, arrival) of an MQTT topic.

    ``url_or_options`` is ``mqtt://host:port/topic`` or the source's options; ``stream``
    names the stream IRI (default: the URL). Give ``spool_dir`` (e.g. inside the query's
    checkpoint directory) for restarts to resume where they stopped.
    """
    if isinstance(url_or_options, str):
        host, port, topic = parse_url(url_or_options)
        opts: dict[str, str] = {"host": host, "port": str(port), "topic": topic}
    else:
        opts = dict(url_or_options)
    if stream is not None:
        opts["stream"] = stream
    if spool_dir is not None:
        opts["spoolDir"] = str(spool_dir)
    opts.update({k: str(v) for k, v in options.items()})
    register(spark)
    return spark.readStream.format(FORMAT).options(**opts).load()


def session_id(checkpoint: str | Path, stream: str, url: str) -> str:
    """The MQTT client id of a checkpointed run's source: the same for a run restarted from
    its checkpoint, so it resumes the broker session that queued what came meanwhile (and a
    producer can open that session before the first run)."""
    # (the URL without rsep's ?options: a restart with another ?idle is the same session)
    base = url.partition("?")[0]
    h = hashlib.blake2b(f"{Path(checkpoint).resolve()}\n{stream}\n{base}".encode(), digest_size=10)
    return "rsep-" + h.hexdigest()


def mqtt_stream(spark: SparkSession, stream: str, url: str, *, stream_format: str = "auto",
                checkpoint: str | Path | None = None) -> tuple[DataFrame, float | None]:
    """A ``--stream IRI=mqtt://HOST:PORT/TOPIC`` of ``rsep run --engine spark``: its raw
    records, read as the in-process engine reads the URL (rsep.stream.live: ``?format=``,
    ``?reconnect=``; with ``--stream-format rdfm`` each broker message one RDF Message), and
    its ``?idle=`` (None: none given). With ``checkpoint`` the spool is in it and the
    session persistent (:func:`session_id`); without, nothing outlives the run."""
    base, opts = check_stream(url, stream_format)
    host, port, topic = parse_url(base)
    fmt = opts.get("format")
    if stream_format == "rdfm":
        fmt = "rdfm-" + (fmt or "trig")
    options = {"host": host, "port": str(port), "topic": topic}
    if fmt:
        options["format"] = fmt
    if "reconnect" in opts:
        options["reconnectTimeout"] = opts["reconnect"]
    spool = None
    if checkpoint is not None:
        options["clientId"] = session_id(checkpoint, stream, url)
        spool = Path(checkpoint) / "mqtt" / options["clientId"]
    idle = float(opts["idle"]) if "idle" in opts else None
    return mqtt_records(spark, options, stream=stream, spool_dir=spool), idle


def check_stream(url: str, stream_format: str = "auto") -> tuple[str, dict[str, str]]:
    """An MQTT ``--stream`` URL the Spark source reads; errors before a session starts."""
    base, opts = live_options(url)
    parse_url(base)
    if opts.get("format") == "jelly" or stream_format == "jelly":
        raise ValueError(f"{url}: Jelly over MQTT is read by the in-process engine (rsep run "
                         "without --engine spark); on Spark give TriG, N-Quads or JSON lines")
    messages_mode(opts.get("format", "trig"), stream_format == "rdfm", url)
    return base, opts


# ------------------------------------------------------------------ sink


def message_ids(batch_id: int, payloads: Iterable[bytes]) -> list[str]:
    """Ids that survive a replay of the batch in any row order: batch id, payload digest and
    the occurrence number among identical payloads."""
    seen: dict[str, int] = {}
    ids = []
    for p in payloads:
        d = hashlib.blake2b(p, digest_size=12).hexdigest()
        k = seen.get(d, 0)
        seen[d] = k + 1
        ids.append(f"{batch_id}:{d}:{k}")
    return ids


class MqttSink:
    """``foreachBatch`` writer publishing a micro-batch's outputs to ``topic``, QoS 1, each
    as the JSON object of the CLI's jsonl (``Output.to_json``). On a SparkPipeline's
    output (columns ``rtype``/``payload``) results go out in output order and rejected
    records to ``dead_letter`` (default ``<topic>/dead-letter``); on any other DataFrame
    every row is published as its fields (null fields dropped).

    Idempotence, as far as MQTT allows: the batch returns only when the broker has
    acknowledged every message; with ``state_dir`` the last fully published batch id
    is recorded there, and a batch Spark replays after that point is not re-sent. A
    crash between the last PUBACK and that record re-sends the batch: each message
    carries MQTT 5 user properties ``rsep-batch``, ``rsep-seq`` and ``rsep-id``
    (:func:`message_ids`, the same on a replay) for consumers to drop duplicates.
    Keep ``state_dir`` inside the query's checkpoint directory: a fresh checkpoint
    numbers batches from 0 again, and must not find an old record.
    """

    def __init__(self, url: str, *, qos: int = 1, client_id: str | None = None,
                 state_dir: str | Path | None = None, timeout: float = 30.0,
                 dead_letter: str | None = None,
                 username: str | None = None, password: str | None = None) -> None:
        self.host, self.port, self.topic = parse_url(url)
        self.dead_letter = dead_letter or self.topic + "/dead-letter"
        for t in (self.topic, self.dead_letter):
            if any(c in t for c in "+#"):
                raise ValueError(f"cannot publish to a topic filter with wildcards: {t!r}")
        self.qos = qos
        self.client_id = client_id or ""
        self.state = Path(state_dir) / "mqtt-sink.json" if state_dir is not None else None
        self.timeout = timeout
        self.auth = (username, password)
        self._client: paho.Client | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_client": None}

    def _connect(self) -> paho.Client:
        if self._client is not None and self._client.is_connected():
            return self._client
        if self._client is not None:
            self._client.loop_stop()
        c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=self.client_id,
                        protocol=paho.MQTTv5)
        if self.auth[0]:
            c.username_pw_set(*self.auth)
        connected = threading.Event()
        c.on_connect = lambda *a: connected.set()
        try:
            c.connect(self.host, self.port, keepalive=30)
        except OSError as e:
            raise SpoolError(f"cannot connect to MQTT broker {self.host}:{self.port}: {e}") from None
        c.loop_start()
        if not connected.wait(self.timeout) or not c.is_connected():
            c.loop_stop()
            raise SpoolError(f"MQTT broker {self.host}:{self.port} did not accept the connection")
        self._client = c
        return c

    def _done(self) -> int:
        if self.state is None or not self.state.exists():
            return -1
        return int(json.loads(self.state.read_text())["batch"])

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        if batch_id <= self._done():
            return
        if "rtype" in batch.columns and "payload" in batch.columns:
            payloads = [_dump(o.to_json()) for o in collect_outputs(batch)]
            rejected = [r.encode() for r in collect_rejected(batch)]
        else:
            payloads = [_dump(_clean(r.asDict(recursive=True))) for r in batch.toLocalIterator()]
            rejected = []
        self.publish(batch_id, payloads)
        self.publish(batch_id, rejected, self.dead_letter)
        if self.state is not None:
            self.state.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.state.with_suffix(".tmp")
            tmp.write_text(json.dumps({"batch": batch_id}))
            tmp.replace(self.state)

    def publish(self, batch_id: int, payloads: list[bytes], topic: str | None = None) -> None:
        if not payloads:
            return
        topic = topic or self.topic
        c = self._connect()
        infos = []
        for seq, (p, mid) in enumerate(zip(payloads, message_ids(batch_id, payloads), strict=True)):
            props = Properties(PacketTypes.PUBLISH)
            props.UserProperty = [("rsep-batch", str(batch_id)), ("rsep-seq", str(seq)),
                                  ("rsep-id", mid)]
            props.ContentType = "application/json"
            info = c.publish(topic, p, qos=self.qos, properties=props)
            if info.rc != paho.MQTT_ERR_SUCCESS and info.rc != paho.MQTT_ERR_NO_CONN:
                raise SpoolError(f"publishing to {topic}: {paho.error_string(info.rc)}")
            infos.append(info)
        deadline = time.monotonic() + self.timeout
        for info in infos:
            info.wait_for_publish(max(0.0, deadline - time.monotonic()))
            if not info.is_published():
                raise SpoolError(f"MQTT broker {self.host}:{self.port} did not acknowledge batch "
                                 f"{batch_id} on {topic} within {self.timeout} s")

    def close(self) -> None:
        if self._client is not None:
            self._client.disconnect()
            self._client.loop_stop()
            self._client = None


def _dump(d: dict) -> bytes:
    return json.dumps(d, ensure_ascii=False).encode()


def _clean(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}
