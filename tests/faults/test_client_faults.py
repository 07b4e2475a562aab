"""Our client (no Spark) against the fault harness: writes, reads, stalls, damaged answers.

Every scenario runs our Producer or the source's read path through the FaultProxy in front of
a durable Tansu (tests/faults/conftest.py) and checks the outcome with an oracle: the id
oracle (librdkafka reads every id back and counts lost and duplicated ones) for writes,
librdkafka's view of each partition (offsets and values, in order) for reads.

What the client does per fault, and why (following Kafka's Java clients):

- A connection closed, reset or refused, an answer cut mid-frame (the proxy's cut_after and
  truncate), a broker crash: retried. The connection is gone and nothing was decoded, so the
  request is simply sent again on a new one (Java's NetworkClient reports a disconnect and the
  consumer and producer retry). Reads and metadata retry for kafka.request.timeout.ms, writes
  for kafka.delivery.timeout.ms; the idempotent producer's re-sent batches are deduplicated
  by the broker, so a write is exactly once; without idempotence a re-sent batch whose answer
  was lost is stored twice (at least once, as Java's producer with enable.idempotence=false).
- No answer within kafka.request.timeout.ms, no connection within
  kafka.socket.connection.setup.timeout.ms: RequestTimeoutError / ConnectionSetupTimeoutError
  naming the broker and the setting, at once for reads and metadata (a broker that took the
  whole time is not waited for twice); a write keeps trying until kafka.delivery.timeout.ms,
  as Java's producer, and then fails naming the topic, partition and the last error. That
  deadline bounds every wait of the write, so an attempt begun just before it does not
  overrun it by another request timeout.
- Record data that fails its CRC (kafka.check.crcs, on by default): CorruptRecordError
  naming topic, partition, offset and broker; not retried. Java's consumer does the same
  (CorruptRecordException is not retriable: poll() throws, "seek past the record"); the
  retry is Spark's task retry, which fetches again. With check.crcs off a damaged record is
  returned as it came, as by Java's consumer: that is what turning the check off means.
  The CRC does not cover a batch's first 21 bytes: a damaged length makes the CRC span wrong
  (or the batch look cut off, and it is fetched again), a damaged base offset is caught by
  the order of batches (offsets only grow along a log); only the last batch of an answer
  moved further on goes unnoticed, as by every Kafka client.
- An answer that does not parse (an impossible array length or string, trailing bytes, a
  corrupted correlation id): ProtocolError naming the broker and the request, the connection
  closed (the size prefix that delimited the answer may be damaged too, so nothing more is
  read from it), not retried: Java's NetworkClient lets such a SchemaException or
  CorrelationIdMismatchException escape poll(), and Kafka's clients do not retry it. The
  client stays usable: the next request opens a new connection. An answer that parses but
  does not answer the request (a partition missing, or not asked for, from a Fetch, Produce
  or watermark answer; Metadata numbering a topic's partitions other than 0..n-1) is a
  ProtocolError too, where a damaged Metadata or watermark answer could make a read skip
  rows of a partition, or all of it, silently. A flipped error code is an answer like any other: a retriable code is
  retried (the next answer is clean), a code no Kafka defines is a typed KafkaError naming
  topic, partition, offset and broker.
  What no check can see: a flipped flag or number that is still valid (Metadata's is_internal
  makes a subscribed topic look internal, which is not read), as with any Kafka client.

Each test records a measured fact (duration, retries, epoch bumps) that the terminal summary
prints under "fault facts".
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import (
    ConnectionSetupTimeoutError,
    DeliveryTimeoutError,
    NoBrokersAvailableError,
    RequestTimeoutError,
)
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.metadata.cluster_adapters import KafkaCluster
from spark_kafka_wire.client.producer import PendingBatch, Producer, ProduceSettings
from spark_kafka_wire.client.wire.hooks import ConnectionHooks
from spark_kafka_wire.protocol.errors import (
    CorruptRecordError,
    KafkaWireError,
    ProtocolError,
)
from spark_kafka_wire.protocol.messages import FETCH, METADATA, PRODUCE
from spark_kafka_wire.source.batch_reader import KafkaWireBatchReader
from spark_kafka_wire.source.options import parse_source_options
from spark_kafka_wire.source.planning import plan_ranges
from tests.support.durable_tansu import DurableBroker
from tests.support.errors import raises_condition
from tests.support.id_oracle import IdCount, count_ids, id_bytes
from tests.support.librdkafka import consume_all, create_topic, produce

pytestmark = pytest.mark.broker

SENDER_LOG = "spark_kafka_wire.client.producer.sender"


def _client(broker: DurableBroker, **config: object) -> KafkaClient:
    config.setdefault("request_timeout_ms", 10_000)
    return KafkaClient(ClientConfig.from_servers(broker.bootstrap, **config))


# ------------------------------------------------------------------------------ writes


@dataclass
class WriteRun:
    """What one write saw: its duration, the retry rounds and batches the sender logged,
    the epoch bumps and the fault's own result (e.g. the broker's restart time)."""

    seconds: float
    retry_rounds: int
    batches_retried: int
    epoch_bumps: int
    records_sent: int
    fault_result: object = None
    fault_errors: list[BaseException] = field(default_factory=list)


def _id_values(start: int, n: int) -> pa.Array:
    return pa.array([id_bytes(i) for i in range(start, start + n)], pa.binary())


def write_ids(producer: Producer, topic: str, n: int, partitions: int, caplog,
              fault: Callable[[], object] | None = None, fault_at: float = 0.2,
              start: int = 0, step: int = 1000) -> WriteRun:
    """Append ids ``start`` .. ``start + n - 1`` (key = value = the id, round-robin over the
    partitions) in steps, then flush. ``fault`` runs in a thread once the brokers have
    acknowledged ``fault_at`` of the records, while the rest are being written."""
    caplog.set_level(logging.INFO, logger="spark_kafka_wire.client.producer")
    caplog.clear()
    values = _id_values(start, n)
    parts = (np.arange(start, start + n) % partitions).astype(np.int32)
    run = WriteRun(0.0, 0, 0, 0, 0)

    def inject() -> None:
        while producer.records_sent < fault_at * n and not done.is_set():
            time.sleep(0.002)
        try:
            assert fault is not None
            run.fault_result = fault()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            run.fault_errors.append(exc)

    done = threading.Event()
    thread = threading.Thread(target=inject, daemon=True) if fault else None
    began = time.monotonic()
    if thread:
        thread.start()
    try:
        for lo in range(0, n, step):
            chunk = values.slice(lo, step)
            producer.append(topic, chunk, chunk, parts[lo:lo + step], 1_700_000_000_000)
        producer.flush()
    finally:
        run.seconds = time.monotonic() - began
        done.set()
        if thread:
            thread.join(30)
    rounds = [r for r in caplog.records
              if r.name == SENDER_LOG and r.getMessage().startswith("retrying")]
    run.retry_rounds = len(rounds)
    run.batches_retried = sum(int(r.args[0]) for r in rounds)  # type: ignore[index]
    run.epoch_bumps = producer.epoch_bumps
    run.records_sent = producer.records_sent
    assert not run.fault_errors, run.fault_errors
    return run


def _fact(record_fact, what: str, run: WriteRun, count: IdCount) -> None:
    record_fact(f"{what}: {run.records_sent} records in {run.seconds:.2f} s, "
                f"{run.retry_rounds} retry rounds ({run.batches_retried} batches re-sent), "
                f"{run.epoch_bumps} epoch bumps; oracle: lost {count.lost}, duplicated "
                f"{count.duplicated}")


N_CRASH = 100_000
N_FAULT = 50_000
PARTITIONS = 3
# 16 KiB batches of ~6-byte ids: about 70 Produce requests for 100k ids, a few seconds on
# Tansu-on-S3, so a fault injected after 20% lands while most records are still unsent.
BATCH = 16 << 10
DELIVERY_MS = 30_000


def _producer(client: KafkaClient, **settings: object) -> Producer:
    settings.setdefault("batch_size", BATCH)
    settings.setdefault("delivery_timeout_ms", DELIVERY_MS)
    return Producer(client, ProduceSettings(**settings))  # type: ignore[arg-type]


def test_idempotent_write_is_exactly_once_across_a_broker_crash(durable_broker, caplog,
                                                                record_fact):
    topic = durable_broker.new_topic(PARTITIONS)
    with _client(durable_broker) as client:
        producer = _producer(client)
        run = write_ids(producer, topic, N_CRASH, PARTITIONS, caplog,
                        fault=lambda: durable_broker.crash_and_restart(down_s=1.0))
    assert producer.idempotent
    assert run.seconds < DELIVERY_MS / 1000
    assert run.retry_rounds >= 1, "the crash must come with records in flight"
    count = count_ids(durable_broker.bootstrap, topic, range(N_CRASH))
    _fact(record_fact, "idempotent write across crash_and_restart", run, count)
    count.assert_exactly_once()


def _refuse_for_two_seconds(broker: DurableBroker) -> None:
    broker.proxy.refuse()
    broker.proxy.cut_all()
    time.sleep(2.0)
    broker.proxy.accept()


PROXY_FAULTS: dict[str, Callable[[DurableBroker], object]] = {
    "cut_all": lambda b: b.proxy.cut_all(),
    "reset": lambda b: b.proxy.reset(),
    # a Produce answer cut after 10 bytes: the broker stored the batch, its answer is lost
    "truncate_produce_answer": lambda b: b.proxy.truncate(10, api_key=0),
    "refuse_2s": _refuse_for_two_seconds,
}


@pytest.mark.parametrize("fault", sorted(PROXY_FAULTS))
def test_idempotent_write_is_exactly_once_through_connection_faults(durable_broker, caplog,
                                                                    record_fact, fault):
    topic = durable_broker.new_topic(PARTITIONS)
    with _client(durable_broker) as client:
        producer = _producer(client)
        run = write_ids(producer, topic, N_FAULT, PARTITIONS, caplog,
                        fault=lambda: PROXY_FAULTS[fault](durable_broker))
    assert producer.idempotent and run.retry_rounds >= 1
    count = count_ids(durable_broker.bootstrap, topic, range(N_FAULT))
    _fact(record_fact, f"idempotent write through {fault}", run, count)
    count.assert_exactly_once()


@pytest.mark.parametrize("fault", ["crash_and_restart", "truncate_produce_answer"])
def test_write_without_idempotence_loses_nothing(durable_broker, caplog, record_fact, fault):
    """acks=all without idempotence: at least once. A re-sent batch whose answer was lost is
    stored twice; the duplicates are counted and reported, not failed."""
    topic = durable_broker.new_topic(PARTITIONS)
    inject = {"crash_and_restart": lambda: durable_broker.crash_and_restart(down_s=1.0),
              "truncate_produce_answer": lambda: durable_broker.proxy.truncate(10, api_key=0)}
    with _client(durable_broker) as client:
        producer = _producer(client, enable_idempotence=False)
        run = write_ids(producer, topic, N_FAULT, PARTITIONS, caplog, fault=inject[fault])
    assert not producer.idempotent and run.retry_rounds >= 1
    count = count_ids(durable_broker.bootstrap, topic, range(N_FAULT))
    _fact(record_fact, f"write without idempotence through {fault}", run, count)
    count.assert_none_lost()
    if fault == "truncate_produce_answer":  # the lost answer's batch was stored, then re-sent
        assert count.duplicated > 0, count.summary()


# ------------------------------------------------------------------------------ reads


def _fill(broker: DurableBroker, partitions: int, n: int, value_size: int = 100) -> str:
    """A topic holding ids 0..n-1 written by librdkafka (values padded to ``value_size``), in
    batches of at most 200 records, so that a partition takes many Fetches to read."""
    topic = broker.new_topic(partitions)
    pad = b"." * max(0, value_size - 8)
    produce({"bootstrap.servers": broker.bootstrap, "batch.num.messages": 200}, topic,
            [(id_bytes(i), id_bytes(i) + pad) for i in range(n)])
    return topic


def _librdkafka_view(broker: DurableBroker, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """Each partition's (offset, value) pairs in order, as librdkafka reads them."""
    view: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    for msg in consume_all({"bootstrap.servers": broker.bootstrap}, topic):
        view[msg.partition()].append((msg.offset(), msg.value()))
    return dict(view)


def source_read(broker: DurableBroker, topic: str,
                between_chunks: Callable[[int], None] | None = None,
                **options: str) -> dict[int, list[tuple[int, bytes]]]:
    """Plan and read ``topic`` the way a batch query does (KafkaWireBatchReader: planning on
    the driver, read_partition per task), without Spark; ``between_chunks(i)`` runs after
    the i-th Arrow batch, while the next Fetch is already in flight."""
    opts = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
            "startingOffsets": "earliest", "endingOffsets": "latest",
            "kafka.request.timeout.ms": "10000", **options}
    reader = KafkaWireBatchReader(parse_source_options(opts))
    rows: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    chunks = 0
    for part in reader.partitions():
        for batch in reader.read(part):
            columns = batch.to_pydict()
            rows_of = rows[columns["partition"][0]] if batch.num_rows else []
            rows_of.extend(zip(columns["offset"], columns["value"], strict=True))
            if between_chunks is not None:
                between_chunks(chunks)
            chunks += 1
    return dict(rows)


def _assert_same_rows(got: dict[int, list[tuple[int, bytes]]],
                      expected: dict[int, list[tuple[int, bytes]]]) -> None:
    for partition in sorted(set(got) | set(expected)):
        mine, theirs = got.get(partition, []), expected.get(partition, [])
        if mine == theirs:
            continue
        first = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b),
                     min(len(mine), len(theirs)))
        raise AssertionError(f"partition {partition}: read {len(mine)} rows, librdkafka "
                             f"{len(theirs)}; first difference at row {first}")


N_READ = 30_000
SMALL_FETCH = {"kafka.max.partition.fetch.bytes": str(64 << 10)}  # many Fetches per partition


def test_read_through_cut_connections_is_exact(durable_broker, record_fact):
    """Connections cut in the middle of a response, three times, while planning and reading:
    each cut answer is fetched again on a new connection."""
    topic = _fill(durable_broker, PARTITIONS, N_READ)
    expected = _librdkafka_view(durable_broker, topic)
    proxy = durable_broker.proxy
    before = proxy.stats()
    proxy.cut_after(100_000 + 4321, times=3)  # not on a frame boundary
    began = time.monotonic()
    got = source_read(durable_broker, topic, **SMALL_FETCH)
    seconds = time.monotonic() - began
    after = proxy.stats()
    assert after.faults - before.faults == 3
    _assert_same_rows(got, expected)
    record_fact(f"{N_READ} rows read in {seconds:.2f} s through 3 cuts, "
                f"{after.connections - before.connections} connections opened")


def test_read_through_resets_is_exact(durable_broker, record_fact):
    topic = _fill(durable_broker, PARTITIONS, N_READ)
    expected = _librdkafka_view(durable_broker, topic)
    proxy = durable_broker.proxy
    before = proxy.stats()

    def reset(i: int) -> None:
        if i % 5 == 2:
            proxy.reset()

    began = time.monotonic()
    got = source_read(durable_broker, topic, between_chunks=reset, **SMALL_FETCH)
    seconds = time.monotonic() - began
    _assert_same_rows(got, expected)
    record_fact(f"{N_READ} rows read in {seconds:.2f} s, connections reset every 5th chunk: "
                f"{proxy.stats().connections - before.connections} connections opened")


def test_read_across_a_broker_crash_is_exact(durable_broker, record_fact):
    """The broker crashes (durably) while a partition is half read, with a Fetch in flight:
    the reader waits out the refused connects (request.timeout.ms 10 s) and goes on."""
    topic = _fill(durable_broker, PARTITIONS, N_READ)
    expected = _librdkafka_view(durable_broker, topic)
    restarts: list[float] = []

    def crash(i: int) -> None:
        if i == 3:
            restarts.append(durable_broker.crash_and_restart(down_s=1.0))

    began = time.monotonic()
    got = source_read(durable_broker, topic, between_chunks=crash, **SMALL_FETCH)
    seconds = time.monotonic() - began
    assert restarts and durable_broker.tansu.starts == 2
    _assert_same_rows(got, expected)
    record_fact(f"{N_READ} rows read in {seconds:.2f} s across a crash (Tansu answered "
                f"{restarts[0]:.2f} s after its restart)")


# ------------------------------------------------------------------------------ timeouts

TIMEOUT_MS = 2000
MARGIN_S = 1.5  # scheduling, backoff and teardown on two shared cores
# A wait ended by its own timeout, or cut short by the write's delivery timeout.
TIMED_OUT = re.compile(r"within \d+ ms( \(kafka\.request\.timeout\.ms\)|, when "
                       r"kafka\.delivery\.timeout\.ms ran out)")


def _timed(call: Callable[[], object], exc_type: type[BaseException]) -> tuple[float, str]:
    """Seconds until ``call`` raised ``exc_type`` and the message."""
    began = time.monotonic()
    with pytest.raises(exc_type) as info:
        call()
    return time.monotonic() - began, str(info.value)


def _warm_client(broker: DurableBroker, topic: str, **config: object) -> KafkaClient:
    """A client with metadata and a leader connection, as a task has when a broker stalls."""
    config.setdefault("request_timeout_ms", TIMEOUT_MS)
    client = _client(broker, **config)
    client.leader_connection(topic, 0)
    return client


def test_stalled_broker_fails_metadata_and_fetch_within_the_request_timeout(durable_broker,
                                                                          record_fact):
    topic = _fill(durable_broker, 1, 1000)
    with _warm_client(durable_broker, topic) as reader, \
            _warm_client(durable_broker, topic) as client:
        broker = client.leader_connection(topic, 0).name
        durable_broker.proxy.stall()
        metadata_s, metadata_msg = _timed(lambda: client.fetch_metadata([topic]),
                                          RequestTimeoutError)
        fetch_s, fetch_msg = _timed(lambda: list(fetch_range(reader, topic, 0, 0, 1000)),
                                    RequestTimeoutError)
    for seconds, message, request in ((metadata_s, metadata_msg, "Metadata"),
                                      (fetch_s, fetch_msg, "Fetch")):
        assert TIMEOUT_MS / 1000 <= seconds < TIMEOUT_MS / 1000 + MARGIN_S, (request, seconds)
        assert broker in message and request in message, message
        assert f"within {TIMEOUT_MS} ms (kafka.request.timeout.ms)" in message, message
    record_fact(f"stalled broker: Metadata failed after {metadata_s:.2f} s, Fetch after "
                f"{fetch_s:.2f} s (request.timeout.ms {TIMEOUT_MS})")


def test_stalled_broker_at_bootstrap_fails_within_the_request_timeout(durable_broker,
                                                                      record_fact):
    """No connection yet: the ApiVersions of the bootstrap connection goes unanswered. The
    error is the bootstrap one (no server answered in time), its cause the timeout."""
    durable_broker.proxy.stall()
    with _client(durable_broker, request_timeout_ms=TIMEOUT_MS) as client:
        seconds, message = _timed(lambda: client.fetch_metadata(), NoBrokersAvailableError)
    assert seconds < TIMEOUT_MS / 1000 + MARGIN_S, seconds
    assert "answered in time" in message and durable_broker.bootstrap in message, message
    assert f"ApiVersions within {TIMEOUT_MS} ms (kafka.request.timeout.ms)" in message, message
    record_fact(f"stalled bootstrap broker: Metadata failed after {seconds:.2f} s")


@pytest.mark.parametrize("delivery_ms", [TIMEOUT_MS + 5, 3500])
def test_stalled_broker_fails_a_write_within_the_delivery_timeout(durable_broker, record_fact,
                                                                  delivery_ms):
    """As the Java producer: a write gives up after delivery.timeout.ms, naming the partition
    and the last error; with the least delivery timeout Java allows (request.timeout.ms +
    linger.ms) and with one that leaves room for a second attempt, which must not overrun it."""
    topic = _fill(durable_broker, 1, 10)
    with _warm_client(durable_broker, topic) as client:
        producer = _producer(client, linger_ms=5, delivery_timeout_ms=delivery_ms)
        producer.prepare(topic)
        durable_broker.proxy.stall()
        values = _id_values(0, 100)
        seconds, message = _timed(lambda: (
            producer.append(topic, values, values, np.zeros(100, np.int32), 0),
            producer.flush()), DeliveryTimeoutError)
    assert TIMEOUT_MS / 1000 <= seconds < delivery_ms / 1000 + MARGIN_S, seconds
    assert message.startswith("[KAFKAWIRE_DELIVERY_FAILED.DELIVERY_TIMEOUT] "), message
    assert f"topic {topic!r}, partition 0" in message, message
    assert f"kafka.delivery.timeout.ms={delivery_ms}" in message, message
    assert durable_broker.bootstrap in message and TIMED_OUT.search(message), message
    record_fact(f"stalled broker: a write failed after {seconds:.2f} s "
                f"(delivery.timeout.ms {delivery_ms})")


@pytest.mark.parametrize("delivery_ms", [TIMEOUT_MS + 5, 3500])
def test_stalled_broker_fails_producer_prepare_within_the_delivery_timeout(durable_broker,
                                                                           record_fact,
                                                                           delivery_ms):
    """Producer.prepare (metadata, the leader's versions, InitProducerId) against a broker
    that accepts connections and answers nothing: bounded by delivery.timeout.ms."""
    topic = durable_broker.new_topic(1)
    durable_broker.proxy.stall()
    with _client(durable_broker, request_timeout_ms=TIMEOUT_MS) as client:
        producer = _producer(client, delivery_timeout_ms=delivery_ms)
        seconds, message = _timed(lambda: producer.prepare(topic), KafkaWireError)
    assert TIMEOUT_MS / 1000 <= seconds < delivery_ms / 1000 + MARGIN_S, seconds
    assert durable_broker.bootstrap in message and TIMED_OUT.search(message), message
    record_fact(f"stalled broker: Producer.prepare failed after {seconds:.2f} s "
                f"(delivery.timeout.ms {delivery_ms})")


class BlackHole:
    """A listening socket on ``port`` whose accept queue is full, so that a connect to it
    never completes (Linux drops the SYNs): a host that swallows packets."""

    def __init__(self, port: int) -> None:
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))
        self.server.listen(0)
        self.fillers = []
        for _ in range(4):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            self.fillers.append(s)
        probe = socket.socket()
        probe.settimeout(0.3)
        try:
            probe.connect(("127.0.0.1", port))
        except TimeoutError:
            pass
        else:
            self.close()
            pytest.skip("this kernel completes connects beyond a full accept queue")
        finally:
            probe.close()

    def close(self) -> None:
        for s in self.fillers:
            s.close()
        self.server.close()


def test_connect_that_never_completes_fails_within_the_setup_timeout(durable_broker,
                                                                     record_fact):
    """The broker's address stops completing connects (the proxy's port becomes a black
    hole). A client with the topic's metadata cached reconnects to the leader and fails with
    ConnectionSetupTimeoutError naming it; one that must ask a bootstrap server for metadata
    first fails with NoBrokersAvailableError whose cause is that timeout. Both within
    socket.connection.setup.timeout.ms, at once (a timeout is not waited for twice)."""
    topic = _fill(durable_broker, 1, 100)
    setup_ms = 1000
    proxy = durable_broker.proxy
    with _warm_client(durable_broker, topic, connect_timeout_ms=setup_ms,
                      request_timeout_ms=10_000) as cached, \
            _warm_client(durable_broker, topic, connect_timeout_ms=setup_ms,
                         request_timeout_ms=10_000) as cut:
        cached.close()  # idle connections closed; the metadata stays cached
        proxy.refuse()
        proxy.cut_all()
        hole = BlackHole(proxy.port)
        try:
            leader_s, leader_msg = _timed(lambda: list(fetch_range(cached, topic, 0, 0, 100)),
                                          ConnectionSetupTimeoutError)
            bootstrap_s, bootstrap_msg = _timed(
                lambda: list(fetch_range(cut, topic, 0, 0, 100)), NoBrokersAvailableError)
        finally:
            hole.close()
            proxy.accept()
        assert sum(c.num_records for c in fetch_range(cached, topic, 0, 0, 100)) == 100
    for seconds, message in ((leader_s, leader_msg), (bootstrap_s, bootstrap_msg)):
        assert setup_ms / 1000 <= seconds < setup_ms / 1000 + MARGIN_S, seconds
        assert f"connect timed out after {setup_ms} ms " \
            "(kafka.socket.connection.setup.timeout.ms)" in message, message
    assert f"connection to broker {durable_broker.bootstrap} (node " in leader_msg, leader_msg
    assert durable_broker.bootstrap in bootstrap_msg, bootstrap_msg
    record_fact(f"black-holed broker: Fetch failed after {leader_s:.2f} s (leader), "
                f"{bootstrap_s:.2f} s (bootstrap) (socket.connection.setup.timeout.ms "
                f"{setup_ms})")


# ------------------------------------------------------------------------------ damaged answers

FETCH_KEY, METADATA_KEY, PRODUCE_KEY = FETCH.key, METADATA.key, PRODUCE.key


def _read_all(client: KafkaClient, topic: str, n: int, partition: int = 0,
              **settings: object) -> list[tuple[int, bytes]]:
    """(offset, value) of [0, n) of one partition through fetch_range (a read task's path)."""
    fetch = FetchSettings(max_partition_fetch_bytes=64 << 10, **settings)  # type: ignore[arg-type]
    return [(int(o), v) for chunk in fetch_range(client, topic, partition, 0, n, fetch)
            for o, v in zip(chunk.offsets, chunk.values.to_pylist(), strict=True)]


def test_truncated_fetch_answers_are_fetched_again(durable_broker, record_fact):
    """Answers cut mid-frame (the connection closed after part of a Fetch answer), three
    times: nothing of them is used, each is fetched again on a new connection."""
    topic = _fill(durable_broker, PARTITIONS, N_READ)
    expected = _librdkafka_view(durable_broker, topic)
    proxy = durable_broker.proxy
    before = proxy.stats()
    proxy.truncate(5000, api_key=FETCH_KEY, times=3)
    began = time.monotonic()
    got = source_read(durable_broker, topic, **SMALL_FETCH)
    seconds = time.monotonic() - began
    assert proxy.stats().faults - before.faults == 3
    _assert_same_rows(got, expected)
    record_fact(f"{N_READ} rows read in {seconds:.2f} s through 3 Fetch answers cut at 5000 "
                "bytes")


def _zigzag_varint(n: int) -> bytes:
    z, out = n << 1, bytearray()
    while z >= 0x80:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    return bytes(out + bytes([z]))


def _frame_position(client: KafkaClient, read: Callable[[], object], needle: bytes,
                    api: str = FETCH.name) -> int:
    """Where ``needle`` lies in the first answer to an ``api`` request that ``read`` gets
    (from ``client``'s connections), counted as the fault proxy counts (from the size
    prefix's first byte)."""
    frames: list[bytes] = []
    capture = client.hooks.add(ConnectionHooks(
        on_answer=lambda e: frames.append(bytes(e.frame)) if e.api == api else None))
    read()
    client.hooks.remove(capture)
    found = frames[0].find(needle)
    assert found > 0 and frames[0].find(needle, found + 1) < 0, "the needle must be unique"
    return 4 + found


def test_a_flipped_byte_in_record_data_fails_the_crc_naming_where(durable_broker,
                                                                  monkeypatch, record_fact):
    """A byte of a record's value flipped on the wire: with kafka.check.crcs (the default)
    CorruptRecordError naming topic, partition, the batch's offset and the broker, never a
    wrong row; not retried (as Java's consumer). With the check off the damaged value is
    returned: what check.crcs=false means, in Java's consumer too."""
    n = 1000
    topic = _fill(durable_broker, 1, n)
    with _warm_client(durable_broker, topic, request_timeout_ms=10_000) as client:
        clean = _read_all(client, topic, n)
        # record 150's value, found by its length (a zigzag varint) and its first bytes; the
        # byte flipped is in its padding
        value = clean[150][1]
        length = _zigzag_varint(len(value))
        position = _frame_position(client, lambda: _read_all(client, topic, n),
                                   length + value[:8]) + len(length) + 10
        durable_broker.proxy.corrupt(position, xor=0x01, api_key=FETCH_KEY)
        with pytest.raises(CorruptRecordError) as info:
            _read_all(client, topic, n)
        error = info.value
        assert "CRC-32C mismatch" in str(error) and error.topic == topic
        assert error.partition == 0 and error.offset is not None and error.offset <= 150
        assert error.broker is not None and durable_broker.bootstrap in error.broker
        assert _read_all(client, topic, n) == clean  # the client goes on; the next read is clean

        durable_broker.proxy.corrupt(position, xor=0x01, api_key=FETCH_KEY)
        unchecked = _read_all(client, topic, n, check_crcs=False)
    wrong = [(a, b) for a, b in zip(unchecked, clean, strict=True) if a != b]
    assert [(a[0], b[0]) for a, b in wrong] == [(150, 150)], wrong
    record_fact(f"flipped value byte of offset 150: {type(error).__name__} at batch offset "
                f"{error.offset}; with check.crcs=false the damaged value is returned")


def _fetch_v11_positions(topic: str) -> dict[str, int]:
    """Byte positions (as the proxy counts) in a one-partition Fetch v11 answer: size 0,
    correlation id 4, throttle 8, error code 12, session 14, topics array length 18, topic
    name 22, then the partition: index, error code, high watermark, ..."""
    name = 22 + 2 + len(topic.encode())
    return {"topics array length": 18, "partition index": name + 4 + 3,
            "partition error code": name + 8 + 1,
            # after error code, three offsets, aborted transactions, preferred replica, length
            "records": name + 8 + 2 + 24 + 4 + 4 + 4}


@pytest.mark.parametrize(("field_name", "xor", "outcome"), [
    ("topics array length", 0x01,
     "ProtocolError: [KAFKAWIRE_PROTOCOL] cannot decode Fetch v11 response"),
    ("partition index", 0x01,
     "ProtocolError: [KAFKAWIRE_PROTOCOL] Fetch response lacks the requested partition"),
    ("partition error code", 0xFF,
     "KafkaError: [KAFKA_BROKER_ERROR.UNKNOWN_ERROR_CODE] Kafka error UNKNOWN_ERROR_CODE_255"),
    # 0 -> 1, OFFSET_OUT_OF_RANGE: checked against the log, which holds the offset: again
    ("partition error code", 0x01, None),
])
def test_a_damaged_fetch_answer_structure_is_a_typed_error(durable_broker, record_fact,
                                                           field_name, xor, outcome):
    """A flipped byte in the structure of a Fetch answer: a typed error naming the broker
    and the request, never a wrong row nor a KeyError/IndexError/struct.error, not retried
    (or, for an error code that is retriable, fetched again); the next read works."""
    n = 500
    topic = _fill(durable_broker, 1, n)
    with _warm_client(durable_broker, topic, request_timeout_ms=10_000) as client:
        conn = client.leader_connection(topic, 0)
        assert conn.version(FETCH) == 11, "the positions below are those of Fetch v11"
        clean = _read_all(client, topic, n)
        position = _fetch_v11_positions(topic)[field_name]
        durable_broker.proxy.corrupt(position, xor=xor, api_key=FETCH_KEY)
        if outcome is None:
            assert _read_all(client, topic, n) == clean
            record_fact(f"{field_name} xor {xor:#x}: fetched again, exact rows")
            return
        with pytest.raises(KafkaWireError) as info:
            _read_all(client, topic, n)
        message = f"{type(info.value).__name__}: {info.value}"
        assert message.startswith(outcome), message
        assert f"broker {durable_broker.bootstrap}" in message and "Fetch" in message, message
        if field_name == "topics array length":
            assert not conn.connected, "a connection whose bytes do not parse is closed"
        if field_name == "partition error code":
            assert f"topic {topic!r}, partition 0, offset 0" in message, message
        assert _read_all(client, topic, n) == clean
    record_fact(f"{field_name} xor {xor:#x}: {message[:100]}")


@pytest.mark.parametrize("answer", ["Metadata", "Fetch (watermarks)"])
def test_a_damaged_partition_index_fails_planning_instead_of_skipping_a_partition(
        durable_broker, monkeypatch, record_fact, answer):
    """Partition 0's index flipped to 1 in the Metadata answer, or in the Fetch that checks
    ListOffsets' answers: before, planning silently left partition 0 out, or kept Tansu's
    short ListOffsets(-1) answer for it (rows missing from the read). Now: ProtocolError
    naming the topic and the broker; not retried."""
    topic = _fill(durable_broker, 2, 400)
    options = parse_source_options({"kafka.bootstrap.servers": durable_broker.bootstrap,
                                    "subscribe": topic, "endingOffsets": "latest"})
    with KafkaClient(options.client) as client:
        clean = plan_ranges(KafkaCluster(client), options)
        name = topic.encode()
        if answer == "Metadata":  # v12: name, topic id, is_internal, partitions; error code
            needle = bytes([len(name) + 1]) + name
            position = _frame_position(client, lambda: plan_ranges(KafkaCluster(client), options), needle,
                                       METADATA.name) + len(needle) + 16 + 1 + 1 + 2 + 3
            api_key = METADATA_KEY
        else:
            position, api_key = _fetch_v11_positions(topic)["partition index"], FETCH_KEY
    with KafkaClient(options.client) as client:
        durable_broker.proxy.corrupt(position, xor=0x01, api_key=api_key)
        with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", "damaged") as info:
            plan_ranges(KafkaCluster(client), options)
        message = str(info.value)
        assert f"topic {topic!r}" in message and durable_broker.bootstrap in message, message
        assert plan_ranges(KafkaCluster(client), options) == clean
    record_fact(f"partition index flipped in the {answer} answer: {message[:110]}")


def test_a_corrupted_correlation_id_closes_the_connection_and_the_client_goes_on(
        durable_broker, record_fact):
    topic = _fill(durable_broker, 1, 10)
    with _warm_client(durable_broker, topic) as client:
        conn = client.leader_connection(topic, 0)
        durable_broker.proxy.corrupt(7, xor=0x40, api_key=METADATA_KEY)
        with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL",
                              "correlation id mismatch") as info:
            client.fetch_metadata([topic])
        assert f"for Metadata (broker {durable_broker.bootstrap}" in str(info.value)
        assert not conn.connected
        assert topic in client.fetch_metadata([topic]).topics  # a new connection
    record_fact(f"corrupted correlation id: {info.value}")


def test_every_flipped_byte_of_a_fetch_answer_head_is_exact_or_a_typed_error(durable_broker,
                                                                              record_fact):
    """Each byte of a Fetch answer's head, from the correlation id through the first batch's
    header, flipped in turn: the rows read are exact, or the read fails with a typed error;
    never a wrong row, never an untyped exception."""
    n = 500
    topic = _fill(durable_broker, 1, n)
    outcomes: dict[str, int] = defaultdict(int)
    with _warm_client(durable_broker, topic, request_timeout_ms=5000) as client:
        clean = _read_all(client, topic, n)
        head = _fetch_v11_positions(topic)["records"] + 61  # through the first batch header
        began = time.monotonic()
        for position in range(4, head):
            durable_broker.proxy.corrupt(position, xor=0xFF, api_key=FETCH_KEY)
            try:
                rows = _read_all(client, topic, n)
            except KafkaWireError as exc:
                outcomes[type(exc).__name__] += 1
            else:
                assert rows == clean, f"byte {position} flipped: wrong rows"
                outcomes["exact"] += 1
            durable_broker.proxy.pass_through()
        seconds = time.monotonic() - began
    assert outcomes["exact"] < head - 4
    record_fact(f"{head - 4} bytes flipped in {seconds:.1f} s: {dict(sorted(outcomes.items()))}")


def test_every_flipped_byte_of_a_produce_answer_is_a_typed_error_or_written(durable_broker,
                                                                             record_fact):
    """The same for the answers to Produce: each write either succeeds (its records then
    stored once: a damaged answer that still parses and says NONE, or an error retried) or
    fails with a typed error; never an untyped exception."""
    topic = durable_broker.new_topic(1)
    outcomes: dict[str, int] = defaultdict(int)
    written = 0
    with _client(durable_broker, request_timeout_ms=5000) as client:
        frame = 4 + 4 + 4 + 2 + len(topic.encode()) + 4 + 4 + 2 + 8 + 8 + 8 + 4 + 2 + 4
        began = time.monotonic()
        for position in range(4, frame):
            producer = _producer(client, delivery_timeout_ms=5000)
            durable_broker.proxy.corrupt(position, xor=0xFF, api_key=PRODUCE_KEY)
            values = _id_values(written, 10)
            try:
                # inside: a flipped throttle_time_ms of the last answer mutes the connection
                # (KIP-219, for up to request.timeout.ms), which this write's deadline may not
                # outlast; that is a typed error too
                producer.prepare(topic)
                producer.append(topic, values, values, np.zeros(10, np.int32), 0)
                producer.flush()
            except KafkaWireError as exc:
                outcomes[type(exc).__name__] += 1
            else:
                outcomes["written"] += 1
            written += 10
            durable_broker.proxy.pass_through()
        seconds = time.monotonic() - began
    count = count_ids(durable_broker.bootstrap, topic, range(written))
    assert count.duplicated == 0 and count.unexpected == 0, count.summary()
    record_fact(f"{frame - 4} bytes of a Produce answer flipped in {seconds:.1f} s: "
                f"{dict(sorted(outcomes.items()))}; {count.lost} ids of failed writes missing")


# ------------------------------------------------------------------------------ lost producer state


def test_producer_bumps_its_epoch_when_a_memory_broker_restarts(memory_tansu, caplog,
                                                                record_fact):
    """Tansu with memory storage restarted on its port forgets everything: the log (so the
    records written before the restart are lost, by the broker, and the test re-creates the
    topic), and the idempotent producer's state, so it answers the producer's next sequence
    with UNKNOWN_PRODUCER_ID / OUT_OF_ORDER_SEQUENCE_NUMBER. The producer bumps its epoch
    (KIP-360), re-numbers its batches from 0 and carries on: the records written after the
    restart are stored exactly once."""
    n = 5000
    bootstrap = memory_tansu.bootstrap_servers
    topic = f"mem-{uuid.uuid4().hex[:12]}"
    create_topic({"bootstrap.servers": bootstrap}, topic, PARTITIONS)
    with KafkaClient(ClientConfig.from_servers(bootstrap, request_timeout_ms=5000)) as client:
        producer = _producer(client)
        write_ids(producer, topic, n, PARTITIONS, caplog)
        pid = producer.producer_id
        memory_tansu.stop()
        memory_tansu.start()
        create_topic({"bootstrap.servers": bootstrap}, topic, PARTITIONS)
        run = write_ids(producer, topic, n, PARTITIONS, caplog, start=n)
    bumps = [r.getMessage() for r in caplog.records if "lost the state" in r.getMessage()]
    assert producer.epoch_bumps == 1 and len(bumps) == 1, bumps
    answer = re.search(r"(UNKNOWN_PRODUCER_ID|OUT_OF_ORDER_SEQUENCE_NUMBER)", bumps[0])
    refused = [r.getMessage() for r in caplog.records if "refused to bump" in r.getMessage()]
    count = count_ids(bootstrap, topic, range(2 * n))
    assert count.lost == n and min(count.lost_examples) == 0, count.summary()  # the broker's
    after = count_ids(bootstrap, topic, range(n, 2 * n))
    after.assert_exactly_once()
    record_fact(f"memory Tansu restarted: it answered {answer and answer.group(1)}; producer id "
                f"{pid} -> {producer.producer_id} epoch {producer.producer_epoch} "
                f"({'a new id: the bump was refused' if refused else 'bumped'}), "
                f"{run.epoch_bumps} bump, {run.retry_rounds} retry "
                f"rounds; the {n} records after the restart exactly once, the {n} before lost "
                "with the broker's memory")


def test_durable_broker_keeps_the_producer_state_across_a_crash(durable_broker, caplog,
                                                                monkeypatch, record_fact):
    """Tansu on S3 after crash_and_restart still knows the idempotent producer: the last
    batch written before the crash, sent again after it, is recognised as a duplicate (a
    broker without the state would answer UNKNOWN_PRODUCER_ID, the producer would bump its
    epoch and the batch would be stored twice), and the write goes on without a bump."""
    n = 5000
    topic = durable_broker.new_topic(PARTITIONS)
    with _client(durable_broker) as client:
        producer = _producer(client)
        sent: list[PendingBatch] = []
        dispatch = producer.dispatch
        monkeypatch.setattr(producer, "dispatch", lambda bs: (sent.extend(bs), dispatch(bs))[1])
        write_ids(producer, topic, n, PARTITIONS, caplog)
        durable_broker.crash_and_restart(down_s=0.5)
        last = sent[-1]
        acknowledged = producer.records_sent
        producer.send([PendingBatch(last.topic, last.partition, last.data, last.records,
                                    last.base_sequence)])
        assert producer.records_sent == acknowledged + last.records  # answered as written
        run = write_ids(producer, topic, n, PARTITIONS, caplog, start=n)
    count = count_ids(durable_broker.bootstrap, topic, range(2 * n))
    count.assert_exactly_once()
    assert producer.epoch_bumps == 0
    record_fact(f"Tansu on S3 kept the producer state across a crash: the batch of sequence "
                f"{last.base_sequence} re-sent after it was a duplicate, 0 epoch bumps, "
                f"{run.retry_rounds} retry rounds; {count.read} records exactly once")
