"""Consumed offsets committed to a consumer group, so lag tools see a Spark query's progress.

A standalone commit (generation -1, no member id) through the group coordinator, the way
Kafka's simple consumer and ``kafka-consumer-groups --reset-offsets`` do it: the query never
joins the group, so it never triggers rebalances and the Spark checkpoint stays the source of
truth. OffsetCommit v0 stores offsets in ZooKeeper on 0.8.1 brokers and is answered by any
broker; from v1 the coordinator found with FindCoordinator keeps them in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from spark_kafka_wire.client.errors import CoordinatorMovedError
from spark_kafka_wire.client.fetching.offsets import by_topic
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicPartition
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.protocol.bodies import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinators,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetFetchRequestTopics,
)
from spark_kafka_wire.protocol.errors import (
    AuthorizationError,
    ErrorCode,
    KafkaError,
    check_error,
    error_for_code,
)
from spark_kafka_wire.protocol.messages import FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1  # FindCoordinator v1+: the transaction coordinator of a transactional id
# Errors that mean "this broker is not (or not yet) the coordinator: look it up again".
_COORDINATOR_MOVED = {
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
}

def find_coordinator(client: KafkaClient, key: str, key_type: int = GROUP_KEY_TYPE
                     ) -> BrokerConnection:
    """Connection to the broker coordinating group ``key`` (or, with TRANSACTION_KEY_TYPE, the
    transactions of transactional id ``key``)."""
    what = coordinated(key, key_type)
    conn = client.any_connection()
    version = conn.version(FIND_COORDINATOR)
    answer: FindCoordinatorResponse | FindCoordinatorResponseCoordinators
    if version >= 4:
        batch: FindCoordinatorRequest = {"key_type": key_type, "coordinator_keys": [key]}
        resp = conn.request(FIND_COORDINATOR, batch)
        entries = [c for c in resp["coordinators"] if c["key"] == key]
        if not entries:
            raise error_for_code(ErrorCode.COORDINATOR_NOT_AVAILABLE, context="FindCoordinator",
                                 message=f"no answer for {what}")
        answer = entries[0]
    else:
        single: FindCoordinatorRequest = {"key": key, "key_type": key_type}
        answer = conn.request(FIND_COORDINATOR, single)
    code = answer["error_code"]
    if code:
        check_coordinated(code, what, None, None, conn, "FindCoordinator",
                          **{"transactional_id" if key_type == TRANSACTION_KEY_TYPE
                             else "group": key})
    return client.broker(answer["node_id"])  # a cluster member: metadata knows its address


def coordinated(key: str, key_type: int = GROUP_KEY_TYPE) -> str:
    """How messages name what a coordinator coordinates: group 'g', transactional id 't'."""
    return f"{'transactional id' if key_type == TRANSACTION_KEY_TYPE else 'group'} {key!r}"


def _group_connection(client: KafkaClient, group: str, version_probe: BrokerConnection | None = None) -> tuple[BrokerConnection, int]:
    """(connection, OffsetCommit version): v0 goes to any broker (ZooKeeper-backed on 0.8.1),
    v1+ to the coordinator."""
    probe = version_probe or client.any_connection()
    if probe.version(OFFSET_COMMIT) == 0 and FIND_COORDINATOR.key not in probe.api_versions:
        return probe, 0
    conn = find_coordinator(client, group)
    return conn, conn.version(OFFSET_COMMIT)


def commit_offsets(
    client: KafkaClient, group: str, offsets: Mapping[TopicPartition, int], metadata: str = "",
    member: tuple[int, str] | None = None, retry: bool = True,
) -> None:
    """Commit ``offsets`` (the next offset to consume, per partition) for ``group``: a
    standalone commit, or with ``member`` (generation, member id) a member's commit, which
    a group with members accepts only from a member of its current generation. ``retry``
    False: one attempt (a member that must rejoin handles REBALANCE_IN_PROGRESS itself)."""
    if not offsets:
        return
    generation, member_id = member if member is not None else (-1, "")

    def attempt() -> None:
        conn, version = _group_connection(client, group)
        body: OffsetCommitRequest = {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "retention_time_ms": -1,
            "topics": [
                {"name": t, "partitions": [
                    {"partition_index": p, "committed_offset": offsets[(t, p)],
                     "commit_timestamp": -1, "committed_metadata": metadata}
                    for p in parts]}
                for t, parts in by_topic(offsets).items()
            ],
        }
        resp = conn.request(OFFSET_COMMIT, body, version)
        for t in resp["topics"]:
            for p in t["partitions"]:
                _check(p["error_code"], group, t["name"], p["partition_index"], conn, "OffsetCommit")

    if retry:
        client.retry(attempt, f"OffsetCommit for group {group!r}")
    else:
        attempt()


def fetch_committed(
    client: KafkaClient, group: str, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, int]:
    """Committed offsets of ``group``; -1 for a partition without a commit."""
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    result = {tp: -1 for tp in wanted}
    for tp, (offset, _) in _offset_fetch(client, group, wanted).items():
        if tp in result:
            result[tp] = offset
    return result


def fetch_group(client: KafkaClient, group: str) -> dict[TopicPartition, tuple[int, str]]:
    """Every offset ``group`` has committed, with its metadata ("" where the broker keeps
    none), by OffsetFetch v2+ for all topics (Kafka 0.10.2+)."""
    return {tp: v for tp, v in _offset_fetch(client, group, None).items() if v[0] >= 0}


def _offset_fetch(client: KafkaClient, group: str, wanted: list[TopicPartition] | None
                  ) -> dict[TopicPartition, tuple[int, str]]:
    def attempt() -> dict[TopicPartition, tuple[int, str]]:
        conn, commit_version = _group_connection(client, group)
        version = conn.version(OFFSET_FETCH)
        if commit_version == 0:
            version = 0  # the v0 pair is ZooKeeper-backed on 0.8.1: keep them together
        topics: list[OffsetFetchRequestTopics] | None = None if wanted is None else \
            [{"name": t, "partition_indexes": parts} for t, parts in by_topic(wanted).items()]
        if topics is None and version < 2:
            raise error_for_code(ErrorCode.UNSUPPORTED_VERSION, context="OffsetFetch",
                                 broker=conn.name,
                                 message="listing a group's offsets needs OffsetFetch v2 "
                                         "(Kafka 0.10.2+)")
        if version >= 8:
            grouped: OffsetFetchRequest = {"groups": [{"group_id": group, "topics": topics}]}
            resp = conn.request(OFFSET_FETCH, grouped, version)
            groups = [g for g in resp["groups"] if g["group_id"] == group]
            if not groups:
                raise error_for_code(ErrorCode.COORDINATOR_NOT_AVAILABLE, context="OffsetFetch",
                                     message=f"no answer for group {group!r}")
            _check(groups[0]["error_code"], group, None, None, conn, "OffsetFetch")
            answer_topics = groups[0]["topics"]
        else:
            single: OffsetFetchRequest = {"group_id": group, "topics": topics}
            resp = conn.request(OFFSET_FETCH, single, version)
            _check(resp["error_code"], group, None, None, conn, "OffsetFetch")
            answer_topics = resp["topics"]
        result = {}
        for t in answer_topics:
            for p in t["partitions"]:
                tp = (t["name"], p["partition_index"])
                if p["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and version == 0:
                    continue  # 0.8 answers UNKNOWN_TOPIC_OR_PARTITION for "no offset yet"
                _check(p["error_code"], group, *tp, conn, "OffsetFetch")
                result[tp] = (p["committed_offset"], p["metadata"] or "")
        return result

    return client.retry(attempt, f"OffsetFetch for group {group!r}")


def check_coordinated(code: int, what: str, topic: str | None, partition: int | None,
                      conn: BrokerConnection, context: str, **ids: str) -> None:
    """Raise the error ``code`` names, saying ``what`` (``coordinated(...)``) it concerns; a
    coordinator that moved or is loading is a CoordinatorMovedError (look it up again).
    ``ids``: the group and transactional id of the request (``group=``,
    ``transactional_id=``), which an authorization error names with the ACL to grant."""
    if not code:
        return
    if code in _COORDINATOR_MOVED:
        base = error_for_code(code)
        raise CoordinatorMovedError(base.spec, topic=topic, partition=partition, broker=conn.name,
                                    context=context, message=what)
    try:
        check_error(code, topic=topic, partition=partition, broker=conn.name, context=context,
                    principal=conn.config.principal, **ids)
    except KafkaError as exc:
        if not isinstance(exc, AuthorizationError) or exc.resource_type == "Topic":
            exc.args = (f"{exc.args[0]} ({what})",)  # (an ACL error names its group or id)
        raise


def _check(code: int, group: str, topic: str | None, partition: int | None,
           conn: BrokerConnection, context: str) -> None:
    check_coordinated(code, coordinated(group), topic, partition, conn, context, group=group)
