"""The pieces of shipping rsep to executors that need no cluster: the probe, the one-line
messages for a worker whose Python cannot run rsep, the CLI's refusals.
(tests/spark/test_spark_cluster.py runs all of it on a standalone cluster.)"""

from __future__ import annotations

import pytest

from rsep.spark.package import (
    SHIP_HINT,
    check_executors,
    explain_failure,
    rsep_source_hash,
    source_hash,
)


def test_the_probe_in_local_mode_finds_the_drivers_rsep(spark):
    got = check_executors(spark, shipped=None)
    assert got and all(r["missing"] == {} and r["hash"] == source_hash() for r in got)


def test_the_source_hash_reads_modules_not_builds(tmp_path):
    pkg = tmp_path / "rsep"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "g.lark").write_text("start: 'a'\n")
    h = rsep_source_hash(str(pkg))
    (pkg / "sub" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (pkg / "a.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\0")
    assert rsep_source_hash(str(pkg)) == h
    (pkg / "sub" / "g.lark").write_text("start: 'b'\n")
    assert rsep_source_hash(str(pkg)) != h


# What Spark raises (abridged from real runs on a standalone cluster of bare workers).
NO_PYTHON = """py4j.protocol.Py4JJavaError: An error occurred while calling o186.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 times, most recent failure: Lost task 0.3 in stage 0.0 (TID 6) (127.0.0.1 executor 0): java.io.IOException: Cannot run program "/home/me/rsep/.venv/bin/python3.11": error=2, No such file or directory
\tat java.base/java.lang.ProcessBuilder.start(ProcessBuilder.java:1143)"""
NO_MODULE = """[STREAMING_PYTHON_RUNNER_INITIALIZATION_FAILURE] Streaming Runner initialization failed, returned -2. Cause: Traceback (most recent call last):
  File "/opt/spark/python/lib/pyspark.zip/pyspark/sql/streaming/python_streaming_source_runner.py", line 30, in <module>
    from rsep.lang import QueryError, parse_query  # noqa: E402
ModuleNotFoundError: No module named 'pyoxigraph'"""
VERSION = """[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.12 than that in driver: 3.11, PySpark cannot run with different minor versions."""


@pytest.mark.parametrize("text, shipped, want", [
    (NO_PYTHON, False, "cannot start Python /home/me/rsep/.venv/bin/python3.11: no such file "
                       "on the worker; " + SHIP_HINT),
    (NO_PYTHON, True, "the shipped environment links to a Python that is not at that path"),
    (NO_MODULE, False, "(/usr/bin/python3) cannot import pyoxigraph (No module named "
                       "'pyoxigraph'): " + SHIP_HINT),
    (VERSION, False, "runs Python 3.12 and the driver 3.11"),
])
def test_a_failure_of_the_jobs_python_is_one_line(text, shipped, want):
    line = explain_failure(text, "/usr/bin/python3", shipped)
    assert line is not None and "\n" not in line and want in line, line


def test_other_failures_are_not_rewritten():
    assert explain_failure("java.lang.OutOfMemoryError: Java heap space", "python", False) is None


def test_ship_is_refused_where_it_cannot_apply(spark, tmp_path, capsys, monkeypatch):
    from rsep.cli.main import main

    q = tmp_path / "q.rq"
    q.write_text("SELECT * WHERE { ?s ?p ?o }")
    data = tmp_path / "s.trig"
    data.write_text("")
    args = ["run", str(q), "--stream", f"http://ex/s={data}", "--engine", "spark"]
    # a session already runs in this process (the test suite's local one)
    assert main(args + ["--ship"]) == 1
    assert "--ship needs a Spark session of its own" in capsys.readouterr().err
    assert main(args + ["--checkpoint", "hdfs:///rsep/ck"]) == 1
    assert "a URI is not supported" in capsys.readouterr().err
