"""What the Spark tests over the secured brokers (tests/spark/test_tls.py, test_sasl.py) each
do through one set of options, compared with librdkafka through the same broker."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.librdkafka import consume, produce


def _pairs(rows) -> list[tuple]:
    return [(bytes(r.key), bytes(r.value)) for r in rows]


def write_then_read(spark, options: dict[str, str], conf: dict, prefix: str, records: list,
                    check_plan: Callable[[str], None]) -> str:
    """kafkawire's sink writes ``records`` into a new topic, which librdkafka reads exactly;
    librdkafka writes them into another, which a kafkawire batch read returns exactly
    (``check_plan`` gets the read's plan text). The topic librdkafka wrote."""
    written = f"{prefix}-w-{uuid.uuid4().hex[:8]}"
    df = spark.createDataFrame(records, "key binary, value binary").coalesce(1)
    (df.write.format("kafkawire").options(**options).option("topic", written)
     .option("createTopic", "true").option("createTopicPartitions", "1").mode("append").save())
    assert consume(conf, written, len(records)) == records

    read = f"{prefix}-r-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf)  # kept referenced until the topic exists
    admin.create_topics([NewTopic(read, 1, 1)])[read].result(30)
    produce(conf, read, records)
    batch = spark.read.format("kafkawire").options(**options).option("subscribe", read).load()
    check_plan(batch._jdf.queryExecution().toString())
    assert _pairs(batch.orderBy("offset").select("key", "value").collect()) == records
    return read


def available_now(spark, options: dict[str, str], topic: str, name: str, checkpoint: Path,
                  check_progress: Callable[[str], None]) -> list[tuple]:
    """(key, value) of ``topic`` read by an availableNow stream (64 records per micro-batch)
    into the memory table ``name``; ``check_progress`` gets each progress report's text."""
    stream = spark.readStream.format("kafkawire").options(**options).option("subscribe", topic) \
        .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "64").load()
    q = (stream.select("key", "value", "offset").writeStream.format("memory")
         .queryName(name).option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
        assert not q.isActive and q.exception() is None
        assert q.recentProgress
        for progress in q.recentProgress:
            check_progress(str(progress))
    finally:
        q.stop()
    return _pairs(spark.sql(f"select key, value from {name} order by offset").collect())
