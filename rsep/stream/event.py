"""Stream items: timestamped RDF graphs (Def. 1 of RSEP-QL), point or interval stamped."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyoxigraph import Triple

from rsep.stream.time import TimeKind


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
