"""Log entries: what record batches (magic 2) and legacy messages (magic 0/1) share.

Both start with offset int64, length int32 (the bytes after these 12), 4 bytes (a batch's
partitionLeaderEpoch, a message's CRC) and the magic byte at 16, so one look at an entry tells
which decoder it needs, and one response may mix both formats (the Kafka design document:
https://kafka.apache.org/documentation/#recordbatch and #messageset).
"""

from __future__ import annotations

import struct
from typing import Any

from spark_kafka_wire.protocol.compression import (
    DecompressionBombError,
    UnsupportedCodecError,
    codec_name,
)
from spark_kafka_wire.protocol.compression import decompress as _decompress
from spark_kafka_wire.protocol.errors import CorruptRecordError, ProtocolError

LOG_OVERHEAD = 12  # offset + length: the part an entry's length does not count
MAGIC_POS = 16
OFFSET_LENGTH = struct.Struct(">qi")

# Largest records section one batch may decompress to. A broker caps a batch at
# message.max.bytes (1 MiB by default) *compressed*; 256 MiB leaves room for very
# compressible data while keeping a hostile batch from exhausting an executor.
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024


def peek_magic(view: memoryview, pos: int, n: int, where: dict[str, Any]) -> int | None:
    """Magic byte of the entry at ``pos`` (batch or legacy message), None at a partial tail.

    Batches and legacy messages share their first 17 bytes' layout (offset int64, length
    int32, 4 bytes, magic int8), so one look tells which decoder the entry needs.
    """
    if n - pos < LOG_OVERHEAD:
        return None
    base_offset, length = OFFSET_LENGTH.unpack_from(view, pos)
    if length < 0:
        raise CorruptRecordError(f"negative batch length {length}", offset=base_offset, **where)
    if pos + LOG_OVERHEAD + length > n:
        return None  # partial trailing entry: fetch again from next_offset
    if length < MAGIC_POS + 1 - LOG_OVERHEAD:
        raise CorruptRecordError(f"batch length {length} is too small to hold a magic byte",
                                 offset=base_offset, **where)
    magic = view[pos + MAGIC_POS]
    if magic > 2:
        raise CorruptRecordError(f"unknown record batch magic {magic}", offset=base_offset,
                                 **where)
    return magic


def decompress_records(codec: int, data: memoryview, max_size: int, offset: int,
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
