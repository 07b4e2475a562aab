"""Topic administration needed by the connector, the CLI and the tests (CreateTopics,
DeleteTopics, CreatePartitions, DeleteRecords, DescribeConfigs)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError
from spark_kafka_wire.client.fetching.offsets import LATEST, by_topic, list_offsets
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicInfo, TopicPartition
from spark_kafka_wire.protocol.bodies import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    CreateTopicsRequestTopicsConfigs,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
)
from spark_kafka_wire.protocol.engine import ApiSpec, RequestT, ResponseT
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from spark_kafka_wire.protocol.messages import (
    CONFIG_SOURCES,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DEFAULT_CONFIG_SOURCE,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CONFIGS,
    TOPIC_RESOURCE,
)


def create_topics(
    client: KafkaClient,
    topics: Iterable[tuple[str, int]],
    replication_factor: int = -1,
    configs: dict[str, str] | None = None,
    exist_ok: bool = False,
    timeout_ms: int = 30_000,
) -> None:
    """Create (name, partitions) topics through the controller; -1 = broker default
    replication. Waits until every new topic is ready for writes: its partitions in metadata,
    each with a leader that answers for it. A KRaft broker lists the leader of a new partition
    before it has loaded it and refuses the first writes (NOT_LEADER_OR_FOLLOWER); a writer
    without idempotence retrying them would reorder its batches."""
    wanted = list(topics)
    cfg: list[CreateTopicsRequestTopicsConfigs] = [
        {"name": k, "value": v} for k, v in (configs or {}).items()]
    body: CreateTopicsRequest = {
        "topics": [
            {"name": name, "num_partitions": n, "replication_factor": replication_factor,
             "assignments": [], "configs": cfg}
            for name, n in wanted
        ],
        "timeout_ms": timeout_ms,
        "validate_only": False,
    }

    resp = client.retry(partial(_to_controller, client, CREATE_TOPICS, body), "CreateTopics")
    for t in resp["topics"]:
        code = t["error_code"]
        if code:
            exc = error_for_code(code, topic=t["name"], context="CreateTopics",
                                 message=t.get("error_message"),
                                 principal=client.config.principal)
            if isinstance(exc, TopicAlreadyExistsError) and exist_ok:
                continue
            raise exc
    _wait_until_ready(client, wanted, "waiting for the new topic", "topic creation")


def _wait_until_ready(client: KafkaClient, wanted: list[tuple[str, int]], context: str,
                      what: str) -> None:
    """Until each (topic, partitions) has that many partitions in metadata, each with a
    leader that answers ListOffsets for it (an error here is retried)."""
    names = [name for name, _ in wanted]

    def visible() -> None:
        md = client.fetch_metadata(names)
        for name, n in wanted:
            info = md.topics.get(name)
            if info is None or info.error_code or len(info.partitions) < n \
                    or any(p.leader < 0 for p in info.partitions.values()):
                raise error_for_code(ErrorCode.LEADER_NOT_AVAILABLE, topic=name,
                                     context=context)
        list_offsets(client, {(name, p): LATEST for name, n in wanted for p in range(n)})

    client.retry(visible, what, retries=20)


def create_partitions(client: KafkaClient, totals: dict[str, int],
                      timeout_ms: int = 30_000) -> None:
    """Grow each topic to ``totals[topic]`` partitions (the new total, as in Kafka's
    ``kafka-topics --alter --partitions``) through the controller, which places the new
    partitions (CreatePartitions, Kafka 1.0+). A total not above the current count is
    INVALID_PARTITIONS; a topic that does not exist UNKNOWN_TOPIC_OR_PARTITION. Returns once
    every new partition has a leader that answers for it, as ``create_topics`` does."""
    wanted = list(totals.items())
    body: CreatePartitionsRequest = {
        "topics": [{"name": name, "count": n, "assignments": None} for name, n in wanted],
        "timeout_ms": timeout_ms,
        "validate_only": False,
    }

    resp = client.retry(partial(_to_controller, client, CREATE_PARTITIONS, body),
                        "CreatePartitions")
    for r in resp["results"]:
        if r["error_code"]:
            raise error_for_code(r["error_code"], topic=r["name"], context="CreatePartitions",
                                 message=r.get("error_message"))
    _wait_until_ready(client, wanted, "waiting for the new partitions", "partition creation")


def ensure_topic(
    client: KafkaClient,
    topic: str,
    *,
    auto_create: bool = False,
    create: bool = False,
    partitions: int = -1,
    replication_factor: int = -1,
) -> TopicInfo:
    """Metadata of ``topic``; when it does not exist: created with CreateTopics (``create``;
    -1 = the broker's default, which needs CreateTopics v4+, Kafka 2.4+), or by the broker
    itself on a Metadata request that allows it (``auto_create``; the broker's
    auto.create.topics.enable decides), or else UnknownTopicOrPartition naming the topic."""
    try:
        return client.topic(topic)
    except UnknownTopicOrPartitionError:
        if not (create or auto_create):
            raise error_for_code(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic=topic, context="Metadata",
                message="the topic does not exist; set createTopic=true (with "
                "createTopicPartitions) to create it, or kafka.allow.auto.create.topics=true "
                "to let a broker with auto.create.topics.enable create it",
            ) from None
    if create:
        version = client.any_connection().version(CREATE_TOPICS)
        if (partitions < 0 or replication_factor < 0) and version < 4:
            raise ConfigurationError.of(
                CONFIGURATION, "CREATE_TOPICS_NEEDS_COUNTS", version=version)
        # exist_ok: another task may create the same topic at the same moment
        create_topics(client, [(topic, partitions)], replication_factor, exist_ok=True)
        return client.topic(topic, refresh=True)

    def attempt() -> TopicInfo:
        md = client.fetch_metadata([topic], allow_auto_create=True)
        info = md.topics.get(topic)
        if info is None or info.error_code or not info.partitions:
            code = info.error_code if info is not None and info.error_code \
                else ErrorCode.LEADER_NOT_AVAILABLE
            raise error_for_code(
                code, topic=topic, context="Metadata with allow_auto_topic_creation",
                message="the broker did not create the topic (is auto.create.topics.enable "
                "off?); set createTopic=true to create it with CreateTopics",
            )
        return info

    return client.retry(attempt, "topic auto-creation")


def delete_topics(client: KafkaClient, topics: Iterable[str], timeout_ms: int = 30_000) -> None:
    """Delete ``topics`` through the controller (DeleteTopics v0-5 name them in a list, v6 in
    structs that may carry a topic id instead); a topic that does not exist is an error."""
    names = list(topics)

    body: DeleteTopicsRequest = {"topic_names": names, "topics": [{"name": n} for n in names],
            "timeout_ms": timeout_ms}
    resp = client.retry(partial(_to_controller, client, DELETE_TOPICS, body), "DeleteTopics")
    for r in resp["responses"]:
        if r["error_code"]:
            raise error_for_code(r["error_code"], topic=r["name"], context="DeleteTopics",
                                 message=r.get("error_message"),
                                 principal=client.config.principal)


def delete_records(client: KafkaClient, offsets: Mapping[TopicPartition, int],
                   timeout_ms: int = 30_000) -> dict[TopicPartition, int]:
    """Delete every record below ``offsets[(topic, partition)]`` (-1: up to the high
    watermark) through each partition's leader (DeleteRecords, Kafka 0.11+): the partition's
    log start offset moves there, as retention would move it. Returns the new log start
    offset (low watermark) of each partition."""
    out: dict[TopicPartition, int] = {}
    by_leader: dict[int, list[TopicPartition]] = {}
    for tp in offsets:
        by_leader.setdefault(client.leader(*tp), []).append(tp)
    for leader, tps in by_leader.items():
        body: DeleteRecordsRequest = {"topics": [{"name": t, "partitions": [
                    {"partition_index": p, "offset": offsets[(t, p)]} for p in parts]}
                    for t, parts in by_topic(tps).items()],
                "timeout_ms": timeout_ms}
        resp = client.retry(partial(_request_to, client, leader, body), "DeleteRecords")
        for t in resp["topics"]:
            for p in t["partitions"]:
                if p["error_code"]:
                    raise error_for_code(p["error_code"], topic=t["name"],
                                         partition=p["partition_index"], context="DeleteRecords",
                                         principal=client.config.principal)
                out[(t["name"], p["partition_index"])] = p["low_watermark"]
    return out


def _to_controller(client: KafkaClient, spec: ApiSpec[RequestT, ResponseT],
                   body: RequestT) -> ResponseT:
    """``spec`` with ``body`` sent to the controller the metadata names, else to any broker
    (which forwards it, as KRaft brokers do).

    A topic answered NOT_CONTROLLER raises NotControllerError here, inside the caller's
    retry: the controller moved, so the metadata is refreshed and the request sent again to
    the new one (as Java's admin client does), instead of failing the operation."""
    md = client.fetch_metadata([])
    conn = client.broker(md.controller_id) if md.controller_id >= 0 else client.any_connection()
    resp = conn.request(spec, body)
    answer = cast(Mapping[str, Any], resp)  # any of the admin APIs' responses: read by key
    for key in ("topics", "responses", "results"):
        for t in answer.get(key) or ():
            if t.get("error_code") == ErrorCode.NOT_CONTROLLER:
                raise error_for_code(ErrorCode.NOT_CONTROLLER, topic=t.get("name"),
                                     broker=conn.name, context=spec.name,
                                     message=t.get("error_message"))
    return resp


def _request_to(client: KafkaClient, node_id: int, body: DeleteRecordsRequest
                ) -> DeleteRecordsResponse:
    return client.broker(node_id).request(DELETE_RECORDS, body)


@dataclass(frozen=True)
class TopicConfig:
    """One config of a topic as the broker answers it. ``value`` is None for a sensitive one
    (the broker never sends those) or one without a value."""

    name: str
    value: str | None
    source: str  # CONFIG_SOURCES' name: topic, broker, default, ...
    is_default: bool
    read_only: bool
    sensitive: bool


def describe_topic_configs(client: KafkaClient, topic: str) -> list[TopicConfig]:
    """Every config of ``topic`` (DescribeConfigs, Kafka 0.11+), by name. Any broker answers
    for a topic; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION naming it."""
    body: DescribeConfigsRequest = {
        "resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": topic,
                       "configuration_keys": None}]}
    resp = client.retry(lambda: client.any_connection().request(DESCRIBE_CONFIGS, body),
                        "DescribeConfigs")
    configs: list[TopicConfig] = []
    for result in resp["results"]:
        if result["error_code"]:
            raise error_for_code(result["error_code"], topic=topic, context="DescribeConfigs",
                                 message=result.get("error_message"),
                                 principal=client.config.principal)
        for c in result["configs"]:
            code = c.get("config_source", -1)
            if code >= 0:  # v1+: where the value comes from
                default, source = code == DEFAULT_CONFIG_SOURCE, CONFIG_SOURCES.get(code, "unknown")
            else:  # v0: only whether it is the default
                default = bool(c.get("is_default"))
                source = "default" if default else "topic"
            configs.append(TopicConfig(c["name"], c["value"], source, default, c["read_only"],
                                       c["is_sensitive"]))
    return sorted(configs, key=lambda c: c.name)
