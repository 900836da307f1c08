"""Events of an RDF graph streamset (002 Defs. 1-3) and the matches both SPASEQ evaluators return."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyoxigraph as ox

from rsep.algebra.spaseq import Omega, project
from rsep.stream.event import Event

# (time, leaf key): which occurrence of a GPM in the sequence took the event of that time.
# The stream is the leaf's, so the pair names the event.
Step = tuple[int, int]


@dataclass(eq=False, slots=True)  # not frozen: built per event, and frozen init costs ~3x
class SEvent:
    """An RDF graph event ``(tau, G)`` of a named stream.

    Definition 2 allows one graph per stream and timestamp, so input events of one
    stream with the same time are one SPASEQ event: the union of their graphs.
    """

    stream: str
    time: int
    triples: tuple[ox.Triple, ...]
    graphs: tuple[str, ...] = ()  # the input graph names merged into it


def merge_events(events: Iterable[Event], streams: set[str] | None = None) -> list[SEvent]:
    """Input events as SPASEQ events, in time order (ties by first arrival)."""
    merged: dict[tuple[str, int], tuple[list[ox.Triple], list[str]]] = {}
    for e in events:
        if streams is not None and e.stream not in streams:
            continue
        ts, gs = merged.setdefault((e.stream, e.time), ([], []))
        ts.extend(e.triples)
        gs.append(e.graph)
    return [SEvent(s, t, tuple(dict.fromkeys(ts)), tuple(gs))
            for (s, t), (ts, gs) in sorted(merged.items(), key=lambda kv: kv[0][1])]


@dataclass
class Streamset:
    """Sigma (Def. 3): the query's named streams, indexed by stream and by time."""

    events: list[SEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.by_stream: dict[str, dict[int, SEvent]] = {}
        for e in self.events:
            if e.time in self.by_stream.setdefault(e.stream, {}):
                raise ValueError(f"two events of <{e.stream}> at {e.time}: merge them first")
            self.by_stream[e.stream][e.time] = e
        self.times: list[int] = sorted({e.time for e in self.events})

    def event(self, stream: str, time: int) -> SEvent | None:
        return self.by_stream.get(stream, {}).get(time)

    def stream_events(self, stream: str, after: int, before: int) -> list[SEvent]:
        """The events of ``stream`` strictly between two times."""
        return [e for t, e in sorted(self.by_stream.get(stream, {}).items()) if after < t < before]

    def next_time(self, after: int) -> int | None:
        """The first timestamp of any stream of Sigma after ``after`` (Def. 12's contiguity)."""
        i = bisect.bisect_right(self.times, after)
        return self.times[i] if i < len(self.times) else None

    def times_between(self, tb: int, te: int | None) -> list[int]:
        lo = bisect.bisect_left(self.times, tb)
        hi = len(self.times) if te is None else bisect.bisect_right(self.times, te)
        return self.times[lo:hi]


# Hashable, and never changed once built; not frozen, whose init costs ~4x per match.
@dataclass(unsafe_hash=True, slots=True)
class Match:
    """A pair ``(tau, Omega)`` of a sequence expression's evaluation, with the events behind it.

    ``steps`` are (time, leaf key) sorted by time then leaf: two matches are the same
    match when they pair the same events with the same GPM occurrences.
    """

    time: int
    omega: Omega
    steps: tuple[Step, ...]
    # (time, leaf key, the mappings after that event), in order: what the NFA's history
    # holds, from which Kleene+ iterations are read back. Not part of the match's identity.
    trail: tuple[tuple[int, int, Omega], ...] = field(default=(), compare=False, repr=False)

    @property
    def first(self) -> int:
        return self.steps[0][0]

    @property
    def key(self) -> tuple:
        return (self.time, self.steps, self.omega)

    def rows(self, variables: Iterable[str]) -> Omega:
        """pi_V(Omega) (Def. 16)."""
        return project(self.omega, variables)


def steps_of(*parts: Iterable[Step]) -> tuple[Step, ...]:
    return tuple(sorted(s for p in parts for s in p))
