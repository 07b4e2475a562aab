"""Offsets committed to consumer groups and to ZooKeeper, checked by independent readers."""

from __future__ import annotations

import uuid

import confluent_kafka
import pytest
from kazoo.client import KazooClient

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.groups.group_offsets import commit_offsets, fetch_committed
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.zookeeper.consumer_offsets import (
    ZooKeeperError,
    ZooKeeperOffsetStore,
    offset_path,
)
from spark_kafka_wire.source.options import parse_stream_options
from spark_kafka_wire.testing.embedded import free_port
from tests.support.errors import raises_condition
from tests.support.zookeeper_server import ZK_PASSWORD, ZK_USER


def _group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


def test_commit_is_seen_by_librdkafka(bootstrap: str, client: KafkaClient, new_topic) -> None:
    topic = new_topic(3)
    group = _group()
    commit_offsets(client, group, {(topic, 0): 5, (topic, 1): 0, (topic, 2): 17})
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "enable.auto.commit": False})
    try:
        parts = consumer.committed(
            [confluent_kafka.TopicPartition(topic, p) for p in range(3)], timeout=20)
    finally:
        consumer.close()
    assert {(p.partition, p.offset) for p in parts} == {(0, 5), (1, 0), (2, 17)}
    assert all(p.error is None for p in parts)


def test_fetch_reads_librdkafka_commits_and_missing_is_minus_one(bootstrap: str, client: KafkaClient, new_topic) -> None:
    topic = new_topic(2)
    group = _group()
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, 0, 42)], asynchronous=False)
    finally:
        consumer.close()
    assert fetch_committed(client, group, [(topic, 0), (topic, 1)]) == {(topic, 0): 42, (topic, 1): -1}


def test_commits_overwrite(client: KafkaClient, new_topic) -> None:
    topic = new_topic(1)
    group = _group()
    for offset in (3, 9, 4):
        commit_offsets(client, group, {(topic, 0): offset})
        assert fetch_committed(client, group, [(topic, 0)]) == {(topic, 0): offset}


@pytest.mark.parametrize("release", ["0.8.2", "0.10.0"])
def test_legacy_brokers(legacy_broker, release: str) -> None:
    broker = legacy_broker(release)
    broker.create_topic("t", 2)
    pinned = release != "0.10.0"
    config = ClientConfig.from_servers(f"127.0.0.1:{broker.port}", api_version_request=not pinned,
                                       broker_version_fallback=release)
    with KafkaClient(config) as c:
        commit_offsets(c, "legacy-group", {("t", 0): 11, ("t", 1): 2})
        assert fetch_committed(c, "legacy-group", [("t", 0), ("t", 1)]) == {("t", 0): 11, ("t", 1): 2}
    keys = {(r.api_key, r.api_version) for r in broker.requests if r.api_key in (8, 9, 10)}
    commit_versions = {v for k, v in keys if k == 8}
    assert commit_versions and min(commit_versions) >= 1, "0.8.2+ commit to Kafka (v1+), not ZooKeeper"
    assert any(k == 10 for k, _ in keys), "the coordinator was looked up"


def test_zookeeper_layout_seen_by_kazoo(zookeeper: str) -> None:
    group = _group()
    with ZooKeeperOffsetStore(zookeeper) as store:
        store.commit(group, {("orders", 0): 100, ("orders", 3): 7})
        store.commit(group, {("orders", 0): 120})
        assert store.fetch(group, [("orders", 0), ("orders", 3), ("orders", 1)]) == {
            ("orders", 0): 120, ("orders", 3): 7, ("orders", 1): -1}
    zk = KazooClient(hosts=zookeeper)
    zk.start(timeout=15)
    try:
        assert zk.get(f"/consumers/{group}/offsets/orders/0")[0] == b"120"
        assert zk.get(f"/consumers/{group}/offsets/orders/3")[0] == b"7"
        assert sorted(zk.get_children(f"/consumers/{group}/offsets/orders")) == ["0", "3"]
        zk.ensure_path(f"/consumers/{group}/offsets/legacy")
        zk.create(f"/consumers/{group}/offsets/legacy/0", b"55\n")
    finally:
        zk.stop()
    with ZooKeeperOffsetStore(zookeeper) as store:
        assert store.fetch(group, [("legacy", 0)]) == {("legacy", 0): 55}


def test_zookeeper_offsets_over_tls_with_a_sasl_login(pki, secure_zookeeper) -> None:
    """commitOffsets=zookeeper on a ZooKeeper that requires TLS with client certificates and a
    SASL login: the stream's options carry the settings to the offset store, whose commits
    kazoo's own TLS client (files, not kafkawire's context) logged in as the same user reads."""
    group = _group()
    opts = parse_stream_options({
        "kafka.bootstrap.servers": "localhost:9092", "subscribe": "orders",
        "kafka.group.id": group, "commitOffsets": "zookeeper",
        "zookeeper.connect": secure_zookeeper.secure_connect,
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.ssl.truststore.location": pki.ca_pem,
        "zookeeper.ssl.keystore.location": pki.client.p12,
        "zookeeper.ssl.keystore.password": pki.store_password,
        "zookeeper.sasl.jaas.config": "org.apache.zookeeper.server.auth.DigestLoginModule "
                                      f'required username="{ZK_USER}" password="{ZK_PASSWORD}";',
    })
    assert opts.zookeeper_security is not None
    assert ZK_PASSWORD not in repr(opts) and pki.store_password not in repr(opts)
    with ZooKeeperOffsetStore(opts.zookeeper_connect or "", 10, opts.zookeeper_security) as store:
        store.commit(group, {("orders", 0): 42, ("orders", 1): 7})
        assert store.fetch(group, [("orders", 0), ("orders", 1)]) == {
            ("orders", 0): 42, ("orders", 1): 7}
    zk = KazooClient(hosts=secure_zookeeper.secure_connect, use_ssl=True, ca=pki.ca_pem,
                     certfile=pki.client.cert_pem, keyfile=pki.client.key_pem,
                     sasl_options={"mechanism": "DIGEST-MD5", "username": ZK_USER,
                                   "password": ZK_PASSWORD})
    zk.start(timeout=15)
    try:
        assert zk.get(offset_path(group, "orders", 0))[0] == b"42"
        assert zk.get(offset_path(group, "orders", 1))[0] == b"7"
    finally:
        zk.stop()
        zk.close()


def test_zookeeper_unreachable_is_a_clear_error() -> None:
    with ZooKeeperOffsetStore(f"127.0.0.1:{free_port()}", timeout_s=2) as store:
        with raises_condition(ZooKeeperError, "KAFKAWIRE_ZOOKEEPER", "did not answer within 2 s"):
            store.commit("g", {("t", 0): 1})


def test_offset_path_refuses_unsafe_names() -> None:
    assert offset_path("g", "t", 3) == "/consumers/g/offsets/t/3"
    for bad in ("a/b", "", ".."):
        with pytest.raises(ValueError):
            offset_path(bad, "t", 0)
