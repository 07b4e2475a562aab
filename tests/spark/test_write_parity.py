"""``df.write.format("kafkawire")`` at parity with Spark's built-in kafka sink: one test per
column rule and per option, through a real SparkSession and broker (Tansu, or the emulated
legacy broker where a rule concerns old brokers). librdkafka reads what we wrote where the
record metadata (headers, timestamps, partitions) matters."""

from __future__ import annotations

import datetime as dt
import re
import time
import uuid
import zlib

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from spark_kafka_wire import KafkaWireDataSource
from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from tests.support.legacy_broker import LegacyBroker
from tests.support.write_support import consume, end_offsets, stored_batches

pytestmark = [pytest.mark.spark, pytest.mark.broker]

UTC = dt.timezone.utc
HEADERS = "array<struct<key: string, value: binary>>"


@pytest.fixture
def legacy_broker():
    """Factory: a started emulated legacy broker, stopped after the test."""
    started: list[LegacyBroker] = []

    def make(release: str) -> LegacyBroker:
        broker = LegacyBroker(release).start()
        started.append(broker)
        return broker

    yield make
    for broker in started:
        broker.stop()


def _write(df, bootstrap: str, **options: str) -> None:
    (df.write.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
     .options(**options).mode("append").save())


def _read(spark, bootstrap: str, topic: str, **options: str):
    return (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).options(**options).load())


def _text(df, *extra: str):
    return df.select(*extra, F.col("key").cast("string").alias("key"),
                     F.col("value").cast("string").alias("value"))


def _rows(n: int = 12):
    return [(f"k{i % 5}", f"v{i}") for i in range(n)]


# ------------------------------------------------------------------------------- columns


@pytest.mark.parametrize(("schema", "row", "message"), [
    ("key int, value string", (1, "v"), r"column 'key' must be string or binary, got int"),
    ("value array<string>", (["v"],), r"column 'value' must be string or binary, got array"),
    ("value string, partition bigint", ("v", 0), r"column 'partition' must be int, got bigint"),
    ("value string, headers array<struct<key: string, value: string>>", ("v", None),
     r"column 'headers' must be array<struct<key: string, value: binary>>, got "
     r"array<struct<key:string,value:string>>"),
    ("value string, headers map<string, binary>", ("v", None), r"column 'headers' must be array"),
    ("value string, timestamp string", ("v", "now"),
     r"column 'timestamp' must be timestamp or double \(seconds\), got string"),
    ("key string, other int", ("k", 1), r"needs a 'value' column .*found columns: key, other"),
])
def test_column_types_are_checked_before_anything_is_sent(spark, bootstrap, client, new_topic,
                                                          schema, row, message):
    topic = new_topic(1, "types")
    with pytest.raises(Exception, match=message):
        _write(spark.createDataFrame([row], schema), bootstrap, topic=topic)
    assert end_offsets(client, topic, 1) == {0: 0}


def test_topic_column_type_matters_only_without_the_topic_option(spark, bootstrap, client,
                                                                 new_topic):
    topic = new_topic(1, "topic-int")
    df = spark.createDataFrame([(7, "a"), (None, "b")], "topic int, value string")
    with pytest.raises(Exception, match=r"column 'topic' must be string, got int"):
        _write(df, bootstrap)
    with pytest.raises(Exception, match=r"no topic to write to: set the 'topic' option or add"):
        _write(df.drop("topic"), bootstrap)
    _write(df, bootstrap, topic=topic)  # Spark ignores the column when the option is set
    assert_df_equality(_read(spark, bootstrap, topic).select(F.col("value").cast("string")),
                       df.select("value"), ignore_row_order=True, ignore_nullable=True)


def test_null_topic_row_fails_only_without_the_topic_option(spark, bootstrap, client, new_topic):
    topic = new_topic(1, "null-topic")
    df = spark.createDataFrame([(topic, "a"), (None, "b")], "topic string, value string")
    with pytest.raises(Exception, match=r"'topic' column is null in row 1 .*every row needs a "
                       r"topic \(set the 'topic' option for a default\)"):
        _write(df.coalesce(1), bootstrap)
    assert end_offsets(client, topic, 1) == {0: 0}  # the batch's topics are checked first
    _write(df, bootstrap, topic=topic)
    assert end_offsets(client, topic, 1) == {0: 2}


def test_string_or_binary_keys_and_values_and_extra_columns(spark, bootstrap, new_topic):
    topic = new_topic(2, "mixed")
    rows = [(f"k{i}".encode() if i % 4 else None, f"v{i}" if i % 7 else None, i, f"note {i}",
             {"nested": i}) for i in range(30)]
    df = spark.createDataFrame(
        rows, "key binary, value string, offset long, note string, extra struct<nested: int>")
    _write(df, bootstrap, topic=topic)  # offset, note, extra: ignored, as in Spark
    expected = df.select(F.col("key").cast("string").alias("key"), "value")
    assert_df_equality(_text(_read(spark, bootstrap, topic)), expected, ignore_row_order=True)


@pytest.mark.parametrize("bad", [3, -1])
def test_partition_outside_the_topic_fails_before_sending(spark, bootstrap, client, new_topic,
                                                          bad):
    topic = new_topic(3, "bad-part")
    df = spark.createDataFrame([("a", 0), ("b", bad)], "value string, partition int")
    with pytest.raises(Exception, match=rf"column 'partition' holds {bad}, but topic "
                       rf"'{topic}' has partitions 0..2"):
        _write(df.coalesce(1), bootstrap, topic=topic)
    assert end_offsets(client, topic, 3) == {0: 0, 1: 0, 2: 0}


# ------------------------------------------------------------------------------- headers


def test_headers_are_written_in_order_with_duplicates(spark, bootstrap, new_topic):
    topic = new_topic(1, "headers")
    rows = [
        ("a", [("trace", b"1"), ("trace", b"2"), ("empty", b""), ("null-value", None)]),
        ("b", None),
        ("c", []),
        ("d", [("ключ", b"\x00\xff")]),
    ]
    df = spark.createDataFrame(rows, f"value string, headers {HEADERS}").coalesce(1)
    _write(df, bootstrap, topic=topic)
    seen = consume(bootstrap, topic, 1, len(rows))
    got = spark.createDataFrame(
        [(c.value.decode(), [(k, v) for k, v in c.headers] if c.headers else None) for c in seen],
        f"value string, headers {HEADERS}")
    # librdkafka, like Kafka, has no empty header list: an empty array is no headers
    expected = df.select("value", F.when(F.size("headers") > 0, F.col("headers")).alias("headers"))
    assert_df_equality(got, expected, ignore_nullable=True)
    # and Spark's side of the round trip: the source's includeHeaders column
    read = _read(spark, bootstrap, topic, includeHeaders="true")
    assert_df_equality(read.select(F.col("value").cast("string"), "headers").orderBy("value"),
                       expected, ignore_nullable=True)


def test_headers_are_refused_by_a_broker_without_them(spark, legacy_broker):
    broker = legacy_broker("0.10.0")
    topic = f"legacy-h-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    options = {"kafka.api.version.request": "false", "kafka.broker.version.fallback": "0.10.0",
               "kafka.request.timeout.ms": "5000", "topic": topic}
    with_headers = spark.createDataFrame([("a", None), ("b", [("h", b"1")])],
                                         f"value string, headers {HEADERS}")
    with pytest.raises(Exception, match=rf"row 1 has headers, but the leader of topic "
                       rf"'{topic}' speaks a Produce version with message format v1"):
        _write(with_headers.coalesce(1), broker.bootstrap_servers, **options)
    assert [r for r in broker.requests if r.api_key == 0] == []  # nothing sent
    without = spark.createDataFrame([("a", None), ("b", [])], f"value string, headers {HEADERS}")
    _write(without, broker.bootstrap_servers, **options)  # no row has headers: fine
    assert sorted(m[4] for m in broker.messages(topic, 0)) == [b"a", b"b"]


# ----------------------------------------------------------------------------- timestamps


def test_timestamp_column_sets_the_record_timestamp(spark, bootstrap, new_topic):
    topic = new_topic(1, "ts")
    rows = [("a", dt.datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=UTC), None),
            ("b", None, None)]
    df = spark.createDataFrame(rows, "value string, timestamp timestamp, unused double")
    before = int(time.time() * 1000)
    _write(df.coalesce(1), bootstrap, topic=topic)
    after = int(time.time() * 1000)
    seen = {c.value: c.timestamp for c in consume(bootstrap, topic, 1, 2)}
    assert seen[b"a"] == (1, 1_704_110_400_123)  # CreateTime, µs truncated to ms
    assert seen[b"b"][0] == 1 and before <= seen[b"b"][1] <= after  # null: now
    seconds = spark.createDataFrame([("c", 1_700_000_000.5)], "value string, timestamp double")
    _write(seconds, bootstrap, topic=topic)
    assert consume(bootstrap, topic, 1, 3)[-1].timestamp == (1, 1_700_000_000_500)


# ------------------------------------------------------------------------- producer options


@pytest.mark.parametrize("acks", ["0", "1", "all", "-1"])
def test_acks(spark, bootstrap, new_topic, acks):
    topic = new_topic(2, f"acks{acks}")
    df = spark.createDataFrame(_rows(40), "key string, value string")
    _write(df, bootstrap, topic=topic, **{"kafka.acks": acks})
    assert_df_equality(_text(_read(spark, bootstrap, topic)), df, ignore_row_order=True)


@pytest.mark.parametrize(("codec", "codec_id"), [
    ("none", 0), ("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4)])
def test_compression_types(spark, bootstrap, client, new_topic, codec, codec_id):
    topic = new_topic(1, f"codec-{codec}")
    rows = [(f"k{i}", f"value {i} " * (i % 9)) for i in range(50)]
    df = spark.createDataFrame(rows, "key string, value string").coalesce(1)
    _write(df, bootstrap, topic=topic, **{"kafka.compression.type": codec})
    assert {b.codec for b in stored_batches(client, topic, 0)} == {codec_id}
    seen = consume(bootstrap, topic, 1, len(rows))
    got = spark.createDataFrame([(c.key.decode(), c.value.decode()) for c in seen],
                                "key string, value string")
    assert_df_equality(got, df, ignore_row_order=True)


def test_zstd_is_refused_before_sending_where_produce_cannot_carry_it(spark, legacy_broker):
    broker = legacy_broker("0.10.0")
    topic = f"legacy-zstd-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match=r"UNSUPPORTED_COMPRESSION_TYPE.*kafka.compression.type="
                       r"zstd needs Produce v7\+ \(Kafka 2.1\+\), but the broker speaks v2"):
        _write(df, broker.bootstrap_servers, topic=topic, **{
            "kafka.compression.type": "zstd", "kafka.api.version.request": "false",
            "kafka.broker.version.fallback": "0.10.0"})
    assert [r for r in broker.requests if r.api_key == 0] == []


@pytest.fixture
def small_arrow_batches(spark):
    """Spark hands the writer Arrow batches of 10 rows."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = spark.conf.get(key)
    spark.conf.set(key, "10")
    yield
    spark.conf.set(key, old)


@pytest.mark.parametrize(("linger", "expected"), [("0", [10] * 10), ("600000", [87, 13])])
def test_linger_and_batch_size(spark, bootstrap, client, new_topic, small_arrow_batches,
                               linger, expected):
    """linger.ms=0 sends each Arrow batch's rows at once; a long linger lets the rows of
    several Arrow batches fill batch.size (23 bytes per record by our estimate)."""
    topic = new_topic(1, "linger")
    df = spark.range(100).selectExpr("cast(id as string) as value").coalesce(1)
    _write(df, bootstrap, topic=topic, **{"kafka.linger.ms": linger, "kafka.batch.size": "2000"})
    assert [b.records for b in stored_batches(client, topic, 0)] == expected
    got = _read(spark, bootstrap, topic).select(F.col("value").cast("string"))
    assert_df_equality(got, df, ignore_row_order=True, ignore_nullable=True)


def test_a_record_that_can_never_fit_fails_before_sending(spark, bootstrap, client, new_topic):
    topic = new_topic(1, "too-big")
    df = spark.createDataFrame([("small",), ("x" * 300_000,)], "value string").coalesce(1)
    with pytest.raises(Exception, match=r"MESSAGE_TOO_LARGE.*a record of about 300021 bytes can "
                       r"never fit in a request of kafka.max.request.size=100000 bytes"):
        _write(df, bootstrap, topic=topic, **{"kafka.max.request.size": "100000"})
    assert end_offsets(client, topic, 1) == {0: 0}


def test_producer_settings_reach_the_writer(bootstrap, new_topic):
    topic = new_topic(1, "settings")
    source = KafkaWireDataSource({
        "kafka.bootstrap.servers": bootstrap, "topic": topic, "kafka.linger.ms": "7",
        "kafka.batch.size": "1234", "kafka.max.in.flight.requests.per.connection": "2",
        "kafka.retries": "4", "kafka.delivery.timeout.ms": "9000", "kafka.retry.backoff.ms": "11",
        "kafka.retry.backoff.max.ms": "222", "kafka.buffer.memory": "4096",
    })
    p = source.writer(StructType([StructField("value", StringType())]), False).options.produce
    assert (p.linger_ms, p.batch_size, p.max_in_flight, p.retries) == (7, 1234, 2, 4)
    assert (p.delivery_timeout_ms, p.retry_backoff_ms, p.retry_backoff_max_ms) == (9000, 11, 222)
    assert p.buffer_memory == 4096


# ------------------------------------------------------------------------------ idempotence


def test_idempotence_default_and_switches(spark, bootstrap, client, new_topic):
    df = spark.createDataFrame(_rows(20), "key string, value string").coalesce(1)
    default, off, acks1 = new_topic(1, "idem-on"), new_topic(1, "idem-off"), new_topic(1, "idem-a1")
    _write(df, bootstrap, topic=default)
    _write(df, bootstrap, topic=off, **{"kafka.enable.idempotence": "false"})
    _write(df, bootstrap, topic=acks1, **{"kafka.acks": "1"})  # a defaulted idempotence yields
    on_batches = stored_batches(client, default, 0)
    assert all(b.producer_id >= 0 and b.base_sequence >= 0 for b in on_batches)
    assert on_batches[0].base_sequence == 0
    for topic in (off, acks1):
        assert {(b.producer_id, b.base_sequence) for b in stored_batches(client, topic, 0)} == {
            (-1, -1)}


@pytest.mark.parametrize(("options", "message"), [
    ({"kafka.acks": "1", "kafka.enable.idempotence": "true"},
     r"kafka.acks must be all to use kafka.enable.idempotence=true"),
    ({"kafka.max.in.flight.requests.per.connection": "6"},
     r"max.in.flight.requests.per.connection must be at most 5; got 6"),
])
def test_idempotence_configuration_errors(spark, bootstrap, client, new_topic, options, message):
    topic = new_topic(1, "idem-err")
    with pytest.raises(Exception, match=message):
        _write(spark.createDataFrame([("v",)], "value string"), bootstrap, topic=topic, **options)
    assert end_offsets(client, topic, 1) == {0: 0}


def test_explicit_idempotence_on_a_legacy_broker_fails(spark, legacy_broker):
    broker: LegacyBroker = legacy_broker("0.10.0")
    topic = f"legacy-idem-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    with pytest.raises(Exception, match=r"kafka.enable.idempotence=true cannot be honoured"):
        _write(spark.createDataFrame([("v",)], "value string"), broker.bootstrap_servers,
               topic=topic, **{"kafka.enable.idempotence": "true",
                               "kafka.api.version.request": "false",
                               "kafka.broker.version.fallback": "0.10.0"})
    assert [r for r in broker.requests if r.api_key == 0] == []


def test_a_re_executed_task_writes_again_under_a_new_producer_id(bootstrap, client, new_topic):
    """What Spark does when it re-runs a write task: the same rows through a new writer task.
    Idempotence cannot tell them apart from new rows (a new producer id): at-least-once."""
    topic = new_topic(1, "task-retry")
    source = KafkaWireDataSource({"kafka.bootstrap.servers": bootstrap, "topic": topic})
    writer = source.writer(StructType([StructField("value", StringType())]), False)
    batch = pa.record_batch([pa.array([f"v{i}" for i in range(5)])], names=["value"])
    first = writer.write(iter([batch]))
    again = writer.write(iter([batch]))
    assert first.records == again.records == 5
    assert first.producer_id >= 0 and again.producer_id >= 0
    assert first.producer_id != again.producer_id
    stored = stored_batches(client, topic, 0)
    assert [(b.producer_id, b.base_sequence, b.records) for b in stored] == [
        (first.producer_id, 0, 5), (again.producer_id, 0, 5)]


# ----------------------------------------------------------------------------- partitioner


def test_partitioner_option(spark, bootstrap, new_topic):
    topic = new_topic(4, "consistent")
    rows = [(f"user-{i}", f"v{i}") for i in range(40)] + [("", "empty-key")]
    df = spark.createDataFrame(rows, "key string, value string")
    _write(df, bootstrap, topic=topic, **{"kafka.partitioner": "consistent"})
    expected = spark.createDataFrame([(k, zlib.crc32(k.encode()) % 4) for k, _ in rows],
                                     "key string, partition int")
    got = _read(spark, bootstrap, topic).select(F.col("key").cast("string"), "partition")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


# ------------------------------------------------------------------------ missing topics


def test_missing_topic_in_the_topic_column_fails_before_sending(spark, bootstrap, client,
                                                                new_topic):
    existing = new_topic(1, "exists")
    missing = f"missing-{uuid.uuid4().hex[:10]}"
    df = spark.createDataFrame([(existing, "a"), (missing, "b")], "topic string, value string")
    with pytest.raises(Exception, match=rf"UNKNOWN_TOPIC_OR_PARTITION.*'{re.escape(missing)}'.*"
                       r"set createTopic=true"):
        _write(df.coalesce(1), bootstrap)
    assert end_offsets(client, existing, 1) == {0: 0}


def test_create_topic_option(spark, bootstrap, client, new_topic):
    by_option = f"created-{uuid.uuid4().hex[:10]}"
    df = spark.createDataFrame(_rows(), "key string, value string")
    _write(df, bootstrap, topic=by_option, createTopic="true", createTopicPartitions="3")
    assert client.topic(by_option, refresh=True).num_partitions == 3
    assert_df_equality(_text(_read(spark, bootstrap, by_option)), df, ignore_row_order=True)
    # topics named by the column are created by the tasks that meet them
    a, b = (f"created-col-{uuid.uuid4().hex[:8]}" for _ in range(2))
    rows = [(a if i % 2 else b, f"k{i}", f"v{i}") for i in range(10)]
    by_column = spark.createDataFrame(rows, "topic string, key string, value string")
    _write(by_column, bootstrap, createTopic="true", createTopicPartitions="2")
    for topic in (a, b):
        assert client.topic(topic, refresh=True).num_partitions == 2
    assert_df_equality(_text(_read(spark, bootstrap, f"{a},{b}"), "topic"), by_column,
                       ignore_row_order=True)


def test_broker_auto_creation_when_allowed(spark, bootstrap, new_topic):
    """Tansu creates a topic on a Metadata request that allows it (Kafka does so when its
    auto.create.topics.enable is on); without the setting the write fails naming the topic
    (test_batch_read_write.test_unknown_topic_is_named)."""
    topic = f"auto-{uuid.uuid4().hex[:10]}"
    df = spark.createDataFrame(_rows(), "key string, value string")
    _write(df, bootstrap, topic=topic, **{"kafka.allow.auto.create.topics": "true"})
    with KafkaClient(ClientConfig.from_servers(bootstrap)) as c:
        assert c.topic(topic).num_partitions >= 1
    assert_df_equality(_text(_read(spark, bootstrap, topic)), df, ignore_row_order=True)
