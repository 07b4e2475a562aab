"""RecordBatch v2 encode/decode against the spec, kafka-python as an oracle, hostile bytes,
and read_committed filtering of aborted transactions (by the broker's list and by markers)."""

from __future__ import annotations

import gzip
import random
import struct
import tracemalloc
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from spark_kafka_wire.protocol.compression import DecompressionLimitError, UnsupportedCodecError
from spark_kafka_wire.protocol.errors import CorruptRecordError, ProtocolError
from spark_kafka_wire.protocol.records import (
    HEADER_SIZE,
    CommittedFilter,
    DecodedRecords,
    TransactionEvents,
    decode_record_batches,
    encode_record_batch,
    next_batch_offset,
)
from tests.support.errors import raises_condition

Row = tuple[int, int, int, bytes | None, bytes | None, list | None]

# ---------------------------------------------------------------------------------- helpers


def kp_build(records: list[tuple[int, bytes | None, bytes | None, list]], *, codec: int = 0,
             first_delta: int = 0, base_offset: int = 0) -> bytes:
    """A batch built by kafka-python; optionally moved to ``base_offset`` (not CRC-covered)."""
    builder = MemoryRecordsBuilder(2, codec, 1 << 30, offset=first_delta)
    for ts, key, value, headers in records:
        assert builder.append(ts, key, value, headers) is not None
    builder.close()
    data = bytearray(builder.buffer())
    if base_offset:
        struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def kp_read(data: bytes) -> list[Row]:
    """Data records as kafka-python reads them, after checking its CRC validation passes."""
    rows: list[Row] = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        if batch.is_control_batch:
            continue
        for r in batch:
            rows.append((r.offset, r.timestamp, r.timestamp_type, r.key, r.value,
                         list(r.headers) or None))
    return rows


def ours(d: DecodedRecords) -> list[Row]:
    assert d.offsets.dtype == np.int64 and d.timestamps.dtype == np.int64
    assert d.timestamp_types.dtype == np.int32
    assert d.keys.type == pa.binary() and d.values.type == pa.binary()
    n = d.num_records
    assert len(d.keys) == len(d.values) == len(d.timestamps) == len(d.timestamp_types) == n
    headers = d.headers if d.headers is not None else [None] * n
    assert len(headers) == n
    if d.headers is not None:
        assert any(h is not None for h in d.headers)
    return list(zip(d.offsets.tolist(), d.timestamps.tolist(), d.timestamp_types.tolist(),
                    d.keys.to_pylist(), d.values.to_pylist(), headers, strict=True))


def patch(batch: bytes, *, attrs: int | None = None, max_ts: int | None = None,
          count: int | None = None, last_delta: int | None = None,
          base_offset: int | None = None, fix_crc: bool = True) -> bytes:
    """Rewrite header fields and (by default) recompute the CRC, as a broker would."""
    b = bytearray(batch)
    if attrs is not None:
        struct.pack_into(">h", b, 21, attrs)
    if last_delta is not None:
        struct.pack_into(">i", b, 23, last_delta)
    if max_ts is not None:
        struct.pack_into(">q", b, 35, max_ts)
    if count is not None:
        struct.pack_into(">i", b, 57, count)
    if base_offset is not None:
        struct.pack_into(">q", b, 0, base_offset)
    if fix_crc:
        struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


def fix_crc(batch: bytes | bytearray) -> bytes:
    return patch(bytes(batch))


def control_batch(base_offset: int, commit: bool = True, producer_id: int = 9,
                  codec: int = 0, key: bytes | None = None) -> bytes:
    """A transaction marker as the broker writes it: key (version 0, type 0 abort/1 commit)."""
    if key is None:
        key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 7)  # version, coordinator epoch
    raw = encode_record_batch([key], [value], timestamps=5, base_offset=base_offset,
                              producer_id=producer_id, producer_epoch=1, transactional=True,
                              compression=codec)
    return patch(raw, attrs=0x10 | 0x20 | codec)


def sample_records(n: int, seed: int = 0, headers: bool = True) -> list:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else f"key-{i}".encode()
        value = None if i % 11 == 5 else bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0,
                                                                                             40)))
        hdrs = [("h1", b"x" * (i % 3)), ("h2", None), ("h1", b"dup")] if headers and i % 4 == 0 \
            else []
        out.append((1_700_000_000_000 + rnd.randint(-1000, 1000), key, value, hdrs))
    return out


def as_rows(records: list, first_offset: int, ts_type: int = 0) -> list[Row]:
    return [(first_offset + i, ts, ts_type, k, v, h or None)
            for i, (ts, k, v, h) in enumerate(records)]


# ---------------------------------------------------------------------------------- spec bytes


# Two records: key "k", value "hello", header ("h", "v"), ts 1000; then null key/value, ts 1005.
HAND_RECORDS = bytes.fromhex(
    "20"  # record length 16 (zigzag 32)
    "00" "00" "00"  # attributes, timestampDelta 0, offsetDelta 0
    "02" "6b"  # key length 1, "k"
    "0a" "68656c6c6f"  # value length 5, "hello"
    "02" "02" "68" "02" "76"  # 1 header: key length 1 "h", value length 1 "v"
    "0c"  # record length 6
    "00" "0a" "02"  # attributes, timestampDelta 5 (zigzag 10), offsetDelta 1
    "01" "01" "00"  # key -1, value -1, 0 headers
)


def hand_batch() -> bytes:
    rest = struct.pack(">hiqqqhii", 0, 1, 1000, 1005, -1, -1, -1, 2)
    crc = crc32c(rest + HAND_RECORDS)
    head = struct.pack(">qiibI", 42, 49 + len(HAND_RECORDS), -1, 2, crc)
    return head + rest + HAND_RECORDS


def test_hand_built_batch_layout_byte_by_byte() -> None:
    raw = encode_record_batch([b"k", None], [b"hello", None], timestamps=np.array([1000, 1005]),
                              base_offset=42, headers=[[("h", b"v")], None])
    assert raw == hand_batch()
    assert len(raw) == HEADER_SIZE + len(HAND_RECORDS)

    def at(fmt: str, offset: int) -> int:
        return struct.unpack_from(">" + fmt, raw, offset)[0]

    assert at("q", 0) == 42  # baseOffset
    assert at("i", 8) == len(raw) - 12  # batchLength
    assert at("i", 12) == -1  # partitionLeaderEpoch
    assert at("b", 16) == 2  # magic
    assert at("I", 17) == crc32c(raw[21:])  # CRC-32C over [21, end)
    assert at("h", 21) == 0  # attributes
    assert at("i", 23) == 1  # lastOffsetDelta
    assert at("q", 27) == 1000 and at("q", 35) == 1005  # base and max timestamp
    assert at("q", 43) == -1 and at("h", 51) == -1 and at("i", 53) == -1  # producer fields
    assert at("i", 57) == 2  # recordCount
    assert raw[61:] == HAND_RECORDS

    d = decode_record_batches(hand_batch(), start_offset=0, topic="t", partition=0)
    assert ours(d) == [(42, 1000, 0, b"k", b"hello", [("h", b"v")]),
                       (43, 1005, 0, None, None, None)]
    assert d.next_offset == 44
    assert kp_read(raw) == ours(d)


def test_encode_matches_kafka_python_bytes_except_leader_epoch() -> None:
    records = sample_records(30)
    ts = [r[0] for r in records]
    ref = kp_build(records)
    raw = encode_record_batch([r[1] for r in records], [r[2] for r in records],
                              timestamps=np.array(ts), headers=[r[3] for r in records])
    # kafka-python writes leader epoch 0 where the Java producer writes -1 (not CRC-covered).
    assert raw[:12] == ref[:12] and raw[16:] == ref[16:]


# ---------------------------------------------------------------------------------- oracle


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("headers", [False, True])
def test_decode_kafka_python_batches(codec: int, headers: bool) -> None:
    records = sample_records(200, seed=codec, headers=headers)
    if codec:
        # kafka-python falls back to no compression when it does not pay: make it pay.
        records = [(ts, k, (v or b"") * 20 if v is not None else None, h)
                   for ts, k, v, h in records]
    raw = kp_build(records, codec=codec, base_offset=1000)
    assert DefaultRecordBatch(raw).compression_type == codec
    d = decode_record_batches(raw, start_offset=0)
    assert ours(d) == kp_read(raw) == as_rows(records, 1000)
    assert d.next_offset == 1200
    assert (d.headers is not None) == headers


def test_decode_several_kafka_python_batches_with_gaps() -> None:
    a = sample_records(50, 1)
    b = sample_records(20, 2, headers=False)
    c = sample_records(70, 3)
    # the last in kafka-python's style (offset deltas from 5), moved after the others: in a
    # log, and so in a Fetch response, batches follow each other in offset order
    data = (kp_build(a, base_offset=10) + kp_build(b, codec=1, base_offset=100)
            + kp_build(c, first_delta=5, base_offset=200))
    d = decode_record_batches(data, start_offset=0)
    assert ours(d) == kp_read(data)
    assert ours(d) == as_rows(a, 10) + as_rows(b, 100) + as_rows(c, 205)
    assert d.next_offset == 275


def test_decode_log_append_time() -> None:
    records = sample_records(20)
    raw = patch(kp_build(records, base_offset=3), attrs=0x08, max_ts=1_800_000_000_000)
    d = decode_record_batches(raw, start_offset=0)
    assert d.timestamps.tolist() == [1_800_000_000_000] * 20
    assert d.timestamp_types.tolist() == [1] * 20
    assert ours(d) == kp_read(raw)


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_kafka_python_reads_our_batches(codec: int) -> None:
    records = sample_records(300, seed=7)
    raw = encode_record_batch([r[1] for r in records], [r[2] for r in records],
                              timestamps=np.array([r[0] for r in records]), base_offset=500,
                              compression=codec, producer_id=12345, producer_epoch=3,
                              base_sequence=77, transactional=True,
                              headers=[r[3] for r in records])
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert batch.producer_id == 12345 and batch.producer_epoch == 3
    assert batch.base_sequence == 77 and batch.is_transactional
    assert batch.records_count == 300 and batch.last_offset_delta == 299
    assert batch.first_timestamp == records[0][0]
    assert batch.max_timestamp == max(r[0] for r in records)
    assert kp_read(raw) == as_rows(records, 500)
    assert ours(decode_record_batches(raw, start_offset=0)) == as_rows(records, 500)


def test_encode_accepts_arrow_columns() -> None:
    keys = [b"a", None, b"ccc", b"", None]
    values = [b"1", b"22", None, b"", b"x" * 300]
    expected = list(zip(keys, values, strict=True))
    for typ in (pa.binary(), pa.large_binary()):
        raw = encode_record_batch(pa.array(keys, typ), pa.array(values, typ), timestamps=1)
        d = decode_record_batches(raw, start_offset=0)
        assert list(zip(d.keys.to_pylist(), d.values.to_pylist(), strict=True)) == expected
    # Strings, slices and chunked arrays.
    s = pa.array(["zero", "one", None, "three", "four", "five"], pa.string())
    raw = encode_record_batch(None, s.slice(1, 4), timestamps=1)
    d = decode_record_batches(raw, start_offset=0)
    assert d.keys.to_pylist() == [None] * 4
    assert d.values.to_pylist() == [b"one", None, b"three", b"four"]
    chunked = pa.chunked_array([pa.array([b"p"]), pa.array([b"q", None])])
    raw = encode_record_batch(chunked, chunked, timestamps=1)
    assert decode_record_batches(raw, start_offset=0).values.to_pylist() == [b"p", b"q", None]


@pytest.mark.parametrize("codec", ["none", "lz4", "gzip"])
@pytest.mark.parametrize("keyed", [True, False])
@pytest.mark.parametrize("with_headers", [True, False])
def test_chunked_columns_encode_like_contiguous_ones(codec: str, keyed: bool,
                                                     with_headers: bool) -> None:
    """Keys and values in several Arrow chunks (the producer's buffered rows) are joined from
    the chunks; the batch is the same bytes as from the concatenated columns, whatever the
    chunk boundaries of keys and values."""
    rng = random.Random(7)
    n = 300
    keys = [None if rng.random() < 0.2 else b"k%d" % rng.randrange(1000) for _ in range(n)]
    values = [None if rng.random() < 0.1 else bytes([i % 251]) * rng.randrange(0, 200)
              for i in range(n)]
    headers = [None if i % 3 else [("h", b"%d" % i)] for i in range(n)] if with_headers \
        else None
    ts = 1_700_000_000_000 + np.arange(n) * 7

    def chunked(col: list, cuts: list[int]) -> pa.ChunkedArray:
        arr = pa.array(col, pa.binary())
        bounds = [0, *cuts, n]
        return pa.chunked_array([arr.slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:],
                                                                     strict=True)])

    expected = encode_record_batch(pa.array(keys, pa.binary()) if keyed else None,
                                   pa.array(values, pa.binary()), timestamps=ts,
                                   compression=codec, headers=headers)
    for k_cuts, v_cuts in [([], [100]), ([50, 250], [100]), ([0, 100, 100, 299], [1, 2])]:
        got = encode_record_batch(chunked(keys, k_cuts) if keyed else None,
                                  chunked(values, v_cuts), timestamps=ts, compression=codec,
                                  headers=headers)
        assert got == expected


def test_encode_null_slots_carrying_bytes() -> None:
    data = b"keepDROPalso"
    offsets = np.array([0, 4, 8, 12], np.int32)
    validity = np.packbits(np.array([1, 0, 1], bool), bitorder="little")
    values = pa.Array.from_buffers(pa.binary(), 3, [pa.py_buffer(validity),
                                                     pa.py_buffer(offsets), pa.py_buffer(data)])
    raw = encode_record_batch(None, values, timestamps=1)
    assert kp_read(raw) == [(0, 1, 0, None, b"keep", None), (1, 1, 0, None, None, None),
                            (2, 1, 0, None, b"also", None)]


def test_encode_timestamps_and_errors() -> None:
    raw = encode_record_batch(None, [b"a", b"b"])  # now
    d = decode_record_batches(raw, start_offset=0)
    import time
    assert abs(int(d.timestamps[0]) - int(time.time() * 1000)) < 60_000
    assert d.timestamps[0] == d.timestamps[1]
    raw = encode_record_batch(None, [b"a", b"b", b"c"], timestamps=[30, 10, 20])
    batch = DefaultRecordBatch(raw)
    assert (batch.first_timestamp, batch.max_timestamp) == (30, 30)
    assert decode_record_batches(raw, start_offset=0).timestamps.tolist() == [30, 10, 20]
    with pytest.raises(ValueError):
        encode_record_batch(None, [])
    with pytest.raises(ValueError):
        encode_record_batch([b"k"], [b"a", b"b"])
    with pytest.raises(ValueError):
        encode_record_batch(None, [b"a"], timestamps=[1, 2])
    with pytest.raises(ValueError):
        encode_record_batch(None, [b"a"], headers=[None, None])
    with pytest.raises(UnsupportedCodecError):
        encode_record_batch(None, [b"a"], compression=7)
    with pytest.raises(TypeError):
        encode_record_batch(None, [b"a"], headers=[[("k", 5)]])
    with pytest.raises(TypeError):
        encode_record_batch(None, [b"a"], headers=[[(None, b"v")]])
    for name, codec in (("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4)):
        raw = encode_record_batch(None, [b"a"] * 50, compression=name)
        assert DefaultRecordBatch(raw).compression_type == codec


# ---------------------------------------------------------------------------------- semantics


def three_batches() -> bytes:
    """Offsets 0-9, 10-19, 20-29 (gzip in the middle)."""
    return b"".join(
        encode_record_batch(None, [b"v%d" % (o + i) for i in range(10)], timestamps=o,
                            base_offset=o, compression=1 if o == 10 else 0)
        for o in (0, 10, 20))


def test_start_offset_inside_a_batch_drops_earlier_records() -> None:
    d = decode_record_batches(three_batches(), start_offset=13)
    assert d.offsets.tolist() == list(range(13, 30))
    assert d.values.to_pylist() == [b"v%d" % o for o in range(13, 30)]
    assert d.next_offset == 30


def test_end_offset_bound() -> None:
    d = decode_record_batches(three_batches(), start_offset=5, end_offset=22)
    assert d.offsets.tolist() == list(range(5, 22))
    assert d.next_offset == 30  # every complete batch seen counts
    d = decode_record_batches(three_batches(), start_offset=5, end_offset=5)
    assert d.num_records == 0 and d.next_offset == 30


def test_start_offset_past_everything() -> None:
    d = decode_record_batches(three_batches(), start_offset=1000)
    assert d.num_records == 0 and d.next_offset == 30
    assert d.keys.type == pa.binary() and d.headers is None


def test_truncated_trailing_batch_is_ignored() -> None:
    data = three_batches()
    first_two = len(data) - len(encode_record_batch(
        None, [b"v%d" % (20 + i) for i in range(10)], timestamps=20, base_offset=20))
    for cut in [first_two + k for k in (1, 5, 11, 12, 17, 40, 61, 62)] + [len(data) - 1]:
        d = decode_record_batches(data[:cut], start_offset=0)
        assert d.offsets.tolist() == list(range(20)), cut
        assert d.next_offset == 20
    for cut in (0, 3, 11, 12, 60, 61):
        d = decode_record_batches(data[:cut], start_offset=0)
        assert d.num_records == 0 and d.next_offset is None


def test_next_batch_offset_from_headers_agrees_with_the_decoder() -> None:
    a, b, c = sample_records(50, 1), sample_records(20, 2), sample_records(70, 3)
    gapped = (kp_build(a, base_offset=10) + kp_build(b, codec=1, base_offset=100)
              + kp_build(c, first_delta=5, base_offset=200))
    data = three_batches()
    cases = [gapped, data] + [data[:len(data) - k] for k in (1, 11, 40, 61)] \
        + [data[:k] for k in (0, 3, 60, 61)]
    for raw in cases:
        assert next_batch_offset(raw) == decode_record_batches(raw, start_offset=0).next_offset
    assert next_batch_offset(None) is None


def test_next_batch_offset_leaves_legacy_message_sets_to_the_decoder() -> None:
    builder = MemoryRecordsBuilder(1, 0, 1 << 20)
    builder.append(1, b"k", b"v")
    builder.close()
    legacy = bytes(builder.buffer())
    assert next_batch_offset(legacy) is None
    assert next_batch_offset(three_batches() + legacy) is None


def test_control_batch_is_skipped_but_advances_next_offset() -> None:
    data = (encode_record_batch(None, [b"a", b"b"], base_offset=0, producer_id=9,
                                producer_epoch=1, transactional=True, timestamps=1)
            + control_batch(2))
    d = decode_record_batches(data, start_offset=0)
    assert d.offsets.tolist() == [0, 1]
    assert d.next_offset == 3
    # kafka-python agrees the control batch is well formed.
    assert DefaultRecordBatch(control_batch(2)).is_control_batch


def test_empty_batch_advances_next_offset() -> None:
    # A compacted batch with every record removed keeps its header: count 0, lastOffsetDelta.
    raw = encode_record_batch(None, [b"gone"], base_offset=40, timestamps=1)
    empty = patch(raw[:HEADER_SIZE], count=0, last_delta=9)
    empty = patch(struct.pack(">qi", 40, HEADER_SIZE - 12) + empty[12:])
    d = decode_record_batches(three_batches() + empty, start_offset=0)
    assert d.num_records == 30 and d.next_offset == 50


def test_crc_mismatch() -> None:
    data = bytearray(three_batches())
    second = len(encode_record_batch(None, [b"v%d" % i for i in range(10)], timestamps=0))
    data[second + 70] ^= 0x01  # inside the gzip batch at base offset 10
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "offset 10") as info:
        decode_record_batches(bytes(data), start_offset=0, topic="orders", partition=3)
    assert info.value.topic == "orders" and info.value.partition == 3
    assert info.value.offset == 10
    assert "partition 3" in str(info.value) and "CRC" in str(info.value)


def _batch_starts(data: bytes | bytearray) -> list[int]:
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    return starts


@pytest.mark.parametrize(("batch", "base", "message"), [
    (0, -(1 << 56), "starts at offset -72057594037927936, which no log holds"),
    (0, 1, "starts at offset 10, before the previous one ended \\(at 10\\)"),
    (1, 15, "starts at offset 20, before the previous one ended \\(at 24\\)"),
    (1, 1 << 40, "starts at offset 20, before the previous one ended \\(at 1099511627785\\)"),
])
def test_a_damaged_base_offset_is_caught_by_the_order_of_batches(batch: int, base: int,
                                                                 message: str) -> None:
    """The base offset is outside the CRC: a flipped one is caught because offsets only grow
    along a log (a batch moved past the range is skipped, the next one then overlaps it)."""
    data = bytearray(three_batches())
    struct.pack_into(">q", data, _batch_starts(data)[batch], base)
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          message) as info:
        decode_record_batches(bytes(data), start_offset=0, end_offset=30, topic="t",
                              partition=1, broker="b:9092")
    assert "broker b:9092" in str(info.value) and "partition 1" in str(info.value)


def test_a_damaged_batch_past_the_range_does_not_fail_the_read() -> None:
    data = bytearray(three_batches())
    struct.pack_into(">q", data, _batch_starts(data)[2], 1 << 40)  # still past the range
    d = decode_record_batches(bytes(data), start_offset=0, end_offset=20)
    assert d.offsets.tolist() == list(range(20))


def test_check_crcs_false_skips_the_check() -> None:
    raw = bytearray(encode_record_batch(None, [b"abc", b"def"], timestamps=0, base_offset=7))
    raw[-2] = ord("X")  # the last value byte (the header count follows)
    with pytest.raises(CorruptRecordError):
        decode_record_batches(bytes(raw), start_offset=0)
    d = decode_record_batches(bytes(raw), start_offset=0, check_crcs=False)
    assert d.values.to_pylist() == [b"abc", b"deX"]


def test_headers_none_when_kept_records_have_none() -> None:
    raw = encode_record_batch(None, [b"a", b"b", b"c"], timestamps=0,
                              headers=[[("k", b"v")], None, []])
    assert decode_record_batches(raw, start_offset=0).headers == [[("k", b"v")], None, None]
    assert decode_record_batches(raw, start_offset=1).headers is None


def test_header_keys_with_bad_utf8_are_replaced_like_java() -> None:
    raw = encode_record_batch(None, [b"a"], timestamps=0, headers=[[(b"\xffk", b"v")]])
    assert decode_record_batches(raw, start_offset=0).headers == [[("\ufffdk", b"v")]]


def test_legacy_magic_is_decoded() -> None:
    # Details in test_legacy_records.py; here: the dispatch on the magic byte.
    builder = MemoryRecordsBuilder(1, 0, 1 << 20)
    builder.append(1, b"k", b"v")
    builder.close()
    d = decode_record_batches(bytes(builder.buffer()), start_offset=0, topic="old")
    assert ours(d) == [(0, 1, 0, b"k", b"v", None)]
    assert d.next_offset == 1


def test_unknown_codec_names_batch() -> None:
    raw = encode_record_batch(None, [b"a"], timestamps=0, base_offset=77)
    unknown = patch(raw, attrs=5)
    with raises_condition(UnsupportedCodecError, "KAFKAWIRE_PROTOCOL.UNSUPPORTED_CODEC",
                          "codec id 5.*offset 77"):
        decode_record_batches(unknown, start_offset=0)
    # A batch skipped by offset is never decompressed.
    assert decode_record_batches(unknown, start_offset=78).next_offset == 78


def test_decompressed_size_is_bounded() -> None:
    raw = encode_record_batch(None, [b"\x00" * 100_000] * 10, timestamps=0, compression=1)
    assert len(raw) < 10_000
    assert decode_record_batches(raw, start_offset=0).num_records == 10
    with raises_condition(DecompressionLimitError, "KAFKAWIRE_PROTOCOL.DECOMPRESSION_LIMIT",
                          "kafka.fetch.max.decompressed.bytes"):
        decode_record_batches(raw, start_offset=0, max_decompressed_size=500_000)


def test_input_buffer_types() -> None:
    data = three_batches()
    expected = ours(decode_record_batches(data, start_offset=0))
    padded = b"junk" + data + b"more"
    for buf in (bytearray(data), memoryview(data), memoryview(padded)[4:-4],
                memoryview(bytearray(padded))[4:-4]):
        assert ours(decode_record_batches(buf, start_offset=0)) == expected


def test_mixed_sizes_and_big_records() -> None:
    # Lengths around the 1/2/3-byte varint and 12/13-byte inline/long view boundaries, and a
    # short value last so reads near the end of the buffer are exercised.
    sizes = [0, 1, 4, 11, 12, 13, 63, 64, 100, 8190, 8191, 8192, 70_000, 3, 12, 5]
    values = [bytes((i * 7 + j) % 256 for j in range(s)) for i, s in enumerate(sizes)]
    keys = [v[:12] if i % 2 else v[:13] for i, v in enumerate(values)]
    records = [(i, keys[i], values[i], []) for i in range(len(sizes))]
    for codec in (0, 1):
        raw = kp_build(records, codec=codec)
        assert ours(decode_record_batches(raw, start_offset=0)) == as_rows(records, 0)
        mine = encode_record_batch(keys, values, timestamps=np.arange(len(sizes)),
                                   compression=codec)
        assert kp_read(mine) == as_rows(records, 0)
    # All values the same length (the fixed-width fast path), with and without nulls.
    for vals in ([b"abcdefgh"] * 9, [b"abcdefgh"] * 4 + [None] + [b"abcdefgh"] * 4):
        raw = encode_record_batch(vals, vals, timestamps=0)
        d = decode_record_batches(raw, start_offset=0)
        assert d.values.to_pylist() == vals and d.keys.to_pylist() == vals


# ---------------------------------------------------------------------------------- hostile


def test_huge_batch_length_is_a_partial_batch_not_an_allocation() -> None:
    raw = encode_record_batch(None, [b"a"], timestamps=0)
    claim = struct.pack(">qi", 0, 2**31 - 1) + raw[12:]
    tracemalloc.start()
    try:
        d = decode_record_batches(claim, start_offset=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert d.num_records == 0 and d.next_offset is None
    assert peak < 1_000_000


@pytest.mark.parametrize("count", [2**31 - 1, 2, 1_000_000])
def test_impossible_record_count(count: int) -> None:
    raw = patch(encode_record_batch(None, [b"a"], timestamps=0, base_offset=5), count=count)
    tracemalloc.start()
    try:
        with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                              "offset 5"):
            decode_record_batches(raw, start_offset=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_record_count_smaller_than_records() -> None:
    raw = patch(encode_record_batch(None, [b"a", b"b", b"c"], timestamps=0), count=2)
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "do not fill"):
        decode_record_batches(raw, start_offset=0)


def _record_batch_from(records_section: bytes, count: int, base_offset: int = 0) -> bytes:
    rest = struct.pack(">hiqqqhii", 0, count - 1, 0, 0, -1, -1, -1, count)
    crc = crc32c(rest + records_section)
    return struct.pack(">qiibI", base_offset, 49 + len(records_section), -1, 2, crc) + rest + \
        records_section


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        # body = the record after its length varint: attributes, timestampDelta, offsetDelta,
        # key length (+ key), value length (+ value), header count, headers.
        ("00 00 00 feffffff0f 00 00 00", "value length lies past"),  # key length 2^31-1
        ("00 00 00 00 feffffff0f 00 00", "header count lies past"),  # value length 2^31-1
        ("00 00 00 03 00 00 00 00 00 00 00", "invalid key length -2"),
        ("00 00 00 01 05 00 00 00 00 00 00", "value length -3"),
        ("00 00 00 01 01 feffffff0f 00 00", "header count 2147483647 is impossible"),
        ("00 00 00 01 01 01 00 00 00 00 00", "header count -1"),
        ("00 00 00 01 01 02 03 00 00 00 00", "invalid header key length -2"),
        ("00 00 00 01 01 02 02 41 05 00 00", "invalid header value length -3"),
        ("00 00 00 01 01 02 02 41 0a 00 00", "invalid header value length 5"),
        ("00 00 00 01 01 02 fe ff ff ff 0f 00", "invalid header key length 2147483647"),
        ("00 ffffffffffffffffffff01 00 01 01 00", "timestamp delta varint longer than 10"),
        ("00 00 ffffffffff7f 01 01 00", "offset delta varint longer than 5"),
        ("00 00 00 01 01 00 00 00", "does not match its fields"),  # trailing bytes
        ("00 00 00 01 01 02 02 41 01 00", "unread bytes after the headers"),
        ("00 00 00 01 01 00", None),  # well formed: the harness itself is sound
    ],
)
def test_malformed_records_raise_corrupt_record_error(body: str, reason: str | None) -> None:
    raw_body = bytes.fromhex(body.replace(" ", ""))
    section = bytes([len(raw_body) << 1]) + raw_body  # zigzag length, all bodies < 64 bytes
    raw = _record_batch_from(section, 1, base_offset=321)
    if reason is None:
        assert decode_record_batches(raw, start_offset=0).values.to_pylist() == [None]
        return
    tracemalloc.start()
    try:
        with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                              reason) as info:
            decode_record_batches(raw, start_offset=0, topic="t", partition=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.offset == 321 and info.value.topic == "t"
    assert peak < 1_000_000


@pytest.mark.parametrize(
    ("section", "count"),
    [
        ("0e 00 00 00 01 01 00", 1),  # record length 7 for a 6-byte body
        ("0a 00 00 00 01 01", 1),  # record length 5: shorter than the mandatory fields
        ("0c 00 00 00 01 01 00 00", 1),  # one byte after the last record
        ("01 00 00 00 01 01 00", 1),  # negative record length
        ("0c 00 00 00 01 01 00 0c 00 00 00 01 01", 2),  # second record cut short
    ],
)
def test_records_that_do_not_tile_the_batch(section: str, count: int) -> None:
    raw = _record_batch_from(bytes.fromhex(section.replace(" ", "")), count, base_offset=9)
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "offset 9"):
        decode_record_batches(raw, start_offset=0)


def test_record_with_null_header_value() -> None:
    section = bytes.fromhex("12 00 00 00 01 01 02 02 41 01")
    d = decode_record_batches(_record_batch_from(section, 1), start_offset=0)
    assert d.headers == [[("A", None)]]


@pytest.mark.parametrize("bad", [
    struct.pack(">qi", 0, -5) + b"\x00" * 60,  # negative batch length
    struct.pack(">qi", 0, 3) + b"\x00" * 60,  # too short for a magic byte
    struct.pack(">qii", 0, 30, 0) + b"\x02" + b"\x00" * 60,  # too short for the header
    struct.pack(">qii", 0, 49, 0) + b"\x07" + b"\x00" * 44,  # unknown magic
])
def test_malformed_batch_headers(bad: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_record_batches(bad, start_offset=0)


# ---------------------------------------------------------------------------------- fuzzing

header_st = st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8)))
record_st = st.tuples(
    st.integers(-(2**40), 2**41),
    st.one_of(st.none(), st.binary(max_size=20)),
    st.one_of(st.none(), st.binary(max_size=60), st.binary(min_size=120, max_size=200)),
    st.lists(header_st, max_size=3),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_st, min_size=1, max_size=25), st.sampled_from([0, 1, 2, 3, 4]),
       st.integers(0, 2**40), st.data())
def test_round_trip_property(records: list, codec: int, base: int, data: Any) -> None:
    raw = encode_record_batch([r[1] for r in records], [r[2] for r in records],
                              timestamps=np.array([r[0] for r in records]), base_offset=base,
                              compression=codec, headers=[r[3] for r in records])
    expected = as_rows(records, base)
    assert kp_read(raw) == expected
    start = data.draw(st.integers(base, base + len(records)))
    end = data.draw(st.one_of(st.none(), st.integers(start, base + len(records))))
    d = decode_record_batches(raw, start_offset=start, end_offset=end)
    assert ours(d) == [r for r in expected if r[0] >= start and (end is None or r[0] < end)]
    assert d.next_offset == base + len(records)


def _valid_corpus() -> list[bytes]:
    out = []
    for seed, codec in ((1, 0), (2, 1), (3, 0), (4, 2), (5, 3), (6, 4)):
        records = sample_records(12, seed)
        out.append(encode_record_batch([r[1] for r in records], [r[2] for r in records],
                                       timestamps=np.array([r[0] for r in records]),
                                       compression=codec, headers=[r[3] for r in records],
                                       base_offset=seed * 100))
    out.append(out[0] + control_batch(1000) + out[1])
    return out


CORPUS = _valid_corpus()


def _decode_only_protocol_errors(data: bytes, **kw: Any) -> None:
    try:
        d = decode_record_batches(data, start_offset=0, **kw)
    except ProtocolError:
        return
    # Whatever decodes must be self-consistent.
    ours(d)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(CORPUS), st.data())
def test_mutations_only_raise_protocol_errors(base: bytes, data: Any) -> None:
    buf = bytearray(base)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "byte", "truncate", "insert", "delete"]))
        if not buf:
            break
        i = data.draw(st.integers(0, len(buf) - 1))
        if kind == "flip":
            buf[i] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "byte":
            buf[i] = data.draw(st.integers(0, 255))
        elif kind == "truncate":
            del buf[i:]
        elif kind == "insert":
            buf[i:i] = data.draw(st.binary(min_size=1, max_size=4))
        else:
            del buf[i:i + data.draw(st.integers(1, 4))]
    _decode_only_protocol_errors(bytes(buf))
    _decode_only_protocol_errors(bytes(buf), check_crcs=False)
    # With the CRCs recomputed, damage inside batches reaches the record parser.
    _decode_only_protocol_errors(_refix_crcs(bytes(buf)))


def _refix_crcs(data: bytes) -> bytes:
    buf = bytearray(data)
    pos = 0
    while len(buf) - pos >= HEADER_SIZE:
        length = struct.unpack_from(">i", buf, pos + 8)[0]
        end = pos + 12 + length
        if length < 49 or end > len(buf):
            break
        struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21:end])))
        pos = end
    return bytes(buf)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CORPUS), st.data())
def test_record_section_garbage_with_valid_crc(base: bytes, data: Any) -> None:
    """Overwrite bytes of the records section only, keep the header, fix the CRC."""
    buf = bytearray(base)
    length = struct.unpack_from(">i", buf, 8)[0]
    end = 12 + length
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(HEADER_SIZE, end - 1))
        buf[i] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE,
                                            data.draw(st.integers(0, 255))]))
    _decode_only_protocol_errors(_refix_crcs(bytes(buf)))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_only_raise_protocol_errors(blob: bytes) -> None:
    _decode_only_protocol_errors(blob)
    # Random bytes behind a plausible v2 header with a valid CRC.
    _decode_only_protocol_errors(_record_batch_from(blob, max(1, len(blob) // 9)),
                                 check_crcs=False)
    _decode_only_protocol_errors(_record_batch_from(blob, 1))


def test_gzip_batch_with_garbage_payload() -> None:
    good = encode_record_batch(None, [b"x" * 100] * 5, timestamps=0, compression=1)
    for payload in (b"not gzip", gzip.compress(b"\x01\x02\x03"), gzip.compress(b"")):
        bad = _record_batch_from(payload, 5)
        bad = patch(bad, attrs=1)
        with pytest.raises(CorruptRecordError):
            decode_record_batches(bad, start_offset=0)
    assert decode_record_batches(good, start_offset=0).num_records == 5


def test_gather_fallback_for_pyarrow_without_binary_view(monkeypatch: pytest.MonkeyPatch) -> None:
    import spark_kafka_wire.protocol.records.columns as records_module

    records = sample_records(60, seed=11)
    raw = kp_build(records, base_offset=4) + kp_build(records, codec=1, base_offset=64)
    expected = ours(decode_record_batches(raw, start_offset=10))
    monkeypatch.setattr(records_module, "_HAS_VIEWS", False)
    assert ours(decode_record_batches(raw, start_offset=10)) == expected
    assert expected == as_rows(records, 4)[6:] + as_rows(records, 64)


def test_damaged_batch_beyond_the_range_does_not_fail_the_read() -> None:
    good = encode_record_batch(None, [b"a", b"b", b"c"], timestamps=1, base_offset=0)
    bad = bytearray(encode_record_batch(None, [b"d"], timestamps=1, base_offset=3))
    bad[-1] ^= 0xFF  # damage the record bytes: CRC mismatch
    d = decode_record_batches(good + bytes(bad), start_offset=0, end_offset=3)
    assert d.values.to_pylist() == [b"a", b"b", b"c"]
    assert d.next_offset == 4
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "offset 3"):
        decode_record_batches(good + bytes(bad), start_offset=0, end_offset=4)


# ---------------------------------------------------------------------------------- transactions

P1, P2 = 1001, 2002


def txn(base_offset: int, n: int, producer_id: int, transactional: bool = True,
        codec: int = 0) -> bytes:
    """A data batch of ``producer_id`` with values naming their offsets."""
    return encode_record_batch(None, [b"v%d" % (base_offset + i) for i in range(n)],
                               timestamps=7, base_offset=base_offset, producer_id=producer_id,
                               producer_epoch=0, base_sequence=0, transactional=transactional,
                               compression=codec)


def committed_offsets(data: bytes, aborted: list | None, start: int = 0,
                      end: int | None = None) -> tuple[list[int], int | None]:
    d = decode_record_batches(data, start_offset=start, end_offset=end,
                              aborted_transactions=aborted)
    assert d.values.to_pylist() == [b"v%d" % o for o in d.offsets.tolist()]
    return d.offsets.tolist(), d.next_offset


def test_aborted_transaction_dropped_committed_kept() -> None:
    data = (txn(0, 2, P1) + control_batch(2, commit=False, producer_id=P1)
            + txn(3, 2, P2) + control_batch(5, commit=True, producer_id=P2))
    assert committed_offsets(data, [(P1, 0)]) == ([3, 4], 6)
    # read_uncommitted: every data record, never the markers.
    assert committed_offsets(data, None) == ([0, 1, 3, 4], 6)
    # read_committed without aborted transactions keeps all data too.
    assert committed_offsets(data, []) == ([0, 1, 3, 4], 6)
    # Starting after the aborted batch, or ending before the end, changes nothing else.
    assert committed_offsets(data, [(P1, 0)], start=1) == ([3, 4], 6)
    assert committed_offsets(data, [(P1, 0)], end=4) == ([3], 6)


def test_interleaved_producers() -> None:
    data = (txn(0, 2, P1) + txn(2, 2, P2) + txn(4, 2, P1)
            + control_batch(6, commit=True, producer_id=P2)
            + control_batch(7, commit=False, producer_id=P1)
            + txn(8, 2, P1) + txn(10, 1, P2) + control_batch(11, commit=True, producer_id=P1)
            + control_batch(12, commit=False, producer_id=P2))
    # P1's first transaction aborted (0-7); its next one (8-11) committed; P2's second
    # transaction (10-12) aborted.
    assert committed_offsets(data, [(P2, 10), (P1, 0)]) == ([2, 3, 8, 9], 13)
    assert committed_offsets(data, None) == ([0, 1, 2, 3, 4, 5, 8, 9, 10], 13)


def test_abort_marker_ends_the_transaction() -> None:
    data = (txn(0, 2, P1) + control_batch(2, commit=False, producer_id=P1)
            + txn(3, 2, P1) + control_batch(5, commit=True, producer_id=P1)
            + txn(6, 2, P1) + control_batch(8, commit=False, producer_id=P1))
    assert committed_offsets(data, [(P1, 0)]) == ([3, 4, 6, 7], 9)
    assert committed_offsets(data, [(P1, 0), (P1, 6)]) == ([3, 4], 9)
    # Only an ABORT marker ends it, as in Java: a COMMIT marker (which a broker would never
    # write for an aborted transaction) leaves the producer aborted.
    assert committed_offsets(data, [(P1, 3)]) == ([0, 1], 9)


def test_non_transactional_batches_of_the_same_producer_are_kept() -> None:
    data = (txn(0, 2, P1) + txn(2, 2, P1, transactional=False) + txn(4, 1, P1)
            + control_batch(5, commit=False, producer_id=P1)
            + txn(6, 2, -1, transactional=False))
    assert committed_offsets(data, [(P1, 0)]) == ([2, 3, 6, 7], 8)


def test_transaction_starting_later_does_not_touch_earlier_batches() -> None:
    data = (txn(0, 2, P1) + control_batch(2, commit=True, producer_id=P1)
            + txn(3, 2, P1) + control_batch(5, commit=False, producer_id=P1))
    assert committed_offsets(data, [(P1, 3)]) == ([0, 1], 6)
    # Like Java, a transaction counts from the batch whose *last* offset reaches its first
    # offset: a first offset inside a batch marks that batch aborted.
    assert committed_offsets(data, [(P1, 4)]) == ([0, 1], 6)
    # Unordered input and aborted transactions of producers absent from the data.
    assert committed_offsets(data, [(77, 0), (P1, 3), (78, 1)]) == ([0, 1], 6)


def test_compressed_batches_and_markers() -> None:
    data = (txn(0, 3, P1, codec=1) + control_batch(3, commit=False, producer_id=P1, codec=1)
            + txn(4, 3, P1, codec=3) + control_batch(7, commit=True, producer_id=P1, codec=4))
    assert committed_offsets(data, [(P1, 0)]) == ([4, 5, 6], 8)


def _null_key_marker(base_offset: int, producer_id: int) -> bytes:
    raw = encode_record_batch([None], [b"x"], timestamps=5, base_offset=base_offset,
                              producer_id=producer_id, producer_epoch=1, transactional=True)
    return patch(raw, attrs=0x30)


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00", b"\xff\xff\x00\x00"])
def test_malformed_abort_marker_key(key: bytes | None) -> None:
    # null, empty, too short, negative version
    bad = _null_key_marker(2, P1) if key is None else control_batch(2, producer_id=P1, key=key)
    data = txn(0, 2, P1) + bad
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "control record.*offset 2"):
        decode_record_batches(data, start_offset=0, aborted_transactions=[(P1, 0)])
    # Markers of producers without an aborted transaction are not even parsed (as in Java).
    assert committed_offsets(data, [(P2, 0)]) == ([0, 1], 3)
    assert committed_offsets(data, None) == ([0, 1], 3)


def test_empty_control_batch_is_not_an_abort_marker() -> None:
    empty = patch(control_batch(2, producer_id=P1)[:HEADER_SIZE], count=0, last_delta=0)
    empty = patch(struct.pack(">qi", 2, HEADER_SIZE - 12) + empty[12:])
    data = txn(0, 2, P1) + empty + txn(3, 1, P1)
    assert committed_offsets(data, [(P1, 0)]) == ([], 4)


def events_of(data: bytes, aborted: list | None = None, start: int = 0,
              end: int | None = None) -> tuple[DecodedRecords, list]:
    events = TransactionEvents()
    d = decode_record_batches(data, start_offset=start, end_offset=end,
                              aborted_transactions=aborted, transactions=events)
    return d, events.entries


def test_the_decoder_reports_transactional_batches_and_markers_in_log_order() -> None:
    data = (txn(0, 2, P1) + txn(2, 1, -1, transactional=False) + txn(3, 2, P2)
            + control_batch(5, commit=False, producer_id=P2) + txn(6, 1, P1)
            + control_batch(7, commit=True, producer_id=P1, codec=1) + txn(8, 1, P2))
    d, entries = events_of(data, aborted=[])
    assert d.offsets.tolist() == [0, 1, 2, 3, 4, 6, 8]  # the decoder alone keeps them all
    assert entries == [(P1, 0, 1, None, None), (P2, 3, 4, None, None), (P2, 5, 5, 0, None),
                       (P1, 6, 6, None, None), (P1, 7, 7, 1, None), (P2, 8, 8, None, None)]
    # A listed transaction is dropped at once and not reported; a range that starts inside a
    # batch reports its first returned offset; markers past the end are reported, data not.
    d, entries = events_of(data, aborted=[(P2, 3)], start=1, end=6)
    assert d.offsets.tolist() == [1, 2]
    assert entries == [(P1, 1, 1, None, None), (P2, 5, 5, 0, None), (P1, 7, 7, 1, None)]


def test_a_damaged_marker_past_the_end_is_reported_not_raised() -> None:
    bad = bytearray(control_batch(3, commit=True, producer_id=P1))
    bad[-1] ^= 0xFF  # the CRC no longer matches
    _, entries = events_of(txn(0, 3, P1) + bytes(bad), end=3)
    assert entries == [(P1, 0, 2, None, None), (P1, 3, 3, -1, "CRC-32C mismatch")]
    short = control_batch(3, producer_id=P1, key=b"\x00\x00")
    _, entries = events_of(txn(0, 3, P1) + short, end=3)
    assert entries[1][3] == -1 and "needs 4" in entries[1][4]


def test_committed_filter_holds_chunks_until_decided_and_keeps_their_order() -> None:
    where = {"topic": "t", "partition": 0, "broker": "b"}
    first, second = txn(0, 2, P1) + txn(2, 1, -1, transactional=False) + txn(3, 2, P2), \
        control_batch(5, commit=False, producer_id=P2) + txn(6, 1, -1, transactional=False)
    f = CommittedFilter()
    events = TransactionEvents()
    d = decode_record_batches(first, start_offset=0, aborted_transactions=[],
                              transactions=events)
    f.add(d, events, where)
    assert f.ready() == [] and f.undecided == {P1: 0, P2: 3}
    events = TransactionEvents()
    d = decode_record_batches(second + control_batch(7, commit=True, producer_id=P1),
                              start_offset=6, aborted_transactions=[], transactions=events)
    f.add(d, events, where)
    out = f.ready()
    assert [c.offsets.tolist() for c in out] == [[0, 1, 2], [6]] and f.undecided == {}
    assert [c.values.to_pylist() for c in out] == [[b"v0", b"v1", b"v2"], [b"v6"]]


def test_decoded_records_filter_keeps_the_columns_aligned() -> None:
    recs = [(1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)] if i % 2 else [])
            for i in range(6)]
    d = decode_record_batches(kp_build(recs), start_offset=0)
    keep = np.array([True, True, False, False, True, False])
    f = d.filter(keep)
    assert f.offsets.tolist() == [0, 1, 4] and f.next_offset == d.next_offset
    assert f.keys.to_pylist() == [b"k0", b"k1", b"k4"]
    assert f.values.to_pylist() == [b"v0", b"v1", b"v4"]
    assert f.timestamps.tolist() == [d.timestamps[i] for i in (0, 1, 4)]
    assert f.headers == [None, [("h", b"1")], None]
    assert d.filter(np.array([True, False, True, False, True, False])).headers is None
    with pytest.raises(ValueError, match="a mask of 2 rows for 6 records"):
        d.filter(np.array([True, False]))
