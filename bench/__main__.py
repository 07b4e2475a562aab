"""kafkawire benchmark suite (issue 6): ``python -m bench [--rows N] [--spark-rows N]
[--write-rows N] [--value-size 100] [--scenarios client,spark-read,spark-write]
[--codecs none,lz4,zstd]``.

Starts the embedded broker, writes each scenario's data once (our producer, 4 partitions,
JSON-like values of ``--value-size`` bytes) and prints one table: rows/s of kafkawire, of the
peer and of the limit where there is one, their ratios and peak RSS. Every measurement runs
in a fresh process (``bench.suite``) so that its peak RSS is its own.

Scenarios:
  client/<codec>  one process, no Spark: kafkawire's fetch_range + to_record_batches vs a
                  confluent-kafka Consumer building Arrow batches (consume(10000)); the other
                  peer is kafka-python; limit = the same Fetch requests, pipelined the same
                  way, walking only batch headers. Best of 5 passes in one process each.
  spark-read      Spark local[2], read -> noop: kafkawire vs confluent-kafka inside mapInArrow
                  (one task per partition); limit = a Python data source yielding prebuilt
                  Arrow batches of the same schema and size. Best of 2 runs in one session.
  spark-write     Spark local[2], spark.range -> kafkawire sink vs confluent-kafka Producer
                  inside mapInArrow (linger.ms 5, batch.size 512 KiB, no compression, acks
                  all). Best of 2 runs, each into a fresh topic. No limit.
Peak RSS: client rows are the measuring process (ru_maxrss); Spark rows give the largest
Python worker alive at the end (VmHWM), the driver Python (ru_maxrss) and the JVM (VmHWM).
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
from importlib.metadata import version

from .suite import end_offsets, produce


def measure(spec: dict) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.suite", json.dumps(spec)],
                         capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for line in out.stdout.splitlines():
        if line.startswith("BENCH-RESULT "):
            return json.loads(line[len("BENCH-RESULT "):])
    sys.stderr.write(out.stdout[-3000:] + out.stderr[-5000:])
    return {"error": f"{spec['impl']} failed (exit {out.returncode})"}


def rss_text(r: dict) -> str:
    if "error" in r:
        return "-"
    kb = r["rss_kb"]
    if "process" in kb:
        return f"{kb['process'] / 1024:.0f}"
    return f"w {kb['worker'] / 1024:.0f} / d {kb['driver'] / 1024:.0f} / jvm {kb['jvm'] / 1024:.0f}"


def rate(r: dict | None) -> float | None:
    if r is None or "error" in r:
        return None
    return r["rows"] / r["seconds"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="records of the client scenarios")
    ap.add_argument("--spark-rows", type=int, default=2_000_000, help="records read by Spark")
    ap.add_argument("--write-rows", type=int, default=1_000_000, help="records written by Spark")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--scenarios", default="client,spark-read,spark-write")
    ap.add_argument("--codecs", default="none,lz4,zstd", help="codecs of the client scenario")
    ap.add_argument("--no-kafka-python", action="store_true", help="skip the slowest peer")
    args = ap.parse_args(argv)
    scenarios = args.scenarios.split(",")

    from spark_kafka_wire.embedded import EmbeddedBroker

    print(f"machine: {platform.machine()}, nproc {os.cpu_count()}, Python "
          f"{platform.python_version()}, pyspark {version('pyspark')}, pyarrow "
          f"{version('pyarrow')}, confluent-kafka {version('confluent-kafka')} (librdkafka "
          f"{__import__('confluent_kafka').libversion()[0]}), kafka-python "
          f"{version('kafka-python')}, Java: {java_version()}")
    print(f"broker: embedded Tansu (memory storage) on loopback, 4 partitions; values "
          f"{args.value_size} bytes JSON-like, keys 8 bytes", flush=True)
    broker = EmbeddedBroker().start()
    bootstrap = broker.bootstrap_servers
    table: list[tuple[str, int, dict, dict | None, str, dict | None]] = []
    started = time.perf_counter()
    try:
        if "client" in scenarios:
            for codec in args.codecs.split(","):
                topic = f"bench-client-{codec}-{uuid.uuid4().hex[:6]}"
                produce(bootstrap, topic, args.rows, args.value_size, codec)
                base = {"kind": "client", "bootstrap": bootstrap, "topic": topic,
                        "ends": end_offsets(bootstrap, topic)}
                res = {impl: measure({**base, "impl": impl})
                       for impl in ("kafkawire", "confluent", "limit")}
                table.append((f"client {codec}", args.rows, res["kafkawire"], res["confluent"],
                              "confluent-kafka", res["limit"]))
                progress(table[-1], started)
                if not args.no_kafka_python:
                    kp = measure({**base, "impl": "kafka-python"})
                    table.append((f"client {codec}", args.rows, res["kafkawire"], kp,
                                  "kafka-python", res["limit"]))
                    progress(table[-1], started)
                delete(bootstrap, topic)
        if "spark-read" in scenarios:
            topic = f"bench-read-{uuid.uuid4().hex[:6]}"
            produce(bootstrap, topic, args.spark_rows, args.value_size)
            base = {"kind": "read", "bootstrap": bootstrap, "topic": topic,
                    "ends": end_offsets(bootstrap, topic), "value_size": args.value_size}
            res = {impl: measure({**base, "impl": impl})
                   for impl in ("kafkawire", "confluent", "limit")}
            table.append(("spark read->noop", args.spark_rows, res["kafkawire"],
                          res["confluent"], "confluent mapInArrow", res["limit"]))
            progress(table[-1], started)
            delete(bootstrap, topic)
        if "spark-write" in scenarios:
            base = {"kind": "write", "bootstrap": bootstrap, "rows": args.write_rows,
                    "value_size": args.value_size}
            res = {impl: measure({**base, "impl": impl,
                                  "topic": f"bench-write-{impl}-{uuid.uuid4().hex[:6]}"})
                   for impl in ("kafkawire", "confluent")}
            table.append(("spark range->write", args.write_rows, res["kafkawire"],
                          res["confluent"], "confluent mapInArrow", None))
            progress(table[-1], started)
    finally:
        broker.stop()
    print_table(table)


def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
        return out.splitlines()[0].strip()
    except (OSError, IndexError):
        return "?"


def delete(bootstrap: str, topic: str) -> None:
    from .suite import delete_topic

    try:
        delete_topic(bootstrap, topic)
    except Exception as exc:  # noqa: BLE001 - only frees broker memory
        print(f"(could not delete {topic}: {exc})")


def progress(row: tuple, started: float) -> None:
    name, _, kw, peer, peer_name, _ = row
    print(f"  [{time.perf_counter() - started:5.0f} s] {name}: kafkawire "
          f"{fmt(rate(kw))} rows/s, {peer_name} {fmt(rate(peer))} rows/s", flush=True)


def fmt(x: float | None, spec: str = ",.0f") -> str:
    return "-" if x is None else format(x, spec)


def print_table(table: list) -> None:
    header = (f"{'scenario':<19} {'rows':>9} {'kafkawire/s':>12} {'peer':<21} {'peer/s':>11} "
              f"{'limit/s':>11} {'kw/peer':>8} {'kw/limit':>8}  peak RSS MB kafkawire | peer "
              f"| limit")
    print()
    print(header)
    print("-" * len(header))
    for name, rows, kw, peer, peer_name, limit in table:
        k, p, lim = rate(kw), rate(peer), rate(limit)
        print(f"{name:<19} {rows:>9,} {fmt(k):>12} {peer_name:<21} {fmt(p):>11} "
              f"{fmt(lim):>11} {fmt(k / p if k and p else None, '.2f'):>8} "
              f"{fmt(k / lim if k and lim else None, '.2f'):>8}  {rss_text(kw)} | "
              f"{rss_text(peer) if peer else '-'} | {rss_text(limit) if limit else '-'}")
    print()
    print("rows/s: rows delivered / wall seconds of the read or write (Spark: job start "
          "included, best of 2 runs in one session; client: best of 5 passes). Peak RSS MB: client rows = "
          "the measuring process (ru_maxrss); Spark rows = w largest Python worker alive at the "
          "end (VmHWM) / d driver Python (ru_maxrss) / jvm (VmHWM).")


if __name__ == "__main__":
    main(sys.argv[1:])
