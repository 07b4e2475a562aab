"""Helpers shared by the write-side tests: what a broker stored, seen without our decoder.

Stored batches are read from raw Fetch bytes (their 61-byte headers parsed here with struct),
and records through librdkafka (confluent-kafka), the independent reader.
"""

from __future__ import annotations

import struct
import time
import uuid
from dataclasses import dataclass

import confluent_kafka as ck

from spark_kafka_wire.client.fetching.offsets import LATEST, resolve_offsets
from spark_kafka_wire.protocol.messages import FETCH

_HEADER = struct.Struct(">qiibIhiqqqhii")
CONSUME_TIMEOUT_S = 30


@dataclass(frozen=True)
class StoredBatch:
    base_offset: int
    magic: int
    attributes: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: int

    @property
    def codec(self) -> int:
        return self.attributes & 0x07


def stored_batches(client, topic: str, partition: int) -> list[StoredBatch]:
    """Every record batch (magic 2) stored in a partition, from the raw Fetch bytes."""
    conn = client.leader_connection(topic, partition)
    out: list[StoredBatch] = []
    offset = 0
    while True:
        resp = conn.request(FETCH, {
            "max_wait_ms": 50, "min_bytes": 1, "max_bytes": 64 << 20, "isolation_level": 0,
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset,
                 "partition_max_bytes": 64 << 20}]}],
        })
        part = resp["responses"][0]["partitions"][0]
        assert part["error_code"] == 0, part["error_code"]
        data = bytes(part["records"] or b"")
        pos, before = 0, len(out)
        while len(data) - pos >= _HEADER.size:
            (base, length, _, magic, _, attrs, last_delta, _, max_ts, pid, epoch, seq,
             count) = _HEADER.unpack_from(data, pos)
            if pos + 12 + length > len(data):
                break
            if base >= offset:
                out.append(StoredBatch(base, magic, attrs, max_ts, pid, epoch, seq, count))
            offset = max(offset, base + last_delta + 1)
            pos += 12 + length
        if len(out) == before:
            return out


def end_offsets(client, topic: str, partitions: int) -> dict[int, int]:
    got = resolve_offsets(client, {(topic, p): LATEST for p in range(partitions)})
    return {p: got[(topic, p)] for p in range(partitions)}


@dataclass(frozen=True)
class Consumed:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list | None
    timestamp: tuple[int, int]


def consume(bootstrap: str, topic: str, partitions: int, expected: int,
            linger_s: float = 0.3) -> list[Consumed]:
    """Every record of ``topic`` as librdkafka reads it, in (partition, offset) order; fails
    unless exactly ``expected`` records arrive (it keeps polling ``linger_s`` after the last
    expected one, so a duplicate makes it fail)."""
    consumer = ck.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"w-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 3,
    })
    seen: list[Consumed] = []
    try:
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        while len(seen) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            seen.append(Consumed(msg.partition(), msg.offset(), msg.key(), msg.value(),
                                 msg.headers(), msg.timestamp()))
        # anything beyond `expected` is a duplicate the caller must see
        extra_deadline = time.monotonic() + linger_s
        while time.monotonic() < extra_deadline:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                seen.append(Consumed(msg.partition(), msg.offset(), msg.key(), msg.value(),
                                     msg.headers(), msg.timestamp()))
    finally:
        consumer.close()
    assert len(seen) == expected, f"librdkafka read {len(seen)} records of {topic}, not {expected}"
    return sorted(seen, key=lambda c: (c.partition, c.offset))


def librdkafka_placement(bootstrap: str, topic: str, keys: list[bytes | None],
                         partitioner: str) -> list[int]:
    """The partition librdkafka's producer (with ``partitioner``) gives each key, in order."""
    producer = ck.Producer({"bootstrap.servers": bootstrap, "partitioner": partitioner,
                            "linger.ms": 5, "log_level": 3})
    placed: dict[int, int] = {}
    errors: list[str] = []

    def on_delivery(i: int):
        def report(err, msg) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                placed[i] = msg.partition()
        return report

    for i, key in enumerate(keys):
        producer.produce(topic, key=key, value=b"x", on_delivery=on_delivery(i))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors
    return [placed[i] for i in range(len(keys))]
