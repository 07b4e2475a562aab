"""``kafkawire topics`` and ``kafkawire describe TOPIC``: what a cluster holds, before a query;
``topics create``, ``delete`` and ``add-partitions`` change it (Kafka 0.8+ brokers that take
CreateTopics, DeleteTopics and CreatePartitions at their controller).

Offsets come from ``client.offsets.resolve_offsets``, the resolution a query uses: the
earliest from ListOffsets, the latest from the high watermark of a Fetch as well, because some
brokers (Tansu) answer ListOffsets(latest) with the start of the last batch + 1.

A Kafka 0.7 cluster (found through ZooKeeper, ``settings.connected_any``) answers the same
questions from its ZooKeeper registrations and OFFSETS, as a query plans on it: partitions
numbered across brokers (broker id, then partition; each partition's "leader" is the broker
holding it) and byte offsets.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import click

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.output import print_table, stdout_is_terminal
from spark_kafka_wire.cli.settings import GlobalOptions, connected, connected_any
from spark_kafka_wire.client.errors import INVALID_VALUE, KAFKA07_UNSUPPORTED, ConfigurationError
from spark_kafka_wire.client.fetching.offsets import EARLIEST, LATEST, READ_UNCOMMITTED
from spark_kafka_wire.client.metadata.admin import (
    TopicConfig,
    create_partitions,
    create_topics,
    delete_topics,
    describe_topic_configs,
)
from spark_kafka_wire.client.metadata.cluster import (
    KafkaClient,
    TopicInfo,
    TopicPartition,
    topic_error,
)
from spark_kafka_wire.client.metadata.cluster_adapters import KafkaCluster
from spark_kafka_wire.client.metadata.cluster_api import Cluster
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    error_for_code,
)


class TopicsGroup(click.Group):
    """``topics`` lists when no subcommand is named; a first argument that is not one is the
    pattern of ``topics list`` (``kafkawire topics 'orders.*'``)."""

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return "list", self.commands["list"], args
        return super().resolve_command(ctx, args)


@click.group(cls=TopicsGroup, short_help=summary("topics"), invoke_without_command=True)
@click.option("--internal", is_flag=True, help="Also list internal topics (__consumer_offsets).")
@click.pass_context
def topics(ctx: click.Context, internal: bool) -> None:
    """List topics with their partition counts; create and delete topics, add partitions.

    \b
    kafkawire topics                    every topic
    kafkawire topics 'orders.*'         those whose whole name matches a regular expression
    kafkawire topics create orders --partitions 3 --config retention.ms=86400000
    kafkawire topics add-partitions orders 2
    kafkawire topics delete orders
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_topics, pattern=None, internal=internal)


@topics.command("list")
@click.argument("pattern", required=False)
@click.option("--internal", is_flag=True, help="Also list internal topics (__consumer_offsets).")
@click.pass_context
def list_topics(ctx: click.Context, pattern: str | None, internal: bool) -> None:
    """Topics whose whole name matches PATTERN (a regular expression, as ``subscribePattern``),
    every topic without one."""
    g = ctx.find_object(GlobalOptions)
    assert g is not None, "the kafkawire group sets the global options"
    internal = internal or bool(ctx.parent and ctx.parent.params.get("internal"))
    matches = name_matcher(pattern, "topics") if pattern is not None else None
    with connected_any(g.client_config()) as client:
        md = client.fetch_metadata()
    rows = [(t.name, t.num_partitions) for t in sorted(md.topics.values(), key=lambda t: t.name)
            if t.error_code == ErrorCode.NONE and (internal or not t.is_internal)
            and (matches is None or matches(t.name))]
    print_table(("topic", "partitions"), rows)


def _configs(pairs: tuple[str, ...]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ConfigurationError.of(INVALID_VALUE, "TOPIC_CONFIG_PAIR", pair=pair)
        configs[name.strip()] = value
    return configs


@topics.command("create")
@click.argument("name")
@click.option("--partitions", "-p", type=click.IntRange(min=1), default=None,
              help="Partition count [default: the broker's num.partitions].")
@click.option("--replication-factor", "-r", type=click.IntRange(min=1), default=None,
              help="Replicas of each partition [default: the broker's "
              "default.replication.factor].")
@click.option("--config", "-c", "configs", multiple=True, metavar="NAME=VALUE",
              help="A topic config (repeatable), e.g. cleanup.policy=compact.")
@click.option("--if-not-exists", is_flag=True, help="A topic that exists is not an error.")
@click.pass_obj
def create(g: GlobalOptions, name: str, partitions: int | None,
           replication_factor: int | None, configs: tuple[str, ...],
           if_not_exists: bool) -> None:
    """Create topic NAME (CreateTopics at the controller) and wait until every partition has
    a leader that answers for it."""
    settings = _configs(configs)
    with connected(g.client_config(), "kafkawire topics create") as client:
        try:
            create_topics(client, [(name, partitions or -1)],
                          replication_factor=replication_factor or -1, configs=settings)
        except TopicAlreadyExistsError:
            if not if_not_exists:
                raise
            click.echo(f"topic {name} exists")
            return
        count = existing_topic(KafkaCluster(client), name).num_partitions
    click.echo(f"created topic {name} with {count} partition{'s' * (count != 1)}")


@topics.command("delete")
@click.argument("name")
@click.option("--if-exists", is_flag=True, help="A topic that does not exist is not an error.")
@click.pass_obj
def delete(g: GlobalOptions, name: str, if_exists: bool) -> None:
    """Delete topic NAME and its records (DeleteTopics at the controller)."""
    with connected(g.client_config(), "kafkawire topics delete") as client:
        try:
            delete_topics(client, [name])
        except UnknownTopicOrPartitionError:
            if not if_exists:
                raise
            click.echo(f"no topic {name}")
            return
    click.echo(f"deleted topic {name}")


@topics.command("add-partitions")
@click.argument("name")
@click.argument("count", type=click.IntRange(min=1))
@click.pass_obj
def add_partitions(g: GlobalOptions, name: str, count: int) -> None:
    """Add COUNT partitions to topic NAME (CreatePartitions, Kafka 1.0+). Keys hash to other
    partitions afterwards: records of one key written before and after may be in two."""
    with connected(g.client_config(), "kafkawire topics add-partitions") as client:
        before = existing_topic(KafkaCluster(client), name).num_partitions
        create_partitions(client, {name: before + count})
    click.echo(f"topic {name}: {before} -> {before + count} partitions")


def name_matcher(pattern: str, what: str) -> Callable[[str], object]:
    """Whether a whole topic name matches ``pattern`` (as ``subscribePattern``'s regex);
    a bad regex is a ConfigurationError naming ``what`` gave it."""
    try:
        return re.compile(pattern).fullmatch
    except re.error as exc:
        raise ConfigurationError.of(
            INVALID_VALUE, "NOT_A_REGEX", what=what, pattern=pattern, exc=str(exc)) from None


def existing_topic(client: Cluster, topic: str) -> TopicInfo:
    """The topic's metadata, or UnknownTopicOrPartition saying it does not exist (or the
    broker's refusal, such as a missing DESCRIBE ACL, saying only that)."""
    info = client.fetch_metadata([topic]).topics.get(topic)
    if info is None or info.error_code:
        raise topic_error(topic, info, client.config.principal,
                          "no such topic (kafkawire topics lists them)")
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
@click.option("--configs", "configs_only", is_flag=True,
              help="Print the topic's configs (name, value, source) instead of its partitions.")
@click.option("--all-configs", is_flag=True,
              help="With the configs, also those at their default value.")
@click.pass_obj
def describe(g: GlobalOptions, topic: str, configs_only: bool, all_configs: bool) -> None:
    """Per partition: leader, replicas, in-sync replicas, earliest and latest offsets; then
    the topic's configs that are not at their default (DescribeConfigs).

    A pipe gets one table per run (TSV): the partitions, or with --configs the configs.
    """
    config = g.client_config()
    if config.registry_only and configs_only:
        raise ConfigurationError.of(KAFKA07_UNSUPPORTED, "TOPIC_CONFIGS")
    # the configs table is drawn on a terminal; a pipe gets it with --configs only
    wanted = configs_only or (not config.registry_only and stdout_is_terminal())
    configs: list[TopicConfig] | None = None
    with connected_any(config) as cluster:
        if not configs_only:
            info = existing_topic(cluster, topic)
            parts = sorted(info.partitions)
            lo, hi = earliest_latest(cluster, topic, parts)
    if wanted:
        with connected(config, "kafkawire describe --configs") as client:
            configs = topic_configs(client, topic, configs_only)
    if not configs_only:
        rows = []
        for p in parts:
            meta = info.partitions[p]
            rows.append((p, meta.leader, ",".join(map(str, meta.replicas)) or "-",
                         ",".join(map(str, meta.isr)) or "-", lo[p], hi[p]))
        print_table(("partition", "leader", "replicas", "isr", "earliest", "latest"),
                    rows, title=f"{topic}: {len(parts)} partitions")
    if configs is not None:
        shown = [c for c in configs if all_configs or not c.is_default]
        rows_c = [(c.name, "(sensitive)" if c.sensitive else c.value, c.source) for c in shown]
        title = f"{topic}: {'configs' if all_configs else 'configs not at their default'}"
        print_table(("config", "value", "source"), rows_c, title=title)


def topic_configs(client: KafkaClient, topic: str, required: bool) -> list[TopicConfig] | None:
    """The topic's configs; None where the broker does not offer DescribeConfigs (before
    Kafka 0.11) unless ``required`` (--configs), which then fails saying so."""
    try:
        return describe_topic_configs(client, topic)
    except UnsupportedVersionError:
        if required:
            raise
        return None
