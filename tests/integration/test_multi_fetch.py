"""Many ranges read with shared Fetches (client/fetching/multi_fetch.py) against a real broker: the
records are exactly those of reading each range alone with fetch_range, in range order, and a
task of many small ranges costs a few requests instead of one per range."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.errors import DataLossError
from spark_kafka_wire.client.fetching import multi_fetch
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.multi_fetch import fetch_ranges
from spark_kafka_wire.client.fetching.offsets import READ_COMMITTED
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import PendingBatch, Producer, ProduceSettings
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.client.wire.hooks import CloseReason
from spark_kafka_wire.protocol.compression import codec_id
from spark_kafka_wire.protocol.messages import FETCH
from spark_kafka_wire.protocol.records import encode_record_batch
from tests.support.errors import raises_condition
from tests.support.request_log import RequestLog

Range = tuple[str, int, int, int]


def _write(client: KafkaClient, topic: str, partition: int, n: int, batch: int,
           codec: str = "none") -> None:
    p = Producer(client, ProduceSettings(compression=codec_id(codec)))
    for lo in range(0, n, batch):
        m = min(batch, n - lo)
        keys = [b"%s-%d-k%d" % (topic.encode(), partition, lo + j) for j in range(m)]
        values = [b"v%d-%d" % (partition, lo + j) * (1 + (lo + j) % 7) for j in range(m)]
        p.send([PendingBatch(topic, partition, encode_record_batch(
            keys, values, timestamps=1_700_000_000_000 + lo, compression=codec_id(codec)), m)])


def _rows(chunks) -> list[tuple]:
    out = []
    for where, c in chunks:
        out.extend(zip([where] * c.num_records, c.offsets.tolist(), c.keys.to_pylist(),
                       c.values.to_pylist(), c.timestamps.tolist(), strict=True))
    return out


def _alone(client: KafkaClient, ranges: list[Range], settings: FetchSettings) -> list[tuple]:
    return _rows((i, c) for i, (t, p, s, e) in enumerate(ranges)
                 for c in fetch_range(client, t, p, s, e, settings))


@pytest.fixture
def fetches() -> Iterator[RequestLog[int]]:
    """Counts the Fetch requests the clients it ``watch``es send (the list grows by one per
    request: the partitions it names)."""
    sent: RequestLog[int] = RequestLog(
        lambda e: sum(len(t["partitions"]) for t in e.body["topics"])
        if e.api == FETCH.name else None)
    yield sent
    sent.close()


@pytest.fixture
def layout(client: KafkaClient, new_topic) -> list[Range]:
    """Ranges over two topics: whole partitions, pieces of one partition, ranges starting and
    ending inside batches, compressed and uncompressed batches, an empty partition."""
    a, b = new_topic(6), new_topic(3)
    for p in range(6):
        _write(client, a, p, 20 + 5 * p, batch=7, codec="lz4" if p % 2 else "none")
    _write(client, b, 0, 300, batch=50, codec="zstd")
    _write(client, b, 1, 3, batch=3)
    ranges = [(a, p, 0, 20 + 5 * p) for p in range(6)]
    ranges[2] = (a, 2, 3, 29)  # inside batches at both ends
    ranges += [(b, 0, 0, 100), (b, 0, 100, 180), (b, 0, 180, 300), (b, 1, 1, 3)]
    return ranges


def test_shared_fetches_return_what_each_range_returns_alone(
        client: KafkaClient, layout: list[Range], fetches: RequestLog[int]) -> None:
    fetches.watch(client)
    settings = FetchSettings()
    expected = _alone(client, layout, settings)
    alone = len(fetches)
    fetches.clear()
    got = _rows(fetch_ranges(client, layout, settings))
    assert got == expected
    assert sum(e - s for _, _, s, e in layout) == len(got)
    # 10 ranges: the pieces of one partition cannot share a request, the rest can
    assert len(fetches) <= 4 < alone, (fetches, alone)
    assert max(fetches) >= 7


def test_small_budgets_take_several_rounds_and_stay_exact(
        client: KafkaClient, layout: list[Range], fetches: RequestLog[int]) -> None:
    fetches.watch(client)
    # a batch or two per partition and per answer: ranges fill up over many shared requests,
    # partitions left out of an answer wait for the next one
    settings = FetchSettings(max_partition_fetch_bytes=300, fetch_max_bytes=700)
    expected = _alone(client, layout, settings)
    fetches.clear()
    assert _rows(fetch_ranges(client, layout, settings)) == expected
    assert max(fetches) > 1


def test_a_batch_larger_than_the_budget_is_read_alone(client: KafkaClient, new_topic) -> None:
    topic = new_topic(3)
    for p in range(3):
        _write(client, topic, p, 40, batch=40)  # one batch of ~1.5 KB per partition
    ranges = [(topic, p, 0, 40) for p in range(3)]
    settings = FetchSettings(max_partition_fetch_bytes=100, fetch_max_bytes=100)
    expected = _alone(client, ranges, settings)
    assert len(expected) == 120
    assert _rows(fetch_ranges(client, ranges, settings)) == expected


def test_lost_offsets_are_reported_for_their_range_only(client: KafkaClient, new_topic) -> None:
    topic = new_topic(3)
    for p in range(3):
        _write(client, topic, p, 10, batch=5)
    # partition 1 is planned past its end: the log "was truncated"
    ranges = [(topic, 0, 0, 10), (topic, 1, 0, 25), (topic, 2, 0, 10)]
    settings = FetchSettings(max_wait_ms=50)
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
                          rf"{topic}-1.*partition now ends at offset 10"):
        list(fetch_ranges(client, ranges, settings))
    rows = _rows(fetch_ranges(client, ranges, settings, fail_on_data_loss=False))
    assert [(i, o) for i, o, *_ in rows] == (
        [(0, o) for o in range(10)] + [(1, o) for o in range(10)] + [(2, o) for o in range(10)])


def test_read_committed_reads_each_range_alone(client: KafkaClient, layout: list[Range],
                                               fetches: RequestLog[int]) -> None:
    fetches.watch(client)
    settings = FetchSettings(isolation_level=READ_COMMITTED)
    expected = _alone(client, layout, settings)
    fetches.clear()
    assert _rows(fetch_ranges(client, layout, settings)) == expected
    assert max(fetches) == 1


def test_a_failed_shared_request_falls_back_to_each_range(
        client: KafkaClient, layout: list[Range], monkeypatch: pytest.MonkeyPatch) -> None:
    # the shared request's connection drops once: the range falls back to fetch_range, whose
    # retry rule reconnects; nothing is lost or repeated
    expected = _alone(client, layout, FetchSettings())
    real = BrokerConnection.request
    failed: list[bool] = []

    def request(self, spec, body, version=None):
        if spec.key == FETCH.key and not failed and len(body["topics"][0]["partitions"]) > 1:
            failed.append(True)
            self.close(CloseReason.CLIENT_CLOSED)
        return real(self, spec, body, version)

    monkeypatch.setattr(BrokerConnection, "request", request)
    assert _rows(fetch_ranges(client, layout, FetchSettings())) == expected
    assert failed


def test_requests_name_at_most_the_partition_cap(client: KafkaClient, new_topic,
                                                 fetches: RequestLog[int],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fetches.watch(client)
    monkeypatch.setattr(multi_fetch, "MAX_PARTITIONS_PER_FETCH", 4)
    topic = new_topic(10)
    ranges = []
    for p in range(10):
        _write(client, topic, p, 3, batch=3)
        ranges.append((topic, p, 0, 3))
    got = _rows(fetch_ranges(client, ranges))
    assert [(i, o) for i, o, *_ in got] == [(i, o) for i in range(10) for o in range(3)]
    assert fetches == [4, 4, 2]
    values = pa.array([v for *_, v, _ in got]).to_pylist()
    assert values == [b"v%d-%d" % (p, o) * (1 + o % 7) for p in range(10) for o in range(3)]
    assert np.all(np.diff([o for _, o, *_ in got][:3]) == 1)


@pytest.mark.parametrize("release", ["0.8.2", "0.10.0"])
def test_legacy_message_sets_share_fetches(legacy_broker, release: str,
                                           fetches: RequestLog[int]) -> None:
    # magic 0 / 1 message sets, gzip wrappers among plain messages, over two partitions
    from spark_kafka_wire.client.config import ClientConfig

    broker = legacy_broker(release)
    broker.create_topic("legacy", 2)
    for p in range(2):
        broker.append("legacy", p, [(b"k%d" % i, b"plain-%d-%d" % (p, i)) for i in range(4)])
        broker.append("legacy", p, [(None, b"gz-%d-%d" % (p, i)) for i in range(5)],
                      codec="gzip")
    ranges = [("legacy", 0, 0, 9), ("legacy", 1, 2, 7)]
    config = ClientConfig.from_servers(broker.bootstrap_servers, request_timeout_ms=5000,
                                       api_version_request=False,
                                       broker_version_fallback=release)
    with fetches.watch(KafkaClient(config)) as client:
        expected = _alone(client, ranges, FetchSettings())
        fetches.clear()
        got = _rows(fetch_ranges(client, ranges, FetchSettings()))
    assert got == expected
    assert [(i, o) for i, o, *_ in got] == [(0, o) for o in range(9)] + [(1, o) for o in range(2, 7)]
    assert fetches == [2]
