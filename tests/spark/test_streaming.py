"""Structured Streaming through kafkawire: micro-batches, rate limits, availableNow, restarts
from checkpoints, the sink, and consumed offsets committed for lag tools."""

from __future__ import annotations

import json
import re
import time
import uuid
from datetime import datetime

import confluent_kafka
import numpy as np
import pyarrow as pa
import pytest
from chispa import assert_df_equality
from kazoo.client import KazooClient

from spark_kafka_wire.client.groups.group_offsets import commit_offsets
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
from tests.support.parquet_runs import available_now, written

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def _produce(client: KafkaClient, topic: str, partition: int, start: int, n: int) -> None:
    values = pa.array([b"p%d-v%05d" % (partition, i) for i in range(start, start + n)], pa.binary())
    keys = pa.array([b"k%05d" % i for i in range(start, start + n)], pa.binary())
    parts = np.full(n, partition, np.int32)
    Producer(client, ProduceSettings()).send(
        encode_partitioned(topic, keys, values, parts, ProduceSettings(), 1_700_000_000_000))


def _stream(spark, bootstrap: str, topic: str, **options: str):
    reader = (spark.readStream.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _run_available_now(df, name: str, checkpoint: str | None = None):
    writer = df.writeStream.format("memory").queryName(name).trigger(availableNow=True)
    if checkpoint:
        writer = writer.option("checkpointLocation", checkpoint)
    q = writer.start()
    q.awaitTermination(120)
    assert not q.isActive, "availableNow query did not finish"
    assert q.exception() is None
    return q


def _count(spark, name: str) -> int:
    return spark.sql(f"select count(*) from {name}").first()[0]


def _wait_rows(spark, name: str, n: int, deadline: float, poll: float = 0.3) -> None:
    """Poll the memory sink ``name`` until it holds ``n`` rows or the deadline passes."""
    while _count(spark, name) < n and time.monotonic() < deadline:
        time.sleep(poll)


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _rows(progress: list[dict]) -> list[int]:
    return [p["numInputRows"] for p in progress if p["numInputRows"] > 0]


def test_available_now_respects_max_offsets_per_trigger(spark, bootstrap, client, new_topic):
    topic = new_topic(2, "s-an")
    _produce(client, topic, 0, 0, 150)
    _produce(client, topic, 1, 0, 50)
    name = f"an_{uuid.uuid4().hex[:8]}"
    q = _run_available_now(_stream(spark, bootstrap, topic, startingOffsets="earliest",
                                   maxOffsetsPerTrigger="60"), name)
    per_batch = _rows(q.recentProgress)
    assert sum(per_batch) == 200
    assert len(per_batch) == 4  # 60 + 60 + 60 + 20, prorated 3:1 over the partitions
    assert all(n <= 60 + 1 for n in per_batch)
    got = spark.sql(f"select partition, offset from {name}")
    expected = spark.createDataFrame([(0, i) for i in range(150)] + [(1, i) for i in range(50)],
                                     "partition int, offset long")
    assert_df_equality(got, expected, ignore_row_order=True)


def test_latest_is_the_default_start_and_progress_reports_latest(spark, bootstrap, client, new_topic):
    topic = new_topic(1, "s-latest")
    _produce(client, topic, 0, 0, 30)
    name = f"lt_{uuid.uuid4().hex[:8]}"
    q = (_stream(spark, bootstrap, topic).writeStream.format("memory").queryName(name)
         .trigger(processingTime="500 milliseconds").start())
    try:
        deadline = time.monotonic() + 60
        while not q.recentProgress and time.monotonic() < deadline:
            time.sleep(0.2)
        _produce(client, topic, 0, 30, 12)  # only these are new after the query started
        _wait_rows(spark, name, 12, deadline)
        time.sleep(1.5)
        offsets = [r.offset for r in spark.sql(f"select offset from {name} order by offset").collect()]
        assert offsets == list(range(30, 42))
        latest = [p["sources"][0].get("latestOffset") for p in q.recentProgress]
        assert {topic: {"0": 42}} in [json.loads(x) if isinstance(x, str) else x
                                       for x in latest if x]
    finally:
        q.stop()


def test_copy_topic_through_the_sink_and_restart_from_checkpoint(spark, bootstrap, client, new_topic, tmp_path):
    source = new_topic(2, "s-src")
    target = new_topic(3, "s-dst")
    _produce(client, source, 0, 0, 40)
    _produce(client, source, 1, 0, 25)
    checkpoint = str(tmp_path / "ckpt")

    def copy() -> None:
        df = _stream(spark, bootstrap, source, startingOffsets="earliest",
                     maxOffsetsPerTrigger="30").select("key", "value")
        q = (df.writeStream.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", target).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert not q.isActive and q.exception() is None

    copy()
    _produce(client, source, 0, 40, 10)  # arrives while the query is stopped
    _produce(client, source, 1, 25, 5)
    copy()  # restarts from the checkpoint: only the new records, exactly once
    read = lambda t: (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)  # noqa: E731
                      .option("subscribe", t).load().select("key", "value"))
    assert read(target).count() == 80
    assert_df_equality(read(target), read(source), ignore_row_order=True)


def test_offsets_committed_for_lag_tools(spark, bootstrap, client, new_topic, zookeeper):
    topic = new_topic(2, "s-commit")
    _produce(client, topic, 0, 0, 33)
    _produce(client, topic, 1, 0, 7)
    group = f"lag-{uuid.uuid4().hex[:8]}"
    _run_available_now(
        _stream(spark, bootstrap, topic, startingOffsets="earliest", maxOffsetsPerTrigger="15",
                commitOffsets="both", **{"kafka.group.id": group, "zookeeper.connect": zookeeper}),
        f"c_{uuid.uuid4().hex[:8]}")
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "enable.auto.commit": False})
    try:
        committed = consumer.committed([confluent_kafka.TopicPartition(topic, p) for p in (0, 1)],
                                       timeout=20)
    finally:
        consumer.close()
    # the end of the last batch of the availableNow run, for which Spark never calls commit()
    assert {(p.partition, p.offset) for p in committed} == {(0, 33), (1, 7)}
    zk = KazooClient(hosts=zookeeper)
    zk.start(timeout=15)
    try:
        assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"33"
        assert zk.get(f"/consumers/{group}/offsets/{topic}/1")[0] == b"7"
    finally:
        zk.stop()


def test_starting_offsets_group(spark, bootstrap, client, new_topic):
    topic = new_topic(2, "s-group")
    _produce(client, topic, 0, 0, 20)
    _produce(client, topic, 1, 0, 6)
    group = f"start-{uuid.uuid4().hex[:8]}"
    commit_offsets(client, group, {(topic, 0): 15})  # partition 1: no commit -> earliest
    name = f"g_{uuid.uuid4().hex[:8]}"
    _run_available_now(_stream(spark, bootstrap, topic, startingOffsets="group",
                               **{"kafka.group.id": group}), name)
    got = spark.sql(f"select partition, offset from {name}")
    expected = spark.createDataFrame([(0, i) for i in range(15, 20)] + [(1, i) for i in range(6)],
                                     "partition int, offset long")
    assert_df_equality(got, expected, ignore_row_order=True)


@pytest.mark.parametrize("options,message", [
    ({"endingOffsets": "latest"}, "not valid for streaming queries"),
    ({"commitOffsets": "kafka"}, "need a consumer group: set kafka.group.id"),
    ({"commitOffsets": "zookeeper", "kafka.group.id": "g"}, "needs zookeeper.connect"),
    ({"commitOffsets": "sometimes"}, "commitOffsets must be one of"),
    ({"maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger must be positive"),
])
def test_stream_option_errors(spark, bootstrap, new_topic, options, message):
    topic = new_topic(1, "s-err")
    with pytest.raises(Exception, match=message):
        q = (_stream(spark, bootstrap, topic, **options).writeStream.format("memory")
             .queryName(f"e_{uuid.uuid4().hex[:8]}").trigger(availableNow=True).start())
        q.awaitTermination(60)
        if q.exception():
            raise Exception(str(q.exception()))


def test_min_offsets_per_trigger_waits_for_data_or_delay(spark, bootstrap, client, new_topic):
    topic = new_topic(1, "s-min")
    name = f"m_{uuid.uuid4().hex[:8]}"
    q = (_stream(spark, bootstrap, topic, startingOffsets="earliest", minOffsetsPerTrigger="50",
                 maxTriggerDelay="4s").writeStream.format("memory").queryName(name)
         .trigger(processingTime="300 milliseconds").start())
    try:
        deadline = time.monotonic() + 60
        while not q.recentProgress and time.monotonic() < deadline:
            time.sleep(0.1)  # the first trigger always goes through (no data yet: no batch)
        _produce(client, topic, 0, 0, 10)  # fewer than 50: held back until the delay passes
        _wait_rows(spark, name, 10, deadline)
        assert _count(spark, name) == 10
        progress = q.recentProgress
        batches = [p for p in progress if p["numInputRows"] > 0]
        assert len(batches) == 1 and batches[0]["numInputRows"] == 10
        # held back: the batch came only once maxTriggerDelay (4 s) had passed since the
        # first trigger, although the data was there within the next trigger or two
        started = _ts(progress[0]["timestamp"])
        assert (_ts(batches[0]["timestamp"]) - started) >= 3.0
    finally:
        q.stop()


def test_topic_appearing_during_the_query_starts_at_earliest(spark, bootstrap, client, new_topic):
    prefix = f"grow{uuid.uuid4().hex[:6]}"
    first = new_topic(1, prefix)
    _produce(client, first, 0, 0, 5)
    name = f"p_{uuid.uuid4().hex[:8]}"
    df = (spark.readStream.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribePattern", f"^{prefix}-").option("startingOffsets", "earliest").load())
    q = (df.writeStream.format("memory").queryName(name)
         .trigger(processingTime="500 milliseconds").start())
    try:
        deadline = time.monotonic() + 90
        _wait_rows(spark, name, 5, deadline)
        second = new_topic(2, prefix)  # created while the query runs
        _produce(client, second, 0, 0, 4)
        _produce(client, second, 1, 0, 3)
        _wait_rows(spark, name, 12, deadline)
        got = spark.sql(f"select topic, partition, offset from {name}")
        expected = spark.createDataFrame(
            [(first, 0, i) for i in range(5)] + [(second, 0, i) for i in range(4)]
            + [(second, 1, i) for i in range(3)], "topic string, partition int, offset long")
        assert_df_equality(got, expected, ignore_row_order=True)
    finally:
        q.stop()


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_topic_deleted_during_the_query(spark, bootstrap, client, new_topic, fail_on_data_loss):
    from spark_kafka_wire.client.metadata.admin import delete_topics

    kept = new_topic(1, "s-kept")
    doomed = new_topic(1, "s-doomed")
    _produce(client, kept, 0, 0, 3)
    _produce(client, doomed, 0, 0, 2)
    name = f"d_{uuid.uuid4().hex[:8]}"
    df = (spark.readStream.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", f"{kept},{doomed}").option("startingOffsets", "earliest")
          .option("failOnDataLoss", str(fail_on_data_loss).lower()).load())
    q = (df.writeStream.format("memory").queryName(name)
         .trigger(processingTime="500 milliseconds").start())
    try:
        deadline = time.monotonic() + 90
        _wait_rows(spark, name, 5, deadline)
        delete_topics(client, [doomed])
        _produce(client, kept, 0, 3, 4)
        if fail_on_data_loss:
            # Spark's PARTITIONS_DELETED, or PARTITION_OFFSET_CHANGED when the latest offsets
            # were asked between the deletion and the metadata showing it (Tansu then answers
            # ListOffsets for the deleted partition with offset 0)
            with pytest.raises(Exception, match=r"\[KAFKA_DATA_LOSS\.(PARTITIONS_DELETED|"
                                                r"PARTITION_OFFSET_CHANGED)\].*"
                                                rf"(Partitions {doomed}-0 |Partition {doomed}-0's "
                                                r"offset .*from 2 to 0).*set the source option "
                                                r"failOnDataLoss to false"):
                q.awaitTermination(60)
                raise AssertionError("the query should have failed")
        else:
            _wait_rows(spark, name, 9, deadline)
            assert q.isActive and q.exception() is None
            kept_offsets = [r.offset for r in spark.sql(
                f"select offset from {name} where topic = '{kept}' order by offset").collect()]
            assert kept_offsets == list(range(7))
    finally:
        q.stop()


def test_update_mode_is_refused_by_spark(spark, bootstrap, new_topic, tmp_path):
    """Spark refuses Update mode for Python data source sinks before kafkawire runs (Spark's
    built-in kafka sink accepts it): documented in docs/streaming.md as a difference."""
    source = new_topic(1, "s-upd")
    counts = (_stream(spark, bootstrap, source, startingOffsets="earliest").groupBy("key").count()
              .selectExpr("key", "cast(`count` as string) as value"))
    with pytest.raises(Exception, match="does not support Update mode"):
        q = (counts.writeStream.format("kafkawire").outputMode("update")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", source)
             .option("checkpointLocation", str(tmp_path / "u")).trigger(availableNow=True).start())
        q.awaitTermination(120)


@pytest.mark.parametrize("mode", ["complete"])
def test_sink_output_modes(spark, bootstrap, client, new_topic, tmp_path, mode):
    source = new_topic(1, "s-agg")
    target = new_topic(1, "s-agg-out")
    values = pa.array([b"x"] * 6, pa.binary())
    keys = pa.array([b"a", b"b", b"a", b"c", b"a", b"b"], pa.binary())
    Producer(client, ProduceSettings()).send(encode_partitioned(
        source, keys, values, np.zeros(6, np.int32), ProduceSettings(), 1_700_000_000_000))
    counts = (_stream(spark, bootstrap, source, startingOffsets="earliest")
              .groupBy("key").count()
              .selectExpr("key", "cast(`count` as string) as value"))
    q = (counts.writeStream.format("kafkawire").outputMode(mode)
         .option("kafka.bootstrap.servers", bootstrap).option("topic", target)
         .option("checkpointLocation", str(tmp_path / mode)).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert not q.isActive and q.exception() is None
    got = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", target).load()
           .selectExpr("cast(key as string) as key", "cast(value as string) as value"))
    expected = spark.createDataFrame([("a", "3"), ("b", "2"), ("c", "1")], "key string, value string")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_processing_time_query_commits_completed_batches(spark, bootstrap, client, new_topic):
    topic = new_topic(1, "s-pt-commit")
    group = f"pt-{uuid.uuid4().hex[:8]}"
    name = f"pc_{uuid.uuid4().hex[:8]}"
    q = (_stream(spark, bootstrap, topic, startingOffsets="earliest", commitOffsets="kafka",
                 **{"kafka.group.id": group})
         .writeStream.format("memory").queryName(name)
         .trigger(processingTime="300 milliseconds").start())
    try:
        _produce(client, topic, 0, 0, 9)
        deadline = time.monotonic() + 60
        _wait_rows(spark, name, 9, deadline, poll=0.2)
        # the batch is complete; the next trigger (or Spark's commit()) records its end
        while time.monotonic() < deadline:
            consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap,
                                                 "group.id": group, "enable.auto.commit": False})
            try:
                [committed] = consumer.committed([confluent_kafka.TopicPartition(topic, 0)], timeout=20)
            finally:
                consumer.close()
            if committed.offset == 9:
                break
            time.sleep(0.3)
        assert committed.offset == 9
    finally:
        q.stop()


def test_starting_timestamp_and_min_partitions(spark, bootstrap, client, new_topic):
    from spark_kafka_wire.source.options import parse_stream_options
    from spark_kafka_wire.source.stream_reader import KafkaWireStreamReader

    topic = new_topic(1, "s-ts")
    values = pa.array([b"v%d" % i for i in range(10)], pa.binary())
    stamps = np.array([1_600_000_000_000 + 1000 * i for i in range(10)], np.int64)
    from spark_kafka_wire.client.producer import PendingBatch
    from spark_kafka_wire.protocol.records import encode_record_batch
    Producer(client, ProduceSettings()).send([PendingBatch(
        topic, 0, encode_record_batch(None, values, timestamps=stamps), 10)])
    name = f"ts_{uuid.uuid4().hex[:8]}"
    _run_available_now(_stream(spark, bootstrap, topic,
                               startingTimestamp=str(1_600_000_000_000 + 6500)), name)
    assert [r.offset for r in spark.sql(f"select offset from {name} order by offset").collect()] == [7, 8, 9]
    # minPartitions splits a micro-batch's ranges like a batch read's
    reader = KafkaWireStreamReader(parse_stream_options({
        "kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest",
        "minPartitions": "4"}))
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    parts = reader.partitions(start, end)
    from spark_kafka_wire.source.planning import OffsetRange, split_ranges
    assert [p.ranges for p in parts] == [(r,) for r in split_ranges([OffsetRange(topic, 0, 0, 10)], 4, None)]
    assert len(parts) == 4 and parts[0].ranges[0].start == 0 and parts[-1].ranges[0].end == 10


def test_micro_batches_pack_small_ranges(spark, bootstrap, client, new_topic):
    """A micro-batch over 30 small partitions (some empty) runs in a few tasks, records the task
    count it was packed for in its end offsets, and reads what Spark's one-task-per-partition
    plan (packing off) reads."""
    from pyspark.sql import functions as F

    from spark_kafka_wire.source.offsets_json import TASKS_KEY
    from spark_kafka_wire.source.planning import (
        OffsetRange,
        default_task_count,
        pack_ranges,
        sized_task_count,
    )

    topic = new_topic(30, "s-pack")
    for p in range(30):
        if p % 3:
            _produce(client, topic, p, 0, p % 7 + 1)
    results = {}
    for name, options in (("packed", {}), ("unpacked", {"maxOffsetRangesPerPartition": "1"})):
        table = f"pack_{name}_{uuid.uuid4().hex[:8]}"
        df = _stream(spark, bootstrap, topic, startingOffsets="earliest", **options)
        q = _run_available_now(df.withColumn("task", F.spark_partition_id()), table)
        end = json.loads(q.recentProgress[-1]["sources"][0]["endOffset"])
        results[name] = (spark.sql(f"select count(distinct task) from {table}").first()[0],
                         spark.sql(f"select partition, offset, cast(value as string) v from "
                                   f"{table} order by partition, offset").collect(),
                         end.get(TASKS_KEY))
    packed_tasks, packed_rows, recorded = results["packed"]
    unpacked_tasks, unpacked_rows, not_recorded = results["unpacked"]
    assert unpacked_tasks == 20 and not_recorded is None
    ranges = [OffsetRange(topic, p, 0, p % 7 + 1) for p in range(30) if p % 3]
    # 20 ranges of 79 records: packed, and aimed at one task (fewer than MIN_TASK_RECORDS)
    tasks = sized_task_count(sum(r.size for r in ranges), len(ranges), default_task_count())
    rule = pack_ranges(ranges, tasks)
    assert packed_tasks == len(rule)
    assert len(rule) < 20 or default_task_count() >= 20
    assert recorded == tasks == (1 if default_task_count() < 20 else default_task_count())
    assert len(packed_rows) == sum(p % 7 + 1 for p in range(30) if p % 3)
    assert packed_rows == unpacked_rows


# ------------------------------------------------- failOnDataLoss between micro-batches (issue 15)


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_starting_offsets_beyond_the_end(spark, bootstrap, client, new_topic, tmp_path,
                                         fail_on_data_loss):
    """Spark plans the first batch from the start to the latest offsets: a start beyond the
    end is PARTITION_OFFSET_CHANGED data loss ("a user error that the start offset is set too
    high and this is the first batch, or the Kafka topic-partition is broken"). Without
    failOnDataLoss the query warns and goes on from the latest offset."""
    topic = new_topic(1, "s-beyond")
    _produce(client, topic, 0, 0, 5)
    checkpoint = str(tmp_path / "ckpt")
    df = _stream(spark, bootstrap, topic, startingOffsets=json.dumps({topic: {"0": 100}}),
                 failOnDataLoss=str(fail_on_data_loss).lower(),
                 **{"fetchOffset.retryIntervalMs": "50"})
    failed = available_now(df, checkpoint)
    if fail_on_data_loss:
        assert failed is not None and re.search(
            r"\[KAFKA_DATA_LOSS\.PARTITION_OFFSET_CHANGED\].*"
            rf"Partition {topic}-0's offset .*from 100 to 5.*set the source option "
            r"failOnDataLoss to false", str(failed), re.S)
        return
    assert failed is None and written(spark, checkpoint) == []
    _produce(client, topic, 0, 5, 3)
    assert available_now(df, checkpoint) is None
    assert written(spark, checkpoint) == [(0, i, f"p0-v{i:05d}") for i in (5, 6, 7)]


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_topic_recreated_with_more_partitions_between_batches(spark, bootstrap, client, new_topic,
                                                              tmp_path, fail_on_data_loss):
    """The query stops after reading offsets [0, 5) of the topic's one partition; the topic is
    deleted and re-created with 2 partitions (Tansu has no CreatePartitions: this is how a
    partition gets added here), 2 records in partition 0 and 4 in partition 1; the query
    restarts from its checkpoint. Partition 0's latest offset (2) is below where the next batch
    begins (5): Spark's PARTITION_OFFSET_CHANGED. Partition 1 is new and starts at offset 0: no
    loss. Without failOnDataLoss partition 0 is read from offset 2 on (its first 2 records are
    skipped, as in Spark; the warning says so) and partition 1 from 0."""
    from spark_kafka_wire.client.metadata.admin import create_topics, delete_topics

    topic = new_topic(1, "s-recreated")
    _produce(client, topic, 0, 0, 5)
    checkpoint = str(tmp_path / "ckpt")
    df = _stream(spark, bootstrap, topic, startingOffsets="earliest",
                 failOnDataLoss=str(fail_on_data_loss).lower(),
                 **{"fetchOffset.retryIntervalMs": "50"})
    assert available_now(df, checkpoint) is None
    old = [(0, i, f"p0-v{i:05d}") for i in range(5)]
    assert written(spark, checkpoint) == old
    delete_topics(client, [topic])
    create_topics(client, [(topic, 2)])
    _produce(client, topic, 0, 100, 2)
    _produce(client, topic, 1, 0, 4)
    failed = available_now(df, checkpoint)
    if fail_on_data_loss:
        assert failed is not None and re.search(
            rf"Partition {topic}-0's offset was changed from 5 to 2", str(failed))
        return
    assert failed is None
    _produce(client, topic, 0, 102, 3)
    assert available_now(df, checkpoint) is None
    assert written(spark, checkpoint) == sorted(
        old + [(0, i, f"p0-v{100 + i:05d}") for i in (2, 3, 4)]
        + [(1, i, f"p1-v{i:05d}") for i in range(4)])
