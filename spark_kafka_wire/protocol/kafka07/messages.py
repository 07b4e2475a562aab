"""Kafka 0.7 messages and message sets: encode, and decode into record columns.

Layouts ("Writing a Driver for Kafka": Message, Kafka 0.6 and earlier / 0.7 and later)::

    magic 0 = LENGTH int32 | MAGIC int8 = 0 | CHECKSUM uint32 | PAYLOAD
    magic 1 = LENGTH int32 | MAGIC int8 = 1 | COMPRESSION int8 | CHECKSUM uint32 | PAYLOAD

LENGTH counts everything after itself; CHECKSUM is the CRC32 of the PAYLOAD alone. A message
set is messages back to back, without a count. COMPRESSION names the codec of the payload
(0 none, 1 gzip, 2 snappy; the codec bits of the design document's "attributes"), and a
compressed message's payload is a whole message set, compressed ("take M1, M2... concatenate
them together, and then compress them"), which may itself hold compressed messages. 0.7
writes snappy as snappy-java's stream (the "xerial" framing) and reads a bare raw block too;
``protocol/compression.py`` does both.

Offsets are byte positions in the partition's log: a message fetched from ``start`` at
position ``p`` of the answer is at offset ``start + p``, the next one at ``offset + 4 +
LENGTH``, and every record unpacked from a compressed message carries that message's offset
(the log knows nothing of the inner ones). So one 0.7 offset may hold many records.

A FETCH answer is a byte range of the log cut at MAX_SIZE, "If it ends halfway through a
message header, you get a broken header. This is not an error": the decoder stops before an
incomplete trailing message and says how far it got. The broker does not check that the
offset is a message boundary either, so bytes that begin inside a message come back as they
are; the decoder recognises them by impossible lengths, magic or codec bytes and by the CRC,
and raises :class:`OffsetInsideMessageError`.

The walk over messages is a Python loop (one unpack and one CRC call per message, as for the
0.8+ legacy formats in ``records/legacy.py``); the payloads are then gathered into one Arrow
binary column at once.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from spark_kafka_wire.protocol.compression import (
    CODEC_GZIP,
    CODEC_NONE,
    CODEC_SNAPPY,
    UnsupportedCodecError,
    codec_id,
    codec_name,
)
from spark_kafka_wire.protocol.compression import compress as _compress
from spark_kafka_wire.protocol.errors import (
    CorruptRecordError,
    OffsetInsideMessageError,
    ProtocolError,
)
from spark_kafka_wire.protocol.limits import DEFAULT_MAX_DECOMPRESSED_SIZE, MAX_COLUMN_BYTES
from spark_kafka_wire.protocol.records.columns import (
    DecodedRecords,
    spans_to_binary,
)
from spark_kafka_wire.protocol.records.entries import (
    DecompressionBudget,
    decompress_records,
)

__all__ = [
    "CODECS",
    "LENGTH_SIZE",
    "MAGIC_COMPRESSION",
    "MAGIC_PLAIN",
    "MessageSetRead",
    "decode_message_set",
    "encode_message",
    "encode_message_set",
    "header_size",
]

MAGIC_PLAIN = 0  # 0.6 and earlier: no COMPRESSION byte
MAGIC_COMPRESSION = 1  # 0.7: a COMPRESSION byte after MAGIC
CODECS = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY)  # what a 0.7 broker knows
LENGTH_SIZE = 4  # the LENGTH field, which LENGTH does not count
_CODEC_MASK = 0x07  # the design document's "bit 0 ~ 2 : Compression codec"
_MAX_NESTING = 16  # compressed messages inside compressed messages, at most
_HEAD = struct.Struct(">iB")  # LENGTH, MAGIC
_CRC = struct.Struct(">I")
_NO_TIMESTAMP = -1
_NO_TIMESTAMP_TYPE = -1


def header_size(magic: int) -> int:
    """Bytes between LENGTH and PAYLOAD: MAGIC, COMPRESSION (magic 1), CHECKSUM."""
    return 6 if magic else 5


# ---------------------------------------------------------------------------------- encode


def encode_message(payload: bytes | bytearray | memoryview, *, magic: int = MAGIC_COMPRESSION,
                   codec: int = CODEC_NONE) -> bytes:
    """One message: LENGTH, MAGIC, (COMPRESSION,) CHECKSUM, PAYLOAD."""
    if magic not in (MAGIC_PLAIN, MAGIC_COMPRESSION):
        raise ValueError(f"a Kafka 0.7 message has magic 0 or 1, not {magic}")
    if codec not in CODECS:
        raise UnsupportedCodecError(f"Kafka 0.7 knows the codecs none, gzip and snappy, not "
                                    f"{codec_name(codec)}")
    if codec and magic == MAGIC_PLAIN:
        raise ValueError("a magic 0 message has no COMPRESSION byte: compress with magic 1")
    body = memoryview(payload)
    head = (_HEAD.pack(header_size(magic) + len(body), magic)
            + (bytes((codec,)) if magic else b""))
    return head + _CRC.pack(zlib.crc32(body)) + bytes(body)


def encode_message_set(payloads: Iterable[bytes | bytearray | memoryview] | pa.Array, *,
                       magic: int = MAGIC_COMPRESSION, compression: int | str = CODEC_NONE,
                       compression_level: int | None = None) -> bytes:
    """Messages for a PRODUCE: one per payload or, compressed, one magic 1 message holding
    them all (as the 0.7 producer's compressed message sets do).

    ``payloads`` may be an Arrow binary column (no nulls: 0.7 messages have no null payload,
    nor keys). The inner messages of a compressed set have ``magic`` and no compression. Snappy is
    written in snappy-java's stream framing, the one 0.7 brokers and consumers read.
    """
    codec = codec_id(compression)
    if codec not in CODECS:
        raise UnsupportedCodecError(f"Kafka 0.7 knows the codecs none, gzip and snappy, not "
                                    f"{codec_name(codec)}")
    if isinstance(payloads, (pa.Array, pa.ChunkedArray)):
        payloads = payloads.to_pylist()
    items = list(payloads)
    if any(p is None for p in items):
        raise ValueError("a Kafka 0.7 message has no null payload")
    inner = b"".join(encode_message(p, magic=magic) for p in items)
    if codec == CODEC_NONE:
        return inner
    if not inner:
        return b""
    return encode_message(_compress(codec, inner, level=compression_level,
                                    magic=MAGIC_COMPRESSION),
                          magic=MAGIC_COMPRESSION, codec=codec)


# ---------------------------------------------------------------------------------- decode


@dataclass
class MessageSetRead:
    """What one FETCH answer's bytes held.

    ``records``: every record of the complete messages before ``end_offset``, in log order,
    ``next_offset``: the byte offset after the last complete message (the start offset when
    there was none), ``partial_bytes``: the bytes from there to the end of the answer (an
    incomplete trailing message, or messages at or past ``end_offset``).
    """

    records: DecodedRecords
    next_offset: int
    messages: int  # complete top-level messages (a compressed one counts once)
    partial_bytes: int


class _Run:
    """Consecutive records whose payloads lie in one buffer."""

    __slots__ = ("buffer", "starts", "lens", "offsets")

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer
        self.starts: list[int] = []
        self.lens: list[int] = []
        self.offsets: list[int] = []


def _where_text(where: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in where.items() if k in ("topic", "partition", "broker")}


def decode_message_set(
    data: bytes | bytearray | memoryview,
    start_offset: int,
    *,
    end_offset: int | None = None,
    check_crcs: bool = True,
    start_is_boundary: bool = False,
    max_size: int | None = None,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    topic: str | None = None,
    partition: int | None = None,
    broker: str | None = None,
) -> MessageSetRead:
    """Decode the messages of a FETCH answer read from byte offset ``start_offset``.

    Messages at or past ``end_offset`` are left out (as partial bytes). A trailing message
    cut short, even inside its LENGTH, ends the walk without an error. Damage raises
    :class:`CorruptRecordError` naming the message's byte offset; a first message that
    cannot be one raises :class:`OffsetInsideMessageError` unless ``start_is_boundary``
    says the offset is known to start a message (an offset OFFSETS returned, or one this
    decoder reported), in which case it is corruption like any other.

    ``max_size``, the FETCH's MAX_SIZE, tells more: an answer shorter than that ended at a
    segment end, and no message is cut there ("a single message is never split across
    multiple files"), so a message that claims more bytes than such an answer holds is damage
    too (a first one: most likely an offset inside a message, whose bytes read as a length).

    ``max_decompressed_size`` bounds what all compressed messages of the answer, at every
    level of nesting, decompress to together (a DecompressionLimitError past it).
    """
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    where = {"topic": topic, "partition": partition, "broker": broker}
    n = len(view)
    limit = n if end_offset is None else max(0, min(n, end_offset - start_offset))
    runs: list[_Run] = []
    plain: _Run | None = None  # the current run of uncompressed messages of ``view``
    budget = DecompressionBudget(max_decompressed_size)
    unpack = _HEAD.unpack_from
    crc32 = zlib.crc32
    pos = 0
    count = 0
    while limit - pos >= LENGTH_SIZE:
        offset = start_offset + pos
        first = pos == 0 and not start_is_boundary
        if limit - pos >= 5:
            size, magic = unpack(view, pos)
        else:
            size, magic = struct.unpack_from(">i", view, pos)[0], 0
        why = _impossible_header(view, pos, limit, size, magic)
        if why:
            raise _damage(why, first, offset, where)
        end = pos + LENGTH_SIZE + size
        if end > limit:
            if max_size is not None and n < max_size and end > n:
                raise _damage(f"LENGTH {size} runs past the end of the segment, "
                              f"{n - pos} bytes on", first, offset, where)
            break  # cut short by MAX_SIZE (or running past end_offset)
        hdr = header_size(magic)
        body = pos + LENGTH_SIZE + hdr
        (crc,) = _CRC.unpack_from(view, body - 4)
        if check_crcs and crc32(view[body:end]) != crc:
            raise _damage(f"CRC32 mismatch (stored {crc:#010x}, computed "
                          f"{crc32(view[body:end]):#010x})", first, offset, where)
        codec = view[pos + 5] & _CODEC_MASK if magic else CODEC_NONE
        if codec == CODEC_NONE:
            if plain is None:
                plain = _Run(view)
                runs.append(plain)
            plain.starts.append(body)
            plain.lens.append(end - body)
            plain.offsets.append(offset)
        else:
            plain = None
            _unwrap(view[body:end], codec, offset, runs, check_crcs, budget, where, 1)
        count += 1
        pos = end
    return MessageSetRead(_columns(runs, view, where, start_offset + pos if count else None),
                          start_offset + pos, count, n - pos)


def message_ends(data: bytes | bytearray | memoryview, start_offset: int, *,
                 start_is_boundary: bool = True, **where: Any) -> tuple[int, int]:
    """(the byte offset after the last complete top-level message of ``data``, how many
    there are), read from the LENGTH fields alone: no CRC, no decompression.

    Where a message boundary near a byte count is wanted without the records (a stream's
    rate limit cuts a 0.7 partition's range at the last message that fits), this walks only
    the headers, as a 0.7 consumer walks a fetch answer. Headers that cannot start a message
    raise as in :func:`decode_message_set`; ``where`` (topic, partition, broker) names them.
    """
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    n = len(view)
    pos = count = 0
    while n - pos >= LENGTH_SIZE:
        if n - pos >= 5:
            size, magic = _HEAD.unpack_from(view, pos)
        else:
            size, magic = struct.unpack_from(">i", view, pos)[0], 0
        why = _impossible_header(view, pos, n, size, magic)
        if why:
            raise _damage(why, pos == 0 and not start_is_boundary, start_offset + pos, where)
        end = pos + LENGTH_SIZE + size
        if end > n:
            break
        pos = end
        count += 1
    return start_offset + pos, count


def _impossible_header(view: memoryview, pos: int, limit: int, size: int, magic: int) -> str:
    """Why the (possibly incomplete) header at ``pos`` cannot start a message, or ''."""
    if size < 5:
        return f"LENGTH {size} is shorter than any message (5 bytes)"
    if limit - pos < 5:
        return ""
    if magic > MAGIC_COMPRESSION:
        return f"MAGIC {magic} (0.7 messages have magic 0 or 1)"
    if magic == MAGIC_COMPRESSION:
        if size < 6:
            return f"LENGTH {size} is shorter than a magic 1 message (6 bytes)"
        if limit - pos >= 6:
            attrs = view[pos + 5]
            if attrs & _CODEC_MASK not in CODECS or attrs & ~_CODEC_MASK:
                return f"COMPRESSION byte {attrs:#04x} (0.7 knows 0 none, 1 gzip, 2 snappy)"
    return ""


def _damage(why: str, first: bool, offset: int, where: dict[str, Any]) -> ProtocolError:
    if first:
        return OffsetInsideMessageError(
            f"no valid message starts at byte offset {offset}: {why}. Either the offset lies "
            "inside a message (Kafka 0.7 brokers do not check; start from an offset OFFSETS "
            "returned or one a previous read ended at) or the message there is damaged",
            offset=offset, **where)
    return CorruptRecordError(f"the message at byte offset {offset}: {why}", offset=offset,
                              **where)


def _unwrap(payload: memoryview, codec: int, offset: int, runs: list[_Run], check_crcs: bool,
            budget: DecompressionBudget, where: dict[str, Any], depth: int) -> None:
    """The records of a compressed message's payload, all at the message's ``offset``.

    Every level of nesting takes its decompressed bytes from the answer's one ``budget``:
    each level's set is held while the levels inside it are decompressed."""
    if depth > _MAX_NESTING:
        raise CorruptRecordError(f"compressed messages nested more than {_MAX_NESTING} deep",
                                 offset=offset, **where)
    blob = decompress_records(codec, payload, budget, offset, _where_text(where),
                              magic=MAGIC_COMPRESSION)
    inner = memoryview(blob)
    n = len(inner)
    run: _Run | None = None
    pos = 0
    crc32 = zlib.crc32
    while pos < n:
        if n - pos < 5:
            raise CorruptRecordError("a compressed message's set ends inside a message header",
                                     offset=offset, **where)
        size, magic = _HEAD.unpack_from(inner, pos)
        why = _impossible_header(inner, pos, n, size, magic)
        end = pos + LENGTH_SIZE + size
        if not why and end > n:
            why = f"LENGTH {size} runs past the end of the decompressed set"
        if why:
            raise CorruptRecordError(f"inside the compressed message: {why}", offset=offset,
                                     **where)
        body = pos + LENGTH_SIZE + header_size(magic)
        (crc,) = _CRC.unpack_from(inner, body - 4)
        if check_crcs and crc32(inner[body:end]) != crc:
            raise CorruptRecordError(
                f"CRC32 mismatch in a message inside the compressed message (stored "
                f"{crc:#010x}, computed {crc32(inner[body:end]):#010x})", offset=offset,
                **where)
        inner_codec = inner[pos + 5] & _CODEC_MASK if magic else CODEC_NONE
        if inner_codec == CODEC_NONE:
            if run is None:
                run = _Run(inner)
                runs.append(run)
            run.starts.append(body)
            run.lens.append(end - body)
            run.offsets.append(offset)
        else:
            run = None
            _unwrap(inner[body:end], inner_codec, offset, runs, check_crcs, budget, where,
                    depth + 1)
        pos = end


def _columns(runs: list[_Run], view: memoryview, where: dict[str, Any],
             next_offset: int | None) -> DecodedRecords:
    """Every run's payloads as one Arrow column; byte offsets; no keys, no timestamps."""
    if len(runs) == 1 and runs[0].buffer is view:
        run = runs[0]
        arr = np.frombuffer(view, np.uint8)
        starts = np.array(run.starts, np.int64)
        lens = np.array(run.lens, np.int64)
        offsets = np.array(run.offsets, np.int64)
    elif runs:
        pieces: list[memoryview] = []
        chunks: list[np.ndarray] = []
        base = 0
        for run in runs:
            lo, hi = run.starts[0], run.starts[-1] + run.lens[-1]
            pieces.append(run.buffer[lo:hi])
            chunks.append(np.array(run.starts, np.int64) + (base - lo))
            base += hi - lo
        if base > MAX_COLUMN_BYTES:
            raise ProtocolError(f"the messages of one fetch hold {base} bytes of payload, more "
                                "than one Arrow binary column holds (2 GiB); fetch fewer bytes",
                                **where)
        arr = np.frombuffer(b"".join(pieces), np.uint8)
        starts = np.concatenate(chunks)
        lens = np.concatenate([np.array(r.lens, np.int64) for r in runs])
        offsets = np.concatenate([np.array(r.offsets, np.int64) for r in runs])
    else:
        arr = np.zeros(0, np.uint8)
        starts = lens = offsets = np.zeros(0, np.int64)
    n = len(offsets)
    return DecodedRecords(
        offsets=offsets,
        timestamps=np.full(n, _NO_TIMESTAMP, np.int64),
        timestamp_types=np.full(n, _NO_TIMESTAMP_TYPE, np.int32),
        keys=pa.nulls(n, pa.binary()),
        values=spans_to_binary(arr, starts, lens),
        headers=None,
        next_offset=next_offset,
    )
