"""Live sources for the in-process engine: ``tcp://HOST:PORT`` and ``mqtt://HOST:PORT/TOPIC``.

The text is framed as the Spark sources frame it (rsep.stream.framing's ``Framer``: whole
events, directives carried to every later frame) and each frame is read as a stream file
(rsep.stream.files), or, for RDF Message Logs (``--stream-format rdfm``), cut at its
delimiters (rsep.stream.messages): over MQTT each message of the broker is one RDF
Message. Jelly (``?format=jelly``, or ``--stream-format jelly``) is read as RDF
Messages too: over TCP a delimited stream of frames, over MQTT one frame per broker message
(as Jelly travels over MQTT and Kafka). A TCP source connects to the server and reads until it closes the
connection; an MQTT source subscribes and reads until Ctrl-C, or, with ``?idle=SECONDS``,
until no message came for that long. ``?format=trig|nquads|jsonl|jelly`` gives the
syntax (default TriG). The URL parsers are shared with the Spark sources.
"""

from __future__ import annotations

import codecs
import queue
import socket
import threading
import time as _time
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote

from rsep.stream.event import Event, Rejected
from rsep.stream.files import StreamFile
from rsep.stream.framing import CURRENT, Framer
from rsep.stream.jsonl import parse_lines
from rsep.stream.messages import MessageLog
from rsep.stream.time import TimeConfig

SCHEMES = ("tcp://", "mqtt://")
SYNTAXES = ("trig", "nquads", "jsonl", "jelly")
POLL_S = 0.2  # how often a controlled source looks at its stop flag


@dataclass
class Control:
    """A live source read on a thread that another one controls (rsep serve's attached
    streams): ``ready`` is set once connected (MQTT: subscribed), ``stop`` ends the source
    within :data:`POLL_S`."""

    ready: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)


def tcp_url(url: str) -> tuple[str, int]:
    """``tcp://host:port`` -> (host, port)."""
    if not url.startswith("tcp://"):
        raise ValueError(f"not a TCP URL (tcp://host:port): {url!r}")
    host, _, port = url[len("tcp://"):].split("?", 1)[0].rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"TCP URL needs a host and a port (tcp://host:port): {url!r}")
    return host, int(port)


def mqtt_url(url: str) -> tuple[str, int, str]:
    """``mqtt://host[:port]/topic`` -> (host, port, topic). The topic is the whole rest of
    the URL, ``#`` and ``+`` wildcards included (not a URL fragment)."""
    if not url.startswith("mqtt://"):
        raise ValueError(f"not an MQTT URL (mqtt://host:port/topic): {url!r}")
    rest = url[len("mqtt://"):]
    hostport, sep, topic = rest.partition("/")
    topic = unquote(topic)
    if not sep or not topic:
        raise ValueError(f"MQTT URL without a topic (mqtt://host:port/topic): {url!r}")
    host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "1883")
    if not host:
        raise ValueError(f"MQTT URL without a host: {url!r}")
    try:
        p = int(port)
    except ValueError:
        raise ValueError(f"MQTT URL with a bad port {port!r}: {url!r}") from None
    return host, p, topic


def _options(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its ``?key=value`` options (rsep's, not the broker's), and the options."""
    base, sep, query = url.partition("?")
    opts = {k: v[-1] for k, v in parse_qs(query).items()} if sep else {}
    unknown = set(opts) - {"format", "idle"}
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))} in {url!r} (format, idle)")
    if opts.get("format", "trig") not in SYNTAXES:
        raise ValueError(f"format must be {', '.join(SYNTAXES)} in {url!r}")
    return base, opts


def tcp_bytes(host: str, port: int, timeout: float = 10.0,
              control: Control | None = None) -> Iterator[bytes]:
    """The bytes a TCP server sends, as they arrive, until it closes the connection."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(None if control is None else POLL_S)
        if control is not None:
            control.ready.set()
        while True:
            try:
                data = sock.recv(1 << 16)
            except TimeoutError:
                if control is not None and control.stop.is_set():
                    return
                continue
            if not data:
                return
            yield data


def tcp_text(host: str, port: int, timeout: float = 10.0,
             control: Control | None = None) -> Iterator[str]:
    """The text a TCP server sends, as it arrives, until it closes the connection."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for data in tcp_bytes(host, port, timeout, control):
        if text := decoder.decode(data):
            yield text
    if tail := decoder.decode(b"", final=True):
        yield tail


def mqtt_payloads(host: str, port: int, topic: str, idle: float | None = None,
                  timeout: float = 10.0, control: Control | None = None) -> Iterator[bytes]:
    """The payloads of the messages published on ``topic`` from now on, in arrival order,
    until ``idle`` seconds pass without one (never, without ``idle``)."""
    import paho.mqtt.client as paho  # start-up: a run that reads no MQTT loads no client

    q: queue.Queue[bytes] = queue.Queue()
    ready = threading.Event()
    failed: list[str] = []
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)

    def on_connect(c, userdata, flags, reason, properties) -> None:
        if reason.is_failure:
            failed.append(str(reason))
            ready.set()
        else:
            c.subscribe(topic, qos=1)

    def on_subscribe(c, userdata, mid, reasons, properties) -> None:
        ready.set()

    client.on_connect = on_connect
    client.on_subscribe = on_subscribe
    client.on_message = lambda c, userdata, msg: q.put(msg.payload)
    client.connect(host, port)
    client.loop_start()
    try:
        if not ready.wait(timeout) or failed:
            raise ConnectionError(f"mqtt://{host}:{port}/{topic}: "
                                  + (f"refused: {failed[0]}" if failed else "no subscription after "
                                     f"{timeout} s"))
        if control is not None:
            control.ready.set()
        last = _time.monotonic()
        while control is None or not control.stop.is_set():
            wait = idle
            if control is not None:  # wake up to look at the stop flag
                wait = POLL_S if idle is None else max(0.0, min(POLL_S, last + idle - _time.monotonic()))
            try:
                payload = q.get(timeout=wait)
            except queue.Empty:
                if idle is not None and _time.monotonic() - last >= idle:
                    return
                continue
            last = _time.monotonic()
            yield payload
    finally:
        client.loop_stop()
        client.disconnect()


class LiveStream:
    """Events (and rejected records) from a TCP or MQTT source, as they arrive."""

    def __init__(self, url: str, stream: str, *, messages: bool = False,
                 time: TimeConfig | None = None, arrival: bool = False,
                 control: Control | None = None) -> None:
        self.url, opts = _options(url)
        self.control = control
        self.stream = stream
        self.syntax = opts.get("format", "trig")
        self.idle = float(opts["idle"]) if "idle" in opts else None
        if self.syntax == "jelly":
            messages = True  # Jelly's frames are RDF Messages
        self.messages = messages
        if messages and self.syntax == "jsonl":
            raise ValueError(f"an RDF Message Log is TriG or N-Quads, not JSON lines: {url!r}")
        self.time = time or TimeConfig()
        self.arrival = arrival
        if self.url.startswith("tcp://"):
            tcp_url(self.url)
        else:
            mqtt_url(self.url)  # errors now, not when the run reaches the source

    def _texts(self) -> Iterator[str]:
        """Text as it arrives: a TCP connection's pieces, or one MQTT message each."""
        if self.url.startswith("tcp://"):
            yield from tcp_text(*tcp_url(self.url), control=self.control)
        else:
            for payload in mqtt_payloads(*mqtt_url(self.url), idle=self.idle, control=self.control):
                yield payload.decode("utf-8", errors="replace")

    def _bytes(self) -> Iterator[bytes]:
        if self.url.startswith("tcp://"):
            return tcp_bytes(*tcp_url(self.url), control=self.control)
        return mqtt_payloads(*mqtt_url(self.url), idle=self.idle, control=self.control)

    def __iter__(self) -> Iterator[Event | Rejected]:
        if self.syntax == "jelly":
            yield from MessageLog(self.url, self.stream, time=self.time, fmt="jelly",
                                  arrival=self.arrival, source=self._bytes(),
                                  delimited=self.url.startswith("tcp://"))
            return
        texts = self._texts()
        if self.messages:
            mqtt = self.url.startswith("mqtt://")
            if mqtt:
                # each broker message is one RDF Message: the transport delimits them and
                # announces the messages mode (a payload needs no version label; one in the
                # December 2025 draft's form, with "# @message", is refused as mixed)
                texts = (t + "\nMESSAGE\n" for t in texts)
            yield from MessageLog(self.url, self.stream, time=self.time, fmt=self.syntax,
                                  arrival=self.arrival, source=texts, syntax=CURRENT if mqtt else None)
            return
        n = 0
        if self.url.startswith("mqtt://"):
            for text in texts:
                n += 1
                yield from self._frame(text, n)
            return
        framer = Framer(self.syntax)
        for text in texts:
            for frame in framer.feed(text):
                n += 1
                yield from self._frame(frame, n)
        for frame in framer.finish():
            n += 1
            yield from self._frame(frame, n)

    def _frame(self, text: str, n: int) -> Iterator[Event | Rejected]:
        origin = f"{self.url}#{n:06d}"
        if self.syntax == "jsonl":
            yield from parse_lines(text.splitlines(), self.stream, origin)
            return
        for it in StreamFile("frame", self.stream, time=self.time, fmt=self.syntax, text=text):
            if isinstance(it, Event):
                it.origin = origin + it.origin[len("frame"):]
            else:
                it.origin = origin
            yield it


def is_live(path: str) -> bool:
    return path.startswith(SCHEMES)
