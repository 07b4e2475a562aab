"""Structured Streaming sink: each micro-batch is written like a batch write.

Kafka only appends, so append, update and complete output modes all append the rows Spark
hands over (as Spark's built-in kafka sink does). Delivery is at-least-once across task
retries and replayed micro-batches, unless ``kafka.transactional.id`` is set: then each
micro-batch is written in transactions the driver commits, with a marker that lets a replayed
batch skip what already committed (``exactly_once.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spark_kafka_wire.options.produce import SinkOptions
from spark_kafka_wire.sink.batch_writer import KafkaWireBatchWriter


class KafkaWireStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self._writer = KafkaWireBatchWriter(options, schema, streaming=True)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self._writer.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._writer.commit(messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._writer.abort(messages)
