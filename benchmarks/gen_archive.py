"""A large TriG archive of stock events for the Spark batch-replay benchmark (docs/benchmarks.md).

    .venv/bin/python benchmarks/gen_archive.py /tmp/rsep-archive --triples 10000000

Each event is a named graph with three triples (price, volume, exchange of one of
``--companies`` companies) plus its ``prov:generatedAtTime`` triple: four triples per
event, integer times 0, 1, 2, ... (use ``--time-unit 1m``). The events are cut into
files of ``--per-file`` events (Spark reads a file whole: an event's time triple and
graph must share a file). Deterministic for a seed; not committed (generate under /tmp).
Also writes ``query.rq``, the partitioned SPASEQ query the benchmark replays.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

TRIPLES_PER_EVENT = 4

QUERY = """PREFIX : <http://example.org/>
SELECT ?c ?p1 ?p2
WITHIN 10 MINUTES
FROM STREAM S1 <http://example.org/stocks>
WHERE {
  SEQ (A; B)
  DEFINE GPM A ON S1 { ?c :price ?p1 . FILTER(?p1 > 98) }
  DEFINE GPM B ON S1 { ?c :price ?p2 ; :exchange :x0 . FILTER(?p2 < ?p1) }
}
"""

HEAD = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--triples", type=int, default=10_000_000)
    ap.add_argument("--per-file", type=int, default=10_000, help="events per file")
    ap.add_argument("--companies", type=int, default=200)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--single", action="store_true",
                    help="also write all events to one file (the in-process reference's input)")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    d = args.out / "stream"
    d.mkdir(parents=True, exist_ok=True)
    events = -(-args.triples // TRIPLES_PER_EVENT)
    whole = (args.out / "whole.trig").open("w") if args.single else None
    if whole:
        whole.write(HEAD)
    for f0 in range(0, events, args.per_file):
        lines = []
        for i in range(f0, min(events, f0 + args.per_file)):
            c, p = rnd.randrange(args.companies), rnd.randrange(100)
            v, x = rnd.randrange(1, 10_000), rnd.randrange(3)
            lines.append(f":e{i} prov:generatedAtTime {i} . "
                         f":e{i} {{ :c{c} :price {p} ; :volume {v} ; :exchange :x{x} . }}\n")
        body = "".join(lines)
        (d / f"part-{f0 // args.per_file:06d}.trig").write_text(HEAD + body)
        if whole:
            whole.write(body)
    if whole:
        whole.close()
    (args.out / "query.rq").write_text(QUERY)
    print(f"{events} events, {events * TRIPLES_PER_EVENT} triples, "
          f"{-(-events // args.per_file)} files in {d}")


if __name__ == "__main__":
    main()
