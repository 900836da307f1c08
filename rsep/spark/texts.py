"""One raw text (a record of the raw-record contract, rsep.spark.parse) read into events and
rejected records: what the parse stage does to every text, and what a state key does to the
texts it takes unparsed (rsep.spark.state, for a query whose state is one key)."""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Iterator

from rsep.stream.event import Event, Rejected
from rsep.stream.files import StreamFile, TimeConfig
from rsep.stream.framing import is_message_log
from rsep.stream.jsonl import SUFFIXES as JSONL_SUFFIXES
from rsep.stream.jsonl import parse_lines
from rsep.stream.messages import MessageLog, log_format, payload_messages

# one RDF Message per text, in that syntax: a transport's payload (a Kafka record, an MQTT
# message) read as --stream-format rdfm reads one, the transport delimiting the messages
PAYLOAD_FORMATS = ("rdfm-trig", "rdfm-nquads")

FORMATS = ("trig", "nquads", "jsonl", "rdfm", "jelly") + PAYLOAD_FORMATS


def detect_format(origin: str, text: str, given: str | None = None) -> str:
    if given:
        if given not in FORMATS:
            raise ValueError(f"unknown stream format {given!r} (expected one of {', '.join(FORMATS)})")
        return given
    low = origin.lower().split("#", 1)[0]
    if low.endswith(".jelly"):
        return "jelly"
    if low.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if not low.endswith((".nq", ".nquads", ".trig", ".ttl")) and text.lstrip().startswith("{"):
        return "jsonl"
    if is_message_log(text[:1 << 20]):
        return "rdfm"
    return "nquads" if low.endswith((".nq", ".nquads")) else "trig"


_SCRATCH: str | None = None


def _scratch() -> str:
    # StreamFile reads paths: one scratch file per worker process, rewritten per text.
    global _SCRATCH
    if _SCRATCH is None:
        d = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        fd, _SCRATCH = tempfile.mkstemp(prefix="rsep-spark-", suffix=".txt", dir=d)
        os.close(fd)
    return _SCRATCH


def parse_text(text: str, stream: str, origin: str, fmt: str,
               time: TimeConfig | None = None) -> Iterator[Event | Rejected]:
    """The events and rejected records of one raw text, located by ``origin``."""
    if fmt == "jsonl":
        yield from parse_lines(text.splitlines(), stream, origin)
        return
    if fmt in PAYLOAD_FORMATS:
        yield from payload_messages(origin, stream, [text], fmt=fmt[5:], time=time)
        return
    path = _scratch()
    if fmt == "jelly":
        with open(path, "wb") as fb:
            fb.write(base64.b64decode(text))
    else:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    try:
        if fmt == "jelly":
            items = list(MessageLog(path, stream, time=time, fmt="jelly"))
        elif fmt == "rdfm":
            syntax = log_format(origin.split("#", 1)[0])
            items = list(MessageLog(path, stream, time=time, fmt="trig" if syntax == "jelly" else syntax))
        else:
            items = list(StreamFile(path, stream, time=time, fmt=fmt))
    except ValueError as e:
        yield Rejected(stream, origin, 0, 0, str(e).replace(path, origin), text[:200])
        return
    for it in items:
        if isinstance(it, Event):
            it.origin = origin + it.origin[len(path):]
        else:
            it.origin = origin
            it.reason = it.reason.replace(path, origin)
        yield it


def read_text(text: str, stream: str, origin: str, fmt: str | None,
              time: TimeConfig | None = None) -> list[Event | Rejected]:
    """:func:`parse_text` of a text whose format is given or detected; a text that cannot be
    read at all is one rejected record."""
    try:
        return list(parse_text(text, stream, origin, detect_format(origin, text, fmt), time))
    except ValueError as err:
        return [Rejected(stream, origin, 0, 0, str(err), text[:200])]
