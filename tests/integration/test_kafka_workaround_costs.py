"""What kafkawire's Tansu workarounds cost on Apache Kafka (issue 28, part 3): nothing beyond
what they must send to check Kafka's answer.

The client carries checks for brokers that answer differently from Kafka (Tansu, the second
test broker): "latest" and "earliest" from ListOffsets are confirmed by a Fetch's watermarks
(client/fetching/offsets.py), a ListOffsets-by-timestamp answer is checked against the records around
it and replaced by a scan when they contradict it (client/fetching/timestamps.py), readers fetch with
min_bytes 1 and ride out empty answers (client/fetching/fetcher.py, client/fetching/empty_answers.py), and
answers to acks=0 Produce requests are dropped (client/wire/connection.py). On Kafka, whose
answers are right, each must cost at most its check: these tests count the requests by API
(``KafkaClient.request_counts``, the client's own counter) and, where Kafka would make a
request wait, the time. They always run on Apache Kafka (tests/support/apache_kafka.py),
whatever KAFKAWIRE_TEST_BROKER says, and skip only where Java or Maven is missing.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import (
    EARLIEST,
    LATEST,
    PROBE_WAIT_MS,
    resolve_offsets,
)
from spark_kafka_wire.client.fetching.timestamps import offsets_for_times
from spark_kafka_wire.client.metadata.admin import delete_records
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
from tests.support.apache_kafka import topic_on

pytestmark = [pytest.mark.broker]

BASE_MS = 1_600_000_000_000  # record timestamps: BASE_MS + 1000 * i for the i-th record


@pytest.fixture(scope="module")
def kclient(apache_kafka) -> KafkaClient:
    c = KafkaClient(ClientConfig.from_servers(apache_kafka.bootstrap_servers,
                                              request_timeout_ms=15_000))
    yield c
    c.close()


def _write(client: KafkaClient, topic: str, partition: int, n: int,
           settings: ProduceSettings | None = None) -> Producer:
    settings = settings or ProduceSettings()
    producer = Producer(client, settings)
    values = pa.array([b"%06d" % i for i in range(n)], pa.binary())
    producer.send(encode_partitioned(
        topic, None, values, np.full(n, partition, np.int32), settings,
        BASE_MS + 1000 * np.arange(n, dtype=np.int64)))
    return producer


class Sent:
    """The requests ``client`` sends inside the block, and the bytes of their answers, by API
    name."""

    def __init__(self, client: KafkaClient) -> None:
        self.client = client
        self.counts: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()

    def __enter__(self) -> Sent:
        self._before = Counter(self.client.request_counts())
        self._bytes_before = Counter(self.client.bytes_received())
        return self

    def __exit__(self, *exc: object) -> None:
        self.counts = Counter(self.client.request_counts()) - self._before
        self.bytes = Counter(self.client.bytes_received()) - self._bytes_before


def test_request_counts_count_what_was_sent(kclient):
    """The counter itself: a new client's connection set-up (ApiVersions), Metadata, and one
    ListOffsets per leader; a closed client keeps what it counted."""
    c = KafkaClient(kclient.config)
    topic = topic_on(kclient, 2, "count")
    with Sent(c) as sent:
        c.fetch_metadata([topic])
    assert sent.counts["Metadata"] == 1 and sent.counts["ApiVersions"] >= 1, sent.counts
    c.close()
    assert c.request_counts()["Metadata"] == 1


def test_latest_is_confirmed_without_waiting(kclient):
    """"Latest" is ListOffsets(-1), confirmed by a Fetch at that offset (Tansu answers the
    start of the last batch + 1). Kafka's answer is the high watermark, where a Fetch with
    min_bytes 1 waits max_wait_ms for data that does not come: the confirmation must not
    wait (it did, PROBE_WAIT_MS for every "latest", before it asked with max_wait_ms 0
    first). One ListOffsets and one Fetch for both partitions (one leader), and no wait."""
    topic = topic_on(kclient, 2, "latest")
    for p in (0, 1):
        _write(kclient, topic, p, 30)
    wanted = {(topic, 0): LATEST, (topic, 1): LATEST}
    resolve_offsets(kclient, wanted)  # connections and metadata in place
    took = []
    for _ in range(5):
        with Sent(kclient) as sent:
            began = time.monotonic()
            assert resolve_offsets(kclient, wanted) == {(topic, 0): 30, (topic, 1): 30}
            took.append(time.monotonic() - began)
        assert sent.counts == {"ListOffsets": 1, "Fetch": 1}, sent.counts
    # Kafka holds a waiting Fetch the whole PROBE_WAIT_MS: the fastest of five would be over it
    assert min(took) < 0.8 * PROBE_WAIT_MS / 1000, took


def test_earliest_of_an_untouched_log_needs_no_fetch(kclient):
    """"Earliest" is confirmed only when ListOffsets(-2) answers above 0 (Tansu can answer a
    later batch under concurrent producers); a log that starts at 0 costs one ListOffsets."""
    topic = topic_on(kclient, 1, "earliest")
    _write(kclient, topic, 0, 10)
    resolve_offsets(kclient, {(topic, 0): EARLIEST})
    with Sent(kclient) as sent:
        assert resolve_offsets(kclient, {(topic, 0): EARLIEST}) == {(topic, 0): 0}
    assert sent.counts == {"ListOffsets": 1}, sent.counts


def test_earliest_above_zero_is_confirmed_without_records(kclient):
    """A log that starts above 0 (DeleteRecords here; retention in production) has its
    "earliest" confirmed by a Fetch one offset below the answer: Kafka answers it
    OFFSET_OUT_OF_RANGE, without records. (The Fetch used to go to the answer itself, and
    Kafka returned the first batch there, 5 KiB here, up to a batch size in general.)"""
    topic = topic_on(kclient, 1, "earliest-deleted")
    settings = ProduceSettings(batch_size=4 << 10)
    producer = Producer(kclient, settings)
    values = pa.array([b"%06d" % i + b"e" * 5000 for i in range(10)], pa.binary())
    producer.append(topic, None, values, np.zeros(10, np.int32), BASE_MS)
    producer.flush()
    assert delete_records(kclient, {(topic, 0): 4}) == {(topic, 0): 4}
    resolve_offsets(kclient, {(topic, 0): EARLIEST})
    with Sent(kclient) as sent:
        assert resolve_offsets(kclient, {(topic, 0): EARLIEST}) == {(topic, 0): 4}
    assert sent.counts == {"ListOffsets": 1, "Fetch": 1}, sent.counts
    assert sent.bytes["Fetch"] < 1000, sent.bytes


def test_timestamp_lookup_takes_kafkas_answer_without_a_scan(kclient):
    """ListOffsets by timestamp is checked against the record at the answer and the one
    before it: one small Fetch. Kafka's answer passes, so nothing is scanned: 3 ListOffsets
    (earliest, latest, by time), the latest confirmation and the one check; no contradiction
    reported. Records are spread over 20 batches so that a scan would show as more Fetches."""
    topic = topic_on(kclient, 1, "times")
    settings = ProduceSettings(batch_size=200)  # a few records a batch: offsets 0..199
    producer = Producer(kclient, settings)
    n = 200
    values = pa.array([b"%06d" % i + b"." * 40 for i in range(n)], pa.binary())
    producer.send(encode_partitioned(topic, None, values, np.zeros(n, np.int32), settings,
                                     BASE_MS + 1000 * np.arange(n, dtype=np.int64)))
    assert producer.requests_sent >= 20  # the records lie in many batches
    tp = (topic, 0)
    contradictions: list[tuple] = []
    small = FetchSettings(max_partition_fetch_bytes=1024, max_wait_ms=PROBE_WAIT_MS)
    offsets_for_times(kclient, {tp: BASE_MS}, settings=small)  # warm up
    for target, expected in ((BASE_MS + 150_500, 151), (BASE_MS + 10_000_000, None)):
        with Sent(kclient) as sent:
            got = offsets_for_times(kclient, {tp: target}, settings=small,
                                    on_contradiction=lambda *a: contradictions.append(a))
        assert got == {tp: expected}
        assert contradictions == []
        assert sent.counts == {"ListOffsets": 3, "Fetch": 2}, (target, sent.counts)


def test_a_read_meets_no_empty_answer(kclient):
    """A range read fetches with min_bytes 1 (Tansu leaves partitions out of min_bytes=0
    answers) and backs off on answers without data below the end (a broker catching up).
    On Kafka every Fetch of a range below the high watermark carries data at once: as many
    Fetches as answers with records, none waited for."""
    topic = topic_on(kclient, 1, "range")
    n = 400
    settings = ProduceSettings(batch_size=2048)
    producer = Producer(kclient, settings)
    values = pa.array([b"%06d" % i + b"r" * 90 for i in range(n)], pa.binary())
    producer.send(encode_partitioned(topic, None, values, np.zeros(n, np.int32), settings,
                                     BASE_MS))
    fetch = FetchSettings(max_partition_fetch_bytes=8 << 10, fetch_max_bytes=8 << 10,
                          max_wait_ms=2000)
    chunks = 0
    with Sent(kclient) as sent:
        began = time.monotonic()
        got: list[bytes] = []
        for chunk in fetch_range(kclient, topic, 0, 0, n, fetch):
            chunks += 1
            got += chunk.values.to_pylist()
        took = time.monotonic() - began
    assert got == values.to_pylist()
    assert chunks > 3 and sent.counts == {"Fetch": chunks}, (chunks, sent.counts)
    # a Fetch waited for (max_wait_ms 2000 at the end) would show as seconds
    assert took < 1.5, took


def test_acks0_answers_are_none_to_drop(kclient):
    """Kafka sends no answer to a Produce with acks=0 (Tansu does; the connection drops those
    frames): on Kafka nothing is dropped, and the records are all written."""
    topic = topic_on(kclient, 1, "acks0")
    settings = ProduceSettings(acks=0, enable_idempotence=False, batch_size=1024)
    with Sent(kclient) as sent:
        producer = _write(kclient, topic, 0, 100, settings)
    assert sent.counts["Produce"] == producer.requests_sent > 1
    conn = kclient.leader_connection(topic, 0)
    assert conn.unsolicited_dropped == 0
    deadline = time.monotonic() + 10
    while resolve_offsets(kclient, {(topic, 0): LATEST})[(topic, 0)] < 100:
        assert time.monotonic() < deadline, "acks=0 records did not all arrive"
        time.sleep(0.1)
