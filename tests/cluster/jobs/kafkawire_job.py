"""A kafkawire job for ``spark-submit`` on the test cluster (tests/cluster): its one argument is
a JSON object saying what to do; its results are one line of JSON on stdout after
``KAFKAWIRE-CLUSTER-RESULT `` (tests/support/spark_standalone.py reads it).

``{"mode": "write-read" | "read", "bootstrap": ..., "topic": ..., "rows": N, "options": {...},
"read_options": {...}, "probe": "/a/driver-only/path" | null, "broker_host": "10.213.N.x"}``
(``options`` for the write and the read, ``read_options`` for the read only).

- ``write-read``: ``rows`` rows (key ``k<i>``, value ``v<i>``) written by kafkawire's sink
  from 4 tasks, each record with a header ``written-by`` saying where its task ran, then the
  topic read back whole by a batch read.
- ``read``: the topic read whole.
- ``stream``: an availableNow stream of the topic (``read_options`` such as
  maxOffsetsPerTrigger) into a parquet sink, its checkpoint and the sink in ``shared``, a
  directory every host sees; a second run on the same directory resumes from the checkpoint.

Besides the rows read and where their tasks ran, the results hold the executors the driver
knows, the task count of the read, and the task count kafkawire plans for the same read
without options (planning only).

Where a task ran is told by a Python UDF evaluated in the same task as kafkawire's reader or
writer: the address its host uses towards the broker (a UDP socket's own address after
``connect``, which sends nothing), the file ``spark_kafka_wire`` was imported from, the
Python running it, and whether ``probe`` exists there. kafkawire is registered with
``spark.dataSource.register`` as the README tells users to.
"""

from __future__ import annotations

import json
import sys

from tests.support.spark_standalone import RESULT_MARKER  # the driver has the checkout


def where_udf(probe: str | None, broker_host: str):
    from pyspark.sql.functions import udf

    @udf("string")
    def where(_: object) -> str:
        import os
        import socket
        import sys

        import spark_kafka_wire

        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.connect((broker_host, 9))  # picks the route and source address; sends nothing
            address = s.getsockname()[0]
        finally:
            s.close()
        return json.dumps({"ip": address, "kafkawire": spark_kafka_wire.__file__,
                           "python": sys.executable,
                           "probe_exists": os.path.exists(probe) if probe else None},
                          sort_keys=True)

    return where


def main(spec: dict) -> dict:
    from pyspark.sql import SparkSession

    from spark_kafka_wire import KafkaWireDataSource

    spark = SparkSession.builder.appName(f"kafkawire-cluster-{spec['mode']}").getOrCreate()
    spark.dataSource.register(KafkaWireDataSource)
    sc = spark.sparkContext
    where = where_udf(spec.get("probe"), spec["broker_host"])
    options = {"kafka.bootstrap.servers": spec["bootstrap"], **spec.get("options", {})}
    result: dict = {"executors": sorted(
        str(sc._jsc.sc().getExecutorMemoryStatus().keys().mkString(",")).split(",")),
        "default_parallelism": sc.defaultParallelism}

    if spec["mode"] == "write-read":
        write_rows(spark, spec["rows"], spec["topic"], options, where)

    if spec["mode"] == "stream":
        result.update(stream_into_parquet(spark, spec, options, where))
        spark.stop()
        return result

    def read(**more: str):
        return (spark.read.format("kafkawire").options(**options, **more)
                .option("subscribe", spec["topic"]).load())

    # the plan kafkawire makes without options (planning only: nothing is read)
    result["default_read_tasks"] = read().rdd.getNumPartitions()
    df = read(**spec.get("read_options", {}))
    result["read_tasks"] = df.rdd.getNumPartitions()
    result.update(collect_read(df, where))
    spark.stop()
    return result


def write_rows(spark, rows: int, topic: str, options: dict, where) -> None:
    """``rows`` rows (key ``k<i>``, value ``v<i>``) written to ``topic`` by kafkawire's sink
    from 4 tasks, each record with a header ``written-by`` (``where`` in its task): the
    oracle sees where every record was written. Classic and Connect sessions alike."""
    from pyspark.sql import functions as F

    df = (spark.range(0, rows, 1, 4)
          .select(F.concat(F.lit("k"), F.col("id").cast("string")).cast("binary").alias("key"),
                  F.concat(F.lit("v"), F.col("id").cast("string")).cast("binary")
                  .alias("value"),
                  F.array(F.struct(F.lit("written-by").alias("key"),
                                   where(F.col("id")).cast("binary").alias("value")))
                  .alias("headers")))
    df.write.format("kafkawire").options(**options).option("topic", topic).mode("append").save()


def collect_read(df, where) -> dict:
    """A kafkawire read collected: ``read`` its rows as [key, value, partition, offset],
    ``read_where`` the distinct ``where`` of the tasks that read them (evaluated in the
    reading task). Classic and Connect sessions alike."""
    from pyspark.sql import functions as F

    got = df.select(F.col("key").cast("string"), F.col("value").cast("string"), "partition",
                    "offset", where(F.col("offset")).alias("where")).collect()
    return {"read": [[r.key, r.value, r.partition, r.offset] for r in got],
            "read_where": sorted({r.where for r in got})}


def stream_into_parquet(spark, spec: dict, options: dict, where) -> dict:
    """An availableNow stream of the topic into a parquet sink, both the sink and the
    checkpoint in ``spec["shared"]`` (a directory every host sees); the rows this run added
    to the sink, and each micro-batch's input row count."""
    from pyspark.sql import functions as F

    sink, checkpoint = f"{spec['shared']}/sink", f"{spec['shared']}/checkpoint"
    before = _sink_rows(spark, sink)
    stream = (spark.readStream.format("kafkawire").options(**options)
              .options(**spec.get("read_options", {})).option("subscribe", spec["topic"]).load())
    query = (stream.select(F.col("key").cast("string"), F.col("value").cast("string"),
                           "partition", "offset", where(F.col("offset")).alias("where"))
             .writeStream.format("parquet").option("path", sink)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    # the property, not p["numInputRows"]: on a Connect client the latter was None for every
    # micro-batch (Spark 4.3), the property sums the sources' counts then
    batches = [p.numInputRows for p in query.recentProgress]
    after = _sink_rows(spark, sink)
    seen = set(before)
    added = [r for r in after if r not in seen]
    return {"batches": batches, "read": [r[:4] for r in added],
            "read_where": sorted({r[4] for r in added})}


def _sink_rows(spark, path: str) -> list[tuple]:
    import os

    if not os.path.isdir(os.path.join(path, "_spark_metadata")):
        return []
    return [tuple(r) for r in spark.read.parquet(path)
            .select("key", "value", "partition", "offset", "where").collect()]


if __name__ == "__main__":
    print(RESULT_MARKER + json.dumps(main(json.loads(sys.argv[1]))), flush=True)
