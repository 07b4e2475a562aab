"""The tests' Schema Registry is a real one (issue 32): Confluent's own Python client and
serializers (confluent_kafka.schema_registry) register, fetch, version and check Avro, Protobuf
and JSON schemas on it, and round-trip records through it in Confluent's wire format.

What issue 32's decoders will rely on, each pinned here: ids and versions come back as
registered, a BACKWARD subject refuses a change old data cannot be read with and takes one it
can, and what Confluent's serializers write the deserializers read back with the registry's
schemas.
"""

from __future__ import annotations

import base64
import json
import struct
import uuid

import pytest
from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import (
    JSONDeserializer,
    JSONSerializer,
)
from confluent_kafka.schema_registry.protobuf import (
    ProtobufDeserializer,
    ProtobufSerializer,
)
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.support.schema_registry import TOPIC_NAMES, confluent_client

AVRO_V1 = {
    "type": "record", "name": "Reading", "namespace": "kafkawire.test",
    "fields": [{"name": "sensor", "type": "string"}, {"name": "value", "type": "double"}],
}
#: v1 plus a field with a default: BACKWARD compatible (a v2 reader fills it in for v1 data).
AVRO_V2 = {**AVRO_V1, "fields": [*AVRO_V1["fields"],
                                 {"name": "unit", "type": "string", "default": "C"}]}
#: v1 plus a field without a default: not BACKWARD compatible (v1 data has no value for it).
AVRO_BREAKING = {**AVRO_V1, "fields": [*AVRO_V1["fields"], {"name": "unit", "type": "string"}]}

PROTO = """syntax = "proto3";
package kafkawire.test;

message Reading {
  string sensor = 1;
  double value = 2;
}
"""

JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Reading", "type": "object",
    "properties": {"sensor": {"type": "string"}, "value": {"type": "number"}},
    "required": ["sensor", "value"], "additionalProperties": False,
}




@pytest.fixture
def registry(schema_registry: str) -> SchemaRegistryClient:
    # a timeout (the client has none by default): an answer that never comes fails the test
    client = confluent_client(schema_registry)
    yield client
    client.close()


def subject(prefix: str) -> str:
    """A subject of the test's own (the registry lives as long as the test session)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}-value"


def wire_id(data: bytes) -> int:
    """The schema id of a record in Confluent's wire format (magic byte 0, big-endian id)."""
    assert data[0] == 0, data[:8]
    return struct.unpack(">I", data[1:5])[0]


# ------------------------------------------------------------------ registration and lookups


def test_avro_schema_registers_and_is_found_by_id_and_latest(registry):
    name = subject("avro")
    schema_id = registry.register_schema(name, Schema(json.dumps(AVRO_V1), "AVRO"))

    by_id = registry.get_schema(schema_id)
    latest = registry.get_latest_version(name)

    assert by_id.schema_type == "AVRO"
    assert json.loads(by_id.schema_str) == AVRO_V1
    assert (latest.schema_id, latest.version, latest.subject) == (schema_id, 1, name)
    assert json.loads(latest.schema.schema_str) == AVRO_V1
    assert registry.get_versions(name) == [1]
    assert name in registry.get_subjects()


def test_the_same_schema_registered_again_keeps_its_id_and_version(registry):
    name = subject("avro-again")
    first = registry.register_schema(name, Schema(json.dumps(AVRO_V1), "AVRO"))
    again = registry.register_schema(name, Schema(json.dumps(AVRO_V1), "AVRO"))

    assert again == first
    assert registry.get_versions(name) == [1]


def test_protobuf_schema_registers_and_is_found_by_id_and_latest(registry):
    name = subject("proto")
    schema_id = registry.register_schema(name, Schema(PROTO, "PROTOBUF"))

    by_id = registry.get_schema(schema_id)
    latest = registry.get_latest_version(name)

    assert by_id.schema_type == "PROTOBUF"
    assert "message Reading" in by_id.schema_str and "double value = 2;" in by_id.schema_str
    assert (latest.schema_id, latest.version) == (schema_id, 1)
    assert latest.schema.schema_type == "PROTOBUF"


def test_protobuf_reference_is_returned_with_the_schema(registry):
    """A schema importing another names it in its references (name, subject, version), as
    Confluent's registry returns them; the imported file is a subject of its own."""
    common = f"kafkawire-common-{uuid.uuid4().hex[:8]}"
    unit = ('syntax = "proto3";\npackage kafkawire.common;\n\n'
            "message Unit {\n  string symbol = 1;\n}\n")
    registry.register_schema(common, Schema(unit, "PROTOBUF"))
    reading = ('syntax = "proto3";\npackage kafkawire.test;\n\nimport "kafkawire/unit.proto";\n\n'
               "message Reading {\n  double value = 1;\n  kafkawire.common.Unit unit = 2;\n}\n")
    reference = SchemaReference("kafkawire/unit.proto", common, 1)
    name = subject("proto-ref")

    schema_id = registry.register_schema(name, Schema(reading, "PROTOBUF", [reference]))

    fetched = registry.get_schema(schema_id)
    latest = registry.get_latest_version(name)
    assert [(r.name, r.subject, r.version) for r in fetched.references] == [
        ("kafkawire/unit.proto", common, 1)]
    assert [(r.name, r.subject, r.version) for r in latest.schema.references] == [
        ("kafkawire/unit.proto", common, 1)]
    assert 'import "kafkawire/unit.proto";' in fetched.schema_str


def test_json_schema_registers_and_is_found_by_id_and_latest(registry):
    name = subject("json")
    schema_id = registry.register_schema(name, Schema(json.dumps(JSON_SCHEMA), "JSON"))

    by_id = registry.get_schema(schema_id)
    latest = registry.get_latest_version(name)

    assert by_id.schema_type == "JSON"
    assert json.loads(by_id.schema_str) == JSON_SCHEMA
    assert (latest.schema_id, latest.version) == (schema_id, 1)


def test_an_unknown_schema_id_is_a_404_with_confluents_error_code(registry):
    with pytest.raises(SchemaRegistryError) as caught:
        registry.get_schema(2_000_000_000)
    assert caught.value.http_status_code == 404
    assert caught.value.error_code == 40403  # Confluent's "schema not found"


# ------------------------------------------------------------------ compatibility and evolution


def test_backward_compatibility_refuses_a_field_without_default(registry):
    name = subject("avro-compat")
    registry.set_compatibility(name, "BACKWARD")
    registry.register_schema(name, Schema(json.dumps(AVRO_V1), "AVRO"))
    breaking = Schema(json.dumps(AVRO_BREAKING), "AVRO")

    assert registry.get_compatibility(name) == "BACKWARD"
    assert registry.test_compatibility(name, breaking) is False
    with pytest.raises(SchemaRegistryError) as caught:
        registry.register_schema(name, breaking)
    assert caught.value.http_status_code == 409
    assert registry.get_versions(name) == [1]


def test_a_field_added_with_a_default_registers_as_version_2(registry):
    name = subject("avro-evolve")
    registry.set_compatibility(name, "BACKWARD")
    v1 = registry.register_schema(name, Schema(json.dumps(AVRO_V1), "AVRO"))
    v2_schema = Schema(json.dumps(AVRO_V2), "AVRO")

    assert registry.test_compatibility(name, v2_schema) is True
    v2 = registry.register_schema(name, v2_schema)

    assert v2 != v1
    assert registry.get_versions(name) == [1, 2]
    latest = registry.get_latest_version(name)
    assert (latest.schema_id, latest.version) == (v2, 2)
    assert json.loads(registry.get_version(name, 1).schema.schema_str) == AVRO_V1


# ------------------------------------------------------------------ Confluent's serializers


def test_avro_serializer_round_trips_a_record_through_the_registry(registry):
    topic = f"readings-{uuid.uuid4().hex[:10]}"
    context = SerializationContext(topic, MessageField.VALUE)
    record = {"sensor": "s-1", "value": 21.5}

    data = AvroSerializer(registry, json.dumps(AVRO_V1), conf=TOPIC_NAMES)(record, context)

    registered = registry.get_latest_version(f"{topic}-value")  # TopicNameStrategy
    assert wire_id(data) == registered.schema_id
    assert AvroDeserializer(registry, conf=TOPIC_NAMES)(data, context) == record


def test_avro_data_of_version_1_reads_with_version_2_as_reader_schema(registry):
    """Schema resolution across versions: v1 bytes, v2 reader schema, the default filled in."""
    topic = f"evolving-{uuid.uuid4().hex[:10]}"
    context = SerializationContext(topic, MessageField.VALUE)
    registry.set_compatibility(f"{topic}-value", "BACKWARD")
    old = AvroSerializer(registry, json.dumps(AVRO_V1), conf=TOPIC_NAMES)(
        {"sensor": "s-2", "value": 3.0}, context)
    new = AvroSerializer(registry, json.dumps(AVRO_V2), conf=TOPIC_NAMES)(
        {"sensor": "s-3", "value": 4.0, "unit": "K"}, context)

    reader = AvroDeserializer(registry, json.dumps(AVRO_V2), conf=TOPIC_NAMES)

    assert wire_id(old) != wire_id(new)
    assert registry.get_versions(f"{topic}-value") == [1, 2]
    assert reader(old, context) == {"sensor": "s-2", "value": 3.0, "unit": "C"}
    assert reader(new, context) == {"sensor": "s-3", "value": 4.0, "unit": "K"}


def _reading_class() -> type:
    """The message class of PROTO, built from a FileDescriptorProto (no protoc needed): what
    ProtobufSerializer registers is this file's descriptor."""
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"kafkawire/reading_{uuid.uuid4().hex[:8]}.proto", package="kafkawire.test",
        syntax="proto3")
    message = proto.message_type.add(name="Reading")
    field = descriptor_pb2.FieldDescriptorProto
    message.field.add(name="sensor", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    message.field.add(name="value", number=2, type=field.TYPE_DOUBLE, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kafkawire.test.Reading"))


def test_protobuf_serializer_round_trips_a_message_through_the_registry(registry):
    """Confluent's Python ProtobufSerializer registers the file as a base64 FileDescriptorProto
    and its deserializer asks for it back with ``format=serialized``."""
    reading = _reading_class()
    topic = f"proto-{uuid.uuid4().hex[:10]}"
    context = SerializationContext(topic, MessageField.VALUE)

    data = ProtobufSerializer(reading, registry, conf=TOPIC_NAMES)(
        reading(sensor="s-4", value=7.25), context)

    assert wire_id(data) == registry.get_latest_version(f"{topic}-value").schema_id
    assert data[5] == 0  # message indexes: [0], the file's first message, written as one 0
    back = ProtobufDeserializer(reading, conf=TOPIC_NAMES, schema_registry_client=registry)(
        data, context)
    assert (back.sensor, back.value) == ("s-4", 7.25)


def test_a_protobuf_schema_registered_as_a_descriptor_comes_back_as_one(registry):
    """What a reader of the writer schema gets (issue 32's Protobuf decoder must take both
    forms): Apicurio returns the base64 FileDescriptorProto Confluent's Python serializer
    registered as it was sent (Confluent's registry returns .proto text), and fails such a
    schema with 500 when asked for ``format=serialized`` (see the report of issue 32)."""
    reading = _reading_class()
    topic = f"proto-desc-{uuid.uuid4().hex[:10]}"
    context = SerializationContext(topic, MessageField.VALUE)
    data = ProtobufSerializer(reading, registry, conf=TOPIC_NAMES)(reading(sensor="x"), context)

    fetched = registry.get_schema(wire_id(data))

    assert fetched.schema_type == "PROTOBUF"
    sent = descriptor_pb2.FileDescriptorProto()
    reading.DESCRIPTOR.file.CopyToProto(sent)
    assert descriptor_pb2.FileDescriptorProto.FromString(
        base64.standard_b64decode(fetched.schema_str)) == sent


def test_json_serializer_round_trips_a_record_through_the_registry(registry):
    topic = f"json-{uuid.uuid4().hex[:10]}"
    context = SerializationContext(topic, MessageField.VALUE)
    record = {"sensor": "s-5", "value": 1.5}

    data = JSONSerializer(json.dumps(JSON_SCHEMA), registry, conf=TOPIC_NAMES)(record, context)

    assert wire_id(data) == registry.get_latest_version(f"{topic}-value").schema_id
    read = JSONDeserializer(None, conf=TOPIC_NAMES, schema_registry_client=registry)
    assert read(data, context) == record
