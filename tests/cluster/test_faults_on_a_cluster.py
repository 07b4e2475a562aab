"""Faults on the test cluster (tests/cluster/conftest.py): an exactly-once write whose task
fails once and is retried on the other Worker, an executor JVM killed with SIGKILL in the
middle of a micro-batch, and the driver killed with SIGKILL in the middle of a stream then
started again on its checkpoint. Each time, read_committed readers (librdkafka, the oracle)
see every record exactly once.

The faults are placed, not timed: the UDF that reports where a task ran (tests/cluster/jobs/
kafkawire_job.py) fails the first attempt of the task that meets a given row, raising or
killing its own executor JVM, and writes where it did so to a file every host sees. The
driver is killed (``RunningJob.kill``: SIGKILL to spark-submit's JVM and the job's Python)
when the checkpoint shows a micro-batch planned and not yet committed.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import confluent_kafka

from tests.cluster.checks import workers
from tests.support.librdkafka import consume_all, create_topic, produce_numbered

#: Spark settings of the fault tests: failed tasks are retried (the other tests fail at the
#: first failure, so that no retry hides an executor's error).
RETRIES = {"spark.task.maxFailures": "4"}


def _copy_of_a_new_topic(cluster_kafka, cluster_dir, name: str) -> tuple[dict, str, str, Path]:
    """A new source topic of 4 partitions of 500 numbered records, its empty 4-partition copy
    topic and a directory every host shares for the copying query: librdkafka's settings,
    the two topics' names and the directory."""
    conf = {"bootstrap.servers": cluster_kafka.bootstrap()}
    source = f"cluster-{name}-{uuid.uuid4().hex[:10]}"
    sink = f"{source}-copy"
    create_topic(conf, source, 4)
    create_topic(conf, sink, 4)
    produce_numbered(conf, source, 4, 500)
    shared = cluster_dir / "shared" / source
    shared.mkdir(parents=True)
    return conf, source, sink, shared


def _headers(message: confluent_kafka.Message) -> dict[str, str]:
    return {k: v.decode() for k, v in message.headers() or []}


def _copies_exactly_once(conf: dict, source: str, sink: str) -> list[dict]:
    """The sink topic, read committed by librdkafka, holds each record of the source topic
    exactly once (key, value and the source's partition/offset in its ``source`` header);
    the ``copied-by`` header of each copy, parsed."""
    originals = {(m.key(), m.value(), f"{m.partition()}/{m.offset()}")
                 for m in consume_all(conf, source)}
    copies = consume_all({**conf, "isolation.level": "read_committed"}, sink)
    seen = sorted((m.key(), m.value(), _headers(m)["source"]) for m in copies)
    assert len(seen) == len(set(seen)), "a record was copied twice"
    assert set(seen) == originals, (len(seen), len(originals))
    return [json.loads(_headers(m)["copied-by"]) for m in copies]


def test_exactly_once_write_with_a_task_retried_on_the_other_worker(
        run_job, cluster_kafka, executor_env, test_hosts, cluster_dir):
    """A transactional batch write of 8000 rows from four tasks, task i writing to partition
    i, whose first task fails at its last row on its first attempt, once at least 1000 of its
    rows are in partition 0 (sent in its transaction, not committed: the failure waits for
    them, whatever the machine's load). Spark retries the task on the other Worker
    (excludeOnFailure: one attempt per node). read_committed readers see each row once, all
    of the retried task's from its second attempt on the other Worker; the first attempt's
    rows stay aborted."""
    conf = {"bootstrap.servers": cluster_kafka.bootstrap()}
    topic = f"cluster-eos-{uuid.uuid4().hex[:10]}"
    create_topic(conf, topic, 4)
    rows, per_task = 8000, 2000
    marker = cluster_dir / "shared" / f"{topic}.failed"
    marker.parent.mkdir(exist_ok=True)
    result = run_job(
        {"mode": "write-read", "bootstrap": cluster_kafka.bootstrap(), "topic": topic,
         "rows": rows, "options": {}, "partition_by_task": True,
         "write_options": {"kafka.transactional.id": f"tx-{topic}", "kafka.linger.ms": "0"},
         "read_options": {"kafka.isolation.level": "read_committed"},
         "fault": {"kind": "raise", "partition": 0, "at": per_task - 1, "marker": str(marker),
                   "wait_for": {"bootstrap": cluster_kafka.bootstrap(), "topic": topic,
                                "partition": 0, "records": per_task // 2}}},
        executor_env.archive,
        conf={**RETRIES, "spark.excludeOnFailure.enabled": "true",
              "spark.excludeOnFailure.task.maxTaskAttemptsPerExecutor": "1",
              "spark.excludeOnFailure.task.maxTaskAttemptsPerNode": "1",
              "spark.sql.execution.arrow.maxRecordsPerBatch": "200"})
    failed = json.loads(marker.read_text())
    assert failed["sent_before_failure"] >= per_task // 2, failed

    committed = consume_all({**conf, "isolation.level": "read_committed"}, topic)
    keys = sorted(m.key().decode() for m in committed)
    assert keys == sorted(f"k{i}" for i in range(rows))
    assert {m.partition() for m in committed if int(m.key().decode()[1:]) < per_task} == {0}
    written_by = {p: {(w["attempt"], w["ip"]) for w in
                      (json.loads(_headers(m)["written-by"]) for m in committed
                       if m.partition() == p)} for p in range(4)}
    assert written_by[0] == {(1, _other(test_hosts, failed["ip"]))}, written_by
    assert all({a for a, _ in written_by[p]} == {0} for p in (1, 2, 3)), written_by

    everything = consume_all({**conf, "isolation.level": "read_uncommitted"}, topic)
    aborted = [json.loads(_headers(m)["written-by"]) for m in everything
               if m.partition() == 0 and json.loads(_headers(m)["written-by"])["attempt"] == 0]
    assert len(aborted) >= per_task // 2
    assert {(w["attempt"], w["ip"]) for w in aborted} == {(0, failed["ip"])}
    assert sorted(r[0] for r in result["read"]) == keys  # kafkawire read_committed agrees


def _other(test_hosts, address: str) -> str:
    both = workers(test_hosts)
    assert address in both, address
    (other,) = both - {address}
    return other


def test_executor_killed_mid_micro_batch(run_job, cluster_kafka, executor_env, test_hosts,
                                         cluster_dir):
    """An availableNow stream copying 4 partitions of 500 records to another topic with
    kafkawire's exactly-once sink, 800 records per micro-batch; in the second micro-batch the
    executor running partition 1's task is killed with SIGKILL at its record 300. Spark
    retries the task on an executor still alive (the Worker also starts a new one), the query
    ends normally, and the copy holds every record once."""
    conf, source, sink, shared = _copy_of_a_new_topic(cluster_kafka, cluster_dir, "kill")
    marker = shared / "killed"
    result = run_job(
        {"mode": "stream-copy", "bootstrap": cluster_kafka.bootstrap(), "topic": source,
         "sink_topic": sink, "shared": str(shared), "trigger": "availableNow",
         "read_options": {"startingOffsets": "earliest", "maxOffsetsPerTrigger": "800"},
         "sink_options": {"kafka.transactional.id": f"tx-{source}"},
         "fault": {"kind": "kill-executor", "partition": 1, "at": 300,
                   "marker": str(marker)}},
        executor_env.archive, conf=RETRIES)
    killed = json.loads(marker.read_text())
    assert not Path(f"/proc/{killed['executor_pid']}").exists(), killed
    assert [b for b in result["batches"] if b] == [800, 800, 400]
    copied_by = _copies_exactly_once(conf, source, sink)
    assert {w["attempt"] for w in copied_by} == {0, 1}  # the killed task's retry, only it


def test_driver_killed_mid_stream_then_restarted_on_its_checkpoint(
        start_job, run_job, cluster_kafka, executor_env, test_hosts, cluster_dir):
    """A stream copying 4 partitions of 500 records (200 per micro-batch, a trigger a second)
    with kafkawire's exactly-once sink; the driver (spark-submit's JVM and the job's Python)
    is killed with SIGKILL while a micro-batch is planned and not committed. 400 more records
    are written, and a new driver on the same checkpoint (on a directory every host shares)
    runs to the end: the copy holds each of the 2400 records once, and no transaction of the
    killed driver is left open (read_committed readers reach the end)."""
    conf, source, sink, shared = _copy_of_a_new_topic(cluster_kafka, cluster_dir, "crash")
    spec = {"mode": "stream-copy", "bootstrap": cluster_kafka.bootstrap(), "topic": source,
            "sink_topic": sink, "shared": str(shared), "trigger": 1,
            "read_options": {"startingOffsets": "earliest", "maxOffsetsPerTrigger": "200"},
            "sink_options": {"kafka.transactional.id": f"tx-{source}"}}
    running = start_job(spec, executor_env.archive, conf=RETRIES)
    checkpoint = shared / "checkpoint"
    deadline = time.monotonic() + 300
    killed_in = None
    while killed_in is None:
        assert running.process.poll() is None, running.stderr_path.read_text()[-5000:]
        assert time.monotonic() < deadline, "no micro-batch after the second within 300 s"
        planned = _batch_ids(checkpoint / "offsets")
        committed = _batch_ids(checkpoint / "commits")
        if planned and max(planned) >= 2 and max(planned) not in committed:
            running.kill()
            killed_in = max(planned)
        else:
            time.sleep(0.05)
    running.wait(60)
    assert killed_in not in _batch_ids(checkpoint / "commits")

    produce_numbered(conf, source, 4, 100, first=500)
    result = run_job({**spec, "trigger": "availableNow"}, executor_env.archive, conf=RETRIES)
    assert sum(result["batches"]) == 2400 - 200 * killed_in
    copied_by = _copies_exactly_once(conf, source, sink)
    assert len(copied_by) == 2400


def _batch_ids(directory: Path) -> set[int]:
    """The micro-batch ids a checkpoint's ``offsets`` or ``commits`` directory holds."""
    if not directory.is_dir():
        return set()
    return {int(name) for name in os.listdir(directory) if name.isdigit()}
