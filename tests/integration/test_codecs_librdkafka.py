"""librdkafka (confluent-kafka) produces with every codec; kafkawire reads the exact records."""

from __future__ import annotations

import confluent_kafka
import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import resolve_offsets
from spark_kafka_wire.client.metadata.cluster import KafkaClient

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _records(n: int) -> list[tuple[bytes | None, bytes | None, int]]:
    rnd = np.random.default_rng(42)
    out: list[tuple[bytes | None, bytes | None, int]] = []
    for i in range(n):
        key = None if i % 7 == 0 else b"key-%d" % i
        if i % 11 == 0:
            value = None
        elif i % 5 == 0:
            value = bytes(rnd.integers(0, 256, size=int(rnd.integers(0, 3000)), dtype=np.uint8))
        else:
            value = (b"compressible %d " % i) * int(rnd.integers(1, 40))
        out.append((key, value, 1_700_000_000_000 + i * 13))
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_codec_read_exactly(codec: str, bootstrap: str, client: KafkaClient, new_topic) -> None:
    topic = new_topic(1, f"codec-{codec}")
    records = _records(600)
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20,
        "batch.num.messages": 200, "enable.idempotence": False, "acks": "all",
    })
    for key, value, ts in records:
        producer.produce(topic, key=key, value=value, partition=0, timestamp=ts)
    assert producer.flush(30) == 0
    end = resolve_offsets(client, {(topic, 0): -1})[(topic, 0)]
    assert end == len(records)
    chunks = list(fetch_range(client, topic, 0, 0, end, FetchSettings(max_partition_fetch_bytes=64 << 10)))
    offsets = np.concatenate([c.offsets for c in chunks]).tolist()
    keys = pa.concat_arrays([c.keys for c in chunks]).to_pylist()
    values = pa.concat_arrays([c.values for c in chunks]).to_pylist()
    timestamps = np.concatenate([c.timestamps for c in chunks]).tolist()
    assert offsets == list(range(len(records)))
    assert keys == [k for k, _, _ in records]
    assert values == [v for _, v, _ in records]
    assert timestamps == [t for _, _, t in records]
