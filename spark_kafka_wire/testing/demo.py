"""`make demo`: write a sample dataset to Kafka with kafkawire, read it back, report rates.

Uses the cluster in KAFKA_BOOTSTRAP_SERVERS when set, else starts the embedded broker.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.datasource import KafkaWireDataSource
from spark_kafka_wire.testing.embedded import EmbeddedBroker
from spark_kafka_wire.testing.session import QUIET


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    broker = None
    servers = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not servers:
        broker = EmbeddedBroker().start()
        servers = broker.bootstrap_servers
        print(f"started the embedded Tansu broker on {servers}")
    else:
        print(f"using the cluster at {servers}")
    spark = None
    try:
        topic = f"kafkawire-demo-{uuid.uuid4().hex[:8]}"
        with KafkaClient(ClientConfig.from_servers(servers)) as admin:
            create_topics(admin, [(topic, args.partitions)])
        builder = (
            SparkSession.builder.master("local[2]").appName("kafkawire-demo")
            .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", "4")
        )
        for key, value in QUIET.items():  # one by one: config(map=) is typed for other values
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.dataSource.register(KafkaWireDataSource)

        orders = spark.range(args.rows).select(
            F.concat(F.lit("customer-"), (F.col("id") % 1000).cast("string")).alias("key"),
            F.to_json(F.struct(
                F.col("id").alias("order_id"),
                (F.col("id") % 1000).alias("customer"),
                F.round(F.rand(seed=7) * 100, 2).alias("amount"),
            )).alias("value"),
        )
        t0 = time.perf_counter()
        (orders.write.format("kafkawire").option("kafka.bootstrap.servers", servers)
         .option("topic", topic).mode("append").save())
        write_s = time.perf_counter() - t0

        reader = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", servers)
                  .option("subscribe", topic))
        t0 = time.perf_counter()
        stats = reader.load().agg(
            F.count("*").alias("rows"), F.sum(F.length("value")).alias("bytes"),
            F.countDistinct("key").alias("keys"),
        ).collect()[0]
        read_s = time.perf_counter() - t0

        df = reader.load()
        per_partition = df.groupBy("partition").count().orderBy("partition").collect()
        amounts = df.select(F.from_json(F.col("value").cast("string"),
                                        "order_id long, customer long, amount double").alias("o"))
        total = amounts.agg(F.round(F.sum("o.amount"), 2)).collect()[0][0]

        print()
        print(f"topic            {topic} ({args.partitions} partitions)")
        print(f"written          {args.rows:,} rows in {write_s:.2f} s "
              f"= {args.rows / write_s:,.0f} rows/s")
        print(f"read back        {stats['rows']:,} rows, {stats['bytes']:,} value bytes in "
              f"{read_s:.2f} s = {stats['rows'] / read_s:,.0f} rows/s")
        print(f"distinct keys    {stats['keys']:,}")
        print("rows/partition   " + ", ".join(f"{r['partition']}: {r['count']:,}" for r in per_partition))
        print(f"sum of amounts   {total:,.2f}")
        df.orderBy("partition", "offset").select(
            F.col("key").cast("string"), F.col("value").cast("string"), "partition", "offset",
            "timestamp").show(3, truncate=60)
        if stats["rows"] != args.rows:
            print(f"MISMATCH: wrote {args.rows} rows but read {stats['rows']}", file=sys.stderr)
            return 1
        print("every written row was read back")
        return 0
    finally:
        if spark is not None:
            spark.stop()
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    sys.exit(main())
