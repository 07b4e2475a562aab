"""Many small partitions against few large ones (the ``spark-many-partitions`` scenario of
``python -m bench``): one measurement process, ``python -m bench.many_partitions '<json
spec>'``, printing ``BENCH-RESULT {json}``.

The same 2,000 rows are read from a topic of 200 partitions x 10 rows and from one of 4
partitions x 500 rows, by a batch read into the noop sink in Spark local[2], timed from
``spark.read...load()`` to the end of ``save()``: planning (Metadata, ListOffsets for both
ends of 200 partitions) is part of what a user waits for, so it is timed. The reads alternate
(200 x 10, 4 x 500, 200 x 10, ...) after one warm-up read of each (JVM, Python workers,
connections), so that drift in the machine's load falls on both alike; best and median of
each. Without packing the 200-partition read would be 200 tasks, one per partition (``python
-m bench.packing`` measures that); with it, both reads are a few tasks, and what remains is the
per-partition cost of planning and of fetching 200 ranges. With ``jvm``, Spark's own ``kafka``
format reads the 200 x 10 topic in the first JVM_RUNS runs of the same alternation (one task
per partition, as Spark plans it), with its defaults and with a fetch.max.wait.ms of 10 ms:
each of its tasks otherwise waits about the default 500 ms.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

ROWS = 2000
SHAPES = ((200, 10), (4, 500))


def shape_name(partitions: int, rows: int) -> str:
    return f"{partitions} x {rows}"


def jvm_name(shape: str, wait: bool = False) -> str:
    """The row of Spark's JVM ``kafka`` format reading the topic of ``shape`` (``wait``:
    with JVM_FETCH_WAIT)."""
    return f"{shape} {JVM_SUFFIX}" + (f" {JVM_FETCH_WAIT[0]}={JVM_FETCH_WAIT[1]}" if wait else "")


JVM_SUFFIX = "Spark kafka (JVM)"
#: Spark's JVM read of a partition waits about the Java consumer's fetch.max.wait.ms (500 ms by
#: default) per task; the second JVM row sets it low to show that part.
JVM_FETCH_WAIT = ("kafka.fetch.max.wait.ms", "10")
#: The JVM rows run only in the first runs of the alternation: at the default wait a JVM read
#: of 200 partitions takes about 200 x 0.5 s / 2 task slots.
JVM_RUNS = 2


def run(spec: dict) -> dict:
    """``topics``: shape name -> topic, read by kafkawire; ``jvm``: the shape names Spark's
    own ``kafka`` format reads too (its rows alternate with the others)."""
    from bench.broker import jvm_options
    from spark_kafka_wire.testing.session import local_session

    kafka, topics, runs = spec["kafka"], spec["topics"], spec["runs"]
    reads = {name: ("kafkawire", kafka, topic) for name, topic in topics.items()}
    conf = {}
    if spec.get("jvm"):
        from tests.support.spark_kafka_connector import session_conf

        conf = session_conf()
        for name in spec["jvm"]:
            reads[jvm_name(name)] = ("kafka", jvm_options(kafka), topics[name])
            reads[jvm_name(name, wait=True)] = (
                "kafka", {**jvm_options(kafka), JVM_FETCH_WAIT[0]: JVM_FETCH_WAIT[1]},
                topics[name])
    spark = local_session("kafkawire-bench-many-partitions", quiet=True, conf=conf)

    def read(fmt: str, options: dict[str, str], topic: str, count: bool = False
             ) -> tuple[float, int]:
        t0 = time.perf_counter()
        df = spark.read.format(fmt).options(**options).option("subscribe", topic).load()
        if count:
            assert df.count() == ROWS, topic
            return time.perf_counter() - t0, df.rdd.getNumPartitions()
        df.write.format("noop").mode("overwrite").save()
        return time.perf_counter() - t0, 0

    times: dict[str, list[float]] = {name: [] for name in reads}
    tasks: dict[str, int] = {}
    load = [os.getloadavg()[0]]
    began = time.perf_counter()
    try:
        for name, how in reads.items():  # warm-up, and the row count checked
            _, tasks[name] = read(*how, count=True)
        for run_index in range(runs):
            for name, how in reads.items():
                if how[0] == "kafka" and run_index >= JVM_RUNS:
                    continue
                times[name].append(read(*how)[0])
    finally:
        spark.stop()
    load.append(os.getloadavg()[0])
    return {"times": times, "tasks": tasks, "load": [round(x, 2) for x in load],
            "best": {n: min(t) for n, t in times.items()},
            "median": {n: statistics.median(t) for n, t in times.items()},
            "wall_s": round(time.perf_counter() - began, 1)}


def print_table(r: dict) -> None:
    print()
    print(f"many partitions: batch read -> noop of {ROWS:,} rows ({shape_name(*SHAPES[0])} vs "
          f"{shape_name(*SHAPES[1])}), planning included, local[2], "
          f"{len(next(iter(r['times'].values()))) if 'times' in r else '?'} alternating runs "
          "after a warm-up")
    if "error" in r:
        print(f"failed: {r['error']}")
        return
    header = f"{'partitions x rows':<52} {'tasks':>5} {'best s':>7} {'median s':>8}  runs s"
    print(header)
    print("-" * len(header))
    for name, times in r["times"].items():
        print(f"{name:<52} {r['tasks'][name]:>5} {r['best'][name]:>7.2f} "
              f"{r['median'][name]:>8.2f}  {' '.join(f'{t:.2f}' for t in times)}")
    many, few = (shape_name(*s) for s in SHAPES)
    print(f"ratio {many} / {few}: best {r['best'][many] / r['best'][few]:.2f}, median "
          f"{r['median'][many] / r['median'][few]:.2f} (goal <= 2); load "
          f"{r['load'][0]:.1f}-{r['load'][-1]:.1f}")
    for wait in (False, True):
        jvm = jvm_name(many, wait)
        if jvm in r["median"]:
            print(f"{many}, kafkawire / {jvm}, seconds: best "
                  f"{r['best'][many] / r['best'][jvm]:.3g}, median "
                  f"{r['median'][many] / r['median'][jvm]:.3g} (above 1: kafkawire is slower)")
    print()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print("BENCH-RESULT " + json.dumps(run(json.loads(argv[0]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
