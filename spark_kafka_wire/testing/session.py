"""One local SparkSession recipe for the test suite, its job processes and the benchmarks.

Workers run this very Python (so they import this checkout and its venv), the UI is off, two
shuffle partitions suit a two-core machine, and kafkawire is registered. Differences from it
(a master with task retries, Arrow batch sizes) are passed as ``conf``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import SparkSession

from spark_kafka_wire import KafkaWireDataSource

DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    "spark.python.worker.reuse": "true",
}


def local_session(app: str, master: str = "local[2]", conf: dict[str, str] | None = None,
                  quiet: bool = False) -> Any:
    """A SparkSession on ``master`` with kafkawire registered (``quiet``: log errors only)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in {**DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaWireDataSource)
    return spark
