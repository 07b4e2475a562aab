"""The client layer against a real broker (Tansu, or KAFKA_BOOTSTRAP_SERVERS)."""

from __future__ import annotations

import gc
import os
import re
import socket
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import NoBrokersAvailableError, RequestTimeoutError
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import resolve_offsets
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import PendingBatch, Producer, ProduceSettings
from spark_kafka_wire.protocol.errors import (
    KafkaError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from spark_kafka_wire.protocol.messages import FETCH, METADATA, PRODUCE
from spark_kafka_wire.protocol.records import encode_record_batch
from spark_kafka_wire.source.batch_reader import read_partition
from spark_kafka_wire.source.planning import KafkaInputPartition, OffsetRange
from spark_kafka_wire.testing.embedded import free_port
from tests.support.errors import raises_condition


def _produce(client: KafkaClient, topic: str, partition: int, values: list[bytes], batch: int) -> None:
    """Write ``values`` in batches of ``batch`` records each (one Produce per batch)."""
    p = Producer(client, ProduceSettings())
    for i in range(0, len(values), batch):
        chunk = values[i : i + batch]
        keys = [b"k%d" % (i + j) for j in range(len(chunk))]
        p.send([PendingBatch(topic, partition, encode_record_batch(keys, chunk, timestamps=1_700_000_000_000 + i), len(chunk))])
    assert p.records_sent == len(values)


def test_negotiates_highest_common_versions(client: KafkaClient) -> None:
    conn = client.any_connection()
    assert conn.api_versions, "the broker must list its APIs"
    for spec in (FETCH, PRODUCE, METADATA):
        lo, hi = conn.api_versions[spec.key]
        assert conn.version(spec) == min(hi, spec.max_version)


def test_metadata_lists_created_topic(client: KafkaClient, new_topic) -> None:
    topic = new_topic(3)
    info = client.topic(topic, refresh=True)
    assert sorted(info.partitions) == [0, 1, 2]
    assert all(p.leader >= 0 for p in info.partitions.values())


def test_create_existing_topic(client: KafkaClient, new_topic) -> None:
    topic = new_topic(1)
    with raises_condition(TopicAlreadyExistsError, "KAFKA_BROKER_ERROR.TOPIC_ALREADY_EXISTS",
                          topic):
        create_topics(client, [(topic, 1)])
    create_topics(client, [(topic, 1)], exist_ok=True)


def test_unknown_topic_is_named(client: KafkaClient) -> None:
    with raises_condition(UnknownTopicOrPartitionError,
                          "KAFKA_BROKER_ERROR.UNKNOWN_TOPIC_OR_PARTITION", "no-such-topic-xyz"):
        client.topic("no-such-topic-xyz")


def test_latest_offset_is_the_true_end_with_multi_record_batches(client: KafkaClient, new_topic) -> None:
    # Tansu's ListOffsets(-1) answers the last batch's base offset + 1 here (21, not 30);
    # resolving latest must still give the true end, or readers lose the tail.
    topic = new_topic(1)
    _produce(client, topic, 0, [b"v%d" % i for i in range(30)], batch=10)
    assert resolve_offsets(client, {(topic, 0): -1}) == {(topic, 0): 30}
    assert resolve_offsets(client, {(topic, 0): -2}) == {(topic, 0): 0}
    records = list(fetch_range(client, topic, 0, 0, 30))
    assert sum(r.num_records for r in records) == 30


def test_fetch_range_is_exact_inside_batches(client: KafkaClient, new_topic) -> None:
    topic = new_topic(1)
    values = [b"value-%03d" % i for i in range(50)]
    _produce(client, topic, 0, values, batch=7)
    # 12..40 starts and ends in the middle of batches; tiny fetches force many round trips
    chunks = list(fetch_range(client, topic, 0, 12, 41, FetchSettings(max_partition_fetch_bytes=64)))
    offsets = np.concatenate([c.offsets for c in chunks])
    got = pa.concat_arrays([c.values for c in chunks]).to_pylist()
    assert offsets.tolist() == list(range(12, 41))
    assert got == values[12:41]
    keys = pa.concat_arrays([c.keys for c in chunks]).to_pylist()
    assert keys == [b"k%d" % i for i in range(12, 41)]


def test_fetch_ahead_keeps_one_request_in_flight_and_the_connection_usable(
        client: KafkaClient, new_topic) -> None:
    topic = new_topic(1)
    values = [b"value-%03d" % i for i in range(60)]
    _produce(client, topic, 0, values, batch=6)
    small = FetchSettings(max_partition_fetch_bytes=200)  # a batch or two per Fetch
    conn = client.leader_connection(topic, 0)
    chunks = fetch_range(client, topic, 0, 0, 60, small)
    first = next(chunks)
    assert conn.in_flight == 1  # the next Fetch went out before this chunk was handed over
    chunks.close()  # stop early: the answer sent ahead is abandoned, not read now
    # The same connection then serves other reads; the abandoned answer is dropped first.
    again = [v for c in fetch_range(client, topic, 0, 10, 50, small)
             for v in c.values.to_pylist()]
    assert again == values[10:50]
    assert conn.in_flight == 0
    assert first.values.to_pylist() == values[:first.num_records]


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"),
                    reason="needs Linux /proc to reset and read the peak RSS")
def test_reading_a_partition_holds_two_fetches_not_the_range(client: KafkaClient,
                                                             new_topic) -> None:
    # 96 MiB in one partition, read with 1 MiB fetches through one task's code path: the
    # peak RSS may grow by two responses, the decoded chunk and allocator slack, never by the
    # range. (bench/ prints the same measurement for multi-GiB partitions.)
    topic = new_topic(1)
    value = b"v" * 1024
    p = Producer(client, ProduceSettings())
    for i in range(0, 96 * 1024, 4096):  # batches under Kafka's 1 MiB message.max.bytes
        p.send([PendingBatch(topic, 0, encode_record_batch(None, [value] * 512, timestamps=i),
                             512) for _ in range(8)])
    config = client.config
    part = KafkaInputPartition(0, [OffsetRange(topic, 0, 0, 96 * 1024)], config,
                               FetchSettings(max_partition_fetch_bytes=1 << 20), 10_000)
    del p
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = _status_kb("VmRSS")
    rows = sum(b.num_rows for b in read_partition(part))
    growth_mb = (_status_kb("VmHWM") - before) / 1024
    assert rows == 96 * 1024
    assert growth_mb < 24, f"peak RSS grew by {growth_mb:.1f} MB reading 96 MiB"


def test_fetch_beyond_the_log_end_is_data_loss_not_a_hang(client: KafkaClient, new_topic) -> None:
    topic = new_topic(1)
    _produce(client, topic, 0, [b"a", b"b"], batch=2)
    with raises_condition(KafkaError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE") as info:
        list(fetch_range(client, topic, 0, 0, 10, FetchSettings(max_wait_ms=50)))
    assert re.search(r"OFFSET_OUT_OF_RANGE|partition now ends at offset 2", str(info.value)), \
        info.value


def test_produce_to_missing_partition_names_it(client: KafkaClient, new_topic) -> None:
    topic = new_topic(1)
    p = Producer(client, ProduceSettings(delivery_timeout_ms=1500, retry_backoff_ms=50))
    batch = encode_record_batch([None], [b"x"])
    with raises_condition(KafkaError, "KAFKA_BROKER_ERROR.UNKNOWN_TOPIC_OR_PARTITION",
                          rf"topic '{topic}', partition 5"):
        p.send([PendingBatch(topic, 5, batch, 1)])


def test_bootstrap_list_is_cycled_past_dead_servers(bootstrap: str) -> None:
    dead = f"127.0.0.1:{free_port()}"
    config = ClientConfig.from_servers(f"{dead},{dead},{bootstrap}", connect_timeout_ms=2000)
    with KafkaClient(config) as c:
        for _ in range(5):  # the order is shuffled: every attempt must end on the live broker
            c.close()
            assert c.fetch_metadata([]).brokers


def test_unreachable_broker_fails_within_bounded_time() -> None:
    config = ClientConfig.from_servers(f"127.0.0.1:{free_port()}", connect_timeout_ms=500,
                                       retries=1, retry_backoff_ms=10)
    started = time.monotonic()
    with KafkaClient(config) as c, raises_condition(
            NoBrokersAvailableError, "KAFKAWIRE_NO_BROKERS_AVAILABLE", "could be reached"):
        c.fetch_metadata(["t"])
    assert time.monotonic() - started < 30


def test_silent_peer_times_out() -> None:
    """A peer that accepts connections but never answers must not hang the client."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        config = ClientConfig.from_servers(f"127.0.0.1:{server.getsockname()[1]}",
                                           request_timeout_ms=300, retries=0)
        with KafkaClient(config) as c, pytest.raises(NoBrokersAvailableError) as info:
            c.fetch_metadata([])
        assert "within 300 ms" in str(info.value)
    finally:
        stop.set()
        t.join()
        for s in accepted:
            s.close()
        server.close()


def test_dropped_connection_is_reopened(client: KafkaClient, new_topic) -> None:
    topic = new_topic(1)
    conn = client.leader_connection(topic, 0)
    assert conn._sock is not None
    conn._sock.shutdown(socket.SHUT_RDWR)  # as if the broker closed it
    _produce(client, topic, 0, [b"after-drop"], batch=1)
    assert [r.values.to_pylist() for r in fetch_range(client, topic, 0, 0, 1)] == [[b"after-drop"]]


def test_request_timeout_error_names_broker() -> None:
    exc = RequestTimeoutError("b1:9092 (node 1)", "Fetch", 1500)
    assert "b1:9092" in str(exc) and "1500 ms" in str(exc) and exc.retriable
