"""kafkawire against real old Kafka releases, 2.8.2 back to 0.8.2.2 (issue 28 part 5).

Each test runs once per release (the ``old_kafka`` fixture of tests/compat/conftest.py). The
oracles are independent of kafkawire: the release's own tools (DumpLogSegments reading the
segment files for what was stored, with each entry's magic and codec; ConsoleProducer writing
with the release's own producer; ConsumerOffsetChecker and ImportZkOffsets for ZooKeeper
offsets) and kafka-python, an independent client, pinned to the release where it must be.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # type: ignore[import-untyped]

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import list_offsets
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
from tests.support.old_kafka import (
    OldKafka,
    console_consume,
    console_produce,
    create_topic,
    dump_logs,
)

pytestmark = pytest.mark.compat

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: kafka-python's api_version for the releases that answer no ApiVersions (it probes otherwise)
KAFKA_PYTHON_PIN = {"0.8.2.2": (0, 8, 2), "0.9.0.1": (0, 9)}
TS = 1_700_000_000_000


def codecs_of(broker: OldKafka) -> list[str]:
    """zstd came with Kafka 2.1 (KIP-110); every release here has the others (LZ4: 0.8.2)."""
    return [c for c in CODECS if c != "zstd" or broker.release.numeric >= (2, 1)]


def client_of(broker: OldKafka, pinned: bool = True) -> KafkaClient:
    extra: dict[str, object] = {}
    if pinned and broker.release.fallback:
        extra = {"api_version_request": False,
                 "broker_version_fallback": broker.release.fallback}
    return KafkaClient(ClientConfig.from_servers(broker.bootstrap_servers,
                                                 request_timeout_ms=10_000, **extra))


@pytest.fixture
def client(old_kafka: OldKafka) -> Iterator[KafkaClient]:
    c = client_of(old_kafka)
    yield c
    c.close()


def new_topic(broker: OldKafka, client: KafkaClient, partitions: int) -> str:
    """A topic created through ZooKeeper (create_topic), once every partition has a leader
    that answers ListOffsets."""
    topic = f"compat-{uuid.uuid4().hex[:10]}"
    create_topic(broker, topic, partitions)
    deadline = time.monotonic() + 60
    while True:
        try:
            info = client.fetch_metadata([topic]).topics.get(topic)
            if info is not None and not info.error_code and len(info.partitions) == partitions \
                    and all(p.leader >= 0 for p in info.partitions.values()):
                list_offsets(client, {(topic, p): -1 for p in range(partitions)})
                return topic
        except Exception:  # noqa: BLE001 - not ready yet: leader election under way
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic} has no leaders after 60 s")
        time.sleep(0.2)


def rows_for(tag: str, n: int = 9) -> list[tuple[str | None, str | None]]:
    """ASCII (key, value) pairs (DumpLogSegments prints them as text) with a null key and a
    null value among them."""
    rows: list[tuple[str | None, str | None]] = [
        (f"k{i}", f"{tag}-value-{i}-" + "x" * (i * 7)) for i in range(n)]
    rows[2] = (None, f"{tag}-no-key")
    rows[5] = (f"k{tag}-tombstone", None)
    return rows


def _b(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def kafkawire_write(client: KafkaClient, topic: str, partition: int,
                    rows: Sequence[tuple[str | None, str | None]], codec: str) -> int:
    """kafkawire's producer writes ``rows`` to one partition with ``codec``; the magic used."""
    settings = ProduceSettings(compression=CODECS.index(codec), delivery_timeout_ms=20_000)
    producer = Producer(client, settings)
    magic = producer.record_magic(topic)
    producer.send(encode_partitioned(
        topic, pa.array([_b(k) for k, _ in rows], pa.binary()),
        pa.array([_b(v) for _, v in rows], pa.binary()),
        np.full(len(rows), partition, np.int32), settings, TS, magic))
    assert producer.records_sent == len(rows)
    return magic


def kafkawire_read(client: KafkaClient, topic: str, partition: int, end: int
                   ) -> list[tuple[int, bytes | None, bytes | None, int]]:
    out: list[tuple[int, bytes | None, bytes | None, int]] = []
    for chunk in fetch_range(client, topic, partition, 0, end, FetchSettings()):
        out.extend(zip(chunk.offsets.tolist(), chunk.keys.to_pylist(), chunk.values.to_pylist(),
                       chunk.timestamps.tolist(), strict=True))
    return out


def kafka_python_read(broker: OldKafka, topic: str, partitions: list[int], count: int
                      ) -> list[tuple[int, int, bytes | None, bytes | None, int]]:
    """(partition, offset, key, value, timestamp) of ``count`` records, read by kafka-python."""
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        api_version=KAFKA_PYTHON_PIN.get(broker.release.version),
        group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
        fetch_max_wait_ms=100, request_timeout_ms=10_000)
    out: list[tuple[int, int, bytes | None, bytes | None, int]] = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            for recs in consumer.poll(timeout_ms=200).values():
                out.extend((r.partition, r.offset, r.key, r.value, r.timestamp) for r in recs)
    finally:
        consumer.close()
    return sorted(out)


# ------------------------------------------------------------------------------ client layer


def test_client_writes_what_the_release_stores(old_kafka, client):
    """Every codec the release knows, one partition each: DumpLogSegments finds the records at
    offsets 0.. with the release's own message format (magic 0 up to 0.9, 1 on 0.10, record
    batches from 0.11) and the codec; kafkawire and kafka-python read them back exactly."""
    codecs = codecs_of(old_kafka)
    topic = new_topic(old_kafka, client, len(codecs))
    written = {}
    for p, codec in enumerate(codecs):
        written[p] = rows_for(codec)
        assert kafkawire_write(client, topic, p, written[p], codec) == old_kafka.release.magic
    stored = dump_logs(old_kafka, topic, list(written))
    for p, codec in enumerate(codecs):
        log = stored[p]
        assert (log.magics, log.codecs) == ({old_kafka.release.magic}, {codec}), codec
        assert len(log.records) == len(written[p]), codec
        for m, (o, (k, v)) in zip(log.records, enumerate(written[p]), strict=True):
            assert m.matches(o, k, v), (codec, m)
        ts = TS if old_kafka.release.magic else -1
        assert kafkawire_read(client, topic, p, len(written[p])) == [
            (o, _b(k), _b(v), ts) for o, (k, v) in enumerate(written[p])], codec
    got = kafka_python_read(old_kafka, topic, list(written), sum(map(len, written.values())))
    assert [(p, o, k, v) for p, o, k, v, _ in got] == sorted(
        (p, o, _b(k), _b(v)) for p, rows in written.items() for o, (k, v) in enumerate(rows))
    if old_kafka.release.magic:
        assert {t for *_, t in got} == {TS}


def test_client_reads_what_the_release_and_kafka_python_wrote(old_kafka, client):
    """The release's own ConsoleProducer (gzip, snappy) and kafka-python (lz4, none) write one
    partition; kafkawire reads exactly what DumpLogSegments finds stored there. (kafka-python
    sends a batch uncompressed when compressing does not shrink it: its values are long.)"""
    topic = new_topic(old_kafka, client, 1)
    console_produce(old_kafka, topic, [(f"c{i}", f"console-gzip-{i}") for i in range(5)], "gzip")
    console_produce(old_kafka, topic, [(f"s{i}", f"console-snappy-{i}") for i in range(4)],
                    "snappy")
    for codec in ("lz4", None):
        producer = KafkaProducer(
            bootstrap_servers=old_kafka.bootstrap_servers,
            api_version=KAFKA_PYTHON_PIN.get(old_kafka.release.version),
            compression_type=codec, linger_ms=20, acks="all", request_timeout_ms=10_000)
        try:
            for i in range(6):
                producer.send(topic, key=f"p{i}".encode(), value=f"kp-{codec}-{i}-{'y' * 300}".encode(),
                              partition=0)
            producer.flush(timeout=30)
        finally:
            producer.close(timeout=10)
    log = dump_logs(old_kafka, topic, [0])[0]
    assert len(log.records) == 21
    assert log.codecs == {"gzip", "snappy", "lz4", "none"}
    assert log.magics == {old_kafka.release.magic}
    got = kafkawire_read(client, topic, 0, 21)
    assert [(o, k, v) for o, k, v, _ in got] == [
        (m.offset, _b(m.key), _b(m.value)) for m in log.records]
    assert [o for o, *_ in got] == list(range(21))


def test_console_consumer_reads_kafkawire_legacy_messages(old_kafka, client):
    """On the releases of the legacy formats (magic 0 to 0.9, 1 on 0.10), the release's own
    old ConsoleConsumer reads exactly what kafkawire wrote, compressed wrappers included."""
    if old_kafka.release.magic == 2:
        pytest.skip("record batches: covered by DumpLogSegments and kafka-python")
    topic = new_topic(old_kafka, client, 1)
    rows = [(f"k{i}", f"legacy-{i}-" + "w" * i) for i in range(8)]
    rows[3] = ("k3", "")  # an empty value, not a null one
    kafkawire_write(client, topic, 0, rows[:4], "snappy")
    kafkawire_write(client, topic, 0, rows[4:], "lz4")
    assert console_consume(old_kafka, topic, len(rows)) == rows


def test_unpinned_client_negotiates_or_names_the_settings(old_kafka):
    """Left to ask ApiVersions (the default), a client either negotiates (0.10 and later) or,
    against 0.9 and older, which close the connection on it, fails quickly naming
    kafka.api.version.request and kafka.broker.version.fallback."""
    from spark_kafka_wire.protocol.errors import KafkaWireError

    pinned = client_of(old_kafka)
    try:
        topic = new_topic(old_kafka, pinned, 1)
        kafkawire_write(pinned, topic, 0, [("k", "v")], "none")
    finally:
        pinned.close()
    with client_of(old_kafka, pinned=False) as client:
        if old_kafka.release.fallback is None:
            assert list_offsets(client, {(topic, 0): -1}) == {(topic, 0): 1}
            assert [(k, v) for _, k, v, _ in kafkawire_read(client, topic, 0, 1)] == [
                (b"k", b"v")]
        else:
            started = time.monotonic()
            with pytest.raises(KafkaWireError) as info:
                client.fetch_metadata([topic])
            assert time.monotonic() - started < 30
            assert "kafka.api.version.request=false" in str(info.value)
            assert "kafka.broker.version.fallback" in str(info.value)


@pytest.mark.parametrize("fallback", ["0.8.2", "0.9.0", "0.10.0"])
def test_pinned_older_release_works_on_newer_brokers(old_kafka, fallback):
    """api.version.request=false with an older broker.version.fallback than the broker's: the
    request versions of that release (and its message format, which the broker converts) are
    still served, so a pin left in place after a broker upgrade keeps working."""
    pinned = tuple(int(p) for p in fallback.split("."))
    if pinned > old_kafka.release.numeric[:3]:
        pytest.skip(f"Kafka {old_kafka.release.version} is older than {fallback}")
    with KafkaClient(ClientConfig.from_servers(
            old_kafka.bootstrap_servers, request_timeout_ms=10_000, api_version_request=False,
            broker_version_fallback=fallback)) as client:
        topic = new_topic(old_kafka, client, 1)
        rows = rows_for("pinned")
        assert kafkawire_write(client, topic, 0, rows, "gzip") == (0 if pinned < (0, 10) else 1)
        assert [(o, k, v) for o, k, v, _ in kafkawire_read(client, topic, 0, len(rows))] == [
            (o, _b(k), _b(v)) for o, (k, v) in enumerate(rows)]
    got = kafka_python_read(old_kafka, topic, [0], len(rows))
    assert [(o, k, v) for _, o, k, v, _ in got] == [
        (o, _b(k), _b(v)) for o, (k, v) in enumerate(rows)]


def test_group_offsets_in_kafka(old_kafka, client):
    """kafkawire commits a group's offsets to the broker (OffsetCommit v1 and later: Kafka's
    own store, 0.8.2 included) and reads them back; kafka-python, an independent client,
    sees the same commits."""
    from spark_kafka_wire.client.groups.group_offsets import commit_offsets, fetch_committed

    topic = new_topic(old_kafka, client, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert fetch_committed(client, group, [(topic, 0), (topic, 1)]) == {
        (topic, 0): -1, (topic, 1): -1}
    commit_offsets(client, group, {(topic, 0): 7, (topic, 1): 3})
    assert fetch_committed(client, group, [(topic, 0), (topic, 1)]) == {
        (topic, 0): 7, (topic, 1): 3}
    consumer = KafkaConsumer(
        bootstrap_servers=old_kafka.bootstrap_servers,
        api_version=KAFKA_PYTHON_PIN.get(old_kafka.release.version),
        group_id=group, enable_auto_commit=False, request_timeout_ms=10_000)
    try:
        assert [consumer.committed(TopicPartition(topic, p)) for p in (0, 1)] == [7, 3]
    finally:
        consumer.close()


# -------------------------------------------------------------------------------------- Spark


def spark_options(broker: OldKafka, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.request.timeout.ms": "10000", **broker.release.client_options(), **extra}


@pytest.mark.spark
def test_spark_batch_write_and_read(spark, old_kafka, client):
    """df.write.format("kafkawire") stores what the release's DumpLogSegments and kafka-python
    find (its own message format, gzip), and spark.read.format("kafkawire") reads it back with
    offsets and, from 0.10, the timestamps kafka-python sees."""
    topic = new_topic(old_kafka, client, 2)
    rows = [(f"k{i}" if i % 4 else None, f"spark-{i}-" + "z" * i, i % 2) for i in range(20)]
    df = spark.createDataFrame(rows, "key string, value string, partition int").coalesce(1)
    (df.write.format("kafkawire")
       .options(**spark_options(old_kafka, **{"kafka.compression.type": "gzip"}))
       .option("topic", topic).mode("append").save())
    want = {p: [(k, v) for k, v, q in rows if q == p] for p in (0, 1)}
    stored = dump_logs(old_kafka, topic, [0, 1])
    for p in (0, 1):
        assert (stored[p].magics, stored[p].codecs) == ({old_kafka.release.magic}, {"gzip"})
        assert [(m.offset, m.key, m.value) for m in stored[p].records] == [
            (o, k, v) for o, (k, v) in enumerate(want[p])]
    oracle = kafka_python_read(old_kafka, topic, [0, 1], len(rows))
    read = (spark.read.format("kafkawire").options(**spark_options(old_kafka))
            .option("subscribe", topic).load())
    got = sorted((r.partition, r.offset, None if r.key is None else bytes(r.key),
                  bytes(r.value), r.timestamp) for r in read.collect())
    assert [g[:4] for g in got] == [(p, o, k, v) for p, o, k, v, _ in oracle]
    if old_kafka.release.magic:
        assert [int(g[4].timestamp() * 1000) for g in got] == [t for *_, t in oracle]


def _has_zk_offset_tools(broker: OldKafka) -> bool:
    """ExportZkOffsets and ImportZkOffsets, the releases' own tools for the ZooKeeper offsets
    of the old consumer, ship up to 1.1."""
    return broker.release.numeric < (2,)


def _export_zk_offsets(broker: OldKafka, group: str, path: str) -> dict[tuple[str, int], int]:
    broker.run_tool("kafka.tools.ExportZkOffsets", "--zkconnect", broker.zookeeper_connect,
                    "--group", group, "--output-file", path)
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                node, offset = line.strip().rsplit(":", 1)
                *_, topic, partition = node.split("/")
                out[(topic, int(partition))] = int(offset)
    return out


@pytest.mark.spark
def test_stream_offsets_in_zookeeper(spark, old_kafka, client, tmp_path):
    """commitOffsets=zookeeper writes the old consumer's /consumers/<group>/offsets nodes that
    the release's ExportZkOffsets reads; startingOffsets=group starts from offsets the
    release's ImportZkOffsets wrote."""
    from tests.support.parquet_runs import available_now, written

    if not _has_zk_offset_tools(old_kafka):
        pytest.skip(f"Kafka {old_kafka.release.version} ships no ExportZkOffsets/ImportZkOffsets")
    topic = new_topic(old_kafka, client, 2)
    for p in (0, 1):
        kafkawire_write(client, topic, p, [(f"k{i}", f"p{p}-{i}") for i in range(6)], "none")
    zk = {"zookeeper.connect": old_kafka.zookeeper_connect, "commitOffsets": "zookeeper"}

    def stream(group: str, checkpoint: str, **extra: str) -> list[tuple[int, int, str]]:
        df = (spark.readStream.format("kafkawire")
              .options(**spark_options(old_kafka, **zk, **{"kafka.group.id": group}, **extra))
              .option("subscribe", topic).load())
        assert available_now(df, checkpoint) is None
        return written(spark, checkpoint)

    group = f"g-{uuid.uuid4().hex[:8]}"
    got = stream(group, str(tmp_path / "first"), startingOffsets="earliest")
    assert got == [(p, o, f"p{p}-{o}") for p in (0, 1) for o in range(6)]
    assert _export_zk_offsets(old_kafka, group, str(tmp_path / "export1")) == {
        (topic, 0): 6, (topic, 1): 6}

    seeded = f"g-{uuid.uuid4().hex[:8]}"
    (tmp_path / "import").write_text(f"/consumers/{seeded}/offsets/{topic}/0:2\n"
                                     f"/consumers/{seeded}/offsets/{topic}/1:4\n")
    old_kafka.run_tool("kafka.tools.ImportZkOffsets", "--zkconnect", old_kafka.zookeeper_connect,
                       "--input-file", str(tmp_path / "import"))
    got = stream(seeded, str(tmp_path / "second"), startingOffsets="group")
    assert got == [(0, o, f"p0-{o}") for o in range(2, 6)] + [(1, o, f"p1-{o}") for o in (4, 5)]
    assert _export_zk_offsets(old_kafka, seeded, str(tmp_path / "export2")) == {
        (topic, 0): 6, (topic, 1): 6}


@pytest.mark.spark
def test_stream_offsets_in_kafka(spark, old_kafka, client, tmp_path):
    """commitOffsets=kafka commits the end of each run for the group (kafka-python's
    committed() sees it), and a new query with startingOffsets=group starts there."""
    from tests.support.parquet_runs import available_now, written

    topic = new_topic(old_kafka, client, 2)
    for p in (0, 1):
        kafkawire_write(client, topic, p, [(f"k{i}", f"p{p}-{i}") for i in range(5)], "gzip")
    group = f"g-{uuid.uuid4().hex[:8]}"
    opts = spark_options(old_kafka, commitOffsets="kafka", **{"kafka.group.id": group})

    def stream(checkpoint: str, **extra: str) -> list[tuple[int, int, str]]:
        df = (spark.readStream.format("kafkawire").options(**opts, **extra)
              .option("subscribe", topic).load())
        assert available_now(df, checkpoint) is None
        return written(spark, checkpoint)

    got = stream(str(tmp_path / "first"), startingOffsets="earliest")
    assert got == [(p, o, f"p{p}-{o}") for p in (0, 1) for o in range(5)]
    consumer = KafkaConsumer(
        bootstrap_servers=old_kafka.bootstrap_servers,
        api_version=KAFKA_PYTHON_PIN.get(old_kafka.release.version),
        group_id=group, enable_auto_commit=False, request_timeout_ms=10_000)
    try:
        assert [consumer.committed(TopicPartition(topic, p)) for p in (0, 1)] == [5, 5]
    finally:
        consumer.close()
    kafkawire_write(client, topic, 1, [("k5", "p1-5"), ("k6", "p1-6")], "none")
    got = stream(str(tmp_path / "second"), startingOffsets="group")
    assert got == [(1, 5, "p1-5"), (1, 6, "p1-6")]
