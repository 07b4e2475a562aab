"""Records per second decoding (and encoding) each record format and codec.

Run: ``python -m bench.decode [--mb 8] [--batch 1000] [--seconds 1.5]``. Prints the machine
and one table. Data: JSON-like 100-byte values (compressible like typical topics) with
8-byte keys, ``--batch`` records per batch (for compressed legacy data: per wrapper message;
uncompressed legacy data has no batches), about ``--mb`` MB of uncompressed records per case.
Decoding runs ``decode_record_batches`` over the whole buffer with CRC checks on, as a fetch
does; each figure is the best of ``--rounds`` timed rounds sharing ``--seconds``, the rounds
taking turns over all cases so that other load on the machine disturbs them alike.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from importlib.metadata import version

import numpy as np
import pyarrow as pa

from spark_kafka_wire.protocol.records import (
    decode_record_batches,
    encode_message_set,
    encode_record_batch,
)

CASES = [(2, c) for c in ("none", "gzip", "snappy", "lz4", "zstd")] + \
        [(m, c) for m in (1, 0) for c in ("none", "gzip", "snappy", "lz4")]
VALUE_SIZE = 100


def make_columns(n: int, seed: int = 0) -> tuple[pa.Array, pa.Array]:
    rng = np.random.default_rng(seed)
    values = []
    for i in range(n):
        v = (b'{"id":%d,"user":"u%05d","amount":%d.%02d,"country":"%s","ok":%s}'
             % (i, rng.integers(100_000), rng.integers(10_000), rng.integers(100),
                [b"DE", b"FR", b"US", b"JP"][int(rng.integers(4))],
                b"true" if rng.integers(2) else b"false"))
        values.append(v.ljust(VALUE_SIZE, b" ")[:VALUE_SIZE])
    keys = [b"k%07d" % int(rng.integers(10_000_000)) for _ in range(n)]
    return pa.array(keys, pa.binary()), pa.array(values, pa.binary())


def encoder(magic: int, codec: str) -> Callable[[pa.Array, pa.Array, int], bytes]:
    if magic == 2:
        return lambda k, v, base: encode_record_batch(k, v, timestamps=1_700_000_000_000,
                                                      base_offset=base, compression=codec)
    return lambda k, v, base: encode_message_set(k, v, magic=magic, timestamps=1_700_000_000_000,
                                                 base_offset=base, compression=codec)


def rate(fn: Callable[[], int], seconds: float) -> float:
    """Records per second of ``fn`` (which returns records done) over at least ``seconds``."""
    done = 0
    start = time.perf_counter()
    while True:
        done += fn()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=8.0, help="uncompressed MB of records per case")
    ap.add_argument("--batch", type=int, default=1000, help="records per batch")
    ap.add_argument("--seconds", type=float, default=1.5, help="timing per measurement")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds; the best counts")
    args = ap.parse_args(argv)

    batches = max(1, int(args.mb * 1e6 / (VALUE_SIZE + 8) / args.batch))
    n = batches * args.batch
    keys, values = make_columns(args.batch)
    print(f"machine: {platform.machine()}, nproc {os.cpu_count()}, Python "
          f"{platform.python_version()}, numpy {np.__version__}, pyarrow {pa.__version__}, "
          f"lz4 {version('lz4')}, zstandard {version('zstandard')}, cramjam {version('cramjam')}")
    print(f"data per case: {batches} batches x {args.batch} records = {n} records, "
          f"{VALUE_SIZE}-byte JSON-like values, 8-byte keys; CRC checks on; best of "
          f"{args.rounds} rounds")
    measured: list[tuple[int, str, int, Callable[[], int], Callable[[], int]]] = []
    for magic, codec in CASES:
        enc = encoder(magic, codec)
        data = b"".join(enc(keys, values, i * args.batch) for i in range(batches))
        check = decode_record_batches(data, start_offset=0)
        assert check.num_records == n and check.next_offset == n, (magic, codec)
        measured.append((
            magic, codec, len(data),
            lambda d=data: decode_record_batches(d, start_offset=0).num_records,
            lambda e=enc: len(e(keys, values, 0)) and args.batch))
    # Rounds go over all cases in turn and the best round of each case counts, so that
    # other load on the machine disturbs every case alike.
    best = [[0.0, 0.0] for _ in measured]
    for _ in range(args.rounds):
        for i, (_, _, _, decode, encode) in enumerate(measured):
            best[i][0] = max(best[i][0], rate(decode, args.seconds / args.rounds))
            best[i][1] = max(best[i][1], rate(encode, args.seconds / args.rounds))
    baseline = {m: best[i][0] for i, (m, c, *_rest) in enumerate(measured) if c == "none"}
    print()
    header = (f"{'format':<10} {'codec':<7} {'wire MB':>8} {'decode rec/s':>13} "
              f"{'vs none':>8} {'decode MB/s':>12} {'encode rec/s':>13}")
    print(header)
    print("-" * len(header))
    for (magic, codec, size, _, _), (decode, encode) in zip(measured, best, strict=True):
        name = "batch v2" if magic == 2 else f"magic {magic}"
        print(f"{name:<10} {codec:<7} {size / 1e6:>8.2f} {decode:>13,.0f} "
              f"{decode / baseline[magic]:>8.2f} {decode * (VALUE_SIZE + 8) / 1e6:>12.1f} "
              f"{encode:>13,.0f}", flush=True)
    print()
    print("vs none: decode rate relative to the same format uncompressed; decode MB/s counts "
          "key + value bytes delivered.")


if __name__ == "__main__":
    main(sys.argv[1:])
