"""Kafka 0.8.2 / 0.9.0 / 0.10.0 brokers, emulated by tests/support/legacy_broker.py.

First the emulator is checked with an independent client (kafka-python with its api_version
pinned, plus raw kafka-python-encoded requests), so kafkawire never validates itself against
its own understanding of the protocol. Then kafkawire's client layer and its Spark source and
sink are run against each release.
"""

from __future__ import annotations

import importlib
import socket
import struct
import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32

from tests.support.legacy_broker import RELEASES, LegacyBroker, decode_message_set, kafka_message

KP_API_VERSION = {"0.8.2": (0, 8, 2), "0.9.0": (0, 9), "0.10.0": (0, 10, 0)}
ALL_CODECS = ("none", "gzip", "snappy", "lz4")
# The highest Produce / Fetch version of each release (what a pinned client should use).
TOP = {rel: (r.apis[0][1], r.apis[1][1]) for rel, r in RELEASES.items()}


def _topic(prefix: str = "legacy") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _need_codec(codec: str, release: str) -> None:
    """The codec libraries kafka-python needs are declared test dependencies (lz4,
    python-snappy, xxhash); importing them here makes a broken install fail, not skip."""
    need = {"snappy": ["snappy"], "lz4": ["lz4"] + (["xxhash"] if RELEASES[release].magic == 0
                                                      else [])}.get(codec, [])
    for module in need:
        importlib.import_module(module)


def assert_only_release_versions(broker: LegacyBroker, allowed_closed: set[tuple[int, int]] = frozenset()) -> None:
    """Every request was one the release knows (else the emulator closed the connection), and
    brokers before 0.10 never saw ApiVersions."""
    bad = [r for r in broker.requests
           if r.outcome.startswith("closed") and (r.api_key, r.api_version) not in allowed_closed]
    assert bad == [], bad
    for r in broker.requests:
        if (r.api_key, r.api_version) in allowed_closed:
            continue
        lo, hi = broker.release.apis[r.api_key]
        assert lo <= r.api_version <= hi, r
    if 18 not in broker.release.apis:
        assert [r for r in broker.requests if r.api_key == 18] == []


# -- a bare kafka-python-encoded connection -----------------------------------------------------


class Raw:
    def __init__(self, broker: LegacyBroker) -> None:
        self.sock = socket.create_connection((broker.host, broker.port), timeout=5)
        self.cid = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, cls, version: int, body: dict) -> int:
        req = kafka_message(cls, version, body)
        self.cid += 1
        req.with_header(correlation_id=self.cid, client_id="raw-test")
        self.sock.sendall(bytes(req.encode(header=True, framed=True)))
        return self.cid

    def frame(self) -> bytes | None:
        head = self._exact(4)
        if head is None:
            return None
        return self._exact(struct.unpack(">i", head)[0])

    def receive(self, cls, version: int):
        frame = self.frame()
        assert frame is not None, "the broker closed the connection"
        return cls.decode(frame, version=version, header=True)

    def request(self, req_cls, resp_cls, version: int, body: dict):
        cid = self.send(req_cls, version, body)
        resp = self.receive(resp_cls, version)
        assert resp.header.correlation_id == cid
        return resp

    def closed_without_answer(self) -> bool:
        return self.frame() is None

    def _exact(self, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except ConnectionResetError:  # closed with our bytes unread: a reset, not a FIN
                return None
            if not chunk:
                return None
            buf += chunk
        return buf


def _fetch(raw: Raw, version: int, topic: str, partition: int, offset: int, max_bytes: int):
    resp = raw.request(FetchRequest, FetchResponse, version, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0,
        "topics": [{"topic": topic, "partitions": [
            {"partition": partition, "fetch_offset": offset, "partition_max_bytes": max_bytes}]}],
    })
    p = resp.responses[0].partitions[0]
    return p.error_code, p.high_watermark, bytes(p.records or b"")


def _produce_raw(raw: Raw, version: int, topic: str, partition: int, data: bytes, acks: int = 1):
    body = {"acks": acks, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": data}]}]}
    if acks == 0:
        raw.send(ProduceRequest, version, body)
        return None
    resp = raw.request(ProduceRequest, ProduceResponse, version, body)
    return resp.responses[0].partition_responses[0]


def _message_set(messages, magic: int = 0, codec: int = 0, ts: int = 1_600_000_000_000) -> bytes:
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i, (k, v) in enumerate(messages):
        b.append(i, ts, k, v)
    return bytes(b.build())


# == the emulator, checked with kafka-python ====================================================


def _kp_produce(broker: LegacyBroker, topic: str, rows, codec: str) -> list[tuple[int, int]]:
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, api_version=KP_API_VERSION[broker.release.name],
        compression_type=None if codec == "none" else codec, linger_ms=50, acks="all",
        request_timeout_ms=5000, max_block_ms=5000,
    )
    try:
        futures = [producer.send(topic, key=k, value=v, partition=p) for p, k, v in rows]
        producer.flush(timeout=10)
        return [(m.partition, m.offset) for m in (f.get(timeout=5) for f in futures)]
    finally:
        producer.close(timeout=5)


def _kp_consume(broker: LegacyBroker, topic: str, partitions: list[int], count: int):
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, api_version=KP_API_VERSION[broker.release.name],
        group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
        fetch_max_wait_ms=50, request_timeout_ms=5000,
    )
    out = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        deadline = time.monotonic() + 10
        while len(out) < count and time.monotonic() < deadline:
            for recs in consumer.poll(timeout_ms=100).values():
                out.extend((r.partition, r.offset, r.key, r.value, r.timestamp) for r in recs)
    finally:
        consumer.close()
    return sorted(out)


@pytest.mark.parametrize("codec", ALL_CODECS)
@pytest.mark.parametrize("release", list(RELEASES))
def test_kafka_python_round_trip(legacy_broker, release, codec):
    _need_codec(codec, release)
    broker = legacy_broker(release)
    topic = _topic()
    broker.create_topic(topic, 2)
    rows = [(i % 2, b"k%d" % i, b"value-%d" % i * (i + 1)) for i in range(12)]
    rows.append((0, None, b"null key"))
    rows.append((1, b"null value", None))
    acked = _kp_produce(broker, topic, rows, codec)

    per_partition = {0: 0, 1: 0}
    expected = []
    for (p, k, v), (ap, ao) in zip(rows, acked, strict=True):
        assert (ap, ao) == (p, per_partition[p])
        expected.append((p, per_partition[p], k, v))
        per_partition[p] += 1
    got = _kp_consume(broker, topic, [0, 1], len(rows))
    assert [g[:4] for g in got] == sorted(expected, key=lambda r: (r[0], r[1]))

    magic = RELEASES[release].magic
    for p in (0, 1):
        entries = broker.entries(topic, p)
        assert {e.magic for e in entries} == {magic}
        assert {e.codec for e in entries} == {ALL_CODECS.index(codec)}
        stored = broker.messages(topic, p)
        assert [(m[0], m[3], m[4]) for m in stored] == [(o, k, v) for q, o, k, v in expected if q == p]
        if magic == 1:  # the producer's timestamps survive (CreateTime)
            assert all(m[2] > 1_500_000_000_000 for m in stored)
            assert {g[4] for g in got if g[0] == p} == {m[2] for m in stored}
            if codec != "none":  # KIP-31 relative offsets: appended in place, not recompressed
                assert not any(e.rewritten for e in entries)
        elif codec != "none":  # magic 0: the broker recompressed with absolute offsets
            assert all(e.rewritten for e in entries)
    assert_only_release_versions(broker)
    produce_versions = {r.api_version for r in broker.requests if r.api_key == 0}
    fetch_versions = {r.api_version for r in broker.requests if r.api_key == 1}
    assert (produce_versions, fetch_versions) == ({TOP[release][0]}, {TOP[release][1]})


@pytest.mark.parametrize(("release", "cls", "version"), [
    ("0.8.2", ApiVersionsRequest, 0),
    ("0.10.0", ApiVersionsRequest, 1),
    ("0.10.0", ApiVersionsRequest, 3),
    ("0.8.2", MetadataRequest, 1),
    ("0.9.0", ProduceRequest, 2),
    ("0.10.0", FetchRequest, 3),
    ("0.10.0", ListOffsetsRequest, 1),
    ("0.8.2", OffsetCommitRequest, 2),
    ("0.10.0", OffsetFetchRequest, 2),
])
def test_unknown_api_or_version_closes_the_connection(legacy_broker, release, cls, version):
    broker = legacy_broker(release)
    raw = Raw(broker)
    try:
        raw.send(cls, version, {})
        assert raw.closed_without_answer()
    finally:
        raw.close()
    (logged,) = broker.requests
    assert (logged.api_key, logged.api_version) == (cls.API_KEY, version)
    assert logged.outcome == "closed: unknown api key or version"


def test_0_9_0_leaves_api_versions_unanswered_and_the_connection_open(legacy_broker):
    """As a real 0.9.0.1 does (tests/compat): no answer to ApiVersions, and the connection
    still serves the requests the release knows."""
    broker = legacy_broker("0.9.0")
    broker.create_topic("t", 1)
    raw = Raw(broker)
    try:
        raw.send(ApiVersionsRequest, 0, {})
        raw.sock.settimeout(1)
        with pytest.raises(TimeoutError):
            raw.sock.recv(1)
        raw.sock.settimeout(5)
        resp = raw.request(MetadataRequest, MetadataResponse, 0, {"topics": [{"name": "t"}]})
    finally:
        raw.close()
    assert [t.name for t in resp.topics] == ["t"]
    assert [r.outcome for r in broker.requests] == [
        "no response: api key past the release's table", "answered"]


def test_api_versions_v0_on_0_10_0(legacy_broker):
    broker = legacy_broker("0.10.0")
    raw = Raw(broker)
    try:
        resp = raw.request(ApiVersionsRequest, ApiVersionsResponse, 0, {})
    finally:
        raw.close()
    ranges = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
    assert resp.error_code == 0
    assert {k: ranges[k] for k in (0, 1, 2, 3, 8, 9, 10, 18)} == {
        0: (0, 2), 1: (0, 2), 2: (0, 0), 3: (0, 1), 8: (0, 2), 9: (0, 1), 10: (0, 0), 18: (0, 0)}


def test_fetch_returns_whole_entries_cut_to_max_bytes(legacy_broker):
    broker = legacy_broker("0.8.2")
    topic = _topic()
    broker.create_topic(topic, 1)
    for i in range(3):
        broker.append(topic, 0, [(b"k%d" % i, bytes([65 + i]) * 100)])
    e = [x.data for x in broker.entries(topic, 0)]
    raw = Raw(broker)
    try:
        assert _fetch(raw, 0, topic, 0, 0, len(e[0]) + 10) == (0, 3, e[0] + e[1][:10])
        assert _fetch(raw, 0, topic, 0, 1, 1 << 20) == (0, 3, e[1] + e[2])
        assert _fetch(raw, 0, topic, 0, 1, 5) == (0, 3, e[1][:5])
        assert _fetch(raw, 0, topic, 0, 3, 1 << 20) == (0, 3, b"")
        assert _fetch(raw, 0, topic, 0, 4, 1 << 20) == (1, 3, b"")
        assert _fetch(raw, 0, topic, 0, -1, 1 << 20) == (1, 3, b"")
        assert _fetch(raw, 0, topic, 1, 0, 1 << 20) == (3, -1, b"")
        assert _fetch(raw, 0, "nope", 0, 0, 1 << 20) == (3, -1, b"")
    finally:
        raw.close()


@pytest.mark.parametrize("release", ["0.8.2", "0.10.0"])
def test_fetch_inside_a_compressed_wrapper_returns_the_wrapper(legacy_broker, release):
    broker = legacy_broker(release)
    topic = _topic()
    broker.create_topic(topic, 1)
    assert broker.append(topic, 0, [(None, b"a%d" % i) for i in range(5)], codec="gzip") == 0
    assert broker.append(topic, 0, [(None, b"tail")]) == 5
    wrapper = broker.entries(topic, 0)[0].data
    assert struct.unpack_from(">q", wrapper)[0] == 4  # wrapper offset = last inner offset
    raw = Raw(broker)
    try:
        code, hw, data = _fetch(raw, TOP[release][1], topic, 0, 3, 1 << 20)
    finally:
        raw.close()
    assert (code, hw) == (0, 6)
    assert data.startswith(wrapper)
    assert [(m[0], m[4]) for m in decode_message_set(data)] == [
        (0, b"a0"), (1, b"a1"), (2, b"a2"), (3, b"a3"), (4, b"a4"), (5, b"tail")]


def test_fetch_waits_for_min_bytes_within_bounds(legacy_broker):
    import threading

    broker = legacy_broker("0.9.0", max_fetch_wait_ms=300)
    topic = _topic()
    broker.create_topic(topic, 1)
    raw = Raw(broker)

    def fetch_at_end():
        started = time.monotonic()
        resp = raw.request(FetchRequest, FetchResponse, 1, {
            "replica_id": -1, "max_wait_ms": 60_000, "min_bytes": 1,
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
        return time.monotonic() - started, bytes(resp.responses[0].partitions[0].records or b"")

    try:
        waited, data = fetch_at_end()  # nothing arrives: capped at max_fetch_wait_ms
        assert data == b"" and 0.25 < waited < 2
        threading.Timer(0.05, broker.append, (topic, 0, [(None, b"late")])).start()
        waited, data = fetch_at_end()  # woken by the append
        assert [m[4] for m in decode_message_set(data)] == [b"late"] and waited < 0.25
    finally:
        raw.close()


def test_fetch_v1_on_0_10_0_down_converts_to_magic_0(legacy_broker):
    broker = legacy_broker("0.10.0")
    topic = _topic()
    broker.create_topic(topic, 1)
    broker.append(topic, 0, [(b"k", b"v%d" % i) for i in range(4)], codec="snappy")
    broker.append(topic, 0, [(b"k", b"plain")])
    raw = Raw(broker)
    try:
        v1 = _fetch(raw, 1, topic, 0, 0, 1 << 20)[2]
        v2 = _fetch(raw, 2, topic, 0, 0, 1 << 20)[2]
        # the limit keeps whole entries only, the partial one is dropped (not cut)
        v1_cut = _fetch(raw, 1, topic, 0, 0, len(broker.entries(topic, 0)[0].data) + 3)[2]
    finally:
        raw.close()
    as_v1 = decode_message_set(v1)
    assert [(m[0], m[1], m[2], m[4]) for m in as_v1] == [
        (0, 0, None, b"v0"), (1, 0, None, b"v1"), (2, 0, None, b"v2"), (3, 0, None, b"v3"),
        (4, 0, None, b"plain")]
    assert {m[1] for m in decode_message_set(v2)} == {1}
    assert [m[0] for m in decode_message_set(v1_cut)] == [0, 1, 2, 3]
    assert decode_message_set(v1_cut) == as_v1[:4]


def test_produce_errors(legacy_broker):
    broker = legacy_broker("0.9.0", message_max_bytes=2000)
    topic = _topic()
    broker.create_topic(topic, 1)
    raw = Raw(broker)
    try:
        good = _message_set([(b"k", b"v")])
        corrupt = bytearray(good)
        corrupt[-1] ^= 0xFF
        assert _produce_raw(raw, 1, topic, 0, bytes(corrupt)).error_code == 2
        assert _produce_raw(raw, 1, topic, 0, _message_set([(b"k", b"v")], magic=1)).error_code == 2
        assert _produce_raw(raw, 1, topic, 0, _message_set([(None, b"x" * 3000)])).error_code == 10
        assert _produce_raw(raw, 1, "nope", 0, good).error_code == 3
        assert _produce_raw(raw, 1, topic, 0, good, acks=2).error_code == 21
        # acks=0: no answer; the next response is the next request's
        _produce_raw(raw, 1, topic, 0, good, acks=0)
        ok = _produce_raw(raw, 1, topic, 0, good + good[:7])  # a partial tail is trimmed
        assert (ok.error_code, ok.base_offset) == (0, 1)
        # a failed acks=0 produce closes the connection (0.9+)
        _produce_raw(raw, 1, topic, 0, bytes(corrupt), acks=0)
        assert raw.closed_without_answer()
    finally:
        raw.close()
    assert broker.end_offset(topic, 0) == 2
    outcomes = [(r.api_version, r.outcome) for r in broker.requests]
    assert outcomes[-1] == (1, "closed: acks=0 produce failed")


@pytest.mark.parametrize("release", list(RELEASES))
def test_lz4_frame_header_checksum_rules(legacy_broker, release):
    """KAFKA-3160: before 0.10 brokers check a header checksum computed over magic+FLG+BD;
    0.10.0 ignores it for magic 0 and wants the correct one for magic 1."""
    _need_codec("lz4", release)
    from kafka import codec as kcodec

    broker = legacy_broker(release)
    topic = _topic()
    broker.create_topic(topic, 1)
    magic = RELEASES[release].magic
    inner = _message_set([(None, b"v0"), (None, b"v1")], magic=magic)
    raw = Raw(broker)
    try:
        results = {}
        for name, payload in (("correct", kcodec.lz4_encode(inner)),
                              ("kafka-3160", kcodec.lz4_encode_old_kafka(inner))):
            b = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 30)
            b.append(0, 1_600_000_000_000, None, payload)
            wrapper = bytearray(b.build())
            wrapper[17] |= 3  # lz4
            struct.pack_into(">I", wrapper, 12, calc_crc32(memoryview(wrapper)[16:]))
            results[name] = _produce_raw(raw, TOP[release][0], topic, 0, bytes(wrapper)).error_code
    finally:
        raw.close()
    if magic == 0:
        assert results == {"correct": 2, "kafka-3160": 0}
    else:
        assert results == {"correct": 0, "kafka-3160": 2}


def test_0_10_0_offsets_timestamps_and_conversion(legacy_broker):
    broker = legacy_broker("0.10.0")
    plain, lat = _topic(), _topic()
    broker.create_topic(plain, 1)
    broker.create_topic(lat, 1, log_append_time=True)
    ts = 1_600_000_000_000
    raw = Raw(broker)
    try:
        r = _produce_raw(raw, 2, plain, 0, _message_set([(b"a", b"0"), (b"b", b"1")], 1, 1, ts))
        assert (r.error_code, r.base_offset, r.log_append_time_ms) == (0, 0, -1)
        # magic 0 is accepted and up-converted (timestamp -1), compressed or not
        assert _produce_raw(raw, 0, plain, 0, _message_set([(b"c", b"2")], 0)).base_offset == 2
        assert _produce_raw(raw, 1, plain, 0,
                            _message_set([(b"d", b"3"), (b"e", b"4")], 0, 2)).base_offset == 3
        before = int(time.time() * 1000)
        r = _produce_raw(raw, 2, lat, 0, _message_set([(b"x", b"y"), (b"z", b"w")], 1, 1, ts))
        assert r.error_code == 0 and r.log_append_time_ms >= before
    finally:
        raw.close()
    assert [(m[0], m[1], m[2], m[4]) for m in broker.messages(plain, 0)] == [
        (0, 1, ts, b"0"), (1, 1, ts, b"1"), (2, 1, -1, b"2"), (3, 1, -1, b"3"), (4, 1, -1, b"4")]
    assert [e.rewritten for e in broker.entries(plain, 0)] == [False, True, True]
    wrapper = broker.entries(lat, 0)[0]
    assert not wrapper.rewritten and wrapper.max_timestamp == r.log_append_time_ms
    assert [m[2] for m in broker.messages(lat, 0)] == [r.log_append_time_ms] * 2


def test_list_offsets_v0(legacy_broker):
    broker = legacy_broker("0.8.2")
    topic = _topic()
    broker.create_topic(topic, 2)
    broker.append(topic, 0, [(None, b"%d" % i) for i in range(5)], codec="gzip")
    raw = Raw(broker)

    def offsets(partition, timestamp, max_num):
        resp = raw.request(ListOffsetsRequest, ListOffsetsResponse, 0, {
            "replica_id": -1, "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "timestamp": timestamp,
                 "max_num_offsets": max_num}]}]})
        p = resp.topics[0].partitions[0]
        return p.error_code, list(p.old_style_offsets)

    try:
        assert offsets(0, -1, 1) == (0, [5])
        assert offsets(0, -1, 10) == (0, [5, 0])
        assert offsets(0, -2, 10) == (0, [0])
        assert offsets(0, int(time.time() * 1000) + 60_000, 10) == (0, [5, 0])
        assert offsets(0, 0, 10) == (0, [])
        assert offsets(1, -1, 1) == (0, [0])
        assert offsets(1, -2, 1) == (0, [0])
        assert offsets(2, -1, 1) == (3, [])
    finally:
        raw.close()


def test_offset_commit_and_fetch(legacy_broker):
    broker = legacy_broker("0.8.2")
    topic = _topic()
    broker.create_topic(topic, 1)
    raw = Raw(broker)

    def commit(version, offset, group="g", **extra):
        body = {"group_id": group, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_metadata": "m"}]}],
            **extra}
        resp = raw.request(OffsetCommitRequest, OffsetCommitResponse, version, body)
        return resp.topics[0].partitions[0].error_code

    def fetch(version, group="g"):
        resp = raw.request(OffsetFetchRequest, OffsetFetchResponse, version, {
            "group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]})
        p = resp.topics[0].partitions[0]
        return p.error_code, p.committed_offset

    try:
        assert commit(0, 7) == 0
        assert fetch(0) == (0, 7)
        assert fetch(1) == (0, -1)  # v0 is the ZooKeeper store, v1 the Kafka one
        assert commit(1, 9, generation_id_or_member_epoch=-1, member_id="") == 0
        assert (fetch(1), fetch(0)) == ((0, 9), (0, 7))
        assert fetch(1, group="unknown") == (0, -1)
    finally:
        raw.close()

    broker9 = legacy_broker("0.9.0")
    broker9.create_topic(topic, 1)
    raw = Raw(broker9)
    try:
        assert commit(2, 3, generation_id_or_member_epoch=4, member_id="m",
                      retention_time_ms=-1) == 25  # no such member: no group is emulated
        assert commit(2, 3, generation_id_or_member_epoch=-1, member_id="",
                      retention_time_ms=-1) == 0
        assert fetch(1) == (0, 3)
    finally:
        raw.close()


def test_metadata_v0_and_v1(legacy_broker):
    broker = legacy_broker("0.10.0")
    a, b = sorted([_topic(), _topic()])
    broker.create_topic(a, 1)
    broker.create_topic(b, 3)
    raw = Raw(broker)
    try:
        v0_all = raw.request(MetadataRequest, MetadataResponse, 0, {"topics": []})
        v1_all = raw.request(MetadataRequest, MetadataResponse, 1, {"topics": None})
        v1_none = raw.request(MetadataRequest, MetadataResponse, 1, {"topics": []})
        v0_one = raw.request(MetadataRequest, MetadataResponse, 0,
                             {"topics": [{"name": b}, {"name": "nope"}]})
    finally:
        raw.close()
    for resp in (v0_all, v1_all):
        assert [(t.name, len(t.partitions)) for t in resp.topics] == [(a, 1), (b, 3)]
        assert [(x.node_id, x.host, x.port) for x in resp.brokers] == [(0, broker.host, broker.port)]
    assert v1_all.controller_id == 0
    assert v1_none.topics == []
    assert [(t.name, t.error_code, [p.leader_id for p in t.partitions]) for t in v0_one.topics] == [
        (b, 0, [0, 0, 0]), ("nope", 3, [])]


def test_stop_closes_connections_and_the_port(legacy_broker):
    broker = LegacyBroker("0.9.0").start()
    raw = Raw(broker)
    started = time.monotonic()
    broker.stop()
    assert time.monotonic() - started < 5
    assert raw.closed_without_answer()
    raw.close()
    with pytest.raises(OSError):
        socket.create_connection((broker.host, broker.port), timeout=1).close()


# == kafkawire's client layer ====================================================================


def _client(broker: LegacyBroker, pinned: bool = True, **kwargs):
    from spark_kafka_wire.client.config import ClientConfig
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    if pinned:
        kwargs.update(api_version_request=False, broker_version_fallback=broker.release.name)
    return KafkaClient(ClientConfig.from_servers(broker.bootstrap_servers, request_timeout_ms=5000,
                                                 **kwargs))


def _read_all(client, topic, partition, start, end, **settings):
    from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
    from spark_kafka_wire.client.fetching.fetcher import fetch_range

    out = []
    for chunk in fetch_range(client, topic, partition, start, end, FetchSettings(**settings)):
        out.extend(zip(chunk.offsets.tolist(), chunk.keys.to_pylist(), chunk.values.to_pylist(),
                       chunk.timestamps.tolist(), strict=True))
    return out


@pytest.mark.parametrize("release", list(RELEASES))
def test_client_reads_legacy_message_sets(legacy_broker, release):
    from spark_kafka_wire.client.fetching.offsets import resolve_offsets

    codecs = list(ALL_CODECS)
    for codec in codecs:
        _need_codec(codec, release)
    broker = legacy_broker(release)
    topic = _topic()
    broker.create_topic(topic, 2)
    # partition 0: written by kafka-python's producer, one codec after the other
    expected = []
    for codec in codecs:
        rows = [(0, b"%s-%d" % (codec.encode(), i), b"v" * i) for i in range(5)]
        _kp_produce(broker, topic, rows, codec)
        expected += [(k, v) for _, k, v in rows]
    # partition 1: appended by the emulator, with a null key and an empty value
    broker.append(topic, 1, [(None, b"first"), (b"k", b"")], codec="gzip")
    broker.append(topic, 1, [(b"last", b"x" * 300)])
    broker.clear_log()

    with _client(broker) as client:
        n = len(expected)
        ends = resolve_offsets(client, {(topic, 0): -1, (topic, 1): -1})
        starts = resolve_offsets(client, {(topic, 0): -2, (topic, 1): -2})
        assert (ends, starts) == ({(topic, 0): n, (topic, 1): 3}, {(topic, 0): 0, (topic, 1): 0})
        got0 = _read_all(client, topic, 0, 0, n)
        got1 = _read_all(client, topic, 1, 0, 3)
        middle = _read_all(client, topic, 0, 7, 13)  # starts and ends inside compressed wrappers
    assert [(o, k, v) for o, k, v, _ in got0] == [(i, k, v) for i, (k, v) in enumerate(expected)]
    assert [(o, k, v) for o, k, v, _ in got1] == [(0, None, b"first"), (1, b"k", b""),
                                                   (2, b"last", b"x" * 300)]
    assert [o for o, *_ in middle] == list(range(7, 13))
    if RELEASES[release].magic == 1:
        stored = {m[0]: m[2] for m in broker.messages(topic, 0)}
        assert [ts for o, _, _, ts in got0] == [stored[o] for o, *_ in got0]
    assert_only_release_versions(broker)
    fetches = {r.api_version for r in broker.requests if r.api_key == 1}
    assert fetches == {TOP[release][1]}


@pytest.mark.parametrize(("release", "codec"), [
    (rel, codec) for rel in RELEASES for codec in ALL_CODECS])
def test_client_produces_legacy_message_sets(legacy_broker, release, codec):
    import numpy as np
    import pyarrow as pa

    from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned

    _need_codec(codec, release)
    broker = legacy_broker(release)
    topic = _topic()
    broker.create_topic(topic, 2)
    keys = [b"k%d" % i if i % 3 else None for i in range(10)]
    values = [b"value %d " % i * (i + 1) for i in range(10)]
    parts = np.array([i % 2 for i in range(10)], dtype=np.int32)
    ts = int(time.time() * 1000)
    with _client(broker) as client:
        # a short delivery timeout: CORRUPT_MESSAGE is retriable, so a rejected message set
        # would otherwise be retried for the default two minutes before the test fails
        producer = Producer(client, ProduceSettings(compression=ALL_CODECS.index(codec),
                                                    delivery_timeout_ms=5_000))
        magic = producer.record_magic(topic)
        assert magic == RELEASES[release].magic
        producer.send(encode_partitioned(topic, pa.array(keys, pa.binary()),
                                         pa.array(values, pa.binary()), parts,
                                         producer.settings, ts, magic))
        assert producer.records_sent == 10
    for p in (0, 1):
        want = [(k, v) for i, (k, v) in enumerate(zip(keys, values, strict=True)) if i % 2 == p]
        stored = broker.messages(topic, p)
        assert [(m[0], m[3], m[4]) for m in stored] == [(o, k, v) for o, (k, v) in enumerate(want)]
        assert {m[1] for m in stored} == {RELEASES[release].magic}
        assert {m[2] for m in stored} == ({None} if magic == 0 else {ts})
        assert {e.codec for e in broker.entries(topic, p)} == {ALL_CODECS.index(codec)}
    produce = [r for r in broker.requests if r.api_key == 0]
    assert {r.api_version for r in produce} == {TOP[release][0]}
    assert {m for r in produce for d in r.detail["partitions"] for m in d["magics"]} == {magic}
    assert_only_release_versions(broker)


def test_client_negotiates_with_0_10_0(legacy_broker):
    """api.version.request=true (the default): ApiVersions at our highest version makes a
    0.10.0 broker close the connection; the client retries with v0 and uses its answer."""
    from spark_kafka_wire.client.fetching.offsets import resolve_offsets

    broker = legacy_broker("0.10.0")
    topic = _topic()
    broker.create_topic(topic, 1)
    broker.append(topic, 0, [(b"k", b"v%d" % i) for i in range(3)], codec="gzip")
    with _client(broker, pinned=False) as client:
        assert resolve_offsets(client, {(topic, 0): -1}) == {(topic, 0): 3}
        got = _read_all(client, topic, 0, 0, 3)
    assert [v for _, _, v, _ in got] == [b"v0", b"v1", b"v2"]
    api_versions = [(r.api_version, r.outcome) for r in broker.requests if r.api_key == 18]
    assert api_versions[0][0] > 0 and api_versions[0][1].startswith("closed: unknown")
    assert (0, "answered") in api_versions
    assert {v for v, _ in api_versions} == {api_versions[0][0], 0}
    first_v0 = next(i for i, r in enumerate(broker.requests)
                    if r.api_key == 18 and r.api_version == 0)
    later = broker.requests[first_v0:]
    assert not [r for r in later if r.outcome.startswith("closed")]
    used = {(r.api_key, r.api_version) for r in later if r.api_key != 18}
    assert {(1, 2), (3, 1)} <= used  # the highest Fetch and Metadata 0.10.0 offers
    assert broker.connections_accepted >= 2


def test_client_without_pinning_names_the_settings_on_0_9_0(legacy_broker):
    """A 0.9 broker answers nothing to ApiVersions (it does not close the connection as 0.8
    does): the request timeout ends the wait, and the error still says how to pin the
    release (before, it only said the broker was overloaded or unreachable)."""
    from spark_kafka_wire.client.errors import ApiVersionsTimeoutError, NoBrokersAvailableError

    broker = legacy_broker("0.9.0")
    broker.create_topic("t", 1)
    started = time.monotonic()
    with _client(broker, pinned=False) as client, \
            pytest.raises(NoBrokersAvailableError) as info:
        client.fetch_metadata(["t"])
    assert time.monotonic() - started < 15
    assert isinstance(info.value.last, ApiVersionsTimeoutError)
    message = str(info.value)
    assert "no response to ApiVersions within 5000 ms" in message
    assert "kafka.api.version.request=false" in message
    assert "kafka.broker.version.fallback" in message
    assert {r.api_key for r in broker.requests} == {18}


@pytest.mark.parametrize("release", ["0.8.2", "0.10.0"])
def test_client_grows_the_fetch_size_for_a_big_record(legacy_broker, release):
    broker = legacy_broker(release)
    topic = _topic()
    broker.create_topic(topic, 1)
    broker.append(topic, 0, [(b"small", b"s")])
    big = bytes(range(256)) * 40  # 10 KiB, incompressible enough not to matter
    broker.append(topic, 0, [(b"big", big)])
    broker.append(topic, 0, [(b"after", b"a")])
    size = len(broker.entries(topic, 0)[1].data)
    broker.clear_log()
    started = time.monotonic()
    with _client(broker) as client:
        got = _read_all(client, topic, 0, 0, 3, max_partition_fetch_bytes=1024)
    assert time.monotonic() - started < 10
    assert [(o, k, v) for o, k, v, _ in got] == [(0, b"small", b"s"), (1, b"big", big),
                                                 (2, b"after", b"a")]
    at_big = [p["max_bytes"] for r in broker.requests if r.api_key == 1
              for p in r.detail["partitions"] if p["offset"] == 1 and p["max_bytes"] > 1]
    doubling = [1024]
    while doubling[-1] < size:
        doubling.append(doubling[-1] * 2)
    assert at_big == doubling
    assert_only_release_versions(broker)


def test_client_without_pinning_names_the_settings(legacy_broker):
    from spark_kafka_wire.protocol.errors import KafkaWireError

    broker = legacy_broker("0.8.2")
    topic = _topic()
    broker.create_topic(topic, 1)
    started = time.monotonic()
    with _client(broker, pinned=False) as client, pytest.raises(KafkaWireError) as info:
        client.fetch_metadata([topic])
    assert time.monotonic() - started < 20
    message = str(info.value)
    assert "kafka.api.version.request=false" in message
    assert "kafka.broker.version.fallback" in message
    assert {r.api_key for r in broker.requests} == {18}


# == Spark ======================================================================================


def _spark_options(broker: LegacyBroker, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.api.version.request": "false",
            "kafka.broker.version.fallback": broker.release.name,
            "kafka.request.timeout.ms": "5000", **extra}


def _sink_options(broker: LegacyBroker, codec: str) -> dict[str, str]:
    # a short delivery timeout makes a rejected (retriable CORRUPT_MESSAGE) write fail fast
    return _spark_options(broker, **{"kafka.compression.type": codec,
                                      "kafka.delivery.timeout.ms": "5000"})


@pytest.mark.spark
@pytest.mark.parametrize(("release", "codec"), [
    ("0.8.2", "gzip"), ("0.8.2", "lz4"), ("0.9.0", "snappy"), ("0.10.0", "lz4"), ("0.10.0", "none"),
])
def test_spark_round_trip(spark, legacy_broker, release, codec):
    _need_codec(codec, release)
    broker = legacy_broker(release)
    topic = _topic()
    broker.create_topic(topic, 2)
    rows = [(f"k{i}" if i % 4 else None, f"value-{i}", i % 2) for i in range(20)]
    df = spark.createDataFrame(rows, "key string, value string, partition int").coalesce(1)
    (df.write.format("kafkawire").options(**_sink_options(broker, codec)).option("topic", topic)
       .mode("append").save())
    expected = []
    for p in (0, 1):
        want = [(k, v) for k, v, q in rows if q == p]
        stored = broker.messages(topic, p)
        assert [(m[3], m[4]) for m in stored] == [
            (None if k is None else k.encode(), v.encode()) for k, v in want]
        assert {m[1] for m in stored} == {RELEASES[release].magic}
        assert {e.codec for e in broker.entries(topic, p)} == {ALL_CODECS.index(codec)}
        expected += [(topic, p, o, k, v) for o, (k, v) in enumerate(want)]

    read = spark.read.format("kafkawire").options(**_spark_options(broker)).option(
        "subscribe", topic).load()
    got = sorted(
        (r.topic, r.partition, r.offset, None if r.key is None else bytes(r.key).decode(),
         bytes(r.value).decode())
        for r in read.collect()
    )
    assert got == sorted(expected, key=lambda x: (x[1], x[2]))
    assert_only_release_versions(broker)
    produce = {r.api_version for r in broker.requests if r.api_key == 0}
    fetch = {r.api_version for r in broker.requests if r.api_key == 1}
    assert (produce, fetch) == ({TOP[release][0]}, {TOP[release][1]})


@pytest.mark.spark
def test_spark_reads_a_record_bigger_than_the_fetch_size(spark, legacy_broker):
    broker = legacy_broker("0.9.0")
    topic = _topic()
    broker.create_topic(topic, 1)
    big = b"B" * 20_000
    broker.append(topic, 0, [(b"a", b"small")])
    broker.append(topic, 0, [(b"b", big)], codec="gzip")
    broker.append(topic, 0, [(b"c", b"tail")])
    started = time.monotonic()
    rows = (spark.read.format("kafkawire")
            .options(**_spark_options(broker, **{"kafka.max.partition.fetch.bytes": "512"}))
            .option("subscribe", topic).load().orderBy("offset").collect())
    assert time.monotonic() - started < 30
    assert [(r.offset, bytes(r.key), bytes(r.value)) for r in rows] == [
        (0, b"a", b"small"), (1, b"b", big), (2, b"c", b"tail")]
    assert_only_release_versions(broker)


@pytest.mark.spark
def test_spark_without_pinning_tells_what_to_set(spark, legacy_broker):
    broker = legacy_broker("0.8.2")
    topic = _topic()
    broker.create_topic(topic, 1)
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        (spark.read.format("kafkawire")
         .option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("subscribe", topic).load().collect())
    assert time.monotonic() - started < 30
    message = str(info.value)
    assert "kafka.api.version.request=false" in message
    assert "kafka.broker.version.fallback" in message
    assert {r.api_key for r in broker.requests} == {18}
