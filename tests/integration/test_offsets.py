"""Client-level offset logic against a real broker: offsets by record timestamp, the last
stable offset, data loss while reading a planned range.

Records come from librdkafka (confluent-kafka) with CreateTime timestamps the test chooses, so
the expected offsets follow from Kafka's contract ("the first offset whose timestamp is >= t"),
never from what a particular broker answers.
"""

from __future__ import annotations

import logging
import uuid

import confluent_kafka as ck
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import (
    EARLIEST,
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    resolve_offsets,
)
from spark_kafka_wire.client.fetching.timestamps import offsets_for_times, timestamp_answer_problem
from spark_kafka_wire.client.metadata.admin import create_topics, delete_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.errors import DataLossError, UnsupportedVersionError
from spark_kafka_wire.protocol.records import TransactionCounts
from tests.support.errors import raises_condition
from tests.support.librdkafka import consume_all
from tests.support.transactions import committed_aborted_committed, committed_then_open

pytestmark = pytest.mark.broker

B = 1_600_000_000_000  # CreateTime base: long before the broker's own clock
# p0: single-record batches, then one multi-record batch with out-of-order timestamps.
P0_SINGLE = [100, 200, 300, 300, 500]
P0_BATCH = [600, 800, 700, 900]
P1_BATCH = [150, 250, 400]
P0 = P0_SINGLE + P0_BATCH


def first_at_or_after(stamps: list[int], target: int) -> int | None:
    return next((o for o, ts in enumerate(stamps) if B + ts >= target), None)


@pytest.fixture(scope="module")
def ts_topic(bootstrap: str, client: KafkaClient) -> str:
    topic = f"ts-{uuid.uuid4().hex[:12]}"
    create_topics(client, [(topic, 2)])
    single = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0})
    for i, ts in enumerate(P0_SINGLE):
        single.produce(topic, value=b"p0-%d" % i, partition=0, timestamp=B + ts)
        single.flush(10)
    batched = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 500, "log_level": 0})
    for i, ts in enumerate(P0_BATCH):
        batched.produce(topic, value=b"p0-%d" % (len(P0_SINGLE) + i), partition=0,
                        timestamp=B + ts)
    for i, ts in enumerate(P1_BATCH):
        batched.produce(topic, value=b"p1-%d" % i, partition=1, timestamp=B + ts)
    assert batched.flush(10) == 0
    assert resolve_offsets(client, {(topic, 0): LATEST, (topic, 1): LATEST}) == {
        (topic, 0): len(P0), (topic, 1): len(P1_BATCH)}
    return topic


@pytest.mark.parametrize("rel", [0, 100, 101, 250, 300, 301, 500, 550, 650, 700, 750, 800,
                                 900, 901, 10_000])
def test_offsets_for_times_is_the_first_offset_at_or_after(client, ts_topic, rel) -> None:
    target = B + rel
    got = offsets_for_times(client, {(ts_topic, 0): target, (ts_topic, 1): target})
    assert got == {(ts_topic, 0): first_at_or_after(P0, target),
                   (ts_topic, 1): first_at_or_after(P1_BATCH, target)}


def test_contradicting_answers_are_caught(client, ts_topic) -> None:
    """The check each broker answer goes through: Kafka's answer passes; anything else that
    disagrees with the records (a later or earlier offset, 'no match' while a record
    qualifies, an offset with a timestamp before the target) is caught."""
    tp, hi = (ts_topic, 0), len(P0)

    def problem(target_rel: int, offset: int, found_rel: int | None) -> str | None:
        found = -1 if found_rel is None else B + found_rel
        return timestamp_answer_problem(client, tp, B + target_rel, offset, found, 0, hi,
                                        FetchSettings(max_wait_ms=50))

    assert problem(300, 2, 300) is None
    assert problem(750, 6, 800) is None          # inside the multi-record batch
    assert problem(1000, -1, None) is None       # nothing at or after: Kafka's -1
    assert problem(50, 0, 100) is None
    assert "earlier offset 2 already has timestamp" in problem(300, 3, 300)
    assert "offset 1 has timestamp" in problem(300, 1, 300)
    assert "offset 7 has timestamp" in problem(850, 7, 850)  # 7 is 700: out of order
    assert "no match was answered, but offset 8" in problem(900, -1, None)
    assert "answered timestamp -1 is before" in problem(5000, 0, None)  # offset 0, no time
    assert "outside the readable offsets" in problem(300, 9, 300)


def test_offsets_for_times_with_no_records(client, new_topic, caplog) -> None:
    topic = new_topic(1, "ts-empty")
    with caplog.at_level(logging.WARNING, logger="spark_kafka_wire"):
        assert offsets_for_times(client, {(topic, 0): B}) == {(topic, 0): None}
    # nothing to contradict in an empty partition, whatever the broker answers (Tansu: 0)
    assert not caplog.records, [r.getMessage() for r in caplog.records]


def test_timestamp_lookup_needs_list_offsets_v1(legacy_broker) -> None:
    """A 0.10.0 broker speaks ListOffsets v0 only, whose answers are segment starts: refused,
    as the Java client refuses offsetsForTimes there."""
    broker = legacy_broker("0.10.0")
    broker.create_topic("old", 1)
    broker.append("old", 0, [(None, b"v")])
    with KafkaClient(ClientConfig.from_servers(broker.bootstrap_servers)) as c, \
            raises_condition(UnsupportedVersionError, "KAFKA_BROKER_ERROR.UNSUPPORTED_VERSION",
                             "needs ListOffsets v1"):
        offsets_for_times(c, {("old", 0): 1})


def test_latest_under_read_committed_is_the_last_stable_offset(bootstrap, client, new_topic):
    topic = new_topic(1, "lso")
    p = committed_then_open(bootstrap, topic)
    try:
        tp = (topic, 0)
        # 3 records + the commit marker; the open transaction's record is at offset 4.
        assert resolve_offsets(client, {tp: LATEST}, READ_COMMITTED) == {tp: 4}
        assert resolve_offsets(client, {tp: LATEST}, READ_UNCOMMITTED) == {tp: 5}
        assert resolve_offsets(client, {tp: EARLIEST}, READ_COMMITTED) == {tp: 0}
        values = [v for ch in fetch_range(client, topic, 0, 0, 4,
                                          FetchSettings(isolation_level=READ_COMMITTED))
                  for v in ch.values.to_pylist()]
        assert values == [b"c0", b"c1", b"c2"]
    finally:
        p.abort_transaction(20)


def test_read_committed_never_returns_aborted_records(bootstrap, client, new_topic,
                                                      broker_kind):
    """Tansu lists no aborted transactions in its Fetch answers; the ABORT marker decides, so
    the committed records come back exactly, from the whole range and from pieces of it (one
    ending inside the aborted transaction looks past its end for the marker). Kafka lists the
    aborted transaction, and its list decides (``TransactionCounts``); librdkafka's
    read_committed consumer agrees there."""
    topic = new_topic(1, "aborted")
    committed_aborted_committed(bootstrap, topic)
    tp = (topic, 0)
    end = resolve_offsets(client, {tp: LATEST}, READ_COMMITTED)[tp]
    assert end == 8  # 5 records, 3 markers
    uncommitted = [v for ch in fetch_range(client, topic, 0, 0, end)
                   for v in ch.values.to_pylist()]
    assert uncommitted == [b"c0", b"c1", b"a0", b"a1", b"c2"]
    committed = FetchSettings(isolation_level=READ_COMMITTED)

    def read(start: int, stop: int) -> list[tuple[int, bytes]]:
        return [(o, v) for ch in fetch_range(client, topic, 0, start, stop, committed)
                for o, v in zip(ch.offsets.tolist(), ch.values.to_pylist(), strict=True)]

    # c0 c1 (commit at 2), a0 a1 (abort at 5), c2 (commit at 7).
    assert read(0, end) == [(0, b"c0"), (1, b"c1"), (6, b"c2")]
    assert read(0, 4) + read(4, end) == read(0, end)
    assert read(3, 4) == [] and read(0, 1) == [(0, b"c0")]
    counts = TransactionCounts()
    assert sum(ch.num_records for ch in fetch_range(client, topic, 0, 0, end, committed,
                                                    counts=counts)) == 3
    if broker_kind == "kafka":
        assert counts == TransactionCounts(listed_aborted=1, marker_committed=2)
        rc = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
        assert [m.value() for m in consume_all(rc, topic, 30)] == [b"c0", b"c1", b"c2"]
    elif broker_kind == "tansu":
        assert counts == TransactionCounts(marker_aborted=1, marker_committed=2)


# ------------------------------------------------------------------------------ data loss


def delete_topic(client, topic: str) -> None:
    delete_topics(client, [topic])


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for v in values:
        p.produce(topic, value=v, partition=0)
    assert p.flush(10) == 0


def test_deleted_topic_is_data_loss(bootstrap, client, new_topic, caplog) -> None:
    topic = new_topic(1, "gone")
    _produce(bootstrap, topic, [b"v%d" % i for i in range(5)])
    assert sum(c.num_records for c in fetch_range(client, topic, 0, 0, 5)) == 5  # cached
    delete_topic(client, topic)
    quick = KafkaClient(ClientConfig.from_servers(bootstrap, retries=1))
    with quick, raises_condition(DataLossError, "KAFKA_DATA_LOSS.PARTITIONS_DELETED",
                                 rf"cannot read offsets \[0, 5\) of {topic}-0",
                                 "set the source option failOnDataLoss to false"):
        list(fetch_range(quick, topic, 0, 0, 5))
    with caplog.at_level(logging.WARNING, "spark_kafka_wire.client.fetching.fetcher"):
        assert list(fetch_range(client, topic, 0, 0, 5, fail_on_data_loss=False)) == []
    assert f"Skipping offsets [0, 5) of {topic}-0: the topic or partition no longer exists" \
        in caplog.text


def test_recreated_shorter_partition_is_data_loss(bootstrap, client, new_topic, caplog):
    topic = new_topic(1, "short")
    _produce(bootstrap, topic, [b"old%d" % i for i in range(6)])
    delete_topic(client, topic)
    create_topics(client, [(topic, 1)])
    _produce(bootstrap, topic, [b"new0", b"new1"])
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
                          r"cannot read offsets \[2, 6\) .* the partition now ends at offset 2 "
                          "but offsets up to 6"):
        list(fetch_range(client, topic, 0, 0, 6))
    with caplog.at_level(logging.WARNING, "spark_kafka_wire.client.fetching.fetcher"):
        got = [v for c in fetch_range(client, topic, 0, 0, 6, fail_on_data_loss=False)
               for v in c.values.to_pylist()]
    assert got == [b"new0", b"new1"]
    assert f"Skipping offsets [2, 6) of {topic}-0" in caplog.text
