"""Issue 25: CPU per event, live candidates and memory along the stream (``rsep bench
epsparql-etalis``'s generator and patterns, in process, no TriG parsing).

    python benchmarks/epsparql_live_candidates.py 100000 chronological [--pattern a] [--reference]

Prints, every tenth of the stream: events so far, CPU us per event over that tenth (the
engine's whole evaluation), the live candidates the index holds (left and right solutions
not consumed or dropped; pattern (a) under chronological / recent), the pairs it tested the
FILTER on, the outputs so far, the occurrences the store holds, and the process's resident
memory now and at its peak (MB). ``--reference`` runs the reference evaluator instead (the
index switched off); the policy may be any of ``rsep run --policy``'s.
"""

from __future__ import annotations

import argparse
import itertools
import random
import resource
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


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("size", type=int)
    ap.add_argument("policy")
    ap.add_argument("--pattern", default="a", choices="abcd")
    ap.add_argument("--reference", action="store_true")
    args = ap.parse_args()
    size = args.size
    eng = Engine()
    eng.register(parse_epsparql(query(args.pattern), policy=args.policy), name="q")
    ctx = EpContext.of(eng)
    rt = ctx.runtimes[0] if ctx.runtimes else None  # (the ETALIS modes have a runtime of their own)
    ps = rt.policy_state if rt is not None else None
    if args.reference and ps is not None:
        ps.index = None
    evs = events(size)
    step = max(1, size // 10)
    n_out = 0
    print("events  us/event  live  tested  outputs  stored  rss_mb  peak_mb")
    for i in range(0, size, step):
        dt = 0.0
        # a tenth in slices of at most 10^4 events, made before they are timed: the events
        # waiting in a slice are the harness's memory, not the engine's
        for j in range(i, min(i + step, size), 10_000):
            chunk = list(itertools.islice(evs, min(10_000, i + step - j)))
            t0 = time.process_time()
            with relaxed_collector():  # as Engine.run (rsep run)
                for e in chunk:
                    eng.push(e)
                if j + len(chunk) >= size:
                    eng.close()
                n_out += sum(1 for _ in eng.drain())
            dt += time.process_time() - t0
            del chunk
        idx = ps.index if ps is not None else None
        live = idx.live() if idx is not None else "-"
        tested = idx.tested if idx is not None else "-"
        stored = ctx.stored() if rt is not None else "-"
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{i + step:>7} {dt / step * 1e6:9.1f} {live:>5} {tested:>7} {n_out:>8} {stored:>7}"
              f" {rss_mb():7.1f} {peak:7.1f}", flush=True)


if __name__ == "__main__":
    main()
