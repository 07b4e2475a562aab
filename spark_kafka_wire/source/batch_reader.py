"""Batch reads: driver-side planning hands each task fixed offset ranges; tasks fetch them."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark_kafka_wire.client.kafka07.cluster import Kafka07Cluster, read_range
from spark_kafka_wire.client.multi_fetch import fetch_ranges
from spark_kafka_wire.client.pool import (
    shared_client,
    shared_kafka07,
    task_client,
    task_connections07,
)
from spark_kafka_wire.source.options import SourceOptions
from spark_kafka_wire.source.planning import (
    Cluster,
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

    def partitions(self) -> list[InputPartition]:
        o = self.options
        config = o.planner_client or o.client
        client: Cluster = shared_kafka07(config) if config.kafka07 else shared_client(config)
        ranges = plan_ranges(client, o)
        if not ranges:
            # Spark reads an empty partition list as "one partition": hand it an empty range.
            ranges = [OffsetRange("", 0, 0, 0)]
        tasks = sized_task_count(sum(r.size for r in ranges),
                                 sum(r.size > 0 for r in ranges), self.default_tasks)
        if isinstance(client, Kafka07Cluster):
            cluster = client
            return list(input_partitions(
                ranges, o, tasks, lambda r: cluster.location(r.topic, r.partition)))
        return list(input_partitions(ranges, o, tasks))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)


def read_partition(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """Arrow batches of one task's planned ranges, one range after another (batch and stream
    tasks alike). Packed ranges are fetched together, one Fetch per leader for many of them
    (``multi_fetch``), but each range is read as a fixed range of its own, so what it returns
    does not depend on the ranges it was packed with."""
    assert isinstance(partition, KafkaInputPartition)
    if partition.locations is not None:
        yield from _read_kafka07(partition)
        return
    ranges = [(r.topic, r.partition, r.start, r.end) for r in partition.ranges if r.size > 0]
    if not ranges:
        return
    client = task_client(partition.client)
    for i, chunk in fetch_ranges(client, ranges, partition.fetch, partition.fail_on_data_loss):
        yield from to_record_batches(chunk, ranges[i][0], ranges[i][1],
                                     partition.max_records_per_batch, partition.include_headers)


def _read_kafka07(partition: KafkaInputPartition) -> Iterator[pa.RecordBatch]:
    """A task's ranges on Kafka 0.7 brokers: byte offsets, read range by range from the
    brokers the planner located them on; no keys, no timestamps, no headers in 0.7."""
    assert partition.locations is not None and partition.fetch07 is not None
    conns = task_connections07(partition.client)
    for r, loc in zip(partition.ranges, partition.locations, strict=True):
        if r.size <= 0 or loc is None:
            continue
        for chunk in read_range(conns, loc, r.start, r.end, partition.fetch07,
                                partition.fail_on_data_loss):
            yield from to_record_batches(chunk, r.topic, r.partition,
                                         partition.max_records_per_batch,
                                         partition.include_headers, timestamps=False)
