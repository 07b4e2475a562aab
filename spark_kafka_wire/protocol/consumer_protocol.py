"""What consumers put in a classic group's opaque bytes (Kafka's ConsumerProtocolSubscription
and ConsumerProtocolAssignment, versions 0-3; never flexible): the topics a member subscribes
to and the partitions the group leader assigned it.

DescribeGroups answers them as bytes (``member_metadata`` / ``member_assignment``) because the
group protocol is the client's business; every Kafka consumer (Java, librdkafka, kafka-python,
Spark's) writes these layouts when the group's ``protocol_type`` is ``consumer``. Each starts
with its version; later versions only add fields at the end (owned partitions, generation,
rack), so the fields read here are where version 0 has them.
"""

from __future__ import annotations

from spark_kafka_wire.protocol.primitives import Reader

#: DescribeGroups' protocol_type of groups whose members run Kafka's consumer protocol.
CONSUMER_PROTOCOL_TYPE = "consumer"


def decode_assignment(data: bytes | memoryview) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of a member's assignment; [] for no bytes (a member of a
    group that is not Stable has none yet)."""
    if not len(data):
        return []
    r = Reader(data)
    r.int16()  # version
    out: list[tuple[str, int]] = []
    for _ in range(r.array_length(False)):
        topic = r.string()
        out += [(topic, r.int32()) for _ in range(r.array_length(False))]
    return out


def decode_subscription(data: bytes | memoryview) -> list[str]:
    """The topics a member subscribes to; [] for no bytes."""
    if not len(data):
        return []
    r = Reader(data)
    r.int16()  # version
    return [r.string() for _ in range(r.array_length(False))]
