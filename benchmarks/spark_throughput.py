"""Spark pipeline throughput and latency vs the in-process engine (docs/benchmarks.md).

One process per master (a Spark session's master is fixed); each runs a list of cases:

    .venv/bin/python benchmarks/spark_throughput.py --query spaseq --engine inprocess
    .venv/bin/python benchmarks/spark_throughput.py --query spaseq --engine spark \\
        --master local[2] --files 20 --files-per-batch 5 --repeat 3
    .venv/bin/python benchmarks/spark_throughput.py --query spaseq --master local[2] \\
        --latency 2000 --trigger 1          # files fed at 2000 events/s, 1 s micro-batches
    .venv/bin/python benchmarks/spark_throughput.py --matrix   # the tables of the docs

The stream: JSON-lines stock prices (one event per time unit, ``--companies`` keys),
cut into ``--files`` files.

Throughput: every file is there when the job starts; timed from the job's start to the
end of input processed, after a warm-up run on a small input in the same session (JVM
start, Python workers and planning excluded); median of ``--repeat`` runs.

Latency (``--latency RATE``): a feeder writes the files one by one at RATE events/s
into the directory the streaming job reads; a result's latency is the time its
micro-batch reached the sink minus the arrival (write) of the file holding the event at
the result's time (the event that completed it). p50/p99 over results.

Breakdown: with RSEP_SPARK_TRACE set (the matrix sets it), the parse tasks
(mapInArrow) and the stateful tasks (transformWithStateInPandas) log wall-clock
intervals, CPU seconds and phases; the rest of a run's wall time is Spark's own
(scheduling, shuffle, sort by key, JVM/Python Arrow transfer, state-store commits).
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
import threading
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


def stream_lines(events: int, companies: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for k in range(events):
        c, p = rnd.randrange(companies), rnd.randrange(100)
        out.append(json.dumps({"graph": f"http://example.org/e{k}", "time": k,
                               "triples": f"<http://example.org/c{c}> "
                                          f"<http://example.org/price> {p} ."}))
    return out


def chunks(lines: list[str], files: int) -> list[list[str]]:
    per = max(1, -(-len(lines) // files))
    return [lines[i:i + per] for i in range(0, len(lines), per)]


def write_stream(d: Path, events: int, files: int, companies: int, seed: int = 7) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(chunks(stream_lines(events, companies, seed), files)):
        f = d / f"part-{i:05d}.jsonl"
        f.write_text("\n".join(part) + "\n")
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))


def inprocess(query: str, d: Path) -> dict:
    from rsep.runtime.engine import Engine
    from rsep.stream.jsonl import JsonlStreamFile
    from rsep.stream.source import DeadLetter, merge_streams

    whole = d.parent / "whole.jsonl"
    whole.write_text("".join(p.read_text() for p in sorted(d.glob("part-*"))))
    t0, c0 = time.perf_counter(), time.process_time()
    eng = Engine(time_unit_ms=60_000)
    eng.register(QUERIES[query])
    n = sum(1 for _ in eng.run(merge_streams([JsonlStreamFile(whole, STREAM)], DeadLetter())))
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"events": eng.events, "results": n, "seconds": dt, "events_per_s": eng.events / dt,
            "cpu_seconds": round(cpu, 2), "events_per_cpu_s": round(eng.events / cpu)}


def tree_cpu(root: int | None = None) -> float:
    """CPU seconds of this process and its descendants (the JVM, Spark's Python workers),
    reaped children included: a measure that load from other processes barely moves."""
    root = root or os.getpid()
    kids: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(name)] = fields
            kids.setdefault(int(fields[1]), []).append(int(name))
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(kids.get(pid, []))
        f = stats.get(pid)
        if f:
            total += sum(int(x) for x in f[11:15])  # utime stime cutime cstime
    return total / tick


def read_trace(path: str | None, t0: float, t1: float) -> list[dict]:
    if not path or not Path(path).exists():
        return []
    out = []
    for line in Path(path).read_text().splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if t0 <= r["start"] and r["end"] <= t1:
                out.append(r)
    return out


def breakdown(recs: list[dict], wall: float) -> dict:
    """Where a run's time went: Python stages (wall, summed over tasks, and CPU) and the
    rest (Spark: scheduling, shuffle, sort, Arrow transfer, state-store commits)."""
    def span(stage: str) -> float:
        """Wall time during which at least one task of the stage ran (union of intervals)."""
        iv = sorted((r["start"], r["end"]) for r in recs if r["stage"] == stage)
        total, cur_s, cur_e = 0.0, None, None
        for s, e in iv:
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    total += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        return total + ((cur_e - cur_s) if cur_e is not None else 0.0)

    out: dict = {"wall": round(wall, 2)}
    for stage in ("parse", "state"):
        rs = [r for r in recs if r["stage"] == stage]
        out[f"{stage}_span"] = round(span(stage), 2)
        out[f"{stage}_task_wall"] = round(sum(r["end"] - r["start"] for r in rs), 2)
        out[f"{stage}_cpu"] = round(sum(r["cpu"] for r in rs), 2)
    phases: dict[str, float] = {}
    for r in recs:
        for k, v in (r.get("phases") or {}).items():
            phases[k] = phases.get(k, 0.0) + v
    out["state_phases"] = {k: round(v, 2) for k, v in phases.items()}
    out["spark_other"] = round(max(0.0, wall - out["parse_span"] - out["state_span"]), 2)
    parts = {r.get("partition") for r in recs if r["stage"] == "state" and r.get("events")}
    out["state_partitions_used"] = len(parts)
    return out


class SparkBench:
    def __init__(self, master: str, buckets: int | None = None,
                 conf: dict[str, str] | None = None) -> None:
        from rsep.spark.session import get_session

        self.master = master
        self.buckets = buckets
        self.spark = get_session(master, conf=conf)
        self.tmp = Path(tempfile.mkdtemp(prefix="rsep-bench-"))
        self.trace = os.environ.get("RSEP_SPARK_TRACE")
        warm = self.tmp / "warm"
        write_stream(warm, 200, 2, 7)
        for q in QUERIES:
            self.throughput(q, warm)

    def _pipe(self, query: str, src: Path):
        from rsep.spark.pipeline import SparkPipeline

        qf = self.tmp / f"{query}.rq"
        qf.write_text(QUERIES[query])
        return SparkPipeline(self.spark, [qf], streams=[(STREAM, str(src))],
                             time_unit_ms=60_000, buckets=self.buckets)

    def throughput(self, query: str, d: Path, files_per_batch: int | None = None,
                   trigger: float | None = None) -> dict:
        from rsep.spark.pipeline import run_files

        pipe = self._pipe(query, d)
        n = 0
        durations: list[float] = []
        last = [time.perf_counter()]

        def on_batch(df, batch_id):
            nonlocal n
            n += df.filter("rtype = 'o'").count()
            now = time.perf_counter()
            durations.append(now - last[0])
            last[0] = now

        progress: list[dict] = []
        w0 = time.time()
        c0 = tree_cpu()
        t0 = time.perf_counter()
        run_files(pipe, on_batch, checkpoint=tempfile.mkdtemp(prefix="ck-", dir=self.tmp),
                  max_files_per_trigger=files_per_batch, trigger_seconds=trigger,
                  on_query=lambda q: progress.extend(q.recentProgress))
        dt = time.perf_counter() - t0
        cpu = tree_cpu() - c0
        events = sum(1 for p in d.glob("part-*") for line in p.open() if line.strip())
        b = breakdown(read_trace(self.trace, w0, time.time()), dt)
        # Spark's own per-micro-batch accounting (ms, summed over the run's batches).
        for k in ("queryPlanning", "addBatch", "triggerExecution"):
            b[f"spark_{k}"] = round(sum(p["durationMs"].get(k, 0) for p in progress) / 1000, 2)
        b["state_commit"] = round(sum(o.get("commitTimeMs", 0) for p in progress
                                      for o in p.get("stateOperators", [])) / 1000, 2)
        return {"events": events, "results": n, "seconds": dt, "events_per_s": events / dt,
                "cpu_seconds": round(cpu, 2), "events_per_cpu_s": round(events / cpu),
                "batches": len(progress),
                "batch_seconds_median": statistics.median(durations) if durations else None,
                "breakdown": b}

    def latency(self, query: str, events: int, files: int, companies: int, rate: float,
                files_per_batch: int | None = None, trigger: float | None = None) -> dict:
        """Files written at ``rate`` events/s while the streaming job runs."""
        from rsep.spark.pipeline import output_of

        d = self.tmp / f"live-{time.time_ns()}"
        d.mkdir()
        parts = chunks(stream_lines(events, companies), files)
        arrival: list[tuple[int, float]] = []  # (last event time in the file, written at)
        pipe = self._pipe(query, d)
        ck = Path(tempfile.mkdtemp(prefix="ck-", dir=self.tmp))
        control = ck / "control"
        control.mkdir()
        lat: list[float] = []
        results = 0

        def on_batch(df, batch_id):
            nonlocal results
            rows = df.filter("rtype = 'o'").select("payload").collect()
            now = time.time()
            for r in rows:
                t = output_of(r.payload).time
                came = next((a for last, a in arrival if last >= t), None)
                if came is not None:
                    lat.append(now - came)
            results += len(rows)

        trig = {"processingTime": f"{trigger} seconds"} if trigger else None
        q = pipe.start(pipe.file_records(control=str(control),
                                         max_files_per_trigger=files_per_batch),
                       on_batch, checkpoint=str(ck / "checkpoint"), trigger=trig)

        def feed():
            first = 0
            t0 = time.time()
            for i, part in enumerate(parts):
                first += len(part)
                due = t0 + first / rate
                time.sleep(max(0.0, due - time.time()))
                tmpf = d / f".part-{i:05d}.tmp"
                tmpf.write_text("\n".join(part) + "\n")
                tmpf.rename(d / f"part-{i:05d}.jsonl")  # atomic: never read half written
                arrival.append((first - 1, time.time()))

        th = threading.Thread(target=feed)
        w0 = time.time()
        th.start()
        th.join()
        # The last file's events wait for the end of input (the frontier needs a later
        # event), as in-process at the end of a file: count them only from here on.
        (control / "end").write_text("end\n")
        q.processAllAvailable()
        q.stop()
        lat.sort()
        pick = (lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))], 3)) if lat else (
            lambda p: None)
        return {"events": events, "results": results, "rate": rate,
                "latency_p50": pick(0.50), "latency_p99": pick(0.99),
                "latency_max": round(lat[-1], 3) if lat else None,
                "seconds": time.time() - w0}


def run_cases(args: argparse.Namespace) -> None:
    """One process: the cases of --cases (JSON list) or the single case of the options."""
    cases = json.loads(args.cases) if args.cases else [vars(args)]
    bench = None
    for c in cases:
        c = {**vars(args), **c}
        tmp = Path(tempfile.mkdtemp(prefix="rsep-bench-in-"))
        d = tmp / "in"
        r: dict
        if c["engine"] == "inprocess":
            write_stream(d, c["events"], c["files"], c["companies"])
            runs = [inprocess(c["query"], d) for _ in range(c["repeat"])]
        else:
            if bench is None:
                bench = SparkBench(c["master"], c.get("buckets"),
                                   dict(kv.split("=", 1) for kv in args.spark_conf))
            if c.get("latency"):
                runs = [bench.latency(c["query"], c["events"], c["files"], c["companies"],
                                      c["latency"], c.get("files_per_batch"), c.get("trigger"))]
            else:
                write_stream(d, c["events"], c["files"], c["companies"])
                runs = [bench.throughput(c["query"], d, c.get("files_per_batch"),
                                         c.get("trigger")) for _ in range(c["repeat"])]
        if "events_per_s" in runs[0]:
            med = sorted(runs, key=lambda x: x["events_per_s"])[len(runs) // 2]
            r = dict(med, runs=[round(x["events_per_s"]) for x in runs],
                     runs_per_cpu_s=[x["events_per_cpu_s"] for x in runs])
        else:
            r = runs[0]
        load = os.getloadavg()
        r.update(query=c["query"], engine=c["engine"],
                 master=c["master"] if c["engine"] == "spark" else None,
                 files=c["files"], files_per_batch=c.get("files_per_batch"),
                 trigger=c.get("trigger"), load=f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print(json.dumps(r), flush=True)
    if bench is not None:
        bench.spark.stop()


def matrix(args: argparse.Namespace) -> None:
    """The docs' tables: in-process, local[1], local[2]; both queries; micro-batch sizes,
    trigger intervals, latency under a feed."""
    base = {"events": args.events, "files": args.files, "companies": args.companies,
            "repeat": 3}
    fpb = [1, max(1, args.files // 4)]
    lat = {"events": args.events // 10, "files": 20, "latency": args.rate, "repeat": 1}
    suites = {
        "inprocess": [dict(base, query=q, engine="inprocess") for q in ("spaseq", "rspql")],
        "local[1]": [dict(base, query=q, engine="spark") for q in ("spaseq", "rspql")]
        + [dict(lat, query="spaseq", engine="spark")],
        "local[2]": [dict(base, query=q, engine="spark") for q in ("spaseq", "rspql")]
        + [dict(base, query="spaseq", engine="spark", files_per_batch=f, repeat=1) for f in fpb]
        + [dict(lat, query=q, engine="spark", trigger=t)
           for q, t in (("spaseq", None), ("spaseq", 1.0), ("spaseq", 5.0), ("rspql", None))],
    }
    trace = args.trace or str(Path(tempfile.gettempdir()) / f"rsep-trace-{os.getpid()}.jsonl")
    env = dict(os.environ, RSEP_SPARK_TRACE=trace)
    out = Path(args.out) if args.out else None
    for master, cases in suites.items():
        cmd = [sys.executable, __file__, "--master", master, "--cases", json.dumps(cases)]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
        if p.returncode != 0:
            print(json.dumps({"master": master, "error": p.stderr[-1500:]}), flush=True)
        for line in lines:
            print(line, flush=True)
            if out:
                with out.open("a") as f:
                    f.write(line + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--query", choices=sorted(QUERIES), default="spaseq")
    ap.add_argument("--engine", choices=("inprocess", "spark"), default="spark")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--companies", type=int, default=50)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--files-per-batch", type=int)
    ap.add_argument("--trigger", type=float, help="micro-batch interval, seconds")
    ap.add_argument("--buckets", type=int)
    ap.add_argument("--repeat", type=int, default=1, help="runs; the median is reported")
    ap.add_argument("--latency", type=float, metavar="RATE",
                    help="feed the files at RATE events/s and measure latency")
    ap.add_argument("--rate", type=float, default=2000.0, help="--matrix's latency feed rate")
    ap.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for the session (repeatable)")
    ap.add_argument("--cases", help=argparse.SUPPRESS)
    ap.add_argument("--matrix", action="store_true")
    ap.add_argument("--trace", help="--matrix: the RSEP_SPARK_TRACE file (default: a temp file)")
    ap.add_argument("--out", help="--matrix: also append the JSON lines to this file")
    args = ap.parse_args()
    if args.matrix:
        matrix(args)
    else:
        run_cases(args)


if __name__ == "__main__":
    main()
