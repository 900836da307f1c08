"""The native reader (rsep._core.parse into term ids) against pyoxigraph.parse, same file.

    .venv/bin/python benchmarks/native_reader.py FILE [FILE ...] [--rounds N]
    .venv/bin/python benchmarks/native_reader.py --sensors 100000 [--rounds N]

For each file, in alternated rounds (the median of each reported, CPU seconds of this
process): pyoxigraph.parse iterating its quads from Python; the same reading each quad's
four terms (what a reader of events must do); and rsep._core.parse, the file's bytes into a
term dictionary and a batch of ids. The format is the file's extension's. A TriG file is
also read by rsep._core.read_stream, as the native path of a windowed query reads it
(rsep.windows.native.run: the file into events of ids, the default point-time predicates);
it refuses a file not of the stream shape (then it is left out). ``--sensors N``: the
sensors-window bench's stream of N events (rsep.bench.workloads.sensors, seed 1), written
to a temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox

from rsep import _core
from rsep.bench.workloads import sensors
from rsep.stream.files import MAX_RECORD, TimeConfig

FORMATS = {".trig": "trig", ".nq": "nquads", ".nt": "ntriples", ".ttl": "turtle"}
OX = {"trig": ox.RdfFormat.TRIG, "nquads": ox.RdfFormat.N_QUADS,
      "ntriples": ox.RdfFormat.N_TRIPLES, "turtle": ox.RdfFormat.TURTLE}


def cpu(f: Callable[[], int]) -> tuple[float, int]:
    t = time.process_time()
    n = f()
    return time.process_time() - t, n


def readers(path: Path) -> dict[str, Callable[[], int]]:
    fmt = FORMATS[path.suffix]

    def iterate() -> int:
        return sum(1 for _ in ox.parse(path=str(path), format=OX[fmt]))

    def terms() -> int:
        n = 0
        for q in ox.parse(path=str(path), format=OX[fmt]):
            q.subject.value, q.predicate.value, q.object.value  # noqa: B018 (read, not kept)
            g = q.graph_name
            if not isinstance(g, ox.DefaultGraph):
                g.value  # noqa: B018
            n += 1
        return n

    def native() -> int:
        raw, errors = _core.parse(path.read_bytes(), fmt, _core.Terms())
        assert not errors, errors[:3]
        return len(raw) // 16

    def stream() -> int:
        ev, why = _core.read_stream(str(path), list(TimeConfig().point), MAX_RECORD)
        assert ev is not None, why
        return len(ev)

    out = {"pyoxigraph.parse": iterate, "pyoxigraph.parse + terms": terms,
           "rsep._core.parse": native}
    if fmt == "trig" and _core.read_stream(str(path), list(TimeConfig().point),
                                          MAX_RECORD)[0] is not None:
        out["rsep._core.read_stream"] = stream
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sensors", type=int, metavar="N",
                    help="also the sensors-window stream of N events")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        files = list(args.files)
        if args.sensors:
            files.append(sensors(Path(d), args.sensors, 1).streams["sensors"].trig)
        for name in files:
            report(Path(name), args.rounds)


def report(path: Path, rounds: int) -> None:
    fs = readers(path)
    runs: dict[str, list[float]] = {label: [] for label in fs}
    count = {}
    for _ in range(rounds):
        for label, f in fs.items():
            s, n = cpu(f)
            runs[label].append(s)
            count[label] = n
    events = count.pop("rsep._core.read_stream", None)
    assert len(set(count.values())) == 1, count
    n = next(iter(count.values()))
    ox_s = statistics.median(runs["pyoxigraph.parse"])
    print(f"{path} ({n:,} quads{f', {events:,} events' if events else ''}, "
          f"{path.stat().st_size / 2**20:.1f} MiB), CPU s, median of {rounds} alternated:")
    for label, xs in runs.items():
        m = statistics.median(xs)
        print(f"  {label:26} {m:7.3f} s  {m / n * 1e6:6.3f} us a quad  "
              f"pyoxigraph.parse's time / this: {ox_s / m:5.2f}x")


if __name__ == "__main__":
    main()
