"""End-to-end throughput of a windowed RSP-QL query over a recorded stream.

Generates (or reuses) an SRBench-like TriG stream (benchmarks/gen_stream.py),
then replays it from the file through the same path as ``rsep run``:
StreamFile -> merge_streams -> Engine.run, with one RSP-QL query over a
[RANGE 1000 STEP 100] window (about 1000 events, 6000 triples), a FILTER and
aggregates. Prints markdown tables: totals (triples/s, events/s, peak RSS,
store rebuilds) and the time of every tenth of the stream, which stays flat
when the cost per event does not depend on the stream's length.

    python benchmarks/window_throughput.py                      # 200,000 events, 1.2M triples
    python benchmarks/window_throughput.py --events 20000       # a quick run
    python benchmarks/window_throughput.py --parse-only         # = ingest_throughput.py on this file
    python benchmarks/window_throughput.py --profile 25         # cProfile, top 25 by cumulative time
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import resource
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyoxigraph as ox

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_stream import STREAM_IRI, generate  # noqa: E402

from rsep import Engine  # noqa: E402
from rsep.sparql.store import SnapshotStore  # noqa: E402
from rsep.stream.event import Event  # noqa: E402
from rsep.stream.files import StreamFile  # noqa: E402
from rsep.stream.source import DeadLetter, merge_streams  # noqa: E402

QUERY = """\
PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
PREFIX weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#>
REGISTER RSTREAM <http://example.org/bench/hot> AS
SELECT ?sensor (MAX(?value) AS ?max) (COUNT(?obs) AS ?readings)
FROM NAMED WINDOW <http://example.org/bench/w> ON <{stream}> [RANGE {range} STEP {step}]
WHERE {{
  WINDOW <http://example.org/bench/w> {{
    ?obs om-owl:observedProperty weather:_AirTemperature ;
         om-owl:procedure ?sensor ;
         om-owl:result ?res .
    ?res om-owl:floatValue ?value .
    FILTER (?value > {threshold})
  }}
}}
GROUP BY ?sensor
ORDER BY DESC(?max) ?sensor
LIMIT 10
"""

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_mb() -> float:
    """Current resident set size (Linux /proc), in MB."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE / 1e6
    except OSError:
        return float("nan")


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / 1e6 if sys.platform == "darwin" else peak * 1024 / 1e6


def count_events(path: Path) -> int:
    """Number of events in a generated file (one generatedAtTime triple each); not timed."""
    n = 0
    tail = b""
    key = b"generatedAtTime"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            buf = tail + chunk
            n += buf.count(key)
            tail = buf[-(len(key) - 1):]
            n -= tail.count(key)  # counted again with the next chunk
    return n + tail.count(key)


def stream_file(args: argparse.Namespace) -> Path:
    path = Path(args.file) if args.file else (
        Path(tempfile.gettempdir()) / "rsep-bench" / f"sensors-{args.events}-s{args.seed}.trig")
    if args.regenerate or not path.exists():
        t0 = time.perf_counter()
        info = generate(path, args.events, seed=args.seed)
        print(f"generated {path}: {info['events']} events, {info['triples']} triples, "
              f"{info['bytes'] / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    else:
        print(f"reusing {path}", file=sys.stderr)
    return path


def table(header: list[str], rows: Iterable[list[object]]) -> str:
    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:,.2f}" if abs(v) < 100 else f"{v:,.0f}"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------ end to end


class Segments:
    """Wraps the event iterator; notes the time and RSS at every 1/n of the stream."""

    def __init__(self, events: Iterable[Event], total: int, n: int = 10) -> None:
        self.events = events
        self.marks = sorted({max(1, round(total * k / n)) for k in range(1, n + 1)})
        self.points: list[tuple[int, int, float, float, float]] = []  # events, triples, wall, cpu, rss
        self.count = 0
        self.triples = 0

    def __iter__(self) -> Iterator[Event]:
        marks = iter(self.marks)
        nxt = next(marks, None)
        self.points.append((0, 0, time.perf_counter(), time.process_time(), rss_mb()))
        for e in self.events:
            self.count += 1
            self.triples += len(e.triples)
            yield e
            if self.count == nxt:
                self.points.append((self.count, self.triples, time.perf_counter(),
                                    time.process_time(), rss_mb()))
                nxt = next(marks, None)


def end_to_end(args: argparse.Namespace, path: Path) -> int:
    total = count_events(path)
    query = QUERY.format(stream=STREAM_IRI, range=args.range, step=args.step,
                         threshold=args.threshold)
    dead = DeadLetter()
    engine = Engine()
    rt = engine.register(query)
    if args.min_garbage is not None:
        # what-if: a different rebuild threshold for the snapshot store (empty so far)
        rt.store = SnapshotStore(min_garbage=args.min_garbage)
    outputs = 0
    rebuild_at: list[int] = []
    max_live = 0
    max_garbage = 0

    prof = cProfile.Profile() if args.profile else None
    t0, c0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    seg = Segments(merge_streams([StreamFile(path, STREAM_IRI)], dead), total, args.segments)
    last_rebuilds = 0
    for _ in engine.run(seg):
        outputs += 1
        # cheap probes of the store, once per output (about 10 per evaluation)
        st = rt.store
        if st.rebuilds != last_rebuilds:
            last_rebuilds = st.rebuilds
            rebuild_at.append(seg.count)
        max_live = max(max_live, len(st))
        max_garbage = max(max_garbage, st.garbage)
    if prof:
        prof.disable()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak = peak_rss_mb()

    events, triples = seg.count, seg.triples
    if dead.count:
        print(f"warning: {dead.count} records rejected, first: {dead.items[0].message()}",
              file=sys.stderr)
    print(f"## End to end: StreamFile + merge_streams + Engine.run, "
          f"[RANGE {args.range} STEP {args.step}]"
          + (f", SnapshotStore(min_garbage={args.min_garbage})" if args.min_garbage else "") + "\n")
    print(f"File: `{path}` ({path.stat().st_size / 1e6:.1f} MB)\n")
    print(table(["metric", "value"], [
        ["events", events],
        ["triples (in event graphs)", triples],
        ["wall time (s)", round(wall, 2)],
        ["CPU time (s)", round(cpu, 2)],
        ["triples/s", round(triples / wall)],
        ["events/s", round(events / wall)],
        ["peak RSS (MB, ru_maxrss)", round(peak, 1)],
        ["evaluations", rt.evaluations],
        ["output rows", outputs],
        ["store rebuilds", rt.store.rebuilds],
        ["max live quads in the store (seen at outputs)", max_live],
        ["live quads at the end", len(rt.store)],
        ["max garbage counter (seen at outputs)", max_garbage],
        ["rejected records", dead.count],
    ]))
    print()
    rows = []
    pts = seg.points
    for k in range(1, len(pts)):
        e0, tr0, t_a, c_a, _ = pts[k - 1]
        e1, tr1, t_b, c_b, rss = pts[k]
        n = e1 - e0
        dt, dc = t_b - t_a, c_b - c_a
        rows.append([f"{k}", f"{e0:,}-{e1:,}", round(dt, 2), round(dc, 2),
                     round(dt / n * 1e6, 1) if n else 0, round(dc / n * 1e6, 1) if n else 0,
                     round(n / dt) if dt else 0, round((tr1 - tr0) / dt) if dt else 0,
                     round(rss, 1)])
    print(f"### Time per segment (1/{len(rows)} of the stream each)\n")
    print(table(["segment", "events", "wall s", "CPU s", "µs/event (wall)", "µs/event (CPU)",
                 "events/s", "triples/s", "RSS at end (MB)"], rows))
    if len(rows) >= 2:
        for col, what in ((4, "wall"), (5, "CPU")):
            per = [r[col] for r in rows[1:]]  # the first tenth includes the window filling up
            print(f"\n{what} µs/event over segments 2-{len(rows)}: min {min(per)}, "
                  f"max {max(per)}, last/second = {per[-1] / per[0]:.2f}")
    if rebuild_at:
        print(f"\nStore rebuilds happened by events {', '.join(f'{x:,}' for x in rebuild_at[:12])}"
              + (" ..." if len(rebuild_at) > 12 else ""))
    if prof:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(args.profile)
        print("\n### cProfile (cumulative)\n\n```\n" + s.getvalue().strip() + "\n```")
    return 0


# ------------------------------------------------------------------ parse only


def parse_only(args: argparse.Namespace, path: Path) -> int:
    """Reading only: the ingest benchmark (CPU time, median of 3, TriG and N-Quads) on this file."""
    from ingest_throughput import main as ingest

    return ingest([str(path), "--runs", "3"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=200_000,
                    help="events to generate (6 triples each; default 200000 = 1.2M triples)")
    ap.add_argument("--file", help="stream file to use (default: a generated file in the temp dir)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--regenerate", action="store_true", help="write the stream file even if it exists")
    ap.add_argument("--range", type=int, default=1000, help="window range in events (default 1000)")
    ap.add_argument("--step", type=int, default=100, help="window step (default 100)")
    ap.add_argument("--threshold", type=float, default=90, help="FILTER (?value > T) (default 90)")
    ap.add_argument("--segments", type=int, default=10, help="timing segments (default 10)")
    ap.add_argument("--min-garbage", type=int, metavar="N",
                    help="what-if: SnapshotStore(min_garbage=N) instead of the default store")
    ap.add_argument("--parse-only", action="store_true",
                    help="reading only: StreamFile vs pyoxigraph.parse (benchmarks/ingest_throughput.py)")
    ap.add_argument("--profile", type=int, nargs="?", const=30, default=0, metavar="N",
                    help="run under cProfile and print the top N functions by cumulative time")
    args = ap.parse_args(argv)
    path = stream_file(args)
    print(f"Python {platform.python_version()}, pyoxigraph {ox.__version__}, "
          f"{os.cpu_count()} CPUs\n")
    if args.parse_only:
        return parse_only(args, path)
    return end_to_end(args, path)


if __name__ == "__main__":
    sys.exit(main())
