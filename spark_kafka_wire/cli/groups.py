"""``kafkawire groups``: consumer groups as ``kafka-consumer-groups`` shows and changes them.

``groups`` lists every group (ListGroups at every broker); ``groups describe GROUP`` shows per
partition the committed offset, the end, the lag and the member assigned to it (DescribeGroups
at the coordinator, the members' assignments read as Kafka's consumer protocol);
``groups reset-offsets`` moves a group's committed offsets (a dry run unless ``--execute``, as
Kafka's tool, and only while the group has no members: a live consumer would overwrite them
at its next commit); ``groups delete`` deletes empty groups and their offsets. Groups live at
a coordinator from Kafka 0.9 on.

With ``--zookeeper`` each subcommand works on the groups of ZooKeeper-era consumers instead
(Kafka 0.8's high-level consumer, 0.7's, and queries committing with
``commitOffsets=zookeeper``): ``/consumers/<group>`` holding ``offsets/<topic>/<partition>``
and the live consumers under ``ids`` (``client.zookeeper``), as Kafka's own
``kafka-consumer-groups --zookeeper`` listed, described and deleted them before Kafka 2.0
removed that mode. The member of each partition is then the consumer stream the range
assignment gives it (``cli.lag.stream_owners``); a Kafka 0.7 cluster's groups are only there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import click

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.lag import kafka_committed, zookeeper_committed
from spark_kafka_wire.cli.output import print_table, stdout_is_terminal
from spark_kafka_wire.cli.settings import ZOOKEEPER_KEY, GlobalOptions, connected, connected_any
from spark_kafka_wire.cli.start_offsets import (
    ABSOLUTE,
    BEGINNING,
    END,
    TIME,
    StartSpec,
    start_offset,
)
from spark_kafka_wire.cli.times import EpochMsType
from spark_kafka_wire.cli.topics import cluster_offsets, existing_topic
from spark_kafka_wire.client.errors import INVALID_VALUE, ConfigurationError
from spark_kafka_wire.client.fetching.offsets import EARLIEST, LATEST, READ_UNCOMMITTED
from spark_kafka_wire.client.groups.group_offsets import commit_offsets
from spark_kafka_wire.client.groups.listing import (
    DEAD,
    GroupDescription,
    delete_groups,
    describe_group,
    list_groups,
)
from spark_kafka_wire.client.metadata.cluster import TopicPartition
from spark_kafka_wire.client.metadata.cluster_adapters import KafkaCluster
from spark_kafka_wire.client.metadata.cluster_api import Cluster
from spark_kafka_wire.client.zookeeper.consumer_offsets import ZooKeeperOffsetStore

#: States in which a group has no members, so its offsets may be reset (Kafka's tool's rule).
INACTIVE_STATES = ("Empty", DEAD)
#: A ZooKeeper-era group's state as Kafka's states name it: consumers registered or none.
ZK_STABLE, ZK_EMPTY = "Stable", "Empty"
#: The type ``groups list --zookeeper`` shows for a ZooKeeper-era group.
ZK_TYPE = "zookeeper"


def zookeeper_option(command: Callable) -> Callable:
    """``--zookeeper`` of every ``groups`` subcommand."""
    return click.option(
        "--zookeeper", metavar="HOST:PORT[/CHROOT]", default=None,
        help="Work on the group of ZooKeeper-era consumers (and commitOffsets=zookeeper) under "
        "/consumers/GROUP in this ensemble instead of Kafka's group coordinator.")(command)


def zookeeper_store(g: GlobalOptions, zookeeper: str) -> ZooKeeperOffsetStore:
    """The ensemble reached as ``lag --zookeeper`` reaches it: zookeeper.* security from the
    config file, the connect bounded as a broker's (``kafka.socket.connection.setup.timeout.ms``)."""
    extra = {ZOOKEEPER_KEY: zookeeper}
    timeout_s = g.client_config(extra=extra).connect_timeout_ms / 1000
    return ZooKeeperOffsetStore(zookeeper, timeout_s, g.zookeeper_security(extra))


@click.group(short_help=summary("groups"), invoke_without_command=True)
@click.pass_context
def groups(ctx: click.Context) -> None:
    """List consumer groups; describe, reset the offsets of and delete one.

    \b
    kafkawire groups                                   every group, its state and type
    kafkawire groups describe my-group                 lag and member per partition
    kafkawire groups reset-offsets my-group --topic orders --to-earliest --execute
    kafkawire groups delete my-group
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_command)


@groups.command("list")
@zookeeper_option
@click.pass_context
def list_command(ctx: click.Context, zookeeper: str | None = None) -> None:
    """Every group of the cluster: state, type and coordinator."""
    g = ctx.find_object(GlobalOptions)
    assert g is not None, "the kafkawire group sets the global options"
    if zookeeper:
        with zookeeper_store(g, zookeeper) as store:
            rows = [(name, ZK_STABLE if store.members(name) else ZK_EMPTY, None, ZK_TYPE,
                     zookeeper) for name in store.groups()]
        print_table(("group", "state", "protocol", "type", "coordinator"), rows)
        return
    with connected(g.client_config(), "kafkawire groups") as client:
        found = list_groups(client)
    print_table(("group", "state", "protocol", "type", "coordinator"),
                [(x.group_id, x.state or None, x.protocol_type or None, x.type or None,
                  x.coordinator) for x in found])


def owners(desc: GroupDescription) -> dict[TopicPartition, tuple[str, str, str]]:
    """partition -> (member id, host, client id) of the member assigned to it."""
    return {tp: (m.member_id, m.client_host, m.client_id)
            for m in desc.members for tp in m.assignment}


@groups.command("describe")
@click.argument("group")
@click.option("--members", "members_only", is_flag=True,
              help="Print the members (id, client id, host, assigned partitions) instead.")
@zookeeper_option
@click.pass_obj
def describe(g: GlobalOptions, group: str, members_only: bool,
             zookeeper: str | None = None) -> None:
    """Per partition of GROUP: committed offset, end, lag and the member assigned to it."""
    if zookeeper:
        describe_zookeeper(g, group, members_only, zookeeper)
        return
    with connected(g.client_config(), "kafkawire groups describe") as client:
        desc = describe_group(client, group)
        assigned = owners(desc)
        cluster = KafkaCluster(client)
        committed = kafka_committed(cluster, group, []) if not members_only else {}
        every = sorted(set(committed) | set(assigned))
        ends = cluster_offsets(cluster, {tp: LATEST for tp in every}) if every else {}
    title = (f"group {group}: {desc.state}"
             + (f", {desc.protocol_type} protocol {desc.protocol}" if desc.protocol else "")
             + f", coordinator {desc.coordinator}")
    if members_only or (stdout_is_terminal() and desc.members):
        print_table(("member", "instance", "client", "host", "partitions"),
                    [(m.member_id, m.instance_id, m.client_id, m.client_host,
                      ", ".join(f"{t}-{p}" for t, p in m.assignment) or None)
                     for m in desc.members], title=title if members_only else None)
        if members_only:
            return
    if not every and desc.state == DEAD:
        raise click.ClickException(f"group {group!r} does not exist (no members, no committed "
                                   "offsets; kafkawire groups lists them)")
    print_lag_table(every, committed, ends, assigned, title)


def print_lag_table(every: list[TopicPartition], committed: dict[TopicPartition, int],
                    ends: dict[TopicPartition, int],
                    assigned: Mapping[TopicPartition, tuple[str | None, str | None, str | None]],
                    title: str) -> None:
    """``describe``'s table: per partition the commit (-1: none), the end, the lag and the
    (member, host, client) assigned to it; the title ends with the total lag."""
    rows = []
    total = 0
    for tp in every:
        c = committed.get(tp, -1)
        behind = ends[tp] - c if c >= 0 else None
        total += behind or 0
        member, host, client_id = assigned.get(tp, (None, None, None))
        rows.append((tp[0], tp[1], c if c >= 0 else None, ends[tp], behind, member, host,
                     client_id))
    print_table(("topic", "partition", "committed", "end", "lag", "member", "host", "client"),
                rows, title=f"{title}; lag {total:,}")


def describe_zookeeper(g: GlobalOptions, group: str, members_only: bool, zookeeper: str) -> None:
    """``describe --zookeeper``: the group's offsets in ZooKeeper, the cluster's ends (its
    brokers found in that ensemble unless a bootstrap server is given) and the consumer
    stream the range assignment gives each partition."""
    extra = {ZOOKEEPER_KEY: zookeeper}
    with connected_any(g.client_config(extra=extra)) as cluster:
        with zookeeper_store(g, zookeeper) as store:
            members = store.members(group)
        committed, assigned = zookeeper_committed(cluster, zookeeper, group, [],
                                                  g.zookeeper_security(extra))
        every = sorted(set(committed) | set(assigned))
        ends = cluster_offsets(cluster, {tp: LATEST for tp in every}) if every else {}
    state = ZK_STABLE if members else ZK_EMPTY
    title = f"group {group}: {state}, ZooKeeper at {zookeeper}"
    if members_only:
        print_table(("member", "instance", "client", "host", "partitions"),
                    [(cid, None, None, None,
                      ", ".join(f"{t}-{p}" for (t, p), thread in sorted(assigned.items())
                                if thread.rsplit("-", 1)[0] == cid) or None)
                     for cid in sorted(members)])
        return
    if not every:
        raise click.ClickException(f"group {group!r} does not exist in ZooKeeper at "
                                   f"{zookeeper} (no consumers, no offsets; kafkawire groups "
                                   "list --zookeeper lists them)")
    print_lag_table(every, committed, ends,
                    {tp: (thread, None, None) for tp, thread in assigned.items()}, title)


def new_offsets(cluster: Cluster, group: str, tps: list[TopicPartition],
                current: dict[TopicPartition, int], to: str, value: int | None
                ) -> dict[TopicPartition, int]:
    """Where each partition's commit goes: earliest, latest, an offset or a time, resolved
    and clamped to the partition's offsets as ``consume -o`` resolves them
    (``start_offsets.start_offset``; a time past every record: the end), or shifted from the
    current commit (which must exist, as Kafka's tool requires)."""
    lo = cluster_offsets(cluster, {tp: EARLIEST for tp in tps})
    hi = cluster_offsets(cluster, {tp: LATEST for tp in tps})
    if to == "shift":
        assert value is not None
        missing = [tp for tp in tps if current.get(tp, -1) < 0]
        if missing:
            t, p = missing[0]
            raise ConfigurationError.of(
                INVALID_VALUE, "NOTHING_TO_SHIFT", group=group, topic=t, partition=p)
        specs = {tp: StartSpec(ABSOLUTE, current[tp] + value) for tp in tps}
    else:
        kind = {"earliest": BEGINNING, "latest": END, "offset": ABSOLUTE, "datetime": TIME}[to]
        specs = {tp: StartSpec(kind, value or 0) for tp in tps}
    at: dict[TopicPartition, int | None] = {}
    if to == "datetime":
        assert value is not None
        at = cluster.offsets_for_times({tp: value for tp in tps}, READ_UNCOMMITTED)
    return {tp: start_offset(specs[tp], lo[tp], hi[tp], at.get(tp)) for tp in tps}


def partitions_to_reset(cluster: Cluster, group: str, current: dict[TopicPartition, int],
                        topics: tuple[str, ...], partitions: tuple[int, ...]
                        ) -> list[TopicPartition]:
    """The partitions of ``topics`` (every partition of each), else the ones the group
    committed (``--all-topics``), narrowed to ``partitions`` when given."""
    if topics:
        tps = [(t, p) for t in dict.fromkeys(topics)
               for p in sorted(existing_topic(cluster, t).partitions)]
    else:
        tps = sorted(tp for tp, offset in current.items() if offset >= 0)
    if partitions:
        tps = [tp for tp in tps if tp[1] in partitions]
    if not tps:
        raise ConfigurationError.of(INVALID_VALUE, "GROUP_NOTHING_TO_RESET", group=group)
    return tps


@groups.command("reset-offsets")
@click.argument("group")
@click.option("--topic", "-t", "topics", multiple=True, help="Reset this topic (repeatable).")
@click.option("--all-topics", is_flag=True, help="Reset every topic the group committed.")
@click.option("--partition", "-p", "partitions", type=click.IntRange(min=0), multiple=True,
              help="Only this partition of each topic (repeatable).")
@click.option("--to-earliest", "to", flag_value="earliest", help="To each partition's start.")
@click.option("--to-latest", "to", flag_value="latest", help="To each partition's end.")
@click.option("--to-offset", type=click.IntRange(min=0), default=None,
              help="To this offset (within each partition's offsets).")
@click.option("--to-datetime", type=EpochMsType(), default=None,
              help="To the first record at or after this time (ISO-8601 or ms).")
@click.option("--shift-by", type=int, default=None,
              help="By N from the committed offset (negative: back).")
@click.option("--execute", is_flag=True,
              help="Commit the new offsets (without it: a dry run showing them).")
@zookeeper_option
@click.pass_obj
def reset_offsets(g: GlobalOptions, group: str, topics: tuple[str, ...], all_topics: bool,
                  partitions: tuple[int, ...], to: str | None, to_offset: int | None,
                  to_datetime: int | None, shift_by: int | None, execute: bool,
                  zookeeper: str | None = None) -> None:
    """Move GROUP's committed offsets (a dry run unless --execute; the group must have no
    members)."""
    # (0 is a value here: --to-offset 0 and --shift-by 0 are given, not absent)
    chosen: list[tuple[str, int | None]] = [(name, None) for name in ("earliest", "latest")
                                            if to == name]
    chosen += [(name, v) for name, v in (("offset", to_offset), ("datetime", to_datetime),
                                         ("shift", shift_by)) if v is not None]
    if len(chosen) != 1:
        raise click.UsageError("give one of --to-earliest, --to-latest, --to-offset, "
                               "--to-datetime and --shift-by")
    if bool(topics) == all_topics:
        raise click.UsageError("give --topic (repeatable) or --all-topics")
    how, value = chosen[0]
    if zookeeper:
        extra = {ZOOKEEPER_KEY: zookeeper}
        with connected_any(g.client_config(extra=extra)) as cluster, \
                zookeeper_store(g, zookeeper) as store:
            members = store.members(group)
            if execute and members:
                raise ConfigurationError.of(
                    INVALID_VALUE, "GROUP_HAS_ZOOKEEPER_CONSUMERS", group=group,
                    members_count=len(members), zookeeper=zookeeper)
            current, _ = zookeeper_committed(cluster, zookeeper, group, [],
                                             g.zookeeper_security(extra))
            tps = partitions_to_reset(cluster, group, current, topics, partitions)
            target = new_offsets(cluster, group, tps, current, how, value)
            if execute:
                layout = cluster.layout({t for t, _ in target})
                store.commit(group, target, None if layout is None
                             else {(t, p): layout[t][p] for t, p in target})
    else:
        with connected(g.client_config(), "kafkawire groups reset-offsets") as client:
            cluster = KafkaCluster(client)
            desc = describe_group(client, group)
            if execute and desc.state not in INACTIVE_STATES:
                raise ConfigurationError.of(
                    INVALID_VALUE, "GROUP_HAS_MEMBERS", group=group, state=desc.state,
                    members_count=len(desc.members))
            current = kafka_committed(cluster, group, [])
            tps = partitions_to_reset(cluster, group, current, topics, partitions)
            target = new_offsets(cluster, group, tps, current, how, value)
            if execute:
                commit_offsets(client, group, target)
    print_table(("topic", "partition", "current", "new"),
                [(t, p, current.get((t, p)) if current.get((t, p), -1) >= 0 else None,
                  target[(t, p)]) for t, p in tps],
                title=f"group {group}: offsets {'reset' if execute else 'to reset'}")
    if not execute:
        click.echo("dry run: nothing committed; add --execute to commit these offsets",
                   err=True)


@groups.command("delete")
@click.argument("group", nargs=-1, required=True)
@zookeeper_option
@click.pass_obj
def delete(g: GlobalOptions, group: tuple[str, ...], zookeeper: str | None = None) -> None:
    """Delete GROUP (one or more) and its committed offsets; a group must have no members."""
    if zookeeper:
        with zookeeper_store(g, zookeeper) as store:
            for name in dict.fromkeys(group):
                if not store.delete_group(name):
                    raise ConfigurationError.of(
                        INVALID_VALUE, "GROUP_NOT_IN_ZOOKEEPER", name=name,
                        zookeeper=zookeeper)
                click.echo(f"group {name} deleted")
        return
    with connected(g.client_config(), "kafkawire groups delete") as client:
        delete_groups(client, group)
    for name in dict.fromkeys(group):
        click.echo(f"group {name} deleted")
