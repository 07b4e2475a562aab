"""Avro values decoded in Spark (issue 32 item 5): kafkawire ``value.format=avro`` against
Spark's own ``kafka`` format with ``from_avro`` (spark-avro) on the same topic, rows/s and
their ratio, and kafkawire's raw read of the same topic as the ceiling without decoding.

Run: ``python -m bench.avro_spark [--rows N]`` in the parity tier's Python (``make bench``
runs it there: Spark's connector and spark-avro must be the running pyspark's release). One
Apache Kafka 4 broker (bench/broker.py), a real Schema Registry (Apicurio, as the tests
start it), 4 partitions of ``--rows`` records whose values are a 10-field record (long,
timestamp-millis, int, double, boolean, an enum and four strings; about 200 bytes of Avro)
written by fastavro in Confluent's framing with the registered id, then one local[2]
SparkSession for every row: each read sums one field of the decoded value (the raw row: the
value's length), so every record is decoded; best of 2.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import time

import confluent_kafka as ck
import fastavro

from bench.broker import bench_broker, jvm_options

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "qty", "type": "int"},
    {"name": "price", "type": "double"},
    {"name": "paid", "type": "boolean"},
    {"name": "state", "type": {"type": "enum", "name": "State",
                               "symbols": ["NEW", "PAID", "SHIPPED", "DONE"]}},
    {"name": "customer", "type": "string"},
    {"name": "sku", "type": "string"},
    {"name": "address", "type": "string"},
    {"name": "note", "type": "string"},
]}
PARTITIONS = 4


def _produce(bootstrap: str, topic: str, rows: int, schema_id: int) -> None:
    parsed = fastavro.parse_schema(SCHEMA)
    header = b"\0" + schema_id.to_bytes(4, "big")
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                            "batch.size": 1 << 20, "compression.type": "none"})
    buffer = io.BytesIO()
    for n in range(rows):
        buffer.seek(0)
        buffer.truncate()
        fastavro.schemaless_writer(buffer, parsed, {
            "id": n, "at": 1_790_000_000_000 + n, "qty": n % 100, "price": n / 7,
            "paid": n % 2 == 0, "state": ("NEW", "PAID", "SHIPPED", "DONE")[n % 4],
            "customer": f"customer-{n % 5000:05d}", "sku": f"sku-{n % 997:04d}-blue-large",
            "address": f"{n % 300} Long Street, Some Town, {n % 90:02d}000",
            "note": "deliver to the back door, ring twice"})
        while True:
            try:
                producer.produce(topic, header + buffer.getvalue(), partition=n % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.avro_spark")
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")

    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from spark_kafka_wire.testing.session import QUIET, local_session
    from tests.support.librdkafka import create_topic
    from tests.support.schema_registry import ApicurioRegistry, confluent_client
    from tests.support.spark_kafka_connector import session_conf

    registry = ApicurioRegistry().start()
    try:
        with bench_broker("kafka", ["PLAINTEXT"]) as broker:
            kafka = broker.kafka
            bootstrap = kafka["kafka.bootstrap.servers"]
            topic = "bench-avro"
            create_topic({"bootstrap.servers": bootstrap}, topic, PARTITIONS)
            from confluent_kafka.schema_registry import Schema

            schema_id = confluent_client(registry.url).register_schema(
                f"{topic}-value", Schema(json.dumps(SCHEMA), "AVRO"))
            t0 = time.perf_counter()
            _produce(bootstrap, topic, args.rows, schema_id)
            print(f"# {broker.description}; Apicurio Registry {registry.version}; "
                  f"{args.rows:,} records of ~200 B Avro in {PARTITIONS} partitions "
                  f"(written in {time.perf_counter() - t0:.1f} s)")
            spark = local_session("bench-avro", conf={**session_conf(), **QUIET})
            reads = {
                "kafkawire value.format=avro": lambda: (
                    spark.read.format("kafkawire").options(**kafka).option("subscribe", topic)
                    .option("schema.registry.url", registry.url)
                    .option("value.format", "avro").load().select("value.qty")),
                "Spark kafka + from_avro": lambda: (
                    spark.read.format("kafka").options(**jvm_options(kafka))
                    .option("subscribe", topic).load()
                    .select(from_avro(F.expr("substring(value, 6)"), json.dumps(SCHEMA))
                            .alias("value")).select("value.qty")),
                "kafkawire raw (no decoding)": lambda: (
                    spark.read.format("kafkawire").options(**kafka).option("subscribe", topic)
                    .load().select(F.length("value").alias("qty"))),
            }
            rates = {}
            for name, make in reads.items():
                best = float("inf")
                for _ in range(2):
                    t0 = time.perf_counter()
                    total = make().agg(F.sum("qty")).collect()[0][0]
                    best = min(best, time.perf_counter() - t0)
                    assert total is not None
                rates[name] = args.rows / best
                print(f"{name:32s} {rates[name]:>12,.0f} rows/s  ({best:.2f} s)")
            ratio = rates["kafkawire value.format=avro"] / rates["Spark kafka + from_avro"]
            print(f"kafkawire / Spark from_avro: {ratio:.2f}")
            spark.stop()
    finally:
        registry.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
