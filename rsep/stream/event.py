"""Stream items: timestamped RDF graphs (Def. 1 of RSEP-QL), point or interval stamped."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyoxigraph as ox
from pyoxigraph import Triple

from rsep.stream.time import TimeKind

# graph names for events made without one: distinct in a process, in the order made
_names = itertools.count(1)


@dataclass(slots=True)
class Event:
    """One element (G, [start, end]) of an RDF stream; point events have start == end.

    ``seq`` is the global arrival order assigned when streams are merged, so ties
    in time are broken deterministically. ``graphs``: the other named graphs of an RDF
    Message, kept apart from the event's graph (name, triples), in the window while the
    event is (docs/semantics.md, RDF Message Logs).
    """

    stream: str
    graph: str
    start: int
    end: int
    triples: tuple[Triple, ...]
    kind: TimeKind = TimeKind.ABSTRACT
    seq: int = 0
    origin: str = ""  # "file:line" of the event's graph block, for messages
    graphs: tuple[tuple[str, tuple[Triple, ...]], ...] = ()

    @property
    def time(self) -> int:
        """The time at which the event is known (its arrival time): the end of its interval."""
        return self.end

    @classmethod
    def at(cls, time: int, triples: Iterable[Triple] | str, *, stream: str,
           graph: str | None = None, start: int | None = None,
           kind: TimeKind = TimeKind.ABSTRACT) -> Event:
        """An event of ``stream`` known at ``time``: a point, or the interval [start, time].

        ``triples`` are pyoxigraph triples or Turtle text (``@prefix`` lines included; a
        syntax error is pyoxigraph's SyntaxError, with its line and column). ``graph`` names
        the event's graph (default: ``STREAM/event/N``, N counting the events made so in
        this process). ``kind``: abstract time units (the default), or ``TimeKind.DATETIME``
        for epoch milliseconds of xsd:dateTime stamps."""
        if isinstance(time, bool) or not isinstance(time, int):
            raise TypeError(f"Event.at: time must be an int, not {type(time).__name__}")
        begin = time if start is None else start
        if begin > time:
            raise ValueError(f"Event.at: start {begin} is after time {time}")
        if isinstance(triples, str):
            got = tuple(q.triple for q in ox.parse(triples, ox.RdfFormat.TURTLE))
        else:
            got = tuple(triples)
            for t in got:
                if not isinstance(t, Triple):
                    raise TypeError(f"Event.at: triples must be pyoxigraph Triples or Turtle "
                                    f"text, not {type(t).__name__}")
        return cls(stream=stream, graph=graph or f"{stream}/event/{next(_names)}", start=begin,
                   end=time, triples=got, kind=kind, origin=f"Event.at({time})")


@dataclass(slots=True)
class Rejected:
    """A record that could not become (or stay) a stream element, with the reason."""

    stream: str
    origin: str  # file name or source
    line: int
    column: int
    reason: str
    text: str = ""
    extra: dict = field(default_factory=dict)

    def message(self) -> str:
        loc = f"{self.origin}:{self.line}" + (f":{self.column}" if self.column else "")
        return f"{loc}: {self.reason}"
