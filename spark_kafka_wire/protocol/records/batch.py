"""RecordBatch, the v2 record format (magic 2, Kafka 0.11+): decode and encode.

Decoding per record in Python would cap throughput at a few hundred thousand records per
second, so the decoder touches Python only once per record, in a tight loop that hops from
one record length to the next (the only inherently sequential step). Every field is then
read for all records at once with numpy (``read_varints`` reads the varint at an array of
positions), and keys and values are gathered into Arrow buffers without per-record objects.

Layout (61-byte header; https://kafka.apache.org/documentation/#recordbatch): baseOffset int64
@0, batchLength int32 @8, partitionLeaderEpoch int32 @12, magic int8 @16, crc uint32 @17
(CRC-32C of [21, end)), attributes int16 @21, lastOffsetDelta int32 @23, baseTimestamp int64
@27, maxTimestamp int64 @35, producerId int64 @43, producerEpoch int16 @51, baseSequence int32
@53, recordCount int32 @57, records @61.

The CRC leaves out the first 21 bytes (a broker assigns offsets without recomputing it), so
the base offset is checked another way: offsets only grow along a log, so a batch the reader
uses must start after the previous batch of the same response ended, and no offset is
negative. A damaged base offset that breaks neither rule (the last batch of a response moved
further on) goes unnoticed, as by every Kafka client.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
from crc32c import crc32c

from spark_kafka_wire.protocol.compression import CODEC_NONE, codec_id
from spark_kafka_wire.protocol.compression import compress as _compress
from spark_kafka_wire.protocol.errors import CorruptRecordError, ProtocolError
from spark_kafka_wire.protocol.limits import MAX_COLUMN_BYTES
from spark_kafka_wire.protocol.records.columns import (
    DecodedRecords,
    join_pooled,
    join_row_segments,
    key_value_parts,
    spans_to_binary,
    timestamp_column,
)
from spark_kafka_wire.protocol.records.control import (
    CONTROL_ABORT,
    AbortedTransactions,
    TransactionEvents,
    control_type,
)
from spark_kafka_wire.protocol.records.entries import (
    LOG_OVERHEAD,
    MAGIC_POS,
    OFFSET_LENGTH,
    DecompressionBudget,
    decompress_records,
    peek_magic,
)
from spark_kafka_wire.protocol.records.varint import (
    Malformed,
    put_varints,
    read_varint,
    read_varints,
    varint_bytes,
    varint_sizes,
)

HEADER_SIZE = 61
_CRC_START = 21
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
_MIN_RECORD_BODY = 6  # attributes, timestampDelta, offsetDelta, keyLen, valueLen, headerCount
_MIN_RECORD_SIZE = 1 + _MIN_RECORD_BODY  # plus the length varint

ATTR_CODEC_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
_HEADER_PREFIX = struct.Struct(">qiibI")  # up to and including the CRC
_HEADER_REST = struct.Struct(">hiqqqhii")  # attributes .. recordCount, covered by the CRC
assert BATCH_HEADER.size == HEADER_SIZE


def _build_scan_table() -> list[list[int | None]]:
    """Bytes to skip for a record whose first two bytes are ``[b0][b1]``.

    The record length is a zigzag varint; with 1 or 2 bytes (records under 8 KiB) the two
    bytes at the record start determine varint size + length, so the scan loop needs two
    list lookups per record (cheaper in Python than combining the bytes into one index).
    None marks varints of 3+ bytes (the slow path).
    """
    v = np.arange(65536, dtype=np.int64)
    b0, b1 = v >> 8, v & 0xFF  # row-major: index b0 * 256 + b1
    u = np.where(b0 < 0x80, b0, (b0 & 0x7F) | (b1 << 7))
    skip = np.where(b0 < 0x80, 1, 2) + ((u >> 1) ^ -(u & 1))
    flat: list[int | None] = skip.tolist()
    for i in np.nonzero((b0 >= 0x80) & (b1 >= 0x80))[0].tolist():
        flat[i] = None
    return [flat[i:i + 256] for i in range(0, 65536, 256)]


_SCAN_TABLE = _build_scan_table()


def _scan_records(buf: Any, p: int, count: int, out: list[int]) -> int:
    """Append the position of each of ``count`` records; return the position after them.

    The one sequential step: a record's position is known only after the previous record's
    length. Nothing is validated here (a valid record is >= 7 bytes, so reading two bytes
    is safe); the vectorized pass re-reads every length and checks that the records tile
    the batch exactly. A list comprehension (no method call per record) walks the records;
    a length varint of 3+ bytes (a record of 8 KiB or more) sends the batch to the slower
    loop that reads any varint.
    """
    table = _SCAN_TABLE
    start = p
    try:
        ends = [(p := p + table[buf[p]][buf[p + 1]]) for _ in repeat(None, count)]
    except TypeError:  # None: a length varint of 3+ bytes
        return _scan_any(buf, start, count, out)
    if not ends:
        return start
    out.append(start)
    out += ends
    return out.pop()


def _scan_any(buf: Any, p: int, count: int, out: list[int]) -> int:
    """``_scan_records`` for length varints of any size."""
    append = out.append
    table = _SCAN_TABLE
    target = len(out) + count
    while len(out) < target:
        try:
            for _ in repeat(None, target - len(out)):
                append(p)
                p += table[buf[p]][buf[p + 1]]
        except TypeError:  # None: a length varint of 3+ bytes (record of 8 KiB or more)
            length, p = read_varint(buf, p, p + 5)
            p += length
    return p


def _varint_piece(z: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A ``join_rows`` piece holding one varint per row."""
    start = np.zeros(len(size), np.int64)
    np.cumsum(size[:-1], out=start[1:])
    out = np.zeros(int(size.sum()), np.uint8)
    put_varints(out, start, z, size)
    return size, out


# ---------------------------------------------------------------------------------- decode


@dataclass
class _Plan:
    """Batches whose records must be decoded, with their records section in ``src``; the
    sections themselves (``pieces``) are joined into one buffer when any is compressed."""

    base_offsets: list[int] = field(default_factory=list)
    base_ts: list[int] = field(default_factory=list)
    max_ts: list[int] = field(default_factory=list)
    ts_types: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    region_starts: list[int] = field(default_factory=list)
    region_ends: list[int] = field(default_factory=list)
    pieces: list[Any] = field(default_factory=list)  # records sections, in batch order
    compressed: bool = False


@dataclass(frozen=True)
class BatchDecoding:
    """What the decoding of one Fetch response holds fixed across its runs of batches: the
    offsets kept (``start_offset`` <= offset < ``end_offset``), whether CRCs are checked,
    ``where`` the records come from (for errors), and what the runs share: the decompression
    budget, the aborted transactions (read_committed; None reads uncommitted) and the
    transaction events to fill (read_committed with markers, see ``control.py``). One value
    instead of eleven parameters on each call."""

    start_offset: int
    end_offset: int | None
    check_crcs: bool
    budget: DecompressionBudget
    where: dict[str, Any]
    aborted: AbortedTransactions | None = None
    events: TransactionEvents | None = None


class _Header(NamedTuple):
    """A batch header, as ``BATCH_HEADER`` reads it."""

    base_offset: int
    batch_length: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int


def _parse_headers(buf: Any, p: int, end: int, count: int) -> list[tuple[str, bytes | None]]:
    out: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        klen, p = read_varint(buf, p, end)
        if klen < 0 or p + klen > end:
            raise Malformed(f"invalid header key length {klen}")
        # Java decodes header keys leniently (malformed UTF-8 becomes U+FFFD); so do we.
        key = str(buf[p:p + klen], "utf-8", "replace")
        p += klen
        vlen, p = read_varint(buf, p, end)
        if vlen < -1 or p + vlen > end:
            raise Malformed(f"invalid header value length {vlen}")
        if vlen < 0:
            out.append((key, None))
        else:
            out.append((key, bytes(buf[p:p + vlen])))
            p += vlen
    if p != end:
        raise Malformed(f"{end - p} unread bytes after the headers of a record")
    return out


_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_POS = 23


def next_batch_offset(data: bytes | memoryview | None) -> int | None:
    """The offset after the last complete record batch of ``data``, from headers alone.

    What ``decode_record_batches`` will report as ``next_offset`` for well-formed v2 data,
    known before decoding, so a reader can ask for the next bytes while it decodes these.
    None when there is no complete batch, or any entry is not a v2 batch (legacy message
    sets are not walked: their readers simply do not fetch ahead); nothing is validated.
    """
    if not data:
        return None
    view = memoryview(data)
    pos, n, after = 0, len(view), None
    while n - pos >= LOG_OVERHEAD:
        base, length = OFFSET_LENGTH.unpack_from(view, pos)
        end = pos + LOG_OVERHEAD + length
        if end > n or length <= MAGIC_POS - LOG_OVERHEAD:
            break
        if view[pos + MAGIC_POS] != 2:
            return None
        if length < _MIN_BATCH_LENGTH:
            break
        after = base + _LAST_OFFSET_DELTA.unpack_from(view, pos + _LAST_OFFSET_DELTA_POS)[0] + 1
        pos = end
    return after


def _marker_type(view: memoryview, rstart: int, rend: int, codec: int, count: int,
                 base_offset: int, budget: DecompressionBudget, where: dict[str, Any]
                 ) -> tuple[int, str | None]:
    """(control type, None) of the control batch whose records are ``view[rstart:rend]``, or
    (-1, why) when its record cannot be read. Kafka never compresses control batches; one that
    is compressed is decompressed like data rather than misread (records that do not
    decompress raise, as a data batch's would)."""
    records: Any = view[rstart:rend] if codec == CODEC_NONE else decompress_records(
        codec, view[rstart:rend], budget, base_offset, where)
    try:
        return control_type(records, count), None
    except Malformed as exc:
        return -1, exc.reason
    except (struct.error, IndexError):
        return -1, "control record is truncated"


def decode_batches(
    view: memoryview, buf: Any, pos: int, next_offset: int | None, d: BatchDecoding,
) -> tuple[DecodedRecords | None, int, int | None]:
    """Decode the run of record batches starting at ``pos``; stop before a legacy message.

    Returns (records or None, position after the run, next offset). ``d.events``
    (read_committed, with ``d.aborted``): filled with the transactional batches kept and the
    markers met. The walk checks each batch and picks the records to decode
    (``_transactional_dropped`` decides transactions and markers); ``_assemble`` then decodes
    the picked records into columns at once.
    """
    n = len(view)
    where, start_offset, end_offset = d.where, d.start_offset, d.end_offset
    plan = _Plan()
    while peek_magic(view, pos, n, where) == 2:
        base_offset, batch_length = OFFSET_LENGTH.unpack_from(view, pos)
        end = pos + LOG_OVERHEAD + batch_length
        if batch_length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch length {batch_length} is smaller than the batch "
                                     "header", offset=base_offset, **where)
        h = _Header._make(BATCH_HEADER.unpack_from(view, pos))
        attrs, count = h.attributes, h.record_count
        used = end_offset is None or base_offset < end_offset
        if base_offset < 0:
            raise CorruptRecordError(f"a batch starts at offset {base_offset}, which no log "
                                     "holds: its header is damaged", offset=base_offset, **where)
        if used and next_offset is not None and base_offset < next_offset:
            raise CorruptRecordError(
                f"a batch starts at offset {base_offset}, before the previous one ended (at "
                f"{next_offset - 1}): a batch header is damaged", offset=base_offset, **where)
        if not used:
            # Past the requested range: nothing here is returned, so a damaged batch the reader
            # would never use must not fail it (its header is unverified: keep next_offset
            # moving forward whatever lastOffsetDelta says). Its markers may still decide
            # transactions with records in the range.
            if d.events is not None and attrs & ATTR_CONTROL and h.producer_id >= 0:
                _marker_past_end(view, pos, end, h, d)
            next_offset = base_offset + max(h.last_offset_delta, 0) + 1
            pos = end
            continue
        if d.check_crcs:
            actual = crc32c(view[pos + _CRC_START:end])
            if actual != h.crc:
                raise CorruptRecordError(
                    f"CRC-32C mismatch in the batch at base offset {base_offset} (stored "
                    f"{h.crc:#010x}, computed {actual:#010x})", offset=base_offset, **where)
        last_offset = base_offset + h.last_offset_delta
        next_offset = last_offset + 1
        rstart, rend = pos + HEADER_SIZE, end
        pos = end
        if count < 0:
            raise CorruptRecordError(f"negative record count {count}", offset=base_offset,
                                     **where)
        if (d.aborted is not None and h.producer_id >= 0
                and _transactional_dropped(view, rstart, rend, h, d)):
            continue
        if (count == 0 or attrs & ATTR_CONTROL or last_offset < start_offset
                or (end_offset is not None and base_offset >= end_offset)):
            continue
        codec = attrs & ATTR_CODEC_MASK
        if codec != CODEC_NONE:
            blob = decompress_records(codec, view[rstart:rend], d.budget, base_offset, where)
            plan.compressed = True
            plan.pieces.append(blob)
        else:
            plan.pieces.append(view[rstart:rend])
            blob = None
        if count > (rend - rstart if blob is None else len(blob)) // _MIN_RECORD_SIZE:
            raise CorruptRecordError(
                f"record count {count} is impossible for "
                f"{rend - rstart if blob is None else len(blob)} bytes of records",
                offset=base_offset, **where)
        plan.base_offsets.append(base_offset)
        plan.base_ts.append(h.base_timestamp)
        plan.max_ts.append(h.max_timestamp)
        plan.ts_types.append(1 if attrs & ATTR_LOG_APPEND_TIME else 0)
        plan.counts.append(count)
        plan.region_starts.append(rstart)
        plan.region_ends.append(rend)

    if not plan.counts:
        return None, pos, next_offset
    return _assemble(view, buf, plan, next_offset, d), pos, next_offset


def _marker_past_end(view: memoryview, pos: int, end: int, h: _Header, d: BatchDecoding
                     ) -> None:
    """Record in ``d.events`` the marker of the control batch ``view[pos:end]``, past the
    range: it may decide a transaction with records in the range. A damaged one is reported
    to the events (which fail the read only if the marker decides something), not raised."""
    assert d.events is not None
    problem = None
    ctype = -1
    if d.check_crcs and crc32c(view[pos + _CRC_START:end]) != h.crc:
        problem = "CRC-32C mismatch"
    else:
        try:
            ctype, problem = _marker_type(
                view, pos + HEADER_SIZE, end, h.attributes & ATTR_CODEC_MASK, h.record_count,
                h.base_offset, d.budget, d.where)
        except ProtocolError:
            problem = "its records do not decompress"
    d.events.marker(h.producer_id, h.base_offset, ctype, problem)


def _transactional_dropped(view: memoryview, rstart: int, rend: int, h: _Header,
                           d: BatchDecoding) -> bool:
    """Read committed, a batch of a producer (records ``view[rstart:rend]``): open the
    aborted transactions the batch reaches, close the one its ABORT marker ends, record the
    markers and kept transactional data in ``d.events``. True when the batch is data of an
    aborted transaction the broker listed, to drop."""
    aborted = d.aborted
    assert aborted is not None
    events, producer_id, attrs = d.events, h.producer_id, h.attributes
    base_offset, count = h.base_offset, h.record_count
    last_offset = base_offset + h.last_offset_delta
    aborted.advance(last_offset)
    if attrs & ATTR_CONTROL:
        listed = producer_id in aborted.active
        if listed or events is not None:
            ctype, problem = _marker_type(view, rstart, rend, attrs & ATTR_CODEC_MASK, count,
                                          base_offset, d.budget, d.where)
            if listed:
                if problem is not None:
                    raise CorruptRecordError(problem, offset=base_offset, **d.where)
                if ctype == CONTROL_ABORT:  # the producer's transaction ends here
                    aborted.active.discard(producer_id)
            if events is not None:
                events.marker(producer_id, base_offset, ctype, problem)
    elif attrs & ATTR_TRANSACTIONAL:
        if producer_id in aborted.active:  # an aborted transaction's data
            if events is not None and count > 0 and last_offset >= d.start_offset:
                events.listed += 1
            return True
        if events is not None and count > 0 and last_offset >= d.start_offset:
            events.data(producer_id, max(base_offset, d.start_offset), last_offset)
    return False


def _assemble(view: memoryview, buf: Any, plan: _Plan, next_offset: int | None,
              d: BatchDecoding) -> DecodedRecords:
    """The records ``plan`` picked, decoded into columns: their sections joined into one
    buffer when any was compressed (so the vectorized pass runs once), each record found
    (the one sequential step), then every field read at once (``_decode_columns``)."""
    where = d.where
    if plan.compressed:
        # One source buffer for all records so the vectorized pass runs once.
        size = sum(len(piece) for piece in plan.pieces)
        if size > MAX_COLUMN_BYTES:
            raise ProtocolError(
                f"the records of one fetch decompress to {size} bytes, more than one "
                "Arrow binary column holds (2 GiB); lower the fetch size", **where)
        src: Any
        rbuf: Any
        if all(isinstance(piece, memoryview) for piece in plan.pieces):
            # zstd's sections, decoded into Arrow's pool: joined there too
            src = join_pooled(plan.pieces)
            rbuf = memoryview(src).cast("B")  # an Arrow buffer's own view has format "b"
        else:
            src = rbuf = b"".join(plan.pieces)
        p = 0
        for i, piece in enumerate(plan.pieces):
            plan.region_starts[i] = p
            p += len(piece)
            plan.region_ends[i] = p
    else:
        src = view
        rbuf = buf
    plan.pieces = []

    # The sequential step: find where each record starts.
    positions: list[int] = []
    for i, count in enumerate(plan.counts):
        try:
            p = _scan_records(rbuf, plan.region_starts[i], count, positions)
        except (IndexError, Malformed):
            p = -1
        if p != plan.region_ends[i]:
            raise CorruptRecordError(
                f"the {count} records declared by the batch do not fill its "
                f"{plan.region_ends[i] - plan.region_starts[i]} bytes of records exactly",
                offset=plan.base_offsets[i], **where)

    arr = np.frombuffer(src, dtype=np.uint8)
    counts = np.array(plan.counts, np.int64)
    try:
        q = np.fromiter(positions, np.int64, len(positions))
        return _decode_columns(arr, rbuf, q, counts, plan, d.start_offset, d.end_offset,
                               next_offset)
    except Malformed as exc:
        batch = 0
        if exc.record >= 0:
            batch = int(np.searchsorted(np.cumsum(counts), exc.record, side="right"))
        raise CorruptRecordError(exc.reason, offset=plan.base_offsets[batch], **where) from None


def _decode_columns(arr: np.ndarray, buf: Any, q: np.ndarray, counts: np.ndarray, plan: _Plan,
                    start_offset: int, end_offset: int | None,
                    next_offset: int | None) -> DecodedRecords:
    """Decode every field of the records at positions ``q`` with whole-array operations."""
    nrec = len(q)
    last_idx = np.cumsum(counts) - 1
    region_end = np.repeat(np.array(plan.region_ends, np.int64), counts)

    length, s = read_varints(arr, q, region_end, 5, "record length")
    rec_end = s + length
    # Records must tile each batch: each ends where the next starts, the last at the end.
    expected = np.empty(nrec, np.int64)
    expected[:-1] = q[1:]
    expected[last_idx] = np.array(plan.region_ends, np.int64)
    bad = (rec_end != expected) | (length < _MIN_RECORD_BODY)
    if bad.any():
        i = int(np.argmax(bad))
        raise Malformed(f"invalid record length {int(length[i])}", i)

    p = s + 1  # attributes: unused by Kafka so far
    ts_delta, p = read_varints(arr, p, rec_end, 10, "timestamp delta")
    off_delta, p = read_varints(arr, p, rec_end, 5, "offset delta")
    key_len, p = read_varints(arr, p, rec_end, 5, "key length")
    key_start = p
    p = p + np.maximum(key_len, 0)
    val_len, p = read_varints(arr, p, rec_end, 5, "value length")
    val_start = p
    p = p + np.maximum(val_len, 0)
    hdr_count, p = read_varints(arr, p, rec_end, 5, "header count")
    bad = (key_len < -1) | (val_len < -1) | (hdr_count < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise Malformed(f"invalid key length {int(key_len[i])}, value length "
                        f"{int(val_len[i])} or header count {int(hdr_count[i])}", i)
    has_hdr = hdr_count > 0
    bad = (p != rec_end) & ~has_hdr
    if bad.any():
        i = int(np.argmax(bad))
        raise Malformed(f"record of {int(length[i])} bytes does not match its fields", i)

    offsets = np.repeat(np.array(plan.base_offsets, np.int64), counts) + off_delta
    ts_type = np.repeat(np.array(plan.ts_types, np.int32), counts)
    timestamps = np.where(ts_type == 1, np.repeat(np.array(plan.max_ts, np.int64), counts),
                          np.repeat(np.array(plan.base_ts, np.int64), counts) + ts_delta)

    keep = offsets >= start_offset
    if end_offset is not None:
        keep &= offsets < end_offset
    all_kept = bool(keep.all())

    headers: list | None = None
    hdr_idx = np.nonzero(has_hdr)[0]
    if len(hdr_idx):
        # Each header is at least 2 bytes (two 1-byte lengths): bound the count first.
        room = rec_end[hdr_idx] - p[hdr_idx]
        bad = hdr_count[hdr_idx] > room // 2
        if bad.any():
            i = int(hdr_idx[np.argmax(bad)])
            raise Malformed(f"header count {int(hdr_count[i])} is impossible for "
                            f"{int(rec_end[i] - p[i])} bytes", i)
        kept_pos = np.cumsum(keep) - 1
        headers = [None] * int(np.count_nonzero(keep))
        found = False
        for i, hp, he, hc in zip(hdr_idx.tolist(), p[hdr_idx].tolist(),
                                 rec_end[hdr_idx].tolist(), hdr_count[hdr_idx].tolist(),
                                 strict=True):
            try:
                parsed = _parse_headers(buf, hp, he, hc)
            except Malformed as exc:
                raise Malformed(exc.reason, i) from None
            if keep[i]:
                headers[kept_pos[i]] = parsed
                found = True
        if not found:
            headers = None

    if not all_kept:
        offsets, timestamps, ts_type = offsets[keep], timestamps[keep], ts_type[keep]
        key_start, key_len = key_start[keep], key_len[keep]
        val_start, val_len = val_start[keep], val_len[keep]

    return DecodedRecords(
        offsets=offsets,
        timestamps=timestamps.astype(np.int64, copy=False),
        timestamp_types=ts_type,
        keys=spans_to_binary(arr, key_start, key_len),
        values=spans_to_binary(arr, val_start, val_len),
        headers=headers,
        next_offset=next_offset,
    )


# ---------------------------------------------------------------------------------- encode


def _encode_headers(hdrs: Sequence[tuple[str, bytes | None]] | None) -> bytes:
    """Header count varint plus the headers of one record."""
    if not hdrs:
        return b"\x00"
    parts = [varint_bytes(len(hdrs))]
    for key, value in hdrs:
        kb = _header_bytes(key, "key")
        parts.append(varint_bytes(len(kb)))
        parts.append(kb)
        if value is None:
            parts.append(b"\x01")  # zigzag(-1)
        else:
            vb = _header_bytes(value, "value")
            parts.append(varint_bytes(len(vb)))
            parts.append(vb)
    return b"".join(parts)


def _header_bytes(x: object, what: str) -> bytes:
    # Explicit types: bytes(5) would silently become five zero bytes.
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    raise TypeError(f"header {what} must be str or bytes, not {type(x).__name__}")


_PRODUCER_FIELDS = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence
_PRODUCER_FIELDS_POS = 43


def restamp_batch(data: bytes | memoryview, producer_id: int, producer_epoch: int,
                  base_sequence: int) -> bytes:
    """An encoded RecordBatch (magic 2) with another producer id, epoch and base sequence,
    its CRC recomputed. An idempotent producer whose epoch was bumped (KIP-360) re-sends the
    batches it has not seen acknowledged under the new epoch, numbered from sequence 0."""
    if len(data) < HEADER_SIZE or data[16] != 2:
        raise ValueError("restamp_batch takes one encoded record batch of magic 2")
    out = bytearray(data)
    _PRODUCER_FIELDS.pack_into(out, _PRODUCER_FIELDS_POS, producer_id, producer_epoch,
                               base_sequence)
    struct.pack_into(">I", out, _CRC_START - 4, crc32c(memoryview(out)[_CRC_START:]))
    return bytes(out)


_OFFSET_DELTAS: list[tuple[np.ndarray, np.ndarray]] = []


def _offset_deltas(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``varint_sizes(np.arange(n))``, the offset deltas of every batch, computed once for
    the largest batch seen (read-only slices)."""
    cached = _OFFSET_DELTAS[0] if _OFFSET_DELTAS else None
    if cached is None or len(cached[0]) < n:
        z, size = varint_sizes(np.arange(max(n, 1 << 14), dtype=np.int64))
        z.flags.writeable = size.flags.writeable = False
        cached = z, size
        _OFFSET_DELTAS[:] = [cached]
    return cached[0][:n], cached[1][:n]


def _records(n: int, k_len: np.ndarray, k_data: list[np.ndarray], v_len: np.ndarray,
             v_data: list[np.ndarray], bounds: list[int], ts_delta: np.ndarray,
             hdr: tuple[np.ndarray, np.ndarray] | None) -> list[Any]:
    """The records section of a batch, in pieces that are back to back the section, the
    first piece preceded by ``HEADER_SIZE`` zero bytes (room for the batch header).

    Per record: [length, attributes 0, timestampDelta, offsetDelta, keyLength] key
    [valueLength] value [headers]. The varints are written for all records at once into
    one "lead" buffer per record, then ``join_row_segments`` joins the pieces row by row.
    Without headers every record ends with a zero header count, which is written as the
    first byte of the next record's lead (zeroed memory; the last one as the lead of one
    more, otherwise empty, row), and without key bytes the value length joins the lead:
    fewer pieces to join per record.
    """
    ts_z, ts_sz = varint_sizes(ts_delta)
    od_z, od_sz = _offset_deltas(n)
    kl_z, kl_sz = varint_sizes(k_len)
    vl_z, vl_sz = varint_sizes(v_len)
    k_bytes = np.maximum(k_len, 0)
    v_bytes = np.maximum(v_len, 0)
    no_key_bytes = not k_bytes.any()
    body = 1 + ts_sz + od_sz + kl_sz + k_bytes + vl_sz + v_bytes
    body += 1 if hdr is None else hdr[0]
    bl_z, bl_sz = varint_sizes(body)

    # Without headers one more row, empty but for its lead: the last header count.
    rows = n + 1 if hdr is None else n
    lead = np.zeros(rows, np.int64)
    lead[:n] = bl_sz + 1 + ts_sz + od_sz + kl_sz
    if no_key_bytes:
        lead[:n] += vl_sz
    if hdr is None:
        lead[1:] += 1  # the previous record's header count
    lead[0] += HEADER_SIZE
    start = np.zeros(rows, np.int64)
    np.cumsum(lead[:-1], out=start[1:])
    lead_data = np.zeros(int(start[-1] + lead[-1]), np.uint8)  # zero = attributes byte
    p = start[:n] + 1 if hdr is None else start.copy()
    p[0] = HEADER_SIZE
    put_varints(lead_data, p, bl_z, bl_sz)
    p += bl_sz + 1
    if ts_z.any():  # all zero (one timestamp for the batch): the bytes are zero already
        put_varints(lead_data, p, ts_z, ts_sz)
    p += ts_sz
    put_varints(lead_data, p, od_z, od_sz)
    p += od_sz
    put_varints(lead_data, p, kl_z, kl_sz)

    def rows_of(lens: np.ndarray) -> np.ndarray:
        return lens if rows == n else np.append(lens, 0)

    pieces: list[tuple[np.ndarray, Any]] = [(lead, lead_data)]
    if no_key_bytes:
        put_varints(lead_data, p + kl_sz, vl_z, vl_sz)
    else:
        vl_piece = _varint_piece(vl_z, vl_sz)
        pieces += [(rows_of(k_bytes), k_data), (rows_of(vl_piece[0]), vl_piece[1])]
    pieces.append((rows_of(v_bytes), v_data))
    if hdr is not None:
        pieces.append(hdr)
    return join_row_segments(pieces, [*bounds[:-1], rows])


def encode_record_batch(
    keys: Any,
    values: Any,
    *,
    timestamps: Any = None,
    base_offset: int = 0,
    compression: int | str = 0,
    compression_level: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    headers: Sequence[Sequence[tuple[str, bytes | None]] | None] | None = None,
) -> bytes:
    """Encode one RecordBatch (magic 2) holding ``len(values)`` records.

    ``keys``/``values``: Arrow binary/large_binary/string arrays or lists of bytes|None
    (``keys=None``: all keys null). ``timestamps``: None (now), one int, or an int64 array.
    Record ``i`` gets offsetDelta ``i``; the records section is compressed as one blob.
    ``compression`` is a Kafka codec id or name (see ``compression.CODEC_NAMES``),
    ``compression_level`` its level (None: the codec's default, see ``compression.compress``).
    """
    data = encode_record_batch_buffer(
        keys, values, timestamps=timestamps, base_offset=base_offset, compression=compression,
        compression_level=compression_level,
        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
        transactional=transactional, headers=headers)
    return data if isinstance(data, bytes) else bytes(data)


def encode_record_batch_buffer(
    keys: Any,
    values: Any,
    *,
    timestamps: Any = None,
    base_offset: int = 0,
    compression: int | str = 0,
    compression_level: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    headers: Sequence[Sequence[tuple[str, bytes | None]] | None] | None = None,
) -> bytes | memoryview:
    """``encode_record_batch``, without copying the batch once more when it is encoded in
    one piece: an uncompressed batch whose rows come from one Arrow chunk is returned as a
    read-only byte view (format "B") of the buffer its records were joined into, its header
    written in place (what the producer sends); any other batch as bytes."""
    compression = codec_id(compression)
    n, k_len, k_data, v_len, v_data, bounds = key_value_parts(keys, values)

    ts = timestamp_column(timestamps, n)
    base_ts = int(ts[0])
    max_ts = int(ts.max())

    if headers is not None:
        if len(headers) != n:
            raise ValueError(f"{len(headers)} header lists for {n} records")
        hdr_idx = [i for i, h in enumerate(headers) if h]
        blobs = [_encode_headers(headers[i]) for i in hdr_idx]
    else:
        hdr_idx, blobs = [], []
    hdr: tuple[np.ndarray, np.ndarray] | None = None
    if hdr_idx:
        hdr_len = np.ones(n, np.int64)  # header count 0 = one zero byte
        hdr_len[hdr_idx] = [len(b) for b in blobs]
        hdr_rows = [b"\0"] * n
        for i, b in zip(hdr_idx, blobs, strict=True):
            hdr_rows[i] = b
        hdr = hdr_len, np.frombuffer(b"".join(hdr_rows), np.uint8)
    parts = _records(n, k_len, k_data, v_len, v_data, bounds, ts - base_ts, hdr)
    attrs = (compression & ATTR_CODEC_MASK) | (ATTR_TRANSACTIONAL if transactional else 0)
    rest = _HEADER_REST.pack(attrs, n - 1, base_ts, max_ts, producer_id, producer_epoch,
                             base_sequence, n)
    # partitionLeaderEpoch -1 (unknown), as the Java producer writes it.
    if compression == CODEC_NONE and len(parts) == 1:
        # One piece: header and records are one buffer. Write the header into its room.
        out = np.frombuffer(parts[0], np.uint8)
        if not out.flags.writeable:
            out = out.copy()
        out[_CRC_START:HEADER_SIZE] = np.frombuffer(rest, np.uint8)
        crc = crc32c(out.data[_CRC_START:])
        out[:_CRC_START] = np.frombuffer(
            _HEADER_PREFIX.pack(base_offset, len(out) - LOG_OVERHEAD, -1, 2, crc), np.uint8)
        out.flags.writeable = False  # a finished batch
        return out.data
    parts[0] = parts[0][HEADER_SIZE:]
    if compression != CODEC_NONE:
        parts = [_compress(compression, parts[0] if len(parts) == 1 else b"".join(parts),
                           level=compression_level, magic=2)]
    crc = crc32c(rest)
    size = 0
    for part in parts:
        crc = crc32c(part, crc)
        size += len(part)
    prefix = _HEADER_PREFIX.pack(base_offset, HEADER_SIZE - LOG_OVERHEAD + size, -1, 2, crc)
    return b"".join((prefix, rest, *parts))
