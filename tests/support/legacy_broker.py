"""An emulated Kafka 0.8.2 / 0.9.0 / 0.10.0 broker for tests.

No broker of that era can be installed here, yet kafkawire must talk to them: they know no
ApiVersions (or only v0), close the connection on any request they do not know, and store
legacy MessageSets (magic 0, or magic 1 from 0.10.0). ``LegacyBroker`` is one such broker
(node 0) on a loopback port with in-memory topics.

It shares no code with spark_kafka_wire: requests are decoded and responses encoded with
kafka-python's classes generated from Kafka's JSON message specs, and message sets are read
and written with kafka-python's legacy record classes and codecs. What it adds is the broker's
behaviour, following the Kafka 0.8.2-0.10.0 broker source:

- API versions per release as in librdkafka's legacy tables (rdkafka_feature.c) and
  kafka-python's ``BROKER_API_VERSIONS`` (they agree); a request for an API key or version the
  release does not know closes the connection without an answer.
- Produce: CRCs checked (error 2 CORRUPT_MESSAGE), message.max.bytes (error 10), acks 0 gets
  no answer (and a failed acks=0 produce closes the connection, the KAFKA-955 rule). Offsets are
  assigned like ``ByteBufferMessageSet.validateMessagesAndAssignOffsets``: a magic 0 compressed
  wrapper is recompressed with absolute inner offsets, wrapper offset = last inner offset; a
  magic 1 wrapper whose inner offsets are 0..n-1 is kept byte for byte with its offset set to
  the last absolute offset (KIP-31), otherwise rebuilt. 0.10.0 up-converts magic 0 to magic 1
  (timestamp -1, or the append time with LogAppendTime) and 0.8/0.9 refuse magic 1 (error 2).
- Fetch returns whole stored entries from the one holding the fetch offset, cut to exactly
  the partition's max bytes (a partial message at the end, as ``FileMessageSet.read`` did);
  0.10.0 down-converts to magic 0 for Fetch v0/v1, dropping a partial trailing message.
- ListOffsets v0 follows ``Log.getOffsetsBefore`` with one segment starting at 0.
- OffsetCommit/OffsetFetch v0 use the "ZooKeeper" store and v1+ the "Kafka" store, which are
  separate, as on 0.8.2.

Every request is logged in ``broker.requests`` (api key, version, outcome and a few details)
so tests can assert exactly what a client sent. Usage::

    with LegacyBroker("0.8.2") as broker:
        broker.create_topic("t", 2)
        broker.append("t", 0, [(b"key", b"value")], codec="gzip")  # optional seeding
        ...  # point a client at broker.bootstrap_servers
        assert not [r for r in broker.requests if r.outcome.startswith("closed")]
        broker.messages("t", 0)  # [(offset, magic, timestamp, key, value)], decoded deep

Known APIs it does not emulate (group membership, SaslHandshake, broker-internal APIs) close
the connection too, logged as "closed: not emulated".
"""

from __future__ import annotations

import bisect
import io
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafka import codec as kcodec
from kafka.protocol.api_header import RequestHeader
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
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32

from tests.support.frame_server import FrameServer

# -- releases ----------------------------------------------------------------------------------

API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 4: "LeaderAndIsr",
    5: "StopReplica", 6: "UpdateMetadata", 7: "ControlledShutdown", 8: "OffsetCommit",
    9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
    13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
    17: "SaslHandshake", 18: "ApiVersions",
}

_GROUP_APIS_0_9 = {11: (0, 0), 12: (0, 0), 13: (0, 0), 14: (0, 0), 15: (0, 0), 16: (0, 0)}


@dataclass(frozen=True)
class Release:
    name: str
    apis: dict[int, tuple[int, int]]  # every client API the release knows: key -> (min, max)
    magic: int  # message format it stores
    codecs: frozenset[int]  # 1 gzip, 2 snappy, 3 lz4
    strict_acks: bool  # acks outside {-1, 0, 1} answered with INVALID_REQUIRED_ACKS (0.9+)
    # Broker-internal APIs (4-7) that a 0.10.0 broker also lists in its ApiVersions answer.
    internal_apis: dict[int, tuple[int, int]] = field(default_factory=dict)
    # API keys from this one on are past the end of the release's ApiKeys table, where the
    # broker answers nothing and keeps the connection (None: it closes it). A real 0.9.0.1
    # does that with ApiVersions (key 18): its network thread fails on ApiKeys.forId
    # (ArrayIndexOutOfBoundsException "Index 18 out of bounds for length 17", logged as
    # "Processor got uncaught exception") before the request is queued, so no response is
    # ever sent (tests/compat ran it); 0.8.2.2 closes the connection.
    silent_from_key: int | None = None


# Sources (they agree): librdkafka src/rdkafka_feature.c (rd_kafka_ApiVersion_0_8_2 / 0_9_0,
# used for broker.version.fallback) and kafka-python kafka/protocol/broker_version_data.py
# (BROKER_API_VERSIONS). ListOffsets v1 (KIP-79) and Metadata v2 arrived in 0.10.1, so 0.10.0
# has ListOffsets v0 only. LZ4 exists since 0.8.2 (librdkafka ties it to FindCoordinator).
RELEASES: dict[str, Release] = {
    "0.8.2": Release(
        "0.8.2",
        {0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0), 8: (0, 1), 9: (0, 1), 10: (0, 0)},
        magic=0, codecs=frozenset({1, 2, 3}), strict_acks=False,
    ),
    "0.9.0": Release(
        "0.9.0",
        {0: (0, 1), 1: (0, 1), 2: (0, 0), 3: (0, 0), 8: (0, 2), 9: (0, 1), 10: (0, 0),
         **_GROUP_APIS_0_9},
        magic=0, codecs=frozenset({1, 2, 3}), strict_acks=True, silent_from_key=17,
    ),
    "0.10.0": Release(
        "0.10.0",
        {0: (0, 2), 1: (0, 2), 2: (0, 0), 3: (0, 1), 8: (0, 2), 9: (0, 1), 10: (0, 0),
         **_GROUP_APIS_0_9, 17: (0, 0), 18: (0, 0)},
        magic=1, codecs=frozenset({1, 2, 3}), strict_acks=True,
        internal_apis={4: (0, 0), 5: (0, 0), 6: (0, 2), 7: (1, 1)},
    ),
}


def release_for(version: str) -> Release:
    """``0.8.2``, ``0.8.2.2``, ``0.9``, ``0.9.0.1``, ``0.10``, ``0.10.0.1`` ... -> Release."""
    parts = version.strip().split(".")
    if parts[:2] == ["0", "8"] and parts[2:3] == ["2"]:
        return RELEASES["0.8.2"]
    if parts[:2] == ["0", "9"]:
        return RELEASES["0.9.0"]
    if parts[:2] == ["0", "10"] and parts[2:3] in ([], ["0"]):
        return RELEASES["0.10.0"]
    raise ValueError(f"LegacyBroker emulates 0.8.2, 0.9.0 and 0.10.0, not {version!r}")


CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}

# Kafka error codes used here
NONE, OFFSET_OUT_OF_RANGE, CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION = 0, 1, 2, 3
MESSAGE_TOO_LARGE, INVALID_REQUIRED_ACKS, UNKNOWN_MEMBER_ID = 10, 21, 25

LOG_OVERHEAD = 12  # offset int64 + size int32
MIN_MESSAGE_SIZE = 14  # crc, magic, attributes, key length, value length (magic 0)
MAX_REQUEST_BYTES = 100 * 1024 * 1024  # socket.request.max.bytes default
TIMESTAMP_TYPE_BIT = 0x08
NO_TIMESTAMP = -1


class LoggedRequest(NamedTuple):
    api_key: int
    api_version: int
    name: str
    client_id: str | None
    outcome: str  # answered | no response | closed: <why>
    detail: dict


class _Reject(Exception):
    def __init__(self, code: int, why: str) -> None:
        super().__init__(why)
        self.code = code


class _Close(Exception):
    """Close the connection without answering."""


_NO_RESPONSE = object()


# -- message sets (all through kafka-python's legacy record classes) ----------------------------


@dataclass
class _Message:
    offset: int  # as found in the message set (raw)
    magic: int
    timestamp: int
    key: bytes | None
    value: bytes | None


@dataclass
class _Entry:
    """One stored MessageSet entry: a plain message or a compressed wrapper."""

    first: int
    last: int
    data: bytes
    magic: int
    codec: int
    max_timestamp: int
    rewritten: bool  # the broker rebuilt the message (recompressed / converted), not just
    # patched its offset (and timestamp) in place


def _set_crc(buf: bytearray) -> None:
    struct.pack_into(">I", buf, 12, calc_crc32(memoryview(buf)[16:]))


def _patch(entry: bytes | bytearray, offset: int, timestamp: int | None = None,
           log_append_time: bool = False) -> bytes:
    """A copy of one entry with a new offset (not covered by the CRC) and, for magic 1, a new
    timestamp and timestamp-type bit (CRC recomputed)."""
    buf = bytearray(entry)
    struct.pack_into(">q", buf, 0, offset)
    if buf[16] == 1 and (timestamp is not None or log_append_time):
        if timestamp is not None:
            struct.pack_into(">q", buf, 18, timestamp)
        if log_append_time:
            buf[17] |= TIMESTAMP_TYPE_BIT
        _set_crc(buf)
    return bytes(buf)


def _build(messages: list[tuple[int, int, bytes | None, bytes | None]], magic: int,
           codec: int) -> bytes:
    """kafka-python's builder: (offset, timestamp, key, value) -> MessageSet bytes (one wrapper
    when compressed, whose offset the caller sets)."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 62)
    for offset, ts, key, value in messages:
        if builder.append(offset, ts, key, value) is None:
            raise AssertionError("builder refused a message")
    return bytes(builder.build())


def _single(batch: LegacyRecordBatch) -> _Message:
    (rec,) = list(batch)
    return _Message(batch.base_offset, batch.magic, rec.timestamp if batch.magic else NO_TIMESTAMP,
                    rec.key, rec.value)


def _check_lz4_frame(payload: bytes, magic: int, release: Release) -> None:
    """Java's KafkaLZ4BlockInputStream: independent blocks only; before 0.10 the header checksum
    is computed over magic+FLG+BD (KAFKA-3160) and checked; 0.10 ignores it for magic 0 and
    checks the correct one for magic 1 (the lz4 library checks it when decoding)."""
    if len(payload) < 7 or payload[:4] != b"\x04\x22\x4d\x18":
        raise _Reject(CORRUPT_MESSAGE, "lz4: not an LZ4 frame")
    flg = payload[4]
    if not flg & 0x20:
        raise _Reject(CORRUPT_MESSAGE, "lz4: linked blocks are not supported by Kafka")
    end = 7 + (8 if flg & 0x08 else 0)  # header bytes up to and including HC
    if len(payload) < end:
        raise _Reject(CORRUPT_MESSAGE, "lz4: truncated frame header")
    if release.magic == 0:
        import xxhash  # kafka-python needs it too, to read magic 0 lz4

        if payload[end - 1] != xxhash.xxh32(payload[0:end - 1]).digest()[-2]:  # the 0.8/0.9 bug
            raise _Reject(CORRUPT_MESSAGE, "lz4: frame header checksum is not the one 0.8/0.9 "
                                           "brokers compute (KAFKA-3160: over magic+FLG+BD)")


def _decompress(wrapper: bytes, release: Release | None) -> list[LegacyRecordBatch]:
    """Inner messages of a compressed wrapper, as kafka-python legacy batches with their raw
    offsets. The wrapper's value is read by clearing the codec bits of a copy (kafka-python then
    yields the compressed payload as the value), and decompressed with kafka-python's codecs."""
    magic = wrapper[16]
    codec = wrapper[17] & 0x07
    plain = bytearray(wrapper)
    plain[17] &= ~0x07
    (rec,) = list(LegacyRecordBatch(plain, magic))
    payload = rec.value
    if payload is None:
        raise _Reject(CORRUPT_MESSAGE, "compressed message without a value")
    if codec == 3 and release is not None:
        _check_lz4_frame(payload, magic, release)
    try:
        if codec == 1:
            inner = kcodec.gzip_decode(payload)
        elif codec == 2:
            inner = kcodec.snappy_decode(payload)
        elif codec == 3:
            inner = kcodec.lz4_decode_old_kafka(payload) if magic == 0 else kcodec.lz4_decode(payload)
        else:
            raise _Reject(CORRUPT_MESSAGE, f"unknown compression codec {codec}")
    except _Reject:
        raise
    except Exception as exc:
        raise _Reject(CORRUPT_MESSAGE, f"cannot decompress codec {codec}: {exc}") from None
    records = MemoryRecords(bytes(inner))
    out = []
    while records.has_next():
        out.append(records.next_batch())
    if not out:
        raise _Reject(CORRUPT_MESSAGE, "compressed message set is empty")
    return out


def _shallow(data: bytes) -> list[tuple[bytes, LegacyRecordBatch]]:
    """Whole entries of a produced message set; a partial trailing entry is trimmed (as
    Log.trimInvalidBytes does)."""
    pos = 0
    out: list[tuple[bytes, LegacyRecordBatch]] = []
    while len(data) - pos >= LOG_OVERHEAD:
        (size,) = struct.unpack_from(">i", data, pos + 8)
        if size < MIN_MESSAGE_SIZE:
            raise _Reject(CORRUPT_MESSAGE, f"message size {size} is below the minimum")
        if pos + LOG_OVERHEAD + size > len(data):
            break
        chunk = data[pos:pos + LOG_OVERHEAD + size]
        magic = chunk[16]
        if magic not in (0, 1):
            raise _Reject(CORRUPT_MESSAGE, f"message magic {magic} is not a legacy message")
        out.append((chunk, LegacyRecordBatch(chunk, magic)))
        pos += LOG_OVERHEAD + size
    return out


def decode_message_set(data: bytes) -> list[tuple[int, int, int | None, bytes | None, bytes | None]]:
    """Deep iteration with kafka-python: (offset, magic, timestamp, key, value) per message.
    Timestamps are None for magic 0."""
    out = []
    for batch in MemoryRecords(bytes(data)):
        for rec in batch:
            out.append((rec.offset, batch.magic, rec.timestamp if batch.magic else None,
                        rec.key, rec.value))
    return out


# -- the log ------------------------------------------------------------------------------------


class _PartitionLog:
    def __init__(self, created_ms: int) -> None:
        self.entries: list[_Entry] = []
        self.lasts: list[int] = []
        self.end = 0
        self.last_modified_ms = created_ms

    def append(self, entry: _Entry) -> None:
        self.entries.append(entry)
        self.lasts.append(entry.last)
        self.end = entry.last + 1

    def entries_from(self, offset: int) -> list[_Entry]:
        """Entries from the one holding ``offset`` (its last offset is >= offset)."""
        i = bisect.bisect_left(self.lasts, offset)
        return self.entries[i:]


@dataclass
class _Topic:
    partitions: list[_PartitionLog]
    log_append_time: bool


# -- the broker -----------------------------------------------------------------------------------


class LegacyBroker(FrameServer):
    """One emulated broker (node 0) of ``release`` ("0.8.2", "0.9.0" or "0.10.0")."""

    thread_name = "legacy-broker"

    def __init__(
        self,
        release: str = "0.8.2",
        *,
        host: str = "127.0.0.1",
        message_max_bytes: int = 1_000_012,
        max_connections: int = 64,
        max_fetch_wait_ms: int = 1_000,
    ) -> None:
        super().__init__(host)
        self.release = release_for(release)
        self.message_max_bytes = message_max_bytes
        self.max_connections = max_connections
        self.max_fetch_wait_ms = max_fetch_wait_ms
        self.requests: list[LoggedRequest] = []
        self._topics: dict[str, _Topic] = {}
        self._offsets: dict[str, dict[tuple[str, str, int], tuple[int, str]]] = {
            "zookeeper": {}, "kafka": {},
        }
        self._lock = threading.Lock()
        self._appended = threading.Condition(self._lock)

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> LegacyBroker:
        self.start_listening()
        return self

    def stop(self) -> None:
        self.stop_listening()

    def stopping_locked(self) -> None:
        self._appended.notify_all()  # long-polling fetches return

    def size_ok(self, size: int) -> bool:
        return 8 <= size <= MAX_REQUEST_BYTES

    def handle(self, frame: bytes) -> bytes | None:
        return self._handle(frame)

    def __enter__(self) -> LegacyBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    # -- test API -----------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, *, log_append_time: bool = False) -> None:
        now = _now_ms()
        with self._lock:
            if name in self._topics:
                raise ValueError(f"topic {name} exists")
            self._topics[name] = _Topic(
                [_PartitionLog(now) for _ in range(partitions)], log_append_time
            )

    def append(
        self,
        topic: str,
        partition: int,
        messages: list[tuple[bytes | None, bytes | None]],
        codec: str | int = "none",
        timestamp_ms: int | None = None,
        magic: int | None = None,
    ) -> int:
        """Append messages built by kafka-python (one wrapper when compressed) through the same
        path as a Produce; returns the first offset assigned."""
        codec_id = CODECS[codec] if isinstance(codec, str) else codec
        magic = self.release.magic if magic is None else magic
        ts = _now_ms() if timestamp_ms is None else timestamp_ms
        data = _build([(i, ts, k, v) for i, (k, v) in enumerate(messages)], magic, codec_id)
        if codec_id:
            data = _patch(data, len(messages) - 1)
        code, base, _, why = self._append(topic, partition, data)
        if code:
            raise ValueError(f"append refused with error {code}: {why}")
        return base

    def end_offset(self, topic: str, partition: int) -> int:
        with self._lock:
            return self._topics[topic].partitions[partition].end

    def entries(self, topic: str, partition: int) -> list[_Entry]:
        with self._lock:
            return list(self._topics[topic].partitions[partition].entries)

    def messages(self, topic: str, partition: int) -> list[tuple[int, int, int | None, bytes | None, bytes | None]]:
        """Every stored message, deep: (offset, magic, timestamp, key, value)."""
        data = b"".join(e.data for e in self.entries(topic, partition))
        return decode_message_set(data)

    def committed(self, group: str, topic: str, partition: int, store: str = "kafka") -> int | None:
        with self._lock:
            got = self._offsets[store].get((group, topic, partition))
        return None if got is None else got[0]

    def versions_used(self, answered_only: bool = False) -> set[tuple[int, int]]:
        return {
            (r.api_key, r.api_version) for r in list(self.requests)
            if not answered_only or not r.outcome.startswith("closed")
        }

    def unsupported_requests(self) -> list[LoggedRequest]:
        """Requests the release does not know (they closed the connection)."""
        return [r for r in list(self.requests) if r.outcome.startswith("closed: unknown")]

    def clear_log(self) -> None:
        self.requests.clear()

    # -- server -------------------------------------------------------------------------------
    def _log(self, key: int, version: int, client_id: str | None, outcome: str, detail: dict) -> None:
        if len(self.requests) < 100_000:
            self.requests.append(LoggedRequest(
                key, version, API_NAMES.get(key, f"api{key}"), client_id, outcome, detail))

    def _handle(self, frame: bytes) -> bytes | None:
        """Bytes to send (b"" for none) or None to close the connection."""
        key, version = struct.unpack_from(">hh", frame, 0)
        bio = io.BytesIO(frame)
        try:
            header = RequestHeader.decode(bio)
        except Exception:
            self._log(key, version, None, "closed: bad request header", {})
            return None
        client_id = header.client_id
        known = self.release.apis.get(key)
        silent = self.release.silent_from_key
        if known is None and silent is not None and key >= silent:
            self._log(key, version, client_id, "no response: api key past the release's table",
                      {})
            return b""
        if known is None or not known[0] <= version <= known[1]:
            self._log(key, version, client_id, "closed: unknown api key or version", {})
            return None
        handler = _HANDLERS.get(key)
        if handler is None:
            self._log(key, version, client_id, "closed: not emulated", {})
            return None
        req_cls, resp_cls, method = handler
        try:
            req = req_cls.decode(frame[bio.tell():], version=version)
        except Exception as exc:
            self._log(key, version, client_id, f"closed: undecodable request ({exc})", {})
            return None
        detail: dict = {}
        try:
            body = getattr(self, method)(req, version, detail)
        except _Close as exc:
            self._log(key, version, client_id, f"closed: {exc}", detail)
            return None
        except Exception as exc:  # an emulator bug: visible in the log, never a hang
            self._log(key, version, client_id, f"closed: emulator error {exc!r}", detail)
            return None
        if body is _NO_RESPONSE:
            self._log(key, version, client_id, "no response", detail)
            return b""
        resp = kafka_message(resp_cls, version, body)
        resp.with_header(correlation_id=header.correlation_id)
        self._log(key, version, client_id, "answered", detail)
        return bytes(resp.encode(header=True, framed=True))

    # -- APIs ---------------------------------------------------------------------------------
    def _api_versions(self, req: Any, version: int, detail: dict) -> dict:
        apis = {**self.release.apis, **self.release.internal_apis}
        return {
            "error_code": NONE,
            "api_keys": [
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, (lo, hi) in sorted(apis.items())
            ],
        }

    def _metadata(self, req: Any, version: int, detail: dict) -> dict:
        with self._lock:
            if req.topics is None or (version == 0 and not req.topics):
                names = sorted(self._topics)
            else:
                names = [t.name for t in req.topics]
            detail["topics"] = None if req.topics is None else [t.name for t in req.topics]
            topics = []
            for name in names:
                t = self._topics.get(name)
                if t is None:
                    topics.append({"error_code": UNKNOWN_TOPIC_OR_PARTITION, "name": name,
                                   "is_internal": False, "partitions": []})
                    continue
                topics.append({
                    "error_code": NONE, "name": name, "is_internal": False,
                    "partitions": [
                        {"error_code": NONE, "partition_index": i, "leader_id": 0,
                         "replica_nodes": [0], "isr_nodes": [0]}
                        for i in range(len(t.partitions))
                    ],
                })
        return {
            "brokers": [{"node_id": 0, "host": self.host, "port": self.port, "rack": None}],
            "controller_id": 0,
            "topics": topics,
        }

    def _find_coordinator(self, req: Any, version: int, detail: dict) -> dict:
        return {"error_code": NONE, "node_id": 0, "host": self.host, "port": self.port}

    def _produce(self, req: Any, version: int, detail: dict) -> Any:
        acks = req.acks
        detail["acks"] = acks
        detail["partitions"] = parts_log = []
        bad_acks = self.release.strict_acks and acks not in (-1, 0, 1)
        responses = []
        failed = False
        for t in req.topic_data:
            parts = []
            for p in t.partition_data:
                data = bytes(p.records or b"")
                info = _describe(data)
                if bad_acks:
                    code, base, append_ts, why = INVALID_REQUIRED_ACKS, -1, -1, "invalid acks"
                else:
                    code, base, append_ts, why = self._append(t.name, p.index, data)
                parts_log.append({"topic": t.name, "partition": p.index, "error_code": code,
                                  "why": why, **info})
                failed |= code != NONE
                parts.append({"index": p.index, "error_code": code, "base_offset": base,
                              "log_append_time_ms": append_ts})
            responses.append({"name": t.name, "partition_responses": parts})
        if acks == 0:
            if failed:
                raise _Close("acks=0 produce failed")
            return _NO_RESPONSE
        return {"responses": responses, "throttle_time_ms": 0}

    def _append(self, topic: str, partition: int, data: bytes) -> tuple[int, int, int, str]:
        """(error, base offset, log append time or -1, reason)."""
        release = self.release
        with self._lock:
            t = self._topics.get(topic)
            if t is None or not 0 <= partition < len(t.partitions):
                return UNKNOWN_TOPIC_OR_PARTITION, -1, -1, "unknown topic or partition"
            log = t.partitions[partition]
            now = _now_ms()
            try:
                entries = self._validate(data, log.end, now, t.log_append_time)
            except _Reject as exc:
                return exc.code, -1, -1, str(exc)
            except Exception as exc:  # malformed beyond what kafka-python can parse
                return CORRUPT_MESSAGE, -1, -1, f"malformed message set: {exc!r}"
            if not entries:
                return CORRUPT_MESSAGE, -1, -1, "no complete message in the message set"
            base = entries[0].first
            for e in entries:
                log.append(e)
            log.last_modified_ms = now
            self._appended.notify_all()
        lat = now if (release.magic == 1 and t.log_append_time) else -1
        return NONE, base, lat, ""

    def _validate(self, data: bytes, next_offset: int, now: int, log_append_time: bool) -> list[_Entry]:
        release = self.release
        out: list[_Entry] = []
        for raw, batch in _shallow(data):
            if len(raw) > self.message_max_bytes:
                raise _Reject(MESSAGE_TOO_LARGE, f"a message of {len(raw)} bytes exceeds "
                                                 f"message.max.bytes={self.message_max_bytes}")
            if not batch.validate_crc():
                raise _Reject(CORRUPT_MESSAGE, "message CRC mismatch")
            if batch.magic > release.magic:
                raise _Reject(CORRUPT_MESSAGE, f"magic {batch.magic} messages are unknown to "
                                               f"{release.name}")
            codec = batch.compression_type
            lat = release.magic == 1 and log_append_time
            if codec == 0:
                converted = release.magic == 1 and batch.magic == 0
                if not converted:
                    entry = _patch(raw, next_offset, now if lat else None, lat)
                    ts = NO_TIMESTAMP if release.magic == 0 else (now if lat else _single(batch).timestamp)
                else:  # 0.10 up-converts magic 0
                    m = _single(batch)
                    ts = now if lat else NO_TIMESTAMP
                    entry = _patch(_build([(next_offset, ts, m.key, m.value)], 1, 0), next_offset,
                                   None, lat)
                out.append(_Entry(next_offset, next_offset, entry, release.magic, 0, ts, converted))
                next_offset += 1
                continue
            if codec not in release.codecs:
                raise _Reject(CORRUPT_MESSAGE, f"compression codec {codec} unknown to {release.name}")
            inner = _decompress(raw, release)
            msgs = []
            for b in inner:
                if b.magic > release.magic or b.magic != batch.magic:
                    raise _Reject(CORRUPT_MESSAGE, "inner message magic differs from the wrapper's")
                if b.compression_type:
                    raise _Reject(CORRUPT_MESSAGE, "nested compression")
                if not b.validate_crc():
                    raise _Reject(CORRUPT_MESSAGE, "inner message CRC mismatch")
                msgs.append(_single(b))
            n = len(msgs)
            last = next_offset + n - 1
            if release.magic == 0:
                # 0.8/0.9: always re-compressed with absolute offsets
                entry = _patch(_build([(next_offset + i, NO_TIMESTAMP, m.key, m.value)
                                       for i, m in enumerate(msgs)], 0, codec), last)
                max_ts = NO_TIMESTAMP
                rewritten = True
            else:
                relative = [m.offset for m in msgs] == list(range(n))
                max_ts = max((m.timestamp for m in msgs), default=NO_TIMESTAMP)
                rewritten = not (batch.magic == 1 and relative)
                if not rewritten:
                    # in place: only the wrapper's offset (and, with LogAppendTime, timestamp)
                    entry = _patch(raw, last, now if lat else None, lat)
                else:
                    entry = _patch(
                        _build([(i, m.timestamp if m.magic else NO_TIMESTAMP, m.key, m.value)
                                for i, m in enumerate(msgs)], 1, codec),
                        last, now if lat else max_ts, lat,
                    )
                if lat:
                    max_ts = now
            out.append(_Entry(next_offset, last, entry, release.magic, codec, max_ts, rewritten))
            next_offset = last + 1
        return out

    def _fetch(self, req: Any, version: int, detail: dict) -> dict:
        detail["partitions"] = [
            {"topic": t.topic, "partition": p.partition, "offset": p.fetch_offset,
             "max_bytes": p.partition_max_bytes}
            for t in req.topics for p in t.partitions
        ]
        wait = min(max(req.max_wait_ms, 0), self.max_fetch_wait_ms) / 1000
        deadline = time.monotonic() + wait
        with self._lock:
            while True:
                responses, total, errors = self._collect(req, version)
                remaining = deadline - time.monotonic()
                if total >= req.min_bytes or errors or remaining <= 0 or self._stopping.is_set():
                    break
                self._appended.wait(remaining)
        return {"throttle_time_ms": 0, "responses": responses}

    def _collect(self, req: Any, version: int) -> tuple[list[dict], int, bool]:
        down_convert = self.release.magic == 1 and version < 2
        responses = []
        total = 0
        errors = False
        for t in req.topics:
            parts = []
            topic = self._topics.get(t.topic)
            for p in t.partitions:
                if topic is None or not 0 <= p.partition < len(topic.partitions):
                    parts.append({"partition_index": p.partition,
                                  "error_code": UNKNOWN_TOPIC_OR_PARTITION,
                                  "high_watermark": -1, "records": b""})
                    errors = True
                    continue
                log = topic.partitions[p.partition]
                if not 0 <= p.fetch_offset <= log.end:
                    parts.append({"partition_index": p.partition,
                                  "error_code": OFFSET_OUT_OF_RANGE,
                                  "high_watermark": log.end, "records": b""})
                    errors = True
                    continue
                data = _read(log.entries_from(p.fetch_offset),
                             max(p.partition_max_bytes, 0), down_convert)
                total += len(data)
                parts.append({"partition_index": p.partition, "error_code": NONE,
                              "high_watermark": log.end, "records": data})
            responses.append({"topic": t.topic, "partitions": parts})
        return responses, total, errors

    def _list_offsets(self, req: Any, version: int, detail: dict) -> dict:
        detail["partitions"] = []
        now = _now_ms()
        topics = []
        with self._lock:
            for t in req.topics:
                parts = []
                topic = self._topics.get(t.name)
                for p in t.partitions:
                    detail["partitions"].append({"topic": t.name, "partition": p.partition_index,
                                                 "timestamp": p.timestamp,
                                                 "max_num_offsets": p.max_num_offsets})
                    if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                        parts.append({"partition_index": p.partition_index,
                                      "error_code": UNKNOWN_TOPIC_OR_PARTITION,
                                      "old_style_offsets": []})
                        continue
                    log = topic.partitions[p.partition_index]
                    parts.append({"partition_index": p.partition_index, "error_code": NONE,
                                  "old_style_offsets": _offsets_before(log, p.timestamp,
                                                                       p.max_num_offsets, now)})
                topics.append({"name": t.name, "partitions": parts})
        return {"topics": topics}

    def _offset_commit(self, req: Any, version: int, detail: dict) -> dict:
        store = self._offsets["zookeeper" if version == 0 else "kafka"]
        generation = req.generation_id_or_member_epoch if version >= 1 else -1
        detail.update(group=req.group_id, generation=generation)
        topics = []
        with self._lock:
            for t in req.topics:
                parts = []
                for p in t.partitions:
                    if t.name not in self._topics and self.release.name != "0.8.2":
                        code = UNKNOWN_TOPIC_OR_PARTITION
                    elif generation >= 0 and self.release.name != "0.8.2":
                        code = UNKNOWN_MEMBER_ID  # no group membership is emulated
                    else:
                        store[(req.group_id, t.name, p.partition_index)] = (
                            p.committed_offset, p.committed_metadata or "")
                        code = NONE
                    parts.append({"partition_index": p.partition_index, "error_code": code})
                topics.append({"name": t.name, "partitions": parts})
        return {"topics": topics}

    def _offset_fetch(self, req: Any, version: int, detail: dict) -> dict:
        store = self._offsets["zookeeper" if version == 0 else "kafka"]
        detail.update(group=req.group_id)
        topics = []
        with self._lock:
            for t in req.topics or []:
                parts = []
                for idx in t.partition_indexes:
                    offset, meta = store.get((req.group_id, t.name, idx), (-1, ""))
                    parts.append({"partition_index": idx, "committed_offset": offset,
                                  "metadata": meta, "error_code": NONE})
                topics.append({"name": t.name, "partitions": parts})
        return {"topics": topics}


_HANDLERS = {
    0: (ProduceRequest, ProduceResponse, "_produce"),
    1: (FetchRequest, FetchResponse, "_fetch"),
    2: (ListOffsetsRequest, ListOffsetsResponse, "_list_offsets"),
    3: (MetadataRequest, MetadataResponse, "_metadata"),
    8: (OffsetCommitRequest, OffsetCommitResponse, "_offset_commit"),
    9: (OffsetFetchRequest, OffsetFetchResponse, "_offset_fetch"),
    10: (FindCoordinatorRequest, FindCoordinatorResponse, "_find_coordinator"),
    18: (ApiVersionsRequest, ApiVersionsResponse, "_api_versions"),
}


# -- helpers -----------------------------------------------------------------------------------


def _now_ms() -> int:
    return int(time.time() * 1000)


def kafka_message(cls: Any, version: int, values: dict) -> Any:
    """A kafka-python message/struct of ``version`` from nested dicts."""
    kwargs = {}
    for name, f in cls.fields.items():
        if name not in values:
            continue
        v = values[name]
        if v is not None and f.is_struct_array():
            v = [kafka_message(f.data_class, version, x) for x in v]
        elif v is not None and f.is_struct():
            v = kafka_message(f.data_class, version, v)
        kwargs[name] = v
    return cls(version=version, **kwargs)


def _describe(data: bytes) -> dict:
    """Magic and codec of each entry of a produced message set (for the request log)."""
    magics, codecs = [], []
    pos = 0
    while len(data) - pos >= LOG_OVERHEAD + 6:
        (size,) = struct.unpack_from(">i", data, pos + 8)
        magics.append(data[pos + 16])
        codecs.append(data[pos + 17] & 0x07)
        pos += LOG_OVERHEAD + max(size, 0)
    return {"magics": sorted(set(magics)), "codecs": sorted(set(codecs)), "bytes": len(data)}


def _read(entries: list[_Entry], max_bytes: int, down_convert: bool) -> bytes:
    """Stored entries from the fetch position, cut to exactly ``max_bytes`` (FileMessageSet.read).
    Down-conversion (0.10.0, Fetch v0/v1) converts the whole entries within the limit and drops
    the partial one, as FileMessageSet.toMessageFormat did."""
    if not down_convert:
        out = bytearray()
        for e in entries:
            if len(out) >= max_bytes:
                break
            out += e.data
        return bytes(out[:max_bytes])
    whole: list[_Entry] = []
    size = 0
    for e in entries:
        if size + len(e.data) > max_bytes:
            break
        size += len(e.data)
        whole.append(e)
    return b"".join(_to_magic0(e) for e in whole)


def _to_magic0(e: _Entry) -> bytes:
    if e.magic == 0:
        return e.data
    batch = LegacyRecordBatch(e.data, 1)
    if e.codec == 0:
        m = _single(batch)
        return _build([(e.first, NO_TIMESTAMP, m.key, m.value)], 0, 0)
    msgs = [_single(b) for b in _decompress(e.data, None)]
    return _patch(_build([(e.first + i, NO_TIMESTAMP, m.key, m.value)
                          for i, m in enumerate(msgs)], 0, e.codec), e.last)


def _offsets_before(log: _PartitionLog, timestamp: int, max_num: int, now: int) -> list[int]:
    """Log.getOffsetsBefore with a single segment based at 0."""
    table = [(0, log.last_modified_ms)]
    if log.end > 0:
        table.append((log.end, now))
    if timestamp == -1:
        start = len(table) - 1
    elif timestamp == -2:
        start = 0
    else:
        start = len(table) - 1
        while start >= 0 and table[start][1] > timestamp:
            start -= 1
    count = max(0, min(max_num, start + 1))
    return sorted((table[start - j][0] for j in range(count)), reverse=True)
