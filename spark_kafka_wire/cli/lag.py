"""``kafkawire lag GROUP``: how far a consumer group is behind, per partition.

Committed offsets come from Kafka (``client.group_offsets``: OffsetFetch at the group's
coordinator) or, with ``--zookeeper``, from the ``/consumers/<group>/offsets`` layout of
ZooKeeper-era consumers (``client.zookeeper``), the two places a query's ``commitOffsets``
writes. The end is the latest offset as a query resolves it; lag is end minus committed.

On a Kafka 0.7 cluster (found through ZooKeeper) offsets are in ZooKeeper only, in 0.7's
layout ``/consumers/<group>/offsets/<topic>/<broker id>-<partition>``, and the partitions are
shown by their global numbers (broker id, then partition, as queries number them).

For a ZooKeeper-era group, the ``owner`` column names the consumer stream that reads each
partition now: the live consumers registered under ``/consumers/<group>/ids`` and their stream
counts, assigned as those consumers assign themselves (the range assignment,
``client.assignment``), one consumer thread ``<consumer id>-<n>`` per stream.
"""

from __future__ import annotations

import re

import click

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.output import print_table
from spark_kafka_wire.cli.settings import ZOOKEEPER_KEY, GlobalOptions, connected_any
from spark_kafka_wire.cli.topics import cluster_offsets, existing_topic
from spark_kafka_wire.client.fetching.offsets import LATEST
from spark_kafka_wire.client.groups.assignment import range_assign_topics
from spark_kafka_wire.client.metadata.cluster import TopicPartition
from spark_kafka_wire.client.metadata.cluster_api import Cluster
from spark_kafka_wire.client.zookeeper.consumer_offsets import (
    ZooKeeperOffsetStore,
    ZooKeeperSecurity,
)
from spark_kafka_wire.protocol.errors import ErrorCode


def topic_partitions(client: Cluster, topics: list[str]) -> list[TopicPartition]:
    out: list[TopicPartition] = []
    for t in topics:
        out += [(t, p) for p in sorted(existing_topic(client, t).partitions)]
    return out


def kafka_committed(client: Cluster, group: str, topics: list[str]
                    ) -> dict[TopicPartition, int]:
    """The group's commits in Kafka: for the given topics, else for every topic (those
    without a commit left out)."""
    if topics:
        return client.committed_offsets(group, topic_partitions(client, topics))
    md = client.fetch_metadata()
    every = [(t.name, p) for t in md.topics.values()
             if t.error_code == ErrorCode.NONE and not t.is_internal for p in t.partitions]
    return {tp: o for tp, o in client.committed_offsets(group, every).items() if o >= 0}


def zookeeper_timeout_s(client: Cluster) -> float:
    """ZooKeeper's connect bounded as a broker's is (kafka.socket.connection.setup.timeout.ms):
    an ensemble that is not there fails as fast as an unreachable broker would."""
    return client.config.connect_timeout_ms / 1000


def zookeeper_committed(client: Cluster, zookeeper: str, group: str, topics: list[str],
                        security: ZooKeeperSecurity | None = None,
                        ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, str]]:
    """The group's offsets in ZooKeeper (reached as ``security`` says), and the owner of each
    partition by the range assignment of its live consumers (empty when none is
    registered). On Kafka 0.7 the offset nodes have 0.7's names (``<broker id>-<partition>``,
    ``Cluster.layout``) and are shown by global partition number."""
    with ZooKeeperOffsetStore(zookeeper, zookeeper_timeout_s(client), security) as store:
        if topics:
            tps = topic_partitions(client, topics)
        else:
            found = client.fetch_metadata(store.topics(group)).topics
            tps = [(t, p) for t, info in found.items() if info.error_code == ErrorCode.NONE
                   for p in info.partitions]
        layout = client.layout({t for t, _ in tps})
        names = None if layout is None else {(t, p): layout[t][p] for t, p in tps}
        committed = store.fetch(group, tps, names)
        if not topics:
            committed = {tp: o for tp, o in committed.items() if o >= 0}
        members = store.members(group)
    return committed, (stream_owners(client, members) if members else {})


def subscribed_topics(key: str, names: list[str]) -> list[str]:
    """The topics a registration key names: a topic, or a ``*white_list:``/``*black_list:``
    regex (Kafka's TopicFilter: commas mean "or", the whole name must match)."""
    if not key.startswith("*"):
        return [key]
    kind, _, regex = key[1:].partition(":")
    pattern = re.compile(regex.replace(",", "|"))
    matched = [n for n in names if pattern.fullmatch(n)]
    return matched if kind == "white_list" else [n for n in names if n not in matched]


def stream_owners(client: Cluster, members: dict[str, dict[str, int]]
                  ) -> dict[TopicPartition, str]:
    """partition -> consumer stream, by the range assignment of the registered streams."""
    wildcard = any(k.startswith("*") for sub in members.values() for k in sub)
    md = client.fetch_metadata(None if wildcard else sorted(
        {k for sub in members.values() for k in sub}))
    names = sorted(t for t, info in md.topics.items()
                   if info.error_code == ErrorCode.NONE and not info.is_internal)
    # Kafka's TopicCount: consumer c runs threads c-0 .. c-(n-1) for a topic it asked n
    # streams of; each topic is assigned among the threads reading it
    streams: dict[str, list[str]] = {}
    for cid, sub in members.items():
        for n in range(max(sub.values(), default=0)):
            streams[f"{cid}-{n}"] = [t for k, count in sub.items() if n < count
                                     for t in subscribed_topics(k, names)]
    parts = {t: list(md.topics[t].partitions) for t in names}
    return {(t, p): thread
            for t, assignment in range_assign_topics(streams, parts).items()
            for thread, ps in assignment.items() for p in ps}


@click.command(short_help=summary("lag"))
@click.argument("group")
@click.option("--topic", "-t", "topics", multiple=True,
              help="Only this topic (repeatable); its partitions without a commit show '-'.")
@click.option("--zookeeper", metavar="HOST:PORT[/CHROOT]", default=None,
              help="Read the offsets ZooKeeper-era consumers (and commitOffsets=zookeeper) "
              "keep under /consumers/GROUP/offsets instead of Kafka's; without a bootstrap "
              "server, the brokers are found there too. A Kafka 0.7 cluster's offsets are "
              "always read there (/consumers/GROUP/offsets/TOPIC/BROKER-PARTITION).")
@click.pass_obj
def lag(g: GlobalOptions, group: str, topics: tuple[str, ...], zookeeper: str | None) -> None:
    """Committed offset, end offset and lag of GROUP per partition."""
    wanted = list(dict.fromkeys(topics))
    owners: dict[TopicPartition, str] = {}
    extra = {ZOOKEEPER_KEY: zookeeper} if zookeeper else None
    config = g.client_config(extra=extra)
    with connected_any(config) as client:
        if not client.has_group_coordinator:  # Kafka 0.7: offsets live in ZooKeeper only
            zookeeper = client.config.zookeeper_connect
            assert zookeeper is not None  # a 0.7 cluster is found through ZooKeeper
            committed, owners = zookeeper_committed(client, zookeeper, group, wanted,
                                                    client.config.zookeeper_security)
        elif zookeeper:
            committed, owners = zookeeper_committed(client, zookeeper, group, wanted,
                                                    g.zookeeper_security(extra))
        else:
            committed = kafka_committed(client, group, wanted)
        ends = cluster_offsets(client, {tp: LATEST for tp in committed})
    if not committed:
        where = f"ZooKeeper at {zookeeper}" if zookeeper else "Kafka"
        click.echo(f"kafkawire: group {group!r} has no committed offsets in {where}", err=True)
        raise click.exceptions.Exit(1)
    rows = []
    total = 0
    for tp in sorted(committed):
        c, end = committed[tp], ends[tp]
        behind = end - c if c >= 0 else None
        total += behind or 0
        rows.append((tp[0], tp[1], c if c >= 0 else None, end, behind)
                    + ((owners.get(tp),) if owners else ()))
    print_table(("topic", "partition", "committed", "end", "lag")
                + (("owner",) if owners else ()), rows, title=f"group {group}: lag {total:,}")
