"""The two protocols every input and output of rsep speaks, as bytewax's connectors do.

A :class:`Source` is one named stream (000 Def. 3): its IRI and its elements in arrival
order, with the records it could not read as :class:`~rsep.stream.event.Rejected` (they
go to the dead letter; the source goes on). Files, standard input, TCP, MQTT, RDF Message
Logs, Jelly and RML-mapped feeds are all opened by :func:`rsep.stream.readers.open_stream`;
a user's own source is any object with these two members.

A :class:`Sink` takes items one by one and is closed once: the dead letter
(:class:`~rsep.stream.source.DeadLetter`, items ``Rejected``), the result writers
(:func:`rsep.runtime.sinks.open_sink`, items ``Output``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, TypeVar, runtime_checkable

from rsep.stream.event import Event, Rejected

T_contra = TypeVar("T_contra", contravariant=True)


@runtime_checkable
class Source(Protocol):
    """One stream: ``stream`` is its IRI; iterating reads it once, in arrival order."""

    stream: str

    def __iter__(self) -> Iterator[Event | Rejected]: ...


@runtime_checkable
class Sink(Protocol[T_contra]):
    """Where items go: ``write`` each, then ``close`` once (flushing what it holds)."""

    def write(self, item: T_contra) -> None: ...

    def close(self) -> None: ...
