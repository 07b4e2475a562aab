"""Batch reads that fail, Spark's ``kafka`` format beside ``kafkawire``: every query refused
by one is refused by the other, and kafkawire's message carries the facts of Spark's (topic,
partition, offsets, option names), extracted from both. Then the differences kept on purpose,
each test showing both behaviours."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.types import StringType, StructField, StructType

from spark_kafka_wire.client.metadata.admin import delete_topics
from tests.parity.batch_support import B, assert_same_facts, make_topic, produce, wire_message
from tests.parity.both import FORMATS, assert_same_rows, fail_both, read, read_both

J = json.dumps


@pytest.fixture(scope="module")
def topic(bootstrap, client) -> str:
    """3 partitions of 4 records, CreateTime B+i."""
    name = make_topic(client, 3, "pb-err")
    produce(bootstrap, name, [{"value": b"v%d" % i, "partition": i % 3, "timestamp": B + i}
                              for i in range(12)], linger_ms=20)
    return name


# Each case: options ("_" is the module's topic), then the facts both messages carry:
# partitions of the topic named, numbers, words ("_": the topic's name).
CASES = {
    "no-strategy": ({}, (), (), ["subscribe", "subscribePattern", "assign"]),
    "two-strategies": ({"subscribe": "_", "assign": {"_": [0]}}, (), (),
                       ["subscribe", "assign"]),
    "subscribe-empty": ({"subscribe": " "}, (), (), ["subscribe"]),
    "pattern-empty": ({"subscribePattern": ""}, (), (), ["subscribePattern"]),
    "pattern-invalid": ({"subscribePattern": "["}, (), (), []),
    "assign-not-json": ({"assign": "notjson"}, (), (), ["assign", "notjson"]),
    "assign-string-partition": ({"assign": {"_": ["0"]}}, (), (), ["_"]),
    "start-names-unassigned": ({"assign": {"_": [0]}, "startingOffsets": {"_": {"0": 0, "1": 0}}},
                               [1], (), []),
    "start-lacks-assigned": ({"assign": {"_": [0, 1]}, "startingOffsets": {"_": {"0": 0}}},
                             [1], (), []),
    "start-latest": ({"subscribe": "_", "startingOffsets": "latest"}, (), (),
                     ["latest", "batch"]),
    "end-earliest": ({"subscribe": "_", "endingOffsets": "earliest"}, (), (),
                     ["earliest", "batch"]),
    "start-json-latest": ({"subscribe": "_",
                           "startingOffsets": {"_": {"0": -1, "1": 0, "2": 0}}},
                          [0], (), ["startingOffsets", "latest", "batch"]),
    "end-json-earliest": ({"subscribe": "_", "endingOffsets": {"_": {"0": -2, "1": 1, "2": 1}}},
                          [0], (), ["earliest", "batch"]),
    "start-offset-below-2": ({"subscribe": "_",
                              "startingOffsets": {"_": {"0": -3, "1": 0, "2": 0}}},
                             (), [-3], []),
    "start-bad-word": ({"subscribe": "_", "startingOffsets": "bogus"}, (), (), ["bogus"]),
    "start-bad-partition": ({"subscribe": "_",
                             "startingOffsets": {"_": {"x": 0, "1": 0, "2": 0}}}, (), (), []),
    "start-string-offset": ({"subscribe": "_",
                             "startingOffsets": {"_": {"0": "1", "1": 0, "2": 0}}}, (), (), []),
    "start-after-end": ({"subscribe": "_", "startingOffsets": {"_": {"0": 3, "1": 0, "2": 0}},
                         "endingOffsets": {"_": {"0": 1, "1": 1, "2": 1}}}, [0], [3, 1], []),
    "start-after-end-2": ({"subscribe": "_", "startingOffsets": {"_": {"0": -2, "1": 3, "2": -2}},
                           "endingOffsets": {"_": {"0": 2, "1": 2, "2": 2}}}, [1], [3, 2], []),
    "start-end-other-partitions": ({"subscribe": "_",
                                    "startingOffsets": {"_": {"0": 0, "1": 0, "2": 0}},
                                    "endingOffsets": {"_": {"0": 1, "1": 1}}}, [2], (), []),
    "start-beyond-end": ({"subscribe": "_", "startingOffsets": {"_": {"0": 10, "1": 0, "2": 0}}},
                         [0], [10, 4], []),
    "start-beyond-end-lenient": ({"subscribe": "_", "failOnDataLoss": "false",
                                  "startingOffsets": {"_": {"0": 10, "1": 0, "2": 0}}},
                                 [0], [10, 4], []),
    "strategy-bogus": ({"subscribe": "_", "startingOffsetsByTimestampStrategy": "bogus"},
                       (), (), ["bogus"]),
    "timestamp-not-a-long": ({"subscribe": "_", "startingTimestamp": f"{B}.0"}, (), (),
                             ["single long value", f"{B}.0"]),
    "timestamp-map-lacks": ({"subscribe": "_",
                             "startingOffsetsByTimestamp": {"_": {"0": B, "1": B}}},
                            [2], (), []),
    "timestamp-map-extra": ({"subscribe": "_",
                             "startingOffsetsByTimestamp": {"_": {"0": B, "1": B, "2": B,
                                                                  "3": B}}},
                            [3], (), []),
    "timestamp-maps-start-after-end": ({"subscribe": "_",
                                        "startingOffsetsByTimestamp": {"_": {"0": B + 8, "1": B,
                                                                             "2": B}},
                                        "endingOffsetsByTimestamp": {"_": {"0": B + 3, "1": B + 9,
                                                                           "2": B + 9}}},
                                       [0], [B + 8, B + 3], ["timestamp"]),
    "min-partitions-0": ({"subscribe": "_", "minPartitions": "0"}, (), (),
                         ["minPartitions", "positive"]),
    "min-partitions-text": ({"subscribe": "_", "minPartitions": "1.5"}, (), (), ["1.5"]),
    "max-records-0": ({"subscribe": "_", "maxRecordsPerPartition": "0"}, (), (),
                      ["maxRecordsPerPartition", "positive"]),
    "max-records-negative": ({"subscribe": "_", "maxRecordsPerPartition": "-3"}, (), (),
                             ["maxRecordsPerPartition", "positive"]),
    "fail-on-data-loss-text": ({"subscribe": "_", "failOnDataLoss": "maybe"}, (), (),
                               ["maybe"]),
    "include-headers-text": ({"subscribe": "_", "includeHeaders": "maybe"}, (), (), ["maybe"]),
    "num-retries-text": ({"subscribe": "_", "fetchOffset.numRetries": "x"}, (), (), ['x']),
    "num-retries-0": ({"subscribe": "_", "fetchOffset.numRetries": "0"}, (), (), []),
    "poll-timeout-text": ({"subscribe": "_", "kafkaConsumer.pollTimeoutMs": "x"}, (), (),
                          ["x"]),
    "poll-timeout-negative": ({"subscribe": "_", "kafkaConsumer.pollTimeoutMs": "-1"}, (), (),
                              []),
    "auto-offset-reset": ({"subscribe": "_", "kafka.auto.offset.reset": "earliest"}, (), (),
                          ["auto.offset.reset", "not supported", "startingOffsets"]),
    "enable-auto-commit": ({"subscribe": "_", "kafka.enable.auto.commit": "true"}, (), (),
                           ["enable.auto.commit", "not supported"]),
    "key-deserializer": ({"subscribe": "_", "kafka.key.deserializer": "x"}, (), (),
                         ["key.deserializer", "not supported", "DataFrame operations"]),
    "value-deserializer": ({"subscribe": "_", "kafka.value.deserializer": "x"}, (), (),
                           ["value.deserializer", "not supported", "DataFrame operations"]),
    "interceptors": ({"subscribe": "_", "kafka.interceptor.classes": "x"}, (), (),
                     ["interceptor.classes", "not supported"]),
    "isolation-level-bogus": ({"subscribe": "_", "kafka.isolation.level": "bogus"}, (), (),
                              ["isolation.level", "bogus", "read_committed",
                               "read_uncommitted"]),
    "min-above-max-offsets": ({"subscribe": "_", "minOffsetsPerTrigger": "10",
                               "maxOffsetsPerTrigger": "5"}, (), [10, 5],
                              ["maxOffsetsPerTrigger"]),
    "missing-topic": ({"subscribe": "pb-missing-topic"}, (), (), ["unknown"]),
    "assign-missing-topic": ({"assign": {"pb-missing-topic": [0]}}, (), (), ["unknown"]),
}


def _given(options: dict, topic: str) -> dict[str, str]:
    out = {}
    for k, v in options.items():
        if isinstance(v, dict):
            out[k] = J({topic if t == "_" else t: p for t, p in v.items()})
        else:
            out[k] = topic if v == "_" else v
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_refused_by_both(spark, bootstrap, topic, case):
    options, partitions, numbers, words = CASES[case]
    given = _given(options, topic)
    errors = fail_both(lambda fmt: read(spark, fmt, bootstrap, **given).collect())
    assert_same_facts(errors, tps=[(topic, p) for p in partitions], numbers=numbers,
                      words=[topic if w == "_" else w for w in words])


# ------------------------------------------------------------------ deliberate differences


@pytest.mark.parametrize("value", ["-1", "-2", "-3"])
def test_negative_timestamps(spark, bootstrap, topic, value):
    """Kept on purpose: Spark hands a negative startingTimestamp/endingTimestamp (or map
    value) to ListOffsets, where -1, -2, -3 are Kafka's special queries (latest, earliest, max
    timestamp), so a "timestamp" silently means an offset; kafkawire refuses them."""
    for option in ("startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp"):
        given = {option: value} if option != "startingOffsetsByTimestamp" else {
            option: J({topic: dict.fromkeys(("0", "1", "2"), int(value))})}
        spark_rows = read(spark, "kafka", bootstrap, subscribe=topic, **given).collect()
        want = {("startingTimestamp", "-1"): 0, ("startingTimestamp", "-2"): 12,
                ("startingTimestamp", "-3"): 3, ("endingTimestamp", "-1"): 12,
                ("endingTimestamp", "-2"): 0, ("endingTimestamp", "-3"): 9}
        if (option, value) in want:
            assert len(spark_rows) == want[(option, value)]
        with pytest.raises(Exception) as caught:
            read(spark, "kafkawire", bootstrap, subscribe=topic, **given).collect()
        assert wire_message(caught.value).startswith(
            "[KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE] "), caught.value
        assert option in str(caught.value)


def test_a_topic_mapped_to_earliest_or_latest(spark, bootstrap, topic):
    """kafkawire does more: JSON offsets may map a topic to "earliest"/"latest" for all its
    partitions; Spark 4.2 refuses such JSON."""
    for options in ({"startingOffsets": J({topic: "earliest"})},
                    {"endingOffsets": J({topic: "latest"})},
                    {"startingOffsets": J({topic: "earliest"}),
                     "endingOffsets": J({topic: {"0": 2, "1": -1, "2": 3}})}):
        with pytest.raises(Exception, match=r"Expected e\.g\."):
            read(spark, "kafka", bootstrap, subscribe=topic, **options).collect()
        whole = read(spark, "kafka", bootstrap, subscribe=topic)
        rows = read(spark, "kafkawire", bootstrap, subscribe=topic, **options).collect()
        if "endingOffsets" in options and "startingOffsets" in options:
            assert len(rows) == 2 + 4 + 3
        else:
            assert len(rows) == whole.count() == 12


@pytest.mark.parametrize("options", [{"minPartitions": " 2"}, {"failOnDataLoss": " true"},
                                     {"maxRecordsPerPartition": "5 "}])
def test_blanks_around_numbers_and_booleans(spark, bootstrap, topic, options):
    """Kept on purpose: kafkawire trims blanks around integer and boolean values, as Spark
    itself trims startingOffsets and timestamps; Spark's Integer/Boolean parsing refuses them."""
    with pytest.raises(Exception, match="For input string"):
        read(spark, "kafka", bootstrap, subscribe=topic, **options).collect()
    strict = {k: v.strip() for k, v in options.items()}
    assert_same_rows(read(spark, "kafka", bootstrap, subscribe=topic, **strict),
                     read(spark, "kafkawire", bootstrap, subscribe=topic, **options))


def test_java_only_pattern_syntax(spark, bootstrap, topic):
    """Kept on purpose (docs/parity.md): subscribePattern is Python's re; Java's named group
    (?<name>...) is refused with the Python spelling, which Spark in turn refuses."""
    java, python = f"(?<t>{topic[:6]})-.*", f"(?P<t>{topic[:6]})-.*"
    assert read(spark, "kafka", bootstrap, subscribePattern=java).filter(
        f"topic = '{topic}'").count() == 12
    with pytest.raises(Exception, match=r"\(\?P<name>\.\.\.\)"):
        read(spark, "kafkawire", bootstrap, subscribePattern=java).collect()
    assert read(spark, "kafkawire", bootstrap, subscribePattern=python).filter(
        f"topic = '{topic}'").count() == 12
    with pytest.raises(Exception, match="near index"):  # Java's PatternSyntaxException
        read(spark, "kafka", bootstrap, subscribePattern=python).collect()


def test_user_schema(spark, bootstrap, topic):
    """Same in both: the fixed schema given as the user's is accepted, any other refused."""
    fixed = read(spark, "kafka", bootstrap, subscribe=topic).schema
    with_headers = read(spark, "kafka", bootstrap, subscribe=topic, includeHeaders="true").schema

    def load(fmt, schema, **options):
        return (spark.read.format(fmt).schema(schema).option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).options(**options).load())

    assert_same_rows(load("kafka", fixed), load("kafkawire", fixed))
    assert_same_rows(load("kafka", with_headers, includeHeaders="true"),
                     load("kafkawire", with_headers, includeHeaders="true"))
    for schema, options in ((StructType([StructField("value", StringType())]), {}),
                            (with_headers, {}), (fixed, {"includeHeaders": "true"})):
        fail_both(lambda fmt, schema=schema, options=options: load(fmt, schema,
                                                                   **options).collect())


def test_dataframe_reuse(spark, bootstrap, client):
    """Kept on purpose (docs/parity.md): a kafkawire DataFrame keeps the ranges planned at its first
    action; Spark's resolves earliest/latest again at every action. New records are seen by
    Spark's DataFrame only; after the topic is deleted Spark's fails at planning
    (UnknownTopicOrPartition, whatever failOnDataLoss says) while kafkawire's planned ranges
    follow failOnDataLoss."""
    name = make_topic(client, 1, "pb-reuse")
    produce(bootstrap, name, [{"value": b"v%d" % i, "partition": 0} for i in range(3)])
    frames = {(fmt, lenient): read(spark, fmt, bootstrap, subscribe=name,
                                   failOnDataLoss=lenient)
              for fmt in FORMATS for lenient in ("true", "false")}
    assert {k: df.count() for k, df in frames.items()} == dict.fromkeys(frames, 3)
    produce(bootstrap, name, [{"value": b"w%d" % i, "partition": 0} for i in range(2)])
    assert {k: df.count() for k, df in frames.items()} == {
        k: 5 if k[0] == "kafka" else 3 for k in frames}
    spark_df, wire_df = read_both(spark, bootstrap, subscribe=name)  # loaded again: the same
    assert_same_rows(spark_df, wire_df)
    delete_topics(client, [name])
    for lenient in ("true", "false"):
        with pytest.raises(Exception, match="UnknownTopicOrPartition"):
            frames[("kafka", lenient)].count()
    with pytest.raises(Exception) as caught:
        frames[("kafkawire", "true")].count()
    assert wire_message(caught.value).startswith("[KAFKA_DATA_LOSS.PARTITIONS_DELETED] ")
    assert frames[("kafkawire", "false")].count() == 0
