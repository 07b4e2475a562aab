"""Planning at scale on the test cluster (issue 31 item 5): ``python -m bench.cluster_planning
[--partitions 1000,10000] [--per-topic 10] [--records 3] [--runs 5] [--trigger-s 5]
[--warmup 2] [--triggers 5] [--rate 10] [--kafka-heap-mb 2048] [--keep]`` (``make
bench-cluster``; needs root and iproute2, like ``make test-cluster``).

Starts the cluster tier's hosts (tests/support/netns.py): Apache Kafka on ``kafka`` with its
request log on (``ApacheKafka(request_log=True)``), Spark's standalone master and two workers,
and the driver's host, where each N runs one ``spark-submit`` of
bench/cluster_jobs/planning_job.py in client mode with the executors' Python shipped as a
venv-pack archive, as the cluster tests do. For each N: N/per-topic topics of per-topic
partitions, ``records`` records per partition, all matched by one ``subscribePattern``;
while the job runs, a producer on the root namespace (not the driver's host, so its requests
are not counted) writes ``rate`` records a second to random partitions, the new records of
each micro-batch.

Measured, per N (the job's docstring says how):
1. batch planning time: ``load().rdd.getNumPartitions()``, first run apart, best and median
   of the others;
2. the driver's peak RSS (JVM + the job's Python + the Python planner workers) during the
   batch plannings and during the stream, and the JVM's heap in use after each;
3. a micro-batch's driver overhead per partition: the medians of StreamingQueryProgress
   ``durationMs`` parts (latestOffset, queryPlanning, addBatch, triggerExecution) over the
   measured triggers, divided by N. addBatch includes the executors' read of the new records
   (a few per trigger, so mostly the tasks' launch);
4. requests the broker logged from the driver's address, by API, per batch planning and per
   micro-batch (within each trigger's window, and all of the measured span divided by the
   triggers, which also catches requests between triggers).
Also how long creating the N partitions took and the broker's RSS after.

Figures depend on the machine's load: the table prints the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The job lives in a directory of its own: a script's directory comes first on sys.path, and
#: bench/ holds a ``profile`` module that would shadow the standard library's (pyspark imports
#: cProfile, which imports profile)
JOB = Path(__file__).resolve().parent / "cluster_jobs" / "planning_job.py"
HOSTS = ("kafka", "master", "worker1", "worker2", "driver")
DURATIONS = ("latestOffset", "queryPlanning", "addBatch", "triggerExecution")
#: requests a batch plan or a micro-batch sends from the driver (the table's columns)
COUNTED_APIS = ("Metadata", "ListOffsets")
#: topics created per CreateTopics request
CREATE_BATCH = 100
#: Kafka preallocates each partition's offset and time indexes at log.index.size.max.bytes
#: (10 MiB by default, sparse files, memory-mapped): 1 MiB keeps 10,000 partitions' maps
#: small; the records here fill a few bytes of them
BROKER_EXTRA = {"log.index.size.max.bytes": str(2**20)}


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.cluster_planning",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--partitions", default="1000,10000",
                   help="comma-separated totals N of partitions")
    p.add_argument("--per-topic", type=int, default=10, help="partitions per topic")
    p.add_argument("--records", type=int, default=3, help="records per partition at start")
    p.add_argument("--runs", type=int, default=5, help="batch plannings per N")
    p.add_argument("--trigger-s", type=float, default=5.0, help="processing-time trigger")
    p.add_argument("--warmup", type=int, default=2, help="micro-batches left out")
    p.add_argument("--triggers", type=int, default=5, help="micro-batches measured")
    p.add_argument("--rate", type=float, default=10.0,
                   help="new records per second while the stream runs")
    p.add_argument("--kafka-heap-mb", type=int, default=2048)
    p.add_argument("--keep", action="store_true", help="keep the run's directory (logs)")
    return p.parse_args(argv)


def _raise_open_files() -> None:
    """The broker holds a file per partition's segment: 10,000 partitions need more than a
    common soft limit of descriptors (children inherit this one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 200_000
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _heap_info(pid: int) -> str:
    """The broker JVM's own heap figure (``jcmd GC.heap_info``: its generations' used and
    committed sizes summed), or why not."""
    import re

    jcmd = shutil.which("jcmd")
    if jcmd is None:
        return "no jcmd"
    done = subprocess.run([jcmd, str(pid), "GC.heap_info"], capture_output=True, text=True,
                          timeout=60)
    sizes = re.findall(r"total (\d+)K, used (\d+)K", done.stdout)
    if not sizes:
        return (done.stdout + done.stderr).strip()[-200:]
    total, used = (sum(int(s[i]) for s in sizes) // 1024 for i in (0, 1))
    return f"heap used {used} MiB of {total} MiB committed"


def make_topics(bootstrap: str, prefix: str, partitions: int, per_topic: int,
                records: int) -> tuple[list[str], float, float]:
    """N/per_topic topics of per_topic partitions, ``records`` records in each partition;
    the topics, the seconds creating them took, and the seconds writing the records took."""
    import confluent_kafka

    from spark_kafka_wire.client.config import ClientConfig
    from spark_kafka_wire.client.metadata.admin import create_topics
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    topics = [f"{prefix}{i:05d}" for i in range(max(1, partitions // per_topic))]
    client = KafkaClient(ClientConfig.from_servers(bootstrap))
    began = time.monotonic()
    try:
        for i in range(0, len(topics), CREATE_BATCH):
            create_topics(client, [(t, per_topic) for t in topics[i:i + CREATE_BATCH]],
                          timeout_ms=120_000)
    finally:
        client.close()
    created = time.monotonic() - began
    began = time.monotonic()
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for topic in topics:
        for p in range(per_topic):
            for r in range(records):
                while True:
                    try:
                        producer.produce(topic, value=b"r%d" % r, partition=p)
                        break
                    except BufferError:
                        producer.poll(0.1)
        producer.poll(0)
    if producer.flush(300) != 0:
        raise RuntimeError("records left unwritten after 300 s")
    return topics, created, time.monotonic() - began


class Trickle(threading.Thread):
    """``rate`` records a second to random partitions of ``topics``, from this (root)
    namespace: the new data of each micro-batch, never counted as the driver's requests."""

    def __init__(self, bootstrap: str, topics: list[str], per_topic: int, rate: float) -> None:
        super().__init__(daemon=True)
        import confluent_kafka

        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap,
                                                  "linger.ms": 0})
        self.topics, self.per_topic, self.rate = topics, per_topic, rate
        self.sent = 0
        self._halt = threading.Event()

    def run(self) -> None:
        pick = random.Random(31)
        while not self._halt.wait(1.0 / self.rate):
            self.producer.produce(pick.choice(self.topics), value=b"new",
                                  partition=pick.randrange(self.per_topic))
            self.producer.poll(0)
            self.sent += 1

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.producer.flush(30)
        del self.producer  # librdkafka's instance goes now, not after the broker stopped


def _epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def count_requests(requests: list, address: str, windows: list[tuple[int, int]]
                   ) -> list[Counter]:
    """Per window [start, end] (epoch ms, both included): the requests from ``address``, by
    API name."""
    counts = [Counter() for _ in windows]
    for r in requests:
        if r.client_address != address:
            continue
        for i, (start, end) in enumerate(windows):
            if start <= r.completed_ms <= end:
                counts[i][r.api_name] += 1
    return counts


def _per_window(counts: list[Counter]) -> dict[str, float]:
    """API -> the median count over the windows (APIs seen in any of them)."""
    apis = sorted({api for c in counts for api in c})
    return {api: statistics.median([c.get(api, 0) for c in counts]) for api in apis}


def summarise(n: int, job: dict, requests: list, driver_address: str, warmup: int) -> dict:
    """The table's figures of one N from the job's results and the broker's request log."""
    batch = job["batch"]
    batch_windows = [tuple(r["window"]) for r in batch["runs"][1:]] or [
        tuple(batch["runs"][0]["window"])]
    batch_counts = count_requests(requests, driver_address, batch_windows)
    with_rows = [p for p in job["progress"] if p["numInputRows"] > 0]
    measured = with_rows[warmup:]
    windows = [(_epoch_ms(p["timestamp"]),
                _epoch_ms(p["timestamp"]) + p["durationMs"].get("triggerExecution", 0))
               for p in measured]
    in_trigger = count_requests(requests, driver_address, windows)
    span = count_requests(requests, driver_address,
                          [(windows[0][0], windows[-1][1])])[0] if windows else Counter()
    durations = {k: statistics.median([p["durationMs"].get(k, 0) for p in measured])
                 for k in DURATIONS} if measured else {}
    return {
        "partitions": n,
        "tasks": batch["runs"][0]["tasks"],
        "plan_first_s": batch["first_s"], "plan_best_s": batch["best_s"],
        "plan_median_s": batch["median_s"],
        "batch_requests": _per_window(batch_counts),
        "rss_mib": {phase: {k: round(v / 1024) for k, v in parts.items()}
                    for phase, parts in job["rss_kib"].items()},
        "heap_mib": job["heap_mib"],
        "driver_processes": job["processes"],
        "triggers": len(measured),
        "rows_per_trigger": statistics.median([p["numInputRows"] for p in measured])
        if measured else 0,
        "durations_ms": durations,
        "per_partition_us": {k: round(v * 1000 / n, 1) for k, v in durations.items()},
        "trigger_requests": _per_window(in_trigger),
        "span_requests_per_trigger": {api: round(c / len(measured), 2)
                                      for api, c in sorted(span.items())} if measured else {},
    }


def print_table(rows: list[dict], header: dict) -> None:
    print()
    print(f"planning at scale on the test cluster (standalone master + 2 workers x "
          f"{header['cores']} cores, Kafka {header['kafka']}, driver in client mode on its own "
          f"host); load {header['load'][0]:.1f} -> {header['load'][1]:.1f}")
    cols = (f"{'N':>6} {'topics':>6} {'create s':>8} {'kafka RSS':>9} {'tasks':>5} "
            f"{'plan 1st':>8} {'best':>6} {'median':>6} {'drv RSS batch':>13} "
            f"{'drv RSS stream':>14} {'heap':>5}  batch requests")
    print(cols)
    print("-" * len(cols))
    for r in rows:
        rss_b = r["rss_mib"].get("batch", {})
        rss_s = r["rss_mib"].get("stream", {})
        print(f"{r['partitions']:>6} {r['topics']:>6} {r['create_s']:>8.1f} "
              f"{r['kafka_rss_mib']:>8.0f}M {r['tasks']:>5} {r['plan_first_s']:>8.2f} "
              f"{r['plan_best_s']:>6.2f} {r['plan_median_s']:>6.2f} "
              f"{rss_b.get('total', 0):>12}M {rss_s.get('total', 0):>13}M "
              f"{r['heap_mib'].get('stream', 0):>4.0f}M  "
              + " ".join(f"{a}={c:g}" for a, c in r["batch_requests"].items()))
    print()
    cols = (f"{'N':>6} {'trig':>4} {'rows':>5} "
            + " ".join(f"{k + ' ms':>18}" for k in DURATIONS) + "  requests per trigger")
    print("micro-batch driver overhead: median ms (us per partition)")
    print(cols)
    print("-" * len(cols))
    for r in rows:
        parts = " ".join(f"{r['durations_ms'].get(k, 0):>8.0f} ({r['per_partition_us'].get(k, 0):>6.1f})"
                         .rjust(18) for k in DURATIONS)
        counted = " ".join(f"{a}={r['trigger_requests'].get(a, 0):g}/"
                           f"{r['span_requests_per_trigger'].get(a, 0):g}" for a in COUNTED_APIS)
        others = {a: c for a, c in r["span_requests_per_trigger"].items()
                  if a not in COUNTED_APIS}
        print(f"{r['partitions']:>6} {r['triggers']:>4} {r['rows_per_trigger']:>5.0f} {parts}  "
              f"{counted}" + (f" (others {others})" if others else ""))
    print("requests per trigger: median within a trigger / all of the measured span over the "
          "triggers; RSS: peak of JVM + job Python + planner workers "
          "(parts in the JSON line)")
    print()


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    totals = [int(x) for x in args.partitions.split(",")]
    from tests.support.apache_kafka import ApacheKafka, missing_tools
    from tests.support.executor_env import packed_env, unpacked_for_the_driver
    from tests.support.netns import TestNetwork, unavailable
    from tests.support.spark_standalone import StandaloneCluster, clean_env, submit

    why = unavailable() or missing_tools()
    if why:
        print(f"bench.cluster_planning cannot run here: {why}")
        return 1
    _raise_open_files()
    directory = Path(tempfile.mkdtemp(prefix="kafkawire-cluster-planning-"))
    load = [os.getloadavg()[0]]
    network = TestNetwork(HOSTS).start()
    broker = cluster = None
    rows: list[dict] = []
    try:
        host = network["kafka"]
        broker = ApacheKafka(host=host.address, command_prefix=host.command([]),
                             authorizer=False, heap_mb=args.kafka_heap_mb, request_log=True,
                             extra=dict(BROKER_EXTRA))
        broker.start()
        print(f"Kafka started in {broker.started_s:.1f} s on {broker.bootstrap()}", flush=True)
        cluster = StandaloneCluster(network["master"], [network["worker1"], network["worker2"]],
                                    directory / "spark").start()
        print(f"Spark master and 2 workers started in {cluster.started_s:.1f} s", flush=True)
        env_made = packed_env(directory / "build")
        driver = network["driver"]
        for n in totals:
            prefix = f"plan{n}-t"
            topics, created_s, written_s = make_topics(broker.bootstrap(), prefix, n,
                                                       args.per_topic, args.records)
            assert broker.process is not None
            kafka_rss = _rss_mib(broker.process.pid)
            print(f"N={n}: {len(topics)} topics created in {created_s:.1f} s, "
                  f"{n * args.records} records written in {written_s:.1f} s; Kafka RSS "
                  f"{kafka_rss:.0f} MiB, heap: {_heap_info(broker.process.pid)}", flush=True)
            job_dir = directory / "jobs" / str(n)
            job_dir.mkdir(parents=True)
            (job_dir / "environment").symlink_to(
                unpacked_for_the_driver(directory, env_made.archive))
            spec = {"bootstrap": broker.bootstrap(), "pattern": f"^{prefix}",
                    "runs": args.runs, "trigger_s": args.trigger_s, "warmup": args.warmup,
                    "triggers": args.triggers}
            env = clean_env(PYSPARK_PYTHON="./environment/bin/python",
                            PYSPARK_DRIVER_PYTHON=sys.executable, PYTHONPATH=str(ROOT),
                            SPARK_LOCAL_IP=driver.address)
            trickle = Trickle(broker.bootstrap(), topics, args.per_topic, args.rate)
            trickle.start()
            try:
                done = submit(driver, cluster, JOB, [json.dumps(spec)], directory=job_dir,
                              archives=[f"{env_made.archive}#environment"], env=env,
                              conf={"spark.task.maxFailures": "4"},
                              timeout=1800)
            finally:
                trickle.stop()
            print(f"N={n}: spark-submit took {done.seconds:.0f} s (exit {done.returncode})",
                  flush=True)
            if done.returncode != 0:
                print(done.stderr_path.read_text(errors="replace")[-6000:])
                raise RuntimeError(f"the job for N={n} failed; logs in {directory}")
            job = done.result()
            row = summarise(n, job, broker.read_request_log(), driver.address, args.warmup)
            row.update(topics=len(topics), create_s=round(created_s, 1),
                       write_s=round(written_s, 1), kafka_rss_mib=round(kafka_rss),
                       job_s=round(done.seconds, 1), trickle_sent=trickle.sent)
            rows.append(row)
            print("BENCH-RESULT " + json.dumps(row), flush=True)
    finally:
        if cluster is not None:
            cluster.stop()
        if broker is not None:
            broker.stop(keep_logs=args.keep)
        network.stop()
        load.append(os.getloadavg()[0])
        if args.keep:
            print(f"the run's directory is kept: {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)
    print_table(rows, {"cores": 2, "kafka": broker.version if broker else "?", "load": load})
    return 0


if __name__ == "__main__":
    sys.exit(main())
