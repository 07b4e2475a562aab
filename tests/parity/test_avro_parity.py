"""kafkawire's Avro columns against Spark's own ``from_avro`` / ``to_avro`` (spark-avro at the
running Spark's release, issue 32): the same Confluent-framed bytes read by kafkawire
``value.format=avro`` and by Spark's ``kafka`` format with ``from_avro`` of the Avro body give
the same type (nullability included) and the same values; what kafkawire writes, ``from_avro``
reads back as the struct that was written."""

from __future__ import annotations

import json
import uuid

import confluent_kafka as ck
import pytest
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from tests.spark.test_registry_avro_read import EVERY_TYPE, _record
from tests.support.schema_registry import TOPIC_NAMES, confluent_client

pytestmark = [pytest.mark.spark, pytest.mark.broker]

NESTED = {"type": "record", "name": "Basket", "namespace": "kafkawire.test", "fields": [
    {"name": "id", "type": "string"},
    {"name": "lines", "type": {"type": "array", "items": {
        "type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"},
            {"name": "note", "type": ["null", "string"], "default": None}]}}},
    {"name": "by_store", "type": {"type": "map", "values": {
        "type": "record", "name": "Stock", "fields": [{"name": "n", "type": "long"}]}}},
    {"name": "choice", "type": ["null", "int", "string", "Line"], "default": None},
]}


def _basket(n: int) -> dict:
    line = {"sku": f"sku-{n}", "qty": n, "note": None if n % 2 else "gift"}
    return {"id": f"b{n}", "lines": [line] * (n % 3),
            "by_store": {f"s{j}": {"n": j * n} for j in range(n % 4)},
            "choice": (None, n, f"c{n}", line)[n % 4]}


def _produce(bootstrap: str, url: str, topic: str, schema: dict, records: list[dict]) -> None:
    serializer = AvroSerializer(confluent_client(url), json.dumps(schema), conf=TOPIC_NAMES)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for r in records:
        producer.produce(topic, serializer(r, SerializationContext(topic, MessageField.VALUE)),
                         partition=0)
    assert producer.flush(30) == 0


def _both(spark, bootstrap: str, url: str, topic: str, schema: dict):
    kafka = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
             "startingOffsets": "earliest"}
    ours = (spark.read.format("kafkawire").options(**kafka)
            .option("schema.registry.url", url).option("value.format", "avro").load()
            .select("offset", "value"))
    # Spark's: the Avro body after Confluent's 5-byte header, with the writer schema
    theirs = (spark.read.format("kafka").options(**kafka).load()
              .select("offset", from_avro(F.expr("substring(value, 6)"), json.dumps(schema))
                      .alias("value")))
    return ours, theirs


@pytest.mark.parametrize("case", ["every-type", "nested"])
def test_the_same_bytes_read_by_from_avro_and_by_kafkawire(spark, bootstrap, schema_registry,
                                                           case: str) -> None:
    topic = f"avro-parity-{case}-{uuid.uuid4().hex[:8]}"
    schema, make = (EVERY_TYPE, _record) if case == "every-type" else (NESTED, _basket)
    _produce(bootstrap, schema_registry, topic, schema, [make(n) for n in range(24)])
    ours, theirs = _both(spark, bootstrap, schema_registry, topic, schema)
    assert ours.schema["value"].dataType == theirs.schema["value"].dataType
    assert ours.orderBy("offset").collect() == theirs.orderBy("offset").collect()


def test_what_kafkawire_writes_from_avro_reads_back(spark, bootstrap, schema_registry) -> None:
    topic = f"avro-parity-write-{uuid.uuid4().hex[:8]}"
    df = spark.range(30).selectExpr(
        "named_struct('id', id, 'name', CONCAT('n', id), 'price', CAST(id / 4 AS DECIMAL(10,2)),"
        " 'day', DATE_ADD(DATE'2026-01-01', CAST(id AS INT)), 'maybe', IF(id % 2 = 0, NULL, id),"
        " 'tags', ARRAY(id, id + 1), 'attrs', MAP('k', CAST(id AS STRING))) AS value")
    (df.write.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).option("createTopic", "true")
     .option("schema.registry.url", schema_registry).option("value.format", "avro")
     .mode("append").save())
    registered = confluent_client(schema_registry).get_latest_version(
        f"{topic}-value").schema.schema_str
    # the schema to_avro would use for this column (spark-avro's SchemaConverters.toAvroType,
    # as AvroSerializer/CatalystDataToAvro call it): kafkawire derives the same one
    jvm = spark._jvm
    derived = jvm.org.apache.spark.sql.avro.SchemaConverters.toAvroType(
        jvm.org.apache.spark.sql.types.DataType.fromJson(df.schema["value"].dataType.json()),
        df.schema["value"].nullable, "topLevelRecord", "")
    assert json.loads(registered) == json.loads(derived.toString())
    back = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load()
            .select(from_avro(F.expr("substring(value, 6)"), registered).alias("value")))
    assert back.schema["value"].dataType == df.schema["value"].dataType
    assert sorted(back.collect(), key=lambda r: r.value.id) == \
        sorted(df.collect(), key=lambda r: r.value.id)


V1 = {"type": "record", "name": "Order", "namespace": "kafkawire.test", "fields": [
    {"name": "id", "type": "long"}, {"name": "sku", "type": "string"}]}
#: v1 plus a field with a default: v1's records read with v2 get the default
V2 = {**V1, "fields": [*V1["fields"], {"name": "qty", "type": "int", "default": 7},
                       {"name": "note", "type": ["null", "string"], "default": None}]}


def test_evolution_matches_from_avro_with_a_reader_schema(spark, bootstrap,
                                                          schema_registry) -> None:
    """kafkawire resolves each record's writer schema to the latest (v2); Spark's from_avro
    takes one writer schema and, with option ``avroSchema``, a reader schema
    (AvroDataToCatalyst's expectedSchema): compared per writer-schema group."""
    topic = f"avro-parity-evolve-{uuid.uuid4().hex[:8]}"
    _produce(bootstrap, schema_registry, topic, V1,
             [{"id": n, "sku": f"s{n}"} for n in range(5)])
    _produce(bootstrap, schema_registry, topic, V2,
             [{"id": n, "sku": f"s{n}", "qty": n, "note": None if n % 2 else "x"}
              for n in range(5, 10)])
    ours, _ = _both(spark, bootstrap, schema_registry, topic, V2)
    kafka = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
             "startingOffsets": "earliest"}
    raw = spark.read.format("kafka").options(**kafka).load()
    reader = json.dumps(V2)
    groups = [raw.where("offset < 5").select(
                  "offset", from_avro(F.expr("substring(value, 6)"), json.dumps(V1),
                                      {"avroSchema": reader}).alias("value")),
              raw.where("offset >= 5").select(
                  "offset", from_avro(F.expr("substring(value, 6)"), reader).alias("value"))]
    theirs = groups[0].unionByName(groups[1])
    assert ours.schema["value"].dataType == theirs.schema["value"].dataType
    rows = ours.orderBy("offset").collect()
    assert rows == theirs.orderBy("offset").collect()
    assert rows[0].value.qty == 7 and rows[9].value.qty == 9
