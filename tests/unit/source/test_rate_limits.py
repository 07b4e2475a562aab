"""Rate limits for micro-batches, against the semantics of Spark's kafka source."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.source.rate_limits import available, hold_back, parse_duration_ms, rate_limit
from tests.support.errors import raises_condition

A, B, C = ("t", 0), ("t", 1), ("u", 0)


def test_prorated_by_backlog() -> None:
    # backlogs 900 and 100 share a cap of 100: 90 and 10
    assert rate_limit(100, {A: 0, B: 50}, {A: 900, B: 150}) == {A: 90, B: 60}


def test_small_partitions_are_rounded_up_not_starved() -> None:
    # B's share is 1000 * 1/100001 < 1: rounded up to 1; A's share rounded down
    out = rate_limit(1000, {A: 0, B: 0}, {A: 100_000, B: 1})
    assert out == {A: 999, B: 1}


def test_partitions_without_backlog_and_caps() -> None:
    assert rate_limit(10, {A: 5, B: 7}, {A: 5, B: 7}) == {A: 5, B: 7}  # nothing new
    assert rate_limit(10**9, {A: 0, B: 3}, {A: 4, B: 3}) == {A: 4, B: 3}  # cap above backlog
    assert rate_limit(3, {A: 0, C: 0}, {A: 2, C: 0}) == {A: 2, C: 0}


@given(st.integers(1, 10**6), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1, max_size=8))
def test_never_past_latest_never_backwards(limit: int, spans: list[tuple[int, int]]) -> None:
    start = {("t", i): min(a, b) for i, (a, b) in enumerate(spans)}
    latest = {("t", i): max(a, b) for i, (a, b) in enumerate(spans)}
    out = rate_limit(limit, start, latest)
    for tp in latest:
        assert start[tp] <= out[tp] <= latest[tp]
    moved = sum(out[tp] - start[tp] for tp in latest)
    assert moved <= limit + len(latest)  # rounding up gives each partition at most one extra
    if available(start, latest) > 0:
        assert moved > 0


def test_hold_back_until_enough_or_delay_passed() -> None:
    """Spark's delayBatch: (wait?, when a trigger last went through)."""
    start, latest = {A: 0}, {A: 5}
    assert hold_back(10, start, latest, 600, max_trigger_delay_ms=1000, now_ms=1500) == (True, 600)
    assert hold_back(10, start, latest, 500, max_trigger_delay_ms=1000, now_ms=1500) == (False, 1500)
    assert hold_back(5, start, latest, 1400, max_trigger_delay_ms=1000, now_ms=1500) == (False, 1500)
    # The clock starts at 0: a query's first trigger goes through, data or not, and restarts it.
    assert hold_back(10, start, start, 0, max_trigger_delay_ms=1000, now_ms=1500) == (False, 1500)


@pytest.mark.parametrize("text,ms", [("15m", 900_000), ("30s", 30_000), ("500ms", 500), ("2h", 7_200_000), ("250", 250), ("1 min", 60_000)])
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text, "maxTriggerDelay") == ms


def test_bad_duration() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                          "maxTriggerDelay must be a duration", "'soon'"):
        parse_duration_ms("soon", "maxTriggerDelay")
