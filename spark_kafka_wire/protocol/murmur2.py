"""MurmurHash2 exactly as Java's ``org.apache.kafka.common.utils.Utils.murmur2``.

Records written by this project must land on the same partition as records with the same key
written by the Java client (and librdkafka's ``murmur2_random``), otherwise key-ordered
consumers break. The column form hashes a whole Arrow key column with numpy: a Spark batch
has millions of keys and a Python loop per key would dominate the write path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from spark_kafka_wire.protocol.ordering import stable_order
from spark_kafka_wire.protocol.primitives import INT32_MAX

__all__ = ["murmur2", "murmur2_array", "partition_for_key", "partitions_for_keys"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """The signed 32-bit murmur2 of ``data`` (Java ``Utils.murmur2``)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length & ~3
    m = _M
    for i in range(0, n4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & _MASK
        k ^= k >> _R
        k = (k * m) & _MASK
        h = ((h * m) & _MASK) ^ k
    rem = length & 3
    # Java's switch falls through from case 3 to case 1; bytes are read with & 0xff.
    if rem == 3:
        h ^= data[n4 + 2] << 16
    if rem >= 2:
        h ^= data[n4 + 1] << 8
    if rem >= 1:
        h ^= data[n4]
        h = (h * m) & _MASK
    h ^= h >> 13
    h = (h * m) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The Java client's default partition for a non-null key."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return (murmur2(key) & INT32_MAX) % num_partitions


_BINARY_LIKE = (pa.binary(), pa.string())
_LARGE_BINARY_LIKE = (pa.large_binary(), pa.large_string())


def _arrow_parts(keys: Any) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(array, int64 offsets of length n+1, uint8 data) for a binary-like column, zero-copy."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if not isinstance(keys, pa.Array):
        keys = pa.array(keys, type=pa.binary())
    if keys.type in _BINARY_LIKE:
        off_type: type[np.integer] = np.int32
    elif keys.type in _LARGE_BINARY_LIKE:
        off_type = np.int64
    else:
        raise TypeError(f"keys must be a binary or string Arrow array, not {keys.type}")
    n = len(keys)
    bufs = keys.buffers()
    if n == 0 or bufs[1] is None:
        return keys, np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    offsets = np.frombuffer(bufs[1], dtype=off_type)[keys.offset:keys.offset + n + 1]
    # Only this slice's bytes, offsets rebased to them: a slice of a large column (a batch
    # split by topic, a window of a table) costs its own size, not its parent's.
    first, last = int(offsets[0]), int(offsets[-1])
    data = (np.frombuffer(bufs[2], dtype=np.uint8)[first:last] if bufs[2] is not None
            else np.zeros(0, dtype=np.uint8))
    return keys, offsets.astype(np.int64) - first, data


def key_spans(keys: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
    """(keys, starts, lengths, data) of a binary/string column for byte-wise hashing.

    Null slots may carry any span; they are given an empty one so that hashing reads nothing
    out of bounds and hashes them as the empty key.
    """
    keys, offsets, data = _arrow_parts(keys)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    if keys.null_count:
        nulls = keys.is_null().to_numpy(zero_copy_only=False)
        lengths = np.where(nulls, 0, lengths)
        starts = np.where(nulls, 0, starts)
    return keys, starts, lengths, data


def murmur2_array(keys: pa.BinaryArray | pa.LargeBinaryArray | pa.StringArray) -> np.ndarray:
    """Vectorized :func:`murmur2` over an Arrow column; int32, unspecified for null keys.

    The hash is a sequential recurrence over a key's 4-byte words, so it is vectorized across
    keys: keys are ordered by word count (longest first) and word ``j`` updates the prefix of
    keys that still have a word ``j``, a cheap slice instead of a mask.
    """
    keys, starts, lengths, data = key_spans(keys)
    n = len(keys)
    m = np.uint32(_M)
    h = (np.uint32(_SEED) ^ lengths.astype(np.uint32)).astype(np.uint32)
    if n == 0:
        return h.view(np.int32)

    # Pad so 4-byte reads at any tail position stay inside the array.
    padded = np.zeros((len(data) + 3) // 4 * 4 + 4, dtype=np.uint8)
    padded[: len(data)] = data
    if (starts & 3).any():
        # A little-endian uint32 at every byte position (overlapping, unaligned view).
        words_at = np.ndarray(shape=(len(padded) - 3,), dtype="<u4", buffer=padded,
                              strides=(1,))
        step = 4
    else:
        # Every key starts at a multiple of 4 (keys of 4, 8, 12... bytes, as ids often are):
        # the words are those of an aligned array, a much cheaper gather.
        words_at = padded.view("<u4")
        starts = starts >> 2
        step = 1

    nwords = lengths >> 2
    max_words = int(nwords.max())
    if max_words:
        same = int(nwords.min()) == max_words  # keys of one length: no ordering needed
        order = None if same else stable_order(-nwords)
        s_starts = starts if order is None else starts[order]
        s_h = h if order is None else h[order]
        # active[j] = how many keys (a prefix in `order`) have more than j words.
        if order is None:
            active = np.full(max_words, n, np.int64)
        else:
            s_nwords = nwords[order]
            active = np.searchsorted(-s_nwords, -(np.arange(max_words) + 1), side="right")
        for j in range(max_words):
            c = int(active[j])
            k = words_at[s_starts[:c] + step * j].astype(np.uint32)
            k *= m
            k ^= k >> np.uint32(_R)
            k *= m
            hj = s_h[:c]
            hj *= m
            hj ^= k
        if order is not None:
            h[order] = s_h

    rem = lengths & 3
    tail = starts + nwords * step
    has_tail = rem > 0
    if has_tail.any():
        idx = np.nonzero(has_tail)[0]
        t = tail[idx]
        r = rem[idx]
        w = words_at[t]
        # Keep only the `r` tail bytes of the 4-byte read (Java reads them with & 0xff).
        keep = (np.uint32(1) << (r.astype(np.uint32) * np.uint32(8))) - np.uint32(1)
        x = (h[idx] ^ (w & keep)) * m
        h[idx] = x
    h ^= h >> np.uint32(13)
    h *= m
    h ^= h >> np.uint32(15)
    return h.view(np.int32)


def partitions_for_keys(
    keys: pa.BinaryArray | pa.LargeBinaryArray | pa.StringArray, num_partitions: int
) -> np.ndarray:
    """Java-compatible partition per key as int32; -1 where the key is null."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    if not isinstance(keys, (pa.Array, pa.ChunkedArray)):
        keys = pa.array(keys, type=pa.binary())
    h = murmur2_array(keys)
    parts = ((h.view(np.uint32) & np.uint32(INT32_MAX)) % np.uint32(num_partitions))
    parts = parts.astype(np.int32)
    if keys.null_count:
        nulls = keys.is_null()
        if isinstance(nulls, pa.ChunkedArray):
            nulls = nulls.combine_chunks()
        parts[nulls.to_numpy(zero_copy_only=False)] = -1
    return parts
