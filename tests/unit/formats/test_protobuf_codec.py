"""Protobuf framing, Spark type mapping (SchemaConverters' rules) and values checked against
the protobuf runtime's own parse of messages it serialized."""

from __future__ import annotations

import base64
import pickle
import struct
from typing import Any

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from spark_kafka_wire.formats.limits import MAX_SCHEMA_NODES
from spark_kafka_wire.formats.protobuf_codec import (
    ProtobufDecoder,
    build_pool,
    decode_framed,
    read_message_indexes,
    write_message_indexes,
)
from tests.unit.formats.hostile import run_hostile

pytestmark = pytest.mark.unit
F = descriptor_pb2.FieldDescriptorProto


def _file(name: str = "t.proto", recursive: bool = False) -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(name=name, package="t", syntax="proto3")
    fdp.dependency.extend(["google/protobuf/timestamp.proto", "google/protobuf/duration.proto",
                           "google/protobuf/wrappers.proto"])
    e = fdp.enum_type.add(name="Color")
    e.value.add(name="RED", number=0)
    e.value.add(name="BLUE", number=1)
    inner = fdp.message_type.add(name="Inner")
    inner.field.add(name="x", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    if recursive:
        inner.field.add(name="next", number=2, type=F.TYPE_MESSAGE, type_name=".t.Inner",
                        label=F.LABEL_OPTIONAL)
    m = fdp.message_type.add(name="Rec")
    fields = [("i32", F.TYPE_INT32), ("u32", F.TYPE_UINT32), ("s64", F.TYPE_SINT64),
              ("u64", F.TYPE_UINT64), ("f", F.TYPE_FLOAT), ("d", F.TYPE_DOUBLE),
              ("b", F.TYPE_BOOL), ("s", F.TYPE_STRING), ("by", F.TYPE_BYTES)]
    for n, (name, t) in enumerate(fields, 1):
        m.field.add(name=name, number=n, type=t, label=F.LABEL_OPTIONAL)
    m.field.add(name="color", number=10, type=F.TYPE_ENUM, type_name=".t.Color",
                label=F.LABEL_OPTIONAL)
    m.field.add(name="inner", number=11, type=F.TYPE_MESSAGE, type_name=".t.Inner",
                label=F.LABEL_OPTIONAL)
    m.field.add(name="nums", number=12, type=F.TYPE_INT64, label=F.LABEL_REPEATED)
    m.field.add(name="ts", number=13, type=F.TYPE_MESSAGE,
                type_name=".google.protobuf.Timestamp", label=F.LABEL_OPTIONAL)
    m.field.add(name="dur", number=14, type=F.TYPE_MESSAGE,
                type_name=".google.protobuf.Duration", label=F.LABEL_OPTIONAL)
    m.field.add(name="w", number=15, type=F.TYPE_MESSAGE,
                type_name=".google.protobuf.Int64Value", label=F.LABEL_OPTIONAL)
    entry = m.nested_type.add(name="TagsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    m.field.add(name="tags", number=16, type=F.TYPE_MESSAGE, type_name=".t.Rec.TagsEntry",
                label=F.LABEL_REPEATED)
    m.field.add(name="a", number=17, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=0)
    m.field.add(name="z", number=18, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL, oneof_index=0)
    m.oneof_decl.add(name="choice")
    m.field.add(name="opt", number=19, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL,
                proto3_optional=True, oneof_index=1)
    m.oneof_decl.add(name="_opt")
    return fdp


def _schema(fdp: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.b64encode(fdp.SerializeToString()).decode()


def _cls(fdp: descriptor_pb2.FileDescriptorProto, name: str = "t.Rec"):  # type: ignore[no-untyped-def]
    pool, _ = build_pool(_schema(fdp))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


@pytest.mark.parametrize("indexes", [[0], [1], [1, 0], [3, 2, 70], [200]])
def test_message_indexes_round_trip(indexes: list[int]) -> None:
    raw = write_message_indexes(indexes) + b"rest"
    got, pos = read_message_indexes(raw)
    assert got == indexes and raw[pos:] == b"rest"


def test_message_indexes_bytes_are_confluents() -> None:
    assert write_message_indexes([0]) == b"\x00"
    assert write_message_indexes([1]) == b"\x02\x02"  # count 1, index 1 (zigzag)
    with pytest.raises(ValueError):
        read_message_indexes(b"\x04\x02")


def test_type_mapping_follows_schema_converters() -> None:
    dec = ProtobufDecoder(_schema(_file()), message="t.Rec")
    types = {f["name"]: f["type"] for f in dec.spark_type_json["fields"]}
    assert types["i32"] == "integer" and types["u32"] == "integer"
    assert types["s64"] == "long" and types["u64"] == "long"
    assert types["f"] == "float" and types["d"] == "double" and types["by"] == "binary"
    assert types["color"] == "string"
    assert types["inner"] == {"type": "struct", "fields": [
        {"name": "x", "type": "integer", "nullable": True, "metadata": {}}]}
    assert types["nums"] == {"type": "array", "elementType": "long", "containsNull": False}
    assert types["ts"] == "timestamp" and types["dur"] == "interval day to second"
    assert types["w"]["type"] == "struct"  # wrappers stay structs, Spark's default
    assert types["tags"] == {"type": "map", "keyType": "string", "valueType": "integer",
                             "valueContainsNull": False}
    assert types["a"] == "string" and types["z"] == "integer" and types["opt"] == "integer"
    assert pa.types.is_struct(dec.arrow_type)


def test_first_message_is_default() -> None:
    dec = ProtobufDecoder(_schema(_file()))
    assert [f["name"] for f in dec.spark_type_json["fields"]] == ["x"]


def test_recursion_refused_then_bounded() -> None:
    fdp = _file(recursive=True)
    with pytest.raises(ValueError, match="recursive"):
        ProtobufDecoder(_schema(fdp), message="t.Inner")
    one = ProtobufDecoder(_schema(fdp), message="t.Inner", recursive_field_max_depth=1)
    assert [f["name"] for f in one.spark_type_json["fields"]] == ["x"]
    two = ProtobufDecoder(_schema(fdp), message="t.Inner", recursive_field_max_depth=2)
    nxt = two.spark_type_json["fields"][1]
    assert nxt["name"] == "next" and [f["name"] for f in nxt["type"]["fields"]] == ["x"]


def test_values_match_runtime_parse() -> None:
    fdp = _file()
    Rec = _cls(fdp)
    full = Rec(i32=-5, u32=4_000_000_000, s64=-(1 << 40), u64=(1 << 64) - 1, f=1.5, d=2.25,
               b=True, s="héllo", by=b"\x00\x01", color=1, nums=[1, 2, 3], a="x", opt=0)
    full.inner.x = 7
    full.ts.seconds, full.ts.nanos = 1_700_000_000, 123_456_000
    full.dur.seconds, full.dur.nanos = 90, 500_000
    full.w.value = 9
    full.tags["k"] = 4
    empty = Rec()
    dec = ProtobufDecoder(_schema(fdp), message="t.Rec")
    framed = [b"\x00" + struct.pack(">I", 3) + write_message_indexes([1]) + m.SerializeToString()
              for m in (full, empty)] + [None, b"junk"]
    out = decode_framed(pa.array(framed, pa.binary()), dec)
    assert list(out.failed) == [False, False, False, True]
    rows = out.array.to_pylist()
    r = rows[0]
    assert (r["i32"], r["u32"], r["s64"], r["u64"]) == (-5, 4_000_000_000 - (1 << 32),
                                                        -(1 << 40), -1)
    assert (r["f"], r["d"], r["b"], r["s"], r["by"]) == (1.5, 2.25, True, "héllo", b"\x00\x01")
    assert r["color"] == "BLUE" and r["inner"] == {"x": 7} and r["nums"] == [1, 2, 3]
    assert r["ts"].timestamp() == pytest.approx(1_700_000_000.123456)
    assert r["dur"].total_seconds() == pytest.approx(90.0005)
    assert r["w"] == {"value": 9} and r["tags"] == [("k", 4)]
    assert r["a"] == "x" and r["z"] is None and r["opt"] == 0
    # proto3 defaults are null (Spark's hasField is false), repeated/map empty
    e = rows[1]
    assert e["i32"] is None and e["color"] is None and e["inner"] is None
    assert e["nums"] == [] and e["tags"] == [] and e["opt"] is None
    assert rows[2] is None and rows[3] is None
    # the wrong message named by the indexes fails the record
    wrong = b"\x00\x00\x00\x00\x03" + b"\x00" + full.SerializeToString()
    assert decode_framed(pa.array([wrong]), dec).failed[0]


@pytest.mark.parametrize(("field", "seconds"), [
    ("ts", -(2**63) + 1), ("ts", 2**63 - 1), ("dur", 2**62), ("dur", -(2**62))])
def test_a_time_beyond_64_bits_of_microseconds_fails_its_record_alone(field: str,
                                                                     seconds: int) -> None:
    """Issue 45 (found by the formats fuzz tier): a Timestamp or Duration whose seconds do
    not fit 64-bit microseconds failed the whole batch's pa.array with OverflowError; Spark
    fails such a record (its exact multiplication), and so does kafkawire, alone."""
    fdp = _file()
    Rec = _cls(fdp)
    ok, far = Rec(i32=1), Rec(i32=2)
    getattr(far, field).seconds = seconds
    dec = ProtobufDecoder(_schema(fdp), message="t.Rec")
    framed = [b"\x00" + struct.pack(">I", 3) + write_message_indexes([1]) + m.SerializeToString()
              for m in (ok, far, ok)]
    out = decode_framed(pa.array(framed, pa.binary()), dec)
    assert list(out.failed) == [False, True, False]
    assert "64-bit microseconds" in out.errors[1]
    assert [r and r["i32"] for r in out.array.to_pylist()] == [1, None, 1]


def test_decoder_pickles() -> None:
    dec = ProtobufDecoder(_schema(_file()), message="t.Rec")
    back = pickle.loads(pickle.dumps(dec))
    assert back.spark_type_json == dec.spark_type_json and back.arrow_type == dec.arrow_type


def test_proto_text_compiled() -> None:
    # .proto text (Java producers register it) goes through protoc (see test_proto_text.py)
    from spark_kafka_wire.client.registry.proto_text import binary_schemas  # noqa: PLC0415

    main, refs = binary_schemas('syntax = "proto3"; message A { int32 x = 1; }')
    dec = ProtobufDecoder(main, references=refs)
    with pytest.raises(ValueError, match="compile .proto text first"):
        ProtobufDecoder('syntax = "proto3"; message A { int32 x = 1; }')
    assert [f["name"] for f in dec.spark_type_json["fields"]] == ["x"]


def test_unused_default_pool_untouched() -> None:
    # building a decoder's pool does not register files in the process's default pool
    ProtobufDecoder(_schema(_file("iso.proto")), message="t.Rec")
    with pytest.raises(KeyError):
        descriptor_pool.Default().FindFileByName("iso.proto")


_EXPANSION_CHILD = r"""
import base64, json, time
import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from spark_kafka_wire.formats.errors import SchemaTooComplexError
from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder

F = descriptor_pb2.FieldDescriptorProto

def chain(levels, fan, back=False):
    # message i holds ``fan`` fields of message i + 1 (the last: of message 0 if ``back``)
    fdp = descriptor_pb2.FileDescriptorProto(name="h.proto", package="h", syntax="proto3")
    for i in range(levels):
        m = fdp.message_type.add(name=f"M{i}")
        m.field.add(name="x", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
        if i + 1 < levels or back:
            for j in range(fan):
                m.field.add(name=f"n{j}", number=2 + j, type=F.TYPE_MESSAGE,
                            type_name=f".h.M{(i + 1) % levels}", label=F.LABEL_OPTIONAL)
    return fdp

def schema(fdp):
    return base64.b64encode(fdp.SerializeToString()).decode()

def refused(fdp, **kw):
    try:
        ProtobufDecoder(schema(fdp), **kw)
    except SchemaTooComplexError as exc:
        return exc.reason
    return None

out = {}
start = time.monotonic()
out["2 KB, 2**20 messages"] = [len(schema(chain(20, 2))) < 2500, refused(chain(20, 2))]
out["2000 deep"] = refused(chain(2000, 1))
# recursive, each message holding 12 of the next: nothing to memoise, the count stops it
out["recursive"] = refused(chain(2, 12, back=True), recursive_field_max_depth=10)
out["seconds"] = time.monotonic() - start

# near the limits: 2**13 messages expanded, messages 100 deep, and a record through each
def classes(fdp):
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))

def read(fdp, levels, field):
    cls = classes(fdp)
    record = cls(f"h.M{levels - 1}")(x=7)
    for i in reversed(range(levels - 1)):
        outer = cls(f"h.M{i}")()
        getattr(outer, field).CopyFrom(record)
        record = outer
    got = ProtobufDecoder(schema(fdp)).decode(pa.array([record.SerializeToString()]),
                                             indexes=False)
    value = got.array.to_pylist()[0]
    for _ in range(levels - 1):
        value = value[field]
    return [got.failed.tolist(), value]

out["wide"] = read(chain(13, 2), 13, "n1")
out["100 deep"] = read(chain(100, 1), 100, "n0")
out["recursive depth 3"] = ProtobufDecoder(schema(chain(2, 2, back=True)),
                                           recursive_field_max_depth=3).spark_type_json
print(json.dumps(out))
"""


def test_message_expansion_is_memoised_and_bounded() -> None:
    """Issue 45 item 10: a message type was expanded wherever a field used it, so a 2 KB
    schema whose messages each hold two fields of the next, 20 deep, aborted a child under
    1 GiB (std::bad_alloc; 16 deep took 6 s), and messages nested 2000 deep raised
    RecursionError. A message's type is reused, the expanded type counted: beyond
    MAX_SCHEMA_NODES nodes (also when recursion leaves nothing to reuse) or messages nested
    deeper than MAX_NESTING_DEPTH, the schema is refused at once with a typed error;
    schemas near the limits read records exactly, recursion as before."""
    got = run_hostile(_EXPANSION_CHILD)
    nodes = f"more than {MAX_SCHEMA_NODES:,} nodes"
    assert got["2 KB, 2**20 messages"][0] and nodes in got["2 KB, 2**20 messages"][1]
    assert "deeper than 100" in got["2000 deep"]
    assert nodes in got["recursive"]
    assert got["seconds"] < 30  # generous: about a second on a laptop
    assert got["wide"] == [[False], {"x": 7}]
    assert got["100 deep"] == [[False], {"x": 7}]

    def depth(t: Any) -> int:
        return 1 + max((depth(f["type"]) for f in t["fields"]
                        if isinstance(f["type"], dict)), default=0)
    assert depth(got["recursive depth 3"]) == 6  # M0 M1 M0 M1 M0 M1: each type thrice
