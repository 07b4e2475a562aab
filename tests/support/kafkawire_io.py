"""kafkawire's own client writing and reading one partition's (key, value) records: the other
side of the librdkafka comparisons of the secured-broker tests, and the round trip those tests
share."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa

from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.groups.group_offsets import commit_offsets, fetch_committed
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
from tests.support.librdkafka import consume, produce


def write_records(client: KafkaClient, topic: str, records: list[tuple]) -> None:
    """Produce (key, value) records to partition 0 with kafkawire's producer."""
    keys = pa.array([k for k, _ in records], pa.binary())
    values = pa.array([v for _, v in records], pa.binary())
    settings = ProduceSettings()
    Producer(client, settings).send(encode_partitioned(
        topic, keys, values, np.zeros(len(records), np.int32), settings, 1_700_000_000_000))


def read_records(client: KafkaClient, topic: str, start: int, end: int) -> list[tuple]:
    """(key, value) of partition 0's offsets [start, end), read by kafkawire's fetcher."""
    rows: list[tuple] = []
    for chunk in fetch_range(client, topic, 0, start, end, FetchSettings()):
        rows.extend(zip(chunk.keys.to_pylist(), chunk.values.to_pylist(), strict=True))
    return rows


def kafkawire_roundtrip(client: KafkaClient, prefix: str, records: list[tuple]) -> str:
    """A fresh one-partition topic named ``prefix-...``: kafkawire writes ``records`` and reads
    them back, and commits and fetches a group offset through the coordinator. The topic."""
    topic = f"{prefix}-{uuid.uuid4().hex[:10]}"
    create_topics(client, [(topic, 1)])
    write_records(client, topic, records)
    assert read_records(client, topic, 0, len(records)) == records
    group = f"g-{topic}"
    commit_offsets(client, group, {(topic, 0): 7})
    assert fetch_committed(client, group, [(topic, 0)]) == {(topic, 0): 7}
    return topic


def librdkafka_roundtrip(client: KafkaClient, conf: dict, topic: str, records: list[tuple]) -> None:
    """After kafkawire_roundtrip: librdkafka reads exactly what kafkawire wrote, then writes
    ``records`` again, which kafkawire reads exactly."""
    assert consume(conf, topic, len(records), 30) == records
    produce(conf, topic, records)
    assert read_records(client, topic, len(records), 2 * len(records)) == records
