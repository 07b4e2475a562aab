"""Legacy message sets (magic 0 and 1): the layouts of Kafka's protocol guide
(https://kafka.apache.org/protocol, "Message sets") byte by byte, kafka-python's legacy
builder and reader as oracles both ways, mixed responses, and hostile bytes."""

from __future__ import annotations

import gzip
import struct
import tracemalloc
import zlib
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from spark_kafka_wire.protocol.compression import (
    DecompressionLimitError,
    UnsupportedCodecError,
    compress,
)
from spark_kafka_wire.protocol.errors import CorruptRecordError, ProtocolError
from spark_kafka_wire.protocol.records import (
    decode_record_batches,
    encode_message_set,
    encode_record_batch,
)
from tests.support.errors import raises_condition
from tests.unit.protocol.test_records import ours

Rec = tuple[int, bytes | None, bytes | None]  # (timestamp, key, value)
Row = tuple[int, int, int, bytes | None, bytes | None, None]
CODECS = [0, 1, 2, 3]  # zstd does not exist for magic 0/1


# ---------------------------------------------------------------------------------- helpers


def needs_codec(magic: int, codec: int) -> None:
    if magic == 0 and codec == 3:
        import xxhash  # noqa: F401  kafka-python's KAFKA-3160 lz4 needs it (a test dependency)


def kp_build(magic: int, codec: int, records: list[Rec], base_offset: int = 0,
             log_append_time: int | None = None) -> bytes:
    """A message set from kafka-python's legacy builder, with offsets as a broker assigns them.

    Uncompressed: base_offset + i. Compressed: one wrapper at the last offset; inner offsets
    relative (magic 1) or absolute (magic 0, which the broker rewrites on append).
    """
    needs_codec(magic, codec)
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 30)
    for i, (ts, key, value) in enumerate(records):
        offset = i if codec and magic == 1 else base_offset + i
        assert builder.append(offset, ts, key, value) is not None
    buf = bytearray(builder.build())
    if codec:
        struct.pack_into(">q", buf, 0, base_offset + len(records) - 1)
        if log_append_time is not None:  # the broker stamps the wrapper
            buf[17] |= 0x08
            struct.pack_into(">q", buf, 18, log_append_time)
            struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])))
    elif log_append_time is not None:
        pos = 0
        while pos < len(buf):
            size = struct.unpack_from(">i", buf, pos + 8)[0]
            buf[pos + 17] |= 0x08
            struct.pack_into(">q", buf, pos + 18, log_append_time)
            struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16:pos + 12 + size])))
            pos += 12 + size
    return bytes(buf)


def kp_read(data: bytes) -> list[Row]:
    """Records as kafka-python reads them, after its CRC validation of every message."""
    rows: list[Row] = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        for r in batch:
            assert r.validate_crc()
            ts = -1 if r.timestamp is None else r.timestamp
            ts_type = -1 if r.timestamp_type is None else r.timestamp_type
            rows.append((r.offset, ts, ts_type, r.key, r.value, None))
    return rows


def expected_rows(magic: int, records: list[Rec], base_offset: int,
                  log_append_time: int | None = None) -> list[Row]:
    if magic == 0:
        return [(base_offset + i, -1, -1, k, v, None) for i, (_, k, v) in enumerate(records)]
    if log_append_time is not None:
        return [(base_offset + i, log_append_time, 1, k, v, None)
                for i, (_, k, v) in enumerate(records)]
    return [(base_offset + i, ts, 0, k, v, None) for i, (ts, k, v) in enumerate(records)]


def sample(n: int, keys: bool = True, seed: int = 0) -> list[Rec]:
    rng = np.random.default_rng(seed)
    out: list[Rec] = []
    for i in range(n):
        key = (b"key-%d" % i) if keys and i % 5 != 2 else None
        value = None if i % 7 == 3 else bytes(rng.integers(0, 256, int(rng.integers(0, 60)),
                                                            dtype=np.uint8)) * 3
        out.append((1_600_000_000_000 + i * 10, key, value))
    return out


def ours_encode(magic: int, codec: int, records: list[Rec], base_offset: int = 0) -> bytes:
    return encode_message_set([r[1] for r in records], [r[2] for r in records], magic=magic,
                              timestamps=[r[0] for r in records], compression=codec,
                              base_offset=base_offset)


def message(offset: int, magic: int, key: bytes | None, value: bytes | None, *,
            attrs: int = 0, ts: int = -1, crc: int | None = None) -> bytes:
    """One message, built by hand from the MessageSet layout of Kafka's protocol guide (magic 0
    and 1, https://kafka.apache.org/protocol#protocol_messages; magic 1 is KIP-32)."""
    body = struct.pack(">bb", magic, attrs) + (struct.pack(">q", ts) if magic else b"")
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    crc = zlib.crc32(body) if crc is None else crc
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def raw_message(offset: int, body: bytes) -> bytes:
    """A message around ``body`` (magic onwards) with a right size and CRC."""
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def wrapper(offset: int, magic: int, codec: int, inner: bytes, *, ts: int = -1,
            attrs: int = 0) -> bytes:
    """A compressed message around ``inner`` (a message set), valid CRC."""
    return message(offset, magic, None, compress(codec, inner, magic=magic),
                   attrs=codec | attrs, ts=ts)


# ----------------------------------------------------------------------- the guide's layouts


def test_magic_0_message_layout_byte_by_byte() -> None:
    raw = encode_message_set([b"k1"], [b"hello"], magic=0, base_offset=42)
    # offset, message length (4+1+1+4+K+4+V), crc, magic, attributes, key, value
    expected_body = b"\x00" + b"\x00" + b"\x00\x00\x00\x02" + b"k1" + b"\x00\x00\x00\x05" + b"hello"
    assert len(expected_body) == 1 + 1 + 4 + 2 + 4 + 5
    expected = (struct.pack(">q", 42) + struct.pack(">i", 4 + len(expected_body))
                + struct.pack(">I", zlib.crc32(expected_body)) + expected_body)
    assert raw == expected == message(42, 0, b"k1", b"hello")

    def at(fmt: str, offset: int) -> int:
        return struct.unpack_from(">" + fmt, raw, offset)[0]

    assert at("q", 0) == 42  # offset
    assert at("i", 8) == len(raw) - 12 == 4 + 1 + 1 + 4 + 2 + 4 + 5  # message length
    assert at("I", 12) == zlib.crc32(raw[16:])  # CRC-32 over magic..end
    assert at("b", 16) == 0 and at("b", 17) == 0  # magic, attributes
    assert at("i", 18) == 2 and raw[22:24] == b"k1"
    assert at("i", 24) == 5 and raw[28:] == b"hello"

    d = decode_record_batches(raw, start_offset=0, topic="t", partition=0)
    assert ours(d) == [(42, -1, -1, b"k1", b"hello", None)]
    assert d.next_offset == 43
    assert kp_read(raw) == ours(d)


def test_magic_1_message_set_layout_byte_by_byte() -> None:
    raw = encode_message_set([None, b"key"], [b"v", None], magic=1, timestamps=[1000, 1001],
                             base_offset=7)
    first = (b"\x01" + b"\x00" + struct.pack(">q", 1000) + b"\xff\xff\xff\xff"
             + b"\x00\x00\x00\x01" + b"v")
    second = (b"\x01" + b"\x00" + struct.pack(">q", 1001) + b"\x00\x00\x00\x03" + b"key"
              + b"\xff\xff\xff\xff")
    expected = b"".join(
        struct.pack(">qiI", off, 4 + len(body), zlib.crc32(body)) + body
        for off, body in ((7, first), (8, second)))
    assert raw == expected
    assert struct.unpack_from(">i", raw, 8)[0] == 4 + 1 + 1 + 8 + 4 + 0 + 4 + 1  # the guide's size
    assert raw[12 + 4 + 1 + 1 + 8 + 4 + 0 + 4 + 1:][:8] == struct.pack(">q", 8)  # no count prefix
    d = decode_record_batches(raw, start_offset=0)
    assert ours(d) == [(7, 1000, 0, None, b"v", None), (8, 1001, 0, b"key", None, None)]
    assert d.next_offset == 9
    assert kp_read(raw) == ours(d)


@pytest.mark.parametrize("magic", [0, 1])
def test_compressed_wrapper_layout(magic: int) -> None:
    raw = encode_message_set([b"a", b"b", b"c"], [b"x", b"y", b"z"], magic=magic,
                             timestamps=[5, 9, 7], compression="gzip", base_offset=100)
    offset, size, crc, mg, attrs = struct.unpack_from(">qiIbb", raw)
    assert (offset, mg, attrs) == (102, magic, 1)  # wrapper = last offset, codec gzip
    assert size == len(raw) - 12 and crc == zlib.crc32(raw[16:])
    p = 18
    if magic:
        assert struct.unpack_from(">q", raw, p)[0] == 9  # max timestamp, as Java writes it
        p += 8
    assert struct.unpack_from(">i", raw, p)[0] == -1  # null key
    (vlen,) = struct.unpack_from(">i", raw, p + 4)
    assert p + 8 + vlen == len(raw)
    inner = gzip.decompress(raw[p + 8:])
    # Inner offsets: relative 0..n-1 for magic 1, absolute for magic 0.
    first = 0 if magic else 100
    assert inner == b"".join(message(first + i, magic, k, v, ts=t if magic else -1)
                             for i, (k, v, t) in enumerate(zip(b"abc", b"xyz", (5, 9, 7),
                                                               strict=True))
                             for k, v in [(bytes([k]), bytes([v]))])
    d = decode_record_batches(raw, start_offset=0)
    ts = [5, 9, 7] if magic else [-1] * 3
    assert ours(d) == [(100 + i, ts[i], 0 if magic else -1, k, v, None)
                       for i, (k, v) in enumerate([(b"a", b"x"), (b"b", b"y"), (b"c", b"z")])]
    assert d.next_offset == 103
    assert kp_read(raw) == ours(d)


def test_kafka_0_7_messages_are_never_misread() -> None:
    """The 0.7 layout of Kafka's design document (no offset field; byte-offset addressing;
    https://kafka.apache.org/07/documentation.html) belongs to the
    pre-0.8 protocol, which a 0.8+ client never receives. Fed to the decoder anyway, it must
    not come out as records."""
    payload = b"a 0.7 message payload"
    v06 = struct.pack(">ib", 1 + 4 + len(payload), 0) + struct.pack(">I", zlib.crc32(payload))
    v07 = struct.pack(">ibb", 2 + 4 + len(payload), 1, 0) + struct.pack(
        ">I", zlib.crc32(payload))
    for data in (v06 + payload, v07 + payload, (v07 + payload) * 3):
        try:
            d = decode_record_batches(data, start_offset=0)
        except ProtocolError:
            continue
        assert d.num_records == 0


# ---------------------------------------------------------------------------------- oracle


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("keys", [True, False])
def test_decode_kafka_python_message_sets(magic: int, codec: int, keys: bool) -> None:
    records = sample(150, keys=keys, seed=codec)
    raw = kp_build(magic, codec, records, base_offset=1000)
    d = decode_record_batches(raw, start_offset=0)
    assert ours(d) == kp_read(raw) == expected_rows(magic, records, 1000)
    assert d.next_offset == 1150
    assert d.headers is None


@pytest.mark.parametrize("codec", CODECS)
def test_log_append_time(codec: int) -> None:
    records = sample(30)
    raw = kp_build(1, codec, records, base_offset=5, log_append_time=1_800_000_000_000)
    d = decode_record_batches(raw, start_offset=0)
    assert ours(d) == kp_read(raw) == expected_rows(1, records, 5, 1_800_000_000_000)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_our_message_sets(magic: int, codec: int) -> None:
    needs_codec(magic, codec)
    records = sample(200, seed=7)
    raw = ours_encode(magic, codec, records, base_offset=500)
    rows = kp_read(raw)
    assert rows == expected_rows(magic, records, 500)
    assert ours(decode_record_batches(raw, start_offset=0)) == rows
    if codec:
        assert struct.unpack_from(">q", raw)[0] == 699  # one wrapper at the last offset
        assert struct.unpack_from(">i", raw, 8)[0] == len(raw) - 12


def test_encode_accepts_arrow_columns_and_ignores_magic_0_timestamps() -> None:
    keys = pa.array([b"a", None, b"ccc"], pa.large_binary())
    values = pa.array(["1", None, "333"], pa.string())
    for magic in (0, 1):
        raw = encode_message_set(keys, values, magic=magic, timestamps=123)
        d = decode_record_batches(raw, start_offset=0)
        assert d.keys.to_pylist() == [b"a", None, b"ccc"]
        assert d.values.to_pylist() == [b"1", None, b"333"]
        assert d.timestamps.tolist() == ([123] * 3 if magic else [-1] * 3)
    raw = encode_message_set(None, [b"x"], magic=1)  # now
    assert decode_record_batches(raw, start_offset=0).timestamps[0] > 1_600_000_000_000


def test_encode_errors() -> None:
    with pytest.raises(ValueError):
        encode_message_set(None, [b"x"], magic=2)
    with pytest.raises(UnsupportedCodecError):
        encode_message_set(None, [b"x"], magic=1, compression="zstd")
    with pytest.raises(ValueError):
        encode_message_set(None, [], magic=0)
    with pytest.raises(ValueError):
        encode_message_set([b"k"], [b"a", b"b"], magic=1)
    with pytest.raises(ValueError):
        encode_message_set(None, [b"a"], magic=1, timestamps=[1, 2])


# ---------------------------------------------------------------------------------- semantics


def mixed() -> tuple[bytes, list[Row]]:
    """Old data stored long ago followed by newer formats, as a modern broker returns it."""
    parts: list[bytes] = []
    rows: list[Row] = []
    m0 = sample(3, seed=1)
    parts.append(kp_build(0, 0, m0, base_offset=0))
    rows += expected_rows(0, m0, 0)
    m1 = sample(3, seed=2)
    parts.append(kp_build(1, 1, m1, base_offset=3))
    rows += expected_rows(1, m1, 3)
    parts.append(encode_record_batch([b"k6", None, b"k8"], [b"v6", b"v7", None],
                                     timestamps=np.array([60, 70, 80]), base_offset=6,
                                     headers=[[("h", b"1")], None, []]))
    rows += [(6, 60, 0, b"k6", b"v6", [("h", b"1")]), (7, 70, 0, None, b"v7", None),
             (8, 80, 0, b"k8", None, None)]
    m0z = sample(2, seed=3)
    parts.append(kp_build(0, 2, m0z, base_offset=9))
    rows += expected_rows(0, m0z, 9)
    parts.append(encode_record_batch(None, [b"v11", b"v12"], timestamps=110, base_offset=11,
                                     compression="lz4"))
    rows += [(11, 110, 0, None, b"v11", None), (12, 110, 0, None, b"v12", None)]
    m1u = sample(1, seed=4)
    parts.append(kp_build(1, 0, m1u, base_offset=13))
    rows += expected_rows(1, m1u, 13)
    return b"".join(parts), rows


def test_mixed_response_decodes_in_order() -> None:
    data, rows = mixed()
    d = decode_record_batches(data, start_offset=0)
    assert ours(d) == rows
    assert d.next_offset == 14
    assert d.headers is not None and d.headers[6] == [("h", b"1")]
    for start in range(0, 15):
        for end in (None, start, start + 3, 14):
            d = decode_record_batches(data, start_offset=start, end_offset=end)
            assert ours(d) == [r for r in rows if r[0] >= start and (end is None or r[0] < end)]
            assert d.next_offset == 14  # every complete entry counts, in range or not


def test_start_and_end_inside_a_wrapper() -> None:
    for magic in (0, 1):
        raw = kp_build(magic, 1, sample(10), base_offset=20)
        d = decode_record_batches(raw, start_offset=23, end_offset=27)
        assert d.offsets.tolist() == [23, 24, 25, 26]
        assert d.next_offset == 30  # the whole wrapper was read
        assert decode_record_batches(raw, start_offset=30).next_offset == 30
        assert decode_record_batches(raw, start_offset=30).num_records == 0


def test_next_offset_of_wrappers() -> None:
    inner = b"".join(message(o, 0, None, b"x") for o in (50, 51, 52))
    # Magic 0: the last inner offset + 1 even if the wrapper offset says otherwise.
    d = decode_record_batches(wrapper(40, 0, 1, inner), start_offset=0)
    assert d.offsets.tolist() == [50, 51, 52] and d.next_offset == 53
    # Magic 1: the wrapper offset is the last one; relative inner offsets count back from it.
    inner1 = b"".join(message(o, 1, None, b"x", ts=1) for o in (0, 1, 2))
    d = decode_record_batches(wrapper(62, 1, 2, inner1, ts=1), start_offset=0)
    assert d.offsets.tolist() == [60, 61, 62] and d.next_offset == 63


def test_partial_trailing_message_is_ignored() -> None:
    first = kp_build(1, 0, sample(5), base_offset=0)
    for last, n in ((kp_build(1, 0, sample(1), base_offset=5), 1),
                    (kp_build(0, 1, sample(4), base_offset=5), 4)):
        data = first + last
        for cut in range(len(first), len(data)):
            d = decode_record_batches(data[:cut], start_offset=0)
            assert d.offsets.tolist() == [0, 1, 2, 3, 4], cut
            assert d.next_offset == 5
        d = decode_record_batches(data, start_offset=0)
        assert d.offsets.tolist() == list(range(5 + n)) and d.next_offset == 5 + n
    for cut in (0, 5, 12, 16, 20):
        d = decode_record_batches(first[:cut], start_offset=0)
        assert d.num_records == 0 and d.next_offset is None


def test_crc_mismatch_names_the_offset() -> None:
    data = bytearray(kp_build(1, 0, [(i, b"k", b"value %d" % i) for i in range(5)],
                              base_offset=10))
    data[-1] ^= 0x01  # the last message's value
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "CRC-32 mismatch.*offset 14") as info:
        decode_record_batches(bytes(data), start_offset=0, topic="old", partition=2)
    assert (info.value.topic, info.value.partition, info.value.offset) == ("old", 2, 14)
    d = decode_record_batches(bytes(data), start_offset=0, check_crcs=False)
    assert d.num_records == 5
    # Damage outside the requested range does not fail the read.
    assert decode_record_batches(bytes(data), start_offset=0, end_offset=14).num_records == 4
    # An inner message with a bad CRC, inside a wrapper whose own CRC is right.
    inner = bytearray(b"".join(message(o, 1, None, b"abc", ts=1) for o in range(3)))
    inner[-1] ^= 0x01
    raw = wrapper(102, 1, 1, bytes(inner), ts=1)
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "inner message.*offset 102"):
        decode_record_batches(raw, start_offset=0)
    assert decode_record_batches(raw, start_offset=0, check_crcs=False).num_records == 3
    # The wrapper's own CRC.
    bad = bytearray(kp_build(0, 1, sample(3), base_offset=7))
    bad[-3] ^= 0x10
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "CRC-32 mismatch.*offset 9"):
        decode_record_batches(bytes(bad), start_offset=0)


def _good_inner(magic: int) -> bytes:
    return b"".join(message(o, magic, b"k", b"v", ts=3) for o in range(2))


@pytest.mark.parametrize(
    ("raw", "reason", "error"),
    [
        (raw_message(5, b"\x01\x00" + b"\x00" * 8), "smaller than the 22 bytes",
         CorruptRecordError),
        (raw_message(5, b"\x00\x00" + i32(2**31 - 1) + b"kkk" + i32(1) + b"v"),
         "invalid key length 2147483647", CorruptRecordError),
        (raw_message(5, b"\x00\x00" + i32(-2) + b"k" + i32(1) + b"v"), "invalid key length -2",
         CorruptRecordError),
        (raw_message(5, b"\x00\x00" + i32(1) + b"k" + i32(-3) + b"v"), "invalid value length -3",
         CorruptRecordError),
        (raw_message(5, b"\x00\x00" + i32(1) + b"k" + i32(5) + b"v"), "invalid value length 5",
         CorruptRecordError),
        (raw_message(5, b"\x00\x00" + i32(1) + b"k" + i32(0) + b"v"), "invalid value length 0",
         CorruptRecordError),  # a trailing byte
        (raw_message(5, b"\x01\x00" + b"\x00" * 8 + i32(2**31 - 1) + i32(-1)),
         "invalid key length 2147483647", CorruptRecordError),
        (wrapper(5, 1, 1, _good_inner(0)), "magic 0 inside a compressed message of magic 1",
         CorruptRecordError),
        (wrapper(5, 0, 1, wrapper(0, 0, 2, _good_inner(0))), "nested", CorruptRecordError),
        (wrapper(5, 1, 3, b""), "holds no messages", CorruptRecordError),
        (wrapper(5, 0, 1, _good_inner(0)[:-3]), "truncated message", CorruptRecordError),
        (wrapper(5, 0, 1, _good_inner(0) + b"\x00" * 10), "truncated message", CorruptRecordError),
        (message(5, 1, None, None, attrs=1), "a compressed message needs a value",
         CorruptRecordError),
        (message(5, 0, None, b"not gzip", attrs=1), "cannot decompress gzip", CorruptRecordError),
        (message(5, 1, None, b"data", attrs=4), "zstd.*magic 2.*offset 5", UnsupportedCodecError),
        (message(5, 1, None, b"data", attrs=6), "codec id 6.*offset 5", UnsupportedCodecError),
        (struct.pack(">qi", 5, 3) + b"\x00" * 3, "too small to hold a magic", CorruptRecordError),
        (struct.pack(">qi", 5, -1) + b"\x00" * 20, "negative", CorruptRecordError),
        (message(5, 0, None, b"v")[:16] + b"\x03" + message(5, 0, None, b"v")[17:],
         "unknown record batch magic 3", CorruptRecordError),
    ],
)
def test_malformed_messages(raw: bytes, reason: str, error: type) -> None:
    good = message(4, 0, b"k", b"v")  # a valid message first: errors still name the bad one
    tracemalloc.start()
    try:
        with pytest.raises(error, match=reason) as info:
            decode_record_batches(good + raw, start_offset=0, topic="t", partition=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.offset == 5 and info.value.topic == "t"
    assert peak < 1_000_000


def test_lying_sizes_do_not_allocate() -> None:
    claim = struct.pack(">qi", 0, 2**31 - 1) + message(0, 1, None, b"x", ts=1)[12:]
    tracemalloc.start()
    try:
        d = decode_record_batches(claim, start_offset=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert d.num_records == 0 and d.next_offset is None
    assert peak < 1_000_000


@pytest.mark.parametrize("codec", CODECS[1:])
def test_wrapper_decompression_is_bounded(codec: int) -> None:
    inner = b"".join(message(o, 1, None, b"\x00" * 100_000, ts=1) for o in range(20))
    raw = wrapper(19, 1, codec, inner, ts=1)
    assert len(raw) < 100_000
    assert decode_record_batches(raw, start_offset=0).num_records == 20
    tracemalloc.start()
    try:
        with raises_condition(DecompressionLimitError, "KAFKAWIRE_PROTOCOL.DECOMPRESSION_LIMIT",
                              "kafka.fetch.max.decompressed.bytes.*offset 19"):
            decode_record_batches(raw, start_offset=0, max_decompressed_size=500_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000


# ---------------------------------------------------------------------------------- fuzzing

rec_st = st.tuples(st.integers(0, 2**41), st.one_of(st.none(), st.binary(max_size=20)),
                   st.one_of(st.none(), st.binary(max_size=60)))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rec_st, min_size=1, max_size=20), st.sampled_from([0, 1]),
       st.sampled_from(CODECS), st.integers(0, 2**40), st.data())
def test_round_trip_property(records: list[Rec], magic: int, codec: int, base: int,
                             data: Any) -> None:
    raw = ours_encode(magic, codec, records, base_offset=base)
    expected = expected_rows(magic, records, base)
    if not (magic == 0 and codec == 3):  # kafka-python needs xxhash for that one
        assert kp_read(raw) == expected
    start = data.draw(st.integers(base, base + len(records)))
    end = data.draw(st.one_of(st.none(), st.integers(start, base + len(records))))
    d = decode_record_batches(raw, start_offset=start, end_offset=end)
    assert ours(d) == [r for r in expected if r[0] >= start and (end is None or r[0] < end)]


def _corpus() -> list[bytes]:
    out = [kp_build(m, c, sample(6, seed=m * 10 + c), base_offset=20 * (m * 4 + c))
           for m in (0, 1) for c in (0, 1, 2) if not (m == 0 and c == 3)]
    out.append(ours_encode(0, 3, sample(5), 300) + ours_encode(1, 3, sample(5), 305))
    out.append(mixed()[0])
    return out


CORPUS = _corpus()


def _refix_crcs(data: bytes) -> bytes:
    """Recompute the CRC of every complete top-level legacy message and v2 batch."""
    buf = bytearray(data)
    pos = 0
    while len(buf) - pos >= 17:
        size = struct.unpack_from(">i", buf, pos + 8)[0]
        end = pos + 12 + size
        if size < 5 or end > len(buf):
            break
        if buf[pos + 16] in (0, 1):
            struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16:end])))
        elif buf[pos + 16] == 2 and size >= 49:
            struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21:end])))
        pos = end
    return bytes(buf)


def _only_protocol_errors(data: bytes, **kw: Any) -> None:
    try:
        d = decode_record_batches(data, start_offset=0, max_decompressed_size=1 << 20, **kw)
    except ProtocolError:
        return
    ours(d)  # whatever decodes is self-consistent


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CORPUS), st.data())
def test_mutations_only_raise_protocol_errors(base: bytes, data: Any) -> None:
    buf = bytearray(base)
    for _ in range(data.draw(st.integers(1, 4))):
        if not buf:
            break
        kind = data.draw(st.sampled_from(["flip", "byte", "truncate", "insert", "delete"]))
        i = data.draw(st.integers(0, len(buf) - 1))
        if kind == "flip":
            buf[i] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "byte":
            buf[i] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF,
                                                data.draw(st.integers(0, 255))]))
        elif kind == "truncate":
            del buf[i:]
        elif kind == "insert":
            buf[i:i] = data.draw(st.binary(min_size=1, max_size=4))
        else:
            del buf[i:i + data.draw(st.integers(1, 4))]
    _only_protocol_errors(bytes(buf))
    _only_protocol_errors(bytes(buf), check_crcs=False)
    _only_protocol_errors(_refix_crcs(bytes(buf)))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([0, 1]), st.sampled_from(CODECS[1:]), st.binary(max_size=300),
       st.booleans())
def test_garbage_inside_compressed_wrappers(magic: int, codec: int, garbage: bytes,
                                            valid_prefix: bool) -> None:
    """Whatever a (valid) compressed value holds, only ProtocolError escapes."""
    prefix = _good_inner(magic) if valid_prefix else b""
    raw = wrapper(9, magic, codec, prefix + garbage, ts=2)
    _only_protocol_errors(raw)
    _only_protocol_errors(raw, check_crcs=False)
