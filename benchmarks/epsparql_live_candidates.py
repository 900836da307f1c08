"""Issue 25, pattern (a) under chronological / recent: CPU per event and live candidates along
the stream (``rsep bench epsparql-etalis``'s generator, in process, no TriG parsing).

    python benchmarks/epsparql_live_candidates.py 100000 chronological [--reference]

Prints, every tenth of the stream: events so far, CPU us per event over that tenth (the
engine's whole evaluation), the live candidates the index holds (left and right solutions
not consumed or dropped), the pairs it tested the FILTER on, and the outputs so far.
``--reference`` runs the reference evaluator instead (the index switched off).
"""

from __future__ import annotations

import itertools
import random
import sys
import time
from collections.abc import Iterator

import pyoxigraph as ox

from rsep import Engine
from rsep.bench.epsparql_etalis import EX, STREAM, query
from rsep.epsparql.runtime import EpContext
from rsep.lang.epsparql import parse_epsparql
from rsep.runtime.common import relaxed_collector
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

XSD_INT = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")


def events(size: int, seed: int = 25, keys: int = 5) -> Iterator[Event]:
    """The generator of rsep/bench/epsparql_etalis.py (same draws), as rsep Events."""
    rng = random.Random(seed)
    walk = [100] * keys
    for t in range(size):
        k = rng.randrange(keys)
        kind = "abc"[rng.randrange(3)]
        walk[k] += rng.randint(-5, 5)
        tr = ox.Triple(ox.NamedNode(f"{EX}c{k}"), ox.NamedNode(f"{EX}{kind}"),
                       ox.Literal(str(walk[k]), datatype=XSD_INT))
        yield Event(stream=STREAM, graph=f"{EX}e{t}", start=t, end=t, triples=(tr,),
                    kind=TimeKind.ABSTRACT, origin="gen", seq=t + 1)


def main() -> None:
    size, policy = int(sys.argv[1]), sys.argv[2]
    eng = Engine()
    eng.register(parse_epsparql(query("a"), policy=policy), name="q")
    ps = EpContext.of(eng).runtimes[0].policy_state
    if "--reference" in sys.argv:
        ps.index = None
    evs = events(size)
    step = max(1, size // 10)
    n_out = 0
    print("events  us/event  live  tested  outputs")
    for i in range(0, size, step):
        chunk = list(itertools.islice(evs, step))
        t0 = time.process_time()
        with relaxed_collector():  # as Engine.run (rsep run)
            for e in chunk:
                eng.push(e)
            if i + step >= size:
                eng.close()
            n_out += len(list(eng.drain()))
        dt = time.process_time() - t0
        idx = ps.index
        live = idx.live() if idx is not None else "-"
        tested = idx.tested if idx is not None else "-"
        print(f"{i + step:>7} {dt / step * 1e6:9.1f} {live:>5} {tested:>7} {n_out:>8}", flush=True)


if __name__ == "__main__":
    main()
