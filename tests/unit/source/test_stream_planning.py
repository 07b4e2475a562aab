"""How a micro-batch's ranges are planned from its start and end offsets, and the data loss
Spark's KafkaMicroBatchStream reports there (getOffsetRangesFromResolvedOffsets): partitions
deleted, offsets gone back, new partitions not starting at 0. No broker: every offset is in the
offsets Spark hands over."""

from __future__ import annotations

import logging
import re

import pytest

from spark_kafka_wire.errors import DataLossError
from spark_kafka_wire.source.offsets_json import START_KEY
from spark_kafka_wire.source.options import parse_stream_options
from spark_kafka_wire.source.stream_reader import KafkaWireStreamReader
from tests.support.errors import assert_condition, raises_condition


def _reader(fail_on_data_loss: bool) -> KafkaWireStreamReader:
    return KafkaWireStreamReader(parse_stream_options({
        "kafka.bootstrap.servers": "h:9092", "subscribe": "t",
        "failOnDataLoss": str(fail_on_data_loss).lower()}))


def _spans(parts) -> list[tuple[str, int, int, int]]:
    return [(r.topic, r.partition, r.start, r.end) for p in parts for r in p.ranges]


CASES = {
    "offset-changed": (
        {"t": {"0": 5, "1": 100}}, {"t": {"0": 8, "1": 10}},
        "Partition t-1's offset was changed from 100 to 10, some data may have been missed. "
        "This could either be a user error that the start offset is set too high and this is "
        "the first batch, or the Kafka topic-partition is broken",
        "the next one starts at offset 10", [("t", 0, 5, 8)]),
    "added-partition-not-at-0": (
        {"t": {"0": 5}}, {"t": {"0": 8, "1": 9}, START_KEY: {"t": {"1": 4}}},
        "Added partition t-1 starts from 4 instead of 0. Some data may have been missed",
        "offsets [0, 4) are skipped", [("t", 0, 5, 8), ("t", 1, 4, 9)]),
    "partition-deleted": (
        {"t": {"0": 5, "1": 3}}, {"t": {"0": 8}},
        "Partitions t-1 have been deleted", "beyond the offsets already read is skipped",
        [("t", 0, 5, 8)]),
}


#: the condition each case's DataLossError carries (Spark's KAFKA_DATA_LOSS sub-conditions)
CONDITIONS = {
    "offset-changed": "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED",
    "added-partition-not-at-0": "KAFKA_DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO",
    "partition-deleted": "KAFKA_DATA_LOSS.PARTITIONS_DELETED",
}


@pytest.mark.parametrize("case", CASES)
def test_data_loss_fails_the_batch(case: str) -> None:
    start, end, what, _, _ = CASES[case]
    with raises_condition(DataLossError, CONDITIONS[case],
                          r"in streaming source .*" + re.escape(what)
                          + r".*set the source option failOnDataLoss to false") as caught:
        _reader(True).partitions(start, end)
    assert caught.value.topic == "t" and caught.value.partition == 1
    assert_condition(caught.value, CONDITIONS[case])


@pytest.mark.parametrize("case", CASES)
def test_without_fail_on_data_loss_the_batch_says_what_it_skips(case: str, caplog) -> None:
    start, end, what, skipped, ranges = CASES[case]
    with caplog.at_level(logging.WARNING):
        parts = _reader(False).partitions(start, end)
    assert _spans(parts) == ranges
    assert what in caplog.text and skipped in caplog.text
    assert "failOnDataLoss is false" in caplog.text


def test_a_new_partition_from_offset_0_is_no_loss(caplog) -> None:
    with caplog.at_level(logging.WARNING):
        parts = _reader(True).partitions({"t": {"0": 5}},
                                         {"t": {"0": 8, "1": 3}, START_KEY: {"t": {"1": 0}}})
    assert _spans(parts) == [("t", 0, 5, 8), ("t", 1, 0, 3)] and not caplog.text

