"""rsep in its own process: the production engine (``local``) or a reference evaluator.

Input is read from the TriG files with StreamFile + merge_streams, as ``rsep run`` does; a
windowed query or a SPASEQ chain the native path takes (rsep.windows.native,
rsep.spaseq.native: the same planners and refusals as ``rsep run``'s, the same
RSEP_NATIVE=0 and RSEP_PURE=1) runs on it, as ``rsep run`` runs it, and falls back to the
engine where ``rsep run`` would. The result's note says
which path ran (``path: native``, or ``path: today's (why not native)``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from types import ModuleType
from typing import TYPE_CHECKING, cast

sys.path.insert(0, __file__.rsplit("/", 1)[0])
if TYPE_CHECKING:  # the type checker reads common as part of rsep
    from rsep.bench.workers.common import finish, load_spec
    from rsep.spaseq.runtime import MatchOutput
else:
    from common import finish, load_spec

from rsep.algebra.spaseq import SpaseqQuery
from rsep.lang import parse_query
from rsep.runtime.engine import Engine
from rsep.runtime.stages import StageClock
from rsep.spaseq import native as spaseq_native
from rsep.spaseq.reference import ReferenceEvaluator
from rsep.stream.files import StreamFile
from rsep.stream.source import DeadLetter, merge_streams
from rsep.windows import native


def main() -> int:
    spec = load_spec()
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
    # the native path of the workload's kind: a window's, a SPASEQ chain's
    path = {"window": native, "cep": spaseq_native}.get(spec["kind"])
    why = path.refusal(eng.queries, files) if path is not None else "not windowed nor SPASEQ"
    joins = getattr(getattr(eng.queries[0], "native", None), "join", None) is not None
    if why is None and spec.get("graphs") and not joins:
        why = "--graph given"  # (as rsep run refuses it: a join of windows reads the graphs)
    ready = time.time()
    t0 = time.perf_counter()
    if why is None:
        assert path is not None  # (a refusal otherwise)
        got = _native(spec, eng, files, out, path)
        if not got.refused:
            return 0
        why = got.refused  # (its time is the run's, as rsep run's fallback pays it)
    path_note = f"path: today's ({why})"
    clock = None
    if spec.get("stage_times"):
        # a run of its own: timing every stage costs a few per cent
        clock = StageClock()
        clock.instrument(eng)
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
    written = 0.0
    for o in eng.run(events()):
        now = time.perf_counter()
        if spec["kind"] == "cep":
            lat.append((now - last[0]) * 1000)
            m = cast("MatchOutput", o)  # a "cep" workload's query is SPASEQ's
            out.write(json.dumps({"events": [t for _, _, t in m.events]}) + "\n")
        else:
            if o.time != seen_time:  # one latency per evaluation: its first output
                lat.append((now - last[0]) * 1000)
                seen_time = o.time
            windows[o.time].append(o.bindings)
        written += time.perf_counter() - now
    _write_windows(out, windows)
    run_s = time.perf_counter() - t0
    if clock is not None:
        clock.seconds["parse"] += read[0]
        clock.seconds["output"] += written
        stages = clock.report(run_s)
    else:
        stages = {"read_s": read[0], "engine_s": run_s - read[0]}
    finish(spec, ready, run_s, n[0], latencies=lat, stages=stages,
           note=path_note + (f"; {dead.count} rejected" if dead.count else ""))
    return 0


def _native(spec: dict, eng: Engine, files: list[StreamFile], out,
            path: ModuleType) -> native.Outcome | spaseq_native.Outcome:
    """The run on the native path ``path`` (rsep.windows.native or rsep.spaseq.native), as
    ``rsep run --format jsonl`` runs it (rsep.cli.run's _native_run), its rows then
    rewritten per window for the harness (after the timed part: not what rsep run does); a
    SPASEQ chain's matches written as their events' times, as the engine's are below. On a
    refusal nothing is written and nothing reported."""
    ready = time.time()
    t0 = time.perf_counter()
    rt = eng.queries[0]
    plan = rt.native  # type: ignore[attr-defined]
    assert isinstance(plan, path.NativePlan)  # (path.refusal's)
    tmp = spec["matches"] + ".native.jsonl"
    f = files[0]
    cep = spec["kind"] == "cep"
    if getattr(plan, "join", None) is not None:
        got = path.run_join(plan, rt.query, [(s.stream, str(s.path)) for s in files],  # type: ignore[attr-defined]
                            eng.graphs, f.time.point, f.max_record, eng.time_unit_ms,
                            eng.limits.max_window_triples, eng.limits.max_results, tmp, "jsonl")
    else:
        got = path.run(plan, rt.query, str(f.path), f.time.point, f.max_record,  # type: ignore[attr-defined]
                       eng.time_unit_ms, eng.limits.max_window_triples, eng.limits.max_results,
                       tmp, "events" if cep else "jsonl")
    run_s = time.perf_counter() - t0
    steady_end = time.time()
    if got.refused:
        if os.path.exists(tmp):
            os.remove(tmp)
        return got
    if cep:
        with open(tmp, encoding="utf-8") as rows:
            out.writelines(rows)  # (the engine's json.dumps({"events": ...}) lines, alike)
        out.close()
        os.remove(tmp)
        finish(spec, ready, run_s, got.events, steady_end=steady_end,
               stages={"read_s": got.read_s, "engine_s": run_s - got.read_s},
               note=f"path: native ({got.evaluations} instants, {got.rows} matches)")
        return got
    windows: dict[int, list] = defaultdict(list)
    with open(tmp, encoding="utf-8") as rows:
        for line in rows:
            d = json.loads(line)
            windows[d["time"]].append(d["bindings"])
    os.remove(tmp)
    _write_windows(out, windows)
    finish(spec, ready, run_s, got.events, steady_end=steady_end,
           stages={"read_s": got.read_s, "engine_s": run_s - got.read_s},
           note=f"path: native ({got.evaluations} evaluations, {got.rows} rows)")
    return got


def spark(spec, out) -> int:
    """The Spark pipeline (rsep.spark) on ``spec["master"]``, as ``rsep run --engine spark
    --batch`` runs it. The stream is cut into files of ``per_file`` events (Spark reads a
    file whole, in one task). A job over the first file comes first: the session's JVM,
    Python workers and planning are start-up; the timed job is the replay of every file."""
    # Spark only for --engine spark: a local run's worker (timed, its RSS measured) loads none of it
    from rsep.spark.pipeline import SparkPipeline, collect_outputs, run_files
    from rsep.spark.session import get_session

    per_file = int(spec.get("per_file", 2000))
    with tempfile.TemporaryDirectory() as d:
        streams: list[tuple[str, str]] = []
        events = 0
        for iri, path in spec["streams"]:
            sd = os.path.join(d, str(len(streams)))
            os.makedirs(sd)
            events += _cut(path, sd, per_file)
            streams.append((iri, sd))
        spark = get_session(spec["master"], conf={"spark.driver.memory": "4g"})
        try:
            def job(sources) -> list:
                pipe = SparkPipeline(spark, [(spec["query"], "bench.rq")], streams=sources,
                                     graphs=spec.get("graphs", []))
                got: list = []
                run_files(pipe, lambda df, _: got.extend(collect_outputs(df)), batch=True)
                return got

            w0 = time.perf_counter()
            job([(iri, os.path.join(sd, "part-000000.trig")) for iri, sd in streams])
            warm_s = time.perf_counter() - w0
            ready = time.time()
            t0 = time.perf_counter()
            outs = job(streams)
            run_s = time.perf_counter() - t0
        finally:
            spark.stop()
    windows: dict = defaultdict(list)
    for o in outs:
        if spec["kind"] == "cep":
            out.write(json.dumps({"events": [t for _, _, t in o.events]}) + "\n")
        else:
            windows[o.time].append(o.bindings)
    _write_windows(out, windows)
    finish(spec, ready, run_s, events, stages={"job_first_file_s": warm_s},
           note=f"Spark {spec['master']} batch replay of {per_file}-event files")
    return 0


def _write_windows(out, windows: dict) -> None:
    """Per-window result rows, in window order; closes ``out``."""
    for t in sorted(windows):
        out.write(json.dumps({"window": t, "rows": windows[t]}) + "\n")
    out.close()


def _cut(path: str, directory: str, per_file: int) -> int:
    """A generated stream (one line per time triple, one per graph) as files of
    ``per_file`` events, each with the stream's prefixes; the number of events."""
    head: list[str] = []
    part, n = 0, 0
    body: list[str] = []

    def flush() -> None:
        nonlocal part, body
        with open(os.path.join(directory, f"part-{part:06d}.trig"), "w", encoding="utf-8") as f:
            f.writelines(head + body)
        part, body = part + 1, []

    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith(("@prefix", "PREFIX", "@base", "BASE")):
                head.append(line)
                continue
            if "generatedAtTime" in line:
                if n and n % per_file == 0:
                    flush()
                n += 1
            body.append(line)
    if body:
        flush()
    return n


def reference(spec, files, dead, out) -> int:
    """002 Defs. 7-16 transcribed (rsep.spaseq.reference): needs every event in memory."""
    q = parse_query(spec["query"])
    assert isinstance(q, SpaseqQuery), "the reference evaluator runs SPASEQ queries"
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
