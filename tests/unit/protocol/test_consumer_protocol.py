"""The consumer protocol's member bytes (Kafka's ConsumerProtocolSubscription and
ConsumerProtocolAssignment) as kafka-python writes them at every version, read back."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from spark_kafka_wire.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    decode_member_subscription,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from spark_kafka_wire.protocol.errors import ProtocolError
from tests.support.errors import raises_condition


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
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", "truncated data"):
        decode_assignment(data[:-7])  # into the partitions (user data is not read)


@pytest.mark.parametrize("version", range(4))
def test_our_subscription_is_kafkas_at_every_version(version: int) -> None:
    """kafka-python reads our bytes as the values we wrote, writes the very same bytes for
    them, and we read its bytes back."""
    owned = [("orders", 3), ("orders", 1), ("t", 0)]
    ours = encode_subscription(["orders", "t"], owned, generation_id=7, version=version,
                               rack_id="r1" if version >= 3 else None)
    theirs = ConsumerProtocolSubscription.decode(ours, version=version)
    assert theirs.topics == ["orders", "t"] and theirs.user_data is None
    if version >= 1:
        assert [(o.topic, o.partitions) for o in theirs.owned_partitions] == \
            [("orders", [1, 3]), ("t", [0])]
    if version >= 2:
        assert theirs.generation_id == 7
    if version >= 3:
        assert theirs.rack_id == "r1"
    again = ConsumerProtocolSubscription(
        version=version, topics=["orders", "t"], user_data=None,
        owned_partitions=[("orders", [1, 3]), ("t", [0])] if version else [],
        generation_id=7, rack_id="r1" if version >= 3 else None).encode()
    assert bytes(again) == ours
    sub = decode_member_subscription(again)
    assert sub == Subscription(["orders", "t"], sorted(owned) if version else [],
                               7 if version >= 2 else -1, version)
    assert decode_subscription(ours) == ["orders", "t"]


@pytest.mark.parametrize("version", range(4))
def test_our_assignment_is_kafkas_at_every_version(version: int) -> None:
    parts = [("t", 5), ("orders", 7), ("orders", 0), ("orders", 2)]
    ours = encode_assignment(parts, version)
    theirs = ConsumerProtocolAssignment.decode(ours, version=version)
    assert [(a.topic, a.partitions) for a in theirs.assigned_partitions] == \
        [("orders", [0, 2, 7]), ("t", [5])]
    assert theirs.user_data is None
    again = ConsumerProtocolAssignment(version=version,
                                       assigned_partitions=[("orders", [0, 2, 7]), ("t", [5])],
                                       user_data=None).encode()
    assert bytes(again) == ours
    assert decode_assignment(ours) == sorted(parts)
    assert decode_assignment(encode_assignment([], version)) == []


def test_versions_beyond_the_layouts_are_refused() -> None:
    with pytest.raises(ValueError, match="versions 0-3"):
        encode_subscription(["t"], version=4)
    with pytest.raises(ValueError, match="versions 0-3"):
        encode_assignment([], version=-1)
