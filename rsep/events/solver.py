"""Matching a basic event pattern on stream items.

``solve_item`` evaluates [[P]]_{G_k} on one item with pyoxigraph (one SPARQL call:
the reference evaluator's way). ``BatchSolver`` is the production way: each item is
matched once, when it is first needed, by the per-item matcher SPASEQ's GPMs use
(rsep.sparql.matcher: a BEP and a GPM are the same thing), and what that matcher
leaves to pyoxigraph (patterns outside its subset, values it cannot decide) is
matched for the new items of an evaluation together, as named graphs of one store,
in one query per pattern. Either way an item's mappings are the same bag; an item with
more than one is left to pyoxigraph, whose order the outputs show.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyoxigraph as ox

from rsep.algebra.events import BasicEventPattern
from rsep.algebra.expression import Constraint
from rsep.events.mappings import Mu
from rsep.sparql.matcher import Canon, CompiledGPM, Fallback, Indexed, compile_pattern
from rsep.sparql.store import quads
from rsep.stream.event import Event

_ITEM = "__rsep_item"


def _rows(res: ox.QuerySolutions, skip: str | None = None) -> Iterable[tuple[ox.QuerySolution, Mu]]:
    names = [v.value for v in res.variables]
    for sol in res:
        mu = tuple(sorted((n, str(sol[n])) for n in names if n != skip and sol[n] is not None))
        yield sol, mu


def solve_item(bep: BasicEventPattern, triples: tuple[ox.Triple, ...]) -> list[Mu]:
    store = ox.Store()
    store.extend(quads(triples, ox.DefaultGraph()))
    res = store.query(f"{bep.prologue}SELECT * WHERE {bep.sparql}")
    assert isinstance(res, ox.QuerySolutions)
    return [mu for _, mu in _rows(res)]


def compile_bep(bep: BasicEventPattern, canon: Canon,
                filters: Sequence[Constraint]) -> CompiledGPM | None:
    """A BEP compiled from its tree (read once by rsep.lang), or None: pyoxigraph decides
    (a BEP the tree does not hold, or one made by hand from its text alone, which nothing
    reads here)."""
    if bep.tree is None:
        return None
    return compile_pattern(bep.prologue, bep.tree, canon, filters)


class BatchSolver:
    """Caches each (pattern, item) result for as long as the item is in a window.
    ``compiled``: the per-item matcher where it applies; off, pyoxigraph only."""

    def __init__(self, compiled: bool = True) -> None:
        self._cache: dict[tuple[str, int, int], list[Mu]] = {}
        self.queries = 0
        self.compiled = compiled
        self.canon = Canon()
        self._compiled: dict[str, CompiledGPM | None] = {}
        self.fallbacks = 0  # items the compiled form left to pyoxigraph

    def matcher(self, bep: BasicEventPattern) -> CompiledGPM | None:
        try:
            return self._compiled[bep.name]
        except KeyError:
            c = None
            # (a BEP whose FILTERs were not read is pyoxigraph's: its tree alone would drop them)
            if self.compiled and bep.filters is not None:
                c = compile_bep(bep, self.canon, bep.filters)
            self._compiled[bep.name] = c
            return c

    def _match(self, c: CompiledGPM, triples: tuple[ox.Triple, ...]) -> list[Mu] | None:
        """The item's mappings by the compiled matcher, or None (a Fallback)."""
        ev = self.canon.indexed(triples)
        if len(ev.triples) > 1:
            # an item is an RDF graph, a set: canonical forms can make two triples one
            distinct = list(dict.fromkeys(ev.triples))
            if len(distinct) < len(ev.triples):
                ev = Indexed(distinct)
        try:
            sols = c.match(ev)
        except Fallback:
            self.fallbacks += 1
            return None
        if len(sols) > 1:
            # pyoxigraph's order of an item's solutions (its index order) shows in the
            # outputs' order, which no Python order reproduces: ask it.
            return None
        return [tuple([(k, str(t)) for k, t in m]) for m in sols]

    def __call__(self, bep: BasicEventPattern, item: Event, triples: tuple[ox.Triple, ...]) -> list[Mu]:
        key = (bep.name, item.seq, len(triples))
        hit = self._cache.get(key)
        if hit is None:
            c = self.matcher(bep)
            got = self._match(c, triples) if c is not None else None
            if got is None:
                got = solve_item(bep, triples)
                self.queries += 1
            hit = self._cache[key] = got
        return hit

    def prepare(self, bep: BasicEventPattern, items: Iterable[tuple[Event, tuple[ox.Triple, ...]]]) -> None:
        """Match every item not seen yet: by the compiled matcher, the rest in one query."""
        todo = [(e, trs) for e, trs in items if (bep.name, e.seq, len(trs)) not in self._cache]
        c = self.matcher(bep)
        if c is not None:
            rest = []
            for e, trs in todo:
                got = self._match(c, trs)
                if got is None:
                    rest.append((e, trs))
                else:
                    self._cache[(bep.name, e.seq, len(trs))] = got
            todo = rest
        if not todo:
            return
        if len(todo) == 1:
            e, trs = todo[0]
            self._cache[(bep.name, e.seq, len(trs))] = solve_item(bep, trs)
            self.queries += 1
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
        res = store.query(f"{bep.prologue}SELECT * WHERE {{ GRAPH ?{_ITEM} {bep.sparql} }}")
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
