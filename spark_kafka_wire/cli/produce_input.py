r"""What ``kafkawire produce`` reads, as records: plain lines (kcat ``-P``) or JSON lines.

Lines are read as Kafka's console producer reads them (Java's ``readLine``): a line ends at
``\n`` or ``\r\n``, so a file saved on Windows gives the same values as on Unix, and an empty
line is skipped (a stray blank line is a typo, not an empty record) unless ``--keep-empty``
asks for it (plain lines only). A ``\r`` anywhere else is kept: values are bytes. Lines are
read in bounded chunks so a file of any size streams through.

Plain lines (``--input-format lines``) are split into key and value at ``--key-separator``
(:func:`split_line`); JSON lines (``--input-format jsonl``) are one object per line with
the fields ``kafkawire tail --format json`` prints, so ``tail --format json | produce
--input-format jsonl`` copies records exactly: ``key``, ``value``, ``headers`` (a list of
``{"key", "value"}`` objects, or an object of key to value), ``partition`` and ``timestamp``
(ms since the epoch or ISO-8601); ``key_encoding`` / ``value_encoding`` / a header's
``value_encoding`` say ``base64`` where the text is base64 (as ``tail`` marks bytes that are
not UTF-8). ``topic``, ``offset`` and ``timestamp_type`` are what a broker assigns: accepted
and ignored. Any other field is refused, so a misspelt ``vaule`` is not silently dropped.

``--key-format`` / ``--value-format`` say how the text of a key or value becomes bytes:
``utf8`` as typed, ``hex``, ``base64``, or ``json`` (checked to be JSON; in JSON lines the
field may then be any JSON value, written as compact JSON text). A field whose text does not
decode fails the command naming its line; the records of the lines before it are still
yielded, so a write without a transaction holds exactly those.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import click

from spark_kafka_wire.cli.records import BASE64, HEX, JSON, TEXT
from spark_kafka_wire.cli.times import parse_epoch_ms

INPUT_FORMATS = ("lines", "jsonl")
FIELD_FORMATS = ("utf8", "hex", "base64", "json")
#: A JSON line's ``*_encoding`` (as ``tail`` prints it) and the field format it means.
FIELD_ENCODINGS = {BASE64: "base64", HEX: "hex", JSON: "json"}
#: JSON lines fields a broker assigns: what ``tail --format json`` prints, ignored on input.
ASSIGNED_FIELDS = frozenset({"topic", "offset", "timestamp_type"})
JSONL_FIELDS = frozenset({"key", "key_encoding", "value", "value_encoding", "headers",
                          "partition", "timestamp"}) | ASSIGNED_FIELDS

Header = tuple[str, bytes | None]


CHUNK_LINES = 10_000
CHUNK_BYTES = 1 << 20
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "0": "\0", "\\": "\\"}


class InputError(click.ClickException):
    """A line of the input cannot be a record; says which line and why (exit status 1)."""


def unescape(text: str) -> bytes:
    """A separator as typed: ``\\t``, ``\\n``, ``\\r``, ``\\0``, ``\\\\`` and ``\\xHH`` become
    the bytes they name (shells pass them literally); anything else stands for itself."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            e = text[i + 1]
            if e in _ESCAPES:
                out += _ESCAPES[e].encode()
                i += 2
                continue
            hex_digits = text[i + 2:i + 4]
            if e == "x" and len(hex_digits) == 2 and all(
                    d in "0123456789abcdefABCDEF" for d in hex_digits):
                out.append(int(hex_digits, 16))
                i += 4
                continue
        out += c.encode()
        i += 1
    return bytes(out)


def split_line(line: bytes, separator: bytes | None) -> tuple[bytes | None, bytes]:
    """(key, value): the key before the first separator; no key where there is none."""
    if separator is not None:
        key, found, value = line.partition(separator)
        if found:
            return key, value
    return None, line


def line_body(raw: bytes) -> bytes:
    r"""A line without its ending, ``\n`` or ``\r\n`` (a lone ``\r`` is data)."""
    if raw.endswith(b"\r\n"):
        return raw[:-2]
    return raw[:-1] if raw.endswith(b"\n") else raw


@dataclass
class Lines:
    """Lines read, split into keys and values, with their line numbers (from 1) and the input
    bytes they came from (skipped lines' bytes included, for the progress bar)."""

    keys: list[bytes | None]
    values: list[bytes]
    size: int
    numbers: list[int]


def line_chunks(source: BinaryIO, separator: bytes | None, max_lines: int = CHUNK_LINES,
                keep_empty: bool = False) -> Iterator[Lines]:
    r"""Up to ``max_lines`` lines or CHUNK_BYTES bytes at a time; the line ending (``\n`` or
    ``\r\n``) is not part of its value, and empty lines are skipped unless ``keep_empty``."""
    out = Lines([], [], 0, [])
    number = 0
    for raw in source:
        number += 1
        out.size += len(raw)
        line = line_body(raw)
        if not line and not keep_empty:
            continue
        key, value = split_line(line, separator)
        out.keys.append(key)
        out.values.append(value)
        out.numbers.append(number)
        if len(out.values) >= max_lines or out.size >= CHUNK_BYTES:
            yield out
            out = Lines([], [], 0, [])
    if out.values or out.size:
        yield out


@dataclass
class Chunk:
    """Records read from the input, in order, and the input bytes they came from (for the
    progress bar). ``headers``, ``partitions`` and ``timestamps`` are per record where the
    input can say them (JSON lines), else None."""

    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    size: int = 0
    headers: list[list[Header]] | None = None
    partitions: list[int | None] | None = None
    timestamps: list[int | None] | None = None


def field_bytes(text: bytes, fmt: str, what: str, line: int) -> bytes:
    """The bytes a key or value given as ``text`` in format ``fmt`` stands for."""
    try:
        if fmt == "hex":
            return bytes.fromhex(text.decode("ascii"))
        if fmt == "base64":
            return base64.b64decode(text, validate=True)
        if fmt == "json":
            json.loads(text)
    except (ValueError, binascii.Error) as exc:
        raise InputError(f"line {line}: the {what} is not {fmt} "
                         f"({_reason(exc)}): {text[:40]!r}") from None
    return text


def _reason(exc: Exception) -> str:
    return str(exc).split("\n")[0][:80]


def decode_lines(chunks: Iterable[Lines], key_format: str, value_format: str,
                 tombstone: bool, partition_count: int | None = None) -> Iterator[Chunk]:
    """Plain lines in their formats; with ``tombstone`` an empty value is a null one
    (``partition_count``: as :func:`decode_jsonl`'s, unused: a line names no partition)."""
    for lines in chunks:
        out = Chunk(size=lines.size)
        try:
            for k, v, line in zip(lines.keys, lines.values, lines.numbers, strict=True):
                key = k if k is None or key_format == "utf8" \
                    else field_bytes(k, key_format, "key", line)
                value = v if value_format == "utf8" \
                    else field_bytes(v, value_format, "value", line)
                out.keys.append(key)
                out.values.append(None if tombstone and not value else value)
        except InputError:
            yield from _before_failure(out)
            raise
        yield out


def _before_failure(out: Chunk) -> Iterator[Chunk]:
    """The records of a chunk before its failing line (each field of a record is appended
    once the whole line decoded): every line before the one that fails is a record, so a
    write without a transaction holds exactly those."""
    if out.values:
        yield out


def _text_field(obj: dict[str, Any], name: str, fmt: str, line: int) -> bytes | None:
    """A JSON line's key or value: by its ``*_encoding`` where it has one (what ``tail``
    printed it in), else by ``fmt``."""
    value = obj.get(name)
    encoding = obj.get(f"{name}_encoding")
    if value is None:
        return None
    if encoding not in (None, TEXT, *FIELD_ENCODINGS):
        raise InputError(f"line {line}: {name}_encoding {encoding!r} is none of "
                         f"{', '.join(repr(e) for e in (TEXT, *FIELD_ENCODINGS))}")
    how = FIELD_ENCODINGS.get(encoding, "utf8") if encoding is not None else fmt
    if how == "json":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if not isinstance(value, str):
        raise InputError(f"line {line}: the {name} is a JSON {type(value).__name__}; "
                         f"give a string (or --{name}-format json for any JSON value)")
    return field_bytes(value.encode("utf-8"), how, name, line)


def _headers(value: Any, line: int) -> list[Header]:
    if value is None:
        return []
    items: list[tuple[Any, Any, Any]]
    if isinstance(value, dict):
        items = [(k, v, None) for k, v in value.items()]
    elif isinstance(value, list) and all(isinstance(h, dict) for h in value):
        items = [(h.get("key"), h.get("value"), h.get("value_encoding")) for h in value]
    else:
        raise InputError(f"line {line}: headers must be a list of {{\"key\", \"value\"}} "
                         "objects or an object of key to value")
    out: list[Header] = []
    for k, v, enc in items:
        if not isinstance(k, str):
            raise InputError(f"line {line}: a header key must be a string, not {k!r}")
        if v is not None and not isinstance(v, str):
            raise InputError(f"line {line}: the value of header {k!r} must be a string or "
                             "null")
        if v is None:
            out.append((k, None))
        elif enc == BASE64:
            out.append((k, field_bytes(v.encode("ascii", "replace"), "base64",
                                       f"value of header {k!r}", line)))
        elif enc in (None, TEXT):
            out.append((k, v.encode("utf-8")))
        else:
            raise InputError(f"line {line}: header {k!r} has value_encoding {enc!r}, neither "
                             f"{TEXT!r} nor {BASE64!r}")
    return out


def _partition(value: Any, line: int, count: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"line {line}: partition must be a partition number, not {value!r}")
    if count is not None and value >= count:
        raise InputError(f"line {line}: partition {value}, but the topic has partitions "
                         f"0-{count - 1}")
    return value


def _timestamp(value: Any, line: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(f"line {line}: timestamp must be ms since the epoch or an ISO-8601 "
                         f"time, not {value!r}")
    try:
        return parse_epoch_ms(str(value))
    except ValueError as exc:
        raise InputError(f"line {line}: timestamp {exc}") from None


def decode_jsonl(chunks: Iterable[Lines], key_format: str, value_format: str,
                 tombstone: bool, partition_count: int | None = None) -> Iterator[Chunk]:
    """JSON lines (read unsplit, empty lines skipped) as records; a partition at or past
    ``partition_count`` (the topic's, where known) fails its line."""
    for lines in chunks:
        out = Chunk(size=lines.size, headers=[], partitions=[], timestamps=[])
        assert out.headers is not None and out.partitions is not None \
            and out.timestamps is not None
        try:
            for text, line in zip(lines.values, lines.numbers, strict=True):
                key, value, headers, partition, timestamp = _json_record(
                    text, line, key_format, value_format, partition_count)
                out.keys.append(key)
                out.values.append(None if tombstone and not value else value)
                out.headers.append(headers)
                out.partitions.append(partition)
                out.timestamps.append(timestamp)
        except InputError:
            yield from _before_failure(out)
            raise
        yield out


def _json_record(text: bytes, line: int, key_format: str, value_format: str,
                 partition_count: int | None
                 ) -> tuple[bytes | None, bytes | None, list[Header], int | None, int | None]:
    """(key, value, headers, partition, timestamp) of one JSON line."""
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise InputError(f"line {line}: not a JSON object ({_reason(exc)})") from None
    if not isinstance(obj, dict):
        raise InputError(f"line {line}: a JSON {type(obj).__name__}, not an object")
    unknown = sorted(set(obj) - JSONL_FIELDS)
    if unknown:
        raise InputError(f"line {line}: unknown field {unknown[0]!r} (a record has "
                         f"{', '.join(sorted(JSONL_FIELDS - ASSIGNED_FIELDS))})")
    return (_text_field(obj, "key", key_format, line),
            _text_field(obj, "value", value_format, line),
            _headers(obj.get("headers"), line),
            _partition(obj.get("partition"), line, partition_count),
            _timestamp(obj.get("timestamp"), line))
