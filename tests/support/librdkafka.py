"""librdkafka (confluent-kafka) as the oracle on the secured brokers: read or write one
partition's records with whatever security settings ``conf`` carries."""

from __future__ import annotations

import time

import confluent_kafka


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


def produce(conf: dict, topic: str, records: list[tuple]) -> None:
    """Write (key, value) records with librdkafka and wait until every one is acknowledged."""
    producer = confluent_kafka.Producer({**conf, "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0
