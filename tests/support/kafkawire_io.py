"""kafkawire's own client writing and reading one partition's (key, value) records: the other
side of the librdkafka comparisons of the secured-broker tests."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from spark_kafka_wire.client.cluster import KafkaClient
from spark_kafka_wire.client.fetcher import FetchSettings, fetch_range
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned


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
