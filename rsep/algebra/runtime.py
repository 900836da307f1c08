"""The protocol between the engine and the runtimes it drives, below both.

:class:`rsep.runtime.engine.Engine` drives one :class:`Runtime` per registered query (the
window runtime of RSP-QL, C-SPARQL and CQELS queries, rsep.runtime.windowed; SPASEQ's and
EP-SPARQL's automata); a runtime sees its engine only as a :class:`Host`. Both sides
import this module and neither imports the other's, so that the engine and the runtimes
form no import circle, and a runtime reaches nothing of the engine the host does not
offer (as bytewax's operators see their dataflow only through its documented lifecycle).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from pyoxigraph import Triple

    from rsep.algebra.output import Output
    from rsep.stream.event import Event
    from rsep.stream.time import TimeKind

T = TypeVar("T")


@dataclass
class Limits:
    """Bounds that stop a runaway query with a clear error instead of exhausting memory.

    pyoxigraph queries cannot be cancelled, so the bounds are on inputs (window
    size) and outputs (solutions per evaluation); evaluation time is checked
    after each evaluation.
    """

    max_window_triples: int = 10_000_000
    max_results: int = 1_000_000
    max_eval_seconds: float | None = None
    # SPASEQ: matches output at one instant (a match group's paths are enumerated one by
    # one, so a sequence over n events can stand for 2^n of them)
    max_matches: int = 1_000_000
    # EP-SPARQL: triples the CONSTRUCT rules derive at one instant (None:
    # rsep.epsparql.runtime.MAX_DERIVED)
    max_derived: int | None = None


class Host(Protocol):
    """The engine as its runtimes see it: read-only, save the slot they share."""

    @property
    def graphs(self) -> Mapping[str, Sequence[Triple]]:
        """The background graphs by IRI ("default": the default graph), each as it stands
        at the engine's time (changes reach a runtime through
        :meth:`Runtime.graph_changed`)."""
        ...

    @property
    def limits(self) -> Limits:
        """The bounds every query of the engine keeps to (--max-results and the others)."""
        ...

    @property
    def kind(self) -> TimeKind | None:
        """The kind of the events' timestamps; None until the clock starts."""
        ...

    @property
    def now(self) -> int | None:
        """The engine's time: its last event's (or where its clock was set); None before."""
        ...

    def next_graph_change(self, after: int, iris: Iterable[str]) -> int | None:
        """The first instant after ``after`` at which one of the background graphs
        ``iris`` changes (a change already due and not applied: ``after + 1``), or None:
        a runtime skipping quiet instants must not skip that one."""
        ...

    def shared(self, key: Hashable, factory: Callable[[], T]) -> T:
        """The engine's one object for ``key``, made by ``factory()`` the first time it is
        asked for: the state the runtimes of one family share on one engine (EP-SPARQL's
        context, rsep.epsparql.runtime.EpContext.of)."""
        ...


class Runtime(Protocol):
    """What the engine drives for each registered query, in the order it calls it.

    1. Made by its family's factory in the dialect registry (rsep.runtime.dialects), given
       the query, the :class:`Host`, its name and its callback; the query's errors are
       raised here, before anything runs. The background graphs the query reads (its
       family's ``graphs``) are in :attr:`Host.graphs` already: the engine had them given,
       or fetched them, first.
    2. :meth:`bind`, once: when the engine's clock starts (its first event, or
       ``Engine.start_at``), or at once if it had started when the query was registered.
    3. For each event, in time order: first :meth:`next_tick` and :meth:`evaluate` for
       every evaluation due before the event's time, then :meth:`insert` of the event.
       Before an evaluation at ``tau``, :meth:`graph_changed` for each background graph
       that changed at or before ``tau``.
    4. At the end of the input: ``flush()`` if the runtime has one (:class:`Flushing`),
       then the evaluations due up to the end (``--until``), or the deferred decisions'
       (:class:`Deferring`).

    The engine writes :attr:`last_tick` past the instants it skipped as quiet (an
    evaluation there would output nothing new), so that no later arrival reaches back
    into them; it hands each output to :attr:`callback` as well as to its own queue.
    """

    name: str
    last_tick: int | None  # the last evaluation instant; the engine moves it past quiet ones
    callback: Callable[[Output], None] | None

    @property
    def streams(self) -> Collection[str]:
        """The stream IRIs read (empty: every input event)."""
        ...

    def bind(self, kind: TimeKind, time_unit_ms: int | None, start: int) -> None:
        """The clock is known: the events' time kind, the milliseconds a timeline unit is
        (None: as given), and the instant the query starts at (its grids count from it)."""
        ...

    def insert(self, e: Event) -> None:
        """Take in one event (any stream's: the runtime keeps those it reads), after every
        evaluation due before its time."""
        ...

    def next_tick(self, bound: int) -> int | None:
        """The next evaluation instant strictly before ``bound``, or None."""
        ...

    def evaluate(self, tau: int) -> Sequence[Output]:
        """The evaluation at ``tau`` (one :meth:`next_tick` gave): what it outputs."""
        ...

    def graph_changed(self, iri: str, old: frozenset[Triple], new: frozenset[Triple]) -> None:
        """Background graph ``iri`` is ``new`` from now on (rsep.runtime.background), before
        the next evaluation."""
        ...


class Deferring(Runtime, Protocol):
    """A runtime that defers decisions (EP-SPARQL's): the engine evaluates it at the
    instant a deferred decision becomes final."""

    def deadline(self) -> int | None:
        """The first instant at which a decision deferred so far becomes final, or None.
        The engine evaluates the runtime there, whatever brings its time past it (an
        event, ``--until``, the end of the input, the Spark stage's frontier)."""
        ...


class Flushing(Runtime, Protocol):
    """A runtime that holds work back between evaluations (the window runtime's
    event-local stores, synced in batches)."""

    def flush(self) -> None:
        """The input has ended: bring what is held back up to date, before the last
        evaluations."""
        ...
