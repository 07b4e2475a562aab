"""Compression codecs by Kafka codec id.

Kafka names a codec with the low three bits of a batch's attributes (0 none, 1 gzip, 2 snappy,
3 lz4, 4 zstd). Readers only learn the codec from the batch, so lookups go by id; writers
configure it by name, hence :data:`CODEC_NAMES`. Every codec is one :class:`Codec` entry in
``_CODECS``.

Two codecs depend on the message format (``magic``) of the data they carry, which is why
every call takes it:

- lz4 with magic 0: Kafka before 0.10 computed the LZ4 frame header checksum over the frame
  magic number as well as the descriptor (KAFKA-3160). Java still writes it that way for
  magic 0 and ignores it when reading magic 0; so do we.
- zstd exists only for magic 2 (Kafka 2.1+).

Snappy comes in two framings: raw snappy (librdkafka) and the snappy-java "xerial" stream
(the Java client). Both are read. Magic 2 is written raw, as librdkafka does (Java reads it:
snappy-java falls back to raw input without the xerial header); magic 0/1, which old brokers
decompress and re-validate themselves, is written in the xerial framing the Java producer
used with them.

Decompression is always bounded by ``max_size``: a few kilobytes of gzip or zstd can expand to
gigabytes, and the bytes come from the network, so a reader must refuse to produce more than
it can hold instead of trusting the stream (or a size it declares).
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cramjam
import lz4.block
import lz4.frame
import numpy as np
import pyarrow as pa
import zstandard

from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.limits import ZSTD_DEFAULT_LEVEL

__all__ = [
    "CODEC_GZIP",
    "CODEC_LZ4",
    "CODEC_NAMES",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "Codec",
    "DecompressionBombError",
    "DecompressionLimitError",
    "UnsupportedCodecError",
    "codec_id",
    "codec_name",
    "compress",
    "decompress",
    "is_supported",
]

CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4

CODEC_NAMES: dict[str, int] = {
    "none": CODEC_NONE,
    "gzip": CODEC_GZIP,
    "snappy": CODEC_SNAPPY,
    "lz4": CODEC_LZ4,
    "zstd": CODEC_ZSTD,
}
_NAMES_BY_ID = {v: k for k, v in CODEC_NAMES.items()}

Buffer = bytes | bytearray | memoryview


class UnsupportedCodecError(ProtocolError):
    """The codec id is unknown to Kafka, or not allowed with the data's message format."""

    condition = "KAFKAWIRE_PROTOCOL.UNSUPPORTED_CODEC"


class DecompressionBombError(ProtocolError):
    """Decompressing would produce more than the caller's ``max_size`` bytes."""

    condition = "KAFKAWIRE_PROTOCOL.DECOMPRESSION_BOMB"


class DecompressionLimitError(DecompressionBombError):
    """The records of one fetch answer (or those a task holds at once) decompress to more
    than the reader's limit: raised by the record decoders, naming topic, partition, the
    offset of the batch or message that crossed it, the broker and the option to raise.

    A per-batch limit alone is not enough: one answer may hold many small batches that
    each expand to just under it, and every decompressed batch is held until the answer's
    records are joined into columns.
    """

    condition = "KAFKAWIRE_PROTOCOL.DECOMPRESSION_LIMIT"

    def __init__(self, reason: str, *, limit: int, **where: object) -> None:
        super().__init__(reason, **where)  # type: ignore[arg-type]
        self.limit = limit


@dataclass(frozen=True)
class Codec:
    """One registry entry.

    ``compress(data, level, magic)``; ``decompress(data, max_size, magic)`` must never return
    (nor hold much more than) ``max_size`` bytes, and may return a bytearray or a byte view
    (format "B") to save a copy.
    """

    id: int
    name: str
    compress: Callable[[Buffer, int | None, int], bytes]
    decompress: Callable[[Buffer, int, int], Buffer]


def _byte_view(data: Buffer) -> memoryview:
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1 or view.format != "B":
        view = view.cast("B")
    return view


def _too_big(name: str, max_size: int) -> DecompressionBombError:
    return DecompressionBombError(f"{name} data expands beyond the limit of {max_size} bytes")


# ---------------------------------------------------------------------------------- none


def _none_compress(data: Buffer, level: int | None, magic: int) -> bytes:
    return bytes(data)


def _none_decompress(data: Buffer, max_size: int, magic: int) -> bytes:
    if len(data) > max_size:
        raise DecompressionBombError(
            f"uncompressed records of {len(data)} bytes exceed the limit of {max_size} bytes"
        )
    return bytes(data)


# ---------------------------------------------------------------------------------- gzip

# Kafka's Java producer uses Deflater's default level (6) unless compression.gzip.level is set.
_GZIP_DEFAULT_LEVEL = 6
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip container, not raw deflate or zlib


def _gzip_compress(data: Buffer, level: int | None, magic: int) -> bytes:
    # zlib with a gzip header writes mtime 0, so equal input gives equal bytes (testable).
    c = zlib.compressobj(_GZIP_DEFAULT_LEVEL if level is None else level, zlib.DEFLATED,
                         _GZIP_WBITS)
    return c.compress(data) + c.flush()


def _gzip_decompress(data: Buffer, max_size: int, magic: int) -> bytes:
    """Decode one or more concatenated gzip members, stopping before ``max_size`` is passed.

    Several members are legal gzip (and what some producers write); trailing zero padding is
    tolerated like the stdlib's GzipFile does. ``max_length`` makes zlib stop early, so a
    bomb costs at most ``max_size + 1`` bytes of output before it is rejected.
    """
    view = _byte_view(data)
    out: list[bytes] = []
    total = 0
    pending: Buffer = view
    try:
        while True:
            d = zlib.decompressobj(_GZIP_WBITS)
            while True:
                chunk = d.decompress(pending, max_size - total + 1)
                total += len(chunk)
                if total > max_size:
                    raise _too_big("gzip", max_size)
                if chunk:
                    out.append(chunk)
                if d.eof:
                    break
                pending = d.unconsumed_tail
                if not pending and not chunk:
                    raise ProtocolError("gzip data is truncated (stream ended inside a member)")
            pending = d.unused_data
            if not pending or not pending.strip(b"\x00"):
                break
    except zlib.error as exc:
        raise ProtocolError(f"invalid gzip data: {exc}") from None
    return b"".join(out)


# ---------------------------------------------------------------------------------- snappy

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible version 1
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_INT32 = struct.Struct(">i")


def _snappy_raw_length(view: memoryview, start: int, end: int) -> int:
    """The uncompressed length a raw snappy block declares (its leading varint, < 2**32)."""
    u = 0
    for k in range(5):
        if start + k >= end:
            break
        b = view[start + k]
        u |= (b & 0x7F) << (7 * k)
        if b < 0x80:
            if u >= 1 << 32:
                break
            return u
    raise ProtocolError("invalid snappy data: bad uncompressed length header")


def _snappy_compress(data: Buffer, level: int | None, magic: int) -> bytes:
    if magic >= 2:
        return bytes(cramjam.snappy.compress_raw(data))
    view = _byte_view(data)
    parts = [_XERIAL_HEADER]
    for i in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[i:i + _XERIAL_BLOCK]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: Buffer, max_size: int, magic: int) -> bytearray:
    """Raw snappy, or the xerial framing: 16-byte header then {int32 length, raw block}*.

    Every block declares its uncompressed length up front, so the total is checked against
    ``max_size`` before any output is allocated, then each block decodes in place.
    Like kafka-python and librdkafka, the xerial version fields are not checked (some
    producers write them little-endian).
    """
    view = _byte_view(data)
    n = len(view)
    blocks: list[tuple[int, int, int]] = []  # (start, end, uncompressed length)
    total = 0
    if n >= len(_XERIAL_HEADER) and view[:len(_XERIAL_MAGIC)] == _XERIAL_MAGIC:
        p = len(_XERIAL_HEADER)
        while p < n:
            if p + 4 > n:
                raise ProtocolError("snappy (xerial) data is truncated inside a block length")
            (size,) = _INT32.unpack_from(view, p)
            p += 4
            if size < 0 or p + size > n:
                raise ProtocolError(f"snappy (xerial) block of {size} bytes does not fit the "
                                    f"{n - p} bytes left")
            if size:
                length = _snappy_raw_length(view, p, p + size)
                blocks.append((p, p + size, length))
                total += length
                if total > max_size:
                    raise _too_big("snappy", max_size)
            p += size
    else:
        total = _snappy_raw_length(view, 0, n)
        if total > max_size:
            raise _too_big("snappy", max_size)
        blocks.append((0, n, total))
    out = bytearray(total)
    target = memoryview(out)
    o = 0
    for start, end, length in blocks:
        try:
            written = cramjam.snappy.decompress_raw_into(view[start:end], target[o:o + length])
        except Exception as exc:  # cramjam.DecompressionError, and whatever else the Rust side raises
            raise ProtocolError(f"invalid snappy data: {exc}") from None
        if written != length:
            raise ProtocolError(f"invalid snappy data: a block declared {length} bytes but "
                                f"decoded to {written}")
        o += length
    return out


# ---------------------------------------------------------------------------------- lz4

_LZ4_MAGIC = 0x184D2204
_LZ4_FRAME_MAGIC = struct.pack("<I", _LZ4_MAGIC)
_UINT32_LE = struct.Struct("<I")
_UINT64_LE = struct.Struct("<Q")
_LZ4_UNCOMPRESSED = 0x80000000

_XXH_P1, _XXH_P2, _XXH_P3, _XXH_P4, _XXH_P5 = (
    2654435761, 2246822519, 3266489917, 668265263, 374761393)
_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32, only for the few bytes of an LZ4 frame descriptor (too slow for data)."""
    n = len(data)
    p = 0
    if n >= 16:
        v = [(seed + _XXH_P1 + _XXH_P2) & _M32, (seed + _XXH_P2) & _M32, seed & _M32,
             (seed - _XXH_P1) & _M32]
        while p + 16 <= n:
            for i in range(4):
                (w,) = _UINT32_LE.unpack_from(data, p)
                v[i] = (_rotl32((v[i] + w * _XXH_P2) & _M32, 13) * _XXH_P1) & _M32
                p += 4
        h = (_rotl32(v[0], 1) + _rotl32(v[1], 7) + _rotl32(v[2], 12) + _rotl32(v[3], 18)) & _M32
    else:
        h = (seed + _XXH_P5) & _M32
    h = (h + n) & _M32
    while p + 4 <= n:
        (w,) = _UINT32_LE.unpack_from(data, p)
        h = (_rotl32((h + w * _XXH_P3) & _M32, 17) * _XXH_P4) & _M32
        p += 4
    while p < n:
        h = (_rotl32((h + data[p] * _XXH_P5) & _M32, 11) * _XXH_P1) & _M32
        p += 1
    h ^= h >> 15
    h = (h * _XXH_P2) & _M32
    h ^= h >> 13
    h = (h * _XXH_P3) & _M32
    h ^= h >> 16
    return h


def _lz4_header_checksum(descriptor: bytes) -> int:
    """The frame descriptor checksum byte (HC): second byte of XXH32 of the descriptor."""
    return (_xxh32(descriptor) >> 8) & 0xFF


def _lz4_compress(data: Buffer, level: int | None, magic: int) -> bytes:
    # What Java's KafkaLZ4BlockOutputStream writes: 64 KiB independent blocks, no content
    # size, no checksums. Old Java readers reject linked blocks and (0.8/0.9) content sizes.
    frame = lz4.frame.compress(
        data, compression_level=0 if level is None else level,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=False,
        block_checksum=False, store_size=False)
    if magic == 0:
        # KAFKA-3160: for magic 0 the checksum covers the frame magic number too.
        frame = frame[:6] + bytes([_lz4_header_checksum(frame[:6])]) + frame[7:]
    return frame


def _lz4_decompress(data: Buffer, max_size: int, magic: int) -> bytes:
    """LZ4 frames (several may be concatenated) decoded block by block.

    The frame is parsed here rather than by the lz4 library because Kafka needs two
    exceptions to the LZ4 frame rules: the header checksum of magic 0 data is wrong (ignored,
    as Java does), and blocks must be independent. Block and content checksums are skipped,
    as Java skips the content checksum: the batch CRC already covers these bytes. Each block
    decodes into at most its declared maximum size (<= 4 MiB), so the output overshoots
    ``max_size`` by less than one block before it is rejected.
    """
    view = _byte_view(data)
    n = len(view)
    out: list[bytes] = []
    total = 0
    p = 0
    if n == 0:
        raise ProtocolError("invalid lz4 data: empty")
    while p < n:
        if n - p < 7:
            raise ProtocolError("invalid lz4 data: truncated frame header")
        if view[p:p + 4] != _LZ4_FRAME_MAGIC:
            raise ProtocolError("invalid lz4 data: not an LZ4 frame (bad magic number)")
        flg, bd = view[p + 4], view[p + 5]
        if flg >> 6 != 1:
            raise ProtocolError(f"invalid lz4 data: frame version {flg >> 6}")
        if not flg & 0x20:
            raise ProtocolError("lz4 frame with linked blocks: Kafka requires independent blocks")
        if flg & 0x03 or bd & 0x8F or not 4 <= (bd >> 4) & 7 <= 7:
            raise ProtocolError(f"invalid lz4 data: unsupported frame descriptor "
                                f"{flg:#04x} {bd:#04x}")
        block_max = 1 << (2 * ((bd >> 4) & 7) + 8)
        q = p + 6
        content_size = -1
        if flg & 0x08:
            if n - q < 9:
                raise ProtocolError("invalid lz4 data: truncated frame header")
            (content_size,) = _UINT64_LE.unpack_from(view, q)
            if content_size > max_size - total:
                raise _too_big("lz4", max_size)
            q += 8
        if magic != 0 and view[q] != _lz4_header_checksum(bytes(view[p + 4:q])):
            raise ProtocolError("invalid lz4 data: frame descriptor checksum mismatch")
        q += 1
        frame_total = 0
        while True:
            if n - q < 4:
                raise ProtocolError("invalid lz4 data: truncated (no end mark)")
            (size,) = _UINT32_LE.unpack_from(view, q)
            q += 4
            if size == 0:
                break
            stored = size & _LZ4_UNCOMPRESSED
            size &= ~_LZ4_UNCOMPRESSED
            if size > block_max:
                raise ProtocolError(f"invalid lz4 data: block of {size} bytes exceeds the "
                                    f"frame's {block_max}")
            if q + size > n:
                raise ProtocolError("invalid lz4 data: truncated block")
            if stored:
                block = bytes(view[q:q + size])
            else:
                try:
                    block = lz4.block.decompress(view[q:q + size], uncompressed_size=block_max)
                except lz4.block.LZ4BlockError as exc:
                    raise ProtocolError(f"invalid lz4 data: {exc}") from None
            q += size + (4 if flg & 0x10 else 0)  # block checksum
            frame_total += len(block)
            if total + frame_total > max_size:
                raise _too_big("lz4", max_size)
            out.append(block)
        if flg & 0x04:
            q += 4  # content checksum
        if q > n:
            raise ProtocolError("invalid lz4 data: truncated checksum")
        if content_size >= 0 and frame_total != content_size:
            raise ProtocolError(f"invalid lz4 data: frame declared {content_size} bytes but "
                                f"holds {frame_total}")
        total += frame_total
        p = q
    return out[0] if len(out) == 1 else b"".join(out)


# ---------------------------------------------------------------------------------- zstd

# A zstd block (<= 128 KiB of output) costs at least 4 compressed bytes (3-byte header and
# one RLE byte), so n input bytes yield at most about n * 2**15 bytes of output.
_ZSTD_RATIO_SHIFT = 15
_ZSTD_MIN_STEP = 64
# The expected size of the first batch without a declared size, over its compressed size.
_ZSTD_FIRST_RATIO = 8.0
# ZstdDecompressor objects are not thread-safe; the last ratio is the thread's own too
_zstd_local = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    # zstd's default window limit (2**27) bounds what a frame header may make the decoder
    # reserve; reserved memory that the bounded output never reaches is never touched.
    dctx = getattr(_zstd_local, "dctx", None)
    if dctx is None:
        dctx = _zstd_local.dctx = zstandard.ZstdDecompressor()
    return dctx


def _zstd_compress(data: Buffer, level: int | None, magic: int) -> bytes:
    if magic < 2:
        raise _zstd_needs_v2(magic)
    cctx = zstandard.ZstdCompressor(level=ZSTD_DEFAULT_LEVEL if level is None else level)
    return cctx.compress(data)


def _zstd_needs_v2(magic: int) -> UnsupportedCodecError:
    return UnsupportedCodecError(
        f"zstd compression needs the v2 record format (magic 2), not magic {magic}")


def _zstd_decompress(data: Buffer, max_size: int, magic: int) -> bytes | memoryview:
    """One or more zstd frames, decoded into one buffer from Arrow's memory pool.

    The buffer is as large as the first frame declares (Java's streaming zstd declares
    nothing: then as large as the last decompressed batch's ratio suggests), never larger
    than ``max_size``; cramjam's decoder reads every frame and fails rather than write past its
    end, and a failure is retried in a buffer four times larger. Decoding into pooled memory
    saves the list of pieces and their join, and the fresh pages both took (those cost more
    than the decoding: 44% of decoding zstd records of 1 KiB values went to joins). Data
    that does not fit ``max_size`` or does not decode goes through the streaming decoder,
    which says which of the two it is.
    """
    if magic < 2:
        raise _zstd_needs_v2(magic)
    view = _byte_view(data)
    n = len(view)
    if n == 0:
        raise ProtocolError("invalid zstd data: empty")
    try:
        declared = zstandard.frame_content_size(view)
    except zstandard.ZstdError:
        return _zstd_decompress_streaming(view, max_size)
    if declared > max_size:  # too big, or a lie: the streaming decoder tells which
        return _zstd_decompress_streaming(view, max_size)
    capacity = declared if declared >= 0 else \
        int(n * getattr(_zstd_local, "ratio", _ZSTD_FIRST_RATIO) * 1.25) + _ZSTD_MIN_STEP
    while True:
        capacity = min(capacity, max_size)
        out = pa.allocate_buffer(capacity)
        try:
            target: Any = np.frombuffer(out, np.uint8)  # writable: cramjam's stubs miss it
            size = cramjam.zstd.decompress_into(view, target)
        except cramjam.DecompressionError:
            if capacity >= max_size:
                return _zstd_decompress_streaming(view, max_size)
            capacity = max(capacity * 4, _ZSTD_MIN_STEP)  # a frame may declare 0 bytes
            continue
        _zstd_local.ratio = size / n
        return memoryview(out).cast("B")[:size]  # an Arrow buffer's own view has format "b"


def _zstd_decompress_streaming(view: memoryview, max_size: int) -> bytes:
    """zstd frames decoded in streaming mode with bounded output.

    Frames written by Java's streaming zstd have no content size, and a declared one cannot
    be trusted anyway, so the input is fed in steps small enough that even a maximally
    compressible step stays within the remaining budget.
    """
    n = len(view)
    dctx = _zstd_decompressor()
    out: list[bytes] = []
    total = 0
    p = 0
    try:
        while p < n:
            d = dctx.decompressobj()
            while True:
                step = max(_ZSTD_MIN_STEP, (max_size - total) >> _ZSTD_RATIO_SHIFT)
                piece = view[p:p + step]
                chunk = d.decompress(piece)
                total += len(chunk)
                if total > max_size:
                    raise _too_big("zstd", max_size)
                if chunk:
                    out.append(chunk)
                if d.eof:
                    p += len(piece) - len(d.unused_data)
                    break
                p += len(piece)
                if p >= n:
                    raise ProtocolError("invalid zstd data: truncated frame")
    except zstandard.ZstdError as exc:
        raise ProtocolError(f"invalid zstd data: {exc}") from None
    return out[0] if len(out) == 1 else b"".join(out)


# ---------------------------------------------------------------------------------- registry

_CODECS: dict[int, Codec] = {
    CODEC_NONE: Codec(CODEC_NONE, "none", _none_compress, _none_decompress),
    CODEC_GZIP: Codec(CODEC_GZIP, "gzip", _gzip_compress, _gzip_decompress),
    CODEC_SNAPPY: Codec(CODEC_SNAPPY, "snappy", _snappy_compress, _snappy_decompress),
    CODEC_LZ4: Codec(CODEC_LZ4, "lz4", _lz4_compress, _lz4_decompress),
    CODEC_ZSTD: Codec(CODEC_ZSTD, "zstd", _zstd_compress, _zstd_decompress),
}


def _codec(codec: int) -> Codec:
    entry = _CODECS.get(codec)
    if entry is not None:
        return entry
    raise UnsupportedCodecError(
        f"unknown compression codec id {codec}; Kafka defines 0 none, 1 gzip, 2 snappy, "
        "3 lz4, 4 zstd"
    )


def _check_magic(magic: int) -> None:
    if magic not in (0, 1, 2):
        raise ValueError(f"message format magic must be 0, 1 or 2, not {magic}")


def is_supported(codec: int, magic: int = 2) -> bool:
    """Whether :func:`compress` / :func:`decompress` handle ``codec`` for ``magic`` data."""
    return codec in _CODECS and not (codec == CODEC_ZSTD and magic < 2)


def codec_id(name: str | int) -> int:
    """The Kafka codec id for a user-facing name (case-insensitive) or an id."""
    if isinstance(name, int):
        if name not in _NAMES_BY_ID:
            _codec(name)  # raises the unknown-id error
        return name
    try:
        return CODEC_NAMES[name.strip().lower()]
    except KeyError:
        raise UnsupportedCodecError(
            f"unknown compression codec {name!r}; use one of {', '.join(CODEC_NAMES)}"
        ) from None


def codec_name(codec: int) -> str:
    """The name of a codec id, e.g. for error messages."""
    return _NAMES_BY_ID.get(codec, f"unknown({codec})")


def compress(codec: int, data: Buffer, *, level: int | None = None, magic: int = 2) -> bytes:
    """Compress ``data`` as one blob with ``codec`` for a ``magic`` 0/1/2 batch or message.

    ``level`` None = the Java client's default (gzip 6, zstd 3) or lz4's fast mode.
    """
    _check_magic(magic)
    return _codec(codec).compress(data, level, magic)


def decompress(codec: int, data: Buffer, max_size: int, *,
               magic: int = 2) -> Buffer:
    """Decompress ``data`` taken from a ``magic`` 0/1/2 batch or message.

    Raises ProtocolError for bad input, :class:`DecompressionBombError` for output beyond
    ``max_size`` and :class:`UnsupportedCodecError` for codecs the format cannot carry.
    """
    if max_size < 0:
        raise ValueError("max_size must be >= 0")
    _check_magic(magic)
    return _codec(codec).decompress(data, max_size, magic)
