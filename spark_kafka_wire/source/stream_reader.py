"""Structured Streaming source: micro-batches of fixed offset ranges.

This object lives in Spark's long-running stream-runner process (initialOffset, latestOffset,
partitions, commit), so it may keep state between calls: the last time a batch was admitted
(minOffsetsPerTrigger) and the availableNow target. Tasks get the same fixed-range partitions
as batch reads, small ranges packed together likewise. Offsets are ``{"topic": {"partition": next_offset}}`` with keys in sorted
order, because Spark compares serialized offsets as strings.

Spark may call ``initialOffset`` several times before the first batch runs (once to plan the
batch, again to run it) and asks a restarted query for it again when the first batch had been
planned but not completed. The initial offsets are therefore resolved once per query run and
kept, and the end offsets of a batch record where that batch began wherever Spark would
otherwise ask again (see ``START_KEY``), so the first batch reads the same range however often
Spark plans or replays it. They also record the task count small ranges are packed for
(``TASKS_KEY``), which depends on the machine's CPUs, so a replay on another machine splits the
batch into the same tasks. Every other method returns the same answer for the same arguments.

Consumed offsets are committed for lag tools (commitOffsets) when a batch's end becomes the
next batch's start (``latestOffset``) and in ``commit``: the first also covers the last batch
of an availableNow run, for which Spark never calls ``commit``. Commits never change what is
read: the checkpoint stays the source of truth.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from spark_kafka_wire.client.errors import DataLossError
from spark_kafka_wire.client.fetching.offsets import EARLIEST, LATEST
from spark_kafka_wire.client.metadata.cluster import TopicPartition
from spark_kafka_wire.client.metadata.cluster_api import Cluster, Layout
from spark_kafka_wire.client.pool import planner_cluster
from spark_kafka_wire.client.zookeeper.consumer_offsets import ZooKeeperOffsetStore
from spark_kafka_wire.errors import brief_traceback
from spark_kafka_wire.protocol.errors import UnknownTopicOrPartitionError
from spark_kafka_wire.source.batch_reader import read_partition
from spark_kafka_wire.source.offsets_json import (
    START_KEY,
    Offsets,
    batch_start,
    from_json,
    recorded_layout,
    recorded_tasks,
    to_json,
    translate,
    with_start,
)
from spark_kafka_wire.source.options import GroupStart, StreamOptions
from spark_kafka_wire.source.planning import (
    OffsetRange,
    assigned_partitions,
    cluster_offsets,
    input_partitions,
    resolve_limit,
    sized_task_count,
    split_ranges,
)
from spark_kafka_wire.source.rate_limits import hold_back, rate_limit

log = logging.getLogger(__name__)
#: latestOffset's attempts when a subscribed topic vanishes during its lookups
VANISHED_TOPIC_ATTEMPTS = 3

class KafkaWireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``default_tasks``: the number of tasks small ranges are packed into when minPartitions
    is not given (the DataSource passes ``default_task_count()``; None, no packing), recorded
    in each batch's end offsets."""

    def __init__(self, options: StreamOptions, default_tasks: int | None = None) -> None:
        self.options = options
        self._tasks = default_tasks if options.source.max_ranges_per_partition != 1 else None
        self._target: Offsets | None = None  # availableNow: never read past this
        self._initial: Offsets | None = None  # resolved once per query run
        self._latest: Offsets | None = None
        # minOffsetsPerTrigger: when a trigger last let a batch through, or found
        # maxTriggerDelay passed; 0 at first, so a query's first trigger is never held back
        # (Spark's lastTriggerMillis).
        self._last_trigger_ms = 0.0
        self._admitted_from: Offsets | None = None  # start of the last batch admitted
        self._zk: ZooKeeperOffsetStore | None = None
        self._committed: Offsets | None = None
        self._initial_layout: Layout | None = None  # Kafka 0.7: what _initial is numbered by

    # -- helpers -----------------------------------------------------------------------------
    def _client(self) -> Cluster:
        s = self.options.source
        config = s.planner_client or s.client
        return planner_cluster(config)

    def _layout(self, client: Cluster, tps: list[TopicPartition] | Offsets) -> Layout | None:
        """Kafka 0.7: the partition names the numbers of ``tps`` refer to now (offsets_json's
        LAYOUT_KEY); None on newer clusters, whose partition numbers are their own."""
        return client.layout({t for t, _ in tps})

    def _names(self, offsets: Offsets, layout: Layout | None) -> dict[TopicPartition, str] | None:
        """Kafka 0.7 ZooKeeper offset nodes are named ``<broker id>-<partition>``."""
        if layout is None:
            return None
        return {(t, p): layout[t][p] for t, p in offsets}

    def _partitions_now(self, client: Cluster, started: bool = True) -> list[TopicPartition]:
        """The partitions read now. Once the query runs, a subscribed topic that disappeared is
        not an error here: its partitions vanish and failOnDataLoss decides (as in Spark)."""
        return assigned_partitions(client, self.options.source.strategy, missing_ok=started)

    def _latest_offsets(self, client: Cluster, tps: list[TopicPartition]) -> Offsets:
        return cluster_offsets(client, {tp: LATEST for tp in tps},
                               self.options.source.isolation_level)

    def _zookeeper(self) -> ZooKeeperOffsetStore:
        if self._zk is None:
            assert self.options.zookeeper_connect
            self._zk = ZooKeeperOffsetStore(self.options.zookeeper_connect,
                                            security=self.options.zookeeper_security)
        return self._zk

    # -- offsets -----------------------------------------------------------------------------
    @brief_traceback
    def initialOffset(self) -> dict:
        if self._initial is None:
            self._initial = self._resolve_initial()
        return with_start(self._initial, {}, None, self._initial_layout)

    def _resolve_initial(self) -> Offsets:
        o = self.options
        client = self._client()
        tps = self._partitions_now(client, started=False)
        self._initial_layout = self._layout(client, tps)
        if isinstance(o.starting, GroupStart):
            assert o.group_id
            if o.commit_offsets == "zookeeper":
                committed = self._zookeeper().fetch(
                    o.group_id, tps, self._names({tp: 0 for tp in tps}, self._initial_layout))
            else:
                committed = client.committed_offsets(o.group_id, tps)  # 0.7: refused
            wanted = {tp: (c if c >= 0 else EARLIEST) for tp, c in committed.items()}
            offsets = cluster_offsets(client, wanted, o.source.isolation_level)
        else:
            offsets = resolve_limit(client, o.starting, tps, o.source.strategy.word,
                                    o.source.isolation_level, is_start=True)
        return offsets

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self.options
        if o.max_offsets_per_trigger:
            return ReadMaxRows(o.max_offsets_per_trigger)
        if o.min_offsets_per_trigger:
            return ReadMinRows(o.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        if self._target is not None:  # the run's end is fixed when it starts, once
            return
        client = self._client()
        self._target = self._latest_offsets(client, self._partitions_now(client, started=False))

    @brief_traceback
    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        # A subscribed topic deleted between the metadata that listed its partitions and the
        # offset lookups that followed (Kafka answers UNKNOWN_TOPIC_OR_PARTITION then) is no
        # error: asked again, its partitions have vanished and failOnDataLoss decides, as in
        # Spark. Each attempt starts over from the same start, so repeating one is harmless.
        for attempt in range(VANISHED_TOPIC_ATTEMPTS):
            try:
                return self._latest_offset(start, limit)
            except UnknownTopicOrPartitionError as exc:
                if attempt == VANISHED_TOPIC_ATTEMPTS - 1:
                    raise
                log.info("a subscribed topic vanished while its offsets were looked up (%s); "
                         "looking at the topics again", exc)
        raise AssertionError("unreachable")

    def _latest_offset(self, start: dict, limit: ReadLimit) -> dict:
        o = self.options
        client = self._client()
        begin = from_json(start)
        self._commit(begin, recorded_layout(start))  # the previous batch ended at our start
        first = (self._initial is not None and START_KEY not in start
                 and begin == self._initial)
        tps = self._partitions_now(client)
        layout = self._layout(client, tps)
        if layout is not None:  # Kafka 0.7: renumbered by name if brokers came or went
            begin, _ = translate(begin, recorded_layout(start), layout)
        new = [tp for tp in tps if tp not in begin]
        if new:  # partitions that appeared during the query start at earliest, as in Spark
            begin.update(cluster_offsets(client, {tp: EARLIEST for tp in new},
                                         o.source.isolation_level))
        # Partitions that vanished leave the end offsets; partitions() reports them.
        # (the set made once: made in the condition, it would be made for every partition,
        # 6 s a trigger at 10,000 partitions: python -m bench.cluster_planning)
        present = set(tps)
        gone = [tp for tp in begin if tp not in present]
        for tp in gone:
            begin.pop(tp)
        # where the batch begins, for the partitions whose start Spark would ask for again
        began = dict(begin) if first else {tp: begin[tp] for tp in new}
        latest = self._checked_latest(client, tps, begin)
        if self._target is not None:  # availableNow: the end is fixed when the run starts
            latest = {tp: min(end, self._target.get(tp, begin[tp])) for tp, end in latest.items()}
        self._latest = latest
        end = dict(latest)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(limit.max_rows, begin, latest)
            # a batch ends at a record's end (Kafka 0.7's byte offsets: a message's)
            end = {tp: client.batch_end(tp, begin[tp], e, o.source.fetch)
                   if begin[tp] < e < latest[tp] else e for tp, e in end.items()}
        min_rows = limit.min_rows if isinstance(limit, ReadMinRows) else (
            o.min_offsets_per_trigger if isinstance(limit, ReadMaxRows) else None)
        # a batch admitted from this start stays admitted if Spark asks again; what is
        # available counts, not what maxOffsetsPerTrigger lets into the batch (as in Spark)
        if self._target is None and begin != self._admitted_from and min_rows:
            now = time.time() * 1000
            wait, self._last_trigger_ms = hold_back(min_rows, begin, latest,
                                                    self._last_trigger_ms,
                                                    o.max_trigger_delay_ms, now)
            if wait:
                return start
        if end == begin:
            renumbered = layout is not None and layout != recorded_layout(start)
            if not new and not gone and not renumbered:
                return start
            return with_start(begin, began, self._tasks, layout)
        self._admitted_from = dict(begin)
        sizes = [end[tp] - begin[tp] for tp in end if tp in begin and end[tp] > begin[tp]]
        return with_start(end, began, sized_task_count(sum(sizes), len(sizes), self._tasks),
                          layout)

    def _checked_latest(self, client: Cluster, tps: list[TopicPartition],
                        begin: Offsets) -> Offsets:
        """The latest offsets, asked again (fetchOffset.numRetries attempts in all, a
        fetchOffset.retryIntervalMs pause between them) while one is below where the batch
        begins: a broker can briefly answer a stale latest offset (KAFKA-7703), and Spark asks
        again the same way before it treats the partition's offsets as changed."""
        s = self.options.source
        latest = self._latest_offsets(client, tps)
        for _ in range(s.offset_fetch_attempts - 1):
            wrong = [(tp, begin[tp], end) for tp, end in sorted(latest.items())
                     if tp in begin and end < begin[tp]]
            if not wrong:
                break
            log.warning("Found incorrect offsets in some partitions (partition, previous "
                        "offset, fetched offset): %s; asking again in %d ms",
                        ", ".join(f"({t}-{p}, {a}, {b})" for (t, p), a, b in wrong),
                        s.offset_fetch_interval_ms)
            time.sleep(s.offset_fetch_interval_ms / 1000)
            latest = self._latest_offsets(client, tps)
        return latest

    def reportLatestOffset(self) -> dict | None:
        return to_json(self._latest) if self._latest is not None else None

    # -- planning and reading ----------------------------------------------------------------
    @brief_traceback
    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        """The batch's fixed ranges. Data loss is reported here, as Spark's planInputPartitions
        does: partitions gone since the batch began, partitions whose offsets went back, new
        partitions that do not start at offset 0 (failOnDataLoss: fail, or warn and go on)."""
        o = self.options
        s = o.source
        if start == end:  # Spark's setLatestSeenOffset after a restart: nothing to read
            return []
        before, finish = from_json(start), from_json(end)
        layout = recorded_layout(end)
        if layout is not None:  # Kafka 0.7: the start renumbered by the end's layout
            before, vanished = translate(before, recorded_layout(start), layout)
            if vanished:
                (topic, number), name = vanished[0]
                self._lost([(topic, number)], "PARTITIONS_DELETED", f"Partitions {', '.join(n for _, n in vanished)} "
                           f"of the Kafka 0.7 brokers are gone from ZooKeeper",
                           "what they held beyond the offsets already read is skipped",
                           from_json(start)[(topic, number)])
        begin = batch_start(start, end) if layout is None else \
            {**before, **from_json(end.get(START_KEY, {}))}
        gone = sorted(tp for tp in before if tp not in finish)
        if gone:
            self._lost(gone, "PARTITIONS_DELETED", f"Partitions {_names(gone)} have been deleted",
                       "what they held beyond the offsets already read is skipped",
                       before[gone[0]])
        missing = [tp for tp in finish if tp not in begin]
        if missing:  # new partitions (in checkpoints without a recorded start): earliest
            begin.update(self._earliest(missing))
        new = sorted(tp for tp in finish if tp not in before and tp in begin)
        for tp in new:
            if begin[tp] != 0:
                self._lost([tp], "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO",
                           f"Added partition {tp[0]}-{tp[1]} starts from {begin[tp]} "
                           "instead of 0. Some data may have been missed",
                           f"offsets [0, {begin[tp]}) are skipped", 0, begin[tp])
        ranges = []
        for tp in sorted(finish):
            if tp not in begin:
                continue
            a, b = begin[tp], finish[tp]
            if b < a:
                self._lost([tp], "PARTITION_OFFSET_CHANGED",
                           f"Partition {tp[0]}-{tp[1]}'s offset was changed from {a} to "
                           f"{b}, some data may have been missed. This could either be a user "
                           "error that the start offset is set too high and this is the first "
                           "batch, or the Kafka topic-partition is broken (deleted and "
                           "re-created, or truncated)",
                           f"this micro-batch reads nothing from it and the next one starts "
                           f"at offset {b}", a, b)
                continue
            ranges.append(OffsetRange(tp[0], tp[1], a, b))
        if layout is not None:  # read where the end's layout names each partition now
            return list(input_partitions(
                [r for r in ranges if r.size > 0], s, recorded_tasks(end), self._client(),
                layout))
        ranges = split_ranges(ranges, s.min_partitions, s.max_records_per_partition)
        # packed for the task count the batch's end recorded, so that a replay anywhere
        # splits the batch as the first attempt did
        return list(input_partitions([r for r in ranges if r.size > 0], s,
                                     recorded_tasks(end)))

    def _earliest(self, tps: list[TopicPartition]) -> Offsets:
        """Earliest offsets of new partitions; those deleted meanwhile are data loss."""
        client = self._client()
        present = set(self._partitions_now(client))
        found = [tp for tp in tps if tp in present]
        lost = sorted(tp for tp in tps if tp not in present)
        if lost:
            self._lost(lost, "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS", f"Cannot find earliest offsets of {_names(lost)}. Some data may "
                       "have been missed", "they are not read", 0)
        return cluster_offsets(client, {tp: EARLIEST for tp in found},
                               self.options.source.isolation_level) if found else {}

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)

    @brief_traceback
    def commit(self, end: dict) -> None:
        self._commit(from_json(end), recorded_layout(end))

    def stop(self) -> None:
        if self._zk is not None:
            self._zk.close()
            self._zk = None

    # -- internals ---------------------------------------------------------------------------
    def _commit(self, offsets: Offsets, layout: Layout | None = None) -> None:
        o = self.options
        if o.commit_offsets == "none" or not offsets or offsets == self._committed:
            return
        assert o.group_id
        if o.commits_to_kafka:
            self._client().commit_offsets(o.group_id, offsets, "kafkawire")  # 0.7: refused
        if o.commits_to_zookeeper:
            self._zookeeper().commit(o.group_id, offsets, self._names(offsets, layout))
        self._committed = dict(offsets)

    def _lost(self, tps: list[TopicPartition], kind: str, what: str, skipped: str, start: int,
              end: int = -1) -> None:
        """Spark's reportDataLoss: with failOnDataLoss (the default) a DataLossError of
        condition KAFKA_DATA_LOSS.``kind`` saying ``what``; without, a warning saying ``what``
        and what is ``skipped``."""
        if self.options.source.fail_on_data_loss:
            topic, partition = tps[0]
            raise DataLossError(topic, partition, start, end, what, context="streaming source",
                                summary=what, kind=kind)
        log.warning("%s; %s (failOnDataLoss is false). Some data may have been lost because "
                    "they are not available in Kafka any more; either the data was aged out "
                    "by Kafka or the topic may have been deleted before all the data in the "
                    "topic was processed. If you want your streaming query to fail on such "
                    "cases, set the source option failOnDataLoss to true", what, skipped)


def _names(tps: list[TopicPartition]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in tps)
