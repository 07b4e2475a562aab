"""``from_confluent`` / ``to_confluent`` (issue 32): Confluent's wire format as column functions
on any binary column, against the real registry; Confluent's serializers are the oracles."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from spark_kafka_wire.functions import from_confluent, to_confluent
from tests.support.schema_registry import TOPIC_NAMES, confluent_client

SCHEMA = {"type": "record", "name": "Reading", "namespace": "kafkawire.test", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "count", "type": "long"}]}


def _framed(url: str, topic: str, records: list[dict]) -> list[bytes]:
    serializer = AvroSerializer(confluent_client(url), json.dumps(SCHEMA), conf=TOPIC_NAMES)
    return [serializer(r, SerializationContext(topic, MessageField.VALUE)) for r in records]


def test_from_confluent_decodes_a_binary_column(spark, schema_registry):
    topic = "functions-read"
    data = _framed(schema_registry, topic, [{"sensor": f"s{n}", "count": n} for n in range(50)])
    df = spark.createDataFrame([(d,) for d in data] + [(None,)], "value binary")
    decoded = df.select(from_confluent("value", "avro", {"schema.registry.url": schema_registry},
                                       topic=topic).alias("reading"))
    assert decoded.schema["reading"].dataType == StructType([
        StructField("sensor", StringType(), False), StructField("count", LongType(), False)])
    rows = [r.reading.asDict() if r.reading else None for r in decoded.collect()]
    assert rows == [{"sensor": f"s{n}", "count": n} for n in range(50)] + [None]
    # by subject instead of topic, in a SQL expression's place
    by_subject = df.select(from_confluent(F.col("value"), "avro", {
        "schema.registry.url": schema_registry, "value.subject": f"{topic}-value"}).alias("r"))
    assert by_subject.where("r IS NOT NULL").count() == 50


def test_from_confluent_fails_or_gives_null_for_what_it_cannot_decode(spark, schema_registry):
    topic = "functions-corrupt"
    data = _framed(schema_registry, topic, [{"sensor": "a", "count": 1}])
    df = spark.createDataFrame([(data[0],), (b"not avro",)], "value binary")
    options = {"schema.registry.url": schema_registry}
    with pytest.raises(Exception, match=r"KAFKAWIRE_UNDECODABLE_RECORD\] cannot decode the "
                                        r"value of row \d+ of a batch of the column: .*magic"):
        df.select(from_confluent("value", "avro", options, topic=topic)).collect()
    permissive = df.select(from_confluent("value", "avro", {**options, "mode": "PERMISSIVE"},
                                          topic=topic).alias("r")).collect()
    assert [r.r.asDict() if r.r else None for r in permissive] == [
        {"sensor": "a", "count": 1}, None]


def test_to_confluent_writes_what_confluent_reads(spark, schema_registry):
    topic = "functions-write"
    df = spark.range(20).selectExpr("named_struct('sensor', CONCAT('s', id), 'count', id) AS r")
    options = {"schema.registry.url": schema_registry}
    encoded = df.select(to_confluent("r", "avro", options, topic=topic).alias("value"))
    raw = [bytes(r.value) for r in encoded.collect()]
    registry = confluent_client(schema_registry)
    deserializer = AvroDeserializer(registry, conf=TOPIC_NAMES)
    got = sorted((d["sensor"], d["count"]) for d in (
        deserializer(b, SerializationContext(topic, MessageField.VALUE)) for b in raw))
    assert got == sorted((f"s{n}", n) for n in range(20))
    registered = json.loads(registry.get_latest_version(f"{topic}-value").schema.schema_str)
    assert registered["name"] == "topLevelRecord"
    # and from_confluent reads them back
    back = encoded.select(from_confluent("value", "avro", options, topic=topic).alias("r"))
    assert sorted((r.r["sensor"], r.r["count"]) for r in back.collect()) == got


def test_to_confluent_with_the_registered_schema(spark, schema_registry):
    topic = "functions-latest"
    _framed(schema_registry, topic, [{"sensor": "x", "count": 0}])  # registers SCHEMA
    df = spark.createDataFrame([("a", 1), ("b", 2)], "sensor string, count int")
    encoded = df.select(to_confluent(F.struct("sensor", "count"), "avro", {
        "schema.registry.url": schema_registry, "use.latest.version": "true"}, topic=topic))
    schema_id = confluent_client(schema_registry).get_latest_version(
        f"{topic}-value").schema_id
    raw = [bytes(r[0]) for r in encoded.collect()]
    assert {int.from_bytes(b[1:5], "big") for b in raw} == {schema_id}
    deserializer = AvroDeserializer(confluent_client(schema_registry), conf=TOPIC_NAMES)
    assert [deserializer(b, SerializationContext(topic, MessageField.VALUE)) for b in raw] == [
        {"sensor": "a", "count": 1}, {"sensor": "b", "count": 2}]
