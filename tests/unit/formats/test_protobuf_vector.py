"""The vectorized path for flat Protobuf messages (formats/protobuf_vector.py) against upb.

``ProtobufDecoder(vectorized=False)`` parses every record with upb and walks it in Python;
the default scans flat messages across all records with numpy and hands back to upb what it
gives up on. Both must give the same column, failed mask and errors for random flat schemas
(proto2 and proto3, every scalar type, presence or not, required, enums) and random wire
bytes: edge values, fields out of order and repeated, unknown fields of every wire type,
wrong wire types, payloads cut short, invalid UTF-8, random bytes.
"""

from __future__ import annotations

import base64
import json
import math
import os
import random
import struct
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2

from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder, decode_framed
from spark_kafka_wire.formats.protobuf_vector import decode_flat, flat_fields
from tests.unit.formats.hostile import run_hostile

F = descriptor_pb2.FieldDescriptorProto
SCALARS = [F.TYPE_INT32, F.TYPE_INT64, F.TYPE_UINT32, F.TYPE_UINT64, F.TYPE_SINT32,
           F.TYPE_SINT64, F.TYPE_FIXED32, F.TYPE_FIXED64, F.TYPE_SFIXED32, F.TYPE_SFIXED64,
           F.TYPE_BOOL, F.TYPE_ENUM, F.TYPE_FLOAT, F.TYPE_DOUBLE, F.TYPE_STRING, F.TYPE_BYTES]
WIRE = {F.TYPE_FIXED32: 5, F.TYPE_SFIXED32: 5, F.TYPE_FLOAT: 5, F.TYPE_FIXED64: 1,
        F.TYPE_SFIXED64: 1, F.TYPE_DOUBLE: 1, F.TYPE_STRING: 2, F.TYPE_BYTES: 2}


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def schema_of(rng: random.Random, syntax: str, numbers: list[int] | None = None
              ) -> tuple[str, list[tuple[int, int]]]:
    """A random flat message (base64 FileDescriptorProto) and its (number, type) fields
    (``numbers``: its field numbers, else a few random ones below 40)."""
    fdp = descriptor_pb2.FileDescriptorProto(name="t.proto", package="t", syntax=syntax)
    enum = fdp.enum_type.add(name="Color")
    if syntax == "proto3":
        enum.value.add(name="COLOR_NONE", number=0)
    enum.value.add(name="RED", number=1)
    enum.value.add(name="BLUE", number=-3)
    enum.value.add(name="GREEN", number=7)
    m = fdp.message_type.add(name="M")
    fields = []
    if numbers is None:
        numbers = rng.sample(range(1, 40), rng.randint(1, 12))
    for i, number in enumerate(numbers):
        t = rng.choice(SCALARS)
        f = m.field.add(name=f"f{i}", number=number, type=t, label=F.LABEL_OPTIONAL)
        if t == F.TYPE_ENUM:
            f.type_name = ".t.Color"
        if syntax == "proto3" and rng.random() < 0.4:
            f.proto3_optional = True
            f.oneof_index = len(m.oneof_decl)
            m.oneof_decl.add(name=f"_f{i}")
        if syntax == "proto2":
            if rng.random() < 0.15:
                f.label = F.LABEL_REQUIRED
            elif rng.random() < 0.3 and t not in (F.TYPE_BYTES,):
                f.default_value = {F.TYPE_STRING: "dflt", F.TYPE_BOOL: "true",
                                   F.TYPE_ENUM: "GREEN", F.TYPE_FLOAT: "1.5",
                                   F.TYPE_DOUBLE: "-2.5"}.get(t, "5")
        fields.append((number, t))
    return base64.b64encode(fdp.SerializeToString()).decode(), fields


def value_bytes(rng: random.Random, t: int) -> bytes:
    wire = WIRE.get(t, 0)
    if wire == 0:
        edge = [0, 1, -1, 2**31 - 1, -2**31, 2**32 - 1, 2**63 - 1, -2**63, 2**64 - 1, 1, 7,
                -3, 300, 0]
        return varint(rng.choice(edge) if rng.random() < 0.6 else rng.getrandbits(64))
    if wire == 5:
        if t == F.TYPE_FLOAT and rng.random() < 0.5:
            return struct.pack("<f", rng.choice([0.0, -0.0, math.nan, math.inf, 1.5]))
        return rng.randbytes(4) if rng.random() < 0.7 else b"\0\0\0\0"
    if wire == 1:
        if t == F.TYPE_DOUBLE and rng.random() < 0.5:
            return struct.pack("<d", rng.choice([0.0, -0.0, math.nan, -math.inf, 2.25]))
        return rng.randbytes(8) if rng.random() < 0.7 else bytes(8)
    body = rng.choice([b"", b"abc", "h\u00e9llo \u2603".encode(), b"\xff\xfe", b"x" * 200,
                       rng.randbytes(rng.randint(0, 6))])
    return varint(len(body)) + body


def unknown_field(rng: random.Random, number: int) -> bytes:
    wire = rng.choice([0, 1, 2, 5, 3])
    tag = varint(number << 3 | wire)
    if wire == 0:
        return tag + varint(rng.getrandbits(64))
    if wire == 1:
        return tag + rng.randbytes(8)
    if wire == 5:
        return tag + rng.randbytes(4)
    if wire == 2:
        body = rng.randbytes(rng.randint(0, 5))
        return tag + varint(len(body)) + body
    return tag + varint(number << 3 | 4)  # an empty group


def payload(rng: random.Random, fields: list[tuple[int, int]],
            unknown: Sequence[int] = range(1, 60)) -> bytes | None:
    """Random wire bytes of the fields, fields of numbers in ``unknown`` the schema does
    not have, and damage."""
    r = rng.random()
    if r < 0.03:
        return None
    if r < 0.05:
        return rng.randbytes(rng.randint(0, 12))
    out = bytearray()
    used = {n for n, _ in fields}
    for _ in range(rng.randint(0, 2 * len(fields) + 2)):
        s = rng.random()
        if s < 0.8:
            number, t = rng.choice(fields)
            wire = WIRE.get(t, 0)
            if rng.random() < 0.03:
                wire = rng.choice([0, 1, 2, 5])
                out += varint(number << 3 | wire)
                out += {0: varint(5), 1: bytes(8), 2: b"\x01a", 5: bytes(4)}[wire]
                continue
            out += varint(number << 3 | wire) + value_bytes(rng, t)
        else:
            out += unknown_field(rng, rng.choice([n for n in unknown if n not in used]))
    if rng.random() < 0.05 and out:
        out = out[:rng.randrange(len(out))]
    if rng.random() < 0.03 and out:
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def norm(values: list[Any]) -> list[Any]:
    """Python values with NaN made comparable."""
    def one(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, dict):
            return {k: one(x) for k, x in v.items()}
        return v
    return [one(v) for v in values]


def both(schema: str, payloads: pa.Array, **kw: Any) -> None:
    fast = ProtobufDecoder(schema).decode(payloads, **kw)
    slow = ProtobufDecoder(schema, vectorized=False).decode(payloads, **kw)
    assert fast.array.type == slow.array.type
    assert norm(fast.array.to_pylist()) == norm(slow.array.to_pylist())
    assert fast.failed.tolist() == slow.failed.tolist()
    assert fast.errors == slow.errors


@pytest.mark.parametrize("seed", range(40))
def test_random_flat_schemas_match_upb(seed: int) -> None:
    rng = random.Random(seed)
    schema, fields = schema_of(rng, "proto3" if seed % 2 else "proto2")
    values = [payload(rng, fields) for _ in range(300)]
    both(schema, pa.array(values, pa.binary()), indexes=False)
    framed = [None if v is None else b"\0\0\0\0\1" + (b"\0" if rng.random() < 0.95
                                                       else b"\2\2") + v for v in values]
    both(schema, pa.array(framed, pa.binary()), skip=5)
    # the framed path end to end, with a record not in the wire format
    arr = pa.array([*framed, b"\x07junk"], pa.binary())
    fast = decode_framed(arr, ProtobufDecoder(schema))
    slow = decode_framed(arr, ProtobufDecoder(schema, vectorized=False))
    assert norm(fast.array.to_pylist()) == norm(slow.array.to_pylist())
    assert fast.errors == slow.errors


def clean_schema() -> tuple[str, list[tuple[int, int]]]:
    fdp = descriptor_pb2.FileDescriptorProto(name="c.proto", package="c", syntax="proto3")
    m = fdp.message_type.add(name="M")
    fields = []
    for i, t in enumerate(t for t in SCALARS if t != F.TYPE_ENUM):
        m.field.add(name=f"f{i}", number=i + 1, type=t, label=F.LABEL_OPTIONAL)
        fields.append((i + 1, t))
    return base64.b64encode(fdp.SerializeToString()).decode(), fields


def test_clean_records_never_fall_back_to_upb() -> None:
    """Well-formed records (edge values, repeats, out of order, unknown fields) are all
    decoded by the vectorized path: nothing is left for upb."""
    schema, fields = clean_schema()
    rng = random.Random(7)
    values = []
    for _ in range(200):
        out = bytearray()
        for _ in range(rng.randint(0, 30)):
            number, t = rng.choice(fields)
            v = value_bytes(rng, t)
            if t == F.TYPE_STRING:
                v = varint(3) + "o\u00e9".encode()
            out += varint(number << 3 | WIRE.get(t, 0)) + v
            if rng.random() < 0.2:
                out += varint(99 << 3 | 2) + b"\x02zz" + varint(98 << 3 | 0) + varint(2**64 - 1)
        values.append(bytes(out))
    arr = pa.array(values, pa.binary())
    dec = ProtobufDecoder(schema)
    assert dec._flat is not None
    _, left = decode_flat(arr, dec._flat, dec.arrow_type)
    assert not left.any()
    both(schema, arr, indexes=False)


def test_empty_and_all_null_batches() -> None:
    schema, _ = clean_schema()
    for arr in (pa.array([], pa.binary()), pa.array([None, None], pa.binary()),
                pa.array([b"", b""], pa.binary())):
        both(schema, arr, indexes=False)
    out = ProtobufDecoder(schema).decode(pa.array([b"", None], pa.binary()), indexes=False)
    assert out.array.to_pylist()[1] is None
    assert out.array.to_pylist()[0] == {f"f{i}": None for i in range(15)}


def test_edge_values_decode_as_spark_reads_them() -> None:
    fdp = descriptor_pb2.FileDescriptorProto(name="e.proto", package="e", syntax="proto3")
    m = fdp.message_type.add(name="M")
    for name, number, t in (("a", 1, F.TYPE_INT32), ("b", 2, F.TYPE_UINT64),
                            ("c", 3, F.TYPE_SINT32), ("d", 4, F.TYPE_DOUBLE),
                            ("s", 5, F.TYPE_STRING)):
        m.field.add(name=name, number=number, type=t, label=F.LABEL_OPTIONAL)
    schema = base64.b64encode(fdp.SerializeToString()).decode()
    raw = (varint(1 << 3) + varint(-5) + varint(2 << 3) + varint(2**64 - 1)
           + varint(3 << 3) + varint(3) + bytes([4 << 3 | 1]) + struct.pack("<d", -0.0)
           + varint(5 << 3 | 2) + b"\x01x" + varint(5 << 3 | 2) + b"\x02yz")
    out = ProtobufDecoder(schema).decode(pa.array([raw], pa.binary()), indexes=False)
    assert out.array.to_pylist() == [{"a": -5, "b": -1, "c": -2, "d": None, "s": "yz"}]
    assert not np.asarray(out.failed).any()


def test_only_flat_messages_take_the_vector_path() -> None:
    fdp = descriptor_pb2.FileDescriptorProto(name="n.proto", package="n", syntax="proto3")
    m = fdp.message_type.add(name="M")
    m.field.add(name="xs", number=1, type=F.TYPE_INT32, label=F.LABEL_REPEATED)
    schema = base64.b64encode(fdp.SerializeToString()).decode()
    dec = ProtobufDecoder(schema)
    assert dec._flat is None
    assert flat_fields(dec._desc) is None


@pytest.mark.parametrize("syntax", ["proto2", "proto3"])
def test_invalid_utf8_in_a_string(syntax: str) -> None:
    """proto3 refuses the record (upb's parse error); proto2 reads the bytes with U+FFFD for
    the bad sequences as Java's runtime does, instead of failing the batch. Also when the
    bad occurrence is replaced by a later, valid one (upb checks every occurrence)."""
    fdp = descriptor_pb2.FileDescriptorProto(name="u.proto", package="u", syntax=syntax)
    m = fdp.message_type.add(name="M")
    m.field.add(name="s", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    schema = base64.b64encode(fdp.SerializeToString()).decode()
    arr = pa.array([b"\x0a\x03a\xffb", b"\x0a\x01\xfe\x0a\x01c", b"\x0a\x02ok"], pa.binary())
    both(schema, arr, indexes=False)
    out = ProtobufDecoder(schema).decode(arr, indexes=False)
    if syntax == "proto2":
        assert out.array.to_pylist() == [{"s": "a\ufffdb"}, {"s": "c"}, {"s": "ok"}]
        assert not out.failed.any()
    else:
        assert out.failed.tolist() == [True, True, False]
        assert "UTF-8" in out.errors[0]


@pytest.mark.parametrize("raw", [
    varint(2**29 << 3) + b"\x01",  # a field number beyond 2**29 - 1
    varint(0) + b"\x01",  # field number 0
    varint(1 << 3) + b"\xff" * 10 + b"\x01",  # a varint of 11 bytes
    varint(1 << 3) + b"\xff" * 9 + b"\x02",  # a 10-byte varint beyond 64 bits
    varint(1 << 3) + b"\x80",  # a varint cut short
    varint(5 << 3 | 2) + b"\x05ab",  # a string cut short
    varint(2 << 3 | 1) + b"\x01\x02",  # a double cut short
    varint(3 << 3 | 3) + varint(3 << 3 | 4),  # a group where a field is
    varint(9 << 3 | 6) + b"\x00",  # wire type 6
    varint(1 << 3 | 2) + b"\x01\x05",  # a varint field sent as length-delimited
])
def test_malformed_payloads_fail_as_upb_says(raw: bytes) -> None:
    fdp = descriptor_pb2.FileDescriptorProto(name="x.proto", package="x", syntax="proto3")
    m = fdp.message_type.add(name="M")
    for name, number, t in (("a", 1, F.TYPE_INT64), ("d", 2, F.TYPE_DOUBLE),
                            ("g", 3, F.TYPE_INT32), ("s", 5, F.TYPE_STRING)):
        m.field.add(name=name, number=number, type=t, label=F.LABEL_OPTIONAL)
    schema = base64.b64encode(fdp.SerializeToString()).decode()
    both(schema, pa.array([raw, varint(1 << 3) + b"\x07"], pa.binary()), indexes=False)


_HOSTILE_CHILD = r"""
import base64, json
import pyarrow as pa
from google.protobuf import descriptor_pb2
from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder
from tests.unit.formats.test_protobuf_vector import varint

F = descriptor_pb2.FieldDescriptorProto
fdp = descriptor_pb2.FileDescriptorProto(name="h.proto", package="h", syntax="proto3")
fdp.message_type.add(name="M").field.add(name="b", number=1, type=F.TYPE_BYTES,
                                         label=F.LABEL_OPTIONAL)
schema = base64.b64encode(fdp.SerializeToString()).decode()
payloads = [b"\x0a" + varint(n) + b"x" * 7 for n in (2**63 - 1, 2**64 - 1, 2**63 - 3)]
payloads.append(b"\x0a" + varint(7) + b"z" * 7)
got = ProtobufDecoder(schema).decode(pa.array(payloads, pa.binary()), indexes=False)
print(json.dumps([got.failed.tolist(), repr(got.array.to_pylist()[3])]))
"""


def test_lengths_near_2_63_fail_their_records_without_crashing_the_worker() -> None:
    """Issue 45 item 2 for Protobuf: a body's length near 2**63 or 2**64 must not wrap the
    bound (the vectorized path leaves the record to upb, which fails it). In a child
    process: a gather past numpy's buffer would kill it, not pytest."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", _HOSTILE_CHILD], capture_output=True,
                         text=True, timeout=120, env=env, check=False)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    failed, last = json.loads(run.stdout.strip().splitlines()[-1])
    assert failed == [True, True, True, False]
    assert last == repr({"b": b"zzzzzzz"})


_LARGE_NUMBERS_CHILD = r"""
import base64, json, random
import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder
from spark_kafka_wire.formats.protobuf_vector import decode_flat
from tests.unit.formats.test_protobuf_vector import both, payload, schema_of

TOP = 2**29 - 1  # the largest field number protobuf allows
LAYOUTS = {  # the last two share their low 12 bits: the lookup's binary search
    "top": lambda rng: rng.sample(range(TOP - 40, TOP + 1), rng.randint(1, 12)),
    "mixed": lambda rng: [*rng.sample(range(1, 20), 3), TOP, TOP - 4096, 70000],
    "same low bits": lambda rng: [4096 * k + 1 for k in rng.sample(range(1, 2**17 - 1), 8)],
}
cases = 0
for name, pick in LAYOUTS.items():
    for seed in range(6):
        rng = random.Random(seed)
        numbers = pick(rng)
        schema, fields = schema_of(rng, "proto3" if seed % 2 else "proto2", numbers)
        # unknown fields whose low bits are a known field's, and small ones
        unknown = sorted({n + d for n in numbers for d in (-4096, -16, 16, 4096)
                          if 0 < n + d <= TOP} - set(numbers)) + [2, 3, 2**28]
        both(schema, pa.array([payload(rng, fields, unknown) for _ in range(300)],
                              pa.binary()), indexes=False)
        cases += 1

# exact values, the protobuf library writing them: nothing left for upb
F = descriptor_pb2.FieldDescriptorProto
fdp = descriptor_pb2.FileDescriptorProto(name="n.proto", package="n", syntax="proto3")
m = fdp.message_type.add(name="M")
m.field.add(name="small", number=1, type=F.TYPE_SINT64, label=F.LABEL_OPTIONAL)
m.field.add(name="text", number=TOP, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
m.field.add(name="real", number=TOP - 4096, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
schema = base64.b64encode(fdp.SerializeToString()).decode()
pool = descriptor_pool.DescriptorPool()
pool.Add(fdp)
cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("n.M"))
rows = [{"small": -i, "text": f"v{i}", "real": i / 4} for i in range(1, 50)]
arr = pa.array([cls(**r).SerializeToString() for r in rows], pa.binary())
dec = ProtobufDecoder(schema)
_, left = decode_flat(arr, dec._flat, dec.arrow_type)
got = dec.decode(arr, indexes=False)
print(json.dumps({"cases": cases, "left": int(left.sum()), "exact": got.array.to_pylist() == rows}))
"""


def test_field_numbers_up_to_2_29_cost_the_field_count_not_the_number() -> None:
    """Issue 45 item 4: the vectorized path's lookup tables were indexed by field number,
    so one schema field numbered 536,870,911 (2**29 - 1, legal) allocated 4 GiB per batch
    (MemoryError under 1 GiB). Schemas of large numbers, mixed with small ones, or sharing
    their low bits, decode as upb does, unknown fields with near numbers skipped; a child
    process holds them to 1 GiB of address space."""
    got = run_hostile(_LARGE_NUMBERS_CHILD)
    assert got == {"cases": 18, "left": 0, "exact": True}
