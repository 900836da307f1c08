"""The snapshot store: background graphs and live window contents in one pyoxigraph Store.

Each window is a named graph holding SDS_w(t), the *set* union of the graphs in
the window, so a triple present in two events of the window is stored once and
leaves only when its last occurrence does (reference counts). pyoxigraph's
in-memory store keeps removed quads allocated, so the store is rebuilt from the
live quads once removals outnumber them: amortised O(1) per removal, and memory
bounded by the windows plus the background.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import pyoxigraph as ox

GraphName = ox.NamedNode | ox.DefaultGraph


class SnapshotStore:
    def __init__(self, *, min_garbage: int = 4_096, factor: float = 1.0) -> None:
        self.store = ox.Store()
        self._counts: dict[ox.Quad, int] = {}
        self._times: dict[ox.Triple, Counter[int]] = {}  # triple -> times of its occurrences
        self._garbage = 0
        self._min_garbage = min_garbage
        self._factor = factor
        self.rebuilds = 0

    def __len__(self) -> int:
        return len(self._counts)

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
        for tr, time in added:
            q = ox.Quad(tr.subject, tr.predicate, tr.object, graph)
            c = counts.get(q)
            if c is None:
                counts[q] = 1
                new.append(q)
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
            q = ox.Quad(tr.subject, tr.predicate, tr.object, graph)
            c = counts[q]
            if c == 1:
                del counts[q]
                self.store.remove(q)
                self._garbage += 1
            else:
                counts[q] = c - 1
            if track_time:
                times = self._times[tr]
                times[time] -= 1
                if not times[time]:
                    del times[time]
                    if not times:
                        del self._times[tr]
        if self._garbage > max(self._min_garbage, self._factor * len(counts)):
            self.rebuild()

    def rebuild(self) -> None:
        fresh = ox.Store()
        fresh.extend(self._counts.keys())
        self.store = fresh
        self._garbage = 0
        self.rebuilds += 1

    def latest_time(self, triple: ox.Triple) -> int | None:
        times = self._times.get(triple)
        return max(times) if times else None
