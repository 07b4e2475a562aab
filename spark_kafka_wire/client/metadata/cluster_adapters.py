"""The two implementations of ``client/metadata/cluster_api.py``'s :class:`Cluster`.

Each only forwards to the code that already speaks to its kind of cluster, so the requests on
the wire are those the callers sent before the interface existed: :class:`KafkaCluster` to
``client/fetching/offsets.py``, ``client/fetching/timestamps.py`` and ``client/groups/group_offsets.py`` over a
:class:`KafkaClient`; :class:`Kafka07ClusterAdapter` to ``client/kafka07/cluster.py``.
The wrapped object stays reachable (``client``, ``cluster``) for the client-layer code
that needs its kind's own operations (ZooKeeper registry lookups, 0.7 segment walks).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings, fetch_settings07
from spark_kafka_wire.client.fetching.offsets import resolve_offsets
from spark_kafka_wire.client.groups.group_offsets import commit_offsets, fetch_committed
from spark_kafka_wire.client.metadata.cluster import ClusterMetadata, KafkaClient, TopicPartition
from spark_kafka_wire.client.metadata.cluster_api import (
    Contradiction,
    Layout,
    PlannedRange,
    TaskRead,
)

# What reads records (numpy, pyarrow, the codecs) and the 0.7 client are imported where they
# are used: a command that asks only for metadata or offsets starts without them
# (tests/unit/test_cli_startup.py).
if TYPE_CHECKING:
    from spark_kafka_wire.client.kafka07.cluster import Kafka07Cluster
    from spark_kafka_wire.protocol.records.columns import DecodedRecords


class KafkaCluster:
    """A Kafka 0.8+ cluster through a :class:`KafkaClient`."""

    offsets_count_records = True
    has_group_coordinator = True

    def __init__(self, client: KafkaClient) -> None:
        self.client = client

    @property
    def config(self) -> ClientConfig:
        return self.client.config

    def fetch_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        return self.client.fetch_metadata(topics)

    def list_offsets(self, specs: Mapping[TopicPartition, int], isolation_level: int
                     ) -> dict[TopicPartition, int]:
        return resolve_offsets(self.client, specs, isolation_level)

    def offsets_for_times(self, stamps: Mapping[TopicPartition, int], isolation_level: int,
                          on_contradiction: Contradiction | None = None,
                          ) -> dict[TopicPartition, int | None]:
        from spark_kafka_wire.client.fetching.timestamps import offsets_for_times  # noqa: PLC0415

        return offsets_for_times(self.client, stamps, isolation_level,
                                 on_contradiction=on_contradiction)

    def read_range(self, tp: TopicPartition, start: int, end: int, settings: FetchSettings,
                   fail_on_data_loss: bool) -> Iterator[DecodedRecords]:
        from spark_kafka_wire.client.fetching.fetcher import fetch_range  # noqa: PLC0415

        return fetch_range(self.client, tp[0], tp[1], start, end, settings,
                           fail_on_data_loss=fail_on_data_loss)

    def task_read(self, config: ClientConfig, ranges: Sequence[PlannedRange],
                  fetch: FetchSettings, fail_on_data_loss: bool,
                  layout: Mapping[str, Sequence[str]] | None = None) -> TaskRead:
        # tasks find each partition's leader themselves
        return TaskRead(config, tuple(r for r in ranges if r[3] > r[2]), fetch,
                        fail_on_data_loss)

    def last_records_starts(self, tp: TopicPartition, n: int, lo: int, hi: int) -> list[int]:
        return [max(lo, hi - n)]  # offsets count records

    def layout(self, topics: Iterable[str]) -> Layout | None:
        return None  # a partition number is the broker's own: nothing to record

    def batch_end(self, tp: TopicPartition, start: int, limit: int,
                  settings: FetchSettings) -> int:
        return limit  # offsets count records: any offset is a record's

    def committed_offsets(self, group: str, tps: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        return fetch_committed(self.client, group, tps)

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int],
                       metadata: str) -> None:
        commit_offsets(self.client, group, offsets, metadata=metadata)

    def close(self) -> None:
        self.client.close()


class Kafka07ClusterAdapter:
    """A Kafka 0.7 cluster through its ZooKeeper view (:class:`Kafka07Cluster`). The
    isolation level is ignored: 0.7 has no transactions."""

    offsets_count_records = False  # byte offsets
    has_group_coordinator = False

    def __init__(self, cluster: Kafka07Cluster) -> None:
        self.cluster = cluster

    @property
    def config(self) -> ClientConfig:
        return self.cluster.config

    def fetch_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        return self.cluster.fetch_metadata(topics)

    def list_offsets(self, specs: Mapping[TopicPartition, int], isolation_level: int
                     ) -> dict[TopicPartition, int]:
        return self.cluster.list_offsets(specs)

    def offsets_for_times(self, stamps: Mapping[TopicPartition, int], isolation_level: int,
                          on_contradiction: Contradiction | None = None,
                          ) -> dict[TopicPartition, int | None]:
        return self.cluster.offsets_for_times(stamps)

    def read_range(self, tp: TopicPartition, start: int, end: int, settings: FetchSettings,
                   fail_on_data_loss: bool) -> Iterator[DecodedRecords]:
        from spark_kafka_wire.client.kafka07.cluster import read_range  # noqa: PLC0415

        return read_range(self.cluster.connections, self.cluster.location(*tp), start, end,
                          fetch_settings07(settings), fail_on_data_loss=fail_on_data_loss)

    def task_read(self, config: ClientConfig, ranges: Sequence[PlannedRange],
                  fetch: FetchSettings, fail_on_data_loss: bool,
                  layout: Mapping[str, Sequence[str]] | None = None) -> TaskRead:
        # a task has no ZooKeeper: where each range's partition is now travels with it
        cluster = self.cluster
        kept = tuple(r for r in ranges if r[3] > r[2])
        if layout is None:
            locations = tuple(cluster.location(t, p) for t, p, _, _ in kept)
        else:
            locations = tuple(cluster.locate(t, layout[t][p], p) for t, p, _, _ in kept)
        return TaskRead(config, kept, fetch, fail_on_data_loss, locations)

    def last_records_starts(self, tp: TopicPartition, n: int, lo: int, hi: int) -> list[int]:
        if n == 0 or hi <= lo:
            return []
        from spark_kafka_wire.client.kafka07.cluster import MAX_SEGMENTS  # noqa: PLC0415
        from spark_kafka_wire.client.kafka07.offsets import offsets_before  # noqa: PLC0415
        from spark_kafka_wire.protocol.kafka07 import LATEST_TIME  # noqa: PLC0415

        loc = self.cluster.location(*tp)
        listed = offsets_before(self.cluster.connection(loc), tp[0], loc.partition,
                                LATEST_TIME, MAX_SEGMENTS, **loc.shown())  # type: ignore[arg-type]
        return sorted({s for s in listed if lo <= s < hi} | {lo}, reverse=True)

    def layout(self, topics: Iterable[str]) -> Layout | None:
        return self.cluster.names(sorted(set(topics)))

    def batch_end(self, tp: TopicPartition, start: int, limit: int,
                  settings: FetchSettings) -> int:
        return self.cluster.cut(self.cluster.location(*tp), start, limit,
                                fetch_settings07(settings))

    def committed_offsets(self, group: str, tps: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        raise self._no_coordinator(group)

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int],
                       metadata: str) -> None:
        raise self._no_coordinator(group)

    def _no_coordinator(self, group: str) -> ConfigurationError:
        return ConfigurationError.of(CONFIGURATION, "NO_GROUP_COORDINATOR_KAFKA07", group=group,
                                     zookeeper_connect=self.cluster.config.zookeeper_connect)

    def close(self) -> None:
        self.cluster.close()


def open_cluster(config: ClientConfig) -> KafkaCluster | Kafka07ClusterAdapter:
    """A cluster of its own (not the pool's shared one) for a caller that closes it, the
    CLI, checked before it is handed out without the retry rule, so that an unreachable
    cluster is said at once: one bootstrap server answers (0.8+), or ZooKeeper answers and
    registers 0.7 brokers (0.7)."""
    if config.kafka07:
        from spark_kafka_wire.client.kafka07.cluster import Kafka07Cluster  # noqa: PLC0415

        view = Kafka07Cluster(config)
        try:
            view.brokers()
        except BaseException:
            view.close()
            raise
        return Kafka07ClusterAdapter(view)
    client = KafkaClient(config)
    try:
        client.any_connection()
    except BaseException:
        client.close()
        raise
    return KafkaCluster(client)
