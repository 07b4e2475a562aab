"""A producer quota on Apache Kafka (issue 28, part 4): Produce answers throttled (KIP-219).

The read side has its proof in tests/integration/test_apache_kafka_log.py (a consumer quota
throttling Fetch). Here a client id gets a ``producer_byte_rate`` quota (Kafka's
ConfigCommand, as ``kafka-configs --alter --entity-type clients``): Kafka then answers a
Produce v6+ at once with ``throttle_time_ms`` and mutes the connection that long; the client
must send nothing more to that broker before the time has passed (a client that does is
muted anyway, and its requests wait in the broker's socket). kafkawire's connection holds
the next request (client/wire/connection.py) and the write still ends with every record once.
Always on Apache Kafka, whatever KAFKAWIRE_TEST_BROKER says.
"""

from __future__ import annotations

import time
import uuid

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings
from spark_kafka_wire.client.wire.hooks import ConnectionHooks
from spark_kafka_wire.protocol.messages import PRODUCE
from tests.support.apache_kafka import topic_on

pytestmark = [pytest.mark.broker]

RATE = 10 << 10  # bytes/s; Kafka measures over at least 10 s, so ~100 KiB pass unthrottled


@pytest.fixture
def quota_client(apache_kafka):
    """A client whose client id has a producer_byte_rate quota of RATE; removed after."""
    client_id = f"produce-quota-{uuid.uuid4().hex[:8]}"
    quota = ["--bootstrap-server", apache_kafka.bootstrap_servers, "--entity-type", "clients",
             "--entity-name", client_id]
    apache_kafka.config_command(*quota, "--alter", "--add-config",
                          f"producer_byte_rate={RATE}")
    client = KafkaClient(ClientConfig.from_servers(apache_kafka.bootstrap_servers,
                                                   request_timeout_ms=15_000,
                                                   client_id=client_id))
    try:
        yield client
    finally:
        client.close()
        apache_kafka.config_command(*quota, "--alter",
                              "--delete-config", "producer_byte_rate")


def test_produce_throttled_by_a_quota_waits_before_the_next_send(apache_kafka, quota_client,
                                                                 monkeypatch):
    reader = KafkaClient(ClientConfig.from_servers(apache_kafka.bootstrap_servers))
    topic = topic_on(reader, 1, "pquota")
    values = [b"%06d" % i + b"p" * 1018 for i in range(300)]  # 1 KiB each, 300 at most
    sends: list[tuple[str, float]] = []  # (connection, when a frame went out)
    answers: list[tuple[str, float, int]] = []  # (connection, received at, throttle ms)
    # a client's connections have one name each (its broker's address)
    watching = quota_client.hooks.add(ConnectionHooks(
        on_request=lambda e: sends.append((e.broker, time.monotonic())),
        on_answer=lambda e: answers.append((e.broker, time.monotonic(), e.throttle_ms))
        if e.api == PRODUCE.name else None))
    settings = ProduceSettings(batch_size=8 << 10, linger_ms=0)
    producer = Producer(quota_client, settings)
    began = time.monotonic()
    n = 0
    # 10 KiB a flush until the producer has waited 1 s for throttles (the first throttled
    # answer comes after ~100 KiB)
    while n < len(values) and (n == 0 or quota_client.leader_connection(topic, 0).throttled_s
                               < 1.0):
        chunk = pa.array(values[n:n + 10], pa.binary())
        producer.append(topic, None, chunk, np.zeros(len(chunk), np.int32),
                        int(time.time() * 1000))
        producer.flush()
        n += len(chunk)
    took = time.monotonic() - began
    quota_client.hooks.remove(watching)

    throttled = [(c, t, ms) for c, t, ms in answers if ms > 0]
    assert throttled, f"Kafka throttled no Produce answer: {answers}"
    for conn, at, ms in throttled:
        early = [s - at for c, s in sends if c == conn and at <= s < at + ms / 1000 - 0.005]
        assert not early, f"sent {early} s after an answer throttled for {ms} ms"
    held = quota_client.leader_connection(topic, 0).throttled_s
    assert held >= 1.0 and took > held, (held, took, throttled)
    got = [v for chunk in fetch_range(reader, topic, 0, 0, n) for v in chunk.values.to_pylist()]
    reader.close()
    assert got == values[:n]  # every record once, in order
