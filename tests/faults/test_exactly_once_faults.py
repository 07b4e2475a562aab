"""Fault scenarios of the exactly-once sink (``kafka.transactional.id``, sink/exactly_once.py):
the processes of a write die at each step of its two-phase commit, and every id must still be
read exactly once by a read_committed reader, with no transaction left open.

The oracle is tests/support/txn_log_oracle.py, which judges the raw log by its COMMIT and
ABORT markers with kafka-python's record parser: Tansu lists no aborted transactions in Fetch
answers, so librdkafka's read_committed consumer would return aborted records and cannot
judge. The steps of the protocol are found on the wire: the fault proxy holds the request that
starts the next step (EndTxn, API key 26, the driver's commit of one task's transaction;
AddOffsetsToTxn, 25, which a streaming task sends after its flush), a process is killed while
it waits, and the held frame is dropped, as if the process had died just before sending it.

Spark processes are slow to start on two shared cores (about 25 s to a first micro-batch), so
the default run combines the stream scenarios into one query with three lives; the soak run
(marker ``soak``) adds a query killed at random moments.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid

import pytest
from pyspark.sql.types import BinaryType, StructField, StructType

from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer.transactions import end_transaction
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.sink.batch_writer import KafkaWireBatchWriter
from spark_kafka_wire.sink.exactly_once import (
    TaskBatch,
    already_committed,
    task_transactional_id,
)
from tests.support.id_producer import produce_ids
from tests.support.librdkafka import create_topic, produce
from tests.support.processes import kill_processes, parent_of
from tests.support.stream_job import JOB_START_S, REPO, StreamJob
from tests.support.tansu import ProxiedTansu
from tests.support.transactions import (
    committed_aborted_committed,
    committed_then_open,
    task_transaction,
)
from tests.support.txn_log_oracle import assert_committed_exactly_once, read_log

pytestmark = [pytest.mark.spark, pytest.mark.broker]

SOAK = pytest.mark.skipif(not os.environ.get("KAFKAWIRE_SOAK"),
                          reason="long variant: run with make soak (KAFKAWIRE_SOAK=1)")

ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
PARTITIONS = 4  # input and output: each micro-batch has 4 tasks, each writes 4 partitions
IDS = 3000
PER_TRIGGER = 500  # maxOffsetsPerTrigger: 6 micro-batches


# ------------------------------------------------------------------------------- the oracle

def test_oracle_judges_commits_aborts_and_open_transactions(proxied_tansu):
    """The oracle on librdkafka's transactions: committed, aborted, still open, and plain
    records mixed in one partition; the aborted ones are what librdkafka's read_committed
    consumer would wrongly return from Tansu."""
    topic = proxied_tansu.new_topic()
    bootstrap = proxied_tansu.bootstrap
    committed_aborted_committed(bootstrap, topic)  # c0 c1 | a0 a1 aborted | c2
    produce({"bootstrap.servers": bootstrap}, topic, [(None, b"plain")])
    producer = committed_then_open(bootstrap, topic)  # c0 c1 c2 committed, then "open"
    try:
        log = read_log(bootstrap, topic)
        assert log.committed == [b"c0", b"c1", b"c2", b"plain", b"c0", b"c1", b"c2"]
        assert log.aborted == 2 and log.open_records == 1
        assert log.markers == {"commit": 3, "abort": 1}
        (partition, _, first_open), = log.open_transactions
        assert partition == 0 and first_open == log.partitions[0].high_watermark - 1
        with pytest.raises(AssertionError, match="left open"):
            log.assert_no_open_transaction()
    finally:
        producer.abort_transaction(20)
    log = read_log(bootstrap, topic)
    assert log.open_transactions == [] and log.aborted == 3
    assert log.tally(range(0)).unexpected == 7  # values are not ids: all counted unexpected


# --------------------------------------------- the driver's commit of a replayed batch

def test_driver_aborts_a_replayed_task_whose_batch_committed(memory_tansu, record_fact):
    """The driver died between EndTxn calls of batch 0 (task 0 committed, task 1 open), and
    the replay's task 0 did not see its marker when it started, so it wrote its rows again:
    on Tansu it cannot, since Tansu shows a transaction's committed offsets only once the
    transactions open on the same partitions before it (task 1's, from the dead run) have
    ended, and task 1 of the replay fences its stale one only when it starts. The driver
    looks at the markers again when it commits, when every replayed task has run, and aborts
    task 0's second transaction instead of committing it: each id once."""
    bootstrap = memory_tansu.bootstrap_servers
    topic = f"r-{uuid.uuid4().hex[:10]}"
    create_topic({"bootstrap.servers": bootstrap}, topic, PARTITIONS)
    prefix = f"replay-{uuid.uuid4().hex[:8]}"
    options = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": topic,
                                  "kafka.transactional.id": prefix})
    client = KafkaClient(options.client)
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])
    writer = KafkaWireBatchWriter(options, schema, streaming=True)
    batch = TaskBatch(str(uuid.uuid4()), 0)
    shares = [range(0, 100), range(100, 200)]
    try:
        first_run = [task_transaction(client, options, prefix, i, batch, shares[i], PARTITIONS)
                     for i in range(2)]
        assert first_run[0].transaction is not None
        end_transaction(client, first_run[0].transaction, commit=True)  # then the driver dies

        tid0 = task_transactional_id(prefix, 0)
        seen_at_start = already_committed(client, tid0, batch)
        replay = [task_transaction(client, options, prefix, i, batch, shares[i], PARTITIONS)
                  for i in range(2)]  # task 0 as if it had not seen its marker
        writer.commit(list(replay))
        count, log = assert_committed_exactly_once(bootstrap, topic, range(200))
    finally:
        client.close()
    fact = (f"task 0 saw its committed marker when the replay started: {seen_at_start}; "
            f"after the driver's commit: {count.summary()}; {log.summary()}")
    print(fact)
    record_fact(fact)
    assert log.aborted == len(shares[1]) + len(shares[0]), \
        "the dead run's task 1 and the replay's task 0 should both be aborted"


# ------------------------------------------------------------------- stream: three lives

def _stream_job(broker: ProxiedTansu, tmp_path, source: str, output: str, prefix: str,
                ) -> StreamJob:
    return StreamJob(broker.bootstrap, source, tmp_path, "--sink-topic", output,
                     "--transactional-id", prefix, "--master", "local[2,3]",
                     "--max-offsets-per-trigger", str(PER_TRIGGER),
                     "--trigger", "200 milliseconds")


def _task_workers(job: StreamJob) -> list[int]:
    """The Python workers that run tasks: the processes the ``pyspark.daemon`` of the
    ``pyspark.worker`` module forked (they keep its argv); other daemons fork the planner's
    and the driver-side sink's workers."""
    forks = {pid for pid, argv in job.python_processes().items()
             if argv[-2:] == ["pyspark.daemon", "pyspark.worker"]}
    workers = [pid for pid in forks if parent_of(pid) in forks]
    assert workers, "no task worker found"
    return workers


def _three_lives(broker: ProxiedTansu, tmp_path, record_fact) -> None:
    """Scenarios 1 and 3 in one query (one Spark start each life)."""
    source, output = broker.new_topic(PARTITIONS), broker.new_topic(PARTITIONS)
    produce_ids(broker.bootstrap, source, IDS)
    prefix = f"eo-{uuid.uuid4().hex[:8]}"
    proxy = broker.proxy
    job = _stream_job(broker, tmp_path, source, output, prefix)
    began = time.monotonic()

    def note(fact: str) -> None:
        fact = f"{time.monotonic() - began:.0f}s {fact}"
        print(fact)
        record_fact(fact)

    try:
        # Life 1: the driver dies before the first EndTxn of batch 0; every task flushed.
        proxy.hold_requests(END_TXN, after=0)
        job.start()
        proxy.wait_until_held(1, timeout=JOB_START_S)
        planned, committed = job.planned(), job.committed()
        job.kill9()
        assert proxy.release_held(drop=True) == 1
        before = read_log(broker.bootstrap, output)
        note(f"life 1 killed before any EndTxn of batch {planned[-1]} (committed batches "
             f"{committed}): {before.summary()}")
        assert committed == [] and planned == [0]
        assert before.committed == [] and before.open_transactions, "nothing was flushed"

        # Life 2: batch 0 again; the driver dies after the first task's EndTxn.
        proxy.hold_requests(END_TXN, after=1)
        job.start()
        proxy.wait_until_held(1, timeout=JOB_START_S)
        planned, committed = job.planned(), job.committed()
        job.kill9()
        assert proxy.release_held(drop=True) == 1
        between = read_log(broker.bootstrap, output)
        note(f"life 2 killed between the EndTxn calls of batch {planned[-1]}: "
             f"{between.summary()}")
        assert committed == [] and planned == [0]
        assert between.committed and between.open_transactions
        assert between.aborted == before.open_records, \
            "life 2's tasks did not abort what life 1 left open"

        # Life 3: batch 0 replayed once more (task 0 committed it already: it writes nothing,
        # or its rewrite is aborted by the driver), then a task dies after its flush, before
        # the driver commits: its Python workers are killed while its AddOffsetsToTxn is
        # held; Spark runs it again (local[2,3]).
        job.start()
        job.wait_until(lambda: 0 in job.committed(), "batch 0 committed", JOB_START_S)
        proxy.hold_requests(ADD_OFFSETS_TO_TXN)
        proxy.wait_until_held(1, timeout=60)
        workers = kill_processes(_task_workers(job))
        held = proxy.release_held(drop=True)
        at_kill = read_log(broker.bootstrap, output)
        note(f"life 3: {len(workers)} task workers killed with {held} AddOffsetsToTxn "
             f"held (batch {job.planned()[-1]}): {at_kill.summary()}")
        assert at_kill.open_records, "the killed tasks had flushed nothing"
        progress = job.drain_and_stop()
        note(f"drained: {progress['batchId'] + 1} batches")
    finally:
        job.close()
        proxy.pass_through()
    count, log = assert_committed_exactly_once(broker.bootstrap, output, range(IDS))
    note(f"output: {count.summary()}; {log.summary()}")


def test_stream_driver_and_task_killed_at_each_commit_step_is_exactly_once(
        proxied_tansu, tmp_path, record_fact):
    """One query, three lives, each ended at a step of the two-phase commit:

    1. the driver killed -9 before any EndTxn of micro-batch 0 (every task's transaction
       flushed and open): the restarted query replays batch 0, and each task's InitProducerId
       aborts what its dead predecessor left open before writing again;
    2. the driver killed -9 between EndTxn calls (task 0's transaction committed, the others
       open): in the replay, tasks 1-3 abort and rewrite; task 0's marker (the offset
       committed in its transaction) says batch 0 is done, so task 0 writes nothing, or, when
       it could not see the marker yet (on Tansu it cannot while tasks 2 and 3 of the dead run
       are still open), the driver aborts its rewrite instead of committing it;
    3. a task's Python workers killed after its flush (its AddOffsetsToTxn held): the retried
       attempt (local[2,3]) fences the dead one and writes again, and only the driver's
       commit makes anything visible.

    Every id is read exactly once by read_committed and no transaction is left open."""
    _three_lives(proxied_tansu, tmp_path, record_fact)


# ------------------------------------------------------------- a task dying before its flush

def test_task_killed_before_flush_is_fenced_by_its_retry(memory_tansu, tmp_path, record_fact):
    """A batch write and a stream (availableNow) on local[2,3] where a UDF SIGKILLs its own
    Python worker half way through attempt 0 of one task, once the writer had sent some of
    the task's rows (tests/support/task_kill_job.py): the task fails before its flush. What
    the dead attempt wrote is aborted, by its writer's own EndTxn(abort) if that worker sees
    its input fail, else by the retry's InitProducerId for the same transactional id, which
    also fences it; the driver commits only the retry's transaction. Each topic holds every
    id exactly once for read_committed, and the dead attempts' records are there, aborted."""
    bootstrap = memory_tansu.bootstrap_servers
    conf = {"bootstrap.servers": bootstrap}
    batch_out, stream_in, stream_out = (f"k-{uuid.uuid4().hex[:10]}" for _ in range(3))
    for topic in (batch_out, stream_in, stream_out):
        create_topic(conf, topic, PARTITIONS)
    n, stream_ids = 8000, 2000  # the stream: 4 micro-batches, a task killed in the second
    produce_ids(bootstrap, stream_in, stream_ids)
    result, kill_log = tmp_path / "result.json", tmp_path / "killed"
    kill_log.mkdir()
    args = [sys.executable, "-m", "tests.support.task_kill_job", "--bootstrap", bootstrap,
            "--transactional-id", f"kill-{uuid.uuid4().hex[:8]}", "--result", str(result),
            "--kill-log", str(kill_log),
            "--batch-topic", batch_out, "--rows", str(n), "--stream-from", stream_in,
            "--stream-topic", stream_out, "--checkpoint", str(tmp_path / "checkpoint")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (REPO, os.environ.get("PYTHONPATH")) if p)}
    began = time.monotonic()
    run = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=JOB_START_S + 120, stdin=subprocess.DEVNULL)
    took = time.monotonic() - began
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    kills = sorted(f.name for f in kill_log.iterdir())
    assert len(kills) == 2, f"workers killed: {kills}, not 2:\n{run.stdout[-3000:]}"
    times = json.loads(result.read_text())
    for topic, ids, what in ((batch_out, n, "batch"), (stream_out, stream_ids, "stream")):
        count, log = assert_committed_exactly_once(bootstrap, topic, range(ids))
        fact = f"{what}: {count.summary()}; {log.summary()}"
        print(fact)
        record_fact(fact)
        assert log.aborted > 0, f"the {what} attempt killed wrote nothing before dying"
    record_fact(f"subprocess {took:.0f}s: {times}; killed {kills}")


# -------------------------------------------------------- soak: killed at random moments

def _killed_at_random(broker: ProxiedTansu, tmp_path, record_fact, kills: int,
                      seed: int) -> None:
    rng = random.Random(seed)
    source, output = broker.new_topic(PARTITIONS), broker.new_topic(PARTITIONS)
    n = 3 * IDS
    produce_ids(broker.bootstrap, source, n)
    job = _stream_job(broker, tmp_path, source, output, f"eo-{uuid.uuid4().hex[:8]}")
    began = time.monotonic()
    moments = []
    try:
        for _ in range(kills):
            job.start()
            done = len(job.committed())
            job.wait_until(lambda d=done: len(job.committed()) > d, "a batch committed",
                           JOB_START_S)
            pause = rng.uniform(0, 3)
            time.sleep(pause)
            moments.append((round(pause, 2), job.planned()[-1], job.committed()[-1]))
            job.kill9()
        job.start()
        progress = job.drain_and_stop()
    finally:
        job.close()
    count, log = assert_committed_exactly_once(broker.bootstrap, output, range(n))
    fact = (f"seed {seed}: killed at (pause s, planned, committed) {moments}; "
            f"{progress['batchId'] + 1} batches in {time.monotonic() - began:.0f}s; "
            f"{count.summary()}; {log.summary()}")
    print(fact)
    record_fact(fact)


@pytest.mark.soak
@SOAK
def test_soak_stream_killed_at_random_moments_is_exactly_once(proxied_tansu, tmp_path,
                                                              record_fact):
    """The query's process tree killed -9 twice at a random moment (0-3 s after a batch
    committed: planning, writing, committing, between batches), restarted on its checkpoint
    each time and drained: every id exactly once, nothing left open."""
    seed = int(os.environ.get("KAFKAWIRE_SEED", time.time_ns() % 1_000_000))
    _killed_at_random(proxied_tansu, tmp_path, record_fact, kills=2, seed=seed)

