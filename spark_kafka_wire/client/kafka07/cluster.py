"""A Kafka 0.7 cluster as Spark sees it: topics, partitions numbered across brokers, byte
offsets.

0.7 has no Metadata request: which brokers hold a topic, and how many partitions each, is
ZooKeeper's to say (``/brokers/topics/<topic>/<broker id>`` = that broker's partition count,
``/brokers/ids/<id>`` = ``creator:host:port``; ``zookeeper_registry``). Partitions belong to
brokers: broker 3's partition 0 is not broker 7's, and a 0.7 consumer names one
``<broker id>-<partition>`` (its ZooKeeper offsets and ownership nodes, the design document's
"Consumer Offset Tracking"). Spark's ``partition`` column and the keys of
startingOffsets/endingOffsets JSON want one number per topic, so the (broker id, partition)
pairs are numbered in the order sorted by broker id as an integer, then partition: brokers 1
and 2 with two partitions each give 0 = 1-0, 1 = 1-1, 2 = 2-0, 3 = 2-1, the order in which the
design document's rebalancing sorts them too.

That numbering is positional: a broker that leaves ZooKeeper (or joins with a lower id, or
a broker serving more partitions) renumbers those after it. A batch read is planned once, so
its tasks carry each partition's location (:class:`PartitionLocation`) and never ask
ZooKeeper; a stream records the layout it planned with (the partitions' names in number
order) and translates between layouts by name (``source``).

Offsets are byte positions in the partition's log: earliest and latest come from OFFSETS -2
and -1; offsets by time from OFFSETS with a time, which answers at segment granularity
(:meth:`Kafka07Cluster.offsets_for_times`). Errors name the global partition number and the
broker as ``<id> at host:port (its partition p)``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import (
    CONFIGURATION,
    KAFKA07_UNSUPPORTED,
    ConfigurationError,
    NoBrokersRegisteredError,
)
from spark_kafka_wire.client.fetching.empty_answers import EmptyAnswers
from spark_kafka_wire.client.fetching.fetch_plan import report_data_loss
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings07
from spark_kafka_wire.client.kafka07.connection import Kafka07Connection, Kafka07Connections
from spark_kafka_wire.client.kafka07.fetch import fetch_range
from spark_kafka_wire.client.kafka07.offsets import offsets_before
from spark_kafka_wire.client.metadata.cluster import (
    ClusterMetadata,
    PartitionInfo,
    TopicInfo,
    TopicPartition,
)
from spark_kafka_wire.client.metadata.cluster_api import PartitionLocation
from spark_kafka_wire.client.zookeeper.registry import (
    BrokerRegistration,
    BrokerRegistry,
    broker_path,
    topic_path,
)
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    OffsetOutOfRangeError,
    ProtocolError,
    check_kafka07_error,
)
from spark_kafka_wire.protocol.kafka07 import (
    EARLIEST_TIME,
    LATEST_TIME,
    RequestType,
    encode_fetch,
    message_ends,
)
from spark_kafka_wire.protocol.records.columns import DecodedRecords

log = logging.getLogger(__name__)

# OFFSETS asks for at most this many segment starts when it lists a partition's segments.
MAX_SEGMENTS = 1_000_000


@dataclass(frozen=True)
class TopicLayout:
    """A 0.7 topic's partitions, in number order."""

    topic: str
    locations: tuple[PartitionLocation, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(loc.name for loc in self.locations)


def number_partitions(topic: str, counts: Mapping[int, int],
                      brokers: Mapping[int, BrokerRegistration]) -> TopicLayout:
    """The layout of ``topic`` from its per-broker partition counts: pairs sorted by broker id
    as an integer, then partition. A broker listed under the topic but no longer registered
    (it left between the two reads; both its nodes are ephemeral) is left out, as it will be
    from the topic's node a moment later."""
    locations: list[PartitionLocation] = []
    for broker_id in sorted(counts):
        registration = brokers.get(broker_id)
        if registration is None:
            log.warning("topic %s lists broker %d, which is not registered in ZooKeeper "
                        "(it is leaving): its partitions are left out", topic, broker_id)
            continue
        address = registration.address("PLAINTEXT")
        assert address is not None  # a 0.7 registration is one PLAINTEXT listener
        for p in range(counts[broker_id]):
            locations.append(PartitionLocation(topic, len(locations), broker_id, p,
                                               address.host, address.port))
    return TopicLayout(topic, tuple(locations))


def segment_after(starts: list[int], before: list[int], log_end: int) -> int | None:
    """The offset a read of the records at or after a time starts at, from OFFSETS' answers:
    ``starts``, every segment start and the log end (OFFSETS -1 with many offsets), and
    ``before``, the answer for the time itself (the newest segment last modified at or
    before it first). A segment last modified at or before the time holds only older
    messages, so the read starts at the segment after the newest such one: the first
    segment when none is that old, None when only the log end follows (nothing is that new).
    """
    ordered = sorted(set(starts) | {log_end})
    if not before:
        return ordered[0] if ordered[0] < log_end else None
    newest_old = before[0]
    later = [o for o in ordered if o > newest_old]
    if not later or later[0] >= log_end:
        return None
    return later[0]


class Kafka07Cluster:
    """Connections to a 0.7 cluster and its ZooKeeper (``config.zookeeper_connect``), for
    the driver: layouts, offsets, rate-limit cuts. Tasks need no ZooKeeper: they read with
    :func:`read_range` from the locations planned here."""

    def __init__(self, config: ClientConfig) -> None:
        if not config.zookeeper_connect:
            raise ConfigurationError.of(KAFKA07_UNSUPPORTED, "NEEDS_ZOOKEEPER")
        self.config = config
        self.connections = Kafka07Connections(config)
        self._registry = BrokerRegistry(config.zookeeper_connect,
                                        security=config.zookeeper_security)
        self._layouts: dict[str, TopicLayout] = {}

    def close(self) -> None:
        self.connections.close()
        self._registry.close()

    def __enter__(self) -> Kafka07Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- layout ------------------------------------------------------------------------------
    def brokers(self) -> dict[int, BrokerRegistration]:
        brokers = self._registry.brokers()
        newer = [b for b in brokers.values() if not b.kafka07]
        if newer:
            raise ConfigurationError.of(
                KAFKA07_UNSUPPORTED, "NOT_A_KAFKA07_BROKER",
                broker_id=newer[0].broker_id, zookeeper_connect=self.config.zookeeper_connect,
                broker_id2=broker_path(newer[0].broker_id))
        return brokers

    def layouts(self, topics: Iterable[str] | None = None) -> dict[str, TopicLayout]:
        """The layout of each of ``topics`` that is registered (every registered topic when
        None), read from ZooKeeper now."""
        brokers = self.brokers()
        names = self._registry.topics() if topics is None else sorted(set(topics))
        out: dict[str, TopicLayout] = {}
        for topic in names:
            registration = self._registry.topic(topic)
            if registration is None:
                continue
            if not registration.kafka07:
                raise ConfigurationError.of(
                    KAFKA07_UNSUPPORTED, "NOT_A_KAFKA07_TOPIC", topic=topic,
                    topic2=topic_path(topic))
            out[topic] = number_partitions(topic, registration.broker_partitions, brokers)
        self._layouts.update(out)
        return out

    def fetch_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Metadata in the shape :class:`KafkaClient` gives it, for planning: each partition's
        leader is the broker holding it; a topic not registered has
        UNKNOWN_TOPIC_OR_PARTITION. Partition numbers are the global ones."""
        wanted = None if topics is None else list(topics)
        layouts = self.layouts(wanted)
        infos: dict[str, TopicInfo] = {}
        for topic in (wanted if wanted is not None else sorted(layouts)):
            layout = layouts.get(topic)
            if layout is None:
                infos[topic] = TopicInfo(topic, int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                                         False, {})
                continue
            infos[topic] = TopicInfo(topic, 0, False, {
                loc.number: PartitionInfo(topic, loc.number, loc.broker_id, -1,
                                          (loc.broker_id,), (loc.broker_id,), 0)
                for loc in layout.locations})
        brokers = {b.broker_id: (a.host, a.port) for b in self.brokers().values()
                   if (a := b.address("PLAINTEXT")) is not None}
        return ClusterMetadata(brokers, infos, -1, None)

    def location(self, topic: str, number: int) -> PartitionLocation:
        """Where global partition ``number`` of ``topic`` is, as last read from ZooKeeper."""
        layout = self._layouts.get(topic) or self.layouts([topic]).get(topic)
        if layout is None:
            raise ConfigurationError.of(
                CONFIGURATION, "KAFKA07_TOPIC_NOT_REGISTERED", topic=topic,
                zookeeper_connect=self.config.zookeeper_connect)
        if not 0 <= number < len(layout.locations):
            raise ConfigurationError.of(
                CONFIGURATION, "KAFKA07_PARTITION_NOT_FOUND", topic=topic, number=number,
                locations_count=len(layout.locations), value=len(layout.locations) - 1,
                names=', '.join(layout.names))
        return layout.locations[number]

    def names(self, topics: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """The partition names of ``topics`` in number order, as last read from ZooKeeper
        (read now for a topic not read yet); a topic not registered is left out."""
        missing = [t for t in topics if t not in self._layouts]
        if missing:
            self.layouts(missing)
        return {t: self._layouts[t].names for t in topics if t in self._layouts}

    def locate(self, topic: str, name: str, number: int) -> PartitionLocation:
        """Where the partition named ``name`` (``<broker id>-<partition>``) is now, shown as
        ``number``: a recorded plan read again after the layout may have changed."""
        broker_text, _, partition_text = name.partition("-")
        broker_id, partition = int(broker_text), int(partition_text)
        registration = self.brokers().get(broker_id)
        address = registration.address("PLAINTEXT") if registration is not None else None
        if address is None:
            raise NoBrokersRegisteredError(
                f"partition {number} of topic {topic!r} ({name}) is on broker {broker_id}, "
                f"which is not registered in ZooKeeper at {self.config.zookeeper_connect} "
                "now: the micro-batch that planned it can be read once the broker is back")
        return PartitionLocation(topic, number, broker_id, partition, address.host,
                                 address.port)

    def connection(self, loc: PartitionLocation) -> Kafka07Connection:
        return self.connections.get(loc.host, loc.port)

    # -- offsets -----------------------------------------------------------------------------
    def _offsets(self, loc: PartitionLocation, time: int, max_number: int = 1) -> list[int]:
        return offsets_before(self.connection(loc), loc.topic, loc.partition, time, max_number,
                              **loc.shown())  # type: ignore[arg-type]

    def earliest(self, loc: PartitionLocation) -> int:
        found = self._offsets(loc, EARLIEST_TIME)
        return found[0] if found else 0  # no log on the broker yet: it will start at 0

    def latest(self, loc: PartitionLocation) -> int:
        found = self._offsets(loc, LATEST_TIME)
        return found[0] if found else 0

    def list_offsets(self, specs: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Byte offsets for ``specs``: -2 earliest, -1 latest, anything else as given (a byte
        offset the user named; the read checks that a message starts there)."""
        out: dict[TopicPartition, int] = {}
        for (topic, number), spec in specs.items():
            if spec == EARLIEST_TIME:
                out[(topic, number)] = self.earliest(self.location(topic, number))
            elif spec == LATEST_TIME:
                out[(topic, number)] = self.latest(self.location(topic, number))
            else:
                out[(topic, number)] = spec
        return out

    def offsets_for_times(self, stamps: Mapping[TopicPartition, int]
                          ) -> dict[TopicPartition, int | None]:
        """The offset a read of the records written at or after each time starts at, at
        segment granularity (0.7 keeps no finer index; "Writing a Driver for Kafka",
        Offsets): the start of the first segment last modified after the time, so every
        record written at or after it is read, and records written before it in that
        segment too. None where no record is that new."""
        out: dict[TopicPartition, int | None] = {}
        for (topic, number), stamp in stamps.items():
            loc = self.location(topic, number)
            starts = self._offsets(loc, LATEST_TIME, MAX_SEGMENTS)
            log_end = max(starts) if starts else 0
            out[(topic, number)] = segment_after(starts, self._offsets(loc, stamp), log_end)
        return out

    def cut(self, loc: PartitionLocation, start: int, limit: int,
            settings: FetchSettings07 | None = None) -> int:
        """The end of the last complete message in ``[start, limit)``, ``start`` being a
        message boundary: where a rate-limited batch of this partition ends. A message that
        alone is longer than the limit still ends the batch after it, so every batch makes
        progress. Costs one FETCH of ``limit - start`` bytes (walked by their headers only):
        0.7 offsets are byte positions, and only the messages say where the next begins."""
        s = settings or FetchSettings07()
        conn = self.connection(loc)
        size = max(1, limit - start)
        empty = EmptyAnswers(conn.conn.config, conn.conn.operation_deadline)
        while True:
            code, body = conn.request(RequestType.FETCH,
                                      encode_fetch(loc.topic, loc.partition, start, size), size)
            check_kafka07_error(code, topic=loc.topic, partition=loc.number, offset=start,
                                broker=loc.broker, context="FETCH")
            end, count = message_ends(body, start, start_is_boundary=True, topic=loc.topic,
                                      partition=loc.number, broker=loc.broker)
            if count:
                return end
            if len(body) < size:
                # a segment end: the same offset again reads the next segment
                empty.wait(topic=loc.topic, partition=loc.number, offset=start,
                           broker=loc.broker, why=f"the log reaches byte offset {limit} "
                           "(cutting a rate-limited batch)")
                continue
            if size >= s.max_fetch_size:
                break
            size = min(size * 2, s.max_fetch_size)  # one message longer than the limit
        raise ProtocolError(
            f"found no complete message from byte offset {start} within "
            f"{s.max_fetch_size} bytes while cutting a rate-limited batch", topic=loc.topic,
            partition=loc.number, offset=start, broker=loc.broker)


def read_range(connections: Kafka07Connections, loc: PartitionLocation, start: int, end: int,
               settings: FetchSettings07, fail_on_data_loss: bool = True,
               ) -> Iterator[DecodedRecords]:
    """The records at byte offsets [start, end) of the partition at ``loc``, in chunks.

    ``start`` is not trusted to be a message boundary (a user may name any byte offset), so a
    first message that cannot be one is an :class:`OffsetInsideMessageError`. A start below
    the log's first segment (deleted by retention) is data loss, Spark's rule: with
    ``fail_on_data_loss`` a :class:`DataLossError`, else a warning and the read goes on from
    the earliest offset still held (nothing, when that is past ``end``)."""
    conn = connections.get(loc.host, loc.port)
    shown = loc.shown()
    chunks = fetch_range(conn, loc.topic, loc.partition, start, end, settings,
                         start_is_boundary=False, **shown)  # type: ignore[arg-type]
    try:
        first = next(chunks, None)
    except OffsetOutOfRangeError:
        found = offsets_before(conn, loc.topic, loc.partition, EARLIEST_TIME, 1,
                               **shown)  # type: ignore[arg-type]
        earliest = found[0] if found else 0
        if earliest <= start:
            raise  # out of range for another reason (past the log end): the error says where
        report_data_loss(loc.topic, loc.number, start, min(earliest, end),
                         f"the log of {loc.name} on broker {loc.broker} now starts at byte "
                         f"offset {earliest}", fail_on_data_loss, loc.broker)
        if earliest < end:
            yield from fetch_range(conn, loc.topic, loc.partition, earliest, end, settings,
                                   start_is_boundary=True, **shown)  # type: ignore[arg-type]
        return
    if first is not None:
        yield first
        yield from chunks
