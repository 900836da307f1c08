"""The naive baseline: each window snapshot re-evaluated from scratch with pyoxigraph.

Events are read with pyoxigraph's TriG parser (several streams merged by time); at each
multiple c of the step, once an event after c arrives (or the streams end), the events
with c - range < t <= c (rsep's windows) are loaded into the store, replacing the last
snapshot, and the SPARQL query is run on it. One stream's window goes to the default
graph; with ``windows`` each stream's goes to its named graph, and the background
graphs (``graphs``) to the default graph, loaded once.
"""

from __future__ import annotations

import heapq
import json
import sys
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyoxigraph as ox

sys.path.insert(0, __file__.rsplit("/", 1)[0])
if TYPE_CHECKING:  # the type checker reads common as part of rsep
    from rsep.bench.workers.common import finish, load_spec
else:
    from common import finish, load_spec

PROV = "http://www.w3.org/ns/prov#generatedAtTime"


def events(path: str, k: int) -> Iterator[tuple[int, int, list[ox.Quad]]]:
    """(time, stream number, quads) of one stream file, in file order."""
    times: dict[str, int] = {}
    current: str | None = None
    quads: list[ox.Quad] = []
    for q in ox.parse(path=path, format=ox.RdfFormat.TRIG):
        if isinstance(q.graph_name, ox.DefaultGraph):
            if q.predicate.value == PROV:
                times[q.subject.value] = int(q.object.value)
            continue
        if q.graph_name.value != current:
            if current is not None:
                yield times.pop(current), k, quads
            current, quads = q.graph_name.value, []
        quads.append(q)
    if current is not None:
        yield times.pop(current), k, quads


def main() -> int:
    spec = load_spec()
    rng, step = int(spec["range"]), int(spec["step"])
    query = spec["query"]
    sources = spec.get("windows") or [[None, spec["trig"]]]
    graphs = [ox.DefaultGraph() if g is None else ox.NamedNode(g) for g, _ in sources]
    out = open(spec["matches"], "w", encoding="utf-8")
    store = ox.Store()
    for _, path in spec.get("graphs", []):
        store.bulk_load(path=path, format=ox.RdfFormat.N_TRIPLES)
    background = len(store)
    if background and None in [g for g, _ in sources]:
        raise ValueError("background graphs need every window in a named graph")
    ready = time.time()
    t0 = time.perf_counter()
    windows: list[deque[tuple[int, list]]] = [deque() for _ in sources]
    lat: list[float] = []
    n = 0
    next_c = 0
    load_s = query_s = 0.0

    def evaluate(c: int) -> None:
        nonlocal load_s, query_s, store
        t1 = time.perf_counter()
        for window in windows:
            while window and window[0][0] <= c - rng:
                window.popleft()
        if background:
            for g in graphs:
                store.remove_graph(g)
        else:
            store = ox.Store()
        store.bulk_extend([ox.Quad(q.subject, q.predicate, q.object, g)
                           for window, g in zip(windows, graphs, strict=True)
                           for t, qs in window if t <= c for q in qs])
        t2 = time.perf_counter()
        res = store.query(query)
        assert isinstance(res, ox.QuerySolutions), "the spec's query is a SELECT"
        names = res.variables
        rows = [{v.value: str(s[v]) for v in names if s[v] is not None} for s in res]
        t3 = time.perf_counter()
        load_s += t2 - t1
        query_s += t3 - t2
        lat.append((t3 - t1) * 1000)
        if rows:
            out.write(json.dumps({"window": c, "rows": rows}) + "\n")

    last = 0
    for t, k, quads in heapq.merge(*(events(p, k) for k, (_, p) in enumerate(sources)),
                                   key=lambda e: e[0]):
        while next_c < t:  # every window closing before this event is due
            evaluate(next_c)
            next_c += step
        windows[k].append((t, quads))
        n += 1
        last = t
    while next_c <= last:
        evaluate(next_c)
        next_c += step
    run_s = time.perf_counter() - t0
    out.close()
    finish(spec, ready, run_s, n, latencies=lat, stages={"load_s": load_s, "query_s": query_s},
           note="latency = one evaluation: building the snapshot and querying it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
