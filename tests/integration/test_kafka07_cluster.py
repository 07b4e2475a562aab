"""kafkawire's view of a Kafka 0.7 cluster (client/kafka07/cluster.py) against emulated 0.7
brokers registered in a real ZooKeeper: global partition numbering, offsets, cuts, reads."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from spark_kafka_wire.client.errors import ConfigurationError, DataLossError
from spark_kafka_wire.client.kafka07 import FetchSettings07
from spark_kafka_wire.client.kafka07.cluster import (
    Kafka07Cluster,
    read_range,
    segment_after,
)
from spark_kafka_wire.options import SOURCE, client_config
from spark_kafka_wire.protocol.errors import OffsetInsideMessageError
from tests.support.errors import raises_condition
from tests.support.kafka07_broker import encode_message_set as emulator_set
from tests.support.kafka07_cluster import Cluster07, start_cluster


@pytest.fixture
def cluster07(zookeeper: str) -> Iterator[Cluster07]:
    c = start_cluster(zookeeper, (2, 10))  # 10 sorts after 2 as a number, before as text
    yield c
    c.stop()


def _values(chunks) -> list[tuple[int, bytes]]:
    return [(int(o), v) for c in chunks
            for o, v in zip(c.offsets, c.values.to_pylist(), strict=True)]


def test_partitions_are_numbered_by_broker_id_then_partition(cluster07: Cluster07) -> None:
    topic = cluster07.create_topic(partitions=2)
    config = client_config(cluster07.options(), SOURCE)
    assert config.kafka07 and config.zookeeper_connect == cluster07.connect
    with Kafka07Cluster(config) as kc:
        layout = kc.layouts([topic])[topic]
        assert layout.names == ("2-0", "2-1", "10-0", "10-1")
        md = kc.fetch_metadata([topic, "absent"])
        assert sorted(md.topics[topic].partitions) == [0, 1, 2, 3]
        assert md.topics["absent"].error_code == 3
        for n in range(4):
            broker, p = cluster07.location(topic, n)
            loc = kc.location(topic, n)
            assert (loc.port, loc.partition) == (broker.port, p)
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION") as info:
            kc.location(topic, 4)
        assert re.search(r"has no partition 4: its brokers hold 4 "
                         r"partitions.*\(2-0, 2-1, 10-0, 10-1\)", str(info.value)), info.value


def test_offsets_cut_and_read(cluster07: Cluster07) -> None:
    topic = cluster07.create_topic(partitions=2)
    broker, p = cluster07.location(topic, 3)
    payloads = [f"m{i}".encode() * (i + 1) for i in range(20)]
    broker.append(topic, p, emulator_set(payloads))
    with Kafka07Cluster(client_config(cluster07.options(), SOURCE)) as kc:
        got = kc.list_offsets({(topic, 0): -1, (topic, 1): 7})
        end = broker.end_offset(topic, p)
        assert kc.list_offsets({(topic, 3): -2}) == {(topic, 3): 0}
        assert kc.list_offsets({(topic, 3): -1}) == {(topic, 3): end}
        assert got == {(topic, 0): 0, (topic, 1): 7}  # a byte offset given is kept as is
        loc = kc.location(topic, 3)
        rows = _values(read_range(kc.connections, loc, 0, end, FetchSettings07(fetch_size=64)))
        assert [v for _, v in rows] == payloads
        starts = [o for o, _ in rows]
        # a cut lands on the last message boundary within the limit, at least one message
        assert kc.cut(loc, 0, starts[5] + 3) == starts[5]
        assert kc.cut(loc, starts[5], starts[5] + 1) == starts[6]
        assert kc.cut(loc, 0, end) == end
        with pytest.raises(OffsetInsideMessageError) as info:
            list(read_range(kc.connections, loc, starts[3] + 2, end, FetchSettings07()))
        assert info.value.partition == 3 and "10 at " in str(info.value) \
            and "(its partition 1)" in str(info.value)


def test_offsets_by_time_have_segment_granularity() -> None:
    # segments start at 0, 100, 250; log end 400; OFFSETS(T) lists the newest old one first
    starts = [400, 250, 100, 0]
    assert segment_after(starts, [], 400) == 0  # every segment is newer than T
    assert segment_after(starts, [100, 0], 400) == 250
    assert segment_after(starts, [250, 100, 0], 400) is None  # the last one is older too
    assert segment_after(starts, [400, 250, 100, 0], 400) is None
    assert segment_after([0], [], 0) is None  # an empty log


def test_retention_below_the_start_is_data_loss(cluster07: Cluster07) -> None:
    topic = cluster07.create_topic(partitions=1, segment_bytes=40)
    broker, p = cluster07.location(topic, 0)
    for i in range(6):
        broker.append(topic, p, emulator_set([f"value-{i}".encode() * 3]))
    end = broker.end_offset(topic, p)
    broker.delete_oldest_segments(topic, p, 2)
    first = broker.start_offset(topic, p)
    with Kafka07Cluster(client_config(cluster07.options(), SOURCE)) as kc:
        loc = kc.location(topic, 0)
        with raises_condition(DataLossError,
                              "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE") as info:
            list(read_range(kc.connections, loc, 0, end, FetchSettings07()))
        assert re.search(rf"\[0, {first}\)", str(info.value)), info.value
        rows = _values(read_range(kc.connections, loc, 0, end, FetchSettings07(),
                                  fail_on_data_loss=False))
        assert rows == [(o, v) for o, v in broker.payloads(topic, p)] and rows[0][0] == first


def test_a_broker_leaving_renumbers_and_options_check_the_release(cluster07: Cluster07) -> None:
    topic = cluster07.create_topic(partitions=1)
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS",
                          "are Kafka 0.7 brokers"):
        client_config(cluster07.options(**{"kafka.broker.version.fallback": "0.8.2"}), SOURCE)
    config = client_config(cluster07.options(**{"kafka.broker.version.fallback": "0.7.2"}),
                           SOURCE)
    with Kafka07Cluster(config) as kc:
        assert kc.layouts([topic])[topic].names == ("2-0", "10-0")
        cluster07.brokers[2].deregister()
        deadline = time.monotonic() + 10
        while kc.layouts([topic])[topic].names != ("10-0",):
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_what_07_cannot_do_is_refused(cluster07: Cluster07) -> None:
    """Options that cannot mean anything on 0.7 (offsets kept by Kafka, transactions,
    idempotence, lz4/zstd, CreateTopics) are refused; FETCH sizes come from the usual
    options."""
    from spark_kafka_wire.client.fetching.fetch_settings import fetch_settings07
    from spark_kafka_wire.options.produce import parse_sink_options
    from spark_kafka_wire.source.options import parse_source_options, parse_stream_options

    opts = cluster07.options(subscribe="t", **{"kafka.max.partition.fetch.bytes": "4096",
                                               "kafka.fetch.max.bytes": "1048576"})
    source = parse_source_options(opts)
    fetch07 = fetch_settings07(source.fetch)  # what a task's FETCH sizes are made from
    assert fetch07 is not None and source.client.kafka07
    assert (fetch07.fetch_size, fetch07.max_fetch_size) == (4096, 1 << 20)
    assert parse_stream_options(opts).source.client.kafka07
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED",
                          "Kafka 0.7 brokers keep no consumer offsets"):
        parse_stream_options({**opts, "commitOffsets": "both", "kafka.group.id": "g"})
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED",
                          "set commitOffsets=zookeeper"):
        parse_stream_options({**opts, "startingOffsets": "group", "kafka.group.id": "g"})
    sink = parse_sink_options(cluster07.options(topic="t"))
    assert sink.client.kafka07 and sink.produce.enable_idempotence is False
    for extra, message in (({"kafka.transactional.id": "x"}, "no transactions"),
                           ({"kafka.enable.idempotence": "true"}, "no idempotent producer"),
                           ({"kafka.compression.type": "lz4"}, "knows none, gzip, snappy"),
                           ({"createTopic": "true"}, "no CreateTopics request")):
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED",
                              message):
            parse_sink_options(cluster07.options(topic="t", **extra))
