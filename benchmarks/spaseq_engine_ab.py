"""SPASEQ engine alone on the target row (Query 4, window 10^4), best of N runs: for A/B
comparisons of commits, where a single run on a shared machine varies by more than a change.

Events are parsed beforehand, so only the engine is timed (CPU time of the process); the
best of N runs is the least disturbed one. Run it from a worktree of each commit:

    git worktree add /tmp/wt <commit> && cd /tmp/wt && \\
        /work/main/.venv/bin/python benchmarks/spaseq_engine_ab.py --repeat 5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_stock import STREAM_IRI, TRIPLES_PER_EVENT, generate  # noqa: E402
from spaseq_throughput import query  # noqa: E402

from rsep import Engine, parse_query  # noqa: E402
from rsep.stream.event import Event  # noqa: E402
from rsep.stream.files import StreamFile  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--file", default="/tmp/rsep_bench/stock_{n}.trig")
    ap.add_argument("--window", type=int, default=10_000)
    ap.add_argument("--strategies", nargs="+", default=["strict", "next"])
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    path = Path(a.file.format(n=a.events))
    if not path.is_file():
        generate(path, a.events)
    parsed = [e for e in StreamFile(path, STREAM_IRI) if isinstance(e, Event)]
    for strategy in a.strategies:
        text = query(3, strategy, a.window, False)
        best = float("inf")
        outs = 0
        for _ in range(a.repeat):
            eng = Engine()
            eng.register(parse_query(text), name="q")
            c0 = time.process_time()
            outs = sum(1 for _ in eng.run(parsed))
            best = min(best, time.process_time() - c0)
        n = len(parsed)
        print(f"{strategy}: {n / best:,.0f} events/s, {n * TRIPLES_PER_EVENT / best:,.0f} "
              f"triples/s, {best / n * 1e6:.1f} us/event (best of {a.repeat}), {outs} outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
