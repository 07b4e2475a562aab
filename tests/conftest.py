"""Shared fixtures: one broker and one SparkSession per test session.

With KAFKA_BOOTSTRAP_SERVERS set, the suite runs against that cluster instead of the
embedded Tansu broker.
"""

from __future__ import annotations

import os
import sys
import uuid

import pytest

from spark_kafka_wire.client.admin import create_topics
from spark_kafka_wire.client.cluster import KafkaClient
from spark_kafka_wire.client.config import ClientConfig

EXTERNAL = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")


@pytest.fixture(scope="session")
def bootstrap() -> str:
    if EXTERNAL:
        yield EXTERNAL
        return
    from spark_kafka_wire.testing.embedded import EmbeddedBroker

    broker = EmbeddedBroker().start()
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def client(bootstrap: str) -> KafkaClient:
    c = KafkaClient(ClientConfig.from_servers(bootstrap, request_timeout_ms=10_000))
    yield c
    c.close()


@pytest.fixture
def new_topic(client: KafkaClient):
    """Factory: a fresh, uniquely named topic with the given partition count."""

    def make(partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        create_topics(client, [(name, partitions)])
        return name

    return make


@pytest.fixture(scope="session")
def zookeeper() -> str:
    """connect string of a real ZooKeeper (ZOOKEEPER_CONNECT, else Debian's package started
    on a free port); skipped, saying how to get it, where neither exists."""
    external = os.environ.get("ZOOKEEPER_CONNECT")
    if external:
        yield external
        return
    from tests.support.zookeeper_server import ZooKeeperServer, missing_jars

    missing = missing_jars()
    if missing:
        pytest.skip(
            "ZooKeeper tests need a ZooKeeper server: install Debian's package with "
            "'apt-get install zookeeper' (missing jars: " + ", ".join(missing) + ") or set "
            "ZOOKEEPER_CONNECT"
        )
    server = ZooKeeperServer().start()
    try:
        yield server.connect
    finally:
        server.stop()


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from spark_kafka_wire import KafkaWireDataSource

    session = (
        SparkSession.builder.master("local[2]")
        .appName("spark-kafka-wire-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.dataSource.register(KafkaWireDataSource)
    yield session
    session.stop()
