"""What samsa 0.3.11 cannot do, wrapped around its own pieces (this module is not samsa's).

samsa refuses to compress (``Message.pack_into`` raises NotImplementedError for a codec) and
does not decompress what it fetches; and its ``fetch`` returns nothing when the answer is
shorter than a message header. These helpers keep samsa doing the protocol work (requests built
with its StructuredBytesIO / ``write_request_header`` / ``Message.encode``, answers read by its
Connection and ``decode_messages``) and add only the codec step, written here from the
"Writing a Driver for Kafka" (0.7) description of compressed messages: the inner messages,
concatenated, are compressed and become the PAYLOAD of one magic-1 message whose COMPRESSION
byte says gzip (1) or snappy (2). The CRC covers the payload only, so the attribute byte is
set after samsa encoded the message. Snappy is written as snappy-java's SnappyOutputStream does
(what a 0.7 producer sends) or as one raw block; both are read.
"""

from __future__ import annotations

import gzip
import struct

import snappy

from tests.support.samsa07.client import (
    REQUEST_TYPE_FETCH,
    REQUEST_TYPE_PRODUCE,
    Client,
    Message,
    decode_messages,
    write_request_header,
)
from tests.support.samsa07.exceptions import ProtocolClientError
from tests.support.samsa07.utils.structuredio import StructuredBytesIO

GZIP, SNAPPY = 1, 2
_XERIAL = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_FRAME = 4  # samsa's MessageSetFrameHeader (the MESSAGES_LENGTH of a produce)


def _compress(codec: int, data: bytes, snappy_framing: str) -> bytes:
    if codec == GZIP:
        return gzip.compress(data)
    if codec == SNAPPY:
        block = snappy.compress(data)
        if snappy_framing == "raw":
            return block
        return _XERIAL + struct.pack(">i", len(block)) + block
    raise ValueError(f"codec {codec}")


def _decompress(codec: int, data: bytes) -> bytes:
    if codec == GZIP:
        return gzip.decompress(data)
    if codec == SNAPPY:
        if data[:8] != _XERIAL[:8]:
            return snappy.decompress(data)
        out, pos = bytearray(), 16
        while pos + 4 <= len(data):
            (size,) = struct.unpack_from(">i", data, pos)
            out += snappy.decompress(data[pos + 4:pos + 4 + size])
            pos += 4 + size
        return bytes(out)
    raise ValueError(f"codec {codec}")


def compressed_message_set(payloads: list[bytes], codec: int, *, inner_version: int = 0,
                           snappy_framing: str = "xerial") -> bytes:
    """One compressed magic-1 message (with samsa's 4-byte MESSAGES_LENGTH in front) holding
    ``payloads`` encoded by samsa as ``inner_version`` messages."""
    inner = bytes(Message.encode(payloads, version=inner_version).getvalue())[_FRAME:]
    outer = bytearray(Message.encode([_compress(codec, inner, snappy_framing)],
                                     version=1).getvalue())
    outer[_FRAME + 5] = codec  # frame(4) | LENGTH(4) | MAGIC(1) | COMPRESSION
    return bytes(outer)


def produce_compressed(client: Client, topic: str, partition: int, payloads: list[bytes],
                       codec: int, **kwargs: object) -> None:
    """``Client.produce`` with a compressed message set."""
    request = StructuredBytesIO()
    request.pack(2, REQUEST_TYPE_PRODUCE)
    write_request_header(request, topic, partition)
    request.write(compressed_message_set(payloads, codec, **kwargs))  # type: ignore[arg-type]
    client.handler.request(request, has_response=False)


def deep(messages: list[Message]) -> list[tuple[int, bytes]]:
    """(offset, payload) of fetched samsa messages, compressed ones opened with samsa's
    ``decode_messages`` (inner messages report their wrapper's offset)."""
    out: list[tuple[int, bytes]] = []
    for m in messages:
        codec = m.get("compression", 0) & 0x03
        if codec:
            inner = _decompress(codec, bytes(m.payload))
            out += [(m.offset, p) for _, p in deep(list(decode_messages(inner, 0)))]
        else:
            out.append((m.offset, bytes(m.payload)))
    return out


def fetch_raw(client: Client, topic: str, partition: int, offset: int,
              size: int) -> tuple[int, bytes]:
    """A FETCH sent and answered through samsa's client, returning (error code, the message
    bytes as received): what ``Client.fetch`` would decode, including a partial message or a
    broken header at the end."""
    request = StructuredBytesIO()
    request.pack(2, REQUEST_TYPE_FETCH)
    write_request_header(request, topic, partition)
    request.pack(8, offset)
    request.pack(4, size)
    future = client.handler.request(request)
    try:
        return 0, bytes(future.get(timeout=10))
    except ProtocolClientError as exc:
        return exc.ERROR_CODE, b""
