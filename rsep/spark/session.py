"""The SparkSession rsep runs on: local mode by default, any master otherwise."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

from pyspark import SparkConf
from pyspark.sql import SparkSession

from rsep.spark.package import EXECUTOR_PYTHON, Archive, driver_dir

# transformWithState needs RocksDB with changelog checkpointing.
_CONF = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}


def get_session(master: str | None = "local[2]", *, app: str = "rsep",
                shuffle_partitions: int | None = None,
                conf: dict[str, str] | None = None) -> SparkSession:
    """A session whose Python workers run this interpreter (so they import rsep).

    ``shuffle_partitions`` defaults to the local parallelism: one state partition
    per core keeps per-batch task overhead low on small machines. ``master`` None: the
    one spark-submit set.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if shuffle_partitions is None:
        shuffle_partitions = _local_cores(master)
    b = SparkSession.builder.appName(app)
    if master is not None:
        b = b.master(master)
    settings = dict(_CONF)
    settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    # C1 only: short jobs never amortise C2 compilation.
    settings["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1"
    settings["spark.executor.extraJavaOptions"] = "-XX:TieredStopAtLevel=1"
    settings["spark.sql.warehouse.dir"] = os.path.join(tempfile.gettempdir(), "rsep-warehouse")
    if master is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
        # run by spark-submit: its --conf settings win over rsep's defaults
        preset = SparkConf()
        settings = {k: v for k, v in settings.items() if not preset.contains(k)}
    settings.update(conf or {})
    for k, v in settings.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def shipped_session(master: str | None, archive: Archive, *,
                    conf: dict[str, str] | None = None, **kw: Any) -> SparkSession:
    """A session whose executors run rsep from ``archive`` (rsep.spark.package): Spark
    unpacks it as ``./environment`` in each executor's directory, and their Python is
    ``./environment/bin/python``. The Python a job runs is read once, on the driver, and
    the driver's own Python runners start it too, from the driver JVM's working directory:
    the JVM is started in a directory whose ``environment`` links to this process's
    environment (an equivalent of the archive)."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        raise RuntimeError("run by spark-submit: pass the archive with --archives "
                           "(rsep spark package prints the line; docs/deploy.md)")
    where = driver_dir(archive.key)
    saved = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = EXECUTOR_PYTHON
    cwd = os.getcwd()
    os.chdir(where)
    try:
        return get_session(master, conf={**archive.conf(), **(conf or {})}, **kw)
    finally:
        os.chdir(cwd)
        if saved is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = saved


def _local_cores(master: str | None) -> int:
    if master is None:
        return 2 * (os.cpu_count() or 1)
    if master.startswith("local["):
        n = master[len("local["):].rstrip("]").split(",")[0]
        if n == "*":
            return os.cpu_count() or 1
        return max(1, int(n))
    if master == "local":
        return 1
    return 2 * (os.cpu_count() or 1)
