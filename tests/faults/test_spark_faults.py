"""Spark-level fault scenarios (issue 15): kafkawire's batch and streaming reads and writes
while the broker crashes and restarts (the durable procedure of
:meth:`~tests.support.durable_tansu.DurableBroker.crash_and_restart`) and connections are cut.

Each record carries a unique id (tests/support/id_oracle.py), so the verdict is an exact one:
every id once, or the lost and the duplicated ids named. Spark on local[2] runs each task once
(spark.task.maxFailures is 1 in local mode), so a fault must be absorbed by kafkawire's own
retries (by time: kafka.request.timeout.ms for reads, kafka.delivery.timeout.ms for writes),
never by a task retry that would hide it. The long variants carry the ``soak`` marker and run
with ``make soak`` only.
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

from tests.support.durable_tansu import DurableBroker
from tests.support.fault_proxy import ProxyStats
from tests.support.id_oracle import IdCount, count_ids, id_dataframe, tally
from tests.support.id_producer import SteadyIdProducer, produce_ids
from tests.support.stream_job import JOB_START_S, StreamJob, log_ids

pytestmark = [pytest.mark.spark, pytest.mark.broker]

SOAK = pytest.mark.skipif(not os.environ.get("KAFKAWIRE_SOAK"),
                          reason="long variant: run with make soak (KAFKAWIRE_SOAK=1)")


class Fault:
    """Runs ``action`` in a thread each time the next of ``when`` holds for the proxy's
    counters, so the faults land while Spark works in the test's thread. :meth:`join`
    re-raises the thread's error and returns how many faults fired (one that never fired
    proves nothing)."""

    def __init__(self, broker: DurableBroker, when: list[Callable[[ProxyStats], bool]],
                 action: Callable[[], object], timeout_s: float = 120) -> None:
        self.broker, self.when, self.action, self.timeout_s = broker, when, action, timeout_s
        self.fired_at: list[float] = []
        self.error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault", daemon=True)

    def _run(self) -> None:
        try:
            deadline = time.monotonic() + self.timeout_s
            for condition in self.when:
                while not condition(self.broker.proxy.stats()):
                    if self._done.is_set() or time.monotonic() > deadline:
                        return
                    time.sleep(0.01)
                self.fired_at.append(time.monotonic())
                self.action()
        except BaseException as exc:  # noqa: BLE001 - handed to the test in join()
            self.error = exc

    def __enter__(self) -> Fault:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(60)

    def join(self) -> int:
        self._done.set()
        self._thread.join(60)
        if self.error is not None:
            raise self.error
        return len(self.fired_at)


def bytes_sent_beyond(baseline: int, n: int) -> Callable[[ProxyStats], bool]:
    """Once ``n`` bytes more than ``baseline`` went to the broker (Produce traffic)."""
    return lambda s: s.bytes_to_broker >= baseline + n


def bytes_read_beyond(baseline: int, n: int) -> Callable[[ProxyStats], bool]:
    """Once ``n`` bytes more than ``baseline`` came back to clients (Fetch answers)."""
    return lambda s: s.bytes_to_client >= baseline + n


# ----------------------------------------------------------------------- 1. batch write

WRITE_ROWS = 300_000
SOAK_WRITE_ROWS = 3_000_000  # with three crashes
WIRE_BYTES_PER_ID = 30  # a small id record in a batch, with its share of the request


def _write_through_crash(spark, broker: DurableBroker, n: int, crashes: int = 1,
                         **options: str) -> tuple[str, float]:
    """Write ids 0..n-1 with kafkawire from 4 Spark partitions into a new 3-partition topic and
    crash_and_restart the broker ``crashes`` times, the first once a fifth of the bytes went
    out; (topic, seconds)."""
    topic = broker.new_topic(partitions=3)
    writer = (id_dataframe(spark, n, partitions=4).write.format("kafkawire").mode("append")
              .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topic))
    for key, value in options.items():
        writer = writer.option(key, value)
    base = broker.proxy.stats().bytes_to_broker
    total = n * WIRE_BYTES_PER_ID
    crash = Fault(broker, [bytes_sent_beyond(base, total * (1 + 3 * i // crashes) // 5)
                           for i in range(crashes)],
                  lambda: broker.crash_and_restart(down_s=1.0))
    began = time.monotonic()
    with crash:
        writer.save()
        took = time.monotonic() - began
        fired = crash.join()
    sent = broker.proxy.stats().bytes_to_broker - base
    at = ", ".join(f"{t - began:.1f}" for t in crash.fired_at)
    print(f"\nwrite of {n} ids ({sent >> 20} MiB sent) through crashes at {at} s took "
          f"{took:.1f} s; {options or 'defaults'}")
    assert fired == crashes, f"{fired} of {crashes} crashes: the write ended first"
    assert crash.fired_at[-1] - began < took, "the crash came after the write"
    return topic, took


def _check_write_exact(spark, broker: DurableBroker, n: int, crashes: int = 1) -> None:
    topic, took = _write_through_crash(spark, broker, n, crashes)
    assert took < 120, "longer than kafka.delivery.timeout.ms (120 s)"
    count = count_ids(broker.bootstrap, topic, range(n), timeout_s=120)
    print(count.summary())
    count.assert_exactly_once()


def _check_write_at_least_once(spark, broker: DurableBroker, n: int, crashes: int = 1) -> None:
    topic, _ = _write_through_crash(spark, broker, n, crashes, **{
        "kafka.acks": "all", "kafka.enable.idempotence": "false"})
    count = count_ids(broker.bootstrap, topic, range(n), timeout_s=120)
    print(f"without idempotence: {count.summary()}")
    count.assert_none_lost()


def test_batch_write_through_broker_crash_is_exactly_once(spark, durable_broker):
    """Idempotence (the default with acks=all) removes the copies the crash's retries make."""
    _check_write_exact(spark, durable_broker, WRITE_ROWS)


def test_batch_write_without_idempotence_loses_nothing(spark, durable_broker):
    """acks=all without idempotence: a retried batch may be stored twice, never lost."""
    _check_write_at_least_once(spark, durable_broker, WRITE_ROWS)


@pytest.mark.soak
@SOAK
def test_soak_batch_write_through_three_crashes(spark, durable_broker):
    _check_write_exact(spark, durable_broker, SOAK_WRITE_ROWS, crashes=3)


@pytest.mark.soak
@SOAK
def test_soak_batch_write_through_three_crashes_without_idempotence(spark, durable_broker):
    _check_write_at_least_once(spark, durable_broker, SOAK_WRITE_ROWS, crashes=3)


# ------------------------------------------------------------------------ 2. batch read

READ_ROWS = 300_000
SOAK_READ_ROWS = 2_000_000
READ_PARTITIONS = 4
# Small Fetches (kafka.max.partition.fetch.bytes): many round trips, so faults land mid-read
FETCH_BYTES = 64 << 10


def _id_topic(broker: DurableBroker, n: int) -> str:
    """A new topic of READ_PARTITIONS partitions holding ids 0..n-1, written by librdkafka."""
    topic = broker.new_topic(partitions=READ_PARTITIONS)
    produce_ids(broker.bootstrap, topic, n)
    return topic


def _read_ids(spark, broker: DurableBroker, topic: str, n: int) -> IdCount:
    """Read the whole topic with kafkawire's batch source and count the ids it returned."""
    table = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("kafka.max.partition.fetch.bytes", str(FETCH_BYTES))
             .load().select("value").toArrow())
    return tally(table.column("value").to_pylist(), range(n))


def _check_read_through_crashes(spark, broker: DurableBroker, n: int, crashes: int) -> None:
    topic = _id_topic(broker, n)
    base = broker.proxy.stats().bytes_to_client
    total = n * WIRE_BYTES_PER_ID
    crash = Fault(broker, [bytes_read_beyond(base, total * (1 + 3 * i // crashes) // 5)
                           for i in range(crashes)],
                  lambda: broker.crash_and_restart(down_s=1.0))
    began = time.monotonic()
    with crash:
        count = _read_ids(spark, broker, topic, n)
        took = time.monotonic() - began
        fired = crash.join()
    at = ", ".join(f"{t - began:.1f}" for t in crash.fired_at)
    print(f"\nread of {n} ids through crashes at {at} s took {took:.1f} s: {count.summary()}")
    assert fired == crashes, f"{fired} of {crashes} crashes: the read ended first"
    count.assert_exactly_once()


def test_batch_read_through_cut_connections_is_exact(spark, durable_broker):
    """Connections closed in the middle of Fetch answers: re-fetched from the last whole
    batch, nothing returned twice or skipped."""
    n = READ_ROWS
    topic = _id_topic(durable_broker, n)
    proxy = durable_broker.proxy
    proxy.cut_after(3 * FETCH_BYTES // 2, times=8)  # mid-answer of every connection's 2nd Fetch
    began = time.monotonic()
    count = _read_ids(spark, durable_broker, topic, n)
    took = time.monotonic() - began
    cuts = proxy.stats().faults
    print(f"\nread of {n} ids through {cuts} cut connections took {took:.1f} s: "
          f"{count.summary()}")
    assert cuts == 8, "fewer connections cut than planned: the read ended first"
    count.assert_exactly_once()


def test_batch_read_through_broker_crash_is_exact(spark, durable_broker):
    """A crash_and_restart in the middle of the tasks' Fetches: refused connects are retried
    within kafka.request.timeout.ms and the read returns every id once."""
    _check_read_through_crashes(spark, durable_broker, READ_ROWS, crashes=1)


@pytest.mark.soak
@SOAK
def test_soak_batch_read_through_three_crashes(spark, durable_broker):
    _check_read_through_crashes(spark, durable_broker, SOAK_READ_ROWS, crashes=3)


# ----------------------------------------------------------- 3. streaming through a restart

STREAM_PARTITIONS = 2
STREAM_RATE_PER_S = 2000
STREAM_TRIGGER = "1 second"


def _batches_done(q) -> int:
    """Micro-batches the query completed (the last progress' batch id + 1)."""
    last = q.lastProgress
    return 0 if last is None else last["batchId"] + 1


def _await_batches(q, n: int, timeout_s: float = 120) -> None:
    """Until the query completed ``n`` micro-batches in all; fails with the query's error."""
    deadline = time.monotonic() + timeout_s
    while _batches_done(q) < n:
        assert q.exception() is None, q.exception()
        assert q.isActive, "the query stopped by itself"
        assert time.monotonic() < deadline, f"{_batches_done(q)} of {n} batches in {timeout_s}s"
        time.sleep(0.1)


def _sink_ids(spark, path: str, n: int) -> IdCount:
    """The ids in a file sink, as Spark reads it: only files its _spark_metadata log commits."""
    table = spark.read.parquet(path).select("value").toArrow()
    return tally(table.column("value").to_pylist(), range(n))


def _stream_through_crashes(spark, broker: DurableBroker, tmp_path, crashes: int,
                            batches_between: int = 3) -> None:
    topic = broker.new_topic(partitions=STREAM_PARTITIONS)
    group = f"crashed-{uuid.uuid4().hex[:8]}"
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "checkpoint")
    began = time.monotonic()
    with SteadyIdProducer(broker.bootstrap, topic, STREAM_RATE_PER_S) as producer:
        producer.wait_for(STREAM_RATE_PER_S // 2)
        q = (spark.readStream.format("kafkawire")
             .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
             .option("startingOffsets", "earliest").option("kafka.group.id", group)
             .option("commitOffsets", "kafka").load().select("partition", "offset", "value")
             .writeStream.format("parquet").option("path", sink)
             .option("checkpointLocation", checkpoint).trigger(processingTime=STREAM_TRIGGER)
             .start())
        try:
            for _ in range(crashes):
                _await_batches(q, _batches_done(q) + batches_between)
                broker.crash_and_restart(down_s=2.0)
            _await_batches(q, _batches_done(q) + batches_between)
            n = producer.stop()
            q.processAllAvailable()
            batches = _batches_done(q)
            last = json.loads(q.lastProgress.json)
            processed = {int(p): o for p, o in last["sources"][0]["endOffset"][topic].items()}
            print("\nbatch durations (ms):", [(p["batchId"], p["numInputRows"],
                                             p["durationMs"].get("triggerExecution"))
                                            for p in q.recentProgress])
        finally:
            q.stop()
    count = _sink_ids(spark, sink, n)
    print(f"\nstream of {n} ids through {crashes} crash(es), {batches} batches, "
          f"{time.monotonic() - began:.1f} s: {count.summary()}")
    count.assert_exactly_once()
    assert sum(processed.values()) == n  # each id once: offsets 0..end-1 in each partition
    assert _committed(broker.bootstrap, group, topic) == processed, \
        "the group's commits (commitOffsets=kafka) are not where the query ended"


def test_stream_through_broker_crash_is_exactly_once(spark, durable_broker, tmp_path):
    """A micro-batch task runs once on local[2]: a restart shorter than
    kafka.request.timeout.ms must be waited out by the reader (driver's ListOffsets, tasks'
    Fetches, the group commits of commitOffsets) for the query to live; the parquet sink
    then holds each id once and the group's commits end where the query ended."""
    _stream_through_crashes(spark, durable_broker, tmp_path, crashes=1)


@pytest.mark.soak
@SOAK
def test_soak_stream_through_five_crashes(spark, durable_broker, tmp_path):
    _stream_through_crashes(spark, durable_broker, tmp_path, crashes=5, batches_between=5)


# ------------------------------------------------- 4. the query's process killed -9, restarted

def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets as librdkafka sees them (-1001: none)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "enable.auto.commit": False, "log_level": 2})
    try:
        tps = consumer.committed([confluent_kafka.TopicPartition(topic, p)
                                  for p in range(STREAM_PARTITIONS)], timeout=30)
        ends = {tp.partition: tp.offset for tp in tps}
    finally:
        consumer.close()
    return ends


def _unlogged_parts(sink: str) -> int:
    """Part files in the sink's directory that its _spark_metadata log does not name: files
    of a batch being written (the file sink writes them in place; the log entry, written
    atomically by the driver after the tasks, is what makes them part of the output)."""
    meta = os.path.join(sink, "_spark_metadata")
    if not os.path.isdir(sink):
        return 0
    logged: set[str] = set()
    for name in os.listdir(meta) if os.path.isdir(meta) else ():
        if name.startswith("."):  # a log file being written (renamed into place when whole)
            continue
        with open(os.path.join(meta, name)) as log:
            logged.update(os.path.basename(json.loads(line)["path"])
                          for line in log if line.startswith("{"))
    return len({f for f in os.listdir(sink) if f.startswith("part-")} - logged)


def _kill_mid_batch(job: StreamJob, after: int, catch_writes_s: float = 20) -> dict:
    """Once ``after`` batches are committed, kill -9 while a later batch is planned (its
    offsets in the write-ahead log, its commit not), preferably while its tasks have part
    files in the sink that its log does not name yet (for up to ``catch_writes_s``); what the
    kill left behind."""
    def committed() -> list[int]:
        return log_ids(job.checkpoint, "commits")

    def planned_not_committed() -> bool:
        done, planned = committed(), log_ids(job.checkpoint, "offsets")
        return bool(planned) and (not done or planned[-1] > done[-1])

    job.wait_until(lambda: len(committed()) >= after, f"{after} batches committed",
                   JOB_START_S)
    give_up = time.monotonic() + catch_writes_s
    job.wait_until(lambda: planned_not_committed() and (
        _unlogged_parts(job.sink) > 0 or time.monotonic() > give_up),
        "a batch in flight", JOB_START_S)
    job.kill9()
    return {"planned": log_ids(job.checkpoint, "offsets")[-1], "committed": committed()[-1],
            "unlogged_parts": _unlogged_parts(job.sink)}


def _check_killed_and_restarted(spark, broker: DurableBroker, tmp_path, kills: int) -> None:
    topic = broker.new_topic(partitions=STREAM_PARTITIONS)
    group = f"killed-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    killed_at = []
    steps = []  # kills, then two batches after the last restart, then the drained stop
    with SteadyIdProducer(broker.bootstrap, topic, STREAM_RATE_PER_S) as producer:
        producer.wait_for(STREAM_RATE_PER_S // 2)
        job = StreamJob(broker.bootstrap, topic, tmp_path, "--group", group)
        try:
            for _ in range(kills):
                job.start()
                committed = len(log_ids(job.checkpoint, "commits"))
                killed_at.append(_kill_mid_batch(job, committed + 3))
                steps.append(time.monotonic())
            job.start()
            restarted = log_ids(job.checkpoint, "commits")[-1]
            job.wait_until(lambda: log_ids(job.checkpoint, "commits")[-1] > restarted,
                           "a batch committed after the restart", JOB_START_S)
            steps.append(time.monotonic())
            n = producer.stop()
            progress = job.drain_and_stop()
            steps.append(time.monotonic())
        finally:
            job.close()
    count = _sink_ids(spark, job.sink, n)
    print(f"\n{n} ids; killed at {killed_at}; "
          f"{time.monotonic() - began:.1f} s (steps at "
          f"{', '.join(f'{t - began:.1f}' for t in steps)}): {count.summary()}")
    count.assert_exactly_once()

    # Every id once, so each partition's records are its offsets 0..end-1: the sink's per
    # partition count and last offset say where the topic ends (librdkafka's watermarks come
    # from Tansu's ListOffsets(-1), which answers the last batch's start + 1: client/fetching/offsets.py)
    ends = {r[0]: r[1] + 1 for r in spark.read.parquet(job.sink).groupBy("partition")
            .agg({"offset": "max"}).collect()}
    assert sum(ends.values()) == n
    processed = {int(p): o for p, o in progress["sources"][0]["endOffset"][topic].items()}
    assert processed == ends, "the drained query did not end where the topic ends"
    assert _committed(broker.bootstrap, group, topic) == processed, \
        "the group's commits (commitOffsets=kafka) are not where the query ended"


def test_stream_process_killed_and_restarted_is_exactly_once(spark, durable_broker, tmp_path):
    """kill -9 of the query's process group with a micro-batch planned but not committed,
    then the same query on the same checkpoint: Spark replays the planned batch (its range is
    in the offsets log), the file sink's _spark_metadata log hides the killed attempt's files,
    so the sink holds each id once; and the group's commits (commitOffsets=kafka) end where
    the query ended."""
    _check_killed_and_restarted(spark, durable_broker, tmp_path, kills=1)


@pytest.mark.soak
@SOAK
def test_soak_stream_process_killed_three_times(spark, durable_broker, tmp_path):
    _check_killed_and_restarted(spark, durable_broker, tmp_path, kills=3)
