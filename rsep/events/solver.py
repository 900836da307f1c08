"""Matching a basic event pattern on stream items, with pyoxigraph.

``solve_item`` evaluates [[P]]_{G_k} on one item (one SPARQL call: the
reference evaluator's way). ``BatchSolver`` is the production way: each item is
matched once, when it is first needed, and the new items of an evaluation are
matched together, as named graphs of one store, in one query per pattern.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyoxigraph as ox

from rsep.algebra.events import BasicEventPattern
from rsep.events.reference import Mu
from rsep.stream.event import Event

_ITEM = "__rsep_item"


def _rows(res: ox.QuerySolutions, skip: str | None = None) -> Iterable[tuple[ox.QuerySolution, Mu]]:
    names = [v.value for v in res.variables]
    for sol in res:
        mu = tuple(sorted((n, str(sol[n])) for n in names if n != skip and sol[n] is not None))
        yield sol, mu


def solve_item(bep: BasicEventPattern, triples: tuple[ox.Triple, ...]) -> list[Mu]:
    store = ox.Store()
    store.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in triples)
    res = store.query(f"{bep.prologue}SELECT * WHERE {bep.pattern}")
    assert isinstance(res, ox.QuerySolutions)
    return [mu for _, mu in _rows(res)]


class BatchSolver:
    """Caches each (pattern, item) result for as long as the item is in a window."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int, int], list[Mu]] = {}
        self.queries = 0

    def __call__(self, bep: BasicEventPattern, item: Event, triples: tuple[ox.Triple, ...]) -> list[Mu]:
        key = (bep.name, item.seq, len(triples))
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = solve_item(bep, triples)
            self.queries += 1
        return hit

    def prepare(self, bep: BasicEventPattern, items: Iterable[tuple[Event, tuple[ox.Triple, ...]]]) -> None:
        """Match every item not seen yet in one query."""
        todo = [(e, trs) for e, trs in items if (bep.name, e.seq, len(trs)) not in self._cache]
        if not todo:
            return
        if len(todo) == 1:
            e, trs = todo[0]
            self(bep, e, trs)
            return
        store = ox.Store()
        graphs: dict[str, tuple[str, int, int]] = {}
        quads: list[ox.Quad] = []
        for e, trs in todo:
            g = ox.NamedNode(f"urn:rsep:item:{e.seq}:{len(trs)}")
            graphs[g.value] = (bep.name, e.seq, len(trs))
            self._cache[graphs[g.value]] = []
            quads.extend(ox.Quad(t.subject, t.predicate, t.object, g) for t in trs)
        store.extend(quads)
        res = store.query(f"{bep.prologue}SELECT * WHERE {{ GRAPH ?{_ITEM} {bep.pattern} }}")
        assert isinstance(res, ox.QuerySolutions)
        self.queries += 1
        for sol, mu in _rows(res, skip=_ITEM):
            self._cache[graphs[sol[_ITEM].value]].append(mu)

    def clear(self) -> None:
        self._cache.clear()

    def retain(self, live: set[int]) -> None:
        """Forget items that left every window."""
        for key in [k for k in self._cache if k[1] not in live]:
            del self._cache[key]
