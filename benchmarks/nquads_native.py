"""The same events as TriG and as N-Quads on the native path and on today's (issue 47).

    PYTHONPATH=. .venv/bin/python benchmarks/nquads_native.py [--size N] [--runs R] [--dir D]

Two workloads of rsep.bench.workloads (seed 1): sensors-window (``sensors``, six triples an
event; ``rspql_sensors(1667, 500)``) and rsprs-select (``triples``, one triple an event;
``rspql_select_all(5000, 1000)``). Each stream is written as the generator writes it (TriG)
and as N-Quads (pyoxigraph's parse of it serialized, its quads in the same order). For each
file, in alternated rounds, median of ``--runs``, CPU seconds (user + system):

- the reader alone: rsep._core.read_stream (the native reader, the file into events of ids)
  and rsep.stream.files.StreamFile iterated (today's reader, its Event objects), in this
  process;
- ``rsep run`` end to end in a child process, native and with RSEP_NATIVE=0 (its CPU
  seconds from the child's rusage); every output is compared, byte for byte, with the TriG
  file's native one.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox

from rsep import _core
from rsep.bench import queries as bq
from rsep.bench import workloads
from rsep.stream.files import MAX_RECORD, StreamFile, TimeConfig

RUN = "import sys; from rsep.cli.start import main; sys.exit(main())"


def cpu(f: Callable[[], int]) -> tuple[float, int]:
    t = time.process_time()
    n = f()
    return time.process_time() - t, n


def child_cpu(cmd: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="rsep-nq-"))
    cases = [("sensors-window", workloads.sensors, bq.rspql_sensors(1667, 500)),
             ("rsprs-select", workloads.triples, bq.rspql_select_all(5000, 1000))]
    points = list(TimeConfig().point)
    env = {**os.environ}
    print(f"# {args.size:,} events, {args.runs} runs, load {os.getloadavg()}")
    for name, gen, query in cases:
        d = root / name
        g = gen(d, args.size, 1)
        s = next(iter(g.streams.values()))
        trig = Path(s.trig)
        nq = trig.with_suffix(".nq")
        if not nq.exists():
            ox.serialize(ox.parse(path=str(trig), format=ox.RdfFormat.TRIG), str(nq),
                         format=ox.RdfFormat.N_QUADS)
        (d / "q.rq").write_text(query, encoding="utf-8")
        files = {"TriG": trig, "N-Quads": nq}
        reader: dict[str, list[float]] = {}
        run: dict[str, list[float]] = {}
        for _ in range(args.runs):
            for fmt, path in files.items():
                native_format = "nquads" if fmt == "N-Quads" else "trig"

                def native(path: Path = path, native_format: str = native_format) -> int:
                    ev, why = _core.read_stream(str(path), points, MAX_RECORD,
                                                format=native_format)
                    assert ev is not None, why
                    return len(ev)

                def today(path: Path = path, iri: str = s.iri) -> int:
                    return sum(1 for _ in StreamFile(path, iri))

                for who, f in (("native", native), ("today", today)):
                    t, n = cpu(f)
                    assert n == args.size, (who, fmt, n)
                    reader.setdefault(f"{fmt} {who}", []).append(t)
                for who, extra in (("native", {}), ("today", {"RSEP_NATIVE": "0"})):
                    out = d / f"{fmt}-{who}.jsonl"
                    cmd = [sys.executable, "-c", RUN, "run", str(d / "q.rq"),
                           "--stream", f"{s.iri}={path}", "-o", str(out), "-q"]
                    run.setdefault(f"{fmt} {who}", []).append(child_cpu(cmd, {**env, **extra}))
                    ref = d / "TriG-native.jsonl"
                    assert filecmp.cmp(out, ref, shallow=False), (out, ref)
        print(f"\n## {name} ({trig.stat().st_size / 1e6:.1f} MB TriG, "
              f"{nq.stat().st_size / 1e6:.1f} MB N-Quads)")
        print("| stage | TriG native | N-Quads native | TriG today | N-Quads today |")
        print("|---|---|---|---|---|")
        for label, table in (("reader alone", reader), ("`rsep run`", run)):
            med = {k: statistics.median(v) for k, v in table.items()}
            cells = [f"{med[k]:.3f} s ({med[k] / args.size * 1e6:.2f} us/ev)"
                     for k in ("TriG native", "N-Quads native", "TriG today", "N-Quads today")]
            print(f"| {label} | " + " | ".join(cells) + " |")
            print(f"| {label}, ratios | 1 | {med['N-Quads native'] / med['TriG native']:.2f}x | "
                  f"{med['TriG today'] / med['TriG native']:.2f}x | "
                  f"{med['N-Quads today'] / med['TriG native']:.2f}x |")
            print(f"| {label}, today / native | | | {med['TriG today'] / med['TriG native']:.2f}x | "
                  f"{med['N-Quads today'] / med['N-Quads native']:.2f}x |")
    print(f"\n# load after {os.getloadavg()}")


if __name__ == "__main__":
    main()
