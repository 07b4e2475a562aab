"""The ceilings of Spark's Python data source path: a data source ``benchlimit`` with
kafkawire's schema whose partitions yield prebuilt Arrow batches of the same size and value
length as the Kafka read, without any I/O or decoding; and whose Arrow writer receives the
same DataFrame as the Kafka write and only counts its rows.

With the options ``kafka`` (the read's kafka.* options as JSON), ``topic`` and ``ends``
(partition -> end offset, JSON) the reader is the Spark read's fetch limit instead: each task
sends kafkawire's Fetch requests for its partition as the client limit does (``suite.
raw_fetch_counts``: batch headers walked, nothing decoded) and yields, per answer, as many
prebuilt rows as it held. That is what the Python path reaches with the broker serving the
same bytes on the same cores, the ceiling where the broker is the bound."""

from __future__ import annotations

import json
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
        if "kafka" in self.options:
            return ProducingWriter(json.loads(self.options["kafka"]), self.options["topic"],
                                   self.options.get("codec", "none"))
        return CountingWriter()

    def reader(self, schema) -> DataSourceReader:
        fetch = None
        if "kafka" in self.options:
            fetch = (json.loads(self.options["kafka"]), self.options["topic"],
                     {int(k): v for k, v in json.loads(self.options["ends"]).items()})
        return LimitReader(int(self.options["rows"]), int(self.options.get("valueSize", 100)),
                           int(self.options.get("partitions", 4)), fetch)


class LimitReader(DataSourceReader):
    def __init__(self, rows: int, value_size: int, partitions: int,
                 fetch: tuple[dict, str, dict[int, int]] | None = None) -> None:
        self.rows, self.value_size, self.parts = rows, value_size, partitions
        self.fetch = fetch

    def partitions(self) -> list[InputPartition]:
        if self.fetch is not None:
            return [InputPartition((p, end)) for p, end in sorted(self.fetch[2].items())]
        per, extra = divmod(self.rows, self.parts)
        return [InputPartition((p, per + (p < extra))) for p in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from bench.suite import make_columns

        p, n = partition.value
        keys, values = make_columns(BATCH_ROWS, self.value_size)
        topic = pa.array(["t"] * BATCH_ROWS, pa.string())
        part = pa.array(np.full(BATCH_ROWS, p, np.int32))
        ts = pa.array(np.full(BATCH_ROWS, 1_700_000_000_000_000, np.int64),
                      pa.timestamp("us", tz="UTC"))
        tstype = pa.array(np.zeros(BATCH_ROWS, np.int32))
        offsets = np.arange(BATCH_ROWS, dtype=np.int64)
        if self.fetch is not None:
            yield from self._fetched(p, n, pa.RecordBatch.from_arrays(
                [keys, values, topic, part, pa.array(offsets), ts, tstype], schema=ARROW_SCHEMA))
            return
        for lo in range(0, n, BATCH_ROWS):
            m = min(BATCH_ROWS, n - lo)
            batch = pa.RecordBatch.from_arrays(
                [keys, values, topic, part, pa.array(offsets + lo), ts, tstype],
                schema=ARROW_SCHEMA)
            yield batch.slice(0, m) if m < BATCH_ROWS else batch

    def _fetched(self, p: int, end: int, prebuilt: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        from bench.suite import connection, raw_fetch_counts
        from spark_kafka_wire.client.pool import task_client

        assert self.fetch is not None
        kafka, topic, _ = self.fetch
        client = task_client(connection(kafka))
        for count in raw_fetch_counts(client, topic, p, end):
            for lo in range(0, count, BATCH_ROWS):
                m = min(BATCH_ROWS, count - lo)
                yield prebuilt.slice(0, m) if m < BATCH_ROWS else prebuilt


class ProducingWriter(DataSourceArrowWriter):
    """The write's produce limit: the rows Spark hands the writer are sent as record batches
    encoded once per batch size, before the first send, from the first rows received (same
    keys, values and codec), through kafkawire's Sender (pipelined, acks all, no idempotence),
    round-robin over the topic's partitions. What is left of the write path is Spark's input,
    the socket and the broker's ingest on the same cores: the ceiling where the broker bounds
    the write."""

    def __init__(self, kafka: dict, topic: str, codec: str) -> None:
        self.kafka, self.topic, self.codec = kafka, topic, codec

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        from bench.suite import connection
        from spark_kafka_wire.client.pool import task_client
        from spark_kafka_wire.client.producer.accumulator import PendingBatch
        from spark_kafka_wire.client.producer.sender import Sender
        from spark_kafka_wire.client.producer.settings import ProduceSettings
        from spark_kafka_wire.protocol.compression import codec_id
        from spark_kafka_wire.protocol.records.batch import encode_record_batch_buffer

        client = task_client(connection(self.kafka))
        partitions = client.topic(self.topic).num_partitions
        settings = ProduceSettings(acks=-1, enable_idempotence=False)
        sender = Sender(client, settings)
        encoded: dict[int, bytes | memoryview] = {}
        per = None
        sent = 0
        for batch in iterator:
            n = batch.num_rows
            if per is None and n:
                key, value = batch.column(0), batch.column(1)
                row_bytes = len(value[0].as_py()) + len(key[0].as_py()) + 12
                per = max(1, min(n, settings.batch_size // row_bytes))
                first = (key.slice(0, per), value.slice(0, per))
            pending = []
            for lo in range(0, n, per or 1):
                m = min(per or 1, n - lo)
                if m not in encoded:
                    encoded[m] = encode_record_batch_buffer(
                        first[0].slice(0, m), first[1].slice(0, m),
                        compression=codec_id(self.codec))
                pending.append(PendingBatch(self.topic, sent % partitions, encoded[m], m))
                sent += 1
            sender.dispatch(pending)
        sender.flush()
        return WriterCommitMessage()


class CountingWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        rows = 0
        for batch in iterator:
            rows += batch.num_rows
        return WriterCommitMessage()
