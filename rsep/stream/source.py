"""Merging named streams into one time-ordered sequence, with ordering policies.

Ties in time are broken by the order in which streams were given (first given,
first delivered), then by the order within each stream's file: deterministic,
and the same in every run.

An event whose time goes backwards in its own stream is never dropped silently:
with ``allowed_lateness == 0`` it is rejected with a message; with a positive
allowed lateness events are held back in a reorder buffer and released in time
order once the stream has advanced past them by the allowed lateness, and only
events later than that are rejected.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rsep.stream.event import Event, Rejected
from rsep.stream.time import TimeKind, format_time


@dataclass
class OrderingPolicy:
    """How to treat an event whose time is earlier than an earlier event's of its stream."""

    allowed_lateness: int = 0  # in timeline units


class DeadLetter:
    """Collects rejected records: counts them, reports them, and writes them as JSON lines.
    A :class:`~rsep.stream.protocol.Sink` of ``Rejected``, and callable as the readers'
    ``reject``."""

    def __init__(self, path: str | Path | None = None, echo: IO[str] | None = None,
                 echo_limit: int = 20) -> None:
        self.count = 0
        self._file = open(path, "w", encoding="utf-8") if path else None
        self._echo = echo
        self._echo_limit = echo_limit
        self.items: list[Rejected] = []

    def __call__(self, r: Rejected) -> None:
        self.write(r)

    def write(self, r: Rejected) -> None:
        self.count += 1
        if len(self.items) < 10_000:
            self.items.append(r)
        if self._file:
            self._file.write(json.dumps({
                "stream": r.stream, "file": r.origin, "line": r.line, "column": r.column,
                "reason": r.reason, "record": r.text, **r.extra,
            }) + "\n")
            self._file.flush()
        if self._echo is not None:
            if self.count <= self._echo_limit:
                print(f"rejected: {r.message()}", file=self._echo)
            elif self.count == self._echo_limit + 1:
                print("rejected: ... (further rejections only counted; see the dead-letter file)",
                      file=self._echo)

    def close(self) -> None:
        if self._file:
            self._file.close()


def _late(e: Event, bound: int, lateness: int) -> Rejected:
    return Rejected(
        e.stream, e.origin.rsplit(":", 1)[0], int(e.origin.rsplit(":", 1)[1] or 0), 0,
        f"timestamp {format_time(e.time, e.kind)} of <{e.graph}> goes backwards: "
        f"the stream is already at {format_time(bound, e.kind)}"
        + (f" (allowed lateness {lateness})" if lateness else
           " (accept late events with --allowed-lateness)"),
        e.graph,
    )


def _kind_changed(e: Event, kind: TimeKind) -> Rejected:
    return Rejected(e.stream, e.origin, 0, 0,
                    f"<{e.graph}> has a {e.kind.value} timestamp but the stream's "
                    f"earlier events have {kind.value} ones", e.graph)


def _ordered(items: Iterable[Event | Rejected], policy: OrderingPolicy,
             reject: Callable[[Rejected], None]) -> Iterator[Event]:
    """One stream's events in non-decreasing time, applying the ordering policy."""
    last_out: int | None = None
    last_kind: TimeKind | None = None
    held: list[tuple[int, int, Event]] = []
    n = 0
    max_seen: int | None = None
    lateness = policy.allowed_lateness

    for it in items:
        if isinstance(it, Rejected):
            reject(it)
            continue
        e = it
        if last_kind is not None and e.kind is not last_kind:
            reject(_kind_changed(e, last_kind))
            continue
        last_kind = e.kind
        if lateness <= 0:
            if last_out is not None and e.end < last_out:
                reject(_late(e, last_out, lateness))
                continue
            last_out = e.end
            yield e
            continue
        if last_out is not None and e.end < last_out:
            reject(_late(e, last_out, lateness))
            continue
        max_seen = e.end if max_seen is None else max(max_seen, e.end)
        n += 1
        heapq.heappush(held, (e.end, n, e))
        while held and held[0][0] <= max_seen - lateness:
            t, _, ev = heapq.heappop(held)
            last_out = t
            yield ev
    while held:
        t, _, ev = heapq.heappop(held)
        yield ev


def _merge(iters: list[Iterator[Event]]) -> Iterator[Event]:
    """The streams' events by (time, stream index), each stream's in its own order, each
    taken from its stream only after the one before it went out: what ``heapq.merge`` with
    that key gives, without a key call and two tuples per event."""
    heap: list[tuple[int, int, Event]] = []
    for i, it in enumerate(iters):
        e = next(it, None)
        if e is not None:
            heap.append((e.end, i, e))  # (e.end: e.time, without the property's call)
    heapq.heapify(heap)
    while len(heap) > 1:
        _, i, e = heap[0]
        yield e
        nxt = next(iters[i], None)
        if nxt is None:
            heapq.heappop(heap)
        else:
            heapq.heapreplace(heap, (nxt.end, i, nxt))
    if heap:
        _, i, e = heap[0]
        yield e
        yield from iters[i]


def merge_streams(
    streams: Sequence[Iterable[Event | Rejected]],
    reject: Callable[[Rejected], None],
    policy: OrderingPolicy | None = None,
) -> Iterator[Event]:
    """Merge several streams by time, numbering events in delivery order (``seq``)."""
    policy = policy or OrderingPolicy()
    if len(streams) == 1:
        if policy.allowed_lateness <= 0:
            # nothing to interleave nor hold back: one generator instead of three per event
            return _single(streams[0], reject)
        merged: Iterable[Event] = _ordered(streams[0], policy, reject)
    else:
        merged = _merge([_ordered(s, policy, reject) for s in streams])
    return _numbered(merged, reject)


def _numbered(merged: Iterable[Event], reject: Callable[[Rejected], None]) -> Iterator[Event]:
    seq = 0
    kind: TimeKind | None = None
    for e in merged:
        if kind is None:
            kind = e.kind
        elif e.kind is not kind:
            reject(Rejected(e.stream, e.origin, 0, 0,
                            f"<{e.graph}> has a {e.kind.value} timestamp but other streams use "
                            f"{kind.value} ones", e.graph))
            continue
        seq += 1
        e.seq = seq
        yield e


def _single(items: Iterable[Event | Rejected], reject: Callable[[Rejected], None]) -> Iterator[Event]:
    """:func:`_ordered` without lateness and the numbering of :func:`merge_streams`, fused for
    one stream (whose events all have one kind of time once _ordered has passed them)."""
    last_out: int | None = None
    last_kind: TimeKind | None = None
    seq = 0
    for it in items:
        if isinstance(it, Rejected):  # (not typing.cast: compiled, that is a call per event)
            reject(it)
            continue
        e = it
        if e.kind is not last_kind:
            if last_kind is not None:
                reject(_kind_changed(e, last_kind))
                continue
            last_kind = e.kind
        t = e.end
        if last_out is not None and t < last_out:
            reject(_late(e, last_out, 0))
            continue
        last_out = t
        seq += 1
        e.seq = seq
        yield e
