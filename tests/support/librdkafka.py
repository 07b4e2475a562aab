"""librdkafka (confluent-kafka) as the oracle: read or write records with whatever security
settings ``conf`` carries (the secured brokers), read a whole topic (the fault tests)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic


def consume(conf: dict, topic: str, n: int, timeout_s: float = 60) -> list[tuple]:
    """(key, value) of the first ``n`` records of partition 0 of ``topic``, as librdkafka
    reads them (fewer if they do not arrive within ``timeout_s``)."""
    consumer = confluent_kafka.Consumer({**conf, "group.id": f"g-{topic}",
                                         "enable.auto.commit": False})
    got: list[tuple] = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout_s
        while len(got) < n and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return got


def create_topic(conf: dict, topic: str, partitions: int = 1, timeout_s: float = 30) -> None:
    """Create ``topic`` with librdkafka's admin client and wait for the broker's answer."""
    admin = AdminClient(conf)
    futures = admin.create_topics([NewTopic(topic, partitions, 1)],
                                  operation_timeout=timeout_s, request_timeout=timeout_s)
    futures[topic].result(timeout_s)


def produce(conf: dict, topic: str, records: list[tuple]) -> None:
    """Write (key, value) records with librdkafka and wait until every one is acknowledged."""
    producer = confluent_kafka.Producer({**conf, "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0


def produce_numbered(conf: dict, topic: str, partitions: int, per_partition: int,
                     first: int = 0) -> None:
    """``per_partition`` records into each of the first ``partitions`` partitions, key
    ``k<p>-<j>`` and value ``v<p>-<j>`` for j from ``first``: records a test can tell apart
    and count by partition."""
    producer = confluent_kafka.Producer({**conf, "linger.ms": 5})
    for p in range(partitions):
        for j in range(first, first + per_partition):
            producer.produce(topic, f"v{p}-{j}".encode(), f"k{p}-{j}".encode(), partition=p)
    assert producer.flush(60) == 0


def consume_all(conf: dict, topic: str, timeout_s: float = 60) -> list[confluent_kafka.Message]:
    """Every record of every partition of ``topic``, as librdkafka reads them: from offset 0
    (an explicit offset, since Tansu's ListOffsets(-2) can answer a later one) up to the high
    watermark of each partition's Fetch responses (partition EOF). AssertionError if some
    partition has not reached its end within ``timeout_s``."""
    consumer = confluent_kafka.Consumer({**conf, "group.id": f"g-all-{topic}",
                                         "enable.auto.commit": False,
                                         "enable.partition.eof": True})
    got: list[confluent_kafka.Message] = []
    try:
        partitions = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
        assert partitions, f"topic {topic} has no partitions"
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in partitions])
        waiting = set(partitions)
        deadline = time.monotonic() + timeout_s
        while waiting:
            assert time.monotonic() < deadline, (
                f"partitions {sorted(waiting)} of {topic} not read to their end in "
                f"{timeout_s}s ({len(got)} records read)")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF, \
                    msg.error()
                waiting.discard(msg.partition())
                continue
            got.append(msg)
    finally:
        consumer.close()
    return got


def produce_records(bootstrap: str, topic: str, records: Iterable[dict[str, Any]],
                    linger_ms: int = 0) -> None:
    """``records``: ``Producer.produce`` keyword arguments (value, key, partition, timestamp,
    headers); ``linger_ms`` > 0 groups them into batches, else each is a batch of its own."""
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms,
                                  "log_level": 0})
    for r in records:
        p.produce(topic, **r)
        if not linger_ms:
            p.flush(10)
    assert p.flush(10) == 0


#: CreateTime timestamps (ms after a base) of the two partitions of a timestamp test topic:
#: partition 0 gets five one-record batches then one batch (a repeated and a decreasing
#: timestamp among them), partition 1 one batch.
TIMESTAMPS_P0 = (100, 200, 300, 300, 500, 600, 800, 700, 900)
TIMESTAMPS_P1 = (150, 250, 400)


def produce_timestamped(bootstrap: str, topic: str, base: int) -> None:
    """Fills a two-partition topic with values ``p<partition>-<i>`` stamped ``base +``
    TIMESTAMPS_P0 / TIMESTAMPS_P1: what the timestamp-option tests resolve against."""
    p0, p1 = TIMESTAMPS_P0, TIMESTAMPS_P1
    produce_records(bootstrap, topic, [{"value": b"p0-%d" % i, "partition": 0,
                                        "timestamp": base + t} for i, t in enumerate(p0[:5])])
    produce_records(bootstrap, topic,
                    [{"value": b"p0-%d" % (5 + i), "partition": 0, "timestamp": base + t}
                     for i, t in enumerate(p0[5:])]
                    + [{"value": b"p1-%d" % i, "partition": 1, "timestamp": base + t}
                       for i, t in enumerate(p1)], linger_ms=300)

