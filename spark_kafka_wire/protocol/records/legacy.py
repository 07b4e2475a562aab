"""Legacy message sets (message format v0 and v1, Kafka before 0.11): decode and encode.

Brokers still return data written in these formats long ago, and brokers older than 0.11
accept nothing else. Layout (the Kafka design document's "Old Message Format",
https://kafka.apache.org/documentation/#messageset)::

    MessageSet => [Offset int64, MessageSize int32, Message]      (no count prefix)
    Message v0 => Crc uint32, Magic int8 = 0, Attributes int8, Key bytes, Value bytes
    Message v1 => Crc uint32, Magic int8 = 1, Attributes int8, Timestamp int64, Key bytes,
                  Value bytes

``bytes`` is an int32 length (-1 null) and its data; Crc is CRC-32 (zlib) over Magic..end;
Attributes bits 0-2 are the codec and bit 3 (v1) means LogAppendTime. Magic sits at byte
16 of a message as it does in a RecordBatch, which is how one response can mix both.

A compressed message (a "wrapper") carries a whole inner message set, compressed, as its
value. Magic 0 inner messages carry absolute offsets; magic 1 ones (KIP-31) carry relative
offsets 0..n-1 and the wrapper carries the absolute offset of the last inner message. The
inner messages of a magic 1 wrapper with LogAppendTime take the wrapper's timestamp.

Like the RecordBatch decoder, only boundary finding (and the CRC per message) runs per
message in Python; offsets, timestamps, keys and values are then read for all messages at
once with numpy and gathered into Arrow columns. The formats before Kafka 0.8 (no offset
field, messages addressed by byte position) never reach a 0.8+ client; Kafka 0.7's own
protocol and messages are ``protocol/kafka07``.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

from spark_kafka_wire.protocol.compression import (
    CODEC_NONE,
    CODEC_ZSTD,
    UnsupportedCodecError,
    codec_id,
)
from spark_kafka_wire.protocol.compression import compress as _compress
from spark_kafka_wire.protocol.errors import CorruptRecordError, ProtocolError
from spark_kafka_wire.protocol.limits import MAX_COLUMN_BYTES
from spark_kafka_wire.protocol.records.columns import (
    DecodedRecords,
    join_rows,
    key_value_columns,
    spans_to_binary,
    timestamp_column,
)
from spark_kafka_wire.protocol.records.entries import (
    LOG_OVERHEAD,
    MAGIC_POS,
    DecompressionBudget,
    decompress_records,
    peek_magic,
)

__all__ = ["decode_message_sets", "encode_message_set"]

_CRC_POS = 12
_ATTR_POS = 17
_ATTR_CODEC_MASK = 0x07
_ATTR_LOG_APPEND_TIME = 0x08
# crc + magic + attributes (+ timestamp) + key length + value length
_MIN_MESSAGE_SIZE = (14, 22)
_ENTRY = struct.Struct(">qiI")  # offset, message size, crc
_INT32 = struct.Struct(">i")
_NO_TIMESTAMP = -1
_NO_TIMESTAMP_TYPE = -1


class _Group:
    """Consecutive messages read from one buffer: the fetch data or a decompressed set."""

    __slots__ = ("source", "positions", "end", "offset_base", "wrapper_ts", "wrapper_ts_type")

    def __init__(self, source: Any, offset_base: int = 0, wrapper_ts: int = 0,
                 wrapper_ts_type: int | None = None) -> None:
        self.source = source
        self.positions: list[int] = []
        self.end = -1  # end of the last message in source; -1: not yet known
        self.offset_base = offset_base  # added to stored offsets (magic 1 inner messages)
        self.wrapper_ts = wrapper_ts
        self.wrapper_ts_type = wrapper_ts_type  # None: top-level messages (own attributes)


def _message_size_error(size: int, magic: int) -> str:
    return (f"message size {size} is smaller than the {_MIN_MESSAGE_SIZE[magic]} bytes a "
            f"magic {magic} message needs")


def decode_message_sets(
    view: memoryview, pos: int, next_offset: int | None, *, start_offset: int,
    end_offset: int | None, check_crcs: bool, budget: DecompressionBudget,
    where: dict[str, Any],
) -> tuple[DecodedRecords | None, int, int | None]:
    """Decode the run of legacy messages at ``pos`` in ``view``; stop before a v2 batch.

    Returns (records or None, position after the run, next offset). Messages known to lie
    outside ``[start_offset, end_offset)`` are neither CRC-checked nor decompressed: they are
    not returned, so damage there must not fail the read (as for batches). A wrapper's offset
    is its last inner offset (KIP-31 for magic 1; brokers write magic 0 wrappers that way
    too), so a wrapper below the start is skipped unopened; one is known to lie past the end
    only when an earlier entry already reached it (offsets only grow).
    """
    n = len(view)
    groups: list[_Group] = []
    positions: list[int] | None = None  # of the current group of uncompressed messages
    unpack = _ENTRY.unpack_from
    crc32 = zlib.crc32
    min_v0, min_v1 = _MIN_MESSAGE_SIZE
    stop = end_offset if end_offset is not None else 2**63
    # The per-message loop: keep it lean (locals, one unpack, one CRC call).
    while True:
        if n - pos < MAGIC_POS + 1:
            peek_magic(view, pos, n, where)  # raises for a malformed tail, else partial
            break
        offset, size, crc = unpack(view, pos)
        end = pos + LOG_OVERHEAD + size
        magic = view[pos + MAGIC_POS]
        if size < 5 or end > n or magic > 1:
            peek_magic(view, pos, n, where)  # raises unless partial or a v2 batch
            break
        if size < (min_v1 if magic else min_v0):
            raise CorruptRecordError(_message_size_error(size, magic), offset=offset, **where)
        codec = view[pos + _ATTR_POS] & _ATTR_CODEC_MASK
        if (offset < start_offset or (codec == 0 and offset >= stop)
                or (next_offset is not None and next_offset >= stop)):
            next_offset = offset + 1  # outside the range (offsets only grow)
            pos = end
            continue
        if check_crcs and crc32(view[pos + MAGIC_POS:end]) != crc:
            raise CorruptRecordError(
                f"CRC-32 mismatch in the message at offset {offset} (stored {crc:#010x}, "
                f"computed {crc32(view[pos + MAGIC_POS:end]):#010x})", offset=offset,
                **where)
        if codec == 0:
            if positions is None:
                group = _Group(view)
                groups.append(group)
                positions = group.positions
            positions.append(pos)
            next_offset = offset + 1
        else:
            positions = None
            group, last_inner = _unwrap(view, pos, end, offset, magic, codec, check_crcs,
                                        budget, where)
            groups.append(group)
            next_offset = offset + 1 if magic == 1 else last_inner + 1
        pos = end
    if not groups:
        return None, pos, next_offset
    return _decode_groups(groups, view, start_offset, end_offset, where), pos, next_offset


def _unwrap(view: memoryview, pos: int, end: int, offset: int, magic: int, codec: int,
            check_crcs: bool, budget: DecompressionBudget,
            where: dict[str, Any]) -> tuple[_Group, int]:
    """Decompress a wrapper message and find its inner messages -> (group, last offset)."""
    attrs = view[pos + _ATTR_POS]
    kpos = pos + 18 + (8 if magic else 0)
    (klen,) = _INT32.unpack_from(view, kpos)
    vpos = kpos + 4 + max(klen, 0)
    if klen < -1 or vpos + 4 > end:
        raise CorruptRecordError(f"invalid key length {klen} in the compressed message",
                                 offset=offset, **where)
    (vlen,) = _INT32.unpack_from(view, vpos)
    vpos += 4
    if vlen < 0 or vpos + vlen != end:
        raise CorruptRecordError(
            f"invalid value length {vlen} in the compressed message of {end - pos} bytes"
            + (" (a compressed message needs a value)" if vlen == -1 else ""),
            offset=offset, **where)
    blob = decompress_records(codec, view[vpos:end], budget, offset, where, magic=magic)
    inner = memoryview(blob)
    if magic == 1 and attrs & _ATTR_LOG_APPEND_TIME:
        wrapper_ts_type = 1
        (wrapper_ts,) = struct.unpack_from(">q", view, pos + 18)
    else:
        wrapper_ts_type, wrapper_ts = (0 if magic else _NO_TIMESTAMP_TYPE), 0
    group = _Group(inner, 0, wrapper_ts, wrapper_ts_type)
    bn = len(inner)
    p = 0
    last = 0
    positions = group.positions
    unpack = _ENTRY.unpack_from
    crc32 = zlib.crc32
    min_size = _MIN_MESSAGE_SIZE[magic]
    while p < bn:
        if bn - p < LOG_OVERHEAD + 5:
            raise CorruptRecordError("truncated message inside the compressed message",
                                     offset=offset, **where)
        last, size, crc = unpack(inner, p)
        q = p + LOG_OVERHEAD + size
        if (q > bn or size < min_size or inner[p + MAGIC_POS] != magic
                or inner[p + _ATTR_POS] & _ATTR_CODEC_MASK):
            raise CorruptRecordError(_inner_error(inner, p, size, q, magic), offset=offset,
                                     **where)
        if check_crcs and crc32(inner[p + MAGIC_POS:q]) != crc:
            raise CorruptRecordError(
                f"CRC-32 mismatch in an inner message (stored {crc:#010x}, computed "
                f"{crc32(inner[p + MAGIC_POS:q]):#010x}) of the compressed message",
                offset=offset, **where)
        positions.append(p)
        p = q
    if not group.positions:
        raise CorruptRecordError("compressed message holds no messages", offset=offset,
                                 **where)
    group.end = bn
    if magic == 1:
        group.offset_base = offset - last  # relative inner offsets, wrapper = last
        last = offset
    return group, last


def _inner_error(inner: memoryview, p: int, size: int, q: int, magic: int) -> str:
    """Why the inner message at ``p`` of a decompressed message set is invalid."""
    if q > len(inner):
        return "truncated message inside the compressed message"
    if inner[p + MAGIC_POS] != magic:
        return (f"message of magic {inner[p + MAGIC_POS]} inside a compressed message of "
                f"magic {magic}")
    if size < _MIN_MESSAGE_SIZE[magic]:
        return _message_size_error(size, magic)
    return "compressed message nested inside a compressed message"


def _be(arr: np.ndarray, pos: np.ndarray, dtype: str) -> np.ndarray:
    """Big-endian integers of ``dtype`` (e.g. '>i4') at every position, as int64."""
    width = np.dtype(dtype).itemsize
    rows = np.lib.stride_tricks.as_strided(arr, shape=(len(arr) - width + 1, width),
                                           strides=(1, 1), writeable=False)
    return rows[pos].view(dtype).reshape(-1).astype(np.int64)


def _decode_groups(groups: list[_Group], view: memoryview, start_offset: int,
                   end_offset: int | None, where: dict[str, Any]) -> DecodedRecords | None:
    """Read every field of every message of ``groups`` at once."""
    if all(g.source is view for g in groups):
        src: Any = view
        pos = np.array([p for g in groups for p in g.positions], np.int64)
    else:
        # One source buffer (fetch bytes and decompressed sets) for one vectorized pass.
        pieces = []
        chunks = []
        base = 0
        for g in groups:
            lo = g.positions[0]
            if g.end < 0:
                last = g.positions[-1]
                g.end = last + LOG_OVERHEAD + _INT32.unpack_from(g.source, last + 8)[0]
            pieces.append(g.source[lo:g.end])
            chunks.append(np.array(g.positions, np.int64) + (base - lo))
            base += g.end - lo
        if base > MAX_COLUMN_BYTES:
            raise ProtocolError(
                f"the records of one fetch decompress to {base} bytes, more than one Arrow "
                "binary column holds (2 GiB); lower the fetch size", **where)
        src = b"".join(pieces)
        pos = np.concatenate(chunks)
    counts = np.array([len(g.positions) for g in groups], np.int64)
    arr = np.frombuffer(src, np.uint8)

    offsets = _be(arr, pos, ">i8") + np.repeat(
        np.array([g.offset_base for g in groups], np.int64), counts)
    end = pos + LOG_OVERHEAD + _be(arr, pos + 8, ">i4")
    magic = arr[pos + MAGIC_POS].astype(np.int64)
    attrs = arr[pos + _ATTR_POS]
    # Sizes were checked against each message's magic, so its fixed fields are in bounds.
    kpos = pos + 18 + 8 * magic
    klen = _be(arr, kpos, ">i4")
    vpos = kpos + 4 + np.maximum(klen, 0)
    bad = (klen < -1) | (vpos + 4 > end)
    if bad.any():
        i = int(np.argmax(bad))
        raise CorruptRecordError(f"invalid key length {int(klen[i])} for a message of "
                                 f"{int(end[i] - pos[i])} bytes", offset=int(offsets[i]),
                                 **where)
    vlen = _be(arr, vpos, ">i4")
    vpos += 4
    bad = (vlen < -1) | (vpos + np.maximum(vlen, 0) != end)
    if bad.any():
        i = int(np.argmax(bad))
        raise CorruptRecordError(f"invalid value length {int(vlen[i])} for a message of "
                                 f"{int(end[i] - pos[i])} bytes", offset=int(offsets[i]),
                                 **where)

    has_ts = magic == 1
    timestamps = np.full(len(pos), _NO_TIMESTAMP, np.int64)
    if has_ts.any():
        timestamps[has_ts] = _be(arr, pos[has_ts] + 18, ">i8")
    ts_types = np.where(has_ts, (attrs & _ATTR_LOG_APPEND_TIME).astype(np.int32) >> 3,
                        _NO_TIMESTAMP_TYPE).astype(np.int32)
    wrapped = [g.wrapper_ts_type is not None for g in groups]
    if any(wrapped):
        # Inner messages take the wrapper's timestamp type, and its timestamp when that
        # type is LogAppendTime (Java's LegacyRecord with a wrapper's timestamp type).
        inner = np.repeat(np.array(wrapped), counts)
        w_type = np.repeat(np.array([-2 if g.wrapper_ts_type is None else g.wrapper_ts_type
                                     for g in groups], np.int32), counts)
        w_ts = np.repeat(np.array([g.wrapper_ts for g in groups], np.int64), counts)
        ts_types = np.where(inner, w_type, ts_types).astype(np.int32)
        timestamps = np.where(inner & (w_type == 1), w_ts, timestamps)

    keep = offsets >= start_offset
    if end_offset is not None:
        keep &= offsets < end_offset
    if not keep.all():
        offsets, timestamps, ts_types = offsets[keep], timestamps[keep], ts_types[keep]
        kpos, klen, vpos, vlen = kpos[keep], klen[keep], vpos[keep], vlen[keep]
    if not len(offsets):
        return None
    return DecodedRecords(
        offsets=offsets, timestamps=timestamps, timestamp_types=ts_types,
        keys=spans_to_binary(arr, kpos + 4, klen), values=spans_to_binary(arr, vpos, vlen),
        headers=None, next_offset=None)


# ---------------------------------------------------------------------------------- encode


def _put_be(out: np.ndarray, pos: np.ndarray, values: np.ndarray, dtype: str) -> None:
    """Write ``values`` as big-endian ``dtype`` at every position of ``pos``."""
    width = np.dtype(dtype).itemsize
    raw = np.ascontiguousarray(values.astype(dtype)).view(np.uint8).reshape(-1, width)
    out[pos[:, None] + np.arange(width)] = raw


def _build_messages(offsets: np.ndarray, attrs: np.ndarray, ts: np.ndarray | None,
                    k_len: np.ndarray, k_data: np.ndarray, v_len: np.ndarray,
                    v_data: np.ndarray, magic: int) -> bytes:
    """Messages of one magic from columns, CRCs included."""
    head = 18 + (8 if magic else 0)  # offset, size, crc, magic, attributes (, timestamp)
    k_bytes = np.maximum(k_len, 0)
    v_bytes = np.maximum(v_len, 0)
    total = head + 4 + k_bytes + 4 + v_bytes
    n = len(total)
    # Fixed-width parts as rows of a table, then joined with the keys and values row by row.
    lead = np.zeros((n, head + 4), np.uint8)
    rows = np.arange(n, dtype=np.int64) * (head + 4)
    flat = lead.reshape(-1)
    _put_be(flat, rows, offsets, ">i8")
    _put_be(flat, rows + 8, total - LOG_OVERHEAD, ">i4")
    lead[:, MAGIC_POS] = magic
    lead[:, _ATTR_POS] = attrs
    if magic:
        assert ts is not None  # magic 1 messages carry a timestamp
        _put_be(flat, rows + 18, ts, ">i8")
    _put_be(flat, rows + head, k_len, ">i4")
    v_len_be = np.ascontiguousarray(v_len.astype(">i4")).view(np.uint8)
    out = np.frombuffer(join_rows([
        (np.full(n, head + 4), flat), (k_bytes, k_data), (np.full(n, 4), v_len_be),
        (v_bytes, v_data)]), np.uint8).copy()
    start = np.zeros(n, np.int64)
    np.cumsum(total[:-1], out=start[1:])
    mv = memoryview(out)
    crcs = [zlib.crc32(mv[a:b]) for a, b in zip((start + MAGIC_POS).tolist(),
                                                  (start + total).tolist(), strict=True)]
    _put_be(out, start + _CRC_POS, np.array(crcs, np.uint32), ">u4")
    return out.tobytes()


def encode_message_set(
    keys: Any,
    values: Any,
    *,
    magic: int,
    timestamps: Any = None,
    compression: int | str = 0,
    base_offset: int = 0,
    compression_level: int | None = None,
) -> bytes:
    """Encode a legacy MessageSet (magic 0 or 1) for brokers older than Kafka 0.11.

    Produce v0-1 carry magic 0, Produce v2 magic 1. Inputs are as for
    :func:`~spark_kafka_wire.protocol.records.batch.encode_record_batch` (``timestamps`` are
    ignored for magic 0, which has none). Uncompressed: message ``i`` at offset
    ``base_offset + i``. Compressed sets follow the Java producer: inner messages at offsets
    0..n-1 (relative for magic 1, absolute from ``base_offset`` for magic 0), one wrapper at
    ``base_offset + n - 1`` whose magic 1 timestamp is the largest inner one. Brokers assign
    the real offsets.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy message sets have magic 0 or 1, not {magic}")
    compression = codec_id(compression)
    if compression == CODEC_ZSTD:
        raise UnsupportedCodecError(
            "zstd compression needs the v2 record format (Kafka 0.11+ brokers)")
    n, k_len, k_data, v_len, v_data = key_value_columns(keys, values)
    ts = timestamp_column(timestamps, n) if magic else None
    rel = np.arange(n, dtype=np.int64)
    zero = np.zeros(n, np.uint8)
    if compression == CODEC_NONE:
        return _build_messages(base_offset + rel, zero, ts, k_len, k_data, v_len, v_data,
                               magic)
    inner = _build_messages(rel if magic else base_offset + rel, zero, ts, k_len, k_data,
                            v_len, v_data, magic)
    value = np.frombuffer(_compress(compression, inner, level=compression_level, magic=magic), np.uint8)
    wrapper_ts = np.array([ts.max()], np.int64) if ts is not None else None
    return _build_messages(np.array([base_offset + n - 1], np.int64),
                           np.array([compression], np.uint8), wrapper_ts,
                           np.array([-1], np.int64), value[:0],
                           np.array([len(value)], np.int64), value, magic)
