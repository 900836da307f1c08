"""The engine loop alone over a windowed bench case's events, parsed beforehand.

Reads the ``spec.json`` that ``rsep bench`` wrote for rsep's run of a windowed case
(``OUT/runs/CASE/rsep/spec.json``; its streams and graphs must still exist), parses the
events first, then times ``Engine.run`` over them (CPU seconds, best of ``--runs``) and
prints a digest of the outputs, so that two builds can be compared on the same events.
Under ``valgrind --tool=callgrind`` the loop is the inclusive count of ``Engine.run``'s
generator (docs/benchmarks.md, issue 19 round four).

    .venv/bin/python benchmarks/window_engine_loop.py OUT/runs/citybench-join/rsep/spec.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

from rsep.lang import parse_query
from rsep.runtime.engine import Engine
from rsep.stream.files import StreamFile
from rsep.stream.source import DeadLetter, merge_streams


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--events", type=int, default=None, help="the first N events only")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    with open(a.spec, encoding="utf-8") as f:
        spec = json.load(f)
    files = [StreamFile(path, iri) for iri, path in spec["streams"]]
    events = list(merge_streams(files, DeadLetter(None)))[:a.events]
    best = None
    digest = ""
    for _ in range(a.runs):
        eng = Engine()
        for iri, path in spec.get("graphs", []):
            eng.add_graph(iri, path)
        eng.register(parse_query(spec["query"]))
        out = []
        t0 = time.process_time()
        for o in eng.run(iter(events)):
            out.append((o.time, json.dumps(o.bindings, sort_keys=True)))
        dt = time.process_time() - t0
        best = dt if best is None else min(best, dt)
        digest = hashlib.sha256(repr(out).encode()).hexdigest()[:16]
    assert best is not None
    print(f"{len(events)} events, best CPU {best:.3f} s = {best / len(events) * 1e6:.1f} us/event, "
          f"{len(out)} outputs, digest {digest}")


if __name__ == "__main__":
    main()
