"""RDFS over EP-SPARQL's background graphs (003 Sec. 4.3): the schema's closures, and the
graphs materialised with them when a GRAPH pattern reads them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rsep.algebra.epsparql import (
    DOMAIN,
    INF,
    RANGE,
    RDF_TYPE,
    SUBCLASS,
    SUBPROP,
)
from rsep.epsparql.matcher import Occurrence, OccurrenceStore


class Schema:
    """RDFS over the background graphs, computed once: the transitive closures of
    subClassOf and subPropertyOf, and the (closed) classes implied by domain and range."""

    def __init__(self, triples: Iterable[tuple[str, str, str]] = ()) -> None:
        self.sub: dict[str, set[str]] = {}
        self.subp: dict[str, set[str]] = {}
        self.dom: dict[str, set[str]] = {}
        self.rng: dict[str, set[str]] = {}
        for s, p, o in triples:
            if p == SUBCLASS:
                self.sub.setdefault(s, set()).add(o)
            elif p == SUBPROP:
                self.subp.setdefault(s, set()).add(o)
            elif p == DOMAIN:
                self.dom.setdefault(s, set()).add(o)
            elif p == RANGE:
                self.rng.setdefault(s, set()).add(o)
        self._sup: dict[str, frozenset[str]] = {}
        self._supp: dict[str, frozenset[str]] = {}
        self._expand: dict[tuple[str, str], tuple] = {}
        # read per stream triple (a schema is made whole, never changed)
        self.empty = not (self.sub or self.subp or self.dom or self.rng)

    @staticmethod
    def _closure(x: str, edges: dict[str, set[str]], memo: dict[str, frozenset[str]]) -> frozenset[str]:
        if x in memo:
            return memo[x]
        seen = {x}
        stack = [x]
        while stack:
            for y in edges.get(stack.pop(), ()):
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        memo[x] = frozenset(seen)
        return memo[x]

    def superclasses(self, c: str) -> frozenset[str]:
        """c and every class it is a (transitive) subclass of."""
        return self._closure(c, self.sub, self._sup)

    def superproperties(self, p: str) -> frozenset[str]:
        return self._closure(p, self.subp, self._supp)

    def entail(self, s: str, p: str, o: str) -> list[tuple[str, str, str]]:
        """The triple and what RDFS (rdfs2, 3, 5, 7, 9, 11) derives from it with the schema."""
        if self.empty:
            return [(s, p, o)]
        out = {(s, p, o)}
        for q in self.superproperties(p):
            out.add((s, q, o))
            for c in self.dom.get(q, ()):
                out.update((s, RDF_TYPE, d) for d in self.superclasses(c))
            if not o.startswith('"'):
                for c in self.rng.get(q, ()):
                    out.update((o, RDF_TYPE, d) for d in self.superclasses(c))
        for s2, p2, o2 in list(out):
            if p2 == RDF_TYPE:
                out.update((s2, RDF_TYPE, d) for d in self.superclasses(o2))
        return sorted(out)


class Graphs(dict):
    """The background graphs as occurrence stores, each materialised with its RDFS closure
    once, when a GRAPH pattern first reads it (the schema alone serves the stream)."""

    def __init__(self, graphs: dict[str, list[tuple[str, str, str]]], schema: Schema) -> None:
        super().__init__()
        self.graphs = graphs
        self.schema = schema

    def get(self, iri: str, default: Any = None) -> Any:
        if iri not in self and iri in self.graphs:
            st = OccurrenceStore()
            seen: set[tuple[str, str, str]] = set()
            for t in self.graphs[iri]:
                for x in self.schema.entail(*t):
                    if x not in seen:
                        seen.add(x)
                        st.add(Occurrence(*x, ta=INF, tw=-INF, item=0))
            self[iri] = st
        return super().get(iri, default)
