"""Avro values decoded into Arrow and encoded from it (formats/avro_codec.py).

Oracles: fastavro reading the same bytes with its own logical-type conversions (datetimes,
Decimals, UUIDs), turned into the values Spark's from_avro gives by ``spark_value`` below,
written independently of the layer's column builders; the ``avro`` package (Apache Avro's
own Python implementation) for schema resolution; fastavro's schemaless_writer for the bytes
the encoder writes.
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import pickle
import uuid
from typing import Any

import avro.io
import avro.schema
import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spark_kafka_wire.formats.avro_codec import (
    AvroDecoder,
    AvroEncoder,
    decimals_from_binary,
    decode_framed,
)
from spark_kafka_wire.formats.confluent import frame

UTC = datetime.timezone.utc
SUIT = {"type": "enum", "name": "Suit", "symbols": ["SPADES", "HEARTS", "CLUBS"]}
POINT = {"type": "record", "name": "Point", "fields": [
    {"name": "x", "type": "int"}, {"name": "label", "type": ["null", "string"]}]}
HASH = {"type": "fixed", "name": "Hash", "size": 4}

EVERY_TYPE = {"type": "record", "name": "Every", "namespace": "test.avro", "fields": [
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "b", "type": "boolean"},
    {"name": "s", "type": "string"},
    {"name": "by", "type": "bytes"},
    {"name": "e", "type": SUIT},
    {"name": "fx", "type": HASH},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20,
                             "scale": 4}},
    {"name": "decf", "type": {"type": "fixed", "name": "Dec", "size": 8,
                              "logicalType": "decimal", "precision": 18, "scale": 2}},
    {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "arr", "type": {"type": "array", "items": ["null", "int"]}},
    {"name": "points", "type": {"type": "array", "items": POINT}},
    {"name": "m", "type": {"type": "map", "values": ["null", {
        "type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}]}},
    {"name": "ms", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
    {"name": "n", "type": ["null", "string"]},
    {"name": "nl", "type": ["long", "null"]},
    {"name": "w", "type": ["int", "long"]},
    {"name": "fd", "type": ["float", "double"]},
    {"name": "cu", "type": ["int", "string", "Point", "Suit", "Hash", "boolean"]},
    {"name": "ncu", "type": ["null", "double", "Point", {"type": "map", "values": "int"}]},
    {"name": "np", "type": ["null", "Point"]},
    {"name": "ts_or_null", "type": ["null", {"type": "long",
                                             "logicalType": "timestamp-millis"}]},
]}
EVERY_TYPE_TEXT = json.dumps(EVERY_TYPE)


# ---------------------------------------------------------------------------- the oracle


def named(schema: Any, names: dict[str, Any]) -> Any:
    if isinstance(schema, str) and schema.split(".")[-1] in names:
        return names[schema.split(".")[-1]]
    return schema


def register(schema: Any, names: dict[str, Any]) -> dict[str, Any]:
    """Every named type of ``schema`` by simple name (the schemas here use no two alike)."""
    if isinstance(schema, list):
        for b in schema:
            register(b, names)
    elif isinstance(schema, dict):
        if schema["type"] in ("record", "enum", "fixed"):
            names[schema["name"].split(".")[-1]] = schema
        for f in schema.get("fields", []):
            register(f["type"], names)
        for key in ("items", "values"):
            if key in schema:
                register(schema[key], names)
    return names


def spark_value(value: Any, schema: Any, names: dict[str, Any]) -> Any:
    """What Spark's from_avro gives, from fastavro's decoding of a value (logical types
    converted by fastavro, union branches tagged with return_named_type)."""
    schema = named(schema, names)
    if isinstance(schema, list):
        rest = [b for b in schema if b != "null"]
        kinds = sorted(named(b, names) if isinstance(named(b, names), str)
                       else named(b, names)["type"] for b in rest)
        if value is None:
            return None
        if isinstance(value, tuple):
            branch = next(b for b in rest if named(b, names) is named(value[0], names))
            value = value[1]
        elif len(rest) == 1:
            branch = rest[0]
        else:
            branch = next(b for b in rest if matches(value, named(b, names)))
        if len(rest) == 1 or kinds in (["int", "long"], ["double", "float"]):
            return spark_value(value, branch, names)
        members = {}
        for i, b in enumerate(rest):
            members[f"member{i}"] = spark_value(value, b, names) if b is branch else None
        return members
    if isinstance(schema, dict):
        kind, logical = schema["type"], schema.get("logicalType")
        if kind == "record":
            return {f["name"]: spark_value(value[f["name"]], f["type"], names)
                    for f in schema["fields"]}
        if kind == "array":
            return [spark_value(v, schema["items"], names) for v in value]
        if kind == "map":
            return [(k, spark_value(v, schema["values"], names)) for k, v in value.items()]
        if logical == "uuid":
            return str(value)
        return value  # dates, datetimes, Decimals as fastavro gives them
    return value


def matches(value: Any, schema: Any) -> bool:
    kind = schema if isinstance(schema, str) else schema["type"]
    return {"int": type(value) is int, "long": type(value) is int,
            "double": type(value) is float, "string": type(value) is str,
            "boolean": type(value) is bool, "map": type(value) is dict}.get(kind, False)


def fastavro_bytes(schema: Any, record: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def fastavro_read(schema: Any, data: bytes) -> Any:
    return fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(schema),
                                      return_named_type=True)


# ---------------------------------------------------------------------------- strategies


def decimals(precision: int, scale: int) -> st.SearchStrategy[decimal.Decimal]:
    top = 10 ** precision - 1
    return st.integers(-top, top).map(lambda u: decimal.Decimal(u).scaleb(-scale))


def millis(aware: bool) -> st.SearchStrategy[datetime.datetime]:
    dates = st.datetimes(min_value=datetime.datetime(1, 1, 2),
                         max_value=datetime.datetime(9999, 12, 30),
                         timezones=st.just(UTC) if aware else st.none())
    return dates.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))


def micros(aware: bool) -> st.SearchStrategy[datetime.datetime]:
    return st.datetimes(min_value=datetime.datetime(1, 1, 2),
                        max_value=datetime.datetime(9999, 12, 30),
                        timezones=st.just(UTC) if aware else st.none())


point = st.fixed_dictionaries({"x": st.integers(-2**31, 2**31 - 1),
                               "label": st.none() | st.text(max_size=5)})
floats32 = st.floats(width=32, allow_nan=False)
every_record = st.fixed_dictionaries({
    "i": st.integers(-2**31, 2**31 - 1),
    "l": st.integers(-2**63, 2**63 - 1),
    "f": floats32,
    "d": st.floats(allow_nan=False),
    "b": st.booleans(),
    "s": st.text(max_size=20),
    "by": st.binary(max_size=20),
    "e": st.sampled_from(SUIT["symbols"]),
    "fx": st.binary(min_size=4, max_size=4),
    "dec": decimals(20, 4),
    "decf": decimals(18, 2),
    "dt": st.dates(),
    "tsm": millis(True),
    "tsu": micros(True),
    "ltm": millis(False),
    "ltu": micros(False),
    "u": st.uuids().map(str),
    "arr": st.lists(st.none() | st.integers(-2**31, 2**31 - 1), max_size=4),
    "points": st.lists(point, max_size=3),
    "m": st.dictionaries(st.text(max_size=4), st.none() | decimals(9, 3), max_size=3),
    "ms": st.dictionaries(st.text(max_size=4), st.lists(st.text(max_size=3), max_size=2),
                          max_size=2),
    "n": st.none() | st.text(max_size=5),
    "nl": st.none() | st.integers(-2**63, 2**63 - 1),
    "w": st.tuples(st.sampled_from(["int", "long"]), st.integers(-2**31, 2**31 - 1)),
    "fd": st.tuples(st.sampled_from(["float", "double"]), floats32),
    "cu": st.one_of(
        st.tuples(st.just("int"), st.integers(-2**31, 2**31 - 1)),
        st.tuples(st.just("string"), st.sampled_from(["SPADES", "x", ""])),
        st.tuples(st.just("test.avro.Point"), point),
        st.tuples(st.just("test.avro.Suit"), st.sampled_from(SUIT["symbols"])),
        st.tuples(st.just("test.avro.Hash"), st.binary(min_size=4, max_size=4)),
        st.tuples(st.just("boolean"), st.booleans())),
    "ncu": st.one_of(st.none(), st.floats(allow_nan=False),
                     st.tuples(st.just("test.avro.Point"), point),
                     st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=2)),
    "np": st.none() | point,
    "ts_or_null": st.none() | millis(True),
})


# ---------------------------------------------------------------------------- decoding


#: every type but the complex unions: the decoder builds these columns with one pa.array
#: call (the complex unions need fastavro's branch tags and the column-wise build)
NO_COMPLEX_UNIONS = {**EVERY_TYPE, "fields": [f for f in EVERY_TYPE["fields"]
                                              if f["name"] not in ("cu", "ncu")]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.none() | every_record, max_size=8), st.booleans())
def test_every_type_decodes_as_fastavro_reads_it(records: list[Any], complex_unions: bool) \
        -> None:
    schema = EVERY_TYPE if complex_unions else NO_COMPLEX_UNIONS
    text = json.dumps(schema)
    payloads = [None if r is None else fastavro_bytes(schema, r) for r in records]
    decoder = AvroDecoder(text)
    decoded = decoder.decode(pa.array(payloads, pa.binary()), text)
    assert not decoded.failed.any(), decoded.errors
    assert decoded.array.type == decoder.arrow_type
    decoded.array.validate(full=True)
    got = decoded.array.to_pylist()
    for row, payload in zip(got, payloads, strict=True):
        expected = None if payload is None else spark_value(
            fastavro_read(schema, payload), schema, register(schema, {}))
        assert row == expected


def test_values_are_sparks() -> None:
    """Spark's representations, checked on the raw Arrow values: timestamps in microseconds
    UTC, dates in days, decimals exact, enums and uuids as strings, complex unions with only
    the taken branch set."""
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38,
                                 "scale": 10}},
        {"name": "e", "type": SUIT},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "cu", "type": ["int", "string", POINT]},
    ]}
    big = decimal.Decimal("-1234567890123456789012345678.0123456789")
    payload = fastavro_bytes(schema, {
        "tsm": -1, "ltm": 1_700_000_000_123, "dt": -719162, "dec": big, "e": "CLUBS",
        "u": "3e2f3b2c-0000-4000-8000-000000000001", "cu": ("Point", {"x": 3, "label": None})})
    text = json.dumps(schema)
    array = AvroDecoder(text).decode(pa.array([payload]), text).array
    assert array.field("tsm").cast(pa.int64()).to_pylist() == [-1000]
    assert array.field("ltm").cast(pa.int64()).to_pylist() == [1_700_000_000_123_000]
    assert array.field("dt").cast(pa.int32()).to_pylist() == [-719162]
    assert array.field("dec").to_pylist() == [big]
    assert array.field("e").to_pylist() == ["CLUBS"]
    assert array.field("u").to_pylist() == ["3e2f3b2c-0000-4000-8000-000000000001"]
    assert array.field("cu").to_pylist() == [
        {"member0": None, "member1": None, "member2": {"x": 3, "label": None}}]


def test_stable_union_ids_and_recursion_depth_apply_to_values() -> None:
    linked = {"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": ["int", "string"]}, {"name": "next", "type": ["null", "Node"]}]}
    text = json.dumps(linked)
    payload = fastavro_bytes(linked, {"v": 1, "next": {"v": "two", "next": {"v": 3,
                                                                           "next": None}}})
    decoder = AvroDecoder(text, stable_union_ids=True, recursive_field_max_depth=2)
    assert decoder.decode(pa.array([payload]), text).array.to_pylist() == [
        {"v": {"member_int": 1, "member_string": None},
         "next": {"v": {"member_int": None, "member_string": "two"}}}]


def test_a_broken_payload_fails_alone() -> None:
    text = json.dumps(POINT)
    good = fastavro_bytes(POINT, {"x": 1, "label": "a"})
    decoded = AvroDecoder(text).decode(pa.array([good, good[:1], None, good]), text)
    assert decoded.failed.tolist() == [False, True, False, False]
    assert list(decoded.errors) == [1]
    assert "cannot be decoded" in decoded.errors[1]
    assert decoded.array.to_pylist() == [{"x": 1, "label": "a"}, None, None,
                                         {"x": 1, "label": "a"}]


def test_a_decimal_wider_than_its_precision_fails_its_record() -> None:
    """Spark's Decimal refuses an unscaled value with more digits than the precision."""
    reader = {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 1}
    text = json.dumps(reader)
    fits = fastavro_bytes("bytes", (9999).to_bytes(2, "big", signed=True))
    wide = fastavro_bytes("bytes", (10000).to_bytes(2, "big", signed=True))
    decoded = AvroDecoder(text).decode(pa.array([fits, wide]), text)
    assert decoded.failed.tolist() == [False, True]
    assert "exceeds precision 4" in decoded.errors[1]
    assert decoded.array.to_pylist() == [decimal.Decimal("999.9"), None]


def test_the_decoder_pickles() -> None:
    text = json.dumps(POINT)
    decoder = pickle.loads(pickle.dumps(AvroDecoder(text, stable_union_ids=True)))
    assert decoder.stable_union_ids
    payload = fastavro_bytes(POINT, {"x": 5, "label": None})
    assert decoder.decode(pa.array([payload]), text).array.to_pylist() == [
        {"x": 5, "label": None}]


# ---------------------------------------------------------------------------- resolution


def avro_package_read(writer: Any, reader: Any, data: bytes) -> Any:
    """Apache Avro's Python implementation resolving writer -> reader."""
    datum_reader = avro.io.DatumReader(avro.schema.parse(json.dumps(writer)),
                                       avro.schema.parse(json.dumps(reader)))
    return datum_reader.read(avro.io.BinaryDecoder(io.BytesIO(data)))


V1 = {"type": "record", "name": "User", "namespace": "shop", "fields": [
    {"name": "id", "type": "int"},
    {"name": "name", "type": "string"},
    {"name": "score", "type": "float"},
    {"name": "tag", "type": "bytes"},
    {"name": "gone", "type": "string"},
    {"name": "suit", "type": {"type": "enum", "name": "Suit",
                              "symbols": ["SPADES", "HEARTS", "CLUBS"]}},
    {"name": "maybe", "type": ["null", "int"]},
    {"name": "either", "type": "int"},
]}
V2 = {"type": "record", "name": "User", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},  # int -> long
    {"name": "name", "type": "string"},
    {"name": "score", "type": "double"},  # float -> double
    {"name": "tag", "type": "bytes"},
    {"name": "suit", "type": {"type": "enum", "name": "Suit", "symbols": ["SPADES", "HEARTS"],
                              "default": "SPADES"}},  # CLUBS unknown: the default
    {"name": "added", "type": "string", "default": "none"},  # added with a default
    {"name": "maybe", "type": ["null", "long"]},  # branch int -> long
    {"name": "either", "type": ["null", "string", "long"]},  # int -> the long member
]}


@pytest.mark.parametrize("suit", ["SPADES", "HEARTS", "CLUBS"])
def test_evolution_resolves_as_apache_avro_does(suit: str) -> None:
    record = {"id": 7, "name": "ann", "score": 1.5, "tag": b"t", "gone": "x", "suit": suit,
              "maybe": 3, "either": 9}
    payload = fastavro_bytes(V1, record)
    decoded = AvroDecoder(json.dumps(V2)).decode(pa.array([payload]), json.dumps(V1))
    assert not decoded.failed.any(), decoded.errors
    # the avro package does not apply an enum's default (Avro 1.9's rule, which Java and
    # fastavro follow): for CLUBS it is asked about the record with the default written in
    same = fastavro_bytes(V1, {**record, "suit": "SPADES"}) if suit == "CLUBS" else payload
    oracle = avro_package_read(V1, V2, same)
    assert oracle["suit"] == ("SPADES" if suit == "CLUBS" else suit)
    assert decoded.array.to_pylist() == [{
        "id": oracle["id"], "name": oracle["name"], "score": oracle["score"],
        "tag": oracle["tag"], "suit": oracle["suit"], "added": oracle["added"],
        "maybe": oracle["maybe"], "either": {"member0": None, "member1": oracle["either"]}}]


def test_string_and_bytes_promote_both_ways() -> None:
    """Avro's string <-> bytes promotion (Java resolves it; the avro Python package does not,
    so the specification is the oracle: the UTF-8 bytes of the string)."""
    writer = {"type": "record", "name": "P", "fields": [
        {"name": "s", "type": "string"}, {"name": "b", "type": "bytes"}]}
    reader = {"type": "record", "name": "P", "fields": [
        {"name": "s", "type": "bytes"}, {"name": "b", "type": "string"}]}
    payload = fastavro_bytes(writer, {"s": "zé", "b": "ü".encode()})
    decoded = AvroDecoder(json.dumps(reader)).decode(pa.array([payload]), json.dumps(writer))
    assert decoded.array.to_pylist() == [{"s": "zé".encode(), "b": "ü"}]


def test_an_enum_symbol_unknown_without_default_fails_that_record_only() -> None:
    reader = {**V2, "fields": [
        {**f, "type": {"type": "enum", "name": "Suit", "symbols": ["SPADES", "HEARTS"]}}
        if f["name"] == "suit" else f for f in V2["fields"]]}
    base = {"id": 7, "name": "ann", "score": 1.5, "tag": b"t", "gone": "x", "maybe": None,
            "either": 1}
    payloads = [fastavro_bytes(V1, {**base, "suit": s}) for s in ("HEARTS", "CLUBS")]
    decoded = AvroDecoder(json.dumps(reader)).decode(pa.array(payloads), json.dumps(V1))
    assert decoded.failed.tolist() == [False, True]
    assert "CLUBS" in decoded.errors[1]
    with pytest.raises(Exception, match="CLUBS"):
        avro_package_read(V1, reader, payloads[1])


@pytest.mark.parametrize(("reader_fields", "reason"), [
    ([{"name": "id", "type": "int"}, {"name": "new", "type": "string"}],
     "field new: the reader's field has no default"),
    ([{"name": "id", "type": "string"}], "field id: the writer's int cannot be read as string"),
    ([{"name": "id", "type": ["null", "boolean"]}],
     "field id: the writer's int matches no branch"),
])
def test_an_unresolvable_writer_schema_fails_every_record_with_one_reason(
        reader_fields: list[Any], reason: str) -> None:
    reader = {"type": "record", "name": "User", "namespace": "shop", "fields": reader_fields}
    payloads = [fastavro_bytes(V1, {"id": i, "name": "a", "score": 0.0, "tag": b"",
                                    "gone": "", "suit": "SPADES", "maybe": None, "either": 0})
                for i in range(3)]
    decoded = AvroDecoder(json.dumps(reader)).decode(pa.array([*payloads, None]),
                                                     json.dumps(V1))
    assert decoded.failed.tolist() == [True, True, True, False]
    assert len(set(decoded.errors.values())) == 1
    assert reason in decoded.errors[0], decoded.errors[0]
    assert decoded.array.null_count == 4
    with pytest.raises(Exception):  # noqa: B017 (Apache Avro refuses it too, in its own words)
        avro_package_read(V1, reader, payloads[0])


def test_a_record_renamed_does_not_resolve() -> None:
    other = {**V1, "name": "Customer"}
    payload = fastavro_bytes(V1, {"id": 1, "name": "a", "score": 0.0, "tag": b"", "gone": "",
                                  "suit": "SPADES", "maybe": None, "either": 0})
    decoded = AvroDecoder(json.dumps(other)).decode(pa.array([payload]), json.dumps(V1))
    assert decoded.failed.tolist() == [True]
    assert "another name" in decoded.errors[0]


# ---------------------------------------------------------------------------- framed


def test_decode_framed_groups_by_schema_id_and_keeps_the_order() -> None:
    v1, v2 = json.dumps(V1), json.dumps(V2)
    base = {"name": "a", "score": 0.5, "tag": b"", "gone": "", "suit": "HEARTS",
            "maybe": None, "either": 0}
    old = [fastavro_bytes(V1, {**base, "id": i}) for i in range(3)]
    new = [fastavro_bytes(V2, {**base, "added": "yes", "id": 10 + i,
                               "either": None}) for i in range(2)]
    values = pa.concat_arrays([
        frame(1, pa.array([old[0]])), frame(2, pa.array([new[0]])),
        pa.array([b'{"id": 1}', None]), frame(1, pa.array([old[1], old[2]])),
        frame(99, pa.array([old[0]])), frame(2, pa.array([new[1]]))])
    lookups: list[int] = []

    def writer_schema(schema_id: int) -> str:
        lookups.append(schema_id)
        if schema_id == 99:
            raise KeyError("subject has no schema 99")
        return {1: v1, 2: v2}[schema_id]

    decoded = decode_framed(values, AvroDecoder(v2), writer_schema)
    assert sorted(lookups) == [1, 2, 99]  # one lookup per schema id
    assert [r and r["id"] for r in decoded.array.to_pylist()] == [0, 10, None, None, 1, 2,
                                                                 None, 11]
    assert [r and r["added"] for r in decoded.array.to_pylist()] == [
        "none", "yes", None, None, "none", "none", None, "yes"]
    assert decoded.failed.tolist() == [False, False, True, False, False, False, True, False]
    assert decoded.errors[2] == ("not in Confluent's wire format: first byte 0x7b, not magic "
                                 "byte 0")
    assert "writer schema 99 not available" in decoded.errors[6]
    assert 3 not in decoded.errors  # a null value is a null row, not a failure


def test_decode_framed_of_nothing_framed() -> None:
    decoder = AvroDecoder(json.dumps(POINT))
    decoded = decode_framed(pa.array([b"x", None], pa.binary()), decoder, lambda i: "")
    assert decoded.failed.tolist() == [True, False]
    assert decoded.array.type == decoder.arrow_type and decoded.array.null_count == 2


# ---------------------------------------------------------------------------- encoding


# the encoder writes Spark's long / double to the wider branch of [int, long] / [float, double]
wider_record = every_record.map(lambda r: {**r, "w": ("long", r["w"][1]),
                                           "fd": ("double", r["fd"][1])})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.none() | wider_record, max_size=6))
def test_encode_writes_fastavros_bytes_and_decodes_back(records: list[Any]) -> None:
    payloads = [None if r is None else fastavro_bytes(EVERY_TYPE, r) for r in records]
    decoded = AvroDecoder(EVERY_TYPE_TEXT).decode(pa.array(payloads, pa.binary()),
                                                  EVERY_TYPE_TEXT)
    encoded = AvroEncoder(EVERY_TYPE_TEXT).encode(decoded.array)
    assert encoded.to_pylist() == payloads
    again = AvroDecoder(EVERY_TYPE_TEXT).decode(encoded, EVERY_TYPE_TEXT)
    assert again.array.equals(decoded.array)


def test_encode_of_a_sliced_column_and_to_avro_timestamps() -> None:
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "m", "type": {"type": "map", "values": "int"}},
        {"name": "a", "type": {"type": "array", "items": "string"}}]}
    column = pa.array([
        {"t": datetime.datetime(2020, 1, 1, tzinfo=UTC), "m": [("a", 1)], "a": ["x"]},
        {"t": datetime.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
         "m": [("b", 2), ("c", 3)], "a": []},
        None], AvroDecoder(json.dumps(schema)).arrow_type).slice(1)
    encoded = AvroEncoder(json.dumps(schema)).encode(column)
    # microseconds to milliseconds rounds down, as Spark's microsToMillis (floorDiv)
    assert encoded.to_pylist() == [fastavro_bytes(schema, {"t": -1, "m": {"b": 2, "c": 3},
                                                           "a": []}), None]


def test_encode_names_the_row_that_does_not_fit() -> None:
    schema = json.dumps(SUIT)
    with pytest.raises(ValueError, match="row 1 cannot be written"):
        AvroEncoder(schema).encode(pa.array(["SPADES", "JOKER"]))


def test_the_encoder_pickles() -> None:
    encoder = pickle.loads(pickle.dumps(AvroEncoder(json.dumps(POINT))))
    assert encoder.encode(pa.array([{"x": 1, "label": None}], encoder.arrow_type)).to_pylist() \
        == [fastavro_bytes(POINT, {"x": 1, "label": None})]


def test_uuid_values_stay_strings() -> None:
    text = json.dumps({"type": "string", "logicalType": "uuid"})
    value = uuid.uuid4()
    payload = fastavro_bytes({"type": "string", "logicalType": "uuid"}, value)
    decoded = AvroDecoder(text).decode(pa.array([payload]), text)
    assert decoded.array.to_pylist() == [str(value)]
    assert np.array_equal(decoded.failed, [False])


def test_an_invalid_writer_schema_fails_its_records_and_empty_input_is_empty() -> None:
    text = json.dumps(POINT)
    decoded = AvroDecoder(text).decode(pa.array([b"\x02\x00", None]), '{"type": "nope"')
    assert decoded.failed.tolist() == [True, False]
    assert decoded.errors[0].startswith("invalid writer schema")
    for vectorized in (True, False):
        empty = AvroDecoder(text, vectorized=vectorized).decode(pa.array([], pa.binary()),
                                                                text)
        assert len(empty.array) == 0 and empty.array.type == AvroDecoder(text).arrow_type
        assert empty.errors == {}


def test_a_string_union_member_that_is_also_an_enum_symbol_is_written_as_the_string() -> None:
    """A complex union's member says the branch: "SPADES" in the string member is written
    as the string branch even where the enum branch comes first (fastavro's guess would
    take the enum)."""
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "u", "type": [SUIT, "string", "int"]}]}
    text = json.dumps(schema)
    column = pa.array([{"u": {"member0": None, "member1": "SPADES", "member2": None}},
                       {"u": {"member0": "SPADES", "member1": None, "member2": None}}],
                      AvroDecoder(text).arrow_type)
    assert AvroEncoder(text).encode(column).to_pylist() == [
        fastavro_bytes(schema, {"u": ("string", "SPADES")}),
        fastavro_bytes(schema, {"u": ("Suit", "SPADES")})]


def test_decode_framed_of_one_schema_id_only() -> None:
    """Every record framed with one id: the group is the whole column (no gather)."""
    text = json.dumps(POINT)
    good = fastavro_bytes(POINT, {"x": 1, "label": "a"})
    framed = frame(5, pa.array([good, good[:1], good]))
    for vectorized in (True, False):
        decoder = AvroDecoder(text, vectorized=vectorized)
        decoded = decode_framed(framed.slice(1), decoder, {5: text}.__getitem__)
        assert decoded.failed.tolist() == [True, False]
        assert list(decoded.errors) == [0]
        assert decoded.array.to_pylist() == [None, {"x": 1, "label": "a"}]


def test_a_union_of_null_alone_decodes_to_null_structs() -> None:
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": ["null"]}]}
    text = json.dumps(schema)
    decoded = AvroDecoder(text).decode(pa.array([fastavro_bytes(schema, {"n": None})]), text)
    assert decoded.array.to_pylist() == [{"n": None}]
    assert decoded.array.type == pa.struct([pa.field("n", pa.struct([]), True)])


@example((38, [10**38 - 1, -(10**38) + 1, None], 0))
@example((38, [10**38], 0))
@example((38, [-(10**38)], 1))
@example((5, [10**5], 0))
@example((5, [-(10**5)], 0))
@example((18, [-1, 0, 2**63, -(2**63) - 1], 2))
@given(st.integers(1, 38).flatmap(lambda p: st.tuples(
    st.just(p), st.lists(st.none() | st.integers(-(10**p) - 3, 10**p + 3), max_size=8),
    st.integers(0, 3))))
def test_decimals_from_binary_are_exact_and_refuse_what_exceeds_the_precision(
        case: tuple[int, list[int | None], int]) -> None:
    """The numpy conversion against Python's ints: minimal and sign-padded encodings (up to
    16 bytes), nulls, values one past the precision either way."""
    precision, unscaled, extra = case
    arrow = pa.decimal128(precision, 0)

    def encode_int(u: int) -> bytes:
        size = min(16, max(1, (u.bit_length() + 8) // 8) + extra)
        return u.to_bytes(size, "big", signed=True)

    raw = pa.array([None if u is None else encode_int(u) for u in unscaled], pa.binary())
    fits = all(u is None or abs(u) < 10**precision for u in unscaled)
    if fits:
        got = decimals_from_binary(raw, arrow)
        got.validate(full=True)
        assert got.to_pylist() == [None if u is None else decimal.Decimal(u) for u in unscaled]
    else:
        with pytest.raises(Exception, match="exceeds precision"):
            decimals_from_binary(raw, arrow)


def test_a_bytes_default_is_its_code_points() -> None:
    """Avro writes a bytes (or fixed) default as a string whose code points are the bytes:
    "\\u00ff" is the byte 0xff, not its UTF-8."""
    writer = {"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]}
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "x", "type": "int"},
        {"name": "b", "type": "bytes", "default": "\u00ff\u0001"},
        {"name": "f", "type": HASH, "default": "ab\u00e9d"},
        {"name": "nb", "type": ["bytes", "null"], "default": "\u0080"}]}
    payload = fastavro_bytes(writer, {"x": 4})
    for vectorized in (True, False):
        decoded = AvroDecoder(json.dumps(reader), vectorized=vectorized).decode(
            pa.array([payload]), json.dumps(writer))
        assert decoded.array.to_pylist() == [
            {"x": 4, "b": b"\xff\x01", "f": b"ab\xe9d", "nb": b"\x80"}]


def test_a_column_is_conformed_to_a_registered_schema_it_does_not_match() -> None:
    """use.latest.version: the registry's schema has a field the column lacks (with a default,
    bytes given as code points), a long where the column has an int, and lacks a field the
    column has; what is written equals fastavro's bytes for the record with the defaults."""
    schema = {"type": "record", "name": "Reading", "fields": [
        {"name": "count", "type": "long"},
        {"name": "sensor", "type": "string"},
        {"name": "unit", "type": "string", "default": "C"},
        {"name": "tag", "type": "bytes", "default": "\u00ff\u0001"},
        {"name": "note", "type": ["null", "string"], "default": None}]}
    column = pa.array([{"sensor": "s1", "count": 1, "extra": 9},
                       {"sensor": "s2", "count": 2**31 - 1, "extra": 8}, None],
                      type=pa.struct([("sensor", pa.string()), ("count", pa.int32()),
                                      ("extra", pa.int64())]))
    parsed = fastavro.parse_schema(schema)
    expected = []
    for sensor, count in (("s1", 1), ("s2", 2**31 - 1)):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, {"count": count, "sensor": sensor, "unit": "C",
                                                 "tag": b"\xff\x01", "note": None})
        expected.append(out.getvalue())
    for vectorized in (True, False):
        encoded = AvroEncoder(json.dumps(schema), vectorized=vectorized).encode(column)
        assert encoded.to_pylist() == [*expected, None]
    lacking = {**schema, "fields": [*schema["fields"], {"name": "site", "type": "string"}]}
    with pytest.raises(ValueError, match="'site' is not in the column and has no default"):
        AvroEncoder(json.dumps(lacking)).encode(column)
