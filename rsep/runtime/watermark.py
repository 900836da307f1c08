"""Event time on quiet streams: when a live engine's time moves without a later event.

An engine's time is its events' (docs/semantics.md): an evaluation due at t happens when an
event after t comes, or when the clock is moved (``POST /clock``, ``Engine.close(until)``).
A replay always has a next event or an end; a live stream may go quiet, and an answer due
at t waits. A :class:`WatermarkPolicy` says when engine time moves on its own, as Flink's
and Spark's watermarks do:

- ``events`` (the default): only events and the clock move it (a replay's semantics).
- ``idle:SECONDS``: once no event has come for SECONDS of wall time, engine time moves to
  the last event's time plus the allowed lateness (Flink's idle sources): what is due up to
  it is evaluated, and a later event at or before it is rejected as late.
- ``processing``: engine time follows the wall clock, mapped to event time from the first
  event (its time at its arrival, one time unit per ``--time-unit``, a millisecond for
  dateTime timestamps), less the allowed lateness: an instant is evaluated once the wall
  clock is past it, and an event at or before it is rejected.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rsep.algebra.output import EngineError
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

if TYPE_CHECKING:
    from rsep.runtime.engine import Engine

POLICIES = ("events", "idle:SECONDS", "processing")


@dataclass(frozen=True)
class WatermarkPolicy:
    kind: str = "events"  # events | idle | processing
    idle_s: float = 0.0

    @classmethod
    def parse(cls, text: str) -> WatermarkPolicy:
        t = text.strip().lower()
        if t in ("events", "processing"):
            return cls(t)
        if t.startswith("idle:"):
            try:
                s = float(t[5:].removesuffix("s"))
            except ValueError:
                s = math.nan
            if math.isfinite(s) and s > 0:
                return cls("idle", s)
        raise ValueError(f"watermark policy {text!r}: use events, idle:SECONDS (e.g. idle:2) "
                         "or processing")

    @property
    def moves(self) -> bool:
        """Whether engine time moves without events under this policy."""
        return self.kind != "events"

    def due(self, *, latest: int | None, last_arrival: float | None,
            first: tuple[int, float] | None, wall: float, lateness: int,
            kind: TimeKind | None, time_unit_ms: int | None) -> int | None:
        """The engine time this policy moves to at monotonic wall time ``wall`` (seconds),
        or None: ``latest`` the latest event time taken in, ``last_arrival`` when the last
        event came, ``first`` the first event's (time, arrival)."""
        if self.kind == "idle":
            if latest is None or last_arrival is None or wall - last_arrival < self.idle_s:
                return None
            return latest + lateness
        if self.kind == "processing":
            if first is None:
                return None
            unit_ms = 1 if kind is TimeKind.DATETIME else (time_unit_ms or 1)
            # the last instant the wall clock is past (the current one may get more events)
            return first[0] + math.floor((wall - first[1]) * 1000 / unit_ms) - 1 - lateness
        return None


class Watermarked:
    """The push API's engine with a watermark policy: :meth:`push` events as to the engine,
    and call :meth:`tick` from time to time (a timer, an idle loop): when the policy says
    (idle spell over, wall clock past a due time), engine time moves and what is due is
    evaluated, its outputs in ``engine.drain()`` as ever; a later event at or before the
    time moved to is refused (EngineError), as ``rsep serve`` rejects it. Not thread-safe:
    call push and tick from one thread, as the engine's own methods."""

    def __init__(self, engine: Engine, policy: WatermarkPolicy, *, lateness: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.engine, self.policy, self.lateness, self.clock = engine, policy, lateness, clock
        self.latest: int | None = None
        self.last_arrival: float | None = None
        self.first: tuple[int, float] | None = None
        self.floor: int | None = None  # the time last moved to: no event at or before it
        self._moved_for: float | None = None

    def push(self, e: Event) -> None:
        if self.floor is not None and e.time <= self.floor:
            raise EngineError(f"{e.origin}: timestamp {e.time} of <{e.graph}> is not after "
                              f"the time {self.floor} the watermark moved the engine to")
        self.engine.push(e)
        wall = self.clock()
        self.latest = e.time if self.latest is None else max(self.latest, e.time)
        self.last_arrival = wall
        if self.first is None:
            self.first = (e.time, wall)

    def tick(self) -> int | None:
        """Move engine time if the policy says so now; the time moved to, or None."""
        due = self.policy.due(latest=self.latest, last_arrival=self.last_arrival,
                              first=self.first, wall=self.clock(), lateness=self.lateness,
                              kind=self.engine.kind, time_unit_ms=self.engine.time_unit_ms)
        if due is None or (self.floor is not None and due <= self.floor):
            return None
        if self.policy.kind == "idle":
            if self._moved_for == self.last_arrival:
                return None
            self._moved_for = self.last_arrival
        now = self.engine.now
        if now is not None and due < now:
            return None
        self.engine.close(until=due)  # (what POST /clock does: evaluations due up to it)
        self.floor = due
        return due
