"""Choose partitions for a column of keys, compatible with the Java client's default.

Keyed rows: ``(murmur2(key) & 0x7fffffff) % partitions`` (librdkafka calls this
murmur2_random). Rows without a key carry no placement promise, so each call spreads them
over all partitions in contiguous runs from a random start: every partition gets a share and
each produces one large batch rather than many small ones.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

from ..protocol.murmur2 import partitions_for_keys


def assign_partitions(
    keys: pa.Array | None, num_rows: int, num_partitions: int, rng: random.Random | None = None
) -> np.ndarray:
    """int32 partition per row."""
    if num_partitions <= 0:
        raise ValueError("a topic has at least one partition")
    if keys is None or keys.null_count == len(keys):
        out = np.empty(num_rows, dtype=np.int32)
        null_rows = np.arange(num_rows)
    else:
        out = partitions_for_keys(keys, num_partitions).astype(np.int32, copy=False)
        null_rows = np.flatnonzero(out < 0)
    n = len(null_rows)
    if n:
        start = (rng or random).randrange(num_partitions)
        spread = (start + (np.arange(n, dtype=np.int64) * num_partitions) // n) % num_partitions
        out[null_rows] = spread.astype(np.int32)
    return out
