"""Kafka 0.7 answers: the response header, and the FETCH, MULTIFETCH and OFFSETS bodies.

Layouts ("Writing a Driver for Kafka": Response Header, Fetch Response, Offsets Response; the
Kafka design document's "MessageSetSend" and "MultiMessageSetSend")::

    answer       = RESPONSE_LENGTH int32 | ERROR_CODE int16 | body
    FETCH        = MESSAGES (0 or more, the last one possibly cut short)
    OFFSETS      = NUMBER_OFFSETS int32 | OFFSETS int64 * NUMBER_OFFSETS
    MULTIFETCH   = (SIZE int32 | ERROR_CODE int16 | MESSAGES) per FETCH, in request order

Within a MULTIFETCH answer each part is itself a MessageSetSend: SIZE counts its error code
and its messages, as RESPONSE_LENGTH does for the whole answer.

The functions here take an answer without its RESPONSE_LENGTH (the connection reads that to
delimit the frame) and raise ProtocolError for bytes that cannot be an answer; error codes
are returned, not raised, since only the caller knows topic, partition and offset.
"""

from __future__ import annotations

import struct

from spark_kafka_wire.protocol.errors import ProtocolError

__all__ = ["decode_multifetch", "decode_offsets", "split_answer"]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PART = struct.Struct(">ih")  # SIZE, ERROR_CODE


def split_answer(frame: bytes | memoryview) -> tuple[int, memoryview]:
    """(ERROR_CODE, body) of an answer given without its RESPONSE_LENGTH."""
    view = memoryview(frame)
    if len(view) < 2:
        raise ProtocolError(f"a Kafka 0.7 answer of {len(view)} bytes has no error code")
    return _INT16.unpack_from(view, 0)[0], view[2:]


def decode_offsets(body: bytes | memoryview) -> list[int]:
    """The offsets of an OFFSETS answer's body, as sent (descending)."""
    view = memoryview(body)
    if len(view) < 4:
        raise ProtocolError("an OFFSETS answer ends before NUMBER_OFFSETS")
    (n,) = _INT32.unpack_from(view, 0)
    if n < 0 or len(view) != 4 + 8 * n:
        raise ProtocolError(f"an OFFSETS answer of {len(view)} bytes cannot hold {n} offsets")
    return list(struct.unpack_from(f">{n}q", view, 4))


def decode_multifetch(body: bytes | memoryview, count: int) -> list[tuple[int, memoryview]]:
    """(ERROR_CODE, messages) for each of the ``count`` FETCHes of a MULTIFETCH answer."""
    view = memoryview(body)
    out: list[tuple[int, memoryview]] = []
    pos = 0
    for i in range(count):
        if len(view) - pos < _PART.size:
            raise ProtocolError(f"a MULTIFETCH answer ends before part {i + 1} of {count}")
        size, code = _PART.unpack_from(view, pos)
        end = pos + 4 + size
        if size < 2 or end > len(view):
            raise ProtocolError(f"part {i + 1} of a MULTIFETCH answer declares {size} bytes, "
                                f"{len(view) - pos - 4} are left")
        out.append((code, view[pos + _PART.size:end]))
        pos = end
    if pos != len(view):
        raise ProtocolError(f"a MULTIFETCH answer holds {len(view) - pos} bytes after its "
                            f"{count} parts")
    return out
