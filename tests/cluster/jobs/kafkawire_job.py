"""A kafkawire job for ``spark-submit`` on the test cluster (tests/cluster): its one argument is
a JSON object saying what to do; its results are one line of JSON on stdout after
``KAFKAWIRE-CLUSTER-RESULT `` (tests/support/spark_standalone.py reads it).

``{"mode": "write-read" | "read", "bootstrap": ..., "topic": ..., "rows": N, "options": {...},
"read_options": {...}, "probe": "/a/driver-only/path" | null, "broker_host": "10.213.N.x"}``,
or a JSON list of such objects run one after the other in one application (``main``)
(``options`` for the write and the read, ``write_options`` for the write only,
``read_options`` for the read only; ``fault``: see ``_where_udf``; ``partition_by_task``: each
write task's rows go to the partition of its number).

- ``write-read``: ``rows`` rows (key ``k<i>``, value ``v<i>``) written by kafkawire's sink
  from 4 tasks, each record with a header ``written-by`` saying where its task ran, then the
  topic read back whole by a batch read.
- ``read``: the topic read whole.
- ``stream``: an availableNow stream of the topic (``read_options`` such as
  maxOffsetsPerTrigger) into a parquet sink, its checkpoint and the sink in ``shared``, a
  directory every host sees; a second run on the same directory resumes from the checkpoint.
- ``stream-copy``: a stream of the topic written to ``sink_topic`` by kafkawire's sink
  (``sink_options``), its checkpoint in ``shared``, ``trigger`` ``"availableNow"`` or seconds.

Besides the rows read and where their tasks ran, the results hold the executors the driver
knows, the task count of the read, and the task count kafkawire plans for the same read
without options (planning only).

Where a task ran is told by a Python UDF evaluated in the same task as kafkawire's reader or
writer: the address its host uses towards the broker (a UDP socket's own address after
``connect``, which sends nothing), the file ``spark_kafka_wire`` was imported from, the
Python running it, and whether ``probe`` exists there. kafkawire is registered with
``spark.dataSource.register`` as docs/spark-connect-and-clusters.md tells users to.
"""

from __future__ import annotations

import json
import sys

from tests.support.spark_standalone import RESULT_MARKER  # the driver has the checkout


def where_udf(probe: str | None, broker_host: str, fault: dict | None = None):
    """The UDF telling where its task ran; with ``fault``, the first attempt of the task that
    meets row ``fault["at"]`` of partition ``fault["partition"]`` fails there: ``"raise"``
    raises, ``"kill-executor"`` kills its executor's JVM with SIGKILL (after writing where it
    ran to ``fault["marker"]``, a file on a directory every host shares).

    The UDF reaches ``_fail`` through a closure cell that is None without a fault: cloudpickle
    ships a module's functions by reference when the module is importable (the Connect
    client imports this one), and the executors cannot import the checkout's tests."""
    from pyspark.sql.functions import udf

    fail = _fail if fault else None

    @udf("string")
    def where(partition: int, n: int) -> str:
        import os
        import socket
        import sys

        from pyspark import TaskContext

        import spark_kafka_wire

        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.connect((broker_host, 9))  # picks the route and source address; sends nothing
            address = s.getsockname()[0]
        finally:
            s.close()
        task = TaskContext.get()
        attempt = task.attemptNumber() if task else -1
        if fail is not None and fault and attempt == 0 and partition == fault["partition"] \
                and n == fault["at"]:
            fail(fault, address)
        return json.dumps({"ip": address, "kafkawire": spark_kafka_wire.__file__,
                           "python": sys.executable, "attempt": attempt,
                           "probe_exists": os.path.exists(probe) if probe else None},
                          sort_keys=True)

    return where


def _fail(fault: dict, address: str) -> None:
    """What ``fault`` says: raise, or SIGKILL the executor JVM this Python worker descends
    from (CoarseGrainedExecutorBackend), as a crash of the executor would end it."""
    import os
    import signal

    if fault["kind"] == "raise":
        sent = _wait_until_sent(fault["wait_for"]) if fault.get("wait_for") else None
        _mark(fault["marker"], {"ip": address, "sent_before_failure": sent})
        raise RuntimeError(f"the injected failure of the first attempt, on {address}")
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"CoarseGrainedExecutorBackend" in f.read():
                break
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    else:
        raise RuntimeError("no executor JVM above this Python worker")
    _mark(fault["marker"], {"ip": address, "executor_pid": pid})
    os.kill(pid, signal.SIGKILL)


def _wait_until_sent(wait_for: dict, timeout_s: float = 120.0) -> int:
    """Wait until the partition ``wait_for`` names holds at least ``records`` records
    (its log end offset, uncommitted records included), so that a failure placed after
    them fails a task whose writer already sent part of its rows, whatever the machine's
    load; the log end offset seen last (the test checks it)."""
    import time

    from spark_kafka_wire.client.config import ClientConfig, parse_bootstrap
    from spark_kafka_wire.client.fetching.offsets import LATEST, list_offsets
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    tp = (wait_for["topic"], wait_for["partition"])
    client = KafkaClient(ClientConfig(bootstrap_servers=tuple(parse_bootstrap(
        wait_for["bootstrap"]))))
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            end = list_offsets(client, {tp: LATEST})[tp]
            if end >= wait_for["records"] or time.monotonic() > deadline:
                return end
            time.sleep(0.1)
    finally:
        client.close()


def _mark(path: str, facts: dict) -> None:
    """``facts`` as JSON in ``path``, on disk before the failure it records; a second fault
    (a test placing it where it fires twice) finds the file and fails the job instead."""
    import os

    with open(path, "x") as f:
        json.dump(facts, f)
        f.flush()
        os.fsync(f.fileno())


def main(spec: dict | list[dict]) -> dict | list[dict]:
    """One scenario (a spec), or several run one after the other in one application (a list:
    one driver and one set of executors for scenarios that kill nothing, as the tests'
    ``one_application`` fixture runs them). A scenario of a list that raises is reported as
    ``{"error": traceback}`` and the next one still runs."""
    import traceback

    from pyspark.sql import SparkSession

    from spark_kafka_wire import KafkaWireDataSource

    specs = spec if isinstance(spec, list) else [spec]
    spark = SparkSession.builder.appName(
        "kafkawire-cluster-" + "+".join(s["mode"] for s in specs)).getOrCreate()
    spark.dataSource.register(KafkaWireDataSource)
    if not isinstance(spec, list):
        result = run(spark, spec)
        spark.stop()
        return result
    results: list[dict] = []
    for one in specs:
        try:
            results.append(run(spark, one))
        except Exception:  # noqa: BLE001 - reported to the scenario's test, the rest go on
            results.append({"error": traceback.format_exc()})
    spark.stop()
    return results


def run(spark, spec: dict) -> dict:
    """One scenario of ``spec["mode"]`` in the application's session."""
    sc = spark.sparkContext
    where = where_udf(spec.get("probe"), spec["broker_host"])
    # the fault goes to the write of ``write-read`` or to the stream, never to the read back
    faulty = where_udf(spec.get("probe"), spec["broker_host"], spec.get("fault"))
    options = {"kafka.bootstrap.servers": spec["bootstrap"], **spec.get("options", {})}
    result: dict = {"executors": sorted(
        str(sc._jsc.sc().getExecutorMemoryStatus().keys().mkString(",")).split(",")),
        "default_parallelism": sc.defaultParallelism}

    if spec.get("env_probe"):
        result["executor_env"] = _executor_env(spark, spec["env_probe"])

    if spec["mode"] == "write-read":
        write_rows(spark, spec["rows"], spec["topic"], options, faulty,
                   write_options=spec.get("write_options", {}),
                   partition_by_task=spec.get("partition_by_task", False))

    if spec["mode"] == "stream":
        result.update(stream_into_parquet(spark, spec, options, faulty))
        return result

    if spec["mode"] == "stream-copy":
        result.update(_stream_copy(spark, spec, options, faulty))
        return result

    def read(**more: str):
        return (spark.read.format("kafkawire").options(**options, **more)
                .option("subscribe", spec["topic"]).load())

    # the plan kafkawire makes without options (planning only: nothing is read)
    result["default_read_tasks"] = read().rdd.getNumPartitions()
    df = read(**spec.get("read_options", {}))
    result["read_tasks"] = df.rdd.getNumPartitions()
    result.update(collect_read(df, where))
    return result


def write_rows(spark, rows: int, topic: str, options: dict, where, *,
               write_options: dict | None = None, partition_by_task: bool = False) -> None:
    """``rows`` rows (key ``k<i>``, value ``v<i>``) written to ``topic`` by kafkawire's sink
    from 4 tasks, each record with a header ``written-by`` (``where`` in its task): the
    oracle sees where every record was written. ``partition_by_task``: task i writes to
    partition i. Classic and Connect sessions alike."""
    from pyspark.sql import functions as F

    df = (spark.range(0, rows, 1, 4)
          .select(F.concat(F.lit("k"), F.col("id").cast("string")).cast("binary").alias("key"),
                  F.concat(F.lit("v"), F.col("id").cast("string")).cast("binary")
                  .alias("value"),
                  F.array(F.struct(F.lit("written-by").alias("key"),
                                   where(F.spark_partition_id(), F.col("id")).cast("binary")
                                   .alias("value")))
                  .alias("headers"),
                  *([F.spark_partition_id().alias("partition")] if partition_by_task else [])))
    (df.write.format("kafkawire").options(**options).options(**(write_options or {}))
     .option("topic", topic).mode("append").save())


def collect_read(df, where) -> dict:
    """A kafkawire read collected: ``read`` its rows as [key, value, partition, offset],
    ``read_where`` the distinct ``where`` of the tasks that read them (evaluated in the
    reading task). Classic and Connect sessions alike."""
    from pyspark.sql import functions as F

    got = df.select(F.col("key").cast("string"), F.col("value").cast("string"), "partition",
                    "offset", where(F.col("partition"), F.col("offset")).alias("where")).collect()
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
                           "partition", "offset",
                           where(F.col("partition"), F.col("offset")).alias("where"))
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


def _executor_env(spark, names: list[str]) -> list[dict]:
    """``names`` in the environment of the Python workers of four tasks, and whether the
    files they name exist there."""
    def probe(_: object):
        import os

        values = {n: os.environ.get(n) for n in names}
        yield json.dumps({"env": values, "exists": {n: bool(v and os.path.exists(v))
                                                    for n, v in values.items()}},
                         sort_keys=True)

    return [json.loads(r) for r in set(spark.sparkContext.parallelize(range(4), 4)
                                       .mapPartitions(probe).collect())]


def _stream_copy(spark, spec: dict, options: dict, where) -> dict:
    """A stream of the topic written by kafkawire's sink to ``spec["sink_topic"]`` with
    ``spec["sink_options"]`` (e.g. ``kafka.transactional.id``), each record with a header
    ``copied-by`` saying where its task ran; the checkpoint in ``spec["shared"]``.
    ``spec["trigger"]``: ``"availableNow"``, or seconds between micro-batches (the query then
    runs until the driver is killed). Each micro-batch's input row count."""
    from pyspark.sql import functions as F

    stream = (spark.readStream.format("kafkawire").options(**options)
              .options(**spec.get("read_options", {})).option("subscribe", spec["topic"]).load())
    copied = stream.select(
        "key", "value",
        F.array(F.struct(F.lit("source").alias("key"),
                         F.concat_ws("/", "partition", "offset").cast("binary").alias("value")),
                F.struct(F.lit("copied-by").alias("key"),
                         where(F.col("partition"), F.col("offset")).cast("binary")
                         .alias("value"))).alias("headers"))
    writer = (copied.writeStream.format("kafkawire").options(**options)
              .options(**spec.get("sink_options", {})).option("topic", spec["sink_topic"])
              .option("checkpointLocation", f"{spec['shared']}/checkpoint"))
    if spec["trigger"] == "availableNow":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{spec['trigger']} seconds")
    query = writer.start()
    query.awaitTermination()
    return {"batches": [p.numInputRows for p in query.recentProgress]}


def _sink_rows(spark, path: str) -> list[tuple]:
    import os

    if not os.path.isdir(os.path.join(path, "_spark_metadata")):
        return []
    return [tuple(r) for r in spark.read.parquet(path)
            .select("key", "value", "partition", "offset", "where").collect()]


if __name__ == "__main__":
    print(RESULT_MARKER + json.dumps(main(json.loads(sys.argv[1]))), flush=True)
