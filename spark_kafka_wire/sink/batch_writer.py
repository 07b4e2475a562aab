"""Batch writes: validated on the driver before any task sends; each task partitions, batches
and produces its rows, checking every partition's answer.

Columns follow Spark's kafka sink (KafkaWriter.validateQuery); other columns are ignored:

==============  ========================================  ===================================
column          type                                      when absent / null
==============  ========================================  ===================================
``value``       string or binary                          required; null = a tombstone
``key``         string or binary                          null key
``topic``       string (checked only without the option)  the ``topic`` option wins; a null
                                                          topic without the option fails
``partition``   int                                       the partitioner decides
``headers``     array<struct<key: string, value: binary>> no headers (null or empty array);
                                                          order and duplicates kept
``timestamp``   timestamp (or double: seconds)            now (the record's CreateTime)
==============  ========================================  ===================================

Delivery is at-least-once by default, as with Spark's sink: idempotence (on by default with
acks=all) removes duplicates from network retries inside a task, but a re-executed task sends
its rows again under a new producer id, and rows acknowledged before a failed task stay in
Kafka. With ``kafka.transactional.id`` each task writes in a transaction the driver commits
when the whole write succeeded (``exactly_once.py``): exactly-once for read_committed readers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DoubleType,
    IntegerType,
    StringType,
    StructType,
    TimestampType,
)

from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError, DataError
from spark_kafka_wire.client.pool import shared_client, task_client
from spark_kafka_wire.client.producer.task_writers import RowWriter, plan_write, task_writer
from spark_kafka_wire.client.producer.transactions import OpenTransaction, end_transaction
from spark_kafka_wire.errors import brief_traceback
from spark_kafka_wire.options.produce import SinkOptions
from spark_kafka_wire.protocol.errors import AuthorizationError
from spark_kafka_wire.sink.exactly_once import (
    TaskBatch,
    abort_transactions,
    already_committed,
    commit_transactions,
    current_batch,
    current_partition,
    marker_metadata,
    marker_offset,
    split_replayed,
    task_transactional_id,
)

if TYPE_CHECKING:
    from spark_kafka_wire.sink.formats import Encoding

log = logging.getLogger(__name__)


@dataclass
class KafkaWriteCommitMessage(WriterCommitMessage):
    records: int
    requests: int
    producer_id: int = -1
    # kafka.transactional.id: the task's open transaction (None: it wrote nothing), and
    # whether a replayed micro-batch found its transaction already committed and wrote nothing
    transaction: OpenTransaction | None = None
    replayed: bool = False
    batch: TaskBatch | None = None  # the micro-batch (streaming), which the driver checks again


def _is_headers_type(dtype: DataType) -> bool:
    """array<struct<key: string, value: binary>>, nullability ignored and field names
    compared case-insensitively, as Spark's ``DataTypeUtils.sameType`` does."""
    if not isinstance(dtype, ArrayType) or not isinstance(dtype.elementType, StructType):
        return False
    fields = dtype.elementType.fields
    return (len(fields) == 2 and [f.name.lower() for f in fields] == ["key", "value"]
            and fields[0].dataType == StringType() and fields[1].dataType == BinaryType())


_EXPECTED: dict[str, tuple[str, Callable[[DataType], bool]]] = {
    "topic": ("string", lambda t: t == StringType()),
    "key": ("string or binary", lambda t: t in (StringType(), BinaryType())),
    "value": ("string or binary", lambda t: t in (StringType(), BinaryType())),
    "partition": ("int", lambda t: t == IntegerType()),
    "headers": ("array<struct<key: string, value: binary>>", _is_headers_type),
    "timestamp": ("timestamp or double (seconds)", lambda t: t in (TimestampType(), DoubleType())),
}


def _check_column(schema: StructType, name: str) -> bool:
    """Whether the (exactly named) column exists; a wrong type fails, as in Spark."""
    if name not in schema.fieldNames():
        return False
    dtype = schema[name].dataType
    expected, ok = _EXPECTED[name]
    if not ok(dtype):
        raise DataError.of("KAFKAWIRE_DATA.COLUMN_TYPE", column=name, expected=expected,
                           got=dtype.simpleString())
    return True


class KafkaWireBatchWriter(DataSourceArrowWriter):
    """Validates on the driver (before any task sends anything); writes on executors."""

    def __init__(self, options: SinkOptions, schema: StructType, streaming: bool = False
                 ) -> None:
        self.options = options
        self.streaming = streaming  # exactly-once micro-batches also commit a batch marker
        if "value" not in schema.fieldNames():
            raise DataError.of("KAFKAWIRE_DATA.MISSING_VALUE_COLUMN",
                               columns=", ".join(schema.fieldNames()))
        # value.format / key.format: a formatted column may be of any type to_avro takes
        formatted = {c.column for c in options.formats.columns}
        if "value" not in formatted:
            _check_column(schema, "value")
        self.has_key = "key" in schema.fieldNames() if "key" in formatted \
            else _check_column(schema, "key")
        self.encoding: Encoding | None = None
        if formatted:
            # Imported only for a formatted write: the codecs and the registry client cost
            # every Python worker that unpickles this writer about 0.1 s to import
            # (docs/benchmarks.md, "A write's first seconds").
            from spark_kafka_wire.sink.formats import encoding_for  # noqa: PLC0415

            self.encoding = encoding_for(
                options.formats, {c: schema[c].dataType.jsonValue() for c in formatted
                                  if c in schema.fieldNames()}, options.topic)
        # Like Spark, the topic column's type matters only when no topic option overrides it.
        self.use_topic_column = options.topic is None
        if self.use_topic_column and not _check_column(schema, "topic"):
            raise ConfigurationError.of(CONFIGURATION, "NO_TOPIC")
        self.has_partition = _check_column(schema, "partition")
        self.has_headers = _check_column(schema, "headers")
        self.timestamp_type = schema["timestamp"].dataType if _check_column(schema, "timestamp") \
            else None
        # The topic option's topic: checked (or created) on the driver, before any task
        # starts; what the client found travels to the tasks (client/producer/task_writers.py).
        self.plan = plan_write(options.client, options.topic, options.create)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaWriteCommitMessage:
        o = self.options
        try:
            return self._write(iterator)
        except AuthorizationError as exc:
            # A task's transactional id (and its marker group) is the prefix plus the task's
            # partition: one PREFIXED ACL covers every task of every batch.
            prefix = o.transactional_prefix
            name = exc.resource_name
            if prefix is None or exc.resource_type not in ("TransactionalId", "Group") \
                    or name is None or not name.startswith(prefix):
                raise
            raise exc.with_details(prefix=prefix) from None

    def _write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaWriteCommitMessage:
        """A task's rows through the writer the client chooses for the cluster
        (client/producer/task_writers.py); topics of the 'topic' column the driver did not check are
        prepared here, each before any row of a batch naming it is sent."""
        o = self.options
        settings, batch = o.produce, None
        if o.transactional_prefix is not None:
            tid = task_transactional_id(o.transactional_prefix, current_partition())
            settings = replace(settings, transactional_id=tid)
            if self.streaming:
                batch = current_batch()
                if already_committed(task_client(o.client), tid, batch):
                    log.info("%s: batch %d of query %s is already committed; a replay "
                             "writes nothing", tid, batch.batch_id, batch.query_id)
                    return KafkaWriteCommitMessage(0, 0, replayed=True)
        writer = task_writer(o.client, settings, o.partitioner, o.create, self.plan)
        try:
            for rows in iterator:
                if rows.num_rows == 0:
                    continue
                for topic, part in self._split_by_topic(rows, writer.prepare):
                    self._append(writer, topic, part)
            writer.flush()
            if batch is not None:
                self._mark(writer, batch)
        except BaseException:
            writer.abort()
            raise
        return KafkaWriteCommitMessage(writer.records, writer.requests, writer.producer_id,
                                       writer.open_transaction(), batch=batch)

    @staticmethod
    def _mark(writer: RowWriter, batch: TaskBatch) -> None:
        """Commit the batch marker inside the transaction (see exactly_once.py)."""
        txn = writer.open_transaction()
        if txn is None:
            return  # nothing written: nothing to skip on a replay either
        key = (txn.partitions[0][0], 0)
        writer.commit_offsets(txn.transactional_id,
                              {key: (marker_offset(batch), marker_metadata(batch))})

    def _split_by_topic(
        self, batch: pa.RecordBatch, prepare: Callable[[str], object]
    ) -> Iterator[tuple[str, pa.RecordBatch]]:
        """The batch's rows by topic (the option's, or the 'topic' column's); ``prepare``
        sees every topic of the batch before any of its rows are handed out."""
        if not self.use_topic_column:
            assert self.options.topic is not None
            yield self.options.topic, batch
            return
        topics = batch.column(batch.schema.get_field_index("topic"))
        if topics.null_count:
            row = pc.index(pc.is_null(topics), True).as_py()
            raise DataError.of("KAFKAWIRE_DATA.NULL_TOPIC", row=row)
        names = pc.unique(topics).to_pylist()
        for topic in names:  # every topic must exist before any row of the batch is sent
            prepare(topic)
        if len(names) == 1:
            yield names[0], batch
            return
        for topic in names:
            yield topic, batch.filter(pc.equal(topics, topic))

    def _append(self, writer: RowWriter, topic: str, batch: pa.RecordBatch) -> None:
        names = batch.schema.names
        values = self._bytes(batch, "value", topic)
        keys = self._bytes(batch, "key", topic) if self.has_key else None
        now_ms = int(time.time() * 1000)
        timestamps: int | np.ndarray = now_ms
        if self.timestamp_type is not None:
            timestamps = _timestamps_ms(batch.column(names.index("timestamp")), now_ms)
        writer.append(topic, keys, values,
                      batch.column(names.index("partition")) if self.has_partition else None,
                      batch.column(names.index("headers")) if self.has_headers else None,
                      timestamps)

    def _bytes(self, batch: pa.RecordBatch, column: str, topic: str) -> pa.Array:
        """A column's bytes: encoded in its format (value.format / key.format), else as
        given (string or binary)."""
        values = batch.column(batch.schema.get_field_index(column))
        formatted = self.encoding is not None and any(
            c.column == column for c in self.options.formats.columns)
        if formatted:
            assert self.encoding is not None
            return self.encoding.encode(column, values, topic)
        return _as_binary(values)

    @brief_traceback
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        done = [m for m in messages if isinstance(m, KafkaWriteCommitMessage)]
        pending = [(m.transaction, m.batch) for m in done if m.transaction is not None]
        transactions: list[OpenTransaction] = []
        duplicates: list[OpenTransaction] = []
        if pending:
            client = shared_client(self.options.client)
            transactions, duplicates = split_replayed(client, pending)
            for txn in duplicates:  # written again by a replay: its batch committed before
                end_transaction(client, txn, commit=False)
            commit_transactions(client, transactions)
        replayed = sum(m.replayed for m in done) + len(duplicates)
        log.info("kafkawire wrote %d records%s%s", sum(m.records for m in done),
                 f" in {len(transactions)} transactions" if transactions else "",
                 f"; {replayed} tasks found their batch already committed" if replayed else "")

    @brief_traceback
    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        done = [m for m in messages if isinstance(m, KafkaWriteCommitMessage)]
        written = sum(m.records for m in done)
        prefix = self.options.transactional_prefix
        if prefix is None:
            log.warning(
                "kafkawire write aborted; %d records acknowledged by Kafka before the failure "
                "stay in the topic (Kafka appends cannot be undone)", written,
            )
            return
        silent = [i for i, m in enumerate(messages) if not isinstance(m, KafkaWriteCommitMessage)]
        abort_transactions(shared_client(self.options.client), prefix,
                           [m.transaction for m in done if m.transaction is not None], silent,
                           self.options.produce.transaction_timeout_ms)
        log.warning("kafkawire write aborted: the transactions of %d tasks (%d records) were "
                    "aborted; read_committed readers see none of them", len(messages), written)


def _timestamps_ms(column: pa.Array, now_ms: int) -> np.ndarray:
    """Record timestamps (ms) from a timestamp column (µs, truncated like Spark's ``/ 1000``)
    or a double column (seconds, Spark's cast to timestamp); null, NaN and infinity: now."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_timestamp(column.type):
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[column.type.unit]
        raw = pc.fill_null(column.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        micros = raw * (1_000_000 // per_second) if per_second <= 1_000_000 else raw // 1000
        valid = column.is_valid().to_numpy(zero_copy_only=False)
    else:
        seconds = pc.fill_null(column, 0.0).to_numpy(zero_copy_only=False)
        valid = column.is_valid().to_numpy(zero_copy_only=False) & np.isfinite(seconds)
        micros = np.where(valid, seconds, 0.0) * 1_000_000
        micros = np.trunc(micros).astype(np.int64)
    ms = np.where(micros < 0, -((-micros) // 1000), micros // 1000)  # toward zero, like Java
    return np.where(valid, ms, now_ms).astype(np.int64)


def _as_binary(arr: pa.Array) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return arr.cast(pa.binary() if pa.types.is_string(arr.type) else pa.large_binary())
    return arr
