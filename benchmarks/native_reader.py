"""The native reader (rsep._core.parse into term ids) against pyoxigraph.parse, same file.

    .venv/bin/python benchmarks/native_reader.py FILE [FILE ...] [--rounds N]

For each file, in alternated rounds (the median of each reported, CPU seconds of this
process): pyoxigraph.parse iterating its quads from Python; the same reading each quad's
four terms (what a reader of events must do); and rsep._core.parse, the file's bytes into a
term dictionary and a batch of ids. The format is the file's extension's.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox

from rsep import _core

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

    return {"pyoxigraph.parse": iterate, "pyoxigraph.parse + terms": terms,
            "rsep._core.parse": native}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    for name in args.files:
        path = Path(name)
        fs = readers(path)
        runs: dict[str, list[float]] = {label: [] for label in fs}
        count = {}
        for _ in range(args.rounds):
            for label, f in fs.items():
                s, n = cpu(f)
                runs[label].append(s)
                count[label] = n
        assert len(set(count.values())) == 1, count
        n = next(iter(count.values()))
        base = statistics.median(runs["rsep._core.parse"])
        print(f"{path} ({n:,} quads, {path.stat().st_size / 2**20:.1f} MiB), median of {args.rounds}:")
        for label, xs in runs.items():
            m = statistics.median(xs)
            print(f"  {label:26} {m:7.3f} s  {m / n * 1e6:6.3f} us a quad  "
                  f"{m / base:5.2f}x rsep._core's time")


if __name__ == "__main__":
    main()
