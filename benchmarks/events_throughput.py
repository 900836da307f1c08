"""Event patterns: events/s of the production evaluator against the reference one, per policy.

The stream alternates two kinds of one-triple events on one stream:
``:o<k> :opened :door<d>`` and ``:door<d> :closed :c<k>``, with d drawn from a
small set, so ``Open SEQ Close`` (joined on the door) has a few matches per
event. Windows hold the last W time units (one event per unit).

    .venv/bin/python benchmarks/events_throughput.py --events 20000 --windows 100 1000 10000
"""

from __future__ import annotations

import argparse
import random
import resource
import time

import pyoxigraph as ox

from rsep import Engine, ReportPolicy, parse_query
from rsep.runtime import reference
from rsep.stream.event import Event
from rsep.stream.time import Duration, TimeKind

EX = "http://example.org/"
OPENED, CLOSED = ox.NamedNode(EX + "opened"), ox.NamedNode(EX + "closed")


def stream(n: int, doors: int, seed: int = 7) -> list[Event]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        d = ox.NamedNode(f"{EX}door{rnd.randrange(doors)}")
        if i % 2 == 0:
            tr = ox.Triple(ox.NamedNode(f"{EX}o{i}"), OPENED, d)
        else:
            tr = ox.Triple(d, CLOSED, ox.NamedNode(f"{EX}c{i}"))
        out.append(Event(EX + "S", f"{EX}g{i}", i, i, (tr,), TimeKind.ABSTRACT, i + 1))
    return out


def query(policy: str, window: int) -> str:
    return f"""PREFIX : <{EX}>
REGISTER ISTREAM :q AS SELECT ?o ?door ?c ?_from ?_to
FROM NAMED WINDOW :w ON :S [RANGE {window}]
EVENT ON :w {{ ?o :opened ?door }} AS Open
EVENT ON :w {{ ?door :closed ?c }} AS Close
WHERE {{ MATCH {policy} {{ Open SEQ Close }} }}"""


def run_engine(text: str, events: list[Event], every: int) -> tuple[float, int, list[float]]:
    eng = Engine()
    eng.register(text, report=ReportPolicy(periodic=Duration(every, False, str(every))))
    t0 = time.perf_counter()
    n = 0
    seg = max(1, len(events) // 10)
    marks = []
    last = t0
    for i, e in enumerate(events, 1):
        eng.push(e)
        n += sum(1 for _ in eng.drain())
        if i % seg == 0:
            now = time.perf_counter()
            marks.append((now - last) / seg * 1e6)
            last = now
    eng.close()
    n += sum(1 for _ in eng.drain())
    return time.perf_counter() - t0, n, marks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--windows", type=int, nargs="+", default=[100, 1000, 10_000])
    ap.add_argument("--doors", type=int, default=0, help="distinct join keys (default: window/2)")
    ap.add_argument("--every", type=int, default=10, help="evaluate every N time units")
    ap.add_argument("--policies", nargs="+", default=["UNRESTRICTED", "NAIVE", "CHRONOLOGICAL", "RECENT"])
    ap.add_argument("--reference-events", type=int, default=400,
                    help="stream length for the (quadratic) reference evaluator")
    args = ap.parse_args()
    print("| policy | window | events | production events/s | us/event first 10% -> last 10% "
          "| reference events/s (stream) | results |")
    print("|---|---|---|---|---|---|---|")
    for w in args.windows:
        doors = args.doors or max(1, w // 2)
        evs = stream(args.events, doors)
        for policy in args.policies:
            text = query(policy, w)
            secs, n, marks = run_engine(text, evs, args.every)
            ref_evs = stream(args.reference_events, doors)
            q = parse_query(text)
            q.report = ReportPolicy(periodic=Duration(args.every, False, str(args.every)))
            t0 = time.perf_counter()
            reference.evaluate(q, ref_evs)
            ref = len(ref_evs) / (time.perf_counter() - t0)
            print(f"| {policy} | {w} | {len(evs)} | {len(evs) / secs:,.0f} | "
                  f"{marks[0]:.0f} -> {marks[-1]:.0f} | {ref:,.0f} ({len(ref_evs)}) | {n} |", flush=True)
    print(f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")


if __name__ == "__main__":
    main()
