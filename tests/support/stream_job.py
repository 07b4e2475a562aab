"""A kafkawire streaming query in a process of its own, for tests that kill it.

``python -m tests.support.stream_job --bootstrap B --topic T --sink DIR --checkpoint DIR
--stop-file PATH --result PATH [--group G] [--trigger '500 milliseconds']``

Starts a local[2] SparkSession (as tests/conftest.py's ``spark`` fixture, kafkawire registered
the same way) and a query reading ``--topic`` from the earliest offsets into a parquet file
sink with ``--checkpoint``; with ``--group`` the source commits consumed offsets there
(commitOffsets=kafka). The query runs until ``--stop-file`` exists; then it is drained with
``processAllAvailable`` (so it has read everything written before the file appeared), stopped,
and the last progress is written as JSON to ``--result``; exit 0. A test kills the process
group with SIGKILL mid-run instead and starts it again on the same checkpoint: the driver,
its JVM and the Python workers die together, as when a machine or container is lost.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--sink", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--stop-file", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--group")
    ap.add_argument("--trigger", default="500 milliseconds")
    args = ap.parse_args(argv)

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from spark_kafka_wire import KafkaWireDataSource

    spark = (SparkSession.builder.master("local[2]").appName("kafkawire-stream-job")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "1g")
             .config("spark.python.worker.reuse", "true")
             .getOrCreate())
    spark.dataSource.register(KafkaWireDataSource)
    reader = (spark.readStream.format("kafkawire").option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.topic).option("startingOffsets", "earliest"))
    if args.group:
        reader = reader.option("kafka.group.id", args.group).option("commitOffsets", "kafka")
    q = (reader.load().select("partition", "offset", "value").writeStream.format("parquet")
         .option("path", args.sink).option("checkpointLocation", args.checkpoint)
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


if __name__ == "__main__":
    sys.exit(main())
