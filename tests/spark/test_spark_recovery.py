"""A streaming job killed mid-stream (SIGKILL) resumes from its checkpoint: its file sink
then holds exactly the results of an uninterrupted run, none lost, none duplicated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from test_spark_pipeline import PARTITIONED, by_time, inprocess

from rsep.spark.pipeline import read_sink

WINDOWED = """PREFIX : <http://example.org/>
REGISTER ISTREAM :w AS
SELECT ?c (MAX(?p) AS ?top)
FROM NAMED WINDOW :win ON :stocks [RANGE 20 STEP 5]
WHERE { WINDOW :win { ?c :price ?p } }
GROUP BY ?c
"""
STOCKS = "http://example.org/stocks"


def write_part(d: Path, i: int, per_file: int) -> None:
    import random

    rnd = random.Random(i)
    lines = []
    for k in range(i * per_file, (i + 1) * per_file):
        # one to three companies an event: it goes to the bucket of each (issue 45)
        prices = [(c, rnd.randrange(100)) for c in rnd.sample(range(5), rnd.randint(1, 3))]
        lines.append(json.dumps({"graph": f"http://example.org/e{k}", "time": k,
                                 "triples": " ".join(f"<http://example.org/c{c}> "
                                                     f"<http://example.org/price> {p} ."
                                                     for c, p in prices)}))
    tmp = d.parent / f".{i}.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    # Files appear whole, with increasing modification times: the file source takes
    # new files in that order.
    os.utime(tmp, (1_700_000_000 + i, 1_700_000_000 + i))
    tmp.rename(d / f"part-{i:04d}.jsonl")


def batches_with_results(out: Path) -> int:
    return sum(1 for b in (out / "results").glob("batch=*")
               if (b / "_SUCCESS").exists() and any(
                   f.stat().st_size for f in b.glob("part-*")))


def test_kill_and_restart_from_checkpoint(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (tmp_path / "windowed.rq").write_text(WINDOWED)
    (tmp_path / "partitioned.rq").write_text(PARTITIONED)
    out, ck = tmp_path / "out", tmp_path / "ck"
    cmd = [sys.executable, "-m", "rsep.cli.main", "run", str(tmp_path / "windowed.rq"),
           str(tmp_path / "partitioned.rq"), "--stream", f"{STOCKS}={src}", "--time-unit", "1m",
           "--engine", "spark", "--master", "local[2]", "--checkpoint", str(ck),
           "--sink-dir", str(out), "-q", "-o", os.devnull]
    per_file, parts = 40, 10
    for i in range(3):
        write_part(src, i, per_file)
    job = subprocess.Popen(cmd + ["--follow", "--trigger", "0.5", "--max-files-per-batch", "1"],
                           start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 150
        i = 3
        while batches_with_results(out) < 2 and time.monotonic() < deadline:
            if i < 6:
                write_part(src, i, per_file)
                i += 1
            time.sleep(0.5)
        assert batches_with_results(out) >= 2, "the job made no progress"
        while i < 7:
            write_part(src, i, per_file)
            i += 1
        time.sleep(1.0)
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # the driver, its JVM and workers, mid-stream
        job.wait()
    for j in range(i, parts):
        write_part(src, j, per_file)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]

    got: dict[str, list[dict]] = defaultdict(list)
    for line in read_sink(out):
        d = json.loads(line)
        got[d.pop("query")].append(d)
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(p.read_text() for p in sorted(src.glob("part-*"))))
    ref = inprocess([tmp_path / "windowed.rq", tmp_path / "partitioned.rq"],
                    [(STOCKS, str(whole))], time_unit_ms=60_000)
    assert set(got) == set(ref)
    for name in ref:
        assert ref[name]
        # the same multiset of lines per evaluation (none lost, none repeated), in order
        assert by_time(got[name]) == by_time(ref[name]), name
        assert len(got[name]) == len(ref[name])
