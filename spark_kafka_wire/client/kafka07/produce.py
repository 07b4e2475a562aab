"""PRODUCE and MULTIPRODUCE to a Kafka 0.7 broker.

0.7 answers neither ("There is no response to a PRODUCE Request. There is currently no way to
tell if the produce was successful or not"); a broker that rejects a message set (a bad CRC,
a malformed message) closes the connection instead. So by default a produce is followed on the
same connection by an OFFSETS request for the log end: the broker handles a connection's
requests in order, so its answer proves the produce was handled, and a closed connection
says it was refused. A broker that drops a message larger than its max.message.size does so
silently; only the log end (returned) can show it.
"""

from __future__ import annotations

from collections.abc import Sequence

from spark_kafka_wire.client.kafka07.connection import Kafka07Connection
from spark_kafka_wire.client.kafka07.offsets import latest_offset
from spark_kafka_wire.protocol.kafka07 import RequestType, encode_multiproduce, encode_produce

__all__ = ["multiproduce", "produce"]


def produce(conn: Kafka07Connection, topic: str, partition: int,
            message_set: bytes | bytearray | memoryview, *, confirm: bool = True) -> int | None:
    """Send ``message_set`` (``protocol.kafka07.encode_message_set``) to one partition.

    With ``confirm`` the partition's log end after the produce is returned (see above);
    without, None at once.
    """
    conn.send(RequestType.PRODUCE, encode_produce(topic, partition, message_set))
    return latest_offset(conn, topic, partition) if confirm else None


def multiproduce(conn: Kafka07Connection,
                 sets: Sequence[tuple[str, int, bytes | bytearray | memoryview]], *,
                 confirm: bool = True) -> list[int] | None:
    """Send message sets to several partitions of one broker in one MULTIPRODUCE; with
    ``confirm`` the log end of each partition after it, in order."""
    conn.send(RequestType.MULTIPRODUCE, encode_multiproduce(sets))
    if not confirm:
        return None
    return [latest_offset(conn, topic, partition) for topic, partition, _ in sets]
