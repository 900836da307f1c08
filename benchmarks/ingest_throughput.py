"""Ingest throughput: StreamFile (and StreamFile + merge_streams) against pyoxigraph's parser alone.

For each file, in TriG and in N-Quads (the N-Quads copy is written once from the
TriG file, untimed), three readers run over the whole file:

- ``pyoxigraph.parse(path=..., format=...)``, iterating the quads in Python: the reference;
- ``StreamFile`` producing ``Event`` objects;
- ``StreamFile`` + ``merge_streams`` (the path of ``rsep run``).

Each is timed in CPU seconds (``time.process_time``), median of ``--runs``
runs; a small file is read several times per run so a run lasts about a
second. The table gives quads/s by CPU time and each reader's ratio to the
parser alone (1.0 = as fast as parsing). ``--baseline REV`` adds the readers of
rsep/stream/files.py as it was at a git revision, for before/after numbers.

    python benchmarks/ingest_throughput.py                       # generated 200,000 events + SRBench weather
    python benchmarks/ingest_throughput.py --events 20000 --runs 5
    python benchmarks/ingest_throughput.py --baseline c37c384~1  # with the reader before issue #8
    python benchmarks/ingest_throughput.py --messages            # the weather stream as RDF Message Logs

``--messages`` reads the SRBench weather stream (or the files given) as a stream file and
as RDF Message Logs written from it by ``rsep convert`` (untimed): TriG and N-Quads text
logs and Jelly, one message per event and one per observation (``--split resources``).
It gives events/s and quads/s by CPU time through ``merge_streams`` (the path of
``rsep run``) and each file's size.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import groupby
from operator import attrgetter
from pathlib import Path

import pyoxigraph as ox

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_stream import STREAM_IRI, generate  # noqa: E402

from rsep.cli.main import main as rsep_main  # noqa: E402
from rsep.stream.event import Event  # noqa: E402
from rsep.stream.files import StreamFile  # noqa: E402
from rsep.stream.messages import MessageLog  # noqa: E402
from rsep.stream.source import DeadLetter, merge_streams  # noqa: E402

GRAPH = attrgetter("graph_name")
TRIPLE = attrgetter("triple")
ROOT = Path(__file__).resolve().parent.parent
SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"


def fmt_of(path: Path) -> ox.RdfFormat:
    return ox.RdfFormat.N_QUADS if path.suffix == ".nq" else ox.RdfFormat.TRIG


def to_nquads(path: Path, out_dir: Path) -> Path:
    out = out_dir / (path.stem + ".nq")
    if not out.exists() or out.stat().st_mtime < path.stat().st_mtime:
        ox.serialize(ox.parse(path=str(path), format=ox.RdfFormat.TRIG), output=str(out),
                     format=ox.RdfFormat.N_QUADS)
    return out


def load_baseline(rev: str) -> type:
    """StreamFile as defined in rsep/stream/files.py at a git revision."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:rsep/stream/files.py"],
                         check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.gettempdir()) / f"rsep_files_{rev.replace('~', '_').replace('/', '_')}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod.StreamFile


def readers(path: Path, baseline: type | None) -> list[tuple[str, Callable[[], int]]]:
    """(name, fn) pairs; fn reads the whole file and returns the number of quads it delivered."""
    fmt = fmt_of(path)

    def parse() -> int:
        n = 0
        for _ in ox.parse(path=str(path), format=fmt):
            n += 1
        return n

    def events(cls: type) -> Callable[[], int]:
        def run() -> int:
            n = 0
            for e in cls(path, STREAM_IRI):
                if isinstance(e, Event):
                    n += len(e.triples) + 1  # + its time triple
            return n
        return run

    def merged(cls: type) -> Callable[[], int]:
        def run() -> int:
            n = 0
            for e in merge_streams([cls(path, STREAM_IRI)], DeadLetter()):
                n += len(e.triples) + 1
            return n
        return run

    def floor() -> int:
        # The least a reader of events must do: parse, and make each graph's triples
        # into Triple objects (no times, no lines, no Event objects, whole-file groups).
        n = 0
        for g, grp in groupby(ox.parse(path=str(path), format=fmt), GRAPH):
            items = list(grp) if isinstance(g, ox.DefaultGraph) else tuple(map(TRIPLE, grp))  # noqa: B031
            n += len(items)
        return n

    def lenient() -> int:
        # what the parser costs without validating IRIs and language tags (not used by rsep:
        # checking them again from Python costs more than this saves)
        n = 0
        for _ in ox.parse(path=str(path), format=fmt, lenient=True):
            n += 1
        return n

    def grouped() -> int:
        # grouping alone: the graph name of every quad read, no Triple made
        n = 0
        for _, grp in groupby(ox.parse(path=str(path), format=fmt), GRAPH):
            n += len(list(grp))
        return n

    out = [("pyoxigraph.parse alone", parse),
           ("pyoxigraph.parse, lenient", lenient),
           ("parse + quads grouped by graph", grouped),
           ("parse + triples grouped by graph (a floor)", floor),
           ("StreamFile", events(StreamFile)),
           ("StreamFile + merge_streams", merged(StreamFile))]
    if baseline is not None:
        out += [("StreamFile (baseline)", events(baseline)),
                ("StreamFile + merge_streams (baseline)", merged(baseline))]
    return out


def measure(fn: Callable[[], int], runs: int, repeat: int) -> tuple[int, float]:
    """(quads per pass, median CPU seconds per pass)."""
    times = []
    n = 0
    for _ in range(runs):
        c0 = time.process_time()
        for _ in range(repeat):
            n = fn()
        times.append((time.process_time() - c0) / repeat)
    return n, statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path,
                    help="TriG files (default: the generated stream and the SRBench weather stream)")
    ap.add_argument("--events", type=int, default=200_000, help="events of the generated stream")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--runs", type=int, default=3, help="runs per reader; the median is reported")
    ap.add_argument("--baseline", metavar="REV", help="also time StreamFile as of this git revision")
    ap.add_argument("--messages", action="store_true",
                    help="stream file against RDF Message Logs (TriG, N-Quads, Jelly) of the same events")
    args = ap.parse_args(argv)
    if args.messages:
        return messages(args.files or [SRBENCH], args.runs)

    work = Path(tempfile.gettempdir()) / "rsep-bench"
    work.mkdir(exist_ok=True)
    files = list(args.files)
    if not files:
        gen = work / f"sensors-{args.events}-s{args.seed}.trig"
        if not gen.exists():
            generate(gen, args.events, seed=args.seed)
        files = [gen] + ([SRBENCH] if SRBENCH.exists() else [])
    baseline = load_baseline(args.baseline) if args.baseline else None

    print(f"Python {platform.python_version()}, pyoxigraph {ox.__version__}, {os.cpu_count()} CPUs, "
          f"load average at start {os.getloadavg()[0]:.1f}\n")
    print("| file | format | reader | quads | CPU s (median of "
          f"{args.runs}) | quads/s (CPU) | ratio to parse alone |")
    print("|---|---|---|---:|---:|---:|---:|")
    for trig in files:
        for path in (trig, to_nquads(trig, work)):
            size = path.stat().st_size
            repeat = max(1, round(20e6 / size))  # about a second of parsing per run
            ref = None
            for name, fn in readers(path, baseline):
                n, cpu = measure(fn, args.runs, repeat)
                ref = ref or cpu
                print(f"| {trig.name} | {'N-Quads' if path.suffix == '.nq' else 'TriG'} | {name} | "
                      f"{n:,} | {cpu:.3f} | {n / cpu:,.0f} | {ref / cpu:.2f} |", flush=True)
    print(f"\nload average at end {os.getloadavg()[0]:.1f}")
    return 0


def messages(files: list[Path], runs: int) -> int:
    work = Path(tempfile.gettempdir()) / "rsep-bench"
    work.mkdir(exist_ok=True)
    print(f"Python {platform.python_version()}, pyoxigraph {ox.__version__}, {os.cpu_count()} CPUs, "
          f"load average at start {os.getloadavg()[0]:.1f}\n")
    print(f"| file | read as | events | quads | bytes | CPU s (median of {runs}) | events/s (CPU) | "
          "quads/s (CPU) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for src in files:
        inputs: list[tuple[str, Path, type]] = [("stream file (TriG, timestamp triples)", src, StreamFile)]
        for split in ("events", "resources"):
            for fmt, suffix in (("rdfm-trig", "trig"), ("rdfm-nquads", "nq"), ("jelly", "jelly")):
                out = work / f"{src.stem}-{split}.{suffix}"
                if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
                    rsep_main(["convert", str(src), "--to", fmt, "--split", split, "-o", str(out), "-q"])
                label = {"rdfm-trig": "RDF Message Log, TriG", "rdfm-nquads": "RDF Message Log, N-Quads",
                         "jelly": "Jelly"}[fmt]
                inputs.append((f"{label}, one message per {'event' if split == 'events' else 'observation'}",
                               out, MessageLog))
        for label, path, cls in inputs:
            size = path.stat().st_size

            def run(path: Path = path, cls: type = cls) -> tuple[int, int]:
                n = q = 0
                for e in merge_streams([cls(path, STREAM_IRI)], DeadLetter()):
                    n += 1
                    q += len(e.triples)
                return n, q

            events, quads = run()
            repeat = max(1, round(20e6 / max(size, 1)))
            _, cpu = measure(lambda run=run: run()[0], runs, repeat)
            print(f"| {src.name} | {label} | {events:,} | {quads:,} | {size:,} | {cpu:.3f} | "
                  f"{events / cpu:,.0f} | {quads / cpu:,.0f} |", flush=True)
    print(f"\nload average at end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
