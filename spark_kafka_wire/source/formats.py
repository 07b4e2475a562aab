"""Typed ``value`` / ``key`` columns of registry formats on the read side (issue 32).

Where the query is defined, each formatted column gets its reader schema from the registry
(``<column>.schema.id``, ``<column>.schema.version`` of its subject, else the subject's latest)
and the DataFrame's column becomes that schema's Spark type. The schema's registry id travels
in the column's metadata (``kafkawire.schema.id``): Spark hands the schema back to ``reader``
in another process, which fetches the schema by that id (ids never change) instead of asking
for the latest again, so a version registered in between cannot give the plan a type other
than the DataFrame's. A stream keeps its reader schema until it is restarted.

In the tasks, every record is decoded with its own writer schema (the id in its Confluent
frame, fetched once per process) resolved to the reader schema by Avro's rules. A record that
cannot be decoded fails the task naming topic, partition, offset and schema id (``FAILFAST``),
or (``PERMISSIVE``) becomes null with its bytes kept in ``_corrupt_value`` / ``_corrupt_key``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import BinaryType, DataType, StructField, StructType

from spark_kafka_wire.client.errors import REFUSED_OPTION, ConfigurationError
from spark_kafka_wire.options.formats import CORRUPT_COLUMN, ColumnFormat, FormatOptions
from spark_kafka_wire.protocol.errors import KafkaWireError

# The codecs, the registry client and their libraries (fastavro, protobuf) are imported by the
# functions that run only for a formatted column: a Spark worker reading Spark's plain kafka
# columns never pays for their import (docs/benchmarks.md, "A write's first seconds").
if TYPE_CHECKING:
    from spark_kafka_wire.client.registry.schema_registry import RegisteredSchema, RegistryConfig
    from spark_kafka_wire.formats.avro_codec import Decoded
    from spark_kafka_wire.options.registry_decoders import RegistryDecoder

#: The column metadata that carries a formatted column's reader schema into the plan.
SCHEMA_ID_KEY = "kafkawire.schema.id"
SUBJECT_KEY = "kafkawire.schema.subject"
VERSION_KEY = "kafkawire.schema.version"


@dataclass(frozen=True)
class ColumnReader:
    """One formatted column: its reader schema and the decoder built from it."""

    column: str
    schema: RegisteredSchema
    decoder: RegistryDecoder


@dataclass(frozen=True)
class Decoding:
    """What a task needs to decode its formatted columns; travels inside each partition."""

    columns: tuple[ColumnReader, ...]
    registry: RegistryConfig
    permissive: bool


def _reader_schema(fmt: ColumnFormat, registry: RegistryConfig,
                   topics: Sequence[str]) -> RegisteredSchema:
    from spark_kafka_wire.client.registry.schema_registry import shared_registry  # noqa: PLC0415

    client = shared_registry(registry)
    if fmt.schema_id is not None:
        return client.schema_by_id(fmt.schema_id)
    if not topics and fmt.subject is None:
        raise ConfigurationError.of(
            REFUSED_OPTION, "SUBJECT_WITHOUT_TOPIC", column=fmt.column, strategy=fmt.strategy)
    subjects = sorted({fmt.subject_for(t) for t in topics} if fmt.subject is None
                      else {fmt.subject})
    found = [client.version(s, fmt.schema_version) if fmt.schema_version is not None
             else client.latest(s) for s in subjects]
    if len({f.id for f in found}) > 1:
        listed = ", ".join(f"{s} (id {f.id})" for s, f in zip(subjects, found, strict=True))
        raise ConfigurationError.of(
            REFUSED_OPTION, "READER_SCHEMAS_DIFFER", column=fmt.column, listed=listed)
    return found[0]


def _decoder(schema: RegisteredSchema, formats: FormatOptions,
             fmt: ColumnFormat) -> RegistryDecoder:
    """The decoder of the column's format (``_checked`` made sure the registry's schema is
    of that format)."""
    from spark_kafka_wire.client.registry.schema_registry import shared_registry  # noqa: PLC0415
    from spark_kafka_wire.formats.errors import SchemaTooComplexError  # noqa: PLC0415
    from spark_kafka_wire.options.registry_decoders import decoder_for  # noqa: PLC0415

    assert formats.registry is not None
    try:
        return decoder_for(schema, fmt.format, shared_registry(formats.registry),
                           message=fmt.message, stable_union_ids=formats.stable_union_ids,
                           recursive_field_max_depth=formats.recursive_field_max_depth,
                           protobuf_max_depth=formats.protobuf_max_depth)
    except (ValueError, KeyError) as exc:
        if isinstance(exc, SchemaTooComplexError):
            raise  # a schema too large is refused as such, naming its subject and id
        if fmt.format != "protobuf":
            if isinstance(exc, KafkaWireError):
                raise  # typed already (a setting the decoder refuses)
            raise ConfigurationError.of(
                "KAFKAWIRE_CONFIGURATION.UNREADABLE_SCHEMA", column=fmt.column,
                format=fmt.format, schema_id=schema.id, reason=str(exc)) from exc
        raise ConfigurationError.of(
            REFUSED_OPTION, "PROTOBUF_SCHEMA_UNREADABLE", column=fmt.column, id=schema.id,
            exc=str(exc)) from None


def _checked(fmt: ColumnFormat, schema: RegisteredSchema) -> RegisteredSchema:
    """``schema`` if it is of the column's format: a JSON Schema read as Avro (or the
    reverse) would fail every record, so it is refused where the query is defined."""
    from spark_kafka_wire.options.registry_decoders import SCHEMA_TYPE_OF_FORMAT  # noqa: PLC0415

    expected = SCHEMA_TYPE_OF_FORMAT[fmt.format]
    if schema.schema_type != expected:
        raise ConfigurationError.of(
            REFUSED_OPTION, "SCHEMA_TYPE_MISMATCH", column=fmt.column, format=fmt.format,
            expected=expected, id=schema.id, subject=schema.subject,
            schema_type=schema.schema_type)
    return schema


def resolve_columns(formats: FormatOptions, topics: Sequence[str]) -> tuple[ColumnReader, ...]:
    """The reader schemas of a read being defined (the registry's latest unless pinned)."""
    assert formats.registry is not None or not formats.columns
    return tuple(ColumnReader(c.column, s, _decoder(s, formats, c))
                 for c in formats.columns
                 if formats.registry is not None
                 for s in (_checked(c, _reader_schema(c, formats.registry, topics)),))


def planned_columns(formats: FormatOptions, schema: StructType) -> tuple[ColumnReader, ...]:
    """The reader schemas the DataFrame was defined with: by the ids in its columns'
    metadata. A schema given by the user (``.schema(...)``) carries none and is refused."""
    from spark_kafka_wire.client.registry.schema_registry import shared_registry  # noqa: PLC0415

    found = []
    for c in formats.columns:
        assert formats.registry is not None
        meta = schema[c.column].metadata if c.column in schema.fieldNames() else {}
        if SCHEMA_ID_KEY not in meta:
            raise ConfigurationError.of(
                REFUSED_OPTION, "USER_SCHEMA_FORMATTED", column=c.column)
        # the id names the schema; the subject and version it was found under, which an id
        # lookup does not give, come from the metadata too
        registered = replace(
            shared_registry(formats.registry).schema_by_id(int(meta[SCHEMA_ID_KEY])),
            subject=meta.get(SUBJECT_KEY), version=meta.get(VERSION_KEY))
        found.append(ColumnReader(c.column, registered, _decoder(registered, formats, c)))
    return tuple(found)


def spark_type(type_json: object) -> DataType:
    """The Spark type of a type's JSON form (``DataType.jsonValue()``, which the formats
    layer gives without importing pyspark)."""
    return StructType.fromJson({"type": "struct", "fields": [
        {"name": "x", "type": type_json, "nullable": True, "metadata": {}}]})["x"].dataType


def typed_schema(base: StructType, columns: Sequence[ColumnReader],
                 permissive: bool) -> StructType:
    """``base`` (Spark's kafka schema) with each formatted column of its reader schema's type,
    its metadata naming the schema, and the corrupt-record columns of PERMISSIVE reads."""
    by_name = {c.column: c for c in columns}
    fields = []
    for f in base.fields:
        c = by_name.get(f.name)
        if c is None:
            fields.append(f)
            continue
        meta: dict[str, object] = {SCHEMA_ID_KEY: c.schema.id}
        if c.schema.subject is not None:
            meta[SUBJECT_KEY] = c.schema.subject
        if c.schema.version is not None:
            meta[VERSION_KEY] = c.schema.version
        fields.append(StructField(f.name, spark_type(c.decoder.spark_type_json), True, meta))
    if permissive:
        fields += [StructField(CORRUPT_COLUMN[c.column], BinaryType(), True) for c in columns]
    return StructType(fields)


def arrow_schema(base: pa.Schema, decoding: Decoding) -> pa.Schema:
    """The Arrow schema of a decoded batch (as ``typed_schema``, in Arrow's terms)."""
    by_name = {c.column: c for c in decoding.columns}
    fields = [pa.field(f.name, by_name[f.name].decoder.arrow_type) if f.name in by_name else f
              for f in base]
    if decoding.permissive:
        fields += [pa.field(CORRUPT_COLUMN[c.column], pa.binary()) for c in decoding.columns]
    return pa.schema(fields)


def decode_column(raw: pa.Array, decoder: RegistryDecoder,
                  registry_config: RegistryConfig) -> Decoded:
    """A column of Confluent-framed records decoded by its format's decoder, writer schemas
    fetched by id from the process's registry client (``decode_framed_values``)."""
    from spark_kafka_wire.client.registry.schema_registry import shared_registry  # noqa: PLC0415
    from spark_kafka_wire.options.registry_decoders import decode_framed_values  # noqa: PLC0415

    registry = shared_registry(registry_config)
    return decode_framed_values(raw, decoder,
                                lambda schema_id: registry.schema_by_id(schema_id).schema)


def decode_batch(batch: pa.RecordBatch, decoding: Decoding, topic: str,
                 partition: int) -> pa.RecordBatch:
    """``batch`` (Spark's kafka columns) with its formatted columns decoded."""
    from spark_kafka_wire.formats.confluent import split_frames  # noqa: PLC0415
    from spark_kafka_wire.formats.errors import UndecodableRecordError  # noqa: PLC0415

    columns = {name: batch.column(name) for name in batch.schema.names}
    corrupt = {}
    for c in decoding.columns:
        raw = columns[c.column]
        decoded = decode_column(raw, c.decoder, decoding.registry)
        failed = np.asarray(decoded.failed, dtype=bool)
        if failed.any() and not decoding.permissive:
            first = int(np.flatnonzero(failed)[0])
            ids = split_frames(raw.slice(first, 1)).schema_ids
            schema_id = int(ids[0]) if ids[0] >= 0 else None
            raise UndecodableRecordError(
                c.column, topic, partition, int(batch.column("offset")[first].as_py()),
                schema_id, decoded.errors.get(first, "not decodable"), CORRUPT_COLUMN[c.column])
        columns[c.column] = decoded.array
        if decoding.permissive:
            corrupt[CORRUPT_COLUMN[c.column]] = pc.if_else(
                pa.array(failed), raw, pa.scalar(None, pa.binary())) if failed.any() \
                else pa.nulls(len(raw), pa.binary())
    out = arrow_schema(batch.schema, decoding)
    return pa.RecordBatch.from_arrays([columns.get(n, corrupt.get(n)) for n in out.names],
                                      schema=out)
