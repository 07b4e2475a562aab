"""Record data of Fetch responses decoded into columns, and record batches encoded from columns.

A fetch response carries records as a run of batches; Spark wants them as Arrow columns.
Decoding per record in Python would cap throughput at a few hundred thousand records per
second, so the decoder touches Python only once per record, in a tight loop that hops from
one record length to the next (the only inherently sequential step). Every field is then
read for all records at once with numpy (``_read_varints`` reads the varint at an array of
positions), and keys and values are gathered into Arrow buffers without per-record objects.

This module holds the RecordBatch format (magic 2), the dispatch between it and the legacy
message sets of ``legacy_records`` (magic 0/1: one response may hold both), and
read_committed filtering of aborted transactions.

Bytes come from the network: every length is checked against the bytes it claims before
anything is allocated from it, and any inconsistency raises :class:`CorruptRecordError` or
:class:`ProtocolError` naming the topic, partition and batch base offset.

Layout (61-byte header): baseOffset int64 @0, batchLength int32 @8, partitionLeaderEpoch
int32 @12, magic int8 @16, crc uint32 @17 (CRC-32C of [21, end)), attributes int16 @21,
lastOffsetDelta int32 @23, baseTimestamp int64 @27, maxTimestamp int64 @35, producerId int64
@43, producerEpoch int16 @51, baseSequence int32 @53, recordCount int32 @57, records @61.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from crc32c import crc32c

from .compression import (
    CODEC_NONE,
    DecompressionBombError,
    UnsupportedCodecError,
    codec_id,
    codec_name,
)
from .compression import compress as _compress
from .compression import decompress as _decompress
from .errors import CorruptRecordError, ProtocolError

__all__ = [
    "ATTR_CODEC_MASK",
    "ATTR_CONTROL",
    "ATTR_LOG_APPEND_TIME",
    "ATTR_TRANSACTIONAL",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "HEADER_SIZE",
    "DecodedRecords",
    "decode_record_batches",
    "encode_message_set",
    "next_batch_offset",
    "encode_record_batch",
]

HEADER_SIZE = 61
_LOG_OVERHEAD = 12  # baseOffset + batchLength: the part not counted by batchLength
_MAGIC_POS = 16
_CRC_START = 21
_MIN_BATCH_LENGTH = HEADER_SIZE - _LOG_OVERHEAD
_MIN_RECORD_BODY = 6  # attributes, timestampDelta, offsetDelta, keyLen, valueLen, headerCount
_MIN_RECORD_SIZE = 1 + _MIN_RECORD_BODY  # plus the length varint

ATTR_CODEC_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

# Largest records section one batch may decompress to. A broker caps a batch at
# message.max.bytes (1 MiB by default) *compressed*; 256 MiB leaves room for very
# compressible data while keeping a hostile batch from exhausting an executor.
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
_INT32_MAX = 2**31 - 1

_HAS_VIEWS = hasattr(pa, "binary_view")

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET_LENGTH = struct.Struct(">qi")
_HEADER_PREFIX = struct.Struct(">qiibI")  # up to and including the CRC
_HEADER_REST = struct.Struct(">hiqqqhii")  # attributes .. recordCount, covered by the CRC
assert _HEADER.size == HEADER_SIZE


@dataclass
class DecodedRecords:
    """Columns of the data records found in a fetch response partition."""

    offsets: np.ndarray  # int64
    timestamps: np.ndarray  # int64 ms; LogAppendTime batches: the batch maxTimestamp
    # int32: 0 CreateTime, 1 LogAppendTime, -1 none (magic 0 data, whose timestamps are -1),
    # the ids Java's TimestampType uses and Spark's kafka source shows.
    timestamp_types: np.ndarray
    keys: pa.BinaryArray  # pa.binary(), null where the key length is -1
    values: pa.BinaryArray
    # None when no record has headers (legacy messages never have any); else one entry per
    # record: None or [(key, value)].
    headers: list | None
    # baseOffset + lastOffsetDelta + 1 of the last complete batch (control, empty and aborted
    # batches count; for legacy messages: the message's offset + 1, or a magic 0 wrapper's last
    # inner offset + 1); None when the data held no complete batch.
    next_offset: int | None

    @property
    def num_records(self) -> int:
        return len(self.offsets)


class _Malformed(Exception):
    """Internal: a structural problem found by a helper that does not know the batch."""

    def __init__(self, reason: str, record: int = -1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.record = record


# ---------------------------------------------------------------------------------- varints


def _read_varint(buf: Any, p: int, end: int) -> tuple[int, int]:
    """One zigzag varint (32-bit) at ``p``; used only for headers and rare long lengths."""
    u = 0
    shift = 0
    for _ in range(5):
        if p >= end:
            raise _Malformed("varint runs past the end of its record")
        b = buf[p]
        p += 1
        u |= (b & 0x7F) << shift
        if b < 0x80:
            u &= 0xFFFFFFFF
            return (u >> 1) ^ -(u & 1), p
        shift += 7
    raise _Malformed("varint longer than 5 bytes")


def _build_scan_table() -> list[int | None]:
    """Bytes to skip for a record whose first two bytes, little-endian, are the index.

    The record length is a zigzag varint; with 1 or 2 bytes (records under 8 KiB) the two
    bytes at the record start determine varint size + length, so the scan loop needs one
    list lookup per record. None marks varints of 3+ bytes (the slow path).
    """
    v = np.arange(65536, dtype=np.int64)
    b0, b1 = v & 0xFF, v >> 8
    u = np.where(b0 < 0x80, b0, (b0 & 0x7F) | (b1 << 7))
    skip = np.where(b0 < 0x80, 1, 2) + ((u >> 1) ^ -(u & 1))
    table: list[int | None] = skip.tolist()
    for i in np.nonzero((b0 >= 0x80) & (b1 >= 0x80))[0].tolist():
        table[i] = None
    return table


_SCAN_TABLE = _build_scan_table()


def _scan_records(buf: Any, p: int, count: int, out: list[int]) -> int:
    """Append the position of each of ``count`` records; return the position after them.

    The one sequential step: a record's position is known only after the previous record's
    length. Nothing is validated here (a valid record is >= 7 bytes, so reading two bytes
    is safe); the vectorized pass re-reads every length and checks that the records tile
    the batch exactly.
    """
    append = out.append
    table = _SCAN_TABLE
    target = len(out) + count
    while len(out) < target:
        try:
            for _ in repeat(None, target - len(out)):
                append(p)
                p += table[buf[p] | (buf[p + 1] << 8)]
        except TypeError:  # None: a length varint of 3+ bytes (record of 8 KiB or more)
            length, p = _read_varint(buf, p, p + 5)
            p += length
    return p


def _read_varints(
    arr: np.ndarray, pos: np.ndarray, lim: np.ndarray, max_bytes: int, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints at every position of ``pos`` at once -> (int64 values, next positions).

    Each read must stay below ``lim`` (its record's end). The first byte is read for all
    positions; continuation bytes only for the (usually few) positions that need them.
    ``max_bytes`` is 5 for varint (result wraps to 32 bits like Java) or 10 for varlong.
    """
    if not len(pos):
        return np.zeros(0, np.int64), pos
    over = pos >= lim
    if over.any():
        raise _Malformed(f"{what} lies past the end of its record", int(np.argmax(over)))
    b = arr[pos]
    cont = b >= 0x80
    if not cont.any():
        u8 = b.astype(np.int64)
        return (u8 >> 1) ^ -(u8 & 1), pos + 1
    u = (b & 0x7F).astype(np.uint64)
    size = np.ones(len(pos), np.int64)
    idx = np.nonzero(cont)[0]
    for k in range(1, max_bytes):
        q = pos[idx] + k
        over = q >= lim[idx]
        if over.any():
            raise _Malformed(f"{what} varint runs past the end of its record",
                             int(idx[np.argmax(over)]))
        bk = arr[q]
        u[idx] |= (bk & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        size[idx] += 1
        idx = idx[bk >= 0x80]
        if not len(idx):
            break
    else:
        raise _Malformed(f"{what} varint longer than {max_bytes} bytes", int(idx[0]))
    if max_bytes == 5:
        u &= np.uint64(0xFFFFFFFF)
    v = (u >> np.uint64(1)).astype(np.int64) ^ -((u & np.uint64(1)).astype(np.int64))
    return v, pos + size


def _varint_sizes(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag-encoded values (uint64) and their varint sizes in bytes."""
    v = v.astype(np.int64, copy=False)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    size = np.ones(len(z), np.int64)
    for k in range(1, 10):
        ge = z >= np.uint64(1 << (7 * k))
        if not ge.any():
            break
        size += ge
    return z, size


def _put_varints(out: np.ndarray, pos: np.ndarray, z: np.ndarray, size: np.ndarray) -> None:
    """Write zigzag values ``z`` as varints of ``size`` bytes at ``pos`` in ``out``."""
    top = int(size.max()) if len(size) else 0
    for k in range(top):
        if k == 0:
            p, zk, sk = pos, z, size
        else:
            sel = size > k
            p, zk, sk = pos[sel], z[sel], size[sel]
        byte = ((zk >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        byte |= np.where(sk > k + 1, np.uint8(0x80), np.uint8(0))
        out[p + k] = byte


# ---------------------------------------------------------------------------------- spans


def _spans_to_binary(arr: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> pa.BinaryArray:
    """A pa.binary() array of ``arr[starts[i]:starts[i]+lens[i]]`` (null where lens is -1).

    No per-span work in Python: the spans become an Arrow binary_view array over ``arr``
    (16-byte views: length plus inline bytes when <= 12, else prefix and offset), which
    Arrow's C++ cast copies into a contiguous binary array. Spans of one common length take
    a cheaper path: one fancy-index of rows from a strided window over ``arr``.
    """
    n = len(starts)
    valid = lens >= 0
    nulls = n - int(np.count_nonzero(valid))
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    ln = np.maximum(lens, 0)
    total = int(ln.sum())
    if total > _INT32_MAX:
        raise _Malformed(f"{total} bytes of keys or values do not fit one Arrow binary column; "
                         "fetch fewer bytes per request")
    if total == 0 or (not nulls and int(ln.min()) == int(ln.max())):
        width = int(ln[0]) if n else 0
        offsets = np.arange(0, (n + 1) * width, width, np.int32) if width else \
            np.zeros(n + 1, np.int32)
        if width:
            rows = np.lib.stride_tricks.as_strided(
                arr, shape=(len(arr) - width + 1, width), strides=(1, 1), writeable=False)
            data = rows[starts].reshape(-1)
        else:
            data = np.zeros(0, np.uint8)
        return pa.Array.from_buffers(
            pa.binary(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
            null_count=nulls)
    if not _HAS_VIEWS:  # pyarrow < 16: gather through a flat byte index instead
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(ln, out=offsets[1:])
        nz = ln > 0
        idx = np.repeat(starts[nz] - offsets[:-1][nz], ln[nz])
        idx += np.arange(total, dtype=np.int64)
        return pa.Array.from_buffers(
            pa.binary(), n,
            [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(arr[idx])],
            null_count=nulls)
    if len(arr) < 16:
        arr = np.concatenate([arr, np.zeros(16, np.uint8)])
    words = np.ndarray(shape=(len(arr) - 3,), dtype="<u4", buffer=arr, strides=(1,))
    views = np.zeros((n, 4), "<u4")
    views[:, 0] = ln
    long_idx = np.nonzero(ln > 12)[0]
    if len(long_idx):
        ls = starts[long_idx]
        views[long_idx, 1] = words[ls]  # 4-byte prefix; buffer index 0 stays 0
        views[long_idx, 3] = ls
    short_idx = np.nonzero((ln <= 12) & (ln > 0))[0]
    if len(short_idx):
        ss = starts[short_idx]
        sl = ln[short_idx]
        last = len(arr) - 4
        for j in range(3):
            pj = ss + 4 * j
            c = np.minimum(pj, last)  # near the end of arr: read earlier, shift down
            shift = (np.minimum(pj - c, 3) * 8).astype(np.uint64)
            w = words[c].astype(np.uint64) >> shift
            nbytes = np.clip(sl - 4 * j, 0, 4).astype(np.uint64)
            keep = (np.uint64(1) << (nbytes * np.uint64(8))) - np.uint64(1)
            views[short_idx, 1 + j] = (w & keep).astype(np.uint32)
    view_array = pa.Array.from_buffers(
        pa.binary_view(), n, [validity, pa.py_buffer(views), pa.py_buffer(arr)],
        null_count=nulls)
    return view_array.cast(pa.binary())


_NO_SEPARATOR = pa.scalar(b"", pa.large_binary())


def _join_rows(pieces: Sequence[tuple[np.ndarray, np.ndarray]]) -> memoryview:
    """Row by row, the i-th span of every piece in order; all rows back to back.

    A piece is (lengths >= 0, its spans' bytes back to back). Arrow's element-wise binary
    join copies each span once in C++; a byte index per output byte, as numpy would need,
    costs several times more (it was the encoder's main cost).
    """
    n = len(pieces[0][0])
    arrays = []
    total = 0
    for lens, data in pieces:
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        total += int(offsets[-1])
        arrays.append(pa.Array.from_buffers(
            pa.large_binary(), n,
            [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))]))
    if total == 0:
        return memoryview(b"")
    joined = pc.binary_join_element_wise(*arrays, _NO_SEPARATOR)
    return memoryview(joined.buffers()[2])[:total]


def _varint_piece(z: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A ``_join_rows`` piece holding one varint per row."""
    start = np.zeros(len(size), np.int64)
    np.cumsum(size[:-1], out=start[1:])
    out = np.zeros(int(size.sum()), np.uint8)
    _put_varints(out, start, z, size)
    return size, out


# ---------------------------------------------------------------------------------- decode


@dataclass
class _Plan:
    """Batches whose records must be decoded, with their records section in ``src``."""

    base_offsets: list[int]
    base_ts: list[int]
    max_ts: list[int]
    ts_types: list[int]
    counts: list[int]
    region_starts: list[int]
    region_ends: list[int]


def _parse_headers(buf: Any, p: int, end: int, count: int) -> list[tuple[str, bytes | None]]:
    out: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        klen, p = _read_varint(buf, p, end)
        if klen < 0 or p + klen > end:
            raise _Malformed(f"invalid header key length {klen}")
        # Java decodes header keys leniently (malformed UTF-8 becomes U+FFFD); so do we.
        key = str(buf[p:p + klen], "utf-8", "replace")
        p += klen
        vlen, p = _read_varint(buf, p, end)
        if vlen < -1 or p + vlen > end:
            raise _Malformed(f"invalid header value length {vlen}")
        if vlen < 0:
            out.append((key, None))
        else:
            out.append((key, bytes(buf[p:p + vlen])))
            p += vlen
    if p != end:
        raise _Malformed(f"{end - p} unread bytes after the headers of a record")
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
    while n - pos >= _LOG_OVERHEAD:
        base, length = _OFFSET_LENGTH.unpack_from(view, pos)
        end = pos + _LOG_OVERHEAD + length
        if end > n or length <= _MAGIC_POS - _LOG_OVERHEAD:
            break
        if view[pos + _MAGIC_POS] != 2:
            return None
        if length < _MIN_BATCH_LENGTH:
            break
        after = base + _LAST_OFFSET_DELTA.unpack_from(view, pos + _LAST_OFFSET_DELTA_POS)[0] + 1
        pos = end
    return after


def _peek_magic(view: memoryview, pos: int, n: int, where: dict[str, Any]) -> int | None:
    """Magic byte of the entry at ``pos`` (batch or legacy message), None at a partial tail.

    Batches and legacy messages share their first 17 bytes' layout (offset int64, length
    int32, 4 bytes, magic int8), so one look tells which decoder the entry needs.
    """
    if n - pos < _LOG_OVERHEAD:
        return None
    base_offset, length = _OFFSET_LENGTH.unpack_from(view, pos)
    if length < 0:
        raise CorruptRecordError(f"negative batch length {length}", offset=base_offset, **where)
    if pos + _LOG_OVERHEAD + length > n:
        return None  # partial trailing entry: fetch again from next_offset
    if length < _MAGIC_POS + 1 - _LOG_OVERHEAD:
        raise CorruptRecordError(f"batch length {length} is too small to hold a magic byte",
                                 offset=base_offset, **where)
    magic = view[pos + _MAGIC_POS]
    if magic > 2:
        raise CorruptRecordError(f"unknown record batch magic {magic}", offset=base_offset,
                                 **where)
    return magic


class _AbortedTransactions:
    """READ_COMMITTED filtering, as the Java consumer does it (CompletedFetch).

    The broker lists aborted transactions as (producer id, first offset). Walking the batches
    in order, a producer becomes "aborted" once a batch reaches that first offset, and stays
    so until its ABORT control marker; its transactional data batches in between are
    dropped. Non-transactional batches of the same producer id are kept.
    """

    def __init__(self, aborted: Sequence[tuple[int, int]]) -> None:
        self._pending = sorted((int(first), int(pid)) for pid, first in aborted)
        self._next = 0
        self.active: set[int] = set()

    def advance(self, last_offset: int) -> None:
        """Open every aborted transaction that starts at or before ``last_offset``."""
        pending = self._pending
        while self._next < len(pending) and pending[self._next][0] <= last_offset:
            self.active.add(pending[self._next][1])
            self._next += 1


def _control_type(records: Any, count: int) -> int:
    """Control type (0 abort, 1 commit) from the key of a control batch's first record.

    Key = int16 version, int16 type. Like Java, a key shorter than 4 bytes or with a
    negative version is corrupt; -1 stands for "no record".
    """
    if count <= 0:
        return -1
    end = len(records)
    length, p = _read_varint(records, 0, end)
    end = min(end, p + length)
    p += 1  # attributes
    for _ in range(10):  # timestampDelta: varlong
        if p >= end:
            raise _Malformed("control record is truncated")
        p += 1
        if records[p - 1] < 0x80:
            break
    else:
        raise _Malformed("control record timestamp varint is longer than 10 bytes")
    _, p = _read_varint(records, p, end)  # offsetDelta
    key_len, p = _read_varint(records, p, end)
    if key_len < 4 or p + key_len > end:
        raise _Malformed(f"control record key of {key_len} bytes (needs 4: version, type)")
    version, ctype = struct.unpack_from(">hh", records, p)
    if version < 0:
        raise _Malformed(f"invalid control record version {version}")
    return ctype


def decode_record_batches(
    data: bytes | memoryview,
    *,
    start_offset: int,
    end_offset: int | None = None,
    check_crcs: bool = True,
    topic: str | None = None,
    partition: int | None = None,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    aborted_transactions: Sequence[tuple[int, int]] | None = None,
) -> DecodedRecords:
    """Decode the records field of a Fetch response partition into columns.

    Keeps data records with ``start_offset <= offset < end_offset``; skips control batches;
    ignores a partial trailing batch or message (the broker cuts the last one at its byte
    limit). Record batches (magic 2) and legacy message sets (magic 0/1, see
    ``legacy_records``) may follow each other in one response: each entry is decoded by
    its own format, in order.

    ``aborted_transactions``: None reads uncommitted; a list of (producer id, first offset),
    as the Fetch response gives it for read_committed, drops aborted transactional data.
    """
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1 or view.format != "B":
        view = view.cast("B")
    # Index the original object when it is bytes (slightly faster), else the view.
    buf: Any = data if isinstance(data, bytes) else view
    n = len(view)
    where = {"topic": topic, "partition": partition}
    aborted = _AbortedTransactions(aborted_transactions) if aborted_transactions is not None \
        else None

    parts: list[DecodedRecords] = []
    next_offset: int | None = None
    pos = 0
    while True:
        magic = _peek_magic(view, pos, n, where)
        if magic is None:
            break
        if magic == 2:
            part, pos, next_offset = _decode_batches(
                view, buf, pos, next_offset, start_offset, end_offset, check_crcs,
                max_decompressed_size, aborted, where)
        else:
            from .legacy_records import decode_message_sets  # legacy_records builds on this module

            part, pos, next_offset = decode_message_sets(
                view, pos, next_offset, start_offset=start_offset, end_offset=end_offset,
                check_crcs=check_crcs, max_decompressed_size=max_decompressed_size,
                where=where)
        if part is not None and part.num_records:
            parts.append(part)
    return _concat(parts, next_offset, where)


def _concat(parts: list[DecodedRecords], next_offset: int | None,
            where: dict[str, Any]) -> DecodedRecords:
    """One result from the runs of batches / legacy messages of a mixed response."""
    if not parts:
        return _empty(next_offset)
    if len(parts) == 1:
        parts[0].next_offset = next_offset
        return parts[0]
    headers: list | None = None
    if any(p.headers is not None for p in parts):
        headers = []
        for p in parts:
            headers.extend(p.headers if p.headers is not None else [None] * p.num_records)
    try:
        keys = pa.concat_arrays([p.keys for p in parts])
        values = pa.concat_arrays([p.values for p in parts])
    except (pa.ArrowInvalid, pa.ArrowCapacityError) as exc:
        raise ProtocolError(f"the records of one fetch do not fit one Arrow binary column "
                            f"({exc}); lower the fetch size", **where) from None
    return DecodedRecords(
        offsets=np.concatenate([p.offsets for p in parts]),
        timestamps=np.concatenate([p.timestamps for p in parts]),
        timestamp_types=np.concatenate([p.timestamp_types for p in parts]),
        keys=keys, values=values, headers=headers, next_offset=next_offset)


def _decode_batches(
    view: memoryview, buf: Any, pos: int, next_offset: int | None, start_offset: int,
    end_offset: int | None, check_crcs: bool, max_decompressed_size: int,
    aborted: _AbortedTransactions | None, where: dict[str, Any],
) -> tuple[DecodedRecords | None, int, int | None]:
    """Decode the run of record batches starting at ``pos``; stop before a legacy message.

    Returns (records or None, position after the run, next offset).
    """
    n = len(view)
    plan = _Plan([], [], [], [], [], [], [])
    pieces: list[Any] = []  # records sections, in batch order (only used with compression)
    compressed = False
    positions: list[int] = []
    while _peek_magic(view, pos, n, where) == 2:
        base_offset, batch_length = _OFFSET_LENGTH.unpack_from(view, pos)
        end = pos + _LOG_OVERHEAD + batch_length
        if batch_length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch length {batch_length} is smaller than the batch "
                                     "header", offset=base_offset, **where)
        (_, _, _, _, crc, attrs, last_delta, base_ts, max_ts, producer_id, _, _,
         count) = _HEADER.unpack_from(view, pos)
        if end_offset is not None and base_offset >= end_offset:
            # Past the requested range: nothing here is returned, so a damaged batch the reader
            # would never use must not fail it (its header is unverified: keep next_offset
            # moving forward whatever lastOffsetDelta says).
            next_offset = base_offset + max(last_delta, 0) + 1
            pos = end
            continue
        if check_crcs:
            actual = crc32c(view[pos + _CRC_START:end])
            if actual != crc:
                raise CorruptRecordError(
                    f"CRC-32C mismatch in the batch at base offset {base_offset} (stored "
                    f"{crc:#010x}, computed {actual:#010x})", offset=base_offset, **where)
        last_offset = base_offset + last_delta
        next_offset = last_offset + 1
        rstart, rend = pos + HEADER_SIZE, end
        pos = end
        if count < 0:
            raise CorruptRecordError(f"negative record count {count}", offset=base_offset,
                                     **where)
        codec = attrs & ATTR_CODEC_MASK
        if aborted is not None and producer_id != -1:
            aborted.advance(last_offset)
            if attrs & ATTR_CONTROL:
                if producer_id in aborted.active:
                    records = view[rstart:rend] if codec == CODEC_NONE else _decompress_batch(
                        codec, view[rstart:rend], max_decompressed_size, base_offset, where)
                    try:
                        ctype = _control_type(records, count)
                    except (_Malformed, struct.error) as exc:
                        reason = exc.reason if isinstance(exc, _Malformed) else \
                            "control record is truncated"
                        raise CorruptRecordError(reason, offset=base_offset, **where) from None
                    if ctype == 0:  # ABORT: the producer's transaction ends here
                        aborted.active.discard(producer_id)
            elif attrs & ATTR_TRANSACTIONAL and producer_id in aborted.active:
                continue  # an aborted transaction's data
        if (count == 0 or attrs & ATTR_CONTROL or last_offset < start_offset
                or (end_offset is not None and base_offset >= end_offset)):
            continue
        if codec != CODEC_NONE:
            blob = _decompress_batch(codec, view[rstart:rend], max_decompressed_size,
                                     base_offset, where)
            compressed = True
            pieces.append(blob)
        else:
            pieces.append(view[rstart:rend])
            blob = None
        if count > (rend - rstart if blob is None else len(blob)) // _MIN_RECORD_SIZE:
            raise CorruptRecordError(
                f"record count {count} is impossible for "
                f"{rend - rstart if blob is None else len(blob)} bytes of records",
                offset=base_offset, **where)
        plan.base_offsets.append(base_offset)
        plan.base_ts.append(base_ts)
        plan.max_ts.append(max_ts)
        plan.ts_types.append(1 if attrs & ATTR_LOG_APPEND_TIME else 0)
        plan.counts.append(count)
        plan.region_starts.append(rstart)
        plan.region_ends.append(rend)

    if not plan.counts:
        return None, pos, next_offset

    if compressed:
        # One source buffer for all records so the vectorized pass runs once.
        src: Any = b"".join(pieces)
        if len(src) > _INT32_MAX:
            raise ProtocolError(
                f"the records of one fetch decompress to {len(src)} bytes, more than one "
                "Arrow binary column holds (2 GiB); lower the fetch size", **where)
        rbuf: Any = src
        p = 0
        for i, piece in enumerate(pieces):
            plan.region_starts[i] = p
            p += len(piece)
            plan.region_ends[i] = p
    else:
        src = view
        rbuf = buf
    del pieces

    # The sequential step: find where each record starts.
    for i, count in enumerate(plan.counts):
        try:
            p = _scan_records(rbuf, plan.region_starts[i], count, positions)
        except (IndexError, _Malformed):
            p = -1
        if p != plan.region_ends[i]:
            raise CorruptRecordError(
                f"the {count} records declared by the batch do not fill its "
                f"{plan.region_ends[i] - plan.region_starts[i]} bytes of records exactly",
                offset=plan.base_offsets[i], **where)

    arr = np.frombuffer(src, dtype=np.uint8)
    counts = np.array(plan.counts, np.int64)
    try:
        decoded = _decode_columns(arr, rbuf, np.array(positions, np.int64), counts, plan,
                                  start_offset, end_offset, next_offset)
    except _Malformed as exc:
        batch = 0
        if exc.record >= 0:
            batch = int(np.searchsorted(np.cumsum(counts), exc.record, side="right"))
        raise CorruptRecordError(exc.reason, offset=plan.base_offsets[batch], **where) from None
    return decoded, pos, next_offset


def _decompress_batch(codec: int, data: memoryview, max_size: int, offset: int,
                      where: dict[str, Any], magic: int = 2) -> bytes | bytearray:
    """Decompress a batch's records (or a legacy wrapper's message set), errors located."""
    try:
        return _decompress(codec, data, max_size, magic=magic)
    except UnsupportedCodecError as exc:
        raise UnsupportedCodecError(exc.reason, offset=offset, **where) from None
    except DecompressionBombError as exc:
        raise ProtocolError(
            f"{exc.reason}; raise max_decompressed_size if such batches are expected",
            offset=offset, **where) from None
    except ProtocolError as exc:
        raise CorruptRecordError(
            f"cannot decompress {codec_name(codec)} records: {exc.reason}",
            offset=offset, **where) from None


def _empty(next_offset: int | None) -> DecodedRecords:
    return DecodedRecords(
        offsets=np.zeros(0, np.int64), timestamps=np.zeros(0, np.int64),
        timestamp_types=np.zeros(0, np.int32), keys=pa.array([], pa.binary()),
        values=pa.array([], pa.binary()), headers=None, next_offset=next_offset)


def _decode_columns(arr: np.ndarray, buf: Any, q: np.ndarray, counts: np.ndarray, plan: _Plan,
                    start_offset: int, end_offset: int | None,
                    next_offset: int | None) -> DecodedRecords:
    """Decode every field of the records at positions ``q`` with whole-array operations."""
    nrec = len(q)
    last_idx = np.cumsum(counts) - 1
    region_end = np.repeat(np.array(plan.region_ends, np.int64), counts)

    length, s = _read_varints(arr, q, region_end, 5, "record length")
    rec_end = s + length
    # Records must tile each batch: each ends where the next starts, the last at the end.
    expected = np.empty(nrec, np.int64)
    expected[:-1] = q[1:]
    expected[last_idx] = np.array(plan.region_ends, np.int64)
    bad = (rec_end != expected) | (length < _MIN_RECORD_BODY)
    if bad.any():
        i = int(np.argmax(bad))
        raise _Malformed(f"invalid record length {int(length[i])}", i)

    p = s + 1  # attributes: unused by Kafka so far
    ts_delta, p = _read_varints(arr, p, rec_end, 10, "timestamp delta")
    off_delta, p = _read_varints(arr, p, rec_end, 5, "offset delta")
    key_len, p = _read_varints(arr, p, rec_end, 5, "key length")
    key_start = p
    p = p + np.maximum(key_len, 0)
    val_len, p = _read_varints(arr, p, rec_end, 5, "value length")
    val_start = p
    p = p + np.maximum(val_len, 0)
    hdr_count, p = _read_varints(arr, p, rec_end, 5, "header count")
    bad = (key_len < -1) | (val_len < -1) | (hdr_count < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise _Malformed(f"invalid key length {int(key_len[i])}, value length "
                         f"{int(val_len[i])} or header count {int(hdr_count[i])}", i)
    has_hdr = hdr_count > 0
    bad = (p != rec_end) & ~has_hdr
    if bad.any():
        i = int(np.argmax(bad))
        raise _Malformed(f"record of {int(length[i])} bytes does not match its fields", i)

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
            raise _Malformed(f"header count {int(hdr_count[i])} is impossible for "
                             f"{int(rec_end[i] - p[i])} bytes", i)
        kept_pos = np.cumsum(keep) - 1
        headers = [None] * int(np.count_nonzero(keep))
        found = False
        for i, hp, he, hc in zip(hdr_idx.tolist(), p[hdr_idx].tolist(),
                                 rec_end[hdr_idx].tolist(), hdr_count[hdr_idx].tolist(),
                                 strict=True):
            try:
                parsed = _parse_headers(buf, hp, he, hc)
            except _Malformed as exc:
                raise _Malformed(exc.reason, i) from None
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
        keys=_spans_to_binary(arr, key_start, key_len),
        values=_spans_to_binary(arr, val_start, val_len),
        headers=headers,
        next_offset=next_offset,
    )


# ---------------------------------------------------------------------------------- encode


def _binary_column(col: Any, what: str) -> tuple[int, np.ndarray, np.ndarray]:
    """(n, lengths int64 with -1 for null, the non-null values concatenated as uint8)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if not isinstance(col, pa.Array):
        col = pa.array(list(col), type=pa.binary())
    if col.type in (pa.binary(), pa.string()):
        off_dtype: type[np.integer] = np.int32
    elif col.type in (pa.large_binary(), pa.large_string()):
        off_dtype = np.int64
    else:
        raise TypeError(f"{what} must be binary or string, not {col.type}")
    n = len(col)
    bufs = col.buffers()
    if n == 0:
        return n, np.zeros(0, np.int64), np.zeros(0, np.uint8)
    offs = np.frombuffer(bufs[1], dtype=off_dtype)[col.offset:col.offset + n + 1]
    offs = offs.astype(np.int64)
    data = (np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None
            else np.zeros(0, np.uint8))
    lens = offs[1:] - offs[:-1]
    if col.null_count:
        valid = col.is_valid().to_numpy(zero_copy_only=False)
        lens = np.where(valid, lens, 0)
        if lens.sum() != offs[-1] - offs[0]:
            # Null slots may carry bytes (Arrow allows it): keep only the valid spans.
            lens = np.where(valid, lens, -1)
            packed = _spans_to_binary(data, offs[:-1], lens)
            return n, lens, np.frombuffer(packed.buffers()[2], np.uint8)
        lens = np.where(valid, lens, -1)
    return n, lens, data[offs[0]:offs[-1]]


def _encode_headers(hdrs: Sequence[tuple[str, bytes | None]] | None) -> bytes:
    """Header count varint plus the headers of one record."""
    if not hdrs:
        return b"\x00"
    parts = [_varint_bytes(len(hdrs))]
    for key, value in hdrs:
        kb = _header_bytes(key, "key")
        parts.append(_varint_bytes(len(kb)))
        parts.append(kb)
        if value is None:
            parts.append(b"\x01")  # zigzag(-1)
        else:
            vb = _header_bytes(value, "value")
            parts.append(_varint_bytes(len(vb)))
            parts.append(vb)
    return b"".join(parts)


def _header_bytes(x: object, what: str) -> bytes:
    # Explicit types: bytes(5) would silently become five zero bytes.
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    raise TypeError(f"header {what} must be str or bytes, not {type(x).__name__}")


def _varint_bytes(v: int) -> bytes:
    z = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _timestamp_column(timestamps: Any, n: int) -> np.ndarray:
    """int64 ms per record from None (now), one int, or a sequence/array of n."""
    if timestamps is None:
        return np.full(n, int(time.time() * 1000), np.int64)
    if isinstance(timestamps, (int, np.integer)):
        return np.full(n, int(timestamps), np.int64)
    ts = np.asarray(timestamps, dtype=np.int64)
    if ts.shape != (n,):
        raise ValueError(f"{ts.shape} timestamps for {n} records")
    return ts


def _key_value_columns(keys: Any, values: Any) -> tuple[int, np.ndarray, np.ndarray,
                                                        np.ndarray, np.ndarray]:
    """(n, key lengths, key bytes, value lengths, value bytes); lengths -1 for null."""
    n, v_len, v_data = _binary_column(values, "values")
    if n == 0:
        raise ValueError("a record batch needs at least one record")
    if keys is None:
        return n, np.full(n, -1, np.int64), v_data[:0], v_len, v_data
    nk, k_len, k_data = _binary_column(keys, "keys")
    if nk != n:
        raise ValueError(f"{nk} keys for {n} values")
    return n, k_len, k_data, v_len, v_data


def encode_record_batch(
    keys: Any,
    values: Any,
    *,
    timestamps: Any = None,
    base_offset: int = 0,
    compression: int | str = 0,
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
    ``compression`` is a Kafka codec id or name (see ``compression.CODEC_NAMES``).
    """
    compression = codec_id(compression)
    n, k_len, k_data, v_len, v_data = _key_value_columns(keys, values)

    ts = _timestamp_column(timestamps, n)
    base_ts = int(ts[0])
    max_ts = int(ts.max())

    if headers is not None:
        if len(headers) != n:
            raise ValueError(f"{len(headers)} header lists for {n} records")
        hdr_idx = [i for i, h in enumerate(headers) if h]
        blobs = [_encode_headers(headers[i]) for i in hdr_idx]
    else:
        hdr_idx, blobs = [], []
    ts_z, ts_sz = _varint_sizes(ts - base_ts)
    od_z, od_sz = _varint_sizes(np.arange(n, dtype=np.int64))
    kl_z, kl_sz = _varint_sizes(k_len)
    vl_z, vl_sz = _varint_sizes(v_len)
    k_bytes = np.maximum(k_len, 0)
    v_bytes = np.maximum(v_len, 0)
    if hdr_idx:
        hdr_len = np.ones(n, np.int64)  # header count 0 = one zero byte
        hdr_len[hdr_idx] = [len(b) for b in blobs]
        hdr_rows = [b"\0"] * n
        for i, b in zip(hdr_idx, blobs, strict=True):
            hdr_rows[i] = b
        hdr_data = np.frombuffer(b"".join(hdr_rows), np.uint8)
    else:
        hdr_len, hdr_data = np.ones(n, np.int64), np.zeros(n, np.uint8)
    body = 1 + ts_sz + od_sz + kl_sz + k_bytes + vl_sz + v_bytes + hdr_len
    bl_z, bl_sz = _varint_sizes(body)

    # Per record: [length, attributes 0, timestampDelta, offsetDelta, keyLength] key
    # [valueLength] value [headers]: varints written for all records at once, then joined.
    lead = bl_sz + 1 + ts_sz + od_sz + kl_sz
    start = np.zeros(n, np.int64)
    np.cumsum(lead[:-1], out=start[1:])
    lead_data = np.zeros(int(start[-1] + lead[-1]), np.uint8)  # zero = attributes byte
    _put_varints(lead_data, start, bl_z, bl_sz)
    p = start + bl_sz + 1
    _put_varints(lead_data, p, ts_z, ts_sz)
    p += ts_sz
    _put_varints(lead_data, p, od_z, od_sz)
    p += od_sz
    _put_varints(lead_data, p, kl_z, kl_sz)
    records: bytes | memoryview = _join_rows([
        (lead, lead_data), (k_bytes, k_data), _varint_piece(vl_z, vl_sz), (v_bytes, v_data),
        (hdr_len, hdr_data)])

    if compression != CODEC_NONE:
        records = _compress(compression, records, magic=2)
    attrs = (compression & ATTR_CODEC_MASK) | (ATTR_TRANSACTIONAL if transactional else 0)
    rest = _HEADER_REST.pack(attrs, n - 1, base_ts, max_ts, producer_id, producer_epoch,
                             base_sequence, n)
    crc = crc32c(records, crc32c(rest))
    # partitionLeaderEpoch -1 (unknown), as the Java producer writes it.
    prefix = _HEADER_PREFIX.pack(base_offset, HEADER_SIZE - _LOG_OVERHEAD + len(records), -1, 2,
                                 crc)
    return b"".join((prefix, rest, records))


def encode_message_set(
    keys: Any,
    values: Any,
    *,
    magic: int,
    timestamps: Any = None,
    compression: int | str = 0,
    base_offset: int = 0,
) -> bytes:
    """Encode a legacy MessageSet (magic 0 or 1) for brokers older than Kafka 0.11.

    Produce v0-1 carry magic 0, Produce v2 magic 1. Inputs are as for
    :func:`encode_record_batch` (``timestamps`` are ignored for magic 0, which has none).
    Uncompressed: message ``i`` at offset ``base_offset + i``. Compressed: one wrapper
    message at ``base_offset + n - 1`` holding the whole set, as the Java producer writes it
    (see ``legacy_records``).
    """
    from .legacy_records import encode_message_set as encode  # legacy_records builds on this

    return encode(keys, values, magic=magic, timestamps=timestamps, compression=compression,
                  base_offset=base_offset)

