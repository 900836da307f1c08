"""EP-SPARQL with background knowledge (003 Sec. 6, Test 2): is the subject of a streaming
triple an instance of :Tracheobionta or of any of its subclasses?

A generated class hierarchy stands in for EthanPlants.owl: :Tracheobionta with 40,080
subclasses (fewer for the smallest KB, half of it) at most 8 levels deep, the other
classes in sibling trees, one rdfs:subClassOf triple per class, so the KB has --kb triples.
Reports load + RDFS set-up time and memory, then the stream: one ``:x<i> a :C<j>`` event
per time unit (half of the classes drawn under :Tracheobionta), CPU us per event for each
tenth of the stream.

    .venv/bin/python benchmarks/epsparql_background.py --kb 1000000 --events 100000 --eager
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import time

import pyoxigraph as ox

from rsep import Engine
from rsep.epsparql import runtime as epr
from rsep.lang.epsparql import parse_epsparql
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

EX = "http://example.org/plants#"
SUB = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#subClassOf")
TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
QUERY = f"PREFIX : <{EX}>\nSELECT ?x WHERE {{ ?x a :Tracheobionta }}"
TEST2_SUBCLASSES = 40_080


def hierarchy(n: int, seed: int = 1) -> tuple[list[ox.Triple], list[int], list[int]]:
    """n subClassOf triples: class 0 is :Tracheobionta, classes 1..k its subclasses (each
    under a random earlier class of depth < 8), the rest in 10 other trees."""
    rnd = random.Random(seed)
    k = min(TEST2_SUBCLASSES, n // 2)
    depth = [0]
    triples, under, outside = [], [], []
    roots = [n + 1 + r for r in range(10)]  # the other trees' roots (beyond the n classes)
    shallow = [0]  # classes with depth < 8 under Tracheobionta
    for c in range(1, n + 1):
        if c <= k:
            parent = rnd.choice(shallow)
            d = depth[parent] + 1
            under.append(c)
        else:
            parent = rnd.choice(roots) if c == k + 1 or rnd.random() < 0.01 else rnd.randrange(k + 1, c)
            d = 1
            outside.append(c)
        depth.append(d)
        if c <= k and d < 8:
            shallow.append(c)
        name = "Tracheobionta" if parent == 0 else f"C{parent}"
        triples.append(ox.Triple(ox.NamedNode(f"{EX}C{c}"), SUB, ox.NamedNode(EX + name)))
    return triples, under, outside


def rss_mb() -> float:
    """The current resident set size."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def bench(kb: int, n_events: int, eager: bool) -> None:
    triples, under, outside = hierarchy(kb)
    rnd = random.Random(7)
    events = []
    for i in range(n_events):
        c = rnd.choice(under) if rnd.random() < 0.5 else rnd.choice(outside)
        tr = ox.Triple(ox.NamedNode(f"{EX}x{i}"), TYPE, ox.NamedNode(f"{EX}C{c}"))
        events.append(Event(EX + "S", f"{EX}g{i}", i, i, (tr,), TimeKind.ABSTRACT, i + 1))
    query = parse_epsparql(QUERY)
    gc.collect()
    r0 = rss_mb()
    c0, t0 = time.process_time(), time.perf_counter()
    eng = Engine()
    eng.add_graph("http://example.org/kb", triples)
    eng.register(query, name="q")  # builds the RDFS schema from the KB
    ctx = epr.EpContext.of(eng)
    load_cpu, load_wall = time.process_time() - c0, time.perf_counter() - t0
    load_mb = rss_mb() - r0
    c1 = time.process_time()
    if eager:  # the closure of every class now, rather than of each class on first sight
        for c in list(ctx.schema.sub):
            ctx.schema.superclasses(c)
    closure_cpu, closure_mb = time.process_time() - c1, rss_mb() - r0 - load_mb
    seg = max(1, n_events // 10)
    marks: list[float] = []
    held: list[int] = []  # state at each segment's end: must not grow with the stream
    state = {"last": time.process_time()}
    process = ctx.process

    def timed(tau: int) -> None:
        process(tau)
        if (tau + 1) % seg == 0:
            cpu = time.process_time()
            marks.append((cpu - state["last"]) / seg * 1e6)
            held.append(ctx.stored())
            state["last"] = time.process_time()

    ctx.process = timed  # type: ignore[method-assign]
    c1 = time.process_time()
    hits = sum(1 for _ in eng.run(events))
    cpu = time.process_time() - c1
    print(f"kb={kb:>8} triples (Tracheobionta subclasses {len(under)}): load+schema {load_cpu:.2f} s CPU "
          f"({load_wall:.2f} wall), +{load_mb:.0f} MiB RSS"
          + (f"; every class's superclasses {closure_cpu:.2f} s CPU, +{closure_mb:.0f} MiB" if eager else ""))
    print(f"   {n_events} events, {hits} outputs, {n_events / cpu:.0f} events/s CPU, held={ctx.stored()}, "
          f"RSS after the stream {rss_mb():.0f} MiB (+{rss_mb() - r0:.0f} since before the load)")
    print("   CPU us/event per 10% segment: " + " ".join(f"{m:.0f}" for m in marks))
    print("   held at each segment's end: " + " ".join(str(h) for h in held), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--eager", action="store_true", help="materialise every class's superclasses at load")
    a = ap.parse_args()
    for kb in a.kb:
        bench(kb, a.events, a.eager)


if __name__ == "__main__":
    main()
