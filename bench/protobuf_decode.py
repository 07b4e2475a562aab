"""Decode rate of Confluent-framed Protobuf values (10 fields, ~200 B) into Arrow with kafkawire's\nProtobufDecoder: best of 3 over 100,000 records, the vectorized path for flat messages
(formats/protobuf_vector.py) and the upb path per record (no JVM comparison yet)."""
import base64
import struct
import time

import pyarrow as pa
from google.protobuf import descriptor_pb2, message_factory

from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder, build_pool, decode_framed

F = descriptor_pb2.FieldDescriptorProto
fdp = descriptor_pb2.FileDescriptorProto(name="b.proto", package="b", syntax="proto3")
m = fdp.message_type.add(name="R")
types = [F.TYPE_INT64, F.TYPE_INT32, F.TYPE_STRING, F.TYPE_STRING, F.TYPE_DOUBLE, F.TYPE_BOOL,
         F.TYPE_INT64, F.TYPE_STRING, F.TYPE_FLOAT, F.TYPE_STRING]
for i, t in enumerate(types):
    m.field.add(name=f"f{i}", number=i + 1, type=t, label=F.LABEL_OPTIONAL)
schema = base64.b64encode(fdp.SerializeToString()).decode()
pool, _ = build_pool(schema)
R = message_factory.GetMessageClass(pool.FindMessageTypeByName("b.R"))
vals = []
for i in range(100_000):
    r = R(f0=i * 1000003, f1=i, f2=f"user-{i:08d}-abcdefghijklmnopqrstuvwxyz", f3="x" * 40,
          f4=i * 0.5, f5=bool(i & 1), f6=1_700_000_000_000 + i, f7=f"cat-{i % 50}-{'y' * 30}",
          f8=1.25, f9="z" * 40)
    vals.append(b"\x00" + struct.pack(">I", 1) + b"\x00" + r.SerializeToString())
arr = pa.array(vals, pa.binary())


def _time(arr: pa.Array, dec: ProtobufDecoder) -> float:
    t = time.perf_counter()
    out = decode_framed(arr, dec)
    dt = time.perf_counter() - t
    assert not out.failed.any()
    return dt


print("avg bytes", sum(map(len, vals)) / len(vals))
for label, vectorized in (("vectorized", True), ("upb", False)):
    dec = ProtobufDecoder(schema, vectorized=vectorized)
    best = min(_time(arr, dec) for _ in range(3))
    print(f"{label:>10}: {len(vals) / best:,.0f} records/s")
