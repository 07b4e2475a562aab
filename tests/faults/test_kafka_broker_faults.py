"""Apache Kafka killed -9 and restarted under kafkawire's writes and reads (issue 28, part 2).

The broker is a :class:`~tests.support.killable_kafka.KillableKafka`: one Kafka node behind a
fault proxy, killed with requests in flight and started again on the same ports and log
directory (no courtesy before the kill, unlike the durable Tansu's procedure: Kafka keeps
what it acknowledged through the death of its process). Verdicts are exact, by the ids each
record carries (tests/support/id_oracle.py; librdkafka reads the topic back):

- kafkawire's idempotent producer writes every id exactly once through the crash: its
  batches in flight are re-sent after the restart and the broker, which rebuilt the
  producer's sequence numbers from its log, recognises those it already has;
- a read (the client's range reader) across the crash returns every id once;
- Spark: a batch write, a batch read and a streaming query through the crash (the scenarios
  of tests/faults/test_spark_faults.py, run on Kafka).

The crash is timed by the proxy's byte counters (a fifth of the traffic in), so it lands in
the middle of the work; a test fails if it never fired. Longer variants (three crashes, more
rows) carry the ``soak`` marker.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import LATEST, resolve_offsets
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings
from tests.faults.test_spark_faults import (
    Fault,
    _check_read_through_crashes,
    _check_write_exact,
    _stream_through_crashes,
    bytes_read_beyond,
    bytes_sent_beyond,
)
from tests.support.apache_kafka import missing_tools
from tests.support.id_oracle import count_ids, id_bytes, tally
from tests.support.id_producer import produce_ids
from tests.support.kept_logs import logs_kept_on_failure
from tests.support.killable_kafka import KillableKafka

pytestmark = [pytest.mark.broker]

SOAK = pytest.mark.skipif(not os.environ.get("KAFKAWIRE_SOAK"),
                          reason="long variant: run with make soak (KAFKAWIRE_SOAK=1)")
WRITE_IDS = 60_000
CHUNK = 2_000  # ids per append
PARTITIONS = 3
READ_IDS = 100_000
SPARK_WRITE_ROWS = 150_000  # the Tansu scenario's 300,000 took 22 s here
WIRE_BYTES_PER_ID = 30  # an id record in a batch, with its share of the request or answer


@pytest.fixture(scope="module")
def killable_kafka(request):
    """One KillableKafka for the module (each test makes its own topics; the broker is
    running again when a test ends). Its logs are kept if a test failed."""
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        pytest.skip("the fault tests need a broker they can kill (KAFKA_BOOTSTRAP_SERVERS set)")
    missing = missing_tools()
    if missing:
        pytest.skip(missing)
    broker = KillableKafka()
    with logs_kept_on_failure(request, broker.close, "the killed Kafka",
                              lambda: broker.kafka.directory):
        yield broker


def _client(broker: KillableKafka) -> KafkaClient:
    # reads retry refused connections for request.timeout.ms: longer than a restart
    return KafkaClient(ClientConfig.from_servers(broker.bootstrap, request_timeout_ms=60_000))


def _write_ids(broker: KillableKafka, topic: str, n: int) -> Producer:
    """kafkawire's idempotent producer (acks=all): ids 0..n-1, id i to partition i % 3."""
    client = _client(broker)
    settings = ProduceSettings(acks=-1, enable_idempotence=True, batch_size=16 << 10)
    producer = Producer(client, settings)
    try:
        for lo in range(0, n, CHUNK):
            ids = np.arange(lo, min(n, lo + CHUNK))
            values = pa.array([id_bytes(int(i)) for i in ids], pa.binary())
            producer.append(topic, values, values, (ids % PARTITIONS).astype(np.int32),
                            int(time.time() * 1000))
        producer.flush()
    finally:
        client.close()
    return producer


def _write_through_crashes(broker: KillableKafka, n: int, crashes: int, record_fact) -> None:
    topic = broker.new_topic(PARTITIONS)
    base = broker.proxy.stats().bytes_to_broker
    total = n * WIRE_BYTES_PER_ID
    restarts: list[float] = []
    crash = Fault(broker, [bytes_sent_beyond(base, total * (1 + 3 * i // crashes) // 5)
                           for i in range(crashes)],
                  lambda: restarts.append(broker.crash_and_restart(down_s=1.0)))
    began = time.monotonic()
    with crash:
        producer = _write_ids(broker, topic, n)
        took = time.monotonic() - began
        fired = crash.join()
    assert fired == crashes, f"{fired} of {crashes} crashes: the write ended first"
    assert producer.producer_id >= 0, "the producer was not idempotent"
    count = count_ids(broker.bootstrap, topic, range(n), timeout_s=120)
    record_fact(f"{n} ids through {crashes} kill -9 (restarts {restarts} s) in {took:.1f} s, "
                f"{producer.epoch_bumps} epoch bumps: {count.summary()}")
    count.assert_exactly_once()


def test_idempotent_write_through_kill9_is_exactly_once(killable_kafka, record_fact):
    _write_through_crashes(killable_kafka, WRITE_IDS, 1, record_fact)


@pytest.mark.soak
@SOAK
def test_soak_idempotent_write_through_three_kill9(killable_kafka, record_fact):
    _write_through_crashes(killable_kafka, 10 * WRITE_IDS, 3, record_fact)


def _read_through_crashes(broker: KillableKafka, n: int, crashes: int, record_fact) -> None:
    topic = broker.new_topic(PARTITIONS)
    produce_ids(broker.bootstrap, topic, n)
    client = _client(broker)
    ends = resolve_offsets(client, {(topic, p): LATEST for p in range(PARTITIONS)})
    base = broker.proxy.stats().bytes_to_client
    total = n * WIRE_BYTES_PER_ID
    crash = Fault(broker, [bytes_read_beyond(base, total * (1 + 3 * i // crashes) // 5)
                           for i in range(crashes)],
                  lambda: broker.crash_and_restart(down_s=1.0))
    values: list[bytes] = []
    small = FetchSettings(max_partition_fetch_bytes=32 << 10, fetch_max_bytes=32 << 10)
    began = time.monotonic()
    try:
        with crash:
            for p in range(PARTITIONS):
                for chunk in fetch_range(client, topic, p, 0, ends[(topic, p)], small):
                    values += chunk.values.to_pylist()
                    time.sleep(0.001)  # a reader that works on what it read
            took = time.monotonic() - began
            fired = crash.join()
    finally:
        client.close()
    assert fired == crashes, f"{fired} of {crashes} crashes: the read ended first"
    count = tally(values, range(n))
    record_fact(f"read of {n} ids through {crashes} kill -9 in {took:.1f} s: "
                f"{count.summary()}")
    count.assert_exactly_once()


def test_read_through_kill9_is_exact(killable_kafka, record_fact):
    _read_through_crashes(killable_kafka, READ_IDS, 1, record_fact)


@pytest.mark.soak
@SOAK
def test_soak_read_through_three_kill9(killable_kafka, record_fact):
    _read_through_crashes(killable_kafka, 10 * READ_IDS, 3, record_fact)


# ------------------------------------------------------------------------------ Spark

@pytest.mark.spark
def test_spark_batch_write_through_kill9_is_exactly_once(spark, killable_kafka):
    _check_write_exact(spark, killable_kafka, SPARK_WRITE_ROWS, crashes=1)


@pytest.mark.spark
def test_spark_batch_read_through_kill9_is_exact(spark, killable_kafka):
    _check_read_through_crashes(spark, killable_kafka, 300_000, crashes=1)


@pytest.mark.spark
@pytest.mark.soak
@SOAK
def test_soak_spark_stream_through_kill9_is_exactly_once(spark, killable_kafka, tmp_path):
    """The query outlives the crash (about 7 s without a broker: kill, 1 s down, a 6 s
    start) within kafka.request.timeout.ms; 23 s on two shared cores, hence soak."""
    _stream_through_crashes(spark, killable_kafka, tmp_path, crashes=1)


@pytest.mark.spark
@pytest.mark.soak
@SOAK
def test_soak_spark_stream_through_three_kill9(spark, killable_kafka, tmp_path):
    _stream_through_crashes(spark, killable_kafka, tmp_path, crashes=3, batches_between=5)
