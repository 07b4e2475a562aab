"""Batch reads, Spark's ``kafka`` format beside ``kafkawire``: the same options on the same
topics, DataFrames compared row for row (schema, types and nullability included).

Topics are made once per module and shared; records come from librdkafka. The task split of a
read may differ (kafkawire packs small ranges into shared tasks, docs/parity.md): rows are
compared, and the task layouts only where docs/parity.md promises them equal. Errors and the
deliberate differences are in test_batch_read_errors.py.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest

from spark_kafka_wire.client.metadata.admin import create_topics, delete_topics
from spark_kafka_wire.protocol.messages import DELETE_RECORDS
from tests.parity.batch_support import (
    B,
    assert_same_facts,
    layout,
    make_topic,
    produce,
    tasks,
)
from tests.parity.both import assert_same_rows, fail_both, read, read_both, read_same
from tests.support.librdkafka import produce_timestamped
from tests.support.transactions import committed_aborted_committed, committed_then_open

J = json.dumps


@pytest.fixture(scope="module")
def base(bootstrap, client) -> str:
    """3 partitions of 4 records (keys, values, CreateTime B+i)."""
    topic = make_topic(client, 3, "pb-base")
    produce(bootstrap, topic, [{"key": b"k%d" % i, "value": b"v%d" % i, "partition": i % 3,
                                "timestamp": B + i} for i in range(12)], linger_ms=20)
    return topic


# ---------------------------------------------------------------------------- strategies


@pytest.fixture(scope="module")
def pattern_topics(bootstrap, client) -> tuple[str, ...]:
    """Topics .a (2 partitions), .b, .c and a user topic named __...a (not internal)."""
    uid = uuid.uuid4().hex[:10]
    names = (f"pb{uid}.a", f"eu.pb{uid}.b", f"pb{uid}.c", f"__pb{uid}.a")
    create_topics(client, [(names[0], 2)] + [(n, 1) for n in names[1:]])
    for t in names:
        produce(bootstrap, t, [{"value": b"%s-%d" % (t.encode(), i),
                                "partition": i % (2 if t == names[0] else 1)}
                               for i in range(4)], linger_ms=20)
    return names


def test_subscribe_several_topics(spark, bootstrap, pattern_topics):
    a, b, _, _ = pattern_topics
    assert len(read_same(spark, bootstrap, subscribe=f"{a}, {b},{a}")) == 8


def test_subscribe_pattern_reads_matching_topics_only(spark, bootstrap, pattern_topics):
    """Unanchored: eu.pb...b matches; pb...c does not; __pb...a, a user topic, matches (a
    kafkawire fix: it used to leave out every topic named __...)."""
    a, b, c, user = pattern_topics
    uid = re.escape(a[2:12])
    rows = read_same(spark, bootstrap, subscribePattern=f"pb{uid}\\.[ab]")
    assert {r.topic for r in rows} == {a, b, user} and len(rows) == 12
    assert read_same(spark, bootstrap, subscribePattern=f"^nothing-{uid}$") == []
    # Kafka's own topics are read by neither
    assert read_same(spark, bootstrap, subscribePattern="^__consumer_offsets$") == []


@pytest.mark.parametrize("options", [
    {"assign": {"_": [2, 0]}},
    {"assign": {"_": [2, 0]}, "startingOffsets": {"_": {"0": 1, "2": -2}},
     "endingOffsets": {"_": {"0": 3, "2": -1}}},
    {"assign": {"_": [1, 9]}},  # partition 9 does not exist: left out by both
    {"assign": {"_": [0, 0]}},
    {"assign": {"_": []}},
    {"assign": {}},
], ids=["subset", "subset-offsets", "missing-partition", "duplicate", "no-partition", "empty"])
def test_assign(spark, bootstrap, base, options):
    given = {k: J({base if t == "_" else t: v for t, v in o.items()}) for k, o in options.items()}
    spark_df, wire_df = read_both(spark, bootstrap, **given)
    assert_same_rows(spark_df, wire_df)
    # task counts (reported, not promised): an empty read is 0 tasks in Spark, 1 here
    print(options, "tasks:", tasks(spark_df), tasks(wire_df))


# ------------------------------------------------------------------------------- offsets


@pytest.mark.parametrize("options", [
    {"startingOffsets": "earliest", "endingOffsets": "latest"},
    {"startingOffsets": " EARLIEST ", "endingOffsets": "Latest"},
    {"startingOffsets": {"0": -2, "1": -2, "2": 2}, "endingOffsets": {"0": -1, "1": 3, "2": -1}},
    {"startingOffsets": {"0": 1, "1": 0, "2": 3}},
    {"endingOffsets": {"0": 2, "1": 4, "2": 0}},
    {"startingOffsets": {"0": 4, "1": 2, "2": 0}, "endingOffsets": {"0": 4, "1": 2, "2": 0}},
    {"STARTINGOFFSETS": {"0": 2, "1": 2, "2": 2}, "EndingOffsets": {"0": 3, "1": 4, "2": 2}},
    # Spark's consumer waits for the missing offsets for kafkaConsumer.pollTimeoutMs
    {"endingOffsets": {"0": 40, "1": 3, "2": -1}, "failOnDataLoss": "false",
     "kafkaConsumer.pollTimeoutMs": "1000"},
], ids=["words", "words-case", "json-2-1", "explicit-start", "explicit-end", "start-is-end",
        "keys-any-case", "end-beyond-log-lenient"])
def test_offsets(spark, bootstrap, base, options):
    given = {k: v if isinstance(v, str) else J({base: v}) for k, v in options.items()}
    read_same(spark, bootstrap, subscribe=base, **given)


def test_offsets_of_several_topics(spark, bootstrap, base, pattern_topics):
    b = pattern_topics[1]
    rows = read_same(spark, bootstrap, subscribe=f"{base},{b}",
                     startingOffsets=J({base: {"0": 1, "1": -2, "2": 3}, b: {"0": 2}}),
                     endingOffsets=J({base: {"0": 3, "1": -1, "2": -1}, b: {"0": -1}}))
    assert len(rows) == 2 + 4 + 1 + 2


def test_end_beyond_the_log_is_data_loss(spark, bootstrap, base):
    """failOnDataLoss=true: an explicit end past the partition's end fails both, in a task."""
    errors = fail_both(lambda fmt: read(spark, fmt, bootstrap, subscribe=base,
                                        endingOffsets=J({base: {"0": 40, "1": 3, "2": -1}}),
                                        **{"kafkaConsumer.pollTimeoutMs": "1000"}).collect())
    assert_same_facts(errors, tps=[(base, 0)], numbers=[4, 40],
                      words=["Some data may have been lost", "failOnDataLoss"])


# ---------------------------------------------------------------------------- timestamps

# partition 0: 5 one-record batches, then one batch of 4 (700 after 800); partition 1: one
# batch. Equal timestamps at offsets 2 and 3 of partition 0.
@pytest.fixture(scope="module")
def ts_topic(bootstrap, client) -> str:
    topic = make_topic(client, 2, "pb-ts")
    produce_timestamped(bootstrap, topic, B)
    return topic


def _ts(topic: str, value: dict[str, int]) -> str:
    return J({topic: {p: B + t for p, t in value.items()}})


TIMESTAMP_CASES = {
    "start": {"startingTimestamp": 300},  # equal timestamps: the first of them
    "start-0": {"startingTimestamp": -B},  # 0: every record
    "start-map-equal": {"startingOffsetsByTimestamp": {"0": 300, "1": 300}},
    "end-no-match-is-latest": {"endingTimestamp": 700},  # p1: none at or after 700
    "end-equal": {"endingTimestamp": 300},
    "end-after-all": {"endingTimestamp": 5000},
    "end-before-all": {"endingTimestamp": 0},
    "maps": {"startingOffsetsByTimestamp": {"0": 250, "1": 0},
             "endingOffsetsByTimestamp": {"0": 850, "1": 300}},
    "end-map-after-all": {"endingOffsetsByTimestamp": {"0": 5000, "1": 5000}},
    "start-no-match-latest": {"startingTimestamp": 450,
                              "startingOffsetsByTimestampStrategy": "latest"},
    "start-after-all-latest": {"startingTimestamp": 5000,
                               "startingOffsetsByTimestampStrategy": "LATEST"},
    "start-map-after-all-latest": {"startingOffsetsByTimestamp": {"0": 5000, "1": 0},
                                   "startingOffsetsByTimestampStrategy": "latest"},
    "start-match-error-strategy": {"startingTimestamp": 400,
                                   "startingOffsetsByTimestampStrategy": "error"},
    "precedence-timestamp": {"startingTimestamp": 400,
                             "startingOffsetsByTimestamp": {"0": 0, "1": 0},
                             "startingOffsets": "latest"},  # refused if it were used
    "precedence-map": {"startingOffsetsByTimestamp": {"0": 800, "1": 400},
                       "startingOffsets": {"0": 0, "1": 0}},
    "timestamp-then-offsets": {"startingTimestamp": 300,
                               "endingOffsets": {"0": 5, "1": -1}},
    "maps-start-later-offset": {"startingOffsetsByTimestamp": {"0": 800, "1": 0},
                                "endingOffsetsByTimestamp": {"0": 900, "1": 100}},
}


@pytest.mark.parametrize("case", list(TIMESTAMP_CASES))
def test_timestamps(spark, bootstrap, ts_topic, case):
    given = {}
    for k, v in TIMESTAMP_CASES[case].items():
        if isinstance(v, int):
            given[k] = str(B + v)
        elif isinstance(v, str):
            given[k] = v
        elif "Timestamp" in k:
            given[k] = _ts(ts_topic, v)
        else:
            given[k] = J({ts_topic: v})
    read_same(spark, bootstrap, subscribe=ts_topic, **given)


@pytest.mark.parametrize("late", [450, 5000], ids=["one-partition", "every-partition"])
def test_starting_timestamp_without_a_record_after_it(spark, bootstrap, ts_topic, late):
    """Strategy error (the default): no offset matched fails both, naming the partition and
    the timestamp."""
    errors = fail_both(lambda fmt: read(spark, fmt, bootstrap, subscribe=ts_topic,
                                        startingTimestamp=str(B + late)).collect())
    # every partition without a match: each names the first it found, maybe not the same
    tps = [(ts_topic, 1)] if late == 450 else []
    assert_same_facts(errors, tps=tps, numbers=[B + late], words=["no offset matched", ts_topic])


def test_start_resolved_after_end(spark, bootstrap, ts_topic):
    """A timestamp resolving to a start after the end (partition 0: 800 is offset 6, the end
    is 2; partition 1: latest, 3, is its end): both fail naming the offsets, the topic and the
    partition."""
    errors = fail_both(lambda fmt: read(
        spark, fmt, bootstrap, subscribe=ts_topic, startingTimestamp=str(B + 800),
        endingOffsets=J({ts_topic: {"0": 2, "1": -1}}),
        startingOffsetsByTimestampStrategy="latest").collect())
    assert_same_facts(errors, tps=[(ts_topic, 0)], numbers=[6, 2], words=["start offset"])


# ------------------------------------------------------------------------------- headers


@pytest.fixture(scope="module")
def headers_topic(bootstrap, client) -> str:
    topic = make_topic(client, 1, "pb-headers")
    headers = [None, [("a", b"1")], [("a", b"1"), ("a", b"2"), ("b", None)],
               [("ключ", b""), ("z", b"\x00\xff")], [], [("n", None)]]
    produce(bootstrap, topic, [{"value": b"v%d" % i, "key": None if i % 2 else b"k",
                                "partition": 0, "headers": h} for i, h in enumerate(headers)]
            + [{"value": None, "key": b"tombstone", "partition": 0}])
    return topic


@pytest.mark.parametrize("include", ["TRUE", None])
def test_include_headers(spark, bootstrap, headers_topic, include):
    """Headers with null values, repeated keys, none (null, not empty) and empty lists; null
    keys and a tombstone (null value)."""
    options = {} if include is None else {"includeHeaders": include}
    rows = read_same(spark, bootstrap, subscribe=headers_topic, **options)
    assert len(rows) == 7
    if include and include.lower() == "true":
        by_offset = {r.offset: r.headers for r in rows}
        assert by_offset[0] is None and by_offset[4] is None  # none, and an empty list
        assert [(h.key, h.value) for h in by_offset[2]] == [("a", b"1"), ("a", b"2"), ("b", None)]


# ------------------------------------------------------------------------------ splitting


@pytest.fixture(scope="module")
def split_topic(bootstrap, client) -> str:
    topic = make_topic(client, 3, "pb-split")
    produce(bootstrap, topic, [{"value": b"p0-%d" % i, "partition": 0} for i in range(30)]
            + [{"value": b"p1-%d" % i, "partition": 1} for i in range(6)], linger_ms=50)
    return topic  # partition 2 stays empty


FIXED_END = {"0": 30, "1": 6, "2": 0}


@pytest.mark.parametrize(("options", "same_layout"), [
    ({"minPartitions": "5"}, True),
    ({"minPartitions": "12"}, True),
    ({"minPartitions": "8", "maxRecordsPerPartition": "20"}, True),
    ({"maxRecordsPerPartition": "8", "endingOffsets": FIXED_END}, True),
    ({"maxRecordsPerPartition": "8", "minPartitions": "2", "endingOffsets": FIXED_END}, True),
    ({"minPartitions": "2"}, False),  # kafkawire packs: 2 tasks, Spark 3
    ({"maxRecordsPerPartition": "8"}, False),  # Spark does not split a range ending at latest
    ({"maxRecordsPerPartition": "1"}, False),
], ids=["min-5", "min-12", "min-8-max-20", "max-8-fixed-end", "max-8-min-2-fixed-end", "min-2",
        "max-8-latest", "max-1-latest"])
def test_splitting_keeps_the_rows(spark, bootstrap, split_topic, options, same_layout):
    given = {k: v if isinstance(v, str) else J({split_topic: v}) for k, v in options.items()}
    spark_df, wire_df = read_both(spark, bootstrap, subscribe=split_topic, **given)
    assert_same_rows(spark_df, wire_df)
    plans = [(tasks(df), layout(df)) for df in (spark_df, wire_df)]
    print(options, "tasks (Spark, kafkawire):", *plans)
    if same_layout:  # the same cuts, each range its own task, where Spark splits
        assert plans[0] == plans[1]


def test_max_records_per_partition_with_a_latest_end(spark, bootstrap, split_topic):
    """Difference kept on purpose (docs/parity.md): Spark sizes ranges for
    maxRecordsPerPartition before it resolves latest ends, so a read ending at latest is not
    split; kafkawire resolves first and caps every range."""
    spark_df, wire_df = read_both(spark, bootstrap, subscribe=split_topic,
                                  maxRecordsPerPartition="8")
    assert layout(spark_df) == [(0, 0, 30, 30), (1, 0, 6, 6)]
    assert layout(wire_df) == [(0, 0, 7, 7), (0, 7, 14, 7), (0, 14, 22, 8), (0, 22, 30, 8),
                               (1, 0, 6, 6)]


def test_packing_off_plans_tasks_as_spark_does(spark, bootstrap, split_topic):
    """minPartitions not above the partition count: Spark keeps one task per partition, the
    empty one included; kafkawire packs (2 tasks), or with maxOffsetRangesPerPartition=1
    (an option Spark ignores) plans Spark's 3."""
    spark_df, wire_df = read_both(spark, bootstrap, subscribe=split_topic, minPartitions="2",
                                  maxOffsetRangesPerPartition="1")
    assert_same_rows(spark_df, wire_df)
    assert tasks(spark_df) == tasks(wire_df) == 3
    assert layout(spark_df) == layout(wire_df)
    packed = read(spark, "kafkawire", bootstrap, subscribe=split_topic, minPartitions="2")
    assert tasks(packed) == 2 and layout(packed) == layout(spark_df)


# ------------------------------------------------------------------------ isolation level


@pytest.fixture(scope="module")
def aborted_topic(bootstrap, client) -> str:
    """c0 c1 committed, a0 a1 aborted, c2 committed (5 records, 3 markers)."""
    topic = make_topic(client, 1, "pb-aborted")
    committed_aborted_committed(bootstrap, topic)
    return topic


@pytest.mark.parametrize("level", ["read_committed", "read_uncommitted"])
@pytest.mark.parametrize("split", [{}, {"maxRecordsPerPartition": "2", "endingOffsets": 8}],
                         ids=["whole", "split"])
def test_isolation_level_with_aborted_transactions(spark, bootstrap, aborted_topic, level,
                                                   split):
    options = {"kafka.isolation.level": level}
    if split:
        options |= {"maxRecordsPerPartition": "2",
                    "endingOffsets": J({aborted_topic: {"0": split["endingOffsets"]}})}
    spark_df, wire_df = read_both(spark, bootstrap, subscribe=aborted_topic, **options)
    assert_same_rows(spark_df, wire_df)
    values = sorted(r.value for r in wire_df.collect())
    committed = [b"c0", b"c1", b"c2"]
    assert values == (committed if level == "read_committed"
                      else sorted(committed + [b"a0", b"a1"]))
    if split:
        assert tasks(spark_df) == tasks(wire_df) == 4


def test_read_committed_stops_at_an_open_transaction(spark, bootstrap, client):
    topic = make_topic(client, 1, "pb-open")
    p = committed_then_open(bootstrap, topic)
    try:
        for level, n in (("read_committed", 3), ("read_uncommitted", 4)):
            assert len(read_same(spark, bootstrap, subscribe=topic,
                                 **{"kafka.isolation.level": level})) == n
    finally:
        p.abort_transaction(20)


# ----------------------------------------------------------------------- failOnDataLoss


@pytest.fixture(scope="module")
def truncated_topic(bootstrap, client) -> str:
    """2 partitions of 10 records; partition 0's log starts at 4 (DeleteRecords, as
    retention would)."""
    topic = make_topic(client, 2, "pb-retention")
    produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": i % 2} for i in range(20)],
            linger_ms=20)
    resp = client.leader_connection(topic, 0).request(DELETE_RECORDS, {"topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "offset": 4}]}],
        "timeout_ms": 10_000})
    assert resp["topics"][0]["partitions"][0]["error_code"] == 0
    return topic


@pytest.mark.parametrize(("start", "end"), [
    ({"0": 1, "1": 0}, None), ({"0": 1, "1": 0}, {"0": 3, "1": 2}),
    ({"0": 0, "1": 0}, {"0": 6, "1": -1}),
], ids=["start-below", "range-below", "start-at-0"])
def test_records_deleted_below_the_start(spark, bootstrap, truncated_topic, start, end):
    t = truncated_topic
    options = {"startingOffsets": J({t: start})}
    if end:
        options["endingOffsets"] = J({t: end})
    lenient = read_same(spark, bootstrap, subscribe=t, failOnDataLoss="false", **options)
    assert all(r.offset >= 4 for r in lenient if r.partition == 0)
    errors = fail_both(lambda fmt: read(spark, fmt, bootstrap, subscribe=t,
                                        **options).collect())
    # Spark: "Could not read records in offset [1, 10) for topic partition t-0"; kafkawire
    # names the offsets it could not read, [1, 4)
    assert_same_facts(errors, tps=[(t, 0)], numbers=[start["0"]],
                      words=["Some data may have been lost", "failOnDataLoss"])


def test_earliest_start_is_the_log_start(spark, bootstrap, truncated_topic):
    assert len(read_same(spark, bootstrap, subscribe=truncated_topic)) == 16


def test_split_ranges_below_the_log_start_lenient(spark, bootstrap, truncated_topic):
    """failOnDataLoss=false, ranges cut below the log start: kafkawire skips what is gone.
    Spark 4.2's tasks sharing a cached consumer fail there with "KafkaConsumer is not safe for
    multi-threaded access" (a Spark bug) or, when they do not collide, return the same rows."""
    t = truncated_topic
    options = {"failOnDataLoss": "false", "maxRecordsPerPartition": "2",
               "startingOffsets": J({t: {"0": 0, "1": 0}}),
               "endingOffsets": J({t: {"0": 10, "1": 2}})}
    wire = read(spark, "kafkawire", bootstrap, subscribe=t, **options)
    assert sorted((r.partition, r.offset) for r in wire.collect()) == (
        [(0, o) for o in range(4, 10)] + [(1, 0), (1, 1)])
    try:
        spark_df = read(spark, "kafka", bootstrap, subscribe=t, **options)
        assert_same_rows(spark_df, wire)
    except Exception as exc:  # noqa: BLE001 - Spark's bug, reported
        assert "ConcurrentModificationException" in str(exc), exc


# ---------------------------------------------------------------- deleted topic, re-use


def test_assign_of_a_deleted_topic_fails_both(spark, bootstrap, client):
    """A deleted topic is no data loss at planning: both fail whatever failOnDataLoss says."""
    topic = make_topic(client, 1, "pb-gone")
    produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": 0} for i in range(5)],
            linger_ms=20)
    delete_topics(client, [topic])
    explicit = {"startingOffsets": J({topic: {"0": 0}}), "endingOffsets": J({topic: {"0": 5}})}
    for lenient, offsets in (("true", {}), ("false", explicit)):
        errors = fail_both(lambda fmt, lenient=lenient, offsets=offsets: read(
            spark, fmt, bootstrap, assign=J({topic: [0]}), failOnDataLoss=lenient,
            **offsets).collect())
        # Spark's message does not name the topic; kafkawire's does
        assert_same_facts(errors, words=["unknown"])
        assert "UnknownTopicOrPartitionException" in str(errors[0])
        assert "UNKNOWN_TOPIC_OR_PARTITION" in str(errors[1]) and topic in str(errors[1])
