"""``value.format=avro`` / ``key.format=avro`` writes (issue 32) against a real Schema Registry
(Apicurio Registry) and a real broker: what kafkawire writes, Confluent's own
``AvroDeserializer`` (with its ``SchemaRegistryClient``) reads back from librdkafka's consumer,
and the schema kafkawire registered is the one Spark's ``to_avro`` derives from the column.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re

import confluent_kafka as ck
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from kafka.partitioner.default import murmur2
from pyspark.sql import functions as F

from tests.support.librdkafka import consume
from tests.support.schema_registry import TOPIC_NAMES, confluent_client

UTC = dt.timezone.utc


def _write(df, bootstrap: str, url: str, topic: str, **options: str) -> None:
    (df.write.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).option("schema.registry.url", url).options(**options)
     .mode("append").save())


def _decoded(registry: SchemaRegistryClient, topic: str, raw: list[bytes | None],
             field: str = MessageField.VALUE) -> list[dict | None]:
    deserializer = AvroDeserializer(registry, conf=TOPIC_NAMES)
    return [None if data is None else deserializer(data, SerializationContext(topic, field))
            for data in raw]


def test_a_struct_column_is_written_as_confluent_avro(spark, bootstrap, schema_registry,
                                                      new_topic):
    topic = new_topic(1, "avro-write")
    rows = [(n, f"name {n}", decimal.Decimal(f"{n}.25"), dt.date(2026, 1, 1 + n),
             dt.datetime(2026, 11, 26, 12, n, tzinfo=UTC), [n, n + 1], {"a": n},
             None if n % 2 else f"maybe {n}") for n in range(5)]
    df = spark.createDataFrame(
        rows, "id long, name string, price decimal(10,2), day date, at timestamp, "
              "tags array<int>, attrs map<string,int>, maybe string")
    value = F.struct(*[F.col(c) for c in df.columns]).alias("value")
    _write(df.select(F.col("name").alias("key"), value), bootstrap, schema_registry, topic,
           **{"value.format": "avro"})

    registry = confluent_client(schema_registry)
    registered = registry.get_latest_version(f"{topic}-value")
    schema = json.loads(registered.schema.schema_str)
    assert schema["type"] == "record" and schema["name"] == "topLevelRecord"
    fields = {f["name"]: f["type"] for f in schema["fields"]}
    assert fields["id"] == ["long", "null"] and fields["maybe"] == ["string", "null"]
    assert fields["day"][0] == {"type": "int", "logicalType": "date"}

    got = sorted(consume({"bootstrap.servers": bootstrap}, topic, 5))
    assert [k for k, _ in got] == [f"name {n}".encode() for n in range(5)]
    for data in (v for _, v in got):
        assert data[0] == 0 and int.from_bytes(data[1:5], "big") == registered.schema_id
    decoded = _decoded(registry, topic, [v for _, v in got])
    for n, record in enumerate(decoded):
        assert record is not None
        assert record["id"] == n and record["name"] == f"name {n}"
        assert record["price"] == decimal.Decimal(f"{n}.25")
        assert record["day"] == dt.date(2026, 1, 1 + n)
        assert record["at"] == dt.datetime(2026, 11, 26, 12, n, tzinfo=UTC)
        assert record["tags"] == [n, n + 1] and record["attrs"] == {"a": n}
        assert record["maybe"] == (None if n % 2 else f"maybe {n}")


def test_what_kafkawire_writes_it_reads_back(spark, bootstrap, schema_registry, new_topic):
    topic = new_topic(2, "avro-roundtrip")
    df = spark.range(100).selectExpr(
        "named_struct('id', CAST(id AS STRING)) AS key",
        "named_struct('n', id, 'half', id / 2, 'even', id % 2 = 0) AS value")
    _write(df, bootstrap, schema_registry, topic,
           **{"value.format": "avro", "key.format": "avro"})
    back = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("schema.registry.url", schema_registry)
            .option("value.format", "avro").option("key.format", "avro").load())
    got = sorted((r.key.id, r.value.n, r.value.half, r.value.even) for r in back.collect())
    assert got == sorted((str(n), n, n / 2, n % 2 == 0) for n in range(100))


def test_tombstones_stay_null_and_keys_are_placed_by_their_encoded_bytes(
        spark, bootstrap, schema_registry, new_topic):
    """A null value is not encoded (a tombstone); the partition of each record is what Kafka's
    producer gives its encoded key (murmur2 of the framed bytes), as with Confluent's
    serializers."""
    topic = new_topic(4, "avro-keys")
    df = spark.createDataFrame([(f"k{n}", None if n == 3 else n) for n in range(20)],
                               "k string, n long")
    _write(df.select(F.struct("k").alias("key"),
                     F.when(F.col("n").isNotNull(), F.struct("n")).alias("value")),
           bootstrap, schema_registry, topic, **{"value.format": "avro", "key.format": "avro",
                                                "kafka.partitioner": "murmur2"})
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    messages = []
    try:
        while len(messages) < 20:
            msg = consumer.poll(10)
            assert msg is not None, f"only {len(messages)} records arrived"
            assert msg.error() is None, msg.error()
            messages.append(msg)
    finally:
        consumer.close()
    registry = confluent_client(schema_registry)
    keys = _decoded(registry, topic, [m.key() for m in messages], MessageField.KEY)
    for msg, key in zip(messages, keys, strict=True):
        assert key is not None
        if key["k"] == "k3":
            assert msg.value() is None
    # Kafka's murmur2 (kafka-python's, an independent implementation) of the encoded key
    for msg in messages:
        assert msg.partition() == (murmur2(msg.key()) & 0x7FFFFFFF) % 4


def test_auto_register_off_needs_a_registered_schema(spark, bootstrap, schema_registry,
                                                     new_topic):
    topic = new_topic(1, "avro-noreg")
    df = spark.range(3).selectExpr("named_struct('n', id) AS value")
    pattern = rf"auto.register.schemas=false.*{re.escape(topic)}-value|{re.escape(topic)}-value.*auto.register"
    with pytest.raises(Exception, match=pattern):
        _write(df, bootstrap, schema_registry, topic,
               **{"value.format": "avro", "auto.register.schemas": "false"})
    # registered by hand (as to_avro derives it), the same write finds it and uses its id
    registry = confluent_client(schema_registry)
    derived = {"type": "record", "name": "topLevelRecord",
               "fields": [{"name": "n", "type": "long"}]}
    schema_id = registry.register_schema(f"{topic}-value", Schema(json.dumps(derived), "AVRO"))
    _write(df, bootstrap, schema_registry, topic,
           **{"value.format": "avro", "auto.register.schemas": "false"})
    got = consume({"bootstrap.servers": bootstrap}, topic, 3)
    assert {int.from_bytes(v[1:5], "big") for _, v in got} == {schema_id}


def test_use_latest_version_writes_with_the_registered_schema(spark, bootstrap, schema_registry,
                                                              new_topic):
    """The subject's latest schema, with a field the DataFrame lacks but that has a default
    and a long where the DataFrame has an int: the rows are written with that schema."""
    topic = new_topic(1, "avro-latest")
    registry = confluent_client(schema_registry)
    latest = {"type": "record", "name": "Reading", "namespace": "kafkawire.test", "fields": [
        {"name": "sensor", "type": "string"}, {"name": "count", "type": "long"},
        {"name": "unit", "type": "string", "default": "C"}]}
    schema_id = registry.register_schema(f"{topic}-value", Schema(json.dumps(latest), "AVRO"))
    df = spark.createDataFrame([("s1", 1), ("s2", 2)], "sensor string, count int")
    _write(df.select(F.struct("sensor", "count").alias("value")), bootstrap, schema_registry,
           topic, **{"value.format": "avro", "use.latest.version": "true"})
    got = consume({"bootstrap.servers": bootstrap}, topic, 2)
    assert {int.from_bytes(v[1:5], "big") for _, v in got} == {schema_id}
    # two tasks wrote the two rows: compared by value, not by arrival order
    assert sorted(_decoded(registry, topic, [v for _, v in got]), key=lambda r: r["sensor"]) \
        == [{"sensor": "s1", "count": 1, "unit": "C"}, {"sensor": "s2", "count": 2, "unit": "C"}]


def test_an_incompatible_schema_is_refused_before_any_task_writes(
        spark, bootstrap, schema_registry, new_topic):
    topic = new_topic(1, "avro-incompatible")
    registry = confluent_client(schema_registry)
    first = spark.range(2).selectExpr("named_struct('n', id) AS value")
    _write(first, bootstrap, schema_registry, topic, **{"value.format": "avro"})
    registry.set_compatibility(f"{topic}-value", "BACKWARD")
    # a new required field without a default: old records cannot be read with it
    second = spark.range(2).selectExpr("named_struct('n', id, 'm', CAST(id AS STRING)) AS value")
    pattern = (rf"\[KAFKAWIRE_SCHEMA_REGISTRY\.INCOMPATIBLE\].*{re.escape(topic)}-value")
    with pytest.raises(Exception, match=pattern):
        _write(second, bootstrap, schema_registry, topic, **{"value.format": "avro"})
    assert len(consume({"bootstrap.servers": bootstrap}, topic, 3, timeout_s=5)) == 2
