"""``value.format=protobuf`` reads (issue 32) against a real Schema Registry (Apicurio,
``schema_registry``) and a real broker: Confluent's ProtobufSerializer registers the schema
and frames each message (message indexes after the id), librdkafka writes them, and the
DataFrame's rows are what the protobuf runtime parses from the same bytes, mapped as Spark's
from_protobuf does (enums as names, proto3 defaults as null, Timestamp as timestamp)."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import confluent_kafka as ck
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    timestamp_pb2,  # noqa: F401 (registers timestamp.proto)
)
from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from tests.support.schema_registry import TOPIC_NAMES, confluent_client

F = descriptor_pb2.FieldDescriptorProto
#: the tests' serializer settings: TopicNameStrategy (see tests/support/schema_registry.py)
SERIALIZER = {**TOPIC_NAMES, "auto.register.schemas": True}


def _reading(extra: bool = True, drop_value: bool = False) -> type:
    """A Reading message class from a FileDescriptorProto built here (no protoc)."""
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"kw/r_{uuid.uuid4().hex[:8]}.proto", package="kw.spark", syntax="proto3")
    proto.dependency.append("google/protobuf/timestamp.proto")
    e = proto.enum_type.add(name="Unit")
    e.value.add(name="C", number=0)
    e.value.add(name="K", number=1)
    m = proto.message_type.add(name="Reading")
    m.field.add(name="sensor", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    if not drop_value:
        m.field.add(name="value", number=2, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    m.field.add(name="unit", number=3, type=F.TYPE_ENUM, type_name=".kw.spark.Unit",
                label=F.LABEL_OPTIONAL)
    m.field.add(name="at", number=4, type=F.TYPE_MESSAGE,
                type_name=".google.protobuf.Timestamp", label=F.LABEL_OPTIONAL)
    m.field.add(name="samples", number=5, type=F.TYPE_INT64, label=F.LABEL_REPEATED)
    if extra:
        m.field.add(name="site", number=6, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(
        timestamp_pb2.DESCRIPTOR.serialized_pb))
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kw.spark.Reading"))


def _produce(bootstrap: str, registry: SchemaRegistryClient, topic: str, cls: type,
             records: list[dict]) -> list[bytes]:
    ser = ProtobufSerializer(cls, registry, conf=SERIALIZER)
    context = SerializationContext(topic, MessageField.VALUE)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    written = []
    for r in records:
        msg = cls(**{k: v for k, v in r.items() if k != "at"})
        if "at" in r:
            msg.at.FromDatetime(r["at"])
        data = ser(msg, context)
        written.append(data)
        producer.produce(topic, value=data, partition=0)
    assert producer.flush(30) == 0
    return written


def _read(spark, bootstrap: str, url: str, topic: str, **options: str):
    return (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("schema.registry.url", url)
            .option("value.format", "protobuf").options(**options).load())


def _expected(cls: type, data: bytes, fields: list[str]) -> dict:
    """The runtime's own parse of the bytes after the header and the single index byte."""
    assert data[5] == 0
    m = cls.FromString(data[6:])
    out: dict = {}
    for name in fields:
        if name == "samples":
            out[name] = list(m.samples)
        elif name == "at":
            out[name] = m.at.ToDatetime(tzinfo=dt.timezone.utc) if m.HasField("at") else None
        elif name == "unit":
            out[name] = cls.DESCRIPTOR.file.enum_types_by_name["Unit"].values_by_number[
                m.unit].name if m.unit else None
        elif hasattr(m, name):
            out[name] = getattr(m, name) or None
        else:
            out[name] = None
    return out


def test_protobuf_values_read_as_from_protobuf_types_them(spark, bootstrap, schema_registry,
                                                          new_topic):
    topic = new_topic(1, "pb-read")
    registry = confluent_client(schema_registry)
    cls = _reading()
    at = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)
    records = [{"sensor": f"s{n}", "value": n * 1.5, "unit": n % 2, "at": at,
                "samples": list(range(n)), "site": "x" if n else ""} for n in range(20)]
    written = _produce(bootstrap, registry, topic, cls, records)
    df = _read(spark, bootstrap, schema_registry, topic)
    assert df.schema["value"].dataType == StructType([
        StructField("sensor", StringType()), StructField("value", DoubleType()),
        StructField("unit", StringType()), StructField("at", TimestampType()),
        StructField("samples", ArrayType(LongType(), False)),
        StructField("site", StringType())])
    rows = df.orderBy("offset").toArrow().column("value").to_pylist()
    names = ["sensor", "value", "unit", "at", "samples", "site"]
    assert rows == [_expected(cls, d, names) for d in written]
    assert rows[1]["at"] == at and rows[0]["unit"] is None and rows[1]["unit"] == "K"


def test_protobuf_evolution_field_added_and_removed(spark, bootstrap, schema_registry,
                                                    new_topic):
    topic = new_topic(1, "pb-evo")
    registry = confluent_client(schema_registry)
    registry.set_compatibility(f"{topic}-value", "NONE")
    v1, v3 = _reading(extra=False), _reading(drop_value=True)
    _produce(bootstrap, registry, topic, v1, [{"sensor": "a", "value": 1.0}])
    _produce(bootstrap, registry, topic, v3, [{"sensor": "b", "site": "here"}])
    # the latest (value removed, site added) is the reader schema: v1's value is skipped
    rows = _read(spark, bootstrap, schema_registry, topic).orderBy("offset") \
        .toArrow().column("value").to_pylist()
    assert rows == [{"sensor": "a", "unit": None, "at": None, "samples": [], "site": None},
                    {"sensor": "b", "unit": None, "at": None, "samples": [], "site": "here"}]


def test_from_confluent_decodes_protobuf(spark, schema_registry):
    from spark_kafka_wire.functions import from_confluent  # noqa: PLC0415 (Spark tier only)

    topic = f"pb-fn-{uuid.uuid4().hex[:10]}"
    registry = confluent_client(schema_registry)
    cls = _reading()
    ser = ProtobufSerializer(cls, registry, conf=SERIALIZER)
    context = SerializationContext(topic, MessageField.VALUE)
    data = [ser(cls(sensor=f"s{n}", value=n + 0.5, samples=[n]), context) for n in range(3)]
    df = spark.createDataFrame([(d,) for d in data], "value binary")
    out = df.select(from_confluent("value", "protobuf", {"schema.registry.url": schema_registry},
                                   topic=topic).alias("r")).toArrow().column("r").to_pylist()
    names = ["sensor", "value", "unit", "at", "samples", "site"]
    assert out == [_expected(cls, d, names) for d in data]


def test_records_protobuf_cannot_decode_fail_the_read_or_are_kept_aside(
        spark, bootstrap, schema_registry, new_topic):
    """FAILFAST (the default) names the record; PERMISSIVE gives null and keeps the bytes in
    ``_corrupt_value``: a record not in Confluent's framing, one whose payload is not the
    message (a length running past its end), and one whose message indexes name no message
    of the schema."""
    topic = new_topic(1, "pb-bad")
    registry = confluent_client(schema_registry)
    cls = _reading()
    (good,) = _produce(bootstrap, registry, topic, cls, [{"sensor": "ok", "value": 2.5}])
    header = good[:5]
    truncated = header + b"\x00" + b"\x0a\x10abc"  # field 1 says 16 bytes, 3 follow
    no_such_message = header + b"\x02\x0a" + good[6:]  # indexes [5]: the file has one message
    bad = [b"plain text", truncated, no_such_message]
    producer = ck.Producer({"bootstrap.servers": bootstrap})
    for value in bad:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0

    def read(first: int, last: int, **options: str):
        span = {"startingOffsets": json.dumps({topic: {"0": first}}),
                "endingOffsets": json.dumps({topic: {"0": last}})}
        return _read(spark, bootstrap, schema_registry, topic, **span, **options)

    with pytest.raises(Exception, match=r"offset 1\b.*magic byte"):
        read(0, 2).collect()
    with pytest.raises(Exception, match=r"offset 2\b.*Protobuf record cannot be decoded"):
        read(2, 3).collect()
    with pytest.raises(Exception, match=r"offset 3\b.*message index \[5\]"):
        read(3, 4).collect()
    rows = read(0, 4, mode="PERMISSIVE").orderBy("offset").collect()
    got = [(r.value.sensor if r.value else None, r._corrupt_value) for r in rows]
    assert got == [("ok", None)] + [(None, bytearray(b)) for b in bad]


#: what a Java producer (KafkaProtobufSerializer) registers: .proto TEXT, importing another
#: text schema registered under its own subject, and a well-known type
COMMON_TEXT = """syntax = "proto3";
package kw.common;
message Place { string city = 1; sint32 floor = 2; }
"""
MAIN_TEXT = """syntax = "proto3";
package kw.text;
import "google/protobuf/timestamp.proto";
import "kw/common.proto";
message Event {
  string name = 1;
  kw.common.Place where = 2;
  map<string, int64> counts = 3;
  google.protobuf.Timestamp at = 4;
  oneof kind { string note = 5; uint32 code = 6; }
}
"""


def test_proto_text_schema_with_text_reference_registered_as_java_does(
        spark, bootstrap, schema_registry, new_topic):
    from confluent_kafka.schema_registry import Schema, SchemaReference  # noqa: PLC0415

    from spark_kafka_wire.client.registry.proto_text import binary_schemas  # noqa: PLC0415
    from spark_kafka_wire.formats.protobuf_codec import build_pool  # noqa: PLC0415

    topic = new_topic(1, "pb-text")
    registry = confluent_client(schema_registry)
    common_subject = f"kw-common-{uuid.uuid4().hex[:8]}"
    ref_id = registry.register_schema(common_subject, Schema(COMMON_TEXT, "PROTOBUF"))
    ref_version = registry.lookup_schema(common_subject, Schema(COMMON_TEXT, "PROTOBUF")).version
    assert ref_id > 0
    schema_id = registry.register_schema(f"{topic}-value", Schema(
        MAIN_TEXT, "PROTOBUF",
        [SchemaReference("kw/common.proto", common_subject, ref_version)]))
    # the registry hands the text back as text: what kafkawire must compile
    assert "message Event" in registry.get_schema(schema_id).schema_str
    pool, _ = build_pool(*binary_schemas(MAIN_TEXT, {"kw/common.proto": COMMON_TEXT}))
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kw.text.Event"))
    at = dt.datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc)
    messages = [cls(name="a", where={"city": "Oslo", "floor": -2}, counts={"x": 3}, at=at,
                    note="n"),
                cls(name="b", code=7),
                cls()]
    header = b"\x00" + schema_id.to_bytes(4, "big") + b"\x00"  # magic, id, indexes [0]
    producer = ck.Producer({"bootstrap.servers": bootstrap})
    for m in messages:
        producer.produce(topic, value=header + m.SerializeToString(), partition=0)
    assert producer.flush(30) == 0
    df = _read(spark, bootstrap, schema_registry, topic)
    assert [f.name for f in df.schema["value"].dataType.fields] == [
        "name", "where", "counts", "at", "note", "code"]
    rows = df.orderBy("offset").toArrow().column("value").to_pylist()
    assert rows == [
        {"name": "a", "where": {"city": "Oslo", "floor": -2}, "counts": [("x", 3)], "at": at,
         "note": "n", "code": None},
        {"name": "b", "where": None, "counts": [], "at": None, "note": None, "code": 7},
        {"name": None, "where": None, "counts": [], "at": None, "note": None, "code": None}]
