"""Record columns: the decoder's output, and the gathers between byte spans and Arrow columns.

Decoders find where every key and value lies in the fetched bytes; :func:`spans_to_binary`
turns those spans into an Arrow binary column without a Python step per record. Encoders get
Arrow (or list) columns; :func:`key_value_columns` takes their lengths and bytes apart and
:func:`join_rows` joins per-record pieces back into one buffer, also in C++.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_kafka_wire.protocol.limits import MAX_COLUMN_BYTES
from spark_kafka_wire.protocol.records.varint import Malformed

_HAS_VIEWS = hasattr(pa, "binary_view")
# Spans of one length up to this many bytes in all are gathered by numpy's fancy index; more
# go through Arrow's view cast, whose output comes from Arrow's memory pool instead of a fresh
# numpy allocation: a compressed fetch of 1 MiB decompresses to tens of MB, where fresh pages
# cost more than the copy (measured: 4.3 against 6.0 GB/s at 40 MB, 13.6 against 11.9 at 10 MB).
_STRIDED_MAX = 16 << 20


def join_pooled(pieces: Sequence[Any]) -> pa.Buffer:
    """The byte buffers ``pieces`` back to back in one buffer from Arrow's memory pool.

    The decompressed record sections of a fetch are joined so that the vectorized decode runs
    once. zstd decodes each section into the pool (compression.py); joining them there too
    keeps a fetch's tens of MB out of malloc, whose fresh pages cost more than the copy: a
    fetch of zstd records of 1 KiB values decoded at 0.81-0.85M rows/s with ``b"".join`` and
    1.41M with both in the pool (CPU time, one process). Sections that malloc allocated (the
    other codecs' bytes) stay with ``b"".join``: copied into the pool they decoded slower
    (lz4, 1 KiB values: 1.45-1.57M rows/s against 0.81-0.87M).
    """
    out = pa.allocate_buffer(sum(len(piece) for piece in pieces))
    target = np.frombuffer(out, np.uint8)
    at = 0
    for piece in pieces:
        size = len(piece)
        target[at:at + size] = np.frombuffer(piece, np.uint8)
        at += size
    return out


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

    def filter(self, keep: np.ndarray) -> DecodedRecords:
        """The rows where the boolean mask ``keep`` is true, in order; ``next_offset`` unchanged.

        Whole-column operations (numpy, Arrow's filter kernel): read_committed drops the rows
        of aborted transactions from a decoded chunk this way, without a Python step per row
        (only the per-row header lists, already Python objects, are picked in Python).
        """
        if len(keep) != self.num_records:
            raise ValueError(f"a mask of {len(keep)} rows for {self.num_records} records")
        headers = self.headers
        if headers is not None:
            headers = [headers[i] for i in np.flatnonzero(keep).tolist()]
            if not any(h is not None for h in headers):
                headers = None
        mask = pa.array(keep, pa.bool_())
        return DecodedRecords(
            offsets=self.offsets[keep], timestamps=self.timestamps[keep],
            timestamp_types=self.timestamp_types[keep], keys=self.keys.filter(mask),
            values=self.values.filter(mask), headers=headers, next_offset=self.next_offset)


def spans_to_binary(arr: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> pa.BinaryArray:
    """A pa.binary() array of ``arr[starts[i]:starts[i]+lens[i]]`` (null where lens is -1).

    No per-span work in Python: the spans become an Arrow binary_view array over ``arr``
    (16-byte views: length plus inline bytes when <= 12, else prefix and offset), which
    Arrow's C++ cast copies into a contiguous binary array. Spans of one common length, up to
    ``_STRIDED_MAX`` bytes in all, take a cheaper path: one fancy-index of rows from a strided
    window over ``arr``.
    """
    n = len(starts)
    lo, hi = (int(lens.min()), int(lens.max())) if n else (0, 0)
    if lo >= 0:  # no nulls (the usual case: two passes over the lengths, or three)
        nulls, validity, ln = 0, None, lens
        total = hi * n if lo == hi else int(lens.sum())
    else:
        valid = lens >= 0
        nulls = n - int(np.count_nonzero(valid))
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        ln = np.maximum(lens, 0)
        total = int(ln.sum())
    if total > MAX_COLUMN_BYTES:
        raise Malformed(f"{total} bytes of keys or values do not fit one Arrow binary column; "
                        "fetch fewer bytes per request")
    if total == 0 or (not nulls and lo == hi and (total <= _STRIDED_MAX or not _HAS_VIEWS)):
        width = int(ln[0]) if n else 0
        offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32) if width else \
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


@functools.cache
def _no_separator() -> pa.Scalar:
    # Made on first use, not at import: pyarrow imports pandas (when installed) the first time
    # it converts a Python object, which would add pandas' import time to every process that
    # imports the decoders (Spark workers, the CLI) and never encodes.
    return pa.scalar(b"", pa.large_binary())


def join_rows(pieces: Sequence[tuple[np.ndarray, np.ndarray]]) -> memoryview:
    """Row by row, the i-th span of every piece in order; all rows back to back.

    A piece is (lengths >= 0, its spans' bytes back to back). Arrow's element-wise binary
    join copies each span once in C++; a byte index per output byte, as numpy would need,
    costs several times more.
    """
    n = len(pieces[0][0])
    joined = join_row_segments(pieces, [0, n])
    return memoryview(joined[0]) if joined else memoryview(b"")


def join_row_segments(pieces: Sequence[tuple[np.ndarray, Any]],
                      bounds: Sequence[int]) -> list[memoryview]:
    """``join_rows`` for rows cut into segments at ``bounds`` (row numbers, first 0, last n):
    one buffer per segment with any bytes, in order; back to back they are ``join_rows``.

    A piece's bytes are either back to back for all rows, or a list with those of each
    segment (key and value columns that arrived in several Arrow chunks are joined from the
    chunks, never concatenated first: that would be one more copy of every record).
    """
    out: list[memoryview] = []
    cuts: list[np.ndarray] = []
    for lens, _ in pieces:
        offsets = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        cuts.append(offsets)
    for s, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        arrays = []
        total = 0
        for (_, data), offsets in zip(pieces, cuts, strict=True):
            offs = offsets[lo:hi + 1]
            base, size = int(offs[0]), int(offs[-1] - offs[0])
            if base:
                offs = offs - base
            # This segment's own bytes, or its part of the bytes of all rows.
            part = data[s] if isinstance(data, list) else data[base:base + size]
            total += size
            arrays.append(pa.Array.from_buffers(
                pa.large_binary(), hi - lo,
                [None, pa.py_buffer(np.ascontiguousarray(offs)),
                 pa.py_buffer(np.ascontiguousarray(part))]))
        if total:
            joined = pc.binary_join_element_wise(*arrays, _no_separator())
            out.append(memoryview(joined.buffers()[2])[:total])
    return out


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
            packed = spans_to_binary(data, offs[:-1], lens)
            return n, lens, np.frombuffer(packed.buffers()[2], np.uint8)
        lens = np.where(valid, lens, -1)
    return n, lens, data[offs[0]:offs[-1]]


def timestamp_column(timestamps: Any, n: int) -> np.ndarray:
    """int64 ms per record from None (now), one int, or a sequence/array of n."""
    if timestamps is None:
        return np.full(n, int(time.time() * 1000), np.int64)
    if isinstance(timestamps, (int, np.integer)):
        return np.full(n, int(timestamps), np.int64)
    ts = np.asarray(timestamps, dtype=np.int64)
    if ts.shape != (n,):
        raise ValueError(f"{ts.shape} timestamps for {n} records")
    return ts


def key_value_columns(keys: Any, values: Any) -> tuple[int, np.ndarray, np.ndarray,
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


def _segments(col: Any) -> list[Any]:
    if isinstance(col, pa.ChunkedArray):
        return [c for c in col.chunks if len(c)] or [col.combine_chunks()]
    return [col]


def key_value_parts(keys: Any, values: Any) -> tuple[int, np.ndarray, list[np.ndarray],
                                                      np.ndarray, list[np.ndarray], list[int]]:
    """``key_value_columns`` without concatenating Arrow chunks: (n, key lengths, key bytes
    per segment, value lengths, value bytes per segment, segment bounds as row numbers).
    A segment is a run of rows within one chunk of the keys and one of the values."""
    if not isinstance(values, pa.ChunkedArray) and not isinstance(keys, pa.ChunkedArray):
        n, k_len, k_data, v_len, v_data = key_value_columns(keys, values)
        return n, k_len, [k_data], v_len, [v_data], [0, n]
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(list(values), type=pa.binary())
    if keys is not None and not isinstance(keys, (pa.Array, pa.ChunkedArray)):
        keys = pa.array(list(keys), type=pa.binary())
    if keys is not None and len(keys) != len(values):
        raise ValueError(f"{len(keys)} keys for {len(values)} values")
    v_chunks = _segments(values)
    cuts = {0}
    for chunks in (v_chunks, _segments(keys) if keys is not None else []):
        at = 0
        for c in chunks:
            at += len(c)
            cuts.add(at)
    bounds = sorted(cuts)
    n = bounds[-1]
    if n == 0:
        raise ValueError("a record batch needs at least one record")
    k_lens, k_datas, v_lens, v_datas = [], [], [], []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        _, k_len, k_data, v_len, v_data = key_value_columns(
            None if keys is None else _one_chunk(keys.slice(lo, hi - lo)),
            _one_chunk(values.slice(lo, hi - lo)))
        k_lens.append(k_len)
        k_datas.append(k_data)
        v_lens.append(v_len)
        v_datas.append(v_data)
    return n, np.concatenate(k_lens), k_datas, np.concatenate(v_lens), v_datas, bounds


def _one_chunk(col: Any) -> Any:
    """The one non-empty chunk a slice within one chunk of a ChunkedArray holds."""
    if isinstance(col, pa.ChunkedArray):
        chunks = [c for c in col.chunks if len(c)]
        return chunks[0] if len(chunks) == 1 else col.combine_chunks()
    return col
