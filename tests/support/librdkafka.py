"""librdkafka (confluent-kafka) as the oracle: read or write records with whatever security
settings ``conf`` carries (the secured brokers), read a whole topic (the fault tests)."""

from __future__ import annotations

import time

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
