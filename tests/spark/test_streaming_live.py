"""Streams started on a topic that is being written, as most users start them.

The start (``latest``, a timestamp, a group's commits) is resolved while records keep arriving,
so any re-resolution of it between Spark's calls shows up as a gap, a repeat or a failed first
batch. Each query runs 20+ micro-batches, is restarted from its checkpoint, and what it read is
compared record by record with what librdkafka reads from the same topic.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable

import confluent_kafka
import pytest

from spark_kafka_wire.source.offsets_json import START_KEY
from tests.support.write_support import Consumed, consume, end_offsets

pytestmark = [pytest.mark.spark, pytest.mark.broker]

PARTITIONS = 2
RATE_PER_S = 1000
TRIGGER = "200 milliseconds"


class LiveProducer:
    """librdkafka writing about RATE_PER_S records a second, round-robin over the partitions,
    each with its own CreateTime (wall clock ms, never going back within a partition)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap,
                                                  "linger.ms": 5, "log_level": 3})
        self.sent = 0
        self.delivered = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-producer", daemon=True)

    def _on_delivery(self, err, _msg) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.delivered += 1

    def _run(self) -> None:
        step = 0.05
        per_step = int(RATE_PER_S * step)
        last_ts = 0
        while not self._stop.is_set():
            began = time.monotonic()
            for _ in range(per_step):
                n = self.sent
                ts = max(last_ts, int(time.time() * 1000))
                last_ts = ts
                self.producer.produce(self.topic, key=b"k%07d" % n, value=b"live-%07d" % n,
                                      partition=n % PARTITIONS, timestamp=ts,
                                      on_delivery=self._on_delivery)
                self.sent += 1
            self.producer.poll(0)
            self._stop.wait(max(0.0, step - (time.monotonic() - began)))
        self.producer.flush(30)

    def __enter__(self) -> LiveProducer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(60)
        assert not self.errors, self.errors[:3]
        assert self.delivered == self.sent

    def __exit__(self, *exc) -> None:
        self.stop()


class BatchCollector:
    """foreachBatch sink keeping each micro-batch's rows by batch id: a batch Spark runs again
    after a restart replaces its earlier copy, which is what an idempotent sink sees."""

    def __init__(self, fail_first_data: bool = False) -> None:
        self.batches: dict[int, list[tuple]] = {}
        self.run = 1  # which query run wrote each batch, to see where a restart began
        self.written_by: dict[int, int] = {}
        self.fail_first_data = fail_first_data
        self.failed_batch: int | None = None
        self.failed_rows: list[tuple] | None = None

    def __call__(self, df, batch_id: int) -> None:
        rows = [(r.partition, r.offset, r.key, r.value, r.ts)
                for r in df.selectExpr("partition", "offset", "key", "value",
                                       "cast(unix_micros(timestamp) / 1000 as long) as ts")
                .collect()]
        if rows and self.fail_first_data:
            self.fail_first_data = False
            self.failed_batch, self.failed_rows = batch_id, rows
            raise RuntimeError(f"planned failure in batch {batch_id}")
        self.batches[batch_id] = rows
        self.written_by[batch_id] = self.run

    def data_batches(self) -> int:
        return sum(1 for rows in self.batches.values() if rows)

    def rows(self) -> list[tuple]:
        return [r for _, rows in sorted(self.batches.items()) for r in rows]


def _start(spark, bootstrap: str, topic: str, sink: BatchCollector, checkpoint: str,
           **options: str):
    reader = (spark.readStream.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic))
    for k, v in options.items():
        reader = reader.option(k, v)
    return (reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
            .trigger(processingTime=TRIGGER).start())


def _run_until(q, done: Callable[[], bool], what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert q.exception() is None, q.exception()
        assert q.isActive, "the query stopped by itself"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    assert q.exception() is None, q.exception()


def _drain(q, sink: BatchCollector, ends: dict[int, int]) -> None:
    """Run until the sink holds every offset below ``ends`` in each partition."""

    def caught_up() -> bool:
        top: dict[int, int] = {}
        for p, o, *_ in sink.rows():
            top[p] = max(top.get(p, -1), o)
        return all(top.get(p, -1) >= end - 1 for p, end in ends.items())

    _run_until(q, caught_up, f"the query to read up to {ends}")


def _check_exact(read: list[tuple], written: list[Consumed],
                 starts: dict[int, int], ends: dict[int, int]) -> None:
    """``read`` is exactly librdkafka's records at [starts[p], ends[p]) of each partition: same
    offsets, keys, values and timestamps, none missing, none twice."""
    assert len(read) == len({(p, o) for p, o, *_ in read}), "a record was read twice"
    expected = sorted((c.partition, c.offset, c.key, c.value, c.timestamp[1]) for c in written
                      if starts[c.partition] <= c.offset < ends[c.partition])
    got = sorted(read)
    missing = sorted({(e[0], e[1]) for e in expected} - {(g[0], g[1]) for g in got})
    extra = sorted({(g[0], g[1]) for g in got} - {(e[0], e[1]) for e in expected})
    assert not missing and not extra, f"missing {missing[:5]}..., extra {extra[:5]}..."
    assert got == expected


def _checkpointed(checkpoint: str, batch: int) -> dict:
    """The source offsets Spark wrote to the checkpoint for ``batch`` before running it: the
    file's third line (after the version and the batch metadata), as Spark's OffsetSeqLog
    writes it for a query with one source."""
    with open(os.path.join(checkpoint, "offsets", str(batch))) as f:
        return json.loads(f.read().splitlines()[2])


def _planned_start(checkpoint: str, topic: str, batch: int) -> dict[int, int]:
    """Where ``batch`` began in each partition of ``topic``: the previous batch's end, and for
    partitions whose start the batch's end records (every partition of a first batch, see
    source/offsets_json.START_KEY), that record."""
    starts: dict[int, int] = {}
    if batch > 0:
        starts.update({int(p): o for p, o in _checkpointed(checkpoint, batch - 1)[topic].items()})
    recorded = _checkpointed(checkpoint, batch).get(START_KEY, {}).get(topic, {})
    starts.update({int(p): o for p, o in recorded.items()})
    return starts


def _first_offsets(rows: list[tuple]) -> dict[int, int]:
    out: dict[int, int] = {}
    for p, o, *_ in rows:
        out[p] = min(out.get(p, o), o)
    return out


@pytest.mark.parametrize("start", ["latest", "timestamp", "group"])
def test_live_stream_runs_20_batches_and_restarts_exactly(spark, bootstrap, client, new_topic,
                                                           tmp_path, start):
    topic = new_topic(PARTITIONS, f"live-{start}")
    checkpoint = str(tmp_path / "ckpt")
    options: dict[str, str] = {}
    with LiveProducer(bootstrap, topic) as producer:
        time.sleep(1.0)  # the topic is busy before the query starts
        if start == "timestamp":
            options["startingTimestamp"] = str(int(time.time() * 1000) - 300)
        elif start == "group":
            group = f"live-{uuid.uuid4().hex[:8]}"
            committed = end_offsets(client, topic, PARTITIONS)
            committed = {p: max(0, o - 100) for p, o in committed.items()}
            consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                                 "enable.auto.commit": False})
            try:
                consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, p, o)
                                         for p, o in committed.items()], asynchronous=False)
            finally:
                consumer.close()
            # the query's own commits move the group while it runs: a restart must still
            # continue from the checkpoint, not from the group
            options.update({"startingOffsets": "group", "kafka.group.id": group,
                            "commitOffsets": "kafka"})
        before = end_offsets(client, topic, PARTITIONS)

        sink = BatchCollector()  # one sink for both runs: a replayed batch replaces its copy
        q = _start(spark, bootstrap, topic, sink, checkpoint, **options)
        try:
            _run_until(q, lambda: sink.data_batches() >= 20, "20 micro-batches with data")
        finally:
            q.stop()
        first_run = dict(sink.batches)
        time.sleep(0.5)  # records keep arriving while the query is down

        sink.run = 2
        q = _start(spark, bootstrap, topic, sink, checkpoint, **options)
        try:
            _run_until(q, lambda: sink.data_batches() >= len(first_run) + 5,
                       "5 micro-batches after the restart")
            producer.stop()
            ends = end_offsets(client, topic, PARTITIONS)
            _drain(q, sink, ends)
        finally:
            q.stop()

    written = consume(bootstrap, topic, PARTITIONS, producer.sent)
    starts = _first_offsets(sink.rows())
    assert set(starts) == set(range(PARTITIONS))
    if start == "latest":
        # the start is the end of the topic at some moment after `before` was measured and
        # before the first batch's data: whatever was written after that moment is read
        assert all(starts[p] >= before[p] for p in starts), (starts, before)
    elif start == "timestamp":
        ts = int(options["startingTimestamp"])
        for p in range(PARTITIONS):
            in_p = [c for c in written if c.partition == p]
            assert starts[p] == next(c.offset for c in in_p if c.timestamp[1] >= ts)
    else:
        assert starts == committed
    _check_exact(sink.rows(), written, starts, ends)
    # the restarted run went on from the first run's last batch (run again if it had not
    # completed) with consecutive batch ids
    resumed = min(b for b, run in sink.written_by.items() if run == 2)
    assert resumed in (max(first_run), max(first_run) + 1)
    assert sorted(sink.batches) == list(range(min(sink.batches), max(sink.batches) + 1))


def test_restart_after_the_first_batch_with_data_failed_replays_the_same_range(
        spark, bootstrap, client, new_topic, tmp_path):
    """Spark writes a batch's end offsets to the checkpoint before running it, but asks a
    restarted query's Python source for its initial offsets again when that batch is the first.
    Whether the first batch with data is Spark's batch 0 (then the start it recorded in its end
    offsets decides) or a later one (then the checkpoint does) depends on timing; either way the
    replay must read exactly what the failed run planned. The deterministic version of the
    batch 0 case is in tests/integration/test_stream_reader_calls.py."""
    topic = new_topic(PARTITIONS, "live-replay")
    checkpoint = str(tmp_path / "ckpt")
    with LiveProducer(bootstrap, topic) as producer:
        time.sleep(1.0)
        failing = BatchCollector(fail_first_data=True)
        q = _start(spark, bootstrap, topic, failing, checkpoint)
        try:
            with pytest.raises(Exception, match="planned failure in batch"):
                q.awaitTermination(120)
                raise AssertionError("batch 0 should have failed")
        finally:
            q.stop()
        assert failing.failed_batch is not None and failing.failed_rows
        time.sleep(1.0)  # `latest` moves on while the query is down

        replay = BatchCollector()
        q = _start(spark, bootstrap, topic, replay, checkpoint)
        try:
            _run_until(q, lambda: replay.data_batches() >= 3, "3 micro-batches after the restart")
            producer.stop()
            ends = end_offsets(client, topic, PARTITIONS)
            _drain(q, replay, ends)
        finally:
            q.stop()

    assert sorted(replay.batches[failing.failed_batch]) == sorted(failing.failed_rows)
    written = consume(bootstrap, topic, PARTITIONS, producer.sent)
    # the failed batch may hold no record of some partition (a short first batch): where it
    # began there is what the checkpoint planned, not the first offset the failed run saw
    starts = _planned_start(checkpoint, topic, failing.failed_batch)
    assert set(starts) == set(range(PARTITIONS)), starts
    assert all(starts[p] == o for p, o in _first_offsets(failing.failed_rows).items()), starts
    _check_exact(replay.rows(), written, starts, ends)
