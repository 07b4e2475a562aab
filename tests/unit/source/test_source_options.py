"""Source options beyond subscribe/offsets: one test per rule of Spark's kafka source
(KafkaSourceProvider), parsed without a broker."""

from __future__ import annotations

import logging
import re

import pytest

from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.source.limits import OffsetSpec, TimestampSpec
from spark_kafka_wire.source.options import (
    parse_source_options,
    parse_stream_options,
)
from spark_kafka_wire.source.strategy import Assign, Subscribe, SubscribePattern
from tests.support.errors import raises_condition

SERVERS = {"kafka.bootstrap.servers": "h:9092"}
BASE = {**SERVERS, "subscribe": "a,b"}


def parse(**extra: str):
    return parse_source_options({**BASE, **extra})


def fails(kind: str, options: dict, *facts: str) -> None:
    """The options are refused with the configuration error ``kind`` (protocol/conditions.py),
    the message showing each of ``facts``."""
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}", *facts):
        parse_source_options(options)


# ------------------------------------------------------------------------------ strategies


def test_subscribe_is_a_trimmed_deduplicated_list() -> None:
    o = parse_source_options({**SERVERS, "Subscribe": " a , b,,a "})
    assert o.strategy == Subscribe(("a", "b")) and o.topics == ("a", "b")


def test_subscribe_pattern_is_a_python_regex_found_anywhere() -> None:
    o = parse_source_options({**SERVERS, "subscribePattern": " orders-\\d+ "})
    assert isinstance(o.strategy, SubscribePattern) and o.topics == ()
    assert o.strategy.pattern == "orders-\\d+"
    assert o.strategy.regex.search("eu.orders-12.v2")  # unanchored, like Java's find()
    assert not o.strategy.regex.search("orders-x")


def test_assign_is_json_topic_to_partitions() -> None:
    o = parse_source_options({**SERVERS, "ASSIGN": '{"b":[1,0],"a":[2,2]}'})
    assert o.strategy == Assign((("a", 2), ("b", 0), ("b", 1)))
    assert o.strategy.word == "assigned" and o.topics == ("a", "b")


def test_empty_assignment_is_allowed_as_in_spark() -> None:
    assert parse_source_options({**SERVERS, "assign": "{}"}).strategy == Assign(())


@pytest.mark.parametrize(("options", "kind", "facts"), [
    (SERVERS, "MISSING_OPTION", ["'subscribe', 'subscribePattern' or 'assign'"]),
    ({**BASE, "subscribePattern": "x"}, "CONFLICTING_OPTIONS", ["subscribe, subscribePattern"]),
    ({**SERVERS, "assign": '{"a":[0]}', "subscribePattern": "a"}, "CONFLICTING_OPTIONS",
     ["subscribePattern, assign"]),
    ({**SERVERS, "subscribe": " , "}, "INVALID_VALUE", ["option 'subscribe'", "' , '"]),
    ({**SERVERS, "subscribePattern": "  "}, "INVALID_VALUE", ["'subscribePattern'"]),
    ({**SERVERS, "subscribePattern": "orders-("}, "INVALID_VALUE",
     ["'subscribePattern'", "regular expression"]),
    ({**SERVERS, "assign": "a:0"}, "INVALID_VALUE",
     ["'assign'", r"JSON like \{\"topicA\":\[0,1\]", "'a:0'"]),
    ({**SERVERS, "assign": '{"a":0}'}, "INVALID_VALUE", ["'assign'", "JSON like"]),
    ({**SERVERS, "assign": '{"a":["0"]}'}, "INVALID_VALUE",
     ["partition '0' of 'a'", "partition number"]),
    ({**SERVERS, "assign": '{"a":[-1]}'}, "INVALID_VALUE",
     ["partition -1 of 'a'", "partition number"]),
], ids=["none", "two", "two-others", "empty-subscribe", "empty-pattern", "bad-regex",
        "assign-not-json", "assign-not-list", "assign-string-partition", "assign-negative"])
def test_strategy_errors(options: dict, kind: str, facts: list[str]) -> None:
    fails(kind, options, *facts)


# ------------------------------------------------------------------ timestamps, precedence


def test_starting_timestamp_is_one_value_for_all_partitions() -> None:
    o = parse(startingTimestamp=" 1700000000000 ")
    assert o.starting == TimestampSpec(1700000000000, option="startingTimestamp")
    assert o.starting.for_partitions([("a", 0), ("b", 3)]) == {
        ("a", 0): 1700000000000, ("b", 3): 1700000000000}


def test_offsets_by_timestamp_must_name_every_partition() -> None:
    o = parse(endingOffsetsByTimestamp='{"a":{"0":5,"1":7}}')
    assert o.ending == TimestampSpec(None, {("a", 0): 5, ("a", 1): 7},
                                     option="endingOffsetsByTimestamp", latest_on_no_match=True)
    assert o.ending.for_partitions([("a", 0), ("a", 1)]) == {("a", 0): 5, ("a", 1): 7}
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                          "endingOffsetsByTimestamp", "subscribed partition: it lacks a-2",
                          "not subscribed or do not exist: a-1"):
        o.ending.for_partitions([("a", 0), ("a", 2)])
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                          "assigned partition: it lacks b-0"):
        o.ending.for_partitions([("a", 0), ("a", 1), ("b", 0)], word="assigned")


def test_global_timestamp_wins_over_the_map_which_wins_over_offsets(caplog) -> None:
    # The losers are not even parsed, as in Spark: malformed values do not matter.
    with caplog.at_level(logging.WARNING):
        o = parse(startingTimestamp="10", startingOffsetsByTimestamp="not json",
                  startingOffsets="latest", endingOffsetsByTimestamp='{"a":{"0":20}}',
                  endingOffsets="earliest")
    assert o.starting == TimestampSpec(10, option="startingTimestamp")
    assert o.ending.option == "endingOffsetsByTimestamp" and o.ending.specific == {("a", 0): 20}
    assert "startingTimestamp and startingOffsetsByTimestamp and startingOffsets given" \
        in caplog.text
    o = parse(startingOffsetsByTimestamp='{"a":{"0":3}}', startingOffsets="{")
    assert o.starting.option == "startingOffsetsByTimestamp"
    assert isinstance(parse(startingOffsets="earliest").starting, OffsetSpec)


@pytest.mark.parametrize(("extra", "kind", "facts"), [
    ({"startingTimestamp": "yesterday"}, "INVALID_VALUE",
     ["startingTimestamp", "single long value", "'yesterday'"]),
    ({"endingTimestamp": "1.5"}, "INVALID_VALUE", ["endingTimestamp", "'1.5'"]),
    ({"startingTimestamp": "-1"}, "VALUE_OUT_OF_RANGE", ["startingTimestamp", ">= 0", "-1"]),
    ({"startingOffsetsByTimestamp": '{"a":[1]}'}, "INVALID_VALUE",
     ["startingOffsetsByTimestamp", "JSON like"]),
    ({"startingOffsetsByTimestamp": '{"a":{"0":"1"}}'}, "INVALID_VALUE",
     ["startingOffsetsByTimestamp", "a-0", "an integer"]),
    ({"endingOffsetsByTimestamp": '{"a":{"0":-2}}'}, "VALUE_OUT_OF_RANGE",
     ["endingOffsetsByTimestamp", "a-0", ">= 0", "-2"]),
    ({"startingOffsetsByTimestamp": '{"a":{"x":1}}'}, "INVALID_VALUE",
     ["startingOffsetsByTimestamp", "partition 'x' of 'a'"]),
])
def test_timestamp_errors(extra: dict, kind: str, facts: list[str]) -> None:
    fails(kind, {**BASE, **extra}, *facts)


def test_no_match_strategy() -> None:
    assert parse(startingTimestamp="1").starting.latest_on_no_match is False  # "error"
    assert parse(startingTimestamp="1",
                 startingOffsetsByTimestampStrategy="LATEST").starting.latest_on_no_match
    # An ending timestamp without a match is always latest.
    assert parse(endingTimestamp="1").ending.latest_on_no_match
    fails("UNSUPPORTED_VALUE", {**BASE, "startingOffsetsByTimestampStrategy": "earliest"},
          "startingOffsetsByTimestampStrategy", "'error', 'latest'", "got 'earliest'")


@pytest.mark.parametrize(("extra", "message"), [
    ({"startingOffsets": '{"a":{"0":1}}', "endingOffsets": '{"a":{"1":5}}'},
     "startingOffsets and endingOffsets name different partitions: only in startingOffsets: "
     "a-0; only in endingOffsets: a-1"),
    ({"startingOffsetsByTimestamp": '{"a":{"0":1}}',
      "endingOffsetsByTimestamp": '{"a":{"0":1},"b":{"0":1}}'},
     "name different partitions: only in startingOffsetsByTimestamp: none; only in "
     "endingOffsetsByTimestamp: b-0"),
    ({"startingOffsetsByTimestamp": '{"a":{"0":9}}', "endingOffsetsByTimestamp": '{"a":{"0":2}}'},
     "the starting timestamp 9 of a-0 is after its ending timestamp 2"),
])
def test_start_and_end_maps_must_agree(extra: dict, message: str) -> None:
    fails("CONFLICTING_OPTIONS", {**BASE, **extra}, re.escape(message))


def test_start_after_end_is_only_checked_between_numbers() -> None:
    # -2 / -1 are resolved later; Spark compares only offsets that are both >= 0.
    parse(startingOffsets='{"a":{"0":-2}}', endingOffsets='{"a":{"0":-1}}')
    parse(startingOffsets='{"a":{"0":7}}', endingOffsets='{"a":{"0":-1}}')
    parse(startingOffsets='{"a":{"0":7}}', endingOffsets="latest")
    parse(startingTimestamp="9", endingTimestamp="2")  # nor global timestamps, as in Spark


# ----------------------------------------------------------------------- other options


def test_fail_on_data_loss() -> None:
    assert parse().fail_on_data_loss is True
    assert parse(failOnDataLoss="FALSE").fail_on_data_loss is False
    fails("INVALID_VALUE", {**BASE, "failOnDataLoss": "no"}, "failOnDataLoss", "true or false",
          "'no'")


def test_include_headers() -> None:
    assert parse().include_headers is False
    assert parse(includeHeaders="True").include_headers is True


@pytest.mark.parametrize("name", ["minPartitions", "maxRecordsPerPartition"])
def test_splitting_options_are_positive_integers(name: str) -> None:
    assert parse().min_partitions is None and parse().max_records_per_partition is None
    o = parse(**{name: "7"})
    assert (o.min_partitions if name == "minPartitions" else o.max_records_per_partition) == 7
    fails("VALUE_OUT_OF_RANGE", {**BASE, name: "0"}, f"{name} must be positive", "got 0")
    fails("VALUE_OUT_OF_RANGE", {**BASE, name: "-3"}, f"{name} must be positive", "got -3")
    fails("INVALID_VALUE", {**BASE, name: "many"}, f"{name} must be an integer", "'many'")


def test_isolation_level() -> None:
    assert parse().isolation_level == 0
    assert parse(**{"kafka.isolation.level": "READ_COMMITTED"}).fetch.isolation_level == 1
    fails("UNSUPPORTED_VALUE", {**BASE, "kafka.isolation.level": "serializable"},
          "kafka.isolation.level", "read_uncommitted, read_committed", "'serializable'")


def test_consumer_settings_are_mapped() -> None:
    o = parse(**{"kafka.fetch.max.bytes": "1000", "kafka.max.partition.fetch.bytes": "100",
                 "kafka.fetch.max.wait.ms": "7", "kafka.fetch.min.bytes": "3",
                 "kafka.check.crcs": "false", "kafka.client.id": "job-1",
                 "kafka.request.timeout.ms": "4321", "kafka.default.api.timeout.ms": "9000"})
    f = o.fetch
    assert (f.fetch_max_bytes, f.max_partition_fetch_bytes, f.max_wait_ms, f.min_bytes,
            f.check_crcs) == (1000, 100, 7, 3, False)
    assert o.client.client_id == "job-1" and o.client.request_timeout_ms == 4321
    fails("INVALID_VALUE", {**BASE, "kafka.default.api.timeout.ms": "soon"},
          "kafka.default.api.timeout.ms must be an integer", "'soon'")


def test_poll_timeout_is_checked_and_has_no_effect() -> None:
    """Spark reads kafkaConsumer.pollTimeoutMs as a long and refuses anything else
    (tests/parity/test_batch_read.py); kafkawire takes it without effect, in batches and
    streams."""
    assert parse(**{"kafkaConsumer.pollTimeoutMs": "120000"}) == parse()
    parse_stream_options({**BASE, "kafkaconsumer.polltimeoutms": "5"})
    for options in ({**BASE, "kafkaConsumer.pollTimeoutMs": "soon"},
                    {**BASE, "KAFKACONSUMER.POLLTIMEOUTMS": "soon"}):
        fails("INVALID_VALUE", options, "kafkaConsumer.pollTimeoutMs must be an integer",
              "'soon'")
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                              "kafkaConsumer.pollTimeoutMs"):
            parse_stream_options(options)


def test_fetch_offset_retries_apply_to_the_planner_only() -> None:
    o = parse()
    assert o.planner_client == o.client
    o = parse(**{"fetchOffset.numRetries": "4", "fetchOffset.retryIntervalMs": "250"})
    assert o.planner_client.retries == 3  # Spark counts attempts
    assert o.planner_client.retry_backoff_ms == o.planner_client.retry_backoff_max_ms == 250
    assert o.client.retries == parse().client.retries
    assert o.client.retry_backoff_ms == parse().client.retry_backoff_ms
    fails("VALUE_OUT_OF_RANGE", {**BASE, "fetchOffset.numRetries": "0"},
          "fetchOffset.numRetries must be >= 1", "got 0")
    fails("INVALID_VALUE", {**BASE, "fetchOffset.retryIntervalMs": "1s"},
          "fetchOffset.retryIntervalMs must be an integer", "'1s'")


def test_group_id_options_are_accepted(caplog) -> None:
    assert parse().group_id is None and parse().group_id_prefix == "spark-kafka-relation"
    assert parse(groupIdPrefix="etl").group_id_prefix == "etl"
    with caplog.at_level(logging.WARNING):
        o = parse(**{"kafka.group.id": "g1", "groupIdPrefix": "etl"})
    assert o.group_id == "g1"
    assert "kafka.group.id" in caplog.text and "groupIdPrefix is ignored" in caplog.text


def test_a_streams_group_gets_no_batch_warning(caplog) -> None:
    """kafka.group.id is what a stream's commitOffsets commits for: the batch read's warning
    about sharing a group does not apply there."""
    from spark_kafka_wire.source.options import parse_stream_options

    with caplog.at_level(logging.WARNING):
        o = parse_stream_options({**BASE, "kafka.group.id": "g1", "commitOffsets": "kafka"})
    assert o.group_id == "g1"
    assert "batch read" not in caplog.text


def test_stream_only_options_are_ignored_with_a_warning(caplog) -> None:
    with caplog.at_level(logging.WARNING):
        parse(maxOffsetsPerTrigger="100")
    assert "maxOffsetsPerTrigger option ignored in batch queries" in caplog.text


def test_settings_that_would_break_the_source_stay_rejected() -> None:
    fails("REFUSED_OPTION", {**BASE, "kafka.auto.offset.reset": "latest"},
          "kafka.auto.offset.reset", "set the source option 'startingOffsets'")
    fails("REFUSED_OPTION", {**BASE, "kafka.exclude.internal.topics": "false"},
          "kafka.exclude.internal.topics=false", "subscribePattern never matches internal topics")


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_min_offsets_per_trigger_above_max_is_refused(stream: bool) -> None:
    """Spark's validateGeneralOptions, which batch reads run too."""
    from spark_kafka_wire.source.options import parse_stream_options

    parser = parse_stream_options if stream else parse_source_options
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS",
                          re.escape("minOffsetsPerTrigger (100)"),
                          re.escape("maxOffsetsPerTrigger (10)")):
        parser({**BASE, "minOffsetsPerTrigger": "100", "maxOffsetsPerTrigger": "10"})
    parser({**BASE, "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "10"})


def test_streams_refuse_ending_offsets_and_ignore_ending_timestamp(caplog) -> None:
    """Spark refuses endingOffsets and endingOffsetsByTimestamp in streams and ignores
    endingTimestamp."""
    from spark_kafka_wire.source.options import parse_stream_options

    for name in ("endingOffsets", "endingOffsetsByTimestamp"):
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION",
                              f"option '{name}'", "streaming queries"):
            parse_stream_options({**BASE, name: "latest"})
    with caplog.at_level(logging.WARNING):
        o = parse_stream_options({**BASE, "endingTimestamp": "17"})
    assert "endingTimestamp option ignored in streaming queries" in caplog.text
    assert isinstance(o.starting, OffsetSpec)


def test_a_topic_may_map_to_earliest_or_latest() -> None:
    """SPARK-58774 (after Spark 4.2): {"topicA":"latest","topicB":{"0":23}} in startingOffsets and
    endingOffsets; the word stands for every partition of the topic."""
    o = parse(startingOffsets='{"a":"Earliest","b":{"0":23,"1":-2}}',
              endingOffsets='{"a":{"0":9,"1":-1},"b":"latest"}')
    tps = [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert o.starting.for_partitions(tps) == {("a", 0): -2, ("a", 1): -2, ("b", 0): 23,
                                              ("b", 1): -2}
    assert o.ending.for_partitions(tps) == {("a", 0): 9, ("a", 1): -1, ("b", 0): -1,
                                            ("b", 1): -1}
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                          "startingOffsets", "subscribed partition: it lacks b-1"):
        parse(startingOffsets='{"a":"earliest","b":{"0":23}}').starting.for_partitions(tps)
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                          "startingOffsets", "not subscribed or do not exist: c"):
        parse(startingOffsets='{"a":"earliest","b":"earliest","c":"earliest"}'
              ).starting.for_partitions(tps)


@pytest.mark.parametrize(("extra", "kind", "facts"), [
    ({"startingOffsets": '{"a":"latest"}'}, "UNSUPPORTED_VALUE",
     ["startingOffsets for a", "latest"]),
    ({"endingOffsets": '{"a":"earliest"}'}, "UNSUPPORTED_VALUE",
     ["endingOffsets for a", "earliest"]),
    ({"startingOffsets": '{"a":"soon"}'}, "INVALID_VALUE",
     ["startingOffsets", "topic 'a'", "'soon'"]),
    ({"startingOffsets": '{"a":[1]}'}, "INVALID_VALUE", ["startingOffsets", "JSON like"]),
])
def test_topic_words_follow_the_batch_rules(extra: dict, kind: str, facts: list[str]) -> None:
    fails(kind, {**BASE, **extra}, *facts)


def test_streams_take_topic_words_both_ways() -> None:
    from spark_kafka_wire.source.options import parse_stream_options

    o = parse_stream_options({**BASE, "startingOffsets": '{"a":"latest","b":"earliest"}'})
    assert o.starting.for_partitions([("a", 0), ("b", 0)]) == {("a", 0): -1, ("b", 0): -2}


def test_max_decompressed_bytes() -> None:
    """kafka.fetch.max.decompressed.bytes: unset, derived from the Fetch size; set, taken as
    is by 0.8+ and Kafka 0.7 reads; checked like every byte count."""
    default = parse()
    assert default.fetch.max_decompressed_bytes is None
    assert default.fetch.decompression_limit(1 << 20) == 256 << 20
    assert default.fetch.decompression_limit(16 << 20) == 1 << 30
    o = parse(**{"kafka.fetch.max.decompressed.bytes": "1048576"})
    assert o.fetch.max_decompressed_bytes == 1 << 20
    assert o.fetch.decompression_limit(16 << 20) == 1 << 20
    fails("VALUE_OUT_OF_RANGE", {**BASE, "kafka.fetch.max.decompressed.bytes": "0"},
          "kafka.fetch.max.decompressed.bytes must be >= 1", "got 0")
    fails("INVALID_VALUE", {**BASE, "kafka.fetch.max.decompressed.bytes": "1g"},
          "kafka.fetch.max.decompressed.bytes must be an integer", "'1g'")
