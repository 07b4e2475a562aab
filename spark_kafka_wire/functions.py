"""``from_confluent`` / ``to_confluent``: Confluent's wire format as column functions (issue 32),
for a binary column read by any means: Spark's own ``kafka`` format, files, a table.

    from spark_kafka_wire.functions import from_confluent, to_confluent
    registry = {"schema.registry.url": "https://registry.example.com"}
    orders = (spark.read.format("kafka")...load()
              .select(from_confluent("value", "avro", registry, topic="orders").alias("order")))
    out = orders.select(to_confluent("order", "avro", registry, topic="orders-copy")
                        .alias("value"))

``options`` take the data source's names for the value column (``schema.registry.url`` and
the other registry settings, ``value.subject``, ``value.schema.id``,
``value.schema.version``, ``value.subject.name.strategy``, ``mode``,
``auto.register.schemas``, ``use.latest.version``): the functions mean what
``value.format`` means in a read or a write. ``topic`` names the topic for the subject name
strategy (``<topic>-value``); without it, give ``value.subject`` or ``value.schema.id``.

Both are Arrow UDFs (``pyspark.sql.functions.arrow_udf``, Spark 4.1+): the column's Arrow
batches are decoded or encoded whole in the Python worker, as the data source's tasks do.
``from_confluent`` settles its reader schema when it is called (the latest of the subject,
or the pinned one): the returned column's type is that schema's Spark type. ``to_confluent``
settles the written schema when it is called if the registry gives it (``value.schema.id``,
``use.latest.version``, ``value.schema.version``); otherwise the schema is derived in the
task from the column's type as Spark hands it to Python (every field nullable: a union with
null) and registered (or looked up) there, once per worker process. ``"protobuf"`` encodes a
struct column as one message (the derived schema a proto3 file, docs/schema-registry.md, "Protobuf").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql.pandas.functions import arrow_udf
from pyspark.sql.pandas.types import from_arrow_type
from pyspark.sql.types import BinaryType, DataType, StructField, StructType
from pyspark.util import PythonEvalType

from spark_kafka_wire.client.errors import MISSING_OPTION, ConfigurationError
from spark_kafka_wire.formats.confluent import split_frames
from spark_kafka_wire.formats.errors import UndecodableRecordError
from spark_kafka_wire.options.formats import (
    CORRUPT_COLUMN,
    PERMISSIVE,
    FormatOptions,
    format_options,
)
from spark_kafka_wire.options.table import VALUE_FORMATS
from spark_kafka_wire.sink.formats import Encoding
from spark_kafka_wire.source.formats import decode_column, resolve_columns, spark_type

__all__ = ["from_confluent", "to_confluent"]

ColumnOrName = Column | str


def _value_formats(fmt: str, options: Mapping[str, str] | None) -> FormatOptions:
    formats = format_options({**(options or {}), "value.format": fmt})
    if formats.value is None:
        formats_named = ", ".join(f for f in VALUE_FORMATS if f != "raw")
        raise ConfigurationError.of(
            MISSING_OPTION, "REGISTRY_FORMAT", formats_named=formats_named, fmt=fmt)
    return formats


def _arrow_udf(f: Callable[[pa.Array], pa.Array], return_type: DataType,
               col: ColumnOrName) -> Column:
    """``f`` as an Arrow UDF applied to ``col``, of the kind ``col`` is: a Spark Connect
    column gets a Connect UDF even in a process that also runs a classic session (where
    pyspark's ``arrow_udf`` would build a classic one); a column name follows pyspark's own
    rule (``is_remote``)."""
    if isinstance(col, Column) and type(col).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect.udf import _create_udf  # noqa: PLC0415 (Connect only)

        udf = _create_udf(f, return_type, PythonEvalType.SQL_SCALAR_ARROW_UDF)
    else:
        # f's hints (pa.Array -> pa.Array) make it a scalar Arrow UDF, the form pyspark
        # prefers (naming functionType warns); its stubs type only the named form
        udf = arrow_udf(f, returnType=return_type)  # type: ignore[call-overload]
    return udf(col)


def from_confluent(col: ColumnOrName, format: str = "avro",  # noqa: A002 (Spark's word)
                   options: Mapping[str, str] | None = None, *,
                   topic: str | None = None) -> Column:
    """A binary column of Confluent-framed records decoded to the reader schema's type."""
    formats = _value_formats(format, options)
    (reader,) = resolve_columns(formats, [topic] if topic else [])
    assert formats.registry is not None
    registry_config, permissive = formats.registry, formats.mode == PERMISSIVE
    decoder = reader.decoder

    def decode(values: pa.Array) -> pa.Array:
        decoded = decode_column(values, decoder, registry_config)
        failed = np.asarray(decoded.failed, dtype=bool)
        if failed.any() and not permissive:
            first = int(np.flatnonzero(failed)[0])
            ids = split_frames(values.slice(first, 1)).schema_ids
            raise UndecodableRecordError(
                "value", None, -1, first, int(ids[0]) if ids[0] >= 0 else None,
                decoded.errors.get(first, "not decodable"), CORRUPT_COLUMN["value"])
        return decoded.array

    return _arrow_udf(decode, spark_type(decoder.spark_type_json), col)


def to_confluent(col: ColumnOrName, format: str = "avro",  # noqa: A002 (Spark's word)
                 options: Mapping[str, str] | None = None, *,
                 topic: str | None = None) -> Column:
    """A column encoded in Confluent's wire format (binary), nulls kept null."""
    formats = _value_formats(format, options)
    value = formats.value
    assert value is not None
    if topic is None and value.subject is None and value.schema_id is None:
        raise ConfigurationError.of(MISSING_OPTION, "TO_CONFLUENT_SUBJECT")
    pinned = value.schema_id is not None or formats.use_latest_version or \
        value.schema_version is not None
    encoding = Encoding(formats, {})
    if pinned:
        encoding.schema_for(value, topic or "")  # settled now: errors here, not in tasks

    def encode(values: pa.Array) -> pa.Array:
        if not pinned and "value" not in encoding.spark_types:
            encoding.spark_types = {"value": _spark_type_json(values.type)}
        return encoding.encode("value", values, topic or "")

    return _arrow_udf(encode, BinaryType(), col)


def _spark_type_json(arrow: pa.DataType) -> object:
    """The Spark type (JSON form) of an Arrow type as Spark hands a column to Python."""
    return StructType([StructField("x", from_arrow_type(arrow), True)]).jsonValue()[
        "fields"][0]["type"]
