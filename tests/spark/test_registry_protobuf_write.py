"""``value.format=protobuf`` / ``key.format=protobuf`` writes (issue 32) against a real Schema
Registry (Apicurio, ``schema_registry``) and a real broker: what kafkawire writes, Confluent's
own ProtobufDeserializer (with the message class built from the schema kafkawire registered)
reads back from librdkafka's consumer, and kafkawire reads its own writes back equal. A
derived schema is registered as ``.proto`` text (issue 46 item 14), which protoc compiles back
to the derived descriptor and Confluent's deserializer fetches from the registry itself."""

from __future__ import annotations

import base64
import datetime as dt
import re
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, message_factory
from pyspark.sql import functions as F

from spark_kafka_wire.client.registry.proto_text import binary_schemas, compile_text
from spark_kafka_wire.formats.protobuf_codec import build_pool
from spark_kafka_wire.formats.protobuf_encode import derive_file, derived_text
from tests.support.librdkafka import consume
from tests.support.schema_registry import TOPIC_NAMES, confluent_client

UTC = dt.timezone.utc
FD = descriptor_pb2.FieldDescriptorProto


def _write(df, bootstrap: str, url: str, topic: str, **options: str) -> None:
    (df.write.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).option("schema.registry.url", url).options(**options)
     .mode("append").save())


def _read(spark, bootstrap: str, url: str, topic: str, **options: str):
    return (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("schema.registry.url", url)
            .options(**options).load())


def _class(registry: SchemaRegistryClient, schema_id: int, name: str | None = None) -> type:
    """The message class of a registered schema (base64 or .proto text, compiled by protoc),
    built by the protobuf runtime."""
    pool, file_name = build_pool(*binary_schemas(registry.get_schema(schema_id).schema_str))
    file = pool.FindFileByName(file_name)
    desc = pool.FindMessageTypeByName(name) if name else \
        list(file.message_types_by_name.values())[0]
    return message_factory.GetMessageClass(desc)


def _decoded(registry: SchemaRegistryClient, topic: str, raw: list[bytes], cls: type,
             field: str = MessageField.VALUE) -> list:
    # without the registry client: its writer-schema fetch asks for format=serialized, which
    # Apicurio answers for a schema registered as base64 (the tests' _register) by parsing it
    # as .proto text (a 500), and for text with the compiled descriptor's raw bytes in a JSON
    # string (not base64: Apicurio 3's ccompat API); the schema was checked above by building
    # ``cls`` from what the registry holds under the record's id
    del registry
    deserializer = ProtobufDeserializer(cls, conf=TOPIC_NAMES)
    return [deserializer(data, SerializationContext(topic, field)) for data in raw]


def _register(registry: SchemaRegistryClient, subject: str,
              fdp: descriptor_pb2.FileDescriptorProto) -> int:
    text = base64.b64encode(fdp.SerializeToString()).decode()
    return registry.register_schema(subject, Schema(text, "PROTOBUF"))


def _two_messages() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(
        name=f"kw/w_{uuid.uuid4().hex[:8]}.proto", package="kw.w", syntax="proto3")
    e = fdp.enum_type.add(name="Unit")
    e.value.add(name="C", number=0)
    e.value.add(name="K", number=1)
    first = fdp.message_type.add(name="Other")
    first.field.add(name="z", number=1, type=FD.TYPE_STRING, label=FD.LABEL_OPTIONAL)
    m = fdp.message_type.add(name="Reading")
    m.field.add(name="sensor", number=1, type=FD.TYPE_STRING, label=FD.LABEL_OPTIONAL)
    m.field.add(name="count", number=2, type=FD.TYPE_INT64, label=FD.LABEL_OPTIONAL)
    m.field.add(name="unit", number=3, type=FD.TYPE_ENUM, type_name=".kw.w.Unit",
                label=FD.LABEL_OPTIONAL)
    return fdp


def test_a_struct_column_is_written_as_confluent_protobuf(spark, bootstrap, schema_registry,
                                                          new_topic):
    topic = new_topic(1, "pb-write")
    rows = [(n, f"name {n}", dt.datetime(2026, 11, 26, 12, n, tzinfo=UTC), [n, n + 1],
             {"a": n}, None if n % 2 else f"maybe {n}", (n * 1.5, f"in {n}"))
            for n in range(1, 6)]
    df = spark.createDataFrame(
        rows, "id long, name string, at timestamp, tags array<int>, attrs map<string,int>, "
              "maybe string, inner struct<x: double, s: string>")
    value = F.struct(*[F.col(c) for c in df.columns]).alias("value")
    _write(df.select(F.col("name").alias("key"), value), bootstrap, schema_registry, topic,
           **{"value.format": "protobuf"})

    registry = confluent_client(schema_registry)
    registered = registry.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == "PROTOBUF"
    cls = _class(registry, registered.schema_id)
    assert cls.DESCRIPTOR.full_name == "kafkawire.topLevelRecord"
    assert [f.name for f in cls.DESCRIPTOR.fields] == df.columns
    got = sorted(consume({"bootstrap.servers": bootstrap}, topic, 5))
    for _, data in got:
        assert data[0] == 0 and int.from_bytes(data[1:5], "big") == registered.schema_id
        assert data[5] == 0  # message indexes [0]
    decoded = _decoded(registry, topic, [v for _, v in got], cls)
    for n, m in enumerate(decoded, start=1):
        assert (m.id, m.name, list(m.tags), dict(m.attrs)) == (n, f"name {n}", [n, n + 1],
                                                              {"a": n})
        assert m.at.ToDatetime(tzinfo=UTC) == dt.datetime(2026, 11, 26, 12, n, tzinfo=UTC)
        assert m.HasField("maybe") == (n % 2 == 0)
        assert (m.inner.x, m.inner.s) == (n * 1.5, f"in {n}")
    back = _read(spark, bootstrap, schema_registry, topic, **{"value.format": "protobuf"})
    got_rows = sorted(tuple(r.value) for r in back.select("value").collect())
    expected = sorted(tuple(r.value) for r in df.select(value).collect())
    # maps come back as dicts, timestamps in the session's zone: both sides through Spark
    assert got_rows == expected


def _without_json_names(msg: descriptor_pb2.DescriptorProto) -> None:
    for f in msg.field:
        f.ClearField("json_name")
    for nested in msg.nested_type:
        _without_json_names(nested)


def test_a_derived_schema_is_registered_as_proto_text(spark, bootstrap, schema_registry,
                                                       new_topic):
    """Issue 46 item 14: the registry holds ``.proto`` text (what Java's serializer registers
    and JavaScript clients parse), not base64; protoc compiles it to the descriptor kafkawire
    encoded with, and Confluent's ProtobufDeserializer, its message class built from that
    text, reads every record."""
    topic = new_topic(1, "pb-text")
    df = spark.createDataFrame(
        [(n, dt.datetime(2026, 11, 26, 12, n, tzinfo=UTC), [f"t{n}"], {"a": n},
          (n * 0.5, {n: (n, f"s{n}")})) for n in range(1, 4)],
        "id long, at timestamp, tags array<string>, attrs map<string,int>, "
        "inner struct<x: double, by_id: map<int, struct<n: int, s: string>>>")
    value = F.struct(*[F.col(c) for c in df.columns]).alias("value")
    _write(df.select(value), bootstrap, schema_registry, topic, **{"value.format": "protobuf"})

    registry = confluent_client(schema_registry)
    registered = registry.get_latest_version(f"{topic}-value")
    spark_type = df.select(value).schema["value"].dataType.jsonValue()
    text = registered.schema.schema_str
    assert text.startswith('syntax = "proto3";\npackage kafkawire;\n')
    assert text == derived_text(spark_type)
    main, files = compile_text(text)  # protoc, an independent parser
    compiled, derived = descriptor_pb2.FileDescriptorProto(), derive_file(spark_type)
    compiled.CopyFrom(files[main])  # a copy: compile_text's files are its cache's
    for fdp in (compiled, derived):
        fdp.ClearField("name")
        for msg in fdp.message_type:
            _without_json_names(msg)
    assert compiled == derived

    cls = _class(registry, registered.schema_id)  # from the registered text
    got = sorted(consume({"bootstrap.servers": bootstrap}, topic, 3))
    decoded = sorted((m.id, m.at.ToDatetime(tzinfo=UTC), list(m.tags), dict(m.attrs), m.inner.x,
                      {k: (v.n, v.s) for k, v in m.inner.by_id.items()})
                     for m in _decoded(registry, topic, [v for _, v in got], cls))
    assert decoded == [(n, dt.datetime(2026, 11, 26, 12, n, tzinfo=UTC), [f"t{n}"], {"a": n},
                        n * 0.5, {n: (n, f"s{n}")}) for n in range(1, 4)]


def test_key_and_value_protobuf_read_back(spark, bootstrap, schema_registry, new_topic):
    topic = new_topic(2, "pb-kv")
    df = spark.range(50).selectExpr(
        "named_struct('id', CAST(id + 1 AS STRING)) AS key",
        "named_struct('n', id + 1, 'half', (id + 1) / 2, 'even', id % 2 = 0) AS value")
    _write(df, bootstrap, schema_registry, topic,
           **{"value.format": "protobuf", "key.format": "protobuf"})
    back = _read(spark, bootstrap, schema_registry, topic,
                 **{"value.format": "protobuf", "key.format": "protobuf"})
    got = sorted((r.key.id, r.value.n, r.value.half, r.value.even) for r in back.collect())
    # every field nullable (optional): a false boolean reads back false, not null
    assert got == sorted((str(n), n, n / 2, (n - 1) % 2 == 0) for n in range(1, 51))


def test_pinned_id_and_latest_write_the_second_message(spark, bootstrap, schema_registry,
                                                       new_topic):
    """A schema registered by Python (two messages): value.schema.id with
    value.protobuf.message naming the second (indexes [1]), then use.latest.version."""
    topic = new_topic(1, "pb-pinned")
    registry = confluent_client(schema_registry)
    schema_id = _register(registry, f"{topic}-value", _two_messages())
    df = spark.createDataFrame([("s1", 1, "K"), ("s2", 2, "C")], "sensor string, count long, "
                               "unit string")
    value = F.struct("sensor", "count", "unit").alias("value")
    _write(df.select(value), bootstrap, schema_registry, topic,
           **{"value.format": "protobuf", "value.schema.id": str(schema_id),
              "value.protobuf.message": "kw.w.Reading"})
    _write(df.select(F.struct("sensor").alias("value")), bootstrap, schema_registry, topic,
           **{"value.format": "protobuf", "use.latest.version": "true",
              "value.protobuf.message": "kw.w.Reading"})
    got = consume({"bootstrap.servers": bootstrap}, topic, 4)
    assert {int.from_bytes(v[1:5], "big") for _, v in got} == {schema_id}
    assert {v[5:7] for _, v in got} == {b"\x02\x02"}  # indexes [1]
    cls = _class(registry, schema_id, "kw.w.Reading")
    decoded = sorted((m.sensor, m.count, m.unit) for m in
                      _decoded(registry, topic, [v for _, v in got], cls))
    assert decoded == [("s1", 0, 0), ("s1", 1, 1), ("s2", 0, 0), ("s2", 2, 0)]


def test_an_unknown_enum_name_fails_the_write_naming_column_topic_and_schema(
        spark, bootstrap, schema_registry, new_topic):
    topic = new_topic(1, "pb-bad")
    registry = confluent_client(schema_registry)
    schema_id = _register(registry, f"{topic}-value", _two_messages())
    df = spark.createDataFrame([("s1", 1, "FAHRENHEIT")], "sensor string, count long, "
                               "unit string")
    pattern = (rf"KAFKAWIRE_UNENCODABLE_VALUE.*value.*{re.escape(topic)}.*{schema_id}"
               rf"|FAHRENHEIT.*is not a value of enum kw\.w\.Unit")
    with pytest.raises(Exception, match=pattern) as failed:
        _write(df.select(F.struct("sensor", "count", "unit").alias("value")), bootstrap,
               schema_registry, topic, **{"value.format": "protobuf",
                                          "value.schema.id": str(schema_id),
                                          "value.protobuf.message": "kw.w.Reading"})
    text = str(failed.value)
    assert "UNENCODABLE" in text and topic in text and str(schema_id) in text
    assert "'FAHRENHEIT' is not a value of enum kw.w.Unit" in text


def test_an_incompatible_derived_schema_is_refused_naming_the_subject(
        spark, bootstrap, schema_registry, new_topic):
    topic = new_topic(1, "pb-incompatible")
    registry = confluent_client(schema_registry)
    _write(spark.range(2).selectExpr("named_struct('n', id) AS value"), bootstrap,
           schema_registry, topic, **{"value.format": "protobuf"})
    registry.set_compatibility(f"{topic}-value", "BACKWARD")
    # field 1 changes from int64 to string: Protobuf's wire types differ, not compatible
    second = spark.range(2).selectExpr("named_struct('n', CAST(id AS STRING)) AS value")
    pattern = rf"\[KAFKAWIRE_SCHEMA_REGISTRY\.INCOMPATIBLE\].*{re.escape(topic)}-value"
    with pytest.raises(Exception, match=pattern):
        _write(second, bootstrap, schema_registry, topic, **{"value.format": "protobuf"})
    assert len(consume({"bootstrap.servers": bootstrap}, topic, 3, timeout_s=5)) == 2


def test_a_decimal_field_is_refused_before_any_write(spark, bootstrap, schema_registry,
                                                     new_topic):
    topic = new_topic(1, "pb-decimal")
    df = spark.range(1).selectExpr("named_struct('price', CAST(id AS DECIMAL(10,2))) AS value")
    with pytest.raises(Exception, match=r"field price is a decimal\(10,2\)"):
        _write(df, bootstrap, schema_registry, topic, **{"value.format": "protobuf"})


def test_write_stream_protobuf(spark, bootstrap, schema_registry, new_topic, tmp_path):
    topic = new_topic(1, "pb-stream")
    stream = (spark.readStream.format("rate").option("rowsPerSecond", 50).load()
              .selectExpr("named_struct('n', value + 1, 's', CAST(value AS STRING)) AS value"))
    query = (stream.writeStream.format("kafkawire")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
             .option("schema.registry.url", schema_registry)
             .option("value.format", "protobuf")
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        got = consume({"bootstrap.servers": bootstrap}, topic, 20, timeout_s=120)
    finally:
        query.stop()
    assert len(got) == 20
    back = _read(spark, bootstrap, schema_registry, topic, **{"value.format": "protobuf"})
    rows = [r.value for r in back.collect()]
    assert rows and all(r.s == str(r.n - 1) for r in rows)


def test_to_confluent_encodes_protobuf(spark, schema_registry):
    from spark_kafka_wire.functions import from_confluent, to_confluent  # noqa: PLC0415

    topic = f"pb-fn-{uuid.uuid4().hex[:10]}"
    options = {"schema.registry.url": schema_registry}
    df = spark.createDataFrame([(n + 1, f"s{n}") for n in range(3)], "n long, s string")
    out = df.select(to_confluent(F.struct("n", "s"), "protobuf", options, topic=topic)
                    .alias("value"))
    # the schema is derived and registered in the task: encoded first, then read back
    encoded = spark.createDataFrame([(r.value,) for r in out.collect()], "value binary")
    assert all(r.value[5] == 0 for r in encoded.collect())
    back = encoded.select(from_confluent("value", "protobuf", options, topic=topic).alias("r"))
    assert sorted(tuple(r.r) for r in back.collect()) == [(n + 1, f"s{n}") for n in range(3)]
