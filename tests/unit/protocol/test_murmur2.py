"""murmur2 must match the Java client bit for bit, scalar and vectorized."""

from __future__ import annotations

import random
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from spark_kafka_wire.protocol.murmur2 import (
    murmur2,
    murmur2_array,
    partition_for_key,
    partitions_for_keys,
)

# Signed int32 results from the Java client's UtilsTest.
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}
# librdkafka's murmur2 unit test (uint32 view).
LIBRDKAFKA_VECTORS = {b"kafka": 0xD067CF64, b"": 0x106E08D9}


@pytest.mark.parametrize(("key", "expected"), JAVA_VECTORS.items())
def test_java_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected
    assert murmur2_array(pa.array([key], pa.binary()))[0] == expected


@pytest.mark.parametrize(("key", "expected"), LIBRDKAFKA_VECTORS.items())
def test_librdkafka_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) & 0xFFFFFFFF == expected
    assert int(murmur2_array(pa.array([key], pa.binary()))[0]) & 0xFFFFFFFF == expected


def test_high_bytes_in_tail_have_no_sign_extension() -> None:
    # Java reads tail bytes with & 0xff; keys whose tail bytes are >= 0x80 exercise it.
    for key in [b"\xff", b"\x80\x81", b"\xfe\xfd\xfc", b"abcd\xff\xfe\xfd"]:
        assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)


def _random_keys(n: int, seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    return [rnd.randbytes(rnd.randint(0, 100)) for _ in range(n)]


def test_matches_kafka_python_on_random_keys() -> None:
    keys = _random_keys(5000, 1)
    expected = np.array([kafka_python_murmur2(k) for k in keys], np.uint32)
    scalar = np.array([murmur2(k) for k in keys], np.int64) & 0xFFFFFFFF
    assert (scalar == expected).all()
    vector = murmur2_array(pa.array(keys, pa.binary()))
    assert vector.dtype == np.int32
    assert (vector.view(np.uint32) == expected).all()


def test_partition_for_key_matches_java_formula() -> None:
    for key in _random_keys(500, 2):
        for n in (1, 3, 12, 100):
            expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % n
            assert partition_for_key(key, n) == expected
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)


@pytest.mark.parametrize(
    "array_type", [pa.binary(), pa.large_binary(), pa.string(), pa.large_string()]
)
def test_array_types(array_type: pa.DataType) -> None:
    keys = [b"foobar", b"21", b"", b"abc", b"a-little-bit-long-string"]
    values = [k.decode() for k in keys] if array_type in (pa.string(), pa.large_string()) \
        else keys
    result = murmur2_array(pa.array(values, array_type))
    assert result.tolist() == [murmur2(k) for k in keys]


def test_sliced_chunked_and_empty_arrays() -> None:
    keys = _random_keys(300, 3)
    arr = pa.array(keys, pa.binary())
    expected = [murmur2(k) for k in keys]
    assert murmur2_array(arr.slice(17, 200)).tolist() == expected[17:217]
    chunked = pa.chunked_array([arr.slice(0, 100), arr.slice(100)])
    assert murmur2_array(chunked).tolist() == expected
    assert murmur2_array(pa.array([], pa.binary())).tolist() == []
    assert murmur2_array(pa.array([b""] * 3, pa.binary())).tolist() == [murmur2(b"")] * 3


def test_partitions_for_keys_marks_null_keys() -> None:
    keys = pa.array([b"foobar", None, b"abc", None, b""], pa.binary())
    parts = partitions_for_keys(keys, 7)
    assert parts.dtype == np.int32
    assert parts.tolist() == [
        partition_for_key(b"foobar", 7), -1, partition_for_key(b"abc", 7), -1,
        partition_for_key(b"", 7),
    ]
    # Also on a chunked column with nulls in several chunks.
    chunked = pa.chunked_array([keys.slice(0, 2), keys.slice(2)])
    assert partitions_for_keys(chunked, 7).tolist() == parts.tolist()
    with pytest.raises(ValueError):
        partitions_for_keys(keys, 0)


def test_null_slots_with_data_do_not_break_neighbours() -> None:
    # Arrow allows a null slot to span bytes; hashing must ignore them without misreading.
    data = b"foobarXXXXabc"
    offsets = np.array([0, 6, 10, 13], np.int32)
    validity = np.packbits(np.array([1, 0, 1], bool), bitorder="little")
    arr = pa.Array.from_buffers(
        pa.binary(), 3, [pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    parts = partitions_for_keys(arr, 5)
    assert parts.tolist() == [partition_for_key(b"foobar", 5), -1, partition_for_key(b"abc", 5)]


def test_rejects_non_binary_arrays() -> None:
    with pytest.raises(TypeError):
        murmur2_array(pa.array([1, 2, 3]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=40))
def test_vectorized_equals_scalar(keys: list[bytes | None]) -> None:
    arr = pa.array(keys, pa.binary())
    hashes = murmur2_array(arr)
    parts = partitions_for_keys(arr, 13)
    for i, key in enumerate(keys):
        if key is None:
            assert parts[i] == -1
        else:
            assert hashes[i] == murmur2(key)
            assert parts[i] == partition_for_key(key, 13)


@pytest.mark.parametrize("width", [4, 8, 12, 16])
def test_keys_starting_on_word_boundaries(width: int) -> None:
    """Keys that all start at a multiple of 4 bytes (fixed-size ids) take the aligned gather;
    any length of the last key, slices and null keys included, hashes as one by one."""
    rng = random.Random(width)
    keys: list[bytes | None] = [bytes(rng.randrange(256) for _ in range(width))
                                for _ in range(300)]
    keys[7] = None
    keys[-1] = keys[-1][: width - 1] if keys[-1] else b""  # a shorter last key: still aligned
    arr = pa.array(keys, pa.binary())
    for col in (arr, arr.slice(4, 200), arr.slice(1, 50)):
        expected = [murmur2(k) for k in col.to_pylist() if k is not None]
        got = murmur2_array(col)
        valid = ~col.is_null().to_numpy(zero_copy_only=False)
        assert got[valid].tolist() == expected


def test_a_slice_costs_its_own_bytes_not_its_parents() -> None:
    """Hashing a few keys sliced from a column holding a 32 MiB key copies only their bytes
    (numpy reports its buffers to tracemalloc): a batch split by topic, or a window of a
    larger table, must not cost its parent's size per call."""
    big = b"x" * (32 << 20)
    small = [f"key-{i}".encode() for i in range(10)]
    parent = pa.array([big, *small], pa.binary())
    tracemalloc.start()
    try:
        hashed = murmur2_array(parent.slice(1, 10))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert hashed.tolist() == [murmur2(k) for k in small]
    assert peak < 1 << 20, peak
