"""``value.format`` / ``key.format`` on the write side (issue 32): a column of any Spark type
``to_avro`` takes, encoded in Confluent's wire format with a schema of the registry.

The schema of a column in a topic, as Confluent's serializers choose it:

* ``<column>.schema.id`` pins it;
* ``use.latest.version=true`` (or ``<column>.schema.version``) takes the subject's latest (or
  that version);
* otherwise it is derived from the column's Spark type as Spark's ``to_avro`` derives it
  (record ``topLevelRecord``, nullable fields as ``[T, "null"]``), then registered under the
  subject (``auto.register.schemas``, the default) or looked up there (an unregistered
  schema is then an error naming the subject).

The column itself may hold nulls: a null value is a tombstone, never encoded. With the
``topic`` option the schema is settled on the driver before any task starts (a compatibility
error from the registry fails the write there, naming the subject); rows routed by a ``topic``
column settle each topic's schema in the task that first meets it (once per process).
Records are placed by their encoded key, as Confluent's serializers and Kafka's producer do.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    MISSING_OPTION,
    UNSUPPORTED_VALUE,
    ConfigurationError,
)
from spark_kafka_wire.client.schema_registry import RegistryConfig, shared_registry
from spark_kafka_wire.formats.avro_codec import AvroEncoder
from spark_kafka_wire.formats.avro_types import to_avro
from spark_kafka_wire.formats.confluent import frame
from spark_kafka_wire.formats.errors import UnencodableValueError
from spark_kafka_wire.formats.json_schema import JsonSchemaEncoder, json_schema_for
from spark_kafka_wire.options.formats import ColumnFormat, FormatOptions

#: The record name ``to_avro`` gives a derived schema (spark-avro's default).
TOP_LEVEL_RECORD = "topLevelRecord"


@dataclass(frozen=True)
class ColumnSchema:
    """The schema one column is written with in one topic."""

    column: str
    schema_id: int
    encoder: AvroEncoder | JsonSchemaEncoder


@dataclass
class Encoding:
    """What a write needs to encode its formatted columns; pickled into every task. The
    schemas settled so far (``settled``: (column, topic) -> ColumnSchema) travel with it."""

    formats: FormatOptions
    spark_types: Mapping[str, Any]  # column -> its Spark type's JSON form
    settled: dict[tuple[str, str], ColumnSchema] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def registry(self) -> RegistryConfig:
        assert self.formats.registry is not None
        return self.formats.registry

    def schema_for(self, fmt: ColumnFormat, topic: str) -> ColumnSchema:
        # a schema pinned by id, or a subject that is not the topic's, is the same in every
        # topic: settled once
        per_topic = fmt.schema_id is None and fmt.subject is None and \
            fmt.strategy != "RecordNameStrategy"
        key = (fmt.column, topic if per_topic else "")
        with self._lock:
            found = self.settled.get(key)
            if found is None:
                found = _settle(fmt, self.formats, self.registry, topic,
                                self.spark_types.get(fmt.column))
                self.settled[key] = found
            return found

    def encode(self, column: str, values: pa.Array, topic: str) -> pa.Array:
        """``values`` in Confluent's wire format with the column's schema in ``topic``."""
        fmt = self.formats.value if column == "value" else self.formats.key
        assert fmt is not None
        schema = self.schema_for(fmt, topic)
        try:
            encoded = schema.encoder.encode(values)
        except ValueError as exc:
            raise UnencodableValueError(column, topic, schema.schema_id, str(exc)) from None
        return frame(schema.schema_id, encoded)


def _avro_derived(spark_type: Any) -> tuple[str | None, str | None]:
    """(the schema ``to_avro`` derives from ``spark_type``, its record's name): None for what
    is not known (no type: the schema comes from the registry; a column that is no struct
    derives no record)."""
    if spark_type is None:
        return None, None
    derived = to_avro(spark_type, nullable=False, record_name=TOP_LEVEL_RECORD)
    return json.dumps(derived), derived.get("name") if isinstance(derived, dict) else None


def _json_derived(spark_type: Any) -> tuple[str | None, str | None]:
    """As ``_avro_derived`` for ``json-schema``: draft-07 titled ``topLevelRecord`` (the
    title is the record name Confluent's JSON serializer gives the record-name strategies)."""
    return (None if spark_type is None else json_schema_for(spark_type)), TOP_LEVEL_RECORD


@dataclass(frozen=True)
class _Writes:
    """What a written format needs: its registry schemaType, its encoder, and the schema
    derived from a Spark type (with the record name of the record-name strategies)."""

    schema_type: str
    encoder: Callable[[str], AvroEncoder | JsonSchemaEncoder]
    derive: Callable[[Any], tuple[str | None, str | None]]


_WRITES = {"avro": _Writes("AVRO", AvroEncoder, _avro_derived),
           "json-schema": _Writes("JSON", JsonSchemaEncoder, _json_derived)}


def _settle(fmt: ColumnFormat, formats: FormatOptions, registry: RegistryConfig, topic: str,
            spark_type: Any) -> ColumnSchema:
    if fmt.format == "protobuf":
        raise ConfigurationError(
            f"{fmt.column}.format=protobuf is read-only so far: kafkawire does not encode "
            "Protobuf yet (write the column as binary with Confluent's ProtobufSerializer, "
            "or use avro)", condition=UNSUPPORTED_VALUE)
    writes = _WRITES[fmt.format]
    client = shared_registry(registry)
    if fmt.schema_id is not None:
        found = client.schema_by_id(fmt.schema_id)
        return ColumnSchema(fmt.column, found.id, writes.encoder(found.schema))
    text, record = writes.derive(spark_type)
    if formats.use_latest_version or fmt.schema_version is not None:
        subject = fmt.subject_for(topic, record)
        found = client.version(subject, fmt.schema_version) if fmt.schema_version is not None \
            else client.latest(subject)
        return ColumnSchema(fmt.column, found.id, writes.encoder(found.schema))
    assert text is not None, "a schema is derived from the column's type, which is known"
    subject = fmt.subject_for(topic, record)
    if formats.auto_register:
        schema_id = client.register(subject, text, writes.schema_type)
    else:
        looked_up = client.lookup(subject, text, writes.schema_type)
        if looked_up is None:
            raise ConfigurationError(
                f"the {fmt.column} column's schema (derived from its Spark type) is not "
                f"registered under subject {subject!r}, and auto.register.schemas=false: "
                f"register it, or set use.latest.version=true or {fmt.column}.schema.id",
                condition=MISSING_OPTION)
        schema_id = looked_up.id
    return ColumnSchema(fmt.column, schema_id, writes.encoder(text))


def encoding_for(formats: FormatOptions, spark_types: Mapping[str, Any],
                 topic: str | None) -> Encoding | None:
    """The write's encoding, its schemas settled now (on the driver) for the ``topic``
    option's topic; None when every column is raw."""
    if not formats.columns:
        return None
    if formats.use_latest_version and any(c.schema_id is not None for c in formats.columns):
        raise ConfigurationError.of(CONFLICTING_OPTIONS, subject="the written schema",
                                    options="use.latest.version, value.schema.id / "
                                    "key.schema.id")
    encoding = Encoding(formats, dict(spark_types))
    if topic is not None or all(c.schema_id is not None or c.subject is not None
                                for c in formats.columns):
        for c in formats.columns:
            encoding.schema_for(c, topic or "")
    return encoding
