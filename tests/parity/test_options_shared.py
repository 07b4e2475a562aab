"""One options dict, with producer and consumer settings both, shared by ``spark.read``,
``readStream``, ``write`` and ``writeStream``, as Spark code often does: Spark's ``kafka``
format hands every ``kafka.*`` key to a Java client, which ignores the other side's settings;
kafkawire accepts them without effect (one warning naming them) and reads and writes the same
records. Names no Kafka client has and settings whose loss would change the data stay refused
by kafkawire where Spark's clients only log them: asserted below with both outcomes."""

from __future__ import annotations

import uuid
from collections import Counter

import confluent_kafka as ck
import pytest

from spark_kafka_wire.client.metadata.admin import create_topics
from tests.parity.both import FORMATS, assert_same_rows, read_both
from tests.support.write_support import Consumed, consume

PARTITIONS = 3
RECORDS = 12

#: Consumer and producer settings, and Java client settings kafkawire does not use.
SHARED = {
    "kafka.acks": "all",
    "kafka.linger.ms": "5",
    "kafka.compression.type": "lz4",
    "kafka.enable.idempotence": "true",
    "kafka.isolation.level": "read_committed",
    "kafka.fetch.max.bytes": "1048576",
    "kafka.max.partition.fetch.bytes": "1048576",
    "kafka.max.poll.records": "100",
    "kafka.client.dns.lookup": "use_all_dns_ips",
    "kafka.client.rack": "rack-1",
    "kafka.request.timeout.ms": "30000",
    "kafka.metadata.max.idle.ms": "60000",
}


@pytest.fixture(scope="module")
def fresh(client):
    """Factory: {format: a fresh 3-partition topic}."""

    def make() -> dict[str, str]:
        names = {fmt: f"ps-{fmt}-{uuid.uuid4().hex[:10]}" for fmt in FORMATS}
        create_topics(client, [(name, PARTITIONS) for name in names.values()])
        return names

    return make


@pytest.fixture(scope="module")
def source(bootstrap, fresh) -> str:
    """A 3-partition topic of 12 keyed records, written by librdkafka."""
    topic = fresh()["kafka"]
    producer = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(RECORDS):
        producer.produce(topic, key=f"k{i % 5}".encode(), value=f"v{i}".encode(),
                         partition=i % PARTITIONS)
    assert producer.flush(10) == 0
    return topic


def by_partition(records: list[Consumed]) -> dict[int, Counter]:
    """Each partition's (key, value) records, without their order (parallel tasks write)."""
    out: dict[int, Counter] = {}
    for r in records:
        out.setdefault(r.partition, Counter())[(r.key, r.value)] += 1
    return out


def expected_source() -> Counter:
    return Counter((f"k{i % 5}".encode(), f"v{i}".encode()) for i in range(RECORDS))


def test_one_dict_serves_batch_reads_and_writes(spark, bootstrap, fresh, source):
    """Both formats read the source with the shared dict and return the same rows; each
    writes what it read with the same dict; the two targets hold the same records in the
    same partitions."""
    spark_df, wire_df = read_both(spark, bootstrap, subscribe=source, **SHARED)
    assert_same_rows(spark_df, wire_df)
    targets = fresh()
    for fmt, df in zip(FORMATS, (spark_df, wire_df), strict=True):
        (df.select("key", "value").write.format(fmt)
         .option("kafka.bootstrap.servers", bootstrap).options(**SHARED)
         .option("topic", targets[fmt]).mode("append").save())
    stored = {fmt: consume(bootstrap, targets[fmt], PARTITIONS, RECORDS) for fmt in FORMATS}
    assert by_partition(stored["kafkawire"]) == by_partition(stored["kafka"])
    assert sum(by_partition(stored["kafka"]).values(), Counter()) == expected_source()


def test_one_dict_serves_stream_reads_and_writes(spark, bootstrap, fresh, source, tmp_path):
    """readStream and writeStream of each format with the shared dict (trigger
    AvailableNow): the same records land in the same partitions."""
    targets = fresh()
    for fmt in FORMATS:
        stream = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                  .options(**SHARED).option("subscribe", source)
                  .option("startingOffsets", "earliest").load())
        query = (stream.select("key", "value").writeStream.format(fmt)
                 .option("kafka.bootstrap.servers", bootstrap).options(**SHARED)
                 .option("topic", targets[fmt])
                 .option("checkpointLocation", str(tmp_path / fmt))
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None, (fmt, query.exception())
    stored = {fmt: consume(bootstrap, targets[fmt], PARTITIONS, RECORDS) for fmt in FORMATS}
    assert by_partition(stored["kafkawire"]) == by_partition(stored["kafka"])
    assert sum(by_partition(stored["kafka"]).values(), Counter()) == expected_source()


@pytest.mark.parametrize(("options", "wire_says"), [
    # a name no Kafka client has (a typo): Java's consumer logs and ignores it
    ({"kafka.fetch.max.byte": "1048576"},
     "'kafka.fetch.max.byte' (did you mean 'kafka.fetch.max.bytes'?)"),
    # kafkawire's subscribePattern never matches internal topics; Spark's consumer would
    ({"kafka.exclude.internal.topics": "false"},
     "REFUSED_OPTION] Kafka option 'kafka.exclude.internal.topics=false' is not supported"),
], ids=["typo", "exclude.internal.topics=false"])
def test_read_settings_kafkawire_refuses(spark, bootstrap, source, options, wire_says):
    """Spark's kafka format reads the records; kafkawire refuses with its reason."""
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
          .options(**options).option("subscribe", source).load())
    assert df.count() == RECORDS
    with pytest.raises(Exception) as refused:
        (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
         .options(**options).option("subscribe", source).load().count())
    assert wire_says in str(refused.value), str(refused.value)[:2000]
