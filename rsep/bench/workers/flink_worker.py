"""Apache Flink SQL MATCH_RECOGNIZE through PyFlink (own venv), local mini-cluster.

The CSV form is read by Flink's filesystem connector in streaming mode with an
event-time attribute (one time unit = 1 s) and a watermark on it; the matches go to a
CSV sink read back by the harness. Start-up = JVM, table environment and DDL; steady
state = the job from submission to its end. One task slot (parallelism 1): the
pattern runs over one unpartitioned stream.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import time
from typing import TYPE_CHECKING

sys.path.insert(0, __file__.rsplit("/", 1)[0])
if TYPE_CHECKING:  # the type checker reads common as part of rsep
    from rsep.bench.workers.common import finish, load_spec
else:
    from common import finish, load_spec


def main() -> int:
    spec = load_spec()
    from pyflink.table import EnvironmentSettings, TableEnvironment  # only in PyFlink's venv

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", "1")
    conf.set("table.exec.resource.default-parallelism", "1")
    cols = ", ".join(f"`{c}` {t}" for c, t in spec["flink_columns"])
    n = int(spec["length"])
    sink_cols = ", ".join(f"t{i + 1} BIGINT" for i in range(n))

    def tables(suffix: str, csv_path: str, outdir: str) -> None:
        shutil.rmtree(outdir, ignore_errors=True)
        env.execute_sql(f"""CREATE TABLE stocks{suffix} ({cols},
            rowtime AS TO_TIMESTAMP_LTZ(`t` * 1000, 3),
            WATERMARK FOR rowtime AS rowtime)
            WITH ('connector' = 'filesystem', 'path' = 'file://{csv_path}', 'format' = 'csv')""")
        env.execute_sql(f"""CREATE TABLE bench_out{suffix} ({sink_cols}) WITH (
            'connector' = 'filesystem', 'path' = 'file://{outdir}', 'format' = 'csv')""")

    # a job over the first 100 events: what submitting a job and starting the mini-cluster
    # cost, so that the steady state can be told apart from the fixed cost of a job
    warm_csv = spec["matches"] + ".warm.csv"
    with open(spec["csv"], encoding="utf-8") as f, open(warm_csv, "w", encoding="utf-8") as g:
        for i, line in enumerate(f):
            if i >= 100:
                break
            g.write(line)
    tables("_warm", warm_csv, spec["matches"] + ".warm.d")
    outdir = spec["matches"] + ".d"
    tables("", spec["csv"], outdir)
    ready = time.time()
    tw = time.perf_counter()
    env.execute_sql("INSERT INTO bench_out_warm " + spec["query"].replace(
        "FROM stocks ", "FROM stocks_warm ")).wait()
    warm_s = time.perf_counter() - tw
    ready += warm_s
    t0 = time.perf_counter()
    env.execute_sql(f"INSERT INTO bench_out {spec['query']}").wait()
    run_s = time.perf_counter() - t0
    with open(spec["matches"], "w", encoding="utf-8") as out:
        for part in sorted(glob.glob(os.path.join(outdir, "**", "*"), recursive=True)):
            if os.path.isfile(part) and not os.path.basename(part).startswith("."):
                with open(part, encoding="utf-8") as f:
                    for line in f:
                        if line.strip():
                            out.write(json.dumps({"events": [int(x) for x in line.split(",")]})
                                      + "\n")
    finish(spec, ready, run_s, spec["events"], stages={"job_100_events_s": warm_s},
           note="latency not measured: bounded source, results read after the job ends")
    return 0


if __name__ == "__main__":
    sys.exit(main())
