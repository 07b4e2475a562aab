"""Spark reads and writes while Apache Kafka changes the log and the topic (issue 28, item 3):
records deleted (DeleteRecords), old segments deleted by retention between micro-batches,
partitions added to a live topic, and a topic's max.message.bytes. Only a real Kafka shows
these, so this module starts its own Apache Kafka broker (tests/support/apache_kafka.py) with
a retention check every 250 ms, whatever KAFKAWIRE_TEST_BROKER says; it skips only where Java
or Maven is missing."""

from __future__ import annotations

import json
import re
import time
import uuid

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.offsets import EARLIEST, LATEST, list_offsets
from spark_kafka_wire.client.metadata.admin import create_partitions, delete_records
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
from tests.support.apache_kafka import topic_on
from tests.support.parquet_runs import available_now, written

pytestmark = [pytest.mark.spark, pytest.mark.broker]

RETENTION_CHECK_MS = 250


@pytest.fixture(scope="module")
def kafka():
    from tests.support.apache_kafka import ApacheKafka, missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(missing)
    broker = ApacheKafka(authorizer=False, extra={
        "log.retention.check.interval.ms": str(RETENTION_CHECK_MS),
        "log.initial.task.delay.ms": "0",  # the retention task starts at once
    }).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def kclient(kafka) -> KafkaClient:
    c = KafkaClient(ClientConfig.from_servers(kafka.bootstrap_servers, request_timeout_ms=15_000))
    yield c
    c.close()


def _produce(client: KafkaClient, topic: str, partition: int, start: int, n: int) -> None:
    """Values p<partition>-v<i> for i in [start, start + n), timestamped now (retention and
    segment rolls go by the records' timestamps)."""
    values = pa.array([b"p%d-v%05d" % (partition, i) for i in range(start, start + n)],
                      pa.binary())
    Producer(client, ProduceSettings()).send(encode_partitioned(
        topic, None, values, np.full(n, partition, np.int32), ProduceSettings(),
        int(time.time() * 1000)))


def _load(spark, kafka, **options: str):
    return (spark.read.format("kafkawire").option("kafka.bootstrap.servers",
                                                  kafka.bootstrap_servers)
            .options(**options).load())


def _rows(df) -> list[tuple[int, int, str]]:
    return sorted((r.partition, r.offset, r.v) for r in
                  df.selectExpr("partition", "offset", "cast(value as string) as v").collect())


def _values(partition: int, offsets) -> list[tuple[int, int, str]]:
    return [(partition, i, f"p{partition}-v{i:05d}") for i in offsets]


def _stream(spark, kafka, topic: str, **options: str):
    return (spark.readStream.format("kafkawire")
            .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
            .option("subscribe", topic).options(**options).load())


def _wait_log_start(client: KafkaClient, topic: str, wanted: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        start = list_offsets(client, {(topic, 0): EARLIEST})[(topic, 0)]
        if start == wanted:
            return
        assert time.monotonic() < deadline, f"the log of {topic}-0 starts at {start}, not {wanted}"
        time.sleep(0.1)


# ------------------------------------------------------------------ DeleteRecords, batch


def test_batch_reads_after_delete_records(spark, kafka, kclient):
    """Records 0-9, then DeleteRecords below 4: a new read from earliest starts at the new
    log start (no data loss: earliest is resolved when the read is planned); a DataFrame
    planned before the deletion (which Tansu cannot run; tests/parity's
    test_records_deleted_below_the_start compares it with Spark's), or an explicit
    start below the log start, is data loss: a typed error naming topic, partition and the
    lost offsets, or with failOnDataLoss=false the rows from the log start on."""
    topic = topic_on(kclient, 1, "delrec")
    _produce(kclient, topic, 0, 0, 10)
    strict = _load(spark, kafka, subscribe=topic)  # planned before the deletion
    lenient = _load(spark, kafka, subscribe=topic, failOnDataLoss="false")
    assert strict.count() == 10 and lenient.count() == 10
    assert delete_records(kclient, {(topic, 0): 4}) == {(topic, 0): 4}
    assert _rows(_load(spark, kafka, subscribe=topic)) == _values(0, range(4, 10))
    with pytest.raises(Exception, match=rf"(?s)DataLossError.*cannot read offsets \[0, 4\) of "
                                        rf"{topic}-0: the log now starts at offset 4"):
        strict.collect()
    assert _rows(lenient) == _values(0, range(4, 10))
    explicit = json.dumps({topic: {"0": 1}})
    with pytest.raises(Exception, match=rf"(?s)DataLossError.*cannot read offsets \[1, 4\) of "
                                        rf"{topic}-0: the log now starts at offset 4.*set the "
                                        r"source option failOnDataLoss to false"):
        _load(spark, kafka, subscribe=topic, startingOffsets=explicit).collect()
    assert _rows(_load(spark, kafka, subscribe=topic, startingOffsets=explicit,
                       failOnDataLoss="false")) == _values(0, range(4, 10))


# ------------------------------------------------------------- retention, micro-batches


@pytest.mark.parametrize("fail_on_data_loss", [True, False], ids=["fail", "skip"])
def test_retention_deletes_segments_between_micro_batches(spark, kafka, kclient, tmp_path,
                                                          fail_on_data_loss):
    """A topic that keeps only its active segment (retention.bytes=1) and rolls one every
    200 ms of record time (segment.ms). A query reads offsets 0-4; then two bursts (5-9 and
    10-14) each roll a segment and the broker's retention task deletes the older ones: the
    log starts at 10. The next run of the query (its checkpoint says 5) meets the deleted
    offsets 5-9: data loss, a typed error saying where the log starts now, or with
    failOnDataLoss=false the records from the new log start on."""
    topic = topic_on(kclient, 1, "retention", {"retention.bytes": "1", "segment.ms": "200"})
    _produce(kclient, topic, 0, 0, 5)
    checkpoint = str(tmp_path / "ckpt")
    df = _stream(spark, kafka, topic, startingOffsets="earliest",
                 failOnDataLoss=str(fail_on_data_loss).lower())
    assert available_now(df, checkpoint) is None
    assert written(spark, checkpoint) == _values(0, range(5))
    _produce(kclient, topic, 0, 5, 5)  # a new segment: 0-4's is deleted
    time.sleep(0.5)
    _produce(kclient, topic, 0, 10, 5)  # another: 5-9's is deleted
    _wait_log_start(kclient, topic, 10)
    failed = available_now(df, checkpoint)
    if fail_on_data_loss:
        assert failed is not None and re.search(
            rf"(?s)DataLossError.*cannot read offsets \[5, 10\) of {topic}-0: the log now starts "
            r"at offset 10 \(older records were deleted, e\.g\. by retention\).*failOnDataLoss",
            str(failed)), failed
        return
    assert failed is None, failed
    assert written(spark, checkpoint) == _values(0, [*range(5), *range(10, 15)])


# ------------------------------------------------------------------- partitions added


def test_partitions_added_during_the_stream_are_read_from_offset_0(spark, kafka, kclient):
    """CreatePartitions on a subscribed topic while the query runs (failOnDataLoss true):
    the next micro-batches read the new partitions from their start, offset 0, as Spark
    does, and the query goes on."""
    topic = topic_on(kclient, 1, "added")
    _produce(kclient, topic, 0, 0, 3)
    name = f"added_{uuid.uuid4().hex[:8]}"
    q = (_stream(spark, kafka, topic, startingOffsets="earliest").writeStream.format("memory")
         .queryName(name).trigger(processingTime="500 milliseconds").start())

    def count() -> int:
        return spark.sql(f"select count(*) from {name}").first()[0]

    def wait(n: int, deadline: float) -> None:
        while count() < n and time.monotonic() < deadline and q.isActive:
            time.sleep(0.3)

    try:
        deadline = time.monotonic() + 90
        wait(3, deadline)
        create_partitions(kclient, {topic: 3})
        _produce(kclient, topic, 1, 0, 2)
        _produce(kclient, topic, 2, 0, 4)
        _produce(kclient, topic, 0, 3, 1)
        wait(10, deadline)
        assert q.isActive and q.exception() is None, q.exception()
        got = sorted((r.partition, r.offset, r.v) for r in spark.sql(
            f"select partition, offset, cast(value as string) as v from {name}").collect())
        assert got == _values(0, range(4)) + _values(1, range(2)) + _values(2, range(4))
        assert list_offsets(kclient, {(topic, 2): LATEST}) == {(topic, 2): 4}
    finally:
        q.stop()


# -------------------------------------------------------------------- max.message.bytes


def test_writes_to_a_topic_with_a_small_max_message_bytes(spark, kafka, kclient):
    """max.message.bytes=2048: 300 rows of ~100 bytes (one batch of ~35 kB for the producer)
    are written all the same, in order (the refused batch is split); a row larger than the
    limit fails the write with MessageTooLargeError naming the topic, partition and setting."""
    topic = topic_on(kclient, 1, "small", {"max.message.bytes": "2048"})
    rows = [(f"{i:05d}" + "." * 95,) for i in range(300)]
    (spark.createDataFrame(rows, "value string").coalesce(1).write.format("kafkawire")
     .mode("append").option("kafka.bootstrap.servers", kafka.bootstrap_servers).option("topic", topic).save())
    got = [r.v for r in _load(spark, kafka, subscribe=topic)
           .selectExpr("offset", "cast(value as string) as v").orderBy("offset").collect()]
    assert got == [v for (v,) in rows]
    with pytest.raises(Exception, match=rf"(?s)MessageTooLargeError.*MESSAGE_TOO_LARGE.*"
                                        rf"topic '{topic}', partition 0.*a batch of 1 record is "
                                        r"\d+ bytes, more than the topic's max\.message\.bytes"):
        (spark.createDataFrame([("x" * 4000,)], "value string").write.format("kafkawire")
         .mode("append").option("kafka.bootstrap.servers", kafka.bootstrap_servers).option("topic", topic)
         .save())
