"""Batch reads: driver-side planning hands each task a fixed offset range; tasks fetch it."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark_kafka_wire.client.fetcher import fetch_range
from spark_kafka_wire.client.pool import shared_client
from spark_kafka_wire.source.options import SourceOptions
from spark_kafka_wire.source.planning import KafkaInputPartition, OffsetRange, plan_ranges
from spark_kafka_wire.source.schema import to_record_batches


class KafkaWireBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        o = self.options
        client = shared_client(o.planner_client or o.client)
        ranges = plan_ranges(client, o)
        if not ranges:
            # Spark reads an empty partition list as "one partition": hand it an empty range.
            ranges = [OffsetRange("", 0, 0, 0)]
        return [
            KafkaInputPartition(i, r, o.client, o.fetch, o.max_records_per_batch,
                                o.fail_on_data_loss, o.include_headers)
            for i, r in enumerate(ranges)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)


def read_partition(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """Arrow batches of one planned range (batch and stream tasks alike)."""
    assert isinstance(partition, KafkaInputPartition)
    r = partition.range
    if r.size == 0:
        return
    client = shared_client(partition.client)
    for chunk in fetch_range(client, r.topic, r.partition, r.start, r.end, partition.fetch,
                             partition.fail_on_data_loss):
        yield from to_record_batches(chunk, r.topic, r.partition,
                                     partition.max_records_per_batch, partition.include_headers)
