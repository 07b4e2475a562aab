"""The ceilings of Spark's Python data source path: a data source ``benchlimit`` with
kafkawire's schema whose partitions yield prebuilt Arrow batches of the same size and value
length as the Kafka read, without any I/O or decoding; and whose Arrow writer receives the
same DataFrame as the Kafka write and only counts its rows."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from spark_kafka_wire.source.schema import ARROW_SCHEMA, KAFKA_SCHEMA

BATCH_ROWS = 10_000


class LimitDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "benchlimit"

    def schema(self):
        return KAFKA_SCHEMA

    def writer(self, schema, overwrite: bool) -> DataSourceArrowWriter:
        return CountingWriter()

    def reader(self, schema) -> DataSourceReader:
        return LimitReader(int(self.options["rows"]), int(self.options.get("valueSize", 100)),
                           int(self.options.get("partitions", 4)))


class LimitReader(DataSourceReader):
    def __init__(self, rows: int, value_size: int, partitions: int) -> None:
        self.rows, self.value_size, self.parts = rows, value_size, partitions

    def partitions(self) -> list[InputPartition]:
        per, extra = divmod(self.rows, self.parts)
        return [InputPartition((p, per + (p < extra))) for p in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from .suite import make_columns

        p, n = partition.value
        keys, values = make_columns(BATCH_ROWS, self.value_size)
        topic = pa.array(["t"] * BATCH_ROWS, pa.string())
        part = pa.array(np.full(BATCH_ROWS, p, np.int32))
        ts = pa.array(np.full(BATCH_ROWS, 1_700_000_000_000_000, np.int64),
                      pa.timestamp("us", tz="UTC"))
        tstype = pa.array(np.zeros(BATCH_ROWS, np.int32))
        offsets = np.arange(BATCH_ROWS, dtype=np.int64)
        for lo in range(0, n, BATCH_ROWS):
            m = min(BATCH_ROWS, n - lo)
            batch = pa.RecordBatch.from_arrays(
                [keys, values, topic, part, pa.array(offsets + lo), ts, tstype],
                schema=ARROW_SCHEMA)
            yield batch.slice(0, m) if m < BATCH_ROWS else batch


class CountingWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        rows = 0
        for batch in iterator:
            rows += batch.num_rows
        return WriterCommitMessage()
