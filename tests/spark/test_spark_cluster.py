"""rsep on a real Spark cluster: a standalone master and two one-core workers on 127.0.0.1,
whose executors find no rsep, no virtual environment and no packages in their Python
(tests/spark_cluster.py), so a job runs only if rsep is shipped (``--ship``, the
venv-pack archive of rsep.spark.package, built once and cached).

The CLI is the driver (a process of its own, as a user runs it). The same differential
tests as in local mode, evaluation time by evaluation time: a windowed RSP-QL query over
SRBench; a windowed RSP-QL and a partitioned SPASEQ query together while an executor is
killed with SIGKILL mid-stream and then a whole worker; and the driver killed and
restarted from its checkpoint: the file sink (and the printed output) end with exactly the
results of an uninterrupted run. Each cluster job costs a minute or more, so one job
carries several checks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from spark_cluster import Cluster, can_isolate
from test_spark_pipeline import PARTITIONED, SR, SRBENCH, by_time, inprocess
from test_spark_recovery import STOCKS, WINDOWED, batches_with_results, write_part

from rsep.spark.pipeline import read_sink
from rsep.testing.snippets import ROOT

pytestmark = pytest.mark.skipif(can_isolate() is not None,
                                reason=f"a cluster of bare workers: {can_isolate()}")


@pytest.fixture(scope="module")
def archive():
    """The archive --ship passes (built once per source, then found in the cache)."""
    from rsep.spark.package import ensure_archive

    return ensure_archive()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, archive):
    c = Cluster(tmp_path_factory.mktemp("cluster"), workers=2)
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def healthy(cluster):
    """Both workers up before each test (a test may have killed one)."""
    for i, w in enumerate(cluster.workers):
        if w is None or w.poll() is not None:
            cluster.start_worker(i)
    cluster.wait_workers(len(cluster.workers))
    return cluster


def driver_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver too: every connection on loopback
    return env


def rsep(*args: str) -> list[str]:
    return [sys.executable, "-m", "rsep.cli.main", "run", *args]


def run(cmd: list[str], timeout: float = 240, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**driver_env(), **env}, start_new_session=True)


def driver_log(job: subprocess.Popen) -> str:
    """The Spark log of a CLI run (rsep-spark-PID.log)."""
    import tempfile

    log = Path(tempfile.gettempdir()) / f"rsep-spark-{job.pid}.log"
    return log.read_text(errors="replace") if log.exists() else ""


def jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x]


def test_the_archive_is_built_once_with_the_compiled_build(archive):
    import tarfile

    from rsep.native import compiled
    from rsep.spark.package import base_python, ensure_archive

    again = ensure_archive()  # from the cache, not rebuilt
    assert (again.path, again.built) == (archive.path, False) and again.seconds < 5
    assert archive.python == base_python() and archive.size < 200 * 2**20
    assert archive.compiled == sorted(compiled())  # what the driver runs compiled
    with tarfile.open(archive.path) as t:
        names = t.getnames()
    site = "lib/python3.11/site-packages/"
    assert any(n.startswith(site + "pyoxigraph/") for n in names)
    assert not any(n.startswith(site + "pyspark/") for n in names)  # the Spark home's
    assert sum(n.startswith(site + "rsep/") and n.endswith(".so") for n in names) == \
        len(archive.compiled)
    assert any(n.startswith(site + "rsep-0") and n.endswith(".dist-info/WHEEL")
               for n in names)  # installed from its wheel


def one_line(stderr: str) -> str:
    """The CLI's message: one line, no traceback (warnings of a stale compiled build, while
    rsep is being edited, aside)."""
    assert "Traceback" not in stderr, stderr
    lines = [x for x in stderr.splitlines() if x.startswith("rsep: ") and "UserWarning" not in x]
    assert len(lines) == 1, stderr
    return lines[0]


def test_a_bare_worker_says_what_is_missing(healthy, tmp_path):
    """Without --ship: one line saying what the executors lack and how to ship it."""
    args = [str(ROOT / "examples" / "srbench-hot.rq"), "--stream", f"{SR}={SRBENCH}",
            "--engine", "spark", "--master", healthy.url, "-o", str(tmp_path / "out")]
    # the driver's own Python: its path does not exist on the workers
    p = run(rsep(*args))
    assert p.returncode == 1, p.stderr[-2000:]
    line = one_line(p.stderr)
    assert f"cannot start Python {sys.executable}: no such file on the worker" in line, line
    assert "--ship" in line
    # a Python that exists there but has nothing installed (the case)
    p = run(rsep(*args), PYSPARK_PYTHON=os.path.realpath(sys._base_executable))
    assert p.returncode == 1, p.stderr[-2000:]
    line = one_line(p.stderr)
    assert "cannot import" in line and "rsep" in line and "--ship" in line, line


def test_windowed_rspql_on_the_cluster(healthy, tmp_path):
    q = ROOT / "examples" / "srbench-hot.rq"
    out = tmp_path / "out.jsonl"
    t0 = time.monotonic()
    p = run(rsep(str(q), "--stream", f"{SR}={SRBENCH}", "--engine", "spark",
                 "--master", healthy.url, "--ship", "--spark-conf",
                 "spark.sql.shuffle.partitions=2", "-o", str(out)))
    assert p.returncode == 0, p.stderr[-3000:]
    print(f"srbench-hot on the cluster with --ship: {time.monotonic() - t0:.1f} s")
    (ref,) = inprocess([q], [(SR, str(SRBENCH))]).values()
    assert ref
    assert by_time(jsonl(out)) == by_time(ref)


# ---------------------------------------------------------------- failures

PER_FILE, PARTS = 40, 12


def streaming_job(tmp_path: Path, url: str, *extra: str) -> tuple[list[str], Path, Path]:
    (tmp_path / "windowed.rq").write_text(WINDOWED)
    (tmp_path / "partitioned.rq").write_text(PARTITIONED)
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir(exist_ok=True)
    cmd = rsep(str(tmp_path / "windowed.rq"), str(tmp_path / "partitioned.rq"),
               "--stream", f"{STOCKS}={src}", "--time-unit", "1m", "--engine", "spark",
               "--master", url, "--ship", "--spark-conf", "spark.sql.shuffle.partitions=2",
               "--checkpoint", str(tmp_path / "ck"), "--sink-dir", str(out), "-q",
               "-o", os.devnull, *extra)
    return cmd, src, out


def by_query(lines: list[str]) -> dict[str, list[dict]]:
    got: dict[str, list[dict]] = defaultdict(list)
    for line in lines:
        d = json.loads(line)
        got[d.pop("query")].append(d)
    return got


def assert_uninterrupted(tmp_path: Path, src: Path, out: Path,
                         output: Path | None = None) -> None:
    """The sink (and the -o file, if given) hold exactly the in-process run's results over
    every file written."""
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(p.read_text() for p in sorted(src.glob("part-*"))))
    ref = inprocess([tmp_path / "windowed.rq", tmp_path / "partitioned.rq"],
                    [(STOCKS, str(whole))], time_unit_ms=60_000)
    outputs = [read_sink(out)] + ([output.read_text().splitlines()] if output else [])
    for lines in outputs:
        got = by_query(lines)
        assert set(got) == set(ref)
        for name in ref:
            assert ref[name]
            assert by_time(got[name]) == by_time(ref[name]), name
            assert len(got[name]) == len(ref[name]), name  # none lost, none repeated


def wait_for(cond, timeout: float, what: str, job: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if job is not None and job.poll() is not None:
            err = job.stderr.read()[-3000:] if job.stderr else ""
            raise AssertionError(f"the job ended before {what}: rc {job.returncode}\n{err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def executor_dirs(cluster: Cluster) -> list[Path]:
    return [d for d in cluster.base.glob("worker*/app-*/*") if d.is_dir()]


def test_an_executor_then_a_whole_worker_killed_mid_stream(healthy, tmp_path):
    """SIGKILL to worker 0's executor JVM once results are flowing; once the job has made
    progress again on the executor the master started in its place, SIGKILL to the whole
    worker 0 (JVM, executor and Python workers, as a node that dies). Spark reruns the
    lost tasks each time, and the job ends with exactly the uninterrupted results. (One
    job for both failures: each cluster job costs a minute or more to start and run.)"""
    parts = PARTS + 4
    printed = tmp_path / "printed.jsonl"  # what the driver writes, beside the sink
    cmd, src, out = streaming_job(tmp_path, healthy.url, "--max-files-per-batch", "1",
                                  "-o", str(printed))
    for i in range(parts):
        write_part(src, i, PER_FILE)
    before = set(executor_dirs(healthy))
    job = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=driver_env(), start_new_session=True)
    try:
        wait_for(lambda: batches_with_results(out) >= 2, 180, "results", job)
        victims = healthy.executors(0)
        assert victims, "worker 0 runs no executor"
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        done = batches_with_results(out)
        assert done < parts, "the job was over before the executor was killed"
        # the master starts a new executor for the application in place of the dead one
        wait_for(lambda: len(set(executor_dirs(healthy)) - before) >= 3, 120,
                 "a new executor", job)
        wait_for(lambda: batches_with_results(out) >= done + 2, 180,
                 "results after the executor's loss", job)
        healthy.kill_worker(0)
        assert batches_with_results(out) < parts, "the job was over before the worker died"
        _, err = job.communicate(timeout=300)
        assert job.returncode == 0, err[-3000:]
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    assert_uninterrupted(tmp_path, src, out, printed)
    # the driver saw the executors go (Spark logs it at ERROR, the level the CLI keeps)
    log = driver_log(job)
    assert "Lost executor" in log and "Command exited with code 137" in log, log[-2000:]
    assert "worker lost" in log, log[-2000:]


def test_driver_killed_and_restarted_from_the_checkpoint(healthy, tmp_path):
    """As tests/spark/test_spark_recovery.py, with the driver on the cluster: SIGKILL to the
    driver's process group mid-stream, then a rerun with the same checkpoint."""
    cmd, src, out = streaming_job(tmp_path, healthy.url)
    for i in range(3):
        write_part(src, i, PER_FILE)
    job = subprocess.Popen(cmd + ["--follow", "--trigger", "0.5", "--max-files-per-batch", "1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=driver_env(), start_new_session=True)
    i = 3
    try:
        deadline = time.monotonic() + 180
        while batches_with_results(out) < 2 and time.monotonic() < deadline:
            assert job.poll() is None, job.stderr.read()[-3000:]
            if i < 6:
                write_part(src, i, PER_FILE)
                i += 1
            time.sleep(0.5)
        assert batches_with_results(out) >= 2, "the job made no progress"
        while i < 8:
            write_part(src, i, PER_FILE)
            i += 1
        time.sleep(1.0)
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # the driver, its JVM and Python runners
        job.wait()
    for j in range(i, PARTS):
        write_part(src, j, PER_FILE)
    done = run(cmd, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert_uninterrupted(tmp_path, src, out)
