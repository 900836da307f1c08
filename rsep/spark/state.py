"""The stateful stage: per ``query#bucket``, the in-process engine over that bucket's events.

Rows of a key come unordered; events wait in the state store (``pending``) until
the release frontier F = min over the input streams of (latest time seen) - allowed
lateness passes them, and are then pushed in the in-process merge order (time,
stream rank, origin, position). Every tick row carries the progress of every
stream, so all buckets agree on F; a bucket's engine is settled to F, so its
outputs before F are final. An event behind its stream's progress minus the
allowed lateness is rejected (dead-letter output), never dropped. When every query's
state is one key reading every stream (:func:`whole_texts`), a key takes the raw texts
(``w`` rows) and reads them itself, their progress counted as tick rows count it.

The live Engine stays in the Python worker (``_LIVE``); the state store keeps what
rebuilds it: the released events still inside the query's horizon (``retained``)
and the settled frontier (``meta``). A version number in both detects a cache that
is stale (a retried batch, another worker, a restart): the engine is then rebuilt by
replaying the retained events with their outputs suppressed, all of which are
before the committed frontier.
"""

from __future__ import annotations

import json
import os
import pickle
import time as _time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyoxigraph as ox
from pyspark import TaskContext
from pyspark.sql.streaming.stateful_processor import (
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.spaseq import SpaseqQuery
from rsep.algebra.window import WindowKind
from rsep.runtime.common import relaxed_collector
from rsep.runtime.engine import Engine, Limits, Output
from rsep.runtime.windowed import QueryRuntime
from rsep.spark.plan import QueryPlan
from rsep.spark.texts import read_text
from rsep.stream.event import Event, Rejected
from rsep.stream.files import TimeConfig
from rsep.stream.time import TimeKind, format_time

EVENT_STATE = ("time long, rank int, origin string, pos int, stream string, graph string, "
               "start long, end long, tkind string, nt string")
META_STATE = ("version long, owner string, gstart long, gkind string, maxes string, "
              "frontier long, closed boolean, emitted long")
OUTPUT_SCHEMA = ("rtype string, key string, query string, time long, idx long, "
                 "json string, payload binary")


@dataclass
class PipelineConfig:
    """Everything the executors need, shipped as plain data."""

    queries: list[QueryPlan]
    streams: tuple[str, ...]  # rank order: ties in time are broken by it
    graphs: dict[str, str] = field(default_factory=dict)  # IRI -> N-Triples
    time: TimeConfig = field(default_factory=TimeConfig)
    time_unit_ms: int | None = None
    limits: Limits = field(default_factory=Limits)
    allowed_lateness: int = 0
    until: int | None = None
    run_id: str = ""
    with_query: bool = False

    def query(self, name: str) -> QueryPlan:
        return next(q for q in self.queries if q.name == name)

    def background(self) -> dict[str, list[ox.Triple]]:
        return {iri: [q.triple for q in ox.parse(nt, format=ox.RdfFormat.N_TRIPLES)]
                for iri, nt in self.graphs.items()}


def new_engine(cfg: PipelineConfig, qp: QueryPlan, key: str) -> Engine:
    """The engine of one state key: its query, answering for the key's bucket only."""
    eng = Engine(time_unit_ms=cfg.time_unit_ms, limits=cfg.limits)
    for iri, triples in cfg.background().items():
        eng.add_graph(iri, triples)
    q = qp.parse()
    owner = qp.owner(qp.bucket(key))
    if owner is not None:
        assert isinstance(q, SpaseqQuery)  # (partitioning gives only SPASEQ a key)
        q.options["partition"] = owner
    eng.register(q, name=qp.name, source=qp.source,
                 r2s=R2S(qp.r2s) if qp.r2s else None,
                 report=ReportPolicy.parse(qp.report) if qp.report else None)
    return eng


def _prebind(eng: Engine, kind: TimeKind, start: int) -> None:
    # The engine's clock starts at the first event of the whole input, as in-process,
    # even when that event belongs to another bucket.
    eng.start_at(kind, start)


def horizon(eng: Engine) -> int | None:
    """How far back (timeline units) a rebuild must replay; None: the whole history."""
    out = 0
    for rt in eng.queries:
        if isinstance(rt, QueryRuntime):
            if rt.consumes or not rt.windows:
                return None
            for bw in rt.windows:
                w = bw.window
                if w.kind is not WindowKind.TIME:
                    return None
                out = max(out, 2 * (w.alpha + w.beta) + w.offset)
        else:
            span = getattr(getattr(rt, "machine", None), "window", None)
            if span is None:
                return None
            out = max(out, 2 * span)
    return out


# In an event's ``nt`` text, the line that opens its other named graphs (N-Quads); N-Triples
# escapes line breaks in literals, so no statement's text holds it.
KEPT = "# graphs\n"


def event_text(e: Event) -> str:
    """An event's triples as N-Triples, then (after :data:`KEPT`) its other named graphs."""
    # without an output, serialize returns the bytes (the stub says bytes | None)
    text = ox.serialize(e.triples, format=ox.RdfFormat.N_TRIPLES).decode() if e.triples else ""  # type: ignore[union-attr]
    if e.graphs:
        quads = [ox.Quad(t.subject, t.predicate, t.object, ox.NamedNode(g)) for g, ts in e.graphs for t in ts]
        text += KEPT + ox.serialize(quads, format=ox.RdfFormat.N_QUADS).decode()  # type: ignore[union-attr]
    return text


def event_of(e: tuple) -> Event:
    """An Event from a state tuple (EVENT_STATE's columns)."""
    _, _, origin, pos, stream, graph, start, end, tkind, nt = e
    graphs: tuple[tuple[str, tuple[ox.Triple, ...]], ...] = ()
    if nt and KEPT in nt:
        nt, quads = nt.split(KEPT, 1)
        kept: dict[str, list[ox.Triple]] = {}
        for q in ox.parse(quads, format=ox.RdfFormat.N_QUADS):
            kept.setdefault(q.graph_name.value, []).append(q.triple)
        graphs = tuple((g, tuple(ts)) for g, ts in kept.items())
    triples = tuple(q.triple for q in ox.parse(nt, format=ox.RdfFormat.N_TRIPLES)) if nt else ()
    return Event(stream=stream, graph=graph, start=int(start), end=int(end), triples=triples,
                 kind=TimeKind(tkind), origin=f"{origin}:{pos}", graphs=graphs)


def events_of(es: list[tuple]) -> list[Event]:
    """:func:`event_of` of each state tuple, the N-Triples of many parsed in one call (a
    parse call per event costs a tenth more). An event's text has a line per triple."""
    out: list[Event] = []
    kinds = {k.value: k for k in TimeKind}
    for i in range(0, len(es), 1024):
        chunk = es[i:i + 1024]
        texts = [e[9] or "" for e in chunk]
        if any(KEPT in t for t in texts):
            out.extend(event_of(e) for e in chunk)
            continue
        triples = [q.triple for q in ox.parse("".join(texts), format=ox.RdfFormat.N_TRIPLES)]
        at = 0
        for (_, _, origin, pos, stream, graph, start, end, tkind, _), text in zip(
                chunk, texts, strict=True):
            n = text.count("\n")
            out.append(Event(stream=stream, graph=graph, start=int(start), end=int(end),
                             triples=tuple(triples[at:at + n]), kind=kinds[tkind],
                             origin=f"{origin}:{pos}"))
            at += n
        if at != len(triples):
            raise AssertionError("an event's N-Triples text is not a line per triple")
    return out


def _stored(e: tuple) -> tuple:
    """A state tuple as the state store keeps it: an event read from a whole text (its
    Event in nt's place) gets its N-Triples text."""
    ev = e[9]
    return e if ev.__class__ is not Event else (*e[:9], event_text(ev))


def _events(es: list[tuple]) -> list[Event]:
    """The events of state tuples, in order: those read from whole texts as they are, the
    others decoded (events_of)."""
    coded = [e for e in es if e[9].__class__ is not Event]
    if len(coded) == len(es):
        return events_of(es)
    decoded = iter(events_of(coded))
    return [e[9] if e[9].__class__ is Event else next(decoded) for e in es]


def whole_texts(cfg: PipelineConfig) -> bool:
    """Whether every query's state is one key that reads every stream: then each key takes
    the raw texts and reads them itself (rsep.spark.parse), sees every stream's progress in
    them, and no event is written as N-Triples to be parsed again unless it is kept in the
    state store."""
    return all(qp.buckets == 1 and (not qp.streams or set(cfg.streams) <= set(qp.streams))
               for qp in cfg.queries)


def widen(span: dict[str, list], stream: str, t: int, kind: str) -> None:
    """A stream's [earliest, latest time, time kind] in a batch (what a tick row carries),
    widened to an event at ``t``."""
    sp = span.get(stream)
    if sp is None:
        span[stream] = [t, t, kind]
    elif t < sp[0]:
        sp[0] = t
    elif t > sp[1]:
        sp[1] = t


def line_of(e: Event) -> int:
    """The line of an event's graph block (its origin's "file:line")."""
    return int(e.origin.rsplit(":", 1)[1] or 0)


def rejection(it: Rejected) -> str:
    """A rejected record's dead-letter JSON."""
    return json.dumps({"stream": it.stream, "file": it.origin, "line": it.line,
                       "column": it.column, "reason": it.reason, "record": it.text, **it.extra})


@dataclass
class _Live:
    version: int
    engine: Engine
    bound: bool = False


_LIVE: dict[tuple[str, str], _Live] = {}
_TRACE = os.environ.get("RSEP_SPARK_TRACE")  # a file: per key and batch, time spent here
_PROFILE = os.environ.get("RSEP_SPARK_PROFILE")  # a folder: a cProfile dump per key and batch


def trace(path: str, **record: Any) -> None:
    """One JSON line of the trace (RSEP_SPARK_TRACE): wall-clock start/end, CPU seconds of
    this worker and the task's partition, so stages can be laid out on a timeline."""
    tc = TaskContext.get()
    record["partition"] = tc.partitionId() if tc is not None else None
    record["pid"] = os.getpid()
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


class EngineProcessor(StatefulProcessor):
    def __init__(self, cfg: PipelineConfig) -> None:
        self.cfg = cfg

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.meta = handle.getValueState("meta", META_STATE)
        self.pending = handle.getListState("pending", EVENT_STATE)
        self.retained = handle.getListState("retained", EVENT_STATE)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        k = key[0]
        t0, c0 = _time.time(), _time.process_time()
        b = _Batch(self, k)
        if _PROFILE:
            import cProfile
            prof = cProfile.Profile()
            out = prof.runcall(b.run, rows)
            prof.dump_stats(os.path.join(_PROFILE, f"state-{os.getpid()}-{t0:.0f}.prof"))
        else:
            with relaxed_collector():
                out = b.run(rows)
        if _TRACE:
            trace(_TRACE, stage="state", key=k, start=t0, end=_time.time(),
                  cpu=_time.process_time() - c0, events=b.events, rows=len(out),
                  phases={n: round(v, 4) for n, v in b.times.items()})
        if out:
            yield pd.DataFrame(out, columns=["rtype", "key", "query", "time", "idx", "json",
                                             "payload"])

    def close(self) -> None:
        pass


# An input event (unpacked from a ``b`` row, rsep.spark.parse.Pack) as a tuple: the
# EVENT_STATE columns (time = end), then the line.
_ORIGIN, _STREAM, _GRAPH, _END, _TKIND, _LINE = 2, 4, 5, 7, 8, 10


class _Batch:
    """One key's work in one micro-batch."""

    def __init__(self, proc: EngineProcessor, key: str) -> None:
        self.p = proc
        self.cfg = proc.cfg
        self.key = key
        qname, _, _ = key.rpartition("#")
        self.qp = self.cfg.query(qname)
        self.out: list[tuple] = []
        self.times: dict[str, float] = {}
        self.events = 0

    def _lap(self, name: str, t0: float) -> float:
        t = _time.perf_counter()
        self.times[name] = self.times.get(name, 0.0) + t - t0
        return t

    def run(self, rows: Iterator[pd.DataFrame]) -> list[tuple]:
        cfg, p = self.cfg, self.p
        m = p.meta.get() if p.meta.exists() else None
        version, owner, gstart, gkind, maxes, frontier, closed, emitted = (
            m if m is not None else (0, cfg.run_id, None, None, "{}", None, False, 0))
        t = _time.perf_counter()
        maxes = json.loads(maxes)
        self.emitted = emitted
        live = _LIVE.get((cfg.run_id, self.key))
        if live is None or live.version != version or owner != cfg.run_id:
            live = self._rebuild(version, gstart, gkind, frontier)
        eng = live.engine
        t = self._lap("state-read+rebuild", t)
        before = dict(maxes)
        new: list[tuple] = []
        end = False
        lateness = cfg.allowed_lateness
        for pdf in rows:
            # Column lists, not itertuples: a row costs a tuple from zip instead of a
            # namedtuple and six pandas scalar conversions (the stage read ~30 us/row).
            kinds = pdf["rtype"]
            incoming: list[tuple] = []
            # Texts taken unparsed (whole_texts): read here, and their progress counted as
            # the parse stage's tick rows would count it.
            whole = pdf[kinds == "w"]
            span: dict[str, list] = {}
            for stream, rank, origin, fmt, text, report in zip(
                    whole["stream"].tolist(), whole["rank"].tolist(), whole["origin"].tolist(),
                    whole["tkind"].tolist(), whole["nt"].tolist(), whole["record"].tolist(),
                    strict=True):
                for pos, it in enumerate(read_text(text, stream, origin, fmt or None, cfg.time)):
                    if isinstance(it, Rejected):
                        if report:
                            self.out.append(("r", self.key, self.qp.name, -1, 0, rejection(it),
                                             None))
                        continue
                    et, kind = it.end, it.kind.value
                    widen(span, stream, et, kind)
                    line = line_of(it)
                    it.origin = f"{origin}:{pos}"  # (as event_of names a decoded one)
                    # the Event in nt's place until the state store needs its text (_stored)
                    incoming.append((et, rank, origin, pos, stream, it.graph, it.start, et, kind,
                                     it, line))
            ticks = pdf[kinds == "t"]
            for s, start, tend, tkind in [*zip(ticks["stream"].tolist(), ticks["start"].tolist(),
                                               ticks["end"].tolist(), ticks["tkind"].tolist(),
                                               strict=True),
                                          *((s, lo, hi, k) for s, (lo, hi, k) in span.items())]:
                maxes[s] = max(maxes.get(s, tend), tend)
                if gstart is None or (not live.bound and start < gstart):
                    gstart, gkind = start, tkind
            packed = pdf[kinds == "b"]
            for stream, rank, origin, nts, record in zip(
                    packed["stream"].tolist(), packed["rank"].tolist(), packed["origin"].tolist(),
                    packed["nt"].tolist(), packed["record"].tolist(), strict=True):
                at = 0
                for pos, graph, since, time, tkind, line, n in json.loads(record):
                    incoming.append((time, rank, origin, pos, stream, graph, since, time, tkind,
                                     nts[at:at + n], line))
                    at += n
            for e in incoming:
                time, stream, tkind = e[0], e[_STREAM], e[_TKIND]
                self.events += 1
                bound = before.get(stream)
                if closed or (bound is not None and time < bound - lateness):
                    self._late(e, bound if bound is not None else time, closed)
                elif gkind is not None and tkind != gkind:
                    self._reject(e, f"<{e[_GRAPH]}> has a {tkind} timestamp but other "
                                 f"streams use {gkind} ones")
                else:
                    new.append(e[:10])
            rest = pdf[(kinds == "r") | (kinds == "x")]
            for kind, record in zip(rest["rtype"].tolist(), rest["record"].tolist(), strict=True):
                if kind == "r":
                    self.out.append(("r", self.key, self.qp.name, -1, 0, record, None))
                elif kind == "x":
                    end = True
        t = self._lap("input", t)
        pend = list(p.pending.get()) if p.pending.exists() else []
        pend.extend(new)
        t = self._lap("state-read", t)
        if end:
            release, keep = pend, []
        elif all(s in maxes for s in cfg.streams) and cfg.streams:
            f = min(maxes[s] for s in cfg.streams) - lateness
            release = [e for e in pend if e[0] < f]
            keep = [e for e in pend if e[0] >= f]
            frontier = f if frontier is None else max(frontier, f)
        else:
            release, keep = [], pend
        release.sort(key=lambda e: (e[0], e[1], e[2], e[3]))
        if gstart is not None and not live.bound:
            _prebind(eng, TimeKind(gkind), gstart)
            live.bound = True
        events = _events(release)
        t = self._lap("decode", t)
        for ev in events:
            eng.push(ev)
        if end and not closed:
            eng.close(self.cfg.until)
            closed = True
        elif frontier is not None and eng.now is not None and frontier > eng.now:
            eng.advance_to(frontier)  # evaluations before F are final: no event before F can come
        self._emit(eng)
        t = self._lap("engine", t)
        if keep:
            p.pending.put(list(map(_stored, keep)))
        elif pend:
            p.pending.clear()
        if closed:
            # (a closed query takes no event again: a rebuild has nothing to replay)
            if p.retained.exists():
                p.retained.clear()
        elif release:
            h = horizon(eng)
            if h is None:
                p.retained.appendList(list(map(_stored, release)))
            else:
                cut = (frontier if frontier is not None else release[-1][0]) - h
                old = list(p.retained.get()) if p.retained.exists() else []
                kept = [e for e in old if e[0] >= cut] + [_stored(e) for e in release
                                                          if e[0] >= cut]
                if kept:
                    p.retained.put(kept)
                elif old:
                    p.retained.clear()
        version += 1
        live.version = version
        _LIVE[(cfg.run_id, self.key)] = live
        p.meta.update((version, cfg.run_id, gstart, gkind, json.dumps(maxes), frontier, closed,
                       self.emitted))
        self._lap("state-write", t)
        return self.out

    def _rebuild(self, version: int, gstart: int | None, gkind: str | None,
                 frontier: int | None) -> _Live:
        eng = new_engine(self.cfg, self.qp, self.key)
        live = _Live(version, eng)
        if gstart is not None:
            _prebind(eng, TimeKind(gkind), gstart)
            live.bound = True
        if self.p.retained.exists():
            for ev in events_of([tuple(e) for e in self.p.retained.get()]):
                eng.push(ev)
        if frontier is not None and eng.now is not None and frontier > eng.now:
            eng.advance_to(frontier)
        # Everything a replay outputs was output before the committed frontier.
        list(eng.drain())
        return live

    def _emit(self, eng: Engine) -> None:
        for o in eng.drain():
            d = o.to_json()
            if self.cfg.with_query:
                d = {"query": o.query, **d}
            self.emitted += 1
            self.out.append(("o", self.key, o.query, o.time, self.emitted,
                             json.dumps(d, ensure_ascii=False), pickle.dumps(o)))

    def _reject(self, e: tuple, reason: str) -> None:
        self.out.append(("r", self.key, self.qp.name, e[_END], 0, json.dumps({
            "stream": e[_STREAM], "file": e[_ORIGIN], "line": e[_LINE], "column": 0,
            "reason": reason, "record": e[_GRAPH]}), None))

    def _late(self, e: tuple, bound: int, closed: bool) -> None:
        kind = TimeKind(e[_TKIND])
        if closed:
            reason = f"<{e[_GRAPH]}> arrived after the end of the input"
        else:
            reason = (f"timestamp {format_time(e[_END], kind)} of <{e[_GRAPH]}> is late: the "
                      f"stream is already at {format_time(bound, kind)}"
                      + (f" (allowed lateness {self.cfg.allowed_lateness})"
                         if self.cfg.allowed_lateness else
                         " (accept late events with --allowed-lateness)"))
        self._reject(e, reason)


def output_of(payload: bytes) -> Output:
    return pickle.loads(payload)
