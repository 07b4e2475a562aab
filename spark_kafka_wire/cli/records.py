"""Records as text: JSON lines, CSV rows and table rows for ``kafkawire tail``.

Keys, values and header values are bytes. Each is shown as its UTF-8 text where it decodes and
as base64 where it does not, and every object says which (``"value_encoding": "base64"``), so
no byte is lost or guessed: a reader decodes base64 fields back to the exact bytes.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from spark_kafka_wire.cli.times import format_ms
from spark_kafka_wire.protocol.records import DecodedRecords

TEXT = "utf-8"
BASE64 = "base64"
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


def to_json(r: Record) -> str:
    key, key_enc = as_text(r.key)
    value, value_enc = as_text(r.value)
    return json.dumps({
        "topic": r.topic, "partition": r.partition, "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": TIMESTAMP_TYPES.get(r.timestamp_type),
        "key": key, "key_encoding": key_enc, "value": value, "value_encoding": value_enc,
        "headers": headers_json(r.headers),
    }, ensure_ascii=False)


CSV_HEADER = ("topic", "partition", "offset", "timestamp", "key", "key_encoding", "value",
              "value_encoding", "headers")


def to_csv(r: Record | None) -> str:
    """One CSV line (RFC 4180 quoting; the header line for None); headers as a JSON list."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if r is None:
        writer.writerow(CSV_HEADER)
    else:
        key, key_enc = as_text(r.key)
        value, value_enc = as_text(r.value)
        writer.writerow((r.topic, r.partition, r.offset, r.timestamp, key, key_enc, value,
                         value_enc, json.dumps(headers_json(r.headers), ensure_ascii=False)
                         if r.headers else ""))
    return buf.getvalue().rstrip("\n")


TABLE_HEADER = ("partition", "offset", "timestamp", "key", "value", "headers")


def table_cells(r: Record) -> tuple[int, int, str, str | None, str | None, str]:
    """Cells for people: base64 fields marked with a ``base64:`` prefix."""

    def show(data: bytes | None) -> str | None:
        text, enc = as_text(data)
        return f"base64:{text}" if enc == BASE64 else text

    hdrs = ", ".join(f"{k}={show(v)}" for k, v in r.headers)
    return (r.partition, r.offset, format_ms(r.timestamp), show(r.key), show(r.value), hdrs)
