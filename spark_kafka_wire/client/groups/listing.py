"""Consumer groups as Kafka's admin tools see them: which exist, their members and what each
was assigned, and deleting them (``kafkawire groups``).

A group lives at its coordinator (FindCoordinator), so listing asks every broker
(ListGroups: each answers for the groups it coordinates) and describing or deleting asks each
group's coordinator. Members' subscriptions and assignments are the consumer protocol's bytes
(``protocol.consumer_protocol``), which brokers fill in only while the group is Stable.
Offsets (committed, reset) are ``client.group_offsets``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from spark_kafka_wire.client.groups.group_offsets import (
    check_coordinated,
    coordinated,
    find_coordinator,
)
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicPartition
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.protocol.bodies import (
    ConsumerGroupDescribeRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
)
from spark_kafka_wire.protocol.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
)
from spark_kafka_wire.protocol.errors import ErrorCode, check_error
from spark_kafka_wire.protocol.messages import (
    CONSUMER_GROUP_DESCRIBE,
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
)

#: DescribeGroups' state of a group its coordinator does not know (it never existed, or its
#: last member left and its offsets expired), as Kafka answers before v6's GROUP_ID_NOT_FOUND.
DEAD = "Dead"


@dataclass(frozen=True)
class GroupListing:
    """A group as ListGroups names it; ``state`` and ``type`` are "" where the broker's
    ListGroups is older than v4 / v5 (Kafka 2.6 / 3.8)."""

    group_id: str
    protocol_type: str
    state: str
    type: str
    coordinator: int


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    instance_id: str | None  # group.instance.id of a static member (KIP-345)
    client_id: str
    client_host: str
    subscription: tuple[str, ...]
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str  # Stable, PreparingRebalance, CompletingRebalance, Empty, Dead
    protocol_type: str
    protocol: str  # the assignor the members agreed on (range, cooperative-sticky, ...)
    members: tuple[GroupMember, ...]
    coordinator: str  # the coordinator's broker, host:port


def list_groups(client: KafkaClient) -> list[GroupListing]:
    """Every group of the cluster, sorted by id: ListGroups at every broker."""
    brokers = client.fetch_metadata([]).brokers
    found: dict[str, GroupListing] = {}
    for node_id in sorted(brokers):
        conn = client.broker(node_id)
        listing: ListGroupsRequest = {"states_filter": [], "types_filter": []}
        resp = conn.request(LIST_GROUPS, listing)
        check_error(resp["error_code"], broker=conn.name, context="ListGroups")
        for g in resp["groups"]:
            found[g["group_id"]] = GroupListing(g["group_id"], g["protocol_type"],
                                                g["group_state"], g["group_type"], node_id)
    return [found[k] for k in sorted(found)]


def describe_group(client: KafkaClient, group: str) -> GroupDescription:
    """The group's state and members at its coordinator; state ``Dead`` (no members) for a
    group the coordinator does not know."""

    def attempt() -> GroupDescription:
        conn = find_coordinator(client, group)
        body: DescribeGroupsRequest = {"groups": [group], "include_authorized_operations": False}
        resp = conn.request(DESCRIBE_GROUPS, body)
        g = next((g for g in resp["groups"] if g["group_id"] == group), None)
        if g is None or g["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
            # a group of the consumer protocol (KIP-848) is "not a classic group" to
            # DescribeGroups: ConsumerGroupDescribe describes it, as Kafka's admin client does
            return (describe_consumer_group(conn, group)
                    or GroupDescription(group, DEAD, "", "", (), conn.name))
        check_coordinated(g["error_code"], coordinated(group), None, None, conn,
                          "DescribeGroups", group=group)
        consumer = g["protocol_type"] == CONSUMER_PROTOCOL_TYPE
        members = tuple(
            GroupMember(
                m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
                tuple(decode_subscription(m["member_metadata"])) if consumer else (),
                tuple(sorted(decode_assignment(m["member_assignment"]))) if consumer else ())
            for m in sorted(g["members"], key=lambda m: m["member_id"]))
        return GroupDescription(group, g["group_state"], g["protocol_type"],
                                g["protocol_data"], members, conn.name)

    return client.retry(attempt, f"DescribeGroups for group {group!r}")


def describe_consumer_group(conn: BrokerConnection, group: str) -> GroupDescription | None:
    """A group of the consumer protocol (KIP-848, Kafka 4.0+) at its coordinator ``conn``:
    ConsumerGroupDescribe, where the broker has it; None for a group it does not know (or no
    such API). Its members' assignments come by topic name; ``protocol`` is the server-side
    assignor (uniform, range)."""
    if CONSUMER_GROUP_DESCRIBE.key not in conn.api_versions:
        return None
    body: ConsumerGroupDescribeRequest = {"group_ids": [group],
                                          "include_authorized_operations": False}
    resp = conn.request(CONSUMER_GROUP_DESCRIBE, body)
    g = next((g for g in resp["groups"] if g["group_id"] == group), None)
    if g is None or g["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
        return None
    check_coordinated(g["error_code"], coordinated(group), None, None, conn,
                      "ConsumerGroupDescribe", group=group)
    members = tuple(
        GroupMember(
            m["member_id"], m["instance_id"], m["client_id"], m["client_host"],
            tuple(m["subscribed_topic_names"]),
            tuple(sorted((t["topic_name"], p)
                         for t in (m["assignment"] or {"topic_partitions": []})[
                             "topic_partitions"]
                         for p in t["partitions"])))
        for m in sorted(g["members"], key=lambda m: m["member_id"]))
    return GroupDescription(group, g["group_state"], CONSUMER_PROTOCOL_TYPE,
                            g["assignor_name"], members, conn.name)


def delete_groups(client: KafkaClient, groups: Iterable[str]) -> None:
    """Delete each group and its committed offsets (DeleteGroups at its coordinator, Kafka
    1.1+); a group with members fails with NON_EMPTY_GROUP, an unknown one with
    GROUP_ID_NOT_FOUND, naming the group."""
    for group in dict.fromkeys(groups):
        def attempt(group: str = group) -> None:
            conn = find_coordinator(client, group)
            body: DeleteGroupsRequest = {"groups_names": [group]}
            resp = conn.request(DELETE_GROUPS, body)
            for r in resp["results"]:
                check_coordinated(r["error_code"], coordinated(group), None, None, conn,
                                  "DeleteGroups", group=group)

        client.retry(attempt, f"DeleteGroups for group {group!r}")
