"""Reading a byte range [start, end) of one partition of a Kafka 0.7 broker.

A 0.7 FETCH answers the log's bytes from the offset, at most MAX_SIZE of them and never past
the end of the segment holding the offset ("A fetch of messages will not cross the segment
boundary"), cut wherever MAX_SIZE falls. Hence the rules here:

- each FETCH asks for ``min(fetch size, end - offset)`` bytes, so nothing past the range is
  transferred (``end`` is a message boundary: a log end or an offset a read ended at);
- the next FETCH starts after the last complete message of the answer (the decoder's
  ``next_offset``); a message cut short is fetched again whole;
- an answer that holds no complete message although it is as long as was asked means the
  message is larger than the fetch size: the size doubles, as the Kafka design document
  describes for abnormally large messages, up to ``max_fetch_size``
  (:class:`FetchSizeLimitError` past it);
- an empty (or shorter) answer below ``end`` is a segment end: fetch again from the same
  offset, which now lies in the next segment; answers in a row that make no progress are
  waited for under the rule of every reader (``client/fetching/empty_answers.py``: at once, then with
  backoff, within kafka.request.timeout.ms or the operation's deadline).

The next FETCH is sent before a chunk is handed out, so the broker reads while the caller works.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from spark_kafka_wire.client.fetching.empty_answers import EmptyAnswers
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings07
from spark_kafka_wire.client.kafka07.connection import Kafka07Connection, Pending
from spark_kafka_wire.client.wire.hooks import CloseReason
from spark_kafka_wire.protocol.errors import (
    FetchSizeLimitError,
    OffsetInsideMessageError,
    ProtocolError,
    check_kafka07_error,
)
from spark_kafka_wire.protocol.kafka07 import (
    FetchSpec,
    MessageSetRead,
    RequestType,
    decode_message_set,
    decode_multifetch,
    encode_fetch,
    encode_multifetch,
)
from spark_kafka_wire.protocol.limits import decompression_limit
from spark_kafka_wire.protocol.records.columns import DecodedRecords

__all__ = ["fetch_once", "fetch_range", "multifetch"]


def _decode(broker: str, topic: str, partition: int, offset: int,
            body: memoryview, end: int | None, boundary: bool, max_size: int,
            s: FetchSettings07) -> MessageSetRead:
    return decode_message_set(body, offset, end_offset=end, check_crcs=s.check_crcs,
                              start_is_boundary=boundary, max_size=max_size,
                              max_decompressed_size=decompression_limit(
                                  max_size, s.max_decompressed_size), topic=topic,
                              partition=partition, broker=broker)


def fetch_once(conn: Kafka07Connection, topic: str, partition: int, offset: int,
               max_size: int, settings: FetchSettings07 | None = None, *,
               start_is_boundary: bool = False) -> MessageSetRead:
    """One FETCH, decoded: the complete messages among ``max_size`` bytes from ``offset``."""
    s = settings or FetchSettings07()
    code, body = conn.request(RequestType.FETCH, encode_fetch(topic, partition, offset,
                                                              max_size), max_size)
    check_kafka07_error(code, topic=topic, partition=partition, offset=offset,
                        broker=conn.name, context="FETCH")
    return _decode(conn.name, topic, partition, offset, body, None, start_is_boundary,
                   max_size, s)


def multifetch(conn: Kafka07Connection, fetches: Sequence[FetchSpec],
               settings: FetchSettings07 | None = None, *,
               start_is_boundary: bool = False) -> list[MessageSetRead]:
    """Several FETCHes in one MULTIFETCH, decoded in order; the first error code raises,
    naming its topic, partition and offset."""
    s = settings or FetchSettings07()
    code, body = conn.request(RequestType.MULTIFETCH, encode_multifetch(fetches),
                              sum(f.max_size for f in fetches))
    check_kafka07_error(code, broker=conn.name, context="MULTIFETCH")
    try:
        parts = decode_multifetch(body, len(fetches))
    except ProtocolError as exc:
        conn.close(CloseReason.PROTOCOL_ERROR)  # the sizes that delimited the parts are not to be trusted
        raise ProtocolError(exc.reason, broker=conn.name) from None
    out = []
    for f, (part_code, data) in zip(fetches, parts, strict=True):
        check_kafka07_error(part_code, topic=f.topic, partition=f.partition, offset=f.offset,
                            broker=conn.name, context="MULTIFETCH")
        out.append(_decode(conn.name, f.topic, f.partition, f.offset, data, None,
                           start_is_boundary, f.max_size, s))
    return out


def fetch_range(conn: Kafka07Connection, topic: str, partition: int, start: int, end: int,
                settings: FetchSettings07 | None = None, *,
                start_is_boundary: bool = True, shown_partition: int | None = None,
                shown_broker: str | None = None) -> Iterator[DecodedRecords]:
    """The records of the messages at byte offsets [start, end), in chunks of at most the
    fetch size. ``start`` and ``end`` are message boundaries (offsets OFFSETS returned or a
    read ended at); with ``start_is_boundary`` False a start inside a message raises
    :class:`OffsetInsideMessageError` rather than a CRC error.

    Errors name ``partition`` and the connection's broker unless ``shown_partition`` and
    ``shown_broker`` say how the caller's user knows them (a topic's global partition number
    and the broker id, see ``cluster.py``)."""
    s = settings or FetchSettings07()
    wp = partition if shown_partition is None else shown_partition
    wb = shown_broker or conn.name
    offset = start
    size = s.fetch_size
    boundary = start_is_boundary
    empty = EmptyAnswers(conn.conn.config, conn.conn.operation_deadline)
    pending: Pending | None = None

    def send(at: int, max_size: int) -> Pending:
        return conn.send(RequestType.FETCH, encode_fetch(topic, partition, at, max_size),
                         max_size)

    try:
        if offset < end:
            asked = min(size, end - offset)
            pending = send(offset, asked)
        while pending is not None:
            code, body = conn.receive(pending)
            pending = None
            check_kafka07_error(code, topic=topic, partition=wp, offset=offset,
                                broker=wb, context="FETCH")
            read = _decode(wb, topic, wp, offset, body, end, boundary, asked, s)
            if read.messages == 0:
                if len(body) < asked:
                    # A segment end (or nothing to read yet): the same offset again.
                    empty.wait(topic=topic, partition=wp, offset=offset, broker=wb,
                               why=f"the range ends at byte offset {end} (if this persists "
                               "the log no longer reaches that far: truncated, or the offset "
                               "lies past the partition's end on this broker)")
                elif asked == end - offset:
                    if not boundary:
                        raise OffsetInsideMessageError(
                            f"no message starts at byte offset {offset}: what is there "
                            f"claims to run past the end of the range ({end}); the offset "
                            "most likely lies inside a message (Kafka 0.7 brokers do not "
                            "check)", topic=topic, partition=wp, offset=offset,
                            broker=wb)
                    raise ProtocolError(
                        f"the message at byte offset {offset} runs past the end of the range "
                        f"({end}), which is therefore not a message boundary", topic=topic,
                        partition=wp, offset=offset, broker=wb)
                else:
                    size = _grown(size, s, topic, wp, offset, wb, boundary)
                asked = min(size, end - offset)
                pending = send(offset, asked)
                continue
            empty.progressed()
            boundary = True
            offset = read.next_offset
            if offset < end:
                asked = min(size, end - offset)
                pending = send(offset, asked)  # the broker reads while the chunk is used
            yield read.records
    finally:
        if pending is not None:
            conn.abandon(pending)


def _grown(size: int, s: FetchSettings07, topic: str, partition: int, offset: int,
           broker: str, boundary: bool) -> int:
    """The next fetch size when a message did not fit: doubled, up to the limit."""
    if size >= s.max_fetch_size:
        inside = "" if boundary else (" (or the offset lies inside a message, which 0.7 "
                                      "brokers do not check, and its bytes read as a length)")
        raise FetchSizeLimitError(
            f"the message at byte offset {offset} is larger than the largest fetch size, "
            f"{s.max_fetch_size} bytes{inside}; raise the fetch size limit", topic=topic,
            partition=partition, offset=offset, broker=broker)
    return min(size * 2, s.max_fetch_size)
