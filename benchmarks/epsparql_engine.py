"""EP-SPARQL's engine alone on the `rsep bench epsparql-etalis` stream: the events read
beforehand, then ``--passes`` runs of `Engine.run` over them, each writing the bench worker's
JSON line per result (to /dev/null); CPU microseconds per event for each pass.

Instruction counts (steadier than time on a shared machine; start-up cancels in the
difference between two runs):

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/epsparql_engine.py b --events 5000 --passes 2
    # ... minus the same with --passes 1, divided by 5,000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from rsep.algebra.epsparql import EpSparqlQuery
from rsep.bench import epsparql_etalis as be
from rsep.epsparql.runtime import EpOutput
from rsep.lang import parse_query
from rsep.runtime.engine import Engine
from rsep.stream.files import StreamFile
from rsep.stream.source import DeadLetter, merge_streams

sys.path.insert(0, str(Path(be.__file__).parent / "workers"))
from epsparql_worker import value  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pattern", choices=sorted(be.PATTERNS))
    ap.add_argument("--policy", default="unrestricted")
    ap.add_argument("--events", type=int, default=30_000)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--data", default="/tmp/rsep-epsparql-engine", help="where the stream is generated")
    a = ap.parse_args()
    s = be.generate(Path(a.data), 100_000)
    evs = []
    for e in merge_streams([StreamFile(s.trig, be.STREAM)], DeadLetter(None)):
        evs.append(e)
        if len(evs) >= a.events:
            break
    for _ in range(a.passes):
        q = parse_query(be.query(a.pattern), "epsparql")
        assert isinstance(q, EpSparqlQuery)
        q = q.with_policy(a.policy)
        eng = Engine()
        eng.register(q, name="q")
        c0, n = time.process_time(), 0
        with open(os.devnull, "w", encoding="utf-8") as out:
            for o in eng.run(iter(evs)):
                assert isinstance(o, EpOutput)
                b = o.bindings or {}
                end = o.time if o.end is None else o.end
                out.write(json.dumps({"values": [value(b.get(v)) for v in q.select],
                                      "from": o.start, "to": end}) + "\n")
                n += 1
        us = (time.process_time() - c0) / len(evs) * 1e6
        print(f"{a.pattern} {a.policy}: {len(evs)} events, {n} results, {us:.1f} CPU us/event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
