"""Formats-layer decode rate of Confluent-framed Protobuf values (the 10-field ~200 B message
of bench/protobuf_spark.py, its schema as .proto text) into Arrow with kafkawire's
ProtobufDecoder, no Spark and no broker: best of 3 over ``--rows`` records, plus the one-off
cost of compiling the text with protoc (cached per process afterwards)."""

from __future__ import annotations

import argparse
import time

import pyarrow as pa
from google.protobuf import message_factory

from bench.protobuf_spark import SCHEMA
from spark_kafka_wire.formats import proto_text
from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder, build_pool, decode_framed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.protobuf_decode")
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    pool, _ = build_pool(SCHEMA)
    print(f"protoc compile of the .proto text: {(time.perf_counter() - t0) * 1000:.0f} ms "
          f"(then cached: {len(proto_text._cache)} entry)")
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Order"))
    vals = []
    for n in range(args.rows):
        m = order(id=n, qty=n % 100, price=n / 7, paid=n % 2 == 0, state=n % 4,
                  customer=f"customer-{n % 5000:05d}", sku=f"sku-{n % 997:04d}-blue-large",
                  address=f"{n % 300} Long Street, Some Town, {n % 90:02d}000",
                  note="deliver to the back door, ring twice")
        m.at.FromMilliseconds(1_790_000_000_000 + n)
        vals.append(b"\x00" + (1).to_bytes(4, "big") + b"\x00" + m.SerializeToString())
    arr = pa.array(vals, pa.binary())
    print(f"avg value bytes {sum(map(len, vals)) / len(vals):.0f}")
    dec = ProtobufDecoder(SCHEMA)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        out = decode_framed(arr, dec)
        best = min(best, time.perf_counter() - t0)
        assert not out.failed.any()
    print(f"formats layer (ProtobufDecoder): {args.rows / best:,.0f} records/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
