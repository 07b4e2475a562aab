"""Kafka 0.7 requests: PRODUCE, FETCH, MULTIFETCH, MULTIPRODUCE and OFFSETS, as bytes.

Layouts ("Writing a Driver for Kafka" and the 0.7 "Wire Format" wiki page, Request Header)::

    request        = REQUEST_LENGTH int32 | REQUEST_TYPE int16 | body
    topic address  = TOPIC_LENGTH int16 | TOPIC (ASCII) | PARTITION int32
    PRODUCE (0)    = topic address | MESSAGES_LENGTH int32 | MESSAGES
    FETCH (1)      = topic address | OFFSET int64 | MAX_SIZE int32
    OFFSETS (4)    = topic address | TIME int64 | MAX_NUMBER int32
    MULTIFETCH (2) = COUNT int16 | (topic address | OFFSET int64 | MAX_SIZE int32) * COUNT
    MULTIPRODUCE(3)= COUNT int16 | (topic address | MESSAGES_LENGTH int32 | MESSAGES) * COUNT

REQUEST_LENGTH counts everything after itself. The multi-request header is the request type
followed by an int16 count of the chained single requests, each without its own length and
type (as Kafka 0.7.2's MultiFetchRequest and MultiProducerRequest write them).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from enum import IntEnum
from typing import NamedTuple

from spark_kafka_wire.protocol.primitives import INT32_MAX

__all__ = [
    "EARLIEST_TIME",
    "LATEST_TIME",
    "FetchSpec",
    "RequestType",
    "encode_fetch",
    "encode_multifetch",
    "encode_multiproduce",
    "encode_offsets",
    "encode_produce",
    "expects_answer",
]


class RequestType(IntEnum):
    """REQUEST_TYPE values ("Writing a Driver for Kafka", table under Request Header)."""

    PRODUCE = 0
    FETCH = 1
    MULTIFETCH = 2
    MULTIPRODUCE = 3
    OFFSETS = 4


# OFFSETS' TIME: "-1 = LATEST, -2 = EARLIEST"; any other value is milliseconds since the epoch.
LATEST_TIME = -1
EARLIEST_TIME = -2

_HEAD = struct.Struct(">ih")  # REQUEST_LENGTH, REQUEST_TYPE
_INT16 = struct.Struct(">h")
_PARTITION = struct.Struct(">i")
_OFFSET_SIZE = struct.Struct(">qi")  # FETCH's OFFSET + MAX_SIZE, OFFSETS' TIME + MAX_NUMBER
_MAX_REQUEST = INT32_MAX


class FetchSpec(NamedTuple):
    """One FETCH of a MULTIFETCH: where to read and how many bytes at most."""

    topic: str
    partition: int
    offset: int
    max_size: int


def expects_answer(kind: RequestType) -> bool:
    """Whether the broker answers a request of this type: "There is no response to a PRODUCE
    Request" (nor to MULTIPRODUCE, a chain of them)."""
    return kind not in (RequestType.PRODUCE, RequestType.MULTIPRODUCE)


def _address(topic: str, partition: int) -> bytes:
    name = topic.encode("ascii")  # "Topic name, ASCII": it names a directory on the broker
    if not name or len(name) > 0x7FFF:
        raise ValueError(f"a Kafka 0.7 topic name has 1 to 32767 ASCII characters: {topic!r}")
    return _INT16.pack(len(name)) + name + _PARTITION.pack(partition)


def _frame(kind: RequestType, parts: Sequence[bytes | memoryview]) -> bytes:
    size = 2 + sum(len(p) for p in parts)
    if size > _MAX_REQUEST:
        raise ValueError(f"a {kind.name} request of {size} bytes is larger than int32 allows")
    return b"".join((_HEAD.pack(size, kind), *parts))


def _messages(message_set: bytes | bytearray | memoryview) -> tuple[bytes, bytes | memoryview]:
    data = message_set if isinstance(message_set, (bytes, memoryview)) else bytes(message_set)
    return _PARTITION.pack(len(data)), data


def encode_produce(topic: str, partition: int,
                   message_set: bytes | bytearray | memoryview) -> bytes:
    """PRODUCE: ``message_set`` (see :func:`..messages.encode_message_set`) to one partition."""
    return _frame(RequestType.PRODUCE, [_address(topic, partition), *_messages(message_set)])


def encode_fetch(topic: str, partition: int, offset: int, max_size: int) -> bytes:
    """FETCH: up to ``max_size`` bytes of the log from byte ``offset``."""
    return _frame(RequestType.FETCH, [_address(topic, partition),
                                      _OFFSET_SIZE.pack(offset, max_size)])


def encode_offsets(topic: str, partition: int, time: int, max_number: int) -> bytes:
    """OFFSETS: up to ``max_number`` segment start offsets before ``time`` (ms), or
    :data:`LATEST_TIME` / :data:`EARLIEST_TIME`."""
    return _frame(RequestType.OFFSETS, [_address(topic, partition),
                                        _OFFSET_SIZE.pack(time, max_number)])


def _count(kind: RequestType, n: int) -> bytes:
    if not 0 < n <= 0x7FFF:
        raise ValueError(f"a {kind.name} chains 1 to 32767 requests, not {n}")
    return _INT16.pack(n)


def encode_multifetch(fetches: Sequence[FetchSpec]) -> bytes:
    """MULTIFETCH: several FETCHes in one request, answered together in this order."""
    parts = [_count(RequestType.MULTIFETCH, len(fetches))]
    for f in fetches:
        parts += [_address(f.topic, f.partition), _OFFSET_SIZE.pack(f.offset, f.max_size)]
    return _frame(RequestType.MULTIFETCH, parts)


def encode_multiproduce(
        sets: Iterable[tuple[str, int, bytes | bytearray | memoryview]]) -> bytes:
    """MULTIPRODUCE: (topic, partition, message set) for several partitions of one broker."""
    parts: list[bytes | memoryview] = []
    for topic, partition, message_set in sets:
        parts += [_address(topic, partition), *_messages(message_set)]
    n = len(parts) // 3
    return _frame(RequestType.MULTIPRODUCE, [_count(RequestType.MULTIPRODUCE, n), *parts])
