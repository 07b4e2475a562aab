"""The fixed schema of Spark's kafka source, in Spark and Arrow form, and the conversion of
decoded records into Arrow record batches of bounded size.

With ``includeHeaders=true`` a ``headers`` column follows, as in Spark's
KafkaRecordToRowConverter: array<struct<key: string, value: binary>>, null (not empty) for a
record without headers, header order and duplicate keys kept.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_kafka_wire.protocol.records import DecodedRecords

KAFKA_SCHEMA = StructType([
    StructField("key", BinaryType(), True),
    StructField("value", BinaryType(), True),
    StructField("topic", StringType(), True),
    StructField("partition", IntegerType(), True),
    StructField("offset", LongType(), True),
    StructField("timestamp", TimestampType(), True),
    StructField("timestampType", IntegerType(), True),
])

HEADERS_TYPE = ArrayType(StructType([
    StructField("key", StringType(), True),
    StructField("value", BinaryType(), True),
]), containsNull=True)

KAFKA_SCHEMA_WITH_HEADERS = StructType(
    KAFKA_SCHEMA.fields + [StructField("headers", HEADERS_TYPE, True)]
)

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

# to_arrow_schema names a list's item field "element" (tested against it, like ARROW_SCHEMA).
ARROW_HEADERS_TYPE = pa.list_(pa.field("element", pa.struct([
    pa.field("key", pa.string()),
    pa.field("value", pa.binary()),
])))
ARROW_SCHEMA_WITH_HEADERS = ARROW_SCHEMA.append(pa.field("headers", ARROW_HEADERS_TYPE))


def kafka_schema(include_headers: bool) -> StructType:
    return KAFKA_SCHEMA_WITH_HEADERS if include_headers else KAFKA_SCHEMA


def arrow_schema(include_headers: bool) -> pa.Schema:
    return ARROW_SCHEMA_WITH_HEADERS if include_headers else ARROW_SCHEMA


def _repeated_string(value: str, n: int) -> pa.Array:
    raw = value.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    data = np.frombuffer(raw * n, dtype=np.uint8) if n and raw else np.empty(0, np.uint8)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


_TIMESTAMP = ARROW_SCHEMA.field("timestamp").type


def _fixed(dtype: pa.DataType, values: np.ndarray) -> pa.Array:
    """A null-free Arrow array over ``values`` (its numpy type's width), without a copy.
    Unlike ``pa.array`` this never goes through pyarrow's pandas-aware conversion, which
    imports pandas (about a second of a Spark worker's first task) for a timestamp type."""
    return pa.Array.from_buffers(dtype, len(values),
                                 [None, pa.py_buffer(np.ascontiguousarray(values))])


def _headers_column(records: DecodedRecords) -> pa.Array:
    n = records.num_records
    if records.headers is None:
        return pa.nulls(n, ARROW_HEADERS_TYPE)
    return pa.array(records.headers, type=ARROW_HEADERS_TYPE)


def to_record_batches(
    records: DecodedRecords, topic: str, partition: int, max_rows: int,
    include_headers: bool = False, timestamps: bool = True,
) -> Iterator[pa.RecordBatch]:
    """Zero-copy slices of at most ``max_rows`` rows in ``arrow_schema(include_headers)``.
    ``timestamps`` False: the format has none (Kafka 0.7), so the column is null; 0.8+ magic
    0 messages keep Kafka's -1 (as Spark shows them)."""
    n = records.num_records
    if n == 0:
        return
    columns = [
        records.keys,
        records.values,
        _repeated_string(topic, n),
        _fixed(pa.int32(), np.full(n, partition, dtype=np.int32)),
        _fixed(pa.int64(), records.offsets.astype(np.int64, copy=False)),
        _fixed(_TIMESTAMP, records.timestamps.astype(np.int64) * 1000) if timestamps
        else pa.nulls(n, _TIMESTAMP),
        _fixed(pa.int32(), records.timestamp_types.astype(np.int32, copy=False)),
    ]
    if include_headers:
        columns.append(_headers_column(records))
    batch = pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))
    for start in range(0, n, max_rows):
        yield batch.slice(start, max_rows)
