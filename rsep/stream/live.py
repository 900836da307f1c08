"""Live sources for the in-process engine: ``tcp://HOST:PORT`` and ``mqtt://HOST:PORT/TOPIC``.

The text is framed as the Spark sources frame it (rsep.stream.framing's ``Framer``: whole
events, directives carried to every later frame) and each frame is read as a stream file
(rsep.stream.files), or, for RDF Message Logs (``--stream-format rdfm``), cut at its
delimiters (rsep.stream.messages): over MQTT each message of the broker is one RDF
Message. Jelly (``?format=jelly``, or ``--stream-format jelly``) is read as RDF
Messages too: over TCP a delimited stream of frames, over MQTT one frame per broker message
(as Jelly travels over MQTT and Kafka). A TCP source connects to the server and reads until it closes the
connection; an MQTT source subscribes and reads until Ctrl-C, or, with ``?idle=SECONDS``,
until no message came for that long while connected. A lost broker is reconnected to on
the same persistent session for ``?reconnect=SECONDS`` (default 30), then is an error,
never an end of stream (:func:`mqtt_payloads`). ``?format=trig|nquads|jsonl|jelly`` gives the
syntax (default TriG). Bytes that are not UTF-8 are rejected with their byte offset
(in the connection, or in the MQTT message), as the file reader rejects them, never read
as U+FFFD. The URL parsers are shared with the Spark sources.
"""

from __future__ import annotations

import codecs
import os
import queue
import re
import socket
import threading
import time as _time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

from rsep.stream.event import Event, Rejected
from rsep.stream.files import StreamFile
from rsep.stream.framing import Framer
from rsep.stream.jsonl import parse_lines
from rsep.stream.messages import MessageLog, messages_mode, payload_messages
from rsep.stream.time import TimeConfig

SCHEMES = ("tcp://", "mqtt://")
SYNTAXES = ("trig", "nquads", "jsonl", "jelly")
POLL_S = 0.2  # how often a controlled source looks at its stop flag
RECONNECT_S = 30.0  # how long an MQTT source waits for its broker to come back (?reconnect)


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


def live_options(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its ``?key=value`` options (rsep's, not the broker's), and the options."""
    base, sep, query = url.partition("?")
    opts = {k: v[-1] for k, v in parse_qs(query).items()} if sep else {}
    unknown = set(opts) - {"format", "idle", "reconnect"}
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))} in {url!r} "
                         "(format, idle, reconnect)")
    for k in ("idle", "reconnect"):
        if k in opts:
            try:
                ok = float(opts[k]) > 0
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"{k} must be a positive number of seconds in {url!r}")
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
             control: Control | None = None,
             invalid: Callable[[int, int], None] | None = None) -> Iterator[str]:
    """The text a TCP server sends, as it arrives, until it closes the connection. A byte
    that is not UTF-8 is kept as a lone surrogate (surrogateescape), as the file reader
    keeps it, so the record holding it is rejected, never read as U+FFFD; ``invalid`` gets
    each such byte's offset in the connection and its value."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    offset = 0  # bytes of the connection decoded into the texts yielded so far

    def seen(text: str) -> str:
        nonlocal offset
        if invalid is not None:
            for m in _INVALID.finditer(text):
                invalid(offset + _nbytes(text[:m.start()]), ord(m.group()) - 0xDC00)
        offset += _nbytes(text)
        return text

    for data in tcp_bytes(host, port, timeout, control):
        if text := decoder.decode(data):
            yield seen(text)
    if tail := decoder.decode(b"", final=True):
        yield seen(tail)


_INVALID = re.compile("[\udc80-\udcff]")  # a byte that is not UTF-8, surrogateescaped


def _nbytes(text: str) -> int:
    # (surrogateescape gives each invalid byte back: the length of the bytes decoded)
    return len(text.encode("utf-8", "surrogateescape"))


def mqtt_payloads(host: str, port: int, topic: str, idle: float | None = None,
                  timeout: float = 10.0, control: Control | None = None,
                  reconnect: float = 30.0) -> Iterator[bytes]:
    """The payloads of the messages published on ``topic`` from now on, in arrival order,
    until ``idle`` seconds pass without one while connected (never, without ``idle``).

    A broker lost mid-stream is reconnected to, on the same persistent session (MQTT 5,
    a client id of the run's own, the session kept ``reconnect`` + 10 seconds), so
    the QoS 1 messages published meanwhile are delivered then. The broker not back within
    ``reconnect`` seconds, or back without the session (restarted without persistence: what
    it had queued is gone), is a ConnectionError, never an end of stream; an outage does
    not count as idle time."""
    import paho.mqtt.client as paho  # start-up: a run that reads no MQTT loads no client
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    where = f"mqtt://{host}:{port}/{topic}"
    q: queue.Queue[bytes | None] = queue.Queue()  # None: the connection changed
    ready = threading.Event()
    failed: list[str] = []
    lost: list[str] = []  # why the broker is gone for good (the session, or the time)
    # down: the monotonic time the broker was lost (None: connected)
    state: dict[str, Any] = {"down": None, "connects": 0}
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5,
                         client_id=f"rsep-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    # (paho sleeps these as floats; its annotation says int)
    client.reconnect_delay_set(min_delay=0.1, max_delay=1.0)  # type: ignore[arg-type]

    def on_connect(c, userdata, flags, reason, properties) -> None:
        if reason.is_failure:
            if not ready.is_set():
                failed.append(str(reason))
                ready.set()
            return
        state["connects"] += 1
        if state["connects"] > 1:
            # the broker resends (flagged dup) what it saw no PUBACK for: taken once
            resent.clear()
            resent.update(seen)
            seen.clear()
        if state["connects"] > 1 and not flags.session_present:
            lost.append(f"{where}: the broker came back without this client's session (it "
                        "restarted without persistence?): the messages published while the "
                        "source was disconnected are lost")
            q.put(None)
            return
        # (on a resumed session the subscription is still there: subscribing again is
        # harmless and makes the source's QoS 1 explicit)
        c.subscribe(topic, qos=1)
        state["down"] = None
        q.put(None)

    def on_disconnect(c, userdata, flags, reason, properties) -> None:
        if state["down"] is None:
            state["down"] = _time.monotonic()
        q.put(None)

    def on_subscribe(c, userdata, mid, reasons, properties) -> None:
        ready.set()

    client.on_connect = on_connect
    client.on_disconnect = on_disconnect
    client.on_subscribe = on_subscribe
    seen: set[int] = set()  # QoS 1 packet ids received on this connection
    resent: set[int] = set()  # and on the one before

    def on_message(c, userdata, msg) -> None:
        if msg.qos and msg.dup and msg.mid in resent:
            resent.discard(msg.mid)
            return
        if msg.qos:
            seen.add(msg.mid)
        q.put(msg.payload)

    client.on_message = on_message
    props = Properties(PacketTypes.CONNECT)
    # the broker keeps the session (and queues its QoS 1 messages) while we reconnect
    props.SessionExpiryInterval = max(1, int(reconnect) + 10)
    # (a client id of this run alone: no earlier session to resume; and mosquitto 2.0
    # persists across its restart only a session that did not start clean)
    client.connect(host, port, clean_start=False, properties=props)
    client.loop_start()
    try:
        if not ready.wait(timeout) or failed:
            raise ConnectionError(f"{where}: "
                                  + (f"refused: {failed[0]}" if failed else "no subscription after "
                                     f"{timeout} s"))
        if control is not None:
            control.ready.set()
        last = _time.monotonic()
        while control is None or not control.stop.is_set():
            now = _time.monotonic()
            down = state["down"]
            if lost:
                raise ConnectionError(lost[0])
            if down is not None and now - down >= reconnect:
                raise ConnectionError(f"{where}: the broker has been unreachable for "
                                      f"{reconnect:g} s (?reconnect=SECONDS): the stream "
                                      "did not end, it was cut")
            waits = [POLL_S] if control is not None else []
            if down is not None:
                waits.append(down + reconnect - now)
            elif idle is not None:
                waits.append(last + idle - now)
            wait = max(0.0, min(waits)) if waits else None
            try:
                payload = q.get(timeout=wait)
            except queue.Empty:
                if state["down"] is None and idle is not None \
                        and _time.monotonic() - last >= idle:
                    return
                continue
            if payload is None:  # connected again (or lost): idle time starts over
                last = _time.monotonic()
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
        self.url, opts = live_options(url)
        self.control = control
        self.stream = stream
        self.syntax = opts.get("format", "trig")
        self.idle = float(opts["idle"]) if "idle" in opts else None
        self.reconnect = float(opts.get("reconnect", RECONNECT_S))
        self._invalid: deque[int] = deque()  # TCP: offsets of invalid bytes not yet framed
        self.messages = messages_mode(self.syntax, messages, url)
        self.time = time or TimeConfig()
        self.arrival = arrival
        if self.url.startswith("tcp://"):
            tcp_url(self.url)
        else:
            mqtt_url(self.url)  # errors now, not when the run reaches the source

    def _texts(self) -> Iterator[str]:
        """Text as it arrives: a TCP connection's pieces, or one MQTT message each (invalid
        UTF-8 kept as lone surrogates, for the readers to reject, as a file's)."""
        if self.url.startswith("tcp://"):
            yield from tcp_text(*tcp_url(self.url), control=self.control,
                                invalid=lambda at, _byte: self._invalid.append(at))
        else:
            for payload in mqtt_payloads(*mqtt_url(self.url), idle=self.idle, control=self.control,
                                         reconnect=self.reconnect):
                yield payload.decode("utf-8", errors="surrogateescape")

    def _bytes(self) -> Iterator[bytes]:
        if self.url.startswith("tcp://"):
            return tcp_bytes(*tcp_url(self.url), control=self.control)
        return mqtt_payloads(*mqtt_url(self.url), idle=self.idle, control=self.control,
                             reconnect=self.reconnect)

    def __iter__(self) -> Iterator[Event | Rejected]:
        if self.syntax == "jelly":
            yield from MessageLog(self.url, self.stream, time=self.time, fmt="jelly",
                                  arrival=self.arrival, source=self._bytes(),
                                  delimited=self.url.startswith("tcp://"))
            return
        texts = self._texts()
        if self.messages:
            if self.url.startswith("mqtt://"):  # each broker message one RDF Message
                yield from payload_messages(self.url, self.stream, texts, fmt=self.syntax,
                                            time=self.time, arrival=self.arrival)
            else:  # a TCP connection carries a log: its text says how it is delimited
                yield from MessageLog(self.url, self.stream, time=self.time, fmt=self.syntax,
                                      arrival=self.arrival, source=texts)
            return
        n = 0
        if self.url.startswith("mqtt://"):
            for text in texts:
                n += 1
                yield from self._frame(text, n, None)
            return
        framer = Framer(self.syntax)
        for text in texts:
            for frame in framer.feed(text):
                n += 1
                yield from self._frame(frame, n, framer.header)
        for frame in framer.finish():
            n += 1
            yield from self._frame(frame, n, framer.header)

    def _frame(self, text: str, n: int, header: str | None) -> Iterator[Event | Rejected]:
        """The events of one frame; ``header``: the TCP framer's directives now (None: an
        MQTT message, read as it came)."""
        origin = f"{self.url}#{n:06d}"
        items: Iterator[Event | Rejected]
        if self.syntax == "jsonl":
            items = parse_lines(text.splitlines(), self.stream, origin)
        else:
            items = iter(StreamFile("frame", self.stream, time=self.time, fmt=self.syntax,
                                    text=text))
        offsets: list[int] = []
        skip = 0
        if header is not None and _INVALID.search(text):
            # The frame's own text follows the directives carried into it (a prefix of
            # the framer's header now); its invalid bytes are the next ones of the connection.
            while header and not text.startswith(header):
                header = header[:header.rstrip("\n").rfind("\n") + 1]
            skip = len(header)
            offsets = [self._invalid.popleft() for _ in _INVALID.finditer(text, skip)
                       if self._invalid]
        for it in items:
            if isinstance(it, Event):
                it.origin = origin + it.origin[len("frame"):]
                yield it
                continue
            it.origin = origin
            if header is None:  # an MQTT message: offsets within it
                it.reason = with_byte_offset(it.reason, text, it.line, it.column, "message")
            elif it.reason.startswith("invalid UTF-8: byte "):
                at = _char_index(text, it.line, it.column)
                if at is not None and at >= skip and len(offsets) > (
                        k := len(_INVALID.findall(text, skip, at))):
                    it.reason = _placed(it.reason, f"at byte {offsets[k]:,} of the connection")
            yield it


def with_byte_offset(reason: str, text: str, line: int, column: int, what: str) -> str:
    """An "invalid UTF-8: byte 0xNN" rejection at (line, column) of ``text`` (decoded with
    surrogateescape) with the byte's offset in the ``what`` it came in (a message, a
    Kafka record): a producer finds its bad byte there, not at a character position."""
    if not reason.startswith("invalid UTF-8: byte "):
        return reason
    at = _char_index(text, line, column)
    return reason if at is None else _placed(reason, f"at byte {_nbytes(text[:at]):,} of the {what}")


def _placed(reason: str, where: str) -> str:
    """``reason`` with ``where`` after its first clause (before its parenthesis)."""
    head, _, rest = reason.partition(" (")
    return f"{head} {where}" + (f" ({rest}" if rest else "")


def _char_index(text: str, line: int, column: int) -> int | None:
    """Where (line, column) of a rejection points in ``text``, if at an invalid byte."""
    at = 0
    for _ in range(line - 1):
        at = text.find("\n", at) + 1
        if at == 0:
            return None
    at += column - 1
    return at if 0 <= at < len(text) and _INVALID.match(text, at) else None


def is_live(path: str) -> bool:
    return path.startswith(SCHEMES)
