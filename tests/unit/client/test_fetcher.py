"""The range fetcher's decisions, fed hand-built Fetch answers (no broker).

The real broker tests cover what Tansu can do; these cover what it cannot show: a log start
that moved past the planned range (retention; Tansu implements neither retention nor
DeleteRecords), aborted-transaction lists (Tansu answers READ_COMMITTED fetches with an
empty list), and read_committed decided by the markers wherever they fall: in a later Fetch,
past the range end, never (an inconsistent log). Each answer is what a Kafka broker sends in
those situations.

The decisions are fed to ``fetch_plan.RangeFetch`` directly (``Broker.chunks`` drives it as
``fetch_range`` does, without I/O, and with a clock the test chooses); what only the I/O loop
does (the Fetch sent ahead, its use or abandonment, the isolation level on the wire, metadata
retries) is tested through ``fetch_range`` with a fake client and connection at the end.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator

import pytest
from crc32c import crc32c

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import FetchStalledError
from spark_kafka_wire.client.fetching import fetch_plan, fetcher
from spark_kafka_wire.client.fetching.fetch_plan import (
    MAX_FETCH_BYTES_LIMIT,
    TRANSITIONS,
    FetchAnswer,
    FetchRequest,
    LogBoundsRequest,
    RangeFetch,
    RangeState,
)
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import PartitionFetches, fetch_range
from spark_kafka_wire.client.wire.connection import Deadline
from spark_kafka_wire.errors import DataLossError
from spark_kafka_wire.protocol.compression import DecompressionLimitError
from spark_kafka_wire.protocol.errors import (
    CorruptRecordError,
    NotControllerError,
    ProtocolError,
    error_for_code,
)
from spark_kafka_wire.protocol.records import (
    DecodedRecords,
    encode_message_set,
    encode_record_batch,
)
from tests.support.errors import raises_condition

P1, P2 = 1001, 2002
# An empty answer below the partition's end is given up on within a short budget
# (client/fetching/empty_answers.py): first asked again at once, then after 1 ms, 2 ms, ...
CONFIG = ClientConfig.from_servers("stub:9092", request_timeout_ms=100, retry_backoff_ms=1,
                                   retry_backoff_max_ms=2)


def data(base: int, n: int, producer_id: int = -1, transactional: bool = False,
         codec: str = "none") -> bytes:
    """A batch of ``n`` records whose values name their offsets."""
    return encode_record_batch(None, [b"v%d" % (base + i) for i in range(n)], timestamps=7,
                               base_offset=base, producer_id=producer_id,
                               producer_epoch=0 if producer_id >= 0 else -1,
                               base_sequence=0 if producer_id >= 0 else -1,
                               transactional=transactional, compression=codec)


def marker(base: int, producer_id: int, commit: bool, codec: str = "none") -> bytes:
    """A COMMIT or ABORT control batch, as a transaction coordinator writes it (KIP-98)."""
    raw = bytearray(encode_record_batch(
        [struct.pack(">hh", 0, 1 if commit else 0)], [struct.pack(">hi", 0, 1)], timestamps=7,
        base_offset=base, producer_id=producer_id, producer_epoch=0, transactional=True,
        compression=codec))
    attrs = struct.unpack_from(">h", raw, 21)[0]
    struct.pack_into(">h", raw, 21, attrs | 0x10 | 0x20)  # transactional + control
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def answer(records: bytes, hw: int, log_start: int = 0, aborted=None) -> FetchAnswer:
    return FetchAnswer(memoryview(records), hw, hw, log_start, "stub:9092", aborted)


class Broker:
    """Scripted Fetch answers keyed by fetch offset (an exception instance is the error the
    Fetch ended with), and the partition's bounds (``log_bounds``), fed to the decision step
    as ``fetch_range`` feeds it."""

    def __init__(self) -> None:
        self.script: dict[int, object] = {}
        self.bounds: tuple[int, int] | None = None
        self.seen: list[int] = []  # offsets whose answers were fed
        self.requests: list[FetchRequest] = []
        self.clock = 0.0  # the time of each answer: advanced by the pauses asked for

    def chunks(self, start: int, end: int, settings: FetchSettings | None = None,
               fail: bool = True) -> Iterator[DecodedRecords]:
        plan = RangeFetch("t", 0, start, end, settings or FetchSettings(), fail, CONFIG)
        while (want := plan.next_request()) is not None:
            if isinstance(want, LogBoundsRequest):
                yield from plan.log_bounds(self.bounds)
                continue
            self.requests.append(want)
            self.seen.append(want.offset)
            self.clock += want.pause_s
            got = self.script[want.offset]
            if isinstance(got, Exception):
                yield from plan.fetch_failed(got)  # type: ignore[arg-type]
                continue
            assert isinstance(got, FetchAnswer)
            yield from plan.receive(got, self.clock)

    def read(self, start: int, end: int, fail: bool = True, committed: bool = False
             ) -> list[bytes]:
        s = FetchSettings(isolation_level=1 if committed else 0)
        return [v for c in self.chunks(start, end, s, fail) for v in c.values.to_pylist()]


@pytest.fixture
def broker() -> Broker:
    return Broker()


def oor(offset: int):
    return error_for_code(1, topic="t", partition=0, offset=offset, broker="stub:9092")


def test_log_start_past_the_range_start_is_data_loss(broker, caplog) -> None:
    script = broker.script
    script[2] = oor(2)
    script[5] = answer(data(5, 3), hw=8, log_start=5)
    broker.bounds = (5, 8)
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
                          r"cannot read offsets \[2, 5\) of t-0: the log now starts at offset 5 ",
                          "failOnDataLoss to false"):
        broker.read(2, 8)
    with caplog.at_level(logging.WARNING):
        assert broker.read(2, 8, fail=False) == [b"v5", b"v6", b"v7"]
    assert "Skipping offsets [2, 5) of t-0: the log now starts at offset 5" in caplog.text


def test_whole_range_below_the_log_start_reads_nothing(broker) -> None:
    script, seen = broker.script, broker.seen
    script[0] = oor(0)
    broker.bounds = (10, 12)
    assert broker.read(0, 4, fail=False) == []
    assert seen == [0]


def test_range_past_the_log_end_is_data_loss(broker) -> None:
    script = broker.script
    script[0] = answer(data(0, 2), hw=2)
    script[2] = oor(2)
    broker.bounds = (0, 2)
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
                          r"\[2, 6\).*partition now ends at offset 2"):
        broker.read(0, 6)
    assert broker.read(0, 6, fail=False) == [b"v0", b"v1"]


def test_deleted_partition_is_data_loss(broker) -> None:
    script = broker.script
    script[0] = oor(0)
    broker.bounds = None
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.PARTITIONS_DELETED", r"\[0, 3\) of t-0"):
        broker.read(0, 3)
    script[0] = error_for_code(3, topic="t", partition=0)
    assert broker.read(0, 3, fail=False) == []


def test_records_after_a_moved_log_start_report_the_gap(broker) -> None:
    """Some brokers answer from the log start instead of OFFSET_OUT_OF_RANGE."""
    script = broker.script
    script[1] = answer(data(4, 2), hw=6, log_start=4)
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
                          r"\[1, 4\)"):
        broker.read(1, 6)
    assert broker.read(1, 6, fail=False) == [b"v4", b"v5"]


def test_gaps_above_the_log_start_are_not_loss(broker) -> None:
    """Compaction and transaction markers leave offset gaps: not data loss."""
    script = broker.script
    script[0] = answer(data(3, 2) + data(9, 1), hw=10, log_start=0)
    assert broker.read(0, 10) == [b"v3", b"v4", b"v9"]


def test_offset_that_keeps_disappearing_gives_up(broker) -> None:
    script, seen = broker.script, broker.seen
    script[3] = oor(3)
    broker.bounds = (0, 10)
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
                          "keeps answering OFFSET_OUT_OF_RANGE"):
        broker.read(3, 5)
    assert len(seen) == fetch_plan.MAX_DISAPPEARED + 1


# --------------------------------------------------------------------- read_committed


def _txn_log() -> bytes:
    """P1 commits 0-1 (marker 2), P2 aborts 3-4 (marker 5), P1 commits 6 (marker 7)."""
    return (data(0, 2, P1, True) + marker(2, P1, True) + data(3, 2, P2, True)
            + marker(5, P2, False) + data(6, 1, P1, True) + marker(7, P1, True))


def test_read_committed_drops_the_transactions_the_broker_lists(broker) -> None:
    script = broker.script
    script[0] = answer(_txn_log(), hw=8, aborted=[(P2, 3)])
    assert broker.read(0, 8, committed=True) == [b"v0", b"v1", b"v6"]
    # read_uncommitted returns everything the log holds.
    script[0] = answer(_txn_log(), hw=8, aborted=None)
    assert broker.read(0, 8) == [b"v0", b"v1", b"v3", b"v4", b"v6"]


def test_read_committed_drops_aborted_data_the_broker_did_not_list(broker) -> None:
    """Tansu lists no aborted transactions: P2's ABORT marker decides its records."""
    script = broker.script
    script[0] = answer(_txn_log(), hw=8, aborted=[])
    assert broker.read(0, 8, committed=True) == [b"v0", b"v1", b"v6"]
    # A broker that lists P2 and one that does not give the same records.
    script[0] = answer(_txn_log(), hw=8, aborted=[(P2, 3)])
    assert broker.read(0, 8, committed=True) == [b"v0", b"v1", b"v6"]


def test_a_marker_in_a_later_fetch_decides_the_records_held_until_then(broker) -> None:
    script, seen = broker.script, broker.seen
    log = _txn_log()
    first = data(0, 2, P1, True) + marker(2, P1, True) + data(3, 2, P2, True)
    script[0] = answer(first, hw=8, aborted=[])
    script[5] = answer(log[len(first):], hw=8, aborted=[])
    chunks = broker.chunks(0, 8, FetchSettings(isolation_level=1))
    # The first answer's chunk waits for P2's marker, which the second answer brings.
    assert next(chunks).values.to_pylist() == [b"v0", b"v1"]
    assert seen == [0, 5]
    assert [v for c in chunks for v in c.values.to_pylist()] == [b"v6"]
    # The same log with P2 committed returns its records, in offset order.
    script[5] = answer(marker(5, P2, True) + log[len(first) + len(marker(5, P2, True)):],
                       hw=8, aborted=[])
    assert broker.read(0, 8, committed=True) == [b"v0", b"v1", b"v3", b"v4", b"v6"]


def test_committed_transactions_are_kept(broker) -> None:
    script = broker.script
    script[0] = answer(data(0, 2, P1, True) + marker(2, P1, True) + data(3, 1), hw=4,
                       aborted=[])
    assert broker.read(0, 4, committed=True) == [b"v0", b"v1", b"v3"]


@pytest.mark.parametrize("commit", [True, False])
def test_a_marker_past_the_range_end_is_looked_for(broker, commit) -> None:
    """The range ends at 5 (P2 kept the last stable offset there while the range was planned,
    or the range was split there); P2's marker is at 6, past a record of P1's next
    transaction that must not be returned."""
    script, seen = broker.script, broker.seen
    script[0] = answer(data(0, 2, P1, True) + marker(2, P1, True) + data(3, 2, P2, True),
                       hw=9, aborted=[])
    script[5] = answer(data(5, 1, P1, True), hw=9, aborted=None)
    script[6] = answer(marker(6, P2, commit) + data(7, 1, P1, True), hw=9, aborted=None)
    expected = [b"v0", b"v1", b"v3", b"v4"] if commit else [b"v0", b"v1"]
    assert broker.read(0, 5, committed=True) == expected
    # Past the end only markers are looked for, read uncommitted (a marker may lie above the
    # last stable offset), and the walk stops at the last marker needed.
    assert seen == [0, 5, 6]
    assert [r.past_end for r in broker.requests] == [False, True, True]


def test_nothing_past_the_end_is_fetched_when_every_transaction_is_decided(broker) -> None:
    script, seen = broker.script, broker.seen
    script[0] = answer(_txn_log(), hw=20, aborted=[])
    assert broker.read(0, 6, committed=True) == [b"v0", b"v1"]
    assert seen == [0]


def _interleaved() -> list[tuple[int, bytes]]:
    """(last offset, batch): P1 commits 0, 4 (marker 7); P2 aborts 1 (marker 5) then commits
    6 (marker 9); -1 (plain) and P3 (idempotent, not transactional) write 2, 3, 8, 10."""
    p3 = 3003
    return [(0, data(0, 1, P1, True)), (1, data(1, 1, P2, True)), (2, data(2, 1)),
            (3, data(3, 1, p3)), (4, data(4, 1, P1, True)), (5, marker(5, P2, False)),
            (6, data(6, 1, P2, True)), (7, marker(7, P1, True)), (8, data(8, 1)),
            (9, marker(9, P2, True)), (10, data(10, 1, p3))]


INTERLEAVED_COMMITTED = [0, 2, 3, 4, 6, 8, 10]


def serve(script: dict, log: list[tuple[int, bytes]], per_fetch: int) -> None:
    """Answers for every fetch offset of ``log``: the batches from the one holding the offset,
    at most ``per_fetch`` of them."""
    hw = log[-1][0] + 1
    for offset in range(hw + 1):
        batches = [b for last, b in log if last >= offset][:per_fetch]
        script[offset] = answer(b"".join(batches), hw=hw, aborted=[])


def read_offsets(broker: Broker, start: int, end: int) -> list[int]:
    chunks = list(broker.chunks(start, end, FetchSettings(isolation_level=1)))
    for c in chunks:
        assert c.values.to_pylist() == [b"v%d" % o for o in c.offsets.tolist()]
    return [o for c in chunks for o in c.offsets.tolist()]


@pytest.mark.parametrize("per_fetch", [1, 2, 3, 11])
def test_interleaved_producers(broker, per_fetch) -> None:
    script = broker.script
    serve(script, _interleaved(), per_fetch)
    got = read_offsets(broker, 0, 11)
    assert got == INTERLEAVED_COMMITTED
    # Every range, its pieces concatenated, gives the whole: ranges split anywhere (inside
    # transactions too) look past their end for the markers they need.
    for cut in range(12):
        assert read_offsets(broker, 0, cut) + read_offsets(broker, cut, 11) == got, cut
    for a in range(11):
        for b in range(a, 12):
            assert read_offsets(broker, a, b) == [o for o in got if a <= o < b], (a, b)


def test_yielded_offsets_strictly_increase(broker) -> None:
    script = broker.script
    serve(script, _interleaved(), 2)
    chunks = list(broker.chunks(0, 11, FetchSettings(isolation_level=1)))
    offsets = [o for c in chunks for o in c.offsets.tolist()]
    assert len(chunks) > 1 and offsets == sorted(set(offsets)) == INTERLEAVED_COMMITTED


@pytest.mark.parametrize("commit", [True, False])
def test_a_transaction_over_several_fetches(broker, commit) -> None:
    """P1 writes 0-5 in three batches, each its own Fetch, and its marker comes in a fourth;
    a plain record between them waits behind P1's (Spark wants one partition in order)."""
    script, seen = broker.script, broker.seen
    log = [(1, data(0, 2, P1, True)), (2, data(2, 1)), (4, data(3, 2, P1, True)),
           (5, marker(5, P1, commit)), (6, data(6, 1))]
    serve(script, log, 1)
    chunks = broker.chunks(0, 7, FetchSettings(isolation_level=1))
    first = next(chunks)
    assert seen == [0, 2, 3, 5]  # nothing came out before the marker was read
    assert first.offsets.tolist() == ([0, 1] if commit else [2])
    rest = [o for c in chunks for o in c.offsets.tolist()]
    assert rest == ([2, 3, 4, 6] if commit else [6])


@pytest.mark.parametrize("commit", [True, False])
def test_a_range_starting_inside_a_transaction(broker, commit) -> None:
    """P2's batch 0-4 holds the range start 2 (the broker answers from the batch holding the
    offset asked for); its records before the start are not returned either way."""
    script = broker.script
    log = [(4, data(0, 5, P2, True)), (5, marker(5, P2, commit)), (7, data(6, 2, P1, True)),
           (8, marker(8, P1, True))]
    serve(script, log, 2)
    assert read_offsets(broker, 2, 9) == ([2, 3, 4, 6, 7] if commit else [6, 7])
    # Starting after P2's records but before its marker: the marker decides nothing here.
    assert read_offsets(broker, 5, 9) == [6, 7]


def test_undecided_at_the_end_of_the_partition_fails(broker) -> None:
    script = broker.script
    script[0] = answer(data(0, 2, P1, True) + data(2, 1) + data(3, 1, P2, True), hw=4,
                       aborted=[])
    script[4] = answer(b"", hw=4)
    with pytest.raises(ProtocolError) as info:
        broker.read(0, 4, committed=True)
    e = info.value
    assert (e.topic, e.partition, e.offset) == ("t", 0, 0)
    assert "records in the range [0, 4) belong to transactions with no COMMIT or ABORT marker " \
        "in the log (producer 1001 from offset 0, producer 2002 from offset 3): the partition " \
        "ends at offset 4 (its high watermark) without them" in str(e)
    assert "kafka.isolation.level=read_uncommitted" in str(e)
    # failOnDataLoss=false does not hide it: nothing was lost, the log is inconsistent.
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", "no COMMIT or ABORT marker"):
        broker.read(0, 4, fail=False, committed=True)


def test_undecided_records_after_skipped_data_loss_are_dropped(broker, caplog) -> None:
    """The partition was truncated after P1's records were read: their marker is gone with the
    log, so with failOnDataLoss=false they are skipped with the lost offsets."""
    script = broker.script
    script[0] = answer(data(0, 2) + data(2, 2, P1, True), hw=6, aborted=[])
    script[4] = oor(4)
    broker.bounds = (0, 4)
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
                          r"\[4, 6\)"):
        broker.read(0, 6, committed=True)
    with caplog.at_level(logging.WARNING):
        assert broker.read(0, 6, fail=False, committed=True) == [b"v0", b"v1"]
    assert "Skipping the records of t-0 in [0, 6) whose transactions have no marker left to " \
        "read (producer 1001 from offset 2)" in caplog.text


def test_compressed_batches_and_markers(broker) -> None:
    """Control batches are never compressed by Kafka; one that is is still read right."""
    script = broker.script
    script[0] = answer(data(0, 3, P1, True, "gzip") + marker(3, P1, False, "lz4")
                       + data(4, 2, P2, True, "zstd") + data(6, 1, codec="snappy")
                       + marker(7, P2, True, "gzip"), hw=8, aborted=[])
    assert broker.read(0, 8, committed=True) == [b"v4", b"v5", b"v6"]


def test_legacy_message_sets_have_no_transactions(broker) -> None:
    script = broker.script
    legacy = (encode_message_set(None, [b"v0", b"v1"], magic=1, base_offset=0)
              + encode_message_set(None, [b"v2"], magic=0, base_offset=2, compression="gzip"))
    script[0] = answer(legacy + data(3, 1, P1, True) + marker(4, P1, False) + data(5, 1),
                       hw=6, aborted=[])
    assert broker.read(0, 6, committed=True) == [b"v0", b"v1", b"v2", b"v5"]


def test_a_damaged_marker_fails_only_when_it_decides(broker) -> None:
    script = broker.script
    bad = bytearray(marker(2, P2, False))
    struct.pack_into(">hh", bad, len(bad) - 8 - 4, -1, 0)  # negative key version
    struct.pack_into(">I", bad, 17, crc32c(bytes(bad[21:])))
    # P2 has nothing waiting: its damaged marker is ignored.
    script[0] = answer(data(0, 2, P1, True) + bytes(bad) + marker(3, P1, True), hw=4,
                       aborted=[])
    assert broker.read(0, 4, committed=True) == [b"v0", b"v1"]
    script[0] = answer(data(0, 2, P2, True) + bytes(bad), hw=3, aborted=[])
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "the control batch ending producer 2002's "
                          "transaction cannot be read"):
        broker.read(0, 3, committed=True)


def test_the_decompression_limit_bounds_each_answer(broker) -> None:
    """kafka.fetch.max.decompressed.bytes bounds the batches of one answer together: two
    compressed batches that each fit, but not both, fail the read naming the option."""
    script = broker.script
    big = [b"\0" * 1000] * 100  # 100 KB of records per batch, a few hundred bytes in gzip
    script[0] = answer(encode_record_batch(None, big, timestamps=7, compression="gzip")
                       + encode_record_batch(None, big, timestamps=7, base_offset=100,
                                             compression="gzip"), 200)
    s = FetchSettings(max_decompressed_bytes=150_000)
    with raises_condition(DecompressionLimitError, "KAFKAWIRE_PROTOCOL.DECOMPRESSION_LIMIT",
                          "kafka.fetch.max.decompressed.bytes.*partition 0, offset 100"):
        list(broker.chunks(0, 200, s))
    ok = FetchSettings(max_decompressed_bytes=250_000)
    assert sum(c.num_records for c in broker.chunks(0, 200, ok)) == 200
    assert FetchSettings().decompression_limit(1 << 20) == 256 << 20


# ------------------------------------------------------------- each decision of the step


def plan(start: int = 0, end: int = 8, committed: bool = False, fail: bool = True,
         **settings) -> RangeFetch:
    s = FetchSettings(isolation_level=1 if committed else 0, **settings)
    return RangeFetch("t", 0, start, end, s, fail, CONFIG)


def test_the_first_request_is_the_range_start_with_the_partition_budget() -> None:
    p = plan(3, 8, max_partition_fetch_bytes=1000, fetch_max_bytes=500)
    assert p.next_request() == FetchRequest(3, 500)
    assert p.next_request() == FetchRequest(3, 500)  # asking changes nothing


def test_an_empty_range_asks_for_nothing() -> None:
    assert plan(5, 5).next_request() is None
    assert plan(5, 5, committed=True).next_request() is None


def test_the_answer_sent_ahead_is_the_next_batch_inside_the_range() -> None:
    p = plan(0, 8)
    assert p.prefetch(answer(data(0, 3) + data(3, 2), hw=8)) == FetchRequest(5, 1 << 20)
    assert p.prefetch(answer(data(0, 8), hw=8)) is None  # the answer reaches the end
    assert p.prefetch(answer(b"", hw=8)) is None
    throttled = FetchAnswer(None, -1, -1, -1, "stub:9092", None, 100, throttled=True)
    assert p.prefetch(throttled) is None


def test_a_throttled_answer_asks_the_same_again() -> None:
    p = plan(0, 8)
    throttled = FetchAnswer(None, -1, -1, -1, "b2:9092", None, 100, throttled=True)
    assert p.receive(throttled, 0.0) == []
    assert p.next_request() == FetchRequest(0, 1 << 20) and p.broker == "b2:9092"


def test_each_answer_moves_the_next_request_to_where_its_batches_end() -> None:
    p = plan(0, 8)
    [chunk] = p.receive(answer(data(0, 3) + data(3, 2), hw=8), 0.0)
    assert chunk.offsets.tolist() == [0, 1, 2, 3, 4]
    assert p.next_request() == FetchRequest(5, 1 << 20)
    [chunk] = p.receive(answer(data(5, 3), hw=8), 0.0)
    assert p.next_request() is None and chunk.offsets.tolist() == [5, 6, 7]


def test_a_batch_larger_than_the_budget_doubles_it_up_to_the_limit() -> None:
    p = plan(0, 8, max_partition_fetch_bytes=64)
    cut = answer(data(0, 8)[:60], hw=8)  # bytes, but no complete batch
    assert p.receive(cut, 0.0) == []
    assert p.next_request() == FetchRequest(0, 128)
    p.receive(cut, 0.0)
    assert p.next_request() == FetchRequest(0, 256)
    big = plan(0, 8, max_partition_fetch_bytes=MAX_FETCH_BYTES_LIMIT,
               fetch_max_bytes=MAX_FETCH_BYTES_LIMIT)
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL",
                          "a record batch is larger than 268435456 bytes"):
        big.receive(cut, 0.0)


def test_empty_answers_back_off_then_stall_by_the_time_passed_in() -> None:
    p = plan(0, 8)
    empty = answer(b"", hw=8)
    pauses = []
    for now in (10.0, 10.001, 10.003, 10.005):
        assert p.receive(empty, now) == []
        pauses.append(p.next_request().pause_s)
    assert pauses == [0.0, 0.001, 0.002, 0.002]  # asked again at once, then backed off
    with raises_condition(FetchStalledError, "KAFKAWIRE_PROTOCOL.FETCH_STALLED",
                          "answered 5 Fetches in a row with no data for "
                          r"0.1 s although the partition ends at 8"):
        p.receive(empty, 10.1)  # the 100 ms of request.timeout.ms ran out


def test_an_answer_with_data_starts_a_new_stall_budget() -> None:
    p = plan(0, 8)
    p.receive(answer(b"", hw=8), 10.0)
    p.receive(answer(data(0, 2), hw=8), 10.05)
    p.receive(answer(b"", hw=8), 10.099)
    assert p.receive(answer(b"", hw=8), 10.12) == []  # 21 ms into a new budget


def test_an_empty_answer_at_the_partition_end_asks_the_log_bounds() -> None:
    """Below the planned end but at the partition's end: the bounds tell a truncated log from
    a deleted partition."""
    p = plan(0, 8, fail=False)
    p.receive(answer(data(0, 2), hw=2), 0.0)
    assert p.receive(answer(b"", hw=2), 0.0) == []
    assert p.next_request() == LogBoundsRequest(2)
    assert p.log_bounds((0, 2)) == [] and p.next_request() is None
    assert p.state is RangeState.STOPPED
    strict = plan(0, 8)
    strict.receive(answer(b"", hw=0), 0.0)
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE",
                          r"\[0, 8\).*partition now ends at offset 0 but offsets up to 8 were "
                          "planned"):
        strict.log_bounds((0, 0))
    deleted = plan(0, 8)
    deleted.receive(answer(b"", hw=0), 0.0)
    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.PARTITIONS_DELETED", r"\[0, 8\) of t-0"):
        deleted.log_bounds(None)


def test_read_committed_ends_at_the_last_stable_offset() -> None:
    p = plan(0, 8, committed=True)
    below_lso = FetchAnswer(memoryview(b""), 8, 3, 0, "stub:9092", [])
    p.receive(below_lso, 0.0)
    assert p.next_request() == FetchRequest(0, 1 << 20)  # LSO 3 > 0: an empty answer, retried
    at_lso = FetchAnswer(memoryview(b""), 8, 0, 0, "stub:9092", [])
    p.receive(at_lso, 0.0)
    assert p.next_request() == LogBoundsRequest(0)


def test_an_answer_that_makes_no_progress_fails() -> None:
    p = plan(5, 8)
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL",
                          r"fetch made no progress \(next offset 3\)"):
        p.receive(answer(data(0, 3), hw=8), 0.0)


def test_an_unknown_partition_after_the_retries_is_data_loss() -> None:
    p = plan(0, 8, fail=False)
    assert p.fetch_failed(error_for_code(3, topic="t", partition=0)) == []
    assert p.next_request() is None and p.state is RangeState.STOPPED
    assert p.skipped == [(0, 8)]


def test_offset_out_of_range_asks_the_log_bounds_and_resumes_at_the_log_start() -> None:
    p = plan(2, 8, fail=False)
    assert p.fetch_failed(oor(2)) == []
    assert p.next_request() == LogBoundsRequest(2)
    assert p.log_bounds((5, 8)) == []
    assert p.next_request() == FetchRequest(5, 1 << 20) and p.skipped == [(2, 5)]
    assert p.state is RangeState.IN_RANGE


def test_walking_past_the_end_for_markers_uses_a_fresh_budget_and_its_own_stall_rule() -> None:
    p = plan(0, 5, committed=True, max_partition_fetch_bytes=64)
    p.receive(answer(data(0, 8)[:60], hw=9, aborted=[]), 0.0)  # grows the range's budget
    p.receive(answer(data(3, 2, P2, True), hw=9, aborted=[]), 0.0)
    assert p.next_request() == FetchRequest(5, 64, past_end=True)
    assert p.prefetch(answer(data(5, 1), hw=9)) is None  # markers are not fetched ahead
    for now in (1.0, 1.001, 1.003, 1.005):
        p.receive(answer(b"", hw=9), now)
    with raises_condition(FetchStalledError, "KAFKAWIRE_PROTOCOL.FETCH_STALLED",
                          "looking for transaction markers"):
        p.receive(answer(b"", hw=9), 1.1)


def test_a_failed_fetch_past_the_end_leaves_the_records_undecided() -> None:
    strict = plan(0, 5, committed=True)
    strict.receive(answer(data(3, 2, P2, True), hw=9, aborted=[]), 0.0)
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL",
                          "fetching markers past the range at offset 5 "
                          "failed"):
        strict.fetch_failed(oor(5))
    lenient = plan(0, 5, committed=True, fail=False)
    lenient.receive(answer(data(0, 1) + data(3, 2, P2, True), hw=9, aborted=[]), 0.0)
    [chunk] = lenient.fetch_failed(oor(5))
    assert chunk.offsets.tolist() == [0] and lenient.next_request() is None


# A budget long enough for the broker's wait to grow (client/fetching/empty_answers.py): Tansu on S3
# answers empty while listing a partition's objects outlasts the Fetch's max_wait_ms (issue 44)
LONG = ClientConfig.from_servers("stub:9092", request_timeout_ms=30_000, retry_backoff_ms=100,
                                 retry_backoff_max_ms=1000)


def test_empty_answers_below_the_end_give_the_broker_longer_to_answer() -> None:
    """Each empty answer below the partition's end doubles the next Fetch's max_wait_ms, up to
    the budget left after the pause: the broker may hold that Fetch until the budget ends,
    not past it."""
    p = RangeFetch("t", 0, 0, 8, FetchSettings(), True, LONG)  # kafka.fetch.max.wait.ms 500
    assert p.next_request().max_wait_ms is None  # the configured wait
    empty = answer(b"", hw=8)
    waits = []
    for now in (0.5, 1.5, 3.6, 7.8, 16.2):  # pauses 0, 0.1, 0.2, 0.4, 0.8 s
        p.receive(empty, now)
        waits.append(p.next_request().max_wait_ms)
    assert waits == [1000, 2000, 4000, 8000, 13_500]  # the first empty answer came at 0.5 s
    with raises_condition(FetchStalledError, "KAFKAWIRE_PROTOCOL.FETCH_STALLED",
                          "answered 6 Fetches in a row with no data"):
        p.receive(empty, 29.8)  # + the 1 s pause passes the 30 s from 0.5 s


def test_the_longer_wait_is_kept_for_the_rest_of_the_read() -> None:
    """The broker showed it needs that long: an answer with data starts a new stall budget but
    keeps the wait, for the Fetches sent ahead too; the walk for markers past the range
    keeps it as well."""
    p = RangeFetch("t", 0, 0, 5, FetchSettings(isolation_level=1), True, LONG)
    p.receive(answer(b"", hw=9, aborted=[]), 0.0)
    p.receive(answer(b"", hw=9, aborted=[]), 0.1)
    assert p.next_request().max_wait_ms == 2000
    first = answer(data(0, 2) + data(2, 1, P2, True), hw=9, aborted=[])
    assert p.prefetch(first) == FetchRequest(3, 1 << 20, max_wait_ms=2000)
    p.receive(first, 0.2)
    assert p.next_request() == FetchRequest(3, 1 << 20, max_wait_ms=2000)
    p.receive(answer(data(3, 2), hw=9, aborted=[]), 0.3)  # the range is read, P2 is open
    assert p.next_request() == FetchRequest(5, 1 << 20, past_end=True, max_wait_ms=2000)


def test_a_read_configured_not_to_wait_grows_a_wait_as_well() -> None:
    p = RangeFetch("t", 0, 0, 8, FetchSettings(max_wait_ms=0), True, LONG)
    p.receive(answer(b"", hw=8), 0.0)
    assert p.next_request().max_wait_ms == 500  # empty_answers.MIN_STALL_WAIT_MS
    p.receive(answer(b"", hw=8), 0.0)
    assert p.next_request().max_wait_ms == 1000


def test_the_wait_never_outlasts_the_operation_deadline() -> None:
    ends = Deadline(100.0 + 3.0, "kafka.delivery.timeout.ms")
    p = RangeFetch("t", 0, 0, 8, FetchSettings(), True, LONG, lambda: ends)
    p.receive(answer(b"", hw=8), 100.0)
    p.receive(answer(b"", hw=8), 101.0)  # 2 s left, 0.1 s of pause: 1.9 s for the broker
    assert p.next_request().max_wait_ms == 1900
    p.receive(answer(b"", hw=8), 102.6)  # 0.2 s left after the pause: the configured 500
    assert p.next_request().max_wait_ms is None


# ----------------------------------------------------------- the read's state, one value


def test_the_transitions_are_the_paths_a_range_read_takes() -> None:
    """In the range, then past its end (read_committed, for markers) or ended; ended stays
    ended. Every other change is refused (``RangeFetch._enter``)."""
    s = RangeState
    assert TRANSITIONS == {s.IN_RANGE: {s.PAST_END, s.DONE, s.STOPPED},
                           s.PAST_END: {s.DONE}, s.DONE: set(), s.STOPPED: set()}


def test_a_range_read_to_its_end_is_done() -> None:
    assert plan(5, 5).state is RangeState.DONE  # nothing to read
    assert plan(5, 5, committed=True).state is RangeState.DONE
    p = plan(0, 8)
    assert p.state is RangeState.IN_RANGE
    p.receive(answer(data(0, 5), hw=8), 0.0)
    assert p.state is RangeState.IN_RANGE
    p.receive(answer(data(5, 3), hw=8), 0.0)
    assert p.state is RangeState.DONE and p.next_request() is None and p.skipped == []


def test_open_transactions_take_the_read_past_the_end_until_their_markers() -> None:
    p = plan(0, 5, committed=True)
    p.receive(answer(data(0, 2, P1, True) + marker(2, P1, True) + data(3, 2, P2, True),
                     hw=9, aborted=[]), 0.0)
    assert p.state is RangeState.PAST_END and p.next_request().past_end
    assert p.receive(answer(data(5, 1, P1, True), hw=9), 0.0) == []
    assert p.state is RangeState.PAST_END
    [chunk] = p.receive(answer(marker(6, P2, True), hw=9), 0.0)
    assert chunk.offsets.tolist() == [0, 1, 3, 4]
    assert p.state is RangeState.DONE and p.next_request() is None


def test_past_the_end_a_failed_fetch_or_the_log_end_finishes_the_read() -> None:
    """Markers that cannot be found end the read as done, not stopped: the range itself was
    read (its undecided records dropped with a warning, failOnDataLoss false; at the log end
    only when the markers may have gone with data loss skipped in the range)."""
    p = plan(0, 5, committed=True, fail=False)
    p.receive(answer(data(0, 1) + data(3, 2, P2, True), hw=9, aborted=[]), 0.0)
    assert p.state is RangeState.PAST_END
    assert [c.offsets.tolist() for c in p.fetch_failed(oor(5))] == [[0]]
    assert p.state is RangeState.DONE and p.next_request() is None
    p = plan(0, 5, committed=True, fail=False)
    p.receive(answer(data(1, 1) + data(3, 2, P2, True), hw=9, log_start=1, aborted=[]), 0.0)
    assert p.state is RangeState.PAST_END and p.skipped == [(0, 1)]
    assert [c.offsets.tolist() for c in p.receive(answer(b"", hw=5), 0.0)] == [[1]]
    assert p.state is RangeState.DONE and p.next_request() is None


def test_data_loss_told_to_be_skipped_stops_the_read(caplog) -> None:
    p = plan(0, 8, fail=False)
    p.fetch_failed(error_for_code(3, topic="t", partition=0))
    assert p.state is RangeState.STOPPED and p.skipped == [(0, 8)]
    # read_committed: what waits for a marker then is dropped, never walked for past the end
    p = plan(0, 8, committed=True, fail=False)
    assert p.receive(answer(data(0, 1) + data(1, 2, P2, True), hw=9, aborted=[]), 0.0) == []
    with caplog.at_level(logging.WARNING, logger="spark_kafka_wire.client.fetching.fetcher"):
        [chunk] = p.fetch_failed(error_for_code(3, topic="t", partition=0))
    assert chunk.offsets.tolist() == [0]
    assert p.state is RangeState.STOPPED and p.skipped == [(3, 8)]
    assert "the read stopped at the data loss reported above" in caplog.text
    # skipped data in the range read on, the read goes on
    p = plan(2, 8, fail=False)
    p.fetch_failed(oor(2))
    p.log_bounds((5, 8))
    assert p.state is RangeState.IN_RANGE and p.skipped == [(2, 5)]


def test_an_ended_read_takes_no_more_answers() -> None:
    p = plan(0, 3)
    p.receive(answer(data(0, 3), hw=8), 0.0)
    assert p.state is RangeState.DONE
    with pytest.raises(AssertionError, match="a range read cannot go from done to done"):
        p.receive(answer(data(3, 3), hw=8), 0.0)


# ------------------------------------------------ the I/O loop, with a fake connection


class _InFlight:
    throttle_ms = 0

    def __init__(self, offset: int) -> None:
        self.offset = offset


class _Conn:
    """Stands for the leader connection: serves ``script`` answers by fetch offset (a list:
    one after the other) and records what was sent (offset, isolation level, the answers
    read by then; and max_wait_ms), read and abandoned."""

    name = "stub:9092"
    config = CONFIG

    def __init__(self, script: dict[int, FetchAnswer | list[FetchAnswer]]) -> None:
        self.script = script
        self.sent: list[tuple[int, int, list[int]]] = []
        self.waits: list[tuple[int, int]] = []  # (offset, max_wait_ms) of each Fetch sent
        self.read: list[int] = []
        self.abandoned: list[int] = []

    def send(self, api, body) -> _InFlight:
        offset = body["topics"][0]["partitions"][0]["fetch_offset"]
        self.sent.append((offset, body["isolation_level"], list(self.read)))
        self.waits.append((offset, body["max_wait_ms"]))
        return _InFlight(offset)

    def receive(self, inflight: _InFlight) -> dict:
        self.read.append(inflight.offset)
        a = self.script[inflight.offset]
        if isinstance(a, list):  # answers to the same offset, in turn
            a = a.pop(0)
        return {"error_code": 0, "responses": [{"topic": "t", "partitions": [{
            "partition_index": 0, "error_code": 0, "records": a.records,
            "high_watermark": a.high_watermark, "last_stable_offset": a.last_stable_offset,
            "log_start_offset": a.log_start_offset,
            "aborted_transactions": [{"producer_id": pid, "first_offset": first}
                                     for pid, first in a.aborted or ()]}]}]}

    def abandon(self, inflight: _InFlight) -> None:
        self.abandoned.append(inflight.offset)


class _Client:
    config = CONFIG

    def __init__(self, conn: _Conn) -> None:
        self.conn = conn

    def leader_connection(self, topic: str, partition: int) -> _Conn:
        return self.conn

    def retry(self, attempt, what, retries=None):
        return attempt()

    def current_deadline(self):
        return None


def loop(script: dict[int, FetchAnswer | list[FetchAnswer]]) -> tuple[_Client, _Conn]:
    conn = _Conn(script)
    return _Client(conn), conn


def test_the_fetch_sent_ahead_is_used_under_read_committed() -> None:
    client, conn = loop({
        0: answer(data(0, 2, P1, True) + data(2, 1), hw=6, aborted=[]),
        3: answer(data(3, 1) + marker(4, P1, True) + data(5, 1), hw=6, aborted=[]),
    })
    got = [v for c in fetch_range(client, "t", 0, 0, 6, FetchSettings(isolation_level=1))
           for v in c.values.to_pylist()]
    assert got == [b"v%d" % i for i in (0, 1, 2, 3, 5)]
    assert [s[0] for s in conn.sent] == [0, 3] and conn.read == [0, 3]


def test_next_fetch_is_sent_before_the_answer_is_decoded() -> None:
    client, conn = loop({0: answer(data(0, 3) + data(3, 2), hw=8), 5: answer(data(5, 3), hw=8)})
    chunks = fetch_range(client, "t", 0, 0, 8)
    first = next(chunks)
    # Offset 5 went out right after the first answer arrived, before its chunk was yielded.
    assert conn.sent == [(0, 0, []), (5, 0, [0])]
    assert first.values.to_pylist() == [b"v0", b"v1", b"v2", b"v3", b"v4"]
    assert [v for c in chunks for v in c.values.to_pylist()] == [b"v5", b"v6", b"v7"]
    assert len(conn.sent) == 2  # the answer sent ahead was used, not fetched again


def test_nothing_is_sent_past_the_range_end() -> None:
    client, conn = loop({0: answer(data(0, 4) + data(4, 4), hw=20)})
    got = [v for c in fetch_range(client, "t", 0, 0, 8) for v in c.values.to_pylist()]
    assert got == [b"v%d" % i for i in range(8)]
    assert [s[0] for s in conn.sent] == [0]


def test_stopping_early_abandons_the_fetch_sent_ahead() -> None:
    client, conn = loop({0: answer(data(0, 5), hw=10), 5: answer(data(5, 5), hw=10)})
    chunks = fetch_range(client, "t", 0, 0, 10)
    next(chunks)
    chunks.close()
    assert conn.abandoned == [5] and conn.read == [0]


def test_an_unexpected_next_offset_abandons_the_fetch_sent_ahead() -> None:
    # The headers pointed at 5 but the step asks for 3: the Fetch sent for 5 is abandoned and
    # 3 is fetched, so the records come out exactly once and in order.
    client, conn = loop({3: answer(data(3, 5), hw=8), 5: answer(data(5, 3), hw=8)})
    fetches = PartitionFetches(client, "t", 0, FetchSettings())  # type: ignore[arg-type]
    fetches.send_ahead(FetchRequest(5, 1 << 20))
    got = fetches.answer(3, 1 << 20)
    assert got.records is not None and conn.read == [3] and conn.abandoned == [5]
    # The same offset with another budget is not the answer sent ahead either.
    fetches.send_ahead(FetchRequest(8, 1 << 20))
    conn.script[8] = answer(b"", hw=8)
    fetches.answer(8, 2 << 20)
    assert conn.abandoned == [5, 8] and conn.read == [3, 8]


def test_past_the_end_fetches_read_uncommitted_on_the_wire() -> None:
    client, conn = loop({
        0: answer(data(0, 2, P1, True) + marker(2, P1, True) + data(3, 2, P2, True), hw=9,
                  aborted=[]),
        5: answer(data(5, 1, P1, True), hw=9),
        6: answer(marker(6, P2, True) + data(7, 1, P1, True), hw=9),
    })
    got = [o for c in fetch_range(client, "t", 0, 0, 5, FetchSettings(isolation_level=1))
           for o in c.offsets.tolist()]
    assert got == [0, 1, 3, 4]
    assert [(offset, level) for offset, level, _ in conn.sent] == [(0, 1), (5, 0), (6, 0)]


def test_the_longer_wait_goes_on_the_wire() -> None:
    client, conn = loop({0: [answer(b"", hw=8), answer(b"", hw=8), answer(data(0, 4), hw=8)],
                         4: answer(data(4, 4), hw=8)})
    client.config = ClientConfig.from_servers("stub:9092", request_timeout_ms=30_000,
                                              retry_backoff_ms=1, retry_backoff_max_ms=2)
    got = [o for c in fetch_range(client, "t", 0, 0, 8) for o in c.offsets.tolist()]
    assert got == list(range(8))
    assert [(offset, wait) for offset, wait in conn.waits] == [
        (0, 500), (0, 1000), (0, 2000), (4, 2000)]


def test_a_topic_metadata_keeps_calling_unknown_is_deleted_after_a_few_answers() -> None:
    """A planned topic existed at planning; metadata saying it does not exist is retried a few
    times (a new topic reaching every broker), then taken as deleted: data loss at once, not
    after retrying for the whole request.timeout.ms (30 s with a task's fresh client)."""
    calls: list[str] = []

    class Retrying(_Client):
        def leader_connection(self, topic: str, partition: int) -> _Conn:
            calls.append(topic)
            raise error_for_code(3, topic=topic, context="Metadata")

        def retry(self, attempt, what, retries=None):
            for _ in range(100):  # the real rule retries retriable errors until its budget
                try:
                    return attempt()
                except Exception as exc:  # noqa: BLE001
                    if not getattr(exc, "retriable", False):
                        raise
            raise AssertionError("still retried after 100 attempts")

    with raises_condition(DataLossError, "KAFKA_DATA_LOSS.PARTITIONS_DELETED",
                          r"cannot read offsets \[0, 4\) of t-0"):
        list(fetch_range(Retrying(_Conn({})), "t", 0, 0, 4, FetchSettings()))
    assert len(calls) == fetcher.MAX_UNKNOWN_TOPIC


def test_not_controller_is_retried_never_taken_for_a_deleted_topic() -> None:
    """NOT_CONTROLLER is stale metadata: the fetcher lets the retry rule refresh and retry it,
    and never reports it as data loss (a deleted topic), whatever failOnDataLoss says."""
    calls: list[str] = []

    class GivingUp(_Client):
        def leader_connection(self, topic: str, partition: int) -> _Conn:
            calls.append(topic)
            raise error_for_code(41, topic=topic, partition=partition, context="Fetch")

        def retry(self, attempt, what, retries=None):
            last: Exception | None = None
            for _ in range(3):  # the real rule retries retriable errors until its budget
                try:
                    return attempt()
                except Exception as exc:  # noqa: BLE001
                    if not getattr(exc, "retriable", False):
                        raise
                    last = exc
            assert last is not None
            raise last

    for fail in (True, False):
        with raises_condition(NotControllerError, "KAFKA_BROKER_ERROR.NOT_CONTROLLER"):
            list(fetch_range(GivingUp(_Conn({})), "t", 0, 0, 4, FetchSettings(), fail))
    assert len(calls) == 6
