"""The consumer protocol's member bytes (Kafka's ConsumerProtocolSubscription and
ConsumerProtocolAssignment) as kafka-python writes them at every version, read back."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from spark_kafka_wire.protocol.consumer_protocol import decode_assignment, decode_subscription
from spark_kafka_wire.protocol.errors import ProtocolError


@pytest.mark.parametrize("version", range(4))
def test_assignment_and_subscription_of_every_version(version: int) -> None:
    assigned = [("orders", [0, 2, 7]), ("ünïcode-topic", []), ("t", [5])]
    data = ConsumerProtocolAssignment(version=version, assigned_partitions=assigned,
                                      user_data=b"\x00sticky").encode()
    assert decode_assignment(data) == [("orders", 0), ("orders", 2), ("orders", 7), ("t", 5)]
    sub = ConsumerProtocolSubscription(
        version=version, topics=["orders", "t"], user_data=None,
        owned_partitions=[("orders", [1])] if version else [], generation_id=9,
        rack_id="rack-1" if version >= 3 else None).encode()
    assert decode_subscription(sub) == ["orders", "t"]


def test_no_bytes_is_no_assignment_and_cut_bytes_fail() -> None:
    """A member of a group that is not Stable has empty metadata and assignment."""
    assert decode_assignment(b"") == [] and decode_subscription(b"") == []
    data = ConsumerProtocolAssignment(version=0, assigned_partitions=[("orders", [0, 1])],
                                      user_data=None).encode()
    with pytest.raises(ProtocolError, match="truncated data"):
        decode_assignment(data[:-7])  # into the partitions (user data is not read)
