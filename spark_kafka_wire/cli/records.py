"""Records as text: JSON lines, CSV rows and table rows for ``kafkawire tail``.

Keys, values and header values are bytes. Each is shown as its UTF-8 text where it decodes and
as base64 where it does not, and every object says which (``"value_encoding": "base64"``), so
no byte is lost or guessed: a reader decodes base64 fields back to the exact bytes.

``--key-format`` / ``--value-format`` choose otherwise for keys and values: ``hex`` and
``base64`` show every record's bytes so; ``json`` parses them, so JSON output holds the value
itself (an object, not a string of one) and a table shows it compact. Bytes that are not JSON
fail the command naming topic, partition and offset.
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
from spark_kafka_wire.protocol.records import DecodedRecords

TEXT = "utf-8"
BASE64 = "base64"
HEX = "hex"
JSON = "json"
#: What --key-format / --value-format of tail and consume accept ("text": TEXT, else BASE64).
SHOWN_FORMATS = ("text", HEX, BASE64, JSON)
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


def shown_text(data: bytes | None, fmt: str, what: str) -> str | None:
    """A key or value as a table cell: base64 fields marked ``base64:`` in the text format."""
    value, encoding = shown(data, fmt, what)
    if value is None:
        return None
    if encoding == JSON:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return f"base64:{value}" if fmt == "text" and encoding == BASE64 else value


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
    key, key_enc = shown(r.key, key_format, f"the key of {where(r)}")
    value, value_enc = shown(r.value, value_format, f"the value of {where(r)}")
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
        key, key_enc = shown(r.key, key_format, f"the key of {where(r)}")
        value, value_enc = shown(r.value, value_format, f"the value of {where(r)}")
        if key_enc == JSON:
            key = json.dumps(key, ensure_ascii=False, separators=(",", ":"))
        if value_enc == JSON:
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
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
            shown_text(r.key, key_format, f"the key of {where(r)}"),
            shown_text(r.value, value_format, f"the value of {where(r)}"), hdrs)
