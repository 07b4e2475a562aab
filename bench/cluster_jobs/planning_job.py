"""The driver side of ``python -m bench.cluster_planning``: a ``spark-submit`` job on the test
cluster's driver host. Its one argument is a JSON spec; it prints one line of JSON results
after RESULT_MARKER.

Spec: ``bootstrap``, ``pattern`` (subscribePattern matching the N partitions' topics),
``runs`` (batch plannings), ``trigger_s``, ``warmup`` and ``triggers`` (micro-batches).

What it measures, on the driver only (the point of issue 31 item 5 is the driver's cost):

- batch planning: ``spark.read...load()`` then ``df.rdd.getNumPartitions()``, which makes
  Spark plan the read, so kafkawire's reader lists the topics and their offsets in the Python
  planner workers the driver JVM starts; the first run (JVM warm-up, workers started) is kept
  apart from the others. Each run's wall-clock window (epoch ms) is returned so that the
  bench can count the requests the broker logged from the driver's address in it.
- memory: a thread samples /proc every SAMPLE_S for the driver's processes (the spark-submit
  JVM, which is this process' parent, and all its descendants: this Python and the Python
  workers the JVM starts for planning) and keeps the peak of their summed RSS per phase; the
  JVM's own heap figure (MemoryMXBean) after each phase.
- a stream of the same pattern with a processing-time trigger into the noop sink (a few new
  records per trigger are produced by the bench from outside the driver's host): each
  micro-batch's StreamingQueryProgress (``durationMs``, ``numInputRows``, its start).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time

from tests.support.spark_standalone import RESULT_MARKER  # the driver has the checkout

SAMPLE_S = 0.05


def _children() -> dict[int, list[int]]:
    """ppid -> pids, from /proc/*/stat (the command name may hold spaces: parse after ')')."""
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        tree.setdefault(ppid, []).append(int(name))
    return tree


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class DriverMemory(threading.Thread):
    """Peak summed RSS of the driver's process tree (rooted at the JVM), per phase, and the
    peak of each part: the JVM, this Python, the other Pythons (the planner workers)."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.phase = "start"
        self.peaks: dict[str, dict[str, int]] = {}
        self.processes: dict[str, int] = {}
        self._halt = threading.Event()

    def sample(self) -> None:
        tree = _children()
        pids, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            todo.extend(tree.get(pid, []))
        parts = {"jvm": 0, "job_python": 0, "workers": 0}
        for pid in pids:
            part = ("jvm" if pid == self.root else
                    "job_python" if pid == os.getpid() else "workers")
            parts[part] += _rss_kib(pid)
        parts["total"] = sum(parts.values())
        peak = self.peaks.setdefault(self.phase, dict.fromkeys(parts, 0))
        for k, v in parts.items():
            peak[k] = max(peak[k], v)
        self.processes[self.phase] = max(self.processes.get(self.phase, 0), len(pids))

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample()
            time.sleep(SAMPLE_S)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _heap_used_mib(spark) -> float:
    jvm = spark.sparkContext._jvm
    used = jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage()
    return round(used.getUsed() / 2**20, 1)


def now_ms() -> int:
    return int(time.time() * 1000)


def main(spec: dict) -> dict:
    from pyspark.sql import SparkSession

    from spark_kafka_wire import KafkaWireDataSource

    memory = DriverMemory(os.getppid())
    memory.start()
    spark = SparkSession.builder.appName("kafkawire-cluster-planning").getOrCreate()
    spark.dataSource.register(KafkaWireDataSource)
    options = {"kafka.bootstrap.servers": spec["bootstrap"],
               "subscribePattern": spec["pattern"]}
    result: dict = {"heap_mib": {}}

    memory.phase = "batch"
    runs = []
    for _ in range(spec["runs"]):
        began, t0 = now_ms(), time.perf_counter()
        tasks = spark.read.format("kafkawire").options(**options).load().rdd.getNumPartitions()
        runs.append({"s": time.perf_counter() - t0, "window": [began, now_ms()],
                     "tasks": tasks})
    memory.sample()
    result["heap_mib"]["batch"] = _heap_used_mib(spark)
    later = [r["s"] for r in runs[1:]] or [runs[0]["s"]]
    result["batch"] = {"runs": runs, "first_s": runs[0]["s"], "best_s": min(later),
                       "median_s": statistics.median(later)}

    memory.phase = "stream"
    query = (spark.readStream.format("kafkawire").options(**options)
             .option("startingOffsets", "latest").load()
             .writeStream.format("noop").trigger(processingTime=f"{spec['trigger_s']} seconds")
             .start())
    wanted = spec["warmup"] + spec["triggers"]
    deadline = time.monotonic() + wanted * spec["trigger_s"] * 4 + 300
    progress: list[dict] = []
    try:
        while time.monotonic() < deadline:
            progress = [json.loads(p.json) for p in query.recentProgress]
            if len([p for p in progress if p["numInputRows"] > 0]) >= wanted:
                break
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            time.sleep(1)
    finally:
        query.stop()
    memory.sample()
    result["heap_mib"]["stream"] = _heap_used_mib(spark)
    result["progress"] = [{"batchId": p["batchId"], "timestamp": p["timestamp"],
                           "numInputRows": p["numInputRows"], "durationMs": p["durationMs"]}
                          for p in progress]
    spark.stop()
    memory.stop()
    result["rss_kib"] = memory.peaks
    result["processes"] = memory.processes
    return result


if __name__ == "__main__":
    print(RESULT_MARKER + json.dumps(main(json.loads(sys.argv[1]))), flush=True)
