"""Codec registry: gzip round trips, multi-member streams, bounded output, clear refusals."""

from __future__ import annotations

import gzip
import os
import tracemalloc
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.codec import gzip_decode as kafka_python_gzip_decode
from kafka.codec import gzip_encode as kafka_python_gzip_encode

from spark_kafka_wire.protocol.compression import (
    CODEC_NAMES,
    DecompressionBombError,
    UnsupportedCodecError,
    codec_id,
    codec_name,
    compress,
    decompress,
    is_supported,
)
from spark_kafka_wire.protocol.errors import ProtocolError

MB = 1024 * 1024


def test_codec_names_are_kafka_ids() -> None:
    assert CODEC_NAMES == {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    assert codec_id("GZIP") == 1
    assert codec_id(4) == 4
    assert codec_name(3) == "lz4"
    assert is_supported(0) and is_supported(1)
    with pytest.raises(UnsupportedCodecError, match="unknown compression codec 'brotli'"):
        codec_id("brotli")


@pytest.mark.parametrize("codec", [0, 1])
@pytest.mark.parametrize("data", [b"", b"x", os.urandom(3000), b"abc" * 100_000])
def test_round_trip(codec: int, data: bytes) -> None:
    packed = compress(codec, data)
    assert decompress(codec, packed, max_size=len(data)) == data
    assert decompress(codec, memoryview(packed), max_size=len(data) + 10) == data


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
    with pytest.raises(DecompressionBombError, match="limit of 999 bytes"):
        decompress(1, packed, max_size=999)
    # The limit spans members too.
    two = packed + packed
    assert len(decompress(1, two, max_size=2000)) == 2000
    with pytest.raises(DecompressionBombError):
        decompress(1, two, max_size=1999)


def test_none_codec_respects_limit() -> None:
    assert decompress(0, b"abc", max_size=3) == b"abc"
    with pytest.raises(DecompressionBombError):
        decompress(0, b"abcd", max_size=3)


def test_decompression_bomb_does_not_allocate() -> None:
    # 1 GiB of zeros in about 1 MiB of gzip. After a full flush the deflate state resets, so
    # the compressed form of each further 16 MiB chunk is the same bytes: repeat them.
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\x00" * (16 * MB)
    first = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    bomb = first + again * 63 + c.flush()
    assert len(bomb) < 2 * MB
    tracemalloc.start()
    try:
        with pytest.raises(DecompressionBombError) as info:
            decompress(1, bomb, max_size=4 * MB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(info.value, ProtocolError)
    assert peak < 16 * MB


@pytest.mark.parametrize(
    "bad",
    [
        b"not gzip at all",
        gzip.compress(b"hello world" * 100)[:-9],  # truncated inside the stream
        gzip.compress(b"hello world" * 100)[:5],  # truncated header
        b"",
        gzip.compress(b"x") + b"garbage after the member",
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


@pytest.mark.parametrize(("codec", "name"), [(2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_codecs_not_implemented_yet_are_refused_clearly(codec: int, name: str) -> None:
    assert not is_supported(codec)
    with pytest.raises(UnsupportedCodecError, match=f"{name}.*not supported yet"):
        compress(codec, b"data")
    with pytest.raises(UnsupportedCodecError, match=f"{name}.*not supported yet"):
        decompress(codec, b"data", max_size=100)
    assert issubclass(UnsupportedCodecError, ProtocolError)


@pytest.mark.parametrize("codec", [5, 7, -1])
def test_unknown_codec_ids(codec: int) -> None:
    with pytest.raises(UnsupportedCodecError, match="unknown compression codec id"):
        decompress(codec, b"", max_size=1)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 400))
def test_gzip_fuzz_only_protocol_errors(data: bytes, limit: int) -> None:
    try:
        decompress(1, data, max_size=limit)
    except ProtocolError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000), st.integers(0, 3000))
def test_gzip_round_trip_or_limit(data: bytes, limit: int) -> None:
    packed = compress(1, data)
    if len(data) <= limit:
        assert decompress(1, packed, max_size=limit) == data
    else:
        with pytest.raises(DecompressionBombError):
            decompress(1, packed, max_size=limit)
