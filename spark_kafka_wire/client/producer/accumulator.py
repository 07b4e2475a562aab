"""Rows waiting to become batches, and the encoding of batches from rows.

Rows arrive as Arrow columns already assigned to partitions. Each partition buffers its rows
until they fill ``batch.size`` (full batches are cut, the remainder waits), until the
partition's oldest buffered rows are ``linger.ms`` old (checked whenever rows arrive), until
``buffer.memory`` bytes are buffered in all, or until a flush: the rules of the Java
producer's RecordAccumulator. Every batch is encoded by one vectorized call (record batch v2,
or a legacy message set for brokers before 0.11); sizes are estimated per record beforehand so
that a record that can never fit in a request fails before anything is sent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError
from spark_kafka_wire.client.producer.settings import ProduceSettings
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    KafkaError,
    RecordTooLargeError,
    error_for_code,
)
from spark_kafka_wire.protocol.ordering import stable_order
from spark_kafka_wire.protocol.primitives import INT32_MAX
from spark_kafka_wire.protocol.records import HEADER_SIZE, decode_record_batches, encode_message_set
from spark_kafka_wire.protocol.records.batch import encode_record_batch_buffer
from spark_kafka_wire.protocol.records.entries import MAGIC_POS


@dataclass
class PendingBatch:
    topic: str
    partition: int
    data: bytes | memoryview  # one encoded batch (a view: see encode_chunk)
    records: int
    base_sequence: int = -1  # >= 0: an idempotent batch
    created: float = 0.0  # monotonic time of creation (delivery.timeout.ms runs from it)
    attempts: int = 0
    # dispatch order: retries go out in this order. A batch split in two (split_batch) owns
    # [order, order + span): its halves take each half of it, so they keep their place.
    order: float = 0
    span: float = 1.0
    generation: int = 0  # the producer's epoch bumps when its sequence was stamped
    renumbered: bool = False  # re-numbered under a bumped epoch (Sender._stamp)
    # the last error code a broker answered for this batch (Sender._recover): what a give-up
    # reports, rather than a client timeout met on the way to the next attempt
    last_broker_error: KafkaError | None = None


RECORD_OVERHEAD = 21  # worst-case varint framing of one record without headers
HEADER_OVERHEAD = 10  # varint lengths of one header's key and value
BATCH_OVERHEAD = HEADER_SIZE  # a record batch's header
REQUEST_OVERHEAD = 128  # request header, topic name and partition framing, roughly


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


def split_batch(batch: PendingBatch, settings: ProduceSettings, producer_id: int = -1,
                producer_epoch: int = -1) -> list[PendingBatch] | None:
    """Two batches holding ``batch``'s records, half each (by count), or None when it cannot
    be split (one record, or a legacy message set): what the Java producer does with a batch
    a broker refused as MESSAGE_TOO_LARGE (its topic's max.message.bytes is below the
    producer's batch.size). Timestamps, headers and compression are kept; an idempotent
    batch's sequence range is shared out (the halves start at its base sequence and at the
    base plus the first half's count), so later batches of the partition keep theirs."""
    data = bytes(batch.data)
    if batch.records < 2 or len(data) <= MAGIC_POS or data[MAGIC_POS] != 2:
        return None
    rows = decode_record_batches(data, start_offset=0, check_crcs=False, topic=batch.topic,
                                 partition=batch.partition, max_decompressed_size=1 << 31)
    n = rows.num_records
    if n < 2:
        return None
    half = n // 2
    out = []
    span = batch.span / 2
    for i, (lo, hi) in enumerate(((0, half), (half, n))):
        seq = -1 if batch.base_sequence < 0 else (batch.base_sequence + lo) & INT32_MAX
        headers = None if rows.headers is None else rows.headers[lo:hi]
        encoded = encode_record_batch_buffer(
            rows.keys.slice(lo, hi - lo), rows.values.slice(lo, hi - lo),
            timestamps=rows.timestamps[lo:hi], compression=settings.compression,
            compression_level=settings.compression_level,
            producer_id=producer_id if seq >= 0 else -1,
            producer_epoch=producer_epoch if seq >= 0 else -1, base_sequence=seq,
            transactional=settings.transactional_id is not None,
            headers=headers if headers is not None and any(headers) else None)
        out.append(PendingBatch(batch.topic, batch.partition, encoded, hi - lo, seq,
                                batch.created, batch.attempts, batch.order + i * span, span,
                                batch.generation, batch.renumbered))
    return out


def chunk_bounds(sizes: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """[lo, hi) row ranges: a new chunk starts whenever the running size passes ``limit``."""
    csum = np.cumsum(sizes)
    chunk_ids = (csum - 1) // max(limit, 1)
    bounds = np.flatnonzero(np.diff(chunk_ids)) + 1
    return list(zip(np.r_[0, bounds].tolist(), np.r_[bounds, len(sizes)].tolist(), strict=True))


def batch_limit(settings: ProduceSettings) -> int:
    return max(1, min(settings.batch_size,
                      settings.max_request_size - BATCH_OVERHEAD - REQUEST_OVERHEAD))


@dataclass
class Rows:
    """Rows of one partition: Arrow keys/values, int64 timestamps (ms), headers, sizes."""

    keys: pa.Array | pa.ChunkedArray | None
    values: pa.Array | pa.ChunkedArray
    timestamps: np.ndarray
    headers: np.ndarray | None  # object array: None or [(key, value)] per row
    sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.values)

    def slice(self, lo: int, hi: int) -> Rows:
        return Rows(
            None if self.keys is None else self.keys.slice(lo, hi - lo),
            self.values.slice(lo, hi - lo), self.timestamps[lo:hi],
            None if self.headers is None else self.headers[lo:hi], self.sizes[lo:hi],
        )

    @staticmethod
    def concat(parts: list[Rows]) -> Rows:
        """The rows of ``parts`` in order. Keys and values become chunked arrays over the
        parts' own chunks (no copy): the encoder joins records from the chunks directly."""
        if len(parts) == 1:
            return parts[0]
        keys = None if parts[0].keys is None else _chunked([p.keys for p in parts])
        if any(p.headers is not None for p in parts):
            headers = np.concatenate([p.headers if p.headers is not None
                                      else np.full(len(p), None, object) for p in parts])
        else:
            headers = None
        return Rows(keys, _chunked([p.values for p in parts]),
                     np.concatenate([p.timestamps for p in parts]), headers,
                     np.concatenate([p.sizes for p in parts]))


def _chunked(columns: list) -> pa.ChunkedArray:
    """One chunked array over the chunks of ``columns`` (arrays or chunked arrays)."""
    chunks = [c for col in columns
              for c in (col.chunks if isinstance(col, pa.ChunkedArray) else [col]) if len(c)]
    return pa.chunked_array(chunks, columns[0].type)


def encode_chunk(rows: Rows, magic: int, settings: ProduceSettings, producer_id: int = -1,
                  producer_epoch: int = -1, base_sequence: int = -1) -> bytes | memoryview:
    """One record batch (or legacy message set) of ``rows``; part of a transaction when the
    settings name a transactional id. A record batch is a byte view (see
    ``encode_record_batch_buffer``): the producer sends it without copying it again."""
    keys = rows.keys  # None: every key is null
    if magic == 2:
        headers = None
        if rows.headers is not None:
            headers = rows.headers.tolist()
            if not any(headers):
                headers = None
        return encode_record_batch_buffer(
            keys, rows.values, timestamps=rows.timestamps, compression=settings.compression,
            compression_level=settings.compression_level,
            producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
            transactional=settings.transactional_id is not None, headers=headers,
        )
    return encode_message_set(keys, rows.values, magic=magic, timestamps=rows.timestamps,
                              compression=settings.compression,
                              compression_level=settings.compression_level)


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
        for lo, hi in chunk_bounds(rows.sizes, batch_limit(settings)):
            chunk = rows.slice(lo, hi)
            out.append(PendingBatch(topic, partition, encode_chunk(chunk, magic, settings),
                                    hi - lo, created=now))
    return out


def _group_by_partition(keys, values, partitions, timestamps, headers, sizes):
    """(partition, Rows) per partition present, rows in their original order.

    Where each partition's rows are already one run (a keyless write, whose partitioner
    hands out contiguous blocks; a single-partition topic; rows a writer sorted), the runs
    are slices of the columns as they came; otherwise the rows are gathered by partition
    (one copy of every key and value)."""
    if not len(partitions):
        return
    cuts = np.flatnonzero(np.diff(partitions)) + 1
    # More runs than partition numbers in the batch's range: some partition has two runs
    # (hashed keys interleave): no need to look further.
    if len(cuts) < int(partitions.max()) - int(partitions.min()) + 1:
        starts = [0, *cuts.tolist()]
        if len(set(partitions[starts].tolist())) == len(starts):
            rows = Rows(keys, values, timestamps, headers, sizes)
            for lo, hi in zip(starts, [*starts[1:], len(partitions)], strict=True):
                yield int(partitions[lo]), rows.slice(lo, hi)
            return
    order = stable_order(partitions)
    sorted_parts = partitions[order]
    cuts = (np.flatnonzero(np.diff(sorted_parts)) + 1).tolist()
    idx = pa.array(order)
    k_sorted = keys.take(idx) if keys is not None else None
    v_sorted = values.take(idx)
    sorted_rows = Rows(k_sorted, v_sorted, timestamps[order],
                        None if headers is None else headers[order], sizes[order])
    for lo, hi in zip([0, *cuts], [*cuts, len(order)], strict=True):
        yield int(sorted_parts[lo]), sorted_rows.slice(lo, hi)


class _PartitionBuffer:
    """Rows of one partition waiting to fill a batch."""

    def __init__(self) -> None:
        self.chunks: list[Rows] = []
        self.times: list[float] = []  # arrival time of each chunk
        self.bytes = 0

    def add(self, rows: Rows, now: float) -> None:
        self.chunks.append(rows)
        self.times.append(now)
        self.bytes += int(rows.sizes.sum())

    @property
    def first(self) -> float:
        return self.times[0]

    def take_all(self) -> Rows:
        rows = Rows.concat(self.chunks)
        self.chunks, self.times, self.bytes = [], [], 0
        return rows

    def take_full(self, limit: int) -> Rows | None:
        """The rows that make complete batches of ``limit`` bytes; the rest stays."""
        times = np.repeat(self.times, [len(c) for c in self.chunks])
        rows = Rows.concat(self.chunks)
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


class Accumulator:
    """Every partition's buffered rows, and the rule that decides which of them go now."""

    def __init__(self, settings: ProduceSettings) -> None:
        self.settings = settings
        self.buffers: dict[tuple[str, int], _PartitionBuffer] = {}
        self.buffered = 0  # estimated bytes of all buffered rows

    def add(self, topic: str, keys: pa.Array | None, values: pa.Array, partitions: np.ndarray,
            timestamps: np.ndarray, headers: np.ndarray | None, sizes: np.ndarray,
            now: float) -> None:
        """Buffer rows already assigned to partitions (``sizes``: see :func:`record_sizes`)."""
        for partition, rows in _group_by_partition(keys, values, partitions, timestamps,
                                                   headers, sizes):
            key = (topic, partition)
            buf = self.buffers.get(key)
            if buf is None:
                buf = self.buffers[key] = _PartitionBuffer()
            buf.add(rows, now)
        self.buffered += int(sizes.sum())

    def ready(self, now: float, force: bool = False) -> Iterator[tuple[str, int, Rows]]:
        """(topic, partition, rows) that should be sent now, taken out of the buffers
        (``force``: everything buffered)."""
        s = self.settings
        everything = force or s.linger_ms == 0 or self.buffered >= s.buffer_memory
        limit = batch_limit(s)
        for key, buf in list(self.buffers.items()):
            if not buf.chunks:
                continue
            if everything or (now - buf.first) * 1000 >= s.linger_ms:
                rows: Rows | None = buf.take_all()
            elif buf.bytes >= limit:
                rows = buf.take_full(limit)
            else:
                continue
            if rows is not None and len(rows):
                self.buffered -= int(rows.sizes.sum())
                yield key[0], key[1], rows

    def clear(self) -> None:
        """Forget every buffered row."""
        self.buffers.clear()
        self.buffered = 0


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
        raise ConfigurationError.of(
            CONFIGURATION, "ROW_HEADER_NULL", value=int(parents[i]))
    keys = flat.field(0)
    values = flat.field(1)
    if keys.null_count:
        i = int(np.flatnonzero(keys.is_null().to_numpy(zero_copy_only=False))[0])
        raise ConfigurationError.of(CONFIGURATION, "ROW_HEADER_NULL_KEY", value=int(parents[i]))
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
