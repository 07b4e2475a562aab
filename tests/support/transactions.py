"""Transactional data written by librdkafka, shared by the read_committed tests, and an
exactly-once write task's steps without Spark (``task_transaction``)."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

import confluent_kafka as ck
import numpy as np
import pyarrow as pa

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.offsets import (
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    resolve_offsets,
)
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer
from spark_kafka_wire.options.produce import SinkOptions
from spark_kafka_wire.sink.batch_writer import KafkaWriteCommitMessage
from spark_kafka_wire.sink.exactly_once import (
    TaskBatch,
    marker_metadata,
    marker_offset,
    task_transactional_id,
)


def transactional_producer(bootstrap: str, **config: object) -> ck.Producer:
    """A librdkafka producer with a fresh transactional.id, initialised; ``config`` adds
    settings (``compression.type``, ...)."""
    p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex,
                     "log_level": 0, **config})
    p.init_transactions(20)
    return p


def committed_then_open(bootstrap: str, topic: str) -> ck.Producer:
    """c0, c1, c2 committed (offsets 0-2, marker at 3), then "open" at offset 4 in a transaction
    left open: the caller aborts it (``abort_transaction``) when done."""
    p = transactional_producer(bootstrap)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=b"c%d" % i, partition=0)
    p.commit_transaction(20)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    p.flush(20)
    return p


def committed_aborted_committed(bootstrap: str, topic: str) -> None:
    """c0 c1 committed, a0 a1 aborted, c2 committed: 5 records and 3 markers (end offset 8),
    every marker written when it returns."""
    p = transactional_producer(bootstrap)
    for values, commit in (([b"c0", b"c1"], True), ([b"a0", b"a1"], False), ([b"c2"], True)):
        p.begin_transaction()
        for v in values:
            p.produce(topic, value=v, partition=0)
        p.flush(20)
        p.commit_transaction(20) if commit else p.abort_transaction(20)
    # the last commit returned before its marker was written (each earlier one was written
    # before the next transaction could add the partition): the layout is exact once it is
    with KafkaClient(ClientConfig.from_servers(bootstrap)) as client:
        wait_until_no_transaction_open(client, topic, 1)


def task_transaction(client: KafkaClient, options: SinkOptions, prefix: str, task: int,
                     batch: TaskBatch | None, ids: range, partitions: int
                     ) -> KafkaWriteCommitMessage:
    """What an exactly-once write task does (``batch_writer.write`` without Spark's
    TaskContext, so a test can stop a task or its driver between the steps of the two-phase
    commit): InitProducerId for ``<prefix>-<task>``, the ids written round robin to
    ``partitions`` partitions and flushed, for a streaming ``batch`` its marker committed in
    the transaction, which is left open for the driver (``KafkaWireBatchWriter.commit``)."""
    tid = task_transactional_id(prefix, task)
    topic = options.topic
    assert topic is not None, "the sink options name no topic"
    producer = Producer(client, replace(options.produce, transactional_id=tid))
    values = pa.array([str(i).encode() for i in ids], pa.binary())
    producer.append(topic, values, values, np.arange(len(ids)) % partitions, 0)
    producer.flush()
    txn = producer.open_transaction()
    assert txn is not None
    if batch is not None:
        producer.commit_offsets(tid, {(topic, 0): (marker_offset(batch),
                                                           marker_metadata(batch))})
    return KafkaWriteCommitMessage(producer.records_sent, producer.requests_sent,
                                   producer.producer_id, txn, batch=batch)


def wait_until_no_transaction_open(client: KafkaClient, topic: str, partitions: int,
                                   within_s: float = 10.0) -> float:
    """Seconds until every partition's read_committed end (last stable offset) reaches its
    high watermark, i.e. no transaction is open on the topic and every ended one has its
    markers (Kafka answers EndTxn, and librdkafka's commit_transaction returns, before the
    coordinator has written them); AssertionError after ``within_s``."""
    began = time.monotonic()
    tps = [(topic, p) for p in range(partitions)]
    while True:
        stable = resolve_offsets(client, dict.fromkeys(tps, LATEST), READ_COMMITTED)
        ends = resolve_offsets(client, dict.fromkeys(tps, LATEST), READ_UNCOMMITTED)
        if stable == ends:
            return time.monotonic() - began
        assert time.monotonic() - began < within_s, (
            f"a transaction is still open on {topic} after {within_s}s: last stable offsets "
            f"{stable}, high watermarks {ends}")
        time.sleep(0.1)
