"""Spark streaming reads of Kafka 0.7 clusters (issue 18, part 4): micro-batches of byte-offset
ranges with checkpoints, rate limits counted in bytes and cut at message boundaries, offsets
committed to ZooKeeper in 0.7's layout, and brokers leaving ZooKeeper (partitions renumbered,
offsets translated by name). Emulated 0.7 brokers 1 and 2, two partitions each; data laid out
with the emulator's own encoders and judged by its own decoding.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from tests.support.kafka07_broker import encode_message_set
from tests.support.kafka07_cluster import Cluster07, start_cluster


@pytest.fixture
def cluster(zookeeper: str) -> Iterator[Cluster07]:
    c = start_cluster(zookeeper, (1, 2))
    yield c
    c.stop()


def _fill(cluster: Cluster07, topic: str, tag: str, per_partition: int = 6) -> list[bytes]:
    out = []
    for n in range(cluster.partitions(topic)):
        broker, p = cluster.location(topic, n)
        values = [f"{tag}-{n}-{i}-".encode() + b"y" * (5 * i) for i in range(per_partition)]
        broker.append(topic, p, encode_message_set(values))
        out += values
    return out


def _run(spark, cluster: Cluster07, topic: str, path, **options: str):
    """One availableNow run into Parquet files under ``path`` (checkpoint beside them)."""
    df = (spark.readStream.format("kafkawire")
          .options(**cluster.options(**{"subscribe": topic, "startingOffsets": "earliest",
                                        **options}))
          .load().selectExpr("partition", "offset", "value"))
    q = (df.writeStream.format("parquet").option("path", str(path / "out"))
         .option("checkpointLocation", str(path / "cp")).trigger(availableNow=True).start())
    q.awaitTermination(180)
    return q


def _seen(spark, path) -> list[tuple[int, int, bytes]]:
    try:
        rows = spark.read.parquet(str(path / "out")).collect()
    except Exception:  # noqa: BLE001 - no file written yet
        return []
    return sorted((r.partition, r.offset, bytes(r.value)) for r in rows)


def test_rate_limited_batches_restart_and_commit_to_zookeeper(spark, cluster, tmp_path) -> None:
    topic = cluster.create_topic(partitions=2)
    group = f"g07-{uuid.uuid4().hex[:6]}"
    values = _fill(cluster, topic, "a")
    opts = {"maxOffsetsPerTrigger": "120", "commitOffsets": "zookeeper", "kafka.group.id": group}
    q = _run(spark, cluster, topic, tmp_path, **opts)
    assert q.exception() is None
    batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert len(batches) > 3  # 4 x ~200 bytes at 120 bytes per trigger
    for p in batches:  # every end is a message boundary the emulator knows
        end = json.loads(p["sources"][0]["endOffset"])
        for n, offset in end[topic].items():
            broker, part = cluster.location(topic, int(n))
            assert offset in {o for o, _ in broker.payloads(topic, part)} | \
                {broker.end_offset(topic, part)}
        assert end["@layout07"] == {topic: ["1-0", "1-1", "2-0", "2-1"]}
    seen = _seen(spark, tmp_path)
    assert sorted(v for _, _, v in seen) == sorted(values)
    assert [(n, o) for n, o, _ in seen] == sorted(
        (n, o) for n in range(4) for o, _ in cluster.location(topic, n)[0].payloads(
            topic, cluster.location(topic, n)[1]))
    more = _fill(cluster, topic, "b", 3)
    q = _run(spark, cluster, topic, tmp_path, **opts)
    assert q.exception() is None
    assert sorted(v for _, _, v in _seen(spark, tmp_path)) == sorted(values + more)
    zk = KazooClient(hosts=cluster.connect)
    zk.start(timeout=15)
    try:
        for n, name in enumerate(["1-0", "1-1", "2-0", "2-1"]):
            data, _ = zk.get(f"/consumers/{group}/offsets/{topic}/{name}")
            broker, part = cluster.location(topic, n)
            assert int(data) == broker.end_offset(topic, part)
    finally:
        zk.stop()
        zk.close()
    # a new query of the same group starts where the group's offsets are
    latest = _fill(cluster, topic, "c", 1)
    q = _run(spark, cluster, topic, tmp_path / "group", commitOffsets="zookeeper",
             startingOffsets="group", **{"kafka.group.id": group})
    assert q.exception() is None
    assert sorted(v for _, _, v in _seen(spark, tmp_path / "group")) == sorted(latest)


def test_a_broker_leaving_renumbers_by_name(spark, cluster, tmp_path) -> None:
    topic = cluster.create_topic(partitions=2)
    first = _fill(cluster, topic, "a", 2)
    q = _run(spark, cluster, topic, tmp_path, failOnDataLoss="false")
    assert q.exception() is None and len(_seen(spark, tmp_path)) == len(first)
    cluster.brokers[1].deregister()  # broker 2's partitions become numbers 0 and 1
    cluster.topics[topic].pop(1)
    assert cluster.partitions(topic) == 2
    later = _fill(cluster, topic, "b", 2)
    q = _run(spark, cluster, topic, tmp_path, failOnDataLoss="false")
    assert q.exception() is None
    seen = _seen(spark, tmp_path)
    assert sorted(v for _, _, v in seen) == sorted(first + later)
    assert {n for n, _, v in seen if v.startswith(b"b-")} == {0, 1}


def test_a_broker_leaving_is_data_loss_by_default(spark, cluster, tmp_path) -> None:
    topic = cluster.create_topic(partitions=1)
    _fill(cluster, topic, "a", 2)
    assert _run(spark, cluster, topic, tmp_path).exception() is None
    cluster.brokers[1].deregister()
    cluster.topics[topic].pop(1)
    _fill(cluster, topic, "b", 1)
    with pytest.raises(Exception, match=r"(?s)partition 0, offset 37: Partitions 1-0 of the "
                       r"Kafka 0.7 brokers are gone from ZooKeeper"):
        _run(spark, cluster, topic, tmp_path)
