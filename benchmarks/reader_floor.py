"""How far rsep's reading is from pyoxigraph's, on a windowed bench case's stream (issues 18, 19).

Reads the first stream of the ``spec.json`` that ``rsep bench`` wrote for rsep's run of a
windowed case (``OUT/runs/CASE/rsep/spec.json``) in several ways, each in a process of its
own, and prints per event the CPU time (median of ``--runs``) or, with ``--callgrind``, the
instructions valgrind counts (less those of a process that only starts and reads the file,
so imports cancel; instruction counts do not drift with the machine as CPU time does here):

- ``parse``: ``pyoxigraph.parse`` over the file, each quad dropped (the parser alone);
- ``floor``: the same, each graph's quads made into ``Triple`` objects (what any reader that
  hands out pyoxigraph terms must do);
- ``chunks``: the file cut as rsep's reader cuts it (about 64 KiB, before a time triple, the
  prefixes repeated), each chunk parsed into a list of quads, then grouped into triples;
- ``streamfile``: ``StreamFile``'s events (lines, times, checks and all);
- ``store``: each chunk loaded into a fresh pyoxigraph ``Store`` and asked, in one query per
  window block over all its events as named graphs, for the block's solutions, and in one
  more for the events' times: the batched design the issue names, without the locality
  check's terms or any check of the events' shape, so a lower bound on its cost.

    .venv/bin/python benchmarks/reader_floor.py OUT/runs/sensors-window/rsep/spec.json
    .venv/bin/python benchmarks/reader_floor.py OUT/runs/sensors-window/rsep/spec.json --callgrind
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from itertools import groupby
from pathlib import Path

import pyoxigraph as ox

# the parser alone, the floor and StreamFile as the ingest benchmark reads them
from ingest_throughput import GRAPH, TRIPLE, readers

from rsep.stream.event import Event
from rsep.stream.files import StreamFile

VARIANTS = ("parse", "floor", "chunks", "streamfile", "store")
TIME = "http://www.w3.org/ns/prov#generatedAtTime"
CHUNK = 1 << 16


def chunks(text: str) -> Iterator[str]:
    """The file's text in pieces of about CHUNK characters, each cut before a line with a
    time triple and given the file's leading prefix lines (as rsep's reader repeats them)."""
    lines = text.split("\n")
    k = 0
    directives = ("@prefix", "prefix", "@base", "base")
    while k < len(lines) and (not lines[k].strip()
                              or lines[k].lstrip().lower().startswith(directives)):
        k += 1
    header = "\n".join(lines[:k]) + "\n"
    body = "\n".join(lines[k:])
    local = TIME.rsplit("#", 1)[1]  # the bench files' time predicate, prefixed or not
    i = 0
    while i < len(body):
        j = body.find(local, i + CHUNK)
        j = len(body) if j < 0 else body.rfind("\n", 0, j) + 1
        yield header + body[i:j]
        i = j


def block_queries(spec: dict, stream: str) -> list[str]:
    """Per GRAPH block of the windows on ``stream``: SELECT * over the events as named graphs."""
    from rsep.algebra.query import ContinuousQuery
    from rsep.lang import parse_query
    from rsep.windows.incremental import LocalWindow, analyse

    q = parse_query(spec["query"])
    if not isinstance(q, ContinuousQuery):
        return []  # (``store`` then loads and reads the times only)
    a = analyse(q)
    if isinstance(a, str):
        return []  # (``store`` then loads and reads the times only)
    on = {w.iri for w in q.dataset.windows if w.stream == stream}
    out = []
    for iri, blocks in a.blocks.items():
        if iri in on:
            out += [t.replace("SELECT DISTINCT ?__g WHERE", "SELECT * WHERE", 1)
                    for t in LocalWindow(a.prologue, blocks).queries]
    return out


def variant(name: str, spec: dict) -> Callable[[], int]:
    """The variant's work (it returns the events or quads it saw)."""
    stream, path = spec["streams"][0]
    fmt = ox.RdfFormat.TRIG
    text = open(path, encoding="utf-8").read()
    # made for every variant, so that a count less the "none" process's leaves the work itself
    pieces = list(chunks(text))
    queries = block_queries(spec, stream)
    ingest = dict(readers(Path(path), None))

    def chunked() -> int:
        n = 0
        for c in pieces:
            quads = list(ox.parse(c, format=fmt))
            n += len([list(grp) if isinstance(g, ox.DefaultGraph) else tuple(map(TRIPLE, grp))  # noqa: B031
                      for g, grp in groupby(quads, GRAPH)])
        return n

    def store() -> int:
        times = f"SELECT ?g ?t WHERE {{ ?g <{TIME}> ?t }}"
        n = 0
        for c in pieces:
            s = ox.Store()
            s.load(c, format=fmt)
            got = s.query(times)
            assert isinstance(got, ox.QuerySolutions)
            when = {r[0]: r[1] for r in got}
            for text in queries:
                by: dict[object, list] = {}
                res = s.query(text)
                assert isinstance(res, ox.QuerySolutions)
                names = [v.value for v in res.variables]
                for r in res:
                    by.setdefault(r["__g"], []).append([r[v] for v in names])
            n += len(when)
        return n

    def nothing() -> int:
        return 0

    return {"parse": ingest["pyoxigraph.parse alone"],
            "floor": ingest["parse + triples grouped by graph (a floor)"],
            "streamfile": ingest["StreamFile"],
            "chunks": chunked, "store": store, "none": nothing}[name]


def child(spec_path: str, name: str, runs: int) -> None:
    """In this process: the variant's CPU seconds per run, and the events, as JSON."""
    import gc
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    fn = variant(name, spec)
    times = []
    for _ in range(runs):
        gc.collect()
        c0 = time.process_time()
        fn()
        times.append(time.process_time() - c0)
    print(json.dumps({"times": times}))


def events_of(spec: dict) -> int:
    stream, path = spec["streams"][0]
    return sum(isinstance(e, Event) for e in StreamFile(path, stream))


def instructions(spec_path: str, name: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        got = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             __file__, spec_path, "--child", name, "--runs", "1"],
            capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=True)
    m = re.search(r"Collected : (\d+)", got.stderr)
    if m is None:
        raise SystemExit(f"valgrind gave no count for {name}:\n{got.stderr[-2000:]}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--callgrind", action="store_true",
                    help="count instructions under valgrind instead of timing")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.spec, a.child, a.runs)
        return 0
    with open(a.spec, encoding="utf-8") as f:
        spec = json.load(f)
    n = events_of(spec)
    print(f"{spec['streams'][0][1]}: {n} events")
    if a.callgrind:
        base = instructions(a.spec, "none")
        counts = {v: instructions(a.spec, v) - base for v in a.variants}
        first = counts.get("parse")
        print("| variant | instructions per event | parser alone / variant |")
        print("|---|---:|---:|")
        for v, c in counts.items():
            print(f"| {v} | {c / n / 1000:.1f} k | {first / c:.2f} |" if first else
                  f"| {v} | {c / n / 1000:.1f} k | - |")
        return 0
    med: dict[str, float] = {}
    for v in a.variants:
        got = subprocess.run([sys.executable, __file__, a.spec, "--child", v, "--runs", str(a.runs)],
                             capture_output=True, text=True, check=True)
        med[v] = statistics.median(json.loads(got.stdout)["times"])
    ref = med.get("parse")
    print("| variant | CPU us per event (median) | parser alone / variant |")
    print("|---|---:|---:|")
    for v, t in med.items():
        print(f"| {v} | {t / n * 1e6:.1f} | {ref / t:.2f} |" if ref else f"| {v} | {t / n * 1e6:.1f} | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
