"""Writes to Kafka 0.7 clusters: rows to message sets, one MULTIPRODUCE per broker.

The sink's tasks and the CLI's produce take this writer through ``client/producer/task_writers.py``
(``task_writer``, ``own_writer``), which chooses it for a 0.7 configuration.

0.7 differs from what the rest of the sink writes to in ways users see:

- A topic's partitions are numbered across its brokers (broker id, then partition; see
  ``client/kafka07/cluster.py``): the ``partition`` column names that number, and keyed rows
  go to murmur2(key) over it, as on newer clusters, so a key always lands on the same number
  while the brokers stay the same. Rows without a key (or a ``key`` column) are spread by the
  same partitioner as on newer clusters.
- 0.7 messages have no key, no timestamp and no headers: the key only chooses the partition
  (as 0.7's own producer used it), the ``timestamp`` column is ignored (Kafka's producers drop
  timestamps for message formats without them too), and a row with headers is refused rather
  than written without them (Kafka's producer refuses headers for old formats too). A null
  ``value`` is refused: 0.7 has no null payload.
- A topic not registered yet: 0.7 brokers create a topic on its first produce, and 0.7's
  ZooKeeper-based producer then wrote to partition 0 of every registered broker (its
  ZKBrokerPartitionInfo "bootstraps" a new topic that way); kafkawire does the same.
- 0.7 answers no PRODUCE. Each MULTIPRODUCE is followed on the same connection by OFFSETS for
  the log end of every partition it wrote (``kafka.acks`` 0 skips that): an answer proves the
  broker handled the produce, a closed connection that it refused it, and a log end that grew
  by less than the bytes sent that it dropped the set (a 0.7 broker drops a message larger
  than its max.message.size, 1,000,000 bytes by default, without a word). Another writer of
  the same partition can hide such a drop; nothing in 0.7 can tell.
- No idempotence, no transactions: a task that fails and runs again writes its rows again
  (at-least-once, as Spark's own sink is without transactions).
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import KAFKA07_UNSUPPORTED, ConfigurationError, DataError
from spark_kafka_wire.client.kafka07.cluster import Kafka07Cluster, TopicLayout
from spark_kafka_wire.client.kafka07.connection import Kafka07Connection, Kafka07Connections
from spark_kafka_wire.client.kafka07.offsets import latest_offset
from spark_kafka_wire.client.kafka07.produce import multiproduce
from spark_kafka_wire.client.metadata.cluster_api import PartitionLocation
from spark_kafka_wire.client.pool import shared_kafka07
from spark_kafka_wire.client.producer import assign_partitions
from spark_kafka_wire.client.producer.settings import ProduceSettings
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.kafka07 import encode_message_set

log = logging.getLogger(__name__)

# A message's bytes beyond its payload: LENGTH, MAGIC, COMPRESSION, CHECKSUM.
MESSAGE_OVERHEAD = 10


def layout_for_write(config: ClientConfig, topic: str) -> TopicLayout:
    """Where ``topic``'s rows may go, asked of the process's shared 0.7 view
    (``pool.shared_kafka07``): see :func:`topic_layout`."""
    return topic_layout(shared_kafka07(config), topic)


@contextmanager
def topic_writer(config: ClientConfig, settings: ProduceSettings, partitioner: str, topic: str
                 ) -> Iterator[tuple[Kafka07Writer, TopicLayout]]:
    """A writer of ``topic`` with a ZooKeeper session and connections of its own, closed
    afterwards (the CLI's produce), and the topic's layout."""
    with Kafka07Cluster(config) as cluster:
        cluster.brokers()  # ZooKeeper answers, and registers 0.7 brokers: say so at once
        layout = topic_layout(cluster, topic)
        yield Kafka07Writer(settings, partitioner, cluster.connections, {topic: layout}), layout


def topic_layout(cluster: Kafka07Cluster, topic: str) -> TopicLayout:
    """Where ``topic``'s rows may go: its registered partitions, or for a topic no broker has
    yet, partition 0 of every registered broker (see the module docstring)."""
    layout = cluster.layouts([topic]).get(topic)
    if layout is not None and layout.locations:
        return layout
    brokers = cluster.brokers()
    locations: list[PartitionLocation] = []
    for broker_id, registration in sorted(brokers.items()):
        address = registration.address("PLAINTEXT")
        if address is not None:
            locations.append(PartitionLocation(topic, len(locations), broker_id, 0,
                                               address.host, address.port))
    log.info("topic %s is not registered in ZooKeeper yet: writing to partition 0 of brokers "
             "%s, which create it on the first produce", topic,
             ", ".join(str(b) for b in sorted(brokers)))
    return TopicLayout(topic, tuple(locations))


@dataclass
class Written:
    records: int = 0
    requests: int = 0


class Kafka07Writer:
    """One task's writes: message sets per partition, sent per broker, confirmed."""

    def __init__(self, settings: ProduceSettings, partitioner: str,
                 connections: Kafka07Connections, layouts: dict[str, TopicLayout]) -> None:
        self.settings = settings
        self.partitioner = partitioner
        self.connections = connections
        self.layouts = layouts
        self.rng = random.Random()
        self.ends: dict[PartitionLocation, int] = {}
        self.written = Written()
        self.chunk_bytes = max(1, settings.batch_size)
        self.max_message = settings.max_request_size

    def append(self, topic: str, keys: pa.Array | None, values: pa.Array,
               explicit: pa.Array | None, headers: pa.Array | None) -> None:
        """Send the rows of one Arrow batch bound for ``topic`` (``explicit``: the partition
        column, null where the partitioner chooses)."""
        layout = self.layouts[topic]
        n = len(values)
        count = len(layout.locations)
        if values.null_count:
            row = pc.index(pc.is_null(values), True).as_py()
            raise ConfigurationError.of(
                KAFKA07_UNSUPPORTED, "NULL_VALUE", row=row, topic=topic)
        if headers is not None and pc.any(pc.greater(pc.fill_null(pc.list_value_length(
                headers), 0), 0)).as_py():
            raise ConfigurationError.of(
                KAFKA07_UNSUPPORTED, "HEADERS", topic=topic)
        parts = assign_partitions(keys, n, count, self.rng, self.partitioner)
        if explicit is not None and explicit.null_count < len(explicit):
            given = explicit.is_valid().to_numpy(zero_copy_only=False)
            chosen = pc.fill_null(explicit, 0).to_numpy(zero_copy_only=False)
            bad = given & ((chosen < 0) | (chosen >= count))
            if bad.any():
                raise DataError.of(
                    "KAFKAWIRE_DATA.PARTITION_OUT_OF_RANGE", partition=int(chosen[bad][0]),
                    topic=topic, last=count - 1,
                    numbering=" on its Kafka 0.7 brokers, numbered by broker id, then "
                    f"partition ({', '.join(layout.names)})")
            parts[given] = chosen[given]
        sizes = pc.binary_length(values).to_numpy(zero_copy_only=False)
        too_big = np.nonzero(sizes + MESSAGE_OVERHEAD > self.max_message)[0]
        if len(too_big):
            i = int(too_big[0])
            raise ConfigurationError.of(
                KAFKA07_UNSUPPORTED, "MESSAGE_TOO_LARGE", i=i, value=int(sizes[i]),
                topic=topic, max_message=self.max_message)
        by_broker: dict[tuple[str, int], list[tuple[PartitionLocation, bytes, int]]] = \
            defaultdict(list)
        for number in np.unique(parts).tolist():
            loc = layout.locations[number]
            rows = np.nonzero(parts == number)[0]
            for chunk in self._chunks(values, rows, sizes):
                data = encode_message_set(
                    chunk, compression=self.settings.compression,
                    compression_level=self.settings.compression_level)
                by_broker[(loc.host, loc.port)].append((loc, data, len(chunk)))
        for (host, port), sets in by_broker.items():
            self._send(self.connections.get(host, port), sets)

    def _chunks(self, values: pa.Array, rows: np.ndarray, sizes: np.ndarray
                ) -> Iterator[pa.Array]:
        """The partition's rows in runs of at most ``kafka.batch.size`` bytes (one message
        set, or one compressed wrapper, each)."""
        taken = values.take(pa.array(rows))
        weights = sizes[rows] + MESSAGE_OVERHEAD
        start, held = 0, 0
        for i, w in enumerate(weights.tolist()):
            if held and held + w > self.chunk_bytes:
                yield taken.slice(start, i - start)
                start, held = i, 0
            held += w
        if start < len(taken):
            yield taken.slice(start)

    def _send(self, conn: Kafka07Connection,
              sets: list[tuple[PartitionLocation, bytes, int]]) -> None:
        confirm = self.settings.acks != 0
        if confirm:
            for loc, _, _ in sets:
                if loc not in self.ends:
                    self.ends[loc] = latest_offset(conn, loc.topic, loc.partition,
                                                   **loc.shown())
        ends = multiproduce(conn, [(loc.topic, loc.partition, data) for loc, data, _ in sets],
                            confirm=confirm)
        self.written.requests += 1
        self.written.records += sum(count for _, _, count in sets)
        if ends is None:
            return
        sent: dict[PartitionLocation, int] = defaultdict(int)
        last: dict[PartitionLocation, int] = {}
        for (loc, data, _), end in zip(sets, ends, strict=True):
            sent[loc] += len(data)
            last[loc] = end  # the log end after the last set to this partition
        for loc, end in last.items():
            before = self.ends[loc]
            if end - before < sent[loc]:
                raise ProtocolError(
                    f"the broker dropped what was sent: the log end moved from byte {before} "
                    f"to {end} after {sent[loc]} bytes were produced. A Kafka 0.7 broker "
                    "drops a message set larger than its max.message.size (1,000,000 bytes "
                    "by default) without an answer: lower kafka.batch.size, or raise the "
                    "broker's max.message.size", topic=loc.topic, partition=loc.number,
                    broker=loc.broker)
            self.ends[loc] = end

