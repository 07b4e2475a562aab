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
from collections.abc import Mapping
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


def _settle_json(fmt: ColumnFormat, formats: FormatOptions, registry: RegistryConfig,
                 topic: str, spark_type: Any) -> ColumnSchema:
    """As ``_settle`` for ``json-schema``: the derived schema is draft-07 titled
    ``topLevelRecord`` (the title is the record name Confluent's JSON serializer gives the
    record-name strategies), registered with schemaType JSON."""
    client = shared_registry(registry)
    if fmt.schema_id is not None:
        found = client.schema_by_id(fmt.schema_id)
        return ColumnSchema(fmt.column, found.id, JsonSchemaEncoder(found.schema))
    record = TOP_LEVEL_RECORD if fmt.subject is None and \
        fmt.strategy != "TopicNameStrategy" else None
    if formats.use_latest_version or fmt.schema_version is not None:
        subject = fmt.subject_for(topic, record)
        found = client.version(subject, fmt.schema_version) if fmt.schema_version is not None \
            else client.latest(subject)
        return ColumnSchema(fmt.column, found.id, JsonSchemaEncoder(found.schema))
    assert spark_type is not None, "a schema is derived from the column's type, which is known"
    text = json_schema_for(spark_type)
    subject = fmt.subject_for(topic, TOP_LEVEL_RECORD)
    if formats.auto_register:
        schema_id = client.register(subject, text, "JSON")
    else:
        looked_up = client.lookup(subject, text, "JSON")
        if looked_up is None:
            raise ConfigurationError(
                f"the {fmt.column} column's schema (derived from its Spark type) is not "
                f"registered under subject {subject!r}, and auto.register.schemas=false: "
                f"register it, or set use.latest.version=true or {fmt.column}.schema.id",
                condition=MISSING_OPTION)
        schema_id = looked_up.id
    return ColumnSchema(fmt.column, schema_id, JsonSchemaEncoder(text))


def _settle(fmt: ColumnFormat, formats: FormatOptions, registry: RegistryConfig, topic: str,
            spark_type: Any) -> ColumnSchema:
    if fmt.format == "protobuf":
        raise ConfigurationError(
            f"{fmt.column}.format=protobuf is read-only so far: kafkawire does not encode "
            "Protobuf yet (write the column as binary with Confluent's ProtobufSerializer, "
            "or use avro)", condition=UNSUPPORTED_VALUE)
    if fmt.format == "json-schema":
        return _settle_json(fmt, formats, registry, topic, spark_type)
    client = shared_registry(registry)
    if fmt.schema_id is not None:
        found = client.schema_by_id(fmt.schema_id)
        return ColumnSchema(fmt.column, found.id, AvroEncoder(found.schema))
    derived = None if spark_type is None else \
        to_avro(spark_type, nullable=False, record_name=TOP_LEVEL_RECORD)
    record = derived.get("name") if isinstance(derived, dict) else None
    if formats.use_latest_version or fmt.schema_version is not None:
        subject = fmt.subject_for(topic, record if fmt.subject is None and
                                  fmt.strategy != "TopicNameStrategy" else None)
        found = client.version(subject, fmt.schema_version) if fmt.schema_version is not None \
            else client.latest(subject)
        return ColumnSchema(fmt.column, found.id, AvroEncoder(found.schema))
    assert derived is not None, "a schema is derived from the column's type, which is known"
    text = json.dumps(derived)
    subject = fmt.subject_for(topic, record)
    if formats.auto_register:
        schema_id = client.register(subject, text, "AVRO")
    else:
        looked_up = client.lookup(subject, text, "AVRO")
        if looked_up is None:
            raise ConfigurationError(
                f"the {fmt.column} column's schema (derived from its Spark type) is not "
                f"registered under subject {subject!r}, and auto.register.schemas=false: "
                f"register it, or set use.latest.version=true or {fmt.column}.schema.id",
                condition=MISSING_OPTION)
        schema_id = looked_up.id
    return ColumnSchema(fmt.column, schema_id, AvroEncoder(text))


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
