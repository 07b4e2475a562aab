"""The producer's pure parts: sequences, request packing, batch accumulation, headers and
timestamps from Arrow columns (the network parts are in tests/integration/test_producer.py)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.producer import (
    PendingBatch,
    ProduceSettings,
    encode_partitioned,
    headers_from_arrow,
    next_sequence,
)
from spark_kafka_wire.client.producer.accumulator import Rows as _Rows
from spark_kafka_wire.client.producer.accumulator import _PartitionBuffer
from spark_kafka_wire.client.producer.sender import _pack
from spark_kafka_wire.errors import ConfigurationError, RecordTooLargeError
from spark_kafka_wire.protocol.records import decode_record_batches
from spark_kafka_wire.sink.batch_writer import _timestamps_ms
from tests.support.errors import raises_condition

MAX = 2**31 - 1


@pytest.mark.parametrize(("seq", "n", "expected"), [
    (0, 1, 1), (0, 500, 500), (MAX - 1, 1, MAX), (MAX, 1, 0), (MAX - 2, 10, 7), (MAX, MAX, MAX - 1),
])
def test_sequences_wrap_after_int32_max(seq: int, n: int, expected: int) -> None:
    assert next_sequence(seq, n) == expected


def _b(topic: str, partition: int, size: int, tag: int) -> PendingBatch:
    return PendingBatch(topic, partition, b"x" * size, 1, order=tag)


def test_pack_keeps_partition_order_and_bounds() -> None:
    batches = [_b("t", 0, 10, 0), _b("t", 1, 10, 1), _b("t", 0, 10, 2), _b("u", 0, 10, 3),
               _b("t", 1, 50, 4), _b("t", 0, 10, 5), _b("t", 2, 10, 6)]
    reqs = _pack(batches, max_request_size=60)
    for req in reqs:
        keys = [(b.topic, b.partition) for b in req]
        assert len(keys) == len(set(keys))  # one batch per partition per request
        assert sum(len(b.data) for b in req) <= 60
    # each partition's batches appear in later requests in their original order
    where = {b.order: i for i, req in enumerate(reqs) for b in req}
    assert where[0] < where[2] < where[5]
    assert where[1] < where[4]
    assert sorted(where) == list(range(7))


def _rows(sizes: list[int]) -> _Rows:
    n = len(sizes)
    values = pa.array([b"v%d" % i for i in range(n)], pa.binary())
    return _Rows(None, values, np.arange(n, dtype=np.int64), None, np.array(sizes, np.int64))


def test_partition_buffer_sends_full_batches_and_keeps_the_rest() -> None:
    # Batches are cut where the running size passes each multiple of the limit (so a batch
    # may exceed it by less than one record); rows of complete batches leave.
    buf = _PartitionBuffer()
    buf.add(_rows([40, 40]), now=1.0)
    assert buf.take_full(100) is None and buf.bytes == 80  # not a full batch yet
    buf.add(_rows([40, 40, 30]), now=2.0)  # running sizes 120, 160, 190: batch 2 is open
    full = buf.take_full(100)
    assert full is not None and full.values.to_pylist() == [b"v0", b"v1"]
    assert buf.bytes == 110 and buf.first == 2.0  # the rest arrived at 2.0
    rest = buf.take_all()
    assert rest.values.to_pylist() == [b"v0", b"v1", b"v2"] and buf.bytes == 0
    assert not buf.chunks
    buf.add(_rows([60, 60, 80]), now=3.0)  # 60 | 120 180 | 200: two complete batches
    full = buf.take_full(100)
    assert full is not None and len(full) == 3 and buf.bytes == 0 and not buf.chunks


def _headers_column(rows: list) -> pa.Array:
    return pa.array(rows, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))


def test_headers_from_arrow() -> None:
    col = _headers_column([
        [{"key": "a", "value": b"1"}, {"key": "a", "value": b"2"}, {"key": "b", "value": None}],
        None, [], [{"key": "ключ", "value": b""}],
    ])
    headers, sizes = headers_from_arrow(col)
    assert headers.tolist() == [[("a", b"1"), ("a", b"2"), ("b", None)], None, None,
                                [("ключ", b"")]]
    assert sizes.tolist() == [1 + 1 + 1 + 1 + 1 + 30, 0, 0, len("ключ".encode()) + 10]
    sliced_headers, _ = headers_from_arrow(col.slice(3, 1))
    assert sliced_headers.tolist() == [[("ключ", b"")]]
    assert headers_from_arrow(_headers_column([None, [], None])) == (None, None)


def test_headers_with_null_key_or_element_fail_naming_the_row() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION",
                          r"row 1 has a header with a null key"):
        headers_from_arrow(_headers_column([[], [{"key": None, "value": b"x"}]]))
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION",
                          r"row 2 has a null element"):
        headers_from_arrow(_headers_column([None, [], [{"key": "k", "value": b"x"}, None]]))


def test_encoded_batches_carry_headers_and_per_row_timestamps() -> None:
    headers, sizes = headers_from_arrow(_headers_column([[{"key": "h", "value": b"1"}], None]))
    values = pa.array([b"a", b"b"], pa.binary())
    batches = encode_partitioned("t", None, values, np.zeros(2, np.int32), ProduceSettings(),
                                 np.array([1_700_000_000_123, 1_600_000_000_000]),
                                 headers=headers, header_bytes=sizes)
    assert len(batches) == 1 and batches[0].records == 2
    decoded = decode_record_batches(batches[0].data, start_offset=0)
    assert decoded.headers == [[("h", b"1")], None]
    assert decoded.timestamps.tolist() == [1_700_000_000_123, 1_600_000_000_000]


@pytest.mark.parametrize("partitions", [
    [0, 0, 0, 0],  # one partition
    [2, 2, 3, 3, 3, 0, 1, 1],  # each partition one run (a keyless write's blocks): sliced
    [1, 0, 1, 2, 0, 0],  # interleaved (hashed keys): gathered
    [3, 3, 1, 1, 3],  # a partition in two runs: gathered
])
def test_each_partition_keeps_its_rows_in_order(partitions: list[int]) -> None:
    """Rows already in one run per partition are sliced, not gathered: either way each
    partition's batch holds its rows in their original order, keys with their values."""
    n = len(partitions)
    keys = pa.array([f"k{i}".encode() for i in range(n)], pa.binary())
    values = pa.array([f"v{i}".encode() for i in range(n)], pa.binary())
    batches = encode_partitioned("t", keys, values, np.array(partitions, np.int32),
                                 ProduceSettings(), np.arange(n, dtype=np.int64))
    got = {}
    for b in batches:
        decoded = decode_record_batches(b.data, start_offset=0)
        got[b.partition] = list(zip(decoded.keys.to_pylist(), decoded.values.to_pylist(),
                                    decoded.timestamps.tolist(), strict=True))
    want: dict[int, list] = {}
    for i, p in enumerate(partitions):
        want.setdefault(p, []).append((f"k{i}".encode(), f"v{i}".encode(), i))
    assert got == want


def test_a_record_that_can_never_fit_names_its_size() -> None:
    values = pa.array([b"small", b"x" * 5000], pa.binary())
    with raises_condition(RecordTooLargeError, "KAFKA_BROKER_ERROR.MESSAGE_TOO_LARGE",
                          r"partition 1.*a record of about 5021 bytes "
                          r"can never fit in a request of kafka.max.request.size=4000 bytes"):
        encode_partitioned("t", None, values, np.array([0, 1], np.int32),
                           ProduceSettings(max_request_size=4000), 0)


def test_timestamps_from_a_timestamp_or_double_column() -> None:
    utc = dt.timezone.utc
    ts = pa.array([dt.datetime(2024, 1, 1, tzinfo=utc), None,
                   dt.datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=utc)],
                  pa.timestamp("us", tz="UTC"))
    # Java truncates microseconds toward zero (micros / 1000)
    assert _timestamps_ms(ts, 42).tolist() == [1_704_067_200_000, 42, 0]
    seconds = pa.array([1.5, None, float("nan"), 1_700_000_000.0009], pa.float64())
    assert _timestamps_ms(seconds, 42).tolist() == [1500, 42, 42, 1_700_000_000_000]


def test_a_frame_in_pieces_is_sent_whole_through_partial_sends() -> None:
    """Produce frames go out as pieces gathered by sendmsg (record batches are not copied
    into one buffer); a small socket buffer makes the kernel take them a part at a time."""
    import socket
    import threading
    import time

    from spark_kafka_wire.client.wire.connection import BrokerConnection, _Limit

    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    parts = [bytearray(b"head"), bytes(range(256)) * 4000, memoryview(b"x" * 100_000),
             np.arange(50_000, dtype=np.uint8).data, b"tail"]
    expected = b"".join(parts)
    got = bytearray()

    def read() -> None:
        while len(got) < len(expected):
            got.extend(b.recv(65536))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        BrokerConnection._send_frame(a, parts, _Limit(time.monotonic() + 10, 10_000, None))
        reader.join(10)
    finally:
        a.close()
        b.close()
    assert bytes(got) == expected


def test_split_batch_halves_records_and_sequences():
    """A batch refused as MESSAGE_TOO_LARGE becomes two halves with the same records, keys,
    timestamps and headers, and the idempotent sequence range shared out."""
    from spark_kafka_wire.client.producer.accumulator import PendingBatch, split_batch
    from spark_kafka_wire.protocol.records import decode_record_batches
    from spark_kafka_wire.protocol.records.batch import encode_record_batch

    keys = [b"k%d" % i for i in range(5)]
    values = [b"v%d" % i for i in range(5)]
    headers = [[("h", b"%d" % i)] if i % 2 else None for i in range(5)]
    data = encode_record_batch(keys, values, timestamps=[1000 + i for i in range(5)],
                               producer_id=7, producer_epoch=1, base_sequence=40,
                               headers=headers)
    batch = PendingBatch("t", 3, data, 5, base_sequence=40, order=2, span=1.0)
    halves = split_batch(batch, ProduceSettings(), producer_id=7, producer_epoch=1)
    assert halves is not None
    assert [(h.records, h.base_sequence, h.order, h.span) for h in halves] == \
        [(2, 40, 2, 0.5), (3, 42, 2.5, 0.5)]
    got = [decode_record_batches(bytes(h.data), start_offset=0) for h in halves]
    assert [v for g in got for v in g.values.to_pylist()] == values
    assert [k for g in got for k in g.keys.to_pylist()] == keys
    assert [t for g in got for t in g.timestamps.tolist()] == [1000 + i for i in range(5)]
    assert [h for g in got for h in (g.headers or [None] * g.num_records)] == headers
    one = PendingBatch("t", 3, encode_record_batch(None, [b"x"]), 1)
    assert split_batch(one, ProduceSettings()) is None
