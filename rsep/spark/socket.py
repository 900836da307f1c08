"""A TCP socket source (format ``rsep-socket``) that frames RDF text into whole events.

Spark's built-in ``socket`` source gives one row per line and cannot replay: a
TriG graph block spans lines, and an event's time triple must reach the parser
in the same text as its graph (rsep.spark.parse), so rsep reads the connection
itself, cuts it into *frames* of complete events, and spools each frame (as the
MQTT source does) so that Spark's offsets are replayable.

Framing (``rsep.stream.framing.Framer``, shared with every source): TriG is cut into records by the same tokenizer as stream
files; directives (PREFIX/BASE) are not frames, they are prepended to every later
frame. Default-graph statements (time triples) and graph blocks are grouped so
that a frame is ``statements + block`` (time first) or ``block + statements``
(time last): a frame closes after a block that follows statements, before a block
that follows ``block + statements``, at a blank line once it holds a block, and at
the end of the connection. N-Quads lines group the same way, a block being a run
of quads of one graph. JSON lines: one frame per line.

Delivery: nothing acknowledges TCP data to the sender, so text received but not
yet spooled when the process dies is lost (at-most-once up to the spool);
from the spool on, exactly-once as for MQTT. A restarted query reconnects and
reads what the server sends from then on.
"""

from __future__ import annotations

import codecs
import socket as _socket
import threading
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource

from rsep.spark.spool import SCHEMA, SpooledStreamReader, SpoolError, now_us
from rsep.stream.framing import Framer
from rsep.stream.live import tcp_url

parse_url = tcp_url  # one URL syntax for rsep run's live sources and Spark's

FORMAT = "rsep-socket"

class SocketDataSource(DataSource):
    """Options: ``host``, ``port``, ``stream`` (IRI; default ``tcp://host:port``),
    ``format`` (trig|nquads|jsonl, default trig), ``reconnect`` (true: reconnect after
    the server closes, every ``retryInterval`` seconds, 1), ``connectTimeout`` (10),
    ``spoolDir``, ``maxRecordsPerBatch``, ``recordsPerPartition``, ``startingOffsets``,
    ``fsync``, as for rsep-mqtt."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema) -> SocketStreamReader:
        opts = {k.lower(): v for k, v in self.options.items()}
        opts.setdefault("format", "trig")
        return SocketStreamReader(opts)


class SocketStreamReader(SpooledStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        # Spark hands options over case-insensitively; a caller's plain dict ("spoolDir")
        # must not lose an option silently either
        options = {str(k).lower(): v for k, v in options.items()}
        self.host = options.get("host", "localhost")
        if "port" not in options:
            raise ValueError("rsep-socket needs option port")
        self.port = int(options["port"])
        self.url = f"tcp://{self.host}:{self.port}"
        self.stream = options.get("stream") or self.url
        self.reconnect = options.get("reconnect", "true").lower() == "true"
        self.retry = float(options.get("retryinterval", "1"))
        self.timeout = float(options.get("connecttimeout", "10"))
        super().__init__(options)
        Framer(self.format or "trig")  # option check now, not in the receiver thread

    def describe(self) -> str:
        return f"socket source {self.url}"

    def _start(self) -> None:
        self._stopping = threading.Event()
        try:
            sock = _socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as e:
            raise SpoolError(f"cannot connect to {self.url}: {e}") from None
        self._sock: _socket.socket | None = sock
        self._thread = threading.Thread(target=self._receive, args=(sock,), daemon=True,
                                        name="rsep-socket")
        self._thread.start()

    def _receive(self, sock: _socket.socket) -> None:
        try:
            while not self._stopping.is_set():
                self._read_connection(sock)
                if not self.reconnect:
                    return
                new: _socket.socket | None = None
                while new is None and not self._stopping.wait(self.retry):
                    try:
                        new = _socket.create_connection((self.host, self.port), timeout=self.timeout)
                    except OSError:
                        new = None
                self._sock = new
                if new is None:
                    return
                sock = new
        except BaseException as e:
            if not self._stopping.is_set():
                self.failure = e

    def _read_connection(self, sock: _socket.socket) -> None:
        # Each connection is a new document: its own prefixes, its own framing.
        framer = Framer(self.format or "trig")
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        sock.settimeout(None)
        with sock:
            while True:
                try:
                    data = sock.recv(1 << 16)
                except OSError:
                    if self._stopping.is_set():
                        return
                    data = b""
                frames = framer.feed(decoder.decode(data, final=not data)) if data else (
                    framer.feed(decoder.decode(b"", final=True)) + framer.finish())
                for f in frames:
                    self.spool.append("", f.encode("utf-8"), now_us())
                if not data:
                    return

    def row(self, seq: int, key: str, payload: bytes) -> tuple[str, str, str]:
        return self.stream, f"{self.url}#{seq:012d}", payload.decode("utf-8")

    def stop(self) -> None:
        if not self._started:
            return
        self._stopping.set()
        sock = getattr(self, "_sock", None)
        if sock is not None:
            try:
                sock.shutdown(_socket.SHUT_RDWR)
            except OSError:
                pass
        t = getattr(self, "_thread", None)
        if t is not None:
            t.join(5)
        super().stop()


def register(spark: SparkSession) -> None:
    spark.dataSource.register(SocketDataSource)


def socket_records(spark: SparkSession, host: str, port: int, *, stream: str | None = None,
                   fmt: str = "trig", spool_dir: str | Path | None = None,
                   **options: str) -> DataFrame:
    """The raw-records streaming DataFrame (stream, origin, text, arrival, format) read from a
    TCP server at ``host:port`` sending TriG, N-Quads or JSON lines."""
    opts = {"host": host, "port": str(port), "format": fmt}
    if stream is not None:
        opts["stream"] = stream
    if spool_dir is not None:
        opts["spoolDir"] = str(spool_dir)
    opts.update({k: str(v) for k, v in options.items()})
    register(spark)
    return spark.readStream.format(FORMAT).options(**opts).load()
