"""Kafka 0.7's wire protocol, sans I/O: requests, responses and message sets.

Kafka 0.7 predates the protocol every later client speaks (API keys and versions, correlation
ids, logical offsets). Its documents are the "Wire Format" wiki page (by Jeffrey Damick and
Taylor Gautier), "Writing a Driver for Kafka" and the Kafka design document
(https://kafka.apache.org/documentation/#design, "MessageSetSend" / "MultiMessageSetSend").
What sets it apart, and why it has modules of its own:

- A message is addressed by its byte position in the partition's log; the next message starts
  at ``offset + 4 + LENGTH``. Records unpacked from a compressed message all carry the
  compressed message's offset ("you have to make sure you're doing it on the boundaries of the
  compressed messages, not the inner messages").
- Messages have no key and no timestamp: ``LENGTH | MAGIC | [COMPRESSION] | CRC32 | PAYLOAD``.
- A request is ``length | type | body``, an answer ``length | error code | body``; there is no
  correlation id, so answers are matched to requests by their order on the connection, and
  PRODUCE / MULTIPRODUCE get no answer at all.

``requests`` encodes the five request types, ``responses`` decodes the answers, ``messages``
encodes messages and decodes message sets into record columns.
"""

from __future__ import annotations

from spark_kafka_wire.protocol.kafka07.messages import (
    MessageSetRead,
    decode_message_set,
    encode_message,
    encode_message_set,
    message_ends,
)
from spark_kafka_wire.protocol.kafka07.requests import (
    EARLIEST_TIME,
    LATEST_TIME,
    FetchSpec,
    RequestType,
    encode_fetch,
    encode_multifetch,
    encode_multiproduce,
    encode_offsets,
    encode_produce,
    expects_answer,
)
from spark_kafka_wire.protocol.kafka07.responses import (
    decode_multifetch,
    decode_offsets,
    split_answer,
)

__all__ = [
    "EARLIEST_TIME",
    "LATEST_TIME",
    "FetchSpec",
    "MessageSetRead",
    "RequestType",
    "decode_message_set",
    "decode_multifetch",
    "decode_offsets",
    "encode_fetch",
    "encode_message",
    "encode_message_set",
    "encode_multifetch",
    "encode_multiproduce",
    "encode_offsets",
    "encode_produce",
    "expects_answer",
    "message_ends",
    "split_answer",
]
