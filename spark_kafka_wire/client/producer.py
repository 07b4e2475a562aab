"""Produce records to partition leaders, pipelined, with retries and optional idempotence.

Rows arrive as Arrow columns already assigned to partitions (``Producer.append``). Each
partition buffers its rows until they fill ``batch.size`` (full batches are cut and sent, the
remainder waits), until the partition's oldest buffered rows are ``linger.ms`` old (checked
whenever rows arrive), until ``buffer.memory`` bytes are buffered in all, or until ``flush``.
Every batch is encoded by one vectorized call (record batch v2, or a legacy message set for
brokers before 0.11).

Produce v3+ carries one batch per partition per request, so batches are packed into requests
per leader (at most one per partition, at most max.request.size bytes). Up to
``max.in.flight.requests.per.connection`` requests are in flight per leader; their responses
are read in order.

Failures: a retriable error (stale leader, timeout, socket failure) is retried after a metadata
refresh, with exponential backoff from retry.backoff.ms to retry.backoff.max.ms, until
kafka.retries attempts or delivery.timeout.ms (from the batch's creation) run out. A retry
drains every in-flight request first and re-sends the failed batches in their original order;
later batches of a partition whose batch failed wait for it. So with one request in flight, or
with idempotence, each partition keeps its order; without idempotence and with several in
flight a retried batch may land after a later one (as with the Java client).

Idempotence: one InitProducerId per Producer (a Spark task) gives a producer id and epoch;
every batch carries them and a per-partition base sequence that starts at 0, advances by the
record count and wraps at 2^31-1. The broker accepts each sequence once: a re-sent batch that
was already written is answered DUPLICATE_SEQUENCE_NUMBER (treated as written), a gap is
OUT_OF_ORDER_SEQUENCE_NUMBER (retried when an earlier batch of the partition failed, fatal
otherwise). A re-executed Spark task is a new Producer with a new producer id, so idempotence
removes duplicates from network retries inside a task, not from task re-execution.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..protocol.compression import CODEC_ZSTD
from ..protocol.errors import (
    ErrorCode,
    KafkaError,
    ProtocolError,
    RecordTooLargeError,
    error_for_code,
)
from ..protocol.messages import INIT_PRODUCER_ID, PRODUCE
from ..protocol.records import encode_message_set, encode_record_batch
from .cluster import KafkaClient, is_retriable
from .connection import BrokerConnection, InFlight
from .errors import BrokerConnectionError, ConfigurationError, NoBrokersAvailableError

log = logging.getLogger(__name__)

MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5
_SEQUENCE_MODULUS = 1 << 31  # sequences are non-negative int32 and wrap at 2^31-1


def next_sequence(sequence: int, records: int) -> int:
    """The base sequence after a batch of ``records`` starting at ``sequence`` (wraps to 0
    after 2^31-1, as Java's ``DefaultRecordBatch.incrementSequence``)."""
    return (sequence + records) % _SEQUENCE_MODULUS


@dataclass(frozen=True)
class ProduceSettings:
    acks: int = -1
    timeout_ms: int = 30_000
    compression: int = 0
    batch_size: int = 512 << 10
    max_request_size: int = 1 << 20
    retries: int = 2_147_483_647
    delivery_timeout_ms: int = 120_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    linger_ms: int = 5
    buffer_memory: int = 32 << 20
    max_in_flight: int = 5
    # True: required (error when the broker cannot); False: off; None: the default, on with
    # acks=all and retries > 0 where the broker supports it, silently off elsewhere.
    enable_idempotence: bool | None = None

    @property
    def idempotence_wanted(self) -> bool:
        if self.enable_idempotence is not None:
            return self.enable_idempotence
        return self.acks == -1 and self.retries > 0 and \
            self.max_in_flight <= MAX_IN_FLIGHT_FOR_IDEMPOTENCE


@dataclass
class PendingBatch:
    topic: str
    partition: int
    data: bytes
    records: int
    base_sequence: int = -1  # >= 0: an idempotent batch
    created: float = 0.0  # monotonic time of creation (delivery.timeout.ms runs from it)
    attempts: int = 0
    order: int = 0  # dispatch order: retries go out in this order


class _Wait(Exception):
    """Not an error: the batch waits for the retry of an earlier batch of its partition."""


_WAIT = _Wait()


@dataclass
class _Request:
    conn: BrokerConnection
    inflight: InFlight
    batches: list[PendingBatch]


def _pack(batches: list[PendingBatch], max_request_size: int) -> list[list[PendingBatch]]:
    """Group batches into requests: one batch per partition each, bounded in size, keeping
    each partition's batches in order across requests."""
    requests: list[list[PendingBatch]] = []
    sizes: list[int] = []
    members: list[set[tuple[str, int]]] = []
    last_request: dict[tuple[str, int], int] = {}
    for b in batches:
        key = (b.topic, b.partition)
        start = last_request.get(key, -1) + 1  # after the request holding its previous batch
        for i in range(start, len(requests)):
            if key not in members[i] and sizes[i] + len(b.data) <= max_request_size:
                break
        else:
            requests.append([])
            sizes.append(0)
            members.append(set())
            i = len(requests) - 1
        requests[i].append(b)
        sizes[i] += len(b.data)
        members[i].add(key)
        last_request[key] = i
    return requests


# -------------------------------------------------------------------------------- encoding

RECORD_OVERHEAD = 21  # worst-case varint framing of one record without headers
HEADER_OVERHEAD = 10  # varint lengths of one header's key and value
BATCH_OVERHEAD = 61
REQUEST_OVERHEAD = 128  # request header, topic name and partition framing, roughly


def magic_for_produce_version(version: int) -> int:
    """Record format a Produce version carries: v3+ record batches (magic 2), v2 message sets
    with timestamps (magic 1), v0-1 message sets (magic 0)."""
    return 2 if version >= 3 else (1 if version == 2 else 0)


ZSTD_MIN_PRODUCE_VERSION = 7


def record_sizes(keys: pa.Array | None, values: pa.Array,
                 header_bytes: np.ndarray | None = None) -> np.ndarray:
    """Upper estimate of every record's encoded size (int64), uncompressed."""
    sizes = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if keys is not None:
        sizes += pc.fill_null(pc.binary_length(keys), 0).to_numpy(zero_copy_only=False)
    if header_bytes is not None:
        sizes += header_bytes
    sizes += RECORD_OVERHEAD
    return sizes


def check_record_sizes(topic: str, sizes: np.ndarray, partitions: np.ndarray,
                       settings: ProduceSettings) -> None:
    """Fail before anything is sent when a record can never fit in a request."""
    if not len(sizes):
        return
    biggest = int(sizes.max())
    if biggest + BATCH_OVERHEAD > settings.max_request_size:
        row = int(sizes.argmax())
        raise RecordTooLargeError(
            error_for_code(ErrorCode.MESSAGE_TOO_LARGE).spec, topic=topic, partition=int(partitions[row]),
            context="Produce",
            message=(
                f"a record of about {biggest} bytes can never fit in a request of "
                f"kafka.max.request.size={settings.max_request_size} bytes; raise that "
                "setting (and the broker's message.max.bytes) or write smaller records"
            ),
        )


def _chunk_bounds(sizes: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """[lo, hi) row ranges: a new chunk starts whenever the running size passes ``limit``."""
    csum = np.cumsum(sizes)
    chunk_ids = (csum - 1) // max(limit, 1)
    bounds = np.flatnonzero(np.diff(chunk_ids)) + 1
    return list(zip(np.r_[0, bounds].tolist(), np.r_[bounds, len(sizes)].tolist(), strict=True))


def _batch_limit(settings: ProduceSettings) -> int:
    return max(1, min(settings.batch_size,
                      settings.max_request_size - BATCH_OVERHEAD - REQUEST_OVERHEAD))


@dataclass
class _Rows:
    """Rows of one partition: Arrow keys/values, int64 timestamps (ms), headers, sizes."""

    keys: pa.Array | None
    values: pa.Array
    timestamps: np.ndarray
    headers: np.ndarray | None  # object array: None or [(key, value)] per row
    sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.values)

    def slice(self, lo: int, hi: int) -> _Rows:
        return _Rows(
            None if self.keys is None else self.keys.slice(lo, hi - lo),
            self.values.slice(lo, hi - lo), self.timestamps[lo:hi],
            None if self.headers is None else self.headers[lo:hi], self.sizes[lo:hi],
        )

    @staticmethod
    def concat(parts: list[_Rows]) -> _Rows:
        if len(parts) == 1:
            return parts[0]
        keys = None if parts[0].keys is None else pa.concat_arrays([p.keys for p in parts])
        if any(p.headers is not None for p in parts):
            headers = np.concatenate([p.headers if p.headers is not None
                                      else np.full(len(p), None, object) for p in parts])
        else:
            headers = None
        return _Rows(keys, pa.concat_arrays([p.values for p in parts]),
                     np.concatenate([p.timestamps for p in parts]), headers,
                     np.concatenate([p.sizes for p in parts]))


def _encode_chunk(rows: _Rows, magic: int, settings: ProduceSettings, producer_id: int = -1,
                  producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    keys = rows.keys  # None: every key is null
    if magic == 2:
        headers = None
        if rows.headers is not None:
            headers = rows.headers.tolist()
            if not any(headers):
                headers = None
        return encode_record_batch(
            keys, rows.values, timestamps=rows.timestamps, compression=settings.compression,
            producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
            headers=headers,
        )
    return encode_message_set(keys, rows.values, magic=magic, timestamps=rows.timestamps,
                              compression=settings.compression)


def encode_partitioned(
    topic: str,
    keys: pa.Array | None,
    values: pa.Array,
    partitions: np.ndarray,
    settings: ProduceSettings,
    timestamp_ms: int | np.ndarray,
    magic: int = 2,
    *,
    headers: np.ndarray | None = None,
    header_bytes: np.ndarray | None = None,
) -> list[PendingBatch]:
    """Record batches (or legacy message sets, ``magic`` < 2) for rows already assigned to
    partitions, each at most ~batch.size bytes (a single larger record gets a batch of its
    own); rows keep their order per partition. No producer id: see ``Producer.append``."""
    n = len(values)
    if n == 0:
        return []
    sizes = record_sizes(keys, values, header_bytes)
    check_record_sizes(topic, sizes, partitions, settings)
    ts = np.broadcast_to(np.asarray(timestamp_ms, dtype=np.int64), (n,))
    out: list[PendingBatch] = []
    now = time.monotonic()
    for partition, rows in _group_by_partition(keys, values, partitions, ts, headers, sizes):
        for lo, hi in _chunk_bounds(rows.sizes, _batch_limit(settings)):
            chunk = rows.slice(lo, hi)
            out.append(PendingBatch(topic, partition, _encode_chunk(chunk, magic, settings),
                                    hi - lo, created=now))
    return out


def _group_by_partition(keys, values, partitions, timestamps, headers, sizes):
    """(partition, _Rows) per partition present, rows in their original order."""
    order = np.argsort(partitions, kind="stable")
    sorted_parts = partitions[order]
    cuts = (np.flatnonzero(np.diff(sorted_parts)) + 1).tolist()
    idx = pa.array(order)
    k_sorted = keys.take(idx) if keys is not None else None
    v_sorted = values.take(idx)
    sorted_rows = _Rows(k_sorted, v_sorted, timestamps[order],
                        None if headers is None else headers[order], sizes[order])
    for lo, hi in zip([0, *cuts], [*cuts, len(order)], strict=True):
        yield int(sorted_parts[lo]), sorted_rows.slice(lo, hi)


class _PartitionBuffer:
    """Rows of one partition waiting to fill a batch."""

    def __init__(self) -> None:
        self.chunks: list[_Rows] = []
        self.times: list[float] = []  # arrival time of each chunk
        self.bytes = 0

    def add(self, rows: _Rows, now: float) -> None:
        self.chunks.append(rows)
        self.times.append(now)
        self.bytes += int(rows.sizes.sum())

    @property
    def first(self) -> float:
        return self.times[0]

    def take_all(self) -> _Rows:
        rows = _Rows.concat(self.chunks)
        self.chunks, self.times, self.bytes = [], [], 0
        return rows

    def take_full(self, limit: int) -> _Rows | None:
        """The rows that make complete batches of ``limit`` bytes; the rest stays."""
        times = np.repeat(self.times, [len(c) for c in self.chunks])
        rows = _Rows.concat(self.chunks)
        csum = np.cumsum(rows.sizes)
        k = int(np.count_nonzero((csum - 1) // limit < int(csum[-1]) // limit))
        if k == 0:
            self.chunks, self.times = [rows], [float(times[0])]
            return None
        rest = rows.slice(k, len(rows))
        if len(rest):
            self.chunks, self.times = [rest], [float(times[k])]
        else:
            self.chunks, self.times = [], []
        self.bytes = int(rest.sizes.sum())
        return rows.slice(0, k)


# -------------------------------------------------------------------------------- producer


class Producer:
    """Delivers records; ``records_sent`` counts records the brokers acknowledged (with acks=0:
    records handed to the socket)."""

    def __init__(self, client: KafkaClient, settings: ProduceSettings) -> None:
        self.client = client
        self.settings = settings
        self.records_sent = 0
        self.requests_sent = 0
        self.producer_id = -1
        self.producer_epoch = -1
        self._idempotent: bool | None = None  # decided at the first prepare()
        self._sequences: dict[tuple[str, int], int] = {}
        self._magic: dict[str, int] = {}
        self._buffers: dict[tuple[str, int], _PartitionBuffer] = {}
        self._buffered = 0
        self._windows: dict[int, deque[_Request]] = defaultdict(deque)
        self._failed: list[tuple[PendingBatch, BaseException]] = []
        self._blocked: set[tuple[str, int]] = set()
        self._counter = itertools.count()
        self.max_in_flight_seen = 0

    @property
    def idempotent(self) -> bool:
        return bool(self._idempotent)

    # -- preparation ---------------------------------------------------------------------------
    def record_magic(self, topic: str) -> int:
        """The record format to write to ``topic``, from the Produce version its leaders
        speak; fails before sending when the configured codec needs a newer broker."""
        info = self.client.topic(topic)
        first = min(info.partitions)
        version = self.client.leader_connection(topic, first).version(PRODUCE)
        if self.settings.compression == CODEC_ZSTD and version < ZSTD_MIN_PRODUCE_VERSION:
            raise error_for_code(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, topic=topic, context="Produce",
                message=(
                    f"kafka.compression.type=zstd needs Produce v{ZSTD_MIN_PRODUCE_VERSION}+ "
                    f"(Kafka 2.1+), but the broker speaks v{version}; choose gzip, snappy or lz4"
                ),
            )
        return magic_for_produce_version(version)

    def prepare(self, topic: str) -> int:
        """``record_magic`` once per topic; at the first topic also decides idempotence and
        asks for a producer id."""
        magic = self._magic.get(topic)
        if magic is None:
            magic = self.record_magic(topic)
            self._magic[topic] = magic
            if self._idempotent is None:
                self._idempotent = self._init_idempotence(topic, magic)
            elif self._idempotent and magic < 2:
                self._idempotence_unsupported(topic, "its leader speaks a Produce version "
                                              "before record batches (Kafka 0.11)")
        return magic

    def _idempotence_unsupported(self, topic: str, why: str) -> bool:
        if self.settings.enable_idempotence:
            raise ConfigurationError(
                f"kafka.enable.idempotence=true cannot be honoured for topic {topic!r}: {why}; "
                "idempotent produce needs Kafka 0.11+ (InitProducerId). Remove the setting "
                "(or set it to false) to write without idempotence"
            )
        log.info("idempotence is off for this write: %s", why)
        return False

    def _init_idempotence(self, topic: str, magic: int) -> bool:
        if not self.settings.idempotence_wanted:
            return False
        if magic < 2:
            return self._idempotence_unsupported(
                topic, "its leader speaks a Produce version before record batches")
        conn = self.client.leader_connection(topic, min(self.client.topic(topic).partitions))
        if INIT_PRODUCER_ID.key not in conn.api_versions:
            return self._idempotence_unsupported(
                topic, f"broker {conn.name} does not offer InitProducerId")

        def attempt() -> dict[str, Any]:
            resp = self.client.any_connection().request(
                INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout_ms": 60_000})
            if resp["error_code"]:
                raise error_for_code(resp["error_code"], context="InitProducerId")
            return resp

        resp = self.client.retry(attempt, "InitProducerId")
        self.producer_id = resp["producer_id"]
        self.producer_epoch = resp["producer_epoch"]
        log.info("idempotent producer id %d epoch %d", self.producer_id, self.producer_epoch)
        return True

    # -- accumulating --------------------------------------------------------------------------
    def append(
        self,
        topic: str,
        keys: pa.Array | None,
        values: pa.Array,
        partitions: np.ndarray,
        timestamps: int | np.ndarray,
        headers: np.ndarray | None = None,
        header_bytes: np.ndarray | None = None,
    ) -> None:
        """Buffer rows (already assigned to partitions) and send whatever batches are ready.
        Checks that cannot pass (a record too large, headers for a broker without them) fail
        before any of these rows is buffered."""
        n = len(values)
        if n == 0:
            return
        magic = self.prepare(topic)
        if magic < 2 and headers is not None and any(h for h in headers):
            row = next(i for i, h in enumerate(headers) if h)
            raise ConfigurationError(
                f"row {row} has headers, but the leader of topic {topic!r} speaks a Produce "
                f"version with message format v{magic}, which has no headers (Kafka 0.11+ "
                "brokers store them); drop the 'headers' column or write to a newer broker"
            )
        sizes = record_sizes(keys, values, header_bytes)
        check_record_sizes(topic, sizes, partitions, self.settings)
        ts = np.broadcast_to(np.asarray(timestamps, dtype=np.int64), (n,))
        now = time.monotonic()
        for partition, rows in _group_by_partition(keys, values, partitions, ts, headers, sizes):
            key = (topic, partition)
            buf = self._buffers.get(key)
            if buf is None:
                buf = self._buffers[key] = _PartitionBuffer()
            buf.add(rows, now)
        self._buffered += int(sizes.sum())
        self._send_ready(now)

    def _send_ready(self, now: float, force: bool = False) -> None:
        s = self.settings
        everything = force or s.linger_ms == 0 or self._buffered >= s.buffer_memory
        limit = _batch_limit(s)
        batches: list[PendingBatch] = []
        for key, buf in list(self._buffers.items()):
            if not buf.chunks:
                continue
            if everything or (now - buf.first) * 1000 >= s.linger_ms:
                rows: _Rows | None = buf.take_all()
            elif buf.bytes >= limit:
                rows = buf.take_full(limit)
            else:
                continue
            if rows is not None and len(rows):
                self._buffered -= int(rows.sizes.sum())
                batches += self._encode(key[0], key[1], rows)
        if batches:
            self.dispatch(batches)

    def _encode(self, topic: str, partition: int, rows: _Rows) -> list[PendingBatch]:
        magic = self._magic[topic]
        idempotent = self.idempotent and magic == 2
        out = []
        now = time.monotonic()
        for lo, hi in _chunk_bounds(rows.sizes, _batch_limit(self.settings)):
            chunk = rows.slice(lo, hi)
            seq = -1
            if idempotent:
                seq = self._sequences.get((topic, partition), 0)
                self._sequences[(topic, partition)] = next_sequence(seq, hi - lo)
            data = _encode_chunk(chunk, magic, self.settings, self.producer_id if idempotent
                                 else -1, self.producer_epoch if idempotent else -1, seq)
            out.append(PendingBatch(topic, partition, data, hi - lo, seq, now))
        return out

    # -- sending -------------------------------------------------------------------------------
    def send(self, batches: list[PendingBatch]) -> None:
        """Send encoded batches and wait until every one is acknowledged (or fail)."""
        self.dispatch(batches)
        self.flush()

    def dispatch(self, batches: list[PendingBatch]) -> None:
        """Send encoded batches, pipelined; returns once each was handed to a connection
        (waiting only for room in the in-flight window). ``flush`` waits for the answers."""
        now = time.monotonic()
        for b in batches:
            b.order = next(self._counter)
            if not b.created:
                b.created = now
        try:
            self._route_and_transmit(batches, recovering=False)
        except BaseException:
            self.abort()
            raise

    def flush(self) -> None:
        """Send everything buffered and wait for every answer, retrying failures."""
        try:
            self._send_ready(time.monotonic(), force=True)
            self._recover()
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Forget buffered rows and close connections with requests still in flight (so a
        pooled connection never carries unread responses into the next task)."""
        for window in self._windows.values():
            for r in window:
                r.conn.close()
            window.clear()
        self._buffers.clear()
        self._buffered = 0
        self._failed.clear()
        self._blocked.clear()

    def _fail(self, batch: PendingBatch, exc: BaseException) -> None:
        self._failed.append((batch, exc))
        self._blocked.add((batch.topic, batch.partition))

    def _route_and_transmit(self, batches: list[PendingBatch], recovering: bool) -> None:
        by_leader: dict[int, list[PendingBatch]] = defaultdict(list)
        for b in batches:
            try:
                by_leader[self.client.leader(b.topic, b.partition)].append(b)
            except (KafkaError, BrokerConnectionError, NoBrokersAvailableError) as exc:
                self._fail(b, exc)
        for leader, group in by_leader.items():
            for req in _pack(group, self.settings.max_request_size):
                self._transmit(leader, req, recovering)

    def _transmit(self, leader: int, req: list[PendingBatch], recovering: bool) -> None:
        s = self.settings
        window = self._windows[leader]
        while len(window) >= s.max_in_flight:
            self._complete(window.popleft())
        if self._failed and not recovering:
            self._recover()
        if self._blocked:  # a partition whose earlier batch failed waits for its retry
            waiting = [b for b in req if (b.topic, b.partition) in self._blocked]
            for b in waiting:
                self._failed.append((b, _WAIT))
            if waiting:
                req = [b for b in req if (b.topic, b.partition) not in self._blocked]
            if not req:
                return
        topics: dict[str, list[dict]] = defaultdict(list)
        for b in req:
            topics[b.topic].append({"index": b.partition, "records": b.data})
        body = {
            "transactional_id": None,
            "acks": s.acks,
            "timeout_ms": s.timeout_ms,
            "topic_data": [{"name": t, "partition_data": parts} for t, parts in topics.items()],
        }
        try:
            conn = self.client.broker(leader)
            inflight = conn.send(PRODUCE, body, expect_response=s.acks != 0)
        except (KafkaError, BrokerConnectionError, NoBrokersAvailableError) as exc:
            for b in req:
                self._fail(b, exc)
            return
        self.requests_sent += 1
        if s.acks == 0:
            self.records_sent += sum(b.records for b in req)
            return
        window.append(_Request(conn, inflight, req))
        self.max_in_flight_seen = max(self.max_in_flight_seen, len(window))

    def _complete(self, r: _Request) -> None:
        try:
            resp = r.conn.receive(r.inflight)
        except (KafkaError, BrokerConnectionError, ProtocolError) as exc:
            for b in r.batches:
                self._fail(b, exc)
            return
        answered: dict[tuple[str, int], tuple[int, str | None]] = {}
        for t in resp["responses"]:
            for p in t["partition_responses"]:
                answered[(t["name"], p["index"])] = (p["error_code"], p["error_message"])
        for b in r.batches:
            code, message = answered.get((b.topic, b.partition),
                                         (ErrorCode.UNKNOWN_SERVER_ERROR, "no answer for the partition"))
            if code == ErrorCode.NONE or (code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER
                                          and b.base_sequence >= 0):
                self.records_sent += b.records  # a duplicate: written by an earlier try
                continue
            if isinstance(error_for_code(code), RecordTooLargeError):
                message = f"a batch of {b.records} records is {len(b.data)} bytes"
            self._fail(b, error_for_code(code, topic=b.topic, partition=b.partition,
                                         broker=r.conn.name, context="Produce", message=message))

    def _drain(self) -> None:
        for window in self._windows.values():
            while window:
                self._complete(window.popleft())

    def _recover(self) -> None:
        """Wait for every in-flight answer; re-send failed batches in order until all are
        written, or raise when one cannot be (fatal error, retries or delivery time spent)."""
        s = self.settings
        backoff = s.retry_backoff_ms / 1000
        while True:
            self._drain()
            if not self._failed:
                self._blocked.clear()
                return
            failed = sorted(self._failed, key=lambda fe: fe[0].order)
            self._failed = []
            self._blocked = set()
            retry: list[PendingBatch] = []
            earlier: set[tuple[str, int]] = set()  # partitions with an earlier failed batch
            now = time.monotonic()
            for b, exc in failed:
                key = (b.topic, b.partition)
                if exc is not _WAIT:
                    out_of_order = (isinstance(exc, KafkaError) and
                                    exc.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and
                                    key in earlier)
                    if not out_of_order and not is_retriable(exc):
                        raise self._fatal(b, exc)
                    b.attempts += 1
                    if b.attempts > s.retries:
                        raise self._gave_up(b, exc, f"after {b.attempts} attempts "
                                            f"(kafka.retries={s.retries})")
                if now + backoff > b.created + s.delivery_timeout_ms / 1000:
                    last = exc if exc is not _WAIT else "an earlier batch of the partition failed"
                    raise self._gave_up(b, last, f"within kafka.delivery.timeout.ms="
                                        f"{s.delivery_timeout_ms} ({b.attempts} attempts)")
                retry.append(b)
                earlier.add(key)
            first = next((e for _, e in failed if e is not _WAIT), None)
            log.info("retrying %d batches after: %s", len(retry), first)
            time.sleep(backoff * (0.8 + 0.4 * random.random()))
            backoff = min(backoff * 2, max(s.retry_backoff_max_ms, s.retry_backoff_ms) / 1000)
            try:
                self.client.refresh_metadata({b.topic for b in retry})
            except (KafkaError, BrokerConnectionError, NoBrokersAvailableError) as exc:
                if not is_retriable(exc):
                    raise
                log.info("metadata refresh before a retry failed: %s", exc)
            self._route_and_transmit(retry, recovering=True)

    def _fatal(self, b: PendingBatch, exc: BaseException) -> BaseException:
        self.abort()
        if (isinstance(exc, KafkaError)
                and exc.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER):
            return error_for_code(
                exc.code, topic=b.topic, partition=b.partition, broker=exc.broker,
                context="Produce",
                message=(f"the broker expected another sequence than {b.base_sequence} for "
                         f"producer id {self.producer_id} while no earlier batch of the "
                         "partition had failed: its producer state was lost"),
            )
        return exc

    def _gave_up(self, b: PendingBatch, last: BaseException | str, how: str) -> KafkaError:
        self.abort()
        code = last.code if isinstance(last, KafkaError) else ErrorCode.REQUEST_TIMED_OUT
        return error_for_code(
            code, topic=b.topic, partition=b.partition, context="Produce",
            message=f"delivery of a batch of {b.records} records failed {how}: {last}",
        )


def headers_from_arrow(column: pa.Array) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A ``headers`` column (list<struct<key: string, value: binary>>) as an object array of
    ``[(key, value)]`` lists (None for rows without headers) plus each row's header bytes;
    ``(None, None)`` when no row has any. Only rows that have headers take a Python step."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    if not n or not lengths.any():
        return None, None
    flat = column.flatten()
    parents = pc.list_parent_indices(column).to_numpy(zero_copy_only=False)
    if flat.null_count:
        i = int(np.flatnonzero(flat.is_null().to_numpy(zero_copy_only=False))[0])
        raise ConfigurationError(
            f"row {int(parents[i])} has a null element in its 'headers' array; every header "
            "is a struct with a non-null key")
    keys = flat.field(0)
    values = flat.field(1)
    if keys.null_count:
        i = int(np.flatnonzero(keys.is_null().to_numpy(zero_copy_only=False))[0])
        raise ConfigurationError(
            f"row {int(parents[i])} has a header with a null key; header keys must be strings "
            "(values may be null)")
    each = (pc.binary_length(keys.cast(pa.binary() if pa.types.is_string(keys.type)
                                       else pa.large_binary())).to_numpy(zero_copy_only=False)
            + pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
            + HEADER_OVERHEAD).astype(np.int64)
    header_bytes = np.zeros(n, np.int64)
    np.add.at(header_bytes, parents, each)
    rows = np.flatnonzero(lengths > 0)
    out = np.full(n, None, object)
    for row, items in zip(rows.tolist(), column.take(pa.array(rows)).to_pylist(), strict=True):
        out[row] = [tuple(h.values()) for h in items]  # (key, value), whatever the names
    return out, header_bytes
