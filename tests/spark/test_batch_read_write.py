"""``format("kafkawire")`` batch reads and writes through a real SparkSession and broker.

What Spark itself does around a Python data source (found out here, asserted below):

* the reader's partitions (our fixed offset ranges) are planned at a DataFrame's first action
  and then cached with the loaded relation (``PythonDataSourceV2.getOrCreateReadInfo``): later
  actions on the same DataFrame, or on DataFrames derived from it, read the same ranges; only a
  new ``load()`` plans again. Spark's built-in kafka source plans again at every action.
* the default save mode, ErrorIfExists, is refused by Spark before our writer is created
  (``UNSUPPORTED_DATA_SOURCE_SAVE_MODE``); Spark's built-in kafka sink accepts it.
"""

from __future__ import annotations

import json
import pickle
import random
import re
import socket
import struct
import time
import uuid

import confluent_kafka as ck
import numpy as np
import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_kafka_wire import KafkaWireDataSource
from spark_kafka_wire.client.fetching.offsets import LATEST, resolve_offsets
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
from spark_kafka_wire.protocol.messages import PRODUCE
from spark_kafka_wire.protocol.murmur2 import partition_for_key
from spark_kafka_wire.protocol.records import encode_record_batch
from spark_kafka_wire.source.schema import ARROW_SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.broker]

BASE_TS = 1_700_000_000_000
# Generous bound for "fails, never hangs" checks (Spark startup noise included).
BOUNDED_S = 60

SPARK_KAFKA_SCHEMA = StructType([
    StructField("key", BinaryType(), True),
    StructField("value", BinaryType(), True),
    StructField("topic", StringType(), True),
    StructField("partition", IntegerType(), True),
    StructField("offset", LongType(), True),
    StructField("timestamp", TimestampType(), True),
    StructField("timestampType", IntegerType(), True),
])

# --------------------------------------------------------------------------------- helpers


def _read(spark, bootstrap: str, topics: str, **options: str):
    return (spark.read.format("kafkawire")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topics)
            .options(**options)
            .load())


def _write(df, bootstrap: str, mode: str | None = "append", **options: str) -> None:
    writer = df.write.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
    writer = writer.options(**options)
    if mode is not None:
        writer = writer.mode(mode)
    writer.save()


def _as_text(df):
    return df.select(F.col("key").cast("string").alias("key"),
                     F.col("value").cast("string").alias("value"))


def _produce(client, topic: str, partition: int, values: list[bytes], ts: int = BASE_TS) -> None:
    """One multi-record batch into one partition, through our client (no Spark)."""
    arr = pa.array(values, pa.binary())
    parts = np.full(len(values), partition, np.int32)
    producer = Producer(client, ProduceSettings())
    producer.send(encode_partitioned(topic, None, arr, parts, ProduceSettings(), ts))
    assert producer.records_sent == len(values)


def _ends(client, topic: str, partitions: int) -> dict[int, int]:
    got = resolve_offsets(client, {(topic, p): LATEST for p in range(partitions)})
    return {p: got[(topic, p)] for p in range(partitions)}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------ round trips


def test_round_trip_strings_null_keys_and_values(spark, bootstrap, client, new_topic):
    topic = new_topic(3, "rt-str")
    rows = [(f"user-{i % 20}", f"value-{i}") for i in range(40)]
    rows += [(None, f"no-key-{i}") for i in range(6)]
    rows += [(f"tomb-{i}", None) for i in range(4)]
    rows += [(None, None), ("", ""), ("ключ", "wert-ü")]
    df = spark.createDataFrame(rows, "key string, value string")

    before_us = int(time.time() * 1_000_000)
    _write(df, bootstrap, topic=topic)
    after_us = int(time.time() * 1_000_000)

    read = _read(spark, bootstrap, topic)
    assert_df_equality(_as_text(read), df, ignore_row_order=True)

    # Keyed rows sit where the Java partitioner puts them: per-partition counts ...
    keyed = [k for k, _ in rows if k is not None]
    counts: dict[int, int] = {}
    for k in keyed:
        p = partition_for_key(k.encode(), 3)
        counts[p] = counts.get(p, 0) + 1
    expected_counts = spark.createDataFrame(sorted(counts.items()), "partition int, count long")
    actual_counts = read.where(F.col("key").isNotNull()).groupBy("partition").count()
    assert_df_equality(actual_counts, expected_counts, ignore_row_order=True,
                       ignore_nullable=True)

    # ... and row by row; offsets are dense per partition; metadata columns are right.
    collected = read.select("key", "partition", "offset", "topic", "timestampType",
                            F.expr("unix_micros(timestamp)").alias("ts_us")).collect()
    assert len(collected) == len(rows)
    for r in collected:
        if r.key is not None:
            assert r.partition == partition_for_key(bytes(r.key), 3), r
        assert r.topic == topic and r.timestampType == 0
        assert before_us // 1000 * 1000 - 1000 <= r.ts_us <= after_us + 1000
    per_partition: dict[int, list[int]] = {}
    for r in collected:
        per_partition.setdefault(r.partition, []).append(r.offset)
    assert sum(len(v) for v in per_partition.values()) == len(rows)
    for offsets in per_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))


def test_round_trip_binary(spark, bootstrap, new_topic):
    topic = new_topic(2, "rt-bin")
    rng = random.Random(5)
    rows = [
        (bytes(range(256)), b"\x00\xff\xfe\x80"),
        (b"", b""),
        (None, b"\x80\x81\x82"),
        (b"\xff", None),
        (None, None),
        (b"k" * 1000, rng.randbytes(200_000)),
    ] + [(bytes([i, 0xFF - i]), rng.randbytes(i * 13)) for i in range(30)]
    df = spark.createDataFrame(rows, "key binary, value binary")
    _write(df, bootstrap, topic=topic)
    read = _read(spark, bootstrap, topic).select("key", "value")
    assert_df_equality(read, df, ignore_row_order=True)


def test_kafka_config_file_for_write_and_read(spark, bootstrap, new_topic, tmp_path):
    """kafkaConfigFile: the broker comes from a client.properties through a ${file:} placeholder;
    keys the query does not use are skipped; an explicit option wins over the file's.

    (Spark runs a data source's planning in a Python worker that the driver JVM started, so
    ${env:} placeholders see the JVM's environment, not variables set in this process since.)"""
    topic = new_topic(2, "conffile")
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"servers={bootstrap}\n")
    props = tmp_path / "client.properties"
    props.write_text("config.providers=file\n"
                     "config.providers.file.class=org.apache.kafka.common.config.provider."
                     "FileConfigProvider\n"
                     f"config.providers.file.param.allowed.paths={tmp_path}\n"
                     f"bootstrap.servers=${{file:{secrets}:servers}}\n"
                     "client.id=from-file\n"
                     "key.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
                     "request.timeout.ms=1\n")
    rows = [(f"k{i}", f"v{i}") for i in range(50)]
    df = spark.createDataFrame(rows, "key string, value string")
    (df.write.format("kafkawire").option("kafkaConfigFile", str(props))
     .option("kafka.request.timeout.ms", "30000").option("topic", topic)
     .mode("append").save())
    read = (spark.read.format("kafkawire").option("kafkaConfigFile", str(props))
            .option("kafka.request.timeout.ms", "30000").option("subscribe", topic).load()
            .selectExpr("cast(key as string) key", "cast(value as string) value"))
    assert sorted(tuple(r) for r in read.collect()) == sorted(rows)


def test_spark_sink_records_read_by_librdkafka(spark, bootstrap, new_topic):
    partitions = 3
    topic = new_topic(partitions, "rt-rdk")
    rows = [(f"order-{i}".encode(), f"payload-{i}".encode()) for i in range(45)]
    rows += [(b"\xfe\xff", b"\x00"), (b"", b"empty-key"), (b"tomb", None)]
    rows += [(None, f"nk-{i}".encode()) for i in range(7)]
    _write(spark.createDataFrame(rows, "key binary, value binary"), bootstrap, topic=topic)

    consumer = ck.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"rt-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 3,
    })
    seen: list[tuple] = []
    try:
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 30
        while len(seen) < len(rows) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            seen.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    assert len(seen) == len(rows)
    keyed_seen = sorted((p, k, v) for p, _, k, v in seen if k is not None)
    keyed_want = sorted((partition_for_key(k, partitions), k, v) for k, v in rows if k is not None)
    assert keyed_seen == keyed_want
    assert sorted(v for _, _, k, v in seen if k is None) == sorted(
        v for k, v in rows if k is None)
    for p in range(partitions):
        assert sorted(o for q, o, _, _ in seen if q == p) == list(
            range(sum(1 for q, *_ in seen if q == p)))


# ------------------------------------------------------------------------------- topic column


def test_topic_column_routes_rows(spark, bootstrap, client, new_topic):
    a, b = new_topic(1, "col-a"), new_topic(2, "col-b")
    rows = [(a if i % 3 else b, f"k{i}", f"v{i}") for i in range(30)]
    df = spark.createDataFrame(rows, "topic string, key string, value string")
    _write(df, bootstrap)  # no topic option: the column decides
    assert _ends(client, a, 1) == {0: 20}
    assert sum(_ends(client, b, 2).values()) == 10
    read = _read(spark, bootstrap, f"{a},{b}").select(
        "topic", F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"))
    assert_df_equality(read, df, ignore_row_order=True)


def test_topic_option_wins_over_topic_column(spark, bootstrap, client, new_topic):
    chosen, ignored = new_topic(1, "opt-win"), new_topic(1, "opt-lose")
    df = spark.createDataFrame([(ignored, f"v{i}") for i in range(8)], "topic string, value string")
    _write(df, bootstrap, topic=chosen)
    assert _ends(client, ignored, 1) == {0: 0}
    read = _read(spark, bootstrap, chosen).select(
        "topic", F.col("value").cast("string").alias("value"))
    expected = spark.createDataFrame([(chosen, f"v{i}") for i in range(8)],
                                     "topic string, value string")
    assert_df_equality(read, expected, ignore_row_order=True)


def test_null_topic_without_topic_option_fails(spark, bootstrap, new_topic):
    topic = new_topic(1, "null-topic")
    df = spark.createDataFrame([(topic, "a"), (None, "b")], "topic string, value string")
    with pytest.raises(Exception, match=r"'topic' column is null"):
        _write(df.coalesce(1), bootstrap)


# ------------------------------------------------------------------------------------ schema


def test_read_schema_is_sparks_kafka_schema(spark, bootstrap, new_topic):
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = _read(spark, bootstrap, new_topic(1, "schema")).schema
    assert schema == SPARK_KAFKA_SCHEMA
    arrow = to_arrow_schema(schema, timezone="UTC")
    assert arrow.equals(ARROW_SCHEMA, check_metadata=True), (arrow, ARROW_SCHEMA)


# ---------------------------------------------------------------- startingOffsets/endingOffsets


@pytest.fixture(scope="module")
def offsets_topic(client) -> str:
    """p0: offsets 0-9 in two batches (0-5, 6-9); p1: offsets 0-4 in one batch.
    Values are b"p<partition>-<offset>"."""
    name = f"offsets-{uuid.uuid4().hex[:12]}"
    create_topics(client, [(name, 2)])
    _produce(client, name, 0, [b"p0-%d" % i for i in range(6)])
    _produce(client, name, 0, [b"p0-%d" % i for i in range(6, 10)])
    _produce(client, name, 1, [b"p1-%d" % i for i in range(5)])
    assert _ends(client, name, 2) == {0: 10, 1: 5}
    return name


def _expected(spark, ranges: dict[int, tuple[int, int]]):
    rows = [(p, o, f"p{p}-{o}") for p, (lo, hi) in ranges.items() for o in range(lo, hi)]
    return spark.createDataFrame(rows, "partition int, offset long, value string")


@pytest.mark.parametrize(("starting", "ending", "ranges"), [
    (None, None, {0: (0, 10), 1: (0, 5)}),
    ("earliest", "latest", {0: (0, 10), 1: (0, 5)}),
    ({"0": 3, "1": -2}, {"0": 8, "1": -1}, {0: (3, 8), 1: (0, 5)}),
    ({"0": 7, "1": 5}, "latest", {0: (7, 10), 1: (5, 5)}),
    ("earliest", {"0": -1, "1": 2}, {0: (0, 10), 1: (0, 2)}),
    ({"0": 10, "1": 0}, {"0": 10, "1": 0}, {0: (10, 10), 1: (0, 0)}),
], ids=["defaults", "words", "json-mixed", "json-start-at-end", "json-end", "empty"])
def test_offset_options(spark, bootstrap, offsets_topic, starting, ending, ranges):
    options = {}
    for name, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        if spec is not None:
            options[name] = spec if isinstance(spec, str) else json.dumps({offsets_topic: spec})
    df = _read(spark, bootstrap, offsets_topic, **options).select(
        "partition", "offset", F.col("value").cast("string").alias("value"))
    assert_df_equality(df, _expected(spark, ranges), ignore_row_order=True)


@pytest.mark.parametrize(("options", "message"), [
    ({"startingOffsets": {"0": -2}},
     r"startingOffsets must give an offset for every subscribed partition: it lacks {t}-1"),
    ({"endingOffsets": {"0": -1, "1": -1, "7": 3}},
     r"endingOffsets must give .*not subscribed or do not exist: {t}-7"),
    ({"endingOffsets": "earliest"}, r"endingOffsets cannot be earliest \(-2\) for batch"),
    ({"endingOffsets": {"0": -2, "1": -1}}, r"endingOffsets for {t}-0 cannot be earliest"),
    ({"startingOffsets": "latest"}, r"startingOffsets cannot be latest \(-1\) for batch"),
    ({"startingOffsets": {"0": 0, "1": -1}}, r"startingOffsets for {t}-1 cannot be latest"),
    ({"startingOffsets": {"0": 9, "1": 0}, "endingOffsets": {"0": 2, "1": -1}},
     r"starting offset 9 of {t}-0 is after its ending offset 2"),
    ({"startingOffsets": "first"}, r"startingOffsets must be 'earliest', 'latest' or JSON"),
    ({"endingOffsets": {"0": 50, "1": -1}},
     r"partition now ends at offset 10 but offsets up to 50 were planned"),
], ids=["missing-partition", "extra-partition", "ending-earliest", "ending-json-earliest",
        "starting-latest", "starting-json-latest", "start-after-end", "not-json",
        "ending-beyond-log"])
def test_offset_option_errors(spark, bootstrap, offsets_topic, options, message):
    resolved = {k: v if isinstance(v, str) else json.dumps({offsets_topic: v})
                for k, v in options.items()}
    start = time.monotonic()
    with pytest.raises(Exception, match=message.format(t=re.escape(offsets_topic))):
        _read(spark, bootstrap, offsets_topic, **resolved).collect()
    assert time.monotonic() - start < BOUNDED_S


# ------------------------------------------------------------------------------ fixed ranges


def test_planned_ranges_stay_fixed_when_more_data_arrives(client, bootstrap, new_topic):
    topic = new_topic(2, "fixed")
    _produce(client, topic, 0, [b"a%d" % i for i in range(6)])
    _produce(client, topic, 1, [b"b%d" % i for i in range(3)])
    source = KafkaWireDataSource({
        "kafka.bootstrap.servers": bootstrap, "subscribe": topic, "maxRecordsPerBatch": "2",
        "endingOffsets": json.dumps({topic: {"0": 4, "1": -1}}),  # p0 ends inside a batch
    })
    reader = source.reader(source.schema())
    planned = reader.partitions()
    assert [[(r.topic, r.partition, r.start, r.end) for r in p.ranges] for p in planned] \
        == [[(topic, 0, 0, 4)], [(topic, 1, 0, 3)]]

    _produce(client, topic, 0, [b"a%d" % i for i in range(6, 10)])
    _produce(client, topic, 1, [b"b%d" % i for i in range(3, 8)])

    expected = {0: [b"a%d" % i for i in range(4)], 1: [b"b%d" % i for i in range(3)]}
    for part in planned:
        batches = list(reader.read(part))
        assert all(b.schema.equals(ARROW_SCHEMA) for b in batches)
        assert all(b.num_rows <= 2 for b in batches)  # maxRecordsPerBatch bounds every batch
        table = pa.Table.from_batches(batches, ARROW_SCHEMA)
        (r,) = part.ranges
        p = r.partition
        assert table.column("offset").to_pylist() == list(range(len(expected[p])))
        assert table.column("value").to_pylist() == expected[p]
        assert set(table.column("partition").to_pylist()) == {p}
        # A retried task gets the same pickled partition and reads exactly the same rows.
        retried = pickle.loads(pickle.dumps(part))
        again = pa.Table.from_batches(list(reader.read(retried)), ARROW_SCHEMA)
        assert again.equals(table)

    replanned = source.reader(source.schema()).partitions()
    assert [(r.start, r.end) for p in replanned for r in p.ranges] == [(0, 4), (0, 8)]


def test_spark_plans_ranges_once_per_loaded_dataframe(spark, bootstrap, client, new_topic):
    topic = new_topic(1, "replan")
    _produce(client, topic, 0, [b"x"] * 5)
    df = _read(spark, bootstrap, topic)
    _produce(client, topic, 0, [b"y"] * 3)
    # load() only resolved the schema: the ranges are planned at the first action ...
    assert df.count() == 8
    _produce(client, topic, 0, [b"z"] * 4)
    # ... and cached with the relation: later actions, and derived DataFrames, reuse them.
    assert df.count() == 8
    assert df.where("offset >= 0").select("value").collect() == [(b"x",)] * 5 + [(b"y",)] * 3
    # A new load() plans again.
    assert _read(spark, bootstrap, topic).count() == 12


# ------------------------------------------------------------------------------------ errors


def test_missing_bootstrap_servers(spark, client, new_topic):
    topic = new_topic(1, "no-bootstrap")
    message = r"option 'kafka.bootstrap.servers' is required"
    with pytest.raises(Exception, match=message):
        spark.read.format("kafkawire").option("subscribe", topic).load().collect()
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match=message):
        df.write.format("kafkawire").option("topic", topic).mode("append").save()
    assert _ends(client, topic, 1) == {0: 0}


def test_unknown_topic_is_named(spark, bootstrap, new_topic):
    existing = new_topic(1, "known")
    missing = f"missing-{uuid.uuid4().hex[:12]}"
    pattern = rf"UNKNOWN_TOPIC_OR_PARTITION.*'{re.escape(missing)}'"
    with pytest.raises(Exception, match=pattern):
        _read(spark, bootstrap, f"{existing},{missing}").collect()
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match=pattern):
        _write(df, bootstrap, topic=missing)


def test_unreachable_broker_fails_in_bounded_time(spark, new_topic):
    address = f"127.0.0.1:{_closed_port()}"
    fast = {"kafka.request.timeout.ms": "2000", "kafka.socket.connection.setup.timeout.ms": "1000"}
    pattern = rf"none of the bootstrap servers {re.escape(address)} could be reached"
    start = time.monotonic()
    with pytest.raises(Exception, match=pattern):
        _read(spark, address, "any-topic", **fast).collect()
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match=pattern):
        _write(df, address, topic="any-topic", **fast)
    assert time.monotonic() - start < BOUNDED_S


def test_silent_broker_fails_in_bounded_time(spark):
    """A port that accepts connections and never answers: timeouts, not a hang."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # the kernel completes handshakes; nobody ever reads or replies
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(Exception, match=r"no response to ApiVersions within 500 ms"):
            _read(spark, address, "any-topic", **{
                "kafka.request.timeout.ms": "500",
                "kafka.socket.connection.setup.timeout.ms": "500",
            }).collect()
        assert time.monotonic() - start < BOUNDED_S


def test_missing_value_column_sends_nothing(spark, bootstrap, client, new_topic):
    topic = new_topic(2, "no-value")
    df = spark.createDataFrame([(f"k{i}", i) for i in range(10)], "key string, other int")
    with pytest.raises(Exception, match=r"needs a 'value' column .*found columns: key, other"):
        _write(df, bootstrap, topic=topic)
    bad_type = spark.createDataFrame([(f"k{i}", i) for i in range(10)], "key string, value int")
    with pytest.raises(Exception, match=r"column 'value' must be string or binary, got int"):
        _write(bad_type, bootstrap, topic=topic)
    assert _ends(client, topic, 2) == {0: 0, 1: 0}


def test_save_modes(spark, bootstrap, client, new_topic):
    topic = new_topic(1, "modes")
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match=r"save mode overwrite is not allowed"):
        _write(df, bootstrap, mode="overwrite", topic=topic)
    # Spark refuses ErrorIfExists (the default) and Ignore for Python data sources before
    # our writer exists; Spark's own kafka sink accepts ErrorIfExists.
    with pytest.raises(Exception, match=r"UNSUPPORTED_DATA_SOURCE_SAVE_MODE.*ErrorIfExists"):
        _write(df, bootstrap, mode=None, topic=topic)
    with pytest.raises(Exception, match=r"UNSUPPORTED_DATA_SOURCE_SAVE_MODE.*Ignore"):
        _write(df, bootstrap, mode="ignore", topic=topic)
    assert _ends(client, topic, 1) == {0: 0}
    _write(df, bootstrap, mode="append", topic=topic)
    assert _ends(client, topic, 1) == {0: 1}


def test_user_schema_is_rejected(spark, bootstrap, new_topic):
    topic = new_topic(1, "user-schema")
    with pytest.raises(Exception, match=r"kafkawire has a fixed schema"):
        (spark.read.format("kafkawire").schema("value binary")
         .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
         .load().collect())


# ------------------------------------------------------------------------- auto-registration



# --------------------------------------------------------------------------- corrupt bytes


def test_corrupt_batch_names_topic_partition_offset(spark, bootstrap, client, new_topic):
    """Tansu stores a batch whose CRC does not match (a real Kafka broker refuses it with
    CORRUPT_MESSAGE, then this test is skipped); our reader must refuse it, naming where."""
    topic = new_topic(1, "corrupt")
    _produce(client, topic, 0, [b"good-0", b"good-1", b"good-2"])
    batch = bytearray(encode_record_batch([b"k1", b"k2"], [b"hello", b"world"],
                                          timestamps=BASE_TS))
    crc_before = struct.unpack_from(">I", batch, 17)[0]
    at = bytes(batch).index(b"world")
    batch[at] ^= 0x20  # "world" -> "World"; the stored CRC is left as it was
    assert struct.unpack_from(">I", batch, 17)[0] == crc_before
    resp = client.leader_connection(topic, 0).request(PRODUCE, {
        "transactional_id": None, "acks": -1, "timeout_ms": 10_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}],
    })
    part = resp["responses"][0]["partition_responses"][0]
    if part["error_code"]:
        pytest.skip(f"the broker validates CRCs on produce (error {part['error_code']})")
    assert part["base_offset"] == 3
    assert _ends(client, topic, 1) == {0: 5}

    start = time.monotonic()
    pattern = (rf"CorruptRecordError: \[KAFKAWIRE_PROTOCOL\.CORRUPT_RECORD\] corrupt record data: "
               rf"CRC-32C mismatch.*"
               rf"\(topic '{re.escape(topic)}', partition 0, offset 3, broker [^)]+\)")
    with pytest.raises(Exception, match=pattern):
        _read(spark, bootstrap, topic).collect()
    assert time.monotonic() - start < BOUNDED_S

    # With kafka.check.crcs=false the damaged bytes come through as they are stored.
    values = _read(spark, bootstrap, topic, **{"kafka.check.crcs": "false"}).select(
        "offset", "value").orderBy("offset").collect()
    assert [(r.offset, bytes(r.value)) for r in values] == [
        (0, b"good-0"), (1, b"good-1"), (2, b"good-2"), (3, b"hello"), (4, b"World")]
