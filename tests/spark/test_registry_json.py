"""``value.format=json-schema`` (issue 32) against a real Schema Registry (Apicurio Registry)
and a real broker, both ways: records Confluent's ``JSONSerializer`` (with its
``SchemaRegistryClient``, which registers the schema) writes, kafkawire reads exactly; what
kafkawire writes, Confluent's ``JSONDeserializer`` reads back and validates against the schema
kafkawire registered."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import functions as F

from tests.support.librdkafka import consume, produce
from tests.support.schema_registry import TOPIC_NAMES, confluent_client

UTC = dt.timezone.utc

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order", "type": "object", "required": ["id"],
    "properties": {
        "id": {"type": "integer"},
        "customer": {"type": ["string", "null"]},
        "total": {"type": "number"},
        "paid": {"type": "boolean"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "lines": {"type": "array", "items": {"$ref": "#/definitions/Line"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
    "definitions": {"Line": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "integer"}}}},
}


def test_confluent_json_serializer_records_read_typed(spark, bootstrap, schema_registry,
                                                     new_topic):
    topic = new_topic(1, "json-read")
    registry = confluent_client(schema_registry)
    serializer = JSONSerializer(json.dumps(ORDER), registry, conf=TOPIC_NAMES)
    orders = [{"id": n, "customer": None if n % 2 else f"c{n}", "total": n * 1.5,
               "paid": n % 3 == 0, "day": f"2026-01-0{n + 1}",
               "at": f"2026-11-26T12:0{n}:00.5Z",
               "lines": [{"sku": f"s{n}", "qty": n}], "attrs": {"k": n}} for n in range(5)]
    produce({"bootstrap.servers": bootstrap}, topic, [
        (str(o["id"]).encode(), serializer(o, SerializationContext(topic, MessageField.VALUE)))
        for o in orders])

    df = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("schema.registry.url", schema_registry)
          .option("value.format", "json-schema").load())
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,customer:string,total:double,paid:boolean,day:date,at:timestamp,"
        "lines:array<struct<sku:string,qty:bigint>>,attrs:map<string,bigint>>")
    rows = [r.value.asDict(recursive=True) for r in df.orderBy("offset").collect()]
    for o, got in zip(orders, rows, strict=True):
        assert got["id"] == o["id"] and got["customer"] == o["customer"]
        assert got["total"] == o["total"] and got["paid"] == o["paid"]
        assert got["day"] == dt.date.fromisoformat(o["day"])
        expected_at = dt.datetime.fromisoformat(o["at"].replace("Z", "+00:00"))
        assert got["at"].astimezone(UTC) == expected_at
        assert got["lines"] == o["lines"] and got["attrs"] == o["attrs"]


def test_what_kafkawire_writes_confluent_json_deserializer_reads(spark, bootstrap,
                                                                 schema_registry, new_topic):
    topic = new_topic(1, "json-write")
    df = spark.range(5).selectExpr(
        "CAST(id AS STRING) AS key",
        "named_struct('n', id, 'name', IF(id % 2 = 0, CONCAT('x', id), NULL), "
        "'half', id / 2, 'day', DATE_ADD(DATE'2026-01-01', CAST(id AS INT)), "
        "'tags', ARRAY(CAST(id AS STRING))) AS value")
    (df.write.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).option("schema.registry.url", schema_registry)
     .option("value.format", "json-schema").mode("append").save())

    registry = confluent_client(schema_registry)
    registered = registry.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == "JSON"
    assert json.loads(registered.schema.schema_str)["title"] == "topLevelRecord"
    got = sorted(consume({"bootstrap.servers": bootstrap}, topic, 5))
    deserializer = JSONDeserializer(None, schema_registry_client=registry, conf=TOPIC_NAMES)
    for n, (_, data) in enumerate(got):
        assert data[0] == 0 and int.from_bytes(data[1:5], "big") == registered.schema_id
        record = deserializer(data, SerializationContext(topic, MessageField.VALUE))
        assert record == {"n": n, "name": None if n % 2 else f"x{n}", "half": n / 2,
                          "day": (dt.date(2026, 1, 1) + dt.timedelta(days=n)).isoformat(),
                          "tags": [str(n)]}

    back = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("schema.registry.url", schema_registry)
            .option("value.format", "json-schema").load())
    # Spark's write tasks append in any order: compare by value
    assert sorted(r.value.n for r in back.collect()) == list(range(5))
    assert back.select(F.col("value.day")).orderBy("day").first()[0] == dt.date(2026, 1, 1)


def test_permissive_keeps_records_that_are_not_json_and_avro_subjects_are_refused(
        spark, bootstrap, schema_registry, new_topic):
    topic = new_topic(1, "json-bad")
    registry = confluent_client(schema_registry)
    serializer = JSONSerializer(json.dumps(ORDER), registry, conf=TOPIC_NAMES)
    good = serializer({"id": 1}, SerializationContext(topic, MessageField.VALUE))
    garbage = good[:5] + b"{not json"
    produce({"bootstrap.servers": bootstrap}, topic, [(b"a", good), (b"b", garbage)])

    def read(**options: str):
        return (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).option("schema.registry.url", schema_registry)
                .options(**options).load())

    with pytest.raises(Exception, match=r"offset 1.*not JSON of the reader schema"):
        read(**{"value.format": "json-schema"}).collect()
    rows = read(**{"value.format": "json-schema", "mode": "PERMISSIVE"}).orderBy("offset")
    got = [(r.value.id if r.value else None, r._corrupt_value) for r in rows.collect()]
    assert got == [(1, None), (None, bytearray(garbage))]
    with pytest.raises(Exception, match=r"value.format=avro needs a AVRO schema"):
        read(**{"value.format": "avro"})


def test_from_confluent_and_to_confluent_with_json_schema(spark, schema_registry):
    """The column functions speak JSON Schema too: Confluent's JSONSerializer's bytes in a
    binary column decode to the reader schema's struct; to_confluent's bytes are what
    Confluent's JSONDeserializer reads (and validates against the schema it registered)."""
    from spark_kafka_wire.functions import from_confluent, to_confluent  # noqa: PLC0415

    topic = f"json-fn-{uuid.uuid4().hex[:10]}"
    registry = confluent_client(schema_registry)
    serializer = JSONSerializer(json.dumps(ORDER), registry, conf=TOPIC_NAMES)
    context = SerializationContext(topic, MessageField.VALUE)
    data = [serializer({"id": n, "customer": f"c{n}", "lines": [{"sku": "s", "qty": n}]},
                       context) for n in range(4)]
    df = spark.createDataFrame([(d,) for d in data] + [(None,)], "value binary")
    options = {"schema.registry.url": schema_registry}
    decoded = df.select(from_confluent("value", "json-schema", options, topic=topic).alias("o"))
    assert decoded.schema["o"].dataType.simpleString().startswith(
        "struct<id:bigint,customer:string,total:double")
    got = [(r.o.id, r.o.customer, [x.asDict() for x in r.o.lines]) if r.o else None
           for r in decoded.collect()]
    assert got == [(n, f"c{n}", [{"sku": "s", "qty": n}]) for n in range(4)] + [None]

    out_topic = f"{topic}-out"
    written = spark.range(3).selectExpr("named_struct('n', id, 'tag', CONCAT('t', id)) AS r") \
        .select(to_confluent("r", "json-schema", options, topic=out_topic).alias("v"))
    deserializer = JSONDeserializer(None, schema_registry_client=registry, conf=TOPIC_NAMES)
    back = sorted((d["n"], d["tag"]) for d in (
        deserializer(bytes(r.v), SerializationContext(out_topic, MessageField.VALUE))
        for r in written.collect()))
    assert back == [(n, f"t{n}") for n in range(3)]
    assert registry.get_latest_version(f"{out_topic}-value").schema.schema_type == "JSON"
