"""Splitting of planned offset ranges (minPartitions, maxRecordsPerPartition), as Spark's
KafkaOffsetRangeCalculator does it; no broker needed."""

from __future__ import annotations

import random
import re

import pytest

from spark_kafka_wire.source.planning import OffsetRange, is_internal_topic, split_ranges
from tests.support.errors import raises_condition


def R(topic: str, partition: int, start: int, end: int) -> OffsetRange:
    return OffsetRange(topic, partition, start, end)


def spans(ranges: list[OffsetRange]) -> list[tuple[str, int, int, int]]:
    return [(r.topic, r.partition, r.start, r.end) for r in ranges]


def test_nothing_set_keeps_one_range_per_partition_including_empty_ones() -> None:
    ranges = [R("t", 0, 0, 100), R("t", 1, 5, 5)]
    assert split_ranges(ranges, None, None) == ranges


def test_min_partitions_not_above_the_partition_count_splits_nothing() -> None:
    # Spark's gate counts every topic-partition, empty ones included.
    ranges = [R("t", 0, 0, 0), R("t", 1, 0, 0), R("t", 2, 0, 90)]
    assert split_ranges(ranges, 3, None) == ranges


def test_min_partitions_splits_one_partition_evenly() -> None:
    assert spans(split_ranges([R("t", 0, 1, 17)], 4, None)) == [
        ("t", 0, 1, 5), ("t", 0, 5, 9), ("t", 0, 9, 13), ("t", 0, 13, 17)]


def test_min_partitions_drops_empty_ranges_once_splitting() -> None:
    out = split_ranges([R("t", 0, 0, 0), R("t", 1, 3, 3), R("t", 2, 0, 9)], 4, None)
    assert spans(out) == [("t", 2, 0, 2), ("t", 2, 2, 4), ("t", 2, 4, 6), ("t", 2, 6, 9)]


def test_min_partitions_splits_in_proportion_and_leaves_small_ranges_whole() -> None:
    # 4/24 of 3 parts rounds (half up) to 1: the small range stays whole; the large one gets
    # the remaining 3 - 1 = 2 parts.
    out = split_ranges([R("a", 0, 1, 5), R("b", 0, 1, 21)], 3, None)
    assert spans(out) == [("a", 0, 1, 5), ("b", 0, 1, 11), ("b", 0, 11, 21)]
    out = split_ranges([R("a", 0, 0, 10), R("a", 1, 0, 30), R("a", 2, 0, 60)], 10, None)
    assert [r.size for r in out] == [10] * 10  # 1 + 3 + 6 pieces


def test_max_records_per_partition_caps_every_piece() -> None:
    out = split_ranges([R("t", 0, 0, 10), R("t", 1, 0, 3), R("t", 2, 4, 4)], None, 3)
    assert spans(out) == [("t", 0, 0, 2), ("t", 0, 2, 4), ("t", 0, 4, 7), ("t", 0, 7, 10),
                          ("t", 1, 0, 3)]


def test_max_records_not_exceeded_splits_nothing() -> None:
    ranges = [R("t", 0, 0, 3), R("t", 1, 0, 0)]
    assert split_ranges(ranges, None, 3) == ranges


def test_both_options_cut_by_max_records_then_up_to_min_partitions() -> None:
    out = split_ranges([R("a", 0, 0, 100), R("b", 0, 0, 10)], 5, 50)
    assert spans(out) == [("a", 0, 0, 25), ("a", 0, 25, 50), ("a", 0, 50, 75),
                          ("a", 0, 75, 100), ("b", 0, 0, 10)]


@pytest.mark.parametrize("seed", range(30))
def test_pieces_tile_each_range_exactly(seed: int) -> None:
    rnd = random.Random(seed)
    ranges = []
    for p in range(rnd.randint(1, 6)):
        start = rnd.randint(0, 1000)
        ranges.append(R("t", p, start, start + rnd.choice([0, 1, 2, 7, 100, 12345])))
    min_parts = rnd.choice([None, 1, 3, 8, 50])
    max_records = rnd.choice([None, 1, 5, 1000])
    out = split_ranges(ranges, min_parts, max_records)
    for r in ranges:
        mine = [q for q in out if q.partition == r.partition]
        if r.size == 0:
            assert all(q.size == 0 for q in mine)
            continue
        assert mine[0].start == r.start and mine[-1].end == r.end
        assert all(a.end == b.start for a, b in zip(mine, mine[1:], strict=False))
        if max_records is not None:
            assert all(q.size <= max_records for q in mine)


# ------------------------------------------------------------------ start after the end


def _plan(monkeypatch, starts: dict, ends: dict, **options: str):
    """plan_ranges with the partitions and resolved offsets given (no broker)."""
    from spark_kafka_wire.client.metadata.cluster import KafkaClient
    from spark_kafka_wire.client.metadata.cluster_adapters import KafkaCluster
    from spark_kafka_wire.source import planning
    from spark_kafka_wire.source.options import parse_source_options

    opts = parse_source_options({"kafka.bootstrap.servers": "h:9092", "subscribe": "t",
                                 **options})
    monkeypatch.setattr(planning, "assigned_partitions", lambda client, strategy: sorted(starts))
    monkeypatch.setattr(planning, "resolve_limit",
                        lambda client, limit, tps, word, iso, is_start:
                        starts if is_start else ends)
    return planning.plan_ranges(KafkaCluster(KafkaClient(opts.client)), opts)


@pytest.mark.parametrize("split", [{}, {"minPartitions": "8"}, {"maxRecordsPerPartition": "2"}],
                         ids=["whole", "minPartitions", "maxRecordsPerPartition"])
def test_a_start_after_the_end_fails_the_read(monkeypatch, split: dict) -> None:
    """Spark fails such a read (RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET; before 4.1 the
    task's "Beginning offset ... is after the ending offset ..."), whatever failOnDataLoss
    says; kafkawire fails while planning, before any task starts."""
    from spark_kafka_wire.errors import ConfigurationError, StartAfterEndError

    starts, ends = {("t", 0): 4, ("t", 1): 100}, {("t", 0): 9, ("t", 1): 10}
    with raises_condition(StartAfterEndError, "KAFKAWIRE_CONFIGURATION.RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET",
                          re.escape(
            "Beginning offset 100 (startingOffsets) is after the ending offset 10 "
            "(endingOffsets) for topic t partition 1: the resolved start offset is greater "
            "than the resolved end offset")) as caught:
        _plan(monkeypatch, starts, ends, failOnDataLoss="false",
              startingOffsets='{"t":{"0":4,"1":100}}', **split)
    e = caught.value
    assert isinstance(e, ConfigurationError)
    assert e.condition == "KAFKAWIRE_CONFIGURATION.RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET"
    assert (e.topic, e.partition, e.start, e.end) == ("t", 1, 100, 10)


def test_the_error_names_the_options_the_offsets_came_from(monkeypatch) -> None:
    from spark_kafka_wire.errors import StartAfterEndError

    with raises_condition(StartAfterEndError, "KAFKAWIRE_CONFIGURATION.RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET",
                          r"Beginning offset 6 \(startingTimestamp\) is "
                                                 r"after the ending offset 2 \(endingTimestamp\)"):
        _plan(monkeypatch, {("t", 0): 6}, {("t", 0): 2}, startingTimestamp="800",
              endingTimestamp="300")


def test_a_start_at_the_end_reads_nothing(monkeypatch) -> None:
    assert spans(_plan(monkeypatch, {("t", 0): 10}, {("t", 0): 10})) == [("t", 0, 10, 10)]


def test_patterns_leave_out_kafkas_own_topics_only() -> None:
    """Spark's subscribePattern reads every topic the broker does not flag internal, a user
    topic named ``__x`` included (tests/parity/test_batch_read.py); Kafka's own topics stay
    out also where a broker does not flag them (Tansu)."""
    assert is_internal_topic("anything", True)
    for name in ("__consumer_offsets", "__transaction_state", "__share_group_state"):
        assert is_internal_topic(name, False)
    for name in ("__pat.a", "__consumer_offsets2", "_consumer_offsets", "t"):
        assert not is_internal_topic(name, False)
