"""The Avro decoders fed structure-aware hostile records and schemas (issue 45's fuzz tier).

A record is data and a registry answer is data: whatever the bytes of a record or the text of
a writer schema, ``AvroDecoder`` (fastavro per record, and avro_vector's numpy path for flat
records) must answer with a column in which the bad records are failed (PERMISSIVE's null,
FAILFAST's error naming the record) and the good ones of the same batch decoded; it may not
crash, hang, raise anything but a typed error, or take more than a small multiple of the
input's memory. Every case runs in one child process under an address-space limit
(tests/support/hostile_child.py), so a segfault or a runaway allocation fails the test, not
the run.

Records are built from generated schemas as tokens (each varint knows whether it is a count,
a block size, a length, a union branch, an enum index or a number), then mutated where the
structure is: counts and lengths replaced by boundary values (negative block counts with a
byte size, as the specification allows), over-long varints, truncation, bit flips. Schemas
are mutated too: nested deep, named types doubling at every level, fixed sizes near 2**63,
nodes replaced by junk. Cases are derandomized (a seeded ``random.Random`` per case, the seed
shown on failure); ``KAFKAWIRE_FUZZ_CASES`` sets how many a test generates.
"""

from __future__ import annotations

import io
import json
import random
import struct
import uuid
from typing import Any

import fastavro
import pyarrow as pa

from tests.support.hostile_child import (
    BOUNDARY_INTS,
    Case,
    Outcome,
    case_count,
    mutate_bytes,
    run_cases,
)

RUNNER = "tests.unit.formats.test_avro_fuzz:decode_case"
WARMUP = "tests.unit.formats.test_avro_fuzz:warm_up"
#: the typed errors a decode may raise (a bad record is failed in the result, not raised)
ALLOWED = ("spark_kafka_wire.protocol.errors:KafkaWireError",)
#: a schema id the hostile writer schema is registered under
WRITER_ID = 7

Token = tuple[str, Any]
#: the roles of a token that is a zigzag varint (the rest are raw bytes)
VARINTS = ("int", "long", "count", "blocksize", "len", "branch", "enum")
PRIMITIVES = ("boolean", "int", "long", "float", "double", "bytes", "string")


def zigzag(n: int) -> bytes:
    """Avro's zigzag varint of any int (beyond int64 it is an over-long varint: hostile)."""
    u = n << 1 if n >= 0 else ((-n) << 1) - 1
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def serialize(tokens: list[Token]) -> bytes:
    return b"".join(zigzag(v) if role in VARINTS else v for role, v in tokens)


# ---------------------------------------------------------------------------- generation


class Gen:
    """Schemas and records of one case, from its seeded ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.names: dict[str, Any] = {}
        self.count = 0

    def name(self) -> str:
        self.count += 1
        return f"N{self.count}"

    def leaf(self) -> Any:
        """A type the vectorized path reads: a primitive, enum, fixed, logical, nullable."""
        rng = self.rng
        pick = rng.random()
        if pick < 0.55:
            t: Any = rng.choice(PRIMITIVES)
        elif pick < 0.65:
            t = {"type": "enum", "name": self.name(),
                 "symbols": [f"S{i}" for i in range(rng.randint(1, 5))]}
        elif pick < 0.72:
            t = {"type": "fixed", "name": self.name(), "size": rng.randint(0, 9)}
        else:
            t = rng.choice([
                {"type": "int", "logicalType": "date"},
                {"type": "long", "logicalType": "timestamp-millis"},
                {"type": "long", "logicalType": "timestamp-micros"},
                {"type": "long", "logicalType": "local-timestamp-micros"},
                {"type": "string", "logicalType": "uuid"},
            ])
        if isinstance(t, dict) and "name" in t:
            self.names[t["name"]] = t
        if rng.random() < 0.3:
            return ["null", t] if rng.random() < 0.5 else [t, "null"]
        return t

    def flat(self) -> dict[str, Any]:
        return {"type": "record", "name": "R", "fields": [
            {"name": f"f{i}", "type": self.leaf()} for i in range(self.rng.randint(1, 6))]}

    def any_type(self, depth: int) -> Any:
        """Any type: nested records, arrays, maps, unions, enums, fixed, decimals, and named
        types used again by name."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.35:
            if self.names and rng.random() < 0.1:
                return rng.choice(sorted(self.names))
            if rng.random() < 0.1:
                precision = rng.randint(1, 38)
                return {"type": "bytes", "logicalType": "decimal", "precision": precision,
                        "scale": rng.randint(0, precision)}
            return "null" if rng.random() < 0.05 else self.leaf()
        pick = rng.randrange(5)
        if pick == 0:
            return {"type": "array", "items": self.any_type(depth - 1)}
        if pick == 1:
            return {"type": "map", "values": self.any_type(depth - 1)}
        if pick == 2:
            record = {"type": "record", "name": self.name(), "fields": [
                {"name": f"g{i}", "type": self.any_type(depth - 1)}
                for i in range(rng.randint(0, 3))]}
            self.names[record["name"]] = record
            return record
        if pick == 3:
            inner = {"type": "record", "name": self.name(), "fields": [
                {"name": "x", "type": self.any_type(depth - 1)}]}
            self.names[inner["name"]] = inner
            return ["null", "int", "string", inner]
        inner = self.any_type(depth - 1)
        # a union holds no union, nor null twice (the specification)
        nullable = inner if isinstance(inner, list) or inner == "null" else ["null", inner]
        return nullable if rng.random() < 0.5 else {"type": "array", "items": nullable}

    def nested(self) -> dict[str, Any]:
        return {"type": "record", "name": "R", "fields": [
            {"name": f"f{i}", "type": self.any_type(3)} for i in range(self.rng.randint(1, 5))]}

    def emit(self, t: Any, out: list[Token]) -> None:
        """A random value of type ``t`` as tokens."""
        rng = self.rng
        if isinstance(t, str):
            if t in self.names:
                return self.emit(self.names[t], out)
            return self.emit({"type": t}, out)
        if isinstance(t, list):
            branch = rng.randrange(len(t))
            out.append(("branch", branch))
            return self.emit(t[branch], out)
        kind, logical = t["type"], t.get("logicalType")
        if kind == "null":
            return None
        if kind == "boolean":
            out.append(("bool", bytes([rng.randint(0, 1)])))
        elif kind in ("int", "long"):
            bits = 20 if logical else (31 if kind == "int" else 63)
            top = 2 ** rng.choice([4, 12, bits])
            out.append((kind, rng.randrange(-top, top)))
        elif kind == "float":
            out.append(("float", struct.pack("<f", rng.uniform(-1e6, 1e6))))
        elif kind == "double":
            out.append(("double", struct.pack("<d", rng.uniform(-1e12, 1e12))))
        elif kind in ("bytes", "string"):
            if logical == "decimal":
                limit = 10 ** t["precision"]
                unscaled = rng.randrange(-limit + 1, limit)
                body = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big",
                                         signed=True)
            elif logical == "uuid":
                body = str(uuid.UUID(int=rng.getrandbits(128))).encode()
            elif kind == "string":
                body = "".join(rng.choice("ab\u00e9\u4e16z") for _ in range(
                    rng.randint(0, 6))).encode()
            else:
                body = rng.randbytes(rng.randint(0, 6))
            out += [("len", len(body)), ("bytes", body)]
        elif kind == "enum":
            out.append(("enum", rng.randrange(len(t["symbols"]))))
        elif kind == "fixed":
            out.append(("fixed", rng.randbytes(t["size"])))
        elif kind == "record":
            for f in t["fields"]:
                self.emit(f["type"], out)
        elif kind in ("array", "map"):
            items: list[Token] = []
            n = rng.choice([0, 1, 2, 3])
            for _ in range(n):
                if kind == "map":
                    key = f"k{rng.randrange(100)}".encode()
                    items += [("len", len(key)), ("bytes", key)]
                self.emit(t["items"] if kind == "array" else t["values"], items)
            if n and rng.random() < 0.4:  # a negative count: the block's byte size follows
                out += [("count", -n), ("blocksize", len(serialize(items)))]
            elif n:
                out.append(("count", n))
            out += items
            out.append(("count", 0))
        else:
            raise AssertionError(kind)
        return None

    def record(self, schema: Any) -> list[Token]:
        tokens: list[Token] = []
        self.emit(schema, tokens)
        return tokens


def mutate(tokens: list[Token], rng: random.Random) -> tuple[bytes, str]:
    """The record's bytes after one structure-aware mutation (and sometimes a byte-level
    one after it); the label says which."""
    tokens = list(tokens)
    labels = []
    roles = sorted({role for role, _ in tokens if role in VARINTS})
    if roles and rng.random() < 0.8:
        # counts first: the issue's class, and the most dangerous
        role = "count" if "count" in roles and rng.random() < 0.5 else rng.choice(roles)
        where = rng.choice([i for i, (r, _) in enumerate(tokens) if r == role])
        if rng.random() < 0.15:
            tokens[where] = ("raw", rng.choice([b"\xff" * 10 + b"\x01", b"\x80" * 11,
                                                b"\xff" * 9 + b"\x7f"]))
            labels.append(f"{role} #{where} = an over-long varint")
        else:
            value = rng.choice(BOUNDARY_INTS)
            tokens[where] = (role, value)
            labels.append(f"{role} #{where} = {value}")
            if role == "count" and value < 0:
                size = rng.choice([0, 1, 2**31 - 1, 2**63 - 1, -1])
                tokens.insert(where + 1, ("blocksize", size))
                labels.append(f"block size {size}")
    data = mutate_bytes(rng, serialize(tokens), labels)
    return data, ", ".join(labels) or "unchanged"


# ---------------------------------------------------------------------------- the child


def warm_up() -> None:
    """Run every path once before the address-space limit is set (Arrow's pools)."""
    schema = json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "long"}, {"name": "b", "type": {"type": "array",
                                                              "items": "string"}}]})
    decode_case(schema, schema, [b"\x02\x02\x02a\x00"], [0], -1, True)
    decode_case(schema, schema, [b"\x02\x02\x02a\x00"], [0], -1, False)


def decode_case(reader: str, writer: str, payloads: list[bytes | None], good: list[int],
                depth: int, vectorized: bool) -> list[str]:
    """Runs in the child: the payloads, framed with ``writer``'s id, decoded by a decoder of
    ``reader`` as the source decodes a column. Returns what is wrong with the result: a
    record of the batch that is valid (``good``) and failed, a failure whose reason is a
    MemoryError or RecursionError a decoder caught (a runaway it should have bounded), a
    column of the wrong length. A reader schema the decoder refuses (ValueError, KeyError,
    TypeError: what the CLI catches as "schema cannot be read") is an answer too."""
    from spark_kafka_wire.formats.avro_codec import AvroDecoder
    from spark_kafka_wire.options.registry_decoders import decode_framed_values

    try:
        decoder = AvroDecoder(reader, recursive_field_max_depth=depth, vectorized=vectorized)
    except (ValueError, KeyError, TypeError):
        return []
    header = b"\x00" + WRITER_ID.to_bytes(4, "big")
    framed = pa.array([None if p is None else header + p for p in payloads], pa.binary())
    got = decode_framed_values(framed, decoder, lambda _id: writer)
    return problems(got, len(payloads), good)


def problems(got: Any, n: int, good: list[int]) -> list[str]:
    """What is wrong with a ``Decoded`` of ``n`` records of which ``good`` are valid."""
    found = []
    if len(got.array) != n or len(got.failed) != n:
        found.append(f"{len(got.array)} values for {n} records")
    for i in good:
        if got.failed[i]:
            found.append(f"valid record {i} failed with the hostile one: {got.errors.get(i)}")
    for i, why in got.errors.items():
        if "MemoryError" in why or "RecursionError" in why:
            found.append(f"record {i}: a runaway caught and reported as a bad record: "
                         f"{why[:200]}")
    return found


# ---------------------------------------------------------------------------- cases


def record_case(seed: int, flat: bool) -> Case:
    """A batch of a generated schema: two valid records around a mutated one."""
    rng = random.Random(seed)
    gen = Gen(rng)
    schema = gen.flat() if flat else gen.nested()
    reader = schema
    if not flat and len(schema["fields"]) > 1 and rng.random() < 0.3:
        # the reader lacks a field: fastavro skips the writer's values of it
        drop = rng.randrange(len(schema["fields"]))
        reader = {**schema, "fields": [f for i, f in enumerate(schema["fields"]) if i != drop]}
    hostile, label = mutate(gen.record(schema), rng)
    payloads = [serialize(gen.record(schema)), hostile, None, serialize(gen.record(schema))]
    path = "vectorized" if flat else "fastavro"
    return Case(seed, f"avro {path} record: {label}",
                (json.dumps(_defined(reader, schema)), json.dumps(schema), payloads, [0, 3],
                 -1, flat), hostile)


def _defined(reader: dict[str, Any], writer: dict[str, Any]) -> dict[str, Any]:
    """``reader`` with each named type it uses by name but no longer defines (the field
    that defined it was dropped) defined again where it is first used."""
    defined: dict[str, Any] = {}

    def collect(t: Any) -> None:
        if isinstance(t, list):
            for b in t:
                collect(b)
        elif isinstance(t, dict):
            if "name" in t and t["type"] in ("record", "enum", "fixed"):
                defined.setdefault(t["name"], t)
            for f in t.get("fields", []):
                collect(f["type"])
            for key in ("items", "values"):
                if key in t:
                    collect(t[key])

    collect(writer)
    seen: set[str] = set()

    def fix(t: Any) -> Any:
        if isinstance(t, list):
            return [fix(b) for b in t]
        if isinstance(t, str):
            if t in defined and t not in seen:
                return fix(defined[t])
            return t
        out = dict(t)
        if "name" in t and t["type"] in ("record", "enum", "fixed"):
            if t["name"] in seen:
                return t["name"]
            seen.add(t["name"])
        if "fields" in t:
            out["fields"] = [{**f, "type": fix(f["type"])} for f in t["fields"]]
        for key in ("items", "values"):
            if key in t:
                out[key] = fix(t[key])
        return out

    return fix(reader)


def _nest(kind: str, depth: int) -> tuple[str, list[Token]]:
    """The JSON text of a type nested ``depth`` deep by ``kind`` around an int, and a record
    of it (built as text: ``json.dumps`` itself stops near 1,000 levels)."""
    if kind == "array":
        opening, closing = ['{"type":"array","items":'] * depth, ["}"] * depth
        before, after = [("count", 1)] * depth, [("count", 0)] * depth
    elif kind == "map":
        opening, closing = ['{"type":"map","values":'] * depth, ["}"] * depth
        before = [("count", 1), ("len", 1), ("bytes", b"k")] * depth
        after = [("count", 0)] * depth
    elif kind == "record":
        opening = [f'{{"type":"record","name":"D{i}","fields":[{{"name":"x","type":'
                   for i in range(depth)]
        closing, before, after = ["}]}"] * depth, [], []
    else:  # a union holding a record holding a union ...
        opening = [f'["null",{{"type":"record","name":"U{i}","fields":[{{"name":"x","type":'
                   for i in range(depth)]
        closing, before, after = ["}]}]"] * depth, [("branch", 1)] * depth, []
    return "".join(opening) + '"int"' + "".join(closing), [*before, ("int", 1), *after]


def schema_case(seed: int) -> Case:
    """A hostile schema: as the writer schema a record's id names (the reader lacks the
    hostile field, so fastavro must skip it), or as the reader schema itself."""
    rng = random.Random(seed)
    kind = rng.choice(["deep", "deep", "doubling", "fixed", "junk", "recursive", "text"])
    base = [{"name": "a", "type": "int"}]
    reader: Any = {"type": "record", "name": "R", "fields": base}
    records = [[("int", 5)]]
    depth = -1
    if kind == "deep":
        how = rng.choice(["array", "map", "record", "union"])
        levels = rng.choice([99, 101, 1000, 3000, 30000])
        text, tokens = _nest(how, levels)
        t = _Text(text)
        label = f"{how} nested {levels} deep"
        records.append([("int", 5), *tokens])
    elif kind == "doubling":
        levels = rng.choice([12, 20, 25])
        leaf = rng.choice(["null", "int", {"type": "record", "name": "E", "fields": []}])
        t = _doubling(levels, leaf)
        label = f"named types doubling {levels} levels over {json.dumps(leaf)}"
        records.append([("int", 5), ("int", 1)])
    elif kind == "fixed":
        size = rng.choice([2**31 - 1, 2**31, 2**62, 2**63 - 1, 2**64, -1, 10**30])
        t = {"type": "fixed", "name": "F", "size": size}
        label = f"fixed of size {size}"
        records.append([("int", 5), ("fixed", b"abcdef")])
    elif kind == "recursive":
        # a small schema, a deep record: a linked list nested ``levels`` deep
        levels = rng.choice([50, 1000, 10000, 100000])
        t = ["null", {"type": "record", "name": "Node", "fields": [
            {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]}]
        tokens = [("branch", 1)] + [("int", 1), ("branch", 1)] * levels + [("int", 1),
                                                                         ("branch", 0)]
        records.append([("int", 5), *tokens])
        label = f"a linked list {levels} deep"
        if rng.random() < 0.5:  # the reader reads the recursion (recursiveFieldMaxDepth)
            reader = {"type": "record", "name": "R", "fields": [*base, {"name": "h",
                                                                       "type": t}]}
            depth = 3
            label += ", read with recursiveFieldMaxDepth 3"
    elif kind == "junk":
        gen = Gen(rng)
        t = gen.any_type(3)
        records.append([("int", 5), *gen.record(t)])
        t, where = _junk(t, rng)
        label = f"a schema node replaced by junk: {where}"
    else:
        levels = rng.choice([1000, 100000])
        text = rng.choice(["[" * levels, '{"type":' * levels, "[" * levels + "]" * levels])
        label = f"schema text nested {levels} deep"
        payloads = [serialize(r) for r in records] + [b"\x0a\x02"]
        as_reader = rng.random() < 0.5
        return Case(seed, f"avro schema: {label}{' (reader)' if as_reader else ' (writer)'}",
                    (text if as_reader else json.dumps(reader), text, payloads, [], depth,
                     True), text.encode()[:200])
    hostile = t if isinstance(t, _Text) else json.dumps(t)
    text = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"},' \
        f'{{"name":"h","type":{hostile}}}]}}'
    as_reader = rng.random() < 0.3 and kind != "recursive"
    payloads = [serialize(r) for r in records]
    return Case(seed, f"avro schema: {label}{' (reader)' if as_reader else ' (writer)'}",
                (text if as_reader else json.dumps(reader), text, payloads, [], depth,
                 rng.random() < 0.5), text.encode())


class _Text(str):
    """A type given as JSON text already (too deep for ``json.dumps``)."""


def _doubling(levels: int, leaf: Any) -> Any:
    """A1 {x: A2, y: A2}, A2 {x: A3, y: A3}, ...: a schema of ``levels`` small named types
    whose expansion has 2**levels leaves."""
    t: Any = {"type": "record", "name": f"A{levels}", "fields": [
        {"name": "x", "type": leaf}, {"name": "y", "type": leaf if isinstance(leaf, str)
                                      else leaf["name"]}]}
    for level in range(levels - 1, 0, -1):
        t = {"type": "record", "name": f"A{level}", "fields": [
            {"name": "x", "type": t}, {"name": "y", "type": f"A{level + 1}"}]}
    return t


#: values a schema node is replaced by
_JUNK: tuple[Any, ...] = (None, True, 0, -1, 2**63, 1e308, "", "nosuchtype", [], {}, [[]],
                          {"type": None}, {"type": "record"}, {"type": "enum", "name": "E"},
                          {"type": "fixed", "name": "F"}, {"type": "array"},
                          {"type": "record", "name": "R", "fields": "abc"},
                          {"type": "record", "name": "R", "fields": [1]},
                          {"type": "enum", "name": "E", "symbols": 5},
                          {"type": "bytes", "logicalType": "decimal", "precision": 10**6},
                          {"type": "bytes", "logicalType": "decimal", "precision": 5,
                           "scale": -3},
                          {"type": "fixed", "name": "F", "size": "8"},
                          {"type": "fixed", "name": "F", "size": 1.5})


def _junk(t: Any, rng: random.Random) -> tuple[Any, str]:
    """``t`` with one node (a type, a field's entry, a list) replaced by junk."""
    spots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for i, b in enumerate(node):
                spots.append((node, i))
                walk(b)
        elif isinstance(node, dict):
            for key in list(node):
                spots.append((node, key))
                value = node[key]
                if key == "fields" and isinstance(value, list):
                    for i, f in enumerate(value):
                        spots.append((value, i))
                        walk(f.get("type"))
                elif key in ("items", "values"):
                    walk(value)

    holder = {"root": t}
    walk(holder)
    parent, key = rng.choice(spots)
    junk = rng.choice(_JUNK)
    parent[key] = junk
    return holder["root"], f"[{key!r}] = {json.dumps(junk)[:60]}"


def _check(outcome: Outcome, what: str) -> None:
    rate = outcome.ran / outcome.seconds if outcome.seconds else 0.0
    print(f"{what}: {outcome.ran} cases in {outcome.seconds:.1f} s ({rate:.0f}/s), "
          f"{len(outcome.failures)} failed")
    assert not outcome.failures, f"{what}:\n{outcome.report()}"


# ---------------------------------------------------------------------------- tests


def test_the_generated_records_are_valid_avro() -> None:
    """The generator's unmutated records are what fastavro reads to their end (else the
    mutations would not be where the structure is)."""
    for seed in range(60):
        rng = random.Random(seed)
        gen = Gen(rng)
        schema = gen.flat() if seed % 2 else gen.nested()
        data = serialize(gen.record(schema))
        buffer = io.BytesIO(data)
        # without the logical types, as the decoder gives them to fastavro
        plain = json.loads(json.dumps(schema).replace('"logicalType"', '"_logical"'))
        fastavro.schemaless_reader(buffer, fastavro.parse_schema(plain))
        assert buffer.tell() == len(data), (seed, schema)


def test_hostile_flat_records_fail_alone_on_the_vectorized_path() -> None:
    cases = [record_case(1_000_000 + i, flat=True) for i in range(case_count(150))]
    _check(run_cases(RUNNER, cases, allowed=ALLOWED, warmup=WARMUP), "avro vectorized")


def test_hostile_nested_records_fail_alone_through_fastavro() -> None:
    cases = [record_case(2_000_000 + i, flat=False) for i in range(case_count(150))]
    _check(run_cases(RUNNER, cases, allowed=ALLOWED, warmup=WARMUP), "avro fastavro")


def test_hostile_writer_and_reader_schemas_are_refused_or_fail_their_records() -> None:
    cases = [schema_case(3_000_000 + i) for i in range(case_count(60))]
    _check(run_cases(RUNNER, cases, allowed=ALLOWED, warmup=WARMUP), "avro schemas")
