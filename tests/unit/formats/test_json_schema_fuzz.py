"""The JSON Schema decoder fed structure-aware hostile records and schemas (issue 45's fuzz
tier).

Whatever a record's text or the registry's schema, ``JsonSchemaDecoder`` (Arrow's JSON reader
for batches of natively typed structs, ``json.loads`` and the conversion walk for the rest)
must answer with a column in which the bad records are failed and the good ones decoded: no
crash, hang, untyped error or runaway memory. Cases run in one child under an address-space
limit (tests/support/hostile_child.py).

Records are JSON documents generated from generated schemas (objects, arrays, maps, dates,
timestamps, base64, nullable unions, ``$ref``), then mutated in the tree (wrong types, numbers
at and beyond the int64 edges, 1e400, NaN and Infinity, nesting repeated deep, lone
surrogates) or in the text (truncation, invalid UTF-8, bit flips, several documents, newlines).
Schemas are made hostile too: properties nested deep, ``$ref`` chains doubling or running long,
nodes replaced by junk. Derandomized; ``KAFKAWIRE_FUZZ_CASES`` sets the count.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa

from tests.support.hostile_child import Case, Outcome, case_count, run_cases

RUNNER = "tests.unit.formats.test_json_schema_fuzz:decode_case"
WARMUP = "tests.unit.formats.test_json_schema_fuzz:warm_up"
ALLOWED = ("spark_kafka_wire.protocol.errors:KafkaWireError",)


# ---------------------------------------------------------------------------- generation


def gen_schema(rng: random.Random, depth: int, native: bool, defs: dict[str, Any]) -> Any:
    """A schema node; ``native``: only what Arrow's JSON reader converts itself."""
    scalars: list[Any] = [{"type": "string"}, {"type": "integer"}, {"type": "number"},
                          {"type": "boolean"}]
    if not native:
        scalars += [{"type": "string", "format": "date"},
                    {"type": "string", "format": "date-time"},
                    {"type": "string", "contentEncoding": "base64"}, {"type": ["integer", "null"]},
                    {"oneOf": [{"type": "null"}, {"type": "number"}]}]
    if depth <= 0 or rng.random() < 0.4:
        return dict(rng.choice(scalars))
    pick = rng.random()
    if pick < 0.4:
        return {"type": "object", "properties": {
            f"p{i}": gen_schema(rng, depth - 1, native, defs) for i in range(rng.randint(1, 4))}}
    if pick < 0.7:
        return {"type": "array", "items": gen_schema(rng, depth - 1, native, defs)}
    if native:
        return dict(rng.choice(scalars))
    if pick < 0.85:
        return {"type": "object", "additionalProperties": gen_schema(rng, depth - 1, native, defs)}
    name = f"d{len(defs)}"
    defs[name] = {}  # the name taken before the definition's own references take theirs
    defs[name] = gen_schema(rng, depth - 1, native, defs)
    return {"$ref": f"#/definitions/{name}"}


def gen_value(node: Any, rng: random.Random, defs: dict[str, Any]) -> Any:
    if "$ref" in node:
        return gen_value(defs[node["$ref"].rpartition("/")[2]], rng, defs)
    if "oneOf" in node:
        return None if rng.random() < 0.3 else rng.uniform(-1e9, 1e9)
    kind = node.get("type")
    if isinstance(kind, list):
        return None if rng.random() < 0.3 else rng.randrange(-(2**40), 2**40)
    if kind == "object" and "properties" in node:
        return {k: gen_value(v, rng, defs) for k, v in node["properties"].items()
                if rng.random() < 0.85}
    if kind == "object":
        return {f"k{i}": gen_value(node["additionalProperties"], rng, defs)
                for i in range(rng.randint(0, 3))}
    if kind == "array":
        return [gen_value(node["items"], rng, defs) for _ in range(rng.randint(0, 3))]
    if kind == "integer":
        return rng.randrange(-(2**62), 2**62)
    if kind == "number":
        return rng.uniform(-1e12, 1e12)
    if kind == "boolean":
        return rng.random() < 0.5
    if node.get("format") == "date":
        return f"20{rng.randint(10, 29)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"
    if node.get("format") == "date-time":
        return f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T12:00:00Z"
    if node.get("contentEncoding") == "base64":
        return rng.choice(["", "YWJj", "AAEC/w=="])
    return "".join(rng.choice("ab\u00e9\u4e16\n\"\\") for _ in range(rng.randint(0, 6)))


#: values a node of a record is replaced by
_HOSTILE_VALUES: tuple[Any, ...] = (None, True, 0, -1, 2**63 - 1, 2**63, -(2**63) - 1, 10**400,
                                    1.5, "", "x", [], {}, [[[]]], {"a": {}})
#: JSON text a node is replaced by (no Python value prints as these)
_HOSTILE_TEXT = ("1e400", "-1e400", "NaN", "Infinity", "-Infinity", '"\\ud800"',
                 '"\\udfff\\ud800"', '"\\u0000"', "1" * 5000, "[" * 100000 + "]" * 100000,
                 '{"a":' * 100000 + "1" + "}" * 100000, "[" * 1000 + "]" * 1000,
                 '"' + "a" * 100000 + '"', "0.0000000000000000000000000001e-400")


def mutate(value: Any, rng: random.Random) -> tuple[bytes, str]:
    """The record's text after a mutation in the tree or the text; the label says which."""
    spots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k in node:
                spots.append((node, k))
                walk(node[k])
        elif isinstance(node, list):
            for i in range(len(node)):
                spots.append((node, i))
                walk(node[i])

    holder = {"root": value}
    walk(holder)
    label = "unchanged"
    marker = "\u2603MARK\u2603"
    text_for_marker = None
    if rng.random() < 0.75:
        parent, key = rng.choice(spots)
        if rng.random() < 0.5:
            parent[key] = rng.choice(_HOSTILE_VALUES)
            label = f"[{key!r}] = {json.dumps(parent[key])[:40]}"
        else:
            text_for_marker = rng.choice(_HOSTILE_TEXT)
            parent[key] = marker
            label = f"[{key!r}] = text {text_for_marker[:40]}"
    text = json.dumps(holder["root"], ensure_ascii=rng.random() < 0.5)
    if text_for_marker is not None:
        text = text.replace(json.dumps(marker), text_for_marker)
    data = text.encode("utf-8", "surrogatepass")
    pick = rng.random()
    if pick < 0.12 and data:
        cut = rng.randrange(len(data))
        data, label = data[:cut], label + f", truncated to {cut}"
    elif pick < 0.24 and data:
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        data, label = bytes(flipped), label + ", bits flipped"
    elif pick < 0.3:
        extra = rng.choice([b"\xff\xfe", b"\xef\xbb\xbf", b"\n{}", b"{}", b"\r\n", b"\x00",
                            b"\xed\xa0\x80"])
        data, label = (extra + data if rng.random() < 0.5 else data + extra), \
            label + f", with {extra.hex()}"
    return data, label


# ---------------------------------------------------------------------------- the child


def warm_up() -> None:
    """Both paths once before the address-space limit is set (Arrow's JSON reader's pool)."""
    native = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    other = json.dumps({"type": "object", "properties": {
        "a": {"type": "string", "format": "date"}}})
    decode_case(native, {}, [b'{"a": 1}'], [0])
    decode_case(other, {}, [b'{"a": "2024-01-01"}'], [0])


def decode_case(schema: str, references: dict[str, str], payloads: list[bytes | None],
                good: list[int]) -> list[str]:
    """Runs in the child: the payloads, framed, decoded as the source decodes a column by a
    decoder of ``schema``. A schema the decoder refuses (ValueError, KeyError, TypeError: what
    the CLI catches as "schema cannot be read") is an answer; what is wrong with a result is
    returned (``test_avro_fuzz.problems``)."""
    from spark_kafka_wire.formats.json_schema import JsonSchemaDecoder
    from spark_kafka_wire.options.registry_decoders import decode_framed_values
    from tests.unit.formats.test_avro_fuzz import problems

    try:
        decoder = JsonSchemaDecoder(schema, references)
    except (ValueError, KeyError, TypeError):
        return []
    header = b"\x00" + (9).to_bytes(4, "big")
    framed = pa.array([None if p is None else header + p for p in payloads], pa.binary())
    got = decode_framed_values(framed, decoder, lambda _id: schema)
    return problems(got, len(payloads), good)


# ---------------------------------------------------------------------------- cases


def record_case(seed: int, native: bool) -> Case:
    """A batch of a generated schema: two valid records around a mutated one."""
    rng = random.Random(seed)
    defs: dict[str, Any] = {}
    schema = {"type": "object", "properties": {
        f"f{i}": gen_schema(rng, 3, native, defs) for i in range(rng.randint(1, 5))}}
    if defs:
        schema["definitions"] = defs
    hostile, label = mutate(gen_value(schema, rng, defs), rng)
    payloads = [json.dumps(gen_value(schema, rng, defs)).encode(), hostile, None,
                json.dumps(gen_value(schema, rng, defs)).encode()]
    path = "arrow" if native else "json.loads"
    return Case(seed, f"json-schema {path} record: {label}",
                (json.dumps(schema), {}, payloads, [0, 3]), hostile)


def schema_case(seed: int) -> Case:
    """A hostile JSON Schema (the registry's answer the decoder is built from), and records."""
    rng = random.Random(seed)
    kind = rng.choice(["deep", "doubling", "chain", "junk", "junk", "text"])
    references: dict[str, str] = {}
    if kind == "deep":
        levels = rng.choice([99, 101, 1000, 3000, 100000])
        how = rng.choice(["properties", "items", "additionalProperties"])
        if how == "properties":
            text = '{"type":"object","properties":{"a":' * levels + '{"type":"integer"}' \
                + "}}" * levels
        elif how == "items":
            text = '{"type":"array","items":' * levels + '{"type":"integer"}' + "}" * levels
        else:
            text = '{"type":"object","additionalProperties":' * levels + \
                '{"type":"integer"}' + "}" * levels
        label = f"{how} nested {levels} deep"
    elif kind == "doubling":
        levels = rng.choice([12, 20, 25])
        defs = {f"d{i}": {"type": "object", "properties": {
            "a": {"$ref": f"#/definitions/d{i + 1}"}, "b": {"$ref": f"#/definitions/d{i + 1}"}}}
            for i in range(levels)}
        defs[f"d{levels}"] = {"type": "integer"}
        text = json.dumps({"$ref": "#/definitions/d0", "definitions": defs})
        label = f"$ref doubling {levels} levels"
    elif kind == "chain":
        levels = rng.choice([500, 5000])
        defs = {f"d{i}": {"$ref": f"#/definitions/d{i + 1}"} for i in range(levels)}
        defs[f"d{levels}"] = {"type": "integer"}
        text = json.dumps({"type": "object", "properties": {"a": {"$ref": "#/definitions/d0"}},
                           "definitions": defs})
        label = f"a $ref chain {levels} long"
    elif kind == "junk":
        defs = {}
        schema = {"type": "object", "properties": {
            f"f{i}": gen_schema(rng, 3, False, defs) for i in range(3)}, "definitions": defs}
        spots: list[tuple[Any, Any]] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for k in node:
                    spots.append((node, k))
                    walk(node[k])

        walk(schema)
        parent, key = rng.choice(spots)
        junk = rng.choice([None, 5, "x", [], [1], {}, {"$ref": 5}, {"$ref": "#/definitions/zz"},
                           {"$ref": "#/definitions/0/999999999"}, {"$ref": "other.json#/a"},
                           {"enum": 5}, {"type": "object", "properties": []},
                           {"type": "object", "properties": "abc"}, {"items": 5},
                           {"oneOf": "string"}, {"allOf": []}, {"anyOf": [5, 6]},
                           {"type": "object", "additionalProperties": [1]}, {"$ref": "#"},
                           {"$ref": "#/properties/f0/items/~2"}, {"type": 5}])
        parent[key] = junk
        text = json.dumps(schema)
        label = f"[{key!r}] = {json.dumps(junk)}"
    else:
        text = rng.choice(["[" * 100000, '{"a":' * 100000, "1e400", "NaN", '"\\ud800"', ""])
        label = f"schema text {text[:20]!r}"
    payloads: list[bytes | None] = [b'{"a": 1, "b": {"a": 2}}', b"[1, [2]]", b"{}"]
    return Case(seed, f"json-schema schema: {label}", (text, references, payloads, []),
                text.encode("utf-8", "surrogatepass"))


def _check(outcome: Outcome, what: str) -> None:
    rate = outcome.ran / outcome.seconds if outcome.seconds else 0.0
    print(f"{what}: {outcome.ran} cases in {outcome.seconds:.1f} s ({rate:.0f}/s), "
          f"{len(outcome.failures)} failed")
    assert not outcome.failures, f"{what}:\n{outcome.report()}"


# ---------------------------------------------------------------------------- tests


def test_hostile_records_fail_alone_on_arrows_json_reader() -> None:
    cases = [record_case(7_000_000 + i, native=True) for i in range(case_count(150))]
    _check(run_cases(RUNNER, cases, allowed=ALLOWED, warmup=WARMUP), "json-schema arrow")


def test_hostile_records_fail_alone_through_json_loads() -> None:
    cases = [record_case(8_000_000 + i, native=False) for i in range(case_count(150))]
    _check(run_cases(RUNNER, cases, allowed=ALLOWED, warmup=WARMUP), "json-schema json.loads")


def test_hostile_schemas_are_refused_or_fail_their_records() -> None:
    cases = [schema_case(9_000_000 + i) for i in range(case_count(60))]
    _check(run_cases(RUNNER, cases, allowed=ALLOWED, warmup=WARMUP), "json-schema schemas")
