"""Spark batch reads of Kafka 0.7 clusters (issue 18, part 4): emulated 0.7 brokers 1 and 2
with two partitions each, registered in a real ZooKeeper; the data is laid out with the
emulator's own encoders (tests/support/kafka07_broker.py), never kafkawire's.

A topic's global partitions are 0 = 1-0, 1 = 1-1, 2 = 2-0, 3 = 2-1 (broker id, then
partition); ``offset`` is the byte offset of the message (of the compressed wrapper for the
records inside one); key, timestamp and headers are null.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support.kafka07_broker import (
    CODEC_GZIP,
    CODEC_SNAPPY,
    compressed_message,
    encode_message_set,
)
from tests.support.kafka07_cluster import Cluster07, start_cluster


@pytest.fixture(scope="module")
def cluster(zookeeper: str) -> Iterator[Cluster07]:
    c = start_cluster(zookeeper, (2, 1))
    yield c
    c.stop()


def _read(spark, cluster: Cluster07, **options: str):
    return (spark.read.format("kafkawire").options(**cluster.options(**options)).load())


def _rows(df) -> list[tuple]:
    return [(r.partition, r.offset, bytes(r.value), r.key, r.timestamp)
            for r in df.orderBy("partition", "offset").collect()]


def _expected(cluster: Cluster07, topic: str) -> list[tuple]:
    """(global partition, byte offset, payload) of every record, from the emulator's own
    decoding; records inside a compressed wrapper carry the wrapper's offset."""
    out = []
    for n in range(cluster.partitions(topic)):
        broker, p = cluster.location(topic, n)
        out.extend((n, offset, payload, None, None) for offset, payload in broker.payloads(topic, p))
    return out


def test_every_format_and_codec_reads_as_the_emulator_stores_it(spark, cluster) -> None:
    topic = cluster.create_topic(partitions=2)
    plain = [b"plain-%d" % i for i in range(5)]
    layouts = {
        0: encode_message_set(plain, magic=0),  # broker 1, partition 0: magic 0
        1: encode_message_set(plain, magic=1),  # broker 1, partition 1: magic 1
        2: compressed_message(encode_message_set([b"gz-%d" % i for i in range(4)]), CODEC_GZIP)
        + compressed_message(encode_message_set([b"sn-x-%d" % i for i in range(3)]),
                             CODEC_SNAPPY),
        3: compressed_message(encode_message_set([b"sn-raw-%d" % i for i in range(3)]),
                              CODEC_SNAPPY, snappy_framing="raw")
        + encode_message_set([b"after"]),
    }
    for n, data in layouts.items():
        broker, p = cluster.location(topic, n)
        broker.append(topic, p, data)
    df = _read(spark, cluster, subscribe=topic)
    got = _rows(df)
    assert got == _expected(cluster, topic)
    assert len(got) == 5 + 5 + 7 + 4
    # the records of one gzip wrapper share its byte offset; the snappy wrapper comes after
    gz = [r for r in got if r[2].startswith(b"gz-")]
    assert len({r[1] for r in gz}) == 1 and gz[0][1] == 0
    assert {r.timestampType for r in df.collect()} == {-1}
    assert df.schema["timestamp"].nullable


def test_partial_messages_and_segment_ends(spark, cluster) -> None:
    """Answers cut mid-message (a fetch size smaller than the messages) and segments that end
    a fetch early (the emulator rolls every 100 bytes) lose and repeat nothing."""
    topic = cluster.create_topic(partitions=2, segment_bytes=100)
    for n in range(4):
        broker, p = cluster.location(topic, n)
        for i in range(12):
            broker.append(topic, p, encode_message_set([b"%d-%02d-" % (n, i) + b"x" * (7 * i)]))
    got = _rows(_read(spark, cluster, subscribe=topic,
                      **{"kafka.max.partition.fetch.bytes": "64"}))
    assert got == _expected(cluster, topic) and len(got) == 48


def test_offsets_json_names_global_partitions_and_byte_offsets(spark, cluster) -> None:
    topic = cluster.create_topic(partitions=2)
    broker, p = cluster.location(topic, 3)
    broker.append(topic, p, encode_message_set([b"a" * 10, b"b" * 20, b"c" * 30, b"d"]))
    offsets = [o for o, _ in broker.payloads(topic, p)]
    df = _read(spark, cluster, assign=json.dumps({topic: [3]}),
               startingOffsets=json.dumps({topic: {"3": offsets[1]}}),
               endingOffsets=json.dumps({topic: {"3": offsets[3]}}))
    assert [(r[0], r[1], r[2]) for r in _rows(df)] == [(3, offsets[1], b"b" * 20),
                                                        (3, offsets[2], b"c" * 30)]
    to_latest = _read(spark, cluster, subscribe=topic,
                      endingOffsets=json.dumps({topic: {str(n): -1 for n in range(4)}}))
    assert to_latest.count() == 4


def test_a_byte_offset_inside_a_message_is_a_clear_error(spark, cluster) -> None:
    topic = cluster.create_topic(partitions=2)
    broker, p = cluster.location(topic, 2)
    broker.append(topic, p, encode_message_set([b"m" * 40, b"n" * 40]))
    df = _read(spark, cluster, subscribe=topic,
               startingOffsets=json.dumps({topic: {"0": 0, "1": 0, "2": 7, "3": 0}}))
    with pytest.raises(Exception, match=rf"(?s)no valid message starts at byte offset 7.*topic "
                       rf"'{topic}', partition 2, offset 7, broker 2 at"):
        df.count()


def test_unknown_topic_and_data_loss(spark, cluster) -> None:
    with pytest.raises(Exception, match="the subscribed topic does not exist"):
        _read(spark, cluster, subscribe="no-such-topic-07").count()
    topic = cluster.create_topic(partitions=1, segment_bytes=40)
    broker, p = cluster.location(topic, 0)
    for i in range(6):
        broker.append(topic, p, encode_message_set([b"value-%d" % i * 3]))
    end = broker.end_offset(topic, p)
    broker.delete_oldest_segments(topic, p, 2)
    kept = len(broker.payloads(topic, p))
    ending = json.dumps({topic: {"0": end, "1": -1}})
    starting = json.dumps({topic: {"0": 0, "1": -2}})
    with pytest.raises(Exception, match=r"(?s)data loss.*partition 0"):
        _read(spark, cluster, subscribe=topic, startingOffsets=starting,
              endingOffsets=ending).count()
    assert _read(spark, cluster, subscribe=topic, startingOffsets=starting,
                 endingOffsets=ending, failOnDataLoss="false").count() == kept


def test_offsets_by_time_start_at_segment_granularity(spark, cluster) -> None:
    topic = cluster.create_topic(partitions=1)
    broker, p = cluster.location(topic, 0)
    for seg in range(3):
        broker.append(topic, p, encode_message_set([b"seg%d-%d" % (seg, i) for i in range(2)]))
        broker.roll(topic, p)
    # segments last modified at 1000, 2000, 3000 (and the empty last one, now)
    times = [1000, 2000, 3000]
    broker.set_segment_times(topic, p, times + [10**13])
    df = _read(spark, cluster, assign=json.dumps({topic: [0]}),
               startingOffsetsByTimestamp=json.dumps({topic: {"0": 1500}}))
    # the first segment (modified at 1000) holds only older records: reading starts at the
    # second; everything after is read, as 0.7 keeps no finer index
    assert sorted(bytes(r.value) for r in df.collect() if r.partition == 0) == \
        [b"seg1-0", b"seg1-1", b"seg2-0", b"seg2-1"]
