"""A TCP socket source (format ``rsep-socket``) that frames RDF text into whole events.

Spark's built-in ``socket`` source gives one row per line and cannot replay: a
TriG graph block spans lines, and an event's time triple must reach the parser
in the same text as its graph (rsep.spark.parse), so rsep reads the connection
itself, cuts it into *frames* of complete events, and spools each frame (as the
MQTT source does) so that Spark's offsets are replayable.

Framing (``Framer``): TriG is cut into records by the same tokenizer as stream
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
import re
import socket as _socket
import threading
from pathlib import Path

import pyoxigraph as ox
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource

from rsep.spark.spool import SCHEMA, SpooledStreamReader, SpoolError, now_us
from rsep.stream.files import TOKEN, split_records

FORMAT = "rsep-socket"

_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")


class Framer:
    """Incremental: ``feed`` text as it arrives, get the complete frames; ``finish`` at EOF."""

    def __init__(self, fmt: str = "trig") -> None:
        if fmt not in ("trig", "nquads", "jsonl"):
            raise ValueError(f"format must be trig, nquads or jsonl, not {fmt!r}")
        self.fmt = fmt
        self.header = ""  # TriG directives seen so far
        self._buf = ""
        self._line = 1
        self._scan = 0  # TriG: buffer offset scanned so far, and the brace depth there
        self._depth = 0
        self._items: list[str] = []
        self._kinds = ""  # one letter per item: S statement, B block
        self._graph: str | None = None  # N-Quads: graph of the open block
        self._block: list[str] = []

    def feed(self, text: str) -> list[str]:
        self._buf += text
        if self.fmt == "trig":
            return self._trig(final=False)
        out: list[str] = []
        *lines, self._buf = self._buf.split("\n")
        for line in lines:
            self._line_item(line, out)
        return out

    def finish(self) -> list[str]:
        out: list[str] = []
        if self.fmt == "trig":
            out = self._trig(final=True)
        elif self._buf:
            self._line_item(self._buf, out)
            self._buf = ""
        self._end_block(out)
        self._close(out)
        return out

    # -- TriG

    def _trig(self, final: bool) -> list[str]:
        if final:
            self._scan = self._depth = 0
            return self._trig_lines(len(self._buf), final=True)
        end = self._complete()
        return self._trig_lines(end, final=False) if end > 0 else []

    def _complete(self) -> int:
        """Offset after the last complete record in the buffer, scanning each character
        once (re-tokenizing a large graph block at every read would be quadratic)."""
        text = self._buf
        upto = text.rfind("\n") + 1  # whole lines only: one-line tokens are never cut
        end = 0
        for m in TOKEN.finditer(text, self._scan, upto):
            if m.group("open3") is not None:
                upto = m.start()  # a long string not closed yet: wait for more text
                break
            brace = m.group("brace")
            if brace == "{":
                self._depth += 1
            elif brace == "}":
                self._depth -= 1
                if self._depth <= 0:
                    self._depth, end = 0, m.end()
            elif m.group("dot") is not None and self._depth <= 0:
                end = m.end()
        self._scan = max(upto, self._scan)
        return end

    def _trig_lines(self, end: int, final: bool) -> list[str]:
        records, consumed, self._line = split_records(self._buf[:end], self._line, final)
        out: list[str] = []
        pos = 0
        for r in records:
            at = self._buf.find(r.text, pos)
            if self._kinds and "B" in self._kinds and _BLANK_LINE.search(self._buf, pos, at):
                self._close(out)
            pos = at + len(r.text)
            if r.directive:
                self.header += r.text.strip() + "\n"
            else:
                # A block's record ends with its closing brace; a statement's with a dot.
                self._add("B" if r.text.rstrip().endswith("}") else "S", r.text.strip(), out)
        if self._kinds and "B" in self._kinds and _BLANK_LINE.search(self._buf, pos, consumed):
            self._close(out)
        self._buf = self._buf[consumed:]
        self._scan -= consumed
        if self._scan < 0:
            self._scan = self._depth = 0
        return out

    # -- line formats

    def _line_item(self, line: str, out: list[str]) -> None:
        s = line.strip()
        if self.fmt == "jsonl":
            if s:
                out.append(s + "\n")
            return
        if not s or s.startswith("#"):
            if not s:
                self._end_block(out)
                if "B" in self._kinds:
                    self._close(out)
            return
        graph = _quad_graph(s)
        if graph is not None and graph == self._graph:
            self._block.append(s)
            return
        self._end_block(out)
        if graph is None:
            self._add("S", s, out)
        else:
            self._graph, self._block = graph, [s]

    def _end_block(self, out: list[str]) -> None:
        if self._graph is not None:
            block = "\n".join(self._block)
            self._graph, self._block = None, []
            self._add("B", block, out)

    # -- grouping

    def _add(self, kind: str, text: str, out: list[str]) -> None:
        if kind == "B" and self._kinds.startswith("B") and self._kinds.endswith("S"):
            self._close(out)  # B S+ then a new block: time-last layout
        elif kind == "S" and self._kinds.endswith("B") and self._kinds.startswith("S"):
            self._close(out)  # S+ B then a statement: the next event's time
        elif kind == "B" and "B" in self._kinds:
            self._close(out)  # two blocks never share a frame
        self._items.append(text)
        self._kinds += kind
        if self.fmt == "trig" and kind == "B" and self._kinds.startswith("S"):
            self._close(out)  # S+ B: time-first layout, complete now

    def _close(self, out: list[str]) -> None:
        if self._items:
            body = "\n".join(self._items) + "\n"
            out.append(self.header + body if self.header else body)
            self._items, self._kinds = [], ""


def _quad_graph(line: str) -> str | None:
    """The graph name of an N-Quads line (None: default graph or unparsable)."""
    try:
        quads = list(ox.parse(line, format=ox.RdfFormat.N_QUADS))
    except SyntaxError:
        return None
    if not quads or isinstance(quads[0].graph_name, ox.DefaultGraph):
        return None
    return str(quads[0].graph_name)


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


def parse_url(url: str) -> tuple[str, int]:
    """``tcp://host:port`` -> (host, port)."""
    if not url.startswith("tcp://"):
        raise ValueError(f"not a TCP URL (tcp://host:port): {url!r}")
    host, _, port = url[len("tcp://"):].rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"TCP URL needs a host and a port (tcp://host:port): {url!r}")
    return host, int(port)
