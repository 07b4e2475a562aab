"""One local SparkSession recipe for the test suite, its job processes and the benchmarks.

Workers run this very Python (so they import this checkout and its venv), the UI is off, two
shuffle partitions suit a two-core machine, and kafkawire is registered. Differences from it
(a master with task retries, Arrow batch sizes) are passed as ``conf``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from spark_kafka_wire import KafkaWireDataSource

DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    "spark.python.worker.reuse": "true",
}


#: Spark for people reading its output (``make demo``, notebooks/): no progress bars, and a
#: log4j2 profile that logs errors only instead of Spark's default WARN lines. Static settings
#: of the driver's JVM: for a local session; a Spark Connect client cannot set them.
QUIET_LOG4J = Path(__file__).with_name("log4j2-quiet.properties")
QUIET = {
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={QUIET_LOG4J.as_uri()}",
}


def local_session(app: str, master: str = "local[2]", conf: dict[str, str] | None = None,
                  quiet: bool = False) -> SparkSession:
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
