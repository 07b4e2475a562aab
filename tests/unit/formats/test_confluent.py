"""Confluent's wire framing, split and built over whole columns (formats/confluent.py).

The oracle is the format written out by hand per record (struct.pack of the magic byte and a
big-endian id), which is what Confluent's serializers write; the vectorized code must agree
with it on every edge: nulls, empty values, values shorter than the header, another first
byte, the largest ids, sliced arrays and large_binary columns.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_kafka_wire.formats.confluent import (
    FRAME_HEADER_SIZE,
    MAGIC_BYTE,
    frame,
    split_frames,
)


def by_hand(value: bytes | None) -> tuple[int, bytes | None]:
    """(schema id, payload) of one value, read the obvious way."""
    if value is None or len(value) < 5 or value[0] != 0:
        return -1, None
    return struct.unpack(">I", value[1:5])[0], value[5:]


def test_the_header_is_confluents() -> None:
    assert (MAGIC_BYTE, FRAME_HEADER_SIZE) == (0, 5)


def test_edges() -> None:
    values = pa.array([
        b"\x00\x00\x00\x00\x01payload",  # id 1
        None,  # a tombstone
        b"",  # empty
        b"\x00\x00\x00",  # shorter than the header
        b'{"a": 1}',  # JSON, not framed
        b"\x00\xff\xff\xff\xff",  # the largest id, empty payload
        b"\x00\x7f\xff\xff\xff\x02",  # Java's Integer.MAX_VALUE
        b"\x01\x00\x00\x00\x01x",  # another magic byte
    ])
    frames = split_frames(values)
    assert frames.schema_ids.tolist() == [1, -1, -1, -1, -1, 0xFFFFFFFF, 0x7FFFFFFF, -1]
    assert frames.framed.tolist() == [True, False, False, False, False, True, True, False]
    assert frames.payloads.to_pylist() == [b"payload", None, None, None, None, b"", b"\x02",
                                           None]
    assert frames.reason(1) == "null value: not in Confluent's wire format"
    assert frames.reason(2) == "not in Confluent's wire format: empty value"
    assert frames.reason(3) == ("not in Confluent's wire format: 3 bytes, shorter than the "
                                "5-byte header")
    assert frames.reason(4) == ("not in Confluent's wire format: first byte 0x7b, not magic "
                                "byte 0")
    assert frames.reason(7) == ("not in Confluent's wire format: first byte 0x01, not magic "
                                "byte 0")


def test_empty_and_all_null_columns() -> None:
    assert split_frames(pa.array([], pa.binary())).payloads.to_pylist() == []
    frames = split_frames(pa.array([None, None], pa.binary()))
    assert frames.schema_ids.tolist() == [-1, -1]
    assert frames.payloads.to_pylist() == [None, None]
    assert frame(1, pa.array([None], pa.binary())).to_pylist() == [None]
    assert frame(1, pa.array([], pa.binary())).to_pylist() == []


def test_frame_keeps_tombstones_and_writes_the_id_big_endian() -> None:
    framed = frame(0x01020304, pa.array([b"ab", None, b""]))
    assert framed.to_pylist() == [b"\x00\x01\x02\x03\x04ab", None, b"\x00\x01\x02\x03\x04"]
    assert framed.type == pa.binary()
    with pytest.raises(ValueError, match="4-byte id"):
        frame(2**32, pa.array([b"x"]))
    with pytest.raises(ValueError, match="4-byte id"):
        frame(-1, pa.array([b"x"]))


def test_a_null_slot_with_bytes_under_it_stays_null() -> None:
    """Arrow lets a null element span data bytes; they belong to no payload."""
    base = pa.array([b"\x00\x00\x00\x00\x05aa", b"\x00\x00\x00\x00\x06bb"])
    mask = pa.py_buffer(np.packbits([True, False], bitorder="little"))
    with_null = pa.Array.from_buffers(pa.binary(), 2, [mask, *base.buffers()[1:]], null_count=1)
    assert split_frames(with_null).payloads.to_pylist() == [b"aa", None]
    assert frame(9, with_null).to_pylist() == [b"\x00\x00\x00\x00\x09" + b"\x00\x00\x00\x00\x05aa",
                                               None]


values_strategy = st.lists(st.one_of(
    st.none(), st.binary(max_size=12),
    st.builds(lambda i, p: b"\x00" + struct.pack(">I", i) + p,
              st.integers(0, 2**32 - 1), st.binary(max_size=12))), max_size=40)


@given(values_strategy, st.integers(0, 5), st.booleans())
def test_split_agrees_with_reading_each_value(values: list[bytes | None], cut: int,
                                              large: bool) -> None:
    array = pa.array(values, pa.large_binary() if large else pa.binary()).slice(
        min(cut, len(values)))
    expected = [by_hand(v) for v in values[min(cut, len(values)):]]
    frames = split_frames(array)
    assert frames.schema_ids.tolist() == [i for i, _ in expected]
    assert frames.payloads.to_pylist() == [p for _, p in expected]
    assert frames.framed.tolist() == [p is not None for _, p in expected]


@given(st.lists(st.one_of(st.none(), st.binary(max_size=20)), max_size=40),
       st.integers(0, 2**32 - 1), st.integers(0, 5))
def test_frame_then_split_gives_the_payloads_back(payloads: list[bytes | None], schema_id: int,
                                                  cut: int) -> None:
    array = pa.array(payloads, pa.binary()).slice(min(cut, len(payloads)))
    framed = frame(schema_id, array)
    kept = payloads[min(cut, len(payloads)):]
    assert framed.to_pylist() == [None if p is None else b"\x00" + struct.pack(">I", schema_id)
                                  + p for p in kept]
    frames = split_frames(framed)
    assert frames.payloads.to_pylist() == kept
    assert frames.schema_ids.tolist() == [-1 if p is None else schema_id for p in kept]
