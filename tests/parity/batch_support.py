"""Helpers of the batch-read parity tests (test_batch_read*.py): topics made once per module,
records written by librdkafka, the task layout of a read, and the facts an error message
carries, so that Spark's message and kafkawire's can be compared fact by fact."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

from pyspark.sql import functions as F

from spark_kafka_wire.client.metadata.admin import create_topics
from tests.support.librdkafka import produce_records as produce  # noqa: F401 (re-exported)

#: CreateTime base of the records the tests write, far from the broker's clock
B = 1_600_000_000_000


def make_topic(client: Any, partitions: int, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    create_topics(client, [(name, partitions)])
    return name


def layout(df: Any) -> list[tuple[int, int, int, int]]:
    """(partition, first offset, last offset + 1, rows) of every non-empty Spark partition
    (task) of a read."""
    got = (df.withColumn("sp", F.spark_partition_id()).groupBy("sp", "partition")
           .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"),
                F.count("*").alias("n")).collect())
    return sorted((r.partition, r.lo, r.hi + 1, r.n) for r in got)


def tasks(df: Any) -> int:
    return int(df.rdd.getNumPartitions())


# ------------------------------------------------------------------------- error messages

_JVM_FRAME = re.compile(r"^\s+at |^\s*\.\.\. \d+ more")
_WIRE_ERROR = re.compile(r"^[\w.]*(?:Error|Exception)\w*: (\[[A-Z_0-9.]+\] .*)$", re.M)


def spark_message(error: BaseException) -> str:
    """Spark's error without its JVM stack frames (whose line numbers are no facts)."""
    return "\n".join(line for line in str(error).splitlines() if not _JVM_FRAME.match(line))


def wire_message(error: BaseException) -> str:
    """kafkawire's error as Spark reports it (inside PYTHON_DATA_SOURCE_ERROR or a task's
    PythonException, after the Python traceback): the KafkaWireError's own line, which starts
    with its ``[CONDITION]``."""
    found = _WIRE_ERROR.findall(str(error))
    assert found, f"no kafkawire error ([CONDITION] message) in: {error}"
    return str(found[-1])


def has_tp(message: str, topic: str, partition: int) -> bool:
    """The message names this topic-partition, as ``t-0`` or ``topic t partition 0``."""
    t = re.escape(topic)
    return re.search(rf"{t}-{partition}(?!\d)|topic '?{t}'?,? partition {partition}(?!\d)",
                     message) is not None


def has_number(message: str, n: int) -> bool:
    return re.search(rf"(?<![\d.]){n}(?![\d.]\d)(?!\d)", message) is not None


def assert_same_facts(errors: tuple[BaseException, BaseException], *,
                      tps: Iterable[tuple[str, int]] = (), numbers: Iterable[int] = (),
                      words: Iterable[str] = ()) -> tuple[str, str]:
    """Both messages (oracle first) carry each fact: the topic-partitions, the numbers
    (offsets, timestamps, values) and the words (option names, values; any case). The facts
    are those of Spark's message, so each is first checked there. (Spark's text, kafkawire's
    condition line.)"""
    spark, wire = spark_message(errors[0]), wire_message(errors[1])
    for name, message in (("Spark", spark), ("kafkawire", wire)):
        for t, p in tps:
            assert has_tp(message, t, p), f"{name}'s message does not name {t}-{p}: {message}"
        for n in numbers:
            assert has_number(message, n), f"{name}'s message does not show {n}: {message}"
        for w in words:
            assert w.lower() in message.lower(), f"{name}'s message lacks {w!r}: {message}"
    return spark, wire
