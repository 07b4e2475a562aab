"""Writes through Spark's ``kafka`` sink and through ``kafkawire``: the same DataFrame written
by each format to a topic of its own (same partition count), both topics then read back by
librdkafka (confluent-kafka, the independent reader) and compared record for record; options
and DataFrames that one format refuses must be refused by the other, for the same reasons.

What is compared is what Kafka defines: a keyed record's partition (murmur2 of the key in
both), its key, value and headers, and the order within a partition (one Spark task writes
the rows in order). Null-key rows are placed by each client's own partitioner (Java's sticky
partitioner in Spark, ``murmur2_random`` here), so only their contents are compared.

Differences kept on purpose, asserted as such below (the parity table of docs/parity.md says why):
Spark 4.2's sink ignores a ``timestamp`` column (every record is stamped when sent) where
kafkawire honours it as Spark's newer sink does; Spark's sink takes save mode
``errorifexists`` and stream output mode ``update``, which Spark refuses for Python data
sources; Spark's producer lets the broker auto-create a missing topic where kafkawire asks for
``kafka.allow.auto.create.topics``; kafkawire takes ``acks``/``compression.type`` in any case
and a ``buffer.memory`` below ``batch.size``, and refuses ``kafka.*`` names no Kafka client
has (typos; Java settings it does not use are accepted alike), ``partitioner.ignore.keys=true``
(keyed placement would change), ``transaction.timeout.ms`` without ``transactional.id`` and more than 5
requests in flight under default idempotence (Kafka 4's rule; Spark's kafka-clients 3.9 turns
idempotence off instead).
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections import Counter
from typing import Any

import confluent_kafka as ck
import pytest

from spark_kafka_wire.client.metadata.admin import create_topics
from tests.parity.both import FORMATS, fail_both
from tests.support.write_support import Consumed, consume, end_offsets, stored_batches

UTC = dt.timezone.utc
HEADERS = "array<struct<key: string, value: binary>>"
#: CreateTime, as librdkafka reports a record's timestamp type
CREATE_TIME = ck.TIMESTAMP_CREATE_TIME
PARTITIONS = 3


@pytest.fixture(scope="module")
def topics(client):
    """Factory: {format: a fresh topic} with ``partitions`` partitions each."""

    def make(partitions: int = PARTITIONS) -> dict[str, str]:
        names = {fmt: f"pw-{fmt}-{uuid.uuid4().hex[:10]}" for fmt in FORMATS}
        create_topics(client, [(name, partitions) for name in names.values()])
        return names

    return make


def write(df: Any, fmt: str, bootstrap: str, mode: str = "append", **options: str) -> None:
    (df.write.format(fmt).option("kafka.bootstrap.servers", bootstrap).options(**options)
     .mode(mode).save())


def write_both(df: Any, bootstrap: str, targets: dict[str, str], **options: str) -> None:
    for fmt in FORMATS:
        write(df, fmt, bootstrap, topic=targets[fmt], **options)


def headers_of(record: Consumed) -> list[tuple[str, bytes | None]]:
    return [(k, v) for k, v in (record.headers or [])]


def placed(records: list[Consumed]) -> dict[int, list[tuple]]:
    """Keyed records by partition, in offset order: (key, value, headers)."""
    out: dict[int, list[tuple]] = {}
    for r in records:
        if r.key is not None:
            out.setdefault(r.partition, []).append((r.key, r.value, headers_of(r)))
    return out


def placed_unordered(records: list[Consumed]) -> dict[int, list[tuple]]:
    """``placed`` with each partition's records sorted by value: for writes by parallel tasks,
    whose rows interleave in a partition (values unique)."""
    return {p: sorted(rows, key=lambda r: r[1]) for p, rows in placed(records).items()}


def contents(records: list[Consumed]) -> Counter:
    return Counter((r.key, r.value, tuple(headers_of(r))) for r in records)


def both_stored(bootstrap: str, targets: dict[str, str], expected: int,
                partitions: int = PARTITIONS) -> dict[str, list[Consumed]]:
    return {fmt: consume(bootstrap, targets[fmt], partitions, expected) for fmt in FORMATS}


def messages(errors: tuple[BaseException, BaseException]) -> dict[str, str]:
    return dict(zip(FORMATS, (str(e) for e in errors), strict=True))


def assert_facts(errors: tuple[BaseException, BaseException], *facts: str) -> None:
    for fmt, text in messages(errors).items():
        for fact in facts:
            assert fact in text, f"{fmt}'s error does not say {fact!r}: {text[:2000]}"


# ------------------------------------------------------------ one rich DataFrame, both formats

ROWS = 48
SENT_AT = dt.datetime(2021, 3, 4, 5, 6, 7, tzinfo=UTC)
SENT_AT_MS = int(SENT_AT.timestamp() * 1000)


def _row(i: int) -> tuple:
    if i % 8 == 7:
        key, value = None, f"v{i}".encode()  # null key
    elif i % 8 == 3:
        key, value = f"tomb{i}", None  # null value (a tombstone)
    else:
        key, value = f"k{i % 11}", f"v{i}".encode()
    headers = [None, [], [("a", b"1"), ("a", None), ("b", b"2")], [("h", f"{i}".encode())]][i % 4]
    timestamp = None if i % 3 == 0 else SENT_AT + dt.timedelta(milliseconds=i)
    return key, value, headers, timestamp, "not a Kafka column"


def _identity(key: bytes | str | None, value: bytes | None) -> str:
    """A row's unique name: its value, or for a tombstone its key."""
    if value is not None:
        return value.decode()
    assert key is not None
    return key.decode() if isinstance(key, bytes) else key


@pytest.fixture(scope="module")
def written(spark, bootstrap, topics):
    """The same 48 rows (keys, null keys, null values, headers with repeated keys and null
    values, empty and null header arrays, timestamps and null timestamps, an extra column)
    written by each format, in one Spark task, to its own 3-partition topic: {format: (what
    librdkafka reads, ms before the write, ms after it)}."""
    rows = [_row(i) for i in range(ROWS)]
    df = spark.createDataFrame(
        rows, f"key string, value binary, headers {HEADERS}, timestamp timestamp, note string"
    ).coalesce(1)
    targets = topics()
    windows = {}
    for fmt in FORMATS:
        before = int(time.time() * 1000)
        write(df, fmt, bootstrap, topic=targets[fmt])
        windows[fmt] = (before, int(time.time() * 1000))
    stored = both_stored(bootstrap, targets, ROWS)
    return {"rows": rows, **{fmt: (stored[fmt], *windows[fmt]) for fmt in FORMATS}}


def test_keyed_rows_land_in_the_same_partitions_with_the_same_keys_values_and_headers(written):
    spark_placed, wire_placed = (placed(written[fmt][0]) for fmt in FORMATS)
    assert len(spark_placed) == PARTITIONS  # the keys spread: the placement is really tested
    assert wire_placed == spark_placed
    # and what was stored is what the rows said: null values, header order, repeated header
    # keys, null header values, null and empty header arrays (no headers)
    expected = Counter((k.encode(), v, tuple(h or ())) for k, v, h, _, _ in written["rows"]
                       if k is not None)
    assert sum(expected.values()) == sum(len(v) for v in spark_placed.values())
    assert Counter((k, v, tuple(h)) for rows in wire_placed.values() for k, v, h in rows) \
        == expected


def test_null_key_rows_have_the_same_contents_wherever_each_partitioner_puts_them(written):
    spark_rows, wire_rows = (
        contents([r for r in written[fmt][0] if r.key is None]) for fmt in FORMATS)
    assert sum(spark_rows.values()) == ROWS // 8
    assert wire_rows == spark_rows
    for fmt in FORMATS:  # placement is each partitioner's choice, but always a real partition
        assert {r.partition for r in written[fmt][0] if r.key is None} <= set(range(PARTITIONS))


def test_timestamp_column_ignored_by_spark_4_2_honoured_by_kafkawire(written):
    """Spark 4.2's sink has no ``timestamp`` column (its KafkaWriter knows topic, key, value,
    headers and partition): every record is stamped when sent. kafkawire writes the column's
    timestamp, as Spark's newer sink does, and stamps a null one when sent."""
    given = {_identity(k, v): ts for k, v, _, ts, _ in written["rows"]}
    spark_records, before, after = written["kafka"]
    for r in spark_records:
        kind, ms = r.timestamp
        assert kind == CREATE_TIME and before <= ms <= after, (r, before, after)
    wire_records, before, after = written["kafkawire"]
    for r in wire_records:
        kind, ms = r.timestamp
        want = given[_identity(r.key, r.value)]
        assert kind == CREATE_TIME
        if want is None:
            assert before <= ms <= after, (r, before, after)
        else:
            assert ms == int(want.timestamp() * 1000), r
    assert sum(ts is not None for ts in given.values()) == ROWS - ROWS // 3


def test_timestamp_column_of_another_type(spark, bootstrap, client, topics):
    """Spark 4.2 never looks at a ``timestamp`` column, whatever its type; kafkawire refuses one
    that is neither a timestamp nor a double (seconds), naming the column and its type."""
    targets = topics()
    df = spark.createDataFrame([("k", "v", "yesterday")], "key string, value string, "
                               "timestamp string")
    write(df, "kafka", bootstrap, topic=targets["kafka"])
    with pytest.raises(Exception) as refused:
        write(df, "kafkawire", bootstrap, topic=targets["kafkawire"])
    assert "column 'timestamp' must be timestamp or double (seconds), got string" \
        in str(refused.value)
    assert sum(end_offsets(client, targets["kafka"], PARTITIONS).values()) == 1
    assert sum(end_offsets(client, targets["kafkawire"], PARTITIONS).values()) == 0


# ------------------------------------------------------------------ partition and topic columns


def test_partition_column(spark, bootstrap, topics):
    """An explicit partition wins over the key; a null one leaves the row to the partitioner."""
    rows = [(f"k{i}", f"v{i}", None if i % 3 == 0 else (i * 7) % PARTITIONS) for i in range(24)]
    df = spark.createDataFrame(rows, "key string, value string, partition int").coalesce(1)
    targets = topics()
    write_both(df, bootstrap, targets)
    stored = both_stored(bootstrap, targets, len(rows))
    assert placed(stored["kafkawire"]) == placed(stored["kafka"])
    for r in stored["kafka"]:
        i = int(r.value.decode()[1:])
        if rows[i][2] is not None:
            assert r.partition == rows[i][2], r


@pytest.mark.parametrize("partition", [PARTITIONS + 4, -1])
def test_partition_outside_the_topic_fails_in_both(spark, bootstrap, topics, partition):
    df = spark.createDataFrame([("k", "v", partition)], "key string, value string, "
                               "partition int")
    targets = topics()
    # Java's producer waits max.block.ms (60 s by default) for metadata to show a partition
    # beyond the topic's; kafkawire, which accepts and ignores the setting, fails at once
    errors = fail_both(lambda fmt: write(df, fmt, bootstrap, topic=targets[fmt],
                                         **{"kafka.max.block.ms": "1500"}))
    if partition < 0:
        assert "Invalid partition: -1. Partition number should always be non-negative" \
            in str(errors[0])
    else:
        assert f"Partition {partition} of topic {targets['kafka']} with partition count " \
            f"{PARTITIONS} is not present" in str(errors[0])
    assert f"column 'partition' holds {partition}, but topic '{targets['kafkawire']}' has " \
        f"partitions 0..{PARTITIONS - 1}" in str(errors[1])


@pytest.mark.parametrize(("headers", "wire_says"), [
    ([(None, b"x")], "row 0 has a header with a null key"),
    ([None], "row 0 has a null element in its 'headers' array"),
], ids=["null header key", "null header"])
def test_broken_headers_fail_in_both(spark, bootstrap, client, topics, headers, wire_says):
    """Spark's task dies of a NullPointerException; kafkawire says which row and why."""
    df = spark.createDataFrame([("v", headers)], f"value string, headers {HEADERS}")
    targets = topics()
    errors = fail_both(lambda fmt: write(df, fmt, bootstrap, topic=targets[fmt]))
    assert "NullPointerException" in str(errors[0])
    assert wire_says in str(errors[1])
    for fmt in FORMATS:
        assert sum(end_offsets(client, targets[fmt], PARTITIONS).values()) == 0


def test_topic_column_sends_rows_to_two_topics(spark, bootstrap, topics):
    first, second = topics(), topics()
    rows = [(f"k{i}", f"v{i}", i % 2) for i in range(20)]
    stored = {}
    for fmt in FORMATS:
        names = [first[fmt], second[fmt]]
        df = spark.createDataFrame([(names[t], k, v) for k, v, t in rows],
                                   "topic string, key string, value string").coalesce(1)
        write(df, fmt, bootstrap)
        stored[fmt] = [consume(bootstrap, name, PARTITIONS, 10) for name in names]
    for spark_records, wire_records in zip(stored["kafka"], stored["kafkawire"], strict=True):
        assert placed(wire_records) == placed(spark_records)
    assert {r.value for r in stored["kafka"][1]} == {f"v{i}".encode() for i in range(1, 20, 2)}


def test_topic_option_wins_over_the_topic_column(spark, bootstrap, client, topics):
    column, option = topics(), topics()
    for fmt in FORMATS:
        df = spark.createDataFrame([(column[fmt], f"k{i}", f"v{i}") for i in range(9)],
                                   "topic string, key string, value string")
        write(df, fmt, bootstrap, topic=option[fmt])
    stored = both_stored(bootstrap, option, 9)
    assert placed_unordered(stored["kafkawire"]) == placed_unordered(stored["kafka"])
    for fmt in FORMATS:
        assert sum(end_offsets(client, column[fmt], PARTITIONS).values()) == 0


def test_null_topic_without_the_topic_option_fails_in_both(spark, bootstrap, topics):
    targets = topics()
    errors = fail_both(lambda fmt: write(
        spark.createDataFrame([(targets[fmt], "x"), (None, "y")], "topic string, value string"),
        fmt, bootstrap))
    spark_text, wire_text = messages(errors).values()
    assert "null topic" in spark_text.lower(), spark_text[:2000]
    assert "'topic' column is null" in wire_text, wire_text[:2000]


# --------------------------------------------------------------------------- producer settings

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize("codec", list(CODECS))
def test_compression_type(spark, bootstrap, client, topics, codec):
    """Each codec: both formats store batches compressed with it, which librdkafka reads back
    to the same records."""
    rows = [(f"k{i % 4}", f"value {i} " * 20) for i in range(30)]
    df = spark.createDataFrame(rows, "key string, value string").coalesce(1)
    targets = topics(1)
    write_both(df, bootstrap, targets, **{"kafka.compression.type": codec})
    stored = both_stored(bootstrap, targets, len(rows), partitions=1)
    assert placed(stored["kafkawire"]) == placed(stored["kafka"])
    for fmt in FORMATS:
        codecs = {b.codec for b in stored_batches(client, targets[fmt], 0)}
        assert codecs == {CODECS[codec]}, (fmt, codecs)


@pytest.mark.parametrize("options", [
    {"kafka.acks": "0"},
    {"kafka.acks": "1", "kafka.linger.ms": "0"},
    {"kafka.acks": "all", "kafka.linger.ms": "50", "kafka.batch.size": "64"},
    {"kafka.acks": "-1", "kafka.batch.size": "0", "kafka.enable.idempotence": "false"},
    # Java client settings kafkawire does not use (accepted without effect, one warning),
    # the Java producer's and a consumer's (one options dict shared with a read)
    {"kafka.client.dns.lookup": "use_all_dns_ips", "kafka.client.rack": "rack-1",
     "kafka.metadata.max.idle.ms": "60000", "kafka.default.api.timeout.ms": "60000",
     "kafka.socket.connection.setup.timeout.max.ms": "30000",
     "kafka.metadata.recovery.strategy": "rebootstrap"},
    {"kafka.metric.reporters": "", "kafka.metrics.num.samples": "3",
     "kafka.metrics.recording.level": "DEBUG", "kafka.auto.include.jmx.reporter": "false",
     "kafka.enable.metrics.push": "false"},
    {"kafka.partitioner.adaptive.partitioning.enable": "false",
     "kafka.partitioner.availability.timeout.ms": "0", "kafka.partitioner.ignore.keys": "false"},
    # KIP-390's levels, honoured by both (each for its codec)
    {"kafka.compression.type": "gzip", "kafka.compression.gzip.level": "1",
     "kafka.compression.lz4.level": "9", "kafka.compression.zstd.level": "1"},
    {"kafka.compression.type": "zstd", "kafka.compression.zstd.level": "19"},
    {"kafka.isolation.level": "read_committed", "kafka.fetch.max.bytes": "1048576",
     "kafka.exclude.internal.topics": "false", "kafka.group.instance.id": "g1"},
], ids=lambda o: ",".join(f"{k[6:]}={v}" for k, v in o.items()))
def test_producer_settings_accepted_alike(spark, bootstrap, topics, options):
    rows = [(f"k{i}", f"v{i}") for i in range(15)]
    df = spark.createDataFrame(rows, "key string, value string").coalesce(1)
    targets = topics()
    write_both(df, bootstrap, targets, **options)
    stored = both_stored(bootstrap, targets, len(rows))
    assert placed(stored["kafkawire"]) == placed(stored["kafka"])


@pytest.mark.parametrize(("options", "facts"), [
    ({"kafka.key.serializer": "org.example.S"}, ("key.serializer", "is not supported")),
    ({"kafka.value.serializer": "org.example.S"}, ("value.serializer", "is not supported")),
    ({"kafka.acks": "2"}, ("acks", "2")),
    ({"kafka.compression.type": "brotli"}, ("compression.type", "brotli")),
    ({"kafka.compression.gzip.level": "0"}, ("compression.gzip.level", "0")),
    ({"kafka.compression.zstd.level": "23"}, ("compression.zstd.level", "23")),
    ({"kafka.linger.ms": "soon"}, ("linger.ms", "soon")),
    ({"kafka.batch.size": "-1"}, ("batch.size", "-1")),
    ({"kafka.linger.ms": "-1"}, ("linger.ms", "-1")),
    ({"kafka.enable.idempotence": "yes"}, ("enable.idempotence", "yes")),
    ({"kafka.enable.idempotence": "true", "kafka.max.in.flight.requests.per.connection": "6"},
     ("max.in.flight.requests.per.connection", "at most 5")),
    ({"kafka.enable.idempotence": "true", "kafka.retries": "0"}, ("retries", "non-zero")),
    ({"kafka.enable.idempotence": "true", "kafka.acks": "1"}, ("acks", "all", "idempoten")),
    ({"kafka.partitioner.class": "org.example.P"}, ("partitioner.class",)),
], ids=lambda v: ",".join(f"{k[6:]}={x}" for k, x in v.items()) if isinstance(v, dict) else None)
def test_producer_settings_refused_alike(spark, bootstrap, client, topics, options, facts):
    """Spark refuses the serializers before running; the Java producer refuses the other
    values when a task creates it; kafkawire refuses all on the driver. Nothing is written."""
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    targets = topics()
    errors = fail_both(lambda fmt: write(df, fmt, bootstrap, topic=targets[fmt], **options))
    assert_facts(errors, *facts)
    for fmt in FORMATS:
        assert sum(end_offsets(client, targets[fmt], PARTITIONS).values()) == 0


@pytest.mark.parametrize(("options", "spark_says", "wire_says"), [
    # values Java's ProducerConfig refuses and kafkawire takes: case-insensitive names, and a
    # buffer.memory below batch.size (Java cannot allocate a batch; here it sends sooner)
    ({"kafka.acks": "ALL"}, "Invalid value ALL for configuration acks", None),
    ({"kafka.compression.type": "GZIP"}, "Invalid value GZIP for configuration compression.type",
     None),
    ({"kafka.buffer.memory": "100"}, "hard limit of 100 on memory allocations", None),
    # a name no Kafka client has (a typo): Java's clients only log that they ignore it
    ({"kafka.frobnicate": "1"}, None,
     "UNKNOWN_OPTION] unknown Kafka client option(s): 'kafka.frobnicate'"),
    ({"kafka.linger.msec": "5"}, None,
     "'kafka.linger.msec' (did you mean 'kafka.linger.ms'?)"),
    # a setting whose loss would change where keyed records go: Java's producer spreads them
    # whatever their key, kafkawire refuses rather than placing them by key
    ({"kafka.partitioner.ignore.keys": "true"}, None,
     "REFUSED_OPTION] Kafka option 'kafka.partitioner.ignore.keys=true' is not supported"),
    ({"kafka.transaction.timeout.ms": "60000"}, None,
     "kafka.transaction.timeout.ms takes effect only with kafka.transactional.id"),
    # idempotence left on by default with more than 5 requests in flight: Spark's
    # kafka-clients 3.9 turns it off with a warning (an error from Kafka 4.0 on); kafkawire
    # refuses it, as Kafka 4's producer does
    ({"kafka.max.in.flight.requests.per.connection": "6"}, None,
     "kafka.max.in.flight.requests.per.connection must be at most 5; got 6"),
], ids=lambda v: ",".join(f"{k[6:]}={x}" for k, x in v.items()) if isinstance(v, dict) else None)
def test_producer_settings_one_format_refuses(spark, bootstrap, client, topics, options,
                                              spark_says, wire_says):
    """The differences, each format's outcome asserted: a refusal says what it refuses and
    writes nothing; the other format writes the row."""
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    targets = topics()
    for fmt, says in zip(FORMATS, (spark_says, wire_says), strict=True):
        if says is None:
            write(df, fmt, bootstrap, topic=targets[fmt], **options)
            assert sum(end_offsets(client, targets[fmt], PARTITIONS).values()) == 1
        else:
            with pytest.raises(Exception) as refused:
                write(df, fmt, bootstrap, topic=targets[fmt], **options)
            assert says in str(refused.value), (fmt, str(refused.value)[:2000])
            assert sum(end_offsets(client, targets[fmt], PARTITIONS).values()) == 0


# -------------------------------------------------------------------------------- the columns


@pytest.mark.parametrize(("schema", "row", "topic", "facts"), [
    ("value string", ("v",), False, ("topic", "option")),
    ("topic int, value string", (1, "v"), False, ("topic", "int", "string")),
    ("key int, value string", (1, "v"), True, ("key", "int", "string or binary")),
    ("value int", (1,), True, ("value", "int", "string or binary")),
    ("key string, other string", ("k", "o"), True, ("'value'",)),
    ("Value string", ("v",), True, ("'value'",)),  # names are case-sensitive in both
    ("value string, partition bigint", ("v", 0), True, ("partition", "bigint", "int")),
    ("value string, headers array<struct<key: string, value: string>>", ("v", None), True,
     ("headers", "array<struct<key:string,value:string>>")),
], ids=["no topic", "topic int", "key int", "value int", "no value", "Value",
        "partition bigint", "headers of strings"])
def test_columns_refused_alike(spark, bootstrap, client, topics, schema, row, topic, facts):
    """Both check the columns before anything runs, and say which column, its type and the
    types it may have."""
    df = spark.createDataFrame([row], schema)
    targets = topics()
    errors = fail_both(lambda fmt: write(
        df, fmt, bootstrap, **({"topic": targets[fmt]} if topic else {})))
    assert_facts(errors, *facts)
    for fmt in FORMATS:
        assert sum(end_offsets(client, targets[fmt], PARTITIONS).values()) == 0


# ------------------------------------------------------------------------------- save modes


def test_save_modes(spark, bootstrap, client, topics):
    """append: both. errorifexists (the default of DataFrameWriter): Spark's kafka sink takes
    it as append; Spark refuses it for every Python data source before kafkawire is asked.
    overwrite and ignore: refused by both (ignore by Spark itself for Python data sources,
    overwrite by kafkawire, which Spark asks)."""
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    targets = topics()
    for fmt in FORMATS:
        write(df, fmt, bootstrap, mode="append", topic=targets[fmt])
    write(df, "kafka", bootstrap, mode="errorifexists", topic=targets["kafka"])
    with pytest.raises(Exception, match=r"UNSUPPORTED_DATA_SOURCE_SAVE_MODE.*\"ErrorIfExists\""):
        write(df, "kafkawire", bootstrap, mode="errorifexists", topic=targets["kafkawire"])
    overwrite = fail_both(lambda fmt: write(df, fmt, bootstrap, mode="overwrite",
                                            topic=targets[fmt]))
    assert "Save mode Overwrite not allowed for Kafka" in str(overwrite[0])
    assert "save mode overwrite is not allowed" in str(overwrite[1])
    ignore = fail_both(lambda fmt: write(df, fmt, bootstrap, mode="ignore", topic=targets[fmt]))
    assert "Save mode Ignore not allowed for Kafka" in str(ignore[0])
    assert "UNSUPPORTED_DATA_SOURCE_SAVE_MODE" in str(ignore[1])
    assert sum(end_offsets(client, targets["kafka"], PARTITIONS).values()) == 2
    assert sum(end_offsets(client, targets["kafkawire"], PARTITIONS).values()) == 1


# ----------------------------------------------------------------------------- missing topics


def test_missing_topic_created_by_the_broker_only_when_allowed(spark, bootstrap, client):
    """Spark's producer (allow.auto.create.topics=true, Java's default) lets a broker with
    auto.create.topics.enable create a missing topic; kafkawire fails naming it unless
    kafka.allow.auto.create.topics=true is given."""
    names = {fmt: f"pw-missing-{fmt}-{uuid.uuid4().hex[:8]}" for fmt in FORMATS}
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    write(df, "kafka", bootstrap, topic=names["kafka"])
    assert consume(bootstrap, names["kafka"], 1, 1)[0].value == b"v"
    with pytest.raises(Exception, match=rf"UNKNOWN_TOPIC_OR_PARTITION.*{names['kafkawire']}"):
        write(df, "kafkawire", bootstrap, topic=names["kafkawire"])
    write(df, "kafkawire", bootstrap, topic=names["kafkawire"],
          **{"kafka.allow.auto.create.topics": "true"})
    assert consume(bootstrap, names["kafkawire"], 1, 1)[0].value == b"v"


# ------------------------------------------------------------------------------ streaming


@pytest.fixture(scope="module")
def stream_source(bootstrap, topics) -> str:
    """A 3-partition topic of 30 records: 7 keys, headers (some with a null value) on odd ones."""
    source = topics()["kafka"]
    producer = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(30):
        producer.produce(source, key=f"k{i % 7}".encode(), value=f"v{i}".encode(),
                         partition=i % PARTITIONS,
                         headers=[("n", f"{i}".encode()), ("n", None)] if i % 2 else None)
    assert producer.flush(10) == 0
    return source


def read_stream(spark, bootstrap: str, source: str) -> Any:
    """Spark's own source for both sinks, so that only the sinks differ."""
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", source).option("startingOffsets", "earliest")
            .option("includeHeaders", "true").load())


def run_available_now(stream: Any, fmt: str, bootstrap: str, topic: str, checkpoint: str,
                      mode: str = "append") -> None:
    query = (stream.writeStream.format(fmt).outputMode(mode)
             .option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()


def test_streaming_write_available_now(spark, bootstrap, topics, stream_source, tmp_path):
    """writeStream to each format from the same source topic, trigger AvailableNow: the same
    records in the same partitions."""
    targets = topics()
    for fmt in FORMATS:
        run_available_now(read_stream(spark, bootstrap, stream_source)
                          .select("key", "value", "headers"),
                          fmt, bootstrap, targets[fmt], str(tmp_path / fmt))
    stored = both_stored(bootstrap, targets, 30)
    # the source's partitions are read by parallel tasks, whose rows interleave in a target
    # partition: compare each partition's records, not their order
    assert placed_unordered(stored["kafkawire"]) == placed_unordered(stored["kafka"])
    assert contents(stored["kafka"]) == contents(stored["kafkawire"])


def test_streaming_output_modes(spark, bootstrap, client, topics, stream_source, tmp_path):
    """An aggregation written in complete mode: the same rows from both sinks. Update mode:
    Spark's kafka sink takes it; Spark refuses it for a Python data source's sink."""
    counts = (read_stream(spark, bootstrap, stream_source).groupBy("key").count()
              .selectExpr("key", "CAST(count AS STRING) AS value"))
    complete = topics()
    for fmt in FORMATS:
        run_available_now(counts, fmt, bootstrap, complete[fmt], str(tmp_path / f"c-{fmt}"),
                          mode="complete")
    stored = both_stored(bootstrap, complete, 7)
    # the counts come from parallel tasks (shuffle partitions)
    assert {p: sorted(rows) for p, rows in placed(stored["kafkawire"]).items()} \
        == {p: sorted(rows) for p, rows in placed(stored["kafka"]).items()}
    assert contents(stored["kafka"]) == Counter(
        (f"k{k}".encode(), b"5" if k < 2 else b"4", ()) for k in range(7))
    update = topics()
    run_available_now(counts, "kafka", bootstrap, update["kafka"], str(tmp_path / "u-kafka"),
                      mode="update")
    assert contents(consume(bootstrap, update["kafka"], PARTITIONS, 7)) \
        == contents(stored["kafka"])
    with pytest.raises(Exception, match=r"kafkawire does not support Update mode"):
        run_available_now(counts, "kafkawire", bootstrap, update["kafkawire"],
                          str(tmp_path / "u-kafkawire"), mode="update")
    assert sum(end_offsets(client, update["kafkawire"], PARTITIONS).values()) == 0
