"""A binary Arrow column as numpy views of its buffers, for the decoders that work across
every record at once (avro_vector, protobuf_vector): offsets widened to int64 so positions
past a payload can be computed without overflow, the data bytes, and the validity."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


@dataclass(frozen=True)
class BinaryParts:
    offsets: np.ndarray  # int64, len(column) + 1: payload i is data[offsets[i]:offsets[i + 1]]
    data: np.ndarray  # uint8
    valid: np.ndarray  # bool, len(column)


def binary_parts(payloads: pa.Array | pa.ChunkedArray) -> BinaryParts:
    """The views of ``payloads`` (any binary-like column; chunks combined, large binary and
    strings cast to binary). No copy of the data bytes."""
    if isinstance(payloads, pa.ChunkedArray):
        payloads = payloads.combine_chunks()
    if not pa.types.is_binary(payloads.type):
        payloads = payloads.cast(pa.binary())
    n = len(payloads)
    bufs = payloads.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32)[payloads.offset:payloads.offset + n + 1] \
        .astype(np.int64) if n else np.zeros(1, dtype=np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None \
        else np.zeros(0, dtype=np.uint8)
    valid = payloads.is_valid().to_numpy(zero_copy_only=False) if payloads.null_count \
        else np.ones(n, dtype=bool)
    return BinaryParts(offsets, data, valid)
