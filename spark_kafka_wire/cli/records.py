"""Records as text: JSON lines, CSV rows and table rows for ``kafkawire tail``.

Keys, values and header values are bytes. Each is shown as its UTF-8 text where it decodes and
as base64 where it does not, and every object says which (``"value_encoding": "base64"``), so
no byte is lost or guessed: a reader decodes base64 fields back to the exact bytes.

``--key-format`` / ``--value-format`` choose otherwise for keys and values: ``hex`` and
``base64`` show every record's bytes so; ``json`` parses them, so JSON output holds the value
itself (an object, not a string of one) and a table shows it compact. Bytes that are not JSON
fail the command naming topic, partition and offset.

``avro``, ``protobuf`` and ``json-schema`` (with ``--schema-registry``) decode Confluent-framed
records with their writer schemas when they are printed (cli/registry_decoding.py, which sets
a record's ``key_view`` / ``value_view``), shown as ``json`` shows a value. A record that does
not decode is not the command's end (a topic of such records often holds a few written by
something else): it is warned of on stderr and its bytes are shown as base64, the fallback
of ``text``, marked ``base64`` as there.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import click

from spark_kafka_wire.cli.times import format_ms
from spark_kafka_wire.options.table import VALUE_FORMATS
from spark_kafka_wire.protocol.records import DecodedRecords

TEXT = "utf-8"
BASE64 = "base64"
HEX = "hex"
JSON = "json"
#: The formats decoded with a Schema Registry's writer schemas (the read side's value.format
#: names, raw left out).
REGISTRY_FORMATS = tuple(f for f in VALUE_FORMATS if f != "raw")
#: What --key-format / --value-format of tail and consume accept ("text": TEXT, else BASE64).
SHOWN_FORMATS = ("text", HEX, BASE64, JSON, *REGISTRY_FORMATS)
#: The formats whose fields are base64 only where bytes could not be shown otherwise: a table
#: cell or format string marks those (``base64:``).
FALLBACK_FORMATS = ("text", *REGISTRY_FORMATS)
# Java's TimestampType ids, as the record batch attributes carry them.
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    #: (shown value, its encoding) of a key / value in a registry format, set when the
    #: record is printed (cli/registry_decoding.py); None: shown from the bytes
    key_view: tuple[Any, str] | None = None
    value_view: tuple[Any, str] | None = None


def records_of(topic: str, partition: int, chunk: DecodedRecords) -> Iterator[Record]:
    """The records of one decoded chunk, one Python object each (a CLI prints them one by
    one anyway)."""
    keys, values = chunk.keys.to_pylist(), chunk.values.to_pylist()
    headers = chunk.headers or [None] * chunk.num_records
    for i, (o, ts, tt) in enumerate(zip(chunk.offsets.tolist(), chunk.timestamps.tolist(),
                                        chunk.timestamp_types.tolist(), strict=True)):
        yield Record(topic, partition, o, ts, tt, keys[i], values[i], tuple(headers[i] or ()))


def as_text(data: bytes | None) -> tuple[str | None, str | None]:
    """(text, encoding): UTF-8 text where the bytes decode, else base64; (None, None) for
    null."""
    if data is None:
        return None, None
    try:
        return data.decode("utf-8"), TEXT
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), BASE64


def shown(data: bytes | None, fmt: str, what: str) -> tuple[Any, str | None]:
    """(shown value, its encoding) of a key or value in format ``fmt``; (None, None) for
    null. ``what`` names the field and its record in an error."""
    if data is None:
        return None, None
    if fmt == HEX:
        return data.hex(), HEX
    if fmt == BASE64:
        return base64.b64encode(data).decode("ascii"), BASE64
    if fmt == JSON:
        try:
            return json.loads(data), JSON
        except ValueError as exc:
            raise click.ClickException(
                f"{what} is not JSON ({str(exc)[:60]}); show it with --key-format / "
                "--value-format text or base64") from None
    return as_text(data)


def field_shown(r: Record, field: str, fmt: str) -> tuple[Any, str | None]:
    """``shown`` of the record's ``field`` (key or value); in a registry format as it was
    decoded when printed (``key_view`` / ``value_view``)."""
    view = r.key_view if field == "key" else r.value_view
    if view is not None:
        return view
    return shown(r.key if field == "key" else r.value, fmt, f"the {field} of {where(r)}")


def compact(value: Any) -> str:
    """A parsed or decoded value as one line of JSON (a table cell, a CSV field)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def cell(value: Any, encoding: str | None, fmt: str) -> str | None:
    """A shown key or value as a table cell: base64 fields marked ``base64:`` where the
    format shows base64 only as a fallback."""
    if value is None:
        return None
    if encoding == JSON:
        return compact(value)
    return f"base64:{value}" if fmt in FALLBACK_FORMATS and encoding == BASE64 else value


def shown_text(data: bytes | None, fmt: str, what: str) -> str | None:
    """A key or value as a table cell (``cell``)."""
    return cell(*shown(data, fmt, what), fmt)


def from_text(text: str | None, encoding: str | None) -> bytes | None:
    """The bytes ``as_text`` was given."""
    if text is None:
        return None
    return base64.b64decode(text) if encoding == BASE64 else text.encode("utf-8")


def headers_json(headers: tuple[tuple[str, bytes | None], ...]) -> list[dict[str, Any]]:
    """A list, not an object: a record may carry one header key several times."""
    out = []
    for k, v in headers:
        text, enc = as_text(v)
        out.append({"key": k, "value": text, "value_encoding": enc})
    return out


def where(r: Record) -> str:
    """The record, for an error message."""
    return f"the record at offset {r.offset} of {r.topic}-{r.partition}"


def to_json(r: Record, key_format: str = "text", value_format: str = "text") -> str:
    key, key_enc = field_shown(r, "key", key_format)
    value, value_enc = field_shown(r, "value", value_format)
    return json.dumps({
        "topic": r.topic, "partition": r.partition, "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": TIMESTAMP_TYPES.get(r.timestamp_type),
        "key": key, "key_encoding": key_enc, "value": value, "value_encoding": value_enc,
        "headers": headers_json(r.headers),
    }, ensure_ascii=False)


CSV_HEADER = ("topic", "partition", "offset", "timestamp", "key", "key_encoding", "value",
              "value_encoding", "headers")


def to_csv(r: Record | None, key_format: str = "text", value_format: str = "text") -> str:
    """One CSV line (RFC 4180 quoting; the header line for None); headers as a JSON list."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if r is None:
        writer.writerow(CSV_HEADER)
    else:
        key, key_enc = field_shown(r, "key", key_format)
        value, value_enc = field_shown(r, "value", value_format)
        if key_enc == JSON:
            key = compact(key)
        if value_enc == JSON:
            value = compact(value)
        writer.writerow((r.topic, r.partition, r.offset, r.timestamp, key, key_enc, value,
                         value_enc, json.dumps(headers_json(r.headers), ensure_ascii=False)
                         if r.headers else ""))
    return buf.getvalue().rstrip("\n")


TABLE_HEADER = ("partition", "offset", "timestamp", "key", "value", "headers")


def table_cells(r: Record, key_format: str = "text", value_format: str = "text"
                ) -> tuple[int, int, str, str | None, str | None, str]:
    """Cells for people: base64 fields marked with a ``base64:`` prefix."""
    hdrs = ", ".join(f"{k}={shown_text(v, 'text', '')}" for k, v in r.headers)
    return (r.partition, r.offset, format_ms(r.timestamp),
            cell(*field_shown(r, "key", key_format), key_format),
            cell(*field_shown(r, "value", value_format), value_format), hdrs)
