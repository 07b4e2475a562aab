"""Profiles of one Spark row of ``python -m bench``: ``python -m bench.profile [--kind read|write]
[--impl kafkawire|jvm|confluent|limit] [--rows N] [--value-size B] [--codec C] [--broker
kafka|tansu] [--out DIR]``.

Starts the run's broker (bench/broker.py), writes the row's topic for a read, and runs the one
measurement (``bench.suite``, one run instead of two) under two profilers at once, writing into
``--out`` (a new temporary directory by default), which it prints:

- ``python.txt``: py-spy (``pip install '.[bench]'``) sampling the measuring process and every
  process it starts, the Spark Python workers included (``record --subprocesses``), as
  collapsed stacks (``--format raw``: one line per stack and its sample count; ``flamegraph.pl``
  or speedscope draw them); the frames with the most samples of their own are printed.
- ``jvm.jfr``: Java Flight Recorder of the session's JVM (driver and executors of local[2]),
  with JFR's ``profile`` settings (``spark.driver.extraJavaOptions=-XX:StartFlightRecording=...``),
  written when the JVM exits; ``jfr print --events jdk.ExecutionSample jvm.jfr`` or JDK Mission
  Control reads it.

The figures of a profiled run are slower than the bench's (sampling costs CPU on the same
cores), and the driver's samples include Spark's start: profiles say where the time goes,
not how much there is.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from bench.broker import BROKERS, bench_broker
from bench.suite import end_offsets, produce

ROOT = Path(__file__).resolve().parents[1]
PY_SPY_RATE = 100  # samples a second


def py_spy() -> str:
    """The py-spy executable: on PATH or beside this Python (the extra [bench])."""
    found = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if not found:
        raise SystemExit("py-spy is not installed: pip install '.[bench]' (or pip install py-spy)")
    return found


def top_frames(raw: Path, workers: bool, n: int = 12) -> list[tuple[str, int, float]]:
    """(frame, samples of its own, share) of the ``n`` leaf frames with the most samples in
    py-spy's collapsed stacks, of the Spark Python workers (``workers``: stacks under a
    ``pyspark.daemon`` process) or of the other processes (the measuring driver)."""
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        in_worker = any(f.startswith("process ") and "pyspark" in f for f in frames)
        if in_worker != workers:
            continue
        own[frames[-1]] += int(count)
        total += int(count)
    return [(frame, c, c / total) for frame, c in own.most_common(n)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=("read", "write"), default="read")
    ap.add_argument("--impl", choices=("kafkawire", "jvm", "confluent", "limit"),
                    default="kafkawire")
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--codec", default="none")
    ap.add_argument("--broker", choices=BROKERS, default="kafka")
    ap.add_argument("--out", help="directory of the profiles (default: a new temporary one)")
    args = ap.parse_args(argv)
    spy = py_spy()
    out = Path(args.out or tempfile.mkdtemp(prefix="kafkawire-profile-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    jfr = out / "jvm.jfr"
    conf = {"spark.driver.extraJavaOptions":
            f"-XX:StartFlightRecording=filename={jfr},settings=profile,dumponexit=true"}
    with bench_broker(args.broker, ["PLAINTEXT"]) as broker:
        kafka = broker.kafka
        topic = f"bench-profile-{uuid.uuid4().hex[:6]}"
        spec: dict = {"kind": args.kind, "impl": args.impl, "kafka": kafka, "runs": 1,
                      "value_size": args.value_size, "codec": args.codec, "conf": conf}
        if args.kind == "read":
            produce(kafka, topic, args.rows, args.value_size, args.codec)
            spec.update(topic=topic, ends=end_offsets(kafka, topic))
        else:
            spec.update(topic=topic, rows=args.rows)
        print(f"profiling spark {args.kind} {args.impl}, {args.rows:,} rows of "
              f"{args.value_size} B, {args.codec}, on {broker.description}", flush=True)
        raw = out / "python.txt"
        run = subprocess.run(
            [spy, "record", "--subprocesses", "--rate", str(PY_SPY_RATE), "--format", "raw",
             "--output", str(raw), "--", sys.executable, "-m", "bench.suite", json.dumps(spec)],
            capture_output=True, text=True, cwd=ROOT)
    result = next((json.loads(line.split(" ", 1)[1]) for line in run.stdout.splitlines()
                   if line.startswith("BENCH-RESULT ")), None)
    if result is None:
        sys.stderr.write(run.stdout[-3000:] + run.stderr[-5000:])
        print(f"the profiled run failed (exit {run.returncode}); profiles so far in {out}")
        return 1
    print(f"{result['rows']:,} rows in {result['seconds']:.2f} s "
          f"({result['rows'] / result['seconds']:,.0f} rows/s, profiled)")
    if raw.exists():
        for workers, what in ((True, "the Spark Python workers"),
                              (False, "the driver Python (Spark's start included)")):
            print(f"py-spy ({raw}), {what}: frames with the most samples of their own")
            for frame, count, share in top_frames(raw, workers):
                print(f"  {share:6.1%} {count:>7}  {frame}")
    print(f"JFR, the JVM: {jfr} ({'present' if jfr.exists() else 'MISSING'}): "
          f"jfr print --events jdk.ExecutionSample {jfr}")
    print(f"profiles in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
