"""kafkawire benchmark suite: ``python -m bench [--broker kafka|tansu] [--rows N]
[--spark-rows N] [--write-rows N] [--value-sizes 100,1024] [--codecs none,lz4,zstd]
[--scenarios client,spark-read,spark-write,memory] [--memory-gib 2] [--no-jvm]
[--stream-rate 1000] [--stream-seconds 60] [--stream-warmup 15]``.

Starts one broker for the whole run (bench/broker.py): Apache Kafka 4 by default (KRaft, one
node, PLAINTEXT plus its own SSL and SASL_SSL listeners for the secured rows), the embedded
Tansu with ``--broker tansu`` (secured rows through stunnel4 and the SASL test front); the
header says which. For every value size and codec it writes each scenario's data (our
producer, 4 partitions, JSON-like values) and prints one table: rows/s of kafkawire, of
Spark's own JVM ``kafka`` format (spark-sql-kafka-0-10, the first peer of every Spark row), of
the second peer and of the limit where there is one, their ratios and peak RSS; then the
memory tables. Every measurement runs in a fresh process (``bench.suite``) so that its peak RSS
is its own. Spark's JVM format needs its connector at the running pyspark's release: ``make
bench`` runs this in the Python ``python -m tests.support.spark_kafka_connector`` prints;
elsewhere (or with ``--no-jvm``, or on Tansu, see TANSU_JVM) the JVM column and rows are left
out, with the reason printed.

Scenarios:
  client/<codec>  one process, no Spark: kafkawire's fetch_range + to_record_batches vs a
                  confluent-kafka Consumer building Arrow batches (consume(10000)); the other
                  peer is kafka-python; limit = the same Fetch requests, pipelined the same
                  way, walking only batch headers. Best of 5 passes in one process each.
  spark-read      Spark local[2], read -> noop (rows counted by an Observation and checked):
                  kafkawire vs Spark's JVM kafka format (subscribe, earliest..latest, the
                  same topic) vs confluent-kafka inside mapInArrow (one task per
                  partition); limit = a Python data source yielding prebuilt Arrow batches
                  of the same schema and size (the JVM format is set against it too:
                  JVM/limit). Best of 2 runs in one session.
                  A second table sets each read against its fetch limit: the same Python
                  data source sending kafkawire's Fetches to the broker, walking batch
                  headers only and yielding prebuilt rows (the ceiling with the broker
                  serving the bytes on the same cores).
  spark-write     Spark local[2], spark.range -> kafkawire sink vs Spark's JVM kafka sink vs
                  confluent-kafka Producer inside mapInArrow (linger.ms 5, batch.size 512
                  KiB, acks all: kafkawire's defaults, given to the others; the row's codec
                  on every side). Best of 2 runs, each into a fresh topic. Limit = the same DataFrame
                  into a Python data source's Arrow writer that only counts the rows (the
                  ceiling of Spark's Python write path, input generation included).
                  A second table sets each write against its produce limit: a Python writer
                  sending record batches encoded once from the first rows, through
                  kafkawire's Sender (Spark's input, the socket and the broker's ingest on
                  the same cores, no encoding).
  spark-write-txn the spark-write DataFrame into kafkawire with kafka.transactional.id
                  (exactly-once: a transaction per task, committed by the driver) vs the same
                  write without it (idempotent, at-least-once). Best of 2 runs each.
  memory          one partition of --memory-gib GiB (1 KiB values) read through one task's
                  code path (reader.read_partition) with max.partition.fetch.bytes 1 MiB and
                  8 MiB: peak RSS growth against twice the fetch size plus the largest
                  output batch.
Peak RSS: client rows are the measuring process (VmHWM); Spark rows give the largest
Python worker alive at the end (VmHWM), the driver Python (VmHWM) and the JVM (VmHWM); a table
of its own sets them side by side for the Spark read of the biggest row.
Profiles of one Spark row (py-spy for the Python processes, JFR for the JVM): bench/profile.py.

Not in the default list (together about 20 minutes: nine streaming runs of Spark's start,
warm-up, window, drain and stop, then the batch reads), each with a table of its own:
  spark-stream    latency under steady load (bench/streaming.py says how and why): a load
                  generator (kafkawire's Producer, a process of its own, CreateTime = creation
                  time) writes --stream-rate records/s round-robin over 64 partitions; a Spark
                  local[2] query with the default trigger (as fast as it can) and
                  startingOffsets latest writes into a Python Arrow stream writer that times
                  each row at the executor. After --stream-warmup s, --stream-seconds s are
                  measured: the median micro-batch duration (triggerExecution) and its parts,
                  p50/p95/p99 of arrival minus the record's timestamp, and the rows seen against
                  the records librdkafka reads back from the window (no loss). Rows
                  (--stream-runs picks some by number), one fresh process and topic each:
                  1 kafkawire, 64 partitions (small ranges packed into a few tasks: the
                    default);
                  2 the peer: Spark's JVM rate source, numPartitions 64, rowsPerSecond the
                    same, into the same sink: 64 tasks a batch, each a Python writer;
                  3 the same with coalesce(4): as many sink tasks as kafkawire's packed read;
                  4 kafkawire with maxOffsetRangesPerPartition=1: one task per partition, what
                    packing buys;
                  5 kafkawire on a 4-partition topic;
                  6, 7 kafkawire and rate into the noop sink: batch durations without the
                    Python sink;
                  8, 9 Spark's JVM kafka format (startingOffsets latest) reading the same
                    generated load into the same latency sink, on 64 and on 4 partitions:
                    a table of its own gives kafkawire's p50, p95 and batch duration over
                    these (rows 1 and 5 against 8 and 9).
                  Each row's median batch duration is divided by the rate row's with the same
                  sink (x rate; x rate/c: the coalesced one). Goals: kafkawire <= 1.5 x rate,
                  p50 < 1 s.
  spark-first-write
                  a session's first write and the per-job cost of a small write
                  (bench/first_write.py): --first-write-runs fresh processes per
                  implementation (kafkawire, Spark's JVM kafka format, the counting
                  Python writer), each timing its session's start, its first write of
                  --write-rows rows and --first-write-small one-row writes (median); the
                  limit's figures are what Spark imposes on any Python data source, and
                  one Python worker's import of pyspark from pyspark.zip (as Spark starts
                  it) and from the installed bytecode is timed beside them.
  spark-many-partitions
                  batch read -> noop (planning included) of 2,000 rows from 200 partitions x
                  10 rows against 4 partitions x 500 rows, 5 alternating runs after a warm-up
                  of each, in one session: best and median, and their ratio (goal <= 2); and
                  Spark's JVM kafka format reading the 200 x 10 topic in the first 2 runs
                  of the same alternation, with its defaults and with
                  kafka.fetch.max.wait.ms 10 (each of its tasks otherwise waits about the
                  default 500 ms): kafkawire's time over each.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from bench import first_write, many_partitions, streaming
from bench.broker import BROKERS, bench_broker
from bench.security import PROTOCOLS, SASL_MECHANISM, missing_tools
from bench.suite import PARTITIONS, create_topic, end_offsets, produce


def measure(spec: dict, module: str = "bench.suite") -> dict:
    out = subprocess.run([sys.executable, "-m", module, json.dumps(spec)],
                         capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for line in out.stdout.splitlines():
        if line.startswith("BENCH-RESULT "):
            return json.loads(line[len("BENCH-RESULT "):])
    sys.stderr.write(out.stdout[-3000:] + out.stderr[-5000:])
    return {"error": f"{spec.get('impl', module)} failed (exit {out.returncode})"}


def rss_text(r: dict) -> str:
    if "error" in r:
        return "-"
    kb = r["rss_kb"]
    if "process" in kb:
        return f"{kb['process'] / 1024:.0f}"
    return f"w {kb['worker'] / 1024:.0f} / d {kb['driver'] / 1024:.0f} / jvm {kb['jvm'] / 1024:.0f}"


#: The main table of the last run as JSON (not committed: a run's figures belong to its
#: machine), read by ``python -m bench.plots`` to draw the documentation's charts.
RESULTS = Path(__file__).resolve().parent / "results" / "bench.json"


def write_results(path: Path, table: list[Row], broker: str) -> None:
    """The main table's rows/s per implementation (None where not measured or failed), so the
    charts are drawn from what the run measured rather than copied by hand from its output."""
    rows = [{"name": row.name, "rows": row.rows, "kafkawire": rate(row.kafkawire),
             "jvm": rate(row.jvm), "peer": rate(row.peer), "peer_name": row.peer_name,
             "limit": rate(row.limit)} for row in table]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"broker": broker, "jvm": JVM, "machine": platform.machine(),
                                "nproc": os.cpu_count(), "rows": rows}, indent=1) + "\n")
    print(f"rows/s of the main table written to {path}")


def rate(r: dict | None) -> float | None:
    if r is None or "error" in r:
        return None
    return r["rows"] / r["seconds"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--broker", choices=BROKERS, default="kafka",
                    help="Apache Kafka 4 (default) or the embedded Tansu")
    ap.add_argument("--rows", type=int, default=1_000_000, help="records of the client scenarios")
    ap.add_argument("--spark-rows", type=int, default=2_000_000, help="records read by Spark")
    ap.add_argument("--write-rows", type=int, default=1_000_000, help="records written by Spark")
    ap.add_argument("--value-sizes", default="100,1024", help="value sizes in bytes")
    ap.add_argument("--scenarios",
                    default="client,spark-read,spark-write,spark-write-txn,memory")
    ap.add_argument("--codecs", default="none,lz4,zstd")
    ap.add_argument("--memory-gib", type=float, default=2.0,
                    help="size of the one-partition topic of the memory scenario")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS),
                    help="security protocols of the rows (on Tansu, SSL and SASL_SSL need "
                         "stunnel4)")
    ap.add_argument("--no-kafka-python", action="store_true", help="skip the slowest peer")
    ap.add_argument("--no-jvm", action="store_true",
                    help="leave out Spark's JVM kafka format (the Spark JVM column and rows)")
    ap.add_argument("--stream-rate", type=int, default=1000,
                    help="records/s of the spark-stream load generator")
    ap.add_argument("--stream-seconds", type=float, default=60.0,
                    help="measured window of each spark-stream run")
    ap.add_argument("--stream-warmup", type=float, default=15.0,
                    help="seconds of each spark-stream run before the window")
    ap.add_argument("--results", default=str(RESULTS),
                    help="where the main table's rows/s go as JSON, for bench.plots (make bench "
                         "draws docs/img/ from it)")
    ap.add_argument("--first-write-runs", type=int, default=3,
                    help="fresh sessions per implementation of the spark-first-write scenario")
    ap.add_argument("--first-write-small", type=int, default=10,
                    help="one-row writes after each spark-first-write session's first write")
    ap.add_argument("--stream-runs", default=",".join(str(i + 1) for i in range(len(STREAM_RUNS))),
                    help="which spark-stream rows to run, by number (see above)")
    args = ap.parse_args(argv)
    scenarios = args.scenarios.split(",")
    sizes = [int(v) for v in args.value_sizes.split(",")]
    codecs = args.codecs.split(",")
    protocols = [p.strip().upper() for p in args.protocols.split(",") if p.strip()]
    unknown = sorted(set(protocols) - set(PROTOCOLS))
    if unknown:
        ap.error(f"unknown protocol(s) {', '.join(unknown)}; known: {', '.join(PROTOCOLS)}")

    print(f"machine: {platform.machine()}, nproc {os.cpu_count()}, Python "
          f"{platform.python_version()}, pyspark {version('pyspark')}, pyarrow "
          f"{version('pyarrow')}, confluent-kafka {version('confluent-kafka')} (librdkafka "
          f"{__import__('confluent_kafka').libversion()[0]}), kafka-python "
          f"{version('kafka-python')}, Java: {java_version()}")
    global JVM
    if args.broker == "tansu" and not args.no_jvm:
        print(f"no Spark JVM column on Tansu: {TANSU_JVM}")
    JVM = None if args.no_jvm or args.broker == "tansu" else jvm_connector()
    print(f"Spark's kafka format (JVM): {JVM or 'not measured'}")
    why_not = missing_tools(protocols) if args.broker == "tansu" else None
    if why_not:
        print(f"no {', '.join(p for p in protocols if p != 'PLAINTEXT')} rows: {why_not}")
        protocols = [p for p in protocols if p == "PLAINTEXT"]
    table: list[Row] = []
    memory: list[tuple[int, dict]] = []
    stream: list[tuple[str, dict]] = []
    many: dict | None = None
    first: dict | None = None
    took: dict[str, float] = {}
    started = time.perf_counter()
    with bench_broker(args.broker, protocols) as broker:
        print(f"broker: {broker.description}, {PARTITIONS} partitions; JSON-like values of "
              f"{args.value_sizes} bytes, keys 8 bytes", flush=True)
        kafka = broker.kafka
        for size in sizes:
            read_limit = write_limit = None
            for codec in codecs:
                if "client" in scenarios:
                    client_rows(table, kafka, args, size, codec, started)
                if "spark-read" in scenarios:
                    read_limit = spark_read_row(table, kafka, args.spark_rows, size, codec,
                                                read_limit, started)
                if "spark-write" in scenarios:
                    write_limit = spark_write_row(table, kafka, args.write_rows, size,
                                                  codec, write_limit, started)
                if "spark-write-txn" in scenarios:
                    spark_txn_write_row(table, kafka, args.write_rows, size, codec, started)
            # TLS costs per byte on the wire, so the secured rows use the first codec only
            # (the least compressed data when it is 'none', the dearest case for TLS).
            for protocol, endpoint in broker.secured.items():
                if "client" in scenarios:
                    client_rows(table, endpoint, args, size, codecs[0], started, protocol)
                if "spark-read" in scenarios:
                    spark_read_row(table, endpoint, args.spark_rows, size, codecs[0],
                                   read_limit, started, protocol)
                if "spark-write" in scenarios:
                    spark_write_row(table, endpoint, args.write_rows, size, codecs[0],
                                    write_limit, started, protocol)
        if "memory" in scenarios:
            memory = memory_rows(kafka, args.memory_gib, started)
        if "spark-stream" in scenarios:
            t0 = time.perf_counter()
            stream = spark_stream_rows(kafka, args, started)
            took["spark-stream"] = time.perf_counter() - t0
        if "spark-first-write" in scenarios:
            t0 = time.perf_counter()
            impls = first_write.IMPLS if JVM else tuple(i for i in first_write.IMPLS
                                                        if i != "jvm")
            first = first_write.first_write_rows(
                measure, kafka, args.write_rows, sizes[0], args.first_write_runs,
                args.first_write_small, impls, started)
            took["spark-first-write"] = time.perf_counter() - t0
        if "spark-many-partitions" in scenarios:
            t0 = time.perf_counter()
            many = spark_many_partitions(kafka, started)
            took["spark-many-partitions"] = time.perf_counter() - t0
    if table:
        print_table(table)
        write_results(Path(args.results), table, args.broker)
    if memory:
        print_memory(memory)
    if stream:
        streaming.print_table(stream, args.stream_rate)
        streaming.print_jvm_ratios(stream)
    if first:
        first_write.print_table(first)
    if many:
        many_partitions.print_table(many)
    if took:
        print("scenario wall times: " + ", ".join(f"{k} {v:.0f} s" for k, v in took.items()))


#: Why Spark's JVM format is left out on Tansu (seen 2026-11-26, pyspark 4.2.0, Tansu 0.6).
TANSU_JVM = ("Spark's kafka format reads one record per partition of a topic written by "
             "kafkawire's producer there (1 of 2,000; kafkawire reads all), without an error, "
             "so its row counts fail")


#: What runs Spark's JVM ``kafka`` format in this run (the connector's release), or None when
#: it is left out (--no-jvm, or no connector for this pyspark): set by main.
JVM: str | None = None


def jvm_connector() -> str | None:
    """The connector that Spark's ``kafka`` format rows will load, or None (with the reason
    printed) when this pyspark has none: ``make bench`` runs the bench in the Python that
    tests/support/spark_kafka_connector.py picks, whose pyspark has one."""
    from tests.support.spark_kafka_connector import CONNECTOR, installed_spark, session_conf

    try:
        session_conf()
    except Exception as exc:  # noqa: BLE001 - the JVM column is then left out, with why
        print(f"no Spark JVM column: {exc} (run `make bench`, or the bench in the Python "
              "`python -m tests.support.spark_kafka_connector` prints)")
        return None
    return f"{CONNECTOR}:{installed_spark()}"


@dataclass
class Row:
    """One line of the main table: each implementation's measurement (None: not measured)."""

    name: str
    rows: int
    kafkawire: dict
    jvm: dict | None
    peer: dict | None
    peer_name: str
    limit: dict | None


def row_name(kind: str, codec: str, size: int, protocol: str) -> str:
    suffix = "" if protocol == "PLAINTEXT" else f" {protocol}"
    return f"{kind} {codec} {size}B{suffix}"


def client_rows(table: list, kafka: dict[str, str], args: argparse.Namespace, size: int,
                codec: str, started: float, protocol: str = "PLAINTEXT") -> None:
    topic = f"bench-client-{codec}-{uuid.uuid4().hex[:6]}"
    produce(kafka, topic, args.rows, size, codec)
    base = {"kind": "client", "kafka": kafka, "topic": topic,
            "ends": end_offsets(kafka, topic)}
    res = {impl: measure({**base, "impl": impl}) for impl in ("kafkawire", "confluent", "limit")}
    name = row_name("client", codec, size, protocol)
    table.append(Row(name, args.rows, res["kafkawire"], None, res["confluent"],
                     "confluent-kafka", res["limit"]))
    progress(table[-1], started)
    if not args.no_kafka_python and codec == "none" and protocol == "PLAINTEXT":
        kp = measure({**base, "impl": "kafka-python", "runs": 2})
        table.append(Row(name, args.rows, res["kafkawire"], None, kp, "kafka-python", None))
        progress(table[-1], started)
    delete(kafka, topic)


def spark_txn_write_row(table: list, kafka: dict[str, str], rows: int, size: int, codec: str,
                        started: float) -> None:
    """Exactly-once (kafka.transactional.id) against the same write at-least-once (the
    idempotent producer, the default): the price of transactions."""
    base = {"kind": "write", "kafka": kafka, "rows": rows, "value_size": size, "codec": codec}
    res = {impl: measure({**base, "impl": impl,
                          "topic": f"bench-write-{impl}-{uuid.uuid4().hex[:6]}"})
           for impl in ("kafkawire-txn", "kafkawire")}
    table.append(Row(row_name("spark write exactly-once", codec, size, "PLAINTEXT"), rows,
                     res["kafkawire-txn"], None, res["kafkawire"], "kafkawire idempotent",
                     None))
    progress(table[-1], started)


def spark_impls(broker_limit: str) -> tuple[str, ...]:
    """What a Spark read or write row measures, in this order: kafkawire, Spark's JVM
    ``kafka`` format (when the run has it), the confluent-kafka peer, the broker-bound
    limit."""
    return ("kafkawire", *(("jvm",) if JVM else ()), "confluent", broker_limit)


# Spark read and write rows: (kafkawire, the same path's broker-bound limit) by row name: the
# fetch limit and the produce limit of limit_source.py (print_broker_limits).
BROKER_LIMITS: dict[str, tuple[dict, dict]] = {}


def spark_read_row(table: list, kafka: dict[str, str], rows: int, size: int, codec: str,
                   limit: dict | None, started: float, protocol: str = "PLAINTEXT") -> dict:
    """The limit (prebuilt Arrow, no Kafka) does not depend on the codec: measured once."""
    topic = f"bench-read-{uuid.uuid4().hex[:6]}"
    produce(kafka, topic, rows, size, codec)
    base = {"kind": "read", "kafka": kafka, "topic": topic,
            "ends": end_offsets(kafka, topic), "value_size": size}
    res = {impl: measure({**base, "impl": impl}) for impl in spark_impls("fetch-limit")}
    if limit is None:
        limit = measure({**base, "impl": "limit"})
    name = row_name("spark read", codec, size, protocol)
    table.append(Row(name, rows, res["kafkawire"], res.get("jvm"), res["confluent"],
                     "confluent mapInArrow", limit))
    BROKER_LIMITS[name] = (res["kafkawire"], res["fetch-limit"])
    progress(table[-1], started)
    delete(kafka, topic)
    return limit


def spark_write_row(table: list, kafka: dict[str, str], rows: int, size: int, codec: str,
                    limit: dict | None, started: float, protocol: str = "PLAINTEXT") -> dict:
    """The limit (a counting Python writer) does not depend on the codec: measured once."""
    base = {"kind": "write", "kafka": kafka, "rows": rows, "value_size": size,
            "codec": codec}
    res = {impl: measure({**base, "impl": impl,
                          "topic": f"bench-write-{impl}-{uuid.uuid4().hex[:6]}"})
           for impl in spark_impls("produce-limit")}
    if limit is None:
        limit = measure({**base, "impl": "limit", "topic": "unused"})
    name = row_name("spark write", codec, size, protocol)
    table.append(Row(name, rows, res["kafkawire"], res.get("jvm"), res["confluent"],
                     "confluent mapInArrow", limit))
    BROKER_LIMITS[name] = (res["kafkawire"], res["produce-limit"])
    progress(table[-1], started)
    return limit


STREAM_PARTITIONS = 64
STREAM_RUNS: tuple[tuple[str, dict], ...] = (  # label, what differs from kafkawire's run
    ("kafkawire -> latency", {}),
    ("rate (JVM) -> latency", {"impl": "rate"}),
    ("rate (JVM) coalesce(4) -> latency", {"impl": "rate", "coalesce": 4}),
    ("kafkawire maxOffsetRangesPerPart=1 -> lat.", {"options": {"maxOffsetRangesPerPartition": "1"}}),
    ("kafkawire 4 partitions -> latency", {"partitions": 4}),
    ("kafkawire -> noop", {"sink": "noop"}),
    ("rate (JVM) -> noop", {"impl": "rate", "sink": "noop"}),
    ("Spark kafka (JVM) -> latency", {"impl": "jvm"}),
    ("Spark kafka (JVM) 4 partitions -> latency", {"impl": "jvm", "partitions": 4}),
)


def spark_stream_rows(kafka: dict[str, str], args: argparse.Namespace, started: float
                      ) -> list[tuple[str, dict]]:
    """One streaming run per row, each in a fresh process on a fresh topic (the rate row's
    topic only receives the generator's load)."""
    rows = []
    wanted = {int(i) for i in args.stream_runs.split(",")}
    for label, differs in (run for i, run in enumerate(STREAM_RUNS, 1) if i in wanted):
        if differs.get("impl") == "jvm" and not JVM:
            continue
        spec = {"impl": "kafkawire", "kafka": kafka, "partitions": STREAM_PARTITIONS,
                "options": {}, "sink": "benchlatency", "coalesce": None,
                "rate": args.stream_rate, "warmup_s": args.stream_warmup,
                "seconds": args.stream_seconds, **differs}
        topic = spec["topic"] = f"bench-stream-{spec['partitions']}-{uuid.uuid4().hex[:6]}"
        create_topic(kafka, topic, spec["partitions"])
        r = measure(spec, "bench.streaming")
        rows.append((label, r))
        delete(kafka, topic)
        what = r.get("error") or (f"batch {r['batch_ms']} ms, p50 {r['p50_ms']} ms, p95 "
                                  f"{r['p95_ms']} ms, lost {r['lost']}")
        print(f"  [{time.perf_counter() - started:5.0f} s] spark-stream {label}: {what}",
              flush=True)
    return rows


def spark_many_partitions(kafka: dict[str, str], started: float) -> dict:
    """The same rows in many small partitions and in few large ones (bench/many_partitions)."""
    topics = {}
    for partitions, per in many_partitions.SHAPES:
        topic = f"bench-many-{partitions}x{per}-{uuid.uuid4().hex[:6]}"
        produce(kafka, topic, partitions * per, 100, partitions=partitions)
        topics[many_partitions.shape_name(partitions, per)] = topic
    jvm = [many_partitions.shape_name(*many_partitions.SHAPES[0])] if JVM else []
    r = measure({"kafka": kafka, "topics": topics, "runs": 5, "jvm": jvm},
                "bench.many_partitions")
    for topic in topics.values():
        delete(kafka, topic)
    what = r.get("error") or ", ".join(f"{n} median {t:.2f} s" for n, t in r["median"].items())
    print(f"  [{time.perf_counter() - started:5.0f} s] spark-many-partitions: {what}",
          flush=True)
    return r


MEMORY_VALUE_SIZE = 1024
MEMORY_BATCH_ROWS = 10_000


def memory_rows(kafka: dict[str, str], gib: float, started: float) -> list[tuple[int, dict]]:
    """One partition of ``gib`` GiB read by one task's code path, at two fetch sizes."""
    rows = int(gib * (1 << 30) / MEMORY_VALUE_SIZE)
    topic = f"bench-memory-{uuid.uuid4().hex[:6]}"
    produce(kafka, topic, rows, MEMORY_VALUE_SIZE, partitions=1)
    end = end_offsets(kafka, topic, partitions=1)[0]
    out = []
    for fetch_bytes in (1 << 20, 8 << 20):
        r = measure({"kind": "memory", "impl": "kafkawire", "kafka": kafka,
                     "topic": topic, "end": end, "fetch_bytes": fetch_bytes,
                     "batch_rows": MEMORY_BATCH_ROWS})
        out.append((fetch_bytes, r))
        print(f"  [{time.perf_counter() - started:5.0f} s] memory, fetch "
              f"{fetch_bytes >> 20} MiB: {fmt(rate(r))} rows/s", flush=True)
    delete(kafka, topic)
    return out


def print_memory(memory: list[tuple[int, dict]]) -> None:
    print("memory: one task reads a whole partition (values of "
          f"{MEMORY_VALUE_SIZE} bytes, maxRecordsPerBatch {MEMORY_BATCH_ROWS:,})")
    header = (f"{'max.partition.fetch.bytes':>26} {'GiB read':>9} {'rows/s':>10} "
              f"{'RSS growth MB':>14} {'2 x fetch + largest batch MB':>29} {'ratio':>6}")
    print(header)
    print("-" * len(header))
    for fetch_bytes, r in memory:
        if "error" in r:
            print(f"{fetch_bytes:>26,} failed: {r['error']}")
            continue
        growth = (r["peak_kb"] - r["base_kb"]) / 1024
        bound = (2 * fetch_bytes + r["largest_batch_bytes"]) / (1 << 20)
        print(f"{fetch_bytes:>26,} {r['value_bytes'] / (1 << 30):>9.2f} {fmt(rate(r)):>10} "
              f"{growth:>14.1f} {bound:>29.1f} {growth / bound:>6.2f}")
    print("RSS growth: peak RSS (VmHWM) minus RSS after imports and connecting, same process.")
    print()


def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
        return out.splitlines()[0].strip()
    except (OSError, IndexError):
        return "?"


def delete(kafka: dict[str, str], topic: str) -> None:
    from bench.suite import delete_topic

    try:
        delete_topic(kafka, topic)
    except Exception as exc:  # noqa: BLE001 - only frees broker memory
        print(f"(could not delete {topic}: {exc})")


def progress(row: Row, started: float) -> None:
    jvm = f", Spark JVM {fmt(rate(row.jvm))} rows/s" if row.jvm else ""
    print(f"  [{time.perf_counter() - started:5.0f} s] {row.name}: kafkawire "
          f"{fmt(rate(row.kafkawire))} rows/s{jvm}, {row.peer_name} {fmt(rate(row.peer))} "
          "rows/s", flush=True)


def fmt(x: float | None, spec: str = ",.0f") -> str:
    return "-" if x is None else format(x, spec)


def ratio(a: float | None, b: float | None) -> str:
    return fmt(a / b if a and b else None, ".2f")


def print_table(table: list[Row]) -> None:
    header = (f"{'scenario':<34} {'rows':>9} {'kafkawire/s':>12} {'Spark JVM/s':>12} "
              f"{'peer':<21} {'peer/s':>11} {'limit/s':>11} {'kw/JVM':>7} {'kw/peer':>8} "
              f"{'kw/limit':>8} {'JVM/limit':>9}  peak RSS MB kafkawire | Spark JVM | peer "
              f"| limit")
    print()
    print(header)
    print("-" * len(header))
    for row in table:
        k, j, p, lim = (rate(r) for r in (row.kafkawire, row.jvm, row.peer, row.limit))
        print(f"{row.name:<34} {row.rows:>9,} {fmt(k):>12} {fmt(j):>12} {row.peer_name:<21} "
              f"{fmt(p):>11} {fmt(lim):>11} {ratio(k, j):>7} {ratio(k, p):>8} "
              f"{ratio(k, lim):>8} {ratio(j, lim):>9}  {rss_text(row.kafkawire)} | "
              f"{rss_text(row.jvm) if row.jvm else '-'} | "
              f"{rss_text(row.peer) if row.peer else '-'} | "
              f"{rss_text(row.limit) if row.limit else '-'}")
    print()
    print("rows/s: rows delivered / wall seconds of the read or write (Spark: job start "
          "included, best of 2 runs in one session; client: best of 5 passes). Spark JVM: "
          "Spark's own kafka format (spark-sql-kafka-0-10) in the same kind of session; kw/JVM "
          "above 1: kafkawire is faster. limit: the Python data source ceiling (prebuilt Arrow "
          "batches; a counting writer), which the JVM format does not go through (JVM/limit). "
          "Peak RSS MB: client rows = the measuring process (VmHWM); Spark rows = w largest "
          "Python worker alive at the end (VmHWM; 0: none) / d driver Python (VmHWM) / jvm "
          "(VmHWM).")
    print_spark_memory(table)
    print_security(table)
    print_broker_limits()


def print_spark_memory(table: list[Row]) -> None:
    """Each side's peak RSS in the Spark read of the biggest row (the most value bytes, the
    first such row): the JVM, the largest Python worker and the driver Python."""
    reads = [r for r in table if r.name.startswith("spark read ")]
    if not reads:
        return
    size = max(int(r.name.split()[-1].rstrip("B")) if r.name.endswith("B") else 0
               for r in reads)
    row = next(r for r in reads if r.name.endswith(f" {size}B"))
    print()
    print(f"peak RSS of the Spark read of the biggest row ({row.name}, {row.rows:,} rows)")
    header = (f"{'implementation':<22} {'JVM MB':>7} {'Python worker MB':>17} "
              f"{'driver Python MB':>17} {'sum MB':>7}")
    print(header)
    print("-" * len(header))
    for name, r in (("kafkawire", row.kafkawire), ("Spark JVM kafka", row.jvm),
                    (row.peer_name, row.peer), ("limit", row.limit)):
        if r is None or "error" in r:
            continue
        kb = r["rss_kb"]
        print(f"{name:<22} {kb['jvm'] / 1024:>7.0f} "
              f"{(fmt(kb['worker'] / 1024) if kb['worker'] else '-'):>17} "
              f"{kb['driver'] / 1024:>17.0f} "
              f"{(kb['jvm'] + kb['worker'] + kb['driver']) / 1024:>7.0f}")
    print("VmHWM of each process of the measurement's own Spark session (a fresh process per "
          "measurement); Python worker: the largest alive at the end ('-': none). Spark's JVM "
          "format runs no Python worker for the query: its figure is the Python process every "
          "session starts to look up Python data sources.")


def print_broker_limits() -> None:
    """Spark reads and writes against the limits of the same path with the broker on the same
    cores: the fetch limit (a Python data source sending kafkawire's Fetches, walking batch
    headers only, yielding prebuilt rows) and the produce limit (a Python writer sending
    record batches encoded once through kafkawire's Sender)."""
    if not BROKER_LIMITS:
        return
    print()
    header = f"{'spark row':<30} {'kafkawire/s':>12} {'broker limit/s':>15} {'kw/limit':>9}"
    print(header)
    print("-" * len(header))
    for name, (kw, lim) in BROKER_LIMITS.items():
        k, f = rate(kw), rate(lim)
        print(f"{name:<30} {fmt(k):>12} {fmt(f):>15} {fmt(k / f if k and f else None, '.2f'):>9}")
    print("broker limit: reads, benchlimit sending kafkawire's Fetches (batch headers walked, "
          "prebuilt Arrow rows yielded); writes, benchlimit's writer sending record batches "
          "encoded once, through kafkawire's Sender. Same broker, same cores.")


def print_security(table: list[Row]) -> None:
    """What TLS (and SASL) cost: each secured row's rate over its PLAINTEXT row's, for
    kafkawire, Spark's JVM format and the peer on the same path."""
    plain = {r.name: (rate(r.kafkawire), rate(r.jvm), rate(r.peer)) for r in table
             if r.peer_name != "kafka-python"}
    lines = []
    for r in table:
        base, _, protocol = r.name.rpartition(" ")
        if protocol not in PROTOCOLS or base not in plain:
            continue
        (pk, pj, pp), k, j, p = plain[base], rate(r.kafkawire), rate(r.jvm), rate(r.peer)
        lines.append(f"{r.name:<30} {ratio(k, pk):>18} {ratio(j, pj):>13} {ratio(p, pp):>13}")
    if not lines:
        return
    print()
    header = f"{'secured row':<30} {'kafkawire/PLAIN':>18} {'JVM/PLAIN':>13} {'peer/PLAIN':>13}"
    print(header)
    print("-" * len(header))
    print("\n".join(lines))
    print("x/PLAIN: the row's rows/s over the same scenario's PLAINTEXT rows/s (same data, "
          "same client). Apache Kafka: its own SSL and SASL_SSL listeners (SASL_SSL with "
          f"{SASL_MECHANISM}); Tansu: SSL = stunnel4 in front of it, SASL_SSL = stunnel4 + "
          "the SASL test front (a Python relay).")


if __name__ == "__main__":
    main(sys.argv[1:])
