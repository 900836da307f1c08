"""The engine's background graphs, static and time-varying (000 Def. 2 and 4).

A time-varying graph is the initial graph and its changes in time order
(rsep.algebra.dataset.TimeVaryingGraph). The engine applies the changes stamped <= t just
before its first evaluation at or after t (Engine._evaluate), so an evaluation at t sees
G(t), and tells every registered runtime which graphs changed, so that the stores and
indexes they built from the background follow. A change is no evaluation instant of its
own: the report policies decide those from the streams (docs/semantics.md).

:class:`Background` holds the changes, not the graphs: the engine owns those
(``Engine.graphs``). It reads a graph as it stands and the engine's clock through the
functions it is given, and reports each new content through its ``on_change`` callback
(the engine stores it and tells its runtimes); :meth:`Background.load` and
:meth:`Background.fetch` give the triples they read back to the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyoxigraph as ox

from rsep.algebra.dataset import TimeVaryingGraph
from rsep.algebra.output import EngineError
from rsep.lang import QueryError
from rsep.sparql.update import Graph, LiveGraph, UpdateError, canonical
from rsep.stream.event import Rejected
from rsep.stream.time import format_time
from rsep.stream.updates import GraphUpdate

if TYPE_CHECKING:
    from rsep.stream.time import TimeKind


# the most a dereferenced graph may be (its whole body is held to parse it)
MAX_FETCH = 64 << 20


# on_change(iri, old, new): graph ``iri`` is ``new`` from now on, where it was ``old``
# (equal when only its form changed: the triples as a store gives them back)
OnChange = Callable[[str, Graph, Graph], None]


def _no_clock() -> tuple[TimeKind | None, int | None]:
    return None, None


class Background:
    """The changes of the time-varying graphs of one engine not yet applied, each applied
    at the engine's time and reported to ``on_change``. Applied changes are dropped (a
    server takes changes for ever): each TimeVaryingGraph then holds G from the engine's
    time on, its ``initial`` the graph as it stands.

    ``graph(iri)``: the graph as it stands (empty if there is none); ``clock()``: the kind
    of the events' times and the engine's time, each None before its clock starts."""

    def __init__(self, on_change: OnChange, graph: Callable[[str], Sequence[ox.Triple]],
                 clock: Callable[[], tuple[TimeKind | None, int | None]] = _no_clock) -> None:
        self.on_change = on_change
        self.graph = graph
        self.clock = clock
        self.varying: dict[str, TimeVaryingGraph] = {}
        self._live: dict[str, LiveGraph] = {}
        self.due: int | None = None  # the time of the first change not applied
        # where a change that cannot be applied goes (the dead letter); None: it is an error
        self.reject: Callable[[Rejected], None] | None = None
        self.applied = 0

    # ------------------------------------------------------------ set-up

    def load(self, iri: str, data: str | Path | Iterable[ox.Triple],
             fmt: ox.RdfFormat | None = None) -> list[ox.Triple]:
        """Content of graph ``iri`` (a file, or triples), to be added to what it has: the
        triples read (an EngineError if the file does not parse, or if the graph's changes
        were given already)."""
        if isinstance(data, (str, Path)):
            path = Path(data)
            try:
                triples = [q.triple for q in ox.parse(path=str(path), format=fmt)]
            except (SyntaxError, ValueError, OSError) as e:
                raise EngineError(f"graph {iri}: {path}: {e}") from None
        else:
            triples = list(data)
        if iri in self.varying:
            raise EngineError(f"graph {iri} changes over time: give its content before its "
                              "updates")
        return triples

    def fetch(self, g: str, source: str | None, allowed: bool) -> list[ox.Triple]:
        """A graph a query reads and no one gave: its triples, fetched from its IRI when the
        engine allows dereferencing (``allowed``: --allow-dereference); a QueryError
        otherwise."""
        if not allowed:
            raise QueryError(
                f"<{g}> names no graph supplied to the engine (use --graph {g}=PATH); "
                "graph IRIs are not dereferenced unless --allow-dereference is given",
                source=source)
        # Only the web: a query's FROM <file:///etc/...> (or ftp:, data:) would read what the
        # user never gave (urllib opens them all; its redirects go to http(s) and ftp only)
        scheme = g.partition(":")[0].lower()
        if scheme not in ("http", "https"):
            raise QueryError(f"<{g}> is not an http(s) IRI: --allow-dereference fetches graphs "
                             "from the web only (give a local file with --graph)", source=source)
        import urllib.request  # start-up: http.client, email and ssl for --allow-dereference only

        req = urllib.request.Request(g, headers={"Accept": "text/turtle, application/n-triples;q=0.9"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                if resp.geturl().partition(":")[0].lower() not in ("http", "https"):
                    raise QueryError(f"<{g}> redirects to {resp.geturl()}, not an http(s) IRI",
                                     source=source)
                body = resp.read(MAX_FETCH + 1)
                ctype = resp.headers.get_content_type()
        except OSError as e:
            raise QueryError(f"<{g}> could not be fetched: {e}", source=source) from None
        if len(body) > MAX_FETCH:
            raise QueryError(f"<{g}> is over {MAX_FETCH:,} bytes; fetch it yourself and give "
                             "it with --graph", source=source)
        fmt = ox.RdfFormat.from_media_type(ctype) or ox.RdfFormat.TURTLE
        try:
            return [q.triple for q in ox.parse(body, format=fmt, base_iri=g)]
        except (SyntaxError, MemoryError) as e:
            raise QueryError(f"<{g}> as fetched does not parse: {e}", source=source) from None

    def add_changes(self, iri: str, changes: Iterable[GraphUpdate]) -> None:
        """Changes of graph ``iri`` (timestamped, in time order: rsep.stream.updates); the
        graph as given so far is its content before the first."""
        g = self.varying.get(iri)
        if g is None:
            given = self.graph(iri)
            initial = canonical(given)
            g = self.varying[iri] = TimeVaryingGraph(iri, tuple(initial))
            self._live[iri] = LiveGraph(initial)
            # the same graph, in the forms a store gives back (changes are differences)
            self.on_change(iri, frozenset(given), initial)
        for u in changes:
            g.add(u)
        self._schedule()

    def change_now(self, u: GraphUpdate) -> None:
        """A change applied at the engine's current time (``rsep serve``): before any event,
        at once; else stamped with the engine's time, for its next evaluations."""
        kind, now = self.clock()
        if now is None or kind is None:
            self.add_changes(u.graph, ())
            self._apply(u.graph, [u])
            self.varying[u.graph].initial = tuple(self._live[u.graph].graph)
            return
        self.add_changes(u.graph, [GraphUpdate(u.graph, now, kind, u.version,
                                               u.update, u.origin)])

    # ------------------------------------------------------------ running

    def next_change(self, after: int, iris: Iterable[str]) -> int | None:
        """When one of the graphs ``iris`` next changes after ``after`` (a change stamped
        earlier and not applied yet, no evaluation having come since: at ``after + 1``)."""
        best = None
        for iri in iris:
            g = self.varying.get(iri)
            if g is not None and g.changes:
                t = max(g.changes[0].time, after + 1)
                if best is None or t < best:
                    best = t
        return best

    def advance(self, t: int) -> None:
        """Apply every change stamped <= t (the engine is about to evaluate at t)."""
        for iri, g in self.varying.items():
            todo = g.upto(t)
            if todo:
                del g.changes[:len(todo)]
                self._apply(iri, todo)
                g.initial = tuple(self._live[iri].graph)
        self._schedule()

    def _apply(self, iri: str, changes: list[GraphUpdate]) -> None:
        live = self._live[iri]
        old = live.graph
        kind = self.clock()[0]
        for u in changes:
            try:
                if kind is not None and u.kind is not kind:
                    raise UpdateError(f"{u.origin}: a change of <{iri}> at "
                                      f"{format_time(u.time, u.kind)} has a {u.kind.value} "
                                      f"time, but the streams' times are {kind.value}")
                live.apply(u)
            except UpdateError as e:
                if self.reject is None:
                    raise EngineError(str(e)) from None
                file, _, line = u.origin.rpartition(":")
                self.reject(Rejected(iri, file or u.origin, int(line) if line.isdigit() else 0,
                                     0, str(e).split(": ", 1)[-1], u.update or ""))
                continue
            self.applied += 1
        if live.graph != old:
            self.on_change(iri, old, live.graph)

    def _schedule(self) -> None:
        due = None
        for g in self.varying.values():
            if g.changes and (due is None or g.changes[0].time < due):
                due = g.changes[0].time
        self.due = due
