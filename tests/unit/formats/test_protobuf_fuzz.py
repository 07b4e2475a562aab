"""The Protobuf decoders fed structure-aware hostile records and schemas (issue 45's fuzz tier).

Whatever a record's bytes or the registry's schema, ``ProtobufDecoder`` (protobuf_vector's
numpy scan for flat messages, upb and the Python walk for the rest) must answer with a column
in which the bad records are failed and the good ones of the batch decoded: no crash, hang,
untyped error, or memory beyond a small multiple of the input. Cases run in one child under
an address-space limit (tests/support/hostile_child.py).

Messages are generated from generated descriptors (every scalar type, enums, nested messages,
packed and unpacked repeated fields, maps, oneofs, Timestamps, recursion, field numbers up to
2**29 - 1) and encoded as tokens (each varint knows whether it is a tag, a value or a length),
then mutated where the structure is: lengths and varints replaced by boundary values, tags
given other wire types or field numbers (0, 2**29, beyond), over-long varints, nesting
repeated deep, Confluent's message indexes made hostile, truncation and bit flips. Schemas are
made hostile too: messages nested deep, message types doubling at every level, huge field
numbers, descriptors with junk in them. Derandomized; ``KAFKAWIRE_FUZZ_CASES`` sets the count.
"""

from __future__ import annotations

import base64
import random
import struct
from typing import Any

import pyarrow as pa
from google.protobuf import descriptor_pb2

from tests.support.hostile_child import (
    BOUNDARY_INTS,
    Case,
    Outcome,
    case_count,
    mutate_bytes,
    run_cases,
)

RUNNER = "tests.unit.formats.test_protobuf_fuzz:decode_case"
WARMUP = "tests.unit.formats.test_protobuf_fuzz:warm_up"
ALLOWED = ("spark_kafka_wire.protocol.errors:KafkaWireError",)

F = descriptor_pb2.FieldDescriptorProto
Token = tuple[str, Any]
#: scalar field types: (wire type, how a value is written)
SCALARS = {F.TYPE_INT32: (0, "int32"), F.TYPE_INT64: (0, "int64"), F.TYPE_UINT32: (0, "uint32"),
           F.TYPE_UINT64: (0, "uint64"), F.TYPE_SINT32: (0, "sint32"),
           F.TYPE_SINT64: (0, "sint64"), F.TYPE_BOOL: (0, "bool"), F.TYPE_ENUM: (0, "enum"),
           F.TYPE_FIXED32: (5, "<I"), F.TYPE_SFIXED32: (5, "<i"), F.TYPE_FLOAT: (5, "<f"),
           F.TYPE_FIXED64: (1, "<Q"), F.TYPE_SFIXED64: (1, "<q"), F.TYPE_DOUBLE: (1, "<d"),
           F.TYPE_STRING: (2, "string"), F.TYPE_BYTES: (2, "bytes")}


def varint(u: int) -> bytes:
    """A base-128 varint of ``u`` (negative: 64-bit two's complement; beyond 2**64 it is an
    over-long varint, hostile)."""
    if u < 0:
        u &= 2**64 - 1
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def serialize(tokens: list[Token]) -> bytes:
    return b"".join(varint(v) if role in ("tag", "varint", "len") else v for role, v in tokens)


def tag(number: int, wire: int) -> Token:
    return ("tag", (number << 3) | wire)


# ---------------------------------------------------------------------------- generation


class Gen:
    """A file of generated messages and records of them, from a seeded ``random.Random``."""

    def __init__(self, rng: random.Random, proto3: bool) -> None:
        self.rng = rng
        self.proto3 = proto3
        self.fdp = descriptor_pb2.FileDescriptorProto(
            name="fuzz.proto", package="fz", syntax="proto3" if proto3 else "proto2")
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        enum = self.fdp.enum_type.add(name="E")
        for i, number in enumerate([0, 1, 2, 7, 1000][: rng.randint(1, 5)]):
            enum.value.add(name=f"E{i}", number=number)
        self.enum_numbers = [v.number for v in enum.value]

    def numbers(self, count: int, large: bool) -> list[int]:
        """``count`` field numbers from 1..40, and with ``large`` one far beyond."""
        picked = set(self.rng.sample(range(1, 41), count))
        if large:
            picked.add(self.rng.choice([1000, 2**18, 2**29 - 1]))
        return sorted(picked)

    def scalar_field(self, msg: Any, name: str, number: int) -> None:
        rng = self.rng
        kind = rng.choice(sorted(SCALARS))
        field = msg.field.add(name=name, number=number, type=kind)
        field.label = F.LABEL_OPTIONAL
        if kind == F.TYPE_ENUM:
            field.type_name = ".fz.E"
        if not self.proto3 and rng.random() < 0.1:
            field.label = F.LABEL_REQUIRED
        elif self.proto3 and rng.random() < 0.2:
            field.proto3_optional = True
            field.oneof_index = len(msg.oneof_decl)
            msg.oneof_decl.add(name=f"_{name}")

    def flat(self, large: bool) -> str:
        msg = self.fdp.message_type.add(name="M")
        for number in self.numbers(self.rng.randint(1, 8), large):
            self.scalar_field(msg, f"f{number}", number)
        self.messages["M"] = msg
        return "fz.M"

    def nested(self, depth: int, name: str = "M") -> str:
        """A message of scalars, nested messages, repeated fields, maps, a oneof and a
        Timestamp; ``depth`` levels of messages."""
        rng = self.rng
        msg = self.fdp.message_type.add(name=name)
        self.messages[name] = msg
        for number in self.numbers(rng.randint(1, 6), False):
            pick = rng.random()
            if pick < 0.4 or depth == 0:
                self.scalar_field(msg, f"f{number}", number)
                if rng.random() < 0.3 and msg.field[-1].label == F.LABEL_OPTIONAL \
                        and not msg.field[-1].proto3_optional:
                    msg.field[-1].label = F.LABEL_REPEATED  # packed in proto3
            elif pick < 0.6:
                sub = self.nested(depth - 1, f"{name}{number}")
                msg.field.add(name=f"f{number}", number=number, type=F.TYPE_MESSAGE,
                              label=rng.choice([F.LABEL_OPTIONAL, F.LABEL_REPEATED]),
                              type_name=f".{sub}")
            elif pick < 0.75:
                entry = msg.nested_type.add(name=f"F{number}Entry")
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, type=rng.choice(
                    [F.TYPE_STRING, F.TYPE_INT64, F.TYPE_BOOL]), label=F.LABEL_OPTIONAL)
                entry.field.add(name="value", number=2, type=rng.choice(
                    [F.TYPE_STRING, F.TYPE_INT32, F.TYPE_DOUBLE]), label=F.LABEL_OPTIONAL)
                msg.field.add(name=f"f{number}", number=number, type=F.TYPE_MESSAGE,
                              label=F.LABEL_REPEATED,
                              type_name=f".fz.{name}.F{number}Entry")
            elif pick < 0.85:
                if "google/protobuf/timestamp.proto" not in self.fdp.dependency:
                    self.fdp.dependency.append("google/protobuf/timestamp.proto")
                msg.field.add(name=f"f{number}", number=number, type=F.TYPE_MESSAGE,
                              label=F.LABEL_OPTIONAL, type_name=".google.protobuf.Timestamp")
            else:
                index = len(msg.oneof_decl)
                msg.oneof_decl.add(name=f"o{number}")
                msg.field.add(name=f"f{number}", number=number, type=F.TYPE_STRING,
                              label=F.LABEL_OPTIONAL, oneof_index=index)
                msg.field.add(name=f"g{number}", number=number + 100, type=F.TYPE_INT64,
                              label=F.LABEL_OPTIONAL, oneof_index=index)
        return f"fz.{name}"

    def schema(self) -> str:
        return base64.b64encode(self.fdp.SerializeToString()).decode()

    def value(self, kind: int, out: list[Token]) -> None:
        """One scalar value's bytes (no tag)."""
        rng = self.rng
        how = SCALARS[kind][1]
        if how in ("int32", "int64", "uint32", "uint64"):
            bits = 31 if how == "int32" else 32 if how == "uint32" else 63
            low = 0 if how.startswith("u") else -(2**bits)
            top = 2 ** rng.choice([4, 20, bits])
            out.append(("varint", rng.randrange(max(low, -top), top)))
        elif how in ("sint32", "sint64"):
            n = rng.randrange(-(2**30), 2**30)
            out.append(("varint", n << 1 if n >= 0 else ((-n) << 1) - 1))
        elif how == "bool":
            out.append(("varint", rng.randint(0, 1)))
        elif how == "enum":
            out.append(("varint", rng.choice(self.enum_numbers)))
        elif how in ("string", "bytes"):
            body = "".join(rng.choice("ab\u00e9\u4e16") for _ in range(rng.randint(0, 5))
                           ).encode() if how == "string" else rng.randbytes(rng.randint(0, 5))
            out += [("len", len(body)), ("raw", body)]
        elif how in ("<f", "<d"):
            out.append(("raw", struct.pack(how, rng.uniform(-1e6, 1e6))))
        else:
            size = struct.calcsize(how)
            out.append(("raw", rng.randbytes(size)))

    def record(self, name: str, depth: int = 0) -> list[Token]:
        """A random message of ``name`` as tokens."""
        rng = self.rng
        msg = self.messages[name.rpartition(".")[2]]
        out: list[Token] = []
        for field in msg.field:
            if field.label != F.LABEL_REQUIRED and rng.random() < 0.25:
                continue
            times = rng.randint(0, 3) if field.label == F.LABEL_REPEATED else 1
            if field.type == F.TYPE_MESSAGE:
                for _ in range(times):
                    body = self._message_body(field, depth)
                    out += [tag(field.number, 2), ("len", len(serialize(body))), *body]
            elif field.label == F.LABEL_REPEATED and SCALARS[field.type][0] != 2 \
                    and (self.proto3 or rng.random() < 0.3):
                items: list[Token] = []
                for _ in range(times):
                    self.value(field.type, items)
                out += [tag(field.number, 2), ("len", len(serialize(items))), *items]
            else:
                for _ in range(times):
                    out.append(tag(field.number, SCALARS[field.type][0]))
                    self.value(field.type, out)
        return out

    def _message_body(self, field: Any, depth: int) -> list[Token]:
        rng = self.rng
        if field.type_name == ".google.protobuf.Timestamp":
            return [tag(1, 0), ("varint", rng.randrange(0, 2**33)), tag(2, 0),
                    ("varint", rng.randrange(10**9))]
        if field.type_name.endswith("Entry"):
            entry = self.messages[field.type_name.split(".")[2]].nested_type
            spec = next(e for e in entry if field.type_name.endswith(e.name))
            body: list[Token] = []
            for f in spec.field:
                body.append(tag(f.number, SCALARS[f.type][0]))
                self.value(f.type, body)
            return body
        if depth > 8:
            return []
        return self.record(field.type_name, depth + 1)


def mutate(tokens: list[Token], rng: random.Random) -> tuple[bytes, str]:
    """The record's bytes after a structure-aware mutation (sometimes a byte-level one
    after it); the label says which."""
    tokens = list(tokens)
    labels = []
    roles = sorted({role for role, _ in tokens if role in ("tag", "varint", "len")})
    if roles and rng.random() < 0.85:
        role = "len" if "len" in roles and rng.random() < 0.4 else rng.choice(roles)
        where = rng.choice([i for i, (r, _) in enumerate(tokens) if r == role])
        pick = rng.random()
        if pick < 0.15:
            tokens[where] = ("raw", rng.choice([b"\xff" * 10 + b"\x01", b"\x80" * 11,
                                                b"\xff" * 9 + b"\x7f"]))
            labels.append(f"{role} #{where} = an over-long varint")
        elif role == "tag":
            number, wire = tokens[where][1] >> 3, tokens[where][1] & 7
            if pick < 0.55:
                wire = rng.randrange(8)
                labels.append(f"tag #{where} given wire type {wire}")
            else:
                number = rng.choice([0, 2**29 - 1, 2**29, 2**32, 2**61, 19500, number + 1])
                labels.append(f"tag #{where} given field number {number}")
            tokens[where] = ("tag", (number << 3) | wire)
        else:
            value = rng.choice(BOUNDARY_INTS + (2**64 - 1, 2**64))
            tokens[where] = (role, value)
            labels.append(f"{role} #{where} = {value}")
    data = mutate_bytes(rng, serialize(tokens), labels)
    return data, ", ".join(labels) or "unchanged"


#: Confluent's message indexes after the schema id: [0] is the single byte 0
_INDEXES = (b"\x00", b"\x02\x00", b"\x02\x02", b"\x01", b"\x04\x00\x00",
            b"\xfe\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
            b"\x02\xfe\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08" + b"\x00" * 8, b"")


# ---------------------------------------------------------------------------- the child


def warm_up() -> None:
    """Every path once before the address-space limit is set (Arrow's and upb's pools)."""
    gen = Gen(random.Random(0), True)
    flat = gen.flat(False)
    nested_gen = Gen(random.Random(1), False)
    nested = nested_gen.nested(2)
    for g, name in ((gen, flat), (nested_gen, nested)):
        body = serialize(g.record(name))
        for vectorized in (True, False):
            decode_case(g.schema(), name, -1, [b"\x00" + body], [0], vectorized)


def decode_case(schema: str, message: str | None, depth: int, payloads: list[bytes | None],
                good: list[int], vectorized: bool) -> list[str]:
    """Runs in the child: the payloads (message indexes first), framed, decoded as the
    source decodes a column by a decoder of ``schema``. A schema the decoder refuses
    (ValueError, KeyError, TypeError: what the CLI catches as "schema cannot be read") is an
    answer; what is wrong with a result is returned (``test_avro_fuzz.problems``)."""
    from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder
    from spark_kafka_wire.options.registry_decoders import decode_framed_values
    from tests.unit.formats.test_avro_fuzz import problems

    try:
        decoder = ProtobufDecoder(schema, message=message, recursive_field_max_depth=depth,
                                  vectorized=vectorized)
    except (ValueError, KeyError, TypeError):
        return []
    header = b"\x00" + (3).to_bytes(4, "big")
    framed = pa.array([None if p is None else header + p for p in payloads], pa.binary())
    got = decode_framed_values(framed, decoder, lambda _id: "")
    return problems(got, len(payloads), good)


# ---------------------------------------------------------------------------- cases


def record_case(seed: int, flat: bool) -> Case:
    """A batch of a generated message: two valid records around a mutated one."""
    rng = random.Random(seed)
    gen = Gen(rng, proto3=rng.random() < 0.6)
    large = flat and rng.random() < 0.05  # a field number near 2**29 (issue 45 item 4)
    name = gen.flat(large) if flat else gen.nested(2)
    hostile, label = mutate(gen.record(name), rng)
    indexes = b"\x00"
    if rng.random() < 0.1:
        indexes = rng.choice(_INDEXES)
        label += f", message indexes {indexes.hex()}"
    payloads = [b"\x00" + serialize(gen.record(name)), indexes + hostile, None,
                b"\x00" + serialize(gen.record(name))]
    path = "vectorized" if flat else "upb"
    syntax = "proto3" if gen.proto3 else "proto2"
    if large:
        label += ", a field number near 2**29 in the schema"
    return Case(seed, f"protobuf {path} {syntax} record: {label}",
                (gen.schema(), None, -1, payloads, [0, 3], flat), hostile)


def _file(messages: list[descriptor_pb2.DescriptorProto]) -> str:
    fdp = descriptor_pb2.FileDescriptorProto(name="h.proto", package="h", syntax="proto3")
    fdp.message_type.extend(messages)
    return base64.b64encode(fdp.SerializeToString()).decode()


def _message(name: str, fields: list[tuple[str, int, int, str]]) -> descriptor_pb2.DescriptorProto:
    msg = descriptor_pb2.DescriptorProto(name=name)
    for field_name, number, kind, type_name in fields:
        f = msg.field.add(name=field_name, number=number, type=kind, label=F.LABEL_OPTIONAL)
        if type_name:
            f.type_name = type_name
    return msg


def schema_case(seed: int) -> Case:
    """A hostile schema (the registry's answer the decoder is built from), and records."""
    rng = random.Random(seed)
    kind = rng.choice(["deep", "doubling", "numbers", "recursive", "recursive", "junk"])
    records: list[bytes | None] = [b"\x00", b"\x00\x08\x01"]
    depth = -1
    if kind == "deep":
        levels = rng.choice([99, 101, 1000, 5000])
        messages = [_message(f"M{i}", [("f", 1, F.TYPE_MESSAGE, f".h.M{i + 1}"),
                                       ("v", 2, F.TYPE_INT32, "")]) for i in range(levels)]
        messages.append(_message(f"M{levels}", [("v", 2, F.TYPE_INT32, "")]))
        label = f"messages nested {levels} deep"
        body = b"\x10\x01"
        for _ in range(min(levels, 2000)):
            body = b"\x0a" + varint(len(body)) + body
        records.append(b"\x00" + body)
    elif kind == "doubling":
        levels = rng.choice([12, 20, 25])
        messages = [_message(f"M{i}", [("a", 1, F.TYPE_MESSAGE, f".h.M{i + 1}"),
                                       ("b", 2, F.TYPE_MESSAGE, f".h.M{i + 1}")])
                    for i in range(levels)]
        messages.append(_message(f"M{levels}", [("v", 1, F.TYPE_INT32, "")]))
        label = f"message types doubling {levels} levels"
    elif kind == "numbers":
        numbers = sorted(set(rng.sample([1, 2, 1000, 2**18, 2**28, 2**29 - 1, 2**29, 2**31 - 1,
                                         -1, 0, 19000], rng.randint(1, 3))))
        messages = [_message("M", [(f"f{i}", n, rng.choice([F.TYPE_INT64, F.TYPE_STRING]), "")
                                   for i, n in enumerate(numbers)])]
        label = f"field numbers {numbers}"
        records.append(b"\x00" + varint((numbers[-1] << 3) & (2**64 - 1)) + b"\x01")
    elif kind == "recursive":
        depth = rng.choice([-1, 0, 1, 3, 10, 11])
        messages = [_message("Node", [("child", 1, F.TYPE_MESSAGE, ".h.Node"),
                                      ("v", 2, F.TYPE_INT32, "")])]
        levels = rng.choice([50, 99, 100, 101, 1000, 100000])
        body = b"\x10\x01"
        for _ in range(levels):
            body = b"\x0a" + varint(len(body)) + body
        records.append(b"\x00" + body)
        label = f"a recursive message (recursive.fields.max.depth {depth}), a record " \
                f"{levels} deep"
    else:
        gen = Gen(rng, proto3=True)
        gen.nested(2)
        raw = bytearray(gen.fdp.SerializeToString())
        pick = rng.random()
        if pick < 0.5:
            for _ in range(rng.randint(1, 4)):
                raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
            label = "descriptor bytes with bits flipped"
        else:
            fdp = descriptor_pb2.FileDescriptorProto.FromString(bytes(raw))
            target = rng.choice(list(fdp.message_type))
            field = rng.choice(list(target.field)) if target.field else target.field.add(
                name="x", number=1, type=F.TYPE_INT32)
            change = rng.choice(["type_name", "type", "number", "label", "oneof", "name"])
            if change == "type_name":
                field.type = F.TYPE_MESSAGE
                field.type_name = rng.choice([".nowhere.X", "", ".fz", ".fz.M.M.M", "."])
            elif change == "type":
                field.type = F.TYPE_GROUP
            elif change == "number":
                field.number = rng.choice([0, -1, 2**29, 2**31 - 1, 19001])
            elif change == "label":
                field.label = F.LABEL_REQUIRED
            elif change == "oneof":
                field.oneof_index = rng.choice([5, -1, 2**31 - 1])
            else:
                field.name = rng.choice(["", "a b", "1x", "x" * 10000])
            raw = bytearray(fdp.SerializeToString())
            label = f"descriptor with {change} made hostile"
        schema = base64.b64encode(bytes(raw)).decode()
        return Case(seed, f"protobuf schema: {label}",
                    (schema, None, depth, records, [], rng.random() < 0.5), bytes(raw))
    schema = _file(messages)
    return Case(seed, f"protobuf schema: {label}",
                (schema, None, depth, records, [], rng.random() < 0.5),
                base64.b64decode(schema))


def _check(outcome: Outcome, what: str) -> None:
    rate = outcome.ran / outcome.seconds if outcome.seconds else 0.0
    print(f"{what}: {outcome.ran} cases in {outcome.seconds:.1f} s ({rate:.0f}/s), "
          f"{len(outcome.failures)} failed")
    assert not outcome.failures, f"{what}:\n{outcome.report()}"


# ---------------------------------------------------------------------------- tests


def test_the_generated_records_are_valid_protobuf() -> None:
    """The generator's unmutated records are what the protobuf runtime parses (else the
    mutations would not be where the structure is)."""
    from google.protobuf import descriptor_pool, message_factory

    for seed in range(40):
        rng = random.Random(seed)
        gen = Gen(rng, proto3=seed % 2 == 0)
        name = gen.flat(False) if seed % 3 else gen.nested(2)
        pool = descriptor_pool.DescriptorPool()
        if gen.fdp.dependency:
            from google.protobuf import timestamp_pb2

            ts = descriptor_pb2.FileDescriptorProto()
            timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
            pool.Add(ts)
        pool.Add(gen.fdp)
        cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
        data = serialize(gen.record(name))
        assert cls.FromString(data).SerializeToString() is not None, seed


def test_hostile_flat_records_fail_alone_on_the_vectorized_path() -> None:
    cases = [record_case(4_000_000 + i, flat=True) for i in range(case_count(150))]
    _check(run_cases(RUNNER, cases, allowed=ALLOWED, warmup=WARMUP), "protobuf vectorized")


def test_hostile_nested_records_fail_alone_through_upb() -> None:
    cases = [record_case(5_000_000 + i, flat=False) for i in range(case_count(150))]
    _check(run_cases(RUNNER, cases, allowed=ALLOWED, warmup=WARMUP), "protobuf upb")


def test_hostile_schemas_are_refused_or_fail_their_records() -> None:
    cases = [schema_case(6_000_000 + i) for i in range(case_count(60))]
    _check(run_cases(RUNNER, cases, allowed=ALLOWED, warmup=WARMUP), "protobuf schemas")
