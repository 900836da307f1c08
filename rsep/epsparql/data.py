"""EP-SPARQL's triple occurrences as a pyoxigraph dataset, for what SPARQL itself evaluates.

Property paths and EXISTS have no counterpart in the occurrence matcher: pyoxigraph
evaluates them over this dataset, where every stream item (an rsep event, or a triple a
CONSTRUCT rule derived) is one named graph and every background graph keeps its IRI. A
query's evaluation names the item graphs it may see (``named_graphs`` for a path, matched
inside one item; ``default_graph`` as their union for EXISTS), so one store serves every
instant and policy. Kept only for queries that need it (:meth:`World.needs_data`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import pyoxigraph as ox

from rsep.sparql.rows import stored_form, to_term

_ITEM = "urn:rsep:epsparql:item:"


class OccurrenceData:
    """The items' triples as named graphs, with each item's interval."""

    def __init__(self) -> None:
        self.store = ox.Store()
        self.items: dict[int, tuple[float, float, ox.NamedNode]] = {}
        self.by_end: dict[float, list[int]] = {}
        self.background: dict[str, ox.NamedNode] = {}
        self._quads: dict[int, int] = {}
        # per item, the literals the store reads back in another form: their own form
        self._own: dict[int, dict[str, str]] = {}
        self._garbage = 0  # quads removed: pyoxigraph's in-memory store keeps them allocated

    def graph(self, item: int) -> ox.NamedNode:
        return self.items[item][2]

    def add(self, s: str, p: str, o: str, ta: float, tw: float, item: int) -> None:
        got = self.items.get(item)
        if got is None:
            got = self.items[item] = (ta, tw, ox.NamedNode(f"{_ITEM}{item}"))
            self.by_end.setdefault(tw, []).append(item)
        # (an occurrence's subject is no literal, its predicate an IRI: Sec. 4.2)
        self.store.add(ox.Quad(cast("ox.NamedNode | ox.BlankNode | ox.Triple", to_term(s)),
                               cast(ox.NamedNode, to_term(p)), to_term(o), got[2]))
        self._quads[item] = self._quads.get(item, 0) + 1
        if o.startswith('"') and (c := stored_form(o)) != o:
            self._own.setdefault(item, {})[c] = o

    def own(self, item: int, term: str) -> str:
        """A term the store gave back for this item, in the form the item's triple has it."""
        forms = self._own.get(item)
        return forms.get(term, term) if forms else term

    def load_background(self, iri: str, triples: Iterable[tuple[str, str, str]]) -> None:
        if iri in self.background:
            return
        node = self.background[iri] = ox.NamedNode(iri)
        self.store.extend(ox.Quad(cast("ox.NamedNode | ox.BlankNode | ox.Triple", to_term(s)),
                                  cast(ox.NamedNode, to_term(p)), to_term(o), node)
                          for s, p, o in triples)

    def drop_background(self) -> None:
        """Forget the background graphs loaded (they changed): loaded again when read."""
        for node in self.background.values():
            self.store.remove_graph(node)
        self.background.clear()

    def keep(self, items: set[int]) -> None:
        """Forget the items not in ``items`` (the occurrence store was pruned)."""
        gone = [i for i in self.items if i not in items]
        for i in gone:
            ta, tw, node = self.items.pop(i)
            self.store.remove_graph(node)
            self._garbage += self._quads.pop(i, 0)
            self._own.pop(i, None)
            ends = self.by_end.get(tw)
            if ends is not None:
                ends.remove(i)
                if not ends:
                    del self.by_end[tw]
        if self._garbage > max(50_000, sum(self._quads.values())):
            fresh = ox.Store()
            fresh.extend(self.store.quads_for_pattern(None, None, None, None))
            self.store, self._garbage = fresh, 0


def item_of(graph: ox.NamedNode) -> int:
    return int(graph.value[len(_ITEM):])
