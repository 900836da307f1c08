"""EP-SPARQL: events/s for the three policies on a stock stream, query (1)-style
three-step sequences with a 30-unit getDURATION() bound, and the cost of each tenth of
the stream (it must not grow with the stream's length).

    .venv/bin/python benchmarks/epsparql_throughput.py --lengths 10000 100000 --budget 120
"""

from __future__ import annotations

import argparse
import random
import time

import pyoxigraph as ox

from rsep import Engine
from rsep.epsparql import reference as ep
from rsep.epsparql import runtime as epr
from rsep.lang.epsparql import parse_epsparql
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

EX = "http://example.org/"
PRICE = ox.NamedNode(EX + "hasStockPrice")
Q1 = f"""PREFIX : <{EX}>
SELECT ?company ?price1 ?price2 ?price3 WHERE {{
{{ ?company :hasStockPrice ?price1 }} SEQ {{ ?company :hasStockPrice ?price2 }}
SEQ {{ ?company :hasStockPrice ?price3 }}
FILTER ( ?price2 < ?price1 * 0.9 && ?price3 > ?price1 * 1.05 && getDURATION() < 30 ) }}"""


def stream(n: int, companies: int = 10, seed: int = 7) -> list[Event]:
    """One price event per time unit, a random walk per company."""
    rnd = random.Random(seed)
    price = [100] * companies
    out = []
    for i in range(n):
        c = rnd.randrange(companies)
        price[c] = max(1, price[c] + rnd.randint(-8, 8))
        tr = ox.Triple(ox.NamedNode(f"{EX}c{c}"), PRICE, ox.Literal(str(price[c]), datatype=ox.NamedNode(
            "http://www.w3.org/2001/XMLSchema#integer")))
        out.append(Event(EX + "S", f"{EX}g{i}", i, i, (tr,), TimeKind.ABSTRACT, i + 1))
    return out


class Budget(Exception):
    """The run used up its time budget."""


def bench(policy: str, events: list[Event], budget: float) -> None:
    eng = Engine()
    eng.register(parse_epsparql(Q1, policy=policy), name="q1")
    ctx = epr.EpContext.of(eng)
    seg = max(1, len(events) // 10)
    marks: list[float] = []
    held: list[int] = []  # state at each segment's end: must not grow with the stream
    t0, c0 = time.perf_counter(), time.process_time()
    state = {"last": c0, "done": 0}
    process = ctx.process

    def timed(tau: int) -> None:  # one event per time unit: tau counts the events
        process(tau)
        state["done"] = tau + 1
        if (tau + 1) % seg == 0:
            cpu = time.process_time()
            marks.append((cpu - state["last"]) / seg * 1e6)
            held.append(ctx.stored())
            state["last"] = time.process_time()  # stored() walks the state: not charged to the events
            if time.perf_counter() - t0 > budget:
                raise Budget

    ctx.process = timed  # type: ignore[method-assign]
    outs, over = 0, False
    try:
        for _ in eng.run(events):
            outs += 1
    except Budget:
        over = True
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = state["done"]
    print(f"{policy:13s} n={len(events):>7} processed={n:>7} outputs={outs:>6} "
          f"{n / cpu:8.0f} events/s CPU ({n / total:.0f} wall) held={ctx.stored():>5}"
          + (f" (stopped at the {budget:.0f} s budget)" if over else ""))
    print("   CPU us/event per 10% segment: " + " ".join(f"{m:.0f}" for m in marks))
    print("   held at each segment's end: " + " ".join(str(h) for h in held), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", type=int, nargs="+", default=[10_000, 100_000])
    # the ETALIS modes run another runtime, which this harness does not clock per event:
    # `rsep bench epsparql-etalis` measures them (against ETALIS itself)
    formal = [p for p in ep.POLICIES if not p.startswith("etalis")]
    ap.add_argument("--policies", nargs="+", default=formal, choices=formal)
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per run before giving up")
    a = ap.parse_args()
    for n in a.lengths:
        evs = stream(n)
        for p in a.policies:
            bench(p, evs, a.budget)


if __name__ == "__main__":
    main()
