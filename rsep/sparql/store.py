"""The snapshot store: background graphs and live window contents in one pyoxigraph Store.

Each window is a named graph holding SDS_w(t), the *set* union of the graphs in
the window, so a triple present in two events of the window is stored once and
leaves only when its last occurrence does (reference counts). pyoxigraph's
in-memory store keeps removed quads allocated, so the store is rebuilt from the
live quads once removals outnumber them: amortised O(1) per removal, and memory
bounded by the windows plus the background.

pyoxigraph answers a pattern in the order its quads were *created* (newest first): a quad
re-added after its removal takes its old place again. Its GROUP BY and join orders follow.
The counts keep a removed quad (count 0) until the rebuild, so their order is pyoxigraph's
and a rebuild keeps the live quads' order (it only forgets where removed ones were).

An event's other named graphs (an RDF Message's, ``Event.graphs``) are named graphs of the
store while the event is in a window: :meth:`apply_graphs`, and :attr:`kept` names them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator

import pyoxigraph as ox

from rsep.stream.event import Event

GraphName = ox.NamedNode | ox.DefaultGraph


def quads(triples: Iterable[ox.Triple], graph: GraphName) -> Iterator[ox.Quad]:
    """The triples as quads of ``graph``.

    pyoxigraph's ``Quad()`` tries its graph argument as a NamedNode, then as a BlankNode,
    and builds a Python exception for each failed try (3.4 us a quad in all, against
    0.24 us): the default graph's quads come from the three-argument form."""
    rest = _rest(graph)
    return (ox.Quad(t.subject, t.predicate, t.object, *rest) for t in triples)


def _rest(graph: GraphName) -> tuple[()] | tuple[ox.NamedNode]:
    """``Quad()``'s arguments after the triple's terms: none for the default graph (quads())."""
    return () if graph.__class__ is ox.DefaultGraph else (graph,)  # type: ignore[return-value]


class SnapshotStore:
    def __init__(self, *, min_garbage: int = 4_096, factor: float = 1.0) -> None:
        self.store = ox.Store()
        self._counts: dict[ox.Quad, int] = {}  # in pyoxigraph's order; 0: removed, not rebuilt
        self._live = 0
        self._times: dict[ox.Triple, Counter[int]] = {}  # triple -> times of its occurrences
        self._garbage = 0
        self._min_garbage = min_garbage
        self._factor = factor
        self.rebuilds = 0
        self._kept: dict[str, int] = {}  # other named graph -> live events that hold it
        self.kept: list[ox.NamedNode | ox.BlankNode] = []  # (typed as a query's named graphs)

    def __len__(self) -> int:
        return self._live

    @property
    def garbage(self) -> int:
        return self._garbage

    def load(self, graph: GraphName, triples: Iterable[ox.Triple]) -> None:
        """Background data: added once, never removed."""
        self.apply(graph, ((t, None) for t in triples), ())

    def apply(self, graph: GraphName, added: Iterable[tuple[ox.Triple, int | None]],
              removed: Iterable[tuple[ox.Triple, int]], track_time: bool = False) -> None:
        counts = self._counts
        new: list[ox.Quad] = []
        rest = _rest(graph)
        for tr, time in added:
            q = ox.Quad(tr.subject, tr.predicate, tr.object, *rest)
            c = counts.get(q)
            if not c:
                counts[q] = 1
                new.append(q)
                self._live += 1
                if c is not None:  # pyoxigraph revives it in its old place
                    self._garbage -= 1
            else:
                counts[q] = c + 1
            if track_time and time is not None:
                times = self._times.get(tr)
                if times is None:
                    times = self._times[tr] = Counter()
                times[time] += 1
        if new:
            self.store.extend(new)
        for tr, time in removed:
            q = ox.Quad(tr.subject, tr.predicate, tr.object, *rest)
            c = counts[q]
            if c == 1:
                counts[q] = 0
                self.store.remove(q)
                self._garbage += 1
                self._live -= 1
            else:
                counts[q] = c - 1
            if track_time:
                times = self._times[tr]
                times[time] -= 1
                if not times[time]:
                    del times[time]
                    if not times:
                        del self._times[tr]
        if self._garbage > max(self._min_garbage, self._factor * self._live):
            self.rebuild()

    def apply_graphs(self, changes: Iterable[tuple[bool, Event]], track_time: bool = False) -> None:
        """The other named graphs of events that entered (True) or left a window."""
        kept = self._kept
        for entered, e in changes:
            for g, triples in e.graphs:
                timed = [(t, e.end) for t in triples]
                if entered:
                    self.apply(ox.NamedNode(g), timed, (), track_time)
                    kept[g] = kept.get(g, 0) + 1
                else:
                    self.apply(ox.NamedNode(g), (), timed, track_time)
                    kept[g] -= 1
                    if not kept[g]:
                        del kept[g]
        self.kept = [ox.NamedNode(g) for g in kept]

    def rebuild(self, graph: GraphName | None = None,
                key: Callable[[ox.Triple], int] | None = None) -> None:
        """A fresh store of the live quads in their order. With ``graph`` and ``key``: that
        graph's quads in ``key``'s order, its removed ones kept in their places (removed
        again), as only the order within a graph shows in a query's answers."""
        counts = self._counts
        live = {q: c for q, c in counts.items() if c and (graph is None or q.graph_name != graph)}
        dead: list[ox.Quad] = []
        if graph is not None and key is not None:
            mine = sorted((q for q, c in counts.items() if q.graph_name == graph),
                          key=lambda q: key(q.triple))
            live.update((q, counts[q]) for q in mine)
            dead = [q for q in mine if not counts[q]]
        fresh = ox.Store()
        fresh.extend(live.keys())
        for q in dead:
            fresh.remove(q)
        self._counts = live
        self.store = fresh
        self._garbage = len(dead)
        self.rebuilds += 1

    def latest_time(self, triple: ox.Triple) -> int | None:
        times = self._times.get(triple)
        return max(times) if times else None
