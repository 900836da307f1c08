"""The snapshot store keeps pyoxigraph's order across its rebuilds (row order, see
docs/semantics.md "Row order of the store paths")."""

from __future__ import annotations

import pyoxigraph as ox

from rsep.sparql.store import SnapshotStore

G = ox.NamedNode("urn:w")
P = ox.NamedNode("http://example.org/p")


def t(name: str) -> ox.Triple:
    return ox.Triple(ox.NamedNode(f"http://example.org/{name}"), P, ox.Literal("1"))


def order(st: SnapshotStore) -> list[str]:
    res = st.store.query("SELECT ?s WHERE { GRAPH <urn:w> { ?s ?p ?o } }", named_graphs=[G])
    assert isinstance(res, ox.QuerySolutions)
    return [str(s[0]).rsplit("/", 1)[1][:-1] for s in res]


def test_a_rebuild_keeps_the_order_pyoxigraph_answers_in():
    st = SnapshotStore()
    st.apply(G, [(t(x), None) for x in "abc"], ())
    st.apply(G, (), [(t("a"), 0), (t("b"), 0)])
    st.apply(G, [(t("a"), None)], ())  # back in its old place (pyoxigraph keeps it)
    before = order(st)
    assert before == ["c", "a"] and len(st) == 2 and st.garbage == 1
    st.rebuild()
    assert order(st) == before and len(st) == 2 and st.garbage == 0
    st.apply(G, [(t("b"), None)], ())  # forgotten by the rebuild: a new place
    after = order(st)
    assert after == ["b", "c", "a"]
    st.rebuild()
    assert order(st) == after


def test_a_rebuild_can_put_a_graph_in_an_order():
    st = SnapshotStore()
    st.apply(G, [(t(x), None) for x in "abc"], ())
    rank = {t("a"): 2, t("b"): 0, t("c"): 1}
    st.rebuild(G, rank.__getitem__)
    fresh = SnapshotStore()
    fresh.apply(G, [(t(x), None) for x in "bca"], ())
    assert order(st) == order(fresh) == ["a", "c", "b"]  # (newest first)
