"""Events/s and p99 latency through ``rsep serve`` against ``rsep run`` on the same stream
file, and the server's start-up time (docs/benchmarks.md, "rsep serve").

The stream is gen_stream.py's (one 6-triple observation per time unit). ``rsep run``'s
side is its own path in-process (StreamFile -> merge_streams -> Engine.run). The server's
side: events POSTed as JSON lines in batches of ``--batch``, results read over SSE.
Latency, on both sides, of a result at tau: from when the first event later than tau was
read (run) or its batch was POSTed (serve) to when the result was out; that event is what
tells the engine tau is over. Start-up: from starting the process to the first 200 on
/health.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rsep.runtime.engine import Engine  # noqa: E402
from rsep.stream.files import StreamFile  # noqa: E402
from rsep.stream.source import DeadLetter, merge_streams  # noqa: E402

STREAM = "http://example.org/srbench"
QUERY = """PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
REGISTER RSTREAM <http://example.org/hot> AS
SELECT ?sensor (MAX(?value) AS ?max) (COUNT(?obs) AS ?readings)
FROM NAMED WINDOW <http://example.org/w> ON <http://example.org/srbench> [RANGE 100 STEP 10]
WHERE { WINDOW <http://example.org/w> {
    ?obs om-owl:procedure ?sensor ; om-owl:result ?res . ?res om-owl:floatValue ?value .
    FILTER (?value > 60) } }
GROUP BY ?sensor ORDER BY DESC(?max) ?sensor LIMIT 5
"""


def p99(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(0.99 * len(s)))] if s else float("nan")


def bench_run(path: Path) -> dict:
    eng = Engine()
    eng.register(QUERY)
    read: list[tuple[int, float]] = []  # (event time, when read)

    def events():
        for e in merge_streams([StreamFile(path, STREAM)], DeadLetter()):
            read.append((e.time, time.perf_counter()))
            yield e

    lat, n = [], 0
    t0 = time.perf_counter()
    for o in eng.run(events()):
        now = time.perf_counter()
        n += 1
        i = _after(read, o.time)
        if i < len(read):
            lat.append(now - read[i][1])
    took = time.perf_counter() - t0
    return {"events": eng.events, "results": n, "seconds": took,
            "events_per_s": eng.events / took, "p99_ms": p99(lat) * 1000}


def _after(read: list[tuple[int, float]], tau: int) -> int:
    """Index of the first read event later than tau (times are non-decreasing)."""
    lo, hi = 0, len(read)
    while lo < hi:
        mid = (lo + hi) // 2
        if read[mid][0] <= tau:
            lo = mid + 1
        else:
            hi = mid
    return lo


def bench_serve(path: Path, batch: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from rsep.cli.main import main; "
                             "sys.exit(main())", "serve", "--port", "0"],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        url = proc.stderr.readline().split()[-1]
        client = httpx.Client(base_url=url, timeout=120)
        while True:
            try:
                if client.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.005)
        startup = time.perf_counter() - t0
        client.post("/queries", params={"name": "hot"}, content=QUERY,
                    headers={"Content-Type": "application/sparql-query"}).raise_for_status()
        # the batches, as JSON lines, prepared before the clock starts
        events = [e for e in merge_streams([StreamFile(path, STREAM)], DeadLetter())]
        lines = [json.dumps({"graph": e.graph, "time": e.time,
                             "triples": "\n".join(f"{t} ." for t in e.triples)}) for e in events]
        batches = ["\n".join(lines[i:i + batch]).encode() for i in range(0, len(lines), batch)]
        got: list[tuple[int, float]] = []
        done = threading.Event()
        ready = threading.Event()

        def read() -> None:
            with httpx.stream("GET", f"{url}/queries/hot/results", timeout=300) as r:
                ready.set()
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        d = json.loads(line[6:])
                        if "time" in d:
                            got.append((d["time"], time.perf_counter()))
                    elif line == "event: end":
                        break
            done.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(10)
        sent: list[float] = []  # when each batch was POSTed; the last: the clock call
        t1 = time.perf_counter()
        for body in batches:
            sent.append(time.perf_counter())
            client.post("/events", params={"stream": STREAM}, content=body,
                        headers={"Content-Type": "application/x-ndjson"}).raise_for_status()
        sent.append(time.perf_counter())
        client.post("/clock", json={"until": events[-1].time})
        client.delete("/queries/hot")
        done.wait(300)
        took = time.perf_counter() - t1
        times = [(e.time, 0.0) for e in events]
        # from the POST of the batch holding the first event later than tau
        lat = [at - sent[_after(times, tau) // batch] for tau, at in got]
        return {"events": len(events), "results": len(got), "seconds": took,
                "events_per_s": len(events) / took, "p99_ms": p99(lat) * 1000,
                "startup_s": startup}
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=500, help="events per POST")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    path = Path(f"/tmp/rsep-bench/sensors-{args.events}-s{args.seed}.trig")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_stream.py"), "--events",
                        str(args.events), "--seed", str(args.seed), "--out", str(path)], check=True)
    run = bench_run(path)
    srv = bench_serve(path, args.batch)
    assert run["results"] == srv["results"], (run["results"], srv["results"])
    print(f"rsep run:   {run['events']} events, {run['results']} results, "
          f"{run['events_per_s']:,.0f} events/s, p99 latency {run['p99_ms']:.1f} ms")
    print(f"rsep serve: {srv['events']} events in batches of {args.batch}, {srv['results']} "
          f"results over SSE, {srv['events_per_s']:,.0f} events/s, p99 latency "
          f"{srv['p99_ms']:.1f} ms; start-up {srv['startup_s']:.2f} s")


if __name__ == "__main__":
    main()
