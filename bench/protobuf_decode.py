"""Formats-layer decode rate of Confluent-framed Protobuf values into Arrow with kafkawire's
ProtobufDecoder, no Spark and no broker: best of 3 over ``--rows`` records of two messages,
each through the vectorized path for flat messages (formats/protobuf_vector.py) and the upb
path per record:

- ``flat``: 10 singular scalar fields, about 200 B (the vectorized path applies);
- ``order``: the message of bench/protobuf_spark.py, its schema as .proto text (a Timestamp
  field makes it not flat: both runs take upb), plus the one-off cost of compiling the text
  with protoc (cached per process afterwards).
"""

from __future__ import annotations

import argparse
import base64
import time

import pyarrow as pa
from google.protobuf import descriptor_pb2, message_factory

from bench.protobuf_spark import SCHEMA, order_message
from spark_kafka_wire.client.registry.proto_text import binary_schemas
from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder, build_pool, decode_framed

F = descriptor_pb2.FieldDescriptorProto
FLAT_TYPES = [F.TYPE_INT64, F.TYPE_INT32, F.TYPE_STRING, F.TYPE_STRING, F.TYPE_DOUBLE,
              F.TYPE_BOOL, F.TYPE_INT64, F.TYPE_STRING, F.TYPE_FLOAT, F.TYPE_STRING]
HEADER = b"\x00" + (1).to_bytes(4, "big") + b"\x00"  # magic, schema id 1, message [0]


def flat_values(rows: int) -> tuple[str, pa.Array]:
    fdp = descriptor_pb2.FileDescriptorProto(name="b.proto", package="b", syntax="proto3")
    m = fdp.message_type.add(name="R")
    for i, t in enumerate(FLAT_TYPES):
        m.field.add(name=f"f{i}", number=i + 1, type=t, label=F.LABEL_OPTIONAL)
    schema = base64.b64encode(fdp.SerializeToString()).decode()
    pool, _ = build_pool(schema)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("b.R"))
    vals = [HEADER + cls(
        f0=i * 1000003, f1=i, f2=f"user-{i:08d}-abcdefghijklmnopqrstuvwxyz", f3="x" * 40,
        f4=i * 0.5, f5=bool(i & 1), f6=1_700_000_000_000 + i, f7=f"cat-{i % 50}-{'y' * 30}",
        f8=1.25, f9="z" * 40).SerializeToString() for i in range(rows)]
    return schema, pa.array(vals, pa.binary())


def order_values(rows: int) -> tuple[str, pa.Array]:
    t0 = time.perf_counter()
    main, _ = binary_schemas(SCHEMA)  # protoc, as the source does on the driver
    pool, _ = build_pool(main)
    print(f"protoc compile of the .proto text: {(time.perf_counter() - t0) * 1000:.0f} ms "
          "(once per process, then cached)")
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Order"))
    vals = [HEADER + order_message(order, n).SerializeToString() for n in range(rows)]
    return main, pa.array(vals, pa.binary())


def best_rate(arr: pa.Array, dec: ProtobufDecoder) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        out = decode_framed(arr, dec)
        best = min(best, time.perf_counter() - t0)
        assert not out.failed.any()
    return len(arr) / best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.protobuf_decode")
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args(argv)
    for name, (schema, arr) in (("flat", flat_values(args.rows)),
                                ("order", order_values(args.rows))):
        avg = sum(len(v) for v in arr.to_pylist()) / len(arr)
        for label, vectorized in (("vectorized", True), ("upb", False)):
            rate = best_rate(arr, ProtobufDecoder(schema, vectorized=vectorized))
            print(f"{name:>5} ({avg:.0f} B) {label:>10}: {rate:,.0f} records/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
