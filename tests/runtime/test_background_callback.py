"""The background's part of the runtime protocol (issue 46): rsep.runtime.background.Background
holds the time-varying graphs' changes and reports each new content through the callback it is
given, writing nothing of an engine; the engine owns the graphs and has every graph a query
reads, given or fetched, before the query's runtime is built."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from rsep import QueryError
from rsep.lang import parse_query
from rsep.lang.dialect import EPSPARQL, RSP, SPASEQ
from rsep.runtime import dialects
from rsep.runtime.background import Background
from rsep.runtime.engine import Engine
from rsep.sparql.update import canonical
from rsep.stream.time import TimeKind
from rsep.stream.updates import GraphUpdate
from rsep.testing.snippets import EX

KB = f"{EX}kb"
A = ox.Triple(ox.NamedNode(f"{EX}a"), ox.NamedNode(f"{EX}p"), ox.Literal("1", datatype=ox.NamedNode(
    "http://www.w3.org/2001/XMLSchema#integer")))
B = ox.Triple(ox.NamedNode(f"{EX}b"), ox.NamedNode(f"{EX}p"), ox.NamedNode(f"{EX}c"))


def test_background_runs_on_a_plain_callback_without_an_engine():
    graphs = {KB: [A]}  # the caller's, read through graph(): Background never writes it
    seen: list[tuple[str, frozenset, frozenset]] = []
    bg = Background(lambda iri, old, new: seen.append((iri, old, new)),
                    lambda iri: graphs.get(iri, ()),
                    lambda: (TimeKind.ABSTRACT, 3))
    assert not hasattr(bg, "engine")
    assert bg.load(KB, [B]) == [B] and graphs == {KB: [A]}  # the triples read, given back
    bg.add_changes(KB, [GraphUpdate(KB, 5, TimeKind.ABSTRACT,
                                    update=f"INSERT DATA {{ <{EX}b> <{EX}p> <{EX}c> }}",
                                    origin="u:1")])
    # the graph in the forms a store gives back, once its changes are known (no change yet)
    assert seen == [(KB, frozenset([A]), canonical([A]))] and bg.due == 5
    bg.advance(4)
    assert len(seen) == 1 and bg.applied == 0
    bg.advance(5)
    assert seen[1] == (KB, canonical([A]), canonical([A, B])) and bg.applied == 1 and bg.due is None
    assert graphs == {KB: [A]}
    # a change now is stamped with the clock's time (3), applied at the next advance
    bg.change_now(GraphUpdate(KB, 0, TimeKind.ABSTRACT,
                              update=f"DELETE DATA {{ <{EX}b> <{EX}p> <{EX}c> }}", origin="u:2"))
    assert bg.due == 3 and len(seen) == 2
    bg.advance(3)
    assert seen[2] == (KB, canonical([A, B]), canonical([A])) and bg.applied == 2


def test_a_change_that_leaves_the_graph_as_it_was_reports_nothing():
    seen: list[str] = []
    bg = Background(lambda iri, old, new: seen.append(iri), lambda iri: [A])
    bg.change_now(GraphUpdate(KB, 0, TimeKind.ABSTRACT, update=f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}",
                              origin="u:1"))
    assert seen == [KB] and bg.applied == 1  # (add_changes' first report only)


def test_background_fetch_returns_the_triples_and_refuses_without_dereference():
    bg = Background(lambda *a: None, lambda iri: ())
    with pytest.raises(QueryError) as e:
        bg.fetch(KB, "q.rq", False)
    assert str(e.value) == (f"q.rq: <{KB}> names no graph supplied to the engine (use --graph "
                            f"{KB}=PATH); graph IRIs are not dereferenced unless "
                            "--allow-dereference is given")


def test_the_engine_keeps_the_graphs_and_tells_its_runtimes():
    eng = Engine()
    eng.add_graph(KB, [A])
    told: list[tuple[str, frozenset, frozenset]] = []

    class Spy:
        def graph_changed(self, iri, old, new):
            told.append((iri, old, new))

    eng.queries.append(Spy())  # type: ignore[arg-type]
    eng.background.change_now(GraphUpdate(KB, 0, TimeKind.ABSTRACT,
                                          update=f"INSERT DATA {{ <{EX}b> <{EX}p> <{EX}c> }}",
                                          origin="u:1"))
    assert sorted(map(str, eng.graphs[KB])) == sorted(map(str, canonical([A, B])))
    assert told == [(KB, canonical([A]), canonical([A, B]))]


RSP_Q = (f"PREFIX : <{EX}> REGISTER RSTREAM <{EX}out> AS SELECT ?x FROM <{KB}> "
         f"FROM NAMED WINDOW :w ON :s [RANGE 5 STEP 5] WHERE {{ WINDOW :w {{ ?x :p ?y }} ?x :q ?z }}")
SPASEQ_Q = (f"PREFIX : <{EX}>\nSELECT *\nFROM STREAM S1 <{EX}s>\nWHERE {{\n SEQ (P1)\n"
            f"DEFINE GPM P1 ON S1 {{ ?x :p ?y . GRAPH <{KB}> {{ ?x :q ?z }} }}\n}}")
EP_Q = (f"PREFIX : <{EX}> SELECT ?x WHERE {{ {{ ?x :p ?y }} SEQ {{ ?x :q ?z "
        f"GRAPH <{KB}> {{ ?x :in ?c }} }} }}")


@pytest.mark.parametrize("family,text,dialect", [(RSP, RSP_Q, None), (SPASEQ, SPASEQ_Q, "spaseq"),
                                                 (EPSPARQL, EP_Q, "epsparql")])
def test_a_runtime_is_built_with_its_graphs_fetched_already(monkeypatch, family, text, dialect):
    # the graph is dereferenced (here: a stand-in for the web) before the runtime is built,
    # which finds it in its host's graphs and fetches nothing itself
    fetched: list[str] = []

    def fetch(self, g, source, allowed):
        assert allowed
        fetched.append(g)
        return [B]

    monkeypatch.setattr(Background, "fetch", fetch)
    fam = dialects.FAMILIES[family]
    found = []

    def runtime(query, engine, name, callback):
        found.append((list(fetched), {g: list(ts) for g, ts in engine.graphs.items()}))
        return fam.runtime(query, engine, name, callback)

    monkeypatch.setitem(dialects.FAMILIES, family, dialects.Family(runtime, fam.prepare, fam.graphs))
    q = parse_query(text, dialect)
    assert list(fam.graphs(q)) == [KB]
    eng = Engine(allow_dereference=True)
    eng.register(q)
    assert found == [([KB], {KB: [B]})]
    eng.register(q, name="again")  # there already: not fetched again
    assert fetched == [KB]
