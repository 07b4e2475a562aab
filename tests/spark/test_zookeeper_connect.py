"""A batch write and read through Spark with ``zookeeper.connect`` alone: the brokers come from
their ZooKeeper registrations, looked up on the driver, and tasks get the resolved list."""

from __future__ import annotations

import json
import uuid

import pytest
from kazoo.client import KazooClient
from pyspark.sql import functions as F

from spark_kafka_wire.client.config import parse_bootstrap

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def test_batch_write_and_read_with_only_zookeeper_connect(spark, bootstrap, zookeeper,
                                                          new_topic) -> None:
    host, port = parse_bootstrap(bootstrap)[0]
    chroot = f"/spark-{uuid.uuid4().hex[:10]}"
    broker = KazooClient(hosts=zookeeper, timeout=15)  # the broker's own session
    broker.start(timeout=15)
    try:
        broker.create(f"{chroot}/brokers/ids/0", json.dumps({
            "version": 4, "host": host, "port": port, "jmx_port": -1, "timestamp": "1",
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "endpoints": [f"PLAINTEXT://{host}:{port}"]}).encode(),
            ephemeral=True, makepath=True)
        topic = new_topic(2, "zk")
        rows = [(f"k{i}", f"v{i}") for i in range(25)]
        (spark.createDataFrame(rows, "key string, value string")
         .write.format("kafkawire").mode("append")
         .option("zookeeper.connect", zookeeper + chroot).option("topic", topic).save())
        read = (spark.read.format("kafkawire")
                .option("zookeeper.connect", zookeeper + chroot).option("subscribe", topic)
                .load()
                .select(F.col("key").cast("string"), F.col("value").cast("string")))
        assert sorted(tuple(r) for r in read.collect()) == sorted(rows)
    finally:
        broker.stop()
        broker.close()
