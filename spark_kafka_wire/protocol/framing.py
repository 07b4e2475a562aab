"""Request/response framing: int32 size, header, body.

Request header v1 (api_key, api_version, correlation_id, client_id as a classic nullable
string) is used for non-flexible versions, v2 (v1 plus a tagged-field section) from an API's
first flexible version. Response header v0 is the correlation id; v1 adds tagged fields,
except that ApiVersions responses always use v0 so that any client can read them.
"""

from __future__ import annotations

import struct
from typing import Any

from spark_kafka_wire.protocol.engine import ApiSpec, RequestT
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.messages import API_VERSIONS
from spark_kafka_wire.protocol.primitives import Reader, Writer

_SIZE = struct.Struct(">i")
MAX_FRAME_SIZE = 1 << 30  # refuse to allocate more for one response


def request_header_version(spec: ApiSpec, version: int) -> int:
    return 2 if spec.is_flexible(version) else 1


def response_header_version(spec: ApiSpec, version: int) -> int:
    if spec.key == API_VERSIONS.key:
        return 0
    return 1 if spec.is_flexible(version) else 0


def encode_request(
    spec: ApiSpec[RequestT, Any], version: int, correlation_id: int, client_id: str | None,
    body: RequestT,
) -> bytearray:
    """A complete size-prefixed request frame (record data is copied into it once)."""
    parts = encode_request_parts(spec, version, correlation_id, client_id, body, splice=False)
    assert len(parts) == 1 and isinstance(parts[0], bytearray)
    return parts[0]


def encode_request_parts(
    spec: ApiSpec[RequestT, Any], version: int, correlation_id: int, client_id: str | None,
    body: RequestT, splice: bool = True,
) -> list[bytes | bytearray | memoryview]:
    """A complete size-prefixed request frame in pieces that are, back to back, the frame:
    large byte fields (record batches) are not copied into it (see ``Writer``)."""
    w = Writer(splice=splice)
    w.int32(0)  # size placeholder
    w.int16(spec.key)
    w.int16(version)
    w.int32(correlation_id)
    w.nullable_string(client_id)
    if request_header_version(spec, version) >= 2:
        w.uvarint(0)  # no tagged fields
    spec.encode_request_into(w, version, body)
    _SIZE.pack_into(w.buf, 0, w.size() - 4)
    return w.parts()


def decode_request_header(frame: bytes | memoryview) -> tuple[int, int, int, str | None, int]:
    """(api_key, api_version, correlation_id, client_id, body_start) of a request frame body
    (without the size prefix). Header v2 is detected by the caller from the API version."""
    r = Reader(frame)
    return r.int16(), r.int16(), r.int32(), r.nullable_string(), r.pos


def frame_size(prefix: bytes | memoryview) -> int:
    """Body size announced by a 4-byte prefix, validated against MAX_FRAME_SIZE."""
    if len(prefix) < _SIZE.size:
        raise ProtocolError(f"response frame size prefix of {len(prefix)} bytes (needs 4)")
    (n,) = _SIZE.unpack_from(prefix, 0)
    if n < 0 or n > MAX_FRAME_SIZE:
        raise ProtocolError(f"response frame claims {n} bytes; the peer is not speaking Kafka")
    return n


# What a server that is not Kafka sends first, and what it then is: a Kafka answer begins
# with its size (int32, big-endian), which these bytes would make 1 GiB or more, or a TLS
# record (type 0x15 alert or 0x16 handshake, then major version 3) of about 350 MB.
_FOREIGN_BEGINNINGS = (
    (b"HTTP/", "an HTTP server"),
    (b"SSH-", "an SSH server"),
    (b"\x15\x03", "a TLS port (its answer is a TLS alert)"),
    (b"\x16\x03", "a TLS port (its answer is a TLS handshake record)"),
)


def foreign_protocol(head: bytes | memoryview) -> str | None:
    """What the server whose answer begins with ``head`` (its first bytes, at least 4) looks
    like when those bytes are another protocol's, not a Kafka size prefix: "an HTTP server",
    "a TLS port ...", "an SSH server"; None when they are not one of these."""
    first = bytes(head[:8])
    if len(first) < 4:
        return None
    for prefix, kind in _FOREIGN_BEGINNINGS:
        if first.startswith(prefix) or prefix.startswith(first):
            return kind
    return None


def split_response(spec: ApiSpec, version: int, frame: bytes | memoryview) -> tuple[int, memoryview]:
    """(correlation_id, body) of one response frame body (without the size prefix)."""
    r = Reader(frame)
    correlation_id = r.int32()
    if response_header_version(spec, version) >= 1:
        for _ in range(r.uvarint()):
            r.uvarint()
            r.take(r.uvarint(), "header tagged field")
    return correlation_id, r.buf[r.pos : r.end]
