"""Choose partitions for a column of keys, with librdkafka's partitioners (``kafka.partitioner``).

The default, ``murmur2_random``, is the Java client's default: keyed rows go to
``(murmur2(key) & 0x7fffffff) % partitions`` and rows without a key carry no placement promise.
The others mirror librdkafka (measured against librdkafka 2.16 with the same keys):

=====================  =============================  ===================  ==================
partitioner            non-empty key                  empty key (b"")      null key
=====================  =============================  ===================  ==================
``murmur2_random``     murmur2 & 0x7fffffff % n       as a non-empty key   spread
``murmur2``            murmur2 & 0x7fffffff % n       as a non-empty key   hashed as b""
``consistent_random``  CRC-32 % n                     spread               spread
``consistent``         CRC-32 % n                     CRC-32(b"") = 0 → 0  hashed as b"" → 0
``fnv1a_random``       |FNV-1a| % n                   as a non-empty key   spread
``fnv1a``              |FNV-1a| % n                   as a non-empty key   hashed as b""
``random``             spread                         spread               spread
=====================  =============================  ===================  ==================

CRC-32 is zlib's (what librdkafka's ``rd_crc32`` computes), taken modulo n as an unsigned
number. FNV-1a is the 32-bit variant, of which librdkafka takes the absolute value as a signed
int32 (to match Sarama's default partitioner; -2^31 stays as it is) before the modulo. "Spread" is our reading of "random": each call spreads
those rows over all partitions in contiguous runs from a random start, so every partition gets
a share and each produces one large batch rather than many small ones (librdkafka and Java
stick to one random partition for a while, which places rows no more predictably).

Every hash runs over a whole Arrow key column with numpy (see ``murmur2.py``): a Spark batch
holds many thousands of keys and a Python step per key would dominate the write path.
"""

from __future__ import annotations

import random
import zlib

import numpy as np
import pyarrow as pa

from spark_kafka_wire.client.defaults import DEFAULT_PARTITIONER, PARTITIONERS
from spark_kafka_wire.protocol.murmur2 import key_spans, murmur2_array
from spark_kafka_wire.protocol.ordering import stable_order
from spark_kafka_wire.protocol.primitives import INT32_MAX

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def _crc_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0xEDB88320), table >> 1)
    return table.astype(np.uint32)


_CRC_TABLE = _crc_table()
# Below this many keys still being hashed, finishing them one by one is cheaper than numpy.
_VECTOR_MIN = 64


def _bytewise_hash(keys: pa.Array, kind: str) -> np.ndarray:
    """uint32 CRC-32 or FNV-1a of every key (nulls hashed as b""), vectorized across keys.

    Both hashes consume one byte at a time, so keys are ordered by length (longest first) and
    byte ``j`` updates the prefix of keys that still have a byte ``j``. The few longest keys
    are finished one by one once fewer than ``_VECTOR_MIN`` remain.
    """
    keys, starts, lengths, data = key_spans(keys)
    n = len(keys)
    init = 0xFFFFFFFF if kind == "crc32" else _FNV_OFFSET
    h = np.full(n, init, dtype=np.uint32)
    if n and int(lengths.max()) > 0:
        order = stable_order(-lengths)
        s_starts, s_len, s_h = starts[order], lengths[order], h[order]
        # active[j]: how many keys (a prefix in `order`) have more than j bytes
        max_len = int(s_len[0])
        active = np.searchsorted(-s_len, -(np.arange(max_len) + 1), side="right")
        prime = np.uint32(_FNV_PRIME)
        j = 0
        while j < max_len and int(active[j]) >= _VECTOR_MIN:
            c = int(active[j])
            b = data[s_starts[:c] + j].astype(np.uint32)
            hj = s_h[:c]
            if kind == "crc32":
                s_h[:c] = _CRC_TABLE[(hj ^ b) & np.uint32(0xFF)] ^ (hj >> np.uint32(8))
            else:
                s_h[:c] = (hj ^ b) * prime
            j += 1
        if j < max_len:
            for i in range(int(active[j])):
                rest = data[s_starts[i] + j: s_starts[i] + s_len[i]].tobytes()
                s_h[i] = _finish_one(int(s_h[i]), rest, kind)
        h[order] = s_h
    if kind == "crc32":
        h ^= np.uint32(0xFFFFFFFF)
    return h


def _finish_one(state: int, rest: bytes, kind: str) -> int:
    if kind == "crc32":
        # zlib continues from a finished CRC; our state is the register before the final xor
        return zlib.crc32(rest, state ^ 0xFFFFFFFF) ^ 0xFFFFFFFF
    for byte in rest:
        state = ((state ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return state


def crc32_array(keys: pa.Array) -> np.ndarray:
    """zlib CRC-32 of every key as uint32 (null keys as b"")."""
    return _bytewise_hash(keys, "crc32")


def fnv1a_array(keys: pa.Array) -> np.ndarray:
    """32-bit FNV-1a of every key as uint32 (null keys as b"")."""
    return _bytewise_hash(keys, "fnv1a")


def _spread(out: np.ndarray, rows: np.ndarray, num_partitions: int, rng) -> None:
    n = len(rows)
    if n:
        start = (rng or random).randrange(num_partitions)
        spread = (start + (np.arange(n, dtype=np.int64) * num_partitions) // n) % num_partitions
        out[rows] = spread.astype(np.int32)


def assign_partitions(
    keys: pa.Array | None,
    num_rows: int,
    num_partitions: int,
    rng: random.Random | None = None,
    partitioner: str = DEFAULT_PARTITIONER,
) -> np.ndarray:
    """int32 partition per row (``keys=None``: every key is null)."""
    if num_partitions <= 0:
        raise ValueError("a topic has at least one partition")
    if partitioner not in PARTITIONERS:
        raise ValueError(f"unknown partitioner {partitioner!r}; one of {', '.join(PARTITIONERS)}")
    out = np.empty(num_rows, dtype=np.int32)
    if partitioner == "random":
        _spread(out, np.arange(num_rows), num_partitions, rng)
        return out
    if keys is None and partitioner.endswith("_random"):
        _spread(out, np.arange(num_rows), num_partitions, rng)
        return out
    if keys is None:
        keys = pa.nulls(num_rows, pa.binary())
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    n = np.uint32(num_partitions)
    if partitioner.startswith("murmur2"):
        hashed = (murmur2_array(keys).view(np.uint32) & np.uint32(INT32_MAX)) % n
    elif partitioner.startswith("consistent"):
        hashed = crc32_array(keys) % n
    else:
        signed = fnv1a_array(keys).view(np.int32)
        hashed = np.where(signed < 0, -signed, signed).view(np.uint32) % n  # -(-2^31) wraps
    out[:] = hashed.astype(np.int32)
    if partitioner.endswith("_random"):
        random_rows = keys.is_null().to_numpy(zero_copy_only=False)
        if partitioner == "consistent_random":  # librdkafka: keylen == 0, null or empty
            lengths = _key_lengths(keys)
            random_rows = random_rows | (lengths == 0)
        _spread(out, np.flatnonzero(random_rows), num_partitions, rng)
    return out


def _key_lengths(keys: pa.Array) -> np.ndarray:
    """Byte length of every key (0 for a null key)."""
    return key_spans(keys)[2]
