"""Log and topic changes against Apache Kafka itself (issue 28, item 3): what only a real
broker shows. Records deleted below a read (DeleteRecords), partitions added to a live topic
(CreatePartitions), a topic's max.message.bytes refusing batches, and a client quota throttling
Fetch answers (KIP-219). These tests always use Apache Kafka (tests/support/apache_kafka.py),
whatever KAFKAWIRE_TEST_BROKER says; they skip only where Java or Maven is missing."""

from __future__ import annotations

import logging
import re
import time
import uuid

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import DataLossError
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import EARLIEST, LATEST, list_offsets
from spark_kafka_wire.client.metadata.admin import create_partitions, delete_records
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings
from spark_kafka_wire.client.wire.hooks import ConnectionHooks
from spark_kafka_wire.protocol.errors import (
    InvalidRequestError,
    MessageTooLargeError,
    UnknownTopicOrPartitionError,
)
from spark_kafka_wire.protocol.messages import FETCH
from tests.support.apache_kafka import topic_on
from tests.support.errors import raises_condition

pytestmark = [pytest.mark.broker]


@pytest.fixture(scope="module")
def kafka(apache_kafka):
    return apache_kafka


@pytest.fixture(scope="module")
def kclient(kafka) -> KafkaClient:
    c = KafkaClient(ClientConfig.from_servers(kafka.bootstrap_servers, request_timeout_ms=15_000))
    yield c
    c.close()


def _write(client: KafkaClient, topic: str, partition: int, values: list[bytes],
           settings: ProduceSettings | None = None) -> Producer:
    # append numbers the batches when the producer is idempotent (Producer.send sends
    # pre-encoded batches as they are: without a producer id, never idempotent)
    settings = settings or ProduceSettings()
    producer = Producer(client, settings)
    producer.append(topic, None, pa.array(values, pa.binary()),
                    np.full(len(values), partition, np.int32), int(time.time() * 1000))
    producer.flush()
    return producer


def _read(client: KafkaClient, topic: str, partition: int, start: int, end: int,
          settings: FetchSettings | None = None, fail: bool = True) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    for chunk in fetch_range(client, topic, partition, start, end, settings or FetchSettings(),
                             fail):
        out += zip(chunk.offsets.tolist(), chunk.values.to_pylist(), strict=True)
    return out


# ------------------------------------------------------------------------- DeleteRecords


def test_delete_records_moves_the_log_start_and_reads_follow(kclient, caplog):
    """DeleteRecords moves the log start offset (Kafka answers the new low watermark, and
    ListOffsets earliest says it too); a read of offsets below it is data loss naming the
    topic, partition and lost range, or (failOnDataLoss false) a warning and the rest."""
    topic = topic_on(kclient, prefix="delrec")
    _write(kclient, topic, 0, [b"v%d" % i for i in range(10)])
    assert delete_records(kclient, {(topic, 0): 4}) == {(topic, 0): 4}
    assert list_offsets(kclient, {(topic, 0): EARLIEST}) == {(topic, 0): 4}
    assert list_offsets(kclient, {(topic, 0): LATEST}) == {(topic, 0): 10}
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE") as got:
        _read(kclient, topic, 0, 1, 10)
    assert re.search(rf"cannot read offsets \[1, 4\) of {topic}-0: the "
                     r"log now starts at offset 4.*failOnDataLoss", str(got.value)), got.value
    assert (got.value.topic, got.value.partition, got.value.start, got.value.end) == \
        (topic, 0, 1, 4)
    with caplog.at_level(logging.WARNING, logger="spark_kafka_wire"):
        assert _read(kclient, topic, 0, 1, 10, fail=False) == \
            [(i, b"v%d" % i) for i in range(4, 10)]
    assert re.search(rf"Skipping offsets \[1, 4\) of {topic}-0: the log now starts at offset 4",
                     caplog.text)
    # -1: everything up to the high watermark
    assert delete_records(kclient, {(topic, 0): -1}) == {(topic, 0): 10}
    assert _read(kclient, topic, 0, 4, 10, fail=False) == []


# ---------------------------------------------------------------------- CreatePartitions


def test_create_partitions_grows_a_live_topic(kclient):
    topic = topic_on(kclient, 1, "grow")
    _write(kclient, topic, 0, [b"a", b"b"])
    create_partitions(kclient, {topic: 3})
    md = kclient.fetch_metadata([topic])
    assert sorted(md.topics[topic].partitions) == [0, 1, 2]
    # the new partitions take writes at once, from offset 0
    _write(kclient, topic, 2, [b"c"])
    assert _read(kclient, topic, 2, 0, 1) == [(0, b"c")]
    assert list_offsets(kclient, {(topic, 1): LATEST, (topic, 0): LATEST}) == \
        {(topic, 1): 0, (topic, 0): 2}
    with raises_condition(InvalidRequestError, "KAFKA_BROKER_ERROR.INVALID_PARTITIONS") as info:
        create_partitions(kclient, {topic: 2})
    assert re.search(rf"INVALID_PARTITIONS.*CreatePartitions.*{topic}.*3", str(info.value)), \
        info.value
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    with raises_condition(UnknownTopicOrPartitionError,
                          "KAFKA_BROKER_ERROR.UNKNOWN_TOPIC_OR_PARTITION", missing):
        create_partitions(kclient, {missing: 2})


# --------------------------------------------------------------------- max.message.bytes


def test_a_record_larger_than_the_topic_accepts_names_the_setting(kclient):
    topic = topic_on(kclient, 1, "small", {"max.message.bytes": "2048"})
    with pytest.raises(MessageTooLargeError) as got:
        _write(kclient, topic, 0, [b"x" * 4000])
    assert (got.value.topic, got.value.partition) == (topic, 0)
    text = str(got.value)
    assert "MESSAGE_TOO_LARGE" in text and f"{topic}" in text and "partition 0" in text, text
    assert "max.message.bytes" in text and "a batch of 1 record is" in text, text
    assert list_offsets(kclient, {(topic, 0): LATEST}) == {(topic, 0): 0}


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "acks1"])
def test_a_batch_larger_than_the_topic_accepts_is_split(kclient, idempotent):
    """200 records of 100 bytes make one ~25 kB batch (batch.size is 512 KiB); the topic takes
    batches of 2 kB at most: Kafka refuses the batch (MESSAGE_TOO_LARGE) and the producer
    splits it in halves until each fits, as Java's producer does, keeping the records' order
    (and, idempotent, their sequence numbers: no duplicate, no gap)."""
    topic = topic_on(kclient, 1, "split", {"max.message.bytes": "2048"})
    settings = ProduceSettings(enable_idempotence=idempotent, acks=-1 if idempotent else 1)
    values = [b"%05d" % i + b"." * 95 for i in range(200)]
    producer = _write(kclient, topic, 0, values, settings)
    assert producer.records_sent == 200
    assert (producer.producer_id >= 0) == idempotent  # the batches carried sequence numbers
    assert producer.requests_sent > 16  # at least 16 batches of ~1.6 kB got through
    assert _read(kclient, topic, 0, 0, 200) == list(enumerate(values))


# ------------------------------------------------------------------------------- quotas


@pytest.fixture
def throttled_client(kafka):
    """A client whose client id has a consumer_byte_rate quota of 25 KiB/s on the broker
    (Kafka's ConfigCommand, as `kafka-configs --alter --entity-type clients`); the quota is
    removed afterwards."""
    client_id = f"throttled-{uuid.uuid4().hex[:8]}"
    quota = ["--bootstrap-server", kafka.bootstrap_servers, "--entity-type", "clients",
             "--entity-name", client_id]
    kafka.config_command(*quota, "--alter", "--add-config",
                   "consumer_byte_rate=25600")
    client = KafkaClient(ClientConfig.from_servers(kafka.bootstrap_servers,
                                                   request_timeout_ms=15_000,
                                                   client_id=client_id))
    try:
        yield client
    finally:
        client.close()
        kafka.config_command(*quota, "--alter", "--delete-config",
                       "consumer_byte_rate")


def test_fetch_throttled_by_a_quota_waits_before_the_next_send(kclient, throttled_client,
                                                               monkeypatch):
    """Kafka answers Fetch v8+ at once with throttle_time_ms when the client id is over its
    quota, and mutes the connection that long (KIP-219): the reader sends nothing more to
    that broker before the throttle has passed, and still reads every record."""
    topic = topic_on(kclient, 1, "quota")
    values = [b"%06d" % i + b"q" * 1018 for i in range(300)]  # ~300 KiB
    _write(kclient, topic, 0, values, ProduceSettings(batch_size=16 << 10))

    sends: list[tuple[str, float]] = []  # (connection, monotonic time the frame went out)
    answers: list[tuple[str, float, int]] = []  # (connection, received at, throttle ms)
    # a client's connections have one name each (its broker's address)
    watching = throttled_client.hooks.add(ConnectionHooks(
        on_request=lambda e: sends.append((e.broker, time.monotonic())),
        on_answer=lambda e: answers.append((e.broker, time.monotonic(), e.throttle_ms))
        if e.api == FETCH.name else None))
    began = time.monotonic()
    got = _read(throttled_client, topic, 0, 0, 300,
                FetchSettings(max_partition_fetch_bytes=16 << 10, fetch_max_bytes=16 << 10))
    took = time.monotonic() - began
    throttled_client.hooks.remove(watching)
    assert got == list(enumerate(values))
    throttled = [(c, t, ms) for c, t, ms in answers if ms > 0]
    assert throttled, f"Kafka throttled no Fetch answer: {answers}"
    for conn, at, ms in throttled:
        early = [s - at for c, s in sends if c == conn and at <= s < at + ms / 1000 - 0.005]
        assert not early, f"sent {early} s after an answer throttled for {ms} ms"
    # Kafka measures the rate over at least 10 s (11 one-second samples), so ~250 KiB pass
    # before the first throttle; the rest is held back (unthrottled, the read takes < 1 s)
    assert took > 1.0 and throttled_client.leader_connection(topic, 0).throttled_s > 0.5, (took, answers)
