"""Events POSTed to ``rsep serve``: a request body read by rsep.stream's readers (a stream
file of timestamped graphs, JSON lines, an RDF Message Log, or Jelly), and each stream's events
put in time order with ``--allowed-lateness`` as ``rsep run`` does.

:func:`read_body` is the one place where a body becomes events.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field

from rsep.stream.event import Event, Rejected
from rsep.stream.files import StreamFile, TimeConfig
from rsep.stream.framing import CURRENT
from rsep.stream.jsonl import parse_lines
from rsep.stream.messages import MessageLog
from rsep.stream.time import TimeKind, format_time

# media type (or ?format=) -> the reader's format; rdfm-*: RDF Message Logs (W3C RSP CG),
# announced by the media type's version parameter (``version=1.2-messages``, the current
# text, spec/messages.bs "Version labels") or ``messages=rdfm`` (the December 2025 draft)
FORMATS = {
    "application/trig": "trig", "trig": "trig", "text/turtle": "trig",
    "application/n-quads": "nquads", "nquads": "nquads", "application/n-triples": "nquads",
    "application/x-ndjson": "jsonl", "application/jsonl": "jsonl", "jsonl": "jsonl",
    "rdfm": "rdfm-trig", "rdfm-trig": "rdfm-trig", "rdfm-nquads": "rdfm-nquads",
    # Jelly (its registered media type): every frame an RDF Message
    "application/x-jelly-rdf": "jelly", "jelly": "jelly",
}


def body_format(content_type: str | None, fmt: str | None) -> str:
    """The reader for a request: ``?format=`` first, then the Content-Type (with
    ``version=...-messages`` or ``messages=rdfm``, the RDF Message Log in that syntax; the
    version parameter puts the reader in messages mode, as the log's own label would)."""
    media, *params = (content_type or "").lower().split(";")
    key = (fmt or media.strip() or "application/trig").lower()
    if key not in FORMATS:
        raise ValueError(f"unknown event format {key!r}: use application/trig, "
                         "application/n-quads or application/x-ndjson, with "
                         "'; version=1.2-messages' for an RDF Message Log, or application/x-jelly-rdf "
                         "(or ?format=trig|nquads|jsonl|rdfm|rdfm-trig|rdfm-nquads|jelly)")
    out = FORMATS[key]
    params = [p.replace(" ", "") for p in params]
    version = next((p[8:].strip('"') for p in params if p.startswith("version=")), "")
    if fmt:
        return out
    if version.endswith("-messages") or "messages=rdfm" in params:
        name = f"version={version}" if version.endswith("-messages") else "messages=rdfm"
        if out in ("jsonl", "jelly"):
            raise ValueError(f"{name} names a text RDF Message Log (TriG or N-Quads), not {out}")
        out = "rdfm-" + out + (";announced" if version.endswith("-messages") else "")
    return out


def read_body(body: bytes, stream: str, fmt: str, origin: str,
              time: TimeConfig) -> list[Event | Rejected]:
    """The events and rejected records of one request body, in body order; records are
    located as ``origin:line``."""
    if fmt == "jelly":
        # (imported here: pyjelly and Protobuf cost a server that reads no Jelly its start-up time)
        from pyjelly.parse.ioutils import delimited_jelly_hint

        # a delimited stream of frames, or (Jelly's other file form) one frame
        return list(MessageLog(origin, stream, time=time, fmt="jelly", source=[body],
                               delimited=len(body) < 3 or delimited_jelly_hint(body[:3])))
    if fmt.startswith("rdfm-"):
        # each message one event; the body is the whole log (its directives, its numbering);
        # a byte that is not UTF-8 rejects its message, located (never read as U+FFFD)
        syntax, _, announced = fmt[5:].partition(";")
        return list(MessageLog(origin, stream, time=time, fmt=syntax, source=[
            body.decode("utf-8", errors="surrogateescape")], syntax=CURRENT if announced else None))
    text = body.decode("utf-8", errors="replace")
    if fmt == "jsonl":
        return list(parse_lines(text.splitlines(), stream, origin))
    return list(StreamFile(origin, stream, time=time, fmt=fmt, text=text))


@dataclass
class StreamOrder:
    """One stream's events released in non-decreasing time: with lateness 0 an event behind
    the stream's last one is rejected; with lateness L events are held until the stream has
    seen an event L units later (the reorder buffer of rsep.stream.source, fed one event at
    a time instead of from a file)."""

    lateness: int = 0
    last_out: int | None = None
    max_seen: int | None = None
    kind: TimeKind | None = None
    held: list[tuple[int, int, Event]] = field(default_factory=list)
    n: int = 0

    def offer(self, e: Event) -> tuple[list[Event], Rejected | None]:
        """The events released by taking ``e``, or why ``e`` is rejected."""
        if self.kind is not None and e.kind is not self.kind:
            return [], rejected(e, f"<{e.graph}> has a {e.kind.value} timestamp but the "
                                   f"stream's earlier events have {self.kind.value} ones")
        if self.last_out is not None and e.time < self.last_out:
            return [], rejected(e, f"timestamp {format_time(e.time, e.kind)} of <{e.graph}> goes "
                                   f"backwards: the stream is already at "
                                   f"{format_time(self.last_out, e.kind)}"
                                   + (f" (allowed lateness {self.lateness})" if self.lateness
                                      else " (accept late events with --allowed-lateness)"))
        self.kind = e.kind
        if self.lateness <= 0:
            self.last_out = e.time
            return [e], None
        self.max_seen = e.time if self.max_seen is None else max(self.max_seen, e.time)
        self.n += 1
        heapq.heappush(self.held, (e.time, self.n, e))
        return list(self._release(self.max_seen - self.lateness)), None

    def flush(self, until: int) -> list[Event]:
        """The held events at or before ``until`` (the engine's clock moved past them)."""
        return list(self._release(until))

    def _release(self, bound: int) -> Iterator[Event]:
        while self.held and self.held[0][0] <= bound:
            t, _, ev = heapq.heappop(self.held)
            self.last_out = t
            yield ev


def rejected(e: Event, reason: str) -> Rejected:
    """A dead-letter record for an event that parsed but cannot be taken in."""
    origin, _, line = e.origin.rpartition(":")
    return Rejected(e.stream, origin or e.origin, int(line) if line.isdigit() else 0, 0,
                    reason, e.graph)
