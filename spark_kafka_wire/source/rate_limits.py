"""Admission control for micro-batches, with the semantics of Spark's kafka source.

``maxOffsetsPerTrigger`` caps a batch by prorating the cap over partitions in proportion to
their backlog; a share below one offset is rounded up (small partitions are never starved),
larger shares are rounded down. ``minOffsetsPerTrigger`` holds a batch back until enough new
offsets exist, unless ``maxTriggerDelay`` has passed since a trigger last went through (a
query's first trigger always goes through).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from spark_kafka_wire.client.errors import INVALID_VALUE, VALUE_OUT_OF_RANGE, ConfigurationError
from spark_kafka_wire.client.metadata.cluster import TopicPartition
from spark_kafka_wire.protocol.primitives import INT64_MAX

# Spark's time units (JavaUtils.timeStringAsMs) as (numerator, denominator) of a millisecond.
_UNITS_MS = {"us": (1, 1000), "ms": (1, 1), "s": (1000, 1), "sec": (1000, 1),
             "m": (60_000, 1), "min": (60_000, 1), "h": (3_600_000, 1), "d": (86_400_000, 1)}
MAX_DURATION_MS = INT64_MAX  # Spark holds durations in a long


def parse_duration_ms(text: str, option: str) -> int:
    """Spark's time strings: ``15m``, ``30s``, ``500ms``, ``1h``; a bare number means ms."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([a-z]*)\s*", text.lower())
    if not m or (m.group(2) and m.group(2) not in _UNITS_MS):
        raise ConfigurationError.of(
            INVALID_VALUE, option=option, expected="a duration like 15m, 30s or 500ms",
            got=repr(text[:60]))
    num, den = _UNITS_MS[m.group(2) or "ms"]
    digits = m.group(1).lstrip("0") or "0"
    if len(digits) > 25 or int(digits) * num // den > MAX_DURATION_MS:
        raise ConfigurationError.of(
            VALUE_OUT_OF_RANGE, "DURATION_TOO_LONG", option=option,
            max_duration_ms=MAX_DURATION_MS, text=text[:60])
    return int(digits) * num // den


def rate_limit(
    limit: int, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """End offsets of the next batch: at most about ``limit`` offsets past ``start`` in all,
    shared in proportion to each partition's backlog. ``start`` must cover every partition of
    ``latest`` (new partitions start at their earliest offset)."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if end - start[tp] > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(latest)
    out: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = end
            continue
        share = limit * (size / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, start[tp] + step)
    return out


def available(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]) -> int:
    """New offsets past ``start`` (partitions new to ``start`` count from 0)."""
    return sum(max(0, end - start.get(tp, 0)) for tp, end in latest.items())


def hold_back(
    min_offsets: int,
    start: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    last_trigger_ms: float,
    max_trigger_delay_ms: int,
    now_ms: float,
) -> tuple[bool, float]:
    """(whether the next batch should wait for more data, when a trigger last went through),
    Spark's delayBatch: once ``max_trigger_delay_ms`` has passed since ``last_trigger_ms`` the
    trigger goes through (even with no new data, which then makes no batch) and the clock
    restarts; before, it goes through only with at least ``min_offsets`` new offsets."""
    if now_ms - last_trigger_ms >= max_trigger_delay_ms:
        return False, now_ms
    if available(start, latest) < min_offsets:
        return True, last_trigger_ms
    return False, now_ms
