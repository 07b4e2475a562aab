"""Microseconds per request encode and response decode on the hot paths (Fetch, Produce).

Run: ``python -m bench.requests [--rounds 7] [--seconds 2]``. Encoding goes through
``framing.encode_request_parts`` with large byte fields spliced, as ``BrokerConnection.send``
does, so the figure is what each request costs the client in Python before the socket; it
includes the engine's message checks (unknown keys, missing fields), which is why it exists:
a check on every struct of every request must not slow the loops that send them. Each figure is
the best of ``--rounds`` timed rounds taking turns over all cases, so that other load on the
machine disturbs every case alike.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

from spark_kafka_wire.client.fetching.offsets import fetch_body
from spark_kafka_wire.protocol.framing import encode_request_parts
from spark_kafka_wire.protocol.messages import FETCH, PRODUCE

FETCH_VERSION = FETCH.max_version
PRODUCE_VERSION = PRODUCE.max_version


def fetch_request(partitions: int) -> dict[str, Any]:
    """The Fetch the client sends for ``partitions`` partitions of one topic (``fetch_body``)."""
    offsets = {("bench-topic", p): 1_000_000 + p for p in range(partitions)}
    return fetch_body(offsets, 1 << 20, 50 << 20, 500, 1, 1)


def produce_request(partitions: int, blob: int) -> dict[str, Any]:
    """A Produce of one ``blob``-byte record batch per partition (the sender's layout)."""
    records = bytes(blob)
    return {
        "transactional_id": None, "acks": -1, "timeout_ms": 30_000,
        "topic_data": [{"name": "bench-topic", "partition_data": [
            {"index": p, "records": records} for p in range(partitions)]}],
    }


def fetch_response(partitions: int, blob: int) -> bytes:
    """A Fetch response body with ``blob`` bytes of records in each partition."""
    records = bytes(blob)
    return FETCH.encode_response(FETCH_VERSION, {
        "throttle_time_ms": 0, "error_code": 0, "session_id": 0,
        "responses": [{"topic": "bench-topic", "partitions": [
            {"partition_index": p, "error_code": 0, "high_watermark": 2_000_000,
             "last_stable_offset": 2_000_000, "log_start_offset": 0,
             "aborted_transactions": None, "preferred_read_replica": -1, "records": records}
            for p in range(partitions)]}],
    })


def cases() -> list[tuple[str, Callable[[], object]]]:
    out: list[tuple[str, Callable[[], object]]] = []
    for n in (1, 64):
        body = fetch_request(n)
        out.append((f"encode Fetch v{FETCH_VERSION}, {n} partition(s)",
                    lambda b=body: encode_request_parts(FETCH, FETCH_VERSION, 1, "bench", b)))
    for n, blob in ((1, 1 << 20), (16, 64 << 10)):
        body = produce_request(n, blob)
        out.append((f"encode Produce v{PRODUCE_VERSION}, {n} x {blob >> 10} KiB",
                    lambda b=body: encode_request_parts(PRODUCE, PRODUCE_VERSION, 1, "bench", b)))
    for n, blob in ((1, 1 << 20), (64, 16 << 10)):
        data = fetch_response(n, blob)
        out.append((f"decode Fetch v{FETCH_VERSION} response, {n} x {blob >> 10} KiB",
                    lambda d=data: FETCH.decode_response(FETCH_VERSION, d)))
    return out


def per_call_us(fn: Callable[[], object], seconds: float) -> float:
    """Mean microseconds per call of ``fn`` over at least ``seconds``."""
    calls = 0
    start = time.perf_counter()
    while True:
        for _ in range(50):
            fn()
        calls += 50
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / calls * 1e6


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="timing per case, all rounds")
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds; the best counts")
    args = ap.parse_args(argv)
    print(f"machine: {platform.machine()}, nproc {os.cpu_count()}, Python "
          f"{platform.python_version()}; best of {args.rounds} rounds")
    measured = cases()
    best = [float("inf")] * len(measured)
    for _ in range(args.rounds):
        for i, (_, fn) in enumerate(measured):
            best[i] = min(best[i], per_call_us(fn, args.seconds / args.rounds))
    header = f"{'case':<44} {'us/call':>9}"
    print()
    print(header)
    print("-" * len(header))
    for (name, _), us in zip(measured, best, strict=True):
        print(f"{name:<44} {us:>9.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
