"""rsep in its own process: the production engine (``local``) or a reference evaluator.

Input is read from the TriG files with StreamFile + merge_streams, as ``rsep run`` does.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import finish, load_spec  # noqa: E402


def main() -> int:
    spec = load_spec()
    from rsep.lang import parse_query
    from rsep.runtime.engine import Engine
    from rsep.stream.files import StreamFile
    from rsep.stream.source import DeadLetter, merge_streams

    engine_kind = spec.get("engine", "local")
    files = [StreamFile(path, iri) for iri, path in spec["streams"]]
    dead = DeadLetter(None)
    out = open(spec["matches"], "w", encoding="utf-8")
    if engine_kind == "reference":
        return reference(spec, files, dead, out)
    if engine_kind == "spark":
        return spark(spec, out)
    eng = Engine()
    for iri, path in spec.get("graphs", []):
        eng.add_graph(iri, path)
    eng.register(parse_query(spec["query"]))
    ready = time.time()
    t0 = time.perf_counter()
    last = [t0]
    n = [0]
    read = [0.0]  # time inside the reader (TriG parsing, merging): between resume and yield

    def events():
        it = iter(merge_streams(files, dead))
        while True:
            a = time.perf_counter()
            e = next(it, None)
            b = time.perf_counter()
            read[0] += b - a
            if e is None:
                return
            n[0] += 1
            last[0] = b
            yield e

    lat: list[float] = []
    windows: dict[int, list] = defaultdict(list)
    seen_time = None
    for o in eng.run(events()):
        now = time.perf_counter()
        if spec["kind"] == "cep":
            lat.append((now - last[0]) * 1000)
            out.write(json.dumps({"events": [t for _, _, t in o.events]}) + "\n")
        else:
            if o.time != seen_time:  # one latency per evaluation: its first output
                lat.append((now - last[0]) * 1000)
                seen_time = o.time
            windows[o.time].append(o.bindings)
    run_s = time.perf_counter() - t0
    for t in sorted(windows):
        out.write(json.dumps({"window": t, "rows": windows[t]}) + "\n")
    out.close()
    finish(spec, ready, run_s, n[0], latencies=lat,
           stages={"read_s": read[0], "engine_s": run_s - read[0]}, note=f"{dead.count} rejected" if dead.count else "")
    return 0


def spark(spec, out) -> int:
    """``rsep run --engine spark``: timed as a whole (start-up is inside the command)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        qf, of = f"{d}/query.rq", f"{d}/out.jsonl"
        with open(qf, "w", encoding="utf-8") as f:
            f.write(spec["query"])
        cmd = [sys.executable, "-m", "rsep.cli.main", "run", "--engine", "spark", qf,
               "--format", "jsonl", "-o", of, "-q"]
        for iri, path in spec["streams"]:
            cmd += ["--stream", f"{iri}={path}"]
        for iri, path in spec.get("graphs", []):
            cmd += ["--graph", f"{iri}={path}"]
        ready = time.time()
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        run_s = time.perf_counter() - t0
        windows: dict = defaultdict(list)
        n_out = 0
        with open(of, encoding="utf-8") as f:
            for line in f:
                o = json.loads(line)
                n_out += 1
                if spec["kind"] == "cep":
                    out.write(json.dumps({"span": [o["start"], o["time"]]}) + "\n")
                else:
                    windows[o["time"]].append(o.get("bindings", {}))
        for t in sorted(windows):
            out.write(json.dumps({"window": t, "rows": windows[t]}) + "\n")
    out.close()
    events = sum(1 for iri, path in spec["streams"] for line in open(path, encoding="utf-8")
                 if "generatedAtTime" in line)
    finish(spec, ready, run_s, events, note="rsep run --engine spark, timed end to end")
    return 0


def reference(spec, files, dead, out) -> int:
    """002 Defs. 7-16 transcribed (rsep.cep.spaseq_reference): needs every event in memory."""
    from rsep.cep.spaseq_reference import ReferenceEvaluator
    from rsep.lang import parse_query
    from rsep.runtime.engine import Engine
    from rsep.stream.source import merge_streams

    q = parse_query(spec["query"])
    graphs = {}
    if spec.get("graphs"):
        eng = Engine()
        for iri, path in spec["graphs"]:
            eng.add_graph(iri, path)
        graphs = dict(eng.graphs)
    ready = time.time()
    t0 = time.perf_counter()
    events = list(merge_streams(files, dead))
    t_read = time.perf_counter() - t0
    ref = ReferenceEvaluator(q, events, graphs)
    start = events[0].time if events else 0
    matches = ref.evaluate(start, spec.get("window"))
    run_s = time.perf_counter() - t0
    for m in matches:
        out.write(json.dumps({"events": [t for t, _ in m.steps]}) + "\n")
    out.close()
    finish(spec, ready, run_s, len(events), stages={"read_s": t_read, "evaluate_s": run_s - t_read})
    return 0


if __name__ == "__main__":
    sys.exit(main())
