"""``kafkawire topics`` and ``kafkawire describe TOPIC``: what a cluster holds, before a query.

Offsets come from ``client.offsets.resolve_offsets``, the resolution a query uses: the
earliest from ListOffsets, the latest from the high watermark of a Fetch as well, because some
brokers (Tansu) answer ListOffsets(latest) with the start of the last batch + 1.

A Kafka 0.7 cluster (found through ZooKeeper, ``settings.connected_any``) answers the same
questions from its ZooKeeper registrations and OFFSETS, as a query plans on it: partitions
numbered across brokers (broker id, then partition; each partition's "leader" is the broker
holding it) and byte offsets.
"""

from __future__ import annotations

from dataclasses import replace

import click

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.output import print_table
from spark_kafka_wire.cli.settings import GlobalOptions, connected_any
from spark_kafka_wire.client.cluster import TopicInfo, TopicPartition
from spark_kafka_wire.client.cluster_api import Cluster
from spark_kafka_wire.client.offsets import EARLIEST, LATEST, READ_UNCOMMITTED
from spark_kafka_wire.protocol.errors import ErrorCode, error_for_code


@click.command(short_help=summary("topics"))
@click.option("--internal", is_flag=True, help="Also list internal topics (__consumer_offsets).")
@click.pass_obj
def topics(g: GlobalOptions, internal: bool) -> None:
    """List topics with their partition counts."""
    with connected_any(g.client_config()) as client:
        md = client.fetch_metadata()
    rows = [(t.name, t.num_partitions) for t in sorted(md.topics.values(), key=lambda t: t.name)
            if t.error_code == ErrorCode.NONE and (internal or not t.is_internal)]
    print_table(("topic", "partitions"), rows)


def existing_topic(client: Cluster, topic: str) -> TopicInfo:
    """The topic's metadata, or UnknownTopicOrPartition saying it does not exist."""
    info = client.fetch_metadata([topic]).topics.get(topic)
    if info is None or info.error_code:
        raise error_for_code(info.error_code if info else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             topic=topic, context="Metadata",
                             message="no such topic (kafkawire topics lists them)")
    return info


def partitions_of(info: TopicInfo, partition: int | None) -> list[int]:
    """All partitions of the topic, or the one asked for (which must exist)."""
    if partition is None:
        return sorted(info.partitions)
    if partition not in info.partitions:
        # The code's own hint ("check the topic name; it may not exist yet") would send the
        # user looking for a topic that is there: the partition is what is missing.
        error = error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        spec = replace(error.spec, hint=f"Give a partition between 0 and "
                       f"{info.num_partitions - 1} (kafkawire describe {info.name} lists them)")
        raise type(error)(spec, topic=info.name, partition=partition, message=(
            f"topic {info.name!r} exists, with partitions 0-{info.num_partitions - 1}; "
            f"partition {partition} does not exist"))
    return [partition]


def cluster_offsets(client: Cluster, specs: dict[TopicPartition, int],
                    isolation_level: int = READ_UNCOMMITTED) -> dict[TopicPartition, int]:
    """Earliest (-2) or latest (-1) offsets as a query resolves them, on either kind of
    cluster (0.7: OFFSETS, byte offsets, no transactions to isolate)."""
    return client.list_offsets(specs, isolation_level)


def earliest_latest(client: Cluster, topic: str, parts: list[int],
                    isolation_level: int = READ_UNCOMMITTED
                    ) -> tuple[dict[int, int], dict[int, int]]:
    """(earliest, latest) offset per partition, as a query resolves them (latest: the last
    stable offset under read_committed)."""
    lo = cluster_offsets(client, {(topic, p): EARLIEST for p in parts}, isolation_level)
    hi = cluster_offsets(client, {(topic, p): LATEST for p in parts}, isolation_level)
    return {p: lo[(topic, p)] for p in parts}, {p: hi[(topic, p)] for p in parts}


@click.command(short_help=summary("describe"))
@click.argument("topic")
@click.pass_obj
def describe(g: GlobalOptions, topic: str) -> None:
    """Per partition: leader, replicas, in-sync replicas, earliest and latest offsets."""
    with connected_any(g.client_config()) as client:
        info = existing_topic(client, topic)
        parts = sorted(info.partitions)
        lo, hi = earliest_latest(client, topic, parts)
    rows = []
    for p in parts:
        meta = info.partitions[p]
        rows.append((p, meta.leader, ",".join(map(str, meta.replicas)) or "-",
                     ",".join(map(str, meta.isr)) or "-", lo[p], hi[p]))
    print_table(("partition", "leader", "replicas", "isr", "earliest", "latest"),
                rows, title=f"{topic}: {len(parts)} partitions")
