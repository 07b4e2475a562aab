"""kafkawire's Protobuf columns against Spark's own ``from_protobuf`` (spark-protobuf at the
running Spark's release, issue 32): the same Confluent-framed bytes read by kafkawire
``value.format=protobuf`` (schema registered as .proto text) and by Spark's ``kafka`` format
with ``from_protobuf`` of the body after the header (magic, id, message-index byte) given the
compiled FileDescriptorSet give the same type (names, types, nullability) and values."""

from __future__ import annotations

import datetime as dt
import uuid

import confluent_kafka as ck
import pytest
from confluent_kafka.schema_registry import Schema
from google.protobuf import descriptor_pb2, message_factory
from pyspark.sql import functions as F
from pyspark.sql.protobuf.functions import from_protobuf

from spark_kafka_wire.client.registry.proto_text import compile_text
from spark_kafka_wire.formats.protobuf_codec import build_pool
from tests.support.schema_registry import confluent_client

pytestmark = [pytest.mark.spark, pytest.mark.broker]

EVERY = """syntax = "proto3";
package kw.parity;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";

enum Color { RED = 0; GREEN = 1; BLUE = 2; }
message Inner { string label = 1; repeated int32 xs = 2; }
message Node { int32 v = 1; Node next = 2; }
message Every {
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5;
  sint64 s64 = 6; fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10;
  float fl = 11; double db = 12; bool bo = 13; string st = 14; bytes by = 15;
  Color color = 16;
  Inner inner = 17;
  repeated Inner inners = 18;
  repeated string words = 19;
  map<string, int64> counts = 20;
  map<int32, Inner> by_id = 21;
  oneof choice { string c_text = 22; int64 c_num = 23; Inner c_inner = 24; }
  google.protobuf.Timestamp ts = 25;
  google.protobuf.Duration dur = 26;
  google.protobuf.Int64Value w_i64 = 27;
  google.protobuf.StringValue w_str = 28;
  google.protobuf.BoolValue w_bool = 29;
  optional int32 opt = 30;
  Node node = 31;
}
"""

P2 = """syntax = "proto2";
package kw.parity2;
message Legacy {
  required int32 id = 1;
  optional string name = 2 [default = "anon"];
  optional int64 n = 3 [default = 5];
  enum Kind { A = 1; B = 2; }
  optional Kind kind = 4 [default = B];
  repeated double xs = 5;
}
"""


def _every(cls: type, n: int):  # type: ignore[no-untyped-def]
    m = cls()
    if n % 5 == 4:
        return m  # every field at its default
    m.i32, m.i64, m.u32, m.u64 = -n, -(2**40) * n, 2**32 - 1 - n, 2**64 - 1 - n
    m.s32, m.s64, m.f32, m.f64 = -n * 3, -(2**50) - n, 2**31 + n, 2**63 + n
    m.sf32, m.sf64, m.fl, m.db = -7 - n, -(2**62), 1.5 * n, -2.25 * n
    m.bo, m.st, m.by = bool(n % 2), f"s{n}é", bytes([n, 0, 255])
    m.color = (0, 1, 2, 7)[n % 4]  # 7: a number the enum does not name (open enum)
    m.inner.label = f"in{n}"
    m.inner.xs.extend(range(n % 3))
    for j in range(n % 3):
        m.inners.add(label=f"l{j}", xs=[j])
    m.words.extend([f"w{j}" for j in range(n % 4)])
    for j in range(n % 3):
        m.counts[f"k{j}"] = j * n
        m.by_id[j].label = f"b{j}"
    (lambda: setattr(m, "c_text", f"t{n}"), lambda: setattr(m, "c_num", n),
     lambda: m.c_inner.xs.append(n))[n % 3]()
    m.ts.FromDatetime(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
                      + dt.timedelta(seconds=n, microseconds=n * 7))
    m.dur.FromTimedelta(dt.timedelta(seconds=-n, microseconds=123))
    m.w_i64.value = n
    if n % 2:
        m.w_str.value = "w"
    m.w_bool.value = False
    if n % 3:
        m.opt = 0  # proto3 optional: set to its default is still present
    m.node.v = n
    m.node.next.v = n + 1
    m.node.next.next.v = n + 2
    return m


def _legacy(cls: type, n: int):  # type: ignore[no-untyped-def]
    m = cls(id=n)
    if n % 2:
        m.name, m.n, m.kind = f"n{n}", 0, 1
        m.xs.extend([0.5] * n)
    return m


CASES = {"every": (EVERY, "kw.parity.Every", _every),
         "proto2": (P2, "kw.parity2.Legacy", _legacy)}


@pytest.mark.parametrize("case", list(CASES))
def test_the_same_bytes_read_by_from_protobuf_and_by_kafkawire(spark, bootstrap,
                                                               schema_registry,
                                                               case: str) -> None:
    from tests.support.spark_kafka_connector import (  # noqa: PLC0415
        ConnectorNotServed,
        protobuf_jars,
    )

    try:
        protobuf_jars(spark.version)
    except ConnectorNotServed as exc:
        pytest.skip(f"Spark's from_protobuf is not available: {exc}")
    text, message, make = CASES[case]
    topic = f"pb-parity-{case}-{uuid.uuid4().hex[:8]}"
    schema_id = confluent_client(schema_registry).register_schema(
        f"{topic}-value", Schema(text, "PROTOBUF"))
    pool, _ = build_pool(text)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(message))
    header = b"\x00" + schema_id.to_bytes(4, "big") + b"\x00"
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for n in range(24):
        producer.produce(topic, header + make(cls, n).SerializeToString(), partition=0)
    assert producer.flush(30) == 0
    _, files = compile_text(text)
    descriptor_set = descriptor_pb2.FileDescriptorSet(file=list(files.values()))
    kafka = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
             "startingOffsets": "earliest"}
    depth = {"recursive.fields.max.depth": "3"}
    ours = (spark.read.format("kafkawire").options(**kafka)
            .option("schema.registry.url", schema_registry).option("value.format", "protobuf")
            .options(**depth)
            .load().select("offset", "value"))
    theirs = (spark.read.format("kafka").options(**kafka).load()
              .select("offset", from_protobuf(F.expr("substring(value, 7)"), message,
                                              options=depth,
                                              binaryDescriptorSet=descriptor_set
                                              .SerializeToString()).alias("value")))
    assert ours.schema["value"].dataType == theirs.schema["value"].dataType
    assert ours.orderBy("offset").collect() == theirs.orderBy("offset").collect()
