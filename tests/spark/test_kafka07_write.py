"""Spark writes to Kafka 0.7 clusters (issue 18, part 4): emulated 0.7 brokers 1 and 2 with two
partitions each of every topic, registered in a real ZooKeeper. What was written is judged by
the emulator's own decoding of its logs (tests/support/kafka07_broker.py) and partitions by
kafka-python's murmur2, never by kafkawire's code; a kafkawire read then round-trips it.

Global partitions: 0 = broker 1's partition 0, 1 = 1-1, 2 = 2-0, 3 = 2-1.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from kafka.partitioner.default import murmur2

from tests.support.kafka07_cluster import Cluster07, start_cluster


@pytest.fixture(scope="module")
def cluster(zookeeper: str) -> Iterator[Cluster07]:
    c = start_cluster(zookeeper, (2, 1))
    yield c
    c.stop()


def _stored(cluster: Cluster07, topic: str) -> dict[int, list[bytes]]:
    """Payloads per global partition, in log order, as the emulator decodes its logs."""
    return {n: [v for _, v in broker.payloads(topic, p)]
            for n in range(cluster.partitions(topic))
            for broker, p in [cluster.location(topic, n)]}


def _write(df, cluster: Cluster07, **options: str) -> None:
    df.write.format("kafkawire").options(**cluster.options(**options)).mode("append").save()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy"])
def test_keyed_rows_land_on_murmur2_of_the_global_numbering(spark, cluster, codec) -> None:
    topic = cluster.create_topic(partitions=2)
    rows = [(f"key-{i}", f"value-{i}-" + "x" * (i % 50)) for i in range(300)]
    df = spark.createDataFrame(rows, "key string, value string").repartition(3)
    _write(df, cluster, topic=topic, **{"kafka.compression.type": codec,
                                        "kafka.batch.size": "2000"})
    stored = _stored(cluster, topic)
    want: dict[int, list[bytes]] = {n: [] for n in range(4)}
    for key, value in rows:
        want[(murmur2(key.encode()) & 0x7FFFFFFF) % 4].append(value.encode())
    assert {n: sorted(v) for n, v in stored.items()} == {n: sorted(v) for n, v in want.items()}
    back = (spark.read.format("kafkawire").options(**cluster.options(subscribe=topic)).load()
            .selectExpr("partition", "cast(value as string) v").collect())
    assert sorted((r.partition, r.v.encode()) for r in back) == \
        sorted((n, v) for n, vs in want.items() for v in vs)


def test_unkeyed_rows_spread_and_the_partition_column_is_obeyed(spark, cluster) -> None:
    topic = cluster.create_topic(partitions=2)
    df = spark.range(400).selectExpr("cast(id as string) value").repartition(2)
    _write(df, cluster, topic=topic)
    stored = _stored(cluster, topic)
    assert sum(len(v) for v in stored.values()) == 400
    assert all(stored[n] for n in range(4))  # every partition got some
    pinned = spark.range(10).selectExpr("cast(id as string) value", "3 as partition")
    _write(pinned, cluster, topic=topic)
    assert sorted(_stored(cluster, topic)[3][-10:]) == sorted(str(i).encode() for i in range(10))
    with pytest.raises(Exception, match=r"(?s)column 'partition' holds 4.*partitions 0..3"):
        _write(spark.range(1).selectExpr("'v' value", "4 as partition"), cluster, topic=topic)


def test_a_new_topic_goes_to_partition_0_of_every_broker(spark, cluster) -> None:
    topic = f"t07-new-{uuid.uuid4().hex[:8]}"
    df = spark.range(100).selectExpr("cast(id as string) value").repartition(2)
    _write(df, cluster, topic=topic)
    got = [v for b in sorted(cluster.brokers) for _, v in
           cluster.brokers[b].payloads(topic, 0)]
    assert sorted(got) == sorted(str(i).encode() for i in range(100))
    assert all(cluster.brokers[b].payloads(topic, 0) for b in cluster.brokers)


def test_what_07_cannot_hold_is_refused(spark, cluster) -> None:
    topic = cluster.create_topic(partitions=2)
    with_headers = spark.createDataFrame(
        [("v", [("h", b"1")])], "value string, headers array<struct<key:string,value:binary>>")
    with pytest.raises(Exception, match="carry headers, which Kafka 0.7 messages cannot hold"):
        _write(with_headers, cluster, topic=topic)
    with pytest.raises(Exception, match="no null payload"):
        _write(spark.createDataFrame([(None,)], "value string"), cluster, topic=topic)
    # empty headers and a timestamp column are fine: nothing is lost
    ok = spark.createDataFrame([("v", [], None)], "value string, headers array<struct<key:"
                               "string,value:binary>>, timestamp timestamp")
    _write(ok, cluster, topic=topic)
    assert sum(len(v) for v in _stored(cluster, topic).values()) == 1


def test_a_set_the_broker_drops_is_an_error(spark, cluster) -> None:
    """0.7 brokers drop a message above their max.message.size silently; the log end that
    did not grow tells."""
    big = cluster.add_broker(3, max_message_size=1000)
    try:
        topic = cluster.create_topic(partitions=1, on=[3])
        with pytest.raises(Exception, match="the broker dropped what was sent"):
            _write(spark.createDataFrame([("x" * 5000,)], "value string"), cluster,
                   topic=topic)
    finally:
        big.stop()
        del cluster.brokers[3]


def test_a_stream_writes_each_row_once(spark, cluster, tmp_path) -> None:
    topic = cluster.create_topic(partitions=2)
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.json").write_text("\n".join(json.dumps({"value": f"s-{i}"})
                                             for i in range(50)))
    stream = spark.readStream.schema("value string").json(str(source))
    q = (stream.writeStream.format("kafkawire").options(**cluster.options(topic=topic))
         .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    (source / "b.json").write_text("\n".join(json.dumps({"value": f"s-{i}"})
                                             for i in range(50, 80)))
    q = (stream.writeStream.format("kafkawire").options(**cluster.options(topic=topic))
         .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    got = sorted(v for vs in _stored(cluster, topic).values() for v in vs)
    assert got == sorted(f"s-{i}".encode() for i in range(80))
