"""Exactly-once writes (``kafka.transactional.id``) through a real SparkSession and broker.

Oracles: librdkafka's read_committed consumer where every transaction committed, and on Apache
Kafka where a write aborted too; where a write aborted, Tansu does not list aborted
transactions in its Fetch answers (librdkafka would return their records), so the log-walking
oracle (tests/support/txn_log_oracle.py), the last stable offset and kafkawire's
read_committed reader are checked. Faults (killed tasks and drivers) are in
tests/faults/test_exactly_once_faults.py.
"""

from __future__ import annotations

import os
import uuid

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from spark_kafka_wire.client.fetching.offsets import (
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    resolve_offsets,
)
from spark_kafka_wire.client.groups.group_offsets import fetch_group
from spark_kafka_wire.protocol.records import ATTR_TRANSACTIONAL
from tests.support.id_oracle import assert_exactly_once, id_dataframe, id_records
from tests.support.librdkafka import consume_all, produce
from tests.support.transactions import wait_until_no_transaction_open
from tests.support.txn_log_oracle import assert_committed_exactly_once
from tests.support.write_support import stored_batches

pytestmark = [pytest.mark.spark, pytest.mark.broker]

RC = {"isolation.level": "read_committed"}


def _write(df, bootstrap: str, topic: str, prefix: str, **options: str) -> None:
    (df.write.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).option("kafka.transactional.id", prefix).options(**options)
     .mode("append").save())


def _ends(client, topic: str, partitions: int, isolation: int) -> dict[int, int]:
    tps = {(topic, p): LATEST for p in range(partitions)}
    return {p: o for (_, p), o in resolve_offsets(client, tps, isolation).items()}


def _committed_ids(spark, bootstrap: str, topic: str) -> list[int]:
    df = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("kafka.isolation.level", "read_committed").load())
    return sorted(int(r.value) for r in df.select(F.col("value").cast("string")).collect())


def test_a_batch_write_commits_every_task_in_one_step(spark, bootstrap, client, new_topic):
    topic = new_topic(3, "eo")
    prefix = f"eo-{uuid.uuid4().hex[:8]}"
    _write(id_dataframe(spark, 5000, partitions=4), bootstrap, topic, prefix)
    assert_exactly_once(bootstrap, topic, range(5000), RC)
    assert _committed_ids(spark, bootstrap, topic) == list(range(5000))
    # Every data batch is transactional, each partition ends with a marker, and nothing is
    # left open: read_committed readers reach the end.
    for p in range(3):
        batches = stored_batches(client, topic, p)
        assert batches and all(b.attributes & ATTR_TRANSACTIONAL for b in batches)
    assert _ends(client, topic, 3, READ_COMMITTED) == _ends(client, topic, 3, READ_UNCOMMITTED)
    # A batch write commits no micro-batch marker.
    assert all(fetch_group(client, f"{prefix}-{i}") == {} for i in range(4))


def test_a_failed_write_leaves_nothing_visible(spark, bootstrap, client, new_topic,
                                               broker_kind):
    """One task fails after the others wrote (and flushed) their rows: the driver aborts every
    transaction, including the failed task's, so readers are not blocked and see nothing. On
    Kafka, which lists aborted transactions in Fetch answers, librdkafka's read_committed
    consumer agrees."""
    topic = new_topic(2, "eo-fail")
    prefix = f"eo-{uuid.uuid4().hex[:8]}"

    @F.udf(StringType())
    def fail_late(value: str) -> str:
        if value == "3999":  # the last row of the last task: its earlier rows were sent
            raise ValueError("task failed on purpose")
        return value

    df = id_dataframe(spark, 4000, partitions=4).withColumn("value", fail_late("value"))
    with pytest.raises(Exception, match="task failed on purpose"):
        _write(df, bootstrap, topic, prefix, **{"kafka.linger.ms": "0", "kafka.batch.size": "1000"})
    # nothing left open: the driver's aborts end every transaction (their markers are
    # written moments after EndTxn answers; one left open would hold readers for its timeout)
    wait_until_no_transaction_open(client, topic, 2)
    written = _ends(client, topic, 2, READ_UNCOMMITTED)
    assert sum(written.values()) > 0  # rows did reach the log before the failure
    assert _ends(client, topic, 2, READ_COMMITTED) == written
    assert _committed_ids(spark, bootstrap, topic) == []
    assert_committed_exactly_once(bootstrap, topic, [])  # the log-walking oracle agrees
    if broker_kind == "kafka":
        assert consume_all({"bootstrap.servers": bootstrap, **RC}, topic, 30) == []
    # The prefix can be used again at once: the next write is visible, exactly once.
    _write(id_dataframe(spark, 100, partitions=2), bootstrap, topic, prefix)
    assert _committed_ids(spark, bootstrap, topic) == list(range(100))
    assert_committed_exactly_once(bootstrap, topic, range(100))
    if broker_kind == "kafka":
        assert_exactly_once(bootstrap, topic, range(100), RC)


def _copy_stream(spark, bootstrap: str, source: str, target: str, prefix: str,
                 checkpoint: str) -> None:
    df = (spark.readStream.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", source).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", "700").load().select("key", "value"))
    q = (df.writeStream.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", target).option("kafka.transactional.id", prefix)
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert not q.isActive and q.exception() is None


def test_a_replayed_micro_batch_writes_nothing_twice(spark, bootstrap, client, new_topic,
                                                      tmp_path):
    """Spark replays a micro-batch whose commit-log entry is missing (the driver died after
    the sink committed but before Spark recorded it). Removing the entry makes Spark replay the
    last batch for real: every task finds its marker and writes nothing."""
    source, target = new_topic(3, "eo-src"), new_topic(2, "eo-dst")
    produce({"bootstrap.servers": bootstrap}, source, id_records(2000))
    prefix = f"eo-{uuid.uuid4().hex[:8]}"
    checkpoint = str(tmp_path / "ckpt")
    _copy_stream(spark, bootstrap, source, target, prefix, checkpoint)
    assert_exactly_once(bootstrap, target, range(2000), RC)
    ends = _ends(client, target, 2, READ_UNCOMMITTED)

    commits = os.path.join(checkpoint, "commits")
    last = max(int(n) for n in os.listdir(commits) if n.isdigit())
    assert last >= 2  # several micro-batches (maxOffsetsPerTrigger)
    for name in (str(last), f".{last}.crc"):  # the entry and its checksum file
        if os.path.exists(os.path.join(commits, name)):
            os.remove(os.path.join(commits, name))
    _copy_stream(spark, bootstrap, source, target, prefix, checkpoint)
    assert os.path.exists(os.path.join(commits, str(last)))  # the batch ran again
    assert _ends(client, target, 2, READ_UNCOMMITTED) == ends  # and wrote nothing
    assert_exactly_once(bootstrap, target, range(2000), RC)

    # New input after the replay is written once, in later batches.
    produce({"bootstrap.servers": bootstrap}, source, id_records(500, 2000))
    _copy_stream(spark, bootstrap, source, target, prefix, checkpoint)
    assert_exactly_once(bootstrap, target, range(2500), RC)


def test_exactly_once_through_spark_connect(connect_spark, bootstrap, new_topic):
    """The task context (partition id) and the driver's commit work the same on a Spark
    Connect server."""
    topic = new_topic(2, "eo-connect")
    df = connect_spark.range(0, 1000, numPartitions=3).selectExpr(
        "CAST(id AS STRING) AS key", "CAST(id AS STRING) AS value")
    _write(df, bootstrap, topic, f"eo-{uuid.uuid4().hex[:8]}")
    assert_exactly_once(bootstrap, topic, range(1000), RC)
