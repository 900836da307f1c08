"""Raw records -> events, on the executors: the contract every Spark source meets.

Raw-record contract (what a source produces, what ``events_from_records`` takes)
--------------------------------------------------------------------------------
A (streaming or static) DataFrame with at least these columns:

``stream``  string     the stream's IRI (without angle brackets)
``origin``  string     where the text came from, for messages and ordering: a file
                       path, or e.g. ``mqtt://host:1883/topic#000000000042``
``text``    string     one or more *complete* records of one format: a whole TriG /
                       N-Quads document (its prefixes included), or JSON lines
``arrival`` timestamp  when the text arrived (end-to-end latency is measured from it)

A ``.jelly`` origin's text is the file's bytes in base64 (Jelly: frames are RDF Messages).

Optional column ``format`` (string: ``trig`` | ``nquads`` | ``jsonl`` | ``rdfm`` | ``jelly``, or
``rdfm-trig`` | ``rdfm-nquads``: the text is one RDF Message in that syntax, a payload of a
transport that delimits the messages, needing no version label or ``MESSAGE``); when it
is missing or null the format comes from the origin's suffix (``.nq``/``.nquads``,
``.jsonl``/``.ndjson``, else TriG), a text whose first non-blank character is ``{`` is
read as JSON lines, and a TriG / N-Quads text with a "-messages" version label or a message
delimiter as an RDF
Message Log (``rdfm``: one message, one event; rsep.stream.messages).

Each text is parsed on its own (its own prefixes, its own blank-node scope); an
event's time triple ``<g> prov:generatedAtTime T`` must be in the same text as
the graph. Simultaneous events are ordered as the in-process merge orders them:
by the stream's rank (the order the streams were given), then by ``origin``
(string order: sources whose messages arrive one by one should use origins that
sort in arrival order, e.g. a zero-padded counter), then by position in the text.

A row whose ``stream`` is ``END_OF_INPUT`` (and whose text is empty) says that the
input has ended: every buffered event is released and every query closed, as the
in-process engine does at the end of its files. Live sources never send it;
finite ones (files replayed once, tests) may.

JSON-lines events: one object per line,
``{"graph": IRI, "time": T, "triples": "<s> <p> <o> . ..."}`` where ``T`` is an
integer or an xsd:dateTime string; ``"start"``/``"end"`` instead of ``"time"`` give
an interval; ``"triples"`` is N-Triples (or Turtle) text (rsep.stream.jsonl).

Malformed records, and events later than the allowed lateness, go to the
dead-letter output with the reason; nothing is dropped silently.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator

import pyarrow as pa

from rsep.spark.plan import Router
from rsep.spark.state import (
    PipelineConfig,
    event_text,
    line_of,
    rejection,
    whole_texts,
    widen,
)
from rsep.spark.state import trace as write_trace
from rsep.spark.texts import detect_format, parse_text, read_text
from rsep.stream.event import Event, Rejected

END_OF_INPUT = "urn:rsep:end-of-input"

RAW_COLUMNS = ("stream", "origin", "text", "arrival")

__all__ = ["END_OF_INPUT", "EVENTS_SCHEMA", "RAW_COLUMNS", "detect_format", "events_from_records",
           "parse_partition", "parse_text"]

# A text's events travel to a state key packed in rows of about this many characters of
# N-Triples: a row per event cost more than the engine (PySpark's per-row regrouping, the
# JVM's per-row sort, shuffle and Arrow conversion), and the bound keeps the 10,000 rows of
# an Arrow batch under its 2 GB of string data.
PACK_BYTES = 1 << 17

# Texts go unparsed to the keys of one-key queries (parse_partition); tests turn it off to
# exercise the packed rows.
WHOLE_TEXTS = True


class Pack:
    """A packed event row (rtype ``b``): ``nt`` is the events' N-Triples texts (event_text)
    end to end, ``record`` a JSON list of [pos, graph, start, end, tkind, line, length of
    its text], one per event, in text order."""

    __slots__ = ("meta", "texts", "size")

    def __init__(self) -> None:
        self.meta: list[tuple] = []
        self.texts: list[str] = []
        self.size = 0

    def add(self, meta: tuple, nt: str) -> None:
        self.meta.append(meta)
        self.texts.append(nt)
        self.size += len(nt)

    def row(self, key: str, stream: str, rank: int, origin: str) -> tuple:
        return (key, "b", stream, rank, origin, 0, "", 0, 0, "", "".join(self.texts), 0,
                json.dumps(self.meta))


EVENTS_SCHEMA = ("key string, rtype string, stream string, rank int, origin string, pos int, "
                 "graph string, start long, end long, tkind string, nt string, line int, "
                 "record string")


def parse_partition(cfg: PipelineConfig) -> Callable[[Iterator], Iterator]:
    """The mapInArrow function: raw-record batches -> event / reject / tick rows per key.

    Tick rows (``t``) carry each stream's earliest and latest time in the batch to every
    key, so every bucket sees the progress of the whole input.

    When every query's state is one key that reads every stream (whole_texts), each text
    goes to each key unparsed (rtype ``w``) and the key reads it: parsing here would only
    hand the key N-Triples to parse again, and the key sees every stream's progress itself.
    """

    pack_bytes = PACK_BYTES  # (read here, on the driver: tests change it)
    whole = WHOLE_TEXTS and whole_texts(cfg)

    def run(batches: Iterator) -> Iterator:
        schema = _arrow_schema()
        graphs = cfg.background()
        routers = [Router(qp, graphs) for qp in cfg.queries]
        keys = [qp.key(b) for qp in cfg.queries for b in range(qp.buckets)]
        rank = {s: i for i, s in enumerate(cfg.streams)}
        first_key = keys[0]
        trace = os.environ.get("RSEP_SPARK_TRACE")
        for batch in batches:
            t0, c0 = time.time(), time.process_time()
            # Whole rows appended as tuples and transposed once at the end: one call per
            # row instead of one per column (this loop is per event).
            out: list[tuple] = []
            add = out.append
            d = batch.to_pydict()
            fmts = d.get("format") or [None] * batch.num_rows
            span: dict[str, list] = {}
            for stream, origin, text, fmt in zip(d["stream"], d["origin"], d["text"], fmts,
                                                 strict=True):
                origin = origin or ""
                if stream == END_OF_INPUT:
                    for k in keys:
                        add((k, "x", "", 0, "", 0, "", 0, 0, "", "", 0, ""))
                    continue
                text = text or ""
                if whole and stream in rank:
                    # (the first key reports the text's rejected records, once)
                    for k in keys:
                        add((k, "w", stream, rank[stream], origin, 0, "", 0, 0, fmt or "", text,
                             0, "report" if k == first_key else ""))
                    continue
                items = read_text(text, stream, origin, fmt, cfg.time)
                if stream not in rank:
                    kept: list[Event | Rejected] = [it for it in items if not isinstance(it, Event)]
                    items = kept + ([Rejected(
                        stream, origin, 0, 0, f"<{stream}> is not one of the pipeline's streams",
                        text[:200])] if any(isinstance(it, Event) for it in items) else [])
                packs: dict[str, Pack] = {}  # key -> this text's events for it
                for pos, it in enumerate(items):
                    if isinstance(it, Rejected):
                        add((first_key, "r", stream, 0, "", 0, "", 0, 0, "", "", 0, rejection(it)))
                        continue
                    e = it
                    et, kind = e.time, e.kind.value
                    widen(span, stream, et, kind)
                    line = line_of(e)
                    nt = None
                    for qp, router in zip(cfg.queries, routers, strict=True):
                        for b in router.buckets(e):
                            if nt is None:
                                nt = event_text(e)
                            pack = packs.setdefault(qp.key(b), Pack())
                            pack.add((pos, e.graph, e.start, e.end, kind, line, len(nt)), nt)
                            if pack.size >= pack_bytes:
                                add(pack.row(qp.key(b), stream, rank[stream], origin))
                                packs[qp.key(b)] = Pack()
                for k, pack in packs.items():
                    if pack.meta:
                        add(pack.row(k, stream, rank[stream], origin))
            for stream, (lo, hi, kind) in span.items():
                for k in keys:
                    add((k, "t", stream, rank[stream], "", 0, "", lo, hi, kind, "", 0, ""))
            if trace:
                write_trace(trace, stage="parse", texts=batch.num_rows, rows=len(out),
                            start=t0, end=time.time(), cpu=time.process_time() - c0)
            if out:
                yield record_batch(out, schema)

    return run


def record_batch(rows: list[tuple], schema: pa.Schema) -> pa.RecordBatch:
    """Row tuples (in the schema's column order) as one Arrow batch."""
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(zip(*rows, strict=True), schema, strict=True)],
        schema=schema)


def _arrow_schema():
    t = {"string": pa.string(), "int": pa.int32(), "long": pa.int64()}
    return pa.schema([(n, t[ty]) for n, ty in (f.strip().split(" ") for f in EVENTS_SCHEMA.split(","))])


def events_from_records(records, cfg: PipelineConfig):
    """Raw records (the contract above) -> rows keyed ``query#bucket``, parsed on the executors."""
    cols = [c for c in ("stream", "origin", "text", "format") if c in records.columns]
    return records.select(*cols).mapInArrow(parse_partition(cfg), EVENTS_SCHEMA)
