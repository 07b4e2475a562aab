"""Codec registry: every Kafka codec round trips, reads what other clients write (snappy
framings, the lz4 magic-0 checksum quirk, zstd without content size), and output is bounded."""

from __future__ import annotations

import gzip
import io
import os
import struct
import tracemalloc
import zlib

import cramjam
import lz4.block
import lz4.frame
import pyarrow as pa
import pytest
import xxhash
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.codec import gzip_decode as kafka_python_gzip_decode
from kafka.codec import gzip_encode as kafka_python_gzip_encode

from spark_kafka_wire.protocol.compression import (
    CODEC_NAMES,
    DecompressionBombError,
    UnsupportedCodecError,
    _xxh32,
    codec_id,
    codec_name,
    compress,
    decompress,
    is_supported,
)
from spark_kafka_wire.protocol.errors import ProtocolError
from tests.support.errors import raises_condition

MB = 1024 * 1024
XERIAL_MAGIC = b"\x82SNAPPY\x00"
# (codec, magic) pairs Kafka allows: zstd only with the v2 format.
ALL = [(c, m) for c in (0, 1, 2, 3, 4) for m in (0, 1, 2) if not (c == 4 and m < 2)]
COMPRESSING = [(c, m) for c, m in ALL if c]
TEXT = b"".join(b"record %06d: the quick brown fox jumps over the lazy dog\n" % i
                for i in range(4000))  # ~230 KB: several lz4 and xerial blocks


def xxh32(data: bytes) -> int:
    return xxhash.xxh32_intdigest(data)


def kafka3160_frame(data: bytes, **kw: object) -> bytes:
    """An LZ4 frame as Kafka < 0.10 wrote it: header checksum over magic + FLG + BD."""
    frame = bytearray(lz4.frame.compress(data, block_linked=False, store_size=False, **kw))
    assert len(frame) > 7 and frame[6] == (xxh32(bytes(frame[4:6])) >> 8) & 0xFF
    frame[6] = (xxh32(bytes(frame[:6])) >> 8) & 0xFF
    assert frame[6] != (xxh32(bytes(frame[4:6])) >> 8) & 0xFF  # the quirk makes a difference
    return bytes(frame)


# ---------------------------------------------------------------------------------- registry


def test_codec_names_are_kafka_ids() -> None:
    assert CODEC_NAMES == {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    assert codec_id("GZIP") == 1
    assert codec_id(4) == 4
    assert codec_name(3) == "lz4"
    assert all(is_supported(c) for c in range(5))
    assert is_supported(3, magic=0) and not is_supported(4, magic=1) and not is_supported(5)
    with raises_condition(UnsupportedCodecError, "KAFKAWIRE_PROTOCOL.UNSUPPORTED_CODEC",
                          "unknown compression codec 'brotli'"):
        codec_id("brotli")


@pytest.mark.parametrize(("codec", "magic"), ALL)
@pytest.mark.parametrize("data", [b"", b"x", os.urandom(3000), b"abc" * 100_000, TEXT])
def test_round_trip(codec: int, magic: int, data: bytes) -> None:
    packed = compress(codec, data, magic=magic)
    assert decompress(codec, packed, max_size=len(data), magic=magic) == data
    assert decompress(codec, memoryview(packed), max_size=len(data) + 10, magic=magic) == data
    if data:
        with pytest.raises(DecompressionBombError):
            decompress(codec, packed, max_size=len(data) - 1, magic=magic)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_output_of_other_clients(codec: int) -> None:
    """kafka-python's codecs (Java-compatible framings) both ways."""
    encode, decode = {
        1: (kafka_codec.gzip_encode, kafka_codec.gzip_decode),
        2: (kafka_codec.snappy_encode, kafka_codec.snappy_decode),
        3: (kafka_codec.lz4_encode, kafka_codec.lz4_decode),
        4: (kafka_codec.zstd_encode, kafka_codec.zstd_decode),
    }[codec]
    assert decompress(codec, encode(TEXT), max_size=len(TEXT)) == TEXT
    assert decode(compress(codec, TEXT)) == TEXT


def test_zstd_and_magic_0_1_are_refused() -> None:
    for magic in (0, 1):
        with raises_condition(UnsupportedCodecError, "KAFKAWIRE_PROTOCOL.UNSUPPORTED_CODEC",
                              "magic 2"):
            compress(4, b"data", magic=magic)
        with raises_condition(UnsupportedCodecError, "KAFKAWIRE_PROTOCOL.UNSUPPORTED_CODEC",
                              "magic 2"):
            decompress(4, compress(4, b"data"), max_size=100, magic=magic)
    with pytest.raises(ValueError):
        compress(1, b"x", magic=3)
    with pytest.raises(ValueError):
        decompress(1, b"x", max_size=1, magic=-1)
    assert issubclass(UnsupportedCodecError, ProtocolError)


@pytest.mark.parametrize("codec", [5, 7, -1])
def test_unknown_codec_ids(codec: int) -> None:
    with raises_condition(UnsupportedCodecError, "KAFKAWIRE_PROTOCOL.UNSUPPORTED_CODEC",
                          "unknown compression codec id"):
        decompress(codec, b"", max_size=1)


def test_none_codec_respects_limit() -> None:
    assert decompress(0, b"abc", max_size=3) == b"abc"
    with pytest.raises(DecompressionBombError):
        decompress(0, b"abcd", max_size=3)


# ---------------------------------------------------------------------------------- gzip


def test_gzip_interoperates_with_stdlib_and_kafka_python() -> None:
    data = b"spark-kafka-wire " * 5000
    ours = compress(1, data)
    assert gzip.decompress(ours) == data
    assert kafka_python_gzip_decode(ours) == data
    assert decompress(1, gzip.compress(data, mtime=0), max_size=len(data)) == data
    assert decompress(1, kafka_python_gzip_encode(data), max_size=len(data)) == data
    # Level is honoured and output is deterministic (mtime 0).
    assert compress(1, data) == compress(1, data)
    assert len(compress(1, data, level=1)) >= len(compress(1, data, level=9))


def test_gzip_concatenated_members_and_zero_padding() -> None:
    parts = [b"first member ", b"", b"second member " * 50, os.urandom(100)]
    stream = b"".join(gzip.compress(p) for p in parts)
    assert decompress(1, stream, max_size=MB) == b"".join(parts)
    assert decompress(1, stream + b"\x00" * 7, max_size=MB) == b"".join(parts)


def test_gzip_output_limit_is_exact() -> None:
    data = b"a" * 1000
    packed = compress(1, data)
    assert decompress(1, packed, max_size=1000) == data
    with raises_condition(DecompressionBombError, "KAFKAWIRE_PROTOCOL.DECOMPRESSION_BOMB",
                          "limit of 999 bytes"):
        decompress(1, packed, max_size=999)
    # The limit spans members too.
    two = packed + packed
    assert len(decompress(1, two, max_size=2000)) == 2000
    with pytest.raises(DecompressionBombError):
        decompress(1, two, max_size=1999)


@pytest.mark.parametrize(
    "bad",
    [
        b"not gzip at all",
        gzip.compress(b"hello world" * 100, mtime=0)[:-9],  # truncated inside the stream
        gzip.compress(b"hello world" * 100, mtime=0)[:5],  # truncated header
        b"",
        gzip.compress(b"x", mtime=0) + b"garbage after the member",
    ],
)
def test_gzip_garbage_raises_protocol_error(bad: bytes) -> None:
    with pytest.raises(ProtocolError):
        decompress(1, bad, max_size=MB)


def test_gzip_bad_checksum_raises() -> None:
    packed = bytearray(gzip.compress(b"payload" * 100))
    packed[-6] ^= 0xFF  # CRC32 trailer
    with pytest.raises(ProtocolError):
        decompress(1, bytes(packed), max_size=MB)


# ---------------------------------------------------------------------------------- snappy


def test_snappy_raw_is_written_for_magic_2_and_xerial_for_legacy() -> None:
    raw = compress(2, TEXT, magic=2)
    assert not raw.startswith(XERIAL_MAGIC)
    assert bytes(cramjam.snappy.decompress_raw(raw)) == TEXT
    for magic in (0, 1):
        framed = compress(2, TEXT, magic=magic)
        assert framed[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
        # 32 KiB blocks like snappy-java: several {int32 length, raw block} chunks.
        p, blocks = 16, []
        while p < len(framed):
            (size,) = struct.unpack_from(">i", framed, p)
            blocks.append(bytes(cramjam.snappy.decompress_raw(framed[p + 4:p + 4 + size])))
            p += 4 + size
        assert p == len(framed) and b"".join(blocks) == TEXT
        assert [len(b) for b in blocks[:-1]] == [32 * 1024] * (len(blocks) - 1)
        assert kafka_codec.snappy_decode(framed) == TEXT


def test_snappy_xerial_with_several_chunks_and_raw() -> None:
    framed = kafka_codec.snappy_encode(TEXT, xerial_compatible=True, xerial_blocksize=10_000)
    assert framed.startswith(XERIAL_MAGIC) and len(TEXT) // 10_000 > 20
    assert decompress(2, framed, max_size=len(TEXT)) == TEXT
    assert decompress(2, framed, max_size=len(TEXT), magic=0) == TEXT
    # Version fields are not checked (some producers write them little-endian).
    le = XERIAL_MAGIC + struct.pack("<ii", 1, 1) + framed[16:]
    assert decompress(2, le, max_size=len(TEXT)) == TEXT
    # Hand-made: two chunks, one empty, one of an empty block.
    chunks = [b"first chunk " * 10, b"", b"second"]
    hand = XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"".join(
        struct.pack(">i", len(c)) + c for c in
        (bytes(cramjam.snappy.compress_raw(x)) if x else b"" for x in chunks))
    assert decompress(2, hand, max_size=1000) == b"".join(chunks)
    assert decompress(2, XERIAL_MAGIC + struct.pack(">ii", 1, 1), max_size=0) == b""
    raw = kafka_codec.snappy_encode(TEXT, xerial_compatible=False)
    assert decompress(2, raw, max_size=len(TEXT)) == TEXT


@pytest.mark.parametrize(
    "bad",
    [
        b"",  # no length header
        b"\xff\xff\xff\xff\xff\xff",  # overlong length varint
        bytes(cramjam.snappy.compress_raw(TEXT))[:-20],  # truncated block
        b"\x0a" + b"\x00" * 3,  # declares 10 bytes, holds garbage
        XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", 100) + b"short",
        XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", -1),
        XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"\x00\x00",  # cut inside a length
    ],
)
def test_snappy_garbage_raises_protocol_error(bad: bytes) -> None:
    with pytest.raises(ProtocolError):
        decompress(2, bad, max_size=MB)


def test_snappy_declared_lengths_are_checked_before_allocating() -> None:
    huge = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10  # declares 4 GiB - 1
    blocks = struct.pack(">i", 6) + b"\xfe\xff\xff\xff\x07\x00"  # declares 2 GiB - 2
    framed = XERIAL_MAGIC + struct.pack(">ii", 1, 1) + blocks * 4
    tracemalloc.start()
    try:
        for data in (huge, framed):
            with pytest.raises(DecompressionBombError):
                decompress(2, data, max_size=4 * MB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MB


# ---------------------------------------------------------------------------------- lz4


def test_xxh32_matches_the_reference() -> None:
    for n in [*range(0, 40), 100, 1000]:
        data = os.urandom(n)
        assert _xxh32(data) == xxh32(data), n


def test_lz4_written_like_java() -> None:
    for magic in (0, 1, 2):
        frame = compress(3, TEXT, magic=magic)
        # magic, FLG (version 1, independent blocks, nothing optional), BD (64 KiB blocks)
        assert frame[:6] == b"\x04\x22\x4d\x18\x60\x40"
        covered = frame[:6] if magic == 0 else frame[4:6]
        assert frame[6] == (xxh32(covered) >> 8) & 0xFF
    assert lz4.frame.decompress(compress(3, TEXT, magic=1)) == TEXT
    with pytest.raises(RuntimeError):  # a standard reader sees the quirk as corruption
        lz4.frame.decompress(compress(3, TEXT, magic=0))
    assert kafka_codec.lz4_decode_old_kafka(compress(3, TEXT, magic=0)) == TEXT


def test_lz4_kafka_3160_header_checksum_is_ignored_for_magic_0_only() -> None:
    quirky = kafka3160_frame(TEXT)
    assert decompress(3, quirky, max_size=len(TEXT), magic=0) == TEXT
    for magic in (1, 2):
        with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", "descriptor checksum"):
            decompress(3, quirky, max_size=len(TEXT), magic=magic)
    correct = lz4.frame.compress(TEXT, block_linked=False)
    for magic in (0, 1, 2):  # magic 0 ignores the checksum, right or wrong
        assert decompress(3, correct, max_size=len(TEXT), magic=magic) == TEXT
    assert decompress(3, kafka_codec.lz4_encode_old_kafka(TEXT), len(TEXT), magic=0) == TEXT


@pytest.mark.parametrize("options", [
    {"store_size": True},
    {"content_checksum": True},
    {"block_checksum": True},
    {"block_size": lz4.frame.BLOCKSIZE_MAX4MB, "store_size": True},
    {"block_size": lz4.frame.BLOCKSIZE_MAX256KB, "compression_level": 9},
])
def test_lz4_frame_options(options: dict) -> None:
    data = TEXT + os.urandom(70_000)  # an incompressible tail: stored (uncompressed) blocks
    frame = lz4.frame.compress(data, block_linked=False, **options)
    assert decompress(3, frame, max_size=len(data)) == data
    two = frame + lz4.frame.compress(b"second frame", block_linked=False)
    assert decompress(3, two, max_size=len(data) + 12) == data + b"second frame"


def _lz4_frame(flg: int, bd: int, rest: bytes, content_size: int | None = None) -> bytes:
    """A hand-made LZ4 frame with a correct header checksum."""
    descriptor = bytes([flg, bd]) + (struct.pack("<Q", content_size)
                                     if content_size is not None else b"")
    return b"\x04\x22\x4d\x18" + descriptor + bytes([(_xxh32(descriptor) >> 8) & 0xFF]) + rest


_ABC_BLOCK = lz4.block.compress(b"abc" * 10, store_size=False)


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"", "empty"),
        (b"\x04\x22\x4d\x18\x60", "truncated frame header"),
        (b"\x05\x22\x4d\x18\x60\x40\x82\x00\x00\x00\x00", "bad magic number"),
        (lz4.frame.compress(TEXT, block_linked=True), "linked blocks"),
        (lz4.frame.compress(TEXT, block_linked=False)[:-30], "truncated block"),
        (lz4.frame.compress(TEXT, block_linked=False)[:-4], "no end mark"),
        (lz4.frame.compress(b"abc", block_linked=False) + b"junk", "truncated frame header"),
        (_lz4_frame(0xA0, 0x40, b"\0\0\0\0"), "frame version 2"),
        (_lz4_frame(0x61, 0x40, b"\0\0\0\0"), "unsupported frame descriptor"),
        (_lz4_frame(0x60, 0x30, b"\0\0\0\0"), "unsupported frame descriptor"),
        (_lz4_frame(0x60, 0x40, struct.pack("<I", 70_000) + b"\0" * 70_004), "exceeds"),
        (_lz4_frame(0x60, 0x40, struct.pack("<I", 8) + b"\xff" * 8 + b"\0\0\0\0"),
         "invalid lz4 data"),
        (_lz4_frame(0x68, 0x40, struct.pack("<I", len(_ABC_BLOCK)) + _ABC_BLOCK + b"\0\0\0\0",
                    content_size=31), "declared 31 bytes but holds 30"),
        (_lz4_frame(0x64, 0x40, struct.pack("<I", len(_ABC_BLOCK)) + _ABC_BLOCK + b"\0\0\0\0"),
         "truncated checksum"),
    ],
)
def test_lz4_garbage_raises_protocol_error(bad: bytes, reason: str) -> None:
    for magic in (0, 2):
        with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", reason):
            decompress(3, bad, max_size=MB, magic=magic)
    good = _lz4_frame(0x68, 0x40, struct.pack("<I", len(_ABC_BLOCK)) + _ABC_BLOCK + b"\0\0\0\0",
                      content_size=30)
    assert decompress(3, good, max_size=30) == b"abc" * 10


# ---------------------------------------------------------------------------------- zstd


def zstd_stream(data: bytes, chunks: int = 7) -> bytes:
    """zstd as Java's ZstdOutputStream writes it: streaming, no content size in the header."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False) as w:
        step = max(1, len(data) // chunks)
        for i in range(0, len(data), step):
            w.write(data[i:i + step])
    return out.getvalue()


def test_zstd_frames_without_content_size() -> None:
    frame = zstd_stream(TEXT)
    assert zstandard.frame_content_size(frame) == -1
    assert decompress(4, frame, max_size=len(TEXT)) == TEXT
    with pytest.raises(DecompressionBombError):
        decompress(4, frame, max_size=len(TEXT) - 1)
    # Several frames, with and without content size, and an empty frame.
    many = frame + zstandard.ZstdCompressor().compress(b"tail") + zstd_stream(b"")
    assert decompress(4, many, max_size=len(TEXT) + 4) == TEXT + b"tail"


@pytest.mark.parametrize(
    "bad",
    [
        b"",
        b"not zstd",
        zstd_stream(TEXT)[:-10],  # truncated
        zstandard.ZstdCompressor().compress(b"x") + b"junk",
        zstandard.ZstdCompressor(write_checksum=True).compress(TEXT)[:-1] + b"\x00",
    ],
)
def test_zstd_garbage_raises_protocol_error(bad: bytes) -> None:
    with pytest.raises(ProtocolError):
        decompress(4, bad, max_size=MB)


def test_zstd_declared_content_size_is_not_trusted() -> None:
    honest = zstandard.ZstdCompressor(level=3).compress(b"small" * 10)
    params = zstandard.get_frame_parameters(honest)
    assert params.content_size == 50 and honest[4] & 0x20  # single segment, 1-byte size
    assert decompress(4, honest, max_size=50) == b"small" * 10
    with pytest.raises(DecompressionBombError):
        decompress(4, honest, max_size=49)
    lying = honest[:5] + bytes([255]) + honest[6:]  # declares 255 bytes, holds 50
    assert zstandard.get_frame_parameters(lying).content_size == 255
    with pytest.raises(ProtocolError):
        decompress(4, lying, max_size=1000)


# ---------------------------------------------------------------------------------- bombs


def _gzip_bomb() -> bytes:
    # 1 GiB of zeros in about 1 MiB of gzip. After a full flush the deflate state resets, so
    # the compressed form of each further 16 MiB chunk is the same bytes: repeat them.
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\x00" * (16 * MB)
    first = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    return first + again * 63 + c.flush()


def _snappy_bomb() -> bytes:
    block = bytes(cramjam.snappy.compress_raw(b"\x00" * (4 * MB)))  # ~190 KB each
    return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(block))
                                                      + block) * 8


def _lz4_bomb() -> bytes:
    # lz4 expands at most ~255x: 64 MiB of zeros in 4 MiB blocks is ~260 KB.
    return lz4.frame.compress(b"\x00" * (64 * MB), block_linked=False, store_size=False,
                              block_size=lz4.frame.BLOCKSIZE_MAX4MB)


def _zstd_bomb() -> bytes:
    c = zstandard.ZstdCompressor(level=1).compressobj()
    chunk = b"\x00" * (16 * MB)
    return b"".join([c.compress(chunk) for _ in range(64)] + [c.flush()])  # 1 GiB in ~32 KB


@pytest.mark.parametrize(("codec", "make", "magic"), [
    (1, _gzip_bomb, 2), (2, _snappy_bomb, 0), (3, _lz4_bomb, 0), (3, _lz4_bomb, 2),
    (4, _zstd_bomb, 2),
])
def test_decompression_bombs_are_bounded(codec: int, make, magic: int) -> None:
    bomb = make()
    assert len(bomb) < 2 * MB
    # Python's allocations (tracemalloc) and Arrow's memory pool (zstd decodes into it),
    # seen through a proxy pool that keeps its own peak
    default_pool = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(default_pool)
    pa.set_memory_pool(pool)
    tracemalloc.start()
    try:
        with pytest.raises(DecompressionBombError) as info:
            decompress(codec, bomb, max_size=4 * MB, magic=magic)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        pa.set_memory_pool(default_pool)
    assert isinstance(info.value, ProtocolError)
    assert peak + pool.max_memory() < 16 * MB


def test_zstd_decodes_into_one_byte_view_whatever_the_frames_declare() -> None:
    """Frames that declare their size are decoded into a buffer of that size, frames that do
    not (Java's streaming zstd) into one sized by the last ratio, grown when too small: the
    result is always one unsigned byte view of exactly the decoded bytes."""
    declared = zstandard.ZstdCompressor().compress(TEXT)
    streamed = zstd_stream(TEXT)
    for data, expected in ((declared, TEXT), (streamed, TEXT),
                           (declared + streamed, TEXT * 2),  # the first frame declares half
                           # an empty first frame declares 0 bytes: the buffer still grows
                           (zstandard.ZstdCompressor().compress(b"") + declared, TEXT),
                           (zstd_stream(b"\x00" * (8 * MB)), b"\x00" * (8 * MB))):
        out = decompress(4, data, max_size=len(expected))
        view = memoryview(out)
        assert view.format == "B" and view[0] == expected[0]
        assert bytes(out) == expected
    # a frame that declares less than it holds (only its bytes are counted) is refused
    lying = bytearray(zstandard.ZstdCompressor().compress(b"small" * 10))
    lying[5] = 20
    with pytest.raises(ProtocolError):
        decompress(4, bytes(lying), max_size=1000)


# ---------------------------------------------------------------------------------- fuzzing


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL), st.binary(max_size=300), st.integers(0, 400))
def test_garbage_only_raises_protocol_errors(cm: tuple[int, int], data: bytes,
                                             limit: int) -> None:
    codec, magic = cm
    try:
        decompress(codec, data, max_size=limit, magic=magic)
    except ProtocolError:
        pass


def _corpus() -> list[tuple[int, int, bytes]]:
    out = []
    for codec, magic in COMPRESSING:
        out.append((codec, magic, compress(codec, TEXT[:5000] + os.urandom(300), magic=magic)))
    out.append((2, 1, kafka_codec.snappy_encode(TEXT[:30_000], xerial_blocksize=4096)))
    out.append((4, 2, zstd_stream(TEXT[:20_000])))
    return out


CORPUS = _corpus()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CORPUS), st.data())
def test_damaged_streams_only_raise_protocol_errors(entry: tuple[int, int, bytes],
                                                    data: st.DataObject) -> None:
    codec, magic, packed = entry
    buf = bytearray(packed)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(buf) - 1))
        kind = data.draw(st.sampled_from(["flip", "byte", "truncate"]))
        if kind == "flip":
            buf[i] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "byte":
            buf[i] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
        else:
            del buf[i:]
            if not buf:
                break
    try:
        out = decompress(codec, bytes(buf), max_size=64 * 1024, magic=magic)
    except ProtocolError:
        return
    assert len(out) <= 64 * 1024


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(COMPRESSING), st.binary(max_size=2000), st.integers(0, 3000))
def test_round_trip_or_limit(cm: tuple[int, int], data: bytes, limit: int) -> None:
    codec, magic = cm
    packed = compress(codec, data, magic=magic)
    if len(data) <= limit:
        assert decompress(codec, packed, max_size=limit, magic=magic) == data
    else:
        with pytest.raises(DecompressionBombError):
            decompress(codec, packed, max_size=limit, magic=magic)


def test_lz4_block_library_error_type() -> None:
    # The decoder relies on lz4.block raising LZ4BlockError for corrupt blocks.
    with pytest.raises(lz4.block.LZ4BlockError):
        lz4.block.decompress(b"\xff" * 8, uncompressed_size=100)
