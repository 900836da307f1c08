"""SPASEQ throughput on an SMD-like stock stream (002 Sec. 8's shape).

For each configuration (selection strategy, window length in events, pattern
length 2-7 as Queries 3/4 of Appendix A, Kleene+ or a plain sequence, engine
options) it prints triples/s and events/s (CPU time of this process), the CPU
time per window, live runs, matches, and the cost of each tenth of the stream
(flat when the cost per event does not grow with the stream's length).

Input is read from a TriG stream file (benchmarks/gen_stock.py, generated if
missing). ``--source events`` times the engine on events parsed beforehand;
``--source file`` times parsing and engine together, end to end (and prints
the parser's own rate, the bound of that figure). ``--reference N`` compares
the engine with the reference evaluator of Defs. 7-16 on the first N events
(same matches, asserted) and times both.

    .venv/bin/python benchmarks/spaseq_throughput.py --events 20000 --windows 10000 \\
        --strategies next --lengths 3 --source events file --budget 60 --repeat 5

Which build runs (compiled or pure Python, ``RSEP_PURE=1``) is printed first.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_stock import STREAM_IRI, TRIPLES_PER_EVENT, generate  # noqa: E402

from rsep import Engine, parse_query  # noqa: E402
from rsep.spaseq.options import NFAOptions  # noqa: E402
from rsep.spaseq.reference import ReferenceEvaluator  # noqa: E402
from rsep.stream.event import Event  # noqa: E402
from rsep.stream.files import StreamFile  # noqa: E402
from rsep.stream.source import DeadLetter, merge_streams  # noqa: E402

# Query 3's GPMs (head and shoulders); Query 4 (V shape) is A, B, C with C: p3 < p2.
FILTERS = {
    2: "FILTER (?p2 > ?p1)",
    3: "FILTER (?p3 < ?p2 && ?p3 > ?p1)",
    4: "FILTER (?p4 > ?p2)",
    5: "FILTER (?p5 < ?p4 && ?p5 > ?p3)",
    6: "FILTER (?p6 > ?p5 && ?p6 < ?p4)",
    7: "FILTER (?p7 < ?p6 && ?p7 > ?p5)",
}
OPS = {"strict": ",", "next": ";", "any": ":"}


def query(length: int, strategy: str, window: int, kleene: bool) -> str:
    """Query 4 (length 3) or Query 3 (length 7) and the lengths between, with ``op``
    between GPMs; ``kleene`` puts a + on B."""
    names = "ABCDEFG"[:length]
    op = OPS[strategy]
    seq = f"{op} ".join(n + ("+" if kleene and n == "B" else "") for n in names)
    defs = []
    for i, n in enumerate(names, 1):
        f = FILTERS.get(i, "")
        if length == 3 and i == 3:
            f = "FILTER (?p3 < ?p2)"  # Query 4
        defs.append(f"DEFINE GPM {n} ON S1 {{ ?company pred:price ?p{i} . "
                    f"?company pred:volume ?vol{i} . {f} }}")
    sel = " ".join(f"?p{i}" for i in range(1, length + 1))
    return (f"PREFIX pred: <http://example/>\nSELECT ?company {sel}\nWITHIN {window}\n"
            f"FROM STREAM S1 <{STREAM_IRI}>\nWHERE {{\n  SEQ ({seq})\n  "
            + "\n  ".join(defs) + "\n}\n")


class Budget(Exception):
    pass


def timed_run(text: str, events, n_events: int, budget: float, options: str) -> dict:
    """Run the query over ``events`` (an iterable: a list, or a file being parsed)."""
    q = parse_query(text)
    q.options["engine"] = options
    eng = Engine()
    eng.register(q, name="q")
    rt = eng.queries[0]
    seg = max(1, n_events // 10)
    marks: list[float] = []
    state = {"n": 0}
    c0 = time.process_time()

    def counted():
        # checks every 64 events only: this wrapper's own cost is part of what is timed
        last = c0
        n = 0
        it = iter(events)
        while True:
            block = list(islice(it, 64))
            if not block:
                return
            for e in block:
                yield e
                n += 1
                if n % seg == 0:
                    now = time.process_time()
                    marks.append((now - last) / seg * 1e6)
                    last = now
            state["n"] = n
            if time.process_time() - c0 > budget:
                raise Budget

    outs = 0
    over = False
    try:
        for _ in eng.run(counted()):
            outs += 1
    except Budget:
        over = True
    cpu = time.process_time() - c0
    st = rt.stats
    return {"n": state["n"], "cpu": cpu, "outs": outs, "over": over, "marks": marks,
            "live": st.max_live if st else 0, "cut": (st.runs_cut, st.matches_cut) if st else (0, 0),
            "touched": st.runs_touched if st else 0}


def row(label: str, r: dict, window: int) -> str:
    n, cpu = r["n"], r["cpu"]
    eps = n / cpu if cpu else 0
    windows = max(1, -(-n // window))
    flat = ""
    if len(r["marks"]) >= 4:
        m = r["marks"]
        flat = f"{m[0]:.0f}/{m[len(m) // 2]:.0f}/{m[-1]:.0f}"
    return (f"| {label} | {n} | {eps * TRIPLES_PER_EVENT:,.0f} | {eps:,.0f} | "
            f"{cpu / windows * 1e3:,.1f} | {r['live']} | {r['outs']} | {flat} |"
            + (" budget" if r["over"] else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=20_000, help="stream length (events)")
    ap.add_argument("--file", default="/tmp/rsep_bench/stock_{n}.trig")
    ap.add_argument("--windows", type=int, nargs="+", default=[10_000])
    ap.add_argument("--lengths", type=int, nargs="+", default=[3])
    ap.add_argument("--strategies", nargs="+", default=["next"], choices=list(OPS))
    ap.add_argument("--kleene", choices=["no", "yes", "both"], default="no")
    ap.add_argument("--options", nargs="+", default=["all-on"],
                    help="engine option sets, e.g. all-on no-partition-index all-off")
    ap.add_argument("--source", nargs="+", default=["events"], choices=["events", "file"])
    ap.add_argument("--reference", type=int, default=0, metavar="N",
                    help="also compare with the reference evaluator on the first N events")
    ap.add_argument("--budget", type=float, default=60.0, help="CPU seconds per run")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run each configuration N times and report the run of median CPU "
                         "time (with the spread of all N)")
    a = ap.parse_args()
    path = Path(a.file.format(n=a.events))
    if not path.is_file():
        generate(path, a.events)
    t = time.process_time()
    parsed = [e for e in StreamFile(path, STREAM_IRI) if isinstance(e, Event)]
    parse_cpu = time.process_time() - t
    load = os.getloadavg()[0]
    from rsep.native import compiled

    done = compiled()
    print(f"build: {'compiled (' + str(len(done)) + ' modules)' if done else 'pure Python'}")
    print(f"stream: {path} ({len(parsed)} events, {len(parsed) * TRIPLES_PER_EVENT} triples); "
          f"parser alone: {len(parsed) / parse_cpu:,.0f} events/s; load average {load:.1f}")
    print("| strategy, window, length, Kleene+, options, source | events | triples/s | events/s "
          "| CPU ms/window | max live runs | outputs | us/event first/middle/last tenth |")
    print("|---|---|---|---|---|---|---|---|")
    kleenes = {"no": [False], "yes": [True], "both": [False, True]}[a.kleene]
    for strategy in a.strategies:
        for window in a.windows:
            for length in a.lengths:
                for kl in kleenes:
                    text = query(length, strategy, window, kl)
                    for opts in a.options:
                        spec = "" if opts == "all-on" else opts
                        NFAOptions.parse(spec)
                        for source in a.source:
                            runs = []
                            for _ in range(max(1, a.repeat)):
                                if source == "events":
                                    runs.append(timed_run(text, parsed, len(parsed), a.budget, spec))
                                else:
                                    dead = DeadLetter(None)
                                    evs = merge_streams([StreamFile(path, STREAM_IRI)], dead)
                                    runs.append(timed_run(text, evs, len(parsed), a.budget, spec))
                            runs.sort(key=lambda r: r["cpu"])
                            r = runs[len(runs) // 2]
                            label = (f"{strategy}, {window}, {length}, {'+' if kl else '-'}, "
                                     f"{opts}, {source}")
                            if len(runs) > 1:
                                tps = [x["n"] / x["cpu"] * TRIPLES_PER_EVENT for x in runs]
                                label += f" (median of {len(runs)}: {min(tps):,.0f}-{max(tps):,.0f})"
                            print(row(label, r, window), flush=True)
                            if len(runs) > 1:
                                print("runs, triples/s: " + ", ".join(
                                    f"{x['n'] / x['cpu'] * TRIPLES_PER_EVENT:,.0f}"
                                    for x in runs), flush=True)
                    if a.reference:
                        reference(text, parsed[: a.reference], window, strategy, length, kl)
    return 0


def reference(text: str, events: list[Event], window: int, strategy: str, length: int,
              kl: bool) -> None:
    q = parse_query(text)
    c0 = time.process_time()
    ref = ReferenceEvaluator(q, events)
    want = ref.answers(events[0].time, window)
    c1 = time.process_time()
    eng = Engine()
    eng.register(parse_query(text), name="q")
    outs = list(eng.run(events))
    c2 = time.process_time()
    got = {(o.time, tuple(sorted(o.bindings.items()))) for o in outs}
    want_rows = {(t, tuple(sorted((k, str(v)) for k, v in mu))) for t, om in want for mu in om}
    assert got == want_rows, "engine and reference differ"
    n = len(events)
    print(f"| reference vs engine on {n} events ({strategy}, {window}, {length}, "
          f"{'+' if kl else '-'}): same {len(got)} answers; reference {n / (c1 - c0):,.0f} "
          f"events/s, engine {n / (c2 - c1):,.0f} events/s | | | | | | | |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
