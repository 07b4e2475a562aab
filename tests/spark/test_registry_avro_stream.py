"""A stream of Avro values while the subject evolves (issue 32): a running query keeps the
reader schema it started with, records written with a newer schema are resolved to it, and a
restart on the same checkpoint takes the subject's latest schema (and a record the running
query's reader schema cannot read, a long where it has an int, fails it until then). Confluent's serializer
writes every record; Apicurio Registry holds the schemas."""

from __future__ import annotations

import json

import confluent_kafka as ck
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.support.schema_registry import TOPIC_NAMES, confluent_client

V1 = {"type": "record", "name": "Reading", "namespace": "kafkawire.test", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "count", "type": "int"}]}
# a field added with a default: a v1 reader skips it, a v2 reader fills it in for v1 records
V2 = {**V1, "fields": [*V1["fields"], {"name": "unit", "type": "string", "default": "C"}]}
# int promoted to long: a v3 reader reads v1 and v2 records, a v1 or v2 reader cannot read v3's
V3 = {**V1, "fields": [{"name": "sensor", "type": "string"}, {"name": "count", "type": "long"},
                       {"name": "unit", "type": "string", "default": "C"}]}


def _produce(bootstrap: str, registry: SchemaRegistryClient, topic: str, schema: dict,
             records: list[dict]) -> None:
    serializer = AvroSerializer(registry, json.dumps(schema), conf=TOPIC_NAMES)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for r in records:
        producer.produce(topic, serializer(r, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0


def test_a_running_stream_keeps_its_reader_schema_until_restarted(
        spark, bootstrap, schema_registry, new_topic, tmp_path):
    topic = new_topic(1, "avro-stream")
    registry = confluent_client(schema_registry)
    _produce(bootstrap, registry, topic, V1, [{"sensor": f"a{n}", "count": n} for n in range(3)])
    batches: list[tuple[list[str], list[dict]]] = []

    def collect(df, batch_id: int) -> None:
        rows = [r.value.asDict() for r in df.orderBy("offset").collect()]
        batches.append((df.schema["value"].dataType.fieldNames(), rows))

    def start():
        return (spark.readStream.format("kafkawire")
                .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
                .option("startingOffsets", "earliest")
                .option("schema.registry.url", schema_registry).option("value.format", "avro")
                .load().writeStream.foreachBatch(collect)
                .option("checkpointLocation", str(tmp_path / "checkpoint")).start())

    query = start()
    try:
        query.processAllAvailable()
        _produce(bootstrap, registry, topic, V2,
                 [{"sensor": f"b{n}", "count": 10 + n, "unit": "K"} for n in range(2)])
        query.processAllAvailable()
    finally:
        query.stop()
    before = [row for names, rows in batches if rows for row in rows]
    assert {tuple(names) for names, rows in batches if rows} == {("sensor", "count")}
    assert before == [{"sensor": f"a{n}", "count": n} for n in range(3)] + \
        [{"sensor": f"b{n}", "count": 10 + n} for n in range(2)]

    # restarted on the same checkpoint: the latest schema (v3) from now on
    batches.clear()
    _produce(bootstrap, registry, topic, V1, [{"sensor": "c0", "count": 7}])
    _produce(bootstrap, registry, topic, V3, [{"sensor": "c1", "count": 2**40, "unit": "F"}])
    query = start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    after = [row for names, rows in batches if rows for row in rows]
    assert {tuple(names) for names, rows in batches if rows} == {("sensor", "count", "unit")}
    assert after == [{"sensor": "c0", "count": 7, "unit": "C"},
                     {"sensor": "c1", "count": 2**40, "unit": "F"}]


def test_a_record_the_running_reader_schema_cannot_read_fails_the_stream(
        spark, bootstrap, schema_registry, new_topic, tmp_path):
    """Under FAILFAST, a v3 record (count: long) met by a query started with v1 (count: int)
    fails it naming the record; restarted, the query reads it with v3."""
    topic = new_topic(1, "avro-stream-fail")
    registry = confluent_client(schema_registry)
    _produce(bootstrap, registry, topic, V1, [{"sensor": "a", "count": 1}])
    seen: list[dict] = []

    def start():
        return (spark.readStream.format("kafkawire")
                .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
                .option("startingOffsets", "earliest")
                .option("schema.registry.url", schema_registry).option("value.format", "avro")
                .load().writeStream
                .foreachBatch(lambda df, _: seen.extend(r.value.asDict() for r in df.collect()))
                .option("checkpointLocation", str(tmp_path / "checkpoint")).start())

    query = start()
    try:
        query.processAllAvailable()
        _produce(bootstrap, registry, topic, V3, [{"sensor": "b", "count": 2**40, "unit": "K"}])
        pattern = (rf"KAFKAWIRE_UNDECODABLE_RECORD\] cannot decode the value of the record at "
                   rf"topic '{topic}', partition 0, offset 1 \(writer schema id \d+\): .*count")
        with pytest.raises(Exception, match=pattern):
            query.processAllAvailable()
    finally:
        query.stop()
    assert seen == [{"sensor": "a", "count": 1}]
    query = start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert seen[1:] == [{"sensor": "b", "count": 2**40, "unit": "K"}]
