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

Protobuf (``protobuf``) writes a struct column as one message: the file's first message, or
the one ``<column>.protobuf.message`` names (the payload's message indexes then name it). A
derived Protobuf schema is a proto3 file (``formats/protobuf_encode.derive_file``): package
``kafkawire``, message ``topLevelRecord``, a field per struct field numbered 1..n in column
order, nested structs as nested messages, every singular scalar as ``optional``, arrays as
``repeated`` (a null element fails its row), maps as ``map<k, v>`` (string, integral or
boolean keys), timestamps as ``google.protobuf.Timestamp``, day-time intervals as
``google.protobuf.Duration``, binary as ``bytes``, dates as ``int32`` day numbers since
1970-01-01 (what Spark's ``to_protobuf`` writes for a date); decimals and other types are
refused naming the field. It is registered as Java's KafkaProtobufSerializer registers one:
``.proto`` text (``formats/protobuf_text.py``), schemaType PROTOBUF, no references for the
google/protobuf files it imports. Text, not the base64 FileDescriptorProto Confluent's
Python serializer sends: a registry that stores what it is given (Apicurio) serves a schema
as registered, and JavaScript clients (@kafkajs/confluent-schema-registry) parse only text.
The encoder is built from the derived descriptor itself, which the text compiles back to:
protoc never runs for a derived schema, on the driver or in a task.

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
from spark_kafka_wire.client.registry.proto_text import binary_schemas
from spark_kafka_wire.client.registry.schema_registry import (
    RegisteredSchema,
    RegistryConfig,
    SchemaRegistryClient,
    SchemaType,
    shared_registry,
)
from spark_kafka_wire.formats.avro_codec import AvroEncoder
from spark_kafka_wire.formats.avro_types import to_avro
from spark_kafka_wire.formats.confluent import frame
from spark_kafka_wire.formats.errors import UnencodableValueError
from spark_kafka_wire.formats.json_schema import JsonSchemaEncoder, json_schema_for
from spark_kafka_wire.formats.protobuf_encode import (
    DERIVED_MESSAGE,
    DERIVED_PACKAGE,
    ProtobufEncoder,
    derived_schema,
    derived_text,
)
from spark_kafka_wire.options.formats import ColumnFormat, FormatOptions

#: The record name ``to_avro`` gives a derived schema (spark-avro's default).
TOP_LEVEL_RECORD = "topLevelRecord"


@dataclass(frozen=True)
class ColumnSchema:
    """The schema one column is written with in one topic."""

    column: str
    schema_id: int
    encoder: AvroEncoder | JsonSchemaEncoder | ProtobufEncoder


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


@dataclass(frozen=True)
class Derived:
    """A schema derived from a column's Spark type: ``text`` as registered, ``encoded_from``
    what the encoder is built from (the same text, or for Protobuf the descriptor the text
    compiles to), both None where the type is not known (the schema then comes from the
    registry); ``record`` the record name of the record-name strategies (None: a column that
    is no struct derives no record)."""

    text: str | None
    encoded_from: str | None
    record: str | None


def _avro_derived(spark_type: Any) -> Derived:
    """The schema ``to_avro`` derives from ``spark_type``, and its record's name."""
    if spark_type is None:
        return Derived(None, None, None)
    derived = to_avro(spark_type, nullable=False, record_name=TOP_LEVEL_RECORD)
    text = json.dumps(derived)
    return Derived(text, text, derived.get("name") if isinstance(derived, dict) else None)


def _json_derived(spark_type: Any) -> Derived:
    """As ``_avro_derived`` for ``json-schema``: draft-07 titled ``topLevelRecord`` (the
    title is the record name Confluent's JSON serializer gives the record-name strategies)."""
    text = None if spark_type is None else json_schema_for(spark_type)
    return Derived(text, text, TOP_LEVEL_RECORD)


def _protobuf_derived(spark_type: Any) -> Derived:
    """As ``_avro_derived`` for ``protobuf``: the proto3 file ``derive_file`` gives, as
    ``.proto`` text, its encoder built from the descriptor; its message
    ``kafkawire.topLevelRecord`` (the record name of the record-name strategies)."""
    name = f"{DERIVED_PACKAGE}.{DERIVED_MESSAGE}"
    if spark_type is None:
        return Derived(None, None, name)
    return Derived(derived_text(spark_type), derived_schema(spark_type), name)


Encoder = AvroEncoder | JsonSchemaEncoder | ProtobufEncoder


@dataclass(frozen=True)
class _Writes:
    """What a written format needs: its registry schemaType, its encoder (from the schema
    text, the files it imports and the column's format), and the schema derived from a Spark
    type (with the record name of the record-name strategies)."""

    schema_type: SchemaType
    encoder: Callable[[str, Mapping[str, str], ColumnFormat], Encoder]
    derive: Callable[[Any], Derived]


def _protobuf_encoder(schema: str, references: Mapping[str, str],
                      fmt: ColumnFormat) -> ProtobufEncoder:
    # .proto text compiled where the schema is settled (client/proto_text): the encoder
    # carries binary descriptors
    main, binary_references = binary_schemas(schema, references)
    return ProtobufEncoder(main, references=binary_references, message=fmt.message)


_WRITES = {"avro": _Writes("AVRO", lambda s, _r, _f: AvroEncoder(s), _avro_derived),
           "json-schema": _Writes("JSON", lambda s, _r, _f: JsonSchemaEncoder(s),
                                  _json_derived),
           "protobuf": _Writes("PROTOBUF", _protobuf_encoder, _protobuf_derived)}


def _encoder(writes: _Writes, fmt: ColumnFormat, schema: RegisteredSchema | None,
             text: str, client: SchemaRegistryClient, spark_type: Any) -> Encoder:
    """The column's encoder for a schema; a schema that cannot encode the column (a protobuf
    message not in it, a struct field the message lacks) is a configuration error naming
    the schema, found before any record is written."""
    try:
        encoder = writes.encoder(text, client.imports(schema) if schema else {}, fmt)
        if isinstance(encoder, ProtobufEncoder) and spark_type is not None:
            encoder.check(spark_type)
    except ConfigurationError:
        raise
    except ValueError as exc:
        which = f"schema {schema.id}" if schema is not None else "the derived schema"
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "COLUMN_NOT_ENCODABLE", column=fmt.column, format=fmt.format,
            which=which, exc=str(exc)) from None
    return encoder


def _settle(fmt: ColumnFormat, formats: FormatOptions, registry: RegistryConfig, topic: str,
            spark_type: Any) -> ColumnSchema:
    writes = _WRITES[fmt.format]
    client = shared_registry(registry)
    if fmt.schema_id is not None:
        found = client.schema_by_id(fmt.schema_id)
        return ColumnSchema(fmt.column, found.id,
                            _encoder(writes, fmt, found, found.schema, client, spark_type))
    try:
        derived = writes.derive(spark_type)
    except ConfigurationError:
        raise
    except ValueError as exc:
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "COLUMN_SCHEMA_NOT_DERIVABLE", column=fmt.column,
            format=fmt.format, exc=str(exc)) from None
    if formats.use_latest_version or fmt.schema_version is not None:
        subject = fmt.subject_for(topic, derived.record)
        found = client.version(subject, fmt.schema_version) if fmt.schema_version is not None \
            else client.latest(subject)
        return ColumnSchema(fmt.column, found.id,
                            _encoder(writes, fmt, found, found.schema, client, spark_type))
    text, encoded_from = derived.text, derived.encoded_from
    assert text is not None and encoded_from is not None, \
        "a schema is derived from the column's type, which is known"
    subject = fmt.subject_for(topic, derived.record)
    if formats.auto_register:
        schema_id = client.register(subject, text, writes.schema_type)
    else:
        looked_up = client.lookup(subject, text, writes.schema_type)
        if looked_up is None:
            raise ConfigurationError.of(
                MISSING_OPTION, "COLUMN_SCHEMA_NOT_REGISTERED", column=fmt.column, subject=subject)
        schema_id = looked_up.id
    return ColumnSchema(fmt.column, schema_id,
                        _encoder(writes, fmt, None, encoded_from, client, None))


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
