r"""kcat's ``-f`` format strings for ``tail`` / ``consume``.

A format string (``--format '%t %p %o %k %s\n'``) is kcat's: ``%t`` topic, ``%p``
partition, ``%o`` offset, ``%k`` key, ``%s`` value, ``%K`` / ``%S`` their lengths (-1 for
null), ``%T`` timestamp (ms since the epoch, -1 for none), ``%h`` headers (``k=v`` joined by
``,``), ``%%`` a percent sign, and the backslash escapes of ``produce -K`` (``\n``, ``\t``,
``\r``, ``\0``, ``\\``, ``\xHH``). As in kcat, nothing is added: end it with ``\n`` for one
line per record. Keys and values are written as their raw bytes unless a field format asks
for hex or base64, or a registry format (avro, protobuf, json-schema) decoded them (their JSON,
compact; base64 for a record that did not decode); null is written as nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import click

from spark_kafka_wire.cli.produce_input import unescape
from spark_kafka_wire.cli.records import BASE64, HEX, JSON, Record, compact

_TOKENS = "tpoksKSTh%"


def field_bytes(data: bytes | None, fmt: str, view: tuple[object, str] | None = None) -> bytes:
    """A key or value as a format string writes it: raw bytes, or hex / base64 text; a
    registry format's ``view`` (``Record.value_view``) as its JSON or base64 text."""
    if view is not None:
        value, encoding = view
        return compact(value).encode("utf-8") if encoding == JSON else str(value).encode()
    if data is None:
        return b""
    if fmt == HEX:
        return data.hex().encode("ascii")
    if fmt == BASE64:
        return base64.b64encode(data)
    return data


def compile_format(template: str) -> Callable[[Record, str, str], bytes]:
    """The function printing a record as ``template`` says (kcat's ``-f``); click's
    BadParameter names an unknown ``%`` token."""
    parts: list[bytes | str] = []  # literal bytes, or a one-letter token
    literal = ""
    i = 0
    while i < len(template):
        c = template[i]
        if c == "%":
            token = template[i + 1:i + 2]
            if not token or token not in _TOKENS:
                raise click.BadParameter(
                    f"%{token} in {template!r}: a format string knows %t %p %o %k %s %K %S %T "
                    "%h and %%", param_hint="--format")
            if token == "%":
                literal += "%"
            else:
                if literal:
                    parts.append(unescape(literal))
                    literal = ""
                parts.append(token)
            i += 2
            continue
        literal += c
        i += 1
    if literal:
        parts.append(unescape(literal))

    def render(r: Record, key_format: str, value_format: str) -> bytes:
        out = bytearray()
        for part in parts:
            if isinstance(part, bytes):
                out += part
            elif part == "t":
                out += r.topic.encode()
            elif part == "p":
                out += b"%d" % r.partition
            elif part == "o":
                out += b"%d" % r.offset
            elif part == "k":
                out += field_bytes(r.key, key_format, r.key_view)
            elif part == "s":
                out += field_bytes(r.value, value_format, r.value_view)
            elif part == "K":
                out += b"%d" % (-1 if r.key is None else len(r.key))
            elif part == "S":
                out += b"%d" % (-1 if r.value is None else len(r.value))
            elif part == "T":
                out += b"%d" % r.timestamp
            elif part == "h":
                out += b",".join(k.encode() + b"=" + (v or b"") for k, v in r.headers)
        return bytes(out)

    return render


def is_format_string(fmt: str) -> bool:
    """``--format`` is a format string (not table, json or csv) when it has a ``%``."""
    return "%" in fmt
