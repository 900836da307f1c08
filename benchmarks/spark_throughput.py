"""Spark pipeline throughput and latency vs the in-process engine (docs/benchmarks.md).

One measurement per process (a Spark session's master is fixed):

    .venv/bin/python benchmarks/spark_throughput.py --query spaseq --engine inprocess
    .venv/bin/python benchmarks/spark_throughput.py --query spaseq --engine spark \\
        --master local[2] --files 20 --files-per-batch 5
    .venv/bin/python benchmarks/spark_throughput.py --matrix   # the table of the docs

The stream: JSON-lines stock prices (one event per time unit, ``--companies`` keys),
cut into ``--files`` files. Spark runs are timed after a warm-up run on a small input
in the same session (JVM start, Python workers and planning excluded), from the job's
start to the end of input processed; latency is each micro-batch's duration (its
files' arrival to its results in the sink callback).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES = {
    "spaseq": """PREFIX : <http://example.org/>
SELECT ?c ?p1 ?p2
WITHIN 10 MINUTES
FROM STREAM S1 <http://example.org/stocks>
WHERE {
  SEQ (A; B)
  DEFINE GPM A ON S1 { ?c :price ?p1 . FILTER(?p1 > 80) }
  DEFINE GPM B ON S1 { ?c :price ?p2 . FILTER(?p2 < ?p1) }
}
""",
    "rspql": """PREFIX : <http://example.org/>
REGISTER ISTREAM :w AS
SELECT ?c (MAX(?p) AS ?top)
FROM NAMED WINDOW :win ON :stocks [RANGE 20 STEP 5]
WHERE { WINDOW :win { ?c :price ?p } }
GROUP BY ?c
""",
}
STREAM = "http://example.org/stocks"


def write_stream(d: Path, events: int, files: int, companies: int, seed: int = 7) -> None:
    d.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(seed)
    per = max(1, events // files)
    for i in range(files):
        lines = []
        for k in range(i * per, min(events, (i + 1) * per)):
            c, p = rnd.randrange(companies), rnd.randrange(100)
            lines.append(json.dumps({"graph": f"http://example.org/e{k}", "time": k,
                                     "triples": f"<http://example.org/c{c}> "
                                                f"<http://example.org/price> {p} ."}))
        f = d / f"part-{i:05d}.jsonl"
        f.write_text("\n".join(lines) + "\n")
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))


def inprocess(query: str, d: Path) -> dict:
    from rsep.runtime.engine import Engine
    from rsep.stream.jsonl import JsonlStreamFile
    from rsep.stream.source import DeadLetter, merge_streams

    whole = d.parent / "whole.jsonl"
    whole.write_text("".join(p.read_text() for p in sorted(d.glob("part-*"))))
    t0 = time.perf_counter()
    eng = Engine(time_unit_ms=60_000)
    eng.register(QUERIES[query])
    n = sum(1 for _ in eng.run(merge_streams([JsonlStreamFile(whole, STREAM)], DeadLetter())))
    dt = time.perf_counter() - t0
    return {"events": eng.events, "results": n, "seconds": dt, "events_per_s": eng.events / dt}


def spark_run(query: str, d: Path, master: str, files_per_batch: int | None,
              trigger: float | None, buckets: int | None) -> dict:
    from rsep.spark.pipeline import SparkPipeline, run_files
    from rsep.spark.session import get_session

    spark = get_session(master)
    qf = d.parent / f"{query}.rq"
    qf.write_text(QUERIES[query])

    def once(src: Path) -> tuple[int, float, list[float]]:
        pipe = SparkPipeline(spark, [qf], streams=[(STREAM, str(src))], time_unit_ms=60_000,
                             buckets=buckets)
        n = 0
        durations: list[float] = []
        last = [time.perf_counter()]

        def on_batch(df, batch_id):
            nonlocal n
            n += df.filter("rtype = 'o'").count()
            now = time.perf_counter()
            durations.append(now - last[0])
            last[0] = now

        t0 = time.perf_counter()
        run_files(pipe, on_batch, checkpoint=tempfile.mkdtemp(prefix="rsep-bench-"),
                  max_files_per_trigger=files_per_batch, trigger_seconds=trigger)
        return n, time.perf_counter() - t0, durations

    warm = d.parent / "warm"
    write_stream(warm, 200, 2, 7)
    once(warm)
    events = sum(1 for p in d.glob("part-*") for line in p.open() if line.strip())
    n, dt, durations = once(d)
    spark.stop()
    return {"events": events, "results": n, "seconds": dt, "events_per_s": events / dt,
            "batches": len(durations),
            "batch_seconds_median": statistics.median(durations) if durations else None,
            "batch_seconds_max": max(durations) if durations else None}


def matrix(args: argparse.Namespace) -> None:
    rows = []
    me = [sys.executable, __file__, "--events", str(args.events), "--companies",
          str(args.companies), "--files", str(args.files)]
    for query in ("rspql", "spaseq"):
        cases = [["--engine", "inprocess"]]
        for master in ("local[1]", "local[2]"):
            for fpb in (None, max(1, args.files // 4)):
                c = ["--engine", "spark", "--master", master]
                if fpb:
                    c += ["--files-per-batch", str(fpb)]
                cases.append(c)
        for c in cases:
            out = subprocess.run(me + ["--query", query] + c, capture_output=True, text=True)
            line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "{}"
            r = json.loads(line) if line.startswith("{") else {"error": out.stderr[-300:]}
            r["case"] = f"{query} " + " ".join(c[1:])
            rows.append(r)
            print(json.dumps(r), flush=True)
    load = os.getloadavg()
    print(f"load average during the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--query", choices=sorted(QUERIES), default="spaseq")
    ap.add_argument("--engine", choices=("inprocess", "spark"), default="spark")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--companies", type=int, default=50)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--files-per-batch", type=int)
    ap.add_argument("--trigger", type=float)
    ap.add_argument("--buckets", type=int)
    ap.add_argument("--matrix", action="store_true")
    args = ap.parse_args()
    if args.matrix:
        matrix(args)
        return
    with tempfile.TemporaryDirectory(prefix="rsep-bench-") as tmp:
        d = Path(tmp) / "in"
        write_stream(d, args.events, args.files, args.companies)
        if args.engine == "inprocess":
            r = inprocess(args.query, d)
        else:
            r = spark_run(args.query, d, args.master, args.files_per_batch, args.trigger,
                          args.buckets)
    r.update(query=args.query, engine=args.engine,
             master=args.master if args.engine == "spark" else None)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
