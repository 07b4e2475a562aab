"""Batch reads: driver-side planning hands each task fixed offset ranges; tasks fetch them."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark_kafka_wire.client.fetching.task_reads import read_planned
from spark_kafka_wire.client.pool import planner_cluster
from spark_kafka_wire.errors import brief_traceback
from spark_kafka_wire.source.formats import decode_batch
from spark_kafka_wire.source.options import SourceOptions
from spark_kafka_wire.source.planning import (
    KafkaInputPartition,
    OffsetRange,
    input_partitions,
    plan_ranges,
    sized_task_count,
)
from spark_kafka_wire.source.schema import to_record_batches


class KafkaWireBatchReader(DataSourceReader):
    """``default_tasks``: the number of tasks small ranges are packed into when minPartitions
    is not given (the DataSource passes ``default_task_count()``; None, no packing)."""

    def __init__(self, options: SourceOptions, default_tasks: int | None = None) -> None:
        self.options = options
        self.default_tasks = default_tasks

    @brief_traceback
    def partitions(self) -> list[InputPartition]:
        o = self.options
        config = o.planner_client or o.client
        cluster = planner_cluster(config)
        ranges = plan_ranges(cluster, o)
        if not ranges:
            # Spark reads an empty partition list as "one partition": hand it an empty range.
            ranges = [OffsetRange("", 0, 0, 0)]
        tasks = sized_task_count(sum(r.size for r in ranges),
                                 sum(r.size > 0 for r in ranges), self.default_tasks)
        return list(input_partitions(ranges, o, tasks, cluster))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)


def read_partition(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """Arrow batches of one task's planned ranges, one range after another (batch and stream
    tasks alike). Packed ranges are fetched together, one Fetch per leader for many of them
    (``multi_fetch``), but each range is read as a fixed range of its own, so what it returns
    does not depend on the ranges it was packed with."""
    assert isinstance(partition, KafkaInputPartition)
    read = partition.read
    decoding = partition.decoding
    for i, chunk in read_planned(read):
        topic, number = read.ranges[i][0], read.ranges[i][1]
        batches = to_record_batches(chunk, topic, number, partition.max_records_per_batch,
                                    partition.include_headers, timestamps=read.has_timestamps)
        if decoding is None:
            yield from batches
        else:
            yield from (decode_batch(b, decoding, topic, number) for b in batches)
