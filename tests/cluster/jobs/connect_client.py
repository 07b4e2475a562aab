"""A Spark Connect client of the Connect server on the test cluster (tests/cluster/
test_connect_server.py): run with plain Python on the driver's host, the checkout on its
PYTHONPATH (the client needs kafkawire to register the data source, and nothing else of
Spark: no JVM runs here). Its one argument is a JSON object; its results are one line of JSON
on stdout after ``KAFKAWIRE-CLUSTER-RESULT ``.

``{"url": "sc://<master>:15002", "archive": "/path/env.tar.gz", "bootstrap": ...,
"broker_host": ..., "topic": ..., "rows": N, "stream_topic": ...,
"shared": "/a/directory/every/host/sees", "read_options": {...}}``

0. the packed environment ``archive`` added to the session (``addArtifacts``, as Spark's
   Python Package Management page tells Connect users);
1. ``rows`` rows written to ``topic`` by kafkawire's sink from 4 tasks (a ``written-by``
   header on each record says where its task ran);
2. ``topic`` read back whole by a batch read (``minPartitions=4``, one task per executor
   core);
3. ``stream_topic`` read by an availableNow stream (``read_options``, e.g.
   maxOffsetsPerTrigger) into a parquet sink, the sink and the checkpoint in ``shared``.

The queries, the UDF that reports where a task ran and kafkawire's registration go through
the Connect protocol only; the server plans them and its executors run them. The UDF and the
write, read and stream steps are tests/cluster/jobs/kafkawire_job.py's, so the Connect run is
checked exactly as the spark-submit runs are.
"""

from __future__ import annotations

import json
import sys

from tests.cluster.jobs.kafkawire_job import (
    collect_read,
    stream_into_parquet,
    where_udf,
    write_rows,
)
from tests.support.spark_standalone import RESULT_MARKER


def main(spec: dict) -> dict:
    from pyspark.sql import SparkSession

    from spark_kafka_wire import KafkaWireDataSource

    spark = SparkSession.builder.remote(spec["url"]).getOrCreate()
    try:
        # pickled by reference: the server unpickles it from the shipped environment
        spark.dataSource.register(KafkaWireDataSource)
        # the session's batch queries start their Python workers in the session's own
        # directory on the driver and the executors: the environment must be unpacked there
        # (tests/support/connect_cluster.py)
        spark.addArtifacts(f"{spec['archive']}#environment", archive=True)
        where = where_udf(None, spec["broker_host"])
        options = {"kafka.bootstrap.servers": spec["bootstrap"]}
        result: dict = {"session": f"{type(spark).__module__}.{type(spark).__name__}"}

        write_rows(spark, spec["rows"], spec["topic"], options, where)
        df = (spark.read.format("kafkawire").options(**options)
              .option("subscribe", spec["topic"]).option("minPartitions", "4").load())
        result.update(collect_read(df, where))

        streamed = stream_into_parquet(
            spark, {"topic": spec["stream_topic"], "shared": spec["shared"],
                    "read_options": spec.get("read_options", {})}, options, where)
        result["stream"] = streamed
        return result
    finally:
        spark.stop()


if __name__ == "__main__":
    print(RESULT_MARKER + json.dumps(main(json.loads(sys.argv[1]))), flush=True)
