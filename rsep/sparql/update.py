"""A time-varying graph's changes applied (000 Def. 2): versions taken as they are, SPARQL 1.1
Updates run by pyoxigraph over the graph as the default graph of a scratch store.

Graphs are sets of triples in the form a pyoxigraph store gives them back (it canonicalises
numeric literals), so that the graph a change leaves compares equal, term for term, with
the one before where the change did not touch it.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyoxigraph as ox

from rsep.algebra.dataset import TimeVaryingGraph
from rsep.stream.updates import GraphUpdate

Graph = frozenset[ox.Triple]


class UpdateError(ValueError):
    """A change that cannot be applied; the graph stays as it was."""


def canonical(triples: Iterable[ox.Triple]) -> Graph:
    """The triples as a store holds them (a set)."""
    st = ox.Store()
    st.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in triples)
    return frozenset(q.triple for q in st)


def apply(graph: Graph, u: GraphUpdate) -> Graph:
    """The graph after the change ``u``."""
    if u.version is not None:
        return canonical(u.version)
    assert u.update is not None  # (a GraphUpdate holds one or the other)
    st = ox.Store()
    st.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in graph)
    try:
        st.update(u.update)
    except (SyntaxError, OSError) as e:
        raise UpdateError(f"{u.origin}: the update of <{u.graph}> failed: {e}") from None
    others = [g for g in st.named_graphs()]
    if others or any(not isinstance(q.graph_name, ox.DefaultGraph) for q in st):
        names = ", ".join(str(g) for g in others) or "a named graph"
        raise UpdateError(f"{u.origin}: the update writes {names}: an update of <{u.graph}> "
                          "may change that graph only (its default graph)")
    return frozenset(q.triple for q in st)


def graph_at(g: TimeVaryingGraph, t: int) -> Graph:
    """G(t) from the definition: the initial graph with the changes stamped <= t applied
    (a change that cannot be applied leaves the graph as it was, as the engine does)."""
    out = canonical(g.initial)
    for u in g.upto(t):
        try:
            out = apply(out, u)
        except UpdateError:
            continue
    return out
