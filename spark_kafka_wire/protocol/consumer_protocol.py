"""What consumers put in a classic group's opaque bytes (Kafka's ConsumerProtocolSubscription
and ConsumerProtocolAssignment, versions 0-3; never flexible): the topics a member subscribes
to and the partitions the group leader assigned it.

``kafkawire consume --group`` joins groups as a member, so it writes both too: its
subscription in JoinGroup (v1+ with the partitions it owns, KIP-429, which the leader of a
cooperative group needs) and, as the leader, every member's assignment in SyncGroup, at the
version the member subscribed with (a member reads no higher version than it writes).

DescribeGroups answers them as bytes (``member_metadata`` / ``member_assignment``) because the
group protocol is the client's business; every Kafka consumer (Java, librdkafka, kafka-python,
Spark's) writes these layouts when the group's ``protocol_type`` is ``consumer``. Each starts
with its version; later versions only add fields at the end (owned partitions, generation,
rack), so the fields read here are where version 0 has them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from spark_kafka_wire.protocol.primitives import Reader, Writer

#: DescribeGroups' protocol_type of groups whose members run Kafka's consumer protocol.
CONSUMER_PROTOCOL_TYPE = "consumer"
#: The highest version of each layout (Kafka 3.x/4.x write 3).
MAX_VERSION = 3


@dataclass(frozen=True)
class Subscription:
    """A member's ConsumerProtocolSubscription, as far as an assignor uses it: the topics, the
    partitions it owns (v1+; what a cooperative assignor keeps in place), the generation it
    owned them in (v2+) and the version it was written at."""

    topics: list[str]
    owned: list[tuple[str, int]] = field(default_factory=list)
    generation_id: int = -1
    version: int = 0


def _by_topic(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    """Partitions grouped by topic, both sorted (the layouts carry topic -> partition ids)."""
    out: dict[str, list[int]] = {}
    for topic, p in sorted(set(partitions)):
        out.setdefault(topic, []).append(p)
    return out


def _write_partitions(w: Writer, partitions: Iterable[tuple[str, int]]) -> None:
    grouped = _by_topic(partitions)
    w.array_length(len(grouped), False)
    for topic, ps in grouped.items():
        w.nullable_string(topic)
        w.array_length(len(ps), False)
        for p in ps:
            w.int32(p)


def encode_subscription(topics: Sequence[str], owned: Iterable[tuple[str, int]] = (),
                        generation_id: int = -1, version: int = MAX_VERSION,
                        rack_id: str | None = None) -> bytes:
    """A ConsumerProtocolSubscription: ``topics``, no user data, and from v1 the partitions
    owned, v2 the generation, v3 the rack (null: none)."""
    if not 0 <= version <= MAX_VERSION:
        raise ValueError(f"ConsumerProtocolSubscription has versions 0-{MAX_VERSION}")
    w = Writer()
    w.int16(version)
    w.array_length(len(topics), False)
    for t in topics:
        w.nullable_string(t)
    w.nullable_bytes(None)  # user data: none (only sticky assignors of Java's client use it)
    if version >= 1:
        _write_partitions(w, owned)
    if version >= 2:
        w.int32(generation_id)
    if version >= 3:
        w.nullable_string(rack_id)
    return w.getvalue()


def encode_assignment(partitions: Iterable[tuple[str, int]], version: int = MAX_VERSION
                      ) -> bytes:
    """A ConsumerProtocolAssignment of ``partitions`` and no user data (every version has
    the same two fields)."""
    if not 0 <= version <= MAX_VERSION:
        raise ValueError(f"ConsumerProtocolAssignment has versions 0-{MAX_VERSION}")
    w = Writer()
    w.int16(version)
    _write_partitions(w, partitions)
    w.nullable_bytes(None)
    return w.getvalue()


def decode_member_subscription(data: bytes | memoryview) -> Subscription:
    """The whole Subscription a member sent (what the group leader assigns from); the fields
    of a version newer than 3 after ours are left unread, as Kafka's readers do."""
    if not len(data):
        return Subscription([])
    r = Reader(data)
    version = r.int16()
    topics = [r.string() for _ in range(r.array_length(False))]
    r.nullable_bytes()  # user data
    owned: list[tuple[str, int]] = []
    generation = -1
    if version >= 1:
        for _ in range(r.array_length(False)):
            topic = r.string()
            owned += [(topic, r.int32()) for _ in range(r.array_length(False))]
    if version >= 2:
        generation = r.int32()
    return Subscription(topics, owned, generation, version)


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
