"""Exactly-once writes whose task dies before its flush, in a Spark process of its own.

``python -m tests.support.task_kill_job --bootstrap B --transactional-id P --result PATH
--kill-log DIR --batch-topic T --rows N [--stream-from S --stream-topic T2 --checkpoint DIR]``

Why a process of its own: local mode runs each task once unless the master says otherwise,
and the shared test session is ``local[2]``; this one is ``local[2,3]``, so a failed task is
tried again (up to 3 attempts), which is what the scenario is about.

The batch write: ids 0..N-1 from 4 Spark partitions go through a Python UDF to
``--batch-topic``, written by kafkawire with ``kafka.transactional.id``. In attempt 0 of the
task of partition KILL_PARTITION, the UDF SIGKILLs its own Python worker at the task's row
KILL_ROW (half way). The UDF runs in a Python worker of its own, ahead of the writer's, so
left alone it would die before the writer (still starting) sent anything: at that row it
first waits until the output topic holds, in an open transaction, one of the ids it passed
(the raw log, read by tests/support/txn_log_oracle.py). For rows to flow on while it waits,
they must fill the buffers between the processes (a Python worker's output and Spark's socket
streams flush every 64 KiB): the UDF returns its id padded to 2 KiB, a column the sink
ignores, and ``value`` is the id trimmed; Arrow batches of 50 rows and ``kafka.linger.ms=0``
make the writer send as it goes. The dead attempt leaves records in an open transaction; the
retry (attempt 1, same partition id, so the same transactional id) must fence and abort them
and write its rows once.

The stream (optional): ``--stream-from`` read by the kafkawire source (availableNow,
STREAM_ROWS_PER_TRIGGER offsets per micro-batch) through the same UDF into
``--stream-topic``; the kill happens in micro-batch STREAM_KILL_BATCH, at row
STREAM_KILL_ROW of the task.

Writes a JSON result (seconds per write); each worker the UDF kills first leaves a file in
``--kill-log`` saying where (a worker's prints do not reach this process' output).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from spark_kafka_wire.sink.exactly_once import BATCH_ID_PROPERTY

ARROW_BATCH_ROWS = 50
PAD = 2048
WAIT_FOR_WRITER_S = 60
SPARK_PARTITIONS = 4
KILL_PARTITION = 2
STREAM_ROWS_PER_TRIGGER = 500  # about 125 rows per task of a 4-partition topic
STREAM_KILL_BATCH = 1
STREAM_KILL_ROW = 100


def _killing_udf(kill_row: int, kill_batch: int | None, kill_log: str, bootstrap: str,
                 topic: str):
    """A UDF returning its string argument padded to PAD characters, that SIGKILLs its own
    Python worker at row ``kill_row`` of attempt 0 of partition KILL_PARTITION's task (of
    micro-batch ``kill_batch`` in a stream), once the writer has sent some of the rows before
    it (module docstring)."""
    from pyspark import TaskContext
    from pyspark.sql.functions import udf

    passed: set[bytes] = set()  # ids this task attempt has returned (a fresh copy per task)

    def doomed(context) -> bool:
        if context.attemptNumber() > 0 or context.partitionId() != KILL_PARTITION:
            return False
        batch = context.getLocalProperty(BATCH_ID_PROPERTY)
        return kill_batch is None or batch == str(kill_batch)

    @udf("string")
    def pass_or_die(value: str) -> str:
        context = TaskContext.get()
        if len(passed) < kill_row or not doomed(context):
            passed.add(value.encode())
            return value.ljust(PAD)
        import signal

        from tests.support.txn_log_oracle import read_log

        deadline = time.monotonic() + WAIT_FOR_WRITER_S
        while time.monotonic() < deadline:
            if passed.intersection(read_log(bootstrap, topic).open_values):
                break
            time.sleep(0.2)
        where = (f"stage-{context.stageId()}-task-{context.partitionId()}-row-{kill_row}-"
                 f"batch-{kill_batch}")
        with open(os.path.join(kill_log, where), "w") as note:
            note.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
        return value.ljust(PAD)

    return pass_or_die


def _padded_values(frame, killing_udf):
    """``key``, ``value`` (the id) and ``padded`` (the UDF's answer, ignored by the sink)."""
    padded = frame.select("key", killing_udf("key").alias("padded"))
    return padded.selectExpr("key", "rtrim(padded) AS value", "padded")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--transactional-id", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--kill-log", required=True)
    ap.add_argument("--batch-topic", required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--stream-from")
    ap.add_argument("--stream-topic")
    ap.add_argument("--checkpoint")
    args = ap.parse_args(argv)

    from spark_kafka_wire.testing.session import local_session

    spark = local_session("kafkawire-task-kill-job", "local[2,3]", {
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        "spark.sql.execution.pythonUDF.arrow.enabled": "false"})
    result: dict = {}

    def sink(writer, topic: str, prefix: str):
        return (writer.format("kafkawire").option("kafka.bootstrap.servers", args.bootstrap)
                .option("topic", topic).option("kafka.transactional.id", prefix)
                .option("kafka.linger.ms", "0"))

    began = time.monotonic()
    ids = spark.range(0, args.rows, numPartitions=SPARK_PARTITIONS).selectExpr(
        "CAST(id AS STRING) AS key")
    half = args.rows // SPARK_PARTITIONS // 2
    rows = _padded_values(ids, _killing_udf(half, None, args.kill_log, args.bootstrap,
                                            args.batch_topic))
    sink(rows.write.mode("append"), args.batch_topic, args.transactional_id).save()
    result["batch_s"] = round(time.monotonic() - began, 1)

    if args.stream_from:
        began = time.monotonic()
        source = (spark.readStream.format("kafkawire")
                  .option("kafka.bootstrap.servers", args.bootstrap)
                  .option("subscribe", args.stream_from).option("startingOffsets", "earliest")
                  .option("maxOffsetsPerTrigger", str(STREAM_ROWS_PER_TRIGGER)).load()
                  .selectExpr("CAST(key AS STRING) AS key"))
        stream = _padded_values(source, _killing_udf(
            STREAM_KILL_ROW, STREAM_KILL_BATCH, args.kill_log, args.bootstrap,
            args.stream_topic))
        q = (sink(stream.writeStream, args.stream_topic, args.transactional_id + "-stream")
             .option("checkpointLocation", args.checkpoint).trigger(availableNow=True)
             .start())
        q.awaitTermination()
        result["stream_s"] = round(time.monotonic() - began, 1)
        result["stream_batches"] = q.lastProgress["batchId"] + 1

    with open(args.result + ".tmp", "w") as out:
        json.dump(result, out)
    os.replace(args.result + ".tmp", args.result)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
