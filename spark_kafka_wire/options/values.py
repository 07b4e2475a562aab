"""Typed option values read from a query's options, through the table.

``opts`` is always the result of :func:`lower_keys` (Spark hands options over
case-insensitively); ``name`` an Option or a name in the table, so that reading an option the
table does not declare fails. An unset option takes the table's default; a bad value is a
ConfigurationError naming the option (a value from a placeholder is never shown).
"""

from __future__ import annotations

from collections.abc import Mapping

from spark_kafka_wire.client.errors import INVALID_VALUE, VALUE_OUT_OF_RANGE, ConfigurationError
from spark_kafka_wire.options.table import (
    Kind,
    Option,
    bool_default,
    entry,
    int_default,
    text_default,
)
from spark_kafka_wire.protocol.errors import shown


def lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    """Keys lower-cased (Spark's options are case-insensitive), values as given: a value from a
    placeholder stays marked (see config_files), so that no message shows it."""
    return {k.lower(): v if isinstance(v, str) else str(v) for k, v in options.items()}


def given(opts: Mapping[str, str], name: Option | str) -> str | None:
    """The raw value when the option is set."""
    return opts.get(entry(name).key)


def text_value(opts: Mapping[str, str], name: Option | str) -> str:
    """The raw value, or the table's default."""
    opt = entry(name)
    raw = opts.get(opt.key)
    return raw if raw is not None else text_default(opt)


def optional_int(opts: Mapping[str, str], name: Option | str) -> int | None:
    """The integer value when set, checked against the option's minimum (COUNT: positive)."""
    opt = entry(name)
    raw = opts.get(opt.key)
    if raw is None:
        return None
    text = raw.strip()
    # ASCII digits only (int() takes any script's digits, and "1_000"), as Java's parseInt;
    # no more than a long's 19 digits, so the conversion cost stays bounded.
    digits = text[1:] if text[:1] in "+-" else text
    if not (digits.isascii() and digits.isdigit() and len(digits.lstrip("0")) <= 19):
        raise ConfigurationError.of(INVALID_VALUE, option=opt.name, expected="an integer",
                                    got=shown(raw))
    value = int(text)
    got = shown(value, within=raw)
    if opt.kind is Kind.COUNT:
        if value <= 0:
            raise ConfigurationError.of(VALUE_OUT_OF_RANGE, option=opt.name, bound="positive", got=got)
    elif value < opt.minimum:
        raise ConfigurationError.of(VALUE_OUT_OF_RANGE, option=opt.name, bound=f">= {opt.minimum}",
                                    got=got)
    if value > opt.highest:
        raise ConfigurationError.of(VALUE_OUT_OF_RANGE, option=opt.name,
                                    bound=f"at most {opt.highest}", got=got)
    return value


def int_value(opts: Mapping[str, str], name: Option | str) -> int:
    """The integer value, or the table's default."""
    opt = entry(name)
    value = optional_int(opts, opt)
    return value if value is not None else int_default(opt)


MAX_WIRE_STRING = 2**15 - 1  # a Kafka protocol string: int16 length, then UTF-8


def wire_text(opts: Mapping[str, str], name: Option | str) -> str | None:
    """The value (or text default) of an option sent to brokers as a protocol string (client
    and group ids): checked to be UTF-8 text that fits the int16 length prefix."""
    opt = entry(name)
    value = opts.get(opt.key, opt.default if isinstance(opt.default, str) else None)
    if value is None:
        return None
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ConfigurationError.of(INVALID_VALUE, option=opt.name,
                                    expected="text UTF-8 can encode",
                                    got="a lone surrogate") from None
    if size > MAX_WIRE_STRING:
        raise ConfigurationError.of(
            VALUE_OUT_OF_RANGE, option=opt.name,
            bound=f"at most {MAX_WIRE_STRING} bytes of UTF-8 (a Kafka protocol string)",
            got=f"{size} bytes")
    return value


def bool_value(opts: Mapping[str, str], name: Option | str) -> bool:
    """``true`` or ``false`` in any case, or the table's default."""
    opt = entry(name)
    raw = opts.get(opt.key)
    if raw is None:
        return bool_default(opt)
    v = raw.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ConfigurationError.of(INVALID_VALUE, option=opt.name, expected="true or false",
                                got=repr(raw))
