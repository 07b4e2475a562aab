"""Protobuf values decoded in Spark (issue 32): kafkawire ``value.format=protobuf`` against
Spark's own ``kafka`` format with ``from_protobuf`` (spark-protobuf) on the same topic, rows/s
and their ratio, and kafkawire's raw read of the same topic as the ceiling without decoding.

Run: ``python -m bench.protobuf_spark [--rows N]`` in the parity tier's Python (``make
bench`` runs it there: Spark's connector and spark-protobuf must be the running pyspark's
release). One Apache Kafka 4 broker (bench/broker.py), a real Schema Registry (Apicurio)
holding the schema as .proto text (as a Java producer registers it), 4 partitions of
``--rows`` records whose values are a 10-field message (the fields of bench/avro_spark.py:
about 200 bytes) in Confluent's framing (magic, id, message index 0), then one local[2]
SparkSession for every row: each read sums one field of the decoded value (the raw row: the
value's length), so every record is decoded; best of 2.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import confluent_kafka as ck
from google.protobuf import descriptor_pb2, message_factory

from bench.broker import bench_broker, jvm_options

SCHEMA = """syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Order {
  enum State { NEW = 0; PAID = 1; SHIPPED = 2; DONE = 3; }
  int64 id = 1;
  google.protobuf.Timestamp at = 2;
  int32 qty = 3;
  double price = 4;
  bool paid = 5;
  State state = 6;
  string customer = 7;
  string sku = 8;
  string address = 9;
  string note = 10;
}
"""
PARTITIONS = 4



def order_message(order: Any, n: int) -> Any:
    """Record ``n`` of the bench: an ``Order`` of SCHEMA (the message class ``order``)."""
    m = order(id=n, qty=n % 100, price=n / 7, paid=n % 2 == 0, state=n % 4,
              customer=f"customer-{n % 5000:05d}", sku=f"sku-{n % 997:04d}-blue-large",
              address=f"{n % 300} Long Street, Some Town, {n % 90:02d}000",
              note="deliver to the back door, ring twice")
    m.at.FromMilliseconds(1_790_000_000_000 + n)
    return m


def _produce(bootstrap: str, topic: str, rows: int, schema_id: int) -> None:
    from spark_kafka_wire.client.registry.proto_text import binary_schemas
    from spark_kafka_wire.formats.protobuf_codec import build_pool

    pool, _ = build_pool(binary_schemas(SCHEMA)[0])
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Order"))
    header = b"\0" + schema_id.to_bytes(4, "big") + b"\0"
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                            "batch.size": 1 << 20, "compression.type": "none"})
    for n in range(rows):
        m = order_message(order, n)
        while True:
            try:
                producer.produce(topic, header + m.SerializeToString(),
                                 partition=n % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


def _descriptor_set() -> bytes:
    from spark_kafka_wire.client.registry.proto_text import compile_text

    _, files = compile_text(SCHEMA)
    return bytes(descriptor_pb2.FileDescriptorSet(file=list(files.values()))
                 .SerializeToString())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.protobuf_spark")
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")

    from pyspark.sql import functions as F
    from pyspark.sql.protobuf.functions import from_protobuf

    from spark_kafka_wire.testing.session import QUIET, local_session
    from tests.support.librdkafka import create_topic
    from tests.support.schema_registry import ApicurioRegistry, confluent_client
    from tests.support.spark_kafka_connector import (
        ConnectorNotServed,
        protobuf_jars,
        session_conf,
    )

    try:
        protobuf_jars()
        conf, missing = session_conf(), ""
    except ConnectorNotServed as exc:
        # kafkawire's rows still mean something: measured, and Spark's row said missing
        conf, missing = {}, str(exc)

    registry = ApicurioRegistry().start()
    try:
        with bench_broker("kafka", ["PLAINTEXT"]) as broker:
            kafka = broker.kafka
            bootstrap = kafka["kafka.bootstrap.servers"]
            topic = "bench-protobuf"
            create_topic({"bootstrap.servers": bootstrap}, topic, PARTITIONS)
            from confluent_kafka.schema_registry import Schema

            schema_id = confluent_client(registry.url).register_schema(
                f"{topic}-value", Schema(SCHEMA, "PROTOBUF"))
            t0 = time.perf_counter()
            _produce(bootstrap, topic, args.rows, schema_id)
            print(f"# {broker.description}; Apicurio Registry {registry.version}; "
                  f"{args.rows:,} records of ~200 B Protobuf in {PARTITIONS} partitions "
                  f"(written in {time.perf_counter() - t0:.1f} s)")
            spark = local_session("bench-protobuf", conf={**conf, **QUIET})
            reads = {
                "kafkawire value.format=protobuf": lambda: (
                    spark.read.format("kafkawire").options(**kafka).option("subscribe", topic)
                    .option("schema.registry.url", registry.url)
                    .option("value.format", "protobuf").load().select("value.qty")),
                "Spark kafka + from_protobuf": lambda: (
                    spark.read.format("kafka").options(**jvm_options(kafka))
                    .option("subscribe", topic).load()
                    .select(from_protobuf(F.expr("substring(value, 7)"), "bench.Order",
                                          binaryDescriptorSet=descriptors)
                            .alias("value")).select("value.qty")),
                "kafkawire raw (no decoding)": lambda: (
                    spark.read.format("kafkawire").options(**kafka).option("subscribe", topic)
                    .load().select(F.length("value").alias("qty"))),
            }
            descriptors = _descriptor_set()
            rates = {}
            if missing:
                print(f"Spark kafka + from_protobuf: not measured ({missing})")
                del reads["Spark kafka + from_protobuf"]
            for name, make in reads.items():
                best = float("inf")
                for _ in range(2):
                    t0 = time.perf_counter()
                    total = make().agg(F.sum("qty")).collect()[0][0]
                    best = min(best, time.perf_counter() - t0)
                    assert total is not None
                rates[name] = args.rows / best
                print(f"{name:32s} {rates[name]:>12,.0f} rows/s  ({best:.2f} s)")
            if not missing:
                ratio = (rates["kafkawire value.format=protobuf"]
                         / rates["Spark kafka + from_protobuf"])
                print(f"kafkawire / Spark from_protobuf: {ratio:.2f}")
            spark.stop()
    finally:
        registry.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
