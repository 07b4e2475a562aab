"""kafkawire's Kafka 0.7 client (spark_kafka_wire.client.kafka07) against the emulated 0.7
broker (tests/support/kafka07_broker.py) and the independent 0.7 client samsa
(tests/support/samsa07). Only their public methods are used: the emulator's logs, appends and
payload listings judge what kafkawire writes and reads.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable, Iterator

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import BrokerConnectionError
from spark_kafka_wire.client.kafka07 import (
    BrokerPartition,
    FetchSettings07,
    Kafka07Connection,
    Kafka07Connections,
    earliest_offset,
    fetch_once,
    fetch_range,
    latest_offset,
    multifetch,
    multiproduce,
    offsets_before,
    produce,
)
from spark_kafka_wire.protocol.errors import (
    CorruptRecordError,
    FetchSizeLimitError,
    OffsetInsideMessageError,
    OffsetOutOfRangeError,
    WrongPartitionError,
)
from spark_kafka_wire.protocol.kafka07 import FetchSpec, encode_message_set
from tests.support.errors import raises_condition
from tests.support.kafka07_broker import (
    CODEC_GZIP,
    CODEC_SNAPPY,
    Kafka07Broker,
    compressed_message,
)
from tests.support.kafka07_broker import encode_message as emulator_message
from tests.support.kafka07_broker import encode_message_set as emulator_set
from tests.support.samsa07 import wrap


@pytest.fixture
def connect() -> Iterator[Callable[[Kafka07Broker], Kafka07Connection]]:
    conns: list[Kafka07Connection] = []

    def make(b: Kafka07Broker) -> Kafka07Connection:
        cfg = ClientConfig.from_servers(f"{b.host}:{b.port}", broker_version_fallback="0.7.2",
                                        request_timeout_ms=10_000)
        c = Kafka07Connection(b.host, b.port, cfg)
        conns.append(c)
        return c

    yield make
    for c in conns:
        c.close()


def read_all(c: Kafka07Connection, topic: str, partition: int, start: int = 0,
             end: int | None = None, **settings: int) -> list[tuple[int, bytes]]:
    if end is None:
        end = latest_offset(c, topic, partition)
    return [(o, v) for chunk in fetch_range(c, topic, partition, start, end,
                                            FetchSettings07(**settings))
            for o, v in zip(chunk.offsets.tolist(), chunk.values.to_pylist(), strict=True)]


# -- produce with kafkawire, judged by the emulator -------------------------------------------


@pytest.mark.parametrize("magic,codec", [(0, "none"), (1, "none"), (1, "gzip"), (1, "snappy")])
def test_produce_and_read_back(broker, connect, magic, codec) -> None:
    b = broker()
    c = connect(b)
    end = produce(c, "events", 0, encode_message_set([b"one", b"two", b""], magic=magic,
                                                     compression=codec))
    end = produce(c, "events", 0, encode_message_set([b"x" * 1000], magic=magic,
                                                     compression=codec))
    assert end == b.end_offset("events", 0)
    assert [r.name for r in b.requests] == ["PRODUCE", "OFFSETS"] * 2  # nothing else
    stored = b.payloads("events", 0)
    assert [p for _, p in stored] == [b"one", b"two", b"", b"x" * 1000]
    assert read_all(c, "events", 0) == stored
    shallow = b.messages("events", 0)
    assert {m.codec for m in shallow} == {0 if codec == "none" else
                                          CODEC_GZIP if codec == "gzip" else CODEC_SNAPPY}


def test_multiproduce_and_multifetch(broker, connect) -> None:
    b = broker(num_partitions=3)
    c = connect(b)
    ends = multiproduce(c, [("m", 0, encode_message_set([b"a0", b"b0"])),
                            ("m", 2, encode_message_set([b"a2"], compression="gzip")),
                            ("n", 0, encode_message_set([b"n"], magic=0))])
    assert ends == [b.end_offset("m", 0), b.end_offset("m", 2), b.end_offset("n", 0)]
    assert [r.name for r in b.requests][0] == "MULTIPRODUCE"
    reads = multifetch(c, [FetchSpec("m", 0, 0, 1000), FetchSpec("m", 2, 0, 1000),
                           FetchSpec("n", 0, 0, 5)])
    assert [r.records.values.to_pylist() for r in reads] == [[b"a0", b"b0"], [b"a2"], []]
    assert reads[0].next_offset == ends[0] and reads[2].partial_bytes == 5
    with pytest.raises(WrongPartitionError) as err:
        multifetch(c, [FetchSpec("m", 0, 0, 100), FetchSpec("m", 7, 0, 100)])
    assert (err.value.topic, err.value.partition) == ("m", 7)


# -- reading what the emulator's own appends hold --------------------------------------------


def fill(b: Kafka07Broker, topic: str = "t") -> None:
    inner0 = emulator_set([b"a", b"bb"], magic=0)
    inner1 = emulator_set([b"c", b"dd"], magic=1)
    b.append(topic, 0, emulator_set([b"hello", b"world"], magic=0))
    b.append(topic, 0, emulator_message(b"plain", magic=1))
    b.append(topic, 0, compressed_message(inner0, CODEC_GZIP))
    b.append(topic, 0, compressed_message(inner1, CODEC_GZIP))
    b.append(topic, 0, compressed_message(inner0, CODEC_SNAPPY))
    b.append(topic, 0, compressed_message(inner1, CODEC_SNAPPY, snappy_framing="raw"))
    b.append(topic, 0, compressed_message(compressed_message(inner1, CODEC_SNAPPY), CODEC_GZIP))
    b.append(topic, 0, emulator_set([bytes([i]) * i for i in range(1, 40)], magic=1))


def test_read_every_codec_and_magic_the_emulator_holds(broker, connect) -> None:
    b = broker()
    fill(b)
    c = connect(b)
    assert read_all(c, "t", 0) == b.payloads("t", 0)


@pytest.mark.parametrize("fetch_size", [1, 3, 4, 7, 15, 33, 100])
def test_tiny_fetch_sizes_cut_messages_anywhere(broker, connect, fetch_size) -> None:
    b = broker()
    fill(b)
    c = connect(b)
    assert read_all(c, "t", 0, fetch_size=fetch_size) == b.payloads("t", 0)
    sizes = [r.detail["max_size"] for r in b.requests if r.name == "FETCH"]
    assert max(sizes) <= max(fetch_size, 1) * 2 ** 8


def test_a_range_from_the_middle_ends_where_asked(broker, connect) -> None:
    b = broker()
    fill(b)
    c = connect(b)
    stored = b.payloads("t", 0)
    boundaries = sorted({o for o, _ in stored})
    lo, hi = boundaries[2], boundaries[5]
    assert read_all(c, "t", 0, lo, hi) == [(o, p) for o, p in stored if lo <= o < hi]
    assert read_all(c, "t", 0, lo, lo) == []


def test_a_message_larger_than_the_fetch_size_limit(broker, connect) -> None:
    b = broker()
    b.append("big", 0, emulator_message(b"s"))
    b.append("big", 0, emulator_message(b"L" * 500))
    c = connect(b)
    assert [v for _, v in read_all(c, "big", 0, fetch_size=8)] == [b"s", b"L" * 500]
    with pytest.raises(FetchSizeLimitError) as err:
        read_all(c, "big", 0, fetch_size=8, max_fetch_size=256)
    e = err.value
    assert (e.topic, e.partition, e.offset, e.broker) == ("big", 0, 11, c.name)
    assert "larger than the largest fetch size, 256 bytes" in str(e)


# -- segments ----------------------------------------------------------------------------------


def test_fetches_stop_at_segment_ends_and_go_on(broker, connect) -> None:
    b = broker(segment_bytes=30)
    c = connect(b)
    for i in range(12):
        produce(c, "s", 0, encode_message_set([b"m%02d" % i, b"n%02d" % i]), confirm=False)
    latest_offset(c, "s", 0)  # answered after the produces: they are in the log
    b.roll("s", 0)
    produce(c, "s", 0, encode_message_set([b"last"]))
    assert len(b.segments("s", 0)) > 5
    b.clear_requests()
    assert read_all(c, "s", 0, fetch_size=1 << 20) == b.payloads("s", 0)
    fetches = [r for r in b.requests if r.name == "FETCH"]
    assert len(fetches) >= len(b.segments("s", 0))  # one answer per segment at least


def test_offsets_earliest_latest_and_by_time(broker, connect) -> None:
    now = [50_000]
    b = broker(segment_bytes=10, clock=lambda: now[0])
    c = connect(b)
    for _ in range(3):
        produce(c, "t", 0, encode_message_set([b"hello"], magic=0))  # a segment each
    assert [s.start for s in b.segments("t", 0)] == [0, 14, 28]
    b.set_segment_times("t", 0, [100, 200, 300])
    assert earliest_offset(c, "t", 0) == 0 and latest_offset(c, "t", 0) == 42
    assert offsets_before(c, "t", 0, -1, 10) == [42, 28, 14, 0]
    assert offsets_before(c, "t", 0, 250, 10) == [14, 0]
    assert offsets_before(c, "t", 0, 50, 10) == []
    b.delete_oldest_segments("t", 0)
    assert earliest_offset(c, "t", 0) == 14
    with pytest.raises(OffsetOutOfRangeError) as err:
        fetch_once(c, "t", 0, 0, 100)
    assert (err.value.topic, err.value.partition, err.value.offset) == ("t", 0, 0)
    assert "OffsetOutOfRange (1)" in str(err.value) and c.name in str(err.value)
    assert read_all(c, "t", 0, 14) == [(14, b"hello"), (28, b"hello")]
    assert latest_offset(c, "never-written", 0) == 0  # no log: no offsets at all


def test_error_codes(broker, connect) -> None:
    b = broker()
    c = connect(b)
    produce(c, "t", 0, encode_message_set([b"x"]))
    with pytest.raises(WrongPartitionError) as err:
        fetch_once(c, "t", 3, 0, 100)
    assert err.value.code == 3 and err.value.partition == 3
    with raises_condition(BrokerConnectionError, "KAFKAWIRE_BROKER_CONNECTION",
                          "closes the connection on OFFSETS for a partition it does not have"):
        offsets_before(c, "t", 5, -1, 1)  # 0.7.2 has no error answer for OFFSETS
    with pytest.raises(OffsetOutOfRangeError):
        fetch_once(c, "t", 0, 1000, 100)
    assert fetch_once(c, "t", 0, b.end_offset("t", 0), 100).messages == 0  # at the end: empty


def test_a_corrupted_crc_is_a_typed_error(broker, connect) -> None:
    b = broker()
    b.append("t", 0, emulator_set([b"one", b"two", b"three"], magic=1))
    second = b.messages("t", 0)[1].offset
    b.corrupt_crc("t", 0, second)
    c = connect(b)
    with pytest.raises(CorruptRecordError) as err:
        read_all(c, "t", 0)
    e = err.value
    assert (e.topic, e.partition, e.offset, e.broker) == ("t", 0, second, c.name)
    assert not isinstance(e, OffsetInsideMessageError)
    assert read_all(c, "t", 0, 0, second) == [(0, b"one")]


def test_an_offset_inside_a_message(broker, connect) -> None:
    b = broker()
    b.append("t", 0, emulator_set([b"hello world", b"again"], magic=1))
    c = connect(b)
    for inside in (1, 4, 6, 9, 22):  # messages at 0 and 21
        with pytest.raises(OffsetInsideMessageError) as err:
            fetch_once(c, "t", 0, inside, 100)
        assert err.value.offset == inside and err.value.broker == c.name
        with pytest.raises(OffsetInsideMessageError):
            list(fetch_range(c, "t", 0, inside, b.end_offset("t", 0), start_is_boundary=False))


def test_a_produce_the_broker_refuses_closes_the_connection(broker, connect) -> None:
    b = broker()
    c = connect(b)
    bad = struct.pack(">ibI", 10, 0, zlib.crc32(b"hello") ^ 1) + b"hello"
    with raises_condition(BrokerConnectionError, "KAFKAWIRE_BROKER_CONNECTION",
                          "closes the connection when a PRODUCE"):
        produce(c, "t", 0, bad)
    assert b.end_offset("t", 0) == 0
    assert produce(c, "t", 0, encode_message_set([b"ok"])) == b.end_offset("t", 0) > 0


def test_connections_by_broker_address(broker) -> None:
    b1, b2 = broker(broker_id=1), broker(broker_id=2)
    cfg = ClientConfig.from_servers(f"{b1.host}:{b1.port}", broker_version_fallback="0.7.2")
    parts = [BrokerPartition(b.host, b.port, "t", 0) for b in (b1, b2)]
    with Kafka07Connections(cfg) as conns:
        for p, text in zip(parts, (b"one", b"two"), strict=True):
            produce(conns.get(p.host, p.port), p.topic, p.partition, encode_message_set([text]))
        assert conns.get(b1.host, b1.port) is conns.get(b1.host, b1.port)
        got = [read_all(conns.get(p.host, p.port), p.topic, p.partition) for p in parts]
    assert got == [[(0, b"one")], [(0, b"two")]]
    assert parts[0].broker == f"{b1.host}:{b1.port}"


# -- samsa, an independent 0.7 client ---------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy"])
def test_samsa_reads_what_kafkawire_writes(broker, connect, samsa, codec) -> None:
    b = broker()
    c = connect(b)
    produce(c, "k", 0, encode_message_set([b"p1", b"p2"], compression=codec))
    produce(c, "k", 0, encode_message_set([b"p3"], magic=0))
    got = samsa(b).fetch("k", 0, 0, 10_000)
    assert wrap.deep(got) == read_all(c, "k", 0)
    assert [v for _, v in wrap.deep(got)] == [b"p1", b"p2", b"p3"]


@pytest.mark.parametrize("codec,framing", [(None, None), (wrap.GZIP, "xerial"),
                                           (wrap.SNAPPY, "xerial"), (wrap.SNAPPY, "raw")])
def test_kafkawire_reads_what_samsa_writes(broker, connect, samsa, codec, framing) -> None:
    b = broker(num_partitions=2)
    s = samsa(b)
    s.produce("w", 0, [b"one", b"two"])
    s.produce("w", 0, [b"three"], version=1)
    s.multiproduce([("w", 1, [b"x"]), ("w", 0, [b"four"])])
    if codec is not None:
        wrap.produce_compressed(s, "w", 0, [b"c1", b"c2"], codec, snappy_framing=framing)
    c = connect(b)
    latest_offset(c, "w", 0)  # after samsa's produces on its own connection
    expected = wrap.deep(s.fetch("w", 0, 0, 100_000))
    assert read_all(c, "w", 0) == expected
    assert read_all(c, "w", 0, fetch_size=5) == expected
    assert read_all(c, "w", 1) == [(0, b"x")]
    assert offsets_before(c, "w", 0, -1, 5) == s.offsets("w", 0, -1, 5)


# -- ZooKeeper: the addresses 0.7 brokers register ----------------------------------------------


def test_brokers_found_in_zookeeper(broker, connect, zookeeper) -> None:
    from kazoo.client import KazooClient

    chroot = f"/kafka07-client-{uuid.uuid4().hex[:8]}"
    b = broker(broker_id=3)
    b.create_topic("z", 2)
    b.register(zookeeper, chroot)
    zk = KazooClient(hosts=zookeeper + chroot)
    zk.start(timeout=15)
    try:
        creator_host_port = zk.get("/brokers/ids/3")[0].decode()
        count = int(zk.get("/brokers/topics/z/3")[0])
    finally:
        zk.stop()
        zk.close()
    host, port = creator_host_port.split(":")[1], int(creator_host_port.split(":")[2])
    assert (host, port) == b.address and count == 2
    cfg = ClientConfig.from_servers(f"{host}:{port}", broker_version_fallback="0.7.2")
    with Kafka07Connection(host, port, cfg) as c:
        for p in range(count):
            produce(c, "z", p, encode_message_set([b"z%d" % p]))
        assert [read_all(c, "z", p) for p in range(count)] == [[(0, b"z0")], [(0, b"z1")]]
