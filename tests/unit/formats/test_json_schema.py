"""JSON Schema values (formats/json_schema.py): the mapping table of docs/schema-registry.md, values
decoded against ``json.loads`` of the same bytes, round trips through the encoder, framed
columns through ``decode_framed`` with the framing errors Avro gives."""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
from typing import Any

import pyarrow as pa
import pytest

from spark_kafka_wire.formats.avro_codec import decode_framed
from spark_kafka_wire.formats.confluent import frame
from spark_kafka_wire.formats.json_schema import (
    JsonSchemaDecoder,
    JsonSchemaEncoder,
    _too_deep,
    json_schema_for,
    map_schema,
)
from spark_kafka_wire.formats.limits import MAX_NESTING_DEPTH, MAX_SCHEMA_NODES
from tests.unit.formats.hostile import run_hostile

UTC = dt.timezone.utc


@pytest.mark.parametrize(("schema", "spark_json", "arrow"), [
    ({"type": "integer"}, "long", pa.int64()),
    ({"type": "number"}, "double", pa.float64()),
    ({"type": "boolean"}, "boolean", pa.bool_()),
    ({"type": "string"}, "string", pa.string()),
    ({"type": "string", "format": "date"}, "date", pa.date32()),
    ({"type": "string", "format": "date-time"}, "timestamp", pa.timestamp("us", tz="UTC")),
    ({"type": "string", "contentEncoding": "base64"}, "binary", pa.binary()),
    ({"type": ["integer", "null"]}, "long", pa.int64()),
    ({"oneOf": [{"type": "null"}, {"type": "number"}]}, "double", pa.float64()),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "string", pa.string()),
    ({"type": ["integer", "string"]}, "string", pa.string()),
    ({"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}},
                {"type": "object", "properties": {"b": {"type": "string"}}}]},
     "string", pa.string()),
    ({"type": "object"}, "string", pa.string()),
    ({"enum": ["A", "B"]}, "string", pa.string()),
    ({"type": "array", "items": {"type": "integer"}},
     {"type": "array", "elementType": "long", "containsNull": True}, pa.list_(pa.int64())),
    ({"type": "object", "additionalProperties": {"type": "number"}},
     {"type": "map", "keyType": "string", "valueType": "double", "valueContainsNull": True},
     pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.float64()))),
])
def test_mapping_rows(schema, spark_json, arrow):
    m = map_schema(json.dumps(schema))
    assert m.spark == spark_json
    assert m.arrow == arrow


def test_object_fields_in_declaration_order_all_nullable_refs_resolved():
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object", "required": ["z"],
        "properties": {"z": {"type": "integer"}, "a": {"$ref": "#/definitions/Point"},
                       "m": {"$ref": "#/$defs/Tag"}},
        "definitions": {"Point": {"type": "object", "properties": {
            "x": {"type": "number"}, "y": {"type": "number"}}}},
        "$defs": {"Tag": {"type": "string"}},
    }
    m = map_schema(schema)
    assert [f["name"] for f in m.spark["fields"]] == ["z", "a", "m"]
    assert all(f["nullable"] for f in m.spark["fields"])
    assert m.arrow == pa.struct([
        pa.field("z", pa.int64()),
        pa.field("a", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])),
        pa.field("m", pa.string())])


def test_recursive_ref_is_json_text_and_registry_reference_resolved():
    node = {"type": "object", "properties": {"v": {"type": "integer"},
                                             "next": {"$ref": "#"}}}
    m = map_schema(node)
    assert m.arrow == pa.struct([pa.field("v", pa.int64()), pa.field("next", pa.struct([
        pa.field("v", pa.int64()), pa.field("next", pa.string())]))])
    other = json.dumps({"type": "object", "properties": {"id": {"type": "integer"}}})
    top = {"type": "object", "properties": {"c": {"$ref": "customer.json"}}}
    assert map_schema(top, {"customer.json": other}).arrow == pa.struct([
        pa.field("c", pa.struct([pa.field("id", pa.int64())]))])
    with pytest.raises(ValueError, match="names no schema reference"):
        map_schema(top)


SCHEMA = json.dumps({"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": ["string", "null"]},
    "score": {"type": "number"}, "ok": {"type": "boolean"},
    "day": {"type": "string", "format": "date"},
    "at": {"type": "string", "format": "date-time"},
    "blob": {"type": "string", "contentEncoding": "base64"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
    "any": {"type": ["integer", "string"]},
}})


def test_values_match_json_loads_of_the_same_bytes():
    texts = [
        '{"id": 1, "name": "a\\nb", "score": 2, "ok": true, "day": "2024-02-29",\n'
        ' "at": "2024-02-29T12:00:00.123456Z", "blob": "AAE=", "tags": ["x", "y"],\n'
        ' "attrs": {"k": 5}, "any": {"n": [1, 2]}, "extra": 7}',
        '{"id": -9007199254740993, "name": null}',
        '  {}  ',
    ]
    payloads = pa.array([t.encode() for t in texts] + [None], pa.binary())
    decoded = JsonSchemaDecoder(SCHEMA).decode(payloads)
    assert not decoded.failed.any()
    rows = decoded.array.to_pylist()
    first = json.loads(texts[0])
    assert rows[0]["id"] == first["id"] and rows[0]["name"] == first["name"]
    assert rows[0]["score"] == 2.0 and rows[0]["ok"] is True
    assert rows[0]["day"] == dt.date(2024, 2, 29)
    assert rows[0]["at"] == dt.datetime(2024, 2, 29, 12, 0, 0, 123456, tzinfo=UTC)
    assert rows[0]["blob"] == base64.b64decode(first["blob"])
    assert rows[0]["tags"] == first["tags"]
    assert rows[0]["attrs"] == [("k", 5)]
    assert json.loads(rows[0]["any"]) == first["any"]
    assert rows[1]["id"] == json.loads(texts[1])["id"]
    assert rows[2] == {k: None for k in rows[2]}
    assert rows[3] is None


@pytest.mark.parametrize(("text", "why"), [
    (b"{not json", "not JSON"),
    (b'{"id": "7"}', "expected an integer"),
    (b'{"tags": "x"}', "expected an array"),
    (b'{"day": "yesterday"}', "is not a date"),
    (b'{"blob": "!!"}', "is not a binary"),
    (b"[1]", "expected an object"),
    (b"\xff\xfe", "not JSON"),
])
def test_records_that_do_not_fit_fail(text, why):
    decoded = JsonSchemaDecoder(SCHEMA).decode(pa.array([b'{"id": 1}', text], pa.binary()))
    assert decoded.failed.tolist() == [False, True]
    assert why in decoded.errors[1]
    assert decoded.array.to_pylist()[1] is None


@pytest.mark.parametrize("text", [
    b'{"name": "\\ud800"}', b'{"tags": ["ok", "\\udfff"]}', b'{"attrs": {"\\ud83d": 1}}',
    b'{"any": "x\\ud800y"}'])
def test_a_lone_surrogate_fails_its_record_alone(text):
    """Issue 45 (found by the formats fuzz tier): JSON may escape a lone UTF-16 surrogate,
    which json.loads keeps and no UTF-8 string holds; it failed the whole batch's pa.array
    with UnicodeEncodeError. A surrogate pair is one character and reads as such."""
    pair = b'{"name": "\\ud83d\\ude00"}'
    decoded = JsonSchemaDecoder(SCHEMA).decode(pa.array([pair, text, b"[1]"], pa.binary()))
    assert decoded.failed.tolist() == [False, True, True]
    assert "lone UTF-16 surrogate" in decoded.errors[1]
    assert decoded.array.to_pylist()[0]["name"] == "\U0001f600"


def test_a_number_beyond_a_double_reads_as_infinity_on_both_paths():
    """Issue 45 (found by the formats fuzz tier): a 401-digit integer in a ``number`` field
    failed the batch with OverflowError on the json.loads path while Arrow's reader read it
    as infinity; both now read it as infinity (as Jackson, Spark's JSON parser, does)."""
    huge = b'{"score": ' + b"9" * 401 + b'}'
    negative = b'{"score": -' + b"9" * 401 + b'}'
    fast = JsonSchemaDecoder(SCHEMA).decode(pa.array([huge, negative], pa.binary()))
    slow = JsonSchemaDecoder(SCHEMA).decode(pa.array([huge, negative, b"[1]"], pa.binary()))
    assert [r["score"] for r in fast.array.to_pylist()] == [float("inf"), float("-inf")]
    assert [r["score"] for r in slow.array.to_pylist()[:2]] == [float("inf"), float("-inf")]
    assert slow.failed.tolist() == [False, False, True]


def test_encode_then_decode_round_trip_and_text_is_plain_json():
    arrow = JsonSchemaDecoder(SCHEMA).arrow_type
    rows = [{"id": 3, "name": "é", "score": 1.5, "ok": False, "day": dt.date(2020, 1, 1),
             "at": dt.datetime(2020, 1, 1, 0, 0, 1, tzinfo=UTC), "blob": b"\x00\xff",
             "tags": ["a"], "attrs": [("x", 1)], "any": '{"q":1}'}, None]
    column = pa.array(rows, arrow)
    encoded = JsonSchemaEncoder(SCHEMA).encode(column)
    assert encoded.to_pylist()[1] is None
    text = json.loads(encoded.to_pylist()[0])
    assert text["at"] == "2020-01-01T00:00:01Z" and text["blob"] == "AP8="
    assert text["day"] == "2020-01-01" and text["attrs"] == {"x": 1}
    assert JsonSchemaDecoder(SCHEMA).decode(encoded).array.equals(column)


def test_framed_column_and_framing_errors():
    dec = JsonSchemaDecoder(SCHEMA)
    good = frame(42, pa.array([b'{"id": 1}', b'{"id": 2}'], pa.binary()))
    out = decode_framed(good, dec, lambda _id: SCHEMA)
    assert [r["id"] for r in out.array.to_pylist()] == [1, 2]
    mixed = pa.array(good.to_pylist() + [b'{"id": 3}', b"\x00\x00"], pa.binary())
    out = decode_framed(mixed, dec, lambda _id: SCHEMA)
    assert out.failed.tolist() == [False, False, True, True]
    assert "first byte 0x7b" in out.errors[2]
    assert "shorter than the 5-byte header" in out.errors[3]


def test_derived_schema_maps_back_to_the_column_type():
    column = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "at", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "b", "type": "binary", "nullable": True, "metadata": {}},
        {"name": "xs", "type": {"type": "array", "elementType": "double",
                                "containsNull": True}, "nullable": True, "metadata": {}},
        {"name": "s", "type": {"type": "struct", "fields": [
            {"name": "d", "type": "date", "nullable": True, "metadata": {}}]},
         "nullable": True, "metadata": {}}]}
    derived = json.loads(json_schema_for(column))
    assert derived["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert derived["title"] == "topLevelRecord" and derived["required"] == ["id"]
    back = map_schema(derived).spark
    assert [f["type"] for f in back["fields"]] == [
        "long", "timestamp", "binary",
        {"type": "array", "elementType": "double", "containsNull": True},
        {"type": "struct", "fields": [{"name": "d", "type": "date", "nullable": True,
                                       "metadata": {}}]}]


NATIVE = json.dumps({"type": "object", "properties": {
    "id": {"type": "integer"}, "s": {"type": "string"}, "x": {"type": "number"},
    "ok": {"type": "boolean"},
    "inner": {"type": "object", "properties": {"xs": {"type": "array",
                                                      "items": {"type": "integer"}}}}}})


@pytest.mark.parametrize("texts", [
    [b'{"id": 1, "s": "a\\nb", "x": 1, "ok": true,\n "inner": {"xs": [1, 2]}}', b"{}", None],
    [b'{"id": 1}', b'{"s": 5}'],
    [b'{"id": 1}', b'{"id": 1.5}'],
    [b'{"id": 1}', b'{"id": 1} {"id": 2}'],
    [b'{"id": 1}', b"   "],
    [b'{"id": 1}', b"null"],
    [b'{"id": 1}', b'{"ok": "yes"}'],
    [b'{"id": 1}', b'{"inner": {"xs": "no"}}'],
    [b'{"id": 1}', b'{"id": 99999999999999999999}'],
    [b'{"id": 1}', b'{"s": "\\u00e9", "x": 2e308}'],
])
def test_arrow_json_reader_path_agrees_with_json_loads_per_record(texts):
    fast = JsonSchemaDecoder(NATIVE)
    assert fast.native
    slow = JsonSchemaDecoder(NATIVE)
    slow.native = False
    payloads = pa.array(texts, pa.binary())
    a, b = fast.decode(payloads), slow.decode(payloads)
    assert a.failed.tolist() == b.failed.tolist()
    assert a.array.to_pylist() == b.array.to_pylist()


def _depth(text: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, character by character."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text.decode():
        if in_string:
            in_string, escaped = (c != '"' or escaped), (c == "\\" and not escaped)
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def _nested(depth: int, rng: random.Random) -> Any:
    """A JSON value nesting ``depth`` arrays and objects, strings of brackets, quotes and
    backslashes about."""
    tricky = ['[', ']', '{', '"', '\\', '\\"', '\\\\', 'é[', '\\\\"[']
    value: Any = "".join(rng.choice(tricky) for _ in range(rng.randint(0, 4)))
    for _ in range(depth):
        noise = "".join(rng.choice(tricky) for _ in range(rng.randint(0, 3)))
        value = rng.choice([[noise, value], {noise: value, "k": [noise]}, [value, {}]])
    return value


def test_the_depth_scan_agrees_with_the_text() -> None:
    """``_too_deep`` counts brackets outside strings, with escaped quotes (odd runs of
    backslashes) inside them, across a batch of records, framed or not, nulls between."""
    rng = random.Random(45)
    texts = [json.dumps(_nested(d, rng), ensure_ascii=False).encode()
             for d in [*range(95, 106), *rng.choices(range(0, 140), k=60)]]
    texts += [b"[" * 101, b'"' + b"[" * 200 + b'"', b"[" * 60 + b'"\\\\"' + b"[" * 60]
    expected = [_depth(t) > MAX_NESTING_DEPTH if t[:1] != b'"' else False for t in texts]
    expected[-1] = True  # the escaped backslash ends its string: 120 brackets open
    payloads = pa.array([*texts, None], pa.binary())
    assert _too_deep(payloads, 0).tolist() == [*expected, False]
    framed = frame(1, payloads)
    assert _too_deep(framed, 5).tolist() == [*expected, False]
    assert sum(expected) > 20 and not all(expected)


_DEEP_JSON_CHILD = r"""
import json
import numpy as np
import pyarrow as pa
from spark_kafka_wire.formats.confluent import frame
from spark_kafka_wire.formats.errors import UndecodableRecordError
from spark_kafka_wire.formats.json_schema import JsonSchemaDecoder

deep = b"[" * 1000 + b"]" * 1000  # 2 KB
records = [b'{"a": 1}', deep, b'{"a": 2, "b": ' + deep + b'}', b"[" * 1_000_000,
           b'{"a": 3, "b": ' + b"[" * 99 + b"]" * 99 + b', "s": "' + b"[" * 500 + b'"}']  # 100 deep
out = {}
for name, schema in {"struct": {"type": "object", "properties": {"a": {"type": "integer"}}},
                     "json text": {}, "array": {"type": "array", "items": {}}}.items():
    got = JsonSchemaDecoder(json.dumps(schema)).decode(pa.array(records, pa.binary()))
    out[name] = [got.failed.tolist(), sorted(got.errors), got.array.to_pylist()[-1] is None]

# the read side's route: FAILFAST names the record, PERMISSIVE nulls and keeps its bytes
import spark_kafka_wire.client.registry.schema_registry as registry
import spark_kafka_wire.source.formats as source
from spark_kafka_wire.client.registry.schema_registry import RegisteredSchema, RegistryConfig

schema = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
class Registry:
    def schema_by_id(self, schema_id):
        return RegisteredSchema(schema_id, "JSON", schema)
# source/formats.py imports the registry client where a formatted column is decoded
registry.shared_registry = lambda config: Registry()
batch = pa.RecordBatch.from_arrays(
    [frame(7, pa.array([b'{"a": 1}', deep], pa.binary())), pa.array([40, 41], pa.int64())],
    names=["value", "offset"])
reader = source.ColumnReader("value", RegisteredSchema(7, "JSON", schema),
                             JsonSchemaDecoder(schema))
config = RegistryConfig(urls=("http://registry.invalid",))
try:
    source.decode_batch(batch, source.Decoding((reader,), config, False), "t", 3)
    out["failfast"] = None
except UndecodableRecordError as exc:
    out["failfast"] = [exc.topic, exc.partition, exc.offset, exc.schema_id, str(exc)]
kept = source.decode_batch(batch, source.Decoding((reader,), config, True), "t", 3)
out["permissive"] = [kept.column("value").to_pylist(),
                     [v is not None for v in kept.column("_corrupt_value").to_pylist()]]
print(json.dumps(out))
"""


def test_records_nested_deeper_than_the_limit_fail_alone() -> None:
    """Issue 45 item 7: a 2 KB ``[[[...]]]`` record raised RecursionError out of
    ``json.loads``, failing the whole batch even under PERMISSIVE. Records nesting deeper
    than MAX_NESTING_DEPTH fail alone, on the per-record path and on Arrow's (a deep field
    the schema does not name), 1 MB of ``[`` quickly; brackets in strings do not count;
    FAILFAST names the record, PERMISSIVE reads null and keeps its bytes."""
    got = run_hostile(_DEEP_JSON_CHILD)
    deep = [1, 2, 3]
    assert got["struct"] == [[False, True, True, True, False], deep, False]
    assert got["json text"] == [[False, True, True, True, False], deep, False]
    assert got["array"] == [[True, True, True, True, True], [0, 1, 2, 3, 4], True]
    topic, partition, offset, schema_id, message = got["failfast"]
    assert (topic, partition, offset, schema_id) == ("t", 3, 41, 7)
    assert "KAFKAWIRE_UNDECODABLE_RECORD" in message and "nested deeper than 100" in message
    assert got["permissive"] == [[{"a": 1}, None], [False, True]]


_EXPANSION_CHILD = r"""
import json, time
import pyarrow as pa
from spark_kafka_wire.client.registry.schema_registry import RegisteredSchema
from spark_kafka_wire.formats.errors import SchemaTooComplexError
from spark_kafka_wire.formats.json_schema import JsonSchemaDecoder
from spark_kafka_wire.formats.limits import MAX_SCHEMA_NODES
from spark_kafka_wire.options.registry_decoders import decoder_for

def doubling(levels, last):
    # definition i has two properties of definition i + 1: 2**levels leaves from 2 KB
    defs = {f"D{i}": {"type": "object", "properties": {
        "a": {"$ref": f"#/definitions/D{i + 1}"}, "b": {"$ref": f"#/definitions/D{i + 1}"}}}
        for i in range(levels)}
    defs[f"D{levels}"] = last
    return json.dumps({"$ref": "#/definitions/D0", "definitions": defs})

def nested(levels):
    return json.dumps(json.loads('{"type": "array", "items": ' * levels + '{"type": "integer"}'
                                 + "}" * levels))

def refused(schema):
    try:
        JsonSchemaDecoder(schema)
    except SchemaTooComplexError as exc:
        return exc.reason
    return None

out = {}
start = time.monotonic()
out["2 KB, 2**21 nodes"] = [len(doubling(20, {"type": "integer"})) < 2500,
                            refused(doubling(20, {"type": "integer"}))]
# a cycle in every branch: nothing to memoise, the node count stops it (after as many
# nodes as the bound: a smaller one here keeps the test quick)
import spark_kafka_wire.formats.json_schema as json_schema
json_schema.MAX_SCHEMA_NODES = 5000
out["recursive"] = refused(doubling(20, {"$ref": "#/definitions/D0"}))
json_schema.MAX_SCHEMA_NODES = MAX_SCHEMA_NODES
out["101 deep"] = refused(nested(101))
out["5000 deep text"] = refused('{"items": ' * 5000 + "{}" + "}" * 5000)
out["seconds"] = time.monotonic() - start

# near the limits: 2**16 - 1 nodes, 100 arrays deep, 5000 $refs one after another
wide = JsonSchemaDecoder(doubling(14, {"type": "integer"}))
def leaves(t):
    return sum(leaves(f["type"]) for f in t["fields"]) if isinstance(t, dict) else 1
path = "ab" * 7  # to a leaf, 14 levels down
record = 1
for key in reversed(path):
    record = {key: record}
got = wide.decode(pa.array([json.dumps(record).encode()], pa.binary()))
value = got.array.to_pylist()[0]
for key in path:
    value = value[key]
out["wide"] = [leaves(wide.spark_type_json), value]
deep = JsonSchemaDecoder(nested(100))
got = deep.decode(pa.array([b"[" * 100 + b"7" + b"]" * 100], pa.binary()))
value = got.array.to_pylist()[0]
for _ in range(100):
    value = value[0]
out["100 deep"] = value
chain = {f"R{i}": {"$ref": f"#/definitions/R{i + 1}"} for i in range(5000)}
chain["R5000"] = {"type": "integer"}
out["chain"] = JsonSchemaDecoder(json.dumps({"$ref": "#/definitions/R0",
                                             "definitions": chain})).spark_type_json

class Registry:
    def imports(self, schema):
        return {}
try:
    decoder_for(RegisteredSchema(9, "JSON", doubling(20, {"type": "integer"}),
                                 subject="t-value"), "json-schema", Registry())
except SchemaTooComplexError as exc:
    out["named"] = [exc.subject, exc.schema_id, str(exc)]
print(json.dumps(out))
"""


def test_ref_expansion_is_memoised_and_bounded() -> None:
    """Issue 45 item 10: each ``$ref`` was expanded wherever used, so a 2 KB schema whose
    definitions each use the next twice, 20 deep, took 13 s and 370 MiB at planning (in a
    child under 1 GiB: MemoryError). A ``$ref``'s mapping is reused, the expanded type
    counted: beyond MAX_SCHEMA_NODES nodes (also when cycles leave nothing to reuse) or
    MAX_NESTING_DEPTH levels, or text json.loads cannot nest, the schema is refused at
    once with a typed error naming its subject and id; schemas near the limits read."""
    got = run_hostile(_EXPANSION_CHILD)
    nodes = f"more than {MAX_SCHEMA_NODES:,} nodes"
    assert got["2 KB, 2**21 nodes"][0] and nodes in got["2 KB, 2**21 nodes"][1]
    assert "more than 5,000 nodes" in got["recursive"]
    assert "deeper than 100" in got["101 deep"] and "deeper than 100" in got["5000 deep text"]
    assert got["seconds"] < 20  # generous: a few tenths on a laptop
    assert got["wide"] == [2**14, 1]
    assert got["100 deep"] == 7
    assert got["chain"] == "long"
    subject, schema_id, message = got["named"]
    assert (subject, schema_id) == ("t-value", 9)
    assert message.startswith("[KAFKAWIRE_SCHEMA_TOO_COMPLEX]") and "id 9" in message
