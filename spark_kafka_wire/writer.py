"""Batch writes: validated on the driver before any task sends; each task partitions, batches
and produces its rows, checking every partition's answer."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import BinaryType, StringType, StructType

from .client.partitioner import assign_partitions
from .client.pool import shared_client
from .client.producer import Producer, encode_partitioned
from .protocol.errors import ConfigurationError
from .sink_options import SinkOptions

log = logging.getLogger(__name__)


@dataclass
class KafkaWriteCommitMessage(WriterCommitMessage):
    records: int
    requests: int


_WRITABLE = (StringType(), BinaryType())


def _check_column(schema: StructType, name: str, required: bool, what: str) -> bool:
    if name not in schema.fieldNames():
        if required:
            raise ConfigurationError(
                f"the DataFrame needs a '{name}' column ({what}); found columns: "
                + ", ".join(schema.fieldNames())
            )
        return False
    dtype = schema[name].dataType
    if dtype not in _WRITABLE and not (name == "partition" and dtype.typeName() == "integer"):
        expected = "int" if name == "partition" else "string or binary"
        raise ConfigurationError(
            f"column '{name}' must be {expected}, got {dtype.simpleString()}"
        )
    return True


class KafkaWireBatchWriter(DataSourceArrowWriter):
    """Validates on the driver (before any task sends anything); writes on executors."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self.options = options
        _check_column(schema, "value", True, "the record value, string or binary")
        self.has_key = _check_column(schema, "key", False, "")
        has_topic = "topic" in schema.fieldNames()
        if has_topic and schema["topic"].dataType != StringType():
            raise ConfigurationError(
                f"column 'topic' must be string, got {schema['topic'].dataType.simpleString()}"
            )
        if options.topic is None and not has_topic:
            raise ConfigurationError(
                "no topic to write to: set the 'topic' option or add a 'topic' column"
            )
        self.use_topic_column = options.topic is None
        self.has_partition = _check_column(schema, "partition", False, "")
        if self.options.topic is not None:
            # Fail on the driver when the topic does not exist, before any task starts.
            shared_client(options.client).topic(self.options.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaWriteCommitMessage:
        o = self.options
        client = shared_client(o.client)
        producer = Producer(client, o.produce)
        rng = random.Random()
        for batch in iterator:
            if batch.num_rows == 0:
                continue
            for topic, part in self._split_by_topic(batch):
                pending = self._encode(client, topic, part, rng, producer.record_magic(topic))
                producer.send(pending)
        return KafkaWriteCommitMessage(producer.records_sent, producer.requests_sent)

    def _split_by_topic(self, batch: pa.RecordBatch) -> Iterator[tuple[str, pa.RecordBatch]]:
        if not self.use_topic_column:
            assert self.options.topic is not None
            yield self.options.topic, batch
            return
        topics = batch.column(batch.schema.get_field_index("topic"))
        if topics.null_count:
            row = pc.index(pc.is_null(topics), True).as_py()
            raise ConfigurationError(
                f"the 'topic' column is null in row {row} of a partition and no 'topic' "
                "option is set: every row needs a topic"
            )
        names = pc.unique(topics).to_pylist()
        client = shared_client(self.options.client)
        for topic in names:  # every topic must exist before any row of the batch is sent
            client.topic(topic)
        for topic in names:
            yield topic, batch.filter(pc.equal(topics, topic))

    def _encode(
        self, client, topic: str, batch: pa.RecordBatch, rng: random.Random, magic: int
    ) -> list:
        names = batch.schema.names
        values = _as_binary(batch.column(names.index("value")))
        keys = _as_binary(batch.column(names.index("key"))) if self.has_key else None
        info = client.topic(topic)
        parts = assign_partitions(keys, batch.num_rows, info.num_partitions, rng)
        if self.has_partition:
            explicit = batch.column(names.index("partition"))
            if explicit.null_count < len(explicit):
                chosen = pc.fill_null(explicit, -1).to_numpy(zero_copy_only=False)
                given = chosen >= 0
                bad = given & (chosen >= info.num_partitions)
                if bad.any():
                    raise ConfigurationError(
                        f"partition {int(chosen[bad][0])} does not exist in topic {topic!r} "
                        f"({info.num_partitions} partitions)"
                    )
                parts[given] = chosen[given]
        return encode_partitioned(topic, keys, values, parts, self.options.produce,
                                  int(time.time() * 1000), magic)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total = sum(m.records for m in messages if isinstance(m, KafkaWriteCommitMessage))
        log.info("kafkawire wrote %d records", total)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        written = sum(m.records for m in messages if isinstance(m, KafkaWriteCommitMessage))
        log.warning(
            "kafkawire write aborted; %d records acknowledged by Kafka before the failure "
            "stay in the topic (Kafka appends cannot be undone)", written,
        )


def _as_binary(arr: pa.Array) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return arr.cast(pa.binary() if pa.types.is_string(arr.type) else pa.large_binary())
    return arr
