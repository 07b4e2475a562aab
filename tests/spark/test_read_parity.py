"""Batch reads at parity with Spark's built-in kafka source, option by option, through a real
SparkSession and broker. Records come from librdkafka (confluent-kafka) where their shape
matters (timestamps, headers, transactions), so expectations follow from what was written."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from spark_kafka_wire import KafkaWireDataSource
from spark_kafka_wire.client.fetching.offsets import LATEST, READ_COMMITTED, resolve_offsets
from spark_kafka_wire.client.metadata.admin import create_topics, delete_topics
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
from spark_kafka_wire.source.batch_reader import KafkaWireBatchReader
from spark_kafka_wire.source.options import parse_source_options
from spark_kafka_wire.source.planning import (
    MIN_TASK_RECORDS,
    PACKED_RECORDS,
    OffsetRange,
    default_task_count,
    pack_ranges,
    sized_task_count,
    split_ranges,
)
from spark_kafka_wire.source.schema import ARROW_SCHEMA_WITH_HEADERS, KAFKA_SCHEMA_WITH_HEADERS
from tests.support.librdkafka import produce_records as produce
from tests.support.librdkafka import produce_timestamped
from tests.support.transactions import committed_aborted_committed

pytestmark = [pytest.mark.spark, pytest.mark.broker]

B = 1_600_000_000_000  # CreateTime base, far from the broker's clock


def load(spark, bootstrap: str, **options: str):
    return (spark.read.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
            .options(**options).load())


def rows(df, *cols: str):
    """(partition, offset, value as string) rows, or the given columns."""
    cols = cols or ("partition", "offset", "value")
    return df.select(*[F.col(c).cast("string").alias(c) if c in ("value", "key") else c
                       for c in cols])


def expected(spark, data: list[tuple], schema: str = "partition int, offset long, value string"):
    return spark.createDataFrame(data, schema)


def delete_topic(client, topic: str) -> None:
    delete_topics(client, [topic])


def fails(df_or_fn, pattern: str) -> None:
    with pytest.raises(Exception, match=pattern):
        df_or_fn() if callable(df_or_fn) else df_or_fn.collect()


# ---------------------------------------------------------------------------- strategies


def test_assign_reads_only_the_assigned_partitions(spark, bootstrap, client, new_topic):
    topic = new_topic(3, "assign")
    for p in range(3):
        produce(bootstrap, topic, [{"value": b"p%d-%d" % (p, i), "partition": p}
                                   for i in range(2)], linger_ms=20)
    df = load(spark, bootstrap, assign=json.dumps({topic: [2, 0]}),
              startingOffsets=json.dumps({topic: {"0": 1, "2": -2}}))
    assert_df_equality(rows(df), expected(spark, [(0, 1, "p0-1"), (2, 0, "p2-0"),
                                                  (2, 1, "p2-1")]), ignore_row_order=True)
    # Offsets must name exactly the assignment.
    fails(load(spark, bootstrap, assign=json.dumps({topic: [0]}),
               startingOffsets=json.dumps({topic: {"0": 0, "1": 0}})),
          rf"startingOffsets must give an offset for every assigned partition: it names "
          rf"partitions that are not assigned or do not exist: {topic}-1")
    # Partitions that do not exist are left out; a topic that does not exist is an error.
    assert load(spark, bootstrap, assign=json.dumps({topic: [1, 9]})).count() == 2
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    fails(load(spark, bootstrap, assign=json.dumps({missing: [0]})),
          rf"UNKNOWN_TOPIC_OR_PARTITION.*'{missing}'.*assigned topic does not exist")


def test_exactly_one_strategy(spark, bootstrap):
    fails(load(spark, bootstrap), r"one of the options 'subscribe', 'subscribePattern' or "
                                  r"'assign' is required")
    fails(load(spark, bootstrap, subscribe="a", assign='{"a":[0]}'),
          r"only one of the options .* can be given; got subscribe, assign")


# ---------------------------------------------------------------------------- timestamps

@pytest.fixture(scope="module")
def ts_topic(bootstrap, client) -> str:
    topic = f"ts-{uuid.uuid4().hex[:12]}"
    create_topics(client, [(topic, 2)])
    produce_timestamped(bootstrap, topic, B)
    return topic


def ts_rows(spark, ranges: dict[int, tuple[int, int]]):
    return expected(spark, [(p, o, f"p{p}-{o}") for p, (lo, hi) in ranges.items()
                            for o in range(lo, hi)])


def test_offsets_by_timestamp_maps(spark, bootstrap, ts_topic):
    df = load(spark, bootstrap, subscribe=ts_topic,
              startingOffsetsByTimestamp=json.dumps({ts_topic: {"0": B + 250, "1": B}}),
              endingOffsetsByTimestamp=json.dumps({ts_topic: {"0": B + 850, "1": B + 300}}))
    assert_df_equality(rows(df), ts_rows(spark, {0: (2, 8), 1: (0, 2)}), ignore_row_order=True)
    fails(load(spark, bootstrap, subscribe=ts_topic,
               startingOffsetsByTimestamp=json.dumps({ts_topic: {"0": B}})),
          rf"startingOffsetsByTimestamp must give a timestamp for every subscribed partition: "
          rf"it lacks {ts_topic}-1")


def test_starting_timestamp_without_a_match(spark, bootstrap, ts_topic):
    late = str(B + 450)  # p0 has 500 and later; p1 ends at 400
    fails(load(spark, bootstrap, subscribe=ts_topic, startingTimestamp=late),
          rf"no offset matched from request of topic-partition {ts_topic}-1 and timestamp "
          rf"{late}")
    df = load(spark, bootstrap, subscribe=ts_topic, startingTimestamp=late,
              startingOffsetsByTimestampStrategy="latest")
    assert_df_equality(rows(df), ts_rows(spark, {0: (4, 9)}), ignore_row_order=True)


def test_start_resolved_after_end_fails(spark, bootstrap, ts_topic):
    # p0: start 6 (800), end 2 (300): Spark fails (RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET)
    df = load(spark, bootstrap, subscribe=ts_topic, startingTimestamp=str(B + 800),
              endingTimestamp=str(B + 300), startingOffsetsByTimestampStrategy="latest")
    fails(df, rf"StartAfterEndError.*Beginning offset 6 \(startingTimestamp\) is after the ending "
              rf"offset 2 \(endingTimestamp\) for topic {ts_topic} partition 0")


# ------------------------------------------------------------ start beyond the end (issue 15)


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_starting_offsets_beyond_the_partitions_end_fail(spark, bootstrap, new_topic,
                                                         fail_on_data_loss):
    """Spark's kafka source fails a read whose start lies beyond the partition's end, whatever
    failOnDataLoss says; kafkawire used to read nothing from such a partition, silently."""
    topic = new_topic(2, "beyond-start")
    produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": i % 2} for i in range(6)],
            linger_ms=20)
    df = load(spark, bootstrap, subscribe=topic, failOnDataLoss=fail_on_data_loss,
              startingOffsets=json.dumps({topic: {"0": 1, "1": 40}}))
    fails(df, rf"Beginning offset 40 \(startingOffsets\) is after the ending offset 3 "
              rf"\(endingOffsets\) for topic {topic} partition 1: the resolved start offset is "
              r"greater than the resolved end offset")
    # At the end is fine: nothing to read there, as in Spark.
    df = load(spark, bootstrap, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 1, "1": 3}}))
    assert_df_equality(rows(df), expected(spark, [(0, 1, "v2"), (0, 2, "v4")]),
                       ignore_row_order=True)


# ----------------------------------------------------------------------- failOnDataLoss


def test_deleted_topic_is_data_loss(spark, bootstrap, client, new_topic):
    topic = new_topic(1, "gone")
    produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": 0} for i in range(5)],
            linger_ms=20)
    strict = load(spark, bootstrap, subscribe=topic)
    lenient = load(spark, bootstrap, subscribe=topic, failOnDataLoss="false")
    # The ranges are planned at the first action and kept with the DataFrame.
    assert strict.count() == 5 and lenient.count() == 5
    delete_topic(client, topic)
    fails(strict, rf"data loss: cannot read offsets \[0, 5\) of {topic}-0: the topic or "
                  r"partition no longer exists .*set the source option failOnDataLoss to false")
    assert lenient.count() == 0


def test_shortened_partition_is_data_loss(spark, bootstrap, client, new_topic):
    topic = new_topic(1, "short")
    produce(bootstrap, topic, [{"value": b"old%d" % i, "partition": 0} for i in range(6)],
            linger_ms=20)
    strict = load(spark, bootstrap, subscribe=topic)
    lenient = load(spark, bootstrap, subscribe=topic, failOnDataLoss="false")
    assert strict.count() == 6 and lenient.count() == 6
    delete_topic(client, topic)
    create_topics(client, [(topic, 1)])
    produce(bootstrap, topic, [{"value": b"new%d" % i, "partition": 0} for i in range(2)])
    fails(strict, rf"cannot read offsets \[2, 6\) of {topic}-0: the partition now ends at "
                  r"offset 2 but offsets up to 6 were planned")
    assert_df_equality(rows(lenient), expected(spark, [(0, 0, "new0"), (0, 1, "new1")]),
                       ignore_row_order=True)


# ------------------------------------------------------------------------------ splitting


@pytest.fixture(scope="module")
def split_topic(bootstrap, client) -> str:
    topic = f"split-{uuid.uuid4().hex[:12]}"
    create_topics(client, [(topic, 3)])
    produce(bootstrap, topic, [{"value": b"p0-%d" % i, "partition": 0} for i in range(30)]
            + [{"value": b"p1-%d" % i, "partition": 1} for i in range(6)], linger_ms=50)
    return topic  # p2 stays empty


def spark_partitions(df) -> list[tuple[int, int, int, int]]:
    """(partition, first offset, last offset + 1, rows) of every non-empty Spark partition."""
    got = (df.withColumn("sp", F.spark_partition_id()).groupBy("sp", "partition")
           .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"), F.count("*").alias("n"))
           .collect())
    return sorted((r.partition, r.lo, r.hi + 1, r.n) for r in got)


@pytest.mark.parametrize(("options", "min_parts", "max_records"), [
    ({"minPartitions": "5"}, 5, None),
    ({"maxRecordsPerPartition": "8"}, None, 8),
    ({"minPartitions": "8", "maxRecordsPerPartition": "20"}, 8, 20),
], ids=["minPartitions", "maxRecordsPerPartition", "both"])
def test_splitting_keeps_rows_and_cuts_fixed_ranges(spark, bootstrap, split_topic, options,
                                                    min_parts, max_records):
    whole = load(spark, bootstrap, subscribe=split_topic)
    assert whole.rdd.getNumPartitions() == 3
    df = load(spark, bootstrap, subscribe=split_topic, **options)
    plan = split_ranges([OffsetRange(split_topic, 0, 0, 30), OffsetRange(split_topic, 1, 0, 6),
                         OffsetRange(split_topic, 2, 0, 0)], min_parts, max_records)
    assert len(plan) > 2  # something was split
    assert df.rdd.getNumPartitions() == len(plan)
    assert spark_partitions(df) == [(r.partition, r.start, r.end, r.size) for r in plan]
    assert_df_equality(rows(df), rows(whole), ignore_row_order=True)


# ------------------------------------------------------------------------------- packing


def _produce_sizes(client, topic: str, sizes: list[int]) -> None:
    """``sizes[p]`` records into partition ``p``, values naming partition and offset."""
    parts = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    offsets = [i for n in sizes for i in range(n)]
    values = pa.array([b"p%d-%d" % (p, i) for p, i in zip(parts.tolist(), offsets, strict=True)],
                      pa.binary())
    Producer(client, ProduceSettings()).send(
        encode_partitioned(topic, None, values, parts, ProduceSettings(), B))


@pytest.fixture(scope="module")
def layout_topics(client) -> tuple[str, str]:
    """One huge partition among 23 tiny or empty ones, and a second topic of five small ones."""
    uid = uuid.uuid4().hex[:10]
    mixed, small = f"pack-mixed-{uid}", f"pack-small-{uid}"
    create_topics(client, [(mixed, 24), (small, 5)])
    _produce_sizes(client, mixed, [3000] + [(0, 1, 2, 5, 0, 3)[p % 6] for p in range(1, 24)])
    _produce_sizes(client, small, [2] * 5)
    return mixed, small


def _table(reader, parts) -> pa.Table:
    """Every row of the planned tasks, task after task, as Spark would read them."""
    return pa.Table.from_batches([b for part in parts for b in reader.read(part)])


@pytest.mark.parametrize("options", [
    {}, {"minPartitions": "5"}, {"minPartitions": "40"}, {"maxRecordsPerPartition": "7"},
    {"maxRecordsPerPartition": "1000", "minPartitions": "3"},
    {"maxOffsetRangesPerPartition": "3"}, {"ending": "half"},
    {"kafka.isolation.level": "read_committed"},
], ids=["default", "minPartitions-5", "minPartitions-40", "maxRecords-7",
        "maxRecords-1000-minPartitions-3", "maxRanges-3", "half-empty", "read_committed"])
def test_packed_tasks_read_the_same_rows_in_the_same_order(bootstrap, layout_topics, options):
    """Readers called directly, as Spark's tasks call them: packed (for 4 tasks) and unpacked
    plans of the same read return identical rows, task after task."""
    mixed, small = layout_topics
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": f"{mixed},{small}",
               **options}
    if options.pop("ending", None):  # every other partition read to its start: empty ranges
        options["endingOffsets"] = json.dumps({
            t: {str(p): (-1 if p % 2 else 0) for p in range(n)} for t, n in ((mixed, 24),
                                                                            (small, 5))})
    parsed = parse_source_options(options)
    packed_reader = KafkaWireBatchReader(parsed, 4)
    unpacked_reader = KafkaWireBatchReader(parsed, None)
    packed, unpacked = packed_reader.partitions(), unpacked_reader.partitions()
    assert all(len(p.ranges) == 1 for p in unpacked)
    assert [r for p in packed for r in p.ranges] == [r for p in unpacked for r in p.ranges]
    target = int(options.get("minPartitions", 4))
    assert len(packed) < len(unpacked) or len(unpacked) <= target
    if "minPartitions" in options:
        assert len(packed) >= min(target, len(unpacked))
    if "maxOffsetRangesPerPartition" in options:
        assert max(len(p.ranges) for p in packed) == 3
    # a range of a task's budget or more is never packed with others; the budget is the
    # offsets over the task count aimed at (for 4 default tasks, fewer when the read holds
    # fewer than MIN_TASK_RECORDS offsets per task, as this one does: one)
    sizes = [r.size for p in unpacked for r in p.ranges]
    tasks = target if "minPartitions" in options else \
        sized_task_count(sum(sizes), sum(x > 0 for x in sizes), 4)
    assert tasks is not None and (tasks == target or sum(sizes) < MIN_TASK_RECORDS * tasks)
    cap = int(options.get("maxRecordsPerPartition", PACKED_RECORDS))
    limit = min(-(-sum(sizes) // tasks), cap)
    assert all(r.size < limit for p in packed if len(p.ranges) > 1 for r in p.ranges)
    got, want = _table(packed_reader, packed), _table(unpacked_reader, unpacked)
    assert got.num_rows == want.num_rows > 0
    assert got.equals(want)


def test_many_small_partitions_share_few_tasks(spark, bootstrap, client, new_topic):
    """200 partitions of 10 records: Spark's plan (packing off) is 200 tasks, kafkawire's a few,
    with the same rows in the same order."""
    topic = new_topic(200, "pack200")
    _produce_sizes(client, topic, [10] * 200)
    packed = load(spark, bootstrap, subscribe=topic)
    unpacked = load(spark, bootstrap, subscribe=topic, maxOffsetRangesPerPartition="1")
    assert unpacked.rdd.getNumPartitions() == 200
    rule = pack_ranges([OffsetRange(topic, p, 0, 10) for p in range(200)],
                       sized_task_count(2_000, 200, default_task_count()))
    assert packed.rdd.getNumPartitions() == len(rule) <= 2 * default_task_count() + 1
    columns = ("topic", "partition", "offset", "value", "timestamp")
    got, want = rows(packed, *columns).collect(), rows(unpacked, *columns).collect()
    assert len(got) == 2000 and got == want


# ------------------------------------------------------------------------------- headers


def test_headers_column(spark, bootstrap, new_topic):
    from pyspark.sql.pandas.types import to_arrow_schema

    topic = new_topic(1, "headers")
    headers = [
        None,
        [("a", b"1")],
        [("a", b"1"), ("a", b"2"), ("b", None)],  # order and duplicates kept, null value
        [("ключ", b""), ("z", b"\x00\xff")],
        [],
    ]
    produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": 0, "headers": h}
                               for i, h in enumerate(headers)])
    df = load(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert df.schema == KAFKA_SCHEMA_WITH_HEADERS
    assert to_arrow_schema(df.schema, timezone="UTC").equals(ARROW_SCHEMA_WITH_HEADERS,
                                                             check_metadata=True)
    want = spark.createDataFrame(
        [(i, [(k, v) for k, v in h] if h else None) for i, h in enumerate(headers)],
        "offset long, headers array<struct<key: string, value: binary>>")
    assert_df_equality(df.select("offset", "headers"), want, ignore_row_order=True)
    assert "headers" not in load(spark, bootstrap, subscribe=topic).columns

    # The Arrow batches a task yields have exactly that schema.
    source = KafkaWireDataSource({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                  "includeHeaders": "true"})
    reader = source.reader(source.schema())
    (part,) = reader.partitions()
    batches = list(reader.read(part))
    assert batches and all(b.schema.equals(ARROW_SCHEMA_WITH_HEADERS) for b in batches)
    assert pa.Table.from_batches(batches).column("headers").null_count == 2

    # A user schema must match the schema the options give.
    fails(lambda: spark.read.format("kafkawire").schema(KAFKA_SCHEMA_WITH_HEADERS)
          .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load()
          .collect(), r"kafkawire has a fixed schema \(key, value, topic, partition, offset, "
                      r"timestamp, timestampType\)")


# ------------------------------------------------------------------------ isolation level


def test_read_committed_never_returns_aborted_records(spark, bootstrap, client, new_topic):
    """Tansu lists no aborted transactions in its Fetch answers; the ABORT marker decides
    (Kafka lists it, and the list decides: tests/integration/test_offsets.py), so exactly the
    committed records come back, also from ranges cut inside the aborted transaction
    (maxRecordsPerPartition)."""
    topic = new_topic(1, "aborted")
    committed_aborted_committed(bootstrap, topic)
    assert resolve_offsets(client, {(topic, 0): LATEST}, READ_COMMITTED) == {(topic, 0): 8}
    want = expected(spark, [(0, 0, "c0"), (0, 1, "c1"), (0, 6, "c2")])
    for split, pieces in (({}, 1), ({"maxRecordsPerPartition": "2"}, 4),
                          ({"maxRecordsPerPartition": "3"}, 3)):
        df = load(spark, bootstrap, subscribe=topic,
                  **{"kafka.isolation.level": "read_committed"}, **split)
        assert df.rdd.getNumPartitions() == pieces
        assert_df_equality(rows(df), want, ignore_row_order=True)


def test_a_topic_may_map_to_earliest_or_latest(spark, bootstrap, split_topic):
    """SPARK-58774 (after Spark 4.2): a topic's value in startingOffsets/endingOffsets may be
    "earliest"/"latest" for all its partitions."""
    df = load(spark, bootstrap, subscribe=split_topic,
              startingOffsets=json.dumps({split_topic: "earliest"}),
              endingOffsets=json.dumps({split_topic: {"0": 3, "1": 2, "2": -1}}))
    assert_df_equality(rows(df), expected(spark, [(0, 0, "p0-0"), (0, 1, "p0-1"), (0, 2, "p0-2"),
                                                  (1, 0, "p1-0"), (1, 1, "p1-1")]),
                       ignore_row_order=True)


# --------------------------------------------------------------------- SQL and options


def test_sql_temporary_view(spark, bootstrap, split_topic):
    spark.sql(f"""
        CREATE OR REPLACE TEMPORARY VIEW kafkawire_view USING kafkawire OPTIONS (
          'kafka.bootstrap.servers' '{bootstrap}', subscribe '{split_topic}',
          startingOffsets '{{"{split_topic}":{{"0":25,"1":-2,"2":-2}}}}',
          groupIdPrefix 'sql-test', 'kafka.group.id' 'sql-group',
          'kafka.max.partition.fetch.bytes' '64', 'kafka.fetch.max.wait.ms' '10',
          'fetchOffset.numRetries' '2', 'fetchOffset.retryIntervalMs' '10')
    """)
    got = spark.sql("SELECT partition, offset, CAST(value AS STRING) AS value "
                    "FROM kafkawire_view WHERE partition < 2")
    want = [(0, o, f"p0-{o}") for o in range(25, 30)] + [(1, o, f"p1-{o}") for o in range(6)]
    assert_df_equality(got, expected(spark, want), ignore_row_order=True, ignore_nullable=True)
