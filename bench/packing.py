"""Packing small ranges into shared tasks: ``python -m bench.packing [--partitions 200]
[--rows 10] [--runs 5]``.

Starts the embedded broker, writes ``--rows`` records into each of ``--partitions``
partitions, and times ``count()`` on a freshly loaded DataFrame (planning included, as a user
sees it) in Spark local[2], with packing (the default) and without
(``maxOffsetRangesPerPartition=1``: one task per partition, Spark's plan), alternating, after
one warm-up run of each. Prints every run (with the 1-minute load average, since other work on
the machine shows up in the figures), the best and the median of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.packing")
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--rows", type=int, default=10, help="records per partition")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)

    import numpy as np
    import pyarrow as pa

    from spark_kafka_wire.client.config import ClientConfig
    from spark_kafka_wire.client.metadata.admin import create_topics
    from spark_kafka_wire.client.metadata.cluster import KafkaClient
    from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
    from spark_kafka_wire.source.planning import default_task_count
    from spark_kafka_wire.testing.embedded import EmbeddedBroker
    from spark_kafka_wire.testing.session import local_session

    broker = EmbeddedBroker().start()
    spark = local_session("kafkawire-bench-packing")
    try:
        client = KafkaClient(ClientConfig.from_servers(broker.bootstrap_servers))
        topic = f"packing-{args.partitions}x{args.rows}"
        create_topics(client, [(topic, args.partitions)])
        n = args.partitions * args.rows
        parts = np.repeat(np.arange(args.partitions, dtype=np.int32), args.rows)
        values = pa.array([b"v%d" % i for i in range(n)], pa.binary())
        Producer(client, ProduceSettings()).send(
            encode_partitioned(topic, None, values, parts, ProduceSettings(), 1_700_000_000_000))
        client.close()

        def count(options: dict[str, str]) -> tuple[float, int, int]:
            t0 = time.perf_counter()
            df = (spark.read.format("kafkawire")
                  .option("kafka.bootstrap.servers", broker.bootstrap_servers)
                  .option("subscribe", topic).options(**options).load())
            rows = df.count()
            elapsed = time.perf_counter() - t0
            assert rows == n, (rows, n)
            return elapsed, df.rdd.getNumPartitions(), rows

        plans = {"packed": {}, "unpacked": {"maxOffsetRangesPerPartition": "1"}}
        times: dict[str, list[float]] = {name: [] for name in plans}
        tasks: dict[str, int] = {}
        for options in plans.values():  # warm-up: JVM, Python workers, connections
            count(options)
        for run in range(args.runs):
            for name, options in plans.items():
                elapsed, tasks[name], _ = count(options)
                times[name].append(elapsed)
                print(f"run {run + 1} {name:9s} {elapsed:6.2f} s  ({tasks[name]} tasks, "
                      f"load {os.getloadavg()[0]:.2f})", flush=True)
        print(f"\n{args.partitions} partitions x {args.rows} rows, local[2], "
              f"os.cpu_count()={os.cpu_count()}, default task count {default_task_count()}")
        for name in plans:
            print(f"{name:9s} {tasks[name]:4d} tasks  best {min(times[name]):5.2f} s  "
                  f"median {statistics.median(times[name]):5.2f} s")
    finally:
        spark.stop()
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
