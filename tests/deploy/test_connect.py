"""The same queries through classic PySpark and through Spark Connect.

Spark Connect clients (``SparkSession.builder.remote``) cannot load jars, which is why a
jar-free connector matters there. Each test runs on the classic session and on a Connect
client session whose server is a separate JVM (tests/support/spark_connect.py), with kafkawire
registered from the client: batch write and read, an availableNow stream into a memory table,
a stream written back to Kafka, and an error that keeps its message. librdkafka is the oracle
for what reaches Kafka.
"""

from __future__ import annotations

import uuid

import pytest

from tests.support.write_support import consume

pytestmark = [pytest.mark.spark, pytest.mark.broker]

MODES = ("classic", "connect")
ROWS = [(f"k{i}" if i % 7 else None, f"value-{i}" * (1 + i % 4)) for i in range(300)]


@pytest.fixture(params=MODES)
def session(request):
    return request.getfixturevalue("spark" if request.param == "classic" else "connect_spark")


def _kafka(bootstrap: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap}


def _write(session, bootstrap: str, topic: str, partitions: int = 3) -> None:
    df = session.createDataFrame(ROWS, "key string, value string")
    (df.write.format("kafkawire").options(**_kafka(bootstrap)).option("topic", topic)
     .option("createTopic", "true").option("createTopicPartitions", str(partitions))
     .mode("append").save())


def _pairs(records) -> list[tuple]:
    return sorted((((r.key.decode() if r.key is not None else None), r.value.decode())
                   for r in records), key=str)


def test_batch_write_and_read(session, bootstrap) -> None:
    topic = f"connect-batch-{uuid.uuid4().hex[:8]}"
    _write(session, bootstrap, topic)
    assert _pairs(consume(bootstrap, topic, 3, len(ROWS))) == sorted(ROWS, key=str)
    df = session.read.format("kafkawire").options(**_kafka(bootstrap)) \
        .option("subscribe", topic).load()
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                          "timestampType"]
    got = df.selectExpr("cast(key as string) k", "cast(value as string) v").collect()
    assert sorted(((r.k, r.v) for r in got), key=str) == sorted(ROWS, key=str)


def test_available_now_stream_into_a_memory_table(session, bootstrap, tmp_path) -> None:
    topic = f"connect-stream-{uuid.uuid4().hex[:8]}"
    _write(session, bootstrap, topic)
    name = f"connect_{uuid.uuid4().hex[:8]}"
    q = (session.readStream.format("kafkawire").options(**_kafka(bootstrap))
         .option("subscribe", topic).option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", "100").load()
         .selectExpr("cast(key as string) k", "cast(value as string) v", "partition", "offset")
         .writeStream.format("memory").queryName(name)
         .option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(180)
        assert q.exception() is None
        progress = q.recentProgress
    finally:
        q.stop()
    assert len(progress) >= 3  # 300 records at most 100 per micro-batch
    assert topic in progress[-1]["sources"][0]["endOffset"]
    got = session.sql(f"select k, v from {name}").collect()
    assert sorted(((r.k, r.v) for r in got), key=str) == sorted(ROWS, key=str)


def test_stream_written_back_to_kafka(session, bootstrap, tmp_path) -> None:
    source, sink = (f"connect-{side}-{uuid.uuid4().hex[:8]}" for side in ("src", "dst"))
    _write(session, bootstrap, source)
    q = (session.readStream.format("kafkawire").options(**_kafka(bootstrap))
         .option("subscribe", source).option("startingOffsets", "earliest").load()
         .selectExpr("key", "upper(cast(value as string)) as value")
         .writeStream.format("kafkawire").options(**_kafka(bootstrap)).option("topic", sink)
         .option("createTopic", "true").option("createTopicPartitions", "2")
         .option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(180)
        assert q.exception() is None
    finally:
        q.stop()
    expected = sorted(((k, v.upper()) for k, v in ROWS), key=str)
    assert _pairs(consume(bootstrap, sink, 2, len(ROWS))) == expected


def test_errors_keep_their_message(session, bootstrap) -> None:
    with pytest.raises(Exception, match="subscribe") as info:
        session.read.format("kafkawire").options(**_kafka(bootstrap)).load().collect()
    assert "ConfigurationError" in str(info.value)


def test_avro_values_through_the_registry(session, bootstrap, schema_registry) -> None:
    """value.format=avro written and read, and from_confluent on the raw column: the registry
    is asked where the DataFrame is defined, which under Connect is the server."""
    from spark_kafka_wire.functions import from_confluent

    topic = f"connect-avro-{uuid.uuid4().hex[:8]}"
    avro = {"schema.registry.url": schema_registry, "value.format": "avro"}
    df = session.createDataFrame(ROWS, "key string, value string").selectExpr(
        "key", "named_struct('text', value, 'size', length(value)) AS value")
    (df.write.format("kafkawire").options(**_kafka(bootstrap)).options(**avro)
     .option("topic", topic).option("createTopic", "true").mode("append").save())
    read = session.read.format("kafkawire").options(**_kafka(bootstrap)).options(**avro) \
        .option("subscribe", topic).load()
    assert read.schema["value"].dataType.simpleString() == "struct<text:string,size:int>"
    got = sorted(((r.value.text, r.value.size) for r in read.collect()), key=str)
    assert got == sorted(((v, len(v)) for _, v in ROWS), key=str)
    raw = session.read.format("kafkawire").options(**_kafka(bootstrap)) \
        .option("subscribe", topic).load()
    decoded = raw.select(from_confluent(raw["value"], "avro",
                                        {"schema.registry.url": schema_registry},
                                        topic=topic).alias("v"))
    assert sorted(((r.v.text, r.v.size) for r in decoded.collect()), key=str) == got
