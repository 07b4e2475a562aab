"""``kafkawire consume --key-format/--value-format avro|protobuf|json-schema --schema-registry
URL`` against a real registry (Apicurio, Confluent's API) and the test broker: Confluent's own
serializers (confluent-kafka's AvroSerializer, JSONSerializer, ProtobufSerializer) register
the schemas and frame the records, librdkafka writes them, and what kafkawire prints is the
values written. A record that does not decode is a warning and base64, not the command's end."""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from decimal import Decimal
from urllib.parse import urlsplit, urlunsplit

import pytest
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.cli.conftest import run_cli
from tests.cli.test_cli_commands import rd_produce
from tests.support.schema_registry import TOPIC_NAMES, confluent_client

pytestmark = pytest.mark.broker

UTC = dt.timezone.utc
ORDER_V1 = {
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
        {"name": "lines", "type": {"type": "array", "items": "string"}},
    ]}
# a later version of the subject (a field with a default added: BACKWARD compatible)
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"],
                                   {"name": "channel", "type": "string", "default": "web"}]}
KEY = {"type": "record", "name": "OrderKey", "namespace": "shop",
       "fields": [{"name": "region", "type": "string"}, {"name": "n", "type": "int"}]}


@pytest.fixture
def registry(schema_registry: str):
    client = confluent_client(schema_registry)
    yield client
    client.close()


def context(topic: str, field: str = MessageField.VALUE) -> SerializationContext:
    return SerializationContext(topic, field)


def consume_json(kw, topic: str, *args: str) -> tuple[list[dict], str]:
    """The JSON lines ``consume TOPIC -e --format json ARGS`` prints, and its stderr."""
    result = kw("consume", topic, "-e", "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def order(i: int) -> dict:
    return {"id": i, "customer": {"name": f"c{i}", "email": None if i % 2 else f"c{i}@x.y"},
            "note": (None, 7, "gift")[i % 3],
            "placed": dt.datetime(2026, 5, 1, 12, 0, i, 125000, tzinfo=UTC),
            "day": dt.date(2026, 5, 1 + i), "total": Decimal(f"{i}.25"), "lines": ["a"] * i}


def order_shown(i: int) -> dict:
    """``order(i)`` as kafkawire shows it: from_avro's types in JSON."""
    return {"id": i, "customer": {"name": f"c{i}", "email": None if i % 2 else f"c{i}@x.y"},
            "note": (None if i % 3 == 0 else
                     {"member0": 7, "member1": None} if i % 3 == 1 else
                     {"member0": None, "member1": "gift"}),
            "placed": f"2026-05-01T12:00:{i:02d}.125000Z", "day": f"2026-05-{1 + i:02d}",
            "total": i + 0.25, "lines": ["a"] * i}


def test_avro_keys_and_values_of_two_schema_versions(kw, new_topic, bootstrap, registry,
                                                     schema_registry) -> None:
    topic = new_topic(1, "cli-avro")
    v1 = AvroSerializer(registry, json.dumps(ORDER_V1), conf=TOPIC_NAMES)
    v2 = AvroSerializer(registry, json.dumps(ORDER_V2), conf=TOPIC_NAMES)
    keys = AvroSerializer(registry, json.dumps(KEY), conf=TOPIC_NAMES)
    records = []
    for i in range(4):
        value = v1(order(i), context(topic)) if i < 2 else \
            v2({**order(i), "channel": "app"}, context(topic))
        records.append({"key": keys({"region": "eu", "n": i}, context(topic, MessageField.KEY)),
                        "value": value})
    rd_produce(bootstrap, topic, [*records, {"key": None, "value": None}])

    got, stderr = consume_json(kw, topic, "--key-format", "avro", "--value-format", "avro",
                               "--schema-registry", schema_registry)
    assert stderr == ""
    # each record read with its own writer schema: v1's have no channel, v2's have it
    assert [(o["key"], o["key_encoding"], o["value"], o["value_encoding"]) for o in got] == [
        *[({"region": "eu", "n": i}, "json", order_shown(i), "json") for i in range(2)],
        *[({"region": "eu", "n": i}, "json", {**order_shown(i), "channel": "app"}, "json")
          for i in range(2, 4)],
        (None, None, None, None)]  # a tombstone stays null
    # a format string and a table show the same values as compact JSON
    result = kw("consume", topic, "-e", "-c", "1", "--value-format", "avro", "-r",
                schema_registry, "--format", "%o %s\\n")
    assert result.exit_code == 0, result.stderr
    offset, _, text = result.stdout.rstrip("\n").partition(" ")
    assert (offset, json.loads(text)) == ("0", order_shown(0))
    assert " " not in text.replace("2026-05-01T12", "")  # compact
    # consume --group decodes the same way (cli/group_consume.py)
    grouped, _ = consume_json(kw, topic, "--group", f"kw-reg-{uuid.uuid4().hex[:8]}", "-o",
                              "beginning", "--value-format", "avro", "-r", schema_registry)
    assert [o["value"] for o in grouped] == [o["value"] for o in got]


JSON_SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Reading",
               "type": "object", "properties": {
                   "sensor": {"type": "string"}, "value": {"type": "number"},
                   "tags": {"type": "array", "items": {"type": "string"}},
                   "at": {"type": "string", "format": "date-time"}}}


def test_json_schema_values(kw, new_topic, bootstrap, registry, schema_registry) -> None:
    topic = new_topic(1, "cli-json")
    serialize = JSONSerializer(json.dumps(JSON_SCHEMA), registry, conf=TOPIC_NAMES)
    written = [{"sensor": f"s{i}", "value": i + 0.5, "tags": ["t"] * i,
                "at": f"2026-05-01T12:00:0{i}Z"} for i in range(3)]
    rd_produce(bootstrap, topic, [{"value": serialize(w, context(topic))} for w in written])
    got, stderr = consume_json(kw, topic, "--value-format", "json-schema",
                               "--schema-registry", schema_registry)
    assert stderr == ""
    assert [(o["value"], o["value_encoding"]) for o in got] == [(w, "json") for w in written]


def _reading_classes() -> tuple[type, type]:
    """Two messages of one file, built at run time (no protoc): Unit, then Reading with a
    nested message, an enum, a repeated and an int64 field; Confluent's serializer frames a
    Reading with message indexes [1]."""
    f = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"kw/cli_{uuid.uuid4().hex[:8]}.proto", package="kw.cli", syntax="proto3")
    proto.message_type.add(name="Unit").field.add(name="symbol", number=1, type=f.TYPE_STRING,
                                                  label=f.LABEL_OPTIONAL)
    reading = proto.message_type.add(name="Reading")
    kind = reading.enum_type.add(name="Kind")
    kind.value.add(name="RAW", number=0)
    kind.value.add(name="AVERAGE", number=1)
    place = reading.nested_type.add(name="Place")
    place.field.add(name="site", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    for name, number, t, label, type_name in [
            ("sensor", 1, f.TYPE_STRING, f.LABEL_OPTIONAL, None),
            ("count", 2, f.TYPE_INT64, f.LABEL_OPTIONAL, None),
            ("values", 3, f.TYPE_DOUBLE, f.LABEL_REPEATED, None),
            ("kind", 4, f.TYPE_ENUM, f.LABEL_OPTIONAL, ".kw.cli.Reading.Kind"),
            ("place", 5, f.TYPE_MESSAGE, f.LABEL_OPTIONAL, ".kw.cli.Reading.Place")]:
        field = reading.field.add(name=name, number=number, type=t, label=label)
        if type_name:
            field.type_name = type_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return tuple(message_factory.GetMessageClass(pool.FindMessageTypeByName(f"kw.cli.{n}"))
                 for n in ("Unit", "Reading"))  # type: ignore[return-value]


def test_protobuf_values_of_the_files_second_message(kw, new_topic, bootstrap, registry,
                                                     schema_registry) -> None:
    topic = new_topic(1, "cli-proto")
    _, reading = _reading_classes()
    serialize = ProtobufSerializer(reading, registry,
                                   conf={**TOPIC_NAMES, "auto.register.schemas": True})
    messages = [reading(sensor=f"s{i}", count=2**40 + i, values=[i, 0.5], kind=i % 2,
                        place={"site": f"lab{i}"}) for i in range(3)]
    data = [serialize(m, context(topic)) for m in messages]
    assert data[0][5:7] == b"\x02\x02"  # message indexes [1]: one index, 1 (zigzag)
    rd_produce(bootstrap, topic, [{"value": d} for d in data])
    got, stderr = consume_json(kw, topic, "--value-format", "protobuf", "-r", schema_registry)
    assert stderr == ""
    assert [(o["value"], o["value_encoding"]) for o in got] == [
        ({"sensor": f"s{i}", "count": 2**40 + i, "values": [float(i), 0.5],
          # RAW, the enum's default, is not on the wire: null, as from_protobuf reads it
          "kind": (None, "AVERAGE")[i % 2], "place": {"site": f"lab{i}"}}, "json")
        for i in range(3)]


def with_user_info(url: str, user_info: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, f"{user_info}@{parts.netloc}", parts.path, "", ""))


def test_records_that_do_not_decode_are_warned_of_and_shown_in_base64(
        kw, new_topic, bootstrap, registry, schema_registry) -> None:
    topic = new_topic(1, "cli-bad")
    serialize = AvroSerializer(registry, json.dumps(ORDER_V1), conf=TOPIC_NAMES)
    good = [serialize(order(i), context(topic)) for i in range(2)]
    unknown_id = b"\x00" + (2**31 - 7).to_bytes(4, "big") + good[0][5:]
    rd_produce(bootstrap, topic, [{"value": v} for v in (
        good[0], b"not avro", unknown_id, good[1][:8], good[1])])
    # Basic credentials in the URL (the registry ignores them): never printed
    url = with_user_info(schema_registry, "reader:s3cret-pw")
    got, stderr = consume_json(kw, topic, "--value-format", "avro", "--schema-registry", url)
    assert [(o["offset"], o["value_encoding"]) for o in got] == [
        (0, "json"), (1, "base64"), (2, "base64"), (3, "base64"), (4, "json")]
    assert got[0]["value"] == order_shown(0) and got[4]["value"] == order_shown(1)
    assert [base64.b64decode(o["value"]) for o in got[1:4]] == [
        b"not avro", unknown_id, good[1][:8]]
    # the URL's credentials go over plain http: said once (issue 45), the password not shown
    plain, *lines = stderr.splitlines()
    assert plain.startswith("kafkawire: warning: Schema Registry http://") and \
        "Basic credentials (the URL's user info) sent over plain http" in plain
    assert len(lines) == 3 and all(line.startswith("kafkawire: warning: the value of the "
                                                   f"record at offset {o} of {topic}-0 (")
                                   for line, o in zip(lines, (1, 2, 3), strict=True))
    assert "(not framed)" in lines[0] and "first byte 0x6e" in lines[0]
    assert f"(schema id {2**31 - 7})" in lines[1] and "not in the registry" in lines[1]
    own_id = int.from_bytes(good[1][1:5], "big")
    assert f"(schema id {own_id})" in lines[2] and "Avro record cannot be decoded" in lines[2]
    assert "s3cret" not in stderr
    # a table marks them as text marks bytes that are not UTF-8
    table = kw("consume", topic, "-e", "--value-format", "avro", "-r", url)
    assert table.exit_code == 0
    assert f"base64:{base64.b64encode(b'not avro').decode()}" in table.stdout


def test_a_registry_format_without_the_registry_is_a_usage_error() -> None:
    result = run_cli("-b", "127.0.0.1:1", "consume", "orders", "--value-format", "avro")
    assert result.exit_code == 2
    assert result.stderr == (
        "kafkawire: error: [KAFKAWIRE_CONFIGURATION.MISSING_OPTION] --value-format avro: "
        "records are decoded with their schemas from a Schema Registry; add --schema-registry "
        "URL\n")
