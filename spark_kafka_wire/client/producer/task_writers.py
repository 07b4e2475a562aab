"""Writers of Arrow rows, chosen here from the configuration: above the client layer the
sink's tasks and the CLI's produce take a :class:`RowWriter` and never ask which kind of
cluster it writes to.

Writes are not part of the ``Cluster`` interface (``client/metadata/cluster_api.py`` says why): a
0.8+ cluster is written through a :class:`Producer` (batching per leader, idempotence,
transactions, exactly-once markers), a 0.7 cluster by MULTIPRODUCE of message sets
(``client/kafka07/writer.py``). Both take the same columns: a write's driver calls
:func:`plan_write` (the topic option's topic checked, created or located before any task
starts; what it found travels to the tasks in the :class:`WritePlan`), each task
:func:`task_writer`, then :meth:`RowWriter.prepare` for every topic of a batch before
:meth:`RowWriter.append` of its rows. What a writer cannot write is refused with the
client's typed errors, as the code it wraps refuses it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import KAFKA07_UNSUPPORTED, ConfigurationError, DataError
from spark_kafka_wire.client.metadata.admin import ensure_topic
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicInfo
from spark_kafka_wire.client.pool import planner_client, task_client, task_connections07
from spark_kafka_wire.client.producer import Producer, assign_partitions, headers_from_arrow
from spark_kafka_wire.client.producer.settings import ProduceSettings
from spark_kafka_wire.client.producer.transactions import OpenTransaction

# The 0.7 writer is imported where a 0.7 cluster is written: a worker writing to a 0.8+ cluster
# never pays for its import (docs/benchmarks.md, "A write's first seconds").
if TYPE_CHECKING:
    from spark_kafka_wire.client.kafka07.cluster import TopicLayout
    from spark_kafka_wire.client.kafka07.writer import Kafka07Writer

__all__ = ["RowWriter", "TopicCreationSettings", "WritePlan", "own_writer", "plan_write",
           "task_writer"]


class TopicCreationSettings(Protocol):
    """How a missing topic is created (the sink's ``TopicCreation``): by the broker on
    metadata requests (``auto``), or by CreateTopics (``explicit``); -1: broker defaults."""

    @property
    def auto(self) -> bool: ...
    @property
    def explicit(self) -> bool: ...
    @property
    def partitions(self) -> int: ...
    @property
    def replication_factor(self) -> int: ...


@dataclass(frozen=True)
class WritePlan:
    """What the driver found for a write before its tasks start (:func:`plan_write`), carried
    to them: where a cluster without a Metadata request has each topic's partitions."""

    layouts: Mapping[str, TopicLayout] = field(default_factory=dict)


class RowWriter(Protocol):
    """One task's (or one command's) writes of Arrow columns to a cluster."""

    @property
    def records(self) -> int:
        """Records sent so far."""

    @property
    def requests(self) -> int:
        """Requests sent so far."""

    @property
    def producer_id(self) -> int:
        """The idempotent producer's id (-1: none)."""

    def prepare(self, topic: str) -> None:
        """Make ``topic`` ready for rows (checked, created or located), before any row of the
        batch that names it is appended."""

    def append(self, topic: str, keys: pa.Array | None, values: pa.Array,
               partitions: pa.Array | None, headers: pa.Array | None,
               timestamps: int | np.ndarray) -> None:
        """Send (or buffer) rows of ``topic``: binary ``keys`` and ``values``, the
        ``partitions`` column (null where the partitioner chooses), the Arrow ``headers``
        column, timestamps in ms."""

    def flush(self) -> None:
        """Everything appended sent and acknowledged."""

    def abort(self) -> None:
        """After a failure: buffered rows forgotten, an open transaction aborted."""

    def open_transaction(self) -> OpenTransaction | None:
        """The transaction left open for its owner to end (None: none)."""

    def commit_offsets(self, group: str, offsets: Mapping[tuple[str, int], tuple[int, str]]
                       ) -> None:
        """Offsets (with metadata) committed inside the open transaction."""


class ProducerWriter:
    """Rows through a :class:`Producer` over a :class:`KafkaClient` (Kafka 0.8+)."""

    def __init__(self, client: KafkaClient, settings: ProduceSettings, partitioner: str,
                 creation: TopicCreationSettings) -> None:
        self.client = client
        self.partitioner = partitioner
        self.creation = creation
        self.producer = Producer(client, settings)
        self.rng = random.Random()

    @property
    def records(self) -> int:
        return self.producer.records_sent

    @property
    def requests(self) -> int:
        return self.producer.requests_sent

    @property
    def producer_id(self) -> int:
        return self.producer.producer_id

    def prepare(self, topic: str) -> None:
        checked_topic(self.client, topic, self.creation)

    def append(self, topic: str, keys: pa.Array | None, values: pa.Array,
               partitions: pa.Array | None, headers: pa.Array | None,
               timestamps: int | np.ndarray) -> None:
        n = len(values)
        info = self.client.topic(topic)
        parts = assign_partitions(keys, n, info.num_partitions, self.rng, self.partitioner)
        if partitions is not None and partitions.null_count < len(partitions):
            given = partitions.is_valid().to_numpy(zero_copy_only=False)
            chosen = pc.fill_null(partitions, 0).to_numpy(zero_copy_only=False)
            bad = given & ((chosen < 0) | (chosen >= info.num_partitions))
            if bad.any():
                p = int(chosen[bad][0])
                raise DataError.of("KAFKAWIRE_DATA.PARTITION_OUT_OF_RANGE", partition=p,
                                   topic=topic, last=info.num_partitions - 1,
                                   numbering=" (null lets the partitioner choose)")
            parts[given] = chosen[given]
        hdrs = header_bytes = None
        if headers is not None:
            hdrs, header_bytes = headers_from_arrow(headers)
        self.producer.append(topic, keys, values, parts, timestamps, hdrs, header_bytes)

    def flush(self) -> None:
        self.producer.flush()

    def abort(self) -> None:
        self.producer.abort()
        self.producer.abort_transaction()

    def open_transaction(self) -> OpenTransaction | None:
        return self.producer.open_transaction()

    def commit_offsets(self, group: str, offsets: Mapping[tuple[str, int], tuple[int, str]]
                       ) -> None:
        self.producer.commit_offsets(group, dict(offsets))


class MessageSetWriter:
    """Rows as plain message sets (Kafka 0.7, ``client/kafka07/writer.py``): no
    idempotence, no transactions; topics the plan did not locate are looked up in
    ZooKeeper when prepared, as 0.7's own producers did."""

    def __init__(self, config: ClientConfig, writer: Kafka07Writer) -> None:
        self.config = config
        self.writer = writer

    @property
    def records(self) -> int:
        return self.writer.written.records

    @property
    def requests(self) -> int:
        return self.writer.written.requests

    producer_id = -1

    def prepare(self, topic: str) -> None:
        layouts = self.writer.layouts
        if topic not in layouts:
            from spark_kafka_wire.client.kafka07.writer import layout_for_write  # noqa: PLC0415

            layouts[topic] = layout_for_write(self.config, topic)

    def append(self, topic: str, keys: pa.Array | None, values: pa.Array,
               partitions: pa.Array | None, headers: pa.Array | None,
               timestamps: int | np.ndarray) -> None:
        # 0.7 messages have no timestamps (the module docstring of client/kafka07/writer.py)
        self.writer.append(topic, keys, values, partitions, headers)

    def flush(self) -> None:
        """Each append was sent (and confirmed) when it was made."""

    def abort(self) -> None:
        """Nothing is buffered, and there are no transactions."""

    def open_transaction(self) -> OpenTransaction | None:
        return None

    def commit_offsets(self, group: str, offsets: Mapping[tuple[str, int], tuple[int, str]]
                       ) -> None:
        # unreachable: the sink's options refuse transactions on such a cluster first
        raise ConfigurationError.of(KAFKA07_UNSUPPORTED, "TRANSACTIONS")


def checked_topic(client: KafkaClient, topic: str, creation: TopicCreationSettings
                  ) -> TopicInfo:
    """``topic``'s metadata, the topic created first when it is missing and ``creation``
    says so (``client/metadata/admin.py``'s ``ensure_topic``)."""
    return ensure_topic(client, topic, auto_create=creation.auto, create=creation.explicit,
                        partitions=creation.partitions,
                        replication_factor=creation.replication_factor)


def plan_write(config: ClientConfig, topic: str | None, creation: TopicCreationSettings
               ) -> WritePlan:
    """On the driver, before any task starts: the topic option's ``topic`` checked (or
    created, as ``creation`` says) on a 0.8+ cluster, located in ZooKeeper on a 0.7 one."""
    if topic is None:
        return WritePlan()
    if config.kafka07:
        from spark_kafka_wire.client.kafka07.writer import layout_for_write  # noqa: PLC0415

        return WritePlan({topic: layout_for_write(config, topic)})
    checked_topic(planner_client(config), topic, creation)
    return WritePlan()


def task_writer(config: ClientConfig, settings: ProduceSettings, partitioner: str,
                creation: TopicCreationSettings, plan: WritePlan) -> RowWriter:
    """The writer of a Spark task, over the process's shared connections (the worker's heap
    frozen on its first task, ``client/pool.py``)."""
    if config.kafka07:
        from spark_kafka_wire.client.kafka07.writer import Kafka07Writer  # noqa: PLC0415

        return MessageSetWriter(config, Kafka07Writer(
            settings, partitioner, task_connections07(config), dict(plan.layouts)))
    return ProducerWriter(task_client(config), settings, partitioner, creation)


@contextmanager
def own_writer(config: ClientConfig, settings: ProduceSettings, partitioner: str, topic: str
               ) -> Iterator[tuple[RowWriter, TopicLayout]]:
    """For a cluster of plain messages (``ClientConfig.plain_messages``): a writer of
    ``topic`` with a ZooKeeper session and connections of its own, closed afterwards (the
    CLI's produce), and where the topic's partitions are (their count, their names)."""
    from spark_kafka_wire.client.kafka07.writer import topic_writer  # noqa: PLC0415

    with topic_writer(config, settings, partitioner, topic) as (writer, layout):
        yield MessageSetWriter(config, writer), layout
