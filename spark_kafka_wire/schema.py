"""The fixed schema of Spark's kafka source, in Spark and Arrow form, and the conversion of
decoded records into Arrow record batches of bounded size."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .protocol.records import DecodedRecords

KAFKA_SCHEMA = StructType([
    StructField("key", BinaryType(), True),
    StructField("value", BinaryType(), True),
    StructField("topic", StringType(), True),
    StructField("partition", IntegerType(), True),
    StructField("offset", LongType(), True),
    StructField("timestamp", TimestampType(), True),
    StructField("timestampType", IntegerType(), True),
])

# Must equal pyspark's to_arrow_schema(KAFKA_SCHEMA, timezone="UTC") exactly (tested).
ARROW_SCHEMA = pa.schema([
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
])


def _repeated_string(value: str, n: int) -> pa.Array:
    raw = value.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    data = np.frombuffer(raw * n, dtype=np.uint8) if n and raw else np.empty(0, np.uint8)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def to_record_batches(
    records: DecodedRecords, topic: str, partition: int, max_rows: int
) -> Iterator[pa.RecordBatch]:
    """Zero-copy slices of at most ``max_rows`` rows in ARROW_SCHEMA."""
    n = records.num_records
    if n == 0:
        return
    ts = pa.array(records.timestamps.astype(np.int64) * 1000, type=pa.timestamp("us", tz="UTC"))
    batch = pa.RecordBatch.from_arrays(
        [
            records.keys,
            records.values,
            _repeated_string(topic, n),
            pa.array(np.full(n, partition, dtype=np.int32)),
            pa.array(records.offsets.astype(np.int64, copy=False)),
            ts,
            pa.array(records.timestamp_types.astype(np.int32, copy=False)),
        ],
        schema=ARROW_SCHEMA,
    )
    for start in range(0, n, max_rows):
        yield batch.slice(start, max_rows)
