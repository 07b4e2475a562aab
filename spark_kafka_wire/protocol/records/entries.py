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
    DecompressionLimitError,
    UnsupportedCodecError,
    codec_name,
)
from spark_kafka_wire.protocol.compression import decompress as _decompress
from spark_kafka_wire.protocol.errors import CorruptRecordError, ProtocolError
from spark_kafka_wire.protocol.limits import (
    MAX_DECOMPRESSED_OPTION,
)

LOG_OVERHEAD = 12  # offset + length: the part an entry's length does not count
MAGIC_POS = 16
OFFSET_LENGTH = struct.Struct(">qi")



class DecompressionBudget:
    """What is left of the decompression limit while one answer's records are decoded.

    Every decompression of the answer (batches, control batches, legacy wrappers, nested
    0.7 wrappers) is told only what is left, so the decompressors stop producing output as
    soon as the whole answer's share is used up, before anything is joined.
    """

    __slots__ = ("limit", "remaining")

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError("a decompression limit must be >= 0")
        self.limit = limit
        self.remaining = limit


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


def decompress_records(codec: int, data: memoryview, budget: DecompressionBudget, offset: int,
                       where: dict[str, Any], magic: int = 2) -> bytes | bytearray | memoryview:
    """Decompress a batch's records (or a legacy wrapper's message set) within what is left
    of ``budget``, which it then takes; errors located."""
    try:
        blob = _decompress(codec, data, budget.remaining, magic=magic)
    except UnsupportedCodecError as exc:
        raise UnsupportedCodecError(exc.reason, offset=offset, **where) from None
    except DecompressionBombError:
        raise DecompressionLimitError(
            f"{codec_name(codec)} records expand past the limit of {budget.limit} bytes that "
            f"the records of one fetch answer may decompress to ({budget.limit - budget.remaining}"
            f" bytes decompressed before these). Data that compresses this well is more likely "
            f"a decompression bomb than records; if it is expected, raise the option "
            f"{MAX_DECOMPRESSED_OPTION}", limit=budget.limit, offset=offset, **where) from None
    except ProtocolError as exc:
        raise CorruptRecordError(
            f"cannot decompress {codec_name(codec)} records: {exc.reason}",
            offset=offset, **where) from None
    budget.remaining -= len(blob)
    return blob
