"""One entry point for every stream reader: which one reads a ``--stream IRI=PATH``.

``auto`` (the default) picks by name, then content: ``.jsonl``/``.ndjson`` JSON lines,
``*.rml.ttl`` an RML mapping of CSV / JSON-lines rows (rsep.stream.mapping),
``.jelly`` Jelly (an RDF Message Log), a text file with a "-messages" version label or a
message delimiter in its first MiB an RDF Message Log, else a TriG / N-Quads stream file of timestamped graphs.
Standard input (``-``) cannot be looked at twice: it is a stream file unless the format is
given (``rdfm`` or ``jelly``); so are the live sources ``tcp://`` and ``mqtt://``
(rsep.stream.live) and ``kafka://`` (rsep.stream.kafka), which read ``rdfm`` and ``jelly``
as well.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rsep.stream.files import StreamFile
from rsep.stream.jsonl import SUFFIXES, JsonlStreamFile
from rsep.stream.messages import ARRIVAL, MessageLog, log_format, sniff
from rsep.stream.protocol import Source
from rsep.stream.time import TimeConfig

if TYPE_CHECKING:
    from rsep.stream.kafka import KafkaStream
    from rsep.stream.live import LiveStream

STREAM_FORMATS = ("auto", "events", "rdfm", "jelly")
STDIN = "-"
RML_SUFFIXES = (".rml.ttl",)  # an RML mapping (rsep.stream.mapping)


def stream_kind(path: str, fmt: str = "auto") -> str:
    """``jsonl``, ``events`` (timestamped graphs), ``rdfm`` (a text message log) or ``jelly``."""
    if fmt not in STREAM_FORMATS:
        raise ValueError(f"unknown stream format {fmt!r} (expected one of {', '.join(STREAM_FORMATS)})")
    if fmt != "auto":
        return fmt
    if path == STDIN:
        return "events"
    if path.lower().endswith(SUFFIXES):
        return "jsonl"
    if log_format(path) == "jelly":
        return "jelly"
    return "rdfm" if Path(path).is_file() and sniff(path) else "events"


def open_stream(iri: str, path: str, *, fmt: str = "auto", time: TimeConfig | None = None,
                time_predicates: Iterable[str] = (), max_record: int | None = None) -> Source:
    """The reader of one stream. ``time_predicates`` ``["arrival"]``: a message log's
    messages take their arrival times (for stream files, time always comes from the data)."""
    preds = list(time_predicates)
    arrival = preds == [ARRIVAL]
    if path.startswith(("tcp://", "mqtt://", "kafka://")):
        if fmt == "jelly":
            if "format=" in path.partition("?")[2] and "format=jelly" not in path:
                raise ValueError(f"--stream-format jelly, but {path} gives another format")
            path += ("&" if "?" in path else "?") + "format=jelly"
        # imported here, as the RML reader below: a run of files needs no sockets or
        # threads, CSV or time zones (start-up, docs/benchmarks.md)
        # (one import: rsep.stream.kafka reads with rsep.stream.live's helpers, and loads its
        # client, confluent_kafka, only when it connects)
        from rsep.stream import kafka, live

        stream: LiveStream | KafkaStream
        if path.startswith("kafka://"):
            stream = kafka.KafkaStream(path, iri, messages=fmt == "rdfm", time=time,
                                       arrival=arrival)
        else:
            stream = live.LiveStream(path, iri, messages=fmt == "rdfm", time=time, arrival=arrival)
        if arrival and not stream.messages:
            raise ValueError(f"--time-predicate {ARRIVAL} applies to RDF Message Logs "
                             "(give --stream-format rdfm or jelly)")
        return stream
    if path != STDIN and not Path(path).is_file():
        raise FileNotFoundError(f"stream file not found: {path}")
    if path.lower().endswith(RML_SUFFIXES):
        # (imported here: CSV and time zones only for a mapped stream, as the live readers above)
        from rsep.stream.mapping import MappedStreamFile

        return MappedStreamFile(path, iri)
    kind = stream_kind(path, fmt)
    if arrival and kind not in ("rdfm", "jelly"):
        raise ValueError(f"--time-predicate {ARRIVAL} applies to RDF Message Logs; {path} is not one "
                         "(give --stream-format rdfm)")
    if kind == "jsonl":
        return JsonlStreamFile(path, iri)
    if kind in ("rdfm", "jelly"):
        text = "trig" if path == STDIN else log_format(path)
        return MessageLog(path, iri, time=time, arrival=arrival, max_message=max_record,
                          fmt="jelly" if kind == "jelly" else ("trig" if text == "jelly" else text))
    return StreamFile("/dev/stdin" if path == STDIN else path, iri, time=time, max_record=max_record)
