"""Packing small offset ranges into shared tasks (planning.pack_ranges) and how batch and
stream planning use it; no broker needed. The rule is kafkawire's: Spark plans one task per
range, which costs a Python worker's overhead per topic-partition however little it holds."""

from __future__ import annotations

import json
import math
import random

import pytest

from spark_kafka_wire.errors import CheckpointError
from spark_kafka_wire.source import batch_reader
from spark_kafka_wire.source.offsets_json import (
    TASKS_KEY,
    batch_start,
    from_json,
    recorded_tasks,
    with_start,
)
from spark_kafka_wire.source.options import parse_source_options, parse_stream_options
from spark_kafka_wire.source.planning import (
    MIN_TASK_RECORDS,
    PACKED_RECORDS,
    OffsetRange,
    default_task_count,
    pack_ranges,
    sized_task_count,
    split_ranges,
)
from spark_kafka_wire.source.stream_reader import KafkaWireStreamReader
from tests.support.errors import raises_condition


def R(topic: str, partition: int, start: int, end: int) -> OffsetRange:
    return OffsetRange(topic, partition, start, end)


def tiny(n: int, size: int = 10, topic: str = "t") -> list[OffsetRange]:
    return [R(topic, p, 0, size) for p in range(n)]


def flat(groups: list[tuple[OffsetRange, ...]]) -> list[OffsetRange]:
    return [r for g in groups for r in g]


def budget(ranges: list[OffsetRange], target: int, max_records: int | None) -> int:
    total = sum(r.size for r in ranges)
    return max(1, min(math.ceil(total / target),
                      PACKED_RECORDS if max_records is None else max_records))


# --------------------------------------------------------------------------- the rule


def test_many_small_partitions_pack_into_the_target_count_in_order() -> None:
    ranges = tiny(200)  # the measured case: 200 partitions of 10 records
    groups = pack_ranges(ranges, 4)
    assert [len(g) for g in groups] == [50] * 4
    assert flat(groups) == ranges


def test_no_target_turns_packing_off() -> None:
    """A micro-batch planned before packing existed (no recorded task count): as Spark."""
    assert pack_ranges(tiny(20), None) == [(r,) for r in tiny(20)]


def test_one_range_per_partition_turns_packing_off() -> None:
    assert pack_ranges(tiny(20), 2, max_ranges=1) == [(r,) for r in tiny(20)]


def test_no_more_ranges_than_the_target_stay_as_they_are() -> None:
    assert pack_ranges(tiny(4), 4) == [(r,) for r in tiny(4)]


def test_a_huge_range_among_tiny_ones_is_read_alone() -> None:
    ranges = tiny(100) + [R("t", 100, 0, 1_000_000)] + [R("t", p, 0, 10) for p in range(101, 200)]
    groups = pack_ranges(ranges, 4)
    assert (ranges[100],) in groups
    assert [len(g) for g in groups] == [100, 1, 99]
    assert flat(groups) == ranges


def test_large_reads_keep_one_task_per_range() -> None:
    """The planner's CPUs say nothing about a cluster's: ranges of more than half of
    PACKED_RECORDS are not packed, whatever the target."""
    ranges = tiny(200, size=PACKED_RECORDS // 2 + 1)
    assert pack_ranges(ranges, 4) == [(r,) for r in ranges]
    groups = pack_ranges(tiny(200, size=PACKED_RECORDS // 4), 4)
    assert [len(g) for g in groups] == [4] * 50


def test_max_records_per_partition_bounds_a_packed_task() -> None:
    groups = pack_ranges(tiny(200), 4, max_records=35)
    assert [len(g) for g in groups] == [3] * 66 + [2]
    assert all(sum(r.size for r in g) <= 35 for g in groups)


def test_max_records_per_partition_may_raise_the_budget() -> None:
    size = PACKED_RECORDS // 2 + 1
    groups = pack_ranges(tiny(8, size=size), 2, max_records=10 * size)
    assert [len(g) for g in groups] == [4, 4]


def test_max_offset_ranges_per_partition_caps_a_task() -> None:
    groups = pack_ranges(tiny(200), 4, max_ranges=30)
    assert [len(g) for g in groups] == [30] * 6 + [20] and flat(groups) == tiny(200)


def test_never_fewer_tasks_than_min_partitions() -> None:
    # the budget (ceil(1003 / 3) = 335) leaves two tasks: the large range and the three small
    # ones; the fullest packed task is halved to reach minPartitions
    ranges = [R("t", 0, 0, 1000), R("t", 1, 0, 1), R("t", 2, 0, 1), R("t", 3, 0, 1)]
    groups = pack_ranges(ranges, 3, min_partitions=3)
    assert groups == [(ranges[0],), (ranges[1],), (ranges[2], ranges[3])]
    # rounding of the budget alone: five offsets, four tasks at least
    groups = pack_ranges(tiny(5, size=1), 4, min_partitions=4)
    assert len(groups) == 4 and flat(groups) == tiny(5, size=1)


def test_empty_ranges_pack_with_their_neighbours() -> None:
    ranges = [R("t", p, 7, 7) for p in range(50)]
    assert pack_ranges(ranges, 4) == [tuple(ranges)]
    groups = pack_ranges(ranges, 4, min_partitions=3)
    assert [len(g) for g in groups] == [12, 13, 25] and flat(groups) == ranges
    mixed = [R("t", 0, 0, 0), R("t", 1, 0, 500), R("t", 2, 0, 0), R("t", 3, 0, 5),
             R("t", 4, 0, 0)]
    # the large range (at least the budget, ceil(505 / 2)) shares its task with nothing
    assert pack_ranges(mixed, 2) == [(mixed[0],), (mixed[1],), tuple(mixed[2:])]


def test_pieces_of_a_split_partition_stay_in_offset_order() -> None:
    ranges = split_ranges([R("a", 0, 0, 100), R("a", 1, 0, 3), R("b", 0, 0, 4)], None, 10)
    groups = pack_ranges(ranges, 3)
    assert flat(groups) == ranges
    a0 = [r for r in flat(groups) if (r.topic, r.partition) == ("a", 0)]
    assert [r.start for r in a0] == list(range(0, 100, 10))


def test_default_task_count_is_twice_the_usable_cpus() -> None:
    tasks = default_task_count()
    assert tasks >= 2 and tasks % 2 == 0


@pytest.mark.parametrize("seed", range(200))
def test_packing_properties(seed: int) -> None:
    """Deterministic, every range in exactly one task and in order, caps respected, never below
    minPartitions, and about the target when nothing else binds."""
    rnd = random.Random(seed)
    ranges = []
    for t in range(rnd.randint(1, 3)):
        for p in range(rnd.choice([1, 2, 5, 40, 300])):
            start = rnd.randint(0, 10**6)
            size = rnd.choice([0, 0, 1, 3, 10, 10, 50, 999, 20_000, 150_000, 10**7])
            ranges.append(R(f"t{t}", p, start, start + size))
    pieces = split_ranges(ranges, rnd.choice([None, None, 2, 10, 500]),
                          rnd.choice([None, None, 60_000]))
    target = rnd.choice([1, 2, 4, 16, 64, 1000])
    min_parts = rnd.choice([None, None, target])
    max_records = rnd.choice([None, None, 5, 1000, 10**6])
    max_ranges = rnd.choice([None, None, 1, 2, 17])

    groups = pack_ranges(pieces, target, min_parts, max_records, max_ranges)
    assert groups == pack_ranges(list(pieces), target, min_parts, max_records, max_ranges)
    assert flat(groups) == pieces and all(groups)
    floor = min(min_parts, len(pieces)) if min_parts is not None else 0
    assert len(groups) >= floor
    if max_ranges is not None:
        assert all(len(g) <= max_ranges for g in groups)
    if max_ranges == 1 or len(pieces) <= target:
        assert len(groups) == len(pieces)
        return
    limit = budget(pieces, target, max_records)
    for g in groups:
        if len(g) > 1:  # packed: within the budget, and no large range inside
            assert sum(r.size for r in g) <= limit
            assert all(r.size < limit for r in g)
    if max_ranges is None and len(groups) > floor:
        # next-fit: two neighbouring packed tasks hold more than the budget together
        large = sum(r.size >= limit for r in pieces)
        total = sum(r.size for r in pieces)
        assert len(groups) <= 2 * total / limit + 2 * large + 1


@pytest.mark.parametrize("seed", range(100))
def test_min_partitions_floor_properties(seed: int) -> None:
    """Few offsets in many ranges, or one range holding most of them: the budget alone would
    leave fewer tasks than minPartitions, and halving the fullest tasks makes up for it."""
    rnd = random.Random(seed)
    n = rnd.randint(3, 120)
    ranges = [R("t", p, 5, 5 + rnd.choice([0, 0, 1, 1, 2, 3])) for p in range(n)]
    if rnd.random() < 0.5:
        ranges[rnd.randrange(n)] = R("t", 999, 0, 10_000)
        ranges.sort(key=lambda r: (r.topic, r.partition, r.start))
    min_parts = rnd.randint(2, n + 5)
    max_ranges = rnd.choice([None, 3])
    groups = pack_ranges(ranges, min_parts, min_parts, None, max_ranges)
    assert groups == pack_ranges(ranges, min_parts, min_parts, None, max_ranges)
    assert flat(groups) == ranges
    assert len(groups) >= min(min_parts, n)
    limit = budget(ranges, min_parts, None)
    for g in groups:
        assert max_ranges is None or len(g) <= max_ranges
        if len(g) > 1:
            assert sum(r.size for r in g) <= limit and all(r.size < limit for r in g)


# ---------------------------------------------------------------------- batch planning


def _batch(monkeypatch, ranges: list[OffsetRange], default_tasks: int | None, **options: str):
    opts = parse_source_options({"kafka.bootstrap.servers": "h:9092", "subscribe": "t",
                                 **options})
    monkeypatch.setattr(batch_reader, "plan_ranges", lambda client, o: list(ranges))
    return batch_reader.KafkaWireBatchReader(opts, default_tasks).partitions()


def test_a_batch_read_packs_for_the_data_sources_task_count(monkeypatch) -> None:
    ranges = tiny(200, size=1_000)  # 200,000 offsets: worth the 4 default tasks
    parts = _batch(monkeypatch, ranges, 4)
    assert [len(p.ranges) for p in parts] == [50] * 4
    assert [p.value for p in parts] == [0, 1, 2, 3]
    assert [r for p in parts for r in p.ranges] == ranges
    assert repr(parts[0]) == ("KafkaInputPartition(t-0 [0, 1000), t-1 [0, 1000), "
                              "t-2 [0, 1000), ... 47 more)")


def test_a_small_read_takes_fewer_tasks_than_the_default(monkeypatch) -> None:
    """A task costs tens of milliseconds whatever it reads: fewer than MIN_TASK_RECORDS
    offsets per task of the default count means fewer tasks; minPartitions still rules."""
    assert sized_task_count(2_000, 200, 4) == 1
    assert sized_task_count(0, 5, 4) == 1
    assert sized_task_count(MIN_TASK_RECORDS * 2 + 1, 64, 4) == 3
    assert sized_task_count(10**9, 64, 4) == 4 and sized_task_count(10**9, 64, None) is None
    assert sized_task_count(30, 3, 4) == 4  # no more ranges than tasks: a task each, as in Spark
    assert [len(p.ranges) for p in _batch(monkeypatch, tiny(3), 4)] == [1, 1, 1]
    parts = _batch(monkeypatch, tiny(200), 4)  # 2,000 offsets: one task
    assert [len(p.ranges) for p in parts] == [200]
    assert [len(p.ranges) for p in _batch(monkeypatch, tiny(200), 4, minPartitions="4")] == \
        [50] * 4


def test_a_batch_read_aims_at_min_partitions_when_given(monkeypatch) -> None:
    parts = _batch(monkeypatch, tiny(200), 4, minPartitions="10")
    assert [len(p.ranges) for p in parts] == [20] * 10


def test_a_batch_read_without_packing_plans_one_task_per_range(monkeypatch) -> None:
    assert [p.ranges for p in _batch(monkeypatch, tiny(50), 4,
                                     maxOffsetRangesPerPartition="1")] == \
        [(r,) for r in tiny(50)]
    assert len(_batch(monkeypatch, tiny(50), None)) == 50


def test_an_empty_batch_read_still_has_one_task(monkeypatch) -> None:
    parts = _batch(monkeypatch, [], 4)
    assert len(parts) == 1 and [r.size for r in parts[0].ranges] == [0]


def test_the_option_is_a_positive_count() -> None:
    from spark_kafka_wire.errors import ConfigurationError

    base = {"kafka.bootstrap.servers": "h:9092", "subscribe": "t"}
    assert parse_source_options(
        {**base, "maxoffsetrangesperpartition": "3"}).max_ranges_per_partition == 3
    assert parse_source_options(base).max_ranges_per_partition is None
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE",
                          "maxOffsetRangesPerPartition must be positive", "got 0"):
        parse_source_options({**base, "maxOffsetRangesPerPartition": "0"})


# --------------------------------------------------------------------- stream planning


def _stream(default_tasks: int | None = None, **options: str) -> KafkaWireStreamReader:
    return KafkaWireStreamReader(parse_stream_options(
        {"kafka.bootstrap.servers": "h:9092", "subscribe": "t", **options}), default_tasks)


START = {"t": {str(p): 0 for p in range(40)}}
END = {"t": {str(p): 10 if p % 4 else 0 for p in range(40)}}  # every fourth one is empty


def test_a_micro_batch_packs_for_the_task_count_its_end_recorded() -> None:
    # the reader's own count (64) does not matter: the end's does, wherever it was planned
    parts = _stream(64).partitions(START, {**END, TASKS_KEY: 3})
    assert [len(p.ranges) for p in parts] == [10, 10, 10]
    assert all(r.size == 10 for p in parts for r in p.ranges)  # empty ranges left out
    unpacked = _stream(64).partitions(START, END)  # an end written before packing existed
    assert [r for p in parts for r in p.ranges] == [r for p in unpacked for r in p.ranges]
    assert [len(p.ranges) for p in unpacked] == [1] * 30


def test_a_micro_batch_respects_min_partitions_and_the_cap() -> None:
    end = {**END, TASKS_KEY: 3}
    assert len(_stream(minPartitions="6").partitions(START, end)) == 6
    assert len(_stream(maxOffsetRangesPerPartition="4").partitions(START, end)) == 8
    assert len(_stream(maxOffsetRangesPerPartition="1").partitions(START, end)) == 30


def test_the_reader_records_its_task_count_unless_packing_is_off() -> None:
    assert _stream(6)._tasks == 6
    assert _stream(6, maxOffsetRangesPerPartition="1")._tasks is None
    assert _stream(None)._tasks is None


def test_the_recorded_task_count_is_not_an_offset() -> None:
    end = with_start({("t", 0): 9}, {("t", 0): 2}, tasks=8)
    assert json.dumps(end) == '{"t": {"0": 9}, "@start": {"t": {"0": 2}}, "@tasks": 8}'
    assert from_json(end) == {("t", 0): 9} and recorded_tasks(end) == 8
    assert batch_start({"t": {"0": 1}, TASKS_KEY: 4}, end) == {("t", 0): 2}
    assert recorded_tasks({"t": {"0": 9}}) is None
    for damaged in ("8", 0, -1, True, 2**31, [3]):
        with raises_condition(CheckpointError, "KAFKAWIRE_CHECKPOINT",
                              r"@tasks is .*not a task count"):
            recorded_tasks({"t": {"0": 9}, TASKS_KEY: damaged})
