"""The vectorized path for flat records (formats/avro_vector.py) against fastavro per record.

The decoder with ``vectorized=False`` reads every record with fastavro; with the default it
reads flat records with numpy and hands back what it gives up on. Both must give the same
column, the same failed mask and the same records failed, for random flat schemas, random
records, evolved writer schemas, and payloads cut short or made of random bytes.
"""

from __future__ import annotations

import decimal
import io
import json
import os
import subprocess
import sys
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_kafka_wire.formats.avro_codec import AvroDecoder, AvroEncoder, to_raw
from spark_kafka_wire.formats.avro_types import parse_schema, to_spark
from spark_kafka_wire.formats.avro_vector import encode_flat, flat_leaves, flat_plan

SUIT = {"type": "enum", "name": "Suit", "symbols": ["SPADES", "HEARTS", "CLUBS"]}
LEAF_TYPES: dict[str, Any] = {
    "boolean": ("boolean", st.booleans()),
    "int": ("int", st.integers(-2**31, 2**31 - 1)),
    "long": ("long", st.integers(-2**63, 2**63 - 1)),
    "float": ("float", st.floats(width=32, allow_nan=False)),
    "double": ("double", st.floats(allow_nan=False)),
    "string": ("string", st.text(max_size=30)),
    "bytes": ("bytes", st.binary(max_size=30)),
    "enum": (SUIT, st.sampled_from(SUIT["symbols"])),
    "fixed": ({"type": "fixed", "name": "Four", "size": 4}, st.binary(min_size=4, max_size=4)),
    "date": ({"type": "int", "logicalType": "date"}, st.integers(-10**6, 10**6)),
    "ts": ({"type": "long", "logicalType": "timestamp-millis"},
           st.integers(-2**52, 2**52)),
    "ltu": ({"type": "long", "logicalType": "local-timestamp-micros"},
            st.integers(-2**60, 2**60)),
    "dec": ({"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
            st.integers(-10**12 + 1, 10**12 - 1).map(
                lambda u: decimal.Decimal(u).scaleb(-3))),
}


@st.composite
def flat_schemas(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A flat record schema (each field a leaf, or a leaf with null in either order) and
    the value strategy of each field."""
    kinds = draw(st.lists(st.sampled_from(sorted(LEAF_TYPES)), min_size=1, max_size=8))
    fields, values = [], {}
    seen_named: set[str] = set()
    for i, kind in enumerate(kinds):
        schema, strategy = LEAF_TYPES[kind]
        if isinstance(schema, dict) and "name" in schema:
            if schema["name"] in seen_named:
                schema = schema["name"]
            seen_named.add(schema if isinstance(schema, str) else schema["name"])
        nullable = draw(st.sampled_from(["no", "first", "last"]))
        if nullable == "first":
            schema, strategy = ["null", schema], st.none() | strategy
        elif nullable == "last":
            schema, strategy = [schema, "null"], st.none() | strategy
        fields.append({"name": f"f{i}", "type": schema})
        values[f"f{i}"] = strategy
    return {"type": "record", "name": "Flat", "fields": fields}, values


def encode(schema: Any, record: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def both(reader: str, writer: str, payloads: list[bytes | None],
         all_vectorized: bool = False) -> None:
    """The vectorized decoder and fastavro's agree exactly; ``all_vectorized``: and the
    vectorized one handed no record to fastavro."""
    array = pa.array(payloads, pa.binary())
    decoder = AvroDecoder(reader)
    if all_vectorized:
        def refuse(*args: Any) -> None:
            raise AssertionError("the vectorized path gave records to fastavro")
        decoder._decode_each = refuse  # type: ignore[method-assign]
    fast = decoder.decode(array, writer)
    slow = AvroDecoder(reader, vectorized=False).decode(array, writer)
    assert fast.failed.tolist() == slow.failed.tolist(), (fast.errors, slow.errors)
    assert sorted(fast.errors) == sorted(slow.errors)
    assert fast.array.equals(slow.array), (fast.array.to_pylist(), slow.array.to_pylist())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_flat_records_decode_as_fastavro_decodes_them(data: st.DataObject) -> None:
    schema, values = data.draw(flat_schemas())
    text = json.dumps(schema)
    assert flat_plan(parse_schema(text), parse_schema(text)) is not None
    records = data.draw(st.lists(st.none() | st.fixed_dictionaries(values), max_size=12))
    payloads = [None if r is None else encode(schema, r) for r in records]
    both(text, text, payloads, all_vectorized=True)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_broken_payloads_fail_or_decode_as_fastavro_says(data: st.DataObject) -> None:
    """Cut short, extended, or random bytes: the vectorized path gives up on what it cannot
    read exactly, and fastavro decides those records."""
    schema, values = data.draw(flat_schemas())
    text = json.dumps(schema)
    records = data.draw(st.lists(st.fixed_dictionaries(values), min_size=1, max_size=8))
    payloads: list[bytes | None] = []
    for r in records:
        good = encode(schema, r)
        how = data.draw(st.sampled_from(["keep", "cut", "extend", "random"]))
        if how == "cut":
            good = good[:data.draw(st.integers(0, max(len(good) - 1, 0)))]
        elif how == "extend":
            good += data.draw(st.binary(min_size=1, max_size=4))
        elif how == "random":
            good = data.draw(st.binary(max_size=40))
        payloads.append(good)
    both(text, text, payloads)


READER = {"type": "record", "name": "Flat", "fields": [
    {"name": "id", "type": "long"},
    {"name": "score", "type": "double"},
    {"name": "name", "type": ["null", "string"]},
    {"name": "suit", "type": {"type": "enum", "name": "Suit",
                              "symbols": ["SPADES", "HEARTS"], "default": "HEARTS"}},
    {"name": "added", "type": "string", "default": "d"},
    {"name": "maybe", "type": ["null", "int"], "default": None},
    {"name": "blob", "type": "string"},
]}
WRITER = {"type": "record", "name": "Flat", "fields": [
    {"name": "suit", "type": SUIT},
    {"name": "id", "type": "int"},
    {"name": "gone", "type": "string"},
    {"name": "score", "type": "float"},
    {"name": "name", "type": "string"},
    {"name": "blob", "type": "bytes"},
]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries({
    "suit": st.sampled_from(SUIT["symbols"]), "id": st.integers(-2**31, 2**31 - 1),
    "gone": st.text(max_size=5), "score": st.floats(width=32, allow_nan=False),
    "name": st.text(max_size=5),
    "blob": st.one_of(st.text(max_size=5).map(str.encode), st.binary(max_size=5))}),
    max_size=10))
def test_evolution_by_the_vectorized_path(records: list[Any]) -> None:
    """Reordered and removed fields, int -> long, float -> double, string -> [null, string],
    bytes -> string (not UTF-8: fastavro fails it), enum symbols through the default,
    added fields with defaults."""
    reader, writer = json.dumps(READER), json.dumps(WRITER)
    assert flat_plan(parse_schema(writer), parse_schema(reader)) is not None
    both(reader, writer, [encode(WRITER, r) for r in records])


def test_an_enum_symbol_without_default_goes_to_fastavro() -> None:
    reader = {**READER, "fields": [
        {"name": "suit", "type": {"type": "enum", "name": "Suit",
                                  "symbols": ["SPADES", "HEARTS"]}}]}
    records = [{"suit": s, "id": 1, "gone": "", "score": 0.0, "name": "", "blob": b""}
               for s in ("SPADES", "CLUBS", "HEARTS")]
    payloads = [encode(WRITER, r) for r in records]
    both(json.dumps(reader), json.dumps(WRITER), payloads)
    decoded = AvroDecoder(json.dumps(reader)).decode(pa.array(payloads), json.dumps(WRITER))
    assert decoded.failed.tolist() == [False, True, False]
    assert decoded.array.to_pylist() == [{"suit": "SPADES"}, None, {"suit": "HEARTS"}]


def test_nested_or_complex_schemas_take_fastavro() -> None:
    nested = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "array", "items": "int"}}]}
    union = {"type": "record", "name": "R", "fields": [{"name": "u", "type": ["int", "string"]}]}
    for schema in (nested, union):
        node = parse_schema(json.dumps(schema))
        assert flat_plan(node, node) is None


def test_a_boolean_byte_other_than_0_or_1_goes_to_fastavro() -> None:
    """fastavro reads any byte but 0 as true (Java's Avro: only 1); the vectorized path
    leaves such a record to fastavro, so the two paths never disagree."""
    schema = json.dumps({"type": "record", "name": "B", "fields": [
        {"name": "b", "type": "boolean"}, {"name": "s", "type": "string"}]})
    payloads: list[bytes | None] = [b"\x02\x02a", b"\x01\x00", b"\x00\x00"]
    both(schema, schema, payloads)
    assert AvroDecoder(schema).decode(pa.array(payloads), schema).array.to_pylist() == [
        {"b": True, "s": "a"}, {"b": True, "s": ""}, {"b": False, "s": ""}]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_flat_records_encode_to_fastavros_bytes(data: st.DataObject) -> None:
    """The vectorized encoder writes what fastavro's schemaless_writer writes, byte for
    byte, and hands nothing to fastavro for columns that fit the schema."""
    schema, values = data.draw(flat_schemas())
    text = json.dumps(schema)
    records = data.draw(st.lists(st.none() | st.fixed_dictionaries(values), max_size=12))
    payloads = [None if r is None else encode(schema, r) for r in records]
    column = AvroDecoder(text, vectorized=False).decode(pa.array(payloads, pa.binary()),
                                                       text).array
    cut = data.draw(st.integers(0, len(payloads)))
    encoder = AvroEncoder(text)
    assert encoder.encode(column.slice(cut)).to_pylist() == payloads[cut:]
    assert AvroEncoder(text, vectorized=False).encode(column).to_pylist() == payloads
    # the column fits: no row went to fastavro (which would not raise, but be slow)
    direct = encode_flat(to_raw(column, to_spark(text)), flat_leaves(parse_schema(text)) or [])
    assert direct is not None and direct.to_pylist() == payloads


def test_a_column_that_does_not_fit_is_refused_naming_the_row() -> None:
    schema = json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "suit", "type": SUIT}, {"name": "n", "type": "int"}]})
    column = pa.array([{"suit": "SPADES", "n": 1}, {"suit": "JOKER", "n": 2}],
                      AvroDecoder(schema).arrow_type)
    with pytest.raises(ValueError, match="row 1 cannot be written"):
        AvroEncoder(schema).encode(column)
    nulls = pa.array([{"suit": "SPADES", "n": None}], AvroDecoder(schema).arrow_type)
    with pytest.raises(ValueError, match="row 0 cannot be written"):
        AvroEncoder(schema).encode(nulls)


#: Run in a child process: a numpy write past its buffer kills the process (SIGSEGV), which
#: must fail the test, not pytest. Prints, per case, the failed mask and the errors' types.
_HOSTILE_CHILD = r"""
import json, sys
import pyarrow as pa
from spark_kafka_wire.formats.avro_codec import AvroDecoder

def zigzag(n):
    u, out = (n << 1) ^ (n >> 63), bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)

big = 2**63 - 1
out = {}
for kind in ("bytes", "string"):
    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "v", "type": kind}]})
    # 17, 17 and 8 bytes: two lengths near 2**63 whose sum with the third wraps to 7
    payloads = [zigzag(big) + b"x" * 7, zigzag(big) + b"y" * 7, zigzag(7) + b"z" * 7]
    got = AvroDecoder(schema).decode(pa.array(payloads, pa.binary()), schema)
    out[kind] = [got.failed.tolist(), repr(got.array.to_pylist()[2]), sorted(got.errors)]
# a fixed size near 2**63 is a registry's answer too (the writer schema)
schema = json.dumps({"type": "record", "name": "R", "fields": [
    {"name": "v", "type": {"type": "fixed", "name": "F", "size": big}}]})
got = AvroDecoder(schema).decode(pa.array([b"abc", b"defg", b""], pa.binary()), schema)
out["fixed"] = [got.failed.tolist(), None, sorted(got.errors)]
print(json.dumps(out))
"""


def test_lengths_near_2_63_fail_their_records_without_crashing_the_worker() -> None:
    """Issue 45 item 2: a string or bytes length near 2**63 (a zigzag varint of 10 bytes)
    made ``pos + length`` wrap negative in int64, passing the bound; the lengths' sum then
    wrapped to a few bytes and numpy gathered past its buffer (SIGSEGV in ``spans``). Such
    records, and a fixed size near 2**63 in a writer schema, are failed records."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", _HOSTILE_CHILD], capture_output=True,
                         text=True, timeout=120, env=env, check=False)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for kind in ("bytes", "string"):
        failed, third, errors = got[kind]
        assert failed == [True, True, False], got
        assert errors == [0, 1]
        assert third == repr({"v": b"zzzzzzz" if kind == "bytes" else "zzzzzzz"})
    assert got["fixed"][0] == [True, True, True] and got["fixed"][2] == [0, 1, 2]
