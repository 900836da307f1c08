"""Memory of ``rsep serve`` with 20 registered queries over an hour-long replay
(docs/benchmarks.md, "rsep serve: memory over an hour of event time").

The server gets 20 queries in five dialects (RSP-QL windowed aggregates, C-SPARQL, CQELS,
SPASEQ, EP-SPARQL with a time bound), then an hour of event time of SRBench-like
observations (gen_stream.py's shape: 6 triples, one sensor of ``--sensors``) at ``--rate``
events per second, POSTed as JSON lines in batches of ``--batch``; one SSE subscriber per
query reads its results. After the batch that crosses each 10 % of the hour, and once every
query has taken in every event, the server process's RSS is read from /proc.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
S = "http://example.org/srbench"
P = ("PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>\n"
     "PREFIX weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#>\n")
OBS = ("?obs om-owl:observedProperty weather:_{prop} ; om-owl:procedure ?sensor ; "
       "om-owl:result ?res . ?res om-owl:floatValue ?value .")
PROPS = ("AirTemperature", "RelativeHumidity", "WindSpeed", "Visibility")


def queries() -> dict[str, tuple[str, str]]:
    """name -> (dialect, text): 20 queries."""
    q: dict[str, tuple[str, str]] = {}
    for i, (rng, step, agg) in enumerate([("10s", "5s", "MAX"), ("1m", "10s", "AVG"),
                                          ("5m", "1m", "COUNT"), ("30s", "30s", "MIN"),
                                          ("2m", "20s", "SUM"), ("15m", "5m", "MAX")]):
        prop = PROPS[i % 4]
        q[f"rspql{i}"] = ("rspql", P + f"REGISTER RSTREAM <http://example.org/q/rspql{i}> AS\n"
                          f"SELECT ?sensor ({agg}(?value) AS ?x)\n"
                          f"FROM NAMED WINDOW <http://example.org/w> ON <{S}> [RANGE {rng} STEP {step}]\n"
                          "WHERE { WINDOW <http://example.org/w> { " + OBS.format(prop=prop)
                          + " } } GROUP BY ?sensor ORDER BY DESC(?x) LIMIT 5")
    for i, (rng, step) in enumerate([("30s", "10s"), ("1m", "30s"), ("10m", "1m"), ("20s", "5s")]):
        prop = PROPS[i % 4]
        q[f"csparql{i}"] = ("csparql", P + f"REGISTER QUERY csparql{i} AS\n"
                            "SELECT ?sensor (COUNT(?obs) AS ?n) (MAX(?value) AS ?max)\n"
                            f"FROM STREAM <{S}> [RANGE {rng} STEP {step}]\n"
                            "WHERE { " + OBS.format(prop=prop) + " } GROUP BY ?sensor")
    for i, (rng, limit) in enumerate([("10s", 90), ("30s", 95), ("1m", 98), ("5s", 80)]):
        prop = PROPS[i % 4]
        q[f"cqels{i}"] = ("cqels", P + "SELECT ?sensor ?value WHERE { STREAM <" + S
                          + f"> [RANGE {rng}] {{ " + OBS.format(prop=prop)
                          + f" }} FILTER (?value > {limit}) }}")
    for i, within in enumerate(["1 MINUTES", "5 MINUTES", "30 SECONDS"]):
        q[f"spaseq{i}"] = ("spaseq", P + f"SELECT ?sensor WITHIN {within} FROM STREAM S1 <{S}> "
                           "WHERE { SEQ (A; B) "
                           "DEFINE GPM A ON S1 { ?o1 om-owl:procedure ?sensor ; om-owl:result ?r1 . "
                           "?r1 om-owl:floatValue ?v1 . FILTER (?v1 > 105) } "
                           "DEFINE GPM B ON S1 { ?o2 om-owl:procedure ?sensor ; om-owl:result ?r2 . "
                           "?r2 om-owl:floatValue ?v2 . FILTER (?v2 < 22) } }")
    # the replay's timeline is abstract (ms, --time-unit 1ms): getDURATION() is a number
    for i, bound in enumerate([30_000, 120_000, 10_000]):
        q[f"epsparql{i}"] = ("epsparql", P + "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
                             "SELECT ?sensor WHERE\n"
                             "{ ?o1 om-owl:procedure ?sensor ; om-owl:result ?r1 . ?r1 om-owl:floatValue ?v1 }\n"
                             "SEQ { ?o2 om-owl:procedure ?sensor ; om-owl:result ?r2 . ?r2 om-owl:floatValue ?v2 }\n"
                             f"FILTER (?v1 > 108 && ?v2 < 6 && getDURATION() < {bound})")
    assert len(q) == 20
    return q


def events(seconds: int, rate: float, sensors: int, seed: int) -> list[str]:
    """JSON lines: one observation each, times in ms (abstract, --time-unit 1ms)."""
    rng = random.Random(seed)
    out = []
    n = int(seconds * rate)
    for i in range(n):
        t = int(i * 1000 / rate)
        prop = PROPS[rng.randrange(4)]
        s = f"<http://knoesis.wright.edu/ssw/System_C{rng.randrange(sensors):04d}>"
        obs, res = f"<http://example.org/obs/{i}>", f"<http://example.org/res/{i}>"
        om = "http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#"
        triples = (f"{obs} <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{om}Observation> .\n"
                   f"{obs} <{om}observedProperty> <http://knoesis.wright.edu/ssw/ont/weather.owl#_{prop}> .\n"
                   f"{obs} <{om}procedure> {s} .\n{obs} <{om}result> {res} .\n"
                   f"{obs} <{om}samplingTime> <http://example.org/instant/{t}> .\n"
                   f'{res} <{om}floatValue> "{rng.uniform(0, 110):.1f}"^^<http://www.w3.org/2001/XMLSchema#double> .')
        out.append(json.dumps({"graph": f"http://example.org/event/{i}", "time": t, "triples": triples}))
    return out


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=3600, help="event time replayed")
    ap.add_argument("--rate", type=float, default=5, help="events per second of event time")
    ap.add_argument("--batch", type=int, default=500, help="events per POST")
    ap.add_argument("--sensors", type=int, default=50)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--serve-arg", action="append", default=[], help="extra rsep serve option")
    args = ap.parse_args()
    lines = events(args.seconds, args.rate, args.sensors, args.seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from rsep.cli.main import main; "
                             "sys.exit(main())", "serve", "--port", "0", "--time-unit", "1ms",
                             *args.serve_arg], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        url = proc.stderr.readline().split()[-1]
        client = httpx.Client(base_url=url, timeout=600)
        for name, (dialect, text) in queries().items():
            r = client.post("/queries", params={"name": name, "dialect": dialect}, content=text,
                            headers={"Content-Type": "application/sparql-query"})
            assert r.status_code == 201, (name, r.text)
        received = {n: 0 for n in queries()}

        def read(name: str) -> None:
            try:
                with httpx.stream("GET", f"{url}/queries/{name}/results", timeout=None) as r:
                    for line in r.iter_lines():
                        if line == "event: result":
                            received[name] += 1
            except httpx.HTTPError:
                return  # the server was stopped

        readers = [threading.Thread(target=read, args=(n,), daemon=True) for n in received]
        for t in readers:
            t.start()
        time.sleep(0.5)
        rows = [(0, 0, rss_kib(proc.pid), 0.0)]
        mark = 1
        t0 = time.perf_counter()
        for i in range(0, len(lines), args.batch):
            body = "\n".join(lines[i:i + args.batch]).encode()
            r = client.post("/events", params={"stream": S}, content=body,
                            headers={"Content-Type": "application/x-ndjson"})
            assert r.json()["rejected"] == 0, r.text
            done = min(i + args.batch, len(lines))
            while mark <= 10 and done * 10 >= mark * len(lines):
                while any(q["pending_events"] for q in client.get("/queries").json()):
                    time.sleep(0.1)
                rows.append((mark * 10, done, rss_kib(proc.pid), time.perf_counter() - t0))
                print(f"{mark * 10:3d}%  {done:6d} events  RSS {rows[-1][2] / 1024:7.1f} MiB  "
                      f"{rows[-1][3]:6.0f} s", flush=True)
                mark += 1
        stats = client.get("/queries").json()
        failed = [q["name"] for q in stats if q["status"] != "running"]
        results = sum(q["results_out"] for q in stats)
        state = {q["name"]: q["state_triples"] for q in stats}
        print(f"{len(lines)} events, {results} results ({sum(received.values())} read over "
              f"SSE), failed: {failed or 'none'}; "
              f"window triples at the end: {state}")
        print("| replayed | events | RSS (MiB) | wall (s) |\n|---|---|---|---|")
        for pct, n, kib, wall in rows:
            print(f"| {pct}% | {n:,} | {kib / 1024:.1f} | {wall:.0f} |")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
