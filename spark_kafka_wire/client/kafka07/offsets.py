"""OFFSETS on a Kafka 0.7 broker: the earliest and latest byte offsets, and offsets by time.

"Writing a Driver for Kafka" (Offsets): the answer lists, in descending order, the first offset
of every segment last modified before TIME, plus the log end ("the offset that the next message
sent to the partition will be written to") when the last segment qualifies. TIME -1 asks for
the latest offset, -2 for the earliest. So offsets by time have segment granularity: the
answer's first offset starts the newest segment older than the time, and records after it may
be older or newer than the time; 0.7 keeps no finer index.
"""

from __future__ import annotations

from spark_kafka_wire.client.errors import BrokerConnectionError
from spark_kafka_wire.client.kafka07.connection import Kafka07Connection
from spark_kafka_wire.protocol.errors import ProtocolError, check_kafka07_error
from spark_kafka_wire.protocol.kafka07 import (
    EARLIEST_TIME,
    LATEST_TIME,
    RequestType,
    decode_offsets,
    encode_offsets,
)

__all__ = ["earliest_offset", "latest_offset", "offsets_before"]


def offsets_before(conn: Kafka07Connection, topic: str, partition: int, time: int,
                   max_number: int = 1, *, shown_partition: int | None = None,
                   shown_broker: str | None = None) -> list[int]:
    """Up to ``max_number`` offsets before ``time`` (ms since the epoch, or -1 latest,
    -2 earliest), newest first, as the broker lists them. A partition without a log here
    (never written on this broker) answers no offsets for a time and [0] for -1 / -2.
    ``shown_partition`` / ``shown_broker``: how errors name them (``fetch.fetch_range``)."""
    wp = partition if shown_partition is None else shown_partition
    wb = shown_broker or conn.name
    try:
        code, body = conn.request(RequestType.OFFSETS,
                                  encode_offsets(topic, partition, time, max_number))
    except BrokerConnectionError as exc:
        if type(exc) is not BrokerConnectionError:
            raise  # a timeout says what it is
        # 0.7 has no error answer for OFFSETS: a partition the broker does not have (or a
        # negative MAX_NUMBER) makes it close the connection.
        raise BrokerConnectionError(
            conn.name, f"{exc.reason}. A Kafka 0.7 broker closes the connection on OFFSETS "
            f"for a partition it does not have: check that partition {partition} of topic "
            f"{topic!r} is on broker {wb} (ZooKeeper /brokers/topics/{topic})") from None
    check_kafka07_error(code, topic=topic, partition=wp, broker=wb, context="OFFSETS")
    try:
        return decode_offsets(body)
    except ProtocolError as exc:
        raise ProtocolError(exc.reason, topic=topic, partition=wp, broker=wb) from None


def _one(conn: Kafka07Connection, topic: str, partition: int, time: int,
         **shown: int | str | None) -> int:
    found = offsets_before(conn, topic, partition, time, 1, **shown)  # type: ignore[arg-type]
    if not found:
        # A partition with no log yet (a topic created on another broker, or never written
        # here): 0.7 answers no offsets at all; its log will start at byte 0.
        return 0
    return found[0]


def earliest_offset(conn: Kafka07Connection, topic: str, partition: int,
                    **shown: int | str | None) -> int:
    """The first byte offset the broker still holds (the first segment's start)."""
    return _one(conn, topic, partition, EARLIEST_TIME, **shown)


def latest_offset(conn: Kafka07Connection, topic: str, partition: int,
                  **shown: int | str | None) -> int:
    """The log end: where the next message will be written."""
    return _one(conn, topic, partition, LATEST_TIME, **shown)
