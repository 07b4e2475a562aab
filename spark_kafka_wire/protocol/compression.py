"""Compression codecs by Kafka codec id.

Kafka names a codec with the low three bits of a batch's attributes (0 none, 1 gzip, 2 snappy,
3 lz4, 4 zstd). Readers only learn the codec from the batch, so lookups go by id; writers
configure it by name, hence :data:`CODEC_NAMES`. Every codec is one :class:`Codec` entry in
``_CODECS``: adding snappy, lz4 or zstd means registering one entry there.

Decompression is always bounded by ``max_size``: a few kilobytes of gzip can expand to
gigabytes, and the bytes come from the network, so a reader must refuse to produce more than
it can hold instead of trusting the stream.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

from .errors import ProtocolError

__all__ = [
    "CODEC_GZIP",
    "CODEC_LZ4",
    "CODEC_NAMES",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "Codec",
    "DecompressionBombError",
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
    """The codec id is valid in Kafka but this build cannot (yet) encode or decode it."""


class DecompressionBombError(ProtocolError):
    """Decompressing would produce more than the caller's ``max_size`` bytes."""


@dataclass(frozen=True)
class Codec:
    """One registry entry; ``decompress(data, max_size)`` must never exceed ``max_size``."""

    id: int
    name: str
    compress: Callable[[bytes, int | None], bytes]
    decompress: Callable[[Buffer, int], bytes]


# ---------------------------------------------------------------------------------- none


def _none_compress(data: bytes, level: int | None) -> bytes:
    return bytes(data)


def _none_decompress(data: Buffer, max_size: int) -> bytes:
    if len(data) > max_size:
        raise DecompressionBombError(
            f"uncompressed records of {len(data)} bytes exceed the limit of {max_size} bytes"
        )
    return bytes(data)


# ---------------------------------------------------------------------------------- gzip

# Kafka's Java producer uses Deflater's default level (6) unless compression.gzip.level is set.
_GZIP_DEFAULT_LEVEL = 6
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip container, not raw deflate or zlib


def _gzip_compress(data: bytes, level: int | None) -> bytes:
    # zlib with a gzip header writes mtime 0, so equal input gives equal bytes (testable).
    c = zlib.compressobj(_GZIP_DEFAULT_LEVEL if level is None else level, zlib.DEFLATED,
                         _GZIP_WBITS)
    return c.compress(data) + c.flush()


def _gzip_decompress(data: Buffer, max_size: int) -> bytes:
    """Decode one or more concatenated gzip members, stopping before ``max_size`` is passed.

    Several members are legal gzip (and what some producers write); trailing zero padding is
    tolerated like the stdlib's GzipFile does. ``max_length`` makes zlib stop early, so a
    bomb costs at most ``max_size + 1`` bytes of output before it is rejected.
    """
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
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
                    raise DecompressionBombError(
                        f"gzip data expands beyond the limit of {max_size} bytes"
                    )
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


# ---------------------------------------------------------------------------------- registry

_CODECS: dict[int, Codec] = {
    CODEC_NONE: Codec(CODEC_NONE, "none", _none_compress, _none_decompress),
    CODEC_GZIP: Codec(CODEC_GZIP, "gzip", _gzip_compress, _gzip_decompress),
    # snappy, lz4 and zstd: one Codec entry each when they land.
}


def _codec(codec: int) -> Codec:
    entry = _CODECS.get(codec)
    if entry is not None:
        return entry
    name = _NAMES_BY_ID.get(codec)
    if name is None:
        raise UnsupportedCodecError(
            f"unknown compression codec id {codec}; Kafka defines 0 none, 1 gzip, 2 snappy, "
            "3 lz4, 4 zstd"
        )
    raise UnsupportedCodecError(
        f"compression codec {name} (id {codec}) is not supported yet by spark-kafka-wire; "
        "supported: " + ", ".join(e.name for e in _CODECS.values())
    )


def is_supported(codec: int) -> bool:
    """Whether :func:`compress` / :func:`decompress` handle ``codec``."""
    return codec in _CODECS


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


def compress(codec: int, data: bytes, *, level: int | None = None) -> bytes:
    """Compress ``data`` as one blob with ``codec`` (``level`` None = Kafka's default)."""
    return _codec(codec).compress(data, level)


def decompress(codec: int, data: bytes | memoryview, max_size: int) -> bytes:
    """Decompress ``data``; raise ProtocolError for bad input or output beyond ``max_size``."""
    if max_size < 0:
        raise ValueError("max_size must be >= 0")
    return _codec(codec).decompress(data, max_size)
