"""A session's first write and the cost of a small write (the ``spark-first-write`` scenario
of ``python -m bench``): one measurement per process, ``python -m bench.first_write '<json
spec>'``, printing ``BENCH-RESULT {json}``.

Each run is a fresh process and SparkSession (local[2], the bench's settings), so that
nothing is warm: the session's start is timed, then its first write (``rows`` rows of the
spark-write DataFrame into a fresh topic), then ``small`` writes of one row each, whose median
is the per-job cost of a small write. Implementations: kafkawire; Spark's JVM ``kafka`` format
with the producer settings of the write rows; the limit, the same DataFrame into the bench's
counting Python writer (``benchlimit``: no broker, no encoding). The limit's first write is
what Spark imposes on any Python data source's first write: the Python worker processes it
starts (one to plan the write, one per executor core, one to commit), each importing pyspark;
kafkawire minus the limit is kafkawire's own share (its import in those workers, its producer,
the broker).

Beside the runs, what one Python worker pays to import pyspark's write worker module is timed
in a fresh interpreter twice: from ``pyspark.zip``, the way Spark's PythonWorkerFactory puts
it first on every worker's PYTHONPATH (a zip archive holds no bytecode, so each worker compiles
every module it imports), and from the installed package's bytecode. Their difference is what
Spark would save per worker by shipping bytecode in pyspark.zip or preferring the installed
pyspark.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

IMPLS = ("jvm", "kafkawire", "limit")


def first_write_run(spec: dict) -> dict:
    """One fresh session: its start, its first write and ``small`` one-row writes (s)."""
    from bench.broker import jvm_options
    from bench.suite import (
        bench_session,
        create_topic,
        delete_topic,
        end_offsets,
        jvm_write_options,
        write_source_df,
    )

    conf: dict[str, str] = {}
    impl, kafka = spec["impl"], spec["kafka"]
    if impl == "jvm":
        from tests.support.spark_kafka_connector import session_conf

        conf.update(session_conf())
    t0 = time.perf_counter()
    spark = bench_session(conf)
    session_s = time.perf_counter() - t0
    topic = f"bench-first-{uuid.uuid4().hex[:8]}"
    try:
        if impl != "limit":
            create_topic(kafka, topic)

        def write(rows: int) -> float:
            df = write_source_df(spark, rows, spec["value_size"])
            start = time.perf_counter()
            if impl == "kafkawire":
                (df.write.format("kafkawire").options(**kafka).option("topic", topic)
                 .mode("append").save())
            elif impl == "jvm":
                (df.write.format("kafka").options(**jvm_options(kafka))
                 .options(**jvm_write_options("none")).option("topic", topic)
                 .mode("append").save())
            else:
                df.write.format("benchlimit").mode("append").save()
            return time.perf_counter() - start

        first_s = write(spec["rows"])
        small = [write(1) for _ in range(spec["small"])]
        if impl != "limit":
            written = sum(end_offsets(kafka, topic).values())
            assert written == spec["rows"] + spec["small"], (written, spec)
            delete_topic(kafka, topic)
    finally:
        spark.stop()
    return {"session_s": session_s, "first_s": first_s, "small_s": small}


def worker_import_seconds(zipped: bool, repeat: int = 3) -> float:
    """Best of ``repeat`` fresh interpreters importing pyspark's write worker module: from
    pyspark.zip first on the path, as Spark starts its workers, or from the installed
    package's bytecode."""
    import pyspark

    env = dict(os.environ)
    if zipped:
        lib = Path(pyspark.__file__).parent / "python" / "lib"
        zips = sorted(str(p) for p in lib.glob("*.zip"))
        if not zips:
            return float("nan")
        env["PYTHONPATH"] = os.pathsep.join(zips)
    else:
        env.pop("PYTHONPATH", None)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c",
                        "import pyspark.sql.worker.write_into_data_source"],
                       env=env, check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def first_write_rows(measure: Callable[[dict, str], dict], kafka: dict[str, str], rows: int,
                     value_size: int, runs: int, small: int, impls: tuple[str, ...],
                     started: float) -> dict:
    """Every implementation's runs (interleaved, each in a fresh process that ``measure``
    starts) and the import figures, for :func:`print_table`."""
    out: dict = {"rows": rows, "runs": {i: [] for i in impls}}
    for run in range(runs):
        for impl in impls:
            spec = {"impl": impl, "kafka": kafka, "rows": rows, "value_size": value_size,
                    "small": small}
            result = measure(spec, "bench.first_write")
            if "error" in result:
                raise SystemExit(f"first write {impl}: {result['error']}")
            out["runs"][impl].append(result)
            print(f"  [{time.perf_counter() - started:5.0f} s] first write {impl} (run "
                  f"{run + 1}): session {result['session_s']:.2f} s, first write "
                  f"{result['first_s']:.2f} s, one-row writes median "
                  f"{statistics.median(result['small_s']):.3f} s", flush=True)
    out["zip_import_s"] = worker_import_seconds(zipped=True)
    out["installed_import_s"] = worker_import_seconds(zipped=False)
    return out


def print_table(result: dict) -> None:
    """Medians over the runs of each implementation, and the split against the limit."""
    runs = result["runs"]

    def med(impl: str, key: str) -> float:
        values = [r[key] if key != "small_s" else statistics.median(r[key])
                  for r in runs[impl]]
        return statistics.median(values)

    print(f"\nA session's first write ({result['rows']:,} rows) and a one-row write "
          f"(seconds, median of {len(next(iter(runs.values())))} fresh sessions each):")
    print(f"{'implementation':<34} {'session start':>13} {'first write':>12} "
          f"{'one-row write':>14} {'first / JVM':>12} {'one-row / JVM':>14}")
    jvm = "jvm" in runs and runs["jvm"]
    for impl, name in (("jvm", "Spark JVM kafka"), ("kafkawire", "kafkawire"),
                       ("limit", "limit (counting Python writer)")):
        if impl not in runs or not runs[impl]:
            continue
        first, small = med(impl, "first_s"), med(impl, "small_s")
        ratio = f"{first / med('jvm', 'first_s'):.2f}" if jvm else ""
        small_ratio = f"{small / med('jvm', 'small_s'):.2f}" if jvm else ""
        print(f"{name:<34} {med(impl, 'session_s'):>13.2f} {first:>12.2f} {small:>14.3f} "
              f"{ratio:>12} {small_ratio:>14}")
    if runs.get("limit") and runs.get("kafkawire"):
        print(f"kafkawire's own share (kafkawire - limit): first write "
              f"{med('kafkawire', 'first_s') - med('limit', 'first_s'):.2f} s, one-row write "
              f"{med('kafkawire', 'small_s') - med('limit', 'small_s'):.3f} s")
    print(f"one Python worker importing pyspark's write worker: {result['zip_import_s']:.2f} s "
          f"from pyspark.zip (as Spark starts it), {result['installed_import_s']:.2f} s from "
          "the installed package's bytecode")


def main() -> None:
    spec = json.loads(sys.argv[1])
    print("BENCH-RESULT " + json.dumps(first_write_run(spec)), flush=True)


if __name__ == "__main__":
    main()
