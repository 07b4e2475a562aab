"""Primitive encodings against hand-computed byte vectors and bounds checks."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.primitives import Reader, Writer
from tests.support.errors import raises_condition

# Zigzag varints as used by Kafka records (same vectors as protobuf's sint encoding).
ZIGZAG = [
    (0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"), (64, "8001"),
    (300, "d804"), (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f"),
    (2**63 - 1, "feffffffffffffffff01"), (-(2**63), "ffffffffffffffffff01"),
]


@pytest.mark.parametrize("value,hexbytes", ZIGZAG)
def test_zigzag_varint_vectors(value: int, hexbytes: str) -> None:
    w = Writer()
    w.varint(value)
    assert w.getvalue().hex() == hexbytes
    assert Reader(bytes.fromhex(hexbytes)).varint() == value


@pytest.mark.parametrize("value,hexbytes", [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (16384, "808001")])
def test_unsigned_varint_vectors(value: int, hexbytes: str) -> None:
    w = Writer()
    w.uvarint(value)
    assert w.getvalue().hex() == hexbytes
    assert Reader(bytes.fromhex(hexbytes)).uvarint() == value


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_round_trip(value: int) -> None:
    w = Writer()
    w.varint(value)
    r = Reader(w.getvalue())
    assert r.varint() == value
    assert r.remaining() == 0


def test_classic_and_compact_strings_and_bytes() -> None:
    w = Writer()
    w.nullable_string("abc")
    w.nullable_string(None)
    w.compact_nullable_string("é")
    w.compact_nullable_string(None)
    w.nullable_bytes(b"\x00\x01")
    w.nullable_bytes(None)
    w.compact_nullable_bytes(b"")
    w.uuid(uuid.UUID(int=1))
    assert w.getvalue().hex() == (
        "0003616263" "ffff" "03c3a9" "00" "000000020001" "ffffffff" "01" + "00" * 15 + "01"
    )
    r = Reader(w.getvalue())
    assert r.nullable_string() == "abc"
    assert r.nullable_string() is None
    assert r.compact_nullable_string() == "é"
    assert r.compact_nullable_string() is None
    assert bytes(r.nullable_bytes()) == b"\x00\x01"
    assert r.nullable_bytes() is None
    assert bytes(r.compact_nullable_bytes()) == b""
    assert r.uuid() == uuid.UUID(int=1)
    assert r.remaining() == 0


@pytest.mark.parametrize(
    "data,call",
    [
        (b"\x00", "int16"), (b"\x00\x00\x00", "int32"), (b"\x00" * 7, "int64"),
        (b"\x00\x05ab", "string"), (b"\xff\xff", "string"), (b"\x00\x00\x00\x09abc", "nullable_bytes"),
        (b"\xff\xff\xff\xfe", "nullable_bytes"), (b"\x80\x80", "uvarint"), (b"\xff" * 11, "uvarint"),
        (b"\x00\x02\xc3\x28", "string"),  # invalid UTF-8
    ],
)
def test_truncated_or_invalid_input_raises_protocol_error(data: bytes, call: str) -> None:
    with pytest.raises(ProtocolError):
        getattr(Reader(data), call)()


def test_array_length_cannot_exceed_remaining_bytes() -> None:
    # 2^31-1 elements claimed in a 4-byte buffer must not allocate anything
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", "array claims"):
        Reader(b"\x7f\xff\xff\xff").array_length(compact=False)
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", "array claims"):
        Reader(b"\xff\xff\xff\xff\x07").array_length(compact=True)
