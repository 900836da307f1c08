"""The SparkSession rsep runs on: local mode by default, any master otherwise."""

from __future__ import annotations

import os
import sys
import tempfile

from pyspark.sql import SparkSession

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


def get_session(master: str = "local[2]", *, app: str = "rsep",
                shuffle_partitions: int | None = None,
                conf: dict[str, str] | None = None) -> SparkSession:
    """A session whose Python workers run this interpreter (so they import rsep).

    ``shuffle_partitions`` defaults to the local parallelism: one state partition
    per core keeps per-batch task overhead low on small machines.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if shuffle_partitions is None:
        shuffle_partitions = _local_cores(master)
    b = SparkSession.builder.master(master).appName(app)
    settings = dict(_CONF)
    settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    # C1 only: short jobs never amortise C2 compilation.
    settings["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1"
    settings["spark.executor.extraJavaOptions"] = "-XX:TieredStopAtLevel=1"
    settings["spark.sql.warehouse.dir"] = os.path.join(tempfile.gettempdir(), "rsep-warehouse")
    settings.update(conf or {})
    for k, v in settings.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _local_cores(master: str) -> int:
    if master.startswith("local["):
        n = master[len("local["):].rstrip("]").split(",")[0]
        if n == "*":
            return os.cpu_count() or 1
        return max(1, int(n))
    if master == "local":
        return 1
    return 2 * (os.cpu_count() or 1)
