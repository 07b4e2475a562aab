"""Driver-side planning of a batch read: which partitions, which fixed offset ranges.

Offsets are resolved to numbers here, once, so every task reads a fixed [start, end) range
and a retried task reads exactly the same rows. (Spark's kafka source leaves earliest/latest
ends of its ranges for each task to resolve when it starts; kafkawire does not, see docs/reading.md.)

Which partitions: Spark's ConsumerStrategy. ``subscribe`` names topics that must exist;
``subscribePattern`` matches every topic the cluster lists with ``re.search``; ``assign``
names partitions, and those that do not exist are left out (a missing topic is an error).
Internal topics are never read (Metadata's is_internal, and for patterns also Kafka's own topics
by name, such as __consumer_offsets, which some brokers do not flag). Other topics whose names
start with "__" are user topics: a pattern reads them, as Spark's does.

A partition whose start, once resolved, is after its end (a starting offset beyond the
partition's latest offset, a starting timestamp later than the ending one) fails the read with
StartAfterEndError, as Spark's does, before any task starts.

Splitting: Spark's KafkaOffsetRangeCalculator. Nothing is split unless minPartitions exceeds
the number of topic-partitions or a range holds more than maxRecordsPerPartition offsets.
Then empty ranges are dropped, ranges are cut into ceil(size / maxRecordsPerPartition) equal
pieces, and if there are still fewer pieces than minPartitions, large pieces are cut again in
proportion to their share of the offsets (small ones, whose share rounds to one piece, stay
whole).

Packing (kafkawire's, after splitting; ``pack_ranges``): a Spark task costs tens of
milliseconds of Python worker overhead whatever it reads, so one task per small range makes a
read of many small partitions slow (200 partitions of 10 records: 200 tasks for 2000 rows).
Small ranges therefore share a task, read one after another. Spark's defaultParallelism is not
visible to a Python data source's planner, so the number of tasks aimed at is ``minPartitions``
when given, else twice the CPUs the planner process may use (``default_task_count``; a
stream records that number in each micro-batch's end offsets, so a replay on another machine
packs the same way). A task's budget is the offsets divided by that target, at most
``maxRecordsPerPartition`` (``PACKED_RECORDS`` when unset, so that on a cluster larger than
the driver large reads keep one task per range). Ranges are taken in order (topic, partition,
start) and added to the current task while it stays within the budget and holds fewer than
``maxOffsetRangesPerPartition`` ranges; a range of the budget or more is a task of its own.
If that leaves fewer tasks than ``minPartitions`` (or than there are ranges, when that is
fewer), the fullest tasks are halved until there are enough: packing never goes below it.
Tasks are consecutive runs of the sorted ranges, so a topic's partitions and a partition's
pieces stay together, rows keep Spark's order, and the same ranges with the same target always
pack the same way (streaming replays and exactly-once writes rely on that). Grouping by leader
would depend on where leaders are when a batch is planned, which a replay cannot repeat.
"""

from __future__ import annotations

import heapq
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError, StartAfterEndError
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.offsets import LATEST
from spark_kafka_wire.client.metadata.cluster import TopicPartition, topic_error
from spark_kafka_wire.client.metadata.cluster_api import Cluster, Layout, TaskRead
from spark_kafka_wire.protocol.errors import AuthorizationError, ErrorCode
from spark_kafka_wire.source.formats import Decoding
from spark_kafka_wire.source.limits import Limit, OffsetSpec
from spark_kafka_wire.source.options import SourceOptions
from spark_kafka_wire.source.strategy import Assign, Strategy, Subscribe, SubscribePattern

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


class KafkaInputPartition(InputPartition):
    """Everything a task needs to read its ranges, without asking the driver anything.

    ``ranges`` are read one after another, each as a fixed range of its own (so a retried
    task reads exactly the same rows, data loss is judged per range, read_committed holds
    transactions per partition); one range unless small ranges were packed together.
    ``read`` is what the cluster made of them for the task (``Cluster.task_read``: on a
    cluster without a Metadata request, where each range's partition is), so tasks never
    ask the driver's cluster view; without it, the task finds each partition's leader."""

    def __init__(self, index: int, ranges: Sequence[OffsetRange], client: ClientConfig,
                 fetch: FetchSettings, max_records_per_batch: int,
                 fail_on_data_loss: bool = True, include_headers: bool = False,
                 read: TaskRead | None = None,
                 decoding: Decoding | None = None) -> None:
        super().__init__(index)
        self.ranges = tuple(ranges)
        self.client = client
        self.fetch = fetch
        self.max_records_per_batch = max_records_per_batch
        self.fail_on_data_loss = fail_on_data_loss
        self.include_headers = include_headers
        self.read = read if read is not None else TaskRead(
            client, planned(self.ranges), fetch, fail_on_data_loss)
        self.decoding = decoding  # value.format / key.format: decoded in the task

    def __repr__(self) -> str:
        shown = ", ".join(f"{r.topic}-{r.partition} [{r.start}, {r.end})"
                          for r in self.ranges[:3])
        more = len(self.ranges) - 3
        return f"KafkaInputPartition({shown}{f', ... {more} more' if more > 0 else ''})"


def planned(ranges: Sequence[OffsetRange]) -> tuple[tuple[str, int, int, int], ...]:
    """The non-empty ``ranges`` as a cluster reads them (topic, partition, start, end)."""
    return tuple((r.topic, r.partition, r.start, r.end) for r in ranges if r.size > 0)


# ------------------------------------------------------------------------------ partitions


#: Kafka's own topics (org.apache.kafka.common.internals.Topic): left out of subscribePattern
#: also where a broker does not flag them internal in its Metadata answers (Tansu).
KAFKA_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state",
                                   "__share_group_state"})


def is_internal_topic(name: str, is_internal: bool) -> bool:
    """Whether subscribePattern leaves a topic out: flagged internal by the broker, or one of
    Kafka's own topics. A user topic named ``__x`` is read, as by Spark's kafka source."""
    return is_internal or name in KAFKA_INTERNAL_TOPICS


def topic_partitions(client: Cluster, topics: tuple[str, ...], word: str = "subscribed",
                     missing_ok: bool = False) -> list[TopicPartition]:
    """Every partition of ``topics``; internal topics are left out. A topic that does not exist
    is an error, or with ``missing_ok`` simply has no partitions (a running stream: its
    vanished partitions then follow failOnDataLoss); one the principal may not describe is
    an error either way (``topic_error``: the ACL to grant)."""
    md = client.fetch_metadata(topics)
    tps: list[TopicPartition] = []
    for topic in topics:
        info = md.topics.get(topic)
        if info is None or info.error_code:
            error = topic_error(topic, info, client.config.principal,
                                f"the {word} topic does not exist (or is not visible to this "
                                "client)")
            # a refused ACL is no vanished topic: a running stream stops, saying so
            if missing_ok and not isinstance(error, AuthorizationError):
                continue
            raise error
        if info.is_internal:
            log.warning("topic %s is internal to Kafka and is not read (as in Spark)", topic)
            continue
        tps.extend((topic, p) for p in sorted(info.partitions))
    return tps


def assigned_partitions(client: Cluster, strategy: Strategy, missing_ok: bool = False
                        ) -> list[TopicPartition]:
    """The topic-partitions a strategy reads, sorted (``missing_ok``: see topic_partitions)."""
    if isinstance(strategy, Subscribe):
        return sorted(topic_partitions(client, strategy.topics, missing_ok=missing_ok))
    if isinstance(strategy, SubscribePattern):
        regex = strategy.regex
        md = client.fetch_metadata(None)
        names = sorted(
            name for name, info in md.topics.items()
            if info.error_code == ErrorCode.NONE and not is_internal_topic(name, info.is_internal)
            and regex.search(name)
        )
        if not names:
            log.warning("subscribePattern %r matches no topic; nothing is read",
                        strategy.pattern)
        return sorted((n, p) for n in names for p in md.topics[n].partitions)
    assert isinstance(strategy, Assign)
    existing = set(topic_partitions(client, strategy.topics, strategy.word, missing_ok))
    gone = [tp for tp in strategy.partitions if tp not in existing]
    if gone:
        log.warning("assigned partitions that do not exist are not read: %s",
                    ", ".join(f"{t}-{p}" for t, p in gone))
    return sorted(tp for tp in strategy.partitions if tp in existing)


def subscribed_topics(client: Cluster, options: SourceOptions) -> tuple[str, ...]:
    """The topics a read names, or, for subscribePattern, those the pattern matches now (the
    subjects of TopicNameStrategy schemas are found from them)."""
    if options.topics:
        return options.topics
    return tuple(sorted({t for t, _ in assigned_partitions(client, options.strategy)}))


# --------------------------------------------------------------------------------- offsets


def cluster_offsets(client: Cluster, specs: dict[TopicPartition, int],
                    isolation_level: int) -> dict[TopicPartition, int]:
    """Earliest (-2), latest (-1) or given offsets, resolved (``Cluster.list_offsets``: where
    offsets do not count records, positions in the log)."""
    return client.list_offsets(specs, isolation_level)


def resolve_limit(
    client: Cluster, limit: Limit, tps: list[TopicPartition], word: str,
    isolation_level: int, is_start: bool,
) -> dict[TopicPartition, int]:
    """Concrete offsets for one end of the ranges."""
    if isinstance(limit, OffsetSpec):
        return cluster_offsets(client, limit.for_partitions(tps, word=word), isolation_level)
    stamps = limit.for_partitions(tps, word=word)
    found = client.offsets_for_times(stamps, isolation_level)
    wanted: dict[TopicPartition, int] = {}
    for tp in tps:
        offset = found[tp]
        if offset is not None:
            wanted[tp] = offset
        elif is_start and not limit.latest_on_no_match:
            raise ConfigurationError.of(
                CONFIGURATION, "NO_OFFSET_FOR_TIMESTAMP", topic=tp[0], partition=tp[1],
                stamps=stamps[tp], option=limit.option)
        else:
            wanted[tp] = LATEST  # ending: no match is latest; starting: strategy "latest"
    return cluster_offsets(client, wanted, isolation_level)


# ------------------------------------------------------------------------------- splitting


def _divide(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``parts`` consecutive pieces of near-equal size; the last takes the remainder. Never
    more pieces than offsets: the extra ones would be empty (and ``minPartitions`` may ask for
    billions)."""
    parts = max(1, min(parts, r.size))
    out = []
    remaining, start = r.size, r.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(start + this, r.end)
        out.append(OffsetRange(r.topic, r.partition, start, end))
        start = end
    return out


def _part_count(size: int, total: int, parts: int) -> int:
    # Scala's math.round: half up.
    return max(math.floor(size / total * parts + 0.5), 1)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None,
                 max_records: int | None) -> list[OffsetRange]:
    """Spark's KafkaOffsetRangeCalculator (see the module docstring)."""
    needed = (min_partitions is not None and min_partitions > len(ranges)) or (
        max_records is not None and any(r.size > max_records for r in ranges))
    if not needed:
        return ranges
    pieces = [r for r in ranges if r.size > 0]
    if max_records is not None:
        pieces = [p for r in pieces for p in _divide(r, -(-r.size // max_records))]
    if min_partitions is not None and min_partitions > len(pieces):
        total = sum(r.size for r in pieces)
        whole = [_part_count(r.size, total, min_partitions) == 1 for r in pieces]
        split_total = total - sum(r.size for r, w in zip(pieces, whole, strict=True) if w)
        split_min = max(min_partitions - sum(whole), 1)
        pieces = [
            p for r, w in zip(pieces, whole, strict=True)
            for p in _divide(r, 1 if w else _part_count(r.size, split_total, split_min))
        ]
    return sorted((r for r in pieces if r.size > 0),
                  key=lambda r: (r.topic, r.partition, r.start))


# ------------------------------------------------------------------------------------ plan


def plan_ranges(client: Cluster, options: SourceOptions) -> list[OffsetRange]:
    strategy = options.strategy
    tps = assigned_partitions(client, strategy)
    iso = options.isolation_level
    starts = resolve_limit(client, options.starting, tps, strategy.word, iso, is_start=True)
    ends = resolve_limit(client, options.ending, tps, strategy.word, iso, is_start=False)
    ranges = []
    for tp in tps:
        start, end = starts[tp], ends[tp]
        if start > end:  # Spark fails the read too, whatever failOnDataLoss says
            raise StartAfterEndError(tp[0], tp[1], start, end, options.starting.option,
                                     options.ending.option)
        ranges.append(OffsetRange(tp[0], tp[1], start, end))
    if not client.offsets_count_records:
        if options.min_partitions is not None or options.max_records_per_partition is not None:
            log.info("Kafka 0.7: minPartitions and maxRecordsPerPartition split no range (a "
                     "piece must start where a message does, which only reading the bytes "
                     "can tell); they still shape how small ranges are packed")
        return ranges
    return split_ranges(ranges, options.min_partitions, options.max_records_per_partition)


# ------------------------------------------------------------------------------- packing

PACKED_RECORDS = 100_000
"""A packed task's budget when ``maxRecordsPerPartition`` is unset, in offsets. A Python task
reads a few hundred thousand records a second, so this is a fraction of a second of reading:
packing beyond it saves little overhead, and the planner's CPU count says nothing about how
many cores a cluster has, so large reads keep one task per range as in Spark."""


def default_task_count() -> int:
    """The number of tasks packing aims at when ``minPartitions`` is not given: twice the CPUs
    this process may run on (its affinity mask where the platform has one, so a container's
    cpuset counts). Spark's defaultParallelism, the natural target, is not reachable from a
    Python data source's planner; twice the cores leaves room for uneven tasks."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform (macOS, Windows)
        cpus = os.cpu_count() or 1
    return 2 * max(cpus, 1)


MIN_TASK_RECORDS = 20_000
"""Fewest offsets a packed task is planned for when packing aims at the default task count: a
Spark task of a Python data source costs tens of milliseconds however little it reads (a
Python worker gets the partition, the JVM reads Arrow back), about as long as reading 20,000
small records takes, so ranges that are packed anyway go into fewer tasks when they hold
little: a stream's micro-batch of a few hundred records over 64 partitions into one.
``minPartitions``, when given, is obeyed instead; ranges that need no packing (no more of them
than the default count) keep a task each, as in Spark."""


def sized_task_count(total: int, ranges: int, default_tasks: int | None) -> int | None:
    """The task count packing aims at for ``ranges`` non-empty ranges holding ``total``
    offsets when minPartitions is not given: ``default_tasks``, or fewer (at least one) when
    there are more ranges than that and fewer than MIN_TASK_RECORDS offsets per task. None
    stays None (no packing). A stream records the result in each batch's end offsets, so a
    replay packs as the first attempt did whatever this rule becomes."""
    if default_tasks is None or ranges <= default_tasks:
        return default_tasks
    return max(1, min(default_tasks, -(-total // MIN_TASK_RECORDS)))


def pack_ranges(ranges: Sequence[OffsetRange], target: int | None,
                min_partitions: int | None = None, max_records: int | None = None,
                max_ranges: int | None = None) -> list[tuple[OffsetRange, ...]]:
    """The ranges grouped into tasks (see the module docstring): ``target`` tasks aimed at
    (None: no packing, one task per range, as Spark plans), never fewer than
    ``min_partitions`` (or than there are ranges, when that is fewer), at most ``max_ranges``
    ranges per task, and a budget of the total offsets divided by ``target``, at most
    ``max_records`` (else ``PACKED_RECORDS``). Every range is in exactly one task, in the
    order given."""
    if target is None or max_ranges == 1 or len(ranges) <= target:
        return [(r,) for r in ranges]
    total = sum(r.size for r in ranges)
    budget = max(1, min(-(-total // target),
                        PACKED_RECORDS if max_records is None else max_records))
    groups: list[list[OffsetRange]] = []
    current: list[OffsetRange] = []
    held = 0
    for r in ranges:
        if r.size >= budget:  # large: a task of its own
            if current:
                groups.append(current)
            groups.append([r])
            current, held = [], 0
            continue
        if current and (held + r.size > budget or len(current) == max_ranges):
            groups.append(current)
            current, held = [], 0
        current.append(r)
        held += r.size
    if current:
        groups.append(current)
    floor = min(min_partitions, len(ranges)) if min_partitions is not None else 0
    if len(groups) < floor:
        groups = _halve_until(groups, floor)
    return [tuple(g) for g in groups]


def _halve_until(groups: list[list[OffsetRange]], count: int) -> list[list[OffsetRange]]:
    """Split the fullest task (most offsets, then most ranges, then the first) in two until
    there are ``count`` tasks, at the cut that leaves the smaller larger half (then the one
    nearest the middle, then the first): deterministic, and order is kept."""
    # (-offsets, -ranges, position of its first range, ranges); positions are unique.
    heap: list[tuple[int, int, int, list[OffsetRange]]] = []
    done: list[tuple[int, list[OffsetRange]]] = []
    position = 0
    for g in groups:
        if len(g) > 1:
            heap.append((-sum(r.size for r in g), -len(g), position, g))
        else:
            done.append((position, g))
        position += len(g)
    heapq.heapify(heap)
    while heap and len(heap) + len(done) < count:
        _, _, first, g = heapq.heappop(heap)
        sizes = [r.size for r in g]
        total, best, best_key, left = sum(sizes), 1, None, 0
        for cut in range(1, len(g)):
            left += sizes[cut - 1]
            key = (max(left, total - left), abs(2 * cut - len(g)))
            if best_key is None or key < best_key:
                best, best_key = cut, key
        for part, at in ((g[:best], first), (g[best:], first + best)):
            if len(part) > 1:
                heapq.heappush(heap, (-sum(r.size for r in part), -len(part), at, part))
            else:
                done.append((at, part))
    done.extend((first, g) for _, _, first, g in heap)
    return [g for _, g in sorted(done, key=lambda item: item[0])]


def input_partitions(ranges: Sequence[OffsetRange], options: SourceOptions,
                     default_tasks: int | None, cluster: Cluster | None = None,
                     layout: Layout | None = None) -> list[KafkaInputPartition]:
    """The read's tasks: ``ranges`` packed, aiming at ``minPartitions`` tasks when given, else
    at ``default_tasks`` (None: no packing at all, for a micro-batch whose end offsets were
    written before kafkawire packed ranges, so its replay is split as it was). ``cluster``
    makes each task's read (``Cluster.task_read``, by the names of a stream's recorded
    ``layout`` when given); without it tasks find each partition's leader themselves."""
    o = options
    target = None if default_tasks is None else o.min_partitions or default_tasks
    groups = pack_ranges(ranges, target, o.min_partitions, o.max_records_per_partition,
                         o.max_ranges_per_partition)
    return [KafkaInputPartition(
                i, g, o.client, o.fetch, o.max_records_per_batch, o.fail_on_data_loss,
                o.include_headers,
                None if cluster is None else
                cluster.task_read(o.client, planned(g), o.fetch, o.fail_on_data_loss, layout),
                o.decoding)
            for i, g in enumerate(groups)]
