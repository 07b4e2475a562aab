"""What the source (and the CLI) ask of a cluster, whichever Kafka it is: one interface.

Spark's kafka source asks one ``KafkaOffsetReader`` interface and never which consumer
implements it; kafkawire's planner, stream reader and CLI ask :class:`Cluster` the same way.
Two adapters implement it (``client/metadata/cluster_adapters.py``): one over :class:`KafkaClient`
(Kafka 0.8 and later) and one over the Kafka 0.7 view ``client/kafka07/cluster.py``. Where
0.7 differs the difference is a property or a method of the interface, never a type check
above the client layer (``tests/unit/test_architecture.py`` checks that):

- Offsets. On 0.8+ an offset counts records; on 0.7 it is a byte position in the partition's
  log (:attr:`Cluster.offsets_count_records` False): a range cannot be split into equal
  pieces (a piece must start where a message does, which only reading the bytes tells), and
  a rate-limited batch ends at a message's end (:meth:`Cluster.batch_end`, one FETCH; 0.8+
  returns the limit). Offsets by time on 0.7 are at segment granularity (0.7 keeps no finer
  index).
- Layout for checkpoints. A 0.8+ partition number is the broker's own; 0.7 has none: the
  (broker, partition) pairs ZooKeeper lists are numbered by position, and a broker that leaves
  renumbers those after it. So a 0.7 stream records the partition names its numbers refer to
  (:meth:`Cluster.layout`) and 0.8+ records nothing (None).
- Task reads. The planner hands each task a :class:`TaskRead` the cluster made
  (:meth:`Cluster.task_read`: ranges in; ``client/fetching/task_reads.py`` reads it, records out): a
  0.8+ task finds each partition's leader itself; a 0.7 task has no ZooKeeper, so the 0.7
  adapter records in it where each range's partition is, and the task reads from there. The
  source never knows which: it reads a ``TaskRead`` and asks it whether its records carry
  timestamps (0.7 messages have none).
- Reads on the driver (the CLI's tail): :meth:`Cluster.read_range` reads one partition's
  range, and :meth:`Cluster.last_records_starts` says where to read from to find a
  partition's last records: ``hi - n`` on 0.8+, the log's segment starts on 0.7, where byte
  offsets say nothing of how many messages lie before the end.
- Group offsets. 0.7 has no group coordinator (:attr:`Cluster.has_group_coordinator`):
  :meth:`Cluster.committed_offsets` and :meth:`Cluster.commit_offsets` raise
  :class:`ConfigurationError` there (the options refuse such settings before a query starts;
  ZooKeeper commits, which both kinds have, are ``client/zookeeper/consumer_offsets.py``'s).

Raising: every method raises the client's typed errors (``client/errors.py``,
``protocol/errors.py``) naming the topic, partition, offset and broker, as the calls it
wraps do; the interface adds only the ConfigurationErrors above, saying what 0.7 cannot do.

Writes are not part of the interface. The two write paths share nothing below the split of
rows by topic: 0.8+ writes through a :class:`Producer` (batching per leader, idempotence,
transactions, exactly-once markers, all bound to a :class:`KafkaClient`), 0.7 sends message
sets with MULTIPRODUCE to the brokers ZooKeeper lists, unacknowledged. A cluster view that
wrote rows would bind one of them to the other's shape, so writers are chosen apart from it,
in ``client/producer/task_writers.py`` (``task_writer``), from the configuration; the sink and the CLI
take the writer it gives.

The types a plan carries to tasks are defined here: :class:`PartitionLocation` (the 0.7
cluster fills it in) and :class:`TaskRead`. The module imports nothing that decodes records,
so commands that only ask for metadata start without numpy and pyarrow
(tests/unit/test_cli_startup.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from spark_kafka_wire.client.config import ClientConfig, format_address
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.metadata.cluster import ClusterMetadata, TopicPartition

if TYPE_CHECKING:
    from spark_kafka_wire.protocol.records.columns import DecodedRecords

__all__ = ["Cluster", "Contradiction", "Layout", "PartitionLocation", "PlannedRange",
           "TaskRead"]


@dataclass(frozen=True)
class PartitionLocation:
    """Global partition ``number`` of ``topic``: partition ``partition`` of broker
    ``broker_id``, which listens on ``host:port``."""

    topic: str
    number: int
    broker_id: int
    partition: int
    host: str
    port: int

    @property
    def name(self) -> str:
        """0.7's own name of the partition, ``<broker id>-<partition>``."""
        return f"{self.broker_id}-{self.partition}"

    @property
    def broker(self) -> str:
        """The broker as errors show it."""
        return (f"{self.broker_id} at {format_address(self.host, self.port)} "
                f"(its partition {self.partition})")

    def shown(self) -> dict[str, int | str]:
        """Keyword arguments of the 0.7 client's functions that make errors name this
        partition by its number and broker."""
        return {"shown_partition": self.number, "shown_broker": self.broker}


Layout = dict[str, tuple[str, ...]]
"""Kafka 0.7: each topic's partition names (``<broker id>-<partition>``) in number order."""

PlannedRange = tuple[str, int, int, int]
"""(topic, partition, start, end): the records at offsets [start, end)."""


@dataclass(frozen=True)
class TaskRead:
    """What one Spark task reads, made on the driver by :meth:`Cluster.task_read` and read in
    the task by ``client/fetching/task_reads.py``'s ``read_planned``: the non-empty ``ranges``, in
    order, with the settings to read them. ``locations`` (one per range) is the cluster's
    own business: where a cluster without a Metadata request (0.7) has each range's partition
    (None: the task finds each partition's leader)."""

    config: ClientConfig
    ranges: tuple[PlannedRange, ...]
    fetch: FetchSettings
    fail_on_data_loss: bool = True
    locations: tuple[PartitionLocation, ...] | None = None

    @property
    def has_timestamps(self) -> bool:
        """Whether the records read carry timestamps (0.7 messages have none: the source
        shows a null timestamp column)."""
        return self.locations is None

Contradiction = Callable[[TopicPartition, str], None]
"""Told when a broker's answer by time is contradicted by the records (partition, why)."""


@runtime_checkable
class Cluster(Protocol):
    """The operations the source and the CLI need of a cluster (see the module docstring)."""

    @property
    def config(self) -> ClientConfig:
        """The settings the cluster was reached with."""

    @property
    def offsets_count_records(self) -> bool:
        """Whether an offset counts records (a range splits into equal pieces, the last n
        records start n before the end); False where offsets are positions in a log that only
        reading tells record boundaries of (0.7's byte offsets): ranges are not split."""

    @property
    def has_group_coordinator(self) -> bool:
        """False on Kafka 0.7: group offsets live in ZooKeeper only."""

    def fetch_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Topics and partitions (``topics`` None: every topic). A topic that does not exist
        has UNKNOWN_TOPIC_OR_PARTITION; on 0.7 partition numbers are the positional ones."""

    def list_offsets(self, specs: Mapping[TopicPartition, int], isolation_level: int
                     ) -> dict[TopicPartition, int]:
        """Offsets for ``specs``: -2 earliest, -1 latest (read_committed's last stable
        offset with that isolation level on 0.8+), anything else as given."""

    def offsets_for_times(self, stamps: Mapping[TopicPartition, int], isolation_level: int,
                          on_contradiction: Contradiction | None = None,
                          ) -> dict[TopicPartition, int | None]:
        """The offset a read of the records at or after each time (ms) starts at; None
        where no record is that new. 0.7: at segment granularity, from OFFSETS alone (no
        record timestamps to contradict it, so ``on_contradiction`` is never told)."""

    def read_range(self, tp: TopicPartition, start: int, end: int, settings: FetchSettings,
                   fail_on_data_loss: bool) -> Iterator[DecodedRecords]:
        """The records at offsets [start, end) of one partition, chunk by chunk (0.7: FETCH
        sizes from ``settings`` as a query's, ``fetch_settings07``)."""

    def task_read(self, config: ClientConfig, ranges: Sequence[PlannedRange],
                  fetch: FetchSettings, fail_on_data_loss: bool,
                  layout: Mapping[str, Sequence[str]] | None = None) -> TaskRead:
        """What a task reads of ``ranges`` (empty ones left out) with ``config`` (the task's
        settings, not the planner's): on 0.7 with where each range's partition is now, found
        by the names of ``layout`` when given (a stream's recorded layout), else by number."""

    def last_records_starts(self, tp: TopicPartition, n: int, lo: int, hi: int) -> list[int]:
        """Where to read from, newest first, to find the last ``n`` records of [lo, hi):
        read [start, hi) from each until ``n`` are found. 0.8+: ``max(lo, hi - n)``; 0.7:
        ``lo`` and the segment starts in [lo, hi), the only known message boundaries."""

    def layout(self, topics: Iterable[str]) -> Layout | None:
        """Where partition numbers are positions that change when brokers come or go (0.7):
        each topic's partition names in number order, which a stream records with its
        offsets and ZooKeeper's offset nodes are named by; None where a partition's number
        is its own (0.8+)."""

    def batch_end(self, tp: TopicPartition, start: int, limit: int,
                  settings: FetchSettings) -> int:
        """Where a rate-limited batch from record boundary ``start`` ends at ``limit`` at
        most: ``limit`` where offsets count records, else the end of the last whole record
        before it (0.7: one FETCH, sized by ``settings``)."""

    def committed_offsets(self, group: str, tps: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        """The group's committed offsets in Kafka (-1: none); 0.7: ConfigurationError."""

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int],
                       metadata: str) -> None:
        """Commit ``offsets`` for ``group`` in Kafka; 0.7: ConfigurationError."""

    def close(self) -> None:
        """Close connections (and the 0.7 view's ZooKeeper session)."""
