"""``kafkawire consume --group G`` and ``tail --group G``: reading as a member of a consumer
group, as ``kcat -G`` and ``kafka-console-consumer --group`` do.

The topics named (and those ``--pattern`` matches when the command starts) are the
subscription; the group's leader, whichever client it is, assigns the partitions
(client/groups/group_member.py), so several kafkawire processes, or kafkawire with Java or
librdkafka consumers of the same assignor, share the partitions. Each assigned partition
starts at the group's committed offset; one without a commit (or whose commit is outside the
log now) starts where ``-o`` says, by default at its end for ``consume`` (Kafka's
auto.offset.reset=latest, what kafka-console-consumer and kcat -G do) and at the last 10
records for ``tail``; ``-o beginning`` is kafka-console-consumer's --from-beginning.

Joining is announced on stderr at once, and what it gave once it has: a coordinator answers a
JoinGroup only when it has waited for the group's other members (Apache Kafka for
``group.initial.rebalance.delay.ms``, 3 s by default, when a group starts; Tansu, ``kafkawire
broker``, for half the session timeout on every join), and the user must not sit before a
silent command meanwhile.

What was printed is committed: every 5 seconds (the Java consumer's auto.commit.interval.ms),
before rejoining when the group rebalances (the assignors are eager: every partition is
handed out again, perhaps to another member, which starts from the commit), and on exit,
including Ctrl-C, before leaving the group, so another member takes the partitions over at
once and at the next record. ``-e`` exits once every assigned partition's end is printed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from spark_kafka_wire.cli.output import notice
from spark_kafka_wire.cli.reading import (
    FOLLOW_POLL_S,
    Printer,
    matching_topics,
    read_ranges,
    start_offsets,
)
from spark_kafka_wire.cli.records import Record
from spark_kafka_wire.cli.settings import GlobalOptions, connected
from spark_kafka_wire.cli.signals import stopped_by_signals
from spark_kafka_wire.cli.start_offsets import StartSpec
from spark_kafka_wire.cli.topics import cluster_offsets
from spark_kafka_wire.client.errors import BrokerConnectionError
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.offsets import EARLIEST, LATEST
from spark_kafka_wire.client.groups.group_member import GroupMember, MemberSettings
from spark_kafka_wire.client.metadata.cluster import TopicPartition
from spark_kafka_wire.client.metadata.cluster_adapters import KafkaCluster
from spark_kafka_wire.protocol.errors import KafkaWireError

if TYPE_CHECKING:  # imported only when a registry format is chosen (reading.registry_decoder)
    from spark_kafka_wire.cli.registry_decoding import RecordDecoder

log = logging.getLogger(__name__)

#: How often printed offsets are committed (the Java consumer's auto.commit.interval.ms).
AUTO_COMMIT_S = 5.0


class GroupReader:
    """The loop of a member: join, start each assigned partition, print what is there, commit;
    join again when the group rebalances."""

    def __init__(self, cluster: KafkaCluster, member: GroupMember, printer: Printer,
                 settings: FetchSettings, specs: tuple[StartSpec, ...], default: StartSpec,
                 table: bool) -> None:
        self.cluster, self.member, self.printer = cluster, member, printer
        self.settings, self.specs, self.default, self.table = settings, specs, default, table
        self.positions: dict[TopicPartition, int] = {}  # next offset to print
        self.saved: dict[TopicPartition, int] = {}  # what the group has committed of them

    def start_positions(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The committed offset of each partition; where ``-o`` says where there is none, or
        it left the log (auto.offset.reset's rule)."""
        if not tps:
            return {}
        iso = self.settings.isolation_level
        committed = self.member.committed(tps)
        lo = cluster_offsets(self.cluster, {tp: EARLIEST for tp in tps}, iso)
        hi = cluster_offsets(self.cluster, {tp: LATEST for tp in tps}, iso)
        fresh = [tp for tp in tps if not lo[tp] <= committed[tp] <= hi[tp]]
        starts = start_offsets(self.cluster, fresh, self.specs, self.default, lo, hi, iso) \
            if fresh else {}
        self.saved = {tp: committed[tp] for tp in tps if tp not in starts}
        return {tp: starts.get(tp, committed[tp]) for tp in tps}

    def commit(self) -> None:
        """Commit the positions that moved since the last commit."""
        changed = {tp: o for tp, o in self.positions.items() if self.saved.get(tp) != o}
        if changed and self.member.commit(changed):
            self.saved.update(changed)

    def run(self, exit_at_end: bool) -> None:
        joins = 0
        while True:
            assigned = self.join(again=joins > 0)
            joins += 1
            self.positions = self.start_positions(assigned)
            if self.follow_assignment(assigned, exit_at_end):
                return
            self.commit()  # before rejoining: the partitions may go to another member

    def join(self, again: bool) -> list[TopicPartition]:
        """``member.join()``, announced on stderr before the coordinator's wait and after."""
        group = self.member.settings.group
        notice(f"{'rejoining' if again else 'joining'} group {group!r} (the coordinator "
               "waits for the group's other members before it hands out partitions)...")
        started = time.monotonic()
        assigned = self.member.join()
        role = "leader" if self.member.leader else "member"
        notice(f"joined group {group!r} in {time.monotonic() - started:.1f} s, generation "
               f"{self.member.generation} ({role}): {partitions_text(assigned)}")
        return assigned

    def follow_assignment(self, assigned: list[TopicPartition], exit_at_end: bool) -> bool:
        """Print the assigned partitions' records until the group rebalances (False) or the
        command is done (True: -c's count printed, or with -e every end reached)."""
        last_commit = time.monotonic()
        while not self.member.needs_rejoin:
            ends: Mapping[TopicPartition, int] = cluster_offsets(
                self.cluster, {tp: LATEST for tp in assigned},
                self.settings.isolation_level) if assigned else {}
            grown = {tp: (self.positions[tp], end) for tp, end in ends.items()
                     if end > self.positions[tp]}
            halted = self.read(grown)
            if not halted:
                self.positions.update({tp: end for tp, (_, end) in grown.items()})
            if self.printer.done:
                return True
            if exit_at_end and not halted and all(
                    self.positions[tp] >= end for tp, end in ends.items()):
                return True
            if time.monotonic() - last_commit >= AUTO_COMMIT_S:
                self.commit()
                last_commit = time.monotonic()
            if not grown:
                time.sleep(FOLLOW_POLL_S)
        return False

    def read(self, grown: dict[TopicPartition, tuple[int, int]]) -> bool:
        """Print the records of each partition's [start, end); True if stopped before the
        ends (-c's count printed, or the group rebalancing)."""
        pending: list[Record] = []
        halted = False
        limit = self.printer.limit

        def stop() -> bool:
            nonlocal halted
            halted = halted or self.printer.done or self.member.needs_rejoin or (
                self.table and limit is not None
                and len(pending) + self.printer.printed >= limit)
            return halted

        # a table is printed whole, so its columns line up; the others stream
        sink = pending.extend if self.table else self._print
        read_ranges(self.cluster, grown, self.settings, sink, stop)
        if self.table:
            self._print(pending)
        return halted

    def _print(self, records: list[Record]) -> None:
        """Print ``records`` (as far as -c allows) and move the positions past them."""
        before = self.printer.printed
        self.printer.print(records)
        for r in records[:self.printer.printed - before]:
            self.positions[(r.topic, r.partition)] = r.offset + 1


def partitions_text(tps: list[TopicPartition]) -> str:
    """``orders [0, 1, 2], returns [0]``, or why a member has none."""
    if not tps:
        return "no partitions (the group has more members than the topics have partitions)"
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(tps):
        by_topic.setdefault(topic, []).append(partition)
    return ", ".join(f"{t} {ps}" for t, ps in by_topic.items())


def run_group(g: GlobalOptions, topic: tuple[str, ...], pattern: str | None, group: str,
              assignor: str, specs: tuple[StartSpec, ...], default: StartSpec,
              exit_at_end: bool, fmt: str, count: int | None, key_format: str,
              value_format: str, isolation: str | None,
              decoder: RecordDecoder | None = None) -> None:
    """What ``consume --group`` and ``tail --group`` do once their options are read;
    ``decoder`` decodes the registry formats (reading.registry_decoder)."""
    settings = g.fetch_settings(None if isolation is None else
                                {"kafka.isolation.level": isolation})
    with connected(g.client_config(), "--group") as client:
        cluster = KafkaCluster(client)
        infos = matching_topics(cluster, topic, pattern)
        printer = Printer(fmt, count, key_format, value_format, len(infos), decoder)
        member = GroupMember(client, MemberSettings(group, tuple(t.name for t in infos),
                                                    assignor))
        reader = GroupReader(cluster, member, printer, settings, specs, default,
                             fmt == "table")
        try:
            with stopped_by_signals():  # SIGTERM, and Ctrl-C of a background job, too
                reader.run(exit_at_end)
        finally:
            # Ctrl-C too: commit what was printed, then leave so the others take over now
            try:
                reader.commit()
            except (KafkaWireError, BrokerConnectionError) as exc:
                log.warning("the last commit of group %r failed: %s", group, exc)
            finally:
                member.leave()
