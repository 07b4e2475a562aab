"""Streaming soak: ``python -m bench.soak [--batches 10000] [--trigger '10 milliseconds']
[--rate 500] [--sample-every 1000]``.

One kafkawire stream (2 partitions, ``startingOffsets`` earliest, noop sink, checkpointed)
runs ``--batches`` micro-batches against the embedded Tansu broker while librdkafka writes id
records steadily (``--rate`` a second, from a process of its own so that its buffers are not
counted as the driver's). What a leak looks like is growth over thousands of batches, so the
soak samples every ``--sample-every`` batches:

- RSS (VmRSS) of the Python driver, of the JVM, of the Python streaming source runner (the
  long-lived process that holds kafkawire's DataSourceStreamReader and its pooled client:
  latestOffset, partitions and commit run there on every batch), and of the Python workers
  (pyspark.daemon and its forks, which run the tasks' Fetches);
- open file descriptors of the same processes (a connection not closed is one fd per batch);
- per-batch latency (Spark's triggerExecution, and the share of it in latestOffset, the
  source's ListOffsets), first 100 against last 100 batches.

At the end the producer stops, the query drains (``processAllAvailable``) and the rows it read
must be every record written: a long run that loses or repeats data is no soak. The noop sink
keeps the sink's own growth (a file sink's metadata log) out of the figures. The last line is
``SOAK-RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from importlib.metadata import version

from bench.suite import _descendants, _status_kb

PARTITIONS = 2
FIRST_LAST = 100


# ------------------------------------------------------------------------ the producer

def produce_main(bootstrap: str, topic: str, rate: int) -> int:
    """The producer process: ids at ``rate`` a second until stdin closes, then the count."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from tests.support.id_producer import SteadyIdProducer

    producer = SteadyIdProducer(bootstrap, topic, rate).start()
    sys.stdin.read()  # until the soak closes our stdin
    print(f"PRODUCED {producer.stop()}", flush=True)
    return 0


class ProducerProcess:
    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.soak", "produce", bootstrap, topic, str(rate)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def stop(self) -> int:
        out, _ = self.process.communicate("", timeout=180)
        for line in out.splitlines():
            if line.startswith("PRODUCED "):
                return int(line.split()[1])
        raise RuntimeError(f"the producer failed (exit {self.process.returncode}): {out[-2000:]}")


# ------------------------------------------------------------------------ measurements

def _fds(pid: int | str) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def sample(batch: int, began: float) -> dict:
    """RSS (KiB) and open fds of the driver, the JVM, the source runner and the workers."""
    out = {"batch": batch, "s": round(time.monotonic() - began, 1),
           "driver_kb": _status_kb("VmRSS"), "driver_fds": _fds("self"),
           "jvm_kb": 0, "jvm_fds": 0, "runner_kb": 0, "runner_fds": 0,
           "workers": 0, "workers_kb": 0, "worker_max_kb": 0, "worker_max_fds": 0}
    for pid in _descendants(os.getpid()):
        cmd = _cmdline(pid)
        rss = _status_kb("VmRSS", pid)
        if b"java" in cmd.split(b"\0")[0]:
            out["jvm_kb"], out["jvm_fds"] = out["jvm_kb"] + rss, out["jvm_fds"] + _fds(pid)
        elif b"python_streaming_source_runner" in cmd:
            out["runner_kb"], out["runner_fds"] = out["runner_kb"] + rss, out["runner_fds"] + \
                _fds(pid)
        elif b"pyspark.daemon" in cmd:
            out["workers"] += 1
            out["workers_kb"] += rss
            out["worker_max_kb"] = max(out["worker_max_kb"], rss)
            out["worker_max_fds"] = max(out["worker_max_fds"], _fds(pid))
    return out


def latency(rows: list[dict]) -> dict:
    trig = sorted(r["trigger_ms"] for r in rows)
    lat = sorted(r["latest_ms"] for r in rows)

    def pct(xs: list[int], q: float) -> int:
        return xs[min(len(xs) - 1, int(q * len(xs)))]

    return {"batches": len(rows), "mean_ms": round(statistics.fmean(trig), 1),
            "p50_ms": pct(trig, 0.5), "p95_ms": pct(trig, 0.95), "max_ms": trig[-1],
            "latestOffset_p50_ms": pct(lat, 0.5)}


class Progress:
    """Every micro-batch's progress, from a StreamingQueryListener (Spark keeps only the last
    100 in recentProgress)."""

    def __init__(self) -> None:
        self.rows: dict[int, dict] = {}
        self.changed = threading.Condition()

    def listener(self):
        from pyspark.sql.streaming import StreamingQueryListener

        progress = self

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event) -> None:
                pass

            def onQueryProgress(self, event) -> None:
                p = event.progress
                d = p.durationMs or {}
                with progress.changed:
                    if p.batchId in progress.rows and not p.numInputRows:
                        return  # a progress event of a trigger without data
                    progress.rows[p.batchId] = {
                        "batch": p.batchId, "rows": p.numInputRows,
                        "trigger_ms": d.get("triggerExecution", 0),
                        "latest_ms": d.get("latestOffset", 0)}
                    progress.changed.notify_all()

            def onQueryIdle(self, event) -> None:
                pass

            def onQueryTerminated(self, event) -> None:
                pass

        return Listener()

    def batches(self) -> int:
        with self.changed:
            return max(self.rows, default=-1) + 1

    def data_rows(self) -> list[dict]:
        with self.changed:
            return [self.rows[b] for b in sorted(self.rows)]


# ------------------------------------------------------------------------ the soak

def _session():
    from spark_kafka_wire.testing.session import local_session

    return local_session("kafkawire-soak", quiet=True)


def _print_samples(samples: list[dict]) -> None:
    print(f"{'batch':>7} {'s':>7} | RSS MiB: {'driver':>6} {'jvm':>6} {'runner':>6} "
          f"{'workers':>9} | fds: {'driver':>6} {'jvm':>5} {'runner':>6} {'worker':>6}")
    for s in samples:
        print(f"{s['batch']:>7} {s['s']:>7} |          {s['driver_kb'] / 1024:>6.0f} "
              f"{s['jvm_kb'] / 1024:>6.0f} {s['runner_kb'] / 1024:>6.0f} "
              f"{s['workers_kb'] / 1024:>5.0f} ({s['workers']}) |      {s['driver_fds']:>6} "
              f"{s['jvm_fds']:>5} {s['runner_fds']:>6} {s['worker_max_fds']:>6}")


def soak(batches: int, trigger: str, rate: int, sample_every: int) -> dict:
    from spark_kafka_wire.client.config import ClientConfig
    from spark_kafka_wire.client.metadata.admin import create_topics
    from spark_kafka_wire.client.metadata.cluster import KafkaClient
    from spark_kafka_wire.testing.embedded import EmbeddedBroker

    broker = EmbeddedBroker().start()
    checkpoint = tempfile.mkdtemp(prefix="kafkawire-soak-")
    try:
        bootstrap = broker.bootstrap_servers
        topic = f"soak-{uuid.uuid4().hex[:8]}"
        with KafkaClient(ClientConfig.from_servers(bootstrap)) as client:
            create_topics(client, [(topic, PARTITIONS)])
        producer = ProducerProcess(bootstrap, topic, rate)
        spark = _session()
        progress = Progress()
        spark.streams.addListener(progress.listener())
        began = time.monotonic()
        q = (spark.readStream.format("kafkawire").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest").load()
             .writeStream.format("noop").option("checkpointLocation", checkpoint)
             .trigger(processingTime=trigger).start())
        samples: list[dict] = []
        # the first sample once the workers exist (a few batches in), then every sample_every
        marks = [10] + list(range(sample_every, batches + 1, sample_every))
        if marks[-1] != batches:
            marks.append(batches)
        for mark in marks:
            while progress.batches() < mark:
                if q.exception() is not None:
                    raise RuntimeError(f"the query failed: {q.exception()}")
                time.sleep(0.2)
            samples.append(sample(progress.batches(), began))
            print(f"batch {samples[-1]['batch']} at {samples[-1]['s']} s", flush=True)
        produced = producer.stop()
        q.processAllAvailable()
        last = q.lastProgress.batchId
        deadline = time.monotonic() + 60  # the listener hears of the last batches later
        while progress.batches() <= last and time.monotonic() < deadline:
            time.sleep(0.1)
        q.stop()
        rows = progress.data_rows()
        read = sum(r["rows"] for r in rows)
        spark.stop()
    finally:
        broker.stop()
    measured = [r for r in rows if r["batch"] < batches]
    return {"batches": batches, "trigger": trigger, "rate": rate, "produced": produced,
            "read": read, "seconds": round(samples[-1]["s"], 1), "samples": samples,
            "first": latency(measured[:FIRST_LAST]), "last": latency(measured[-FIRST_LAST:]),
            "per_1000": [latency(measured[i:i + 1000])["p50_ms"]
                         for i in range(0, len(measured), 1000)]}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["produce"]:
        return produce_main(argv[1], argv[2], int(argv[3]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=10_000)
    ap.add_argument("--trigger", default="10 milliseconds")
    ap.add_argument("--rate", type=int, default=500, help="records a second")
    ap.add_argument("--sample-every", type=int, default=1000)
    args = ap.parse_args(argv)
    print(f"soak: {args.batches} micro-batches, trigger {args.trigger!r}, {args.rate} "
          f"records/s; Python {platform.python_version()}, pyspark {version('pyspark')}, "
          f"nproc {os.cpu_count()}", flush=True)
    result = soak(args.batches, args.trigger, args.rate, args.sample_every)
    print()
    _print_samples(result["samples"])
    for name in ("first", "last"):
        lat = result[name]
        print(f"{name} {lat['batches']} batches: triggerExecution mean {lat['mean_ms']} ms, "
              f"p50 {lat['p50_ms']}, p95 {lat['p95_ms']}, max {lat['max_ms']}; latestOffset "
              f"p50 {lat['latestOffset_p50_ms']} ms")
    print(f"p50 per 1000 batches (ms): {result['per_1000']}")
    print(f"{result['produced']} records written, {result['read']} read by the query in "
          f"{result['seconds']} s")
    print("SOAK-RESULT " + json.dumps(result))
    return 0 if result["read"] == result["produced"] else 1


if __name__ == "__main__":
    sys.exit(main())
