"""Bounded big-endian reader and writer for the Kafka primitive types.

Every read checks the remaining length first, so truncated or hostile input raises
ProtocolError instead of struct.error, IndexError or a huge allocation.
"""

from __future__ import annotations

import builtins
import struct
import uuid as _uuid

from spark_kafka_wire.protocol.errors import ProtocolError

#: Java's Integer.MAX_VALUE: the largest int32 on the wire (sizes, partition numbers, int
#: settings), and the mask Java applies to make a hash or a counter non-negative
INT32_MAX = 2**31 - 1
#: Java's Long.MAX_VALUE: the largest int64 on the wire (offsets, timestamps, long settings)
INT64_MAX = 2**63 - 1

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")


class Reader:
    """Sequential reader over a bytes-like buffer; slices are zero-copy memoryviews."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None):
        self.buf = memoryview(buf) if not isinstance(buf, memoryview) else buf
        self.pos = pos
        self.end = len(self.buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int, what: str) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise ProtocolError(
                f"truncated data: {what} needs {n} bytes at position {p}, {self.end - p} left"
            )
        self.pos = p + n
        return p

    def int8(self) -> int:
        return _I8.unpack_from(self.buf, self._need(1, "int8"))[0]

    def int16(self) -> int:
        return _I16.unpack_from(self.buf, self._need(2, "int16"))[0]

    def uint16(self) -> int:
        return _U16.unpack_from(self.buf, self._need(2, "uint16"))[0]

    def int32(self) -> int:
        return _I32.unpack_from(self.buf, self._need(4, "int32"))[0]

    def uint32(self) -> int:
        return _U32.unpack_from(self.buf, self._need(4, "uint32"))[0]

    def int64(self) -> int:
        return _I64.unpack_from(self.buf, self._need(8, "int64"))[0]

    def float64(self) -> float:
        return _F64.unpack_from(self.buf, self._need(8, "float64"))[0]

    def bool(self) -> bool:
        return self.buf[self._need(1, "bool")] != 0

    def uuid(self) -> _uuid.UUID:
        p = self._need(16, "uuid")
        return _uuid.UUID(bytes=bytes(self.buf[p : p + 16]))

    def uvarint(self) -> int:
        result = 0
        shift = 0
        buf, pos, end = self.buf, self.pos, self.end
        while True:
            if pos >= end:
                raise ProtocolError(f"truncated varint at position {self.pos}")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                self.pos = pos
                return result
            shift += 7
            if shift > 63:
                raise ProtocolError(f"varint longer than 10 bytes at position {self.pos}")

    def varint(self) -> int:
        """Zigzag-encoded signed varint (varint and varlong share the encoding)."""
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def take(self, n: int, what: str = "bytes") -> memoryview:
        p = self._need(n, what)
        return self.buf[p : p + n]

    # Length-prefixed types. Classic: int16/int32 lengths with -1 = null.
    # Compact (flexible versions): unsigned varint N+1 with 0 = null.
    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise ProtocolError(f"null string where a value is required at position {self.pos}")
        return s

    def nullable_string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else self._text(n)

    def compact_string(self) -> str:
        s = self.compact_nullable_string()
        if s is None:
            raise ProtocolError(f"null string where a value is required at position {self.pos}")
        return s

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else self._text(n)

    def _text(self, n: int) -> str:
        raw = self.take(n, "string")
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"string is not valid UTF-8 at position {self.pos - n}") from exc

    def nullable_bytes(self) -> memoryview | None:
        n = self.int32()
        if n < -1:
            raise ProtocolError(f"negative length {n} at position {self.pos - 4}")
        return None if n == -1 else self.take(n)

    def compact_nullable_bytes(self) -> memoryview | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n)

    def array_length(self, compact: builtins.bool) -> int:
        """Element count, -1 for null; bounded by the bytes left (each element takes >= 1)."""
        if compact:
            n = self.uvarint() - 1
        else:
            n = self.int32()
            if n < -1:
                raise ProtocolError(f"negative array length {n} at position {self.pos - 4}")
        if n > self.end - self.pos:
            raise ProtocolError(
                f"array claims {n} elements but only {self.end - self.pos} bytes remain"
            )
        return n


# Byte fields at least this long are not copied by a splicing Writer (record batches).
SPLICE_MIN = 64 << 10


class Writer:
    """Appends encoded primitives to one bytearray.

    With ``splice=True`` byte fields of ``SPLICE_MIN`` bytes or more (a Produce request's
    record batches) are kept by reference: the encoding is then ``parts()``, the bytearray
    cut where they go, and a socket sends the pieces without the copy into one frame.
    """

    __slots__ = ("buf", "spliced")

    def __init__(self, splice: builtins.bool = False) -> None:
        self.buf = bytearray()
        # (position in buf, the bytes that go there), in order
        self.spliced: list[tuple[int, bytes | bytearray | memoryview]] | None = \
            [] if splice else None

    def size(self) -> int:
        """Bytes written, spliced ones included."""
        return len(self.buf) + sum(len(v) for _, v in self.spliced or ())

    def parts(self) -> list[bytes | bytearray | memoryview]:
        """The encoding in pieces that are, back to back, all bytes written."""
        if not self.spliced:
            return [self.buf]
        out: list[bytes | bytearray | memoryview] = []
        view = memoryview(self.buf)
        at = 0
        for pos, v in self.spliced:
            if pos > at:
                out.append(view[at:pos])
            out.append(v)
            at = pos
        if at < len(self.buf):
            out.append(view[at:])
        return out

    def getvalue(self) -> bytes:
        return bytes(self.buf) if not self.spliced else b"".join(self.parts())

    def _bytes(self, v: bytes | bytearray | memoryview) -> None:
        if self.spliced is not None and len(v) >= SPLICE_MIN:
            self.spliced.append((len(self.buf), v))
        else:
            self.buf += v

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def uint16(self, v: int) -> None:
        self.buf += _U16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def uint32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def float64(self, v: float) -> None:
        self.buf += _F64.pack(v)

    def bool(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def uuid(self, v: _uuid.UUID | bytes | None) -> None:
        if v is None:
            self.buf += bytes(16)
        else:
            self.buf += v.bytes if isinstance(v, _uuid.UUID) else bytes(v)

    def uvarint(self, v: int) -> None:
        if v < 0:
            raise ValueError(f"unsigned varint cannot hold {v}")
        out = self.buf
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)

    def varint(self, v: int) -> None:
        self.uvarint((v << 1) ^ (v >> 63))

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self.buf += data

    def nullable_string(self, v: str | None) -> None:
        if v is None:
            self.int16(-1)
        else:
            b = v.encode()
            self.int16(len(b))
            self.buf += b

    def compact_nullable_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
        else:
            b = v.encode()
            self.uvarint(len(b) + 1)
            self.buf += b

    def nullable_bytes(self, v: bytes | bytearray | memoryview | None) -> None:
        if v is None:
            self.int32(-1)
        else:
            self.int32(len(v))
            self._bytes(v)

    def compact_nullable_bytes(self, v: bytes | bytearray | memoryview | None) -> None:
        if v is None:
            self.uvarint(0)
        else:
            self.uvarint(len(v) + 1)
            self._bytes(v)

    def array_length(self, n: int | None, compact: builtins.bool) -> None:
        if compact:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.int32(-1 if n is None else n)
