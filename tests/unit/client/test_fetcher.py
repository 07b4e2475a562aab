"""The range fetcher's decisions, fed hand-built Fetch answers (no broker).

The real broker tests cover what Tansu can do; these cover what it cannot show: a log start
that moved past the planned range (retention; Tansu implements neither retention nor
DeleteRecords) and aborted-transaction lists (Tansu answers READ_COMMITTED fetches with an
empty list). Each answer is what a Kafka broker sends in those situations.
"""

from __future__ import annotations

import logging
import struct

import pytest
from crc32c import crc32c

from spark_kafka_wire.client import fetcher
from spark_kafka_wire.client.fetcher import FetchAnswer, FetchSettings, fetch_range
from spark_kafka_wire.errors import DataLossError
from spark_kafka_wire.protocol.errors import ProtocolError, error_for_code
from spark_kafka_wire.protocol.records import encode_record_batch

P1, P2 = 1001, 2002


class _Client:
    def retry(self, attempt, what, retries=None):
        return attempt()


class _Conn:
    """Stands for the leader connection: records the Fetches abandoned after a send ahead."""

    def __init__(self) -> None:
        self.abandoned: list[int] = []

    def abandon(self, inflight) -> None:
        self.abandoned.append(inflight)


def data(base: int, n: int, producer_id: int = -1, transactional: bool = False) -> bytes:
    return encode_record_batch(None, [b"v%d" % (base + i) for i in range(n)], timestamps=7,
                               base_offset=base, producer_id=producer_id,
                               producer_epoch=0 if producer_id >= 0 else -1,
                               base_sequence=0 if producer_id >= 0 else -1,
                               transactional=transactional)


def marker(base: int, producer_id: int, commit: bool) -> bytes:
    raw = bytearray(encode_record_batch(
        [struct.pack(">hh", 0, 1 if commit else 0)], [struct.pack(">hi", 0, 1)], timestamps=7,
        base_offset=base, producer_id=producer_id, producer_epoch=0, transactional=True))
    struct.pack_into(">h", raw, 21, 0x10 | 0x20)  # transactional + control
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def answer(records: bytes, hw: int, log_start: int = 0, aborted=None) -> FetchAnswer:
    return FetchAnswer(memoryview(records), hw, hw, log_start, "stub:9092", aborted)


@pytest.fixture
def broker(monkeypatch):
    """Scripted Fetch answers keyed by fetch offset; an exception instance is raised."""
    script: dict[int, object] = {}
    available: list[tuple[int, int] | None] = []
    seen: list[int] = []  # offsets whose answers were read
    conn = _Conn()

    def send_fetch(client, topic, partition, offset, max_bytes, settings):
        return fetcher.SentFetch(conn, offset, offset, max_bytes)

    def read_answer(sent, topic, partition, settings):
        seen.append(sent.offset)
        a = script[sent.offset]
        if isinstance(a, Exception):
            raise a
        return a

    monkeypatch.setattr(fetcher, "send_fetch", send_fetch)
    monkeypatch.setattr(fetcher, "read_answer", read_answer)
    monkeypatch.setattr(fetcher, "_available", lambda *a: available[0])
    return script, available, seen


def read(start: int, end: int, fail: bool = True, committed: bool = False) -> list[bytes]:
    s = FetchSettings(isolation_level=1 if committed else 0, max_empty_fetches=1)
    return [v for c in fetch_range(_Client(), "t", 0, start, end, s, fail)
            for v in c.values.to_pylist()]


def oor(offset: int):
    return error_for_code(1, topic="t", partition=0, offset=offset, broker="stub:9092")


def test_log_start_past_the_range_start_is_data_loss(broker, caplog) -> None:
    script, available, _ = broker
    script[2] = oor(2)
    script[5] = answer(data(5, 3), hw=8, log_start=5)
    available.append((5, 8))
    with pytest.raises(DataLossError, match=r"cannot read offsets \[2, 5\) of t-0: the log now "
                                            r"starts at offset 5 .*failOnDataLoss to false"):
        read(2, 8)
    with caplog.at_level(logging.WARNING):
        assert read(2, 8, fail=False) == [b"v5", b"v6", b"v7"]
    assert "Skipping offsets [2, 5) of t-0: the log now starts at offset 5" in caplog.text


def test_whole_range_below_the_log_start_reads_nothing(broker) -> None:
    script, available, seen = broker
    script[0] = oor(0)
    available.append((10, 12))
    assert read(0, 4, fail=False) == []
    assert seen == [0]


def test_range_past_the_log_end_is_data_loss(broker) -> None:
    script, available, _ = broker
    script[0] = answer(data(0, 2), hw=2)
    script[2] = oor(2)
    available.append((0, 2))
    with pytest.raises(DataLossError, match=r"\[2, 6\).*partition now ends at offset 2"):
        read(0, 6)
    assert read(0, 6, fail=False) == [b"v0", b"v1"]


def test_deleted_partition_is_data_loss(broker) -> None:
    script, available, _ = broker
    script[0] = oor(0)
    available.append(None)
    with pytest.raises(DataLossError, match="UNKNOWN_TOPIC_OR_PARTITION.*no longer exists"):
        read(0, 3)
    script[0] = error_for_code(3, topic="t", partition=0)
    assert read(0, 3, fail=False) == []


def test_records_after_a_moved_log_start_report_the_gap(broker) -> None:
    """Some brokers answer from the log start instead of OFFSET_OUT_OF_RANGE."""
    script, _, _ = broker
    script[1] = answer(data(4, 2), hw=6, log_start=4)
    with pytest.raises(DataLossError, match=r"\[1, 4\)"):
        read(1, 6)
    assert read(1, 6, fail=False) == [b"v4", b"v5"]


def test_gaps_above_the_log_start_are_not_loss(broker) -> None:
    """Compaction and transaction markers leave offset gaps: not data loss."""
    script, _, _ = broker
    script[0] = answer(data(3, 2) + data(9, 1), hw=10, log_start=0)
    assert read(0, 10) == [b"v3", b"v4", b"v9"]


def test_offset_that_keeps_disappearing_gives_up(broker) -> None:
    script, available, seen = broker
    script[3] = oor(3)
    available.append((0, 10))
    with pytest.raises(DataLossError, match="keeps answering OFFSET_OUT_OF_RANGE"):
        read(3, 5)
    assert len(seen) == fetcher.MAX_DISAPPEARED + 1


# --------------------------------------------------------------------- read_committed


def _txn_log() -> bytes:
    """P1 commits 0-1 (marker 2), P2 aborts 3-4 (marker 5), P1 commits 6 (marker 7)."""
    return (data(0, 2, P1, True) + marker(2, P1, True) + data(3, 2, P2, True)
            + marker(5, P2, False) + data(6, 1, P1, True) + marker(7, P1, True))


def test_read_committed_drops_the_transactions_the_broker_lists(broker) -> None:
    script, _, _ = broker
    script[0] = answer(_txn_log(), hw=8, aborted=[(P2, 3)])
    assert read(0, 8, committed=True) == [b"v0", b"v1", b"v6"]
    # read_uncommitted returns everything the log holds.
    script[0] = answer(_txn_log(), hw=8, aborted=None)
    assert read(0, 8) == [b"v0", b"v1", b"v3", b"v4", b"v6"]


def test_read_committed_refuses_aborted_data_the_broker_did_not_list(broker) -> None:
    script, _, _ = broker
    script[0] = answer(_txn_log(), hw=8, aborted=[])
    with pytest.raises(ProtocolError, match=r"records of producer 2002 from offset 3 whose "
                                            r"transaction was aborted \(marker at offset 5\)"):
        read(0, 8, committed=True)


def test_read_committed_check_spans_fetches(broker) -> None:
    """The abort marker arrives in a later Fetch than the aborted records."""
    script, _, _ = broker
    log = _txn_log()
    first = data(0, 2, P1, True) + marker(2, P1, True) + data(3, 2, P2, True)
    script[0] = answer(first, hw=8, aborted=[])
    script[5] = answer(log[len(first):], hw=8, aborted=[])
    chunks = fetch_range(_Client(), "t", 0, 0, 8, FetchSettings(isolation_level=1))
    assert next(chunks).values.to_pylist() == [b"v0", b"v1", b"v3", b"v4"]
    with pytest.raises(ProtocolError, match="producer 2002 from offset 3"):
        next(chunks)


def test_committed_transactions_pass_the_check(broker) -> None:
    script, _, _ = broker
    script[0] = answer(data(0, 2, P1, True) + marker(2, P1, True) + data(3, 1), hw=4,
                       aborted=[])
    assert read(0, 4, committed=True) == [b"v0", b"v1", b"v3"]


def test_next_fetch_is_sent_before_the_answer_is_decoded(broker, monkeypatch) -> None:
    script, _, seen = broker
    script[0] = answer(data(0, 3) + data(3, 2), hw=8)
    script[5] = answer(data(5, 3), hw=8)
    sent: list[tuple[int, list[int]]] = []
    real_send = fetcher.send_fetch

    def send_fetch(client, topic, partition, offset, max_bytes, settings):
        sent.append((offset, list(seen)))  # which answers had been read when this was sent
        return real_send(client, topic, partition, offset, max_bytes, settings)

    monkeypatch.setattr(fetcher, "send_fetch", send_fetch)
    chunks = fetch_range(_Client(), "t", 0, 0, 8)
    first = next(chunks)
    # Offset 5 went out right after the first answer arrived, before its chunk was yielded.
    assert sent == [(0, []), (5, [0])]
    assert first.values.to_pylist() == [b"v0", b"v1", b"v2", b"v3", b"v4"]
    assert [v for c in chunks for v in c.values.to_pylist()] == [b"v5", b"v6", b"v7"]
    assert sent == [(0, []), (5, [0])]  # the answer sent ahead was used, not fetched again


def test_nothing_is_sent_past_the_range_end(broker, monkeypatch) -> None:
    script, _, _ = broker
    script[0] = answer(data(0, 4) + data(4, 4), hw=20)
    sends: list[int] = []
    real_send = fetcher.send_fetch
    monkeypatch.setattr(fetcher, "send_fetch", lambda c, t, p, o, m, s: (
        sends.append(o), real_send(c, t, p, o, m, s))[1])
    assert read(0, 8) == [b"v%d" % i for i in range(8)]
    assert sends == [0]


def test_stopping_early_abandons_the_fetch_sent_ahead(broker) -> None:
    script, _, seen = broker
    script[0] = answer(data(0, 5), hw=10)
    script[5] = answer(data(5, 5), hw=10)
    chunks = fetch_range(_Client(), "t", 0, 0, 10)
    next(chunks)
    conn = fetcher.send_fetch(None, "t", 0, 0, 0, FetchSettings()).conn
    chunks.close()
    assert conn.abandoned == [5] and seen == [0]


def test_an_unexpected_next_offset_abandons_the_fetch_sent_ahead(broker, monkeypatch) -> None:
    # The headers point at 5 but the decoder reports 3 as the next offset: the Fetch sent for
    # 5 is abandoned and 3 is fetched, so the records come out exactly once and in order.
    script, _, seen = broker
    script[0] = answer(data(0, 3), hw=8)
    script[3] = answer(data(3, 5), hw=8)
    script[5] = answer(data(5, 3), hw=8)
    real = fetcher.next_batch_offset
    first = [True]

    def wrong_once(records):
        got = real(records)
        if first[0]:
            first[0] = False
            return got + 2
        return got

    monkeypatch.setattr(fetcher, "next_batch_offset", wrong_once)
    assert read(0, 8) == [b"v%d" % i for i in range(8)]
    conn = fetcher.send_fetch(None, "t", 0, 0, 0, FetchSettings()).conn
    assert seen == [0, 3] and conn.abandoned == [5]
