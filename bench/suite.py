"""One measurement of the benchmark suite, run in a process of its own so that its peak RSS
is its own: ``python -m bench.suite '<json spec>'`` prints one JSON line
``{"rows": n, "seconds": s, "rss_kb": {...}}``. ``bench/__main__.py`` drives it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from spark_kafka_wire.source.schema import ARROW_SCHEMA

PARTITIONS = 4
TIMESTAMP_MS = 1_700_000_000_000
ARROW_BATCH_ROWS = 10_000


# ---------------------------------------------------------------- connections

def connection(kafka: dict[str, str]):
    """kafkawire's connection settings from the ``kafka.*`` options a query would give (the
    bootstrap servers and, for the security rows, TLS and SASL), through the option parser."""
    from spark_kafka_wire.options import SINK, SOURCE, client_config

    return client_config(kafka, SOURCE | SINK)


def librdkafka(kafka: dict[str, str]) -> dict[str, str]:
    """The same settings for confluent-kafka: the bench uses only ``kafka.*`` names that
    librdkafka shares (bootstrap.servers, security.protocol, ssl.ca.location, sasl.*)."""
    return {k[len("kafka."):]: v for k, v in kafka.items()}


# ---------------------------------------------------------------- data

def make_columns(n: int, value_size: int, seed: int = 0) -> tuple[pa.Array, pa.Array]:
    """``n`` rows of 8-byte keys and JSON-like values padded to ``value_size`` bytes (as
    compressible as typical topics): 10,000 distinct rows, repeated."""
    rng = np.random.default_rng(seed)
    distinct = min(n, 10_000)
    values, keys = [], []
    for i in range(distinct):
        v = (b'{"id":%d,"user":"u%05d","amount":%d.%02d,"country":"%s","ok":%s,"note":"'
             % (i, rng.integers(100_000), rng.integers(10_000), rng.integers(100),
                [b"DE", b"FR", b"US", b"JP"][int(rng.integers(4))],
                b"true" if rng.integers(2) else b"false"))
        v = v + b"x" * max(0, value_size - len(v) - 2) + b'"}'
        values.append(v[:value_size])
        keys.append(b"k%07d" % int(rng.integers(10_000_000)))
    reps = -(-n // distinct)
    vdata = np.frombuffer(b"".join(values) * reps, np.uint8)[: n * value_size]
    voff = np.arange(n + 1, dtype=np.int32) * value_size
    kdata = np.frombuffer(b"".join(keys) * reps, np.uint8)[: n * 8]
    koff = np.arange(n + 1, dtype=np.int32) * 8
    return (pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(koff), pa.py_buffer(kdata)]),
            pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(voff), pa.py_buffer(vdata)]))


def produce(kafka: dict[str, str], topic: str, n: int, value_size: int, codec: str = "none",
            partitions: int = PARTITIONS) -> None:
    """Create ``topic`` and write ``n`` rows round-robin over its partitions (our producer)."""
    from spark_kafka_wire.client.metadata.admin import create_topics
    from spark_kafka_wire.client.metadata.cluster import KafkaClient
    from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
    from spark_kafka_wire.protocol.compression import codec_id

    settings = ProduceSettings(compression=codec_id(codec))
    step = 200_000
    keys, values = make_columns(min(n, step), value_size)
    with KafkaClient(connection(kafka)) as client:
        create_topics(client, [(topic, partitions)])
        producer = Producer(client, settings)
        for lo in range(0, n, step):
            m = min(step, n - lo)
            parts = (np.arange(lo, lo + m) % partitions).astype(np.int32)
            producer.send(encode_partitioned(topic, keys.slice(0, m), values.slice(0, m), parts,
                                             settings, TIMESTAMP_MS))


def end_offsets(kafka: dict[str, str], topic: str, partitions: int = PARTITIONS) -> dict[int, int]:
    from spark_kafka_wire.client.fetching.offsets import LATEST, resolve_offsets
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    with KafkaClient(connection(kafka)) as client:
        got = resolve_offsets(client, {(topic, p): LATEST for p in range(partitions)})
    return {p: got[(topic, p)] for p in range(partitions)}


def create_topic(kafka: dict[str, str], topic: str, partitions: int = PARTITIONS) -> None:
    from spark_kafka_wire.client.metadata.admin import create_topics
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    with KafkaClient(connection(kafka)) as client:
        create_topics(client, [(topic, partitions)])


def delete_topic(kafka: dict[str, str], topic: str) -> None:
    from spark_kafka_wire.client.metadata.admin import delete_topics
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    with KafkaClient(connection(kafka)) as client:
        delete_topics(client, [topic])


# ---------------------------------------------------------------- scenario 1: client only

def client_kafkawire(kafka: dict[str, str], topic: str, ends: dict[int, int]) -> int:
    from spark_kafka_wire.client.fetching.fetcher import fetch_range
    from spark_kafka_wire.client.metadata.cluster import KafkaClient
    from spark_kafka_wire.source.schema import to_record_batches

    rows = 0
    with KafkaClient(connection(kafka)) as client:
        for p, end in ends.items():
            for chunk in fetch_range(client, topic, p, 0, end):
                for batch in to_record_batches(chunk, topic, p, ARROW_BATCH_ROWS):
                    rows += batch.num_rows
    return rows


def _confluent_consumer(kafka: dict[str, str]):
    import confluent_kafka

    # A normal fast consumer: big local queue, 1 MiB per partition per fetch, no commits.
    return confluent_kafka.Consumer({
        **librdkafka(kafka),
        "group.id": "kafkawire-bench",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.min.bytes": 1,
        "fetch.wait.max.ms": 100,
        "queued.min.messages": 1_000_000,
        "queued.max.messages.kbytes": 1 << 20,
        "max.partition.fetch.bytes": 1 << 20,
        "fetch.max.bytes": 50 << 20,
        "enable.partition.eof": False,
        "check.crcs": False,
    })


def _confluent_batch(msgs: list, topic: str) -> pa.RecordBatch:
    """The Arrow batch a consumer loop would build: key, value, offset, timestamp (and the
    rest of kafkawire's schema, so that both sides deliver the same columns)."""
    n = len(msgs)
    ts = [m.timestamp() for m in msgs]
    return pa.RecordBatch.from_arrays([
        pa.array([m.key() for m in msgs], pa.binary()),
        pa.array([m.value() for m in msgs], pa.binary()),
        pa.array([topic] * n, pa.string()),
        pa.array([m.partition() for m in msgs], pa.int32()),
        pa.array([m.offset() for m in msgs], pa.int64()),
        pa.array([t[1] * 1000 for t in ts], pa.timestamp("us", tz="UTC")),
        pa.array([t[0] - 1 for t in ts], pa.int32()),
    ], schema=ARROW_SCHEMA)


def client_confluent(kafka: dict[str, str], topic: str, ends: dict[int, int]) -> int:
    import confluent_kafka

    consumer = _confluent_consumer(kafka)
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in ends])
    total, rows = sum(ends.values()), 0
    try:
        while rows < total:
            msgs = consumer.consume(num_messages=ARROW_BATCH_ROWS, timeout=1.0)
            for m in msgs:
                if m.error():
                    raise RuntimeError(m.error())
            if msgs:
                rows += _confluent_batch(msgs, topic).num_rows
    finally:
        consumer.close()
    return rows


def client_kafka_python(kafka: dict[str, str], topic: str, ends: dict[int, int]) -> int:
    import kafka as kafka_python

    consumer = kafka_python.KafkaConsumer(
        bootstrap_servers=kafka["kafka.bootstrap.servers"], enable_auto_commit=False, auto_offset_reset="earliest",
        max_partition_fetch_bytes=1 << 20, fetch_max_bytes=50 << 20, fetch_max_wait_ms=100,
        check_crcs=False, max_poll_records=ARROW_BATCH_ROWS)
    tps = [kafka_python.TopicPartition(topic, p) for p in ends]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    total, rows = sum(ends.values()), 0
    try:
        while rows < total:
            got = consumer.poll(timeout_ms=1000, max_records=ARROW_BATCH_ROWS)
            msgs = [m for recs in got.values() for m in recs]
            if not msgs:
                continue
            n = len(msgs)
            batch = pa.RecordBatch.from_arrays([
                pa.array([m.key for m in msgs], pa.binary()),
                pa.array([m.value for m in msgs], pa.binary()),
                pa.array([topic] * n, pa.string()),
                pa.array([m.partition for m in msgs], pa.int32()),
                pa.array([m.offset for m in msgs], pa.int64()),
                pa.array([m.timestamp * 1000 for m in msgs], pa.timestamp("us", tz="UTC")),
                pa.array([m.timestamp_type for m in msgs], pa.int32()),
            ], schema=ARROW_SCHEMA)
            rows += batch.num_rows
    finally:
        consumer.close()
    return rows


def raw_fetch_counts(client, topic: str, partition: int, end: int) -> Iterator[int]:
    """The rows of each Fetch answer of ``partition`` up to ``end``: kafkawire's Fetch
    requests (same budget, the next one sent as soon as an answer arrives), with only the
    batch headers walked to count the records and find the next offset. No decoding."""
    from spark_kafka_wire.client.fetching.fetch_plan import FetchSettings
    from spark_kafka_wire.client.fetching.fetcher import read_answer, send_fetch
    from spark_kafka_wire.protocol.records import next_batch_offset

    settings = FetchSettings()
    budget = settings.max_partition_fetch_bytes
    offset = 0
    sent = send_fetch(client, topic, partition, 0, budget, settings) if end > 0 else None
    while sent is not None:
        data = read_answer(sent, topic, partition, settings).records
        after = next_batch_offset(data)
        if after is None:
            raise RuntimeError(f"no complete batch at {topic}-{partition} offset {offset}")
        sent = send_fetch(client, topic, partition, after, budget, settings) \
            if after < end else None
        yield min(after, end) - offset
        offset = after


def client_limit(kafka: dict[str, str], topic: str, ends: dict[int, int]) -> int:
    """What the broker can serve one reader (``raw_fetch_counts``), no Arrow."""
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    rows = 0
    with KafkaClient(connection(kafka)) as client:
        for p, end in ends.items():
            rows += sum(raw_fetch_counts(client, topic, p, end))
    return rows


def _status_kb(field: str, pid: int | str = "self") -> int:
    """A /proc status field in KiB (VmRSS, VmHWM); 0 for a process that is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def memory_run(spec: dict) -> dict:
    """One Spark task's read of a whole (large) partition, in this process: the task code
    path (``reader.read_partition``) with the given fetch size. Peak RSS is reported as growth
    over the RSS once everything is imported and the broker connected."""
    from spark_kafka_wire.client.fetching.fetch_plan import FetchSettings
    from spark_kafka_wire.client.pool import shared_client
    from spark_kafka_wire.source.batch_reader import read_partition
    from spark_kafka_wire.source.planning import KafkaInputPartition, OffsetRange

    config = connection(spec["kafka"])
    fetch = FetchSettings(max_partition_fetch_bytes=spec["fetch_bytes"])
    part = KafkaInputPartition(0, [OffsetRange(spec["topic"], 0, 0, spec["end"])], config,
                               fetch, spec["batch_rows"])
    shared_client(config).topic(spec["topic"])  # connected, metadata cached
    base = _status_kb("VmRSS")
    rows = nbytes = biggest = 0
    t0 = time.perf_counter()
    for batch in read_partition(part):
        rows += batch.num_rows
        nbytes += batch.column(1).nbytes
        biggest = max(biggest, batch.nbytes)
    seconds = time.perf_counter() - t0
    assert rows == spec["end"], (rows, spec["end"])
    return {"rows": rows, "seconds": seconds, "value_bytes": nbytes, "base_kb": base,
            "peak_kb": _status_kb("VmHWM"), "largest_batch_bytes": biggest,
            "rss_kb": {"process": _status_kb("VmHWM")}}


CLIENT = {"kafkawire": client_kafkawire, "confluent": client_confluent,
          "kafka-python": client_kafka_python, "limit": client_limit}


# ---------------------------------------------------------------- Spark

def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        for c in children.get(pid, ()):
            out.append(c)
            todo.append(c)
    return out


def spark_rss() -> dict[str, int]:
    """Peak RSS (KiB) of this driver, of the JVM and of the largest Python worker alive."""
    jvm, workers = 0, [0]
    for pid in _descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"java" in cmd.split(b"\0")[0]:
            jvm = max(jvm, _status_kb("VmHWM", pid))
        elif b"pyspark" in cmd or b"python" in cmd:
            workers.append(_status_kb("VmHWM", pid))
    return {"driver": _status_kb("VmHWM"), "jvm": jvm,
            "worker": max(workers)}


def jvm_write_options(codec: str) -> dict[str, str]:
    """The Java producer properties of Spark's ``kafka`` sink in the write rows: what
    kafkawire's write runs with (its defaults, the option table's: linger.ms 5, batch.size
    512 KiB, acks all) and the row's codec."""
    from spark_kafka_wire.options.table import int_default, text_default

    return {"kafka.linger.ms": str(int_default("kafka.linger.ms")),
            "kafka.batch.size": str(int_default("kafka.batch.size")),
            "kafka.acks": text_default("kafka.acks"), "kafka.compression.type": codec}


def bench_session(conf: dict[str, str] | None = None):
    """Spark local[2] with kafkawire and benchlimit registered; ``conf`` adds settings (the
    connector's jars for Spark's ``kafka`` format, a profiler's JVM options)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    from pyspark.sql import SparkSession

    from bench.limit_source import LimitDataSource
    from spark_kafka_wire import KafkaWireDataSource

    builder = (SparkSession.builder.master("local[2]").appName("kafkawire-bench")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "2g")
             .config("spark.python.worker.reuse", "true"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaWireDataSource)
    spark.dataSource.register(LimitDataSource)
    return spark


def _confluent_read_partitions(kafka: dict[str, str], topic: str):
    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import confluent_kafka

        for b in batches:
            for p, start, end in zip(*(b.column(i).to_pylist() for i in range(3)), strict=True):
                consumer = _confluent_consumer(kafka)
                consumer.assign([confluent_kafka.TopicPartition(topic, p, start)])
                offset = start
                try:
                    while offset < end:
                        msgs = consumer.consume(num_messages=ARROW_BATCH_ROWS, timeout=1.0)
                        msgs = [m for m in msgs if m.error() is None and m.offset() < end]
                        if msgs:
                            offset = msgs[-1].offset() + 1
                            yield _confluent_batch(msgs, topic)
                finally:
                    consumer.close()
    return read


def _confluent_write_partitions(kafka: dict[str, str], topic: str, codec: str):
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import confluent_kafka

        producer = confluent_kafka.Producer({
            **librdkafka(kafka), "linger.ms": 5, "batch.size": 512 << 10,
            "compression.type": codec, "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1 << 20, "acks": "all"})
        n = 0
        for b in batches:
            keys = b.column(0).to_pylist()
            values = b.column(1).to_pylist()
            for k, v in zip(keys, values, strict=True):
                while True:
                    try:
                        producer.produce(topic, v, k)
                        break
                    except BufferError:
                        producer.poll(0.01)
            producer.poll(0)
            n += b.num_rows
        if producer.flush(60) != 0:
            raise RuntimeError("confluent producer did not deliver everything")
        yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64())], names=["n"])
    return write


def write_source_df(spark, n: int, value_size: int):
    from pyspark.sql import functions as F

    value = F.concat(F.lit('{"id":'), F.col("id").cast("string"), F.lit(',"note":"'))
    return spark.range(0, n, 1, PARTITIONS).select(
        F.format_string("k%07d", F.col("id") % 10_000_000).cast("binary").alias("key"),
        F.rpad(value, value_size, "x").cast("binary").alias("value"))


def spark_run(spec: dict) -> dict:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from bench.broker import jvm_options

    conf = dict(spec.get("conf", {}))
    if spec["impl"] == "jvm":  # Spark's own kafka format: the connector's jars
        from tests.support.spark_kafka_connector import session_conf

        conf.update(session_conf())
    spark = bench_session(conf)
    kafka, impl, kind = spec["kafka"], spec["impl"], spec["kind"]
    times = []
    try:
        for attempt in range(spec.get("runs", 2)):
            if kind == "read":
                topic, ends = spec["topic"], {int(k): v for k, v in spec["ends"].items()}
                if impl == "jvm":
                    df = (spark.read.format("kafka").options(**jvm_options(kafka))
                          .option("subscribe", topic).load())
                elif impl == "kafkawire":
                    df = (spark.read.format("kafkawire")
                          .options(**kafka)
                          .option("subscribe", topic).load())
                elif impl == "confluent":
                    plan = spark.sparkContext.parallelize(
                        [(p, 0, e) for p, e in ends.items()], len(ends)
                    ).toDF("partition int, start long, end long")
                    from spark_kafka_wire.source.schema import KAFKA_SCHEMA
                    df = plan.mapInArrow(_confluent_read_partitions(kafka, topic),
                                         KAFKA_SCHEMA)
                else:
                    df = (spark.read.format("benchlimit").option("rows", sum(ends.values()))
                          .option("valueSize", spec["value_size"])
                          .option("partitions", len(ends)))
                    if impl == "fetch-limit":  # the same Fetches, prebuilt Arrow rows
                        df = (df.option("kafka", json.dumps(kafka)).option("topic", topic)
                              .option("ends", json.dumps(spec["ends"])))
                    df = df.load()
                # every implementation's rows are counted on their way to the sink
                seen = Observation(f"rows{attempt}")
                t0 = time.perf_counter()
                df.observe(seen, F.count(F.lit(1)).alias("rows")) \
                    .write.format("noop").mode("overwrite").save()
                times.append(time.perf_counter() - t0)
                assert seen.get["rows"] == sum(ends.values()), (impl, seen.get, ends)
                continue
            else:
                topic = f"{spec['topic']}-{attempt}"
                if impl != "limit":
                    create_topic(kafka, topic)
                df = write_source_df(spark, spec["rows"], spec["value_size"])
                t0 = time.perf_counter()
                if impl in ("kafkawire", "kafkawire-txn"):
                    writer = (df.write.format("kafkawire").options(**kafka)
                              .option("kafka.compression.type", spec.get("codec", "none"))
                              .option("topic", topic))
                    if impl == "kafkawire-txn":
                        writer = writer.option("kafka.transactional.id", topic)
                    writer.mode("append").save()
                elif impl == "jvm":
                    (df.write.format("kafka").options(**jvm_options(kafka))
                     .options(**jvm_write_options(spec.get("codec", "none")))
                     .option("topic", topic).mode("append").save())
                elif impl == "limit":
                    df.write.format("benchlimit").mode("append").save()
                elif impl == "produce-limit":
                    (df.write.format("benchlimit").option("kafka", json.dumps(kafka))
                     .option("topic", topic).option("codec", spec.get("codec", "none"))
                     .mode("append").save())
                else:
                    df.mapInArrow(_confluent_write_partitions(kafka, topic,
                                                              spec.get("codec", "none")),
                                  "n long") \
                        .write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - t0)
            if kind == "write" and impl != "limit":
                written = sum(end_offsets(kafka, topic).values())
                # A transactional write adds one commit marker per task and partition written.
                markers = PARTITIONS * PARTITIONS if impl == "kafkawire-txn" else 0
                assert spec["rows"] <= written <= spec["rows"] + markers, (written, spec["rows"])
                delete_topic(kafka, topic)
        rss = spark_rss()
    finally:
        spark.stop()
    rows = spec["rows"] if kind == "write" else sum(spec["ends"].values())
    return {"rows": rows, "seconds": min(times), "all_seconds": times, "rss_kb": rss}


def client_run(spec: dict) -> dict:
    """Best of ``runs`` passes over the topic in one process (each a fresh client, consumer
    or connection); the first pass also pays for warming caches, for every implementation."""
    fn: Callable[[dict[str, str], str, dict[int, int]], int] = CLIENT[spec["impl"]]
    ends = {int(k): v for k, v in spec["ends"].items()}
    times = []
    for _ in range(spec.get("runs", 5)):
        t0 = time.perf_counter()
        rows = fn(spec["kafka"], spec["topic"], ends)
        times.append(time.perf_counter() - t0)
        assert rows == sum(ends.values()), (spec["impl"], rows, sum(ends.values()))
    return {"rows": rows, "seconds": min(times), "all_seconds": times,
            "rss_kb": {"process": _status_kb("VmHWM")}}


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec["kind"] in ("read", "write"):
        result = spark_run(spec)
    elif spec["kind"] == "memory":
        result = memory_run(spec)
    else:
        result = client_run(spec)
    print("BENCH-RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
