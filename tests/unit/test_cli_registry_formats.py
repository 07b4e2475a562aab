"""``--value-format avro|protobuf|json-schema`` of ``kafkawire tail`` / ``consume`` without a
registry: records framed by hand (Confluent's magic byte, 4-byte id, body), each id's reader
the decoder of its writer schema, and how the decoded values and the records that do not
decode are shown in JSON lines, CSV, tables and format strings. The registry's side (ids
fetched, Confluent's serializers writing) is tests/cli/test_cli_registry.py."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import subprocess
import sys
from decimal import Decimal

import fastavro
import pytest
from google.protobuf import descriptor_pb2, message_factory

from spark_kafka_wire.cli.reading import registry_decoder
from spark_kafka_wire.cli.record_format import compile_format
from spark_kafka_wire.cli.records import Record, table_cells, to_csv, to_json
from spark_kafka_wire.cli.registry_decoding import (
    Failure,
    Reader,
    RecordDecoder,
    decode_values,
)
from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    INVALID_VALUE,
    MISSING_OPTION,
    ConfigurationError,
)
from spark_kafka_wire.formats.avro_codec import AvroDecoder
from spark_kafka_wire.formats.json_schema import JsonSchemaDecoder
from spark_kafka_wire.formats.protobuf_codec import (
    ProtobufDecoder,
    build_pool,
    write_message_indexes,
)
from tests.support.errors import raises_condition

pytestmark = pytest.mark.unit

ORDER = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
            {"name": "name", "type": "string"},
            {"name": "email", "type": ["null", "string"], "default": None}]}},
        {"name": "note", "type": ["null", "int", "string"], "default": None},
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "total", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                   "scale": 2}},
        {"name": "state", "type": {"type": "enum", "name": "State",
                                   "symbols": ["NEW", "PAID"]}},
        {"name": "tags", "type": {"type": "map", "values": "int"}},
        {"name": "blob", "type": "bytes"},
    ]}
ORDER_TEXT = json.dumps(ORDER)
UTC = dt.timezone.utc


def framed(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def avro_body(record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(ORDER), record)
    return out.getvalue()


def order(i: int, note: object) -> dict:
    return {"id": i, "customer": {"name": f"c{i}", "email": None if i else "a@b.c"},
            "note": note, "placed": dt.datetime(2026, 5, 1, 12, 0, 0, 250000, tzinfo=UTC),
            "day": dt.date(2026, 5, 1), "total": Decimal("12.34"), "state": "PAID",
            "tags": {"x": i}, "blob": b"\xff\x00"}


def readers(**by_id: Reader) -> object:
    """A reader_of answering the ids given (as ``id7=...``), and why for any other."""

    def reader_of(schema_id: int, path: tuple[int, ...]) -> Reader | str:
        return by_id.get(f"id{schema_id}", f"schema id {schema_id} is not in the registry")

    return reader_of


def test_avro_records_show_as_json_with_their_writer_schemas() -> None:
    values = [framed(7, avro_body(order(0, 5))), framed(7, avro_body(order(1, "late"))), None]
    shown, failures = decode_values(values, "avro", readers(
        id7=Reader(AvroDecoder(ORDER_TEXT), ORDER_TEXT)))
    assert failures == []
    assert shown[2] is None  # a tombstone stays null
    first, encoding = shown[0]
    assert encoding == "json"
    assert first == {
        "id": 0, "customer": {"name": "c0", "email": "a@b.c"},
        # a union of several types as Spark's from_avro gives it: the branch taken set
        "note": {"member0": 5, "member1": None},
        "placed": "2026-05-01T12:00:00.250000Z", "day": "2026-05-01", "total": 12.34,
        "state": "PAID", "tags": {"x": 0}, "blob": base64.b64encode(b"\xff\x00").decode()}
    assert shown[1][0]["note"] == {"member0": None, "member1": "late"}
    assert decode_values([framed(7, avro_body(order(2, None)))], "avro", readers(
        id7=Reader(AvroDecoder(ORDER_TEXT), ORDER_TEXT)))[0][0][0]["note"] is None
    assert shown[1][0]["customer"] == {"name": "c1", "email": None}
    json.dumps(shown[0][0])  # JSON-ready


def test_each_schema_id_is_read_with_its_own_writer_schema() -> None:
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    v2 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                    {"name": "b", "type": "string"}]}

    def body(schema: dict, record: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
        return out.getvalue()

    t1, t2 = json.dumps(v1), json.dumps(v2)
    shown, failures = decode_values(
        [framed(1, body(v1, {"a": 1})), framed(2, body(v2, {"a": 2, "b": "x"})),
         framed(1, body(v1, {"a": 3}))], "avro",
        readers(id1=Reader(AvroDecoder(t1), t1), id2=Reader(AvroDecoder(t2), t2)))
    assert failures == []
    assert [s[0] for s in shown] == [{"a": 1}, {"a": 2, "b": "x"}, {"a": 3}]


def test_records_that_do_not_decode_are_base64_and_named() -> None:
    good = framed(7, avro_body(order(1, None)))
    values = [b"plain text", good, framed(9, b"\x02"), framed(7, b"\x80"), b"\x00\x00"]
    shown, failures = decode_values(values, "avro", readers(
        id7=Reader(AvroDecoder(ORDER_TEXT), ORDER_TEXT)))
    assert [(f.index, f.schema_id) for f in failures] == [(0, None), (2, 9), (3, 7), (4, None)]
    assert "first byte 0x70, not magic byte 0" in failures[0].reason
    assert failures[1] == Failure(2, 9, "schema id 9 is not in the registry")
    assert "Avro record cannot be decoded" in failures[2].reason
    assert "shorter than the 5-byte header" in failures[3].reason
    for i in (0, 2, 3, 4):
        assert shown[i] == (base64.b64encode(values[i]).decode(), "base64")
    assert shown[1][1] == "json" and shown[1][0]["id"] == 1


def _two_messages() -> str:
    """A .proto file of two messages as base64 FileDescriptorProto (what Confluent's Python
    serializer registers): Unit, then Reading with a nested message, an enum and a list."""
    f = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="kw/two.proto", package="kw",
                                               syntax="proto3")
    proto.message_type.add(name="Unit").field.add(name="symbol", number=1, type=f.TYPE_STRING,
                                                  label=f.LABEL_OPTIONAL)
    reading = proto.message_type.add(name="Reading")
    reading.enum_type.add(name="Kind").value.add(name="RAW", number=0)
    reading.enum_type[0].value.add(name="AVERAGE", number=1)
    where = reading.nested_type.add(name="Where")
    where.field.add(name="site", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    reading.field.add(name="sensor", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    reading.field.add(name="values", number=2, type=f.TYPE_DOUBLE, label=f.LABEL_REPEATED)
    reading.field.add(name="kind", number=3, type=f.TYPE_ENUM, type_name=".kw.Reading.Kind",
                      label=f.LABEL_OPTIONAL)
    reading.field.add(name="where", number=4, type=f.TYPE_MESSAGE,
                      type_name=".kw.Reading.Where", label=f.LABEL_OPTIONAL)
    return base64.b64encode(proto.SerializeToString()).decode()


def test_protobuf_records_of_a_later_message_by_their_indexes() -> None:
    schema = _two_messages()
    decoder = ProtobufDecoder(schema, message="kw.Reading")
    pool, _ = build_pool(schema)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kw.Reading"))
    body = cls(sensor="s1", values=[1.5, 2.0], kind=1, where={"site": "lab"}).SerializeToString()
    shown, failures = decode_values(
        [framed(3, write_message_indexes([1]) + body)], "protobuf",
        lambda schema_id, path: Reader(decoder, schema) if path == (1,) else "wrong message")
    assert failures == []
    assert shown[0] == ({"sensor": "s1", "values": [1.5, 2.0], "kind": "AVERAGE",
                         "where": {"site": "lab"}}, "json")


def test_json_schema_records() -> None:
    schema = json.dumps({"type": "object", "properties": {
        "n": {"type": "integer"}, "when": {"type": "string", "format": "date-time"}}})
    shown, failures = decode_values(
        [framed(4, b'{"n": 3, "when": "2026-05-01T12:00:00Z"}'), framed(4, b"{not json")],
        "json-schema", readers(id4=Reader(JsonSchemaDecoder(schema), schema)))
    assert shown[0] == ({"n": 3, "when": "2026-05-01T12:00:00Z"}, "json")
    assert [f.index for f in failures] == [1] and shown[1][1] == "base64"


def test_decoded_values_in_every_output_format() -> None:
    """As --value-format json shows parsed values: the value itself in JSON lines, compact
    JSON in a table cell, a CSV field and a format string's %s; a record that did not decode
    as base64, marked in a table as text marks bytes that are not UTF-8."""
    r = Record("t", 0, 5, 0, 0, b"k", framed(1, b"..."), (),
               value_view=({"a": [1, "å"]}, "json"))
    obj = json.loads(to_json(r, "text", "avro"))
    assert (obj["value"], obj["value_encoding"]) == ({"a": [1, "å"]}, "json")
    assert table_cells(r, "text", "avro")[4] == '{"a":[1,"å"]}'
    assert to_csv(r, "text", "avro").split(",", 6)[6].startswith('"{""a"":[1,""å""]}",json')
    assert compile_format("%k=%s\\n")(r, "text", "avro") == '{"a":[1,"å"]}'.join(
        ["k=", "\n"]).encode()
    bad = Record("t", 0, 6, 0, 0, b"k", b"\x01", (), value_view=("AQ==", "base64"))
    assert table_cells(bad, "text", "protobuf")[4] == "base64:AQ=="
    assert json.loads(to_json(bad, "text", "protobuf"))["value_encoding"] == "base64"
    assert compile_format("%s")(bad, "text", "protobuf") == b"AQ=="


def test_a_registry_format_needs_the_registry_and_the_registry_a_format() -> None:
    assert registry_decoder("text", "json", None) is None
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.MISSING_OPTION",
                          "--value-format avro: records are decoded "
                          "with their schemas from a Schema Registry; add --schema-registry URL") as e:
        registry_decoder("text", "avro", None)
    assert e.value.condition == MISSING_OPTION
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.MISSING_OPTION",
                          "--key-format protobuf and --value-format "
                          "json-schema: records are decoded"):
        registry_decoder("protobuf", "json-schema", None)
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS",
                          "--schema-registry is used by") as e:
        registry_decoder("text", "json", "http://registry:8081")
    assert e.value.condition == CONFLICTING_OPTIONS
    decoder = registry_decoder("avro", "text", "http://registry:8081")
    assert isinstance(decoder, RecordDecoder) and list(decoder.formats) == ["key"]


def test_a_bad_registry_url_never_shows_its_password() -> None:
    with pytest.raises(ConfigurationError) as e:
        registry_decoder("text", "avro", "ftp://user:s3cret@registry:8081")
    assert e.value.condition == INVALID_VALUE
    assert "s3cret" not in str(e.value) and "--schema-registry" in str(e.value)


def test_consume_loads_no_registry_module_unless_a_registry_format_is_chosen() -> None:
    """Starting ``consume`` (its help here) imports no registry client, Avro or Protobuf."""
    code = ("import sys\nfrom spark_kafka_wire.cli import main\n"
            "sys.argv = ['kafkawire', 'consume', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.rpartition("\n[")[2]
    assert "'spark_kafka_wire.cli.tail'" in loaded
    for module in ("fastavro", "google.protobuf", "spark_kafka_wire.client.registry.schema_registry",
                   "spark_kafka_wire.formats", "spark_kafka_wire.cli.registry_decoding"):
        assert f"'{module}'" not in loaded, module
