"""Streaming latency (the ``spark-stream`` scenario of ``python -m bench``): one measurement per
process, ``python -m bench.streaming '<json spec>'``, printing ``BENCH-RESULT {json}``.

What is measured: a Spark local[2] streaming query with the default trigger (the next
micro-batch as soon as the last one ends) reads a topic that a load generator writes at
``rate`` records a second, spread round-robin over all its partitions; after ``warmup_s``
seconds, ``seconds`` seconds are measured. Reported: the median micro-batch duration
(``durationMs.triggerExecution`` of the batches that started in the window and read rows, with
the medians of its parts: latestOffset, queryPlanning, addBatch, walCommit, commitOffsets), the
p50 / p95 / p99 end-to-end latency of the records created in the window, and the check that
no record was lost.

End-to-end latency is ``arrival at the sink - record timestamp`` per row, and the sink is a
Python streaming Arrow writer registered by the bench (``benchlatency``) that takes the wall
clock the moment each Arrow batch reaches it, in the executor's task. That is when the rows
reach the sink code that would write them on (a Kafka sink, kafkawire's own included, produces
as it goes): neither the rest of the batch's tasks nor the commit is waited for. foreachBatch
was not used because its function runs in the driver once the batch's DataFrame is handed over:
reading the rows there means a second job (collect) whose end is what would be timed, a cost
the query itself does not have. A Python UDF would time rows inside the projection, before the
sink. The writer only records (partition, offset, timestamp, arrival, stage, task) to one small
file per task after its input ends; the files are read when the query has stopped. Spark hands
a Python writer its rows in Arrow batches of up to maxRecordsPerBatch (10,000) rows, so at these
rates a task's rows arrive together, when its reader is done: the latency is the record's wait
for a batch to start plus the task's read.

The load generator is a process of its own (its CPU and GIL are not the driver's), a
librdkafka Producer (linger.ms 0, acks all): every 10 ms it creates the records due by then (10
at 1000/s), each with the creation time in ms as its timestamp (CreateTime), the partitions
round-robin. A record's latency therefore includes its Produce round trip, as in a real
pipeline (``generated`` in the result: the acknowledgement's p50 and p99). kafkawire's own
Producer was tried first and left out: it encodes each partition's batch with numpy, which at
this spread (a batch of one record per partition per tick, 1,000 batches a second) took about
70% of a core, on a machine of two that Spark needs. The generator also runs during the
peer's runs (into a topic nobody reads) so that the machine carries the same load.

The peer is Spark's JVM ``rate`` source (rowsPerSecond, numPartitions) into the same sink. Its
offsets are whole seconds since the query started: a micro-batch only starts once a second has
passed and then holds that second's rows, whose ``timestamp`` is when each row was due (spread
over the second). Its latency is thus at least the wait for the second to end (0.5 s on
average), and its batches come once a second however fast they run: its median batch duration
(one second of rows, 64 tasks) is the figure to compare, the latency is shown for reference.

No loss: after the window, the query runs on until a micro-batch that started a second after
the window closed has completed (it planned up to the latest offsets then, which hold every
record created in the window: the generator waits for each acknowledgement); then the query and
the generator stop and the topic is read back with librdkafka (an oracle independent of
kafkawire's fetch path). Every (partition, offset) whose timestamp lies in the window must have
reached the sink; duplicates are counted. For ``rate``, the row values seen in the window must
be consecutive.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK_S = 0.01
VALUE_SIZE = 100
DRAIN_TIMEOUT_S = 120.0
PARTS = ("latestOffset", "queryPlanning", "addBatch", "walCommit", "commitOffsets")


# ---------------------------------------------------------------- the sink

class LatencySink(DataSource):
    """A streaming sink that records, per row, when the executor's task saw it."""

    @classmethod
    def name(cls) -> str:
        return "benchlatency"

    def streamWriter(self, schema: Any, overwrite: bool) -> LatencyWriter:
        return LatencyWriter(self.options["dir"])


class LatencyWriter(DataSourceStreamArrowWriter):
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        from pyspark import TaskContext

        seen: list[np.ndarray] = []
        parts: list[pa.RecordBatch] = []
        for batch in iterator:
            seen.append(np.full(batch.num_rows, time.time() * 1000.0))
            parts.append(batch)
        ctx = TaskContext.get()
        stage, task = (ctx.stageId(), ctx.partitionId()) if ctx else (-1, -1)
        if parts:
            table = pa.Table.from_batches(parts)
            partition = table.column("partition").to_numpy().astype(np.int64)
            offset = table.column("offset").to_numpy().astype(np.int64)
            stamps = table.column("timestamp").cast(pa.timestamp("us", tz="UTC"))
            ts_ms = stamps.cast(pa.int64()).to_numpy() / 1000.0
            arrived = np.concatenate(seen)
        else:
            partition = offset = np.zeros(0, np.int64)
            ts_ms = arrived = np.zeros(0)
        np.savez(os.path.join(self.directory, f"{stage}-{task}-{uuid.uuid4().hex[:8]}.npz"),
                 partition=partition, offset=offset, ts=ts_ms, arrived=arrived,
                 stage=np.full(len(offset), stage), task=np.array([stage, task]))
        return WriterCommitMessage()


def read_sink(directory: str) -> dict[str, np.ndarray]:
    """Every row the sink saw, and the stage and task of every task that wrote."""
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("partition", "offset", "ts", "arrived", "stage")}
    tasks = []
    for path in glob.glob(os.path.join(directory, "*.npz")):
        with np.load(path) as f:
            for k, v in cols.items():
                v.append(f[k])
            tasks.append(f["task"])
    out = {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}
    out["tasks"] = np.array(tasks).reshape(-1, 2)
    return out


# ---------------------------------------------------------------- the load generator

def generate(spec: dict) -> int:
    """The generator process: records at ``rate`` a second until stdin closes (see the module
    docstring), then ``GENERATED {json}``."""
    import confluent_kafka

    from bench.suite import librdkafka, make_columns

    topic, rate, partitions = spec["topic"], spec["rate"], spec["partitions"]
    keys, values = (c.to_pylist() for c in make_columns(10_000, VALUE_SIZE))
    stop = threading.Event()
    def stop_at_eof() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=stop_at_eof, daemon=True).start()
    producer = confluent_kafka.Producer({**librdkafka(spec["kafka"]), "linger.ms": 0,
                                         "acks": "all", "log_level": 3})
    acked_ms: list[float] = []  # creation to acknowledgement, per record
    failed: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            acked_ms.append(time.time() * 1000 - msg.timestamp()[1])

    sent = 0
    began = time.monotonic()
    while not stop.is_set():
        due = int((time.monotonic() - began) * rate)
        now_ms = int(time.time() * 1000)
        for i in range(sent, due):
            producer.produce(topic, values[i % 10_000], keys[i % 10_000],
                             partition=i % partitions, timestamp=now_ms, on_delivery=delivered)
        sent = max(sent, due)
        producer.poll(0)
        stop.wait(TICK_S - (time.monotonic() - began) % TICK_S)
    left = producer.flush(60)
    if failed or left:
        raise RuntimeError(f"{len(failed)} records failed, {left} not acknowledged: "
                           f"{failed[:3]}")
    print("GENERATED " + json.dumps({
        "sent": sent, "seconds": round(time.monotonic() - began, 1),
        "ack_p50_ms": round(float(np.percentile(acked_ms, 50)), 2) if acked_ms else None,
        "ack_p99_ms": round(float(np.percentile(acked_ms, 99)), 2) if acked_ms else None,
    }), flush=True)
    return 0


class Generator:
    def __init__(self, kafka: dict[str, str], topic: str, rate: int, partitions: int) -> None:
        spec = {"kafka": kafka, "topic": topic, "rate": rate, "partitions": partitions}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.streaming", "generate", json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)

    def stop(self) -> dict:
        out, _ = self.process.communicate("", timeout=120)
        for line in out.splitlines():
            if line.startswith("GENERATED "):
                return json.loads(line[len("GENERATED "):])
        raise RuntimeError(f"the generator failed (exit {self.process.returncode}): "
                           f"{out[-2000:]}")


# ---------------------------------------------------------------- the oracle

def kafka_records(kafka: dict[str, str], topic: str, partitions: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, set[int]]:
    """(partition, offset, timestamp ms) of every record in ``topic``, read by librdkafka, and
    the timestamp types met (1: CreateTime)."""
    import confluent_kafka

    from bench.suite import _confluent_consumer

    consumer = _confluent_consumer(kafka)
    ends = {}
    for p in range(partitions):
        _, high = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p),
                                                 timeout=10)
        ends[p] = high
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in ends if ends[p]])
    total = sum(ends.values())
    part: list[int] = []
    off: list[int] = []
    ts: list[float] = []
    kinds: set[int] = set()
    deadline = time.monotonic() + 120
    try:
        while len(part) < total:
            if time.monotonic() > deadline:
                raise RuntimeError(f"librdkafka read {len(part)} of {total} records")
            for m in consumer.consume(num_messages=10_000, timeout=1.0):
                if m.error():
                    raise RuntimeError(m.error())
                kind, stamp = m.timestamp()
                part.append(m.partition())
                off.append(m.offset())
                ts.append(stamp)
                kinds.add(kind)
    finally:
        consumer.close()
    return np.array(part), np.array(off), np.array(ts, dtype=np.float64), kinds


# ---------------------------------------------------------------- one run

def _progress_time(p: dict) -> float:
    """A progress entry's trigger start, in seconds since the epoch."""
    return datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def stream_run(spec: dict) -> dict:
    from pyspark.sql import functions as F

    from spark_kafka_wire.testing.session import local_session

    os.environ["PYTHONPATH"] = os.pathsep.join(  # the workers import bench.streaming
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    kafka, impl, topic = spec["kafka"], spec["impl"], spec["topic"]
    rate, partitions = spec["rate"], spec["partitions"]
    sink_name = spec.get("sink", "benchlatency")
    sink_dir = tempfile.mkdtemp(prefix="kafkawire-bench-sink-")
    checkpoint = tempfile.mkdtemp(prefix="kafkawire-bench-ckpt-")
    load = [os.getloadavg()[0]]
    conf = {"spark.sql.streaming.numRecentProgressUpdates": "100000"}
    if impl == "jvm":  # Spark's own kafka format: the connector's jars
        from tests.support.spark_kafka_connector import session_conf

        conf.update(session_conf())
    generator = Generator(kafka, topic, rate, partitions)
    spark = local_session("kafkawire-bench-stream", quiet=True, conf=conf)
    spark.dataSource.register(LatencySink)
    query = None
    try:
        if impl == "rate":
            df = (spark.readStream.format("rate").option("rowsPerSecond", rate)
                  .option("numPartitions", partitions).load()
                  .select(F.lit(0).alias("partition"), F.col("value").alias("offset"),
                          "timestamp"))
        elif impl == "jvm":
            from bench.broker import jvm_options

            df = (spark.readStream.format("kafka").options(**jvm_options(kafka))
                  .option("subscribe", topic).option("startingOffsets", "latest")
                  .options(**spec.get("options", {})).load()
                  .select("partition", "offset", "timestamp"))
        else:
            df = (spark.readStream.format("kafkawire").options(**kafka)
                  .option("subscribe", topic).option("startingOffsets", "latest")
                  .options(**spec.get("options", {})).load()
                  .select("partition", "offset", "timestamp"))
        if spec.get("coalesce"):
            df = df.coalesce(spec["coalesce"])
        started = time.time()
        query = (df.writeStream.format(sink_name).option("dir", sink_dir)
                 .option("checkpointLocation", checkpoint).start())
        t0 = started + spec["warmup_s"]
        t1 = t0 + spec["seconds"]
        while time.time() < t1:
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {query.exception()}")
            time.sleep(0.5)
        load.append(os.getloadavg()[0])
        # drain: a batch that started a second after the window closed has completed
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        drained = False
        while not drained and time.monotonic() < deadline:
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {query.exception()}")
            drained = any(_progress_time(p) > t1 + 1.0 for p in query.recentProgress)
            time.sleep(0.2)
        progress = [json.loads(p.json) for p in query.recentProgress]
        query.stop()
        query = None
    finally:
        if query is not None:
            query.stop()
        spark.stop()
        generated = generator.stop()
    sink = read_sink(sink_dir)
    shutil.rmtree(sink_dir, ignore_errors=True)
    shutil.rmtree(checkpoint, ignore_errors=True)

    lo_ms, hi_ms = t0 * 1000, t1 * 1000
    window = [p for p in progress if t0 <= _progress_time(p) <= t1 and p["numInputRows"] > 0]
    in_window = (sink["ts"] >= lo_ms) & (sink["ts"] <= hi_ms)
    latency = (sink["arrived"] - sink["ts"])[in_window]
    seen = {(int(p), int(o)) for p, o in zip(sink["partition"][in_window],
                                             sink["offset"][in_window], strict=True)}
    expected = lost = None
    kinds: set[Any] = set()
    if sink_name != "benchlatency":  # noop: batch durations only
        pass
    elif impl == "rate":
        values = sorted(o for _, o in seen)
        expected = values[-1] - values[0] + 1 if values else 0
        lost, kinds = expected - len(values), {"rate"}
    else:
        part, off, ts, kinds_found = kafka_records(kafka, topic, partitions)
        mask = (ts >= lo_ms) & (ts <= hi_ms)
        wanted = {(int(p), int(o)) for p, o in zip(part[mask], off[mask], strict=True)}
        expected, lost = len(wanted), len(wanted - seen)
        kinds = {int(k) for k in kinds_found}
    # tasks per micro-batch (a batch is a stage), over the batches that carried window rows
    tasks: dict[int, int] = {}
    for stage, _ in sink["tasks"]:
        tasks[int(stage)] = tasks.get(int(stage), 0) + 1
    window_stages = {int(s) for s in sink["stage"][in_window]}

    def pct(q: float) -> float | None:
        return round(float(np.percentile(latency, q)), 1) if latency.size else None

    return {
        "impl": impl, "sink": sink_name, "coalesce": spec.get("coalesce"),
        "partitions": partitions, "options": spec.get("options", {}),
        "drained": drained, "batches": len(window),
        "batch_ms": _median([p["durationMs"]["triggerExecution"] for p in window]),
        "batch_parts_ms": {k: _median([p["durationMs"].get(k, 0) for p in window])
                           for k in PARTS},
        "rows_per_batch": _median([p["numInputRows"] for p in window]),
        "tasks_per_batch": _median([n for s, n in tasks.items() if s in window_stages]),
        "p50_ms": pct(50), "p95_ms": pct(95), "p99_ms": pct(99),
        "input_rows": sum(p["numInputRows"] for p in progress),
        "rows_seen": int(in_window.sum()), "distinct_seen": len(seen), "expected": expected,
        "lost": lost, "timestamp_types": sorted(kinds), "generated": generated,
        "load": [round(x, 2) for x in load], "seconds": spec["seconds"],
        "wall_s": round(time.time() - started, 1),
    }


# ---------------------------------------------------------------- the table

def _peer_ms(rows: list[tuple[str, dict]], sink: str, coalesced: bool) -> float | None:
    """The median batch duration of the rate row with this sink (coalesced or not)."""
    for _, r in rows:
        if "error" not in r and r["impl"] == "rate" and r["sink"] == sink \
                and bool(r["coalesce"]) == coalesced:
            return r["batch_ms"]
    return None


def print_table(rows: list[tuple[str, dict]], rate: int) -> None:
    """One line per run, with its median batch duration over the rate rows' of the same sink:
    ``x rate`` the 64-task rate row, ``x rate/c`` the coalesced one (as many tasks as
    kafkawire's packed read)."""
    first = next((r for _, r in rows if "error" not in r), None)
    print()
    print(f"streaming: {rate:,} records/s over all partitions, default trigger, local[2]; "
          f"{first['seconds'] if first else '?'} s measured after the warm-up")
    header = (f"{'source -> sink':<42} {'parts':>5} {'tasks':>5} {'batches':>7} {'rows/b':>6} "
              f"{'batch ms':>8} {'x rate':>6} {'x rate/c':>8} {'p50 ms':>7} {'p95 ms':>7} "
              f"{'p99 ms':>7} {'seen':>7} {'expected':>8} {'lost':>4}  {'load':<7}  "
              f"latestOffset/planning/addBatch/walCommit/commit ms")
    print(header)
    print("-" * len(header))
    for name, r in rows:
        if "error" in r:
            print(f"{name:<42} failed: {r['error']}")
            continue
        ratios = []
        for coalesced in (False, True):
            peer = _peer_ms(rows, r["sink"], coalesced)
            ratios.append(r["batch_ms"] / peer if r["batch_ms"] and peer else None)
        parts = "/".join(_num(r["batch_parts_ms"][k]) for k in PARTS)
        load = f"{r['load'][0]:.1f}-{r['load'][-1]:.1f}"
        print(f"{name:<42} {r['partitions']:>5} {_num(r['tasks_per_batch']):>5} "
              f"{r['batches']:>7} {_num(r['rows_per_batch']):>6} {_num(r['batch_ms']):>8} "
              f"{_num(ratios[0], '.2f'):>6} {_num(ratios[1], '.2f'):>8} "
              f"{_num(r['p50_ms']):>7} {_num(r['p95_ms']):>7} {_num(r['p99_ms']):>7} "
              f"{_num(r['distinct_seen'] if r['expected'] is not None else None):>7} "
              f"{_num(r['expected']):>8} {_num(r['lost']):>4}  {load:<7}  {parts}")
    print("batch ms: median durationMs.triggerExecution of the micro-batches that started in "
          "the window and read rows (its parts' medians at the end); x rate, x rate/c: over "
          "the median of the rate row with the same sink, 64 tasks / coalesced. tasks: median "
          "tasks per micro-batch (latency sink only). p50/p95/p99: arrival at the sink minus "
          "the record's timestamp (Kafka CreateTime; rate: when the row was due). seen: "
          "distinct rows with a timestamp in the window; expected: records in the topic with "
          "one (read back by librdkafka), for rate the span of row values seen; lost: "
          "expected rows never seen. load: 1-minute load average at the start of the run and "
          "at the end of the window.")
    acks = [f"{g['ack_p50_ms']:.0f}/{g['ack_p99_ms']:.0f}" for _, r in rows if "error" not in r
            and (g := r["generated"])["ack_p50_ms"] is not None]
    if acks:
        print(f"generator, creation to acknowledgement p50/p99 ms, per run: {', '.join(acks)}")
    dup = [f"{name}: {r['rows_seen'] - r['distinct_seen']}" for name, r in rows
           if "error" not in r and r["rows_seen"] != r["distinct_seen"]]
    if dup:
        print(f"duplicates seen: {', '.join(dup)}")
    odd = [name for name, r in rows if "error" not in r and not r["drained"]]
    if odd:
        print(f"not drained within {DRAIN_TIMEOUT_S:.0f} s: {', '.join(odd)}")
    types = {t for _, r in rows if "error" not in r for t in r["timestamp_types"]}
    if types - {"rate", 1}:
        print(f"timestamp types met (1 = CreateTime): {sorted(types, key=str)}")
    print()


def print_jvm_ratios(rows: list[tuple[str, dict]]) -> None:
    """kafkawire against Spark's JVM ``kafka`` format on the same load into the same latency
    sink, per partition count: the ratio of their p50s (and of their p95s and median batch
    durations); above 1, kafkawire is slower."""
    def find(impl: str, partitions: int) -> dict | None:
        return next((r for _, r in rows if "error" not in r and r["impl"] == impl
                     and r["partitions"] == partitions and r["sink"] == "benchlatency"
                     and not r["options"] and not r["coalesce"]), None)

    lines = []
    for partitions in sorted({r["partitions"] for _, r in rows if "error" not in r}):
        kw, jvm = find("kafkawire", partitions), find("jvm", partitions)
        if kw is None or jvm is None:
            continue
        cells = []
        for key in ("p50_ms", "p95_ms", "batch_ms"):
            a, b = kw[key], jvm[key]
            cells.append(f"{_num(a)} / {_num(b)} = {_num(a / b if a and b else None, '.2f')}")
        lines.append(f"{partitions:>10} {cells[0]:>22} {cells[1]:>22} {cells[2]:>22}")
    if not lines:
        return
    header = (f"{'partitions':>10} {'p50 ms kw / JVM':>22} {'p95 ms kw / JVM':>22} "
              f"{'batch ms kw / JVM':>22}")
    print("kafkawire against Spark's kafka format (JVM), same load, same latency sink "
          "(a ratio above 1: kafkawire is slower)")
    print(header)
    print("-" * len(header))
    print("\n".join(lines))
    print()


def _num(x: float | None, spec: str = ",.0f") -> str:
    return "-" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    # Run from bench.streaming, not __main__, so that Spark's workers import the sink's
    # classes by name instead of receiving pickled copies of them.
    from bench import streaming

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["generate"]:
        return streaming.generate(json.loads(argv[1]))
    print("BENCH-RESULT " + json.dumps(streaming.stream_run(json.loads(argv[0]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
