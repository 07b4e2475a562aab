"""Protobuf writes in the formats layer: what ProtobufEncoder writes, the protobuf runtime
parses back to the values given, and ProtobufDecoder (the read mapping) gives back the written
column; the schema derived from a Spark type holds what the column holds."""

from __future__ import annotations

import base64
import datetime as dt
import pickle
import struct

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2

from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder, decode_framed
from spark_kafka_wire.formats.protobuf_encode import (
    ProtobufEncoder,
    derive_file,
    derived_schema,
)
from tests.unit.formats.test_protobuf_codec import _cls, _file, _schema

pytestmark = pytest.mark.unit
F = descriptor_pb2.FieldDescriptorProto
UTC = dt.timezone.utc


def _framed(payloads: pa.Array) -> pa.Array:
    return pa.array([None if p is None else b"\x00" + struct.pack(">I", 1) + p
                     for p in payloads.to_pylist()], pa.binary())


def _field(name: str, t: object, nullable: bool = True) -> dict:
    return {"name": name, "type": t, "nullable": nullable, "metadata": {}}


def test_encoded_values_are_what_the_runtime_parses() -> None:
    fdp = _file()
    Rec = _cls(fdp)
    enc = ProtobufEncoder(_schema(fdp), message="t.Rec")
    at = dt.datetime(2026, 11, 26, 12, 30, 1, 250_000, tzinfo=UTC)
    rows = [{"i32": -5, "u32": -1, "u64": 7, "s": "héllo", "by": b"\x00\x01", "color": "BLUE",
             "inner": {"x": 7}, "nums": [1, 2, 3], "ts": at,
             "dur": dt.timedelta(seconds=-1, microseconds=250), "w": {"value": 9},
             "tags": {"k": 4}, "opt": 0, "f": 1.5, "b": False},
            None,
            {"color": 1, "w": 3, "tags": {"a": 1}, "inner": {}}]
    # Python values, as to_pylist gives them: encode takes any Arrow array of them
    out = pa.array([None if r is None else enc.encode(pa.array([r]))[0].as_py() for r in rows])
    assert enc.indexes == [1] and out[1].as_py() is None
    first, third = (out[i].as_py() for i in (0, 2))
    assert first[:2] == b"\x02\x02"  # indexes [1]: count 1, index 1 (zigzag)
    m = Rec.FromString(first[2:])
    assert (m.i32, m.u32, m.u64, m.s, m.by) == (-5, (1 << 32) - 1, 7, "héllo", b"\x00\x01")
    assert m.color == 1 and m.inner.x == 7 and list(m.nums) == [1, 2, 3]
    assert (m.ts.seconds, m.ts.nanos) == (int(at.timestamp()), 250_000_000)
    assert (m.dur.seconds, m.dur.nanos) == (0, -999_750_000)
    assert m.w.value == 9 and dict(m.tags) == {"k": 4} and m.HasField("opt") and m.opt == 0
    assert not m.b and m.HasField("dur") and not m.HasField("a")
    t = Rec.FromString(third[2:])
    assert t.color == 1 and t.w.value == 3 and dict(t.tags) == {"a": 1}
    assert t.HasField("inner") and not t.HasField("ts")


def test_what_is_read_is_written_back_equal() -> None:
    """The read mapping's values encode to the same message: decode(encode(x)) == x."""
    fdp = _file()
    Rec = _cls(fdp)
    msg = Rec(i32=-5, u32=4_000_000_000, s64=-(1 << 40), u64=(1 << 64) - 1, f=1.5, d=2.25,
              b=True, s="x", by=b"\x01", color=1, nums=[4, 5], a="y", opt=3)
    msg.inner.x = 2
    msg.ts.seconds, msg.ts.nanos = 1_700_000_000, 123_456_000
    msg.dur.seconds, msg.dur.nanos = -90, -500_000
    msg.w.value = 9
    msg.tags["k"] = 4
    dec = ProtobufDecoder(_schema(fdp), message="t.Rec")
    framed = pa.array([b"\x00\x00\x00\x00\x01\x02\x02" + msg.SerializeToString(), None])
    read = decode_framed(framed, dec).array
    enc = ProtobufEncoder(_schema(fdp), message="t.Rec")
    again = decode_framed(_framed(enc.encode(read)), dec)
    assert not again.failed.any()
    assert again.array.to_pylist() == read.to_pylist()
    assert Rec.FromString(enc.encode(read)[0].as_py()[2:]) == msg


@pytest.mark.parametrize(("row", "says"), [
    ({"color": "GREEN"}, r"t\.Rec\.color: 'GREEN' is not a value of enum t\.Color"),
    ({"i32": 1 << 31}, r"t\.Rec\.i32: 2147483648 is out of int32 range"),
    ({"u32": 1 << 32}, r"t\.Rec\.u32: .* out of uint32 range"),
    ({"s": 5}, r"t\.Rec\.s is a string, got int"),
    ({"nums": [1, None]}, r"t\.Rec\.nums: a repeated field cannot hold a null"),
    ({"nope": 1}, r"'nope' is not in message t\.Rec"),
    ({"inner": 3}, r"t\.Inner is written from a struct"),
])
def test_values_the_message_cannot_hold_name_the_field(row: dict, says: str) -> None:
    enc = ProtobufEncoder(_schema(_file()), message="t.Rec")
    with pytest.raises(ValueError, match=rf"row 1: .*{says}"):
        enc.encode(pa.array([None, row]))


def test_first_message_by_default_and_unknown_message_refused() -> None:
    enc = ProtobufEncoder(_schema(_file()))
    assert enc.message_name == "t.Inner" and enc.indexes == [0]
    assert enc.encode(pa.array([{"x": 1}]))[0].as_py() == b"\x00\x08\x01"
    with pytest.raises(ValueError, match=r"message t\.Nope is not in .*messages: Inner, Rec"):
        ProtobufEncoder(_schema(_file()), message="t.Nope")


def test_encoder_pickles() -> None:
    enc = ProtobufEncoder(_schema(_file()), message="t.Rec")
    back = pickle.loads(pickle.dumps(enc))
    rows = pa.array([{"s": "a", "color": "BLUE"}])
    assert back.encode(rows) == enc.encode(rows)


def test_check_finds_fields_the_message_lacks() -> None:
    enc = ProtobufEncoder(_schema(_file()), message="t.Rec")
    enc.check({"type": "struct", "fields": [_field("s", "string"), _field(
        "inner", {"type": "struct", "fields": [_field("x", "integer")]})]})
    with pytest.raises(ValueError, match=r"field inner\.y is not in message t\.Inner"):
        enc.check({"type": "struct", "fields": [_field(
            "inner", {"type": "struct", "fields": [_field("y", "integer")]})]})


SPARK = {"type": "struct", "fields": [
    _field("id", "long", False), _field("name", "string"), _field("day", "date"),
    _field("at", "timestamp"), _field("span", "interval day to second"),
    _field("tags", {"type": "array", "elementType": "integer", "containsNull": False}, False),
    _field("attrs", {"type": "map", "keyType": "string", "valueType": "double",
                     "valueContainsNull": True}),
    _field("inner", {"type": "struct", "fields": [_field("x", "short"), _field("raw", "binary")]}),
    _field("items", {"type": "array", "containsNull": False, "elementType": {
        "type": "struct", "fields": [_field("x", "boolean")]}}),
]}


def test_derived_file_is_proto3_numbered_in_column_order() -> None:
    fdp = derive_file(SPARK)
    assert (fdp.syntax, fdp.package, fdp.name) == ("proto3", "kafkawire",
                                                    "kafkawire/topLevelRecord.proto")
    assert list(fdp.dependency) == ["google/protobuf/timestamp.proto",
                                    "google/protobuf/duration.proto"]
    (msg,) = fdp.message_type
    assert msg.name == "topLevelRecord"
    assert [(f.name, f.number) for f in msg.field] == [
        (f["name"], n) for n, f in enumerate(SPARK["fields"], 1)]
    by = {f.name: f for f in msg.field}
    # every singular scalar has presence, nullable or not: what is written reads back
    assert by["id"].proto3_optional and by["name"].proto3_optional
    assert not by["tags"].proto3_optional and not by["inner"].proto3_optional
    assert by["day"].type == F.TYPE_INT32 and by["at"].type_name == ".google.protobuf.Timestamp"
    assert by["span"].type_name == ".google.protobuf.Duration"
    assert by["tags"].label == F.LABEL_REPEATED and by["tags"].type == F.TYPE_INT32
    assert by["attrs"].type_name == ".kafkawire.topLevelRecord.AttrsEntry"
    assert by["inner"].type_name == ".kafkawire.topLevelRecord.Inner"
    assert by["items"].type_name == ".kafkawire.topLevelRecord.Items"
    assert base64.b64decode(derived_schema(SPARK)) == fdp.SerializeToString()


def test_derived_schema_round_trips_a_column() -> None:
    rows = [{"id": 0, "name": None, "day": dt.date(2026, 1, 2),
             "at": dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
             "span": dt.timedelta(days=1, microseconds=7), "tags": [1, 2],
             "attrs": [("a", 1.5)], "inner": {"x": 3, "raw": b"\x00"}, "items": [{"x": True}]},
            None]
    schema = derived_schema(SPARK)
    enc = ProtobufEncoder(schema)
    arrow = pa.struct([("id", pa.int64()), ("name", pa.string()), ("day", pa.date32()),
                       ("at", pa.timestamp("us", "UTC")), ("span", pa.duration("us")),
                       ("tags", pa.list_(pa.int32())), ("attrs", pa.map_(pa.string(), pa.float64())),
                       ("inner", pa.struct([("x", pa.int16()), ("raw", pa.binary())])),
                       ("items", pa.list_(pa.struct([("x", pa.bool_())])))])
    read = decode_framed(_framed(enc.encode(pa.array(rows, arrow))), ProtobufDecoder(schema))
    got = read.array.to_pylist()
    # explicit presence: a non-nullable scalar at its default (0) reads back as 0, a null as
    # null; a date reads back as its day number
    assert got[0]["id"] == 0 and got[0]["name"] is None
    assert got[0]["day"] == (dt.date(2026, 1, 2) - dt.date(1970, 1, 1)).days
    assert got[0]["at"] == rows[0]["at"] and got[0]["span"] == rows[0]["span"]
    assert got[0]["tags"] == [1, 2] and got[0]["attrs"] == [("a", 1.5)]
    assert got[0]["inner"] == {"x": 3, "raw": b"\x00"} and got[0]["items"] == [{"x": True}]
    assert got[1] is None


@pytest.mark.parametrize(("spark_type", "says"), [
    ({"type": "struct", "fields": [_field("price", "decimal(10,2)")]},
     r"field price is a decimal\(10,2\): Protobuf has no decimal type"),
    ({"type": "struct", "fields": [_field("m", {"type": "map", "keyType": "double",
                                                 "valueType": "long",
                                                 "valueContainsNull": True})]},
     r"field m: a Protobuf map's key is .* not double"),
    ({"type": "struct", "fields": [_field("a", {"type": "array", "containsNull": True,
                                                 "elementType": {"type": "array",
                                                                 "elementType": "long",
                                                                 "containsNull": True}})]},
     r"field a: Protobuf has no repeated field of arrays"),
    ({"type": "struct", "fields": [_field("s", {"type": "struct", "fields": [
        _field("ym", "interval year to month")]})]}, r"field s\.ym is of Spark type interval"),
    ("string", r"written from a struct column, not string"),
])
def test_derivation_refuses_what_protobuf_cannot_hold(spark_type: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        derive_file(spark_type)
