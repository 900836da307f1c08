"""rsep running one EP-SPARQL SELECT query under a policy, as ``rsep run --dialect
epsparql --policy P`` does: on the native path when its planner takes the query
(rsep.epsparql.native: the same planner and refusals as ``rsep run``'s), else the stream
read from its TriG file (StreamFile) into the engine; each complex event written as its
values (integers by value, IRIs as <...>) and interval. The result's note says which path
ran (``path: native``, or ``path: today's (why not native)``)."""

from __future__ import annotations

import itertools
import json
import re
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:  # the type checker reads common as part of rsep
    from rsep.bench.workers.common import finish, load_spec
else:
    from common import finish, load_spec

from rsep.algebra.epsparql import EpSparqlQuery
from rsep.epsparql import native
from rsep.epsparql.runtime import EpOutput
from rsep.lang import parse_query
from rsep.runtime.engine import Engine
from rsep.stream import native as native_core
from rsep.stream.files import StreamFile
from rsep.stream.source import DeadLetter, merge_streams

_INT = re.compile(r'"([+-]?\d+)"\^\^<http://www.w3.org/2001/XMLSchema#integer>')


def value(v: object) -> object:
    """A bound term as ETALIS's driver writes it: integers by value, others as text."""
    if v is None:
        return None
    s = str(v)
    m = _INT.fullmatch(s)
    return int(m.group(1)) if m else s


def _cpu() -> float:
    """User + system CPU seconds of this process (all threads), as the ETALIS driver counts
    (process_time: os.times counts in 10 ms ticks, too coarse beside the reading pass's)."""
    return time.process_time()


def main() -> int:
    spec = load_spec()
    q = parse_query(spec["query"], "epsparql")
    assert isinstance(q, EpSparqlQuery)
    q = q.with_policy(spec["policy"])
    eng = Engine()
    eng.register(q, name="q")
    why = native.refusal(eng.queries, [StreamFile(path, iri) for iri, path in spec["streams"]])
    if why is None:
        got = _native(spec, eng)
        if not got.refused:
            return 0
        why = got.refused
    # the reading timed in a pass of its own (per-event clocks inside the run would cost
    # more than a short event's engine work): ETALIS's counterpart is loading its facts.
    # A first few events are read untimed before it: the first reading's one-time costs
    # (imports done on first use, without bytecode a module compiled) were counted as
    # reading, and on a 300-event stream came to more than the whole run's reading
    next(itertools.islice(merge_streams([StreamFile(path, iri) for iri, path in spec["streams"]],
                                        DeadLetter(None)), 1000, 1000), None)
    r0, c0 = time.perf_counter(), time.process_time()
    n = sum(1 for _ in merge_streams([StreamFile(path, iri) for iri, path in spec["streams"]],
                                     DeadLetter(None)))
    read = (time.perf_counter() - r0, time.process_time() - c0)
    files = [StreamFile(path, iri) for iri, path in spec["streams"]]
    dead = DeadLetter(None)

    ready = time.time()
    cpu0 = _cpu()
    t0 = time.perf_counter()
    with open(spec["matches"], "w", encoding="utf-8") as out:
        for o in eng.run(merge_streams(files, dead)):
            assert isinstance(o, EpOutput)
            b = o.bindings or {}
            vals = [value(b.get(v)) for v in q.select]
            end = o.time if o.end is None else o.end
            out.write(json.dumps({"values": vals, "from": o.start, "to": end}) + "\n")
    run_s = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    # cpu_s includes the reading; read_cpu_s is the reading pass's (before ready)
    finish(spec, ready, run_s, n, stages={"startup_cpu_s": cpu0 - read[1], "cpu_s": cpu,
                                        "read_s": read[0], "read_cpu_s": read[1],
                                        "engine_s": run_s - read[0]},
           note=f"path: today's ({why})" + (f"; {dead.count} rejected" if dead.count else ""))
    return 0


def _native(spec: dict, eng: Engine) -> native.Outcome:
    """The run on the native path, as ``rsep run`` runs it, each complex event written as
    the engine's are below (``values``). The reading is timed in a pass of its own before
    "ready", as below (ETALIS's counterpart is loading its facts); the run reads the file
    again. On a refusal nothing is kept and nothing reported."""
    rt = eng.queries[0]
    plan = rt.native  # type: ignore[attr-defined]
    assert isinstance(plan, native.NativePlan)  # (native.refusal's)
    f = StreamFile(spec["streams"][0][1], spec["streams"][0][0])
    r0, c0 = time.perf_counter(), time.process_time()
    ev, why, _ = native_core.read(str(f.path), f.time.point, f.max_record)
    read = (time.perf_counter() - r0, time.process_time() - c0)
    if ev is None:
        return native.Outcome(why)
    del ev
    ready = time.time()
    cpu0 = _cpu()
    t0 = time.perf_counter()
    got = native.run(plan, rt.query, str(f.path), f.time.point, f.max_record,  # type: ignore[attr-defined]
                     eng.time_unit_ms, eng.limits.max_window_triples, eng.limits.max_results,
                     spec["matches"], "values")
    run_s = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    if got.refused:
        open(spec["matches"], "w").close()  # (what it wrote is not kept)
        return got
    finish(spec, ready, run_s, got.events, stages={"startup_cpu_s": cpu0 - read[1], "cpu_s": cpu,
                                                   "read_s": read[0], "read_cpu_s": read[1],
                                                   "engine_s": run_s - read[0]},
           note=f"path: native ({got.evaluations} instants, {got.rows} complex events)")
    return got


if __name__ == "__main__":
    sys.exit(main())
