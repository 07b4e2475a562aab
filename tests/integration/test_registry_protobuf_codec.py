"""kafkawire's Protobuf decoder against the real registry (Apicurio, the tests' fixture):
Confluent's ProtobufSerializer registers and frames records, kafkawire's own registry client
fetches the schema by the record's id, and the decoded column holds what was written;
evolution: a reader of a later version reads records of an earlier one (a field added), and
records with a field the reader no longer has (a field removed)."""

from __future__ import annotations

import struct
import uuid

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from spark_kafka_wire.client.registry.schema_registry import RegistryConfig
from spark_kafka_wire.client.registry.schema_registry import SchemaRegistryClient as KafkawireClient
from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder, decode_framed
from tests.support.schema_registry import TOPIC_NAMES, confluent_client

F = descriptor_pb2.FieldDescriptorProto
#: the tests' serializer settings: TopicNameStrategy (see tests/support/schema_registry.py)
SERIALIZER = {**TOPIC_NAMES, "auto.register.schemas": True}


def _reading(fields: list[tuple[str, int, int]]) -> type:
    """A Reading message class built at run time from a FileDescriptorProto (no protoc)."""
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"kw/reading_{uuid.uuid4().hex[:8]}.proto", package="kw.test", syntax="proto3")
    message = proto.message_type.add(name="Reading")
    for name, number, t in fields:
        message.field.add(name=name, number=number, type=t, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kw.test.Reading"))


V1 = [("sensor", 1, F.TYPE_STRING), ("value", 2, F.TYPE_DOUBLE)]
V2 = [*V1, ("unit", 3, F.TYPE_STRING)]
V3 = [V1[0], V2[2]]  # value removed


@pytest.fixture
def oracle(schema_registry: str) -> SchemaRegistryClient:
    client = confluent_client(schema_registry)
    yield client
    client.close()


def _write(oracle: SchemaRegistryClient, topic: str, cls: type, **values: object) -> bytes:
    context = SerializationContext(topic, MessageField.VALUE)
    # compatibility NONE: the test is about reading, not the registry's checks
    return ProtobufSerializer(cls, oracle, conf=SERIALIZER)(cls(**values), context)


def _decoder(schema_registry: str, data: bytes) -> ProtobufDecoder:
    ours = KafkawireClient(RegistryConfig((schema_registry,), request_timeout_s=30.0))
    got = ours.schema_by_id(struct.unpack(">I", data[1:5])[0])
    assert got.schema_type == "PROTOBUF"
    return ProtobufDecoder(got.schema)


def test_confluents_serializer_writes_kafkawire_reads_exactly(schema_registry, oracle):
    topic = f"pb-{uuid.uuid4().hex[:10]}"
    cls = _reading(V2)
    data = [_write(oracle, topic, cls, sensor=f"s-{i}", value=i + 0.25, unit="K")
            for i in range(5)]
    dec = _decoder(schema_registry, data[0])
    out = decode_framed(pa.array(data, pa.binary()), dec)
    assert not out.failed.any()
    assert out.array.to_pylist() == [{"sensor": f"s-{i}", "value": i + 0.25, "unit": "K"}
                                     for i in range(5)]


def test_evolution_field_added_and_removed(schema_registry, oracle):
    topic = f"pb-evo-{uuid.uuid4().hex[:10]}"
    oracle.set_compatibility(f"{topic}-value", "NONE")
    old = _write(oracle, topic, _reading(V1), sensor="a", value=1.5)
    new = _write(oracle, topic, _reading(V2), sensor="b", value=2.5, unit="C")
    dropped = _write(oracle, topic, _reading(V3), sensor="c", unit="F")
    # reader v2: v1's record lacks unit (null, Spark's proto3 default), v3's lacks value
    dec = _decoder(schema_registry, new)
    out = decode_framed(pa.array([old, new, dropped], pa.binary()), dec)
    assert not out.failed.any()
    assert out.array.to_pylist() == [{"sensor": "a", "value": 1.5, "unit": None},
                                     {"sensor": "b", "value": 2.5, "unit": "C"},
                                     {"sensor": "c", "value": None, "unit": "F"}]
    # reader v1: the added field of v2's record is unknown and skipped
    dec1 = _decoder(schema_registry, old)
    assert decode_framed(pa.array([new]), dec1).array.to_pylist() == [
        {"sensor": "b", "value": 2.5}]
