"""Zigzag varints of the v2 record format, read and written one at a time or for whole columns.

Record fields are varints (zigzag-encoded as in Protocol Buffers; Kafka's protocol guide,
https://kafka.apache.org/protocol#protocol_types, and the record format in the Kafka design
document, https://kafka.apache.org/documentation/#record). The column forms read or write the
varint at every position of an array with a few numpy operations, which is what keeps the
record codecs off a per-record Python loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Malformed(Exception):
    """Internal: a structural problem found by a helper that does not know the batch."""

    def __init__(self, reason: str, record: int = -1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.record = record


def read_varint(buf: Any, p: int, end: int) -> tuple[int, int]:
    """One zigzag varint (32-bit) at ``p``; used only for headers and rare long lengths."""
    u = 0
    shift = 0
    for _ in range(5):
        if p >= end:
            raise Malformed("varint runs past the end of its record")
        b = buf[p]
        p += 1
        u |= (b & 0x7F) << shift
        if b < 0x80:
            u &= 0xFFFFFFFF
            return (u >> 1) ^ -(u & 1), p
        shift += 7
    raise Malformed("varint longer than 5 bytes")


def _two_byte_tables() -> tuple[np.ndarray, np.ndarray]:
    """Value and size of the zigzag varint whose first two bytes, little-endian, are the
    index: 1- and 2-byte varints (values of up to 14 bits, so a varint and a varlong read
    the same); a size too large for any record marks 3+ bytes."""
    v = np.arange(65536, dtype=np.int64)
    b0, b1 = v & 0xFF, v >> 8
    u = np.where(b0 < 0x80, b0, (b0 & 0x7F) | (b1 << 7))
    size = np.where(b0 < 0x80, 1, np.where(b1 < 0x80, 2, 1 << 40))
    return (u >> 1) ^ -(u & 1), size.astype(np.int64)


_VALUE2, _SIZE2 = _two_byte_tables()


def read_varints(
    arr: np.ndarray, pos: np.ndarray, lim: np.ndarray, max_bytes: int, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints at every position of ``pos`` at once -> (int64 values, next positions).

    Each read must stay below ``lim`` (its record's end). ``max_bytes`` is 5 for varint
    (result wraps to 32 bits like Java) or 10 for varlong. Varints of one or two bytes (the
    usual lengths, offset and timestamp deltas) are read by table from their first two
    bytes; anything else (longer varints, reads past ``lim``, damaged data) goes through the
    general reader, which also says what is wrong.
    """
    if not len(pos):
        return np.zeros(0, np.int64), pos
    try:
        b = arr[pos]
        cont = b >= 0x80
        if not cont.any():
            u8 = b.astype(np.int64)
            after = pos + 1
            if not (after > lim).any():
                return (u8 >> 1) ^ -(u8 & 1), after
        else:
            idx = arr[pos + 1].astype(np.intp)
            idx <<= 8
            idx |= b
            after = pos + _SIZE2[idx]
            if not (after > lim).any():
                return _VALUE2[idx], after
    except IndexError:  # a position at or past the end of arr: the general reader says so
        pass
    return _read_varints(arr, pos, lim, max_bytes, what)


def _read_varints(
    arr: np.ndarray, pos: np.ndarray, lim: np.ndarray, max_bytes: int, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """``read_varints`` for any varint: the first byte is read for all positions,
    continuation bytes only for the positions that need them."""
    over = pos >= lim
    if over.any():
        raise Malformed(f"{what} lies past the end of its record", int(np.argmax(over)))
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
            raise Malformed(f"{what} varint runs past the end of its record",
                            int(idx[np.argmax(over)]))
        bk = arr[q]
        u[idx] |= (bk & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        size[idx] += 1
        idx = idx[bk >= 0x80]
        if not len(idx):
            break
    else:
        raise Malformed(f"{what} varint longer than {max_bytes} bytes", int(idx[0]))
    if max_bytes == 5:
        u &= np.uint64(0xFFFFFFFF)
    v = (u >> np.uint64(1)).astype(np.int64) ^ -((u & np.uint64(1)).astype(np.int64))
    return v, pos + size


def varint_sizes(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag-encoded values (uint64) and their varint sizes in bytes."""
    v = v.astype(np.int64, copy=False)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    size = np.ones(len(z), np.int64)
    top = int(z.max()) if len(z) else 0
    for k in range(1, 10):
        if top < 1 << (7 * k):
            break
        size += z >= np.uint64(1 << (7 * k))
    return z, size


def put_varints(out: np.ndarray, pos: np.ndarray, z: np.ndarray, size: np.ndarray) -> None:
    """Write zigzag values ``z`` as varints of ``size`` bytes at ``pos`` in ``out``."""
    top = int(size.max()) if len(size) else 0
    p, v = pos, z
    for k in range(top):
        if k == top - 1:  # the last byte of every varint still being written
            out[p] = v.astype(np.uint8)
            return
        more = v > 0x7F
        byte = (v & 0x7F).astype(np.uint8)
        byte |= more.view(np.uint8) << 7
        out[p] = byte
        idx = np.flatnonzero(more)
        p, v = p[idx] + 1, v[idx] >> 7


def varint_bytes(v: int) -> bytes:
    z = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)
