"""Times on the command line: what ``--at`` accepts, and how record timestamps are printed.

Both sides are UTC: a time typed without an offset is read as UTC, and timestamps are printed
with a ``Z``, so what one command prints another accepts unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import click

from spark_kafka_wire.protocol.primitives import INT64_MAX


@dataclass(frozen=True)
class When:
    """``earliest``, ``latest`` or a time in ms since the epoch (UTC)."""

    special: str | None = None
    epoch_ms: int | None = None

    def __str__(self) -> str:
        if self.special is not None:
            return self.special
        assert self.epoch_ms is not None
        return format_ms(self.epoch_ms)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_LAST_MS = round((datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)
                  - _EPOCH).total_seconds() * 1000)
MAX_EPOCH_MS = INT64_MAX  # record timestamps are int64


def format_ms(ms: int) -> str:
    """ISO-8601 in UTC with milliseconds (``2026-05-01T12:00:00.000Z``); ``-`` for -1 (no
    timestamp). A record may carry any int64: one past year 9999, which ISO-8601 cannot
    write, is printed as its number of milliseconds."""
    if ms < 0:
        return "-"
    if ms > _LAST_MS:
        return f"{ms}ms"
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def parse_epoch_ms(text: str) -> int:
    """Milliseconds since the epoch, or an ISO-8601 date or time (UTC unless it names an
    offset; a trailing ``Z`` is taken as Python 3.10 does not), as ms since the epoch.
    ValueError says why ``text`` is neither."""
    text = text.strip()
    digits = re.fullmatch(r"([0-9]+)(ms)?", text)  # "ms": how format_ms prints year > 9999
    if digits:
        if len(digits[1]) > 19 or int(digits[1]) > MAX_EPOCH_MS:
            raise ValueError(f"{text[:30]!r} is beyond the largest timestamp, "
                             f"{MAX_EPOCH_MS} ms")
        return int(digits[1])
    iso = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError(f"{text[:60]!r} is not an ISO-8601 time (2026-05-01T12:00:00Z) or "
                         "milliseconds since the epoch") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    # Exact, and safe at both ends of the calendar (timestamp() overflows near year 1).
    ms = (moment - _EPOCH) // timedelta(milliseconds=1)
    if ms < 0:
        raise ValueError(f"{text!r} is before 1970")
    return ms


class WhenType(click.ParamType):
    """``earliest``, ``latest``, or a time as :func:`parse_epoch_ms` reads it."""

    name = "earliest|latest|ISO-8601|epoch-ms"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> When:
        if isinstance(value, When):
            return value
        text = str(value).strip()
        if text.lower() in ("earliest", "latest"):
            return When(special=text.lower())
        try:
            return When(epoch_ms=parse_epoch_ms(text))
        except ValueError as exc:
            self.fail(f"{exc}; or earliest, latest", param, ctx)


class EpochMsType(click.ParamType):
    """A record timestamp: a time as :func:`parse_epoch_ms` reads it, as ms since the epoch."""

    name = "ISO-8601|epoch-ms"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_epoch_ms(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
