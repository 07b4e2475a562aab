"""The decoder of a registered schema, for the read side and the CLI alike.

A registry format's decoder is built from the registry's schema the same way wherever records
are read: Protobuf's ``.proto`` text (what Java's serializers register) compiled into binary
descriptors (client/proto_text), the schemas it imports fetched (``imports``), JSON Schema with
its ``$ref`` targets, Avro from its text. The read side builds one per column from the reader
schema (source/formats.py); ``kafkawire consume --value-format avro`` one per writer schema id
(cli/registry_decoding.py). Here, in the shared layer, because it needs both the client layer
(the registry, protoc) and the formats layer (the decoders), which do not import each other,
and both of its users may import this layer.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from spark_kafka_wire.client.registry.proto_text import binary_schemas
from spark_kafka_wire.client.registry.schema_registry import RegisteredSchema, SchemaRegistryClient
from spark_kafka_wire.formats.avro_codec import AvroDecoder, Decoded, decode_framed
from spark_kafka_wire.formats.errors import SchemaTooComplexError
from spark_kafka_wire.formats.json_schema import JsonSchemaDecoder
from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder
from spark_kafka_wire.formats.protobuf_codec import decode_framed as protobuf_decode_framed

#: the registry's schemaType of each value.format
SCHEMA_TYPE_OF_FORMAT = {"avro": "AVRO", "json-schema": "JSON", "protobuf": "PROTOBUF"}

RegistryDecoder = AvroDecoder | ProtobufDecoder | JsonSchemaDecoder


def decoder_for(schema: RegisteredSchema, fmt: str, registry: SchemaRegistryClient, *,
                message: str | None = None, stable_union_ids: bool = False,
                recursive_field_max_depth: int = -1,
                protobuf_max_depth: int = -1) -> RegistryDecoder:
    """The decoder of format ``fmt`` (avro, protobuf, json-schema) reading with ``schema``.
    ``message``: the Protobuf message (None: the file's first). ValueError or KeyError when
    a Protobuf schema cannot be compiled or has no such message; the caller says whose
    schema it is. SchemaTooComplexError (a ValueError) naming the schema's subject and id
    when its Spark type would be too large or deep to build."""
    try:
        return _decoder_for(schema, fmt, registry, message=message,
                            stable_union_ids=stable_union_ids,
                            recursive_field_max_depth=recursive_field_max_depth,
                            protobuf_max_depth=protobuf_max_depth)
    except SchemaTooComplexError as exc:
        raise exc.naming(schema.subject, schema.id) from None


def _decoder_for(schema: RegisteredSchema, fmt: str, registry: SchemaRegistryClient, *,
                 message: str | None, stable_union_ids: bool, recursive_field_max_depth: int,
                 protobuf_max_depth: int) -> RegistryDecoder:
    if fmt == "protobuf":
        # compiled here, where the schema is fetched: the decoder carries binary descriptors
        # (a Spark driver's to its executors)
        main, references = binary_schemas(schema.schema, registry.imports(schema),
                                          schema.subject)
        return ProtobufDecoder(main, references=references, message=message,
                               recursive_field_max_depth=protobuf_max_depth)
    if fmt == "json-schema":
        return JsonSchemaDecoder(schema.schema, registry.imports(schema))
    return AvroDecoder(schema.schema, stable_union_ids=stable_union_ids,
                       recursive_field_max_depth=recursive_field_max_depth)


def decode_framed_values(values: pa.Array, decoder: RegistryDecoder,
                         writer_schema_for_id: Callable[[int], str]) -> Decoded:
    """Confluent-framed values decoded by their format's decoder: Avro and JSON Schema with
    each record's writer schema (by id), Protobuf with the decoder's descriptor alone
    (unknown fields skipped, missing ones null: it needs no writer schema)."""
    if isinstance(decoder, ProtobufDecoder):
        return protobuf_decode_framed(values, decoder)
    return decode_framed(values, decoder, writer_schema_for_id)
