"""Where ``tail`` / ``consume`` start reading: kcat's ``-o``, per partition.

``-o`` takes ``beginning`` (or ``earliest``), ``end`` (or ``latest``), an offset ``N``, ``-N``
(N before the end: the last N records), ``@TIME`` (the first record at or after an ISO-8601
time or ms since the epoch, kcat's ``s@``) and, prefixed with ``P:``, any of these for
partition P only (``-o 0:100 -o 1:@2026-05-01``); a spec without a prefix is every other
partition's. An offset past a partition's end starts at its end (nothing to print until
something is written), one before its start at its start: a look at a topic, not a
pipeline that must notice retention.

On a Kafka 0.7 cluster offsets are byte positions: ``N`` must be a message boundary, ``-N``
means the last N messages (found from segment starts, ``tail.last_records``) and ``@TIME``
the first segment written after the time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import click

from spark_kafka_wire.cli.times import parse_epoch_ms

BEGINNING = "beginning"
END = "end"
ABSOLUTE = "absolute"
LAST = "last"  # -N
TIME = "time"  # @TIME
_WORDS = {"beginning": BEGINNING, "earliest": BEGINNING, "end": END, "latest": END}


@dataclass(frozen=True)
class StartSpec:
    """One ``-o``: ``kind`` and its number (an offset, a count or ms since the epoch);
    ``partition`` None for every partition not named by another spec."""

    kind: str
    value: int = 0
    partition: int | None = None


def parse_start(text: str) -> StartSpec:
    """One ``-o`` value; ValueError says what was expected."""
    partition = None
    body = text.strip()
    prefix = re.fullmatch(r"([0-9]+):(.+)", body)
    if prefix:
        partition, body = int(prefix[1]), prefix[2]
    word = _WORDS.get(body.lower())
    if word is not None:
        return StartSpec(word, 0, partition)
    if re.fullmatch(r"[0-9]+", body):
        return StartSpec(ABSOLUTE, int(body), partition)
    if re.fullmatch(r"-[0-9]+", body):
        return StartSpec(LAST, -int(body), partition)
    if body.startswith("@") or body.startswith("s@"):
        return StartSpec(TIME, parse_epoch_ms(body.split("@", 1)[1]), partition)
    raise ValueError(f"{text!r} is not beginning, end, an offset N, -N (the last N), @TIME "
                     "(ISO-8601 or ms since the epoch), or P: and one of these for partition P")


class StartType(click.ParamType):
    """click's face of :func:`parse_start`."""

    name = "beginning|end|N|-N|@TIME|P:SPEC"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> StartSpec:
        if isinstance(value, StartSpec):
            return value
        try:
            return parse_start(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def spec_for(specs: tuple[StartSpec, ...], partition: int, default: StartSpec) -> StartSpec:
    """The spec that applies to ``partition``: the one naming it, else the one naming no
    partition, else ``default``."""
    named = [s for s in specs if s.partition == partition]
    if named:
        return named[-1]
    general = [s for s in specs if s.partition is None]
    return general[-1] if general else default


def start_offset(spec: StartSpec, lo: int, hi: int, at_time: int | None) -> int:
    """The offset a 0.8+ partition with offsets [lo, hi) starts at; ``at_time`` is the
    offset a TIME spec resolved to (None: no record at or after it, so the end)."""
    if spec.kind == BEGINNING:
        return lo
    if spec.kind == END:
        return hi
    if spec.kind == LAST:
        return max(lo, hi - spec.value)
    if spec.kind == TIME:
        return hi if at_time is None else min(max(at_time, lo), hi)
    return min(max(spec.value, lo), hi)
