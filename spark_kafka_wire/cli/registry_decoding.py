"""``--key-format`` / ``--value-format`` avro, protobuf and json-schema of ``tail`` and
``consume``: records in Confluent's wire format decoded with a Schema Registry, as kcat's
``-s value=avro -r URL``.

Each record is decoded with its own writer schema (the id in its frame, fetched once per id:
the registry's ids never change), with no reader schema: the command shows what was written,
whatever version of the subject wrote it. Protobuf records name their message by Confluent's
message indexes, so one decoder is kept per id and message, READERS_KEPT of them at most (the
least recently used go: ids and message indexes are the records' data, and a topic may carry
any number of them). The decoders are the read side's
(options/registry_decoders.py builds them as a query does), and a decoded value is shown as
the JSON Schema writer shapes values (``json_value``): Spark's types, timestamps ISO-8601.

A record that does not decode (not framed, an id the registry does not have, a schema of
another format, bytes the schema does not read) is one ``kafkawire: warning:`` line on stderr
naming topic, partition, offset and schema id, and its bytes are shown in base64 (marked
``base64`` as ``text`` marks bytes that are not UTF-8); the command goes on. A registry that
cannot be reached or refuses the credentials ends it: no record would decode. A schema whose
references go beyond the registry client's limits (REFERENCE_LIMIT) fails the records of its
id only, as an unknown id does.

The registry's credentials may be given in the environment (USER_INFO_ENV, BEARER_TOKEN_ENV)
instead of the URL's user info: a command line is readable by every local user (``ps``), a
process's environment by its user only.

Imported only when such a format is chosen (``kafkawire consume`` without one loads no
registry, Avro or Protobuf module).
"""

from __future__ import annotations

import base64
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from spark_kafka_wire.cli.records import BASE64, JSON, REGISTRY_FORMATS, Record, where
from spark_kafka_wire.client.errors import ConfigurationError, SchemaRegistryError
from spark_kafka_wire.client.registry.schema_registry import (
    SCHEMAS_KEPT,
    RegistryConfig,
    SchemaRegistryClient,
    printable,
    shown_url,
)
from spark_kafka_wire.formats.confluent import FRAME_HEADER_SIZE, split_frames
from spark_kafka_wire.formats.json_schema import json_value
from spark_kafka_wire.formats.protobuf_codec import (
    ProtobufDecoder,
    build_pool,
    message_by_indexes,
    read_message_indexes,
)
from spark_kafka_wire.options.registry_decoders import (
    SCHEMA_TYPE_OF_FORMAT,
    RegistryDecoder,
    decode_framed_values,
    decoder_for,
)

log = logging.getLogger(__name__)

#: how much of a failure's reason a warning shows (a decoder's message may quote bytes)
REASON_SHOWN = 300
#: Protobuf's message indexes of the file's first message (and of every Avro/JSON record)
FIRST_MESSAGE = (0,)
#: The most readers kept (per format), by schema id and message: as many as the registry
#: client keeps schemas (Confluent's max.schemas.per.subject).
READERS_KEPT = SCHEMAS_KEPT
#: The registry's credentials from the environment: Confluent's basic.auth.user.info
#: ("user:password") and bearer.auth.token, kept out of the command line.
USER_INFO_ENV = "KAFKAWIRE_SCHEMA_REGISTRY_USER_INFO"
BEARER_TOKEN_ENV = "KAFKAWIRE_SCHEMA_REGISTRY_BEARER_TOKEN"
#: The registry client's errors that fail the records of one schema id, not the command.
ID_FAILURES = ("NOT_FOUND", "REFERENCE_LIMIT")


@dataclass(frozen=True)
class Reader:
    """What decodes the records of one schema id (and Protobuf message)."""

    decoder: RegistryDecoder
    writer_schema: str

    def schema_of(self, schema_id: int) -> str:
        """The writer schema of the records this reader is given (all of ``schema_id``)."""
        return self.writer_schema


#: (schema id, Protobuf message indexes) -> its Reader, or why its records cannot be decoded
ReaderOf = Callable[[int, tuple[int, ...]], Reader | str]


@dataclass(frozen=True)
class Failure:
    """A record that did not decode: its place in the batch, its schema id (None where it is
    not framed) and why."""

    index: int
    schema_id: int | None
    reason: str


def message_path(value: bytes) -> tuple[int, ...]:
    """The Protobuf message indexes after a record's frame header; the first message's for
    indexes that do not read (the decoder then fails the record, saying why)."""
    try:
        return tuple(read_message_indexes(value, FRAME_HEADER_SIZE)[0])
    except ValueError:
        return FIRST_MESSAGE


def decode_values(values: Sequence[bytes | None], fmt: str, reader_of: ReaderOf
                  ) -> tuple[list[tuple[Any, str] | None], list[Failure]]:
    """Each value shown: (its decoded value as JSON-ready data, ``json``), or (its bytes in
    base64, ``base64``) where it does not decode, or None for a null value (a tombstone stays
    null); and the failures, in the records' order. Records of one schema id (and message)
    are decoded together, by one decoder."""
    shown: list[tuple[Any, str] | None] = [None] * len(values)
    failures: list[Failure] = []
    column = pa.array(values, pa.binary())
    frames = split_frames(column)
    groups: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for i, v in enumerate(values):
        if v is None:
            continue
        if not frames.framed[i]:
            failures.append(Failure(i, None, frames.reason(i)))
            continue
        path = message_path(v) if fmt == "protobuf" else FIRST_MESSAGE
        groups.setdefault((int(frames.schema_ids[i]), path), []).append(i)
    for (schema_id, path), rows in groups.items():
        found = reader_of(schema_id, path)
        if isinstance(found, str):
            failures.extend(Failure(i, schema_id, found) for i in rows)
            continue
        decoded = decode_framed_values(column.take(pa.array(rows)), found.decoder,
                                       found.schema_of)
        arrow_type = found.decoder.arrow_type
        for j, (i, value) in enumerate(zip(rows, decoded.array.to_pylist(), strict=True)):
            if decoded.failed[j]:
                failures.append(Failure(i, schema_id, decoded.errors.get(j, "not decodable")))
            else:
                shown[i] = (json_value(value, arrow_type), JSON)
    failures.sort(key=lambda f: f.index)
    for f in failures:
        raw = values[f.index]
        assert raw is not None
        shown[f.index] = (base64.b64encode(raw).decode("ascii"), BASE64)
    return shown, failures


class RegistryReaders:
    """The readers of one format, by schema id and message, from the registry; each built
    once while kept (an id's failure too: an unknown id is not asked again for every
    record), the READERS_KEPT most recently used."""

    def __init__(self, registry: SchemaRegistryClient, fmt: str,
                 kept: int = READERS_KEPT) -> None:
        self.registry, self.fmt, self.kept = registry, fmt, kept
        self._found: OrderedDict[tuple[int, tuple[int, ...]], Reader | str] = OrderedDict()

    def __call__(self, schema_id: int, path: tuple[int, ...]) -> Reader | str:
        key = (schema_id, path)
        found = self._found.get(key)
        if found is not None:
            self._found.move_to_end(key)
            return found
        found = self._found[key] = self._reader(schema_id, path)
        while len(self._found) > self.kept:
            self._found.popitem(last=False)
        return found

    def __len__(self) -> int:
        return len(self._found)

    def _reader(self, schema_id: int, path: tuple[int, ...]) -> Reader | str:
        try:
            schema = self.registry.schema_by_id(schema_id)
            expected = SCHEMA_TYPE_OF_FORMAT[self.fmt]
            if schema.schema_type != expected:
                return (f"schema {schema_id} is a {schema.schema_type} schema, not "
                        f"{expected} ({self.fmt})")
            decoder = decoder_for(schema, self.fmt, self.registry)
            if isinstance(decoder, ProtobufDecoder) and path != FIRST_MESSAGE:
                pool, name = build_pool(decoder.schema, decoder.references)
                message = message_by_indexes(pool.FindFileByName(name), list(path))
                decoder = ProtobufDecoder(decoder.schema, references=decoder.references,
                                          message=message.full_name)
        except SchemaRegistryError as exc:
            if exc.kind not in ID_FAILURES:
                raise  # the registry is down or refuses us: no record would decode
            if exc.kind == "REFERENCE_LIMIT":
                return f"schema id {schema_id} cannot be read: {exc}"
            return f"schema id {schema_id} is not in the registry {shown_url(exc.url)}"
        except (ValueError, KeyError, TypeError) as exc:
            return f"schema {schema_id} cannot be read as {self.fmt}: {exc}"
        return Reader(decoder, schema.schema)


class RecordDecoder:
    """Decodes the keys and/or values of records about to be printed (``Printer``), in the
    formats chosen, and warns of each record that does not decode."""

    def __init__(self, url: str, key_format: str, value_format: str,
                 environ: Mapping[str, str] = os.environ) -> None:
        user_info = environ.get(USER_INFO_ENV) or None
        token = environ.get(BEARER_TOKEN_ENV) or None
        given = [name for name, value in ((USER_INFO_ENV, user_info),
                                          (BEARER_TOKEN_ENV, token)) if value is not None]
        try:
            registry = SchemaRegistryClient(RegistryConfig(
                urls=tuple(url.split(",")), user_info=user_info, bearer_token=token))
        except ConfigurationError as exc:
            where = " and ".join(["--schema-registry", *given])
            raise exc.within(where) from None
        self.formats = {field: fmt for field, fmt in (("key", key_format),
                                                       ("value", value_format))
                        if fmt in REGISTRY_FORMATS}
        self.readers = {field: RegistryReaders(registry, fmt)
                        for field, fmt in self.formats.items()}

    def decode(self, records: list[Record]) -> list[Record]:
        """``records`` with ``key_view`` / ``value_view`` set for each field decoded."""
        for field, readers in self.readers.items():
            fmt = self.formats[field]
            views, failures = decode_values(
                [r.key if field == "key" else r.value for r in records], fmt, readers)
            for f in failures:
                r = records[f.index]
                schema = "not framed" if f.schema_id is None else f"schema id {f.schema_id}"
                log.warning("the %s of %s (%s) cannot be decoded as %s, shown in base64: %s",
                            field, where(r), schema, fmt, printable(f.reason, REASON_SHOWN))
            pairs = zip(records, views, strict=True)
            records = [replace(r, key_view=v) if field == "key" else replace(r, value_view=v)
                       for r, v in pairs]
        return records
