"""The pushed form of a query's results (SSE, WebSocket, MQTT): the CLI's jsonl objects,
one per result, or RDF Messages (W3C RSP CG), one per evaluation, written by the FormatSink that
``rsep run --format rdfm-trig|rdfm-nquads|jelly`` writes with (so a pushed message is the
one ``rsep run`` writes to its log, without the log's version label and ``MESSAGE``
delimiter: the transport delimits them, SSE's ``rdf-message`` events and a WebSocket's
messages, with the media type in ``RDF-Message-Content-Type`` or the ``rdfm.*`` subprotocol;
Jelly: the message's ``RdfStreamFrame``, not length-delimited, as over MQTT)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import BinaryIO

from rsep.runtime.mqtt_output import delimited_frames
from rsep.runtime.sinks import FormatSink
from rsep.serve.worker import Item
from rsep.stream.writer import payload

# ?format= -> the media type announcing it (RDF Messages: the version parameter,
# spec/messages.bs "Version labels")
FORMATS = {
    "jsonl": "application/json",
    "rdfm-trig": "application/trig; version=1.2-messages",
    "rdfm-nquads": "application/n-quads; version=1.2-messages",
    "jelly": "application/x-jelly-rdf",
}
_ACCEPT = {"application/trig": "rdfm-trig", "application/n-quads": "rdfm-nquads",
           "application/x-jelly-rdf": "jelly"}


# what Server-Sent Events can carry (text): Jelly only over WebSocket and MQTT
TEXT_FORMATS = ("jsonl", "rdfm-trig", "rdfm-nquads")

# The framing of the spec's discovery tests (messages-tests, "Message Stream Discovery
# Tests"): an SSE stream of RDF Messages says their media type in this response header and
# sends each message as this event; a WebSocket negotiates it as the subprotocol
# "rdfm." + the media type's subtype, "+" written "-" (rdfm.n-triples, rdfm.ld-json).
MESSAGE_TYPE_HEADER = "RDF-Message-Content-Type"
MESSAGE_EVENT = "rdf-message"
# a pushed message is one RDF document (no version label, no MESSAGE): the plain media type
MESSAGE_TYPES = {"rdfm-trig": "application/trig", "rdfm-nquads": "application/n-quads",
                 "jelly": "application/x-jelly-rdf"}
SUBPROTOCOLS = {"rdfm." + media.split("/")[1].replace("+", "-"): fmt
                for fmt, media in MESSAGE_TYPES.items()}


def negotiate_subprotocol(offered: str | None, fmt: str | None) -> tuple[str | None, str | None]:
    """(the subprotocol to answer, the format it names) for a WebSocket handshake's
    ``Sec-WebSocket-Protocol``. Only ``rdfm.*`` ones are rsep's: with none offered, (None,
    ``fmt``). With ``?format=`` given, its subprotocol must be among those offered. ValueError
    (406) when no offered one names a format rsep pushes."""
    names = [p.strip() for p in (offered or "").split(",") if p.strip()]
    rdfm = [p for p in names if p.lower().startswith("rdfm.")]
    if not rdfm:
        return None, fmt
    ours = ", ".join(SUBPROTOCOLS)
    if fmt:
        chosen = next((p for p in rdfm if SUBPROTOCOLS.get(p.lower()) == fmt), None)
        if chosen is None:
            raise ValueError(f"?format={fmt} is not among the offered subprotocols "
                             f"({', '.join(rdfm)}): offer one of {ours}, or leave ?format= out")
        return chosen, fmt
    for p in rdfm:
        if p.lower() in SUBPROTOCOLS:
            return p, SUBPROTOCOLS[p.lower()]
    raise ValueError(f"none of the offered subprotocols ({', '.join(rdfm)}) is pushed here: "
                     f"rsep pushes a query's RDF Messages as {ours}")


def result_format(fmt: str | None, accept: str | None, offered: Sequence[str] = tuple(FORMATS)) -> str:
    """The negotiated format: ``?format=`` first, then an ``Accept`` that names
    ``application/trig``, ``application/n-quads`` or ``application/x-jelly-rdf`` (anything
    else: jsonl). ``offered``: the endpoint's formats, named when ``fmt`` is unknown."""
    if fmt:
        if fmt not in FORMATS:
            raise ValueError(f"unknown result format {fmt!r}: use {', '.join(offered)}")
        return fmt
    for part in (accept or "").lower().split(","):
        media = part.split(";")[0].strip()
        if media in _ACCEPT:
            return _ACCEPT[media]
    return "jsonl"


class _Messages(io.StringIO):
    """Collects the messages a FormatSink ends (rsep.runtime.sinks: an output of items); Jelly's
    go to ``buffer``, each a delimited frame."""

    def __init__(self) -> None:
        super().__init__()
        self._bytes = io.BytesIO()
        self.done: list[str | bytes] = []

    @property
    def buffer(self) -> BinaryIO:
        return self._bytes

    def end_item(self) -> None:
        if frames := self._bytes.getvalue():
            self.done.extend(delimited_frames(frames))
            self._bytes.seek(0)
            self._bytes.truncate()
            return
        self.done.append(payload(self.getvalue()))
        self.seek(0)
        self.truncate()


class Renderer:
    """One subscriber's results as the items to push (Jelly: bytes), one pushed item each.
    A Jelly subscriber's frames share lookup tables: its first frame opens its stream."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._out = _Messages()
        self._sink = FormatSink(self._out, fmt, with_query=True) if fmt != "jsonl" else None

    def render(self, item: Item) -> list[str | bytes]:
        """The items ``item`` completes: a jsonl object; for RDF Messages, nothing until the
        evaluation's last output, then its message."""
        if self._sink is None or item.output is None:
            return [json.dumps(item.data, ensure_ascii=False)]
        self._sink.write(item.output)
        if item.last:
            self._sink.end_evaluation()
        done, self._out.done = self._out.done, []
        return done
