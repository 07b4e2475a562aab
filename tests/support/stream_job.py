"""A kafkawire streaming query in a process of its own, for tests that kill it.

``python -m tests.support.stream_job --bootstrap B --topic T (--sink DIR | --sink-topic T2
--transactional-id P) --checkpoint DIR --stop-file PATH --result PATH [--group G]
[--trigger '500 milliseconds'] [--master 'local[2]'] [--max-offsets-per-trigger N]``

Starts a local[2] SparkSession (``--master``; as tests/conftest.py's ``spark`` fixture,
kafkawire registered the same way) and a query reading ``--topic`` from the earliest offsets into a parquet file
sink with ``--checkpoint``; with ``--group`` the source commits consumed offsets there
(commitOffsets=kafka). With ``--sink-topic`` the query writes ``key`` and ``value`` to that
topic with kafkawire's exactly-once sink instead (``kafka.transactional.id`` =
``--transactional-id``), so a test can kill the driver between the tasks' flushes and its
EndTxn calls. ``--master 'local[2,3]'`` lets a failed task run again (local mode otherwise
runs each task once), for tests that kill Python workers. The query runs until ``--stop-file``
exists; then it is drained with
``processAllAvailable`` (so it has read everything written before the file appeared), stopped,
and the last progress is written as JSON to ``--result``; exit 0. A test kills the process
tree with SIGKILL mid-run instead and starts it again on the same checkpoint: the driver,
its JVM and the Python workers die together, as when a machine or container is lost.

:class:`StreamJob` runs this module in a process group of its own, from a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.processes import command_line, descendants, kill_tree

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB_START_S = 240  # a Spark process starting on two busy cores


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--sink")
    out.add_argument("--sink-topic")
    ap.add_argument("--transactional-id")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--stop-file", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--group")
    ap.add_argument("--trigger", default="500 milliseconds")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--max-offsets-per-trigger", type=int)
    args = ap.parse_args(argv)
    if args.sink_topic and not args.transactional_id:
        ap.error("--sink-topic needs --transactional-id (the exactly-once sink is under test)")

    from spark_kafka_wire.testing.session import local_session

    spark = local_session("kafkawire-stream-job", args.master)
    reader = (spark.readStream.format("kafkawire").option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.topic).option("startingOffsets", "earliest"))
    if args.group:
        reader = reader.option("kafka.group.id", args.group).option("commitOffsets", "kafka")
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    if args.sink_topic:
        writer = (reader.load().select("key", "value").writeStream.format("kafkawire")
                  .option("kafka.bootstrap.servers", args.bootstrap)
                  .option("topic", args.sink_topic)
                  .option("kafka.transactional.id", args.transactional_id))
    else:
        writer = (reader.load().select("partition", "offset", "value").writeStream
                  .format("parquet").option("path", args.sink))
    q = (writer.option("checkpointLocation", args.checkpoint)
         .trigger(processingTime=args.trigger).start())
    print(f"{time.strftime('%H:%M:%S')} stream job pid {os.getpid()}: query {q.id} started",
          flush=True)
    while not os.path.exists(args.stop_file):
        if q.exception() is not None:
            print(f"query failed: {q.exception()}", flush=True)
            return 1
        time.sleep(0.1)
    q.processAllAvailable()
    progress = q.lastProgress
    q.stop()
    with open(args.result + ".tmp", "w") as out:
        out.write(progress.json)
    os.replace(args.result + ".tmp", args.result)
    spark.stop()
    return 0


def log_ids(checkpoint: str, log: str) -> list[int]:
    """Batch ids in one of the checkpoint's logs (offsets: planned, commits: completed)."""
    path = os.path.join(checkpoint, log)
    names = os.listdir(path) if os.path.isdir(path) else []
    return sorted(int(name) for name in names if name.isdigit())


class StreamJob:
    """This module in a process group of its own, logging to a file under ``tmp_path``.

    The output is a parquet sink in ``tmp_path/sink`` unless ``options`` name one
    (``--sink-topic``); ``options`` are more command-line options of :func:`main`."""

    def __init__(self, bootstrap: str, topic: str, tmp_path: Path, *options: str) -> None:
        self.sink, self.checkpoint = str(tmp_path / "sink"), str(tmp_path / "checkpoint")
        self.stop_file, self.result = str(tmp_path / "stop"), str(tmp_path / "result.json")
        self.log_path = str(tmp_path / "job.log")
        output = () if "--sink-topic" in options else ("--sink", self.sink)
        self.args = [sys.executable, "-m", "tests.support.stream_job",
                     "--bootstrap", bootstrap, "--topic", topic, *output,
                     "--checkpoint", self.checkpoint, "--stop-file", self.stop_file,
                     "--result", self.result, *options]
        self.process: subprocess.Popen | None = None

    def start(self) -> StreamJob:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (REPO, os.environ.get("PYTHONPATH")) if p)}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.args, cwd=REPO, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        return self

    def log_tail(self) -> str:
        with open(self.log_path, errors="replace") as log:
            return log.read()[-3000:]

    def committed(self) -> list[int]:
        """Batch ids in the checkpoint's commit log."""
        return log_ids(self.checkpoint, "commits")

    def planned(self) -> list[int]:
        """Batch ids in the checkpoint's offset log (the write-ahead log)."""
        return log_ids(self.checkpoint, "offsets")

    def wait_until(self, done: Callable[[], bool], what: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            assert self.process is not None and self.process.poll() is None, \
                f"the stream job exited waiting for {what}:\n{self.log_tail()}"
            assert time.monotonic() < deadline, \
                f"{what} not reached in {timeout_s}s:\n{self.log_tail()}"
            time.sleep(0.05)

    def kill9(self) -> list[int]:
        """SIGKILL to the whole tree: driver, JVM, Python workers, as a lost machine (its
        group is not enough: each ``pyspark.daemon`` makes a group of its own); the pids of
        the processes below the driver that were killed."""
        assert self.process is not None
        return kill_tree(self.process)

    def python_processes(self) -> dict[int, list[str]]:
        """The Python processes below the driver's JVM (pid -> argv)."""
        assert self.process is not None
        found = {pid: command_line(pid) for pid in descendants(self.process.pid)}
        return {pid: argv for pid, argv in found.items() if argv and "python" in argv[0]}

    def drain_and_stop(self, timeout_s: float = 180) -> dict:
        """Create the stop file: the job reads all there is, stops, and reports its last
        progress."""
        assert self.process is not None
        open(self.stop_file, "w").close()
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill9()
            raise AssertionError(f"the stream job did not stop:\n{self.log_tail()}") from None
        assert code == 0, f"the stream job failed (exit {code}):\n{self.log_tail()}"
        with open(self.result) as result:
            return json.load(result)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill9()


if __name__ == "__main__":
    sys.exit(main())
