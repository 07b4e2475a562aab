"""``value.format=avro`` / ``key.format=avro`` reads (issue 32) against a real Schema Registry
(Apicurio Registry, ``schema_registry``) and a real broker.

The records are written by Confluent's own serializer (confluent-kafka's ``AvroSerializer``
with its ``SchemaRegistryClient``, which registers the schemas) and librdkafka's producer; the
oracle of every value is Confluent's ``AvroDeserializer`` on the same bytes, turned into the
values Spark's ``from_avro`` gives (spark-avro's type mapping: enum and uuid as strings, a
union of several types as a struct of ``member0``, ``member1``, ...).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import uuid

import confluent_kafka as ck
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from tests.support.schema_registry import TOPIC_NAMES, confluent_client

EVERY_TYPE = {
    "type": "record", "name": "Everything", "namespace": "kafkawire.test",
    "fields": [
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "b", "type": "boolean"},
        {"name": "s", "type": "string"},
        {"name": "raw", "type": "bytes"},
        {"name": "color", "type": {"type": "enum", "name": "Color",
                                   "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal",
                                   "precision": 10, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "tags", "type": {"type": "array", "items": "int"}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "where", "type": {"type": "record", "name": "Place", "fields": [
            {"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}]}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "either", "type": ["int", "string"]},
    ],
}

EVERY_SPARK_TYPE = StructType([
    StructField("i", IntegerType(), False),
    StructField("l", LongType(), False),
    StructField("f", FloatType(), False),
    StructField("d", DoubleType(), False),
    StructField("b", BooleanType(), False),
    StructField("s", StringType(), False),
    StructField("raw", BinaryType(), False),
    StructField("color", StringType(), False),
    StructField("hash", BinaryType(), False),
    StructField("price", DecimalType(10, 2), False),
    StructField("day", DateType(), False),
    StructField("at_ms", TimestampType(), False),
    StructField("at_us", TimestampType(), False),
    StructField("local_us", TimestampNTZType(), False),
    StructField("id", StringType(), False),
    StructField("tags", ArrayType(IntegerType(), False), False),
    StructField("counts", MapType(StringType(), LongType(), False), False),
    StructField("where", StructType([StructField("lat", DoubleType(), False),
                                     StructField("lon", DoubleType(), False)]), False),
    StructField("note", StringType(), True),
    StructField("either", StructType([StructField("member0", IntegerType(), True),
                                      StructField("member1", StringType(), True)]), False),
])

UTC = dt.timezone.utc


def _record(n: int) -> dict:
    base = dt.datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    return {
        "i": n - 5, "l": n * 10**12, "f": n / 4, "d": n / 3, "b": n % 2 == 0,
        "s": f"text {n} ünïcode", "raw": bytes([n % 256, 0, 255]),
        "color": ("RED", "GREEN", "BLUE")[n % 3], "hash": n.to_bytes(4, "big"),
        "price": decimal.Decimal(f"{n}.{n % 100:02d}"),
        "day": dt.date(2026, 1, 1) + dt.timedelta(days=n),
        "at_ms": base + dt.timedelta(milliseconds=n * 1001),
        "at_us": base + dt.timedelta(microseconds=n * 1_000_001),
        "local_us": (base + dt.timedelta(seconds=n)).replace(tzinfo=None),
        "id": str(uuid.UUID(int=n)),
        "tags": list(range(n % 4)), "counts": {f"k{j}": j * n for j in range(n % 3)},
        "where": {"lat": n / 7, "lon": -n / 9},
        "note": None if n % 4 == 0 else f"note {n}",
        "either": n if n % 2 else f"s{n}",
    }


def _registry(url: str) -> SchemaRegistryClient:
    return confluent_client(url)


def _produce_avro(bootstrap: str, registry: SchemaRegistryClient, topic: str, schema: dict,
                  records: list[dict], field: str = MessageField.VALUE,
                  raw_between: dict[int, bytes] | None = None) -> list[bytes]:
    """Each record serialized by Confluent's AvroSerializer (registering ``schema`` under the
    topic's subject) and written with librdkafka to partition 0; ``raw_between`` puts other
    bytes at given positions. Returns the bytes written, in order."""
    serializer = AvroSerializer(registry, json.dumps(schema), conf=TOPIC_NAMES)
    written = []
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for n, record in enumerate(records):
        if raw_between and n in raw_between:
            written.append(raw_between[n])
            producer.produce(topic, value=raw_between[n], partition=0)
        data = serializer(record, SerializationContext(topic, field))
        written.append(data)
        if field == MessageField.VALUE:
            producer.produce(topic, value=data, partition=0)
        else:
            producer.produce(topic, key=data, value=b"v", partition=0)
    assert producer.flush(30) == 0
    return written


def _spark_value(value: object) -> object:
    """What Confluent's deserializer gives (fastavro's logical types), as Spark shows it."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {k: _spark_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_spark_value(v) for v in value]
    return value


def _expected(registry: SchemaRegistryClient, topic: str, written: list[bytes],
              reader: dict | None = None) -> list[dict]:
    deserializer = AvroDeserializer(registry, json.dumps(reader) if reader else None,
                                    conf=TOPIC_NAMES)
    out = []
    for data in written:
        record = _spark_value(deserializer(data, SerializationContext(topic, MessageField.VALUE)))
        if "either" in record:
            v = record["either"]
            record["either"] = {"member0": v if isinstance(v, int) else None,
                                "member1": v if isinstance(v, str) else None}
        out.append(record)
    return out


def _rows(table: pa.Table, column: str = "value") -> list[dict | None]:
    """A struct column as Python values: Arrow's maps (lists of pairs) as dicts."""
    def plain(v: object) -> object:
        if isinstance(v, list) and v and isinstance(v[0], tuple):
            return dict(v)
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v
    return [plain(v) for v in table.column(column).to_pylist()]


def _read(spark, bootstrap: str, url: str, topic: str, **options: str):
    return (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("schema.registry.url", url)
            .options(**options).load())


def _counts_as_dicts(rows: list[dict | None]) -> list[dict | None]:
    for r in rows:
        if r is not None and isinstance(r.get("counts"), list):
            r["counts"] = dict(r["counts"])
    return rows


def test_every_avro_type_reads_as_spark_from_avro_types_it(spark, bootstrap, schema_registry,
                                                             new_topic):
    topic = new_topic(1, "avro-every")
    registry = _registry(schema_registry)
    written = _produce_avro(bootstrap, registry, topic, EVERY_TYPE,
                            [_record(n) for n in range(40)])
    df = _read(spark, bootstrap, schema_registry, topic, **{"value.format": "avro"})
    assert df.schema["value"].dataType == EVERY_SPARK_TYPE
    meta = df.schema["value"].metadata
    latest = registry.get_latest_version(f"{topic}-value")
    assert meta["kafkawire.schema.id"] == latest.schema_id
    assert meta["kafkawire.schema.subject"] == f"{topic}-value"
    table = df.orderBy("offset").toArrow()
    assert _counts_as_dicts(_rows(table)) == _expected(registry, topic, written)
    assert table.column("key").null_count == len(table)


def test_evolved_records_are_resolved_to_the_latest_schema(spark, bootstrap, schema_registry,
                                                           new_topic):
    """Four versions under one subject (Apicurio's default compatibility, NONE, takes them
    all): a field added with a default, a field removed, int promoted to long, an enum symbol
    added. Each record is decoded with its own writer schema and resolved to the latest."""
    topic = new_topic(1, "avro-evolve")
    registry = _registry(schema_registry)
    v1 = {"type": "record", "name": "Reading", "namespace": "kafkawire.test", "fields": [
        {"name": "sensor", "type": "string"},
        {"name": "count", "type": "int"},
        {"name": "legacy", "type": "string"},
        {"name": "level", "type": {"type": "enum", "name": "Level",
                                   "symbols": ["LOW", "HIGH"], "default": "LOW"}}]}
    v2 = {**v1, "fields": [*v1["fields"], {"name": "unit", "type": "string", "default": "C"}]}
    v3 = {**v2, "fields": [f for f in v2["fields"] if f["name"] != "legacy"]}
    v4 = {**v3, "fields": [
        {**f, "type": "long"} if f["name"] == "count" else
        {**f, "type": {**f["type"], "symbols": ["LOW", "MID", "HIGH"]}} if f["name"] == "level"
        else f for f in v3["fields"]]}
    written = []
    for version, schema in enumerate((v1, v2, v3, v4), start=1):
        records = [{"sensor": f"s{version}-{n}", "count": version * 100 + n, "legacy": "old",
                    "level": "HIGH" if n else "LOW", "unit": "K"} for n in range(3)]
        if version == 4:
            records[2]["level"] = "MID"
        for r in records:  # the fields each version has
            names = {f["name"] for f in schema["fields"]}
            for k in set(r) - names:
                del r[k]
        written += _produce_avro(bootstrap, registry, topic, schema, records)
    df = _read(spark, bootstrap, schema_registry, topic, **{"value.format": "avro"})
    assert [f.name for f in df.schema["value"].dataType.fields] == \
        ["sensor", "count", "level", "unit"]
    assert df.schema["value"].dataType["count"].dataType == LongType()
    got = _rows(df.orderBy("offset").toArrow())
    assert got == _expected(registry, topic, written, reader=v4)
    assert got[0] == {"sensor": "s1-0", "count": 100, "level": "LOW", "unit": "C"}
    assert got[-1] == {"sensor": "s4-2", "count": 402, "level": "MID", "unit": "K"}


def test_a_pinned_version_is_the_reader_schema(spark, bootstrap, schema_registry, new_topic):
    topic = new_topic(1, "avro-pinned")
    registry = _registry(schema_registry)
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    v2 = {**v1, "fields": [*v1["fields"], {"name": "b", "type": "int", "default": 7}]}
    _produce_avro(bootstrap, registry, topic, v1, [{"a": 1}])
    _produce_avro(bootstrap, registry, topic, v2, [{"a": 2, "b": 3}])
    pinned = _read(spark, bootstrap, schema_registry, topic,
                   **{"value.format": "avro", "value.schema.version": "1"})
    assert _rows(pinned.orderBy("offset").toArrow()) == [{"a": 1}, {"a": 2}]
    by_id = registry.get_version(f"{topic}-value", 2).schema_id
    latest = _read(spark, bootstrap, schema_registry, topic,
                   **{"value.format": "avro", "value.schema.id": str(by_id)})
    assert _rows(latest.orderBy("offset").toArrow()) == [{"a": 1, "b": 7}, {"a": 2, "b": 3}]


def test_records_not_in_the_wire_format_fail_or_are_kept_raw(spark, bootstrap, schema_registry,
                                                             new_topic):
    topic = new_topic(1, "avro-corrupt")
    registry = _registry(schema_registry)
    schema = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
    garbage = b'{"a": 5}'
    _produce_avro(bootstrap, registry, topic, schema, [{"a": n} for n in range(4)],
                  raw_between={2: garbage})
    failfast = _read(spark, bootstrap, schema_registry, topic, **{"value.format": "avro"})
    pattern = (rf"\[KAFKAWIRE_UNDECODABLE_RECORD\] cannot decode the value of the record at "
               rf"topic '{re.escape(topic)}', partition 0, offset 2: .*magic byte.*"
               rf"mode=PERMISSIVE")
    with pytest.raises(Exception, match=pattern):
        failfast.collect()
    permissive = _read(spark, bootstrap, schema_registry, topic,
                       **{"value.format": "avro", "mode": "PERMISSIVE"})
    assert permissive.columns[-1] == "_corrupt_value"
    # collect(), not toArrow(): pyspark's toArrow casts the JVM's Arrow batches to the plan's
    # schema and refuses a null struct whose non-nullable field Spark's Arrow writer left null
    # ("nulls in input cannot be viewed as non-nullable"), whatever the source
    rows = permissive.orderBy("offset").collect()
    assert [r.value.asDict() if r.value else None for r in rows] == \
        [{"a": 0}, {"a": 1}, None, {"a": 2}, {"a": 3}]
    assert [r._corrupt_value for r in rows] == [None, None, bytearray(garbage), None, None]


def test_avro_keys_beside_raw_values(spark, bootstrap, schema_registry, new_topic):
    topic = new_topic(1, "avro-key")
    registry = _registry(schema_registry)
    schema = {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "string"}]}
    _produce_avro(bootstrap, registry, topic, schema, [{"id": f"k{n}"} for n in range(3)],
                  field=MessageField.KEY)
    df = _read(spark, bootstrap, schema_registry, topic, **{"key.format": "avro"})
    assert df.schema["value"].dataType == BinaryType()
    table = df.orderBy("offset").toArrow()
    assert _rows(table, "key") == [{"id": "k0"}, {"id": "k1"}, {"id": "k2"}]
    assert table.column("value").to_pylist() == [b"v"] * 3


def test_a_missing_subject_is_a_registry_error_naming_it(spark, bootstrap, schema_registry,
                                                         new_topic):
    topic = new_topic(1, "avro-nosubject")
    pattern = rf"\[KAFKAWIRE_SCHEMA_REGISTRY[.A-Z_]*\].*{re.escape(topic)}-value"
    with pytest.raises(Exception, match=pattern):
        _read(spark, bootstrap, schema_registry, topic, **{"value.format": "avro"}).collect()
