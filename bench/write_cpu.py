"""kafkawire's own CPU per written row, without Spark: ``python -m bench.write_cpu [--rows N]
[--value-sizes 100,1024] [--codecs none,lz4,zstd] [--keyless] [--runs 8] [--profile]``.

A Spark write's wall time is mostly Spark's (generating the rows, converting them to Arrow and
handing them to the Python workers: the counting writer's ceiling) and the broker's on the same
cores (the produce limit); what kafkawire adds is its task's CPU. This measures that alone:
the batch writer a Spark task runs (``KafkaWireBatchWriter.write``, built by the data source
as Spark builds it) is given Arrow batches shaped as Spark hands them over (10,000 rows each,
read back from an Arrow IPC stream so that each batch owns its buffers, as they arrive from
the JVM), four tasks of a quarter of the rows each into a fresh 4-partition topic of the bench's
Apache Kafka broker. Reported: the process's CPU seconds per million rows (best of ``--runs``
after one untimed run), the wall time beside it; ``--profile`` prints cProfile's functions
of the last run by their own time. The rows are the spark-write rows' (keys ``k%07d``, JSON-like
values padded to the size), keyed unless ``--keyless``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc

from bench.broker import bench_broker
from bench.suite import ARROW_BATCH_ROWS, PARTITIONS, create_topic, delete_topic, end_offsets


def spark_shaped_batches(rows: int, value_size: int, keyless: bool) -> list[pa.RecordBatch]:
    """The spark-write DataFrame's rows as Spark hands them to a Python writer: batches of
    10,000 rows, each with buffers of its own (read back from an IPC stream)."""
    ids = pa.array(range(rows), pa.int64())
    digits = pc.utf8_lpad(pc.cast(pc.remainder(ids, 10_000_000), pa.string()), 7, "0")
    keys = pc.binary_join_element_wise(pa.scalar("k"), digits, pa.scalar(""))
    head = pc.binary_join_element_wise(pa.scalar('{"id":'), pc.cast(ids, pa.string()),
                                       pa.scalar(',"note":"'), pa.scalar(""))
    values = pc.utf8_rpad(head, value_size, "x")
    columns = {"value": values.cast(pa.binary())}
    if not keyless:
        columns = {"key": keys.cast(pa.binary()), **columns}
    table = pa.table(columns)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=ARROW_BATCH_ROWS):
            writer.write_batch(batch)
    return list(pa.ipc.open_stream(sink.getvalue()))


def measure(kafka: dict[str, str], batches: list[pa.RecordBatch], codec: str, runs: int,
            profile: bool) -> tuple[float, float, pstats.Stats | None]:
    """(best CPU s, its wall s, the last run's profile) of writing ``batches`` as four tasks."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    from spark_kafka_wire.datasource import KafkaWireDataSource

    schema = StructType([StructField(n, BinaryType()) for n in batches[0].schema.names])
    rows = sum(b.num_rows for b in batches)
    per_task = -(-len(batches) // PARTITIONS)
    best = (float("inf"), 0.0)
    stats = None
    for run in range(runs + 1):  # the first run warms the connections and caches
        topic = f"bench-cpu-{uuid.uuid4().hex[:8]}"
        create_topic(kafka, topic)
        writer = KafkaWireDataSource({**kafka, "topic": topic,
                                      "kafka.compression.type": codec}).writer(schema, False)
        prof = cProfile.Profile() if profile and run == runs else None
        wall, cpu = time.perf_counter(), time.process_time()
        if prof is not None:
            prof.enable()
        for task in range(PARTITIONS):
            writer.write(iter(batches[task * per_task:(task + 1) * per_task]))
        if prof is not None:
            prof.disable()
            stats = pstats.Stats(prof)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        written = sum(end_offsets(kafka, topic).values())
        assert written == rows, (written, rows)
        delete_topic(kafka, topic)
        if run and cpu < best[0]:
            best = (cpu, wall)
    return best[0], best[1], stats


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--value-sizes", default="100,1024")
    ap.add_argument("--codecs", default="none,lz4,zstd")
    ap.add_argument("--keyless", action="store_true")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    with bench_broker("kafka", ["PLAINTEXT"]) as broker:
        print(f"broker: {broker.description}; {args.rows:,} rows in {PARTITIONS} tasks, "
              f"{'keyless' if args.keyless else 'keys of 8 bytes'}")
        print(f"{'value size':>10} {'codec':>6} {'CPU s per 1M rows':>18} {'wall s per 1M':>14}")
        for size in (int(v) for v in args.value_sizes.split(",")):
            batches = spark_shaped_batches(args.rows, size, args.keyless)
            for codec in args.codecs.split(","):
                cpu, wall, stats = measure(broker.kafka, batches, codec, args.runs,
                                           args.profile)
                scale = 1_000_000 / args.rows
                print(f"{size:>10} {codec:>6} {cpu * scale:>18.2f} {wall * scale:>14.2f}",
                      flush=True)
                if stats is not None:
                    stats.sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
